"""Fractional trace tasks under each sharing mode (sim/sharing.py), on GPUs small enough to follow by hand.

Nodes here have two GPUs; tasks ask for 0.5, 0.3 and 0.6 of one (gpu_milli 500, 300, 600). Pools come from
the multi-pool fixture (prod's A100 and L40S pools, sharing nothing) and from dev (its L40S pool time-sliced
four ways, which every mode leaves as configured).
"""

from __future__ import annotations

import pytest

from config.catalog import A100_40GB
from models.karpenter.provisioning import InstanceOption
from sim import measures as m
from sim import sharing
from sim.admission import kueue_for
from sim.cli import EXIT_INVALID
from sim.cli import run as simulate_cli
from sim.experiment import measure
from sim.ledger import Fragments, Ledger
from sim.run import simulate
from sim.state import Group, Node, Pod, Pool
from sim.workload import Workload

from .conftest import fixture_config, load, project_path, shipped_document

FRACTIONS = "tests/fixtures/traces/fractions-alibaba.csv"
A100 = "gpu-a100"


def workload(classes: dict, duration: str = "2h") -> Workload:
    return Workload.model_validate({
        "start": "2026-06-01T00:00:00Z", "duration": duration, "sampleInterval": "30m",
        "launchToReady": {"p4d": {"medianSeconds": 300, "p95Seconds": 300}},
        "traces": [{"format": "alibaba-gpu-v2023", "file": FRACTIONS, "classes": classes}],
    })


BEST_EFFORT = {"BE": {"tenants": ["experiments"], "flavors": ["a100-spot"]}}


def two_gpu_node(mode: str, node_id: int = 1) -> Node:
    config = sharing.shared_config(fixture_config("multi-pool"), mode, [A100])
    plan = next(p for p in config.gpu_pools if p.name == A100)
    return Node(node_id, Pool.from_plan(plan), InstanceOption("two-gpu", 2, 1.0), "spot", 1.0, 0.0, ready=True)


def pod(units: int, tenant: str = "experiments") -> Pod:
    group = Group(0, tenant, "best-effort", 100, 1, units, ("a100-spot",), 3600.0, 0.0, "trace:BE")
    return Pod(group, units, 0.0)


def place(tracker: sharing.GpuSharing, node: Node, pods: list[Pod]) -> list[int | None]:
    """Each pod's GPU (its first), or None where it does not fit and waits."""
    gpus: list[int | None] = []
    for p in pods:
        if node.free >= p.units and tracker.fits(node, p):
            node.pods.append(p)
            tracker.bind(node, p)
            gpus.append(tracker.held[p][0][0])
        else:
            gpus.append(None)
    return gpus


def test_kai_binpack_puts_both_fractions_on_one_gpu_and_leaves_the_other_whole():
    node = two_gpu_node(sharing.KAI)
    tracker = sharing.GpuSharing(sharing.KAI, frozenset({A100}))
    # 0.5 and 0.3 of a GPU: 50 and 30 of 100 units; then a whole GPU.
    assert place(tracker, node, [pod(50), pod(30), pod(100)]) == [0, 0, 1]
    assert tracker.free_shares(node) == (pytest.approx(0.2), 0.0)


def test_kai_spread_puts_the_fractions_apart_and_the_whole_gpu_waits():
    node = two_gpu_node(sharing.KAI)
    tracker = sharing.GpuSharing(sharing.KAI, frozenset({A100}), strategy="spread")
    assert place(tracker, node, [pod(50), pod(30), pod(100)]) == [0, 1, None]
    assert tracker.free_shares(node) == (pytest.approx(0.5), pytest.approx(0.7))


def test_rounding_up_leaves_the_third_fraction_waiting_where_kai_fits_all_three():
    whole = sharing.GpuSharing(sharing.WHOLE, frozenset({A100}))
    assert place(whole, two_gpu_node(sharing.WHOLE), [pod(1), pod(1), pod(1)]) == [0, 1, None]
    kai = sharing.GpuSharing(sharing.KAI, frozenset({A100}))
    # 0.5 + 0.3 share GPU 0 (0.8 used); 0.6 does not fit its 0.2 and opens GPU 1.
    assert place(kai, two_gpu_node(sharing.KAI), [pod(50), pod(30), pod(60)]) == [0, 0, 1]


def test_kai_puts_another_tenants_fraction_on_the_same_gpu_and_a_released_one_frees_its_share():
    node = two_gpu_node(sharing.KAI)
    tracker = sharing.GpuSharing(sharing.KAI, frozenset({A100}))
    # KAI keeps no tenant apart: 0.3 of llm-training joins experiments' 0.5 on GPU 0; 0.4 opens GPU 1.
    assert place(tracker, node, [pod(50), pod(30, tenant="llm-training"), pod(40, tenant="data-science")]) == [0, 0, 1]
    tracker.release(node, node.pods[0])
    # GPU 0 holds 0.3, GPU 1 0.4: binpack takes the fuller GPU 1 for 0.6, which fits it exactly.
    assert place(tracker, node, [pod(60, tenant="data-science")]) == [1]
    assert tracker.free_shares(node) == (pytest.approx(0.7), pytest.approx(0.0))


def test_mig_takes_the_smallest_profile_covering_compute_and_memory_and_packs_a_gpu_to_seven_slices():
    profiles = {milli: sharing.mig_profile(A100_40GB, milli).name for milli in (110, 140, 300, 470, 550, 810)}
    # 140: 1g.5gb's memory (1/8) is short of 0.14; 550: 4g.20gb's memory (4/8) is short of 0.55.
    assert profiles == {110: "1g.5gb", 140: "2g.10gb", 300: "3g.20gb", 470: "4g.20gb", 550: "7g.40gb", 810: "7g.40gb"}
    tracker = sharing.GpuSharing(sharing.MIG, frozenset({A100}))
    # 4g + 3g fill GPU 0's 7 compute and 8 memory slices; 1g goes to GPU 1.
    assert place(tracker, two_gpu_node(sharing.MIG), [pod(4), pod(3), pod(1)]) == [0, 0, 1]


