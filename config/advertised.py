"""What a GPU node advertises once its GPU stack has configured it, and the NodePool limits in Karpenter's units.

Karpenter sizes and counts nodes in extended resources, and which ones depends on the moment:
- While it simulates a launch it reads the instance type's capacity: karpenter-provider-aws v1.14.1
  (pkg/providers/instancetype/types.go, computeCapacity) knows only `nvidia.com/gpu` = physical GPUs,
  with NodeOverlay `capacity` merged over it (kubernetes-sigs/karpenter at the commit the provider pins,
  pkg/cloudprovider/types.go ApplyCapacityOverlay: `lo.Assign`, the overlay's value wins per resource).
- A launched, not yet initialised node counts as its NodeClaim's capacity, which the provider copies from
  the same overlaid instance type, dropping zero quantities (karpenter-provider-aws v1.14.1
  pkg/cloudprovider/cloudprovider.go, Create and instanceToNodeClaim).
- An initialised node counts as `Node.status.capacity`, what the device plugin reports
  (kubernetes-sigs/karpenter pkg/controllers/state/statenode.go, StateNode.Capacity), and the scheduler
  subtracts that from the NodePool's `limits` (pkg/controllers/provisioning/scheduling/scheduler.go,
  updateRemainingResources, filterByRemainingResources).

So the three agree only when the overlay says what the device plugin will report. Per sharing mode:

| sharing              | a node of G GPUs advertises                           | NodePool limit             |
|----------------------|-------------------------------------------------------|----------------------------|
| none                 | `nvidia.com/gpu`: G                                   | `nvidia.com/gpu`: gpus     |
| timeSlicing, R       | `nvidia.com/gpu`: R x G                               | `nvidia.com/gpu`: R x gpus |
| mig, strategy single | `nvidia.com/gpu`: devices per GPU x G                 | same unit x gpus           |
| mig, strategy mixed  | `nvidia.com/mig-<profile>`: count x G, `nvidia.com/gpu`: 0 | each profile x gpus   |
| allocation dra       | no GPU resource (`nvidia.com/gpu`: 0)                 | `nodes`: gpus / largest G  |

`gpus` is the pool's declared physical GPUs. A DRA pool's GPUs are ResourceSlice devices Karpenter does
not count against limits, so its limit is in nodes, each holding at most the largest type's GPUs.

API: `advertised(pool, instance_type)` per node, `overlay_capacity(pool, instance_type)` for the
NodeOverlay, `limit_units(pool)` / `nodepool_limits(pool)` for the NodePool, `guaranteed_units(pool)` for
what the pool reaches before its limit stops Karpenter launching.
"""

from __future__ import annotations

from math import gcd

from .capacity import GpuPoolPlan, mig_resource
from .catalog_types import InstanceType
from .labels import GPU_RESOURCE

# Karpenter counts every node as one of this resource (kubernetes-sigs/karpenter pkg/utils/resources,
# `resources.Node`; StateNode.Capacity adds it), so a NodePool may limit it.
NODES_RESOURCE = "nodes"


def time_sliced_resource(pool: GpuPoolPlan) -> str:
    """The resource a time-sliced GPU is advertised as.

    The device-plugin configs this platform writes (components/gpu_operator.py, time_slicing_config_map)
    and Bottlerocket's device-plugin settings leave `renameByDefault` false, so shares keep the name
    `nvidia.com/gpu` (NVIDIA k8s-device-plugin api/config/v1: renamed to `<name>.shared` only when true).
    """
    return GPU_RESOURCE


def native_capacity(instance_type: InstanceType) -> dict[str, int]:
    """The GPU resources karpenter-provider-aws itself gives an instance type: `nvidia.com/gpu` = its GPUs."""
    return {GPU_RESOURCE: instance_type.gpus}


def advertised(pool: GpuPoolPlan, instance_type: InstanceType) -> dict[str, int]:
    """GPU extended resources a node of this type in this pool advertises once configured; zeros omitted."""
    if pool.config.allocation == "dra":
        # The device plugin is off on DRA nodes; their GPUs are ResourceSlice devices.
        return {}
    return device_plugin_resources(pool, instance_type.gpus)


