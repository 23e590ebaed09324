"""The one seam between the simulator and Kueue's admission model (`models/kueue`).

The simulator hands Kueue workloads and takes back admissions; everything Kueue decides (quota,
cohorts, borrowing and lending, flavor assignment, preemption, fair sharing, queue order) happens
behind `Kueue`. The simulator owns what happens after: pods, nodes, waitForPodsReady and requeueing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class QueuedWorkload:
    """A Kueue Workload as the simulator submits it: one pod set of `pods` pods."""

    key: int
    cluster_queue: str  # the tenant's ClusterQueue
    priority: int  # the WorkloadPriorityClass value
    timestamp: float  # queue order: creation, or the last eviction (requeuingStrategy.timestamp Eviction)
    pods: int
    units_per_pod: int  # in the flavor's units (GPUs, slices, or MIG layouts)
    flavors: tuple[str, ...]  # flavors its node selector allows, in the ClusterQueue's order
    charge: tuple[tuple[str, int], ...] = ()  # a claim's per-pod charge (resource, devices); () : units_per_pod


@dataclass(frozen=True)
class Admission:
    """Kueue admitted `key`, its pods on `flavor`."""

    key: int
    flavor: str


@dataclass(frozen=True)
class Decisions:
    """What scheduling decided: workloads preempted (Kueue evicted them; their quota stays reserved, the preemptor
    pending, until the simulator has stopped them and calls `release_evicted`), and admissions, in order.
    `requeued`: workloads admitted and preempted within the same scheduling call (the simulator never saw them
    run): their quota is held the same way, and the simulator queues them again once it is released."""

    preempted: tuple[int, ...]
    admitted: tuple[Admission, ...]
    requeued: tuple[int, ...] = ()


class Kueue(Protocol):
    def submit(self, workload: QueuedWorkload) -> None:
        """Queue a workload (new, or requeued after an eviction)."""

    def release(self, key: int) -> None:
        """The workload finished or was deleted: its quota (or its place in the queue) is freed."""

    def evict(self, key: int) -> None:
        """Evict an admitted workload (waitForPodsReady, a node lost): its quota is freed; it is not requeued."""

    def release_evicted(self, key: int) -> None:
        """A preempted workload's job has stopped: its quota reservation is cleared; it is not requeued."""

    def schedule(self, now: float) -> Decisions:
        """Run scheduling cycles until every queue's head has been tried against the current quota."""

    def never_admits(self, workload: QueuedWorkload) -> bool:
        """No quota the workload's ClusterQueue could ever hold fits it: it stays pending for good."""

    def pending(self) -> dict[str, int]:
        """Pending workloads per ClusterQueue."""
