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

Before quota, a flavor must suit the PodSet's pods (checkFlavorForPodSets): its NoSchedule/NoExecute
nodeTaints tolerated, and its nodeLabels matching the pods' nodeSelector and required node affinity
restricted to the label keys that flavor sets (flavorSelector, with `sets.KeySet(flavor.Spec.NodeLabels)`;
a key only other flavors set says nothing about this one). A flavor that does not match is skipped with
"flavor <name> doesn't match node affinity" (`flavor_matches`).

`assign` runs the whole search against a cohort's live usage (`models.kueue.cohort.Snapshot`): per
PodSet and resource group, each flavor in order gets a mode per resource (fitsResourceQuota: Fit
within `available`, NoFit beyond `potentialAvailable`, else Preempt or NoFit as preemption could
free it) and a borrowing level (how high in the cohort tree it borrows); the best flavor by
isPreferred is kept, and flavorFungibility (whenCanBorrow, whenCanPreempt, preference) says whether
a flavor ends the search.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .cohort import (
    NEVER,
    PREEMPTION_OVER_BORROWING,
    TRY_NEXT_FLAVOR,
    ClusterQueue,
    FlavorResource,
    Snapshot,
    local_available,
)
from .resources import resource_value
from .workload import Inadmissible, PodSet, Workload


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


def flavor_matches(pod_set: PodSet, node_labels: Mapping[str, str]) -> bool:
    """flavorSelector, then RequiredNodeAffinity.Match against a node carrying the flavor's nodeLabels.

    Only the keys the flavor's nodeLabels set are kept: of the nodeSelector, its pairs with those keys;
    of the required node affinity, each term's matchExpressions with those keys (matchFields never), and
    a term left empty makes the affinity match any flavor, its terms being ORed
    (kubernetes-sigs/kueue v0.19.2 pkg/scheduler/flavorassigner/flavorassigner.go, flavorSelector;
    k8s.io/component-helpers/scheduling/corev1/nodeaffinity: the nodeSelector's pairs and then any one
    term whose expressions all hold).
    """
    if any(node_labels.get(key, value) != value for key, value in pod_set.node_selector.items()):
        return False
    terms = [[e for e in term.get("matchExpressions") or () if e["key"] in node_labels] for term in pod_set.node_affinity]
    # An emptied term holds vacuously, which is Kueue's "matches any flavor".
    return not terms or any(all(_requirement_holds(e, node_labels[e["key"]]) for e in term) for term in terms)


def _requirement_holds(expression: Mapping[str, Any], value: str) -> bool:
    """A NodeSelectorRequirement on a label the node has (k8s.io/apimachinery pkg/labels/selector.go
    Requirement.Matches: Gt and Lt compare integers, and a label that is not one matches neither)."""
    operator, values = expression["operator"], list(expression.get("values") or ())
    if operator in ("Gt", "Lt"):
        try:
            have, bound = int(value), int(values[0])
        except ValueError:
            return False
        return have > bound if operator == "Gt" else have < bound
    return {"In": value in values, "NotIn": value not in values, "Exists": True, "DoesNotExist": False}[operator]


def mismatch_reason(flavor: str) -> str:
    """checkFlavorForPodSets' reason for a flavor whose node labels the pods' selector rules out."""
    return f"flavor {flavor} doesn't match node affinity"


