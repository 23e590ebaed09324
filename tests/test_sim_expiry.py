"""Karpenter's forceful expiry and the do-not-disrupt annotation (models/karpenter/disruption.py), in the model
and in the simulator, against values worked out by hand on dev (one time-sliced L40S pool, 4 slices per GPU,
terminationGracePeriod 1h by default) and the multi-pool fixture."""

from __future__ import annotations

from typing import Any

import pytest

from config.timing import TENANT_POD_MAX_GRACE_SECONDS
from models.karpenter import disruption
from sim import measures as m
from sim.experiment import measure

from .conftest import fixture_document
from .test_sim_measures import job
from .test_sim_measures import run as measures_run
from .test_sim_measures import workload as measures_workload
from .test_sim_scenarios import BATCH, LAUNCH, dev, run, workload

HOUR = 3600.0


@pytest.mark.parametrize(
    ("method", "blocking", "grace", "candidate"),
    [
        ("expiration", True, None, True),  # forceful: the NodeClaim is deleted whatever runs on it
        ("interruption", True, 3600.0, True),
        ("emptiness", True, 3600.0, False),  # graceful: a blocking pod keeps the node
        ("single-node-consolidation", True, None, False),
        ("single-node-consolidation", False, None, True),
        ("drift", True, 3600.0, True),  # eventual: bounded by the terminationGracePeriod
        ("drift", True, None, False),  # ... and blocked without one
        ("drift", False, None, True),
    ],
)
def test_which_methods_may_pick_a_node_with_a_pod_that_blocks_eviction(method, blocking, grace, candidate):
    assert disruption.is_candidate(disruption.DISRUPTION_CLASS[method], blocking, grace) is candidate


@pytest.mark.parametrize(
    ("blocking", "grace", "pod_grace", "after"),
    [
        (False, 3600.0, 300.0, 0.0),  # evicted when the drain starts
        (True, 3600.0, 300.0, 3300.0),  # deleted its own grace period before the NodeClaim's termination time
        (True, 200.0, 300.0, 0.0),  # a grace period longer than what is left: deleted at once
        (True, None, 30.0, None),  # no terminationGracePeriod: the drain waits for the pod to end
    ],
)
def test_when_the_drain_of_a_deleted_nodeclaim_takes_a_pod(blocking, grace, pod_grace, after):
    assert disruption.pod_deleted_after(blocking, grace, pod_grace) == after


def expiring_job(run_for: str, do_not_disrupt: bool, duration: str = "8h") -> dict[str, Any]:
    """One 2-slice job at 0 on dev with nodes expiring 2 h after launch (at BATCH + 2 h)."""
    document = dev()
    document["gpu-platform:nodePools"][0]["expireAfter"] = "2h"
    jobs = [{"name": "one", "tenant": "ml-research", "flavors": ["l40s-on-demand"], "gpusPerPod": 2,
             "arrivals": {"at": ["0s"]}, "duration": {"fixed": run_for}}]
    return measure(run(document, workload(duration=duration, jobs=jobs, doNotDisrupt=do_not_disrupt)))


def test_a_do_not_disrupt_job_that_ends_within_the_grace_period_finishes_on_its_expired_node():
    # Running from BATCH + LAUNCH for 2 h 30 min: past the expiry at BATCH + 2 h, before the drain's deadline
    # (BATCH + 2 h + 1 h - 300 s). The node goes once the job is done: one node, no restart.
    figures = expiring_job("2h30m", True)
    research, pool = figures["tenants"]["ml-research"], figures["pools"]["gpu-l40s"]
    assert (research[m.LOST], research[m.FINISHED], pool[m.disrupted("expiry")]) == (0.0, 1, 1)
    assert research[m.USEFUL] == pytest.approx(2.5 * 2 / 4)
    assert pool[m.LAUNCHED] == 1
    assert pool[m.PROVISIONED] == pytest.approx((LAUNCH + 2.5 * HOUR) / HOUR)  # a g6e.xlarge: 1 GPU


