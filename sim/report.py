"""report.json and report.md: what a simulated stack delivered, per pool, tenant, tier and deployment.

`report_data` gathers the runs' measures (sim/measures.py, keyed by metric id) into report.json, the
source of truth; `render_report` writes report.md from that data alone, so the two never disagree.
With several seeds each figure is the mean with its 95 % Student-t interval (sim/stats.py). Nothing
depends on the machine or the wall clock: the same stack, workload and seeds give the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from . import admissibility
from . import measures as m
from .ledger import LOSS_CAUSES

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
    "A preempted workload's quota is freed 2 s after Kueue's decision (the eviction's round trips through the "
    "job's controllers, sim/engine.py PREEMPTION_RELEASE_SECONDS), for every kind; a Deployment's pods (Kueue's pod "
    "integration) hold it until they have stopped, which can be minutes: waits behind a preempted service are a "
    "lower bound.",
    "A job's pods lost with their node, or preempted, restart the job's whole run once all are Ready again (no "
    "checkpoints): lost GPU-hours are an upper bound, useful GPU-hours a lower bound, for jobs that checkpoint.",
    "Inference traffic is a fluid queue: a Ready replica serves a fixed rate, requests never time out, "
    "and KEDA's metrics are read at the HPA's sync without Prometheus' scrape delay (scale-ups come up "
    "to a scrape interval early).",
    "Trace tasks run for the time they held GPUs in Alibaba's cluster, whatever GPU they get here; a "
    "fraction of a GPU takes a whole one on flavors without time-slicing, which overstates allocation. A class "
    "replayed as services keeps its running time across evictions and pays its startSeconds on each start; one "
    "replayed as jobs starts over, which overstates lost work for tasks that checkpoint.",
)


# The figures a variant is compared on against the full platform, seed by seed (experiment.paired_deltas).
COMPARED = (m.USD_PER_USEFUL, m.USEFUL, m.START_P95, m.COST, m.PROVISIONED)


def report_data(stack: str, workload_name: str, workload: Any, seeds: Sequence[int],
                variants: Mapping[str, tuple[dict[str, Any], Sequence[dict[str, Any]]]], *,
                assumptions: Mapping[str, Sequence[str]] | None = None,
                deltas: Mapping[str, Mapping[str, Any]] | None = None,
                commitment_discount: float = 0.0) -> dict[str, Any]:
    """report.json: the run's identity and, per variant (`simulated`, `static`, `without-<mechanism>`), what it
    assumes, the replicated measures, the paired difference from `simulated` on each seed (COMPARED), the fixed
    capacity it bought (the static baseline, pools pinned without autoscaling), each seed's measures, events and
    trace statistics, and the first seed's sampled series for the plots."""
    return {
        "stack": stack,
        "workload": workload_name,
        "description": workload.description,
        "start": workload.start,
        "duration": workload.duration,
        "seeds": list(seeds),
        "slow_request_seconds": m.SLOW_REQUEST_SECONDS,
        "commitment_discount": commitment_discount,
        "variants": {
            name: {
                "assumptions": list((assumptions or {}).get(name, ())),
                "measures": combined,
                "delta_vs_simulated": dict((deltas or {}).get(name, {})),
                "fixed_capacity": runs[0].get("fixed_capacity", []),
                "per_seed": [run["measures"] for run in runs],
                "events": [run["events"] for run in runs],
                "trace": runs[0]["trace"],
                "series": runs[0]["series"],
            }
            for name, (combined, runs) in variants.items()
        },
    }


def report_json(data: Mapping[str, Any]) -> str:
    return json.dumps(data, indent=1, sort_keys=False, allow_nan=False) + "\n"


def _fmt(figure: Mapping[str, Any] | None, digits: int = 1, scale: float = 1.0) -> str:
    """A figure's mean, and its 95 % interval when there are several seeds."""
    if not figure or figure.get("mean") is None:
        return "-"
    text = f"{figure['mean'] * scale:,.{digits}f}"
    if figure.get("low") is not None:
        low, high = f"{figure['low'] * scale:,.{digits}f}", f"{figure['high'] * scale:,.{digits}f}"
        if (low, high) != (text, text):  # every seed gave the same, to the digits shown
            text += f" ({low} to {high})"
    return text


