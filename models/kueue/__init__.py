"""Kueue's admission, as kubernetes-sigs/kueue v0.19.2 does it: one model for config checks, the tenant's
pre-flight check, the simulator and the tests.

Modules, each beside the upstream files it mirrors:
- `constants`: Kueue's label, annotation and gate names.
- `integrations`: framework names and the kinds they queue.
- `resources`: amounts in Kueue's integer units (cpu in millicores, the rest in units).
- `workload`: a job's PodSets and what each pod is charged (`pod_sets`, `pod_requests`), its priority
  (`workload_priority`), and the `Workload` the scheduler queues and admits.
- `cohort`: ClusterQueues and Cohorts with quotas and usage (`Snapshot.from_manifests`), and what a
  queue may take now (`ClusterQueue.available`) or at most (`potential_available`) through the tree,
  and who lends it what (`Snapshot.lenders`).
- `flavorassigner`: the fit rule alone (`fits_queue`, `best_case_admission`), which flavors a PodSet's
  node selector and required affinity allow (`flavor_matches`), and the full flavor search against a
  snapshot (`assign`: Fit / Preempt / NoFit and the borrowing level).
- `preemption`: which workloads are evicted so another fits (`Preemptor.targets`).
- `fair_sharing`: dominant resource shares, the fair-sharing entry order and preemption strategies.
- `scheduler`: one scheduling cycle (`schedule`, `apply`) and each queue's pending order
  (`PendingQueue`, StrictFIFO and BestEffortFIFO).
- `requeue`: the waitForPodsReady requeue backoff.

Driving it, as the simulator does:

    snapshot = Snapshot.from_manifests(cluster_queues, cohorts, fair_sharing=True)
    job = Workload("train-1", "team-a", (PodSet("main", 8, {"nvidia.com/gpu": 1}),), priority=100, timestamp=t)
    queues = {name: PendingQueue(q.queueing_strategy) for name, q in snapshot.cluster_queues.items()}
    queues["team-a"].push(job)                            # ClusterQueue team-a
    cycle = schedule(snapshot, heads(queues.values()))     # pure: the snapshot is unchanged
    apply(snapshot, cycle, now=t)                          # admitted entries now hold quota
    for entry in cycle.entries:                            # what was not admitted goes back
        if entry.status != ADMITTED:
            queues[entry.workload.cluster_queue].requeue(entry)
    for target in cycle.preempted:                         # evicted: release and requeue them
        snapshot.remove_workload(target.workload)

When quota is freed (a workload finishes or is evicted), Kueue retries what BestEffortFIFO set aside:
call `queue_inadmissible()` on the queues of that cohort tree. A workload evicted by waitForPodsReady
waits `requeue_wait_seconds(n, base, max)` before it is pushed again (clear its `usage` and `evicted`,
and with requeuingStrategy.timestamp Eviction give it the eviction time as `timestamp`).

The model is plain dataclasses and integers; a cycle copies nothing and undoes what it simulates.
Not modelled: topology-aware scheduling, partial admission (PodSet minCount), admission checks,
MultiKueue, elastic workload slices, admission fair sharing (LocalQueue usage), and the flavor search
resuming where the last cycle stopped. Node selectors and required node affinity are matched against the
flavors' node labels (`flavor_matches`).
"""

from __future__ import annotations

from .cohort import ClusterQueue, Cohort, Quota, Snapshot, lendable
from .flavorassigner import (
    FIT,
    NO_FIT,
    PREEMPT,
    Admission,
    Assignment,
    assign,
    best_case_admission,
    fits_queue,
    flavor_matches,
)
from .preemption import Preemptor, Target
from .requeue import requeue_wait_seconds
from .scheduler import (
    ADMITTED,
    NO_CANDIDATES,
    NO_FIT_STATUS,
    PREEMPTING,
    SKIPPED,
    Cycle,
    Entry,
    PendingQueue,
    apply,
    back_in_line,
    heads,
    keeps_head,
    queue_order,
    schedule,
)
from .workload import Inadmissible, PodSet, Tenancy, Workload, pod_requests, pod_sets, workload_priority

__all__ = [
    "ADMITTED",
    "FIT",
    "NO_CANDIDATES",
    "NO_FIT",
    "NO_FIT_STATUS",
    "PREEMPT",
    "PREEMPTING",
    "SKIPPED",
    "Admission",
    "Assignment",
    "ClusterQueue",
    "Cohort",
    "Cycle",
    "Entry",
    "Inadmissible",
    "PendingQueue",
    "PodSet",
    "Preemptor",
    "Quota",
    "Snapshot",
    "Target",
    "Tenancy",
    "Workload",
    "apply",
    "assign",
    "back_in_line",
    "best_case_admission",
    "fits_queue",
    "flavor_matches",
    "heads",
    "keeps_head",
    "lendable",
    "pod_requests",
    "pod_sets",
    "queue_order",
    "requeue_wait_seconds",
    "schedule",
    "workload_priority",
]
