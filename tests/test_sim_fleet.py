"""MultiKueue's dispatch rule (models/kueue/multikueue_dispatch.py) and a fleet run on it (sim/fleet.py).

Two workers: the frozen prod stack (tests/fixtures/shipped/prod.yaml) and the same stack in eu-west-1
(tests/fixtures/fleet/prod-eu.yaml). llm-training may hold 16 A100 GPUs (a100-spot nominal 8 + borrowingLimit 8;
the A100 NodePool's limit is 16): two 8-GPU jobs at a time per worker. Launch to Ready is pinned at 300 s
(median = p95: no spread), spot interruptions are off, so every wait below is worked out by hand:

    arrival t=600 (three 8-GPU jobs, run 3600 s), latency L = 2 s each way:
    fleet    copies on both workers at 602; both admit jobs 1 and 2; the tie goes to prod (config order);
             the manager sees it at 604, creates the jobs on prod at 606 and deletes prod-eu's copies, whose
             quota prod-eu then gives job 3 at 606; seen at 608, created at 610. Waits 6, 6, 10 s.
    baseline all homed on prod (`first`), no latency: jobs 1 and 2 at 600; their node is Ready at
             600 + 1 (Karpenter's batch) + 300 = 901, they finish at 4501 and job 3 is admitted then. Waits
             0, 0, 3901 s.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from models.kueue.multikueue_dispatch import (
    ALL_AT_ONCE,
    INCREMENTAL,
    admitting_worker,
    copies,
    removed_copies,
    retry_after_lost,
    round_starts_after,
    round_workers,
    rounds,
)
from sim.fleet import FIRST, Fleet, FleetError, FleetScenario, Worker, check_fleet
from sim.fleet_report import fleet_ledger, measure
from sim.measures import WAIT_MEAN
from sim.workload import load_workload

from .conftest import SHIPPED_STACKS_DIR, load, shipped_document

FLEET_DIR = Path(__file__).resolve().parent / "fixtures" / "fleet"
WORKERS = ("a", "b", "c", "d", "e")


@pytest.mark.parametrize(("dispatcher", "step", "index", "expected"), [
    (ALL_AT_ONCE, 3, 0, ("a", "b", "c", "d", "e")),
    (ALL_AT_ONCE, 3, 1, ()),
    (INCREMENTAL, 3, 0, ("a", "b", "c")),
    (INCREMENTAL, 3, 1, ("d", "e")),
    (INCREMENTAL, 3, 2, ()),
    (INCREMENTAL, 2, 0, ("a", "b")),
    (INCREMENTAL, 2, 1, ("c", "d")),
    (INCREMENTAL, 2, 2, ("e",)),
    (INCREMENTAL, 1, 3, ("d",)),
    (INCREMENTAL, 4, 1, ("e",)),
])
def test_each_round_nominates_the_next_step_size_workers_in_config_order(dispatcher, step, index, expected):
    assert round_workers(dispatcher, WORKERS, index, step) == expected


@pytest.mark.parametrize(("dispatcher", "workers", "step", "expected"), [
    (ALL_AT_ONCE, 5, 3, 1), (INCREMENTAL, 5, 3, 2), (INCREMENTAL, 6, 3, 2), (INCREMENTAL, 7, 3, 3),
    (INCREMENTAL, 5, 1, 5), (INCREMENTAL, 2, 3, 1),
])
def test_rounds_that_nominate_someone(dispatcher, workers, step, expected):
    assert rounds(dispatcher, workers, step) == expected


def test_incremental_rounds_start_five_minutes_apart_and_all_at_once_has_one():
    assert [round_starts_after(INCREMENTAL, k) for k in range(3)] == [0.0, 300.0, 600.0]
    assert [round_starts_after(ALL_AT_ONCE, k) for k in range(2)] == [0.0, None]


@pytest.mark.parametrize(("admitted", "expected"), [
    ({}, None),
    ({"c": 12.0}, "c"),
    ({"c": 12.0, "a": 13.0}, "c"),
    ({"d": 5.0, "b": 5.0, "e": 4.0}, "e"),
    ({"d": 5.0, "b": 5.0}, "b"),  # a tie: the first in MultiKueueConfig order
])
def test_the_earliest_admission_wins(admitted, expected):
    assert admitting_worker(admitted, WORKERS) == expected


def test_copies_go_to_connected_nominees_and_the_losers_are_removed():
    assert copies(("a", "b", "c"), ("c", "a", "e")) == ("a", "c")
    assert removed_copies(("a", "b", "c"), "b") == ("a", "c")
    assert retry_after_lost(lost_since=100.0, now=400.0, timeout=900.0) == 600.0
    assert retry_after_lost(lost_since=100.0, now=1500.0, timeout=900.0) == 0.0


@pytest.fixture(scope="module")
def workers() -> tuple[Worker, ...]:
    eu = yaml.safe_load((FLEET_DIR / "prod-eu.yaml").read_text())["config"]
    return (Worker("prod", "us-east-1", load(shipped_document("prod"))),
            Worker("prod-eu", "eu-west-1", load(eu)))


@pytest.fixture(scope="module")
def three_jobs(tmp_path_factory):
    path = tmp_path_factory.mktemp("fleet") / "three-jobs.yaml"
    path.write_text(yaml.safe_dump({
        "description": "three 8-GPU jobs at once", "start": "2026-06-01T06:00:00Z", "duration": "3h",
        "sampleInterval": "10m", "spot": {"interruptionsPerNodeHour": 0},
        "launchToReady": {"p4d": {"medianSeconds": 300, "p95Seconds": 300}},
        "jobs": [{"name": "burst", "tenant": "llm-training", "flavors": ["a100-spot"], "gpusPerPod": 8,
                  "arrivals": {"at": ["10m", "10m", "10m"]}, "duration": {"fixed": "1h"}}],
    }))
    return load_workload(path)


def _run(scenario: FleetScenario) -> Fleet:
    fleet = Fleet(scenario, seed=0)
    fleet.run()
    return fleet


def _admissions(fleet: Fleet) -> dict[int, list[float]]:
    ledger, _ = fleet_ledger(fleet)
    found: dict[int, list[float]] = {}
    for fact in ledger.admitted:
        found.setdefault(fact.key, []).append(round(fact.at, 3))
    return found


def test_a_full_worker_sends_the_third_job_to_the_other(workers, three_jobs):
    fleet = _run(FleetScenario(workers, three_jobs, split=FIRST))
    assert _admissions(fleet) == {1: [606.0], 2: [606.0], 3: [610.0]}
    assert {key: d.winner for key, d in fleet.workloads.items()} == {1: "prod", 2: "prod", 3: "prod-eu"}
    assert measure(fleet)["run"][WAIT_MEAN] == pytest.approx((6 + 6 + 10) / 3)


def test_the_baseline_keeps_the_third_job_waiting_on_its_home_cluster(workers, three_jobs):
    fleet = _run(FleetScenario(workers, three_jobs, split=FIRST).baseline())
    assert _admissions(fleet) == {1: [600.0], 2: [600.0], 3: [4501.0]}
    assert measure(fleet)["regions"]["prod"][WAIT_MEAN] == pytest.approx(3901 / 3)


def test_incremental_with_step_one_reaches_the_second_worker_a_round_later(workers, three_jobs):
    # Round 0 copies to prod only; job 3 reaches prod-eu in round 1, at 600 + 300 (+ L, + L, + L).
    fleet = _run(FleetScenario(workers, three_jobs, split=FIRST, dispatcher=INCREMENTAL, step_size=1))
    assert _admissions(fleet) == {1: [606.0], 2: [606.0], 3: [906.0]}


def test_a_lost_worker_s_jobs_are_dispatched_again_after_the_worker_lost_timeout(workers, three_jobs):
    # prod is lost at 1000 with jobs 1 and 2 running there; at 1000 + 900 both go out again, to prod-eu only
    # (copies at 1902). prod-eu runs job 3 until 610 + 1 + 300 + 3600 = 4511, so it admits job 1 at 1902
    # (job created at 1906) and job 2 when job 3 finishes (4511, created at 4515).
    fleet = _run(FleetScenario(workers, three_jobs, split=FIRST, lost=(("prod", 1000.0),)))
    assert _admissions(fleet) == {1: [606.0, 1906.0], 2: [606.0, 4515.0], 3: [610.0]}
    ledger, _ = fleet_ledger(fleet)
    # Jobs 1 and 2 start again (attempt 1) on prod-eu; keys above 3 are the workers' headroom placeholders.
    assert sorted((f.key, f.attempt) for f in ledger.started if f.key <= 3) == [(1, 0), (1, 1), (2, 0), (2, 1), (3, 0)]


def test_a_fleet_whose_workers_disagree_on_tenants_is_refused(workers, three_jobs):
    doc = shipped_document("prod")
    doc["gpu-platform:tenants"] = doc["gpu-platform:tenants"][:-1]
    odd = Worker("odd", "us-east-1", load(doc))
    with pytest.raises(FleetError, match=r"^worker odd: tenants .* differ from worker prod's"):
        check_fleet(FleetScenario((workers[0], odd), three_jobs))


@pytest.fixture(scope="module")
def fragmented(tmp_path_factory):
    path = tmp_path_factory.mktemp("fleet") / "fragmented.yaml"
    path.write_text(yaml.safe_dump({
        "description": "a job its quota admits and no node holds", "start": "2026-06-01T06:00:00Z", "duration": "4h",
        "sampleInterval": "10m", "spot": {"interruptionsPerNodeHour": 0},
        "launchToReady": {"p4d": {"medianSeconds": 300, "p95Seconds": 300}},
        "jobs": [{"name": "five", "tenant": "llm-training", "flavors": ["a100-spot"], "gpusPerPod": 5,
                  "arrivals": {"at": ["10m", "10m"]}, "duration": {"fixed": "3h"}},
                 {"name": "six", "tenant": "llm-training", "flavors": ["a100-spot"], "gpusPerPod": 6,
                  "arrivals": {"at": ["20m"]}, "duration": {"fixed": "10m"}}],
    }))
    return load_workload(path)


def test_a_job_no_node_holds_is_dispatched_again_at_once_where_one_cluster_backs_off(workers, fragmented):
    """prod alone behind the manager. Two 5-GPU jobs (copies at 602, created at 606) take one 8-GPU A100 node each
    (Ready at 907, run until 907 + 10800 = 11707): the NodePool's limit of 16 GPUs is reached with 3 free on each.
    The 6-GPU job arriving at 1200 fits llm-training's quota (10 + 6 = 16) and no node: admitted on prod (job
    created at 1206), its pod Pending until waitForPodsReady evicts it after 2700 s (node launch and
    registration, setup, server startup). MultiKueue sets its check to Retry and the manager requeues it with no
    backoff: copy at +4, job created at +8, so admitted at 1206 + k (2700 + 8) until a node frees at 11707, where
    the admission of 9330 binds. One cluster with its own queue requeues it after waitForPodsReady's backoff,
    60 s doubling: admitted at 1200, 3900 + 60, 6660 + 120, 9480 + 240."""
    fleet = _run(FleetScenario(workers[:1], fragmented, split=FIRST))
    assert _admissions(fleet)[3] == [1206.0, 3914.0, 6622.0, 9330.0]
    ledger, _ = fleet_ledger(fleet)
    assert [(f.key, f.at) for f in ledger.started if f.key <= 3] == [(1, 907.0), (2, 907.0), (3, 11707.0)]
    baseline = _run(FleetScenario(workers[:1], fragmented, split=FIRST).baseline())
    assert _admissions(baseline)[3] == pytest.approx([1200.0, 3960.0, 6780.0, 9720.0], abs=0.1)


def test_a_manager_stack_gives_the_fleet_its_workers_and_lost_timeout(tmp_path, capsys):
    from offline.simulate_fleet import main, manager_fleet

    shipped_project = tmp_path / "project"
    shipped_project.mkdir()
    for stack in ("fleet-manager", "fleet-worker-usw2"):
        text = (SHIPPED_STACKS_DIR / f"{stack}.yaml").read_text()
        (shipped_project / f"Pulumi.{stack}.yaml").write_text(text.replace("workerLostTimeout: 15m", "workerLostTimeout: 7m"))
    assert manager_fleet("fleet-manager", shipped_project) == (["fleet-worker-usw2"], 420.0)
    with pytest.raises(FleetError, match=r"^--stack fleet-worker-usw2: gpu-platform:fleet.role is worker, not manager"):
        manager_fleet("fleet-worker-usw2", shipped_project)
    workload = tmp_path / "two-jobs.yaml"
    workload.write_text(yaml.safe_dump({
        "description": "two jobs", "start": "2026-06-01T06:00:00Z", "duration": "1h", "sampleInterval": "10m",
        "jobs": [{"name": "j", "tenant": "ml-research", "flavors": ["l40s-on-demand"], "gpusPerPod": 1,
                  "arrivals": {"at": ["5m", "6m"]}, "duration": {"fixed": "10m"}}],
    }))
    common = dict(seeds=[0], dispatcher="all-at-once", step_size=3, latency=2.0, split="alternate", processes=1,
                  project_dir=shipped_project)
    assert main([], workload, tmp_path / "out", manager="fleet-worker-usw2", **common) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert main([], workload, tmp_path / "out", manager="fleet-manager", **common) == 0
    report = (tmp_path / "out" / "report.md").read_text()
    assert "fleet-worker-usw2 (us-west-2)" in report


def test_a_trace_is_replayed_through_the_fleet(workers, tmp_path):
    """`make simulate-fleet` replays the Alibaba trace: the manager reads it as a single cluster does. The tiny
    trace's window 1h-5h keeps t-long (2 GPUs) and t-late-start (half a GPU, a whole one on prod's pools) carried in
    at 0 as inference services on the L40S pool, t-in (BE) at 1 h as an experiments job on the A100s and drops
    t-unmapped (Guaranteed, which this workload does not map): three workloads, each dispatched to both workers
    and won by prod (both admit at once; config order breaks the tie)."""
    path = tmp_path / "tiny-trace.yaml"
    path.write_text(yaml.safe_dump({
        "description": "the tiny trace through a fleet", "start": "2026-06-01T06:00:00Z", "duration": "6h",
        "sampleInterval": "10m", "spot": {"interruptionsPerNodeHour": 0},
        "traces": [{"format": "alibaba-gpu-v2023", "file": "tests/fixtures/traces/tiny-alibaba.csv",
                    "window": {"start": "1h", "end": "5h"},
                    "classes": {"LS": {"tenants": ["inference"], "flavors": ["l40s-on-demand"], "replay": "service"},
                                "BE": {"tenants": ["experiments"], "flavors": ["a100-spot"]}}}],
    }))
    fleet = _run(FleetScenario(workers, load_workload(path), split=FIRST))
    dispatched = sorted((d.group.created, d.group.tenant, d.group.size * d.group.units_per_pod, d.winner)
                        for d in fleet.workloads.values())
    assert dispatched == [(0.0, "inference", 1, "prod"), (0.0, "inference", 2, "prod"),
                          (3600.0, "experiments", 1, "prod")]


def test_a_chosen_copy_preempted_before_its_job_starts_hands_no_admission_to_its_worker():
    """The manager chose copy 5 (its admission waits for the worker's next scheduling call), and that call's
    preemption takes 5's reservation: no job of 5 may start there (it waits in the worker's queue once released),
    while copy 6, chosen too and untouched, starts."""
    from typing import cast

    from sim.admission import ModelKueue
    from sim.fleet import WorkerKueue
    from sim.queueing import Admission, Decisions

    class Inner:
        def schedule(self, now):
            return Decisions(preempted=(5,), admitted=(Admission(7, "a100-spot"),))

    class Manager:
        def __init__(self):
            self.evicted_keys = []

        def evicted(self, worker, key):
            self.evicted_keys.append((worker, key))

        def reserved(self, worker, key):
            raise AssertionError("nothing here is a remote copy")

    manager = Manager()
    kueue = WorkerKueue(cast(ModelKueue, Inner()), "prod", cast(Fleet, manager))
    kueue.released = [Admission(5, "a100-spot"), Admission(6, "a100-spot")]
    decisions = kueue.schedule(0.0)
    assert [a.key for a in decisions.admitted] == [6, 7]
    assert decisions.preempted == (5,)
    assert manager.evicted_keys == [("prod", 5)]
