"""The report's measures (sim/measures.py) against values worked out by hand on small scenarios.

Two stacks: dev (one time-sliced L40S pool, 4 slices per GPU, on-demand and spot flavors) and the
multi-pool fixture (whole-GPU A100s on spot, L40S on-demand, MIG H100s). Launch to Ready is made exact
(LAUNCH s) and Karpenter's batch is BATCH s, so every instant below is a sum written out.
"""

from __future__ import annotations

from typing import Any

import pytest

from sim import measures as m
from sim.admission import kueue_for
from sim.experiment import measure
from sim.ledger import Served
from sim.run import Result, simulate
from sim.workload import Workload

from .conftest import fixture_document, load, project_path
from .test_sim_scenarios import BATCH, LAUNCH, MONDAY, dev

G6E_XLARGE = 1.861  # config/catalog.py, USD per hour, 1 GPU
G6E_12XLARGE = 10.49264  # 4 GPUs
RELEASE = 2  # s from a preemption to its victim's quota freed (sim/engine.py PREEMPTION_RELEASE_SECONDS)


def workload(**fields: Any) -> Workload:
    exact = {family: {"medianSeconds": LAUNCH, "p95Seconds": LAUNCH} for family in ("g6e", "p4d", "p5")}
    return Workload.model_validate({"start": MONDAY, "duration": "8h", "launchToReady": exact, **fields})


def run(document: dict[str, Any], load_: Workload, *, seed: int = 0, static: bool = False) -> Result:
    return simulate(load(document), load_, kueue_for, seed=seed, static_baseline=static, project_dir=project_path())


def job(name: str, tenant: str, flavor: str, units: int, at: str, run_for: str, pods: int = 1) -> dict[str, Any]:
    return {"name": name, "tenant": tenant, "flavors": [flavor], "gpusPerPod": units, "pods": pods,
            "arrivals": {"at": [at]}, "duration": {"fixed": run_for}}


# --- useful and lost -------------------------------------------------------------------------------------


def test_a_preempted_borrower_loses_its_run_and_useful_work_is_the_run_that_finishes():
    # ml-research's 16-slice job borrows inference's 4 lendable slices at 0 (nominal 12 + 4) on a g6e.12xlarge
    # (4 GPUs), bound at BATCH + LAUNCH. inference's 12-slice job at 1 h reclaims them: ml-research is
    # preempted and stopped; its quota is freed RELEASE later, when inference is admitted and runs on the same
    # node for 1 h; ml-research is admitted again at 2 h + RELEASE and runs its 5 h from zero on the same node,
    # done at 7 h + RELEASE; the node goes 5 min later (consolidateAfter).
    jobs = [job("borrower", "ml-research", "l40s-on-demand", 16, "0s", "5h"),
            job("owner", "inference", "l40s-on-demand", 12, "1h", "1h")]
    figures = measure(run(dev(), workload(jobs=jobs)))
    bound = BATCH + LAUNCH
    research, inference, whole = figures["tenants"]["ml-research"], figures["tenants"]["inference"], figures["run"]
    assert research[m.lost("preemption")] == pytest.approx((3600 - bound) * 4 / 3600)
    assert research[m.USEFUL] == pytest.approx(5 * 4)
    assert research[m.ALLOCATED] == pytest.approx(5 * 4 + (3600 - bound) * 4 / 3600)
    assert research[m.restarts("preemption")] == 1
    assert inference[m.USEFUL] == pytest.approx(1 * 3)
    assert inference[m.LOST] == 0
    provisioned = (7 * 3600 + RELEASE + 300 - BATCH) / 3600 * 4
    assert whole[m.PROVISIONED] == pytest.approx(provisioned)
    # Idle: 4 GPUs before the first Ready, 4 while ml-research's quota is released, 1 GPU beside inference's 3 for
    # an hour, 4 GPUs for the 5 minutes before consolidation: provisioned = allocated + headroom (none) + idle.
    assert whole[m.IDLE] == pytest.approx((LAUNCH * 4 + RELEASE * 4 + 3600 * 1 + 300 * 4) / 3600)
    assert whole[m.USD_PER_USEFUL] == pytest.approx(
        (7 * 3600 + RELEASE + 300 - BATCH) / 3600 * G6E_12XLARGE / (20 + 3))
    # The borrower's Kueue wait is its first admission (at once); its time to start the first Ready. Requeued
    # after the preemption, it waits in Kueue from 1 h to 2 h + RELEASE of the 8 h: a mean queue length just over 1/8.
    assert research[m.WAIT_MEAN] == 0.0 and research[m.START_MEAN] == pytest.approx(bound)
    assert research[m.QUEUE_LENGTH] == pytest.approx((3600 + RELEASE) / (8 * 3600))