def best_case_admission(
    sets: Sequence[PodSet], cluster_queue: Mapping[str, Any], node_labels: Mapping[str, Mapping[str, str]] | None = None
) -> Admission:
    """The flavor each PodSet gets when the cohort can lend the queue its whole borrowingLimit, or
    Inadmissible when no flavor can ever hold it.

    `node_labels`: each ResourceFlavor's spec.nodeLabels by name; a flavor missing from it sets none, so no
    selector rules it out.
    """
    labels = node_labels or {}
    [group] = cluster_queue["spec"]["resourceGroups"]
    name = cluster_queue["metadata"]["name"]
    used: dict[tuple[str, str], int] = {}
    flavors, borrowing = [], False
    for pod_set in sets:
        total = pod_set.total()
        undeclared = sorted(set(total) - set(group["coveredResources"]))
        if undeclared:
            raise Inadmissible(f"resources not covered by ClusterQueue {name}: {', '.join(undeclared)}")
        reasons: list[str] = []
        for flavor in group["flavors"]:
            if not flavor_matches(pod_set, labels.get(flavor["name"], {})):
                reasons.append(mismatch_reason(flavor["name"]))
                continue
            quotas = {r["name"]: r for r in flavor["resources"]}
            nominal = {resource: _quota(resource, r, "nominalQuota") or 0 for resource, r in quotas.items()}
            after = {resource: used.get((flavor["name"], resource), 0) + amount for resource, amount in total.items()}
            if all(fits_queue(amount, nominal[r], _quota(r, quotas[r], "borrowingLimit")) for r, amount in after.items()):
                flavors.append(flavor["name"])
                borrowing = borrowing or any(amount > nominal[resource] for resource, amount in after.items())
                used.update({(flavor["name"], resource): amount for resource, amount in after.items()})
                break
        else:
            skipped = f" ({', '.join(sorted(reasons))})" if reasons else ""
            amounts = ", ".join(f"{resource} {amount}" for resource, amount in sorted(total.items()))
            raise Inadmissible(f"no flavor of ClusterQueue {name} holds PodSet {pod_set.name}: {amounts}{skipped}")
    return Admission(tuple(flavors), borrowing)


# --- against a cohort's live usage -----------------------------------------------------------------
# FlavorAssignmentMode: the worst over a workload's resources is its mode.
NO_FIT, PREEMPT, FIT = 0, 1, 3
MODE_NAMES = {NO_FIT: "NoFit", PREEMPT: "Preempt", FIT: "Fit"}
# preemptionMode, finer, in the order the assigner prefers them.
_NO_FIT, _NO_CANDIDATES, _PREEMPT, _RECLAIM, _FIT = range(5)
_TO_MODE = {_NO_FIT: NO_FIT, _NO_CANDIDATES: PREEMPT, _PREEMPT: PREEMPT, _RECLAIM: PREEMPT, _FIT: FIT}
# PreemptionPossibility (preemption/common/types.go), what the oracle answers.
ORACLE_NO_CANDIDATES, ORACLE_PREEMPT, ORACLE_RECLAIM = _NO_CANDIDATES, _PREEMPT, _RECLAIM
_WORST = (_NO_FIT, 1 << 62)
_BEST = (_FIT, 0)

# (queue, workload, (flavor, resource), amount) -> (possibility, borrowing height after preempting)
Oracle = Callable[[ClusterQueue, Workload, FlavorResource, int], tuple[int, int]]


@dataclass(slots=True)
class FlavorAssignment:
    flavor: str
    mode: int  # NO_FIT, PREEMPT or FIT
    borrow: int  # height of the cohort subtree it borrows from; 0: within the queue's nominal quota


@dataclass(slots=True)
class PodSetAssignment:
    name: str
    count: int
    flavors: dict[str, FlavorAssignment]  # resource -> flavor
    reasons: list[str]
    requests: dict[str, int]

    @property
    def mode(self) -> int:
        if not self.requests:
            return FIT
        if not self.flavors:
            return NO_FIT
        return min(assignment.mode for assignment in self.flavors.values())


@dataclass(slots=True)
class Assignment:
    pod_sets: list[PodSetAssignment]
    usage: dict[FlavorResource, int]  # what the workload is charged, per (flavor, resource)
    borrowing: int  # the highest borrowing level of any resource; 0: within nominal quota

    @property
    def mode(self) -> int:
        """RepresentativeMode: the worst mode of its PodSets (NoFit with none)."""
        if not self.pod_sets:
            return NO_FIT
        return min(pod_set.mode for pod_set in self.pod_sets)

    @property
    def borrows(self) -> bool:
        return self.borrowing > 0

    def needs_preemption(self) -> set[FlavorResource]:
        """flavorResourcesNeedPreemption: where the workload's flavor was assigned in Preempt mode."""
        return {
            (assignment.flavor, resource)
            for pod_set in self.pod_sets
            for resource, assignment in pod_set.flavors.items()
            if assignment.mode == PREEMPT
        }

    def flavors(self) -> tuple[dict[str, str], ...]:
        return tuple({resource: a.flavor for resource, a in pod_set.flavors.items()} for pod_set in self.pod_sets)

    def reasons(self) -> list[str]:
        return [reason for pod_set in self.pod_sets for reason in pod_set.reasons]