def device_plugin_resources(pool: GpuPoolPlan, gpus: int) -> dict[str, int]:
    """What `gpus` physical GPUs of this (device-plugin) pool advertise, by extended resource."""
    sharing = pool.config.sharing
    if sharing.mode == "timeSlicing":
        assert sharing.replicas is not None
        return {time_sliced_resource(pool): sharing.replicas * gpus}
    if sharing.mode == "mig":
        assert sharing.mig_layout is not None
        if pool.mig_strategy == "single":
            return {GPU_RESOURCE: sum(sharing.mig_layout.values()) * gpus}
        # Mixed: the layout MIG-enables every GPU (mig-parted `devices: all`), so no whole GPU is left.
        return {mig_resource(profile): count * gpus for profile, count in sorted(sharing.mig_layout.items())}
    return {GPU_RESOURCE: gpus}


def overlay_capacity(pool: GpuPoolPlan, instance_type: InstanceType) -> dict[str, int] | None:
    """The NodeOverlay `capacity` that makes Karpenter's view of this type match the node; None if it already does.

    A native resource the node will not advertise is set to 0, so Karpenter neither places a pod wanting
    it nor counts it; the overlay adds resources the instance type does not know (`nvidia.com/mig-*`).
    """
    native = native_capacity(instance_type)
    actual = advertised(pool, instance_type)
    merged = {**{resource: 0 for resource in native}, **actual}
    if merged == native:
        return None
    return dict(sorted(merged.items()))


def limit_units(pool: GpuPoolPlan) -> dict[str, int]:
    """The NodePool's GPU limits, in the units Karpenter counts for this pool (see the module's table)."""
    config = pool.config
    # The declared GPUs plus the warm headroom: placeholders must fit under the limit beside full quotas.
    gpus = pool.nodepool_gpus
    if config.allocation == "dra":
        return {NODES_RESOURCE: gpus // max(t.gpus for t in pool.instance_types)}
    return device_plugin_resources(pool, gpus)


def nodepool_limits(pool: GpuPoolPlan) -> dict[str, str]:
    """The NodePool's `spec.limits` as Kubernetes quantities: GPU limits, then the optional cpu and memory."""
    limits = {resource: str(units) for resource, units in limit_units(pool).items()}
    if pool.config.cpu_limit is not None:
        limits["cpu"] = str(pool.config.cpu_limit)
    if pool.config.memory_limit_gib is not None:
        limits["memory"] = f"{pool.config.memory_limit_gib}Gi"
    return limits


def guaranteed_units(pool: GpuPoolPlan) -> dict[str, int]:
    """Per limited resource, the least the pool reaches before its limit stops Karpenter launching.

    Karpenter launches a type only while its capacity fits in what remains of the limit
    (scheduler.go, filterByRemainingResources), so launching stops with less left than the smallest
    type's capacity; every amount is a multiple of the capacities' greatest common divisor.
    For `nodes` each node counts one.
    """
    guaranteed = {}
    for resource, limit in limit_units(pool).items():
        if resource == NODES_RESOURCE:
            guaranteed[resource] = limit
            continue
        sizes = [advertised(pool, t).get(resource, 0) for t in pool.instance_types]
        sizes = [size for size in sizes if size > 0]
        step = 0
        for size in sizes:
            step = gcd(step, size)
        # The most that can be left over: below the smallest size, and the limit less whole steps.
        left = limit % step + (min(sizes) - 1 - limit % step) // step * step
        guaranteed[resource] = limit - min(left, limit)
    return guaranteed


def dra_devices(pool: GpuPoolPlan, instance_type: InstanceType) -> int:
    """Devices a DRA node of this type publishes in its ResourceSlices: its GPUs, or their MIG devices."""
    layout = pool.config.sharing.mig_layout
    return instance_type.gpus * (sum(layout.values()) if pool.config.sharing.mode == "mig" and layout else 1)
