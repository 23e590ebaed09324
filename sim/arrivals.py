"""Jobs arriving: the workload's job streams (Poisson or listed) and recorded traces, as Kueue workloads."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from config.fair_share import TenantPlan

from . import claims_placement, rng, sharing
from .engine import Simulation
from .state import Group
from .trace import TraceStats, TraceTask, inflate, mean_gpus, read_alibaba_2023
from .workload import JobStream, TraceClass, TraceSource, seconds


def _flavors(tenant: TenantPlan, wanted: list[str] | None) -> tuple[str, ...]:
    """The flavors a job may use, in its ClusterQueue's order (Kueue tries them in that order)."""
    own = [quota.flavor.name for quota in tenant.quotas]
    return tuple(name for name in own if wanted is None or name in wanted)


def schedule_jobs(sim: Simulation) -> None:
    for stream in sim.workload.jobs:
        for at, run in _stream_jobs(sim, stream):
            sim.expected[(stream.tenant, _tier(sim, stream))] += 1
            sim.clock.call(at, _arrive, sim, stream, run)


def _stream_jobs(sim: Simulation, stream: JobStream) -> list[tuple[float, float]]:
    """(arrival, run time) pairs, each drawn from the stream's own arrivals and durations generators."""
    end = seconds(stream.until) if stream.until else sim.clock.end
    if stream.arrivals.at is not None:
        times = [float(seconds(offset)) for offset in stream.arrivals.at]
    else:
        assert stream.arrivals.per_hour is not None
        times, at = [], 0.0
        while True:
            at += sim.rng(rng.ARRIVALS, stream.name).expovariate(stream.arrivals.per_hour / 3600)
            if at >= end:
                break
            times.append(at)
    jobs = []
    for at in times:
        if stream.duration.fixed is not None:
            run = float(seconds(stream.duration.fixed))
        else:
            assert stream.duration.exponential_mean is not None
            run = sim.rng(rng.DURATIONS, stream.name).expovariate(1 / seconds(stream.duration.exponential_mean))
        jobs.append((at, run))
    return jobs


def _arrive(sim: Simulation, stream: JobStream, run: float) -> None:
    sim.submit(job_group(sim, stream, run))


def _tier(sim: Simulation, stream: JobStream) -> str:
    """The stream's priority tier: its own, or its tenant's."""
    return stream.priority or sim.tenants[stream.tenant].config.priority


def job_group(sim: Simulation, stream: JobStream, run: float) -> Group:
    """One job of the stream as a Kueue workload: its tenant's tier unless it names one, its flavors in order."""
    tenant = sim.tenants[stream.tenant]
    tier = _tier(sim, stream)
    claim, units, flavors = None, stream.gpus_per_pod, _flavors(tenant, stream.flavors)
    if stream.claim_template is not None:
        template = claims_placement.find_template(sim.config, tenant, stream.claim_template)
        assert template is not None  # sim/workload_check.py refuses a stream naming no template of the tenant's
        claim = claims_placement.shape(sim.config, template)
        units, flavors = claim.count, claims_placement.claim_flavors(sim.config, tenant, stream.flavors, claim)
    assert units is not None
    return sim.new_group(
        tenant=tenant.name,
        tier=tier,
        priority=sim.config.queueing.priorities[tier],
        size=stream.pods,
        units_per_pod=units,
        flavors=flavors,
        run_seconds=run,
        stream=stream.name,
        do_not_disrupt=sim.workload.do_not_disrupt,
        claim=claim,
    )


def schedule_trace(sim: Simulation, source: TraceSource, project_dir: Path) -> TraceStats:
    """The trace's tasks in its window, inflated to the stack's capacity when asked (sim/trace.py rules 1-7);
    every task left out is counted in the statistics."""
    window = source.window
    tasks, stats = read_alibaba_2023(
        project_dir / source.file,
        float(seconds(window.start)) if window is not None and window.start is not None else None,
        float(seconds(window.end)) if window is not None and window.end is not None else None,
    )
    mapped: list[_Mapped] = []
    turns: dict[str, int] = {}
    unmapped = 0
    for task in tasks:
        target = source.classes.get(task.qos)
        if target is None:
            unmapped += 1
            continue
        turn = turns.get(task.qos, 0)
        turns[task.qos] = turn + 1
        tenant = sim.tenants[target.tenants[turn % len(target.tenants)]]
        flavors = _flavors(tenant, target.flavors)
        slices = max(sim.flavors[name].slices_per_gpu for name in flavors)
        units = task.units(slices)
        if sim.gpu_sharing is not None:
            pool = max((sim.flavors[name].pool for name in flavors), key=lambda plan: plan.slices_per_gpu)
            units = sharing.task_units(sim.gpu_sharing.mode, pool, slices, task.gpus, task.gpu_milli)
        mapped.append(_Mapped(task, target, tenant, flavors, units, slices))
    stats = replace(stats, unmapped=unmapped, services=sum(1 for m in mapped if m.target.replay == SERVICE_REPLAY))
    if source.inflation is not None:
        mapped, stats = _inflate(sim, mapped, source.inflation.ratio, stats)
    for m in mapped:
        tier = m.target.priority or m.tenant.config.priority
        for _ in range(source.copies):
            sim.expected[(m.tenant.name, tier)] += 1
            sim.clock.call(m.task.arrival, _arrive_task, sim, m, tier)
    return stats


SERVICE_REPLAY = "service"


@dataclass(frozen=True)
class _Mapped:
    """A trace task and where rule 4 puts it."""

    task: TraceTask
    target: TraceClass
    tenant: TenantPlan
    flavors: tuple[str, ...]
    units: int
    slices: int

    @property
    def gpus(self) -> float:
        """Physical GPUs its pod holds."""
        return self.units / self.slices


def _inflate(sim: Simulation, mapped: list[_Mapped], ratio: float, stats: TraceStats) -> tuple[list[_Mapped], TraceStats]:
    """Rule 7: copies (or removals) of tasks drawn at random until the mean GPUs asked for meet ratio x capacity."""
    pools = sorted({sim.flavors[name].pool.name for m in mapped for name in m.flavors})
    capacity = sum(sim.pools[name].plan.gpu_limit for name in pools)
    horizon = sim.clock.end
    weights = [mean_gpus([m.gpus], [m.task.arrival], [m.task.run_seconds], horizon) for m in mapped]
    demand = sum(weights)
    added, removed = inflate(weights, ratio * capacity, sim.rng(rng.TRACE_INFLATION))
    gone = set(removed)
    kept = [m for index, m in enumerate(mapped) if index not in gone] + [mapped[index] for index in added]
    return kept, replace(stats, inflation_ratio=ratio, demand_gpus=demand, capacity_gpus=capacity,
                         added=len(added), removed=len(removed))


def _arrive_task(sim: Simulation, mapped: _Mapped, tier: str) -> None:
    group = sim.new_group(
        tenant=mapped.tenant.name,
        tier=tier,
        priority=sim.config.queueing.priorities[tier],
        size=1,
        units_per_pod=mapped.units,
        flavors=mapped.flavors,
        run_seconds=mapped.task.run_seconds,
        stream=f"trace:{mapped.task.qos}",
        start_delay=float(mapped.target.start_seconds),
        service=mapped.target.replay == SERVICE_REPLAY,
        do_not_disrupt=sim.workload.do_not_disrupt,
    )
    sim.submit(group)
