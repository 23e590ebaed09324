"""report.md: what a simulated stack delivered, per pool and tenant, beside the static baseline when asked.

Nothing in it depends on the machine or the wall clock: the same stack, workload and seed give the
same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence

from .events import percentile
from .run import Result
from .trace import TraceStats
from .warm_start import HEADROOM_TENANT

# What the model leaves out, and which way each omission moves the numbers.
LIMITS: tuple[str, ...] = (
    "GPUs only: CPU and memory quotas, the CPU pool and system nodes are not simulated; a pod never waits "
    "for CPU or memory. Waits and node counts are a lower bound where CPU or memory would bind first.",
    "Pods go to the least allocated Ready node that fits (the default LeastAllocated score, with GPUs standing "
    "in for cpu and memory); no topology, affinity or fragmentation across GPUs. Packing is no worse than "
    "real, so allocation % is an upper bound.",
    "Karpenter: one flavor maps to one pool, so NodePool weights only order the provisioning passes; "
    "spot prices are a fixed share of on-demand; capacity reservations always have room; EC2 never runs "
    "out of capacity; consolidation deletes nodes but never replaces one with a cheaper type. Costs are "
    "an upper bound where replacement would save, time to GPU a lower bound where EC2 capacity is short.",
    "Prices: on-demand in the stack's region where a vendored list has it (config/catalog_prices.py: us-east-1 "
    "and the GovCloud regions; any other region at us-east-1's, as the summary says), reserved at the on-demand "
    "rate (what an On-Demand Capacity Reservation bills), spot at the workload's `spot.priceFactor`; a region "
    "dearer than its price list costs more than shown.",
    "Launch to Ready and server start are stated assumptions (models/karpenter/provisioning.py "
    "LAUNCH_TO_READY, the workload's serverStartSeconds), not measurements.",
    "Warm start (sim/warm_start.py): a replica's serverStartSeconds loses the image pull on a node that "
    "already has the image, and what a pool's image snapshot and S3 weights save per config/time_to_gpu.py; "
    "headroom placeholders are evicted by kube-scheduler's preemption on GPUs alone, a preempting pod "
    "starts 5 s later, and an evicted placeholder's replacement waits for a node like any pod. Saved time "
    "is an upper bound where the figures are optimistic (snapshot reads, S3 throughput).",
    "A job's pods lost with their node restart the job's whole run once all are Ready again (no "
    "checkpoints): lost GPU-hours are an upper bound for jobs that checkpoint.",
    "Inference traffic is a fluid queue: a Ready replica serves a fixed rate, requests never time out, "
    "and KEDA's metrics are read at the HPA's sync without Prometheus' scrape delay (scale-ups come up "
    "to a scrape interval early).",
    "Trace tasks run for the time they held GPUs in Alibaba's cluster, whatever GPU they get here; a "
    "fraction of a GPU takes a whole one on flavors without time-slicing, which overstates allocation.",
)


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _minutes(value: float | None) -> str:
    return "-" if value is None else f"{value / 60:,.1f} min"


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def pool_rows(result: Result) -> list[list[str]]:
    rows = []
    for name, pool in sorted(result.sim.pools.items()):
        provisioned = pool.gpu_seconds / 3600
        allocated = pool.allocated_gpu_seconds / 3600
        rows.append([
            name,
            _num(provisioned),
            _num(allocated),
            _num(100 * allocated / provisioned if provisioned else None),
            str(pool.launched),
            str(pool.consolidated),
            str(pool.interrupted),
            str(pool.expired),
            _num(pool.cost, 2),
            _num(pool.cost / allocated if allocated else None, 2),
        ])
    return rows


def tenant_rows(result: Result) -> list[list[str]]:
    rows = []
    for name in sorted(result.sim.tenants):
        record = result.sim.record.tenants[name]
        allocated = record.allocated_gpu_seconds / 3600
        rows.append([
            name,
            _num(allocated),
            _num(record.cost, 2),
            _num(record.cost / allocated if allocated else None, 2),
            str(record.admitted),
            str(record.finished),
            str(record.preemptions),
            str(record.evictions),
        ])
    headroom = result.sim.record.tenants.get(HEADROOM_TENANT)
    if headroom is not None:
        # The placeholders' GPUs: idle by design, what the warm headroom costs (sim/warm_start.py).
        rows.append([HEADROOM_TENANT, _num(headroom.allocated_gpu_seconds / 3600), _num(headroom.cost, 2),
                     "-", "-", "-", "-", "-"])
    idle = sum(p.cost for p in result.sim.pools.values()) - sum(r.cost for r in result.sim.record.tenants.values())
    rows.append(["(idle capacity)", "-", _num(idle, 2), "-", "-", "-", "-", "-"])
    return rows


def wait_rows(result: Result) -> list[list[str]]:
    record = result.sim.record
    tiers = sorted(result.sim.config.queueing.priorities.items(), key=lambda item: -item[1])
    rows = []
    for tier, _ in tiers:
        waits = record.waits.get(tier, [])
        never = record.still_waiting.get(tier, [])
        if not waits and not never:
            continue
        rows.append([
            tier,
            str(len(waits)),
            _minutes(percentile(waits, 50)),
            _minutes(percentile(waits, 95)),
            _minutes(max(waits) if waits else None),
            f"{len(never)}" + (f" (longest {_minutes(max(never))})" if never else ""),
        ])
    return rows


def time_to_gpu_rows(result: Result) -> list[list[str]]:
    rows = []
    for deployment in result.deployments:
        times = result.sim.record.time_to_gpu.get(deployment.name, [])
        rows.append([deployment.name, str(len(times)), _minutes(percentile(times, 50)), _minutes(percentile(times, 95))])
    return rows


def _totals(result: Result) -> dict[str, float | None]:
    pools = result.sim.pools.values()
    provisioned = sum(p.gpu_seconds for p in pools) / 3600
    allocated = sum(p.allocated_gpu_seconds for p in pools) / 3600
    cost = sum(p.cost for p in pools)
    waits = [w for values in result.sim.record.waits.values() for w in values]
    scaleups = [t for values in result.sim.record.time_to_gpu.values() for t in values]
    return {
        "GPU-hours provisioned": provisioned,
        "GPU-hours allocated": allocated,
        "allocation %": 100 * allocated / provisioned if provisioned else None,
        "queue wait p50 (min)": None if not waits else percentile(waits, 50) / 60,  # type: ignore[operator]
        "queue wait p95 (min)": None if not waits else percentile(waits, 95) / 60,  # type: ignore[operator]
        "never admitted": float(sum(len(v) for v in result.sim.record.still_waiting.values())),
        "time to GPU p95 (min)": None if not scaleups else percentile(scaleups, 95) / 60,  # type: ignore[operator]
        "preemptions": float(sum(r.preemptions for r in result.sim.record.tenants.values())),
        "cost USD": cost,
        "USD per allocated GPU-hour": cost / allocated if allocated else None,
    }


def side_by_side(result: Result, baseline: Result) -> list[list[str]]:
    simulated, static = _totals(result), _totals(baseline)
    return [[name, _num(static[name]), _num(simulated[name])] for name in simulated]


def _trace_lines(stats: Sequence[TraceStats]) -> str:
    lines = []
    for s in stats:
        lines.append(
            f"- {s.rows} rows: {s.kept} replayed; left out {s.without_gpu} without GPUs, {s.never_scheduled} never "
            f"scheduled, {s.no_run_time} without run time (sim/trace.py)."
        )
    return "\n".join(lines) + "\n"


def render_report(result: Result, stack: str, workload_name: str, baseline: Result | None = None) -> str:
    sim = result.sim
    workload = sim.workload
    sections = [
        f"# Simulation: stack `{stack}`, workload `{workload_name}`\n",
        f"{workload.description}\n" if workload.description else "",
        f"From {workload.start} for {workload.duration}, seed {sim.options.seed}; {sim.clock.events:,} events.\n",
    ]
    if baseline is not None:
        sections += [
            "## Against the static baseline\n",
            "Static: each tenant's nominal quota as its own always-on capacity, no borrowing, no autoscaling of nodes.\n",
            table(["", "static", "simulated"], side_by_side(result, baseline)),
        ]
    sections += [
        "## Pools\n",
        table(
            ["pool", "GPU-h provisioned", "GPU-h allocated", "allocation %", "nodes launched", "consolidated",
             "interrupted", "expired", "cost USD", "USD / allocated GPU-h"],
            pool_rows(result),
        ),
        "## Tenants\n",
        "Cost is attributed by what each tenant's pods hold: their share of each node's GPUs for as long as they hold it.\n",
        table(["tenant", "GPU-h allocated", "cost USD", "USD / allocated GPU-h", "admitted", "finished", "preemptions",
               "evictions"], tenant_rows(result)),
        "## Queue wait by priority\n",
        "From a workload's creation to its first admission by Kueue.\n",
        table(["priority", "admitted", "p50", "p95", "max", "never admitted"], wait_rows(result)),
    ]
    if result.deployments:
        sections += [
            "## Time to GPU for scale-ups\n",
            "From the HPA's decision to add a replica to that replica's server being Ready.\n",
            table(["deployment", "scale-ups", "p50", "p95"], time_to_gpu_rows(result)),
        ]
    if result.trace_stats:
        sections += ["## Trace\n", _trace_lines(result.trace_stats)]
    sections += ["## What the model leaves out\n", "\n".join(f"- {line}" for line in LIMITS) + "\n"]
    return "\n".join(section for section in sections if section)
