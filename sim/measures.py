"""Every figure a run reports, computed in one place from its ledger and keyed by a metric id.

report.json, report.md, the plots' captions and any planner read these ids; none of them computes a
figure of its own. The definitions:

    provisioned   GPU-hours of nodes from launch (billing starts) to termination or the run's end
    allocated     GPU-hours tenant pods held, from binding to unbinding (the headroom's placeholders not)
    useful        allocated GPU-hours of job attempts that finished or were still running at the end, of
                  every inference replica (a replica's serving is not thrown away when it restarts), and of a
                  service's attempts except its starts after an eviction (a service's running time is useful
                  whatever ends it: the time it served is not taken back)
    lost          allocated GPU-hours of job attempts that ended in a restart from zero, and GPU-hours a service
                  held starting again after an eviction (binding to running: the restart's cost), by cause:
                  expiry, consolidation, preemption (Kueue), interruption (spot), pods-ready-timeout
                  (waitForPodsReady); allocated = useful + lost
    down          hours services spent between an eviction and running again (or the run's end), by cause
    headroom      GPU-hours the headroom's placeholders held (kept idle by design)
    idle          provisioned - allocated - headroom: GPUs nothing held, so provisioned = allocated + headroom + idle
    cost          node price x time from launch; a tenant's is its pods' share of their nodes' price
    wait          Kueue's: creation to first admission; time to start: creation to every pod Running, and how
                  many started only after the NodePool limit had left a pod of theirs without a node
    queue length  time-average of workloads pending in Kueue
    fragmented    (a run with a sharing mode, sim/sharing.py) GPU-hours of free GPU capacity that the tasks waiting
                  at each sample cannot use: the fragmentation of Weng et al., "Beware of Fragmentation" (USENIX
                  ATC'23, section 3) with the waiting tasks as the target workload, each equally likely.
                  For a node and a task asking for d GPUs: all of the node's free share when the task fits on no
                  GPU of it (d < 1) or on too few whole free GPUs (d >= 1); else the free share of the GPUs it
                  cannot use (d < 1: each GPU with less than d free; d >= 1: each partly used GPU). Summed over
                  the Ready nodes of the trace's pools at each sample, times the sample interval; with nothing
                  waiting, nothing is fragmented. free: the same nodes' free GPU-hours; fragmentation_pct: the share
                  of them fragmented
    never         a workload that can never run (sim/admissibility.py) counts under never_admissible.<reason>
                  and in no wait; one still waiting at the end counts under never_started.<why>

Inference (per deployment, from the Served facts of each HPA sync): demand, served and refused requests,
utilisation = served / what the Ready replicas could serve, the peak backlog, requests that arrive to a
backlog longer than SLOW_REQUEST_SECONDS, hours when demand needs more than maxReplicas, and unserved demand:
requests that arrived and were not served by the end (refused with no Ready replica, or still in the backlog), as a
share of demand; the same over every deployment together, with their pooled times to GPU, at the run's level.
unstarted: runnable work that never started by the end, as a share of the runnable work (run, tier, tenant).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from . import admissibility
from . import ledger as facts
from .ledger import JOB, LOSS_CAUSES, NODE_CAUSES, PLACEHOLDER, REPLICA, SERVICE, Created, Ledger
from .stats import mean, percentile

# A request that arrives to a backlog the Ready replicas need longer than this to clear waits "too long".
SLOW_REQUEST_SECONDS = 30.0

PROVISIONED = "gpu_hours.provisioned"
ALLOCATED = "gpu_hours.allocated"
USEFUL = "gpu_hours.useful"
LOST = "gpu_hours.lost"
HEADROOM = "gpu_hours.headroom"
IDLE = "gpu_hours.idle"
ALLOCATION_PCT = "allocation_pct"
USEFUL_PCT = "useful_pct"
COST = "cost_usd"
COST_HEADROOM = "cost_usd.headroom"
COST_IDLE = "cost_usd.idle"
USD_PER_USEFUL = "usd_per_useful_gpu_hour"
USD_PER_ALLOCATED = "usd_per_allocated_gpu_hour"
LAUNCHED = "nodes.launched"
CREATED = "workloads.created"
ADMITTED = "workloads.admitted"
FINISHED = "workloads.finished"
PREEMPTIONS = "restarts.preemption"
WAITED = "wait.count"
WAIT_MEAN = "wait.mean_s"
WAIT_P50 = "wait.p50_s"
WAIT_P95 = "wait.p95_s"
WAIT_MAX = "wait.max_s"
WAIT_POSITIVE = "wait.p_positive"
QUEUE_LENGTH = "queue.mean_length"
STARTED = "start.count"
START_MEAN = "start.mean_s"
START_P50 = "start.p50_s"
START_P95 = "start.p95_s"
START_BLOCKED = "start.blocked_by_limit"
UNSTARTED_PCT = "start.unstarted_pct"
FRAGMENTED = "gpu_hours.fragmented"
FREE = "gpu_hours.free"
FRAGMENTATION_PCT = "fragmentation_pct"
NEVER_ADMITTED = "never_admitted"
NEVER_STARTED = "never_started"
NEVER_ADMISSIBLE = "never_admissible"
TTG_COUNT = "time_to_gpu.count"
TTG_P50 = "time_to_gpu.p50_s"
TTG_P95 = "time_to_gpu.p95_s"
DEMAND = "requests.demand"
SERVED = "requests.served"
REFUSED = "requests.refused"
SLOW = "requests.slow"
UTILISATION = "utilisation_pct"
BACKLOG_PEAK = "backlog.peak"
ABOVE_MAX = "hours.above_max_replicas"
SERVICE_DOWN = "service_hours.down"
UNSERVED_PCT = "requests.unserved_pct"
# Every deployment's traffic together, at the run's level (the planner's `inference.` service levels).
INFERENCE_TTG_P50 = "inference.time_to_gpu.p50_s"
INFERENCE_TTG_P95 = "inference.time_to_gpu.p95_s"
INFERENCE_UNSERVED_PCT = "inference.requests.unserved_pct"

# Why work still waits at the end: pending in Kueue, or admitted with pods Karpenter cannot launch a node for
# (NodePool limit), or admitted and starting (a node launching, a server loading).
WAITING_QUOTA = "quota"
WAITING_CAPACITY = "capacity"
WAITING_STARTING = "starting"
WAITING_REASONS = (WAITING_QUOTA, WAITING_CAPACITY, WAITING_STARTING)


def lost(cause: str) -> str:
    return f"{LOST}.{cause}"


def service_down(cause: str) -> str:
    return f"{SERVICE_DOWN}.{cause}"


def restarts(cause: str) -> str:
    return f"restarts.{cause}"


def disrupted(cause: str) -> str:
    return f"nodes.{cause}"


def never_admissible(reason: str) -> str:
    return f"{NEVER_ADMISSIBLE}.{reason}"


def never_started(reason: str) -> str:
    return f"{NEVER_STARTED}.{reason}"


@dataclass(frozen=True)
class Scope:
    """What the run had, so a pool or tenant with nothing to show still gets its row."""

    pools: tuple[str, ...]
    tenants: tuple[str, ...]
    tiers: tuple[str, ...]  # highest priority first
    deployments: tuple[str, ...]


Measures = dict[str, Any]  # {"run": {id: value}, "pools": {name: {id: value}}, "tenants", "tiers", "deployments"}


def _ratio(top: float | None, bottom: float | None, scale: float = 1.0) -> float | None:
    return None if top is None or not bottom else scale * top / bottom


def compute(ledger: Ledger, scope: Scope) -> Measures:
    created = {fact.key: fact for fact in ledger.created}
    run: dict[str, Any] = {}
    pools: dict[str, dict[str, Any]] = {name: {} for name in scope.pools}
    tenants: dict[str, dict[str, Any]] = {name: {} for name in scope.tenants}
    _gpu_hours(ledger, created, run, pools, tenants)
    tiers = _waits(ledger, created, scope, run, tenants)
    if ledger.fragments:
        _fragmentation(ledger, run, pools)
    deployments = _serving(ledger, created, scope, run)
    return {"run": run, "pools": pools, "tenants": tenants, "tiers": tiers, "deployments": deployments}


def _gpu_hours(ledger: Ledger, created: dict[int, Created], run: dict[str, Any], pools: dict[str, dict[str, Any]],
               tenants: dict[str, dict[str, Any]]) -> None:
    down = {fact.node: fact.at for fact in ledger.down}
    for scope in (run, *pools.values()):
        scope.update({PROVISIONED: 0.0, COST: 0.0, LAUNCHED: 0, HEADROOM: 0.0, COST_HEADROOM: 0.0})
        scope.update({disrupted(cause): 0 for cause in NODE_CAUSES})
    for scope in (run, *pools.values(), *tenants.values()):
        scope.update({ALLOCATED: 0.0, USEFUL: 0.0, LOST: 0.0, "_tenant_cost": 0.0})
        scope.update({lost(cause): 0.0 for cause in LOSS_CAUSES})
    for node in ledger.nodes:
        hours = (down.get(node.node, ledger.end) - node.at) / 3600
        for scope in (run, pools[node.pool]):
            scope[PROVISIONED] += hours * node.gpus
            scope[COST] += hours * node.price_per_hour
            scope[LAUNCHED] += 1
    for disruption in ledger.disrupted:
        for scope in (run, pools[disruption.pool]):
            scope[disrupted(disruption.cause)] += 1
    endings = {(fact.key, fact.attempt): fact.cause for fact in ledger.ended}
    started = {(fact.key, fact.attempt): fact.at for fact in ledger.started}
    for hold in ledger.held:
        workload = created[hold.key]
        gpu_hours = hold.gpus * (hold.end - hold.start) / 3600
        if workload.kind == PLACEHOLDER:
            for scope in (run, pools[hold.pool]):
                scope[HEADROOM] += gpu_hours
                scope[COST_HEADROOM] += hold.cost
            continue
        cause = endings.get((hold.key, hold.attempt))
        wasted, blamed = 0.0, cause
        if workload.kind == JOB and cause in LOSS_CAUSES:
            wasted = gpu_hours
        elif workload.kind == SERVICE:
            wasted, blamed = _restarting(hold, started, endings)
        for scope in (run, pools[hold.pool], tenants[workload.tenant]):
            scope[ALLOCATED] += gpu_hours
            scope["_tenant_cost"] += hold.cost
            scope[USEFUL] += gpu_hours - wasted
            if wasted:
                scope[LOST] += wasted
                scope[lost(str(blamed))] += wasted
    for scope in (run, *pools.values()):
        scope[IDLE] = scope[PROVISIONED] - scope[ALLOCATED] - scope[HEADROOM]
        scope[ALLOCATION_PCT] = _ratio(scope[ALLOCATED], scope[PROVISIONED], 100)
        scope[USEFUL_PCT] = _ratio(scope[USEFUL], scope[PROVISIONED], 100)
        scope[COST_IDLE] = scope[COST] - scope["_tenant_cost"] - scope[COST_HEADROOM]
    for scope in tenants.values():
        scope[COST] = scope["_tenant_cost"]
    for scope in (run, *pools.values(), *tenants.values()):
        del scope["_tenant_cost"]
        scope[USD_PER_USEFUL] = _ratio(scope[COST], scope[USEFUL])
        scope[USD_PER_ALLOCATED] = _ratio(scope[COST], scope[ALLOCATED])
    for scope in (run, *tenants.values()):
        scope.update({restarts(cause): 0 for cause in LOSS_CAUSES})
        scope.update({SERVICE_DOWN: 0.0, **{service_down(cause): 0.0 for cause in LOSS_CAUSES}})
    ended_at = {(fact.key, fact.attempt): fact.at for fact in ledger.ended}
    for ending in ledger.ended:
        workload = created[ending.key]
        if ending.cause in LOSS_CAUSES and workload.kind != PLACEHOLDER:
            for scope in (run, tenants[workload.tenant]):
                scope[restarts(ending.cause)] += 1
                if workload.kind == SERVICE:
                    # Down until the next attempt runs, or until it too is evicted before running (that eviction's
                    # cause takes the time from there), or the end.
                    following = (ending.key, ending.attempt + 1)
                    back = started.get(following, ended_at.get(following, ledger.end))
                    hours = (back - ending.at) / 3600
                    scope[SERVICE_DOWN] += hours
                    scope[service_down(ending.cause)] += hours


def _restarting(hold: facts.Held, started: dict[tuple[int, int], float],
                endings: dict[tuple[int, int], str]) -> tuple[float, str | None]:
    """A service's GPU-hours in `hold` spent starting again after an eviction (before its attempt ran), and the
    eviction's cause; none for its first start, which is part of the service's run as a job's start is."""
    cause = endings.get((hold.key, hold.attempt - 1))
    if cause not in LOSS_CAUSES:
        return 0.0, None
    running = started.get((hold.key, hold.attempt), hold.end)
    return hold.gpus * max(0.0, min(running, hold.end) - hold.start) / 3600, cause


