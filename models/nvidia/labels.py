"""Names NVIDIA's GPU stack defines: the resources the device plugin advertises, the labels the operator reads.

Each is written once here and re-exported by config/labels.py for the project's code.
"""

from __future__ import annotations

# The extended resource the device plugin advertises whole GPUs (and time-sliced shares) as; Karpenter
# knows it by the same name (karpenter-provider-aws v1.14.1 pkg/apis/v1/labels.go, ResourceNVIDIAGPU).
GPU_RESOURCE = "nvidia.com/gpu"
# The device plugin reads its named sharing configuration from this label...
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
# ...and the MIG manager the named MIG layout from this one.
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
# Set to "false" where the node OS brings its own device plugin (Bottlerocket) or DRA allocates the GPUs.
DEVICE_PLUGIN_DEPLOY_LABEL = "nvidia.com/gpu.deploy.device-plugin"
# Set to "false" where none of the operator's operands may run: the operator then removes every
# nvidia.com/gpu.deploy.<operand> label from the node, and each operand's DaemonSet selects
# `<its label>: "true"` (NVIDIA/gpu-operator v26.7.0 controllers/state_manager.go, hasOperandsDisabled).
OPERANDS_DEPLOY_LABEL = "nvidia.com/gpu.deploy.operands"
# The mixed MIG strategy advertises each MIG profile as `nvidia.com/mig-<profile>`.
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"


def mig_resource(profile: str) -> str:
    """`1g.10gb` -> `nvidia.com/mig-1g.10gb`, the resource the mixed MIG strategy advertises."""
    return MIG_RESOURCE_PREFIX + profile
