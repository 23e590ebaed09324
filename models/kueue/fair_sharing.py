"""Fair sharing: dominant resource shares, the order a cycle takes entries in, and who is preempted.

Mirrors kubernetes-sigs/kueue v0.19.2, on when the Configuration has a `fairSharing` section:
- pkg/cache/scheduler/fair_sharing.go: a node's dominant resource share (DRS) is, over the resources it
  borrows (usage beyond its subtree quota, summed over flavors), the largest of borrowed * 1000 /
  what its parent could lend of that resource (potentialAvailable over every flavor of the root),
  divided by the node's fair weight; a weight of 0 that borrows sorts after everything (CompareDRS).
- pkg/scheduler/fair_sharing_iterator.go: the next entry is the winner of a tournament from the root
  cohort down: at each cohort the candidates (each child cohort's winner and each child queue's entry)
  compare by borrowing on what they request (FairSharingPrioritizeNonBorrowing, on by default), then
  the DRS the winner's subtree would have with it admitted, then priority, then queue-order time. DRS
  are recomputed before every pick, as earlier picks take quota.
- pkg/scheduler/preemption/preemption.go fairPreemptions and fairsharing/: candidates are lower-priority
  (per withinClusterQueue) workloads of the preemptor's queue and (per reclaimWithinCohort) workloads of
  queues that borrow what the preemptor needs; targets are taken from the queue with the highest DRS
  down the tree (TargetClusterQueueOrdering), in-queue and, while the preemptor is within its nominal
  quota, reclaimed outright; otherwise a workload is preempted when the preemptor's share after
  admission stays at or below the target's share after removal (LessThanOrEqualToFinalShare), and in a
  second pass below the target's share before (LessThanInitialShare).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .cohort import NEVER, ClusterQueue, Cohort, FlavorResource, Node, Snapshot, _potential_available, add_usage, remove_usage
from .preemption import (
    IN_CLUSTER_QUEUE,
    IN_COHORT_FAIR_SHARING,
    IN_COHORT_RECLAMATION,
    Target,
    _Context,
    _fill_back,
    _restore,
    candidate_order,
    satisfies_policy,
)
from .workload import Workload

if TYPE_CHECKING:
    from .scheduler import Entry

LESS_THAN_OR_EQUAL_TO_FINAL_SHARE = "LessThanOrEqualToFinalShare"
LESS_THAN_INITIAL_SHARE = "LessThanInitialShare"
DEFAULT_STRATEGIES = (LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, LESS_THAN_INITIAL_SHARE)


@dataclass(frozen=True, slots=True)
class DRS:
    fair_weight: float = 1.0
    unweighted_ratio: float = 0.0
    dominant_resource: str = ""
    borrowing: bool = False
    borrowed: tuple[FlavorResource, ...] = ()

    @property
    def share(self) -> float:
        """PreciseWeightedShare."""
        if self.unweighted_ratio == 0:
            return 0.0
        if self.fair_weight == 0:
            return float("inf")
        return self.unweighted_ratio / self.fair_weight

    def _zero_weight_borrows(self) -> bool:
        return self.fair_weight == 0 and self.unweighted_ratio != 0

    def borrowing_on(self, requested: dict[FlavorResource, int]) -> bool:
        return any(requested.get(fr, 0) > 0 for fr in self.borrowed)


_NEGATIVE = DRS(unweighted_ratio=-1)


def compare(a: DRS, b: DRS) -> int:
    """CompareDRS: -1 when `a` has the smaller share."""
    if a._zero_weight_borrows() and b._zero_weight_borrows():
        return (a.unweighted_ratio > b.unweighted_ratio) - (a.unweighted_ratio < b.unweighted_ratio)
    if a._zero_weight_borrows():
        return 1
    if b._zero_weight_borrows():
        return -1
    return (a.share > b.share) - (a.share < b.share)


def dominant_resource_share(node: Node) -> DRS:
    if node.parent is None:
        return DRS(node.fair_weight)
    borrowed: dict[str, int] = {}
    frs = []
    subtree = node.subtree_quota
    for fr, used in node.usage.items():  # over SubtreeQuota's keys upstream; only used ones can borrow
        if fr not in subtree:
            continue
        amount = used - subtree[fr]
        if amount > 0:
            borrowed[fr[1]] = borrowed.get(fr[1], 0) + amount
            frs.append(fr)
    if not borrowed:
        return DRS(node.fair_weight)
    lendable = _lendable(node.parent)
    ratio, dominant = 0.0, ""
    for resource, amount in borrowed.items():
        if lendable.get(resource, 0) > 0:
            value = amount * 1000.0 / lendable[resource]
            if value > ratio or (value == ratio and resource < dominant):
                ratio, dominant = value, resource
    return DRS(node.fair_weight, ratio, dominant, True, tuple(frs))


def _lendable(node: Cohort) -> dict[str, int]:
    """calculateLendable: what `node` could get of each resource, over every flavor the root has
    (quotas alone decide it, so it is kept until the snapshot is rebuilt)."""
    if node.lendable is None:
        lendable: dict[str, int] = {}
        for fr in node.root().subtree_quota:
            lendable[fr[1]] = lendable.get(fr[1], 0) + _potential_available(node, fr)
        node.lendable = lendable
    return node.lendable


# --- the order of a cycle's entries --------------------------------------------------------------------


def fair_entries(snapshot: Snapshot, entries: Sequence[Entry]) -> Iterator[Entry]:
    """fairSharingIterator: the entries one at a time, each the winner of a tournament over what is left."""
    remaining = {entry.workload.cluster_queue: entry for entry in entries}
    while remaining:
        queue = snapshot.cluster_queues[next(iter(remaining))]
        if queue.parent is None or len(remaining) == 1:  # a tournament of one entry: no shares needed
            yield remaining.pop(queue.name)
            continue
        root = queue.parent.root()
        shares = _shares(root, remaining, snapshot)
        winner = _tournament(root, remaining, shares)
        if winner is None:  # not reachable: the queue's own entry is in the tree
            raise RuntimeError(f"no entry under cohort {root.name}")
        del remaining[winner.workload.cluster_queue]
        yield winner


def _shares(root: Cohort, remaining: dict[str, Entry], snapshot: Snapshot) -> dict[tuple[str, int], DRS]:
    """computeDRS: per (cohort, entry), the DRS of the cohort's child on the entry's path, the entry admitted."""
    shares: dict[tuple[str, int], DRS] = {}
    for queue in root.subtree_queues():
        entry = remaining.get(queue.name)
        if entry is None:
            continue
        usage = entry.assignment.usage
        for fr, value in usage.items():
            add_usage(queue, fr, value)
        drs = dominant_resource_share(queue)
        for ancestor in queue.path_to_root():
            shares[(ancestor.name, id(entry))] = drs
            drs = dominant_resource_share(ancestor)
        for fr, value in usage.items():
            remove_usage(queue, fr, value)
    return shares


def _tournament(cohort: Cohort, remaining: dict[str, Entry], shares: dict[tuple[str, int], DRS]) -> Entry | None:
    candidates = [winner for child in cohort.child_cohorts if (winner := _tournament(child, remaining, shares)) is not None]
    candidates += [remaining[q.name] for q in cohort.child_queues if q.name in remaining]
    if not candidates:
        return None
    best = candidates[0]
    for current in candidates[1:]:
        if _less(current, best, cohort.name, shares):
            best = current
    return best


def _less(a: Entry, b: Entry, cohort: str, shares: dict[tuple[str, int], DRS]) -> bool:
    a_drs, b_drs = shares[(cohort, id(a))], shares[(cohort, id(b))]
    a_borrows, b_borrows = a_drs.borrowing_on(a.assignment.usage), b_drs.borrowing_on(b.assignment.usage)
    if a_borrows != b_borrows:
        return not a_borrows
    order = compare(a_drs, b_drs)
    if order:
        return order < 0
    if a.workload.priority != b.workload.priority:
        return a.workload.priority > b.workload.priority
    return a.workload.timestamp < b.workload.timestamp


# --- preemption --------------------------------------------------------------------------------------------


@dataclass(eq=False)
class _Ordering:
    """TargetClusterQueueOrdering: candidate queues by DRS, highest first, down from the root."""

    ctx: _Context
    targets: dict[str, list[Workload]]
    ancestors: set[int] = field(default_factory=set)
    pruned_queues: set[str] = field(default_factory=set)
    pruned_cohorts: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, ctx: _Context, candidates: Sequence[Workload]) -> _Ordering:
        ordering = cls(ctx, {})
        ordering.ancestors = {id(a) for a in ctx.queue.path_to_root()}
        for candidate in candidates:
            ordering.targets.setdefault(candidate.cluster_queue, []).append(candidate)
        return ordering

    def has(self, queue: ClusterQueue) -> bool:
        return bool(self.targets.get(queue.name))

    def pop(self, queue: ClusterQueue) -> Workload:
        return self.targets[queue.name].pop(0)

    def each(self) -> Iterator[ClusterQueue]:
        preemptor = self.ctx.queue
        if preemptor.parent is None:
            while preemptor.name not in self.pruned_queues and self.has(preemptor):
                yield preemptor
            return
        root = preemptor.parent.root()
        while root.name not in self.pruned_cohorts:
            target = self._next(root)
            if target is not None:
                yield target

    def _next(self, cohort: Cohort) -> ClusterQueue | None:
        preemptor = self.ctx.queue
        best_queue, best_queue_drs = None, _NEGATIVE
        for queue in cohort.child_queues:
            if queue.name in self.pruned_queues:
                continue
            drs = dominant_resource_share(queue)
            if (not drs.borrowing and queue is not preemptor) or not self.has(queue):
                self.pruned_queues.add(queue.name)
            elif best_queue is not None and compare(drs, best_queue_drs) == 0:
                if candidate_order(self.targets[queue.name][0], preemptor.name) < candidate_order(
                    self.targets[best_queue.name][0], preemptor.name
                ):
                    best_queue = queue
            elif compare(drs, best_queue_drs) == 1:
                best_queue, best_queue_drs = queue, drs
        best_cohort, best_cohort_drs = None, _NEGATIVE
        for child in cohort.child_cohorts:
            if child.name in self.pruned_cohorts:
                continue
            drs = dominant_resource_share(child)
            if not drs.borrowing and id(child) not in self.ancestors:
                self.pruned_cohorts.add(child.name)
            elif compare(drs, best_cohort_drs) >= 0:
                best_cohort, best_cohort_drs = child, drs
        if best_cohort is None and best_queue is None:
            self.pruned_cohorts.add(cohort.name)
            return None
        if best_cohort is not None and compare(best_cohort_drs, best_queue_drs) >= 0:
            return self._next(best_cohort)
        return best_queue

    def shares(self, target: ClusterQueue) -> tuple[DRS, DRS]:
        """ComputeShares: the DRS of the preemptor's and the target's children of their common ancestor."""
        lca = next(a for a in target.path_to_root() if id(a) in self.ancestors)
        return dominant_resource_share(_almost(self.ctx.queue, lca)), dominant_resource_share(_almost(target, lca))

    def share_without(self, target: ClusterQueue, workload: Workload) -> DRS:
        """ComputeTargetShareAfterRemoval."""
        for fr, value in workload.usage.items():
            remove_usage(target, fr, value)
        share = self.shares(target)[1]
        for fr, value in workload.usage.items():
            add_usage(target, fr, value)
        return share


def _almost(queue: ClusterQueue, lca: Cohort) -> Node:
    node: Node = queue
    for ancestor in queue.path_to_root():
        if ancestor is lca:
            return node
        node = ancestor
    raise ValueError(f"cohort {lca.name} is not an ancestor of ClusterQueue {queue.name}")


_STRATEGIES: dict[str, Callable[[DRS, DRS, DRS], bool]] = {
    LESS_THAN_OR_EQUAL_TO_FINAL_SHARE: lambda preemptor_new, _old, target_new: compare(preemptor_new, target_new) <= 0,
    LESS_THAN_INITIAL_SHARE: lambda preemptor_new, target_old, _new: compare(preemptor_new, target_old) < 0,
}


def _candidates(ctx: _Context) -> list[Workload]:
    """findCandidates."""
    queue = ctx.queue
    within, reclaim = queue.preemption.within_cluster_queue, queue.preemption.reclaim_within_cohort
    found = []
    if within != NEVER:
        found += [w for w in queue.workloads.values() if satisfies_policy(ctx.preemptor, w, within) and w.uses(ctx.frs)]
    if queue.parent is not None and reclaim != NEVER:
        for other in queue.parent.root().subtree_queues():
            if other is queue or not any(other.borrowing(fr) for fr in ctx.frs):
                continue
            found += [w for w in other.workloads.values() if satisfies_policy(ctx.preemptor, w, reclaim) and w.uses(ctx.frs)]
    return sorted(found, key=lambda w: candidate_order(w, queue.name))


def _fits(ctx: _Context) -> bool:
    """workloadFitsForFairSharing: whether it fits, its own simulated usage set aside."""
    for fr, value in ctx.usage.items():
        remove_usage(ctx.queue, fr, value)
    fits = ctx.fits(True)
    for fr, value in ctx.usage.items():
        add_usage(ctx.queue, fr, value)
    return fits


def _take(ctx: _Context, targets: list[Target], workload: Workload, reason: str) -> bool:
    ctx.snapshot.remove_workload(workload)
    targets.append(Target(workload, reason))
    return _fits(ctx)


def _first_strategy(ctx: _Context, candidates: Sequence[Workload], strategy: str) -> tuple[bool, list[Target], list[Workload]]:
    ordering = _Ordering.of(ctx, candidates)
    targets: list[Target] = []
    retry: list[Workload] = []
    within_nominal = not any(ctx.queue.borrowing(fr) for fr in ctx.frs)
    for target in ordering.each():
        if target is ctx.queue:
            if _take(ctx, targets, ordering.pop(target), IN_CLUSTER_QUEUE):
                return True, targets, []
            continue
        if within_nominal:
            if _take(ctx, targets, ordering.pop(target), IN_COHORT_RECLAMATION):
                return True, targets, []
            continue
        preemptor_new, target_old = ordering.shares(target)
        if preemptor_new.share == float("inf") and target_old.share != float("inf"):
            while ordering.has(target):
                retry.append(ordering.pop(target))
            continue
        while ordering.has(target):
            workload = ordering.pop(target)
            if _STRATEGIES[strategy](preemptor_new, target_old, ordering.share_without(target, workload)):
                if _take(ctx, targets, workload, IN_COHORT_FAIR_SHARING):
                    return True, targets, []
                break
            retry.append(workload)
    return False, targets, retry


def _second_strategy(ctx: _Context, retry: Sequence[Workload], targets: list[Target]) -> bool:
    ordering = _Ordering.of(ctx, retry)
    for target in ordering.each():
        preemptor_new, target_old = ordering.shares(target)
        workload = ordering.pop(target)
        if _STRATEGIES[LESS_THAN_INITIAL_SHARE](preemptor_new, target_old, target_old) and _take(
            ctx, targets, workload, IN_COHORT_FAIR_SHARING
        ):
            return True
        ordering.pruned_queues.add(target.name)
    return False


def fair_targets(ctx: _Context) -> list[Target]:
    """fairPreemptions."""
    candidates = _candidates(ctx)
    if not candidates:
        return []
    strategies = ctx.snapshot.fair_sharing_strategies
    for fr, value in ctx.usage.items():
        add_usage(ctx.queue, fr, value)
    fits, targets, retry = _first_strategy(ctx, candidates, strategies[0])
    if not fits and len(strategies) > 1:
        fits = _second_strategy(ctx, retry, targets)
    for fr, value in ctx.usage.items():
        remove_usage(ctx.queue, fr, value)
    if not fits:
        _restore(ctx.snapshot, targets)
        return []
    targets = _fill_back(ctx, targets, True)
    _restore(ctx.snapshot, targets)
    return targets
