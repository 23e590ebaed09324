"""The claims machinery (sim/claims.py, offline/claims.py) on tiny scenarios worked out by hand, and the docs'
claims table against the committed claims.json that `make claims` wrote. `make claims` itself is not run here."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from offline.__main__ import main
from offline.claims import DOCS_JSON, DOCS_PAGE, doc_table, doc_with_table, run_claims
from sim import claims as c
from sim import measures as m
from sim.stats import summary

from .conftest import load, project_path, shipped_document

G6E_XLARGE_USD = 1.861  # config/catalog.py: the cheapest g6e, 1 GPU
LAUNCH = 240  # seconds, made exact: median = p95
BATCH = 1  # Karpenter's provisioning batch
DEV_CONSOLIDATE_AFTER = 300  # dev's consolidateAfter: 5m


# --- patch ------------------------------------------------------------------------------------------------------
STACK: dict[str, Any] = {
    "gpu-platform:nodePools": [
        {"name": "gpu-a", "disruption": {"consolidationPolicy": "WhenEmpty"}, "warmStart": {"headroom": {"gpus": 2}}},
        {"name": "gpu-b", "disruption": {"consolidationPolicy": "WhenEmpty"}},
    ],
    "gpu-platform:tenants": [{"name": "t1", "inference": [{"name": "chat", "minReplicas": 1}]}],
}


@pytest.mark.parametrize(("edits", "path", "expected"), [
    ([("gpu-platform:nodePools[gpu-b].disruption.consolidationPolicy", "WhenEmptyOrUnderutilized")],
     ("gpu-platform:nodePools", 1, "disruption", "consolidationPolicy"), "WhenEmptyOrUnderutilized"),
    ([("gpu-platform:nodePools[gpu-a].disruption.consolidateAfter", "Never")],
     ("gpu-platform:nodePools", 0, "disruption", "consolidateAfter"), "Never"),
    ([("gpu-platform:tenants[t1].inference[chat].minReplicas", 8)],
     ("gpu-platform:tenants", 0, "inference", 0, "minReplicas"), 8),
])
def test_a_patch_sets_the_key_of_the_named_item_and_leaves_the_original_alone(edits, path, expected):
    edited = c.patch(STACK, edits)
    node: Any = edited
    for step in path:
        node = node[step]
    assert node == expected
    assert STACK["gpu-platform:nodePools"][1]["disruption"] == {"consolidationPolicy": "WhenEmpty"}
    assert STACK["gpu-platform:tenants"][0]["inference"][0] == {"name": "chat", "minReplicas": 1}


def test_a_patch_deletes_a_key_and_matches_an_inference_load_by_its_deployment():
    edited = c.patch(STACK, [("gpu-platform:nodePools[gpu-a].warmStart.headroom", c.DELETE)])
    assert edited["gpu-platform:nodePools"][0]["warmStart"] == {}
    workload = {"inference": [{"tenant": "t1", "deployment": "model-b", "spec": {"minReplicas": 1}}]}
    assert c.patch(workload, [("inference[model-b].spec.minReplicas", 4)])["inference"][0]["spec"] == {"minReplicas": 4}


@pytest.mark.parametrize(("path", "value", "says"), [
    ("gpu-platform:nodePools[gpu-c].disruption.consolidationPolicy", "x", "no item named 'gpu-c'"),
    ("gpu-platform:nodePool[gpu-a].disruption", "x", "no key 'gpu-platform:nodePool'"),
    ("gpu-platform:nodePools[gpu-a].disruptoin.consolidateAfter", "x", "no key 'disruptoin'"),
    ("gpu-platform:nodePools[gpu-b].warmStart", c.DELETE, "no key 'warmStart' to delete"),
    ("gpu-platform:nodePools[gpu-a]", "x", "the last step must be a key"),
])
def test_a_misspelt_patch_path_is_refused_instead_of_adding_a_stray_key(path, value, says):
    with pytest.raises(ValueError, match=says.replace("[", r"\[")):
        c.patch(STACK, [(path, value)])


# --- interruption rates -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("monthly", "per_hour"), [
    (0.05, 7.026478683e-05),  # -ln(0.95) / 730
    (0.20, 3.056760977e-04),  # -ln(0.80) / 730
    (0.50, 9.495167e-04),  # ln 2 / 730 = 0.6931472 / 730
])
def test_a_monthly_interruption_frequency_is_a_rate_per_node_hour(monthly, per_hour):
    assert c.per_node_hour(monthly) == pytest.approx(per_hour, rel=1e-6)
    # An instance running the whole month is interrupted with the band's probability.
    assert 1 - math.exp(-c.per_node_hour(monthly) * 730) == pytest.approx(monthly)


def test_the_spot_claim_hands_the_engine_a_rate_per_node_hour_not_per_second():
    spot = next(claim for claim in c.CLAIMS if claim.id == "spot")
    rates = {v.name: dict(v.workload).get("spot", {}).get("interruptionsPerNodeHour") for v in spot.variants}
    assert rates == {"on-demand": None, "spot-0": 0.0, "spot-5": 7.026e-05, "spot-20": 0.00030568, "spot-stress": 0.01}


# --- verdicts -----------------------------------------------------------------------------------------------------
def figure(mean: float | None, low: float | None = None, high: float | None = None) -> dict[str, Any]:
    return {"mean": mean, "low": low, "high": high, "n": 10}


HIGH = c.Figure("x", "x")
LOW = c.Figure("x", "x", better=c.LOWER)


@pytest.mark.parametrize(("row", "after", "change", "expected"), [
    # Against the design's range 60-85 (higher is better): the after figure's interval.
    (c.Row(HIGH, "a", "b", (60, 85)), figure(45, 40, 50), figure(None), c.MISSED),
    (c.Row(HIGH, "a", "b", (60, 85)), figure(58, 55, 61), figure(None), c.REPRODUCED),
    (c.Row(HIGH, "a", "b", (60, 85)), figure(84, 83, 86), figure(None), c.REPRODUCED),
    (c.Row(HIGH, "a", "b", (60, 85)), figure(90, 86, 94), figure(None), c.BEATEN),
    (c.Row(HIGH, "a", "b", (60, 85)), figure(85.5), figure(None), c.BEATEN),  # one seed: its mean
    (c.Row(LOW, "a", "b", (60, 85)), figure(50, 45, 55), figure(None), c.BEATEN),
    (c.Row(LOW, "a", "b", (60, 85)), figure(90, 86, 94), figure(None), c.MISSED),
    (c.Row(HIGH, "a", "b", (60, 85)), figure(None), figure(None), c.MISSED),
    # No design figure: the paired change's interval.
    (c.Row(LOW, "a", "b"), figure(1), figure(-8, -10, -6), c.REPRODUCED),
    (c.Row(LOW, "a", "b"), figure(1), figure(2, -1, 5), c.NOT_SHOWN),
    (c.Row(LOW, "a", "b"), figure(1), figure(5, 1, 9), c.MISSED),
    (c.Row(HIGH, "a", "b"), figure(1), figure(5, 1, 9), c.REPRODUCED),
    (c.Row(HIGH, "a", "b"), figure(1), figure(-5), c.MISSED),  # one seed
    (c.Row(HIGH, "a", "b"), figure(1), figure(None), c.NOT_SHOWN),
])
def test_the_verdict(row, after, change, expected):
    assert c.verdict(row, after, change) == expected


@pytest.mark.parametrize(("before", "after", "expected"), [
    (200.0, 150.0, -25.0), (40.0, 50.0, 25.0), (0.0, 3.0, None), (None, 3.0, None), (3.0, None, None),
])
def test_the_change_in_per_cent(before, after, expected):
    assert c.change_pct(before, after) == expected


def test_a_row_pairs_the_seeds_and_reads_the_figure_at_its_level():
    claim = c.Claim("x", "x", "dev", "w.yaml", 3, (c.Variant("a", "A"), c.Variant("b", "B")),
                    (c.Row(c.Figure(m.UTILISATION, "u", ("deployments", "t/chat"), unit="%"), "a", "b", (60, 85)),),
                    "", "")

    def runs(values: list[float]) -> list[dict[str, Any]]:
        return [{"seed": seed, "measures": {"run": {}, "deployments": {"t/chat": {m.UTILISATION: value}}}}
                for seed, value in enumerate(values)]

    row = c.row_data(claim, claim.rows[0], {"a": runs([40.0, 50.0, 60.0]), "b": runs([80.0, 55.0, 66.0])})
    # Per seed: +100 %, +10 %, +10 %: mean 40, sample sd 51.9615 (the means' ratio would say +34 %);
    # t(0.975, 2) = 4.302653.
    half = 4.302653 * 51.961524 / math.sqrt(3)
    assert row["change_pct"]["mean"] == pytest.approx(40.0)
    assert (row["change_pct"]["low"], row["change_pct"]["high"]) == pytest.approx((40 - half, 40 + half), rel=1e-6)
    assert row["before"]["mean"] == pytest.approx(50.0)
    assert row["after"]["mean"] == pytest.approx(67.0)
    # After: 67 +/- 4.302653 * 12.529964 / sqrt 3 = 35.9 to 98.1, which overlaps 60-85.
    assert (row["after"]["low"], row["after"]["high"]) == pytest.approx((35.874, 98.126), abs=1e-3)
    assert row["verdict"] == c.REPRODUCED
    # A seed missing from one side must not pair with another seed.
    with pytest.raises(AssertionError):
        c.row_data(claim, claim.rows[0], {"a": runs([40.0, 50.0, 60.0]), "b": runs([80.0, 55.0, 66.0])[1:]})


# --- end to end on a tiny claim ---------------------------------------------------------------------------------
TINY_WORKLOAD = {
    "start": "2026-06-01T00:00:00Z",
    "duration": "6h",
    "launchToReady": {"g6e": {"medianSeconds": LAUNCH, "p95Seconds": LAUNCH}},
    "jobs": [{"name": "one", "tenant": "ml-research", "flavors": ["l40s-on-demand"], "gpusPerPod": 4,
              "arrivals": {"at": ["1h"]}, "duration": {"fixed": "2h"}}],
}
TINY = c.Claim(
    id="tiny",
    claim="spot and a longer consolidateAfter",
    stack="dev",
    workload="tiny.yaml",
    seeds=2,
    variants=(
        c.Variant("on-demand", "on-demand"),
        c.Variant("spot", "spot", workload=(("jobs[one].flavors", ["l40s-spot"]),)),
        c.Variant("slow", "consolidateAfter 90m",
                  stack=(("gpu-platform:nodePools[gpu-l40s].disruption.consolidateAfter", "90m"),)),
    ),
    rows=(
        c.Row(c.Figure(m.COST, "cost", better=c.LOWER), "on-demand", "spot"),
        c.Row(c.Figure(m.COST, "cost", better=c.LOWER), "on-demand", "slow"),
        c.Row(c.Figure(m.ALLOCATION_PCT, "allocation %", unit="%"), "on-demand", "slow", (60, 85), "60-85 %"),
        c.Row(c.Figure(m.ALLOCATION_PCT, "allocation %", unit="%"), "slow", "on-demand", (60, 85), "60-85 %"),
        c.Row(c.Figure(m.LAUNCHED, "nodes launched", better=c.LOWER), "on-demand", "spot", context=True),
    ),
    depends="nothing",
    why="by hand",
)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> dict[str, Any]:
    directory = tmp_path_factory.mktemp("claims")
    (directory / "tiny.yaml").write_text(yaml.safe_dump(TINY_WORKLOAD))
    inputs = c.Inputs(shipped_document, load, directory)
    return c.claims_data([TINY], run_claims([TINY], inputs, workers=1))


def test_a_tiny_claim_by_hand(tiny):
    # One gang of 4 slices (one GPU) at 1h for 2h: a g6e.xlarge launched 1 s later, Ready 240 s after, the job
    # runs 2 h, the empty node goes consolidateAfter later. No random draw reaches it, so the seeds agree.
    launched = 3600 + BATCH
    finished = launched + LAUNCH + 2 * 3600
    on_demand = (finished + DEV_CONSOLIDATE_AFTER - launched) / 3600 * G6E_XLARGE_USD
    slow = (finished + 90 * 60 - launched) / 3600 * G6E_XLARGE_USD
    rows = tiny["claims"][0]["rows"]
    assert tiny["claims"][0]["seeds"] == [0, 1]
    assert rows[0]["before"]["mean"] == pytest.approx(on_demand)
    assert rows[0]["after"]["mean"] == pytest.approx(on_demand * 0.35)  # the workload's spot priceFactor
    assert rows[0]["change_pct"]["mean"] == pytest.approx(-65.0)
    assert rows[0]["verdict"] == c.REPRODUCED  # every seed the same: the mean is the interval
    assert rows[1]["after"]["mean"] == pytest.approx(slow)
    assert rows[1]["change_pct"]["mean"] == pytest.approx(100 * (slow - on_demand) / on_demand)
    assert rows[1]["verdict"] == c.MISSED
    # Allocation: 2 h held of the node's life (launch to consolidation).
    assert rows[2]["before"]["mean"] == pytest.approx(100 * 7200 / (finished + 300 - launched))
    assert rows[2]["after"]["mean"] == pytest.approx(100 * 7200 / (finished + 5400 - launched))
    assert rows[2]["verdict"] == c.MISSED  # 7200 / 12840 s: 56.1 %, below 60
    assert rows[3]["verdict"] == c.BEATEN  # 7200 / 7740 s: 93.0 %, above 85
    # A figure shown beside the claim: one node either way, and no verdict.
    assert (rows[4]["before"]["mean"], rows[4]["after"]["mean"], rows[4]["verdict"]) == (1, 1, None)


def test_the_table_renders_from_claims_json_alone(tiny):
    table = c.render_table(json.loads(json.dumps(tiny)))
    lines = table.splitlines()
    assert lines[2].startswith("| 1. spot and a longer consolidateAfter | `tiny.yaml` on dev, seeds 0-1 | cost | ")
    assert "| -65.0 | - | **reproduced** |" in lines[2]
    assert lines[4] == "|  |  | allocation % | 93.0 (on-demand) | 56.1 (consolidateAfter 90m) | -39.7 | 60-85 % | **missed** |"
    assert lines[5].endswith("| +65.9 | 60-85 % | **beaten** |")
    assert lines[6] == "|  |  | nodes launched | 1.0 (on-demand) | 1.0 (spot) | 0.0 | - | - |"
    assert "1. **tiny**: depends on nothing Why: by hand" in table


# --- the shipped claims and the docs --------------------------------------------------------------------------
def shipped_inputs() -> c.Inputs:
    return c.Inputs(shipped_document, load, project_path())


def test_every_shipped_claim_builds_its_variants_on_the_frozen_stacks():
    inputs = shipped_inputs()
    built = {(claim.id, v.name): c.scenario(claim, v, inputs) for claim in c.CLAIMS for v in claim.variants}
    surge = {name: s for (claim, name), s in built.items() if claim == "surge"}
    pool = {name: s.config.gpu_pools[0].config for name, s in surge.items()}
    assert (pool["shared"].gpus, pool["cold"].gpus) == (3, 8)
    assert pool["headroom"].warm_start.headroom.gpus == 2
    assert surge["dedicated"].static_baseline and not surge["shared"].static_baseline
    # The shared pool: fixed nodes, Kueue still lending; the dedicated one: nothing lent.
    assert "autoscaling" in surge["shared"].without and "borrowing" not in surge["shared"].without
    assert "borrowing" in surge["dedicated"].without
    quotas = {t.name: {q.flavor.name: q.quota.nominal for q in t.quotas} for t in surge["shared"].config.tenants}
    assert quotas == {"ml-research": {"l40s-on-demand": 8}, "inference": {"l40s-on-demand": 4}}
    spot = {name: s for (claim, name), s in built.items() if claim == "spot"}
    assert spot["on-demand"].without == frozenset({"spot"}) and not spot["spot-stress"].without
    assert spot["on-demand"].workload.jobs == spot["spot-stress"].workload.jobs  # the same training stream
    assert [job.flavors for job in spot["on-demand"].workload.jobs] == [["l40s-spot"]]
    off_hours = {name: s for (claim, name), s in built.items() if claim == "off-hours"}
    chat = {name: next(d for t in s.config.tenants if t.name == "inference" for d in t.config.inference if d.name == "chat")
            for name, s in off_hours.items()}
    assert chat["hpa"].working_hours is None and chat["schedule"].working_hours is not None
    assert off_hours["floor"].without == frozenset({"working-hours"})
    assert all(s.config.gpu_pools[2].config.warm_start.headroom.gpus == 0 for s in off_hours.values())
    consolidation = {name: s.config.gpu_pools[0].config.disruption.consolidation_policy
                     for (claim, name), s in built.items() if claim == "consolidation"}
    assert consolidation == {"when-empty": "WhenEmpty", "underutilized": "WhenEmptyOrUnderutilized"}


def committed() -> dict[str, Any]:
    return json.loads(project_path(str(DOCS_JSON)).read_text())


def test_the_docs_table_is_the_committed_claims_json():
    page = project_path(str(DOCS_PAGE)).read_text()
    assert doc_table(page) == c.render_table(committed())
    assert doc_with_table(page, c.render_table(committed())) == page


def test_the_committed_claims_json_is_of_the_shipped_claims_and_its_verdicts_follow_from_its_figures():
    data = committed()
    assert [claim["id"] for claim in data["claims"]] == [claim.id for claim in c.CLAIMS]
    for written, claim in zip(data["claims"], c.CLAIMS, strict=True):
        assert written["seeds"] == list(range(claim.seeds))
        assert written["variants"] == {v.name: v.label for v in claim.variants}
        assert (written["claim"], written["depends"], written["why"]) == (claim.claim, claim.depends, claim.why)
        assert len(written["rows"]) == len(claim.rows)
        for row_written, row in zip(written["rows"], claim.rows, strict=True):
            assert (row_written["metric"], row_written["where"], row_written["figure"]) == (
                row.figure.metric, list(row.figure.where), row.figure.label)
            assert (row_written["before"]["variant"], row_written["after"]["variant"]) == (row.before, row.after)
            expected = None if row.context else c.verdict(row, row_written["after"], row_written["change_pct"])
            assert row_written["verdict"] == expected


def test_the_committed_figures_are_means_and_intervals_of_their_seeds():
    """Each figure is a summary over its claim's seeds: its interval holds its mean, and n is the seed count."""
    for claim in committed()["claims"]:
        for row in claim["rows"]:
            for side in ("before", "after"):
                figure_ = row[side]
                if figure_["mean"] is None:
                    continue
                assert figure_["n"] == len(claim["seeds"])
                if figure_["low"] is not None:
                    assert figure_["low"] <= figure_["mean"] <= figure_["high"]
    # The summary of identical values has a zero-width interval, as the table prints without one.
    assert summary([2.0, 2.0, 2.0]) == {"mean": 2.0, "low": 2.0, "high": 2.0, "n": 3}


def test_an_unknown_claim_is_one_line_and_exit_2(capsys, tmp_path: Path):
    assert main(["claims", "--claim", "nope", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: no claim nope (claims: utilisation, spot, consolidation, off-hours, surge)"
    ]
    assert not list(tmp_path.iterdir())