def test_an_expired_node_throws_away_the_run_of_the_job_on_it():
    # A holds 2 slices 00:04:01-03:04:01; B (2 slices) from 02:00 on the same node. The node (launched at
    # BATCH) expires at 04:00:01 under B, which starts over on a new node (BATCH + LAUNCH later) for 3 h.
    document = dev()
    document["gpu-platform:nodePools"][0]["expireAfter"] = "4h"
    jobs = [job("a", "ml-research", "l40s-on-demand", 2, "0s", "3h"), job("b", "ml-research", "l40s-on-demand", 2, "2h", "3h")]
    research = measure(run(document, workload(jobs=jobs)))["tenants"]["ml-research"]
    half = 2 / 4  # 2 of a GPU's 4 slices
    assert research[m.lost("expiry")] == pytest.approx((4 * 3600 + BATCH - 2 * 3600) * half / 3600)
    assert research[m.USEFUL] == pytest.approx(2 * 3 * half)
    assert research[m.LOST] == research[m.lost("expiry")]
    assert (research[m.restarts("expiry")], research[m.FINISHED]) == (1, 2)


def test_a_job_moved_by_consolidation_loses_its_run_so_far():
    # The multi-pool fixture's L40S pool (whole GPUs, WhenEmptyOrUnderutilized after 15 min). A (3 GPUs, 1 h) at 0
    # and B (3 GPUs, 3 h) at 10 min each get a g6e.12xlarge (4 GPUs); C (1 GPU, 2 h) at 20 min takes node 1's
    # free GPU (both nodes equally allocated: the lower id). A ends at BATCH + LAUNCH + 1 h; 15 min later node 1
    # holds only C, which fits node 2's free GPU: node 1 is consolidated and C starts again there. Node 2, empty once
    # C is done, goes 15 min later too.
    jobs = [job("a", "inference", "l40s-on-demand", 3, "0s", "1h"), job("b", "inference", "l40s-on-demand", 3, "10m", "3h"),
            job("c", "inference", "l40s-on-demand", 1, "20m", "2h")]
    figures = measure(run(fixture_document("multi-pool"), workload(duration="4h", jobs=jobs)))
    inference, l40s = figures["tenants"]["inference"], figures["pools"]["gpu-l40s"]
    consolidated = BATCH + LAUNCH + 3600 + 15 * 60
    assert l40s[m.disrupted("consolidation")] == 2
    assert inference[m.lost("consolidation")] == pytest.approx((consolidated - 20 * 60) / 3600)
    assert inference[m.restarts("consolidation")] == 1
    assert inference[m.USEFUL] == pytest.approx(3 * 1 + 3 * 3 + 1 * 2)
    c_done = consolidated + 2 * 3600
    assert l40s[m.PROVISIONED] == pytest.approx(4 * (consolidated - BATCH + c_done + 15 * 60 - (10 * 60 + BATCH)) / 3600)


