"""The schedulability proof: every GPU quota Kueue promises, a node can hold.

Kueue admits a tenant's work against its ClusterQueue's nominal quotas; the pods then need nodes. For
each flavor and extended resource with nominal quota, this names the pool the flavor selects, the
instance types whose nodes advertise the resource once configured (overlays applied:
`config.advertised.advertised`), and the least the pool reaches before its NodePool limit, in the units
Karpenter counts, stops it launching (`config.advertised.guaranteed_units`). A DRA pool is a managed
node group of fixed size whose nodes publish their devices in ResourceSlices
(`config.advertised.dra_devices`); it holds at least its node count times the smallest type's devices.
The quota promised on all of the pool's flavors must fit in that, or admitted pods would wait for
nodes that never come.

Capacity the pool reaches beyond the nominal quotas promised on it is admitted to nobody: Kueue
admits only against ClusterQueues' nominal quotas (borrowing lends another queue's unused nominal,
pkg/cache/scheduler/clusterqueue_snapshot.go), and the platform's Cohorts hold no quota of their own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from .advertised import NODES_RESOURCE, advertised, dra_devices, guaranteed_units, limit_units
from .capacity import GpuPoolPlan
from .errors import Problems
from .fair_share import FlavorPlan, TenantPlan
from .keys import CONFIG_NAMESPACE


@dataclass(frozen=True)
class Promise:
    """One flavor's nominal quota of one extended resource, and what its pool can launch for it."""

    flavor: FlavorPlan
    resource: str
    quota: int  # nominal quota on this flavor, every tenant's, in the resource's units
    promised_on_pool: int  # nominal quota on every flavor of the pool, same resource
    advertised_by: tuple[str, ...]  # the pool's instance types whose nodes carry the resource
    limit: tuple[str, int] | None  # the NodePool limit Karpenter counts, or a DRA node group's size; None: unlimited
    reachable: int | None  # resource units the pool surely reaches within that limit; None: unlimited

    @property
    def pool(self) -> GpuPoolPlan:
        return self.flavor.pool

    @property
    def holds(self) -> bool:
        return bool(self.advertised_by) and (self.reachable is None or self.promised_on_pool <= self.reachable)

    @property
    def limit_text(self) -> str:
        if self.limit is None:
            return "none"
        if self.pool.is_dra:
            return f"node group: {self.limit[1]} nodes"
        return f"{self.limit[0]}: {self.limit[1]}"


@dataclass(frozen=True)
class Fix:
    """A change to the stack that a warning suggests: the config key, by names, and its new value."""

    path: tuple[str, ...]  # ("tenants", "<tenant>", "gpu", "<flavor>", "nominal") or ("nodePools", "<pool>", "gpus")
    value: int

    @property
    def key(self) -> str:
        """The key as the config's own lines name it: `gpu-platform:nodePools[gpu-l40s].gpus`."""
        section, item, *rest = self.path
        return f"{CONFIG_NAMESPACE}:{section}[{item}]" + "".join(f".{part}" for part in rest)


@dataclass(frozen=True)
class Unpromised:
    """Capacity quotas could hold that no nominal quota covers, so Kueue admits nobody to it.

    Quotas may hold what the pool both declares and surely reaches. A pool's headroom raises its NodePool
    limit above the declared GPUs, so it may reach more than it declares: that excess is the placeholders',
    which tenants' pods take by preemption within their quotas, and no quota may be given it.
    """

    pool: GpuPoolPlan
    resource: str
    reachable: int
    declared: int  # the pool's declared capacity in the resource (`GpuPoolPlan.schedulable_units`)
    promised: int
    fixes: tuple[Fix, ...]  # each one alone is accepted by the config checks (tests/test_warning_fixes.py)

    @property
    def amount(self) -> int:
        return min(self.reachable, self.declared) - self.promised

    @property
    def message(self) -> str:
        declared = f" ({self.declared} declared, the rest for its headroom)" if self.reachable > self.declared else ""
        fixes = " or ".join(f"set {fix.key} to {fix.value}" for fix in self.fixes)
        return (
            f"pool `{self.pool.name}` reaches {self.reachable} `{self.resource}`{declared} but only {self.promised} are "
            f"nominal quota; Kueue admits work only against nominal quotas, so no tenant can borrow the other "
            f"{self.amount}" + (f": {fixes}" if fixes else "")
        )


def _per_node(pool: GpuPoolPlan, resource: str) -> dict[str, int]:
    """Instance type -> units of `resource` one of its nodes in this pool offers."""
    if pool.dra_device_class is not None:
        return {t.name: dra_devices(pool, t) for t in pool.instance_types}
    return {t.name: advertised(pool, t).get(resource, 0) for t in pool.instance_types}


def _reach(pool: GpuPoolPlan, resource: str) -> tuple[tuple[str, int] | None, int | None]:
    """The NodePool limit Karpenter counts for `resource` (a DRA pool: its node group's size), and the units the
    pool surely reaches within it."""
    if pool.is_dra:
        # EKS may launch any of the node group's types, so each node publishes at least the smallest type's devices.
        nodes = pool.node_group_size
        return (NODES_RESOURCE, nodes), nodes * min(_per_node(pool, resource).values())
    limits = limit_units(pool)
    if resource not in limits:
        return None, None
    return (resource, limits[resource]), guaranteed_units(pool)[resource]