# A GPU share this close to a request counts as equal: shares are ratios of whole units, computed two ways.
_SHARE_TOLERANCE = 1e-9


def fragmented_share(free: Sequence[float], request: float) -> float:
    """Weng et al.'s F_n(m): the free GPU share of a node (`free`, per GPU) that a task asking for `request` GPUs
    cannot use."""
    total = sum(free)
    if request < 1:
        if not any(share + _SHARE_TOLERANCE >= request for share in free):
            return total
        return sum(share for share in free if share + _SHARE_TOLERANCE < request)
    whole = sum(1 for share in free if share + _SHARE_TOLERANCE >= 1)
    if whole + _SHARE_TOLERANCE < request:
        return total
    return sum(share for share in free if share + _SHARE_TOLERANCE < 1)


def _fragmentation(ledger: Ledger, run: dict[str, Any], pools: dict[str, dict[str, Any]]) -> None:
    for scope in (run, *pools.values()):
        scope.update({FRAGMENTED: 0.0, FREE: 0.0})
    for sample in ledger.fragments:
        hours = sample.seconds / 3600
        shapes: dict[float, int] = defaultdict(int)
        for request in sample.waiting:
            shapes[request] += 1
        waiting = len(sample.waiting)
        fragmented = sum(count / waiting * fragmented_share(node, request)
                         for request, count in shapes.items() for node in sample.nodes)
        free = sum(sum(node) for node in sample.nodes)
        for scope in (run, pools[sample.pool]):
            scope[FRAGMENTED] += fragmented * hours
            scope[FREE] += free * hours
    for scope in (run, *pools.values()):
        if FRAGMENTED in scope:
            scope[FRAGMENTATION_PCT] = _ratio(scope[FRAGMENTED], scope[FREE], 100)


