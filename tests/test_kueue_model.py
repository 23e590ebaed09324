"""The Kueue model's rules, each on a scenario small enough to work out by hand (models/kueue).

Kueue's own table tests replay in tests/test_kueue_upstream_cases.py; these pin each rule with numbers
written out here, and run the model over the ClusterQueues the platform itself declares.
"""

from __future__ import annotations

from typing import Any

import pytest

from components import queueing
from models.kueue import (
    ADMITTED,
    PREEMPTING,
    Inadmissible,
    PendingQueue,
    PodSet,
    Snapshot,
    Workload,
    apply,
    heads,
    schedule,
    workload_priority,
)
from models.kueue.cohort import lendable
from models.kueue.fair_sharing import dominant_resource_share
from models.kueue.flavorassigner import FIT, NO_FIT, PREEMPT, best_case_admission
from models.kueue.preemption import LOWER_OR_NEWER_EQUAL_PRIORITY, LOWER_PRIORITY, satisfies_policy
from models.kueue.requeue import deactivated, requeue_wait_seconds
from models.kueue.scheduler import NO_CANDIDATES, NO_FIT_STATUS, SKIPPED

from .conftest import fixture_document, load

GPU = "nvidia.com/gpu"


def queue(name: str, cohort: str | None, flavors: dict[str, dict[str, Any]], **spec: Any) -> dict[str, Any]:
    """A ClusterQueue covering GPUs only, one entry per flavor in order: quota fields as Kueue spells them."""
    body: dict[str, Any] = {
        "resourceGroups": [
            {"coveredResources": [GPU], "flavors": [{"name": f, "resources": [{"name": GPU, **q}]} for f, q in flavors.items()]}
        ],
        **spec,
    }
    if cohort:
        body["cohortName"] = cohort
    return {"metadata": {"name": name}, "spec": body}


def job(name: str, queue_name: str, gpus: int, priority: int = 0, timestamp: float = 0) -> Workload:
    return Workload(name, queue_name, (PodSet("main", gpus, {GPU: 1}),), priority=priority, timestamp=timestamp)


def hold_quota(snapshot: Snapshot, workload: Workload, flavor: str, at: float = 0) -> Workload:
    """Hold quota as if admitted earlier: all its GPUs on `flavor`."""
    workload.usage = {(flavor, GPU): workload.pod_sets[0].count}
    workload.flavors = ({GPU: flavor},)
    workload.reserved_at = at
    snapshot.add_workload(workload)
    return workload


def one_cycle(snapshot: Snapshot, *pending: Workload):
    return schedule(snapshot, list(pending)).entries


# --- quota through a cohort ------------------------------------------------------------------------------


def test_a_lending_limit_caps_what_others_can_borrow_and_keeps_the_rest_for_its_owner():
    # b lends 1 of its 4 GPUs: a can reach 4 + 1, and b always has 3 only it can use.
    snapshot = Snapshot.from_manifests(
        [
            queue("a", "org", {"x": {"nominalQuota": 4, "borrowingLimit": 4}}),
            queue("b", "org", {"x": {"nominalQuota": 4, "lendingLimit": 1}}),
        ]
    )
    a, b = snapshot.cluster_queues["a"], snapshot.cluster_queues["b"]
    assert (a.available(("x", GPU)), a.potential_available(("x", GPU))) == (5, 5)
    [fits] = one_cycle(snapshot, job("five", "a", 5))
    assert (fits.status, fits.assignment.borrowing) == (ADMITTED, 1)
    [too_big] = one_cycle(snapshot, job("six", "a", 6))
    assert (too_big.status, too_big.assignment.mode) == (NO_FIT_STATUS, NO_FIT)
    hold_quota(snapshot, job("five", "a", 5), "x")
    assert (a.available(("x", GPU)), b.available(("x", GPU))) == (0, 3)


