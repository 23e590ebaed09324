"""The Kueue seam's one implementation: the simulator's workloads through `models.kueue`.

The ClusterQueues and Cohorts are the very manifests the render declares (config/kueue_objects.py's
builders `cluster_queue` and `cohorts`, fed the same TenantPlans), so the simulator admits with the
quotas, preemption policies, fair-sharing weights and queueing strategy Kueue would get. Without borrowing
(the static baseline, `--without borrowing`) they are the same ClusterQueues with every borrowingLimit and
lendingLimit set to 0.

A pod requests its flavor's units as Kubernetes resources (`FlavorPlan.resources_per_unit`); cpu and
memory are not requested (the simulator models GPUs only), so only the GPU quotas bind.
"""

from __future__ import annotations

import copy
import re
from bisect import bisect_left
from collections.abc import Callable, Mapping
from typing import Any

from config import PlatformConfig
from config.fair_share import CPU_FLAVOR, cpu_flavor_labels
from config.kueue_objects import cluster_queue, cohorts
from models.kueue import (
    ADMITTED,
    NO_CANDIDATES,
    NO_FIT_STATUS,
    PREEMPTING,
    Assignment,
    Inadmissible,
    PodSet,
    Snapshot,
    Workload,
    apply,
    back_in_line,
    best_case_admission,
    keeps_head,
    queue_order,
    schedule,
)
from models.kueue.cohort import ANY

from .queueing import Admission, Decisions, QueuedWorkload


