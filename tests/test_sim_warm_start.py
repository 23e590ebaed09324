"""The simulator honours a stack's warm start: headroom preempted then replaced, staged images and weights, working hours.

Hand-worked scenarios on copies of the dev stack (one time-sliced L40S pool, g6e launch made exact) and
the multi-pool fixture (notebook-assist's 22:00-06:00 Tokyo floor).
"""

from __future__ import annotations

import functools
from typing import Any

import pytest

from sim import measures as m
from sim import report
from sim.admission import kueue_for
from sim.engine import Options, Simulation
from sim.experiment import Scenario, measure, replicate, run_many
from sim.run import Result, simulate
from sim.state import Node, Pod
from sim.warm_start import limit_gpus, start_delay
from sim.workload import Workload, load_workload

from .conftest import fixture_document, load, project_path, shipped_document
from .test_sim_scenarios import BATCH, LAUNCH, dev, workload

PREEMPTION = 5  # config/time_to_gpu.py PREEMPTION


def with_headroom(gpus: int = 1) -> dict:
    document = dev()
    document["gpu-platform:nodePools"][0]["warmStart"] = {"headroom": {"gpus": gpus}}
    return document


def job_at_1h(slices: int = 2) -> dict:
    return {
        "name": "one", "tenant": "ml-research", "flavors": ["l40s-on-demand"], "gpusPerPod": slices,
        "arrivals": {"at": ["1h"]}, "duration": {"fixed": "10h"},  # still running at the end: started_at stays
    }


def run(document: dict, load_: Workload, without: frozenset[str] = frozenset()) -> Result:
    return simulate(load(document), load_, kueue_for, project_dir=project_path(), without=without)


def the_job(result: Result):
    [group] = [g for g in result.sim.groups.values() if g.tenant == "ml-research"]
    return group


def test_a_pod_evicts_a_warm_placeholder_and_karpenter_replaces_the_headroom():
    result = run(with_headroom(), workload(jobs=[job_at_1h()]))
    # The placeholder's node was Ready at BATCH + LAUNCH; the job evicts it at 1 h and starts PREEMPTION later.
    assert the_job(result).started_at == pytest.approx(3600 + PREEMPTION)
    l40s = measure(result)["pools"]["gpu-l40s"]
    # Two nodes: the placeholder's first one (taken by the job), and its replacement launched at 1 h.
    assert l40s[m.LAUNCHED] == 2
    # One GPU held from the first node's Ready to 1 h, and from the replacement's Ready to the end (6 h).
    held = (3600 - (BATCH + LAUNCH)) + (6 * 3600 - (3600 + BATCH + LAUNCH))
    assert l40s[m.HEADROOM] * 3600 == pytest.approx(held)
    # The placeholders' GPUs are idle: the pool's allocation is the job's 2 slices (half a GPU at 4 slices per
    # GPU), bound at 1 h and held to the end, nothing of the headroom's.
    pool = result.sim.pools["gpu-l40s"]
    assert pool.slices_per_gpu == 4
    assert l40s[m.ALLOCATED] * 3600 == pytest.approx((6 * 3600 - 3600) * 2 / 4)
    assert measure(result)["tenants"]["ml-research"][m.restarts("preemption")] == 0  # kube-scheduler's, not Kueue's
    assert limit_gpus(result.sim, pool) == 8 + 1  # Karpenter may launch the headroom beside the declared GPUs


def test_without_headroom_the_same_pod_waits_for_a_node():
    result = run(with_headroom(), workload(jobs=[job_at_1h()]), without=frozenset({"headroom"}))
    assert the_job(result).started_at == pytest.approx(3600 + BATCH + LAUNCH)
    l40s = measure(result)["pools"]["gpu-l40s"]
    assert (l40s[m.LAUNCHED], l40s[m.HEADROOM]) == (1, 0.0)
    assert limit_gpus(result.sim, result.sim.pools["gpu-l40s"]) == 8


def test_a_pod_that_the_headroom_cannot_hold_still_waits_for_a_node():
    # 8 slices: more than the placeholder's one GPU (4 slices) frees, so it evicts nothing; Karpenter packs
    # the 8 slices onto a new node, and the placeholder stays where it is.
    result = run(with_headroom(), workload(jobs=[job_at_1h(slices=8)]))
    assert the_job(result).started_at == pytest.approx(3600 + BATCH + LAUNCH)
    assert measure(result)["run"][m.HEADROOM] * 3600 == pytest.approx(6 * 3600 - (BATCH + LAUNCH))


# --- server start: images and weights -------------------------------------------------------------------


def prod_sim(without: frozenset[str] = frozenset()) -> Simulation:
    config = load(shipped_document("prod"))
    return Simulation(config, Workload.model_validate({"start": "2026-06-01T00:00:00Z", "duration": "1h"}),
                      kueue_for(config, False), Options(without=without))