def test_a_gang_restarted_by_one_lost_node_loses_what_its_other_pods_held_too():
    # A (2 slices, 3 h 30 min) at 0 on node 1 (a g6e.xlarge: 4 slices, launched at BATCH). A gang of two 2-slice
    # pods at 3 h: one pod beside A at once, the other on node 2 (Ready at 3 h + BATCH + LAUNCH). Node 1 expires
    # at 4 h + BATCH: the gang restarts, its replacement pod binds at once beside its sibling on node 2, and the
    # gang runs its 2 h again from zero.
    document = dev()
    document["gpu-platform:nodePools"][0]["expireAfter"] = "4h"
    jobs = [job("a", "ml-research", "l40s-on-demand", 2, "0s", "3h30m"),
            job("gang", "ml-research", "l40s-on-demand", 2, "3h", "2h", pods=2)]
    research = measure(run(document, workload(jobs=jobs)))["tenants"]["ml-research"]
    expired = 4 * 3600 + BATCH
    half = 2 / 4
    held_before = (expired - 3 * 3600) + (expired - (3 * 3600 + BATCH + LAUNCH))
    assert research[m.lost("expiry")] == pytest.approx(held_before * half / 3600)
    assert research[m.USEFUL] == pytest.approx((3.5 * 3600 + 2 * 2 * 3600) * half / 3600)


def test_an_inference_replica_that_loses_its_node_loses_no_work():
    # chat's one replica (minReplicas 1, a light load) on a node that expires at 2 h + BATCH: the replica is
    # recreated on a new node, and what it served before is not thrown away.
    document = dev()
    document["gpu-platform:nodePools"][0]["expireAfter"] = "2h"
    chat = {"tenant": "inference", "deployment": "chat", "requestsPerSecondPerReplica": 4, "serverStartSeconds": 60,
            "rate": {"day": 1, "night": 1}}
    inference = measure(run(document, workload(duration="3h", inference=[chat])))["tenants"]["inference"]
    assert inference[m.restarts("expiry")] == 1
    assert inference[m.LOST] == 0
    assert inference[m.USEFUL] == inference[m.ALLOCATED] > 0


def test_allocated_is_useful_plus_lost_and_provisioned_adds_up_on_every_pool_and_tenant():
    # The multi-pool fixture with spot interruptions, headroom on the A100s and a mix of jobs.
    jobs = [
        job("train", "llm-training", "a100-spot", 4, "10m", "3h", pods=2),
        job("serve", "inference", "l40s-on-demand", 2, "0s", "2h"),
        {"name": "batch", "tenant": "data-science", "flavors": ["a100-spot"], "gpusPerPod": 1,
         "arrivals": {"perHour": 2}, "duration": {"exponentialMean": "1h"}},
    ]
    figures = measure(run(fixture_document("multi-pool"), workload(spot={"interruptionsPerNodeHour": 0.3}, jobs=jobs), seed=4))
    rows = [figures["run"], *figures["pools"].values(), *figures["tenants"].values()]
    for row in rows:
        assert row[m.ALLOCATED] == pytest.approx(row[m.USEFUL] + row[m.LOST])
        assert row[m.LOST] == pytest.approx(sum(row[m.lost(cause)] for cause in ("expiry", "consolidation", "preemption",
                                                                                   "interruption", "pods-ready-timeout")))
    for row in [figures["run"], *figures["pools"].values()]:
        assert row[m.PROVISIONED] == pytest.approx(row[m.ALLOCATED] + row[m.HEADROOM] + row[m.IDLE])
    assert figures["run"][m.ALLOCATED] == pytest.approx(sum(t[m.ALLOCATED] for t in figures["tenants"].values()))
    assert figures["run"][m.HEADROOM] > 0  # the A100s' placeholders held GPUs
    assert figures["run"][m.disrupted("interruption")] > 0


# --- spot interruptions: a rate per node-hour ----------------------------------------------------------------


