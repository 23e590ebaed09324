"""Declaring a component's children: one options helper, and one function for any Kubernetes manifest."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
from pulumi_kubernetes import _utilities as k8s_utilities


@dataclass(frozen=True)
class Children:
    """Options for a component's children: parented to it, through `provider`, after `depends_on`.

    A component's depends_on does not reach its children: Pulumi makes a resource wait for its own
    dependencies only, never for its parent's. So every child that must wait lists the component's
    dependencies itself, and `opts(*after)` adds what that one child needs beyond them.
    """

    parent: pulumi.Resource
    provider: pulumi.ProviderResource | None = None
    depends_on: Sequence[pulumi.Resource] = ()

    def opts(self, *after: pulumi.Resource, **options: Any) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(
            parent=self.parent, provider=self.provider, depends_on=[*self.depends_on, *after], **options
        )


# The built-in kinds the platform declares, each through the SDK's typed class: that class registers
# the type token `kubernetes:<group>/<version>:<Kind>` (`core/v1` for the core group), which is the
# object's identity in the state, so a built-in kind must never go through CustomResource.
_TYPED: dict[tuple[str, str], type[pulumi.CustomResource]] = {
    ("v1", "Namespace"): k8s.core.v1.Namespace,
    ("v1", "ConfigMap"): k8s.core.v1.ConfigMap,
    ("v1", "Secret"): k8s.core.v1.Secret,
    ("v1", "ServiceAccount"): k8s.core.v1.ServiceAccount,
    ("v1", "Service"): k8s.core.v1.Service,
    ("v1", "ResourceQuota"): k8s.core.v1.ResourceQuota,
    ("v1", "LimitRange"): k8s.core.v1.LimitRange,
    ("apps/v1", "Deployment"): k8s.apps.v1.Deployment,
    ("policy/v1", "PodDisruptionBudget"): k8s.policy.v1.PodDisruptionBudget,
    ("networking.k8s.io/v1", "NetworkPolicy"): k8s.networking.v1.NetworkPolicy,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): k8s.rbac.v1.RoleBinding,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): k8s.rbac.v1.ClusterRole,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): k8s.rbac.v1.ClusterRoleBinding,
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"): k8s.admissionregistration.v1.ValidatingAdmissionPolicy,
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"): (
        k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding
    ),
    ("storage.k8s.io/v1", "StorageClass"): k8s.storage.v1.StorageClass,
    ("scheduling.k8s.io/v1", "PriorityClass"): k8s.scheduling.v1.PriorityClass,
    ("resource.k8s.io/v1", "ResourceClaimTemplate"): k8s.resource.v1.ResourceClaimTemplate,
    ("resource.k8s.io/v1", "DeviceClass"): k8s.resource.v1.DeviceClass,
}
_BUILT_IN_GROUPS = frozenset(api_version.rpartition("/")[0] for api_version, _ in _TYPED)


def declare(logical: str, manifest: Mapping[str, Any], opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    """Declare `manifest` exactly as a builder returned it.

    A built-in kind goes through its typed class, its top-level fields as keyword arguments
    (`roleRef` -> `role_ref`); the SDK passes the nested camelCase dicts through unchanged. Any other
    kind is a custom resource, with its fields under `spec` or beside `metadata`.
    """
    api_version, kind = manifest["apiVersion"], manifest["kind"]
    fields = {key: value for key, value in manifest.items() if key not in ("apiVersion", "kind")}
    typed = _TYPED.get((api_version, kind))
    if typed is not None:
        return typed(logical, **{_snake_case(key): value for key, value in fields.items()}, opts=opts)
    group = api_version.rpartition("/")[0]
    if "." not in group or group in _BUILT_IN_GROUPS:
        raise ValueError(f"{api_version} {kind} is a built-in kind with no typed class here: add it to _TYPED")
    if set(fields) <= {"metadata", "spec"}:
        return k8s.apiextensions.CustomResource(
            logical, api_version=api_version, kind=kind, metadata=fields.get("metadata"), spec=fields.get("spec"), opts=opts
        )
    return _TopLevelFieldsResource(logical, manifest, opts)


class _TopLevelFieldsResource(pulumi.CustomResource):
    """A custom resource whose fields sit beside `metadata` rather than under `spec` (WorkloadPriorityClass).

    `k8s.apiextensions.CustomResource` carries only `spec`; this registers the same resource type
    (`kubernetes:<apiVersion>:<kind>`) with every field of the manifest, as crd2pulumi's classes do.
    """

    def __init__(self, logical: str, manifest: Mapping[str, Any], opts: pulumi.ResourceOptions):
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(version=k8s_utilities.get_version()))
        super().__init__(f"kubernetes:{manifest['apiVersion']}:{manifest['kind']}", logical, dict(manifest), opts)


def _snake_case(field: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", field).lower()