class ModelKueue:
    """Pending queues per ClusterQueue and the snapshot of admitted usage, driven one cycle at a time."""

    def __init__(self, config: PlatformConfig, without_borrowing: bool):
        manifests = [cluster_queue(tenant) for tenant in config.tenants]
        if without_borrowing:
            manifests = [_without_sharing(manifest) for manifest in manifests]
        self.manifests = {manifest["metadata"]["name"]: manifest for manifest in manifests}
        self._never: dict[tuple[object, ...], bool] = {}
        # The flavors' node labels, against which Kueue matches each workload's node affinity.
        self.node_labels = {CPU_FLAVOR: cpu_flavor_labels(), **{f.name: dict(f.node_labels) for f in config.flavors}}
        flavors = [{"metadata": {"name": name}, "spec": {"nodeLabels": labels}} for name, labels in self.node_labels.items()]
        self.snapshot = Snapshot.from_manifests(manifests, cohorts(config.queueing), fair_sharing=True, flavors=flavors)
        self.queues = {name: Pending(queue.queueing_strategy) for name, queue in self.snapshot.cluster_queues.items()}
        self.units = {flavor.name: dict(flavor.resources_per_unit) for flavor in config.flavors}
        self.workloads: dict[int, Workload] = {}
        self.admitted: set[int] = set()
        self.evicting: set[int] = set()  # preempted, their quota held until the simulator has stopped them
        # A preemptor whose targets are all being evicted, by the usage version at which a cycle found exactly that:
        # at the same version it finds the same again, so a cycle of it and heads known NoFit changes nothing (as
        # long as no head holds back quota while pending: every queue reclaims with `Any`).
        self.settled: dict[Workload, int] = {}
        self.nothing_reserved = all(q.preemption.reclaim_within_cohort == ANY for q in self.snapshot.cluster_queues.values())
        # Usage changes so far, and the NoFit found per workload shape at a given count: a workload of the
        # same shape would find the same while usage is unchanged (the model is deterministic), so the flavor
        # search is not run again for it. Only the simulator's speed depends on this.
        self.version = 0
        self.no_fit: dict[Shape, tuple[int, Assignment]] = {}
        self.shapes: dict[Workload, Shape] = {}

    def submit(self, queued: QueuedWorkload) -> None:
        per_pod = dict(queued.charge) or _units(self.units, queued.flavors, queued.units_per_pod)
        workload = Workload(
            str(queued.key),
            queued.cluster_queue,
            (PodSet("main", queued.pods, per_pod, node_affinity=self._affinity(queued.flavors)),),
            priority=queued.priority,
            timestamp=queued.timestamp,
        )
        self.workloads[queued.key] = workload
        # Everything the flavor search reads of a workload follows from these fields.
        shape = (queued.cluster_queue, queued.priority, queued.flavors, queued.pods, queued.units_per_pod, *queued.charge)
        self.shapes[workload] = shape
        self.queues[queued.cluster_queue].push(workload, shape)

    def never_admits(self, queued: QueuedWorkload) -> bool:
        """No flavor of the workload's ClusterQueue can hold it even with the whole borrowingLimit lent
        (models/kueue best_case_admission): Kueue leaves it pending for good."""
        shape = (queued.cluster_queue, queued.pods, queued.units_per_pod, queued.flavors, *queued.charge)
        known = self._never.get(shape)
        if known is None:
            per_pod = dict(queued.charge) or _units(self.units, queued.flavors, queued.units_per_pod)
            pod_set = PodSet("main", queued.pods, per_pod, node_affinity=self._affinity(queued.flavors))
            try:
                best_case_admission([pod_set], self.manifests[queued.cluster_queue], self.node_labels)
                known = False
            except Inadmissible:
                known = True
            self._never[shape] = known
        return known

    def _affinity(self, flavors: tuple[str, ...]) -> tuple[dict[str, Any], ...]:
        """A required node affinity whose terms (ORed) each select one of `flavors` by all its node labels: the
        pods' constraint, which Kueue's flavor assigner matches against every flavor (models/kueue flavor_matches)."""
        return tuple(
            {"matchExpressions": [{"key": k, "operator": "In", "values": [v]} for k, v in sorted(self.node_labels[f].items())]}
            for f in flavors
        )

    def release(self, key: int) -> None:
        self.evicting.discard(key)
        workload = self.workloads.pop(key, None)
        if workload is None:
            return
        self.settled.pop(workload, None)
        del self.shapes[workload]
        if key in self.admitted:
            self.admitted.discard(key)
            self.snapshot.remove_workload(workload)
            self.version += 1
            self._quota_changed(workload.cluster_queue)
        else:
            self.queues[workload.cluster_queue].remove(workload)

    def release_evicted(self, key: int) -> None:
        """The preempted workload's job has stopped: its reservation is cleared and its quota freed."""
        self.evict(key)

    def evict(self, key: int) -> None:
        self.evicting.discard(key)
        workload = self.workloads.pop(key)
        self.settled.pop(workload, None)
        del self.shapes[workload]
        self.admitted.discard(key)
        self.snapshot.remove_workload(workload)
        self.version += 1
        self._quota_changed(workload.cluster_queue)

    def _quota_changed(self, cluster_queue: str) -> None:
        """QueueInadmissibleWorkloads for every queue of the cohort tree whose quota just freed up."""
        queue = self.snapshot.cluster_queues[cluster_queue]
        if queue.parent is None:
            self.queues[cluster_queue].queue_inadmissible()
            return
        for member in queue.parent.root().subtree_queues():
            self.queues[member.name].queue_inadmissible()

    def schedule(self, now: float) -> Decisions:
        """Kueue's scheduler loop: a cycle over the queues' heads, again and again, until every queue's
        pending workloads are admitted or set aside as inadmissible (BestEffortFIFO), every StrictFIFO head has
        been tried against the current usage, or a cycle changes nothing.

        A head whose shape the flavor search found NoFit at the current usage (or Preempt with no one to
        preempt) joins its cycle with that assignment, without a search: it still takes its place in the
        cycle's order, as in Kueue. A cycle whose heads are all such ones changes nothing and is not run, and
        a run of such cycles is taken in one step (`Pending.known_run`, `Pending.skip`), so every cycle that
        is run has the heads the loop would reach one iteration at a time.

        A preemption frees nothing within the call: Kueue's scheduler only marks its targets evicted, and their
        quota stays reserved, the preemptor pending at its queue's head, until the job is stopped and its
        reservation cleared, workload updates that come after the cycle
        (pkg/controller/jobframework/reconciler.go@v0.19.2 stops an evicted job and clears the reservation once the
        job is no longer active; pkg/controller/core/workload_controller.go@v0.19.2 then requeues it, with a backoff
        only after a waitForPodsReady or AdmissionCheck eviction, none after a preemption). The simulator does both
        and calls `release_evicted`. A target admitted earlier in the same call (the simulator never saw it run)
        is reported as `requeued` rather than preempted. Freed within the call instead, two queues whose fair
        shares tie can take a GPU from each other for ever within one instant (Kueue's strategies allow it:
        LessThanOrEqualToFinalShare admits a tie, LessThanInitialShare takes the last workload), where upstream
        each round costs the eviction's round trips."""
        admitted: dict[int, Admission] = {}
        preempted: list[int] = []
        requeued: list[int] = []
        queues = list(self.queues.values())
        while True:
            waiting = [queue for queue in queues if queue.sticky_in_line()]
            settled = [queue for queue in waiting if self._settled(queue)]
            if len(settled) == len(waiting):
                # A settled preemptor keeps its queue's head and changes nothing: its queue never ends a run.
                moving = [queue for queue in queues if queue not in settled]
                runs = [run for queue in moving if (run := queue.known_run(self._known, self.shapes.__getitem__)) is not None]
                if not runs:
                    for queue in moving:
                        queue.skip(len(queue))
                    break
                run = min(runs)
                if run:
                    for queue in moving:
                        queue.skip(run)
            nominated = [(queue, workload) for queue in queues if (workload := queue.head()) is not None]
            if not nominated:
                break
            known = {id(workload): found[1] for _, workload in nominated
                     if (found := self.no_fit.get(self.shapes[workload])) is not None and found[0] == self.version}
            still = [queue for queue, workload in nominated if queue in settled and queue.sticky is workload]
            if len(known) + len(still) == len(nominated):
                # A cycle of heads that all stay pending without targets changes nothing: each is requeued, and a
                # settled preemptor stays its queue's head. Only settled preemptors left: the loop is done.
                if not known:
                    break
                for queue, workload in nominated:
                    if id(workload) in known:
                        queue.requeue(workload, NO_FIT_STATUS)
                continue
            changed = False
            version = self.version
            cycle = schedule(self.snapshot, [workload for _, workload in nominated], known)
            apply(self.snapshot, cycle, now)
            for entry in cycle.entries:
                key = int(entry.workload.name)
                queue = self.queues[entry.workload.cluster_queue]
                if entry.status == ADMITTED:
                    self.settled.pop(entry.workload, None)
                    queue.remove(entry.workload)
                    self.admitted.add(key)
                    self.version += 1
                    admitted[key] = Admission(key, next(iter(entry.workload.flavors[0].values())))
                    changed = True
                else:
                    if entry.status in (NO_FIT_STATUS, NO_CANDIDATES):
                        self.no_fit[self.shapes[entry.workload]] = (version, entry.assignment)
                    queue.requeue(entry.workload, entry.status)
                    changed = changed or not entry.nominated
            for target in cycle.preempted:
                victim = int(target.workload.name)
                if victim in self.evicting:
                    continue  # already being evicted: IssuePreemptions skips a workload evicted before
                self.evicting.add(victim)
                self.version += 1  # candidates being evicted come first in every later search
                if victim in admitted:
                    del admitted[victim]
                    requeued.append(victim)
                else:
                    preempted.append(victim)
            if self.nothing_reserved:
                # Found at `version`: settled only while the usage stays there (not if this cycle changed it).
                for entry in cycle.entries:
                    if entry.status == PREEMPTING:
                        self.settled[entry.workload] = version
            if not changed:
                break
        return Decisions(tuple(preempted), tuple(admitted.values()), tuple(requeued))

    def _settled(self, queue: Pending) -> bool:
        """The queue's head is a preemptor found at this very usage waiting for targets already being evicted."""
        return self.nothing_reserved and queue.sticky is not None and self.settled.get(queue.sticky) == self.version

    def _known(self, shape: Shape) -> bool:
        """The flavor search found NoFit for this shape at the current usage."""
        known = self.no_fit.get(shape)
        return known is not None and known[0] == self.version

    def pending(self) -> dict[str, int]:
        return {name: len(queue) for name, queue in self.queues.items() if len(queue)}


