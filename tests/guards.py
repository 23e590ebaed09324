"""Offline evaluators of what stands between a tenant admin and another tenant: RBAC, admission
policies, scoped quotas, container defaults, IAM trust conditions.

Each reads rendered objects (plain manifests, or a role's recorded inputs) and answers as the
component that enforces it would, for the one request it is given:
- RBAC: the rules of the rendered (Cluster)RoleBindings' roles, the built-in admin/edit/view roles
  aggregated as the aggregation controller does, from kubernetes/kubernetes' bootstrap policy
  (upstream/kubernetes-rbac/cluster-roles.yaml).
- ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1): the policy's match constraints, its
  binding's namespace selector, then its variables and validations evaluated with cel-python
  (offline/cel.py); an evaluation error counts as a denial (`failurePolicy: Fail`).
- ResourceQuota scoped by PriorityClass, LimitRange container defaults, IAM `StringEquals`/`ArnLike`.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from offline.cel import evaluate_in
from offline.upstream import UPSTREAM_DIR

BOOTSTRAP_ROLES = UPSTREAM_DIR / "kubernetes-rbac" / "cluster-roles.yaml"
AUTHENTICATED = "system:authenticated"


# --- RBAC ------------------------------------------------------------------------------------------


def cluster_roles(objects: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """The built-in roles, then every rendered ClusterRole, by name."""
    roles = {role["metadata"]["name"]: role for role in yaml.safe_load(BOOTSTRAP_ROLES.read_text())["items"]}
    roles.update({o["metadata"]["name"]: o for o in objects if o["kind"] == "ClusterRole"})
    return roles


def effective_rules(roles: Mapping[str, Mapping[str, Any]], name: str, seen: frozenset[str] = frozenset()) -> list[Any]:
    """A role's rules after aggregation: its own and every role its selectors pick, transitively."""
    role = roles.get(name)
    if role is None or name in seen:
        return []
    rules = list(role.get("rules") or ())
    for selector in (role.get("aggregationRule") or {}).get("clusterRoleSelectors", ()):
        wanted = selector["matchLabels"].items()
        for other, candidate in roles.items():
            if wanted <= (candidate["metadata"].get("labels") or {}).items():
                rules += effective_rules(roles, other, seen | {name})
    return rules


@dataclass(frozen=True)
class User:
    username: str
    groups: tuple[str, ...]

    def info(self) -> dict[str, Any]:
        return {"username": self.username, "groups": [*self.groups, AUTHENTICATED]}


