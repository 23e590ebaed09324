"""What a DRA pool's nodes publish, and which of those devices a claim's selectors match.

A DRA pool is an EKS managed node group of fixed size (components/dra_nodes.py), standing before any
pod: the DRA driver's kubelet plugin on each node publishes its GPUs in ResourceSlices as soon as the
node runs. Kueue v0.19.2 admits a pod whose claim carries CEL selectors only when enough published
devices match them (pkg/dra/claims.go, validateCELSelectorsAgainstDevices, which evaluates the class's
and the request's selectors over every published device), so for these pools the devices Kueue sees
are the ones `pool_devices` lists, and a selector the platform proves here is one Kueue can admit.
The devices' attributes: models/nvidia/dra_driver.py, from each GPU model's NVML facts (config/catalog.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from models.kubernetes.cel import Outcome, Verdict
from models.kubernetes.dra_cel import Device, Quantity, Semver, device_matches
from models.nvidia import dra_driver

from .capacity import GpuPoolPlan
from .catalog import DRA_FACTS


@dataclass(frozen=True)
class DeviceKind:
    """Devices of one shape a pool's node publishes: `per_gpu` of them for each of its GPUs."""

    device: Device
    per_gpu: int


def pool_devices(pool: GpuPoolPlan) -> tuple[DeviceKind, ...]:
    """The devices a DRA pool's nodes publish, by shape: one whole GPU per GPU.

    MIG DRA pools are refused (config/capacity.py `_check_dra_node_group`): the MIG manager does not run
    on DRA nodes, so their GPUs publish no MIG device; such a pool publishes nothing here.
    """
    if not pool.is_dra or pool.config.sharing.mode == "mig":
        return ()
    return (DeviceKind(dra_driver.gpu_device(DRA_FACTS[pool.gpu.name]), 1),)


def _show(value: object) -> str:
    if isinstance(value, Semver):
        return f"{value.major}.{value.minor}.{value.patch}"
    if isinstance(value, Quantity):
        return f"{float(value.value) / 2**30:.2f}Gi"
    return str(value)


def describe(device: Device) -> str:
    """`productName NVIDIA L4, architecture Ada Lovelace, cudaComputeCapability 8.9.0, memory 22.49Gi`."""
    attributes = [f"{name} {_show(value)}" for name, value in device.attributes.items() if name != "type"]
    capacity = [f"{name} {int(value) / 2**30:.2f}Gi" for name, value in device.capacity.items()]
    return ", ".join(attributes + capacity)


@dataclass(frozen=True)
class Evaluation:
    """One selector on one kind of device of a pool."""

    pool: GpuPoolPlan
    kind: DeviceKind
    outcome: Outcome


def evaluate(expression: str, device_class: str, pools: Sequence[GpuPoolPlan]) -> list[Evaluation]:
    """The selector on every kind of device of `device_class` the DRA pools publish (the class's selector first,
    as Kueue filters by class before it evaluates a request's selectors)."""
    return [
        Evaluation(pool, kind, device_matches(expression, kind.device))
        for pool in pools
        for kind in pool_devices(pool)
        if dra_driver.in_class(device_class, kind.device)
    ]


def matching_per_node(expressions: Sequence[str], device_class: str, pool: GpuPoolPlan, gpus: int) -> int:
    """Devices of the class a node of `gpus` GPUs in the pool publishes that match every selector."""
    return sum(
        kind.per_gpu * gpus
        for kind in pool_devices(pool)
        if dra_driver.in_class(device_class, kind.device)
        and all(device_matches(e, kind.device).verdict is Verdict.PASSED for e in expressions)
    )


def published_devices(pools: Sequence[GpuPoolPlan]) -> list[tuple[Device, int]]:
    """Every device the DRA pools' standing node groups publish: (device, how many), as Kueue lists them."""
    return [(kind.device, kind.per_gpu * pool.gpu_limit) for pool in pools for kind in pool_devices(pool)]


def device_class_selectors() -> dict[str, list[str]]:
    """Each DeviceClass the cluster has, by name, with its CEL selectors: the driver chart's."""
    return {name: [expression] for name, expression in dra_driver.DEVICE_CLASS_SELECTORS.items()}
