"""One simulation from a stack's `PlatformConfig` and a workload file: check, build, run, and hand back the result."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from config import PlatformConfig

from . import variants
from .arrivals import schedule_jobs, schedule_trace
from .baseline import largest_pods
from .engine import Options, Simulation
from .queueing import Kueue
from .sampling import start_sampling
from .serving import Deployment, deployments, start
from .trace import ALIBABA_GPU_2023, TraceStats
from .workload import Workload, WorkloadError, seconds

# The Kueue seam for a stack; the flag: borrowing switched off (every borrowingLimit and lendingLimit 0).
KueueFactory = Callable[[PlatformConfig, bool], Kueue]


@dataclass
class Result:
    """The finished simulation, live: for tests and sim/experiment.py, which reduces it to plain data."""

    sim: Simulation
    deployments: list[Deployment]
    trace_stats: list[TraceStats]


def check(config: PlatformConfig, workload: Workload, source: str) -> None:
    """Every tenant, deployment, flavor and tier the workload names exists in the stack; else one line each."""
    problems: list[str] = []
    tenants = {tenant.name: tenant for tenant in config.tenants}
    tiers = config.queueing.priorities

    def tenant_flavors(where: str, tenant_name: str, flavors: list[str] | None, tier: str | None) -> None:
        tenant = tenants.get(tenant_name)
        if tenant is None:
            problems.append(f"{source}: {where}: tenant {tenant_name!r} is not a tenant of the stack ({', '.join(tenants)})")
            return
        own = [quota.flavor.name for quota in tenant.quotas]
        for flavor in flavors or []:
            if flavor not in own:
                problems.append(
                    f"{source}: {where}.flavors: {flavor!r} is not one of tenant {tenant_name}'s flavors ({', '.join(own)})"
                )
        if tier is not None and tier not in tiers:
            problems.append(f"{source}: {where}.priority: {tier!r} is not a tier of queueing.priorities ({', '.join(tiers)})")

    for index, load in enumerate(workload.inference):
        where = f"inference[{index}]"
        tenant_flavors(where, load.tenant, None, None)
        tenant = tenants.get(load.tenant)
        if tenant is None:
            continue
        declared = {d.name for d in tenant.config.inference}
        if load.deployment in declared and load.spec is not None:
            problems.append(f"{source}: {where}.spec: tenant {load.tenant} declares {load.deployment} in the stack; remove spec")
        elif load.deployment not in declared and load.spec is None:
            problems.append(
                f"{source}: {where}.deployment: tenant {load.tenant} declares no deployment {load.deployment!r} "
                f"(it has: {', '.join(sorted(declared)) or 'none'}); give its spec"
            )
        elif load.spec is not None:
            tenant_flavors(where, load.tenant, [load.spec.flavor], None)
    for index, stream in enumerate(workload.jobs):
        tenant_flavors(f"jobs[{index}]", stream.tenant, stream.flavors, stream.priority)
    def one_kind(where: str, tenant_names: list[str], flavors: list[str] | None) -> None:
        """A pod requests one set of resources, so the flavors it may use must hand out the same kind of unit."""
        chosen = sorted({
            q.flavor.name
            for name in tenant_names if name in tenants
            for q in tenants[name].quotas if flavors is None or q.flavor.name in flavors
        })
        kinds = {repr(sorted(units[name].items())) + f"/{slices[name]}" for name in chosen}
        if len(kinds) > 1:
            problems.append(
                f"{source}: {where}.flavors: {', '.join(chosen)} hand out different units (whole GPUs, time slices, "
                "MIG layouts); a pod requests one kind, so list flavors of one kind"
            )
        if not chosen and all(name in tenants for name in tenant_names):
            problems.append(f"{source}: {where}.flavors: no flavor of the tenants matches")

    units = {flavor.name: flavor.resources_per_unit for flavor in config.flavors}
    slices = {flavor.name: flavor.slices_per_gpu for flavor in config.flavors}
    for index, stream in enumerate(workload.jobs):
        one_kind(f"jobs[{index}]", [stream.tenant], stream.flavors)
    for index, trace in enumerate(workload.traces):
        for qos, target in trace.classes.items():
            where = f"traces[{index}].classes.{qos}"
            for name in target.tenants:
                tenant_flavors(where, name, target.flavors, target.priority)
            one_kind(where, target.tenants, target.flavors)
    if problems:
        raise WorkloadError(problems)


def simulate(
    config: PlatformConfig,
    workload: Workload,
    kueue: KueueFactory,
    *,
    source: str = "workload",
    seed: int = 0,
    static_baseline: bool = False,
    project_dir: Path = Path("."),
    without: frozenset[str] = frozenset(),
    commitment_discount: float = 0.0,
) -> Result:
    """One run. `static_baseline` buys each tenant's usable nominal quota as fixed nodes and switches off what the
    static baseline leaves out (sim/variants.py STATIC_WITHOUT); `without` switches mechanisms off one by one."""
    check(config, workload, source)
    if static_baseline:
        without = without | variants.STATIC_WITHOUT
    options = Options(seed, static_baseline, without, commitment_discount)
    sim = Simulation(config, workload, kueue(config, variants.BORROWING in without), options)
    if static_baseline or variants.AUTOSCALING in without:
        sim.launch_fixed_capacity(largest_pods(config, workload, project_dir))
    sim.place_headroom()
    schedule_jobs(sim)
    stats = [schedule_trace(sim, trace, project_dir) for trace in workload.traces if trace.format == ALIBABA_GPU_2023]
    found = deployments(sim)
    for deployment in found:
        start(sim, deployment)
    start_sampling(sim, found, seconds(workload.sample_interval))
    sim.clock.run()
    sim.close()
    return Result(sim, found, stats)


