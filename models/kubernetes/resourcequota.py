"""ResourceQuota as the quota admission plugin applies it to one new object.

kubernetes/kubernetes v1.35.0:
- pkg/quota/v1/evaluator/core/pods.go `podMatchesScopeFunc` (`PriorityClass`: the pod's
  `priorityClassName` `In` / `NotIn` the listed values): a quota whose every scope expression matches
  the pod counts it, and a `hard` of 0 pods refuses it.
- staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go `checkRequest`: the
  new object's usage is added to what the quota has used, and any resource the quota bounds that
  would then exceed `hard` refuses the request.
- pkg/quota/v1/evaluator/core/persistent_volume_claims.go: a claim uses `persistentvolumeclaims` 1 and
  `requests.storage` its requested storage; pkg/quota/v1/generic/evaluator.go
  `ObjectCountQuotaResourceNameFor`: any object uses `count/<resource>.<group>` 1 (ConfigMaps,
  Secrets and Services also under their short names, pkg/quota/v1/evaluator/core/registry.go).
- pkg/quota/v1/evaluator/core/pods.go `PodUsageFunc`: `count/pods` counts every pod in storage, while
  `pods` counts only those not yet in a terminal phase; every other short name counts what is stored.
- pkg/quota/v1/install/registry.go `ignoredResources` (read at commit 761db196, the copy the search
  index stores; not checked against the v1.35.0 tag): the quota system never counts events (core and
  events.k8s.io) nor the virtual review resources, whatever a quota names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .quantity import parse_quantity

# Core kinds the quota also counts under their bare resource name.
_SHORT_COUNTS = frozenset({"configmaps", "secrets", "services", "persistentvolumeclaims", "pods",
                           "replicationcontrollers", "resourcequotas"})


# The resources quota admission and the quota controller skip (registry.go `ignoredResources`).
IGNORED_RESOURCES = frozenset({
    ("", "bindings"),
    ("", "componentstatuses"),
    ("authentication.k8s.io", "tokenreviews"),
    ("authentication.k8s.io", "selfsubjectreviews"),
    ("authorization.k8s.io", "subjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "localsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectrulesreviews"),
    ("", "events"),
    ("events.k8s.io", "events"),
})


def count_key(api_group: str, resource: str) -> str:
    """generic/evaluator.go `ObjectCountQuotaResourceNameFor`: `count/<resource>.<group>`, core kinds without a group."""
    return f"count/{resource}" + (f".{api_group}" if api_group else "")


def stored_object_bound(hard: Mapping[str, str], api_group: str, resource: str) -> str | None:
    """The key of `hard` that bounds how many `resource` objects of `api_group` the namespace stores, or None.

    A subresource is no object of its own, and the quota system ignores IGNORED_RESOURCES whatever
    `hard` says; `pods` counts only live pods, so pods need `count/pods`.
    """
    if "/" in resource or (api_group, resource) in IGNORED_RESOURCES:
        return None
    if count_key(api_group, resource) in hard:
        return count_key(api_group, resource)
    if not api_group and resource in _SHORT_COUNTS - {"pods"} and resource in hard:
        return resource
    return None


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


def usage(api_group: str, resource: str, obj: Mapping[str, Any]) -> dict[str, str]:
    """What creating `obj` (of `resource` in `api_group`) adds to a namespace's quota usage."""
    used = {count_key(api_group, resource): "1"}
    if not api_group and resource in _SHORT_COUNTS:
        used[resource] = "1"
    if not api_group and resource == "persistentvolumeclaims":
        used["requests.storage"] = obj["spec"]["resources"]["requests"]["storage"]
    return used


def exceeded(
    objects: Sequence[Mapping[str, Any]],
    namespace: str,
    api_group: str,
    resource: str,
    obj: Mapping[str, Any],
    used: Mapping[str, str] | None = None,
) -> list[str]:
    """`quota/resource` for every unscoped ResourceQuota of `namespace` that creating `obj` would take past
    its hard limit, given what the namespace already uses (`used`, resource -> quantity)."""
    already = used or {}
    adds = usage(api_group, resource, obj)
    over = []
    for quota in (o for o in objects if o["kind"] == "ResourceQuota" and o["metadata"]["namespace"] == namespace):
        if quota["spec"].get("scopeSelector") or quota["spec"].get("scopes"):
            continue
        for name, hard in quota["spec"]["hard"].items():
            if name in adds and parse_quantity(already.get(name, "0")) + parse_quantity(adds[name]) > parse_quantity(hard):
                over.append(f"{quota['metadata']['name']}/{name}")
    return over