def assign(workload: Workload, queue: ClusterQueue, snapshot: Snapshot, oracle: Oracle) -> Assignment:
    """assignFlavors: a flavor per PodSet and resource group, in Fit, Preempt or NoFit mode.

    Each PodSet is its own group (no podSetGroupName); the quotaCheckStrategy is BlockUndeclared;
    flavors are searched from the first each time (LastAssignment's resume point is not kept).
    """
    assignment = Assignment([], {}, 0)
    for pod_set in workload.pod_sets:
        requests = pod_set.total()
        if "pods" in queue.group_of:
            requests["pods"] = pod_set.count
        flavors: dict[str, FlavorAssignment] = {}
        reasons: list[str] = []
        for resource in sorted(requests):
            if resource not in queue.group_of:
                if requests[resource] == 0:
                    continue
                flavors, reasons = {}, [f"resource {resource} unavailable in ClusterQueue"]
                break
            if resource in flavors:
                continue
            found, found_reasons = _find_flavor(workload, pod_set, queue, snapshot, oracle, requests, resource, assignment.usage)
            reasons += found_reasons
            if not found:
                flavors = {}
                break
            flavors.update(found)
        result = PodSetAssignment(pod_set.name, pod_set.count, flavors, reasons, requests)
        assignment.pod_sets.append(result)
        for resource, flavor in result.flavors.items():
            assignment.borrowing = max(assignment.borrowing, flavor.borrow)
            fr = (flavor.flavor, resource)
            assignment.usage[fr] = assignment.usage.get(fr, 0) + requests.get(resource, 0)
        if result.mode == NO_FIT:
            return assignment
    return assignment


def _find_flavor(
    workload: Workload,
    pod_set: PodSet,
    queue: ClusterQueue,
    snapshot: Snapshot,
    oracle: Oracle,
    requests: Mapping[str, int],
    resource: str,
    assumed: Mapping[FlavorResource, int],
) -> tuple[dict[str, FlavorAssignment], list[str]]:
    """findFlavorForPodSets: the group's flavors in order, stopping as flavorFungibility says."""
    group = queue.group_of[resource]
    wanted = {r: v for r, v in requests.items() if r in group.covered_resources}
    fungibility = queue.flavor_fungibility
    best: dict[str, FlavorAssignment] = {}
    best_mode = _WORST
    reasons: list[str] = []
    for flavor in group.flavors:
        tolerations = (*pod_set.tolerations, *snapshot.flavor_tolerations.get(flavor, ()))
        taint = _untolerated(snapshot.flavor_taints.get(flavor, ()), tolerations)
        if taint is not None:
            reasons.append(f"untolerated taint {taint.get('key')}:{taint.get('effect')} in flavor {flavor}")
            continue
        if not flavor_matches(pod_set, snapshot.flavor_labels.get(flavor, {})):
            reasons.append(mismatch_reason(flavor))
            continue
        assignments: dict[str, FlavorAssignment] = {}
        mode = _BEST
        for name, value in wanted.items():
            fr = (flavor, name)
            preemption, borrow, reason = _fits_resource_quota(workload, queue, snapshot, oracle, fr, assumed.get(fr, 0), value)
            if reason:
                reasons.append(reason)
            candidate = (preemption, borrow)
            if _is_preferred(mode, candidate, fungibility.preference):
                mode = candidate
            if mode[0] == _NO_FIT:
                continue
            assignments[name] = FlavorAssignment(flavor, _TO_MODE[preemption], borrow)
        if not _try_next_flavor(mode, fungibility.when_can_borrow, fungibility.when_can_preempt):
            return assignments, ([] if mode[0] == _FIT else reasons)
        if _is_preferred(mode, best_mode, fungibility.preference):
            best, best_mode = assignments, mode
    return best, ([] if best_mode[0] == _FIT else reasons)


