"""Which flavor of a ClusterQueue a workload's PodSets get (kubernetes-sigs/kueue v0.19.2
pkg/scheduler/flavorassigner/flavorassigner.go).

The rule at its simplest, which config checks and the tenant's pre-flight check use: with the default
quotaCheckStrategy BlockUndeclared a resource the queue does not cover is inadmissible
(filterRequestedResources, "resource %s unavailable in ClusterQueue"); the flavors of the queue's
resource group are tried in order, and all of a PodSet's pods take the first flavor where every
charged resource fits the most the queue can ever hold there, nominal quota plus borrowingLimit
(fitsResourceQuota: `val > PotentialAvailable` is NoFit; flavorFungibility whenCanBorrow defaults to
MayStopSearch, apis/kueue/v1beta2/clusterqueue_types.go, so a flavor that fits by borrowing ends the
search). Borrowing needs idle quota in the cohort; admission within nominal quota is what the tenant
is guaranteed.

`models.kueue.cohort` and `models.kueue.scheduler` apply the same search to a cohort's live usage.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .resources import resource_value
from .workload import Inadmissible, PodSet


def queue_ceiling(nominal: int, borrowing_limit: int | None) -> int | None:
    """The most a ClusterQueue can hold of one flavor and resource: nominal plus borrowingLimit.

    None: no borrowingLimit, so only the cohort bounds it (potentialAvailable in
    pkg/cache/scheduler/resource_node.go caps by `SubtreeQuota + BorrowingLimit` only when one is set).
    """
    return None if borrowing_limit is None else nominal + borrowing_limit


def fits_queue(amount: int, nominal: int, borrowing_limit: int | None) -> bool:
    """`amount` fits the queue's nominal quota plus its borrowingLimit (unbounded without one)."""
    ceiling = queue_ceiling(nominal, borrowing_limit)
    return ceiling is None or amount <= ceiling


@dataclass(frozen=True)
class Admission:
    flavors: tuple[str, ...]  # per PodSet
    borrowing: bool  # needs idle quota of the cohort; False: within the tenant's nominal quota


def _quota(resource: str, entry: Mapping[str, Any], key: str) -> int | None:
    return None if key not in entry else resource_value(resource, entry[key])


def best_case_admission(sets: Sequence[PodSet], cluster_queue: Mapping[str, Any]) -> Admission:
    """The flavor each PodSet gets when the cohort can lend the queue its whole borrowingLimit, or
    Inadmissible when no flavor can ever hold it."""
    [group] = cluster_queue["spec"]["resourceGroups"]
    name = cluster_queue["metadata"]["name"]
    used: dict[tuple[str, str], int] = {}
    flavors, borrowing = [], False
    for pod_set in sets:
        total = pod_set.total()
        undeclared = sorted(set(total) - set(group["coveredResources"]))
        if undeclared:
            raise Inadmissible(f"resources not covered by ClusterQueue {name}: {undeclared}")
        for flavor in group["flavors"]:
            quotas = {r["name"]: r for r in flavor["resources"]}
            nominal = {resource: _quota(resource, r, "nominalQuota") or 0 for resource, r in quotas.items()}
            after = {resource: used.get((flavor["name"], resource), 0) + amount for resource, amount in total.items()}
            if all(fits_queue(amount, nominal[r], _quota(r, quotas[r], "borrowingLimit")) for r, amount in after.items()):
                flavors.append(flavor["name"])
                borrowing = borrowing or any(amount > nominal[resource] for resource, amount in after.items())
                used.update({(flavor["name"], resource): amount for resource, amount in after.items()})
                break
        else:
            raise Inadmissible(f"no flavor of ClusterQueue {name} holds PodSet {pod_set.name}: {total}")
    return Admission(tuple(flavors), borrowing)
