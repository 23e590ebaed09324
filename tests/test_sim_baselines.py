"""The fair static baseline and the one-mechanism-off variants, against figures worked out by hand.

Prices from config/catalog.py (us-east-1, USD per hour): g6e.xlarge 1.861 (1 L40S), g6e.12xlarge 10.49264 (4),
g6e.24xlarge 15.06559 (4), g6e.48xlarge 30.13118 (8), p4d.24xlarge 21.957642 (8 A100), p5.48xlarge 55.04 (8 H100).
dev's L40S pool takes every g6e size, time-sliced 4 ways, at most 8 GPUs; the multi-pool fixture's L40S pool
takes g6e.12/24/48xlarge, whole GPUs, at most 16.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from sim import measures as m
from sim.baseline import NO_NOMINAL, NO_WORKLOAD
from sim.experiment import ABLATIONS, MECHANISMS, VARIANTS, Scenario, ablation, run_one
from sim.variants import STATIC_WITHOUT
from sim.workload import Workload

from .conftest import fixture_document, load, project_path, shipped_document
from .test_sim_scenarios import BATCH, LAUNCH, MONDAY, SPOT_FACTOR, dev

XLARGE, X12, X24, X48 = 1.861, 10.49264, 15.06559, 30.13118
P4D = 21.957642


def workload(**fields: Any) -> Workload:
    exact = {family: {"medianSeconds": LAUNCH, "p95Seconds": LAUNCH} for family in ("g6e", "p4d", "p5")}
    return Workload.model_validate({"start": MONDAY, "duration": "2h", "launchToReady": exact, **fields})


def stream(tenant: str, flavor: str, units: int = 1, at: str = "1h", run_for: str = "30m", pods: int = 1) -> dict[str, Any]:
    return {"name": f"{tenant}-{flavor}-{units}-{at}", "tenant": tenant, "flavors": [flavor], "gpusPerPod": units,
            "pods": pods, "arrivals": {"at": [at]}, "duration": {"fixed": run_for}}


def scenario(document: dict[str, Any], load_: Workload, **changes: Any) -> Scenario:
    return Scenario(load(document), load_, project_dir=project_path(), **changes)


def static(document: dict[str, Any], load_: Workload, discount: float = 0.0) -> dict[str, Any]:
    return run_one(scenario(document, load_, commitment_discount=discount).variant("static"), 0)


def bought(outcome: dict[str, Any]) -> dict[tuple[str, str], tuple[tuple[str, ...], float, str]]:
    return {(row["pool"], row["capacity_type"]): (tuple(row["instance_types"]), row["usd_per_hour"], row["note"])
            for row in outcome["fixed_capacity"]}


def multi_pool_at_twelve_a100s() -> dict[str, Any]:
    """The multi-pool fixture with 12 A100s declared, on 8-GPU nodes only, and 12 nominal A100s among tenants."""
    document = copy.deepcopy(fixture_document("multi-pool"))
    next(p for p in document["gpu-platform:nodePools"] if p["name"] == "gpu-a100")["gpus"] = 12
    for tenant in document["gpu-platform:tenants"]:
        if tenant["name"] in ("llm-training", "data-science", "experiments"):
            tenant["gpu"]["a100-spot"] = {"llm-training": {"nominal": 8, "borrowingLimit": 4},
                                          "data-science": {"nominal": 4},
                                          "experiments": {"nominal": 0, "borrowingLimit": 4}}[tenant["name"]]
    return document


# --- one rule for standing nodes: config/capacity.py cheapest_nodes --------------------------------------------

CHEAPEST = [
    # dev, every g6e size: the 1-GPU xlarge is cheapest per GPU, so 7 GPUs are 7 of them within the limit of 8.
    ("dev", "gpu-l40s", 7, None, 1, ("g6e.xlarge",) * 7),
    # A 2-GPU pod needs one node of at least 2 GPUs: the 12xlarge (4) alone holds 3 GPUs for 10.49.
    ("dev", "gpu-l40s", 3, None, 2, ("g6e.12xlarge",)),
    # multi-pool: 16 L40S on four 12xlarges (41.97), not two 48xlarges (60.26).
    ("multi-pool", "gpu-l40s", 16, None, 1, ("g6e.12xlarge",) * 4),
    # 6 GPUs: two 12xlarges (20.99) beat a 48xlarge (30.13) and a 12xlarge with a 24xlarge (25.56).
    ("multi-pool", "gpu-l40s", 6, None, 1, ("g6e.12xlarge",) * 2),
    # An 8-GPU pod: one 48xlarge and two 12xlarges (51.12), not two 48xlarges (60.26).
    ("multi-pool", "gpu-l40s", 16, None, 8, ("g6e.12xlarge", "g6e.12xlarge", "g6e.48xlarge")),
    # The limit binds: 12 A100s in 8-GPU nodes within 12 is one node.
    ("multi-pool", "gpu-a100", 12, 12, 1, ("p4d.24xlarge",)),
    # Within the NodePool limit (16 + 6 headroom = 22), 12 GPUs take two nodes.
    ("multi-pool", "gpu-a100", 12, None, 1, ("p4d.24xlarge",) * 2),
    # Nothing within a limit below the smallest node.
    ("multi-pool", "gpu-h100", 5, 6, 1, ()),
]


@pytest.mark.parametrize("stack, pool_name, gpus, limit, largest, expected", CHEAPEST)
def test_standing_nodes_are_the_cheapest_whole_nodes_within_the_limit(stack, pool_name, gpus, limit, largest, expected):
    document = dev() if stack == "dev" else fixture_document(stack)
    pool = next(p for p in load(document).gpu_pools if p.name == pool_name)
    assert tuple(t.name for t in pool.cheapest_nodes(gpus, limit, largest) or ()) == expected


def test_the_summary_prices_a_pool_on_the_nodes_the_static_baseline_buys():
    # 12 A100s declared on 8-GPU nodes: two p4d.24xlarge within the NodePool limit of 18 (with headroom),
    # 43.92 an hour; a price per GPU would say 32.94, for 1.5 nodes no one can buy.
    pool = next(p for p in load(multi_pool_at_twelve_a100s()).gpu_pools if p.name == "gpu-a100")
    assert pool.hourly_cost_at_limit == round(2 * P4D, 2)
    # The L40S pool: four 12xlarges, the static baseline's choice for the same 16 GPUs below.
    l40s = next(p for p in load(fixture_document("multi-pool")).gpu_pools if p.name == "gpu-l40s")
    assert l40s.hourly_cost_at_limit == round(4 * X12, 2)


# --- the static baseline's capacity and cost -----------------------------------------------------------------


def test_a_time_sliced_pool_is_bought_in_physical_gpus_on_dev():
    # ml-research 12 + inference 12 slices on l40s-on-demand, both used: 24 slices / 4 = 6 GPUs, six g6e.xlarge
    # on-demand, Ready from 0 for the 2 h run. ml-research's 4 spot slices: no job may use l40s-spot, none bought.
    # Borrowing limits (4 each) buy nothing.
    load_ = workload(jobs=[stream("ml-research", "l40s-on-demand"), stream("inference", "l40s-on-demand")])
    outcome = static(dev(), load_)
    assert bought(outcome) == {("gpu-l40s", "on-demand"): (("g6e.xlarge",) * 6, pytest.approx(6 * XLARGE), "")}
    pool = outcome["measures"]["pools"]["gpu-l40s"]
    assert pool[m.LAUNCHED] == 6
    assert pool[m.PROVISIONED] == pytest.approx(6 * 2)
    assert pool[m.COST] == pytest.approx(6 * XLARGE * 2)


def test_one_node_holds_the_largest_pod_the_workload_places_on_the_pool():
    # inference's 8-slice (2-GPU) jobs on l40s-on-demand: its 12 slices are 3 GPUs, and 1-GPU nodes would leave
    # the pods on no node; the cheapest set with a node of 2 GPUs or more is one g6e.12xlarge (4 GPUs, 10.49).
    load_ = workload(jobs=[stream("inference", "l40s-on-demand", 8)])
    outcome = static(dev(), load_)
    assert bought(outcome) == {("gpu-l40s", "on-demand"): (("g6e.12xlarge",), pytest.approx(X12), "")}
    assert outcome["measures"]["run"][m.FINISHED] == 1


def test_spot_quota_is_bought_on_demand_at_the_on_demand_price_on_dev():
    # ml-research's job may use only l40s-spot: its 4 nominal slices = 1 GPU, on-demand at 1.861 (not 0.35 x).
    load_ = workload(jobs=[stream("ml-research", "l40s-spot")])
    outcome = static(dev(), load_)
    assert bought(outcome) == {("gpu-l40s", "on-demand"): (("g6e.xlarge",), pytest.approx(XLARGE), "")}
    assert outcome["measures"]["pools"]["gpu-l40s"][m.COST] == pytest.approx(XLARGE * 2)


def test_a_commitment_discount_lowers_the_static_baseline_alone():
    load_ = workload(jobs=[stream("ml-research", "l40s-spot", at="10m")])
    discounted = static(dev(), load_, discount=0.3)
    assert discounted["measures"]["run"][m.COST] == pytest.approx(XLARGE * 0.7 * 2)
    platform = run_one(scenario(dev(), load_, commitment_discount=0.3), 0)
    assert platform["measures"]["run"][m.COST] == pytest.approx(run_one(scenario(dev(), load_), 0)["measures"]["run"][m.COST])


def test_pools_no_workload_item_uses_get_nothing_and_the_report_says_why_on_the_multi_pool_fixture():
    # llm-training's 8-GPU job on a100-spot: its nominal 8 (data-science's 8 unused) -> one p4d.24xlarge, on-demand.
    # inference's 1-GPU job on l40s-on-demand: its 12 (data-science's 4 unused) -> 12 GPUs, three 12xlarges.
    # No item may use the H100s: nothing, though tenants hold 32 nominal there.
    load_ = workload(duration="1h", jobs=[stream("llm-training", "a100-spot", 8, at="0s"),
                                          stream("inference", "l40s-on-demand", at="0s")])
    outcome = static(fixture_document("multi-pool"), load_)
    assert bought(outcome) == {
        ("gpu-h100", "on-demand"): ((), 0.0, NO_WORKLOAD),
        ("gpu-a100", "on-demand"): (("p4d.24xlarge",), pytest.approx(P4D), ""),
        ("gpu-l40s", "on-demand"): (("g6e.12xlarge",) * 3, pytest.approx(3 * X12), ""),
    }
    pools = outcome["measures"]["pools"]
    assert {name: pool[m.PROVISIONED] for name, pool in pools.items()} == pytest.approx(
        {"gpu-h100": 0.0, "gpu-a100": 8.0, "gpu-l40s": 12.0})
    assert outcome["measures"]["run"][m.COST] == pytest.approx(P4D + 3 * X12)


def test_a_binding_nodepool_limit_buys_the_whole_nodes_it_allows():
    # llm-training 8 + data-science 4 nominal A100s, both used: 12 GPUs, but 8-GPU nodes within the limit of 12
    # (the static baseline has no headroom) are one node; the report says the limit holds 8 of 12.
    load_ = workload(duration="1h", jobs=[stream("llm-training", "a100-spot", 8, at="0s"),
                                          stream("data-science", "a100-spot", 1, at="0s")])
    outcome = static(multi_pool_at_twelve_a100s(), load_)
    nodes, price, note = bought(outcome)[("gpu-a100", "on-demand")]
    assert (nodes, price) == (("p4d.24xlarge",), pytest.approx(P4D))
    assert note == "the NodePool limit (12 GPUs) holds 8 of the 12 GPUs in whole nodes"


def test_a_tenant_without_nominal_quota_gets_no_capacity_and_its_work_is_never_admissible():
    # experiments has no nominal A100s (it only borrows): nothing bought, and its job never admissible (quota).
    load_ = workload(duration="1h", jobs=[stream("experiments", "a100-spot", 1, at="0s")])
    outcome = static(fixture_document("multi-pool"), load_)
    assert bought(outcome)[("gpu-a100", "on-demand")] == ((), 0.0, NO_NOMINAL)
    assert outcome["measures"]["run"][m.never_admissible("quota")] == 1


def test_the_documented_prod_baseline_is_the_nodes_it_buys_for_the_alibaba_trace():
    # prod + Alibaba: no trace class maps to the H100s; llm-training's 8 nominal A100s (data-science has no trace
    # work there) on one p4d.24xlarge; the L40S tasks (inference and data-science, 12 + 4 nominal) need up to
    # 8 GPUs at once: a g6e.48xlarge and two 12xlarges (51.12 an hour). Always on for the window's 1,065 h
    # (days 105 to 149), which is what docs/simulation.md's static column says.
    from sim.baseline import fixed_capacity, largest_pods
    from sim.workload import load_workload, seconds

    config = load(shipped_document("prod"))
    load_ = load_workload(project_path("workloads", "alibaba-gpu-2023.yaml"))
    largest = largest_pods(config, load_, project_path())
    assert largest == {"gpu-a100": 8, "gpu-l40s": 8}
    limits = {pool.name: pool.gpu_limit for pool in config.gpu_pools}
    fixed = fixed_capacity(config, load_, static_baseline=True, without=STATIC_WITHOUT, limits=limits, largest=largest)
    assert [(row.pool, sorted(row.instance_types), row.note) for row in fixed] == [
        ("gpu-h100", [], NO_WORKLOAD),
        ("gpu-a100", ["p4d.24xlarge"], ""),
        ("gpu-l40s", ["g6e.12xlarge", "g6e.12xlarge", "g6e.48xlarge"], ""),
    ]
    hours = 1065
    assert seconds(load_.duration) == hours * 3600
    # The static column; tests/test_doc_figures.py reads the simulated one back against the run's figures.
    text = project_path("docs", "simulation.md").read_text()
    assert f"\n| GPU-hours provisioned | {(8 + 16) * hours:,} | " in text
    assert f"\n| cost USD | {round((P4D + X48 + 2 * X12) * hours):,} | " in text


# --- each mechanism switched off changes that mechanism -----------------------------------------------------


def test_the_variant_table_switches_off_one_mechanism_per_ablation():
    assert [VARIANTS[name].without for name in ABLATIONS] == [frozenset({mechanism}) for mechanism in MECHANISMS]
    assert [ablation(mechanism) for mechanism in MECHANISMS] == list(ABLATIONS)
    with pytest.raises(ValueError, match="no variant 'without-gravity'"):
        scenario(dev(), workload()).variant("without-gravity")


def start_waits(outcome: dict[str, Any], tier: str = "production") -> tuple[float, float]:
    row = outcome["measures"]["tiers"][tier]
    return row[m.WAIT_MEAN], row[m.WAIT_MAX]


def test_without_borrowing_a_job_beyond_nominal_waits_for_the_first():
    # inference: nominal 12 slices, borrowingLimit 4. Two 8-slice jobs at 1 h: 16 slices fit with borrowing
    # (both wait 0); without it the second waits for the first: its node's launch (BATCH + LAUNCH) and its hour.
    load_ = workload(duration="4h", jobs=[{**stream("inference", "l40s-on-demand", 8, run_for="1h"),
                                           "arrivals": {"at": ["1h", "1h"]}}])
    base = scenario(dev(), load_)
    assert start_waits(run_one(base, 0)) == (0.0, 0.0)
    second = BATCH + LAUNCH + 3600
    assert start_waits(run_one(base.variant("without-borrowing"), 0)) == pytest.approx((second / 2, second))


def test_without_spot_the_node_is_on_demand_at_the_on_demand_price():
    load_ = workload(jobs=[stream("ml-research", "l40s-spot", at="0s", run_for="1h")], spot={"interruptionsPerNodeHour": 1})
    base = scenario(dev(), load_)
    full, on_demand = run_one(base, 0), run_one(base.variant("without-spot"), 0)
    # Spot at one interruption per node-hour: seed 0 interrupts it twice; on-demand is never interrupted.
    assert full["measures"]["pools"]["gpu-l40s"][m.disrupted("interruption")] == 2
    assert on_demand["measures"]["pools"]["gpu-l40s"][m.disrupted("interruption")] == 0
    # Every node a g6e.xlarge: spot at 0.35 of 1.861 an hour; on-demand from BATCH to the job's end plus
    # consolidateAfter (5 min), at 1.861.
    assert full["measures"]["run"][m.COST] == pytest.approx(full["measures"]["run"][m.PROVISIONED] * XLARGE * SPOT_FACTOR)
    hours = (LAUNCH + 60 * 60 + 5 * 60) / 3600
    assert on_demand["measures"]["run"][m.PROVISIONED] == pytest.approx(hours)
    assert on_demand["measures"]["run"][m.COST] == pytest.approx(hours * XLARGE)


def test_without_consolidation_the_empty_node_runs_to_the_end():
    # One 30-min job at 0 on l40s-on-demand: its node is up from BATCH; consolidated 5 min after the job ends,
    # or, without consolidation, kept to the end of the 2 h run.
    load_ = workload(jobs=[stream("ml-research", "l40s-on-demand", at="0s")])
    base = scenario(dev(), load_)
    full, kept = run_one(base, 0), run_one(base.variant("without-consolidation"), 0)
    assert full["measures"]["run"][m.PROVISIONED] == pytest.approx((LAUNCH + 35 * 60) / 3600)
    assert full["measures"]["pools"]["gpu-l40s"][m.disrupted("consolidation")] == 1
    assert kept["measures"]["run"][m.PROVISIONED] == pytest.approx((2 * 3600 - BATCH) / 3600)
    assert kept["measures"]["pools"]["gpu-l40s"][m.disrupted("consolidation")] == 0


def test_without_autoscaling_each_pool_is_pinned_at_its_limit_from_the_start():
    # dev's limit of 8 L40S: on-demand nominal 12 + 12 slices = 6 GPUs; spot (the default type of a pool with
    # both) ml-research's 4 slices = 1 GPU plus the 1 GPU left: 8 g6e.xlarge Ready at 0, kept 2 h. The job
    # starts when it arrives, with no node launch.
    load_ = workload(jobs=[stream("ml-research", "l40s-on-demand", at="1h")])
    pinned = run_one(scenario(dev(), load_).variant("without-autoscaling"), 0)
    assert bought(pinned) == {
        ("gpu-l40s", "on-demand"): (("g6e.xlarge",) * 6, pytest.approx(6 * XLARGE), ""),
        ("gpu-l40s", "spot"): (("g6e.xlarge",) * 2, pytest.approx(2 * XLARGE * SPOT_FACTOR), ""),
    }
    assert pinned["measures"]["run"][m.PROVISIONED] == pytest.approx(8 * 2)
    assert pinned["measures"]["run"][m.COST] == pytest.approx((6 + 2 * SPOT_FACTOR) * XLARGE * 2)
    assert pinned["measures"]["tiers"]["standard"][m.START_MEAN] == 0.0


def test_a_pinned_spot_node_reclaimed_is_replaced_in_place():
    # Pinned at the limit, dev's two spot g6e.xlarge at one interruption per node-hour: each reclaimed node is
    # replaced by one of the same type, so nodes launched = the 8 pinned + one per interruption, and no more.
    load_ = workload(spot={"interruptionsPerNodeHour": 1})
    pool = run_one(scenario(dev(), load_).variant("without-autoscaling"), 0)["measures"]["pools"]["gpu-l40s"]
    assert pool[m.disrupted("interruption")] == 4  # seed 0's draws over the 2 h
    assert pool[m.LAUNCHED] == 8 + 4


def test_without_headroom_no_placeholder_holds_gpus_on_the_multi_pool_fixture():
    # The A100 pool's headroom: 3 placeholders of 2 GPUs, pending at 0, on a p4d.24xlarge launched at BATCH and
    # Ready LAUNCH later: 6 GPUs held from BATCH + LAUNCH to the end of the hour.
    load_ = workload(duration="1h")
    base = scenario(fixture_document("multi-pool"), load_)
    full, without = run_one(base, 0), run_one(base.variant("without-headroom"), 0)
    assert full["measures"]["run"][m.HEADROOM] == pytest.approx(6 * (3600 - BATCH - LAUNCH) / 3600)
    assert without["measures"]["run"][m.HEADROOM] == 0.0
    assert without["measures"]["run"][m.PROVISIONED] == 0.0


# --- the command line ---------------------------------------------------------------------------------------


def test_a_commitment_discount_outside_zero_to_one_is_refused_in_one_line(tmp_path: Path, capsys, shipped_project):
    from offline.__main__ import main

    code = main(["simulate", "--stack", "dev", "--workload", "workloads/design-surge.yaml", "--commitment-discount", "1.5",
                 "--out", str(tmp_path / "out")])
    assert code == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: --commitment-discount '1.5': give a share of the on-demand price from 0 to below 1, e.g. 0.3 for 30 % off"]
    assert not (tmp_path / "out").exists()


def test_ablations_run_on_the_same_seeds_into_one_report_with_their_differences(tmp_path: Path):
    from sim.cli import run

    path = tmp_path / "w.yaml"
    path.write_text(f"start: {MONDAY!r}\nduration: 2h\nsampleInterval: 1h\njobs:\n"
                    "  - {name: batch, tenant: ml-research, flavors: [l40s-spot], gpusPerPod: 1, arrivals: {at: [0s]},"
                    " duration: {fixed: 30m}}\n")
    assert run(load(dev()), "dev", path, tmp_path / "out", seed=0, seeds=[0, 1], baseline="static", ablations=True,
               discount=0.25, project_dir=project_path(), workers=1) == 0
    data = json.loads((tmp_path / "out" / "report.json").read_text())
    assert list(data["variants"]) == ["simulated", "static", *ABLATIONS]
    assert data["commitment_discount"] == 0.25
    # The static baseline states its assumptions and its nodes: ml-research's 4 spot slices, one g6e.xlarge on-demand
    # at 1.861 less 25 %.
    assert data["variants"]["static"]["assumptions"][0].startswith("Each tenant's nominal quota as its own always-on")
    assert [(row["instance_types"], row["usd_per_hour"]) for row in data["variants"]["static"]["fixed_capacity"]] == [
        (["g6e.xlarge"], pytest.approx(XLARGE * 0.75))]
    full, spot = data["variants"]["simulated"], data["variants"]["without-spot"]
    assert spot["assumptions"] == [
        "Without spot: spot capacity replaced by on-demand at the on-demand price: no interruptions, no spot discount."]
    # The difference is taken seed by seed: its mean is the mean of the two seeds' differences.
    differences = [spot["per_seed"][i]["run"][m.COST] - full["per_seed"][i]["run"][m.COST] for i in (0, 1)]
    assert spot["delta_vs_simulated"][m.COST]["mean"] == pytest.approx(sum(differences) / 2)
    assert spot["delta_vs_simulated"][m.COST]["n"] == 2
    report = (tmp_path / "out" / "report.md").read_text()
    assert "with a 25% commitment discount off on-demand prices" in report
    mine = spot["measures"]["run"][m.USD_PER_USEFUL]
    delta = spot["delta_vs_simulated"][m.USD_PER_USEFUL]
    assert (f"| without-spot | {mine['mean']:,.2f} ({mine['low']:,.2f} to {mine['high']:,.2f}) | "
            f"+{delta['mean']:,.2f} ({delta['low']:,.2f} to {delta['high']:,.2f}) |") in report
