"""The simulator end to end on tiny workloads whose outcome is worked out by hand (or by queueing theory)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from sim import measures as m
from sim.admission import kueue_for
from sim.engine import PODS_READY_TIMEOUT_SECONDS, REQUEUE_BACKOFF_BASE_SECONDS
from sim.experiment import measure
from sim.ledger import Held
from sim.run import Result, simulate
from sim.workload import Workload

from .conftest import load, project_path, shipped_document

MONDAY = "2026-06-01T00:00:00Z"
LAUNCH = 240  # seconds, made exact: median = p95
BATCH = 1  # Karpenter's provisioning batch
G6E_XLARGE_USD = 1.861  # config/catalog.py: the cheapest g6e, 1 GPU
SPOT_FACTOR = 0.35  # the workload file's default spot price share


def dev() -> dict[str, Any]:
    """dev as shipped (the frozen copy): the scenarios name its tenants, pools and flavors."""
    return shipped_document("dev")


def workload(**fields: Any) -> Workload:
    document = {"start": MONDAY, "duration": "6h", "launchToReady": {"g6e": {"medianSeconds": LAUNCH, "p95Seconds": LAUNCH}}}
    return Workload.model_validate({**document, **fields})


def run(document: dict[str, Any], load_: Workload, *, seed: int = 0, static: bool = False) -> Result:
    return simulate(load(document), load_, kueue_for, seed=seed, static_baseline=static, project_dir=project_path())


def pool(result: Result, name: str = "gpu-l40s") -> dict[str, Any]:
    return measure(result)["pools"][name]


def tenant(result: Result, name: str = "ml-research") -> dict[str, Any]:
    return measure(result)["tenants"][name]


def waits(result: Result, tier: str) -> list[float]:
    """Kueue waits of a tier, creation to first admission, read from the ledger's facts."""
    created = {c.key: c for c in result.sim.ledger.created if c.tier == tier}
    first: dict[int, float] = {}
    for fact in result.sim.ledger.admitted:
        first.setdefault(fact.key, fact.at)
    return [first[key] - c.at for key, c in created.items() if key in first]


def one_job(at: str, run_for: str, flavor: str = "l40s-spot", slices: int = 2) -> dict[str, Any]:
    return {
        "name": "one",
        "tenant": "ml-research",
        "flavors": [flavor],
        "gpusPerPod": slices,
        "arrivals": {"at": [at]},
        "duration": {"fixed": run_for},
    }


def test_a_job_gets_a_node_after_its_launch_and_the_empty_node_goes_consolidate_after_later():
    result = run(dev(), workload(jobs=[one_job("1h", "30m")]))
    l40s = pool(result)
    launched = 3600 + BATCH
    ready = launched + LAUNCH
    finished = ready + 1800
    consolidated = finished + 5 * 60  # dev's consolidateAfter
    assert (l40s[m.LAUNCHED], l40s[m.disrupted("consolidation")]) == (1, 1)
    assert l40s[m.PROVISIONED] == pytest.approx((consolidated - launched) / 3600)  # one g6e.xlarge: 1 GPU
    # Bound at Ready, held through the run: 2 of the GPU's 4 slices.
    assert l40s[m.ALLOCATED] == pytest.approx(1800 / 3600 * 2 / 4)
    assert l40s[m.COST] == pytest.approx((consolidated - launched) / 3600 * G6E_XLARGE_USD * SPOT_FACTOR)
    assert waits(result, "standard") == [0.0]
    assert tenant(result)[m.COST] == pytest.approx(1800 / 3600 * G6E_XLARGE_USD * SPOT_FACTOR * 2 / 4)