def _minutes(figure: Mapping[str, Any] | None) -> str:
    return "-" if not figure or figure.get("mean") is None else _fmt(figure, 1, 1 / 60) + " min"


def _count(figure: Mapping[str, Any] | None) -> str:
    """A count: whole for one seed, to a tenth as a mean over seeds."""
    return _fmt(figure, 0) if figure and figure.get("low") is None else _fmt(figure, 1)


def _breakdown(row: Mapping[str, Any], prefix: str, reasons: Sequence[str]) -> str:
    """`(quota 12, capacity 3)`: the reasons' means, whole for one seed."""
    parts = []
    for reason in reasons:
        figure = row.get(f"{prefix}.{reason}") or {}
        if figure.get("mean"):
            parts.append(f"{reason} {figure['mean']:,.{0 if figure.get('low') is None else 1}f}")
    return f" ({', '.join(parts)})" if parts else ""


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


# The side-by-side and headline figures: (metric id, label, digits).
HEADLINE = (
    (m.USD_PER_USEFUL, "USD per useful GPU-hour", 2),
    (m.PROVISIONED, "GPU-hours provisioned", 0),
    (m.ALLOCATED, "GPU-hours allocated", 0),
    (m.USEFUL, "GPU-hours useful", 0),
    (m.LOST, "GPU-hours lost to restarts", 0),
    (m.SERVICE_DOWN, "service hours down after evictions", 0),
    (m.HEADROOM, "GPU-hours held by the headroom", 0),
    (m.IDLE, "GPU-hours idle", 0),
    (m.ALLOCATION_PCT, "allocation %", 1),
    (m.USEFUL_PCT, "useful %", 1),
    (m.COST, "cost USD", 0),
    (m.USD_PER_ALLOCATED, "USD per allocated GPU-hour", 2),
    (m.WAIT_MEAN, "Kueue wait mean (min)", 1),
    (m.WAIT_POSITIVE, "P(Kueue wait > 0)", 3),
    (m.WAIT_P95, "Kueue wait p95 (min)", 1),
    (m.START_MEAN, "time to start mean (min)", 1),
    (m.START_P95, "time to start p95 (min)", 1),
    (m.QUEUE_LENGTH, "mean Kueue queue length", 1),
    (m.NEVER_STARTED, "never started by the end", 0),
    (m.NEVER_ADMISSIBLE, "never admissible", 0),
)
_SECONDS = {m.WAIT_MEAN, m.WAIT_P95, m.START_MEAN, m.START_P95}


def _headline_cell(run: Mapping[str, Any], metric: str, digits: int) -> str:
    return _fmt(run.get(metric), digits, 1 / 60 if metric in _SECONDS else 1.0)