def test_a_lending_limit_of_zero_lends_nothing():
    """`lendingLimit: 0` is a limit, not an absent one (pkg/cache/scheduler resource_node.go: the local
    quota is the subtree quota less lendingLimit): b keeps all 3 of its GPUs, c lends its 2, so a reaches
    its 1 and 2 borrowed."""
    snapshot = Snapshot.from_manifests(
        [
            queue("a", "org", {"x": {"nominalQuota": 1, "borrowingLimit": 6}}),
            queue("b", "org", {"x": {"nominalQuota": 3, "lendingLimit": 0}}),
            queue("c", "org", {"x": {"nominalQuota": 2}}),
        ]
    )
    a, b = snapshot.cluster_queues["a"], snapshot.cluster_queues["b"]
    assert (a.available(("x", GPU)), a.potential_available(("x", GPU))) == (3, 3)
    assert b.available(("x", GPU)) == 6  # its own 3, a's 1 and c's 2
    [too_big] = one_cycle(snapshot, job("four", "a", 4))
    assert (too_big.status, too_big.assignment.mode) == (NO_FIT_STATUS, NO_FIT)


def test_without_a_borrowing_limit_a_queue_may_take_everything_idle_in_the_cohort():
    snapshot = Snapshot.from_manifests(
        [queue("a", "org", {"x": {"nominalQuota": 2}}), queue("b", "org", {"x": {"nominalQuota": 6}})]
    )
    assert snapshot.cluster_queues["a"].available(("x", GPU)) == 8
    snapshot = Snapshot.from_manifests(
        [queue("a", "org", {"x": {"nominalQuota": 2, "borrowingLimit": 0}}), queue("b", "org", {"x": {"nominalQuota": 6}})]
    )
    assert snapshot.cluster_queues["a"].available(("x", GPU)) == 2


def test_a_queue_without_a_cohort_never_borrows():
    snapshot = Snapshot.from_manifests([queue("alone", None, {"x": {"nominalQuota": 3, "borrowingLimit": 5}})])
    assert snapshot.cluster_queues["alone"].potential_available(("x", GPU)) == 3


def test_usage_beyond_nominal_is_charged_up_the_cohort_tree():
    snapshot = Snapshot.from_manifests(
        [queue("a", "unit", {"x": {"nominalQuota": 2}}), queue("b", "other", {"x": {"nominalQuota": 6}})],
        [
            {"metadata": {"name": "root"}, "spec": {}},
            *({"metadata": {"name": u}, "spec": {"parentName": "root"}} for u in ("unit", "other")),
        ],
    )
    hold_quota(snapshot, job("big", "a", 5), "x")
    # a holds 2 of its own and 3 from `other`'s idle quota, through `unit` and `root`.
    assert snapshot.cohorts["unit"].usage[("x", GPU)] == 5
    assert snapshot.cohorts["root"].usage[("x", GPU)] == 5
    assert snapshot.cluster_queues["b"].available(("x", GPU)) == 3


def test_what_a_queue_lends_is_its_nominal_quota_at_most_its_lending_limit():
    assert [lendable(8, None), lendable(8, 4), lendable(8, 0), lendable(3, 10)] == [8, 4, 0, 3]


# --- flavors -------------------------------------------------------------------------------------------------


def test_may_stop_search_takes_the_first_flavor_even_by_borrowing_and_try_next_flavor_looks_on():
    lender = queue("lender", "org", {"spot": {"nominalQuota": 4}})
    flavors = {"spot": {"nominalQuota": 0, "borrowingLimit": 4}, "on-demand": {"nominalQuota": 4}}
    for fungibility, flavor, borrowing in (({}, "spot", 1), ({"whenCanBorrow": "TryNextFlavor"}, "on-demand", 0)):
        snapshot = Snapshot.from_manifests([queue("t", "org", flavors, flavorFungibility=fungibility), lender])
        [entry] = one_cycle(snapshot, job("j", "t", 2))
        assert (entry.status, entry.assignment.flavors(), entry.assignment.borrowing) == (ADMITTED, ({GPU: flavor},), borrowing)


