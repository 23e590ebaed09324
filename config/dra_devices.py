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

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from models.kubernetes.cel import Outcome, Verdict
from models.kubernetes.dra_cel import Device, Quantity, Semver, device_matches
from models.nvidia import dra_driver
from models.nvidia.dra_driver import RUNTIME_ATTRIBUTES

from .capacity import GpuPoolPlan
from .catalog import DRA_FACTS, MIG_MEMORY_BYTES
from .errors import Problems
from .node_pools import DeviceSelectionConfig, DraConfig


@dataclass(frozen=True)
class DeviceKind:
    """Devices of one shape a pool's node publishes: `per_gpu` of them for each of its GPUs."""

    device: Device
    per_gpu: int


def pool_devices(pool: GpuPoolPlan) -> tuple[DeviceKind, ...]:
    """The devices a DRA pool's nodes publish, by shape: one whole GPU per GPU, or on a MIG pool each
    profile of its layout, as many per GPU as the layout has.

    A MIG pool's GPUs are partitioned before the kubelet starts (components/dra_nodes.py), so the
    driver's kubelet plugin finds MIG mode on and publishes the MIG devices and not their parent GPU
    (models/nvidia/dra_driver.py `published_on_gpu`).
    """
    if not pool.is_dra:
        return ()
    facts = DRA_FACTS[pool.gpu.name]
    layout = pool.config.sharing.mig_layout if pool.config.sharing.mode == "mig" else None
    memory = MIG_MEMORY_BYTES.get(pool.gpu.name, {})
    return tuple(
        DeviceKind(dra_driver.mig_device(facts, profile, memory[profile]) if profile else dra_driver.gpu_device(facts), count)
        for profile, count in dra_driver.published_on_gpu(layout)
        if profile is None or profile in memory
    )


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


def in_class(class_selectors: Sequence[str], device: Device) -> bool:
    """Whether a DeviceClass of these selectors takes the device: every selector passes."""
    return all(device_matches(expression, device).verdict is Verdict.PASSED for expression in class_selectors)


def evaluate(expression: str, class_selectors: Sequence[str], pools: Sequence[GpuPoolPlan]) -> list[Evaluation]:
    """The selector on every kind of device of the class the DRA pools publish (the class's selectors first,
    as Kueue filters by class before it evaluates a request's selectors)."""
    return [
        Evaluation(pool, kind, device_matches(expression, kind.device))
        for pool in pools
        for kind in pool_devices(pool)
        if in_class(class_selectors, kind.device)
    ]


def matching_per_node(expressions: Sequence[str], class_selectors: Sequence[str], pool: GpuPoolPlan, gpus: int) -> int:
    """Devices of the class a node of `gpus` GPUs in the pool publishes that match every selector."""
    return sum(
        kind.per_gpu * gpus
        for kind in pool_devices(pool)
        if in_class(class_selectors, kind.device)
        and all(device_matches(e, kind.device).verdict is Verdict.PASSED for e in expressions)
    )


def matching_pools(
    template: DeviceSelectionConfig,
    key: str,
    class_selectors: Sequence[str],
    pools: Sequence[GpuPoolPlan],
    problems: Problems,
    device_class: str,
) -> list[GpuPoolPlan]:
    """The DRA pools whose devices of the class match every selector of `template` (a claim template or a
    DeviceClass); a problem at `key` when a selector cannot be proven (not evaluable, reads a run-time
    attribute, fails on a device) or when no pool matches."""
    if not any(pool_devices(pool) for pool in pools):
        return []
    expressions = [expression for _, expression in template.selector_expressions]
    for field, expression in template.selector_expressions:
        evaluations = evaluate(expression, class_selectors, pools)
        trouble = next((e for e in evaluations if e.outcome.verdict in (Verdict.NOT_EVALUATED, Verdict.ERRORED)), None)
        if trouble is not None:
            problems.add(f"{key}.{field}", unproven(expression, trouble))
            return []
    # A pool matches when some device of the class it publishes passes every selector.
    matches = {pool.name: matching_per_node(expressions, class_selectors, pool, 1) > 0 for pool in pools}
    matching = [pool for pool in pools if matches[pool.name]]
    if not matching:
        offered = "; ".join(
            f"{pool.name}: {describe(kind.device)}"
            for pool in pools
            for kind in pool_devices(pool)
            if in_class(class_selectors, kind.device)
        ) or "none of their devices is in the class"
        fields = ", ".join(field for field, _ in template.selector_expressions)
        problems.add(
            key,
            f"no DRA pool publishes a device of class {device_class} that matches {fields} ({offered}); "
            "Kueue would hold its pods for ever (insufficient matching devices): loosen the selectors or add a DRA "
            "pool of a GPU that has them",
        )
    return matching


def unproven(expression: str, evaluation: Evaluation) -> str:
    """Why a selector cannot be proven against the pools' devices, in one sentence with its fix."""
    detail = evaluation.outcome.detail
    runtime = next((name for name in RUNTIME_ATTRIBUTES if repr(name.rpartition("/")[2]) in detail), None)
    if runtime is not None:
        return (
            f"{expression} reads {runtime}, which a device publishes only once its node runs, so the platform cannot "
            "prove any device matches: select by productName, architecture, cudaComputeCapability, memory or profile"
        )
    if evaluation.outcome.verdict is Verdict.ERRORED:
        return (
            f"{expression} fails on the devices of pool {evaluation.pool.name} ({detail}), and Kueue refuses a workload "
            "whose selector fails to evaluate (CEL evaluation failed): read only what those devices publish "
            f"({describe(evaluation.kind.device)})"
        )
    return (
        f"{expression} uses what the platform cannot evaluate ({detail}), so it cannot prove a device matches: "
        "write it with comparisons, &&, ||, quantity() and semver()"
    )


def published_devices(pools: Sequence[GpuPoolPlan]) -> list[tuple[Device, int]]:
    """Every device the DRA pools' standing node groups publish: (device, how many), as Kueue lists them."""
    return [(kind.device, kind.per_gpu * pool.gpu_limit) for pool in pools for kind in pool_devices(pool)]


def device_class_selectors(dra: DraConfig) -> dict[str, list[str]]:
    """Each DeviceClass the cluster has, by name, with its CEL selectors: the driver chart's two, then the
    administrator's, each the chart's selector of its kind (whole GPUs or MIG devices) and its own."""
    classes = {name: [expression] for name, expression in dra_driver.DEVICE_CLASS_SELECTORS.items()}
    for device_class in dra.device_classes:
        own = [expression for _, expression in device_class.selector_expressions]
        classes[device_class.name] = [dra_driver.DEVICE_CLASS_SELECTORS[device_class.driver_class], *own]
    return classes


def class_devices_per_gpu(dra: DraConfig) -> Callable[[str, GpuPoolPlan], int | None]:
    """(class name, DRA pool) -> how many devices of the class one GPU of the pool publishes; None for a name
    that is no DeviceClass (config/device_classes.py says so)."""
    classes = device_class_selectors(dra)

    def per_gpu(name: str, pool: GpuPoolPlan) -> int | None:
        return matching_per_node((), classes[name], pool, 1) if name in classes else None

    return per_gpu