@pytest.mark.parametrize(("mode", "milli", "units"), [
    (sharing.WHOLE, 470, 1), (sharing.TIME_SLICE, 470, 2), (sharing.MIG, 470, 4), (sharing.KAI, 470, 47),
    (sharing.KAI, 475, 48), (sharing.KAI, 5, 1), (sharing.TIME_SLICE, 760, 4),
])
def test_a_fraction_is_sized_in_each_modes_units(mode, milli, units):
    plan = next(p for p in sharing.shared_config(fixture_config("multi-pool"), mode, [A100]).gpu_pools if p.name == A100)
    assert sharing.task_units(mode, plan, plan.slices_per_gpu, 1, milli) == units
    assert sharing.task_units(mode, plan, plan.slices_per_gpu, 2, 1000) == 2 * plan.slices_per_gpu


def test_quotas_on_the_shared_pools_are_counted_in_the_modes_units_and_other_pools_keep_theirs():
    before = fixture_config("multi-pool")
    after = sharing.shared_config(before, sharing.KAI, [A100])
    quotas = {(t.name, q.flavor.name): (q.quota.nominal, q.quota.borrowing_limit) for t in after.tenants for q in t.quotas}
    # multi-pool.yaml: llm-training a100-spot {nominal: 8, borrowingLimit: 8}, h100-on-demand {16, 12}.
    assert quotas[("llm-training", "a100-spot")] == (800, 800)
    assert quotas[("llm-training", "h100-on-demand")] == (16, 12)
    assert {p.name: p.slices_per_gpu for p in after.gpu_pools}[A100] == 100


def test_dev_keeps_its_time_slices_in_every_mode():
    config = load(shipped_document("dev"))
    load_ = workload({"BE": {"tenants": ["ml-research"], "flavors": ["l40s-on-demand"]}})
    assert sharing.trace_pools(config, load_) == ()
    for mode in sharing.RUNNABLE:
        assert sharing.shared_config(config, mode, ()) is config
        plan = config.gpu_pools[0]
        # dev: 4 slices per GPU; 0.47 of a GPU is ceil(1.88) = 2 slices whatever the mode.
        assert sharing.task_units(mode, plan, plan.slices_per_gpu, 1, 470) == 2


def test_fragmentation_is_the_free_share_the_waiting_tasks_cannot_use():
    # Spread's node (0.5 and 0.7 free) and binpack's (0.2 and 1.0 free), with 0.6 and one whole GPU waiting.
    ledger = Ledger(end=7200.0)
    ledger.fragments += [Fragments(A100, 0.0, 3600.0, ((0.5, 0.7),), (0.6, 1.0)),
                         Fragments(A100, 3600.0, 3600.0, ((0.2, 1.0),), (0.6, 1.0))]
    figures = m.compute(ledger, m.Scope((A100,), (), (), ()))["pools"][A100]
    # First hour: 0.6 fits GPU 1, GPU 0's 0.5 is lost to it; the whole GPU fits nowhere: all 1.2 -> (0.5 + 1.2) / 2.
    # Second: 0.6 and the whole GPU both fit GPU 1; GPU 0's 0.2 is lost to each -> 0.2.
    assert figures[m.FRAGMENTED] == pytest.approx(0.85 + 0.2)
    assert figures[m.FREE] == pytest.approx(1.2 + 1.2)
    assert figures[m.FRAGMENTATION_PCT] == pytest.approx(100 * 1.05 / 2.4)


def test_a_run_with_sharing_off_records_no_fragmentation():
    assert m.FRAGMENTED not in m.compute(Ledger(end=3600.0), m.Scope((A100,), (), (), ()))["run"]


@pytest.mark.parametrize(("mode", "held", "nodes"), [(sharing.WHOLE, [1.0, 1.0, 1.0], 2), (sharing.KAI, [0.3, 0.5, 0.6], 1)])
def test_the_trace_fractions_hold_their_share_of_a_gpu_on_the_fixture(mode, held, nodes):
    result = simulate(fixture_config("multi-pool"), workload(BEST_EFFORT), kueue_for, project_dir=project_path(),
                      sharing=mode)
    tasks = {c.key for c in result.sim.ledger.created if c.tenant == "experiments"}
    holds = sorted(h.gpus for h in result.sim.ledger.held if h.key in tasks)
    assert holds == pytest.approx(held)
    # The pool's headroom (multi-pool.yaml: 6 GPUs, 3 placeholders of 2) starts a p4d (8 GPUs). Three whole GPUs
    # and the headroom's 6 need a second; under KAI the fractions take two GPUs (0.5 + 0.3, then 0.6), which fit.
    assert measure(result)["pools"][A100][m.LAUNCHED] == nodes


def test_sharing_dra_is_refused_in_one_line_saying_why(capsys, tmp_path):
    code = simulate_cli(fixture_config("multi-pool"), "multi-pool", project_path("workloads/alibaba-gpu-2023.yaml"),
                        tmp_path, seed=0, baseline=None, project_dir=project_path(), sharing=sharing.DRA)
    error = capsys.readouterr().err
    assert code == EXIT_INVALID
    assert error.count("\n") == 1
    assert error.startswith("--sharing dra: dra-driver-nvidia-gpu v0.4.1 allocates whole devices")
    assert not list(tmp_path.iterdir())