def test_without_the_annotation_the_same_job_starts_over_at_the_expiry():
    # A 3 h run: the job's first attempt is thrown away at BATCH + 2 h; its second still runs at the end.
    research = expiring_job("2h30m", False, duration="3h")["tenants"]["ml-research"]
    assert research[m.lost("expiry")] == pytest.approx((2 * HOUR - LAUNCH) * 2 / 4 / HOUR)
    assert research[m.FINISHED] == 0


def test_a_do_not_disrupt_job_longer_than_the_grace_period_is_deleted_at_the_deadline():
    # 3 h from BATCH + LAUNCH would end after BATCH + 2 h + 1 h - 300 s: the job is deleted then and starts over.
    research = expiring_job("3h", True, duration="3h")["tenants"]["ml-research"]
    deadline = BATCH + 2 * HOUR + HOUR - TENANT_POD_MAX_GRACE_SECONDS
    assert research[m.lost("expiry")] == pytest.approx((deadline - (BATCH + LAUNCH)) * 2 / 4 / HOUR)
    assert research[m.restarts("expiry")] == 1


def test_consolidation_passes_by_a_node_with_a_do_not_disrupt_pod():
    # tests/test_sim_measures.py's consolidation scenario: C (1 GPU) would move from node 1 to node 2 once A is
    # done. With the annotation node 1 keeps it, and goes 15 min after C ends instead: nothing is lost.
    jobs = [job("a", "inference", "l40s-on-demand", 3, "0s", "1h"), job("b", "inference", "l40s-on-demand", 3, "10m", "3h"),
            job("c", "inference", "l40s-on-demand", 1, "20m", "2h")]
    figures = measure(measures_run(fixture_document("multi-pool"),
                                   measures_workload(duration="4h", jobs=jobs, doNotDisrupt=True)))
    inference, l40s = figures["tenants"]["inference"], figures["pools"]["gpu-l40s"]
    assert inference[m.LOST] == 0.0
    assert inference[m.USEFUL] == pytest.approx(3 * 1 + 3 * 3 + 1 * 2)
    assert l40s[m.disrupted("consolidation")] == 2  # each node once empty


def test_trace_tasks_carry_the_annotation_too():
    # tests/fixtures/traces/one-service.csv: one 1-GPU task of 5 h, replayed as a job. Its node expires at BATCH +
    # 2 h; the drain keeps it to the deadline, 55 min later, when it is deleted and starts over.
    document = dev()
    document["gpu-platform:nodePools"][0]["expireAfter"] = "2h"
    classes = {"LS": {"tenants": ["ml-research"], "flavors": ["l40s-on-demand"]}}
    source = {"format": "alibaba-gpu-v2023", "file": "tests/fixtures/traces/one-service.csv", "classes": classes}
    research = measure(run(document, workload(duration="3h", traces=[source], doNotDisrupt=True)))["tenants"]["ml-research"]
    deadline = BATCH + 3 * HOUR - TENANT_POD_MAX_GRACE_SECONDS
    assert research[m.lost("expiry")] == pytest.approx((deadline - (BATCH + LAUNCH)) / HOUR)


def test_ec2_reclaims_an_expired_spot_node_still_draining_around_a_do_not_disrupt_job():
    # A 2-slice job of 3 h on dev's spot flavor, nodes expiring after 2 h: at the end of a 2 h 30 min run the
    # node is still draining (its deadline is 55 min after the expiry). EC2's interruption notice then still
    # takes it: the job is evicted at once and the drain stops waiting.
    document = dev()
    document["gpu-platform:nodePools"][0]["expireAfter"] = "2h"
    jobs = [{"name": "one", "tenant": "ml-research", "flavors": ["l40s-spot"], "gpusPerPod": 2,
             "arrivals": {"at": ["0s"]}, "duration": {"fixed": "3h"}}]
    result = run(document, workload(duration="2h30m", jobs=jobs, doNotDisrupt=True))
    (node,) = result.sim.pools["gpu-l40s"].nodes
    assert (node.draining, len(node.pods)) == (True, 1)
    result.sim._interrupt(node)
    assert [fact.cause for fact in result.sim.ledger.disrupted] == ["expiry", "interruption"]
    assert (node.draining, node.pods) == (False, [])
