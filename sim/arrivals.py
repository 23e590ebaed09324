"""Jobs arriving: the workload's job streams (Poisson or listed) and recorded traces, as Kueue workloads."""

from __future__ import annotations

from pathlib import Path

from config.fair_share import TenantPlan

from . import rng
from .engine import Simulation
from .state import Group
from .trace import TraceStats, read_alibaba_2023
from .workload import JobStream, TraceSource, seconds


def _flavors(tenant: TenantPlan, wanted: list[str] | None) -> tuple[str, ...]:
    """The flavors a job may use, in its ClusterQueue's order (Kueue tries them in that order)."""
    own = [quota.flavor.name for quota in tenant.quotas]
    return tuple(name for name in own if wanted is None or name in wanted)


def schedule_jobs(sim: Simulation) -> None:
    for stream in sim.workload.jobs:
        for at, run in _stream_jobs(sim, stream):
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


def job_group(sim: Simulation, stream: JobStream, run: float) -> Group:
    """One job of the stream as a Kueue workload: its tenant's tier unless it names one, its flavors in order."""
    tenant = sim.tenants[stream.tenant]
    tier = stream.priority or tenant.config.priority
    return sim.new_group(
        tenant=tenant.name,
        tier=tier,
        priority=sim.config.queueing.priorities[tier],
        size=stream.pods,
        units_per_pod=stream.gpus_per_pod,
        flavors=_flavors(tenant, stream.flavors),
        run_seconds=run,
        stream=stream.name,
    )


def schedule_trace(sim: Simulation, source: TraceSource, project_dir: Path) -> TraceStats:
    """The trace's tasks from its first arrival on; classes the workload does not map are counted and skipped."""
    tasks, stats = read_alibaba_2023(project_dir / source.file)
    first = min((task.arrival for task in tasks), default=0.0)
    turns: dict[str, int] = {}
    for task in tasks:
        target = source.classes.get(task.qos)
        if target is None:
            continue
        turn = turns.get(task.qos, 0)
        turns[task.qos] = turn + 1
        tenant = sim.tenants[target.tenants[turn % len(target.tenants)]]
        flavors = _flavors(tenant, target.flavors)
        slices = {sim.flavors[name].slices_per_gpu for name in flavors}
        units = task.units(max(slices))
        tier = target.priority or tenant.config.priority
        for _ in range(source.copies):
            sim.clock.call(task.arrival - first, _arrive_task, sim, tenant, tier, flavors, units, task.run_seconds, task.qos)
    return stats


def _arrive_task(
    sim: Simulation, tenant: TenantPlan, tier: str, flavors: tuple[str, ...], units: int, run: float, qos: str
) -> None:
    group = sim.new_group(
        tenant=tenant.name,
        tier=tier,
        priority=sim.config.queueing.priorities[tier],
        size=1,
        units_per_pod=units,
        flavors=flavors,
        run_seconds=run,
        stream=f"trace:{qos}",
    )
    sim.submit(group)