def test_spot_interruptions_come_at_the_workload_rate_per_spot_node_hour():
    # One 1-GPU spot node kept busy for 400 h by a job that never finishes: at 0.1 per node-hour about 40
    # interruptions. Poisson: within four standard deviations (sqrt(40) = 6.3) of the rate times the spot
    # node-hours measured. A rate read per second would interrupt each node within seconds.
    jobs = [job("forever", "ml-research", "l40s-spot", 4, "0s", "1000h")]
    load_ = workload(duration="400h", sampleInterval="24h", spot={"interruptionsPerNodeHour": 0.1}, jobs=jobs)
    pool = measure(run(dev(), load_, seed=11))["pools"]["gpu-l40s"]
    node_hours = pool[m.PROVISIONED]  # one GPU per node
    expected = 0.1 * node_hours
    assert 390 < node_hours < 410  # a node past its notice overlaps its replacement for up to 2 min
    assert abs(pool[m.disrupted("interruption")] - expected) < 4 * expected**0.5


# --- waits, queue length, time to start, and why work never runs --------------------------------------------


def test_kueue_wait_queue_length_and_time_to_start_of_a_queue_of_two():
    # Static baseline (Ready nodes, no borrowing): inference's two 8-slice jobs at 1 h against its nominal 12:
    # the first starts at once, the second waits the first's hour. Over the 6 h run one workload queued for 1 h.
    jobs = [{"name": "pair", "tenant": "inference", "flavors": ["l40s-on-demand"], "gpusPerPod": 8,
             "arrivals": {"at": ["1h", "1h"]}, "duration": {"fixed": "1h"}}]
    production = measure(run(dev(), workload(duration="6h", jobs=jobs), static=True))["tiers"]["production"]
    assert production[m.WAITED] == 2
    assert production[m.WAIT_MEAN] == pytest.approx(1800)
    assert production[m.WAIT_POSITIVE] == 0.5
    assert production[m.WAIT_MAX] == pytest.approx(3600)
    assert production[m.QUEUE_LENGTH] == pytest.approx(3600 / (6 * 3600))
    assert production[m.START_MEAN] == pytest.approx(1800)  # Ready nodes: each starts when admitted


def test_a_gang_admitted_at_once_starts_a_node_launch_later():
    jobs = [job("gang", "ml-research", "l40s-on-demand", 2, "1h", "3h", pods=2)]
    standard = measure(run(dev(), workload(duration="2h", jobs=jobs)))["tiers"]["standard"]
    assert (standard[m.WAIT_MEAN], standard[m.WAIT_POSITIVE]) == (0.0, 0.0)
    assert standard[m.START_MEAN] == pytest.approx(BATCH + LAUNCH)


@pytest.mark.parametrize(
    ("case", "units", "pods", "reason"),
    [
        # inference may hold 16 L40S GPUs (12 + 4 borrowed) but the biggest g6e of the pool has 8.
        ("wider than any node", 10, 1, "larger-than-node"),
        # 3 pods of 5 GPUs fit the quota (15 of 16) but each takes an 8-GPU node: 24 GPUs over the limit of 16.
        ("gang over the NodePool limit", 5, 3, "gang-cannot-fit"),
        # 17 GPUs: more than nominal + borrowingLimit on the only flavor allowed.
        ("over the quota", 17, 1, "quota"),
    ],
)
def test_work_that_can_never_run_is_never_admissible_with_its_reason_and_in_no_wait(case, units, pods, reason):
    jobs = [job("never", "inference", "l40s-on-demand", units, "10m", "1h", pods=pods)]
    figures = measure(run(fixture_document("multi-pool"), workload(duration="2h", jobs=jobs)))
    production = figures["tiers"]["production"]
    assert production[m.NEVER_ADMISSIBLE] == 1
    assert production[m.never_admissible(reason)] == 1
    assert (production[m.WAITED], production[m.WAIT_MEAN], production[m.NEVER_STARTED]) == (0, None, 0)


