"""Which admitted workloads Kueue evicts so a pending one fits (kubernetes-sigs/kueue v0.19.2
pkg/scheduler/preemption/).

Classical preemption (preemption.go classicalPreemptions, classical/candidate_generator.go,
classical/hierarchical_preemption.go, common/preemption_policy.go, common/ordering.go):
- Candidates: workloads of the preemptor's ClusterQueue that `withinClusterQueue` allows
  (LowerPriority: lower priority; LowerOrNewerEqualPriority: also equal priority queued later; Any),
  and, with `reclaimWithinCohort` not Never, workloads the policy allows in other ClusterQueues of the
  cohort tree that are borrowing in a (flavor, resource) the preemptor needs. A candidate in another
  queue is taken "while borrowing" only when `borrowWithinCohort` allows it and its priority is below
  the preemptor's and at most `maxPriorityThreshold`; queues in a subtree where the preemptor would
  fit without borrowing are reclaimed from first (hierarchical reclaim).
- Order: being evicted already, other queues before the preemptor's, lower priority, more recently
  admitted, then name (UID).
- Candidates are removed one at a time until the preemptor fits (first allowing the preemptor to
  borrow, or first not, as the policies say), then every target whose return would still let it fit
  is given back (fillBackWorkloads).

Fair sharing (fairPreemptions, fairsharing/): see `models.kueue.fair_sharing`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass

from .cohort import (
    ANY,
    LOWER_OR_NEWER_EQUAL_PRIORITY,
    LOWER_PRIORITY,
    NEVER,
    ClusterQueue,
    Cohort,
    FlavorResource,
    Snapshot,
    quantities_fit_in_quota,
)
from .flavorassigner import ORACLE_NO_CANDIDATES, ORACLE_PREEMPT, ORACLE_RECLAIM, Assignment, height_of_lowest_subtree_that_fits
from .workload import Workload

# Preemption reasons (apis/kueue/v1beta2/workload_types.go), as the Preempted condition states them.
IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_RECLAMATION = "InCohortReclamation"
IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"
IN_COHORT_FAIR_SHARING = "InCohortFairSharing"

# preemptionVariant
_NEVER, _WITHIN_QUEUE, _HIERARCHICAL_RECLAIM, _RECLAIM_WITHOUT_BORROWING, _RECLAIM_WHILE_BORROWING = range(5)
_REASON = {
    _WITHIN_QUEUE: IN_CLUSTER_QUEUE,
    _HIERARCHICAL_RECLAIM: IN_COHORT_RECLAMATION,
    _RECLAIM_WITHOUT_BORROWING: IN_COHORT_RECLAMATION,
    _RECLAIM_WHILE_BORROWING: IN_COHORT_RECLAIM_WHILE_BORROWING,
}


@dataclass(frozen=True, slots=True)
class Target:
    workload: Workload
    reason: str


def satisfies_policy(preemptor: Workload, candidate: Workload, policy: str) -> bool:
    """SatisfiesPreemptionPolicy (the SchedulerTimestampPreemptionBuffer gate is off by default)."""
    if policy == ANY:
        return True
    lower = preemptor.priority > candidate.priority
    if policy == LOWER_PRIORITY:
        return lower
    if policy == LOWER_OR_NEWER_EQUAL_PRIORITY:
        return lower or (preemptor.priority == candidate.priority and preemptor.timestamp < candidate.timestamp)
    return False


def candidate_order(candidate: Workload, preemptor_queue: str) -> tuple[bool, bool, int, float, str]:
    """CandidatesOrdering as a sort key: evicted first, other queues first, lower priority, newest admission."""
    same_queue = candidate.cluster_queue == preemptor_queue
    return (not candidate.evicted, same_queue, candidate.priority, -candidate.reserved_at, candidate.name)


@dataclass(slots=True)
class _Candidate:
    workload: Workload
    lca: Cohort | None
    variant: int


class _Context:
    __slots__ = ("frs", "preemptor", "queue", "snapshot", "usage")

    def __init__(
        self, snapshot: Snapshot, preemptor: Workload, usage: dict[FlavorResource, int], frs: Collection[FlavorResource]
    ):
        self.snapshot = snapshot
        self.preemptor = preemptor
        self.queue = snapshot.cluster_queues[preemptor.cluster_queue]
        self.usage = usage
        self.frs = frs

    def fits(self, allow_borrowing: bool) -> bool:
        """workloadFits."""
        queue = self.queue
        for fr, value in self.usage.items():
            if not allow_borrowing and queue.borrowing_with(fr, value):
                return False
            if value > queue.available(fr):
                return False
        return True


def _borrowing_forbidden(queue: ClusterQueue) -> bool:
    return queue.preemption.borrow_within_cohort == NEVER


def _variant(ctx: _Context, candidate: Workload, hierarchical_advantage: bool) -> int:
    """classifyPreemptionVariant."""
    if not candidate.uses(ctx.frs):
        return _NEVER
    queue = ctx.queue
    same_queue = candidate.cluster_queue == queue.name
    policy = queue.preemption.within_cluster_queue if same_queue else queue.preemption.reclaim_within_cohort
    if not satisfies_policy(ctx.preemptor, candidate, policy):
        return _NEVER
    if same_queue:
        return _WITHIN_QUEUE
    if hierarchical_advantage:
        return _HIERARCHICAL_RECLAIM
    if _borrowing_forbidden(queue):
        return _RECLAIM_WITHOUT_BORROWING
    threshold = queue.preemption.max_priority_threshold
    if candidate.priority >= ctx.preemptor.priority or (threshold is not None and candidate.priority > threshold):
        return _RECLAIM_WITHOUT_BORROWING
    return _RECLAIM_WHILE_BORROWING


def _from_queue(ctx: _Context, queue: ClusterQueue, lca: Cohort | None, advantage: bool) -> list[_Candidate]:
    found = []
    for workload in queue.workloads.values():
        variant = _variant(ctx, workload, advantage)
        if variant != _NEVER:
            found.append(_Candidate(workload, lca, variant))
    return found


def _collect_in_subtree(
    ctx: _Context, current: Cohort, subtree_root: Cohort, skip: Cohort | None, advantage: bool, result: list[_Candidate]
) -> None:
    for child in current.child_cohorts:
        if child is skip or child.within_nominal(ctx.frs):
            continue
        _collect_in_subtree(ctx, child, subtree_root, skip, advantage, result)
    for queue in current.child_queues:
        if queue is ctx.queue:
            continue
        if not queue.within_nominal(ctx.frs):
            result += _from_queue(ctx, queue, subtree_root, advantage)


def _hierarchical_candidates(ctx: _Context) -> tuple[list[_Candidate], list[_Candidate]]:
    """collectCandidatesForHierarchicalReclaim: (reclaimable with hierarchical advantage, by priority only)."""
    hierarchy: list[_Candidate] = []
    by_priority: list[_Candidate] = []
    queue = ctx.queue
    if queue.parent is None or queue.preemption.reclaim_within_cohort == NEVER:
        return hierarchy, by_priority
    advantage, remaining = quantities_fit_in_quota(queue, ctx.usage)
    previous: Cohort | None = None
    for root in queue.path_to_root():
        _collect_in_subtree(ctx, root, root, previous, advantage, hierarchy if advantage else by_priority)
        fits, remaining = quantities_fit_in_quota(root, remaining)
        advantage = advantage or fits
        previous = root
    return hierarchy, by_priority


class _Candidates:
    """candidateIterator: every candidate once per attempt, evicted ones first."""

    def __init__(self, ctx: _Context):
        self.ctx = ctx
        same: list[_Candidate] = []
        if ctx.queue.preemption.within_cluster_queue != NEVER:
            same = _from_queue(ctx, ctx.queue, None, False)
        hierarchy, by_priority = _hierarchical_candidates(ctx)
        name = ctx.queue.name
        lists = [sorted(group, key=lambda c: candidate_order(c.workload, name)) for group in (hierarchy, by_priority, same)]
        self.candidates = [c for group in lists for c in group if c.workload.evicted] + [
            c for group in lists for c in group if not c.workload.evicted
        ]
        self.none_from_other_queues = not hierarchy and not by_priority
        self.none_for_hierarchical_reclaim = not hierarchy

    def each(self, borrow: bool) -> Iterator[_Candidate]:
        for candidate in self.candidates:
            if self._valid(candidate, borrow):
                yield candidate

    def _valid(self, candidate: _Candidate, borrow: bool) -> bool:
        ctx = self.ctx
        if candidate.workload.cluster_queue == ctx.queue.name:
            return True
        if borrow and candidate.variant == _RECLAIM_WITHOUT_BORROWING:
            return False
        queue = ctx.snapshot.cluster_queues[candidate.workload.cluster_queue]
        if queue.within_nominal(ctx.frs):
            return False
        for node in queue.path_to_root():
            if node is candidate.lca:
                break
            if node.within_nominal(ctx.frs):
                return False
        return True


def _under_nominal(ctx: _Context) -> bool:
    """queueUnderNominalInResourcesNeedingPreemption."""
    return all(ctx.queue.quota(fr).nominal > ctx.queue.usage.get(fr, 0) for fr in ctx.frs)


def classical_targets(ctx: _Context) -> list[Target]:
    candidates = _Candidates(ctx)
    forbidden = _borrowing_forbidden(ctx.queue)
    attempts: tuple[bool, ...]
    if candidates.none_from_other_queues or (forbidden and not _under_nominal(ctx)):
        attempts = (True,)
    elif forbidden and candidates.none_for_hierarchical_reclaim:
        attempts = (False, True)
    else:
        attempts = (True, False)
    snapshot = ctx.snapshot
    for borrow in attempts:
        targets: list[Target] = []
        for candidate in candidates.each(borrow):
            snapshot.remove_workload(candidate.workload)
            targets.append(Target(candidate.workload, _REASON[candidate.variant]))
            if ctx.fits(borrow):
                targets = _fill_back(ctx, targets, borrow)
                _restore(snapshot, targets)
                return targets
        _restore(snapshot, targets)
    return []


def _fill_back(ctx: _Context, targets: list[Target], allow_borrowing: bool) -> list[Target]:
    """fillBackWorkloads: give back, newest target first, every one the preemptor can do without."""
    for index in range(len(targets) - 2, -1, -1):
        ctx.snapshot.add_workload(targets[index].workload)
        if ctx.fits(allow_borrowing):
            targets[index] = targets[-1]
            targets.pop()
        else:
            ctx.snapshot.remove_workload(targets[index].workload)
    return targets


def _restore(snapshot: Snapshot, targets: list[Target]) -> None:
    for target in targets:
        snapshot.add_workload(target.workload)


class Preemptor:
    """Preemption over one snapshot: the targets for an assignment, and the flavor assigner's oracle.

    One Preemptor serves one nomination (scheduler.schedule makes one per cycle), during which every question
    leaves the snapshot as it found it: the same question gets the same answer, so each is worked out once.
    A workload that needs preemption in one (flavor, resource) asks the oracle and then GetTargets the same.
    """

    def __init__(self, snapshot: Snapshot):
        self.snapshot = snapshot
        self._answers: dict[tuple[int, tuple[tuple[FlavorResource, int], ...], frozenset[FlavorResource]], list[Target]] = {}

    def targets(self, workload: Workload, assignment: Assignment) -> list[Target]:
        """GetTargets: the workloads to evict so `workload` fits as assigned; empty when none would do."""
        usage = {fr: value for fr, value in assignment.usage.items() if value}  # TotalRequestsFor skips zeros
        return self._targets(_Context(self.snapshot, workload, usage, assignment.needs_preemption()))

    def _targets(self, ctx: _Context) -> list[Target]:
        key = (id(ctx.preemptor), tuple(ctx.usage.items()), frozenset(ctx.frs))
        answer = self._answers.get(key)
        if answer is None:
            if self.snapshot.fair_sharing:
                from .fair_sharing import fair_targets  # fair_sharing builds on this module

                answer = fair_targets(ctx)
            else:
                answer = classical_targets(ctx)
            self._answers[key] = answer
        return list(answer)

    def oracle(self, queue: ClusterQueue, workload: Workload, fr: FlavorResource, amount: int) -> tuple[int, int]:
        """SimulatePreemption (preemption_oracle.go): whether preempting could fit `amount` of `fr`, and the
        borrowing level after it."""
        targets = self._targets(_Context(self.snapshot, workload, {fr: amount}, {fr}))
        if not targets:
            return ORACLE_NO_CANDIDATES, height_of_lowest_subtree_that_fits(queue, fr, amount)[0]
        victims = [target.workload for target in targets]
        self.snapshot.remove_usage_of(victims)
        borrow = height_of_lowest_subtree_that_fits(queue, fr, amount)[0]
        self.snapshot.add_usage_of(victims)
        if any(target.workload.cluster_queue == queue.name for target in targets):
            return ORACLE_PREEMPT, borrow
        return ORACLE_RECLAIM, borrow