def test_a_budget_window_holds_an_empty_node_until_it_closes():
    document = dev()
    document["gpu-platform:nodePools"][0]["disruption"]["budgets"] = [
        {"nodes": "50%"},
        {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h"},
    ]
    # 10:00 Monday: the job ends at 10:34:01, the node is consolidatable from 10:39:01, held until 17:00.
    result = run(document, workload(duration="20h", jobs=[one_job("10h", "30m")]))
    l40s = pool(result)
    launched = 10 * 3600 + BATCH
    assert l40s[m.disrupted("consolidation")] == 1
    lived = l40s[m.PROVISIONED] * 3600  # 1 GPU
    assert 17 * 3600 - launched <= lived < 17 * 3600 + 60 - launched  # the next retry after the window


def test_a_job_whose_pods_are_not_ready_in_time_is_evicted_and_requeued_after_the_backoff():
    # A node that takes 50 minutes: past waitForPodsReady's 45-minute timeout.
    slow = PODS_READY_TIMEOUT_SECONDS + 300
    result = run(
        dev(),
        workload(launchToReady={"g6e": {"medianSeconds": slow, "p95Seconds": slow}}, jobs=[one_job("0s", "10m")]),
    )
    research = tenant(result)
    assert research[m.restarts("pods-ready-timeout")] == 1
    # Requeued 60 s after the eviction, admitted again, and run on the node launched for its first attempt.
    assert slow - PODS_READY_TIMEOUT_SECONDS > REQUEUE_BACKOFF_BASE_SECONDS
    assert [fact.key for fact in result.sim.ledger.admitted] == [1, 1]
    assert research[m.FINISHED] == 1
    assert pool(result)[m.LAUNCHED] == 1


def test_a_borrower_beyond_nominal_waits_when_borrowing_is_off_in_the_static_baseline():
    # inference: nominal 12 slices on l40s-on-demand, borrowingLimit 4. Two 8-slice jobs at once:
    # 16 fits nominal + borrowing, so both start; in the static baseline the second waits for the first.
    jobs = [{
        "name": "pair", "tenant": "inference", "flavors": ["l40s-on-demand"], "gpusPerPod": 8,
        "arrivals": {"at": ["1h", "1h"]}, "duration": {"fixed": "1h"},
    }]
    shared = run(dev(), workload(jobs=jobs))
    static = run(dev(), workload(jobs=jobs), static=True)
    assert sorted(waits(shared, "production")) == [0.0, 0.0]
    assert sorted(waits(static, "production")) == pytest.approx([0.0, 3600.0])


def erlang_c(servers: int, offered: float) -> float:
    """Probability an arrival waits in M/M/c (Erlang C), from its textbook formula."""
    top = offered**servers / math.factorial(servers) * servers / (servers - offered)
    bottom = sum(offered**k / math.factorial(k) for k in range(servers)) + top
    return top / bottom


def test_one_queue_of_c_slots_agrees_with_erlang_c():
    # ml-research's l40s-spot quota: 4 slices, no borrowing; one slice per job, so 4 servers. Static
    # capacity (Ready from the start) keeps node launches out of it: M/M/4 with a = 3 (rho 0.75).
    arrivals, mean_hours, servers = 3.0, 1.0, 4
    jobs = [{
        "name": "mm4", "tenant": "ml-research", "flavors": ["l40s-spot"], "gpusPerPod": 1,
        "arrivals": {"perHour": arrivals}, "duration": {"exponentialMean": "1h"},
    }]
    result = run(dev(), workload(duration="1500h", sampleInterval="24h", jobs=jobs), seed=7, static=True)
    standard = waits(result, "standard")
    offered = arrivals * mean_hours
    waiting = erlang_c(servers, offered)  # 0.509
    mean_wait = waiting / (servers / mean_hours - arrivals) * 3600  # 1833 s
    assert len(standard) > 4000
    # Within three standard errors, estimated by batch means (waits in a queue are correlated, so the
    # plain binomial error would be too small).
    checks = (([1.0 if w > 0 else 0.0 for w in standard], waiting, 0.1), (standard, mean_wait, 0.3))
    for values, expected, precision in checks:
        estimate, error = batch_means(values, batches=10)
        assert abs(estimate - expected) < 3 * error, (estimate, expected, error)
        assert error < precision * expected  # and the run is long enough for that to mean something


def batch_means(values: list[float], batches: int) -> tuple[float, float]:
    size = len(values) // batches
    means = [sum(values[i * size : (i + 1) * size]) / size for i in range(batches)]
    mean = sum(means) / batches
    variance = sum((m - mean) ** 2 for m in means) / (batches - 1)
    return mean, math.sqrt(variance / batches)


def test_doubling_borrowing_limits_shortens_waits_and_raises_allocation():
    # inference runs 2-slice jobs that need more than its 12 nominal slices; ml-research is idle and lends.
    jobs = [{
        "name": "load", "tenant": "inference", "flavors": ["l40s-on-demand"], "gpusPerPod": 2,
        "arrivals": {"perHour": 5}, "duration": {"fixed": "2h"},
    }]
    # Measured over the 10 loaded hours: more admitted at once means more GPU-hours within them.
    before = run(dev(), workload(duration="10h", jobs=jobs), seed=3)
    # The borrower's limits doubled (ml-research's cannot be: inference lends only 4, and config refuses more).
    doubled_document = dev()
    (inference,) = [t for t in doubled_document["gpu-platform:tenants"] if t["name"] == "inference"]
    for quota in inference["gpu"].values():
        quota["borrowingLimit"] = 2 * quota.get("borrowingLimit", 0)
    after = run(doubled_document, workload(duration="10h", jobs=jobs), seed=3)

    def mean_wait(result: Result) -> float:
        production = waits(result, "production")
        return sum(production) / len(production)

    def allocated(result: Result) -> float:
        return tenant(result, "inference")[m.ALLOCATED]

    assert mean_wait(after) < mean_wait(before)
    assert allocated(after) > allocated(before)


SURGE = {
    "tenant": "inference",
    "deployment": "chat",
    "requestsPerSecondPerReplica": 4,
    "serverStartSeconds": 120,
    "rate": {"day": 4, "night": 4, "surges": [{"at": "1h", "duration": "30m", "factor": 5}]},
}


def test_a_surge_scales_the_deployment_up_and_each_new_replica_is_timed_to_its_gpu():
    result = run(dev(), workload(duration="3h", inference=[SURGE]))
    record = result.sim.record
    started = {fact.key: fact.at for fact in reversed(result.sim.ledger.started)}
    times = [started[fact.key] - fact.at for fact in result.sim.ledger.scale_ups if fact.key in started]
    # 20 req/s at 4 per replica: at least 4 replicas added; each waits at least for its server to start,
    # less the image pull when an earlier replica already pulled it onto the same node (sim/warm_start.py;
    # config/time_to_gpu.py: 10 GiB at 150 MiB/s).
    assert len(times) >= 4
    assert min(times) >= 120 - 10 * 1024 / 150 - 1e-6
    # A replica on a new node waits for the batch, the launch and its server; none waits longer than that
    # plus the HPA's own pacing (nodes come one launch after the decision).
    assert max(times) <= BATCH + LAUNCH + 120 + 60
    replicas = record.replicas.values["inference/chat replicas"]
    assert max(replicas) >= 5 and replicas[-1] < max(replicas)  # back down after the surge


def test_the_same_seed_gives_the_same_report_and_another_seed_another():
    jobs = [{
        "name": "batch", "tenant": "ml-research", "flavors": ["l40s-spot"], "gpusPerPod": 1,
        "arrivals": {"perHour": 4}, "duration": {"exponentialMean": "30m"},
    }]
    def ledger(seed: int) -> tuple[list[Held], list[float]]:
        result = run(dev(), workload(jobs=jobs), seed=seed)
        return result.sim.ledger.held, [fact.at for fact in result.sim.ledger.created]

    first = ledger(1)
    assert first == ledger(1)
    assert first != ledger(2)


def test_a_gang_starts_only_when_its_last_pod_is_ready():
    # A 2-slice job holds half of a 4-slice g6e.xlarge; a gang of two 2-slice pods arrives at 1h: its first
    # pod fits beside the job at once, the second waits for a new node (batch + launch). On-demand, where
    # ml-research's 12 slices of quota admit both.
    gang = {
        "name": "gang", "tenant": "ml-research", "flavors": ["l40s-on-demand"], "gpusPerPod": 2, "pods": 2,
        "arrivals": {"at": ["1h"]}, "duration": {"fixed": "3h"},
    }
    first = one_job("0s", "3h", flavor="l40s-on-demand")
    result = run(dev(), workload(duration="2h", jobs=[first, gang]))  # both still running at the end
    started = {group.stream: group.started_at for group in result.sim.groups.values()}
    assert started["one"] == pytest.approx(BATCH + LAUNCH)
    assert started["gang"] == pytest.approx(3600 + BATCH + LAUNCH)
    assert pool(result)[m.LAUNCHED] == 2


def test_an_expired_node_is_replaced_and_its_job_runs_again_on_the_new_one():
    document = dev()
    document["gpu-platform:nodePools"][0]["expireAfter"] = "4h"
    # A holds 2 slices 00:00-03:04, B the other 2 from 02:00: the node (launched 00:00:01) expires at
    # 04:00:01 under B, which starts over on a new node: Ready 4 min later, done 3 h after that.
    jobs = [one_job("0s", "3h", flavor="l40s-on-demand"), {**one_job("2h", "3h", flavor="l40s-on-demand"), "name": "b"}]
    result = run(document, workload(duration="8h", jobs=jobs))
    l40s = pool(result)
    b = next(group for group in result.sim.groups.values() if group.stream == "b")
    assert (l40s[m.disrupted("expiry")], l40s[m.LAUNCHED], b.evictions) == (1, 2, 1)
    assert tenant(result)[m.FINISHED] == 2
    expired_at = BATCH + 4 * 3600
    b_done = expired_at + BATCH + LAUNCH + 3 * 3600
    # The first node's 4 h, the second's from its launch to its consolidation 5 min after B is done.
    assert l40s[m.PROVISIONED] * 3600 == pytest.approx(4 * 3600 + (b_done + 300 - (expired_at + BATCH)))


def test_a_spot_interruption_evicts_the_job_and_karpenter_launches_a_replacement():
    # One interruption per node-hour against a 6-hour job: the chance of none is e^-6 (0.25 %).
    jobs = [one_job("0s", "6h")]
    result = run(dev(), workload(duration="12h", spot={"interruptionsPerNodeHour": 1.0}, jobs=jobs), seed=5)
    l40s = pool(result)
    restarted = tenant(result)[m.restarts("interruption")]
    assert restarted >= 1
    assert l40s[m.disrupted("interruption")] >= restarted  # an empty node may be interrupted too
    assert l40s[m.LAUNCHED] >= restarted + 1  # a replacement for each node the job lost
    assert waits(result, "standard") == [0.0]  # admitted once: node loss is not a Kueue eviction


def test_a_pod_goes_to_the_least_allocated_node_that_fits():
    # Node 1 holds A (2 of 4 slices); B (4 slices) needs node 2 (Ready at 14m01s) and leaves it empty at
    # 1h14m01s, 5 minutes before consolidation. C (2 slices) at 1h16m fits both nodes and lands on the
    # emptier one, node 2, as the default scheduler scores.
    on_demand = "l40s-on-demand"
    jobs = [
        {**one_job("0s", "3h", flavor=on_demand), "name": "a"},
        {**one_job("10m", "1h", flavor=on_demand, slices=4), "name": "b"},
        {**one_job("76m", "3h", flavor=on_demand), "name": "c"},
    ]
    result = run(dev(), workload(duration="2h", jobs=jobs))
    node_of = {g.stream: g.pods[0].node_id for g in result.sim.groups.values() if g.pods}
    assert node_of == {"a": 1, "c": 2}
