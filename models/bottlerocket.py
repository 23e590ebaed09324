"""Bottlerocket's NVIDIA variants: the host device plugin's settings (bottlerocket-os/bottlerocket-core-kit
packages/nvidia-k8s-device-plugin/nvidia-k8s-device-plugin-conf, the template rendering
`settings.kubelet-device-plugins.nvidia` into the device plugin's config file).

The template's defaults differ from the device plugin's own: time-slicing's `renameByDefault` and
`failRequestsGreaterThanOne` default to true (a slice is advertised as `nvidia.com/gpu.shared`, a pod asking
for two slices refused), and `deviceIDStrategy` to `index`, which changes only the device list handed to
the container runtime, not the IDs the kubelet (and dcgm-exporter) see (models/nvidia/device_plugin.py,
kubelet_device_id). Karpenter merges a node class's settings TOML with its own
(karpenter-provider-aws v1.14.1 pkg/providers/amifamily/bootstrap/bottlerocketsettings.go keeps unknown
settings tables), as EKS does for a managed node group's launch template.
"""

from __future__ import annotations

import tomllib
from typing import Any

from .nvidia.labels import GPU_RESOURCE

DEVICE_PLUGIN_SETTINGS = ("settings", "kubelet-device-plugins", "nvidia")
# The template's defaults for the settings the platform relies on.
DEFAULTS: dict[str, Any] = {
    "device-id-strategy": "index",
    "device-sharing-strategy": None,
    "time-slicing.replicas": None,
    "time-slicing.rename-by-default": True,
    "time-slicing.fail-requests-greater-than-one": True,
}


def device_plugin_settings(user_data: str | None) -> dict[str, Any]:
    """`settings.kubelet-device-plugins.nvidia` of a node's settings TOML; empty where it sets none."""
    table: Any = tomllib.loads(user_data or "")
    for key in DEVICE_PLUGIN_SETTINGS:
        table = table.get(key, {})
    return dict(table)


def setting(user_data: str | None, dotted: str) -> Any:
    """One device-plugin setting (`time-slicing.replicas`) as the node runs with it: the user data's, else the default."""
    table: Any = device_plugin_settings(user_data)
    for key in dotted.split("."):
        if not isinstance(table, dict) or key not in table:
            return DEFAULTS[dotted]
        table = table[key]
    return table


def time_sliced_resource(user_data: str | None) -> str:
    """The resource a time-sliced GPU is advertised as: renamed `<name>.shared` unless rename-by-default is false."""
    renamed = setting(user_data, "time-slicing.rename-by-default")
    return f"{GPU_RESOURCE}.shared" if renamed else GPU_RESOURCE