def test_try_next_flavor_skips_a_flavor_that_needs_preemption_and_may_stop_search_preempts_there():
    flavors = {"a": {"nominalQuota": 2}, "b": {"nominalQuota": 2}}
    for fungibility, status, flavor in (({}, ADMITTED, "b"), ({"whenCanPreempt": "MayStopSearch"}, PREEMPTING, "a")):
        snapshot = Snapshot.from_manifests(
            [queue("t", None, flavors, flavorFungibility=fungibility, preemption={"withinClusterQueue": "LowerPriority"})]
        )
        hold_quota(snapshot, job("low", "t", 2, priority=0), "a")
        [entry] = one_cycle(snapshot, job("high", "t", 2, priority=5))
        assert (entry.status, entry.assignment.flavors()) == (status, ({GPU: flavor},))


def test_a_tainted_flavor_is_skipped_unless_the_pods_tolerate_it():
    taint = {"key": "gpu", "value": "h100", "effect": "NoSchedule"}
    flavors = [{"metadata": {"name": n}, "spec": s} for n, s in (("tainted", {"nodeTaints": [taint]}), ("plain", {}))]
    manifests = [queue("t", None, {"tainted": {"nominalQuota": 4}, "plain": {"nominalQuota": 4}})]
    [skipped] = one_cycle(Snapshot.from_manifests(manifests, flavors=flavors), job("j", "t", 1))
    assert skipped.assignment.flavors() == ({GPU: "plain"},)
    tolerant = Workload("j", "t", (PodSet("main", 1, {GPU: 1}, ({"key": "gpu", "operator": "Exists"},)),))
    [taken] = one_cycle(Snapshot.from_manifests(manifests, flavors=flavors), tolerant)
    assert taken.assignment.flavors() == ({GPU: "tainted"},)


# Three flavors in this order; l4 sets no capacity-type label (as a cpu flavor sets none of the GPU keys).
LABELLED = {
    "a100-spot": {"karpenter.sh/capacity-type": "spot", "gpu": "a100"},
    "h100-on-demand": {"karpenter.sh/capacity-type": "on-demand", "gpu": "h100"},
    "l4": {"gpu": "l4"},
}


def selecting(node_selector: dict[str, str] | None = None, *terms: dict[str, Any]) -> Workload:
    pod_set = PodSet("main", 1, {GPU: 1}, node_selector=node_selector or {}, node_affinity=terms)
    return Workload("j", "t", (pod_set,))


def admitted_flavor(workload: Workload) -> dict[str, str]:
    flavors = [{"metadata": {"name": n}, "spec": {"nodeLabels": labels}} for n, labels in LABELLED.items()]
    manifests = [queue("t", None, {name: {"nominalQuota": 4} for name in LABELLED})]
    [entry] = one_cycle(Snapshot.from_manifests(manifests, flavors=flavors), workload)
    return entry.assignment.flavors()[0]


def test_a_node_selector_on_a_key_no_flavor_sets_is_ignored():
    assert admitted_flavor(selecting({"topology.kubernetes.io/zone": "us-east-1a"})) == {GPU: "a100-spot"}


def test_a_node_selector_matching_the_second_flavor_skips_the_first():
    assert admitted_flavor(selecting({"karpenter.sh/capacity-type": "on-demand"})) == {GPU: "h100-on-demand"}