def test_work_still_waiting_at_the_end_says_why():
    # dev's spot flavor gives ml-research 4 slices and no borrowing: the first 4-slice job runs 10 h, the
    # second waits in Kueue (quota); a 2-slice on-demand job arrives a second before the end (a node launching).
    jobs = [job("first", "ml-research", "l40s-spot", 4, "0s", "10h"), job("second", "ml-research", "l40s-spot", 4, "1h", "1h"),
            job("late", "ml-research", "l40s-on-demand", 2, "1h59m59s", "1h")]
    standard = measure(run(dev(), workload(duration="2h", jobs=jobs)))["tiers"]["standard"]
    assert standard[m.NEVER_STARTED] == 2
    assert (standard[m.never_started("quota")], standard[m.never_started("starting")]) == (1, 1)
    assert standard[m.NEVER_ADMITTED] == 1


def test_pods_over_the_nodepool_limit_wait_for_capacity():
    # The multi-pool fixture's L40S pool: a 16-GPU limit, 8-GPU nodes at most. inference's three 5-GPU jobs fit
    # its quota (15 of 16) but each takes a node of its own: two nodes reach the limit, the third job waits.
    jobs = [{**job("five", "inference", "l40s-on-demand", 5, "0s", "5h"), "arrivals": {"at": ["0s", "0s", "0s"]}}]
    production = measure(run(fixture_document("multi-pool"), workload(duration="1h", jobs=jobs)))["tiers"]["production"]
    assert (production[m.STARTED], production[m.NEVER_STARTED]) == (2, 1)
    assert production[m.never_started("capacity")] == 1
    assert production[m.NEVER_ADMISSIBLE] == 0


def test_work_that_waited_for_the_nodepool_limit_is_counted_when_it_starts():
    # The same three jobs over 6 h: the third starts once one of the first two is done (5 h after its node's
    # Ready). Meanwhile waitForPodsReady evicts and requeues it every time its pods are not Ready in time.
    jobs = [{**job("five", "inference", "l40s-on-demand", 5, "0s", "5h"), "arrivals": {"at": ["0s", "0s", "0s"]}}]
    figures = measure(run(fixture_document("multi-pool"), workload(duration="6h", jobs=jobs)))
    production = figures["tiers"]["production"]
    assert (production[m.STARTED], production[m.START_BLOCKED]) == (3, 1)
    assert figures["tenants"]["inference"][m.restarts("pods-ready-timeout")] >= 1
    assert production[m.START_P95] > 5 * 3600 + BATCH + LAUNCH


# --- inference traffic ----------------------------------------------------------------------------------------


def test_served_refused_slow_and_utilisation_from_the_hpa_periods():
    # 15 s periods (demand, capacity in req/s; backlog before -> after, as serving.py's fluid queue moves it):
    periods = [
        Served("d", 0, 15, 10, 0, 0, 0, 2.5, 2),  # no Ready replica: 150 refused
        Served("d", 15, 15, 10, 8, 0, 30, 2.5, 2),  # 150 arrive, 120 served
        Served("d", 30, 15, 10, 2, 30, 150, 2.5, 2),  # 30 served; the backlog takes 30 / 2 = 15 s
        Served("d", 45, 15, 10, 2, 150, 270, 2.5, 2),  # 30 served; 150 / 2 = 75 s: its 150 arrivals are slow
        Served("d", 60, 15, 4, 20, 270, 30, 1.0, 2),  # 60 arrive, 300 served (all the capacity)
        Served("d", 75, 15, 4, 20, 30, 0, 1.0, 2),  # 60 arrive, 90 served of 300
    ]
    figures = m._traffic(periods)
    assert figures[m.DEMAND] == 4 * 150 + 2 * 60
    assert figures[m.REFUSED] == 150
    assert figures[m.SERVED] == 120 + 30 + 30 + 300 + 90
    assert figures[m.SERVED] + figures[m.REFUSED] == figures[m.DEMAND]  # the backlog is empty again at the end
    assert figures[m.UTILISATION] == pytest.approx(100 * 570 / (120 + 30 + 30 + 300 + 300))
    assert figures[m.SLOW] == 150
    assert figures[m.BACKLOG_PEAK] == 270
    assert figures[m.ABOVE_MAX] == pytest.approx(4 * 15 / 3600)  # 2.5 replicas needed against maxReplicas 2
