"""kube-scheduler's priority preemption, for one pod that fits on no node as things stand.

Rules from kubernetes/kubernetes at the cluster's version (1.35),
pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go:
- `PodEligibleToPreemptOthers`: a pod whose `preemptionPolicy` is `Never` preempts nothing; it waits
  in the queue until room appears.
- `SelectVictimsOnNode`: only pods of strictly lower priority than the preemptor are candidates
  (`corev1helpers.PodPriority(p) < podPriority`). All of them are removed; if the preemptor still does
  not fit the node is no candidate. Then they are "reprieved" (put back) one by one, highest priority
  first, as long as the preemptor still fits: the victims are the ones that could not be put back.
- pkg/scheduler/framework/preemption/preemption.go `pickOneNodeForPreemption`: among candidate nodes,
  the one whose highest-priority victim is lowest, then the smallest sum of victim priorities, then the
  fewest victims (PodDisruptionBudget violations and start times, which come first and last upstream,
  are left out: placeholders carry no budget).

A pod's priority is its PriorityClass's value, 0 without one (no class here is `globalDefault`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

NEVER = "Never"
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"


@dataclass(frozen=True)
class Pod:
    name: str
    priority: int
    requests: Mapping[str, int]
    preemption_policy: str = PREEMPT_LOWER_PRIORITY


@dataclass(frozen=True)
class Node:
    name: str
    allocatable: Mapping[str, int]
    pods: Sequence[Pod] = field(default_factory=tuple)


def eligible_to_preempt(pod: Pod) -> bool:
    """`PodEligibleToPreemptOthers`, the preemption-policy half."""
    return pod.preemption_policy != NEVER


def fits(pod: Pod, allocatable: Mapping[str, int], running: Sequence[Pod]) -> bool:
    for resource, amount in pod.requests.items():
        used = sum(other.requests.get(resource, 0) for other in running)
        if used + amount > allocatable.get(resource, 0):
            return False
    return True


def victims_on_node(preemptor: Pod, node: Node) -> list[Pod] | None:
    """`SelectVictimsOnNode`: the pods to evict so `preemptor` fits, or None when evicting cannot make it fit."""
    lower = [pod for pod in node.pods if pod.priority < preemptor.priority]
    kept = [pod for pod in node.pods if pod.priority >= preemptor.priority]
    if not fits(preemptor, node.allocatable, kept):
        return None
    victims = []
    # Reprieve the most important first (pkg/scheduler/util MoreImportantPod: higher priority, then the
    # earlier start): `node.pods` are in start order, and the sort is stable.
    for pod in sorted(lower, key=lambda p: -p.priority):
        if fits(preemptor, node.allocatable, [*kept, pod]):
            kept.append(pod)
        else:
            victims.append(pod)
    return victims


def preempt(preemptor: Pod, nodes: Sequence[Node]) -> tuple[str, list[Pod]] | None:
    """The node the preemptor is nominated to and the pods evicted for it; None when it only waits.

    A pod that fits somewhere already is scheduled, not preempting: callers ask only after filtering fails.
    """
    if not eligible_to_preempt(preemptor):
        return None
    candidates = []
    for node in nodes:
        victims = victims_on_node(preemptor, node)
        if victims is not None:
            candidates.append((node, victims))
    if not candidates:
        return None
    node, victims = min(
        candidates,
        key=lambda c: (
            max((v.priority for v in c[1]), default=-(2**31)),
            sum(v.priority for v in c[1]),
            len(c[1]),
        ),
    )
    return node.name, victims