def _untolerated(taints: Sequence[Mapping[str, Any]], tolerations: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """checkFlavorForPodSets: the first NoSchedule/NoExecute taint of the flavor no toleration tolerates
    (k8s.io/api core/v1 toleration.go ToleratesTaint: effect and key match when set; Equal compares values)."""
    for taint in taints:
        if not any(_tolerates(toleration, taint) for toleration in tolerations):
            return taint
    return None


def _tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    if toleration.get("key") and toleration["key"] != taint.get("key"):
        return False
    if toleration.get("operator") == "Exists":
        return True
    return toleration.get("value", "") == taint.get("value", "")


def _fits_resource_quota(
    workload: Workload, queue: ClusterQueue, snapshot: Snapshot, oracle: Oracle, fr: FlavorResource, assumed: int, request: int
) -> tuple[int, int, str | None]:
    """fitsResourceQuota: Fit within what is available, NoFit beyond the most the queue could hold,
    else whatever preempting would give (the oracle)."""
    value = assumed + request
    if value > queue.potential_available(fr):
        return _NO_FIT, 0, f"insufficient quota for {fr[1]} in flavor {fr[0]}: {value} > maximum capacity"
    borrow, may_reclaim = height_of_lowest_subtree_that_fits(queue, fr, value)
    if value <= queue.available(fr):
        return _FIT, borrow, None
    reason = f"insufficient unused quota for {fr[1]} in flavor {fr[0]}, {value - queue.available(fr)} more needed"
    if queue.quota(fr).nominal >= value or may_reclaim or _can_preempt_while_borrowing(queue, snapshot.fair_sharing):
        possibility, borrow_after = oracle(queue, workload, fr, value)
        return possibility, borrow_after, reason
    return _NO_FIT, borrow, reason


def _can_preempt_while_borrowing(queue: ClusterQueue, fair_sharing: bool) -> bool:
    return queue.preemption.borrow_within_cohort != NEVER or (fair_sharing and queue.preemption.reclaim_within_cohort != NEVER)


def height_of_lowest_subtree_that_fits(queue: ClusterQueue, fr: FlavorResource, value: int) -> tuple[int, bool]:
    """FindHeightOfLowestSubtreeThatFits (preemption/classical/hierarchical_preemption.go): how far up the
    cohort tree the queue must borrow `value` (0: not at all), and whether a node above that could reclaim."""
    if not queue.borrowing_with(fr, value) or queue.parent is None:
        return 0, queue.parent is not None
    remaining = value - local_available(queue, fr)
    for node in queue.path_to_root():
        if not node.borrowing_with(fr, remaining):
            return node.height(), node.parent is not None
        remaining -= local_available(node, fr)
    return queue.parent.root().height(), False


def _is_preferred(a: tuple[int, int], b: tuple[int, int], preference: str | None) -> bool:
    """isPreferred: is mode `a` (preemption mode, borrowing level) better than `b`."""
    if a[0] == _NO_FIT:
        return False
    if b[0] == _NO_FIT:
        return True
    if (a[0] == _NO_CANDIDATES) != (b[0] == _NO_CANDIDATES):
        return a[0] != _NO_CANDIDATES
    if preference == PREEMPTION_OVER_BORROWING:
        return a[1] < b[1] if a[1] != b[1] else a[0] > b[0]
    return a[0] > b[0] if a[0] != b[0] else a[1] < b[1]


def _try_next_flavor(mode: tuple[int, int], when_can_borrow: str, when_can_preempt: str) -> bool:
    """shouldTryNextFlavor."""
    if mode[0] in (_NO_FIT, _NO_CANDIDATES):
        return True
    if mode[0] in (_PREEMPT, _RECLAIM) and when_can_preempt == TRY_NEXT_FLAVOR:
        return True
    return mode[1] != 0 and when_can_borrow == TRY_NEXT_FLAVOR
