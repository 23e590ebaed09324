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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .quantity import parse_quantity

# Core kinds the quota also counts under their bare resource name.
_SHORT_COUNTS = frozenset({"configmaps", "secrets", "services", "persistentvolumeclaims", "pods",
                           "replicationcontrollers", "resourcequotas"})


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
    counted = f"count/{resource}" + (f".{api_group}" if api_group else "")
    used = {counted: "1"}
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
