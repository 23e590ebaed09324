"""A GPU pool's plan, put to the models: what its nodes advertise and its NodePool limits in Karpenter's units.

The rules live in `models/` (models/nvidia/device_plugin.py: what the device plugin advertises per
sharing mode; models/karpenter/capacity.py: instance-type capacity and NodeOverlays;
models/karpenter/limits.py: how limits stop launches). This module feeds them a `GpuPoolPlan`:

| sharing              | a node of G GPUs advertises                           | NodePool limit             |
|----------------------|-------------------------------------------------------|----------------------------|
| none                 | `nvidia.com/gpu`: G                                   | `nvidia.com/gpu`: gpus     |
| timeSlicing, R       | `nvidia.com/gpu`: R x G                               | `nvidia.com/gpu`: R x gpus |
| mig, strategy single | `nvidia.com/gpu`: devices per GPU x G                 | same unit x gpus           |
| mig, strategy mixed  | `nvidia.com/mig-<profile>`: count x G, `nvidia.com/gpu`: 0 | each profile x gpus   |
| allocation dra       | no GPU resource                                       | no NodePool (see below)    |

`gpus` is the pool's declared physical GPUs. A DRA pool is no NodePool: Karpenter v1.14.1 launches
nothing for pods with resource claims, so its GPUs are ResourceSlice devices on an EKS managed node group
of `gpus` / largest G nodes (`GpuPoolPlan.node_group_size`, components/dra_nodes.py).
"""

from __future__ import annotations

from models.karpenter import capacity, limits
from models.karpenter.labels import NODES_RESOURCE
from models.nvidia import device_plugin

from .capacity import GpuPoolPlan
from .catalog_types import InstanceType

__all__ = [
    "NODES_RESOURCE",
    "advertised",
    "dra_devices",
    "guaranteed_units",
    "limit_units",
    "native_capacity",
    "nodepool_limits",
    "overlay_capacity",
]


def native_capacity(instance_type: InstanceType) -> dict[str, int]:
    """The GPU resources karpenter-provider-aws itself gives an instance type: `nvidia.com/gpu` = its GPUs."""
    return capacity.native_capacity(instance_type.gpus)


def advertised(pool: GpuPoolPlan, instance_type: InstanceType) -> dict[str, int]:
    """GPU extended resources a node of this type in this pool advertises once configured; zeros omitted."""
    if pool.config.allocation == "dra":
        # The device plugin is off on DRA nodes; their GPUs are ResourceSlice devices.
        return {}
    return device_plugin.device_plugin_resources(pool.sharing, instance_type.gpus)


def overlay_capacity(pool: GpuPoolPlan, instance_type: InstanceType) -> dict[str, int] | None:
    """The NodeOverlay `capacity` for this type in this pool; None where Karpenter's own view is right."""
    return capacity.overlay_capacity(native_capacity(instance_type), advertised(pool, instance_type))


def limit_units(pool: GpuPoolPlan) -> dict[str, int]:
    """The NodePool's GPU limits, in the units Karpenter counts for this (device-plugin) pool (the module's table)."""
    assert not pool.is_dra, f"DRA pool {pool.name} has no NodePool"
    # The declared GPUs plus the warm headroom: placeholders must fit under the limit beside full quotas.
    return device_plugin.device_plugin_resources(pool.sharing, pool.nodepool_gpus)


def nodepool_limits(pool: GpuPoolPlan) -> dict[str, str]:
    """The NodePool's `spec.limits`: GPU limits, then the optional cpu and memory."""
    return limits.nodepool_limits(limit_units(pool), pool.config.cpu_limit, pool.config.memory_limit_gib)


def guaranteed_units(pool: GpuPoolPlan) -> dict[str, int]:
    """Per limited resource, the least the pool reaches before its limit stops Karpenter launching."""
    reached = {}
    for resource, limit in limit_units(pool).items():
        sizes = [advertised(pool, t).get(resource, 0) for t in pool.instance_types]
        reached[resource] = limits.guaranteed(limit, sizes)
    return reached


def dra_devices(pool: GpuPoolPlan, instance_type: InstanceType) -> int:
    """Devices a DRA node of this type publishes in its ResourceSlices: its GPUs, or their MIG devices."""
    return device_plugin.dra_devices(pool.sharing, instance_type.gpus)
