"""ResourceQuota scopes as the quota admission plugin applies them to one new pod.

kubernetes/kubernetes v1.35.0 pkg/quota/v1/evaluator/core/pods.go `podMatchesScopeFunc`
(`PriorityClass`: the pod's `priorityClassName` `In` / `NotIn` the listed values) and
staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go: a quota whose every
scope expression matches the pod counts it, and a `hard` of 0 pods refuses it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


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
