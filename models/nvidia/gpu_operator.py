"""How the GPU Operator labels a GPU node, which decides the operands it runs there (NVIDIA/gpu-operator v26.7.0
controllers/state_manager.go).

The operator sets each deploy label to "true" on a container-workload GPU node (gpuStateLabels[container])
unless the node already carries it with a non-empty value (addGPUStateLabels); on a node labelled
`nvidia.com/gpu.deploy.operands=false` it removes them all (hasOperandsDisabled, removeAllGPUStateLabels).
Each operand's DaemonSet selects its own label with the value "true" (assets/state-*/..._daemonset.yaml).
"""

from __future__ import annotations

from collections.abc import Mapping

from .labels import OPERANDS_DEPLOY_LABEL

DEVICE_PLUGIN_OPERAND = "nvidia.com/gpu.deploy.device-plugin"
DCGM_EXPORTER_OPERAND = "nvidia.com/gpu.deploy.dcgm-exporter"
VALIDATOR_OPERAND = "nvidia.com/gpu.deploy.operator-validator"
# gpuStateLabels[container]: the labels the operator sets and strips.
OPERATOR_STATE_LABELS = (
    "nvidia.com/gpu.deploy.driver",
    "nvidia.com/gpu.deploy.gpu-feature-discovery",
    "nvidia.com/gpu.deploy.container-toolkit",
    DEVICE_PLUGIN_OPERAND,
    "nvidia.com/gpu.deploy.dcgm",
    DCGM_EXPORTER_OPERAND,
    "nvidia.com/gpu.deploy.node-status-exporter",
    VALIDATOR_OPERAND,
    "nvidia.com/gpu.deploy.client",
)


def labelled_by_operator(labels: Mapping[str, str]) -> dict[str, str]:
    """A GPU node's labels after the operator's node labelling (updateGPUStateLabels)."""
    if labels.get(OPERANDS_DEPLOY_LABEL) == "false":
        return {key: value for key, value in labels.items() if key not in OPERATOR_STATE_LABELS}
    return {**{key: "true" for key in OPERATOR_STATE_LABELS}, **{k: v for k, v in labels.items() if v != ""}}


def runs_operand(labels: Mapping[str, str], operand_label: str) -> bool:
    """Whether the operand whose DaemonSet selects `operand_label: "true"` runs on a node with these labels."""
    return labelled_by_operator(labels).get(operand_label) == "true"
