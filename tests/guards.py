"""What the models need from `upstream/` that models may not read themselves: the built-in ClusterRoles.

The evaluators are in `models/` (RBAC, admission, NetworkPolicy, quotas, LimitRanger, IAM trust).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from models.kubernetes import rbac
from models.kubernetes.user import User
from offline.upstream import UPSTREAM_DIR

# kubernetes/kubernetes plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata/cluster-roles-featuregates.yaml
# (upstream/SOURCES, upstream/README.md): the built-in roles with DynamicResourceAllocation on, as from 1.34.
BOOTSTRAP_ROLES = UPSTREAM_DIR / "kubernetes-rbac" / "cluster-roles-featuregates.yaml"


@functools.cache
def bootstrap_roles() -> tuple[Mapping[str, Any], ...]:
    """The built-in ClusterRoles (admin, edit, view, ... with their aggregation rules)."""
    return tuple(yaml.safe_load(BOOTSTRAP_ROLES.read_text())["items"])


def rbac_allows(
    objects: Sequence[Mapping[str, Any]], user: User, verb: str, api_group: str, resource: str, namespace: str | None
) -> bool:
    """`models.kubernetes.rbac.allows` with the built-in roles of the vendored bootstrap policy."""
    return rbac.allows(bootstrap_roles(), objects, user, verb, api_group, resource, namespace)
