"""One scheduling cycle, and the queues it takes its heads from (kubernetes-sigs/kueue v0.19.2).

pkg/scheduler/scheduler.go `schedule`:
1. the head of every ClusterQueue is nominated: its flavors are assigned against the snapshot
   (`flavorassigner.assign`) and, in Preempt mode, its preemption targets found;
2. entries are processed in order (makeClassicalIterator: those not borrowing first, then higher
   priority, PrioritySortingWithinCohort being on by default, then the older queue-order timestamp;
   with fair sharing, one at a time by models.kueue.fair_sharing.fair_entries);
3. processEntry: NoFit stays pending; Preempt without targets stays pending and, unless the queue
   reclaims with `Any`, reserves the quota it could get so nothing borrowed overtakes it
   (reserveCapacityForUnreclaimablePreempt); an entry whose targets another entry already preempts
   this cycle, or that no longer fits once earlier entries took their quota, is skipped; otherwise its
   quota is taken and it is either admitted (Fit) or its targets are evicted (Preempt; it is admitted
   in a later cycle, once they are gone).

pkg/cache/queue/cluster_queue.go: each ClusterQueue's pending workloads are ordered by priority, then
queue-order timestamp (baseCompareFunc). Under StrictFIFO a workload that cannot be admitted stays
the head; under BestEffortFIFO it is set aside as inadmissible until quota in its cohort changes
(QueueInadmissibleWorkloads), except when it failed after nomination or waits for its preemptions
(RequeueIfNotPresent: `immediate`), and a preemptor waiting for its targets stays the head.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from .cohort import ANY, BEST_EFFORT_FIFO, FlavorResource, Snapshot, add_usage, remove_usage
from .fair_sharing import fair_entries
from .flavorassigner import NO_FIT, PREEMPT, Assignment, assign
from .preemption import Preemptor, Target
from .workload import Workload

# What happened to an entry this cycle.
ADMITTED = "admitted"  # quota reserved
PREEMPTING = "preempting"  # its targets are being evicted; admitted in a later cycle
NO_FIT_STATUS = "nofit"  # no flavor can hold it now
NO_CANDIDATES = "waiting"  # needs preemption, nothing may be preempted
SKIPPED = "skipped"  # another entry this cycle took what it needed
INACTIVE = "inactive"  # its ClusterQueue is inactive
NAMESPACE_MISMATCH = "namespace"  # its namespace does not match the ClusterQueue's namespaceSelector
_FAILED_AFTER_NOMINATION = (SKIPPED, PREEMPTING)


@dataclass(slots=True)
class Entry:
    workload: Workload
    assignment: Assignment
    targets: list[Target] = field(default_factory=list)
    status: str = NO_FIT_STATUS

    @property
    def nominated(self) -> bool:
        """Failed after nomination: requeued at once even under BestEffortFIFO."""
        return self.status in _FAILED_AFTER_NOMINATION


@dataclass(slots=True)
class Cycle:
    entries: list[Entry]  # in the order they were processed, then those not nominated (inactive, namespace)

    @property
    def admitted(self) -> list[Entry]:
        return [e for e in self.entries if e.status == ADMITTED]

    @property
    def preempted(self) -> list[Target]:
        return [t for e in self.entries if e.status == PREEMPTING for t in e.targets]


def entry_order(entry: Entry) -> tuple[int, int, float]:
    """makeClassicalIterator as a sort key: not borrowing first, then priority, then the oldest."""
    return (entry.assignment.borrowing, -entry.workload.priority, entry.workload.timestamp)


def schedule(
    snapshot: Snapshot, heads: Sequence[Workload], pending: Mapping[int, Assignment] | None = None
) -> Cycle:
    """One cycle over the heads of the queues. The snapshot is left as it was: apply the result with `apply`.

    `pending`, by id of a head: an assignment the caller found for a workload of the same requests, priority and
    ClusterQueue at this very snapshot, one that left it pending without preemption targets (NoFit, or Preempt
    with none). The flavor search is deterministic, so the head gets that assignment without a search; it still
    takes its place in the cycle's order and, as a Preempt entry, holds back the quota it could get.
    """
    preemptor = Preemptor(snapshot)
    entries = []
    inadmissible = []
    for workload in heads:
        queue = snapshot.cluster_queues[workload.cluster_queue]
        if queue.name in snapshot.inactive or not queue.admits_namespace(workload.namespace_labels):
            status = INACTIVE if queue.name in snapshot.inactive else NAMESPACE_MISMATCH
            inadmissible.append(Entry(workload, Assignment([], {}, 0), [], status))
            continue
        known = pending.get(id(workload)) if pending else None
        if known is not None:
            entries.append(Entry(workload, known, []))
            continue
        assignment = assign(workload, queue, snapshot, preemptor.oracle)
        targets = preemptor.targets(workload, assignment) if assignment.mode == PREEMPT else []
        entries.append(Entry(workload, assignment, targets))
    if snapshot.fair_sharing:
        order: Iterable[Entry] = fair_entries(snapshot, entries)
    else:
        order = sorted(entries, key=entry_order)
    taken: list[tuple[str, dict[FlavorResource, int]]] = []
    preempted: dict[int, Workload] = {}
    processed = []
    for entry in order:
        _process(snapshot, entry, preempted, taken)
        processed.append(entry)
    entries = processed
    for queue_name, usage in reversed(taken):
        queue = snapshot.cluster_queues[queue_name]
        for fr, value in usage.items():
            remove_usage(queue, fr, value)
    return Cycle(entries + inadmissible)


def _process(
    snapshot: Snapshot, entry: Entry, preempted: dict[int, Workload], taken: list[tuple[str, dict[FlavorResource, int]]]
) -> None:
    queue = snapshot.cluster_queues[entry.workload.cluster_queue]
    mode = entry.assignment.mode
    if mode == NO_FIT:
        entry.status = NO_FIT_STATUS
        return
    if mode == PREEMPT and not entry.targets:
        entry.status = NO_CANDIDATES
        if queue.preemption.reclaim_within_cohort != ANY:
            _take(queue.name, snapshot, _to_reserve(entry, snapshot), taken)
        return
    if any(id(t.workload) in preempted for t in entry.targets):
        entry.status = SKIPPED
        return
    victims = {**preempted, **{id(t.workload): t.workload for t in entry.targets}}
    snapshot.remove_usage_of(victims.values())
    fits = queue.fits(entry.assignment.usage)
    snapshot.add_usage_of(victims.values())
    if not fits:
        entry.status = SKIPPED
        return
    preempted.update((id(t.workload), t.workload) for t in entry.targets)
    _take(queue.name, snapshot, entry.assignment.usage, taken)
    entry.status = PREEMPTING if mode == PREEMPT else ADMITTED


def _take(queue_name: str, snapshot: Snapshot, usage: dict[FlavorResource, int], taken: list) -> None:
    queue = snapshot.cluster_queues[queue_name]
    for fr, value in usage.items():
        add_usage(queue, fr, value)
    taken.append((queue_name, usage))


def _to_reserve(entry: Entry, snapshot: Snapshot) -> dict[FlavorResource, int]:
    """quotaResourcesToReserve: what a Preempt entry without targets holds back, up to what the queue may use."""
    queue = snapshot.cluster_queues[entry.workload.cluster_queue]
    reserved = {}
    for fr, value in entry.assignment.usage.items():
        quota, used = queue.quota(fr), queue.usage.get(fr, 0)
        if entry.assignment.borrowing > 0:
            limit = None if quota.borrowing_limit is None else quota.nominal + quota.borrowing_limit - used
            reserved[fr] = value if limit is None else min(value, limit)
        else:
            reserved[fr] = max(0, min(value, quota.nominal - used))
    return reserved


def apply(snapshot: Snapshot, cycle: Cycle, now: float) -> None:
    """Make a cycle's outcome the snapshot's state: admitted entries hold their quota from `now`; the
    targets of preempting entries are marked evicted (their quota is held until the caller removes them)."""
    for entry in cycle.entries:
        if entry.status == ADMITTED:
            workload = entry.workload
            workload.usage = dict(entry.assignment.usage)
            workload.flavors = entry.assignment.flavors()
            workload.reserved_at = now
            snapshot.add_workload(workload)
        elif entry.status == PREEMPTING:
            for target in entry.targets:
                target.workload.evicted = True


# --- the queues ------------------------------------------------------------------------------------


class PendingQueue:
    """One ClusterQueue's pending workloads (pkg/cache/queue/cluster_queue.go)."""

    def __init__(self, strategy: str = BEST_EFFORT_FIFO):
        self.strategy = strategy
        self._heap: list[tuple[int, float, str, Workload]] = []
        self._inadmissible: dict[str, Workload] = {}
        self._sticky: Workload | None = None  # a preemptor waiting for its targets to go

    def __len__(self) -> int:
        return len(self._heap) + len(self._inadmissible)

    def push(self, workload: Workload) -> None:
        heapq.heappush(self._heap, queue_order(workload))

    def pop_head(self) -> Workload | None:
        """The workload the next cycle nominates, taken out of the queue (requeue or admit it after)."""
        if self._sticky is not None and any(item[3] is self._sticky for item in self._heap):
            self._heap = [item for item in self._heap if item[3] is not self._sticky]
            heapq.heapify(self._heap)
            return self._sticky
        return heapq.heappop(self._heap)[3] if self._heap else None

    def requeue(self, entry: Entry) -> None:
        """RequeueIfNotPresent after a cycle left the entry pending: back in line at once under StrictFIFO
        (but for a namespace mismatch) or after failing past nomination; else set aside as inadmissible."""
        workload = entry.workload
        self._sticky = workload if keeps_head(self.strategy, entry.status) else None
        if back_in_line(self.strategy, entry.status):
            self.push(workload)
        else:
            self._inadmissible[workload.name] = workload

    def requeue_no_fit(self, workload: Workload) -> None:
        """`requeue` of an entry found NoFit (status NO_FIT_STATUS, not nominated), without building the entry."""
        self._sticky = None
        if back_in_line(self.strategy, NO_FIT_STATUS):
            self.push(workload)
        else:
            self._inadmissible[workload.name] = workload

    def queue_inadmissible(self) -> None:
        """QueueInadmissibleWorkloads: quota changed in the cohort, so every set-aside workload is retried."""
        # One heapify of them all (linear) rather than a push each: the heads come out in the same order, since
        # no two entries compare equal (names differ).
        self._heap.extend(queue_order(workload) for workload in self._inadmissible.values())
        heapq.heapify(self._heap)
        self._inadmissible.clear()

    def in_line(self) -> list[Workload]:
        """The workloads a coming cycle may take as the head, best first."""
        return [item[3] for item in sorted(self._heap, key=lambda item: item[:3])]

    def set_aside(self) -> list[Workload]:
        """The workloads set aside as inadmissible until quota in the cohort changes."""
        return list(self._inadmissible.values())

    def remove(self, workload: Workload) -> None:
        self._heap = [item for item in self._heap if item[3] is not workload]
        heapq.heapify(self._heap)
        self._inadmissible.pop(workload.name, None)


def queue_order(workload: Workload) -> tuple[int, float, str, Workload]:
    """A pending workload's place in its queue, smallest first: by priority, then queue-order timestamp
    (baseCompareFunc), then name."""
    return (-workload.priority, workload.timestamp, workload.name, workload)


def back_in_line(strategy: str, status: str) -> bool:
    """RequeueIfNotPresent's `immediate`: a workload a cycle left pending goes straight back in line under
    StrictFIFO (but for a namespace mismatch) or when it failed after nomination; else it is set aside as
    inadmissible until quota in its cohort changes."""
    return (strategy != BEST_EFFORT_FIFO and status != NAMESPACE_MISMATCH) or status in _FAILED_AFTER_NOMINATION


def keeps_head(strategy: str, status: str) -> bool:
    """Under BestEffortFIFO a preemptor waiting for its targets to go stays its queue's head."""
    return status == PREEMPTING and strategy == BEST_EFFORT_FIFO


def heads(queues: Iterable[PendingQueue]) -> list[Workload]:
    """Heads: one workload from each queue that has one."""
    return [workload for queue in queues if (workload := queue.pop_head()) is not None]