def replica_on_l40s(sim: Simulation, s3: bool) -> tuple[Pod, Node]:
    pool = sim.pools["gpu-l40s"]
    group = sim.new_group(tenant="inference", tier="production", priority=1000, size=1, units_per_pod=1,
                          flavors=("l40s-on-demand",), run_seconds=None, stream="x", deployment="inference/chat",
                          start_delay=292.0)
    if s3:
        sim.s3_models.add("inference/chat")
    node = Node(1, pool, pool.options[0], "on-demand", 1.0, 0.0)
    return Pod(group, 1, 0.0), node


def test_server_start_counts_the_snapshot_the_node_cache_and_s3_weights():
    # prod's gpu-l40s: image snapshot at min(300, 125 MiB/s gp3) -> 4 GiB in 32.8 s instead of a 68.3 s pull;
    # S3 at 1000 MiB/s: 16 GiB in 16.4 s instead of 163.8 s from the Hub.
    pull, snapshot, hub, s3 = 10 * 1024 / 150, 4 * 1024 / 125, 16 * 1024 / 100, 16 * 1024 / 1000
    sim = prod_sim()
    pod, node = replica_on_l40s(sim, s3=True)
    assert start_delay(sim, pod, node, preempted=False) == pytest.approx(292 - (pull - snapshot) - (hub - s3))
    # The second replica on the same node finds the image the first pulled there.
    node.images.add("inference/chat")
    assert start_delay(sim, pod, node, preempted=True) == pytest.approx(292 - pull - (hub - s3) + PREEMPTION)
    cold = prod_sim(frozenset({"image-snapshot", "model-source"}))
    pod, node = replica_on_l40s(cold, s3=True)
    assert start_delay(cold, pod, node, preempted=False) == pytest.approx(292)


# --- working hours ----------------------------------------------------------------------------------------


def notebook_day(without: frozenset[str] = frozenset()) -> list[float]:
    load_ = Workload.model_validate({
        "start": "2026-06-01T00:00:00Z", "duration": "24h", "sampleInterval": "30m",
        "inference": [{
            "tenant": "data-science", "deployment": "notebook-assist", "requestsPerSecondPerReplica": 8,
            "serverStartSeconds": 60, "rate": {"day": 0.1, "night": 0.1},
        }],
    })
    result = simulate(load(fixture_document("multi-pool")), load_, kueue_for, project_dir=project_path(), without=without)
    return result.sim.record.replicas.values["data-science/notebook-assist replicas"]


def test_the_working_hours_floor_holds_only_inside_its_window():
    # Samples every 30 min from 00:00 UTC; the window is 22:00-06:00 Tokyo = 13:00-21:00 UTC.
    replicas = notebook_day()
    at = {hour: replicas[hour * 2] for hour in (12, 14, 20, 23)}
    # Outside: minReplicas 1. Inside: the cron trigger's 3. After 21:00 the HPA's 300 s stabilisation and
    # 25 % a minute bring it back to 1 well before 23:00.
    assert at == {12: 1.0, 14: 3.0, 20: 3.0, 23: 1.0}
    assert set(notebook_day(frozenset({"working-hours"}))[1:]) == {3.0}


# --- the design's surge on prod ---------------------------------------------------------------------------


COLD = frozenset({"headroom", "image-snapshot", "model-source"})
SURGE_SEEDS = [0, 1, 2, 3, 4]  # docs/time-to-gpu.md's `SEEDS=5`


@functools.cache
def surge(without: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Model A's figures over seeds 0-4, prod with workloads/surge-warm-start.yaml (`make simulate SEEDS=5`)."""
    config = load(shipped_document("prod"))
    workload_ = load_workload(project_path("workloads", "surge-warm-start.yaml"))
    scenario = Scenario(config, workload_, project_dir=project_path(), without=without)
    return replicate(run_many(scenario, SURGE_SEEDS, workers=1))["deployments"]["inference/model-a"]


def test_with_headroom_and_staging_a_surge_replica_is_ready_within_three_minutes_at_p95():
    assert surge()[m.TTG_P95]["mean"] <= 180
    assert surge(COLD)[m.TTG_P95]["mean"] > 180


def test_the_allocation_plot_counts_no_placeholder_as_allocated():
    # No tenant work at all: the headroom's node is up, its one GPU held by a placeholder, and nothing is allocated.
    result = run(with_headroom(), workload())
    series = result.sim.record.allocation.values["gpu-l40s"]
    assert measure(result)["pools"]["gpu-l40s"][m.LAUNCHED] == 1
    assert series and set(series) == {0.0}


@pytest.mark.parametrize(
    ("row", "without"),
    [
        ("| `WORKLOAD=workloads/surge-warm-start.yaml SEEDS=5` |", frozenset()),
        ('| `... WITHOUT="headroom image-snapshot model-source"` |', COLD),
    ],
)
def test_the_time_to_gpu_guide_quotes_the_surge_as_the_simulator_measures_it(row, without):
    [line] = [line for line in project_path("docs", "time-to-gpu.md").read_text().splitlines() if line.startswith(row)]
    figures = surge(without)
    quoted = (f"{report._count(figures[m.TTG_COUNT])} scale-ups, time to GPU p50 {report._minutes(figures[m.TTG_P50])}, "
              f"**p95 {report._minutes(figures[m.TTG_P95])}**")
    assert quoted in line
