"""Fixed capacity: the nodes a pool holds from the first second when Karpenter does not autoscale it.

Two variants (sim/variants.py) run on fixed nodes:
- the static baseline: each tenant's nominal quota on a flavor some workload item of that tenant may use,
  in physical GPUs (slices / replicas, rounded up), on on-demand nodes;
- pools pinned at their NodePool limit (`without autoscaling`): each capacity type's nominal quota, the
  rest of the limit on the capacity type Karpenter launches by default.

Either way the nodes are the pool's cheapest whole nodes within the NodePool limit
(config/capacity.py `GpuPoolPlan.cheapest_nodes`), the rule the summary prices a full pool with.
One of a pool's nodes is large enough for the largest pod the workload may place there (`largest_pods`),
so no pod is left larger than every node by the choice of nodes. `fixed_capacity` returns plain data:
the engine launches it and the report states it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from config import PlatformConfig
from config.capacity import GpuPoolPlan
from config.fair_share import TenantPlan
from models.karpenter.provisioning import ON_DEMAND, SPOT, capacity_type

from .trace import ALIBABA_GPU_2023, read_alibaba_2023
from .workload import Workload

# Why a pool (or one capacity type of it) gets no fixed nodes.
NO_WORKLOAD = "no workload item can be placed on it"
NO_NOMINAL = "no nominal quota its work can use"


@dataclass(frozen=True)
class FixedNodes:
    """One capacity type of a pool, as fixed capacity: what was wanted, what the limit let it buy, at what price."""

    pool: str
    capacity_type: str
    nominal_units: int  # the tenants' nominal quota on the pool's flavors of this type, in the flavors' units
    wanted_units: int  # what is bought for: the usable nominal quota (static) or a share of the limit (pinned)
    wanted_gpus: int  # physical GPUs: wanted_units / slices per GPU, rounded up
    limit_gpus: int  # what the NodePool limit leaves this capacity type
    instance_types: tuple[str, ...]  # the nodes, one entry each
    gpus: int
    usd_per_hour: float  # all the nodes together, after any commitment discount (spot at the workload's price factor)
    note: str = ""  # why nothing, or less than wanted, is bought


def kind_without(kind: str, without: frozenset[str]) -> str:
    """The capacity type a node launches as once spot is switched off: on-demand for spot."""
    from .variants import SPOT as SPOT_MECHANISM

    return ON_DEMAND if kind == SPOT and SPOT_MECHANISM in without else kind


def default_kind(pool: GpuPoolPlan, without: frozenset[str]) -> str:
    """What Karpenter launches for a flavor that names no capacity type (models/karpenter capacity_type)."""
    return kind_without(capacity_type(pool.config.capacity_types, reservation_has_room=True), without)


def tenant_flavors(tenant: TenantPlan, wanted: Iterable[str] | None) -> tuple[str, ...]:
    """The flavors a job of `tenant` may use, in its ClusterQueue's order (Kueue tries them in that order)."""
    allowed = None if wanted is None else set(wanted)
    return tuple(q.flavor.name for q in tenant.quotas if allowed is None or q.flavor.name in allowed)


def usable_quota(config: PlatformConfig, workload: Workload) -> set[tuple[str, str]]:
    """(tenant, flavor) pairs some workload item may be placed on: a job stream's, a trace class's, a deployment's."""
    tenants = {tenant.name: tenant for tenant in config.tenants}
    found: set[tuple[str, str]] = set()
    for stream in workload.jobs:
        found |= {(stream.tenant, f) for f in tenant_flavors(tenants[stream.tenant], stream.flavors)}
    for trace in workload.traces:
        for target in trace.classes.values():
            for name in target.tenants:
                found |= {(name, f) for f in tenant_flavors(tenants[name], target.flavors)}
    for load in workload.inference:
        declared = {d.name: d for d in tenants[load.tenant].config.inference}
        spec = declared.get(load.deployment) or load.spec
        if spec is not None:
            found.add((load.tenant, spec.flavor))
    return found


