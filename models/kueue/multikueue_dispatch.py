"""MultiKueue's dispatch: to which worker clusters a workload is copied, when, which admission wins, and what
happens to the other copies (kubernetes-sigs/kueue v0.19.2).

The manager cluster holds the queues. A workload whose ClusterQueue carries the MultiKueue AdmissionCheck
first reserves quota on the manager; only then is it dispatched
(pkg/controller/workloaddispatcher/incrementaldispatcher.go@v0.19.2 `Reconcile` skips a workload without
QuotaReservation; pkg/controller/admissionchecks/multikueue/workload.go@v0.19.2 `reconcileGroup` step 2
deletes every remote copy of a workload that has none). The rules, each from those two files:

    who gets a copy   `nominateAndSynchronizeWorkers`: the nominated workers that are connected get a remote
                      Workload (a copy of the manager's, `cloneForCreate`); a nominated worker that is not
                      connected gets none (`ErrNoRemoteClientForNominatedCluster`), and a copy on a worker
                      no longer nominated is removed.
    AllAtOnce         (the default, apis/config/v1beta2/defaults.go@v0.19.2 `DispatcherName`): every
                      connected worker of the MultiKueueConfig, at once (`group.remotes`, built by
                      `readGroup` from `remoteClientsForAC`'s connected clients).
    Incremental       incrementaldispatcher.go `nominateWorkers`: round 0 at the manager's reservation
                      nominates the first `stepSize` workers not yet nominated, in MultiKueueConfig order
                      (feature gate MultiKueueIncrementalDispatcherRespectConfigOrder, Beta and on at
                      0.19; off, alphabetical); each later round adds the next `stepSize` once more than
                      `incrementalDispatcherRoundTimeout` (5 min, not configurable) has passed since the
                      round before (`now.Sub(roundStart) <= timeout` waits), until none is left
                      (`ErrNoMoreWorkers`). Nominated workers stay nominated. `stepSize` defaults to 3
                      (`DefaultStepSize`; `incrementalDispatcherConfig.stepSize`, feature gate
                      MultiKueueIncrementalDispatcherConfig, Beta and on at 0.19).
    who wins          workload.go step 6 `bestMatchByCondition(WorkloadAdmitted)`: the copy whose Admitted
                      condition turned True earliest (conditions keep whole seconds; among equal times Go's
                      map order decides, at random: here the first in MultiKueueConfig order). Its cluster
                      becomes the workload's `status.clusterName` (immutable, `syncAdmittingRemoteState`),
                      nomination stops (`ShouldSkipClusterNomination` once the check is Ready), and only
                      then is the job created on that worker (`SyncJob`): the losing copies never run pods.
    the other copies  step 6b: every copy on another worker is deleted (`RemoveRemoteObjects`).
    evicted on the    step 4: the check goes back to Retry; the manager evicts its workload, which releases
    worker            its quota, so step 2 deletes every remote copy; requeued and reserved again, it is
                      dispatched afresh from round 0 (it may land on another worker).
    worker lost       step 6a: while the admitting worker is unreachable the workload stays admitted;
                      past `workerLostTimeout` (default 15 min, defaults.go
                      `DefaultMultiKueueWorkerLostTimeout`) from when the loss was first seen the check goes
                      to Retry, and the workload is dispatched again as above. A lost worker gets no new
                      copies (it is not connected). Its copies are removed by the per-cluster garbage
                      collector once it reconnects (`gcInterval`, default 1 min).
    finished          step 3: the winner's Finished condition finishes the manager's workload; step 2
                      then deletes the remote copies.

MultiKueueOrchestratedPreemption (Alpha, off at 0.19, pkg/features/kube_features.go@v0.19.2) would gate
preemption on the workers one at a time; it is off, so every copy may preempt on its worker.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

ALL_AT_ONCE = "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"
INCREMENTAL = "kueue.x-k8s.io/multikueue-dispatcher-incremental"
DISPATCHERS = (ALL_AT_ONCE, INCREMENTAL)
DEFAULT_DISPATCHER = ALL_AT_ONCE
INCREMENTAL_ROUND_SECONDS = 300.0  # incrementalDispatcherRoundTimeout
DEFAULT_STEP_SIZE = 3  # DefaultStepSize
DEFAULT_WORKER_LOST_TIMEOUT_SECONDS = 900.0  # DefaultMultiKueueWorkerLostTimeout
DEFAULT_GC_INTERVAL_SECONDS = 60.0  # DefaultMultiKueueGCInterval


def round_workers(dispatcher: str, workers: Sequence[str], round_index: int,
                  step_size: int = DEFAULT_STEP_SIZE) -> tuple[str, ...]:
    """The workers newly nominated in round `round_index` (0: at the manager's quota reservation), in the
    MultiKueueConfig's order. AllAtOnce has one round with every worker; Incremental nominates `step_size`
    more each round, fewer in the last, none once all are nominated."""
    if dispatcher not in DISPATCHERS:
        raise ValueError(f"no MultiKueue dispatcher {dispatcher!r}: one of {', '.join(DISPATCHERS)}")
    if round_index < 0:
        raise ValueError(f"rounds count from 0, got {round_index}")
    if dispatcher == ALL_AT_ONCE:
        return tuple(workers) if round_index == 0 else ()
    if step_size < 1:
        raise ValueError(f"stepSize is at least 1, got {step_size}")
    return tuple(workers[round_index * step_size:(round_index + 1) * step_size])


def rounds(dispatcher: str, workers: int, step_size: int = DEFAULT_STEP_SIZE) -> int:
    """How many rounds nominate someone: 1 for AllAtOnce, ceil(workers / step_size) for Incremental."""
    if dispatcher == ALL_AT_ONCE or workers == 0:
        return 1
    return -(-workers // step_size)


def round_starts_after(dispatcher: str, round_index: int) -> float | None:
    """Seconds after the manager's reservation at which round `round_index` nominates (just after: the
    dispatcher waits while no more than the timeout has passed); None for a round AllAtOnce never has."""
    if dispatcher == ALL_AT_ONCE:
        return 0.0 if round_index == 0 else None
    return round_index * INCREMENTAL_ROUND_SECONDS


def copies(nominated: Sequence[str], connected: Sequence[str]) -> tuple[str, ...]:
    """The workers that hold a copy: the nominated ones that are connected, in nomination order."""
    reachable = set(connected)
    return tuple(worker for worker in nominated if worker in reachable)


def admitting_worker(admitted_at: Mapping[str, float], order: Sequence[str]) -> str | None:
    """The copy that wins: the earliest Admitted among the copies the manager sees; among equal times the
    first in MultiKueueConfig `order` (upstream: Go's map order). None while no copy is admitted."""
    if not admitted_at:
        return None
    rank = {worker: index for index, worker in enumerate(order)}
    return min(admitted_at, key=lambda worker: (admitted_at[worker], rank.get(worker, len(rank)), worker))


def removed_copies(holding: Sequence[str], winner: str) -> tuple[str, ...]:
    """The copies deleted once `winner` admits: all the others."""
    return tuple(worker for worker in holding if worker != winner)


def retry_after_lost(lost_since: float, now: float, timeout: float = DEFAULT_WORKER_LOST_TIMEOUT_SECONDS) -> float:
    """Seconds from `now` until a workload admitted on a worker lost since `lost_since` goes back to Retry
    (0 when the timeout has already passed)."""
    return max(0.0, timeout - (now - lost_since))