def promises(flavors: Sequence[FlavorPlan], tenants: Sequence[TenantPlan]) -> list[Promise]:
    """Every flavor x extended resource with nominal quota > 0, in flavor order, resources sorted."""
    nominal: dict[tuple[str, str], int] = {}
    for tenant in tenants:
        for tenant_quota in tenant.quotas:
            # In the pool's own resources: quota in an administrator's DeviceClass is devices of the pool's class.
            for resource, per_unit in tenant_quota.flavor.resources_per_unit.items():
                key = (tenant_quota.flavor.name, resource)
                nominal[key] = nominal.get(key, 0) + tenant_quota.quota.nominal * per_unit
    on_pool: dict[tuple[str, str], int] = {}
    for flavor in flavors:
        for resource in flavor.resources_per_unit:
            key = (flavor.pool.name, resource)
            on_pool[key] = on_pool.get(key, 0) + nominal.get((flavor.name, resource), 0)
    rows = []
    for flavor in flavors:
        for resource in sorted(flavor.resources_per_unit):
            quota = nominal.get((flavor.name, resource), 0)
            if quota <= 0:
                continue
            limit, reachable = _reach(flavor.pool, resource)
            per_node = _per_node(flavor.pool, resource)
            rows.append(
                Promise(
                    flavor=flavor,
                    resource=resource,
                    quota=quota,
                    promised_on_pool=on_pool[(flavor.pool.name, resource)],
                    advertised_by=tuple(name for name, units in per_node.items() if units > 0),
                    limit=limit,
                    reachable=reachable,
                )
            )
    return rows


def unpromised(flavors: Sequence[FlavorPlan], tenants: Sequence[TenantPlan]) -> list[Unpromised]:
    """Per pool and resource, what the pool declares and reaches beyond the nominal quotas promised on it."""
    made = promises(flavors, tenants)
    rows = {}
    for promise in made:
        pool, resource = promise.pool, promise.resource
        declared = pool.schedulable_units.get(resource, 0)
        key = (pool.name, resource)
        if promise.reachable is None or min(promise.reachable, declared) <= promise.promised_on_pool or key in rows:
            continue
        spare = min(promise.reachable, declared) - promise.promised_on_pool
        fixes = [fix for fix in (_raise_nominal(pool, resource, spare, tenants), _lower_gpus(pool, made)) if fix]
        rows[key] = Unpromised(pool, resource, promise.reachable, declared, promise.promised_on_pool, tuple(fixes))
    return list(rows.values())


def _raise_nominal(pool: GpuPoolPlan, resource: str, spare: int, tenants: Sequence[TenantPlan]) -> Fix | None:
    """The first tenant holding nominal quota on the pool takes the spare units, in whole units of its flavor.

    A tenant that holds some already, so a time-sliced pool stays with the tenants it serves; the spare is
    within what the pool declares and reaches, so the raised quotas still fit it.
    """
    for tenant in tenants:
        for held in tenant.quotas:
            per_unit = held.flavor.resources_per_unit.get(resource, 0)
            if held.flavor.pool is pool and held.quota.nominal and per_unit and spare >= per_unit:
                return Fix(("tenants", tenant.name, "gpu", held.flavor.name, "nominal"), held.quota.nominal + spare // per_unit)
    return None


def _lower_gpus(pool: GpuPoolPlan, made: Sequence[Promise]) -> Fix | None:
    """The fewest GPUs the pool can declare with every nominal quota on it still declared and reached, and at
    least one node of each of its instance types' sizes launchable; None when its `gpus` is that already."""
    promised = {p.resource: p.promised_on_pool for p in made if p.pool is pool}
    smallest = pool.instance_types[0].gpus if pool.is_dra else min(t.gpus for t in pool.instance_types)
    lowest = None
    for gpus in range(pool.gpu_limit - 1, smallest - 1, -1):
        trial = replace(pool, config=pool.config.model_copy(update={"gpus": gpus}))
        for resource, amount in promised.items():
            reachable = _reach(trial, resource)[1]
            if trial.schedulable_units.get(resource, 0) < amount or (reachable is not None and reachable < amount):
                break
        else:
            lowest = gpus
            continue
        break
    return None if lowest is None else Fix(("nodePools", pool.name, "gpus"), lowest)


def _capacity_phrase(promise: Promise) -> str:
    if promise.pool.is_dra and promise.limit is not None:
        return f"its node group of {promise.limit[1]} nodes surely holds"
    return f"its NodePool limit {promise.limit_text} lets Karpenter surely launch"


def check_schedulability(
    flavors: Sequence[FlavorPlan], tenants: Sequence[TenantPlan], pools: Sequence[GpuPoolPlan], problems: Problems
) -> None:
    """One line per pool and resource whose promised nominal quota its NodePool cannot launch.

    A pool promised more than it declares is config/fair_share.py's refusal already; this catches what
    the declaration hides: a limit that instance types of its sizes cannot fill.
    """
    reported: set[tuple[str, str]] = set()
    for promise in promises(flavors, tenants):
        key = (promise.pool.name, promise.resource)
        declared = promise.pool.schedulable_units.get(promise.resource, 0)
        if promise.holds or key in reported or promise.promised_on_pool > declared:
            continue
        reported.add(key)
        path = f"{CONFIG_NAMESPACE}:nodePools[{promise.pool.name}].gpus"
        if not promise.advertised_by:
            problems.add(
                path,
                f"no instance type of pool {promise.pool.name} advertises {promise.resource}, which flavor "
                f"{promise.flavor.name} promises {promise.quota} of: change the pool's sharing or the quotas",
            )
            continue
        problems.add(
            path,
            f"pool {promise.pool.name} is promised {promise.promised_on_pool} {promise.resource} (nominal quotas on "
            f"its flavors), but {_capacity_phrase(promise)} only {promise.reachable} on "
            f"{', '.join(promise.advertised_by)}: lower the quotas to {promise.reachable} or "
            "declare gpus that its instance types fill",
        )