def largest_pods(config: PlatformConfig, workload: Workload, project_dir: Path) -> dict[str, int]:
    """Per pool, the physical GPUs of the largest pod a workload item may place there (its units / slices per GPU,
    rounded up): job streams, deployments' replicas, and the tasks of each mapped trace class."""
    tenants = {tenant.name: tenant for tenant in config.tenants}
    flavors = {flavor.name: flavor for flavor in config.flavors}
    found: dict[str, int] = {}

    def pod(flavor_names: Iterable[str], units: int) -> None:
        for name in flavor_names:
            flavor = flavors[name]
            gpus = math.ceil(units / flavor.slices_per_gpu)
            found[flavor.pool.name] = max(found.get(flavor.pool.name, 0), gpus)

    for stream in workload.jobs:
        if stream.gpus_per_pod is not None:  # a claim's pods run on the DRA pools' standing nodes
            pod(tenant_flavors(tenants[stream.tenant], stream.flavors), stream.gpus_per_pod)
    for load in workload.inference:
        declared = {d.name: d for d in tenants[load.tenant].config.inference}
        spec = declared.get(load.deployment) or load.spec
        if spec is not None:
            pod([spec.flavor], spec.gpus_per_replica)
    for trace in workload.traces:
        if trace.format != ALIBABA_GPU_2023:
            continue
        tasks, _ = read_alibaba_2023(project_dir / trace.file)
        for qos, target in trace.classes.items():
            names = [f for t in target.tenants for f in tenant_flavors(tenants[t], target.flavors)]
            slices = max((flavors[name].slices_per_gpu for name in names), default=1)
            units = max((task.units(slices) for task in tasks if task.qos == qos), default=0)
            if units:
                pod(names, units)
    return found


def fixed_capacity(config: PlatformConfig, workload: Workload, *, static_baseline: bool, without: frozenset[str],
                   limits: dict[str, int], largest: dict[str, int], commitment_discount: float = 0.0) -> list[FixedNodes]:
    """Each pool's fixed nodes per capacity type, pools in the stack's order. `limits`: each pool's NodePool limit
    in physical GPUs as the run has it (with or without the headroom); `largest`: each pool's largest pod in
    GPUs (`largest_pods`), which one of its nodes holds where a type can."""
    usable = usable_quota(config, workload) if static_baseline else None
    pool_of = {flavor.name: flavor.pool.name for flavor in config.flavors}
    used_pools = None if usable is None else {pool_of[flavor] for _, flavor in usable if flavor in pool_of}
    found = []
    for pool in config.gpu_pools:
        fallback = default_kind(pool, without)
        nominal: dict[str, int] = {}
        wanted: dict[str, int] = {}
        for tenant in config.tenants:
            for quota in tenant.quotas:
                if quota.flavor.pool.name != pool.name:
                    continue
                kind = kind_without(quota.flavor.capacity_type, without) if quota.flavor.capacity_type else fallback
                nominal[kind] = nominal.get(kind, 0) + quota.quota.nominal
                if usable is None or (tenant.name, quota.flavor.name) in usable:
                    wanted[kind] = wanted.get(kind, 0) + quota.quota.nominal
        slices = pool.slices_per_gpu
        gpus = {kind: math.ceil(units / slices) for kind, units in wanted.items()}
        nominal.setdefault(fallback, 0)
        if not static_baseline:
            # Pinned at the limit: each type's nominal quota, the rest of the limit on the default type.
            rest = max(0, limits[pool.name] - sum(gpus.values()))
            gpus[fallback] = gpus.get(fallback, 0) + rest
            wanted[fallback] = wanted.get(fallback, 0) + rest * slices
        left = limits[pool.name]
        discount = 1.0 - commitment_discount if static_baseline else 1.0
        # The default type last: it takes what the limit leaves after the types quotas name.
        for kind in sorted(nominal, key=lambda k: (k == fallback, k)):
            want = gpus.get(kind, 0)
            if not want and kind == fallback and nominal[kind] == 0 and len(nominal) > 1:
                continue  # no quota names this type, and the other types hold the pool's quota
            nodes = (pool.cheapest_nodes(want, left, largest.get(pool.name, 1)) or ()) if want else ()
            bought = sum(t.gpus for t in nodes)
            note = ""
            if not want:
                note = NO_WORKLOAD if used_pools is not None and pool.name not in used_pools else NO_NOMINAL
            elif bought < want:
                note = f"the NodePool limit ({limits[pool.name]} GPUs) holds {bought} of the {want} GPUs in whole nodes"
            spot = workload.spot.price_factor if kind == SPOT else 1.0
            price = sum(pool.on_demand_price(t) or 0.0 for t in nodes) * discount * spot
            found.append(FixedNodes(pool.name, kind, nominal[kind], wanted.get(kind, 0), want, left,
                                    tuple(t.name for t in nodes), bought, price, note))
            left -= bought
    return found