def test_a_required_affinity_in_two_values_takes_the_first_flavor_labelled_with_either():
    term = {"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["l4", "h100"]}]}
    assert admitted_flavor(selecting(None, term)) == {GPU: "h100-on-demand"}


def test_only_the_keys_a_flavor_sets_are_compared_with_it():
    # Kueue v0.19.2 keeps each flavor's own keys: l4 sets no capacity-type, so a reserved selector leaves it.
    assert admitted_flavor(selecting({"karpenter.sh/capacity-type": "reserved"})) == {GPU: "l4"}


def test_an_affinity_term_on_keys_no_flavor_sets_lets_every_flavor_match():
    # Terms are ORed; one left empty after dropping unknown keys matches anything.
    ruled_out = {"matchExpressions": [{"key": "gpu", "operator": "NotIn", "values": ["a100", "h100", "l4"]}]}
    elsewhere = {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1b"]}]}
    assert admitted_flavor(selecting(None, ruled_out, elsewhere)) == {GPU: "a100-spot"}


def test_a_selector_no_flavor_matches_is_no_fit_with_kueues_reason():
    flavors = [{"metadata": {"name": n}, "spec": {"nodeLabels": labels}} for n, labels in LABELLED.items()]
    manifests = [queue("t", None, {name: {"nominalQuota": 4} for name in LABELLED})]
    [entry] = one_cycle(Snapshot.from_manifests(manifests, flavors=flavors), selecting({"gpu": "t4"}))
    assert (entry.status, entry.assignment.mode) == (NO_FIT_STATUS, NO_FIT)
    assert entry.assignment.reasons() == [
        "flavor a100-spot doesn't match node affinity",
        "flavor h100-on-demand doesn't match node affinity",
        "flavor l4 doesn't match node affinity",
    ]
    with pytest.raises(Inadmissible, match=r"\(flavor a100-spot doesn't match node affinity, flavor h100-on-demand "
                       r"doesn't match node affinity, flavor l4 doesn't match node affinity\)$"):
        best_case_admission(selecting({"gpu": "t4"}).pod_sets, manifests[0], LABELLED)


# --- preemption ------------------------------------------------------------------------------------------------


def test_within_a_queue_the_lowest_priority_and_then_the_newest_admitted_go_first():
    snapshot = Snapshot.from_manifests(
        [queue("t", None, {"x": {"nominalQuota": 6}}, preemption={"withinClusterQueue": "LowerPriority"})]
    )
    hold_quota(snapshot, job("old-low", "t", 2, priority=1), "x", at=10)
    hold_quota(snapshot, job("new-low", "t", 2, priority=1), "x", at=20)
    hold_quota(snapshot, job("lowest", "t", 2, priority=0), "x", at=5)
    [entry] = one_cycle(snapshot, job("urgent", "t", 4, priority=9))
    assert entry.status == PREEMPTING
    assert sorted((t.workload.name, t.reason) for t in entry.targets) == [
        ("lowest", "InClusterQueue"),
        ("new-low", "InClusterQueue"),
    ]


def test_lower_or_newer_equal_priority_preempts_an_equal_priority_workload_queued_later():
    for policy, targets in (("LowerPriority", []), ("LowerOrNewerEqualPriority", ["younger"])):
        snapshot = Snapshot.from_manifests(
            [queue("t", None, {"x": {"nominalQuota": 2}}, preemption={"withinClusterQueue": policy})]
        )
        hold_quota(snapshot, job("younger", "t", 2, priority=3, timestamp=50), "x")
        [entry] = one_cycle(snapshot, job("older", "t", 2, priority=3, timestamp=10))
        assert [t.workload.name for t in entry.targets] == targets


@pytest.mark.parametrize(
    ("policy", "borrower_priority", "reclaimed"),
    [("Any", 100, True), ("LowerPriority", 100, False), ("LowerPriority", 1, True), ("Never", 1, False)],
)
def test_a_queue_reclaims_its_nominal_quota_from_borrowers_as_its_policy_allows(policy, borrower_priority, reclaimed):
    snapshot = Snapshot.from_manifests(
        [
            queue("owner", "org", {"x": {"nominalQuota": 4}}, preemption={"reclaimWithinCohort": policy}),
            queue("borrower", "org", {"x": {"nominalQuota": 0}}),
        ]
    )
    hold_quota(snapshot, job("borrowed", "borrower", 3, priority=borrower_priority), "x")
    [entry] = one_cycle(snapshot, job("mine", "owner", 4, priority=50))
    if reclaimed:
        assert (entry.status, [(t.workload.name, t.reason) for t in entry.targets]) == (
            PREEMPTING,
            [("borrowed", "InCohortReclamation")],
        )
    else:
        assert (entry.status, entry.targets) == (NO_CANDIDATES, [])


@pytest.mark.parametrize(("victim_priority", "preempted"), [(5, True), (6, False)])
def test_borrowing_while_preempting_stops_above_the_max_priority_threshold(victim_priority, preempted):
    # `taker` has no quota of its own: it can only borrow from `bank`, which `other` fills; preempting
    # `other` lets it borrow, when `other`'s priority is at most the threshold (5) and below its own.
    borrow = {"policy": "LowerPriority", "maxPriorityThreshold": 5}
    snapshot = Snapshot.from_manifests(
        [
            queue(
                "taker",
                "org",
                {"x": {"nominalQuota": 0}},
                preemption={"reclaimWithinCohort": "LowerPriority", "borrowWithinCohort": borrow},
            ),
            queue("other", "org", {"x": {"nominalQuota": 0}}),
            queue("bank", "org", {"x": {"nominalQuota": 4}}),
        ]
    )
    hold_quota(snapshot, job("victim", "other", 4, priority=victim_priority), "x")
    [entry] = one_cycle(snapshot, job("incoming", "taker", 4, priority=10))
    got = [(t.workload.name, t.reason) for t in entry.targets]
    assert got == ([("victim", "InCohortReclaimWhileBorrowing")] if preempted else [])


@pytest.mark.parametrize(("victim_priority", "preempted"), [(9, True), (10, False), (11, False)])
def test_borrowing_while_preempting_takes_only_strictly_lower_priorities(victim_priority, preempted):
    # reclaimWithinCohort Any lets `taker` consider `other`'s workload at any priority, but preempting to
    # borrow (classifyPreemptionVariant, borrowWithinCohort) needs a priority strictly below its own 10.
    snapshot = Snapshot.from_manifests(
        [
            queue(
                "taker",
                "org",
                {"x": {"nominalQuota": 0}},
                preemption={"reclaimWithinCohort": "Any", "borrowWithinCohort": {"policy": "LowerPriority"}},
            ),
            queue("other", "org", {"x": {"nominalQuota": 0}}),
            queue("bank", "org", {"x": {"nominalQuota": 3}}),
        ]
    )
    hold_quota(snapshot, job("victim", "other", 3, priority=victim_priority), "x")
    [entry] = one_cycle(snapshot, job("incoming", "taker", 3, priority=10))
    got = [(t.workload.name, t.reason) for t in entry.targets]
    assert got == ([("victim", "InCohortReclaimWhileBorrowing")] if preempted else [])


def test_only_as_many_victims_as_needed_are_taken_and_needless_ones_given_back():
    snapshot = Snapshot.from_manifests(
        [queue("t", None, {"x": {"nominalQuota": 6}}, preemption={"withinClusterQueue": "LowerPriority"})]
    )
    hold_quota(snapshot, job("one", "t", 1), "x", at=3)
    hold_quota(snapshot, job("two", "t", 3), "x", at=2)
    hold_quota(snapshot, job("three", "t", 2), "x", at=1)
    # 3 GPUs are needed; candidates go newest first: `one` frees 1, `two` 3 more, enough. `one` is then
    # given back, since `two` alone frees 3; `three` is never touched.
    [entry] = one_cycle(snapshot, job("in", "t", 3, priority=1))
    assert [t.workload.name for t in entry.targets] == ["two"]


# --- the cycle -------------------------------------------------------------------------------------------------


def test_a_cycle_admits_the_entry_within_nominal_before_the_borrower_of_the_same_idle_quota():
    snapshot = Snapshot.from_manifests(
        [queue("a", "org", {"x": {"nominalQuota": 4}}), queue("b", "org", {"x": {"nominalQuota": 0}})]
    )
    borrower = job("borrower", "b", 4, priority=100, timestamp=0)
    owner = job("owner", "a", 4, priority=0, timestamp=99)
    entries = one_cycle(snapshot, borrower, owner)
    assert [(e.workload.name, e.status) for e in entries] == [("owner", ADMITTED), ("borrower", SKIPPED)]


def test_among_equal_borrowing_a_cycle_takes_higher_priority_then_the_older():
    snapshot = Snapshot.from_manifests([queue(n, "org", {"x": {"nominalQuota": 1}}) for n in ("a", "b", "c")])
    entries = one_cycle(
        snapshot, job("young", "a", 1, 5, timestamp=9), job("old", "b", 1, 5, timestamp=1), job("vip", "c", 1, 7, timestamp=5)
    )
    assert [e.workload.name for e in entries] == ["vip", "old", "young"]


def test_a_cycle_leaves_the_snapshot_as_it_found_it_and_apply_charges_the_admitted():
    snapshot = Snapshot.from_manifests(
        [queue("a", "org", {"x": {"nominalQuota": 4}}), queue("b", "org", {"x": {"nominalQuota": 4}})]
    )
    cycle = schedule(snapshot, [job("j", "a", 6)])
    assert snapshot.cohorts["org"].usage == {} and snapshot.cluster_queues["a"].usage == {}
    apply(snapshot, cycle, now=7)
    # Without a lending limit a queue keeps no quota to itself: its whole usage counts in the cohort too.
    assert snapshot.cluster_queues["a"].usage == {("x", GPU): 6} and snapshot.cohorts["org"].usage == {("x", GPU): 6}
    assert snapshot.cluster_queues["a"].workloads["j"].reserved_at == 7


@pytest.mark.parametrize(("strategy", "second_head"), [("StrictFIFO", "big"), ("BestEffortFIFO", "small")])
def test_strict_fifo_keeps_a_blocked_head_and_best_effort_moves_on_to_the_next(strategy, second_head):
    snapshot = Snapshot.from_manifests([queue("t", None, {"x": {"nominalQuota": 4}}, queueingStrategy=strategy)])
    pending = PendingQueue(snapshot.cluster_queues["t"].queueing_strategy)
    pending.push(job("big", "t", 8, timestamp=1))
    pending.push(job("small", "t", 1, timestamp=2))
    for entry in schedule(snapshot, heads([pending])).entries:
        pending.requeue(entry)
    assert [w.name for w in heads([pending])] == [second_head]


def test_fair_sharing_admits_the_entry_whose_queue_would_have_the_smaller_weighted_share():
    # Both borrow 2 of the lender's 8; `heavy` has weight 2, so its share is half of `light`'s.
    manifests = [
        queue("light", "org", {"x": {"nominalQuota": 0}}),
        queue("heavy", "org", {"x": {"nominalQuota": 0}}, fairSharing={"weight": "2"}),
        queue("lender", "org", {"x": {"nominalQuota": 2}}),
    ]
    snapshot = Snapshot.from_manifests(manifests, fair_sharing=True)
    entries = one_cycle(snapshot, job("l", "light", 2, priority=9), job("h", "heavy", 2, priority=0))
    assert [(e.workload.name, e.status) for e in entries] == [("h", ADMITTED), ("l", SKIPPED)]


def test_a_dominant_resource_share_is_borrowed_per_mille_of_what_the_cohort_lends_over_the_weight():
    snapshot = Snapshot.from_manifests(
        [
            queue("a", "org", {"x": {"nominalQuota": 10}}, fairSharing={"weight": "2"}),
            queue("b", "org", {"x": {"nominalQuota": 10}}),
        ]
    )
    hold_quota(snapshot, job("j", "a", 15), "x")
    # a borrows 5 of the cohort's 20: 250 per mille, halved by weight 2.
    drs = dominant_resource_share(snapshot.cluster_queues["a"])
    assert (drs.unweighted_ratio, drs.share, drs.dominant_resource) == (250.0, 125.0, GPU)


# --- requeueing ------------------------------------------------------------------------------------------------


def test_requeue_backoff_doubles_from_the_base_up_to_the_cap():
    assert [requeue_wait_seconds(n, 60, 3600) for n in range(1, 9)] == [60, 120, 240, 480, 960, 1920, 3600, 3600]
    assert [requeue_wait_seconds(n, 10, 25) for n in (1, 2, 3)] == [10, 20, 25]
    assert requeue_wait_seconds(1, 60, 3600, jitter=1.0) == pytest.approx(60.006)
    assert [deactivated(n, 3) for n in (3, 4)] == [False, True] and not deactivated(100, None)


# --- the platform's own queues -----------------------------------------------------------------------------------


def platform_snapshot() -> Snapshot:
    """The multi-pool fixture's ClusterQueues and Cohorts as the component builds them."""
    config = load(fixture_document("multi-pool"))
    return Snapshot.from_manifests(
        [queueing.cluster_queue(t) for t in config.tenants], queueing.cohorts(config.queueing), fair_sharing=True
    )


# The fixture's H100 pool is partitioned by MIG with one 3g.40gb device per GPU, so its quota in that
# profile is the tenants' GPU quota.
MIG_3G = "nvidia.com/mig-3g.40gb"


def test_a_tenant_can_borrow_up_to_its_limit_from_the_other_business_unit():
    # h100-on-demand: llm-training 16 (+12), data-science 8 (+8) in research; inference 8, lending 4,
    # and experiments 0 (+8) in product: 16 + 8 + 4 = 28 lendable in the root cohort.
    snapshot = platform_snapshot()
    h100 = ("h100-on-demand", MIG_3G)
    assert snapshot.cohorts["acme-ai"].subtree_quota[h100] == 28
    assert snapshot.cluster_queues["experiments"].available(h100) == 8
    assert snapshot.cluster_queues["llm-training"].available(h100) == 28


def test_a_tenant_learns_whom_it_borrows_from_and_how_much_each_lends_now():
    snapshot = platform_snapshot()
    h100 = ("h100-on-demand", MIG_3G)
    assert snapshot.lenders("experiments", h100) == {"llm-training": 16, "data-science": 8, "inference": 4}
    ten = Workload("ten", "llm-training", (PodSet("main", 10, {MIG_3G: 1}),))
    ten.usage = {h100: 10}
    snapshot.add_workload(ten)
    assert snapshot.lenders("experiments", h100) == {"llm-training": 6, "data-science": 8, "inference": 4}


def test_inference_keeps_the_gpus_above_its_lending_limit_when_a_borrower_takes_the_rest():
    snapshot = platform_snapshot()
    h100 = ("h100-on-demand", MIG_3G)
    pretrain = Workload("pretrain", "llm-training", (PodSet("main", 28, {MIG_3G: 1}),), priority=1000)
    pretrain.usage = {h100: 28}
    snapshot.add_workload(pretrain)
    assert snapshot.cluster_queues["experiments"].available(h100) == 0
    assert snapshot.cluster_queues["inference"].available(h100) == 4
    # Its 8-device server needs the 4 it lent back: reclaimed from llm-training (reclaimWithinCohort Any).
    server = Workload("server", "inference", (PodSet("main", 8, {MIG_3G: 1, "cpu": 1000, "memory": 2**30}),), priority=1000)
    [entry] = one_cycle(snapshot, server)
    assert entry.assignment.mode == PREEMPT
    assert entry.assignment.flavors() == ({MIG_3G: "h100-on-demand", "cpu": "h100-on-demand", "memory": "h100-on-demand"},)
    assert [(t.workload.name, t.reason) for t in entry.targets] == [("pretrain", "InCohortReclamation")]


def test_a_cpu_only_pod_lands_on_the_cpu_flavor_within_nominal():
    snapshot = platform_snapshot()
    notebook = Workload("nb", "data-science", (PodSet("main", 1, {"cpu": 4000, "memory": 8 * 2**30}),))
    [entry] = one_cycle(snapshot, notebook)
    assert (entry.status, entry.assignment.mode, entry.assignment.borrowing) == (ADMITTED, FIT, 0)
    assert entry.assignment.flavors() == ({"cpu": "cpu", "memory": "cpu"},)


# --- upstream names ------------------------------------------------------------------------------------------


def test_kueues_and_the_trainers_names_are_spelled_as_upstream_defines_them():
    # kubernetes-sigs/kueue v0.19.2 pkg/controller/constants/constants.go (QueueLabel,
    # WorkloadPriorityClassLabel, DefaultLocalQueueName), pkg/controller/jobs/pod/constants (SchedulingGateName);
    # kubeflow/trainer v2.3.0 pkg/constants/constants.go (LabelTrainJobAncestor, AncestorTrainer, Node).
    from models import kubeflow_trainer
    from models.kueue import constants

    assert (constants.QUEUE_NAME_LABEL, constants.PRIORITY_CLASS_LABEL, constants.DEFAULT_LOCAL_QUEUE) == (
        "kueue.x-k8s.io/queue-name",
        "kueue.x-k8s.io/priority-class",
        "default",
    )
    assert constants.ADMISSION_SCHEDULING_GATE == "kueue.x-k8s.io/admission"
    assert (kubeflow_trainer.ANCESTOR_STEP_LABEL, kubeflow_trainer.TRAINER_ANCESTOR, kubeflow_trainer.TRAINER_CONTAINER) == (
        "trainer.kubeflow.org/trainjob-ancestor-step",
        "trainer",
        "node",
    )


@pytest.mark.parametrize(
    ("labels", "pod_class", "want"),
    [
        ({"kueue.x-k8s.io/priority-class": "production"}, "system", 1000),  # the label wins over the pods' class
        ({}, "system", 2_000_000),
        ({}, None, 7),  # the globalDefault PriorityClass
    ],
)
def test_a_jobs_priority_comes_from_its_workload_priority_class_then_its_pods_class_then_the_default(labels, pod_class, want):
    pods = [{"containers": []}, {"containers": [], **({"priorityClassName": pod_class} if pod_class else {})}]
    classes = {"system": (2_000_000, False), "everyday": (7, True)}
    assert workload_priority(labels, pods, {"production": 1000}, classes) == want
    assert workload_priority({}, [{}], {}, {"system": (5, False)}) == 0


def test_a_job_naming_a_priority_class_that_does_not_exist_gets_no_workload():
    with pytest.raises(Inadmissible, match="WorkloadPriorityClass urgent does not exist"):
        workload_priority({"kueue.x-k8s.io/priority-class": "urgent"}, [{}], {"production": 1000}, {})


def test_lower_or_newer_equal_priority_needs_a_strictly_older_preemptor_at_equal_priority():
    """kubernetes-sigs/kueue pkg/scheduler/preemption/common SatisfiesPreemptionPolicy: at equal priority the
    preemptor must be queued strictly before the candidate (`Timestamp.Before`); a tie preempts nothing."""
    def job(priority: int, timestamp: float) -> Workload:
        return Workload("w", "q", (PodSet("main", 1, {GPU: 1}),), priority=priority, timestamp=timestamp)

    assert satisfies_policy(job(100, 5.0), job(100, 7.5), LOWER_OR_NEWER_EQUAL_PRIORITY)
    assert not satisfies_policy(job(100, 7.5), job(100, 7.5), LOWER_OR_NEWER_EQUAL_PRIORITY)
    assert not satisfies_policy(job(100, 9.0), job(100, 7.5), LOWER_OR_NEWER_EQUAL_PRIORITY)
    assert satisfies_policy(job(101, 9.0), job(100, 7.5), LOWER_OR_NEWER_EQUAL_PRIORITY)
    assert not satisfies_policy(job(100, 5.0), job(100, 7.5), LOWER_PRIORITY)
