"""A workload's priority and who may preempt whom within a ClusterQueue (kubernetes-sigs/kueue v0.19.2).

- Priority: the value of the WorkloadPriorityClass its `kueue.x-k8s.io/priority-class` label names
  (pkg/util/priority/priority.go, GetPriorityFromWorkloadPriorityClass); without one, the pod's
  PriorityClass, and without that 0 (pkg/constants/constants.go, DefaultPriority).
  WorkloadPriorityClassDefaulting, which would label unlabelled jobs with a default class, is alpha and
  off (pkg/features/kube_features.go).
- `withinClusterQueue` (pkg/scheduler/preemption/common/preemption_policy.go, SatisfiesPreemptionPolicy):
  `LowerPriority` lets a pending workload preempt an admitted one of the same ClusterQueue only when its
  priority is strictly higher; `Never` never.
"""

from __future__ import annotations

from collections.abc import Mapping

from .constants import PRIORITY_CLASS_LABEL

DEFAULT_PRIORITY = 0


def workload_priority(labels: Mapping[str, str], classes: Mapping[str, int], pod_priority: int | None = None) -> int:
    """The priority Kueue gives a workload with these labels, given the WorkloadPriorityClasses by name."""
    name = labels.get(PRIORITY_CLASS_LABEL)
    if name is not None:
        if name not in classes:
            # The job reconciler cannot resolve the class and creates no Workload (jobframework/reconciler.go).
            raise ValueError(f"WorkloadPriorityClass {name!r} does not exist")
        return classes[name]
    return DEFAULT_PRIORITY if pod_priority is None else pod_priority


def preempts_within_queue(policy: str, preemptor: int, candidate: int) -> bool:
    """Whether a workload of priority `preemptor` may preempt one of `candidate` in its own ClusterQueue."""
    if policy == "LowerPriority":
        return preemptor > candidate
    if policy == "Never":
        return False
    raise ValueError(f"withinClusterQueue {policy!r} is not modelled")
