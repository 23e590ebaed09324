"""Where pods go: onto the system nodes (controllers), or onto GPU nodes through the GPU taint."""

from __future__ import annotations

from typing import Any

from config.labels import GPU_TAINT, SYSTEM_NODE_LABELS, SYSTEM_NODE_TAINT

# The EKS API spells taint effects differently from Kubernetes.
_KUBERNETES_TAINT_EFFECTS = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}


def system_node_selector() -> dict[str, str]:
    key = SYSTEM_NODE_TAINT["key"]
    return {key: SYSTEM_NODE_LABELS[key]}


def system_node_toleration() -> dict[str, str]:
    """SYSTEM_NODE_TAINT as a Kubernetes toleration."""
    return {
        "key": SYSTEM_NODE_TAINT["key"],
        "operator": "Equal",
        "value": SYSTEM_NODE_TAINT["value"],
        "effect": _KUBERNETES_TAINT_EFFECTS[SYSTEM_NODE_TAINT["effect"]],
    }


def on_system_nodes() -> dict[str, Any]:
    """A controller's placement in Helm values: selects the system nodes and tolerates their taint."""
    return {"nodeSelector": system_node_selector(), "tolerations": [system_node_toleration()]}


def gpu_toleration() -> dict[str, str]:
    """GPU_TAINT as a toleration: what lets a pod onto a GPU node."""
    return {"key": GPU_TAINT["key"], "operator": "Equal", "value": GPU_TAINT["value"], "effect": GPU_TAINT["effect"]}