@dataclass(frozen=True)
class _Timeline:
    """What the wait figures need of each workload, gathered from the ledger once."""

    first_admitted: dict[int, float]
    first_started: dict[int, float]
    finished: set[int]
    deleted: set[int]
    queued_seconds: dict[int, float]
    still_waiting: dict[int, str]  # why, for work that can run but never started
    blocked: set[int]  # started only after Karpenter left a pod of it unlaunched at the NodePool limit
    end: float


def _waits(ledger: Ledger, created: dict[int, Created], scope: Scope, run: dict[str, Any],
           tenants: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    first_admitted: dict[int, float] = {}
    for fact in ledger.admitted:
        first_admitted.setdefault(fact.key, fact.at)
    first_started: dict[int, float] = {}
    for start in ledger.started:
        first_started.setdefault(start.key, start.at)
    first_blocked: dict[int, float] = {}
    for block in ledger.blocked:
        first_blocked.setdefault(block.key, block.at)
    deleted = {fact.key for fact in ledger.ended if fact.cause == facts.DELETED}
    timeline = _Timeline(
        first_admitted, first_started, {fact.key for fact in ledger.ended if fact.cause == facts.FINISHED}, deleted,
        _queued_seconds(ledger), _still_waiting(ledger, created, first_started, deleted),
        {key for key, at in first_blocked.items() if key in first_started and at <= first_started[key]}, ledger.end,
    )
    groups: dict[tuple[str, str], list[Created]] = defaultdict(list)
    for workload in created.values():
        if workload.kind == PLACEHOLDER:
            continue
        groups[("run", "")].append(workload)
        groups[("tenant", workload.tenant)].append(workload)
        groups[("tier", workload.tier)].append(workload)
    tiers: dict[str, dict[str, Any]] = {}
    for (level, name), members in sorted(groups.items()):
        figures = _wait_figures(members, timeline)
        if level == "run":
            run.update(figures)
        elif level == "tenant":
            tenants.setdefault(name, {}).update(figures)
        else:
            tiers[name] = figures
    return {tier: tiers[tier] for tier in scope.tiers if tier in tiers}


def _queued_seconds(ledger: Ledger) -> dict[int, float]:
    """Seconds each workload spent pending in Kueue: each Queued to its next admission or withdrawal, or the end."""
    entered: dict[int, list[float]] = defaultdict(list)
    for fact in ledger.queued:
        entered[fact.key].append(fact.at)
    left: dict[int, list[float]] = defaultdict(list)
    for admission in ledger.admitted:
        left[admission.key].append(admission.at)
    for withdrawal in ledger.withdrawn:
        left[withdrawal.key].append(withdrawal.at)
    total: dict[int, float] = {}
    for key, times in entered.items():
        leaves = sorted(left.get(key, []))
        total[key] = sum((leaves[i] if i < len(leaves) else ledger.end) - at for i, at in enumerate(times))
    return total


def _still_waiting(ledger: Ledger, created: dict[int, Created], first_started: dict[int, float],
                   deleted: set[int]) -> dict[int, str]:
    """Why each workload that can run but never started waits at the end."""
    last_queued: dict[int, float] = {}
    for fact in ledger.queued:
        last_queued[fact.key] = fact.at
    last_admitted: dict[int, float] = {}
    for admission in ledger.admitted:
        last_admitted[admission.key] = admission.at
    last_blocked: dict[int, float] = {}
    for block in ledger.blocked:
        last_blocked[block.key] = block.at
    reasons = {}
    for key, workload in created.items():
        if workload.kind == PLACEHOLDER or workload.never is not None or key in first_started or key in deleted:
            continue
        admitted = last_admitted.get(key)
        if admitted is None or last_queued.get(key, -1.0) > admitted:
            reasons[key] = WAITING_QUOTA
        elif last_blocked.get(key, -1.0) >= admitted:
            reasons[key] = WAITING_CAPACITY
        else:
            reasons[key] = WAITING_STARTING
    return reasons


def _wait_figures(members: Sequence[Created], t: _Timeline) -> dict[str, Any]:
    runnable = [w for w in members if w.never is None]
    waits = [t.first_admitted[w.key] - w.at for w in runnable if w.key in t.first_admitted]
    starts = [t.first_started[w.key] - w.at for w in runnable if w.key in t.first_started]
    figures: dict[str, Any] = {
        CREATED: len(members),
        ADMITTED: sum(1 for w in members if w.key in t.first_admitted),
        FINISHED: sum(1 for w in members if w.key in t.finished),
        WAITED: len(waits),
        WAIT_MEAN: mean(waits),
        WAIT_P50: percentile(waits, 50),
        WAIT_P95: percentile(waits, 95),
        WAIT_MAX: max(waits, default=None),
        WAIT_POSITIVE: mean([1.0 if wait > 0 else 0.0 for wait in waits]),
        QUEUE_LENGTH: sum(t.queued_seconds.get(w.key, 0.0) for w in runnable) / t.end if t.end else None,
        STARTED: len(starts),
        START_MEAN: mean(starts),
        START_P50: percentile(starts, 50),
        START_P95: percentile(starts, 95),
        START_BLOCKED: sum(1 for w in runnable if w.key in t.blocked),
        NEVER_ADMITTED: sum(1 for w in runnable if w.key not in t.first_admitted and w.key not in t.deleted),
        NEVER_STARTED: sum(1 for w in runnable if w.key in t.still_waiting),
        NEVER_ADMISSIBLE: len(members) - len(runnable),
        UNSTARTED_PCT: _ratio(sum(1 for w in runnable if w.key in t.still_waiting), len(runnable), 100),
    }
    figures.update({never_started(reason): 0 for reason in WAITING_REASONS})
    for w in runnable:
        if w.key in t.still_waiting:
            figures[never_started(t.still_waiting[w.key])] += 1
    figures.update({never_admissible(reason): 0 for reason in admissibility.REASONS})
    for w in members:
        if w.never is not None:
            figures[never_admissible(w.never)] += 1
    return figures


def _serving(ledger: Ledger, created: dict[int, Created], scope: Scope, run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    first_started: dict[int, float] = {}
    for fact in ledger.started:
        first_started.setdefault(fact.key, fact.at)
    times: dict[str, list[float]] = defaultdict(list)
    for scale_up in ledger.scale_ups:
        started = first_started.get(scale_up.key)
        if started is not None and started >= scale_up.at:
            times[scale_up.deployment].append(started - scale_up.at)
    held: dict[str, float] = defaultdict(float)
    for hold in ledger.held:
        workload = created[hold.key]
        if workload.kind == REPLICA:
            held[workload.stream] += hold.gpus * (hold.end - hold.start) / 3600
    found: dict[str, dict[str, Any]] = {}
    for name in scope.deployments:
        figures = _traffic(fact for fact in ledger.served if fact.deployment == name)
        ttg = times.get(name, [])
        figures.update({TTG_COUNT: len(ttg), TTG_P50: percentile(ttg, 50), TTG_P95: percentile(ttg, 95),
                        ALLOCATED: held.get(name, 0.0)})
        found[name] = figures
    pooled = [time for name in scope.deployments for time in times.get(name, [])]
    demand = sum(found[name][DEMAND] for name in scope.deployments)
    served = sum(found[name][SERVED] for name in scope.deployments)
    run.update({INFERENCE_TTG_P50: percentile(pooled, 50), INFERENCE_TTG_P95: percentile(pooled, 95),
                INFERENCE_UNSERVED_PCT: _ratio(demand - served, demand, 100)})
    return found


def _traffic(periods: Iterable[Any]) -> dict[str, Any]:
    demand = served = refused = slow = capacity = peak = above = 0.0
    for period in periods:
        arriving = period.demand * period.seconds
        demand += arriving
        if period.capacity:
            served += arriving + period.waiting_before - period.waiting_after
            capacity += period.capacity * period.seconds
            if period.waiting_before / period.capacity > SLOW_REQUEST_SECONDS:
                slow += arriving
        else:
            refused += arriving
        peak = max(peak, period.waiting_after)
        if period.replicas_needed > period.max_replicas:
            above += period.seconds / 3600
    return {DEMAND: demand, SERVED: served, REFUSED: refused, SLOW: slow, UNSERVED_PCT: _ratio(demand - served, demand, 100),
            UTILISATION: _ratio(served, capacity, 100), BACKLOG_PEAK: peak, ABOVE_MAX: above}
