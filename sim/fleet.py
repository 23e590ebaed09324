"""A fleet of GPU clusters behind one MultiKueue manager queue, and the fair single-cluster baseline, on one clock.

Each worker is a whole single-cluster simulation (sim/engine.py: its stack's derived pools, flavors,
ClusterQueues, Karpenter and headroom); the workers share one clock. Work arrives once, at the manager
(sim/arrivals.py draws it from the run's seed, as a single-cluster run does), and is dispatched by
MultiKueue's rules (models/kueue/multikueue_dispatch.py):

    arrival at the manager ─(latency)─> a copy in each nominated, connected worker's Kueue
    a worker's Kueue reserves quota for its copy: held there, no pods ─(latency)─> the manager picks the
    earliest admission ─(latency)─> the job is created on that worker (pods, nodes, the run) and every
    other copy is deleted. The chosen copy evicted on its worker (Kueue preemption, waitForPodsReady) or
    its worker lost past workerLostTimeout ─(latency)─> every copy deleted, dispatched afresh.

Assumptions the report states (ASSUMPTIONS): one latency between the manager and any worker, each way; the
manager's own ClusterQueues are not simulated (its quota taken as at least the workers' sum, so the
manager reserves at arrival and the workers' queues hold what waits); a workload re-dispatched after an
eviction goes out at once, without the worker's requeue backoff.

The baseline (`home_only`) is the same clusters with the same capacity and the same arrivals, each workload
sent only to its home cluster with no latency: each cluster with its own queues, as two unrelated platforms
are. A workload's home is the `split` rule's, the same on both sides: `alternate` gives a stream's n-th
arrival of a tenant to worker n mod the number of workers (a trace's tasks counted per QoS class and tenant, so
each tenant's work is split evenly); `first` homes
everything on the first worker (a burst one region sees).

The fleet's figures come from one ledger assembled from the workers' (`fleet_ledger`): each workload's
facts under one key, from its arrival at the manager, its chosen copies' facts from the moment each was
chosen; losing copies leave nothing but the quota they held a while on their worker, which others waited
for. Pools are named `<worker>/<pool>`. Per worker, `measures.compute` runs twice: on the workloads homed
there (waits, time to start) and on the capacity there (GPU-hours, cost).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from config import PlatformConfig
from config.fair_share import FlavorPlan, TenantPlan
from models.kueue.multikueue_dispatch import (
    ALL_AT_ONCE,
    DEFAULT_STEP_SIZE,
    DEFAULT_WORKER_LOST_TIMEOUT_SECONDS,
    admitting_worker,
    copies,
    removed_copies,
    retry_after_lost,
    round_starts_after,
    round_workers,
    rounds,
)

from . import ledger as facts
from . import rng
from .admission import ModelKueue
from .arrivals import schedule_jobs, schedule_trace
from .clock import Clock
from .engine import Options, Simulation
from .queueing import Admission, Decisions, QueuedWorkload
from .sharing import GpuSharing
from .state import Group
from .trace import ALIBABA_GPU_2023
from .workload import Workload, seconds
from .workload_check import check

# Manager to worker and back, each way: a watch event, a reconcile and an API call across regions.
DISPATCH_LATENCY_SECONDS = 2.0
ALTERNATE = "alternate"
FIRST = "first"
SPLITS = (ALTERNATE, FIRST)

ASSUMPTIONS = (
    "Each worker is a whole cluster as its stack derives it (pools, NodePool limits, ClusterQueues, headroom); "
    "the workers share one clock.",
    "Dispatch follows MultiKueue at the pinned Kueue (models/kueue/multikueue_dispatch.py): copies on the "
    "nominated connected workers, the earliest admission wins, the job is created there only, the other "
    "copies deleted; an eviction on the worker dispatches the workload afresh.",
    "One latency between the manager and any worker, each way (watch, reconcile, API call); a copy waits for it "
    "twice between its worker's admission and its pods: the manager learns of the admission, then creates the job.",
    "The manager's own ClusterQueues are not simulated: its quota is taken as at least the workers' sum, so it "
    "reserves at arrival and the workers' queues hold what waits.",
    "A workload dispatched again after an eviction goes out at once, without the worker's requeue backoff.",
    "Inference stays per cluster: a fleet run replays job streams and traces only.",
    "The baseline: the same clusters and capacity and the same arrivals, each workload sent only to its home "
    "cluster without latency (each cluster with its own queues).",
)


class FleetError(ValueError):
    """A fleet the simulator cannot run: one line, naming the worker and what to change."""


@dataclass(frozen=True)
class Worker:
    """One worker cluster: its MultiKueueCluster name (the worker's stack), region and derived config."""

    name: str
    region: str
    config: PlatformConfig


@dataclass(frozen=True)
class FleetScenario:
    workers: tuple[Worker, ...]
    workload: Workload
    source: str = "workload"
    project_dir: Path = Path(".")
    split: str = ALTERNATE
    dispatcher: str = ALL_AT_ONCE
    step_size: int = DEFAULT_STEP_SIZE
    latency: float = DISPATCH_LATENCY_SECONDS
    worker_lost_timeout: float = DEFAULT_WORKER_LOST_TIMEOUT_SECONDS
    lost: tuple[tuple[str, float], ...] = ()  # (worker, seconds): unreachable from the manager from then on
    home_only: bool = False  # the baseline: each workload on its home cluster, no latency

    def baseline(self) -> FleetScenario:
        return FleetScenario(self.workers, self.workload, self.source, self.project_dir, self.split, self.dispatcher,
                             self.step_size, 0.0, self.worker_lost_timeout, self.lost, home_only=True)


def check_fleet(scenario: FleetScenario) -> None:
    """The workers agree on what a dispatched copy needs (tenants, flavors, tiers); the workload is one a fleet
    runs (no inference, no inflation). Raise `FleetError` with one line."""
    workers = scenario.workers
    if len(workers) < 1 or len({w.name for w in workers}) != len(workers):
        raise FleetError(f"--workers {','.join(w.name for w in workers)}: name each worker once, at least one")
    if scenario.split not in SPLITS:
        raise FleetError(f"--split {scenario.split}: one of {', '.join(SPLITS)}")
    first = workers[0]
    for worker in workers[1:]:
        for what, mine, theirs in (
            ("tenants", [t.name for t in worker.config.tenants], [t.name for t in first.config.tenants]),
            ("flavors", [f.name for f in worker.config.flavors], [f.name for f in first.config.flavors]),
            ("queueing.priorities", sorted(worker.config.queueing.priorities.items()),
             sorted(first.config.queueing.priorities.items())),
        ):
            if mine != theirs:
                raise FleetError(f"worker {worker.name}: {what} {mine} differ from worker {first.name}'s {theirs}: "
                                 "a fleet declares its tenants, flavors and priorities once, the same on every worker")
    if scenario.workload.inference:
        raise FleetError(f"{scenario.source}: inference: inference stays per cluster; a fleet run replays jobs and "
                         "traces only (docs/fleet-simulation.md)")
    for trace in scenario.workload.traces:
        if trace.inflation is not None:
            raise FleetError(f"{scenario.source}: traces[{trace.file}].inflation: a fleet run replays a trace as "
                             "recorded; drop `inflation`")
    for worker in workers:
        check(worker.config, scenario.workload, scenario.source, project_dir=scenario.project_dir)


class WorkerKueue:
    """The worker's Kueue (sim/admission.py) behind the seam, holding back the admissions of copies the manager
    has not chosen: their quota is reserved on the worker, but no job (no pods) exists there yet."""

    def __init__(self, inner: ModelKueue, worker: str, fleet: Fleet):
        self.inner = inner
        self.worker = worker
        self.fleet = fleet
        self.remote: set[int] = set()  # copies the manager has not chosen
        self.held: dict[int, Admission] = {}  # of those, the ones whose quota is reserved here
        self.released: list[Admission] = []  # chosen while reserved: handed to the engine at its next cycle

    def submit(self, workload: QueuedWorkload) -> None:
        self.inner.submit(workload)

    def release(self, key: int) -> None:
        self.remote.discard(key)
        self.held.pop(key, None)
        self.inner.release(key)

    def evict(self, key: int) -> None:
        self.inner.evict(key)
        self.fleet.evicted(self.worker, key)

    def release_evicted(self, key: int) -> None:
        self.inner.release_evicted(key)  # the manager heard of the preemption when it was issued

    def never_admits(self, workload: QueuedWorkload) -> bool:
        return self.inner.never_admits(workload)

    def pending(self) -> dict[str, int]:
        return self.inner.pending()

    def schedule(self, now: float) -> Decisions:
        decisions = self.inner.schedule(now)
        # A copy chosen since the last call whose reservation this call preempted has lost it: no job starts.
        lost = set(decisions.preempted)
        admitted, self.released = [a for a in self.released if a.key not in lost], []
        for admission in decisions.admitted:
            if admission.key in self.remote:
                self.held[admission.key] = admission
                self.fleet.reserved(self.worker, admission.key)
            else:
                admitted.append(admission)
        for key in decisions.preempted:
            if self.held.pop(key, None) is None:
                self.fleet.evicted(self.worker, key)
        return Decisions(decisions.preempted, tuple(admitted), decisions.requeued)

    def choose(self, key: int) -> bool:
        """The manager created the job for copy `key` here: its reserved admission goes to the engine (True),
        or, reservation lost meanwhile, it waits in this queue as any local workload (False)."""
        self.remote.discard(key)
        admission = self.held.pop(key, None)
        if admission is None:
            return False
        self.released.append(admission)
        return True


@dataclass(eq=False)
class Dispatched:
    """One workload at the manager: its copies on the workers, and the chosen ones over time."""

    group: Group
    home: str
    copies: dict[str, Group] = field(default_factory=dict)
    reserved: dict[str, float] = field(default_factory=dict)  # worker -> when its copy's quota was reserved
    winner: str | None = None
    epoch: int = 0  # bumped on every fresh dispatch, so stale timers do nothing
    attempts: int = 0  # attempts its chosen copies ended so far
    never: str | None = None
    nevers: list[str | None] = field(default_factory=list)  # each copy's reason it never runs on its worker


@dataclass(frozen=True)
class Window:
    """A chosen copy's facts belong to its workload from `start` on (until `end`, when the manager dropped it),
    its attempts shifted by `offset`."""

    key: int
    start: float
    offset: int
    end: float | None = None


class Fleet:
    """The manager: arrivals in, copies out, one chosen copy per workload."""

    def __init__(self, scenario: FleetScenario, seed: int):
        check_fleet(scenario)
        self.scenario = scenario
        workload = scenario.workload
        self.clock = Clock(workload.start_time, seconds(workload.duration))
        self.order = tuple(w.name for w in scenario.workers)
        self.sims: dict[str, Simulation] = {}
        self.kueues: dict[str, WorkerKueue] = {}
        for worker in scenario.workers:
            kueue = WorkerKueue(ModelKueue(worker.config, False), worker.name, self)
            sim = Simulation(worker.config, workload, cast(Any, kueue), Options(seed))
            sim.clock = self.clock
            sim.ledger = facts.Ledger(self.clock.end)
            self.sims[worker.name], self.kueues[worker.name] = sim, kueue
        # What sim/arrivals.py reads of a simulation: the fleet's tenants, flavors and tiers (the same on every
        # worker), the run's streams and the shared clock.
        first = scenario.workers[0].config
        self.config = first
        self.workload = workload
        self.rng = rng.Streams(seed)
        self.tenants: dict[str, TenantPlan] = {tenant.name: tenant for tenant in first.tenants}
        self.flavors: dict[str, FlavorPlan] = {flavor.name: flavor for flavor in first.flavors}
        self.pools = self.sims[self.order[0]].pools
        self.gpu_sharing: GpuSharing | None = None  # the fleet replays a trace's fractions as the workers' pools take them
        self.expected: Counter[tuple[str, str]] = Counter()  # the arrivals' count, as Simulation.expected (unread here)
        self.workloads: dict[int, Dispatched] = {}
        self.by_copy: dict[tuple[str, int], Dispatched] = {}  # live copies
        self.owner: dict[tuple[str, int], Dispatched] = {}  # every copy ever made
        self.windows: dict[tuple[str, int], Window] = {}
        self.lost_at: dict[str, float] = {}
        self._next_key = 0
        self._turns: dict[tuple[str, str], int] = {}

    # --- what sim/arrivals.py calls --------------------------------------------------------------
    @property
    def now(self) -> float:
        return self.clock.now

    def new_group(self, **fields: Any) -> Group:
        self._next_key += 1
        return Group(key=self._next_key, created=self.now, **fields)

    def submit(self, group: Group) -> None:
        """A workload arrives at the manager: homed by the split rule, dispatched."""
        stream = (group.stream, group.tenant)
        turn = self._turns.get(stream, 0)
        self._turns[stream] = turn + 1
        home = self.order[turn % len(self.order)] if self.scenario.split == ALTERNATE else self.order[0]
        dispatched = Dispatched(group, home)
        self.workloads[group.key] = dispatched
        self._dispatch(dispatched)

    # --- the manager's rules -------------------------------------------------------------------
    def _candidates(self, dispatched: Dispatched) -> tuple[str, ...]:
        return (dispatched.home,) if self.scenario.home_only else self.order

    def _dispatch(self, dispatched: Dispatched) -> None:
        """Round 0 now, the later rounds of an Incremental dispatcher on their timers."""
        dispatched.epoch += 1
        dispatched.winner = None
        dispatched.reserved = {}
        candidates = self._candidates(dispatched)
        dispatcher = self.scenario.dispatcher
        for index in range(rounds(dispatcher, len(candidates), self.scenario.step_size)):
            after = round_starts_after(dispatcher, index)
            assert after is not None
            self.clock.call(after, self._round, dispatched, dispatched.epoch, index)

    def _round(self, dispatched: Dispatched, epoch: int, index: int) -> None:
        if dispatched.epoch != epoch or dispatched.winner is not None:
            return
        nominated = round_workers(self.scenario.dispatcher, self._candidates(dispatched), index, self.scenario.step_size)
        connected = [name for name in self.order if name not in self.lost_at]
        for worker in copies(nominated, connected):
            self.clock.call(self.scenario.latency, self._create_copy, dispatched, epoch, worker)

    def _create_copy(self, dispatched: Dispatched, epoch: int, worker: str) -> None:
        if dispatched.epoch != epoch or dispatched.winner is not None or worker in dispatched.copies:
            return
        sim, source = self.sims[worker], dispatched.group
        copy = sim.new_group(
            tenant=source.tenant, tier=source.tier, priority=source.priority, size=source.size,
            units_per_pod=source.units_per_pod, flavors=source.flavors, run_seconds=source.run_seconds,
            stream=source.stream, start_delay=source.start_delay, service=source.service,
            do_not_disrupt=source.do_not_disrupt,
        )
        dispatched.copies[worker] = copy
        self.by_copy[(worker, copy.key)] = dispatched
        self.owner[(worker, copy.key)] = dispatched
        self.kueues[worker].remote.add(copy.key)
        sim.submit(copy)
        dispatched.nevers.append(sim.ledger.created[-1].never)

    def reserved(self, worker: str, key: int) -> None:
        """A worker's Kueue reserved quota for a copy; the manager sees it after the latency."""
        dispatched = self.by_copy.get((worker, key))
        if dispatched is None:
            return
        dispatched.reserved[worker] = self.now
        self.clock.call(self.scenario.latency, self._admitted_seen, dispatched, dispatched.epoch)

    def _admitted_seen(self, dispatched: Dispatched, epoch: int) -> None:
        if dispatched.epoch != epoch or dispatched.winner is not None:
            return
        seen = {worker: at for worker, at in dispatched.reserved.items()
                if at + self.scenario.latency <= self.now and worker not in self.lost_at
                and self.kueues[worker].held.get(dispatched.copies[worker].key) is not None}
        winner = admitting_worker(seen, self.order)
        if winner is None:
            return
        dispatched.winner = winner
        self.clock.call(self.scenario.latency, self._create_job, dispatched, epoch, winner)

    def _create_job(self, dispatched: Dispatched, epoch: int, winner: str) -> None:
        if dispatched.epoch != epoch:
            return
        copy = dispatched.copies[winner]
        self.windows[(winner, copy.key)] = Window(dispatched.group.key, self.now, dispatched.attempts - copy.attempt)
        if self.kueues[winner].choose(copy.key):
            self.sims[winner].request_cycle()
        for other in removed_copies(list(dispatched.copies), winner):
            self._delete_copy(dispatched, other)
        if winner in self.lost_at:
            self._watch_lost(dispatched, winner)

    def _delete_copy(self, dispatched: Dispatched, worker: str) -> None:
        if worker in self.lost_at:
            return  # unreachable: its garbage collector removes the copy once the worker reconnects
        copy = dispatched.copies.pop(worker)
        del self.by_copy[(worker, copy.key)]
        window = self.windows.get((worker, copy.key))
        if window is not None:
            self.windows[(worker, copy.key)] = Window(window.key, window.start, window.offset, self.now)
            dispatched.attempts = window.offset + copy.attempt
        self.sims[worker].delete(copy)

    def evicted(self, worker: str, key: int) -> None:
        """The chosen copy was evicted on its worker: after the latency the manager drops every copy and
        dispatches afresh. The baseline's single cluster requeues it itself."""
        dispatched = self.by_copy.get((worker, key))
        if dispatched is None or self.scenario.home_only or dispatched.winner != worker:
            return
        self.clock.call(self.scenario.latency, self._retry, dispatched, dispatched.epoch)

    def _retry(self, dispatched: Dispatched, epoch: int) -> None:
        if dispatched.epoch != epoch or dispatched.group.done:
            return
        for worker in list(dispatched.copies):
            self.clock.call(self.scenario.latency, self._delete_if_present, dispatched, worker, dispatched.copies[worker])
        self._dispatch(dispatched)

    def _delete_if_present(self, dispatched: Dispatched, worker: str, copy: Group) -> None:
        if dispatched.copies.get(worker) is copy:
            self._delete_copy(dispatched, worker)

    def lose(self, worker: str, at: float) -> None:
        self.clock.call(at, self._lost, worker)

    def _lost(self, worker: str) -> None:
        """The worker is unreachable from now on: no new copies; workloads running there are dispatched again
        once workerLostTimeout has passed."""
        self.lost_at[worker] = self.now
        for dispatched in list(self.workloads.values()):
            if dispatched.winner == worker:
                self._watch_lost(dispatched, worker)

    def _watch_lost(self, dispatched: Dispatched, worker: str) -> None:
        copy = dispatched.copies[worker]
        if copy.done:
            return
        wait = retry_after_lost(self.lost_at[worker], self.now, self.scenario.worker_lost_timeout)
        self.clock.call(wait, self._lost_retry, dispatched, dispatched.epoch, worker, copy)

    def _lost_retry(self, dispatched: Dispatched, epoch: int, worker: str, copy: Group) -> None:
        if dispatched.epoch != epoch or copy.done:
            return
        window = self.windows[(worker, copy.key)]
        self.windows[(worker, copy.key)] = Window(window.key, window.start, window.offset, self.now)
        dispatched.attempts = window.offset + copy.attempt + 1
        dispatched.copies.pop(worker)
        self._retry(dispatched, epoch)

    # --- the run ---------------------------------------------------------------------------------
    def run(self) -> None:
        for sim in self.sims.values():
            sim.place_headroom()
        arrivals = cast(Simulation, self)
        schedule_jobs(arrivals)
        for trace in self.workload.traces:
            if trace.format == ALIBABA_GPU_2023:
                schedule_trace(arrivals, trace, self.scenario.project_dir)
        for worker, at in self.scenario.lost:
            self.lose(worker, at)
        self.clock.run()
        for sim in self.sims.values():
            sim.close()
        for dispatched in self.workloads.values():
            dispatched.never = self._never(dispatched)

    def _never(self, dispatched: Dispatched) -> str | None:
        """Never runs in the fleet: never on any worker it was sent to (the first one's reason)."""
        if dispatched.nevers and all(reason is not None for reason in dispatched.nevers):
            return dispatched.nevers[0]
        return None
