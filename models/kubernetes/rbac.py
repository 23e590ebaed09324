"""RBAC as the API server's authorizer answers one request, with ClusterRole aggregation.

kubernetes/kubernetes v1.35.0:
- plugin/pkg/auth/authorizer/rbac/rbac.go `Authorize` -> pkg/registry/rbac/validation/rule.go
  `VisitRulesFor`: the rules of every ClusterRoleBinding, and of every RoleBinding of the request's
  namespace, whose subjects name the user or one of its groups (`appliesTo`); a RoleBinding never
  grants anything outside its namespace.
- pkg/apis/rbac/v1/evaluation_helpers.go (`VerbMatches`, `APIGroupMatches`, `ResourceMatches`): a
  rule allows when its verbs, API groups and resources each contain the request's value or `*`.
- pkg/controller/clusterroleaggregation/clusterroleaggregation_controller.go: an aggregated
  ClusterRole's rules are its own plus those of every ClusterRole any of its `clusterRoleSelectors`
  selects; aggregated roles aggregate in turn.
- The built-in roles (admin, edit, view, ...) are the bootstrap policy
  (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go); callers pass them in, as read from its
  testdata (`cluster-roles-featuregates.yaml`: the roles with DynamicResourceAllocation on, as from 1.34).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .labels import selects
from .user import SERVICE_ACCOUNT_USERNAME_PREFIX, User


def cluster_roles(
    bootstrap: Iterable[Mapping[str, Any]], objects: Iterable[Mapping[str, Any]]
) -> dict[str, Mapping[str, Any]]:
    """The built-in roles, then every ClusterRole of `objects`, by name."""
    roles = {role["metadata"]["name"]: role for role in bootstrap}
    roles.update({o["metadata"]["name"]: o for o in objects if o["kind"] == "ClusterRole"})
    return roles


def effective_rules(roles: Mapping[str, Mapping[str, Any]], name: str, seen: frozenset[str] = frozenset()) -> list[Any]:
    """A role's rules after aggregation: its own and every role its selectors pick, transitively."""
    role = roles.get(name)
    if role is None or name in seen:
        return []
    rules = list(role.get("rules") or ())
    for selector in (role.get("aggregationRule") or {}).get("clusterRoleSelectors", ()):
        for other, candidate in roles.items():
            if selects(selector, candidate["metadata"].get("labels") or {}):
                rules += effective_rules(roles, other, seen | {name})
    return rules


def allows(
    bootstrap: Iterable[Mapping[str, Any]],
    objects: Sequence[Mapping[str, Any]],
    user: User,
    verb: str,
    api_group: str,
    resource: str,
    namespace: str | None,
) -> bool:
    """Whether RBAC lets `user` `verb` `resource` in `namespace` (None: cluster-scoped)."""
    roles = cluster_roles(bootstrap, objects)
    groups = set(user.all_groups())
    granted: list[Mapping[str, Any]] = []
    for o in objects:
        if o["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        if o["kind"] == "RoleBinding" and o["metadata"]["namespace"] != namespace:
            continue
        if any(_applies_to(subject, user, groups, o["metadata"].get("namespace")) for subject in o["subjects"]):
            granted += effective_rules(roles, o["roleRef"]["name"])
    return any(
        matches(rule.get("apiGroups", ()), api_group)
        and matches(rule.get("resources", ()), resource)
        and matches(rule["verbs"], verb)
        for rule in granted
    )


def _applies_to(subject: Mapping[str, Any], user: User, groups: set[str], binding_namespace: str | None) -> bool:
    """rule.go `appliesToUser`: a Group by name, a User by name, a ServiceAccount by its username."""
    if subject["kind"] == "Group":
        return subject["name"] in groups
    if subject["kind"] == "User":
        return subject["name"] == user.username
    if subject["kind"] == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace
        return user.username == f"{SERVICE_ACCOUNT_USERNAME_PREFIX}{namespace}:{subject['name']}"
    return False


def matches(values: Iterable[str], wanted: str) -> bool:
    """A rule's list against one request value: the value itself or `*`."""
    return any(value in ("*", wanted) for value in values)