def rbac_allows(
    objects: Sequence[Mapping[str, Any]], user: User, verb: str, api_group: str, resource: str, namespace: str | None
) -> bool:
    """Whether RBAC lets `user` `verb` `resource` in `namespace` (None: cluster-scoped)."""
    roles = cluster_roles(objects)
    groups = {*user.groups, AUTHENTICATED}
    granted: list[Mapping[str, Any]] = []
    for o in objects:
        if o["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        if o["kind"] == "RoleBinding" and o["metadata"]["namespace"] != namespace:
            continue
        if any(
            (s["kind"] == "Group" and s["name"] in groups) or (s["kind"] == "User" and s["name"] == user.username)
            for s in o["subjects"]
        ):
            granted += effective_rules(roles, o["roleRef"]["name"])
    return any(
        _matches(rule.get("apiGroups", ()), api_group)
        and _matches(rule.get("resources", ()), resource)
        and _matches(rule["verbs"], verb)
        for rule in granted
    )


def _matches(values: Iterable[str], wanted: str) -> bool:
    return any(value in ("*", wanted) for value in values)


# --- ValidatingAdmissionPolicy ---------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    """One API request as admission sees it."""

    operation: str  # CREATE, UPDATE, DELETE
    api_group: str
    resource: str  # plural, with `/subresource` where there is one
    namespace: str
    user: User
    object: Mapping[str, Any] | None = None
    old_object: Mapping[str, Any] | None = None
    namespace_labels: Mapping[str, str] = field(default_factory=dict)

    def activation(self) -> dict[str, Any]:
        return {
            "object": self.object,
            "oldObject": self.old_object,
            "request": {"operation": self.operation, "namespace": self.namespace, "userInfo": self.user.info()},
            "namespaceObject": {"metadata": {"name": self.namespace, "labels": dict(self.namespace_labels)}},
        }


def admission_denials(objects: Sequence[Mapping[str, Any]], request: Request) -> list[str]:
    """The messages of every bound ValidatingAdmissionPolicy that refuses `request`."""
    policies = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ValidatingAdmissionPolicy"}
    denials = []
    for binding in (o for o in objects if o["kind"] == "ValidatingAdmissionPolicyBinding"):
        policy = policies.get(binding["spec"]["policyName"])
        if policy is None or "Deny" not in binding["spec"]["validationActions"]:
            continue
        selectors = [
            policy["spec"]["matchConstraints"].get("namespaceSelector"),
            binding["spec"].get("matchResources", {}).get("namespaceSelector"),
        ]
        if not all(_selects(s, request.namespace_labels) for s in selectors if s is not None):
            continue
        if not any(_rule_matches(rule, request) for rule in policy["spec"]["matchConstraints"]["resourceRules"]):
            continue
        denials += _violations(policy["spec"], request)
    return denials


def _rule_matches(rule: Mapping[str, Any], request: Request) -> bool:
    return (
        _matches(rule["apiGroups"], request.api_group)
        and any(_resource_matches(r, request.resource) for r in rule["resources"])
        and _matches(rule["operations"], request.operation)
    )


def _resource_matches(pattern: str, resource: str) -> bool:
    """`*` is every resource but no subresource, `*/*` everything, `pods/*` every pods subresource."""
    if pattern == "*":
        return "/" not in resource
    return pattern == resource or ("/" in resource and fnmatch.fnmatchcase(resource, pattern))


def _selects(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    if not (selector.get("matchLabels") or {}).items() <= labels.items():
        return False
    for expression in selector.get("matchExpressions") or ():
        key, operator, values = expression["key"], expression["operator"], expression.get("values", ())
        present = key in labels
        if not {
            "Exists": present,
            "DoesNotExist": not present,
            "In": present and labels[key] in values,
            "NotIn": not present or labels[key] not in values,
        }[operator]:
            return False
    return True


def _violations(spec: Mapping[str, Any], request: Request) -> list[str]:
    activation = request.activation()
    variables: dict[str, Any] = {}
    for variable in spec.get("variables") or ():
        value = evaluate_in(variable["expression"], {**activation, "variables": variables})
        if isinstance(value, Exception):
            return [f"variable {variable['name']} fails to evaluate: {value}"]
        variables[variable["name"]] = value
    messages = []
    for validation in spec["validations"]:
        verdict = evaluate_in(validation["expression"], {**activation, "variables": variables})
        if isinstance(verdict, Exception) or not bool(verdict):
            messages.append(validation.get("message", validation["expression"]))
    return messages


# --- quotas and container defaults -----------------------------------------------------------------


def quota_denials(objects: Sequence[Mapping[str, Any]], pod: Mapping[str, Any], namespace: str) -> list[str]:
    """Scoped ResourceQuotas with no room for one more pod of `pod`'s PriorityClass (count quotas start empty)."""
    denials = []
    priority = pod["spec"].get("priorityClassName", "")
    for quota in (o for o in objects if o["kind"] == "ResourceQuota" and o["metadata"]["namespace"] == namespace):
        expressions = (quota["spec"].get("scopeSelector") or {}).get("matchExpressions") or ()
        scoped = all(
            e["scopeName"] == "PriorityClass" and (priority in e.get("values", ())) == (e["operator"] == "In")
            for e in expressions
        )
        if expressions and scoped and quota["spec"]["hard"].get("pods") == "0":
            denials.append(quota["metadata"]["name"])
    return denials


def with_container_defaults(objects: Sequence[Mapping[str, Any]], pod: Mapping[str, Any], namespace: str) -> dict[str, Any]:
    """`pod` after the LimitRanger: each container's missing requests and limits from the namespace's defaults."""
    defaulted: dict[str, Any] = json.loads(json.dumps(pod))
    for limit_range in (o for o in objects if o["kind"] == "LimitRange" and o["metadata"]["namespace"] == namespace):
        for item in limit_range["spec"]["limits"]:
            if item["type"] != "Container":
                continue
            for container in defaulted["spec"]["containers"]:
                resources = container.setdefault("resources", {})
                for key, defaults in (("requests", item.get("defaultRequest", {})), ("limits", item.get("default", {}))):
                    for name, value in defaults.items():
                        resources.setdefault(key, {}).setdefault(name, value)
    return defaulted


# --- IAM trust -------------------------------------------------------------------------------------


def trust_allows(policy: Mapping[str, Any], service: str, context: Mapping[str, str]) -> bool:
    """Whether `service` may assume the role for a request carrying `context` (condition key -> value)."""
    for statement in policy["Statement"]:
        if statement["Effect"] != "Allow" or statement["Principal"].get("Service") != service:
            continue
        conditions = statement.get("Condition", {})
        equal = all(context.get(k) == v for k, v in conditions.get("StringEquals", {}).items())
        like = all(fnmatch.fnmatchcase(context.get(k, ""), v) for k, v in conditions.get("ArnLike", {}).items())
        if equal and like and set(conditions) <= {"StringEquals", "ArnLike"}:
            return True
    return False


# --- NetworkPolicy ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Endpoint:
    """A pod: its namespace (and that namespace's labels), its labels, its address."""

    namespace: str
    ip: str
    labels: Mapping[str, str] = field(default_factory=dict)
    namespace_labels: Mapping[str, str] = field(default_factory=dict)

    def all_namespace_labels(self) -> dict[str, str]:
        return {**self.namespace_labels, "kubernetes.io/metadata.name": self.namespace}


def connection_allowed(objects: Sequence[Mapping[str, Any]], source: Endpoint, destination: Endpoint, port: int) -> bool:
    """Whether NetworkPolicies let `source` open a TCP connection to `destination` on `port`: the
    source's egress policies and the destination's ingress policies must both allow it (a pod no
    policy of a direction selects is open in that direction)."""
    return _direction_allows(objects, source, destination, port, "Egress") and _direction_allows(
        objects, destination, source, port, "Ingress"
    )


def _direction_allows(objects: Sequence[Mapping[str, Any]], pod: Endpoint, peer: Endpoint, port: int, direction: str) -> bool:
    selecting = [
        o["spec"]
        for o in objects
        if o["kind"] == "NetworkPolicy"
        and o["metadata"]["namespace"] == pod.namespace
        and direction in o["spec"].get("policyTypes", ["Ingress"])
        and _selects(o["spec"]["podSelector"], pod.labels)
    ]
    if not selecting:
        return True
    key, peers_key = ("egress", "to") if direction == "Egress" else ("ingress", "from")
    for spec in selecting:
        for rule in spec.get(key) or ():
            # A rule without peers matches every peer; one with peers, any of them.
            peers = rule.get(peers_key)
            peers_ok = not peers or any(_peer_matches(p, pod, peer) for p in peers)
            ports_ok = not rule.get("ports") or any(p.get("port") in (None, port) for p in rule["ports"])
            if peers_ok and ports_ok:
                return True
    return False


def _peer_matches(peer_rule: Mapping[str, Any], pod: Endpoint, peer: Endpoint) -> bool:
    if "ipBlock" in peer_rule:
        block = peer_rule["ipBlock"]
        address = ipaddress.ip_address(peer.ip)
        return address in ipaddress.ip_network(block["cidr"]) and not any(
            address in ipaddress.ip_network(e) for e in block.get("except", ())
        )
    namespace_ok = (
        _selects(peer_rule["namespaceSelector"], peer.all_namespace_labels())
        if "namespaceSelector" in peer_rule
        else peer.namespace == pod.namespace
    )
    pods_ok = _selects(peer_rule["podSelector"], peer.labels) if "podSelector" in peer_rule else True
    return namespace_ok and pods_ok
