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
from collections.abc import Mapping
from typing import Any

from config import PlatformConfig
from config.fair_share import CPU_FLAVOR, cpu_flavor_labels
from config.kueue_objects import cluster_queue, cohorts
from models.kueue import (
    ADMITTED,
    NO_CANDIDATES,
    NO_FIT_STATUS,
    Assignment,
    Inadmissible,
    PendingQueue,
    PodSet,
    Snapshot,
    Workload,
    apply,
    best_case_admission,
    heads,
    schedule,
)

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
        self.queues = {name: PendingQueue(queue.queueing_strategy) for name, queue in self.snapshot.cluster_queues.items()}
        self.units = {flavor.name: dict(flavor.resources_per_unit) for flavor in config.flavors}
        self.workloads: dict[int, Workload] = {}
        self.admitted: set[int] = set()
        # Usage changes so far, and the NoFit found per workload shape at a given count: a workload of the
        # same shape would find the same while usage is unchanged (the model is deterministic), so it is
        # set aside without running the flavor search again. Only the simulator's speed depends on this.
        self.version = 0
        self.no_fit: dict[tuple[object, ...], tuple[int, Assignment]] = {}
        self.shapes: dict[Workload, tuple[object, ...]] = {}

    def submit(self, queued: QueuedWorkload) -> None:
        per_pod = _units(self.units, queued.flavors, queued.units_per_pod)
        workload = Workload(
            str(queued.key),
            queued.cluster_queue,
            (PodSet("main", queued.pods, per_pod, node_affinity=self._affinity(queued.flavors)),),
            priority=queued.priority,
            timestamp=queued.timestamp,
        )
        self.workloads[queued.key] = workload
        # Everything the flavor search reads of a workload follows from these fields.
        self.shapes[workload] = (queued.cluster_queue, queued.priority, queued.flavors, queued.pods, queued.units_per_pod)
        self.queues[queued.cluster_queue].push(workload)

    def never_admits(self, queued: QueuedWorkload) -> bool:
        """No flavor of the workload's ClusterQueue can hold it even with the whole borrowingLimit lent
        (models/kueue best_case_admission): Kueue leaves it pending for good."""
        shape = (queued.cluster_queue, queued.pods, queued.units_per_pod, queued.flavors)
        known = self._never.get(shape)
        if known is None:
            per_pod = _units(self.units, queued.flavors, queued.units_per_pod)
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
        workload = self.workloads.pop(key, None)
        if workload is None:
            return
        del self.shapes[workload]
        if key in self.admitted:
            self.admitted.discard(key)
            self.snapshot.remove_workload(workload)
            self.version += 1
            self._quota_changed(workload.cluster_queue)
        else:
            self.queues[workload.cluster_queue].remove(workload)

    def evict(self, key: int) -> None:
        workload = self.workloads.pop(key)
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
        pending workloads are admitted or set aside as inadmissible (BestEffortFIFO) or a cycle changes nothing."""
        admitted: dict[int, Admission] = {}
        preempted: list[int] = []
        while True:
            nominated = heads(self.queues.values())
            if not nominated:
                break
            changed = False
            tried = []
            for workload in nominated:
                known = self.no_fit.get(self.shapes[workload])
                if known is not None and known[0] == self.version:
                    self.queues[workload.cluster_queue].requeue_no_fit(workload)
                    changed = True
                else:
                    tried.append(workload)
            if not tried:
                continue
            version = self.version
            cycle = schedule(self.snapshot, tried)
            apply(self.snapshot, cycle, now)
            for entry in cycle.entries:
                key = int(entry.workload.name)
                if entry.status == ADMITTED:
                    self.admitted.add(key)
                    self.version += 1
                    admitted[key] = Admission(key, next(iter(entry.workload.flavors[0].values())))
                    changed = True
                else:
                    if entry.status in (NO_FIT_STATUS, NO_CANDIDATES):
                        self.no_fit[self.shapes[entry.workload]] = (version, entry.assignment)
                    self.queues[entry.workload.cluster_queue].requeue(entry)
                    changed = changed or not entry.nominated
            for target in cycle.preempted:
                victim = int(target.workload.name)
                if victim in admitted:
                    # Admitted and preempted within this call: the simulator never saw it run; it waits again.
                    del admitted[victim]
                    self._requeue_evicted(victim, now)
                    changed = True
                elif victim in self.admitted:
                    self.evict(victim)
                    preempted.append(victim)
                    changed = True
            if not changed:
                break
        return Decisions(tuple(preempted), tuple(admitted.values()))

    def _requeue_evicted(self, key: int, now: float) -> None:
        workload = self.workloads[key]
        self.admitted.discard(key)
        self.snapshot.remove_workload(workload)
        self.version += 1
        self._quota_changed(workload.cluster_queue)
        workload.evicted = False
        workload.timestamp = now
        self.queues[workload.cluster_queue].push(workload)

    def pending(self) -> dict[str, int]:
        return {name: len(queue) for name, queue in self.queues.items() if len(queue)}


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