def fixed_rows(fixed: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    rows = []
    for row in fixed:
        nodes = ", ".join(f"{count}x {name}" for name, count in _counted(row["instance_types"])) or "none"
        rows.append([row["pool"], row["capacity_type"], str(row["nominal_units"]), str(row["wanted_units"]),
                     str(row["wanted_gpus"]), str(row["limit_gpus"]), nodes, str(row["gpus"]),
                     f"{row['usd_per_hour']:,.2f}", row["note"] or "-"])
    return rows


def _counted(names: Sequence[str]) -> list[tuple[str, int]]:
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return list(counts.items())


def ablation_rows(measures: Mapping[str, Any], ablations: Sequence[tuple[str, Mapping[str, Any]]]) -> list[list[str]]:
    run = measures["run"]
    rows = [["full platform", _fmt(run.get(m.USD_PER_USEFUL), 2), "-", _fmt(run.get(m.USEFUL), 0), "-",
             _headline_cell(run, m.START_P95, 1), "-"]]
    for name, variant in ablations:
        mine, delta = variant["measures"]["run"], variant["delta_vs_simulated"]
        rows.append([name, _fmt(mine.get(m.USD_PER_USEFUL), 2), _signed(delta.get(m.USD_PER_USEFUL), 2),
                     _fmt(mine.get(m.USEFUL), 0), _signed(delta.get(m.USEFUL), 0),
                     _headline_cell(mine, m.START_P95, 1), _signed(delta.get(m.START_P95), 1, 1 / 60)])
    return rows


def _signed(figure: Mapping[str, Any] | None, digits: int, scale: float = 1.0) -> str:
    text = _fmt(figure, digits, scale)
    return text if text == "-" or text.startswith("-") else "+" + text


def pool_rows(measures: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    for name, pool in measures["pools"].items():
        rows.append([
            name, _fmt(pool[m.PROVISIONED]), _fmt(pool[m.ALLOCATED]), _fmt(pool[m.USEFUL]), _fmt(pool[m.LOST]),
            _fmt(pool[m.HEADROOM]), _fmt(pool[m.IDLE]), _fmt(pool[m.ALLOCATION_PCT]), _count(pool[m.LAUNCHED]),
            _count(pool[m.disrupted("consolidation")]), _count(pool[m.disrupted("interruption")]),
            _count(pool[m.disrupted("expiry")]), _fmt(pool[m.COST], 2), _fmt(pool[m.USD_PER_USEFUL], 2),
        ])
    return rows


def tenant_rows(measures: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    for name, tenant in measures["tenants"].items():
        if m.ALLOCATED not in tenant:
            continue
        rows.append([
            name, _fmt(tenant[m.ALLOCATED]), _fmt(tenant[m.USEFUL]),
            *(_fmt(tenant[m.lost(cause)]) for cause in LOSS_CAUSES),
            _fmt(tenant[m.COST], 2), _fmt(tenant[m.USD_PER_USEFUL], 2),
            _count(tenant.get(m.ADMITTED)), _count(tenant.get(m.FINISHED)),
        ])
    run = measures["run"]
    rows.append(["(headroom)", _fmt(run[m.HEADROOM]), "-", *("-" for _ in LOSS_CAUSES), _fmt(run[m.COST_HEADROOM], 2),
                 "-", "-", "-"])
    rows.append(["(idle capacity)", _fmt(run[m.IDLE]), "-", *("-" for _ in LOSS_CAUSES), _fmt(run[m.COST_IDLE], 2),
                 "-", "-", "-"])
    return rows


def wait_rows(measures: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    for tier, row in measures["tiers"].items():
        rows.append([
            tier, _count(row[m.WAITED]), _minutes(row[m.WAIT_MEAN]), _fmt(row[m.WAIT_POSITIVE], 3),
            _minutes(row[m.WAIT_P50]), _minutes(row[m.WAIT_P95]), _minutes(row[m.WAIT_MAX]), _fmt(row[m.QUEUE_LENGTH], 2),
            _minutes(row[m.START_MEAN]), _minutes(row[m.START_P95]), _count(row[m.START_BLOCKED]),
            _count(row[m.NEVER_STARTED]) + _breakdown(row, m.NEVER_STARTED, m.WAITING_REASONS),
            _count(row[m.NEVER_ADMISSIBLE]) + _breakdown(row, m.NEVER_ADMISSIBLE, admissibility.REASONS),
        ])
    return rows


def serving_rows(measures: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    for name, row in measures["deployments"].items():
        rows.append([
            name, _count(row[m.TTG_COUNT]), _minutes(row[m.TTG_P50]), _minutes(row[m.TTG_P95]), _fmt(row[m.ALLOCATED]),
            _fmt(row[m.UTILISATION]), _fmt(row[m.DEMAND], 0), _fmt(row[m.REFUSED], 0), _fmt(row[m.SLOW], 0),
            _fmt(row[m.BACKLOG_PEAK], 0), _fmt(row[m.ABOVE_MAX], 2),
        ])
    return rows


def _trace_lines(stats: Sequence[Mapping[str, Any]]) -> str:
    """Every trace row accounted for: replayed, or why not (sim/trace.py rules 3, 4 and 7)."""
    lines = []
    for s in stats:
        line = (
            f"- {s['rows']:,} rows: {s['kept'] - s['unmapped']:,} replayed ({s['services']:,} of them as services); "
            f"left out {s['without_gpu']:,} CPU-only (no GPU), {s['never_scheduled']:,} the trace never placed "
            f"(deleted while Pending), {s['no_run_time']:,} without run time, {s['unmapped']:,} of a class the workload "
            "does not map"
        )
        if s["ended_before_window"] or s["after_window"] or s["carried_in"]:
            line += (
                f", {s['ended_before_window']:,} ended before the window and {s['after_window']:,} created after it; "
                f"{s['carried_in']:,} running when the window opens arrive at its start with the rest of their run"
            )
        if s["inflation_ratio"] is not None:
            line += (
                f". Inflated to {s['inflation_ratio']:g} x the pools' {s['capacity_gpus']:,} GPUs (the trace asks for "
                f"{s['demand_gpus']:,.1f} GPUs on average): {s['added']:,} copies added, {s['removed']:,} tasks removed"
            )
        lines.append(line + " (sim/trace.py).")
    return "\n".join(lines) + "\n"


def _seeds(seeds: Sequence[int]) -> str:
    if len(seeds) == 1:
        return f"seed {seeds[0]}"
    return f"{len(seeds)} seeds ({seeds[0]} to {seeds[-1]}); each figure the mean and its 95 % Student-t interval"


SHARING_PREFIX = "sharing-"


def sharing_rows(variants: Mapping[str, Any]) -> list[list[str]]:
    """One row per sharing mode run (`simulated` and each `sharing-<mode>`), every figure from report.json."""
    rows = []
    for name, variant in variants.items():
        if name != "simulated" and not name.startswith(SHARING_PREFIX):
            continue
        run = variant["measures"]["run"]
        rows.append([name, _fmt(run.get(m.ALLOCATION_PCT)), _fmt(run.get(m.USEFUL), 0), _fmt(run.get(m.USD_PER_USEFUL), 2),
                     _minutes(run.get(m.START_P50)), _minutes(run.get(m.START_P95)), _count(run.get(m.NEVER_STARTED)),
                     _fmt(run.get(m.FRAGMENTATION_PCT)), _fmt(run.get(m.FRAGMENTED), 0)])
    return rows


def render_report(data: Mapping[str, Any]) -> str:
    """report.md from report.json's data."""
    simulated = data["variants"]["simulated"]
    measures = simulated["measures"]
    events = sum(simulated["events"])
    sections = [
        f"# Simulation: stack `{data['stack']}`, workload `{data['workload']}`\n",
        f"{data['description']}\n" if data["description"] else "",
        f"From {data['start']} for {data['duration']}, {_seeds(data['seeds'])}; {events:,} events. "
        "Every figure here is in report.json under the same metric id.\n",
        "Allocated GPU-hours are useful (jobs that finished or still ran at the end, inference replicas, and the "
        "running time of a trace's services) or lost (job runs thrown away by a restart from zero, and a service's "
        "start again after an eviction); cost per useful GPU-hour is the headline. A service's restarts also show as "
        "hours down.\n",
    ]
    static = data["variants"].get("static")
    run = measures["run"]
    if static is not None:
        other = static["measures"]["run"]
        discount = data.get("commitment_discount", 0.0)
        sections += [
            "## Against the static baseline\n",
            "What a careful team would run without the platform"
            + (f", with a {discount:.0%} commitment discount off on-demand prices" if discount else ", at on-demand prices")
            + ":\n",
            "\n".join(f"- {line}" for line in static["assumptions"]) + "\n",
            table(["pool", "capacity type", "nominal quota", "bought for", "GPUs wanted", "NodePool limit", "nodes",
                   "GPUs", "USD/hour", "note"], fixed_rows(static["fixed_capacity"])),
            table(["", "static", "simulated"],
                  [[label, _headline_cell(other, k, d), _headline_cell(run, k, d)] for k, label, d in HEADLINE]),
        ]
    else:
        sections += ["## Headline\n", table(["", "simulated"], [[label, _headline_cell(run, k, d)] for k, label, d in HEADLINE])]
    ablations = [(name, variant) for name, variant in data["variants"].items()
                 if name not in ("simulated", "static") and not name.startswith(SHARING_PREFIX)]
    if m.FRAGMENTED in run:
        sections += [
            "## Sharing modes\n",
            "How the trace's fractional tasks share GPUs, on the same seeds (docs/fractional-gpus-measured.md); "
            "fragmentation: the free GPU capacity of the trace's pools that the waiting tasks cannot use.\n",
            table(["mode", "allocation %", "useful GPU-hours", "USD per useful GPU-hour", "time to start p50 (min)",
                   "time to start p95 (min)", "never started", "fragmentation %", "fragmented GPU-hours"],
                  sharing_rows(data["variants"])),
            "\n".join(f"- {name}: {variant['assumptions'][-1]}" for name, variant in data["variants"].items()
                      if name == "simulated" or name.startswith(SHARING_PREFIX)) + "\n",
        ]
    if ablations:
        sections += [
            "## One mechanism off at a time\n",
            "Each row is the stack with one mechanism switched off, on the same seeds; the difference is its change "
            "against the full platform seed by seed (a positive cost difference: the mechanism saves that much).\n",
            table(["variant", "USD per useful GPU-hour", "difference", "useful GPU-hours", "difference",
                   "time to start p95 (min)", "difference"], ablation_rows(measures, ablations)),
            "\n".join(f"- {variant['assumptions'][0]}" for _, variant in ablations if variant["assumptions"]) + "\n",
        ]
    sections += [
        "## Pools\n",
        "Provisioned from launch to termination = allocated + headroom (its placeholders) + idle (held by nothing).\n",
        table(["pool", "GPU-h provisioned", "allocated", "useful", "lost", "headroom", "idle", "allocation %",
               "nodes launched", "consolidated", "interrupted", "expired", "cost USD", "USD / useful GPU-h"],
              pool_rows(measures)),
        "## Tenants\n",
        "GPU-hours and cost by what each tenant's pods hold: their share of each node's GPUs and price while they hold it. "
        "Lost GPU-hours by the cause of the restart.\n",
        table(["tenant", "GPU-h allocated", "useful", *(f"lost: {cause}" for cause in LOSS_CAUSES), "cost USD",
               "USD / useful GPU-h", "admitted", "finished"], tenant_rows(measures)),
        "## Waiting by priority\n",
        "Kueue wait: a workload's creation to its first admission. Time to start: creation to every pod Running. "
        "Queue length: the time-average of workloads pending in Kueue. Started after the limit: started only after "
        "the NodePool limit had left a pod of theirs without a node. Never started: why each still waits at the "
        "end (quota: pending in Kueue; capacity: its pods over the NodePool limit; starting: a node or server "
        "coming up). Never admissible: work the stack can never run (sim/admissibility.py), in no wait figure.\n",
        table(["priority", "admitted", "wait mean", "P(wait > 0)", "p50", "p95", "max", "queue length",
               "start mean", "start p95", "started after the limit", "never started", "never admissible"],
              wait_rows(measures)),
    ]
    if measures["deployments"]:
        sections += [
            "## Inference\n",
            "Time to GPU: the HPA's decision to add a replica to that replica's server being Ready. Utilisation: "
            "requests served over what the Ready replicas could serve. Slow: requests arriving to a backlog the "
            f"Ready replicas need over {data['slow_request_seconds']:.0f} s to clear; refused: arriving with no "
            "Ready replica. Above max: hours when demand needs more than maxReplicas.\n",
            table(["deployment", "scale-ups", "time to GPU p50", "p95", "GPU-h", "utilisation %", "requests",
                   "refused", "slow", "peak backlog", "h above max"], serving_rows(measures)),
        ]
    if simulated["trace"]:
        sections += ["## Trace\n", _trace_lines(simulated["trace"])]
    sections += ["## What the model leaves out\n", "\n".join(f"- {line}" for line in LIMITS) + "\n"]
    return "\n".join(section for section in sections if section)
