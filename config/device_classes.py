"""The administrator's DeviceClasses: named sets of the DRA driver's devices, each with its own quota.

A DeviceClass (resource.k8s.io/v1, cluster-scoped) selects devices by CEL; a claim names one class per
request. Kueue v0.19.2 maps each class in `resources.deviceClassMappings` to a quota resource
(pkg/dra/mapper.go) and charges a claim's devices to it (pkg/dra/claims.go), and the API server's
ResourceQuota counts them under `<class>.deviceclass.resource.k8s.io/devices` (config/labels.py), so a
class of its own gives tenants quota in it alone: `tenants[].gpu.<flavor>.deviceClass`.

Checked here, before anything is declared: each class's selectors match devices some DRA pool publishes
(config/dra_devices.py); a tenant's quota in a class names a defined class on a DRA flavor whose pool
publishes devices of it; and the tenants' nominal quotas in a class on a pool fit the devices of the
class that pool publishes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .capacity import GpuPoolPlan
from .dra_devices import describe, device_class_selectors, matching_per_node, matching_pools, pool_devices
from .errors import Problems, duplicates, item_labels
from .fair_share import TenantPlan
from .keys import CONFIG_NAMESPACE
from .node_pools import DraConfig

ROOT = f"{CONFIG_NAMESPACE}:gpu.dra.deviceClasses"


@dataclass(frozen=True)
class ClassPromise:
    """What the platform promises in one administrator's DeviceClass: the pools whose devices it takes,
    how many devices of it they publish, and the tenants' nominal quota in it."""

    name: str
    pools: tuple[str, ...]
    devices: int
    promised: int


def class_devices(dra: DraConfig, name: str, pool: GpuPoolPlan) -> int:
    """Devices of the class the pool's node group publishes in all."""
    selectors = device_class_selectors(dra)[name]
    return matching_per_node((), selectors, pool, pool.gpu_limit)


def promises(dra: DraConfig, tenants: Sequence[TenantPlan], pools: Sequence[GpuPoolPlan]) -> list[ClassPromise]:
    """Each administrator's class: its pools, their devices of it, and the nominal devices tenants hold in it."""
    found = []
    for device_class in dra.device_classes:
        counts = {pool.name: class_devices(dra, device_class.name, pool) for pool in pools if pool.is_dra}
        promised = sum(
            quota.quota.nominal * n
            for tenant in tenants
            for quota in tenant.quotas
            if quota.quota.device_class == device_class.name
            for n in quota.devices_per_unit.values()
        )
        matching = tuple(name for name, count in counts.items() if count)
        found.append(ClassPromise(device_class.name, matching, sum(counts.values()), promised))
    return found


def check_device_classes(
    dra: DraConfig, tenants: Sequence[TenantPlan], pools: Sequence[GpuPoolPlan], problems: Problems
) -> None:
    """Names, selectors the pools' devices prove, and quotas within the devices of each class."""
    labels = item_labels(dra.device_classes)
    for name in duplicates([c.name for c in dra.device_classes]):
        problems.add(f"{ROOT}.name", f"{name} is defined twice; a DeviceClass name is cluster-wide")
    base = device_class_selectors(DraConfig())
    dra_pools = [pool for pool in pools if pool.is_dra]
    for index, device_class in enumerate(dra.device_classes):
        kind = [pool for pool in dra_pools if pool.dra_device_class == device_class.driver_class]
        matching_pools(
            device_class, f"{ROOT}[{labels[index]}]", base[device_class.driver_class], kind, problems, device_class.driver_class
        )
    _check_quotas(dra, tenants, dra_pools, problems)


def _check_quotas(dra: DraConfig, tenants: Sequence[TenantPlan], pools: Sequence[GpuPoolPlan], problems: Problems) -> None:
    defined = [c.name for c in dra.device_classes]
    held: dict[tuple[str, str], int] = {}  # (class, pool) -> nominal devices
    for tenant in tenants:
        for quota in tenant.quotas:
            name = quota.quota.device_class
            if name is None:
                continue
            key = f"{CONFIG_NAMESPACE}:tenants[{tenant.name}].gpu.{quota.flavor.name}.deviceClass"
            pool = quota.flavor.pool
            if name not in defined:
                problems.add(key, f"{name} is no DeviceClass of gpu.dra.deviceClasses ({', '.join(defined) or 'none defined'})")
            elif not pool.is_dra:
                problems.add(
                    key,
                    f"set on flavor {quota.flavor.name} of pool {pool.name}, whose GPUs the device plugin hands out, not "
                    "DRA: a DeviceClass applies to DRA pools only; remove it",
                )
            elif not class_devices(dra, name, pool):
                published = "; ".join(describe(kind.device) for kind in pool_devices(pool)) or "nothing"
                problems.add(
                    key,
                    f"{name} takes no device of pool {pool.name} ({published}), so quota in it there admits claims "
                    "that never schedule: give the quota in the driver's class, or on a pool the class matches",
                )
            else:
                devices = sum(n * quota.quota.nominal for n in quota.devices_per_unit.values())
                held[(name, pool.name)] = held.get((name, pool.name), 0) + devices
    by_name = {pool.name: pool for pool in pools}
    for (name, pool_name), devices in held.items():
        available = class_devices(dra, name, by_name[pool_name])
        if devices > available:
            problems.add(
                f"{CONFIG_NAMESPACE}:tenants",
                f"nominal quotas in DeviceClass {name} on pool {pool_name} add up to {devices} devices, and the pool "
                f"publishes {available} of the class: lower them to {available} in all",
            )