Shape = tuple[object, ...]  # what the flavor search reads of a workload: ClusterQueue, priority, flavors, pods, units
_IN_LINE = re.compile(rb"[^\x00]")
_OVERFLOW = 255  # the id every shape of a queue past its 254th shares: never skipped in bulk, looked at one by one


def _order_key(item: tuple[int, float, str, Workload]) -> tuple[int, float, str]:
    """A queue entry's place without its workload: names are unique among a queue's live workloads, and a
    lookup of a workload no longer queued (deleted, its key submitted again) must find nothing, not compare
    two workload objects."""
    return item[0], item[1], item[2]


class Pending:
    """One ClusterQueue's pending workloads, in the order and under the requeue rules of models/kueue's PendingQueue
    (`queue_order`, `back_in_line`, `keeps_head`; pkg/cache/queue/cluster_queue.go), laid out so that a run of
    heads the scheduler sets aside one by one is set aside in one step.

    Every pending workload sits in one list sorted by `queue_order`; beside it, a byte per workload: its shape's
    id (`ids`) and its tag (`tags`), the shape's id while in line and 0 while set aside as inadmissible. The
    head is the first workload in line; putting every set-aside workload back in line (QueueInadmissibleWorkloads)
    copies `ids` over `tags`; the first workload in line of a shape is a byte search.
    """

    def __init__(self, strategy: str):
        self.strategy = strategy
        self.items: list[tuple[int, float, str, Workload]] = []
        self.ids = bytearray()
        self.tags = bytearray()
        self.lo = 0  # every workload before `lo` is set aside
        self.in_line = 0
        self.sticky: Workload | None = None  # a preemptor waiting for its targets to go
        self.shape_ids: dict[Shape, int] = {}
        self.shapes: list[Shape] = [()]  # by id; 0 tags a set-aside workload
        # A head known NoFit goes back in line under StrictFIFO and stays the head.
        self.keeps_known_head = back_in_line(strategy, NO_FIT_STATUS)

    def __len__(self) -> int:
        return len(self.items)

    def _id(self, shape: Shape) -> int:
        known = self.shape_ids.get(shape)
        if known is not None:
            return known
        if len(self.shapes) == _OVERFLOW:
            return _OVERFLOW
        self.shape_ids[shape] = len(self.shapes)
        self.shapes.append(shape)
        return self.shape_ids[shape]

    def _index(self, workload: Workload) -> int | None:
        index = bisect_left(self.items, queue_order(workload)[:3], key=_order_key)
        if index < len(self.items) and self.items[index][3] is workload:
            return index
        return None

    def push(self, workload: Workload, shape: Shape) -> None:
        """In line at its place in the queue's order."""
        item = queue_order(workload)
        index = bisect_left(self.items, item[:3], key=_order_key)
        shape_id = self._id(shape)
        self.items.insert(index, item)
        self.ids.insert(index, shape_id)
        self.tags.insert(index, shape_id)
        self.in_line += 1
        self.lo = min(self.lo, index)

    def remove(self, workload: Workload) -> None:
        """Out of the queue (admitted, or deleted while pending)."""
        if self.sticky is workload:
            self.sticky = None  # a deleted preemptor no longer holds its queue's head
        index = self._index(workload)
        if index is None:
            return
        if self.tags[index]:
            self.in_line -= 1
        del self.items[index], self.ids[index], self.tags[index]
        if index < self.lo:
            self.lo -= 1

    def sticky_in_line(self) -> bool:
        if self.sticky is None:
            return False
        index = self._index(self.sticky)
        return index is not None and self.tags[index] != 0

    def head(self) -> Workload | None:
        """The workload the next cycle nominates (PendingQueue.pop_head's), left in place until `requeue` or `remove`."""
        if not self.in_line:
            return None
        if self.sticky_in_line():
            return self.sticky
        found = _IN_LINE.search(self.tags, self.lo)
        assert found is not None
        self.lo = found.start()
        return self.items[self.lo][3]

    def requeue(self, workload: Workload, status: str) -> None:
        """PendingQueue.requeue of the head `workload` a cycle left pending with `status`."""
        self.sticky = workload if keeps_head(self.strategy, status) else None
        if not back_in_line(self.strategy, status):
            index = self._index(workload)
            if index is not None and self.tags[index]:
                self.tags[index] = 0
                self.in_line -= 1

    def queue_inadmissible(self) -> None:
        """QueueInadmissibleWorkloads: every set-aside workload back in line."""
        self.tags[:] = self.ids
        self.lo = 0
        self.in_line = len(self.items)

    def known_run(self, known: Callable[[Shape], bool], shape_of: Callable[[Workload], Shape]) -> int | None:
        """How many of the coming heads in a row are of shapes `known` NoFit, before the first that is not (None:
        all of them, or none in line). Under StrictFIFO a known head stays the head: 0 or None."""
        if not self.in_line:
            return None
        if self.keeps_known_head:
            head = self.head()
            assert head is not None
            return None if known(shape_of(head)) else 0
        first = len(self.tags)
        for shape_id in range(1, len(self.shapes)):
            if not known(self.shapes[shape_id]):
                at = self.tags.find(shape_id, self.lo, first)
                if at >= 0:
                    first = at
        at = self.tags.find(_OVERFLOW, self.lo, first)
        if at >= 0:
            first = at
        if first == len(self.tags):
            return None
        return first - self.lo - self.tags.count(0, self.lo, first)

    def skip(self, count: int) -> None:
        """`count` heads known NoFit requeued one after the other (fewer when fewer are in line): set aside, or
        under StrictFIFO the same head back in line each time."""
        count = min(count, self.in_line)
        if not count:
            return
        self.sticky = None
        if self.keeps_known_head:
            return
        end = self.lo + count
        gaps = self.tags.count(0, self.lo, end)
        while gaps:
            start, end = end, end + gaps
            gaps = self.tags.count(0, start, end)
        self.tags[self.lo:end] = bytes(end - self.lo)
        self.lo = end
        self.in_line -= count


def _units(units: Mapping[str, Mapping[str, int]], flavors: tuple[str, ...], count: int) -> dict[str, int]:
    """A pod's request: `count` units of its flavors' kind (the flavors it may use share one kind)."""
    per_unit = units[flavors[0]]
    return {resource: amount * count for resource, amount in per_unit.items()}


def _without_sharing(manifest: dict[str, Any]) -> dict[str, Any]:
    """A ClusterQueue without borrowing: nominal quota only, nothing borrowed or lent."""
    static = copy.deepcopy(manifest)
    for group in static["spec"]["resourceGroups"]:
        for flavor in group["flavors"]:
            for resource in flavor["resources"]:
                resource["borrowingLimit"] = "0"
                resource["lendingLimit"] = "0"
    return static


def kueue_for(config: PlatformConfig, without_borrowing: bool) -> ModelKueue:
    return ModelKueue(config, without_borrowing)
