"""What a simulation hands back: plain data per seed, replications with Student-t intervals, report.json and the
report.md read from it, one directory per what-if, and random streams that keep variants on the same arrivals."""

from __future__ import annotations

import json
import math
import pickle
from pathlib import Path
from typing import Any

import pytest

from sim import measures as m
from sim.cli import EXIT_INVALID, default_out_dir, run, seed_list
from sim.experiment import Scenario, replicate, run_many, run_one
from sim.stats import summary, t_quantile

from .conftest import load, project_path, shipped_document
from .test_sim_scenarios import dev, workload

JOBS = [{
    "name": "batch", "tenant": "ml-research", "flavors": ["l40s-spot"], "gpusPerPod": 1,
    "arrivals": {"perHour": 3}, "duration": {"exponentialMean": "30m"},
}]


def scenario(**changes: Any) -> Scenario:
    return Scenario(load(dev()), workload(duration="4h", sampleInterval="1h", jobs=JOBS), project_dir=project_path(), **changes)


# --- statistics ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("df", "t"),
    # Student's t, two-sided 95 %, from the printed table.
    [(1, 12.706), (2, 4.303), (3, 3.182), (4, 2.776), (5, 2.571), (9, 2.262), (10, 2.228), (29, 2.045), (60, 2.000)],
)
def test_the_t_quantile_matches_the_table(df, t):
    assert t_quantile(df) == pytest.approx(t, abs=5e-4)


def test_a_summary_is_the_mean_and_its_student_t_interval():
    # 1, 2, 3, 4: mean 2.5, sample sd sqrt(5/3) = 1.2910, standard error 0.6455, t(3) = 3.1824: +-2.0543.
    figure = summary([1.0, 2.0, 3.0, 4.0])
    assert figure["mean"] == 2.5 and figure["n"] == 4
    assert (figure["low"], figure["high"]) == pytest.approx((2.5 - 2.0543, 2.5 + 2.0543), abs=1e-4)
    # A seed without the figure (no scale-up, say) is left out, not counted as zero; one value has no interval.
    assert summary([None, 7.0]) == {"mean": 7.0, "low": None, "high": None, "n": 1}


def test_an_interval_stops_at_what_the_figure_can_be_and_a_difference_does_not():
    # 0, 0, 0, 10 (a p50 wait that is 0 on three seeds): mean 2.5, sd 5, se 2.5, t(3) 3.1824: 2.5 +- 7.956.
    assert summary([0.0, 0.0, 0.0, 10.0], floor=0.0)["low"] == 0.0
    assert summary([0.0, 0.0, 0.0, 10.0], floor=0.0)["high"] == pytest.approx(2.5 + 7.956, abs=1e-3)
    assert summary([0.0, 0.0, 0.0, 10.0])["low"] == pytest.approx(2.5 - 7.956, abs=1e-3)


def test_replicated_measures_never_reach_below_zero():
    runs = [{"measures": {"run": {"wait.p50_s": value}, "tenants": {"a": {"gpu_hours.lost": value}}}}
            for value in (0.0, 0.0, 0.0, 600.0)]
    combined = replicate(runs)
    assert combined["run"]["wait.p50_s"]["low"] == 0.0
    assert combined["tenants"]["a"]["gpu_hours.lost"]["low"] == 0.0


# --- runs as plain data, replications ------------------------------------------------------------------------


def test_one_run_is_plain_data_that_pickles_and_the_same_seed_gives_the_same():
    first = run_one(scenario(), 3)
    assert pickle.loads(pickle.dumps(first)) == first
    assert run_one(scenario(), 3) == first
    assert run_one(scenario(), 4)["measures"] != first["measures"]


def test_seeds_across_processes_come_back_in_seed_order_as_they_would_in_one():
    parallel = run_many(scenario(), [5, 6], workers=2)
    assert [r["seed"] for r in parallel] == [5, 6]
    assert parallel == [run_one(scenario(), 5), run_one(scenario(), 6)]


def test_a_replicated_figure_is_the_mean_of_the_seeds_with_its_interval():
    runs = run_many(scenario(), [0, 1, 2], workers=1)
    values = [r["measures"]["run"][m.ALLOCATED] for r in runs]
    figure = replicate(runs)["run"][m.ALLOCATED]
    average = sum(values) / 3
    half = 4.303 * math.sqrt(sum((v - average) ** 2 for v in values) / 2 / 3)
    assert figure["mean"] == pytest.approx(average)
    assert (figure["low"], figure["high"]) == pytest.approx((average - half, average + half), rel=1e-3)
    assert replicate(runs)["pools"]["gpu-l40s"][m.PROVISIONED]["n"] == 3


def test_the_static_baseline_sees_the_same_arrivals_and_durations():
    # Arrivals and durations draw from their own streams: node launches, which only the autoscaled variant
    # draws, leave them as they are.
    from sim.admission import kueue_for
    from sim.run import simulate

    def arrivals(static: bool) -> list[tuple[float, float | None]]:
        result = simulate(load(dev()), workload(duration="4h", jobs=JOBS), kueue_for, seed=9, static_baseline=static,
                          project_dir=project_path())
        return [(group.created, group.run_seconds) for group in result.sim.groups.values()]

    assert arrivals(False) == arrivals(True)


def test_adding_a_job_stream_leaves_another_streams_arrivals_as_they_were():
    from sim.admission import kueue_for
    from sim.run import simulate

    other = {**JOBS[0], "name": "other", "arrivals": {"perHour": 5}}

    def batch_arrivals(jobs: list[dict[str, Any]]) -> list[tuple[float, float | None]]:
        result = simulate(load(dev()), workload(duration="4h", jobs=jobs), kueue_for, seed=9, project_dir=project_path())
        return [(g.created, g.run_seconds) for g in result.sim.groups.values() if g.stream == "batch"]

    assert batch_arrivals([other, *JOBS]) == batch_arrivals(JOBS)


# --- the command line and its files --------------------------------------------------------------------------

WORKLOAD = """\
start: "2026-06-01T00:00:00Z"
duration: 3h
sampleInterval: 30m
jobs:
  - name: batch
    tenant: ml-research
    flavors: [l40s-spot]
    gpusPerPod: 1
    arrivals: {perHour: 3}
    duration: {exponentialMean: 30m}
"""


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("sim")
    path = root / "w.yaml"
    path.write_text(WORKLOAD)
    config = load(shipped_document("dev"))
    for name in ("a", "b"):
        assert run(config, "dev", path, root / name, seed=0, seeds=[0, 1], baseline="static", project_dir=project_path(),
                   workers=1) == 0
    return root / "a", root / "b", path


def test_the_same_seeds_write_the_same_report_json_and_report_md(outputs):
    a, b, _ = outputs
    for name in ("report.json", "report.md"):
        assert (a / name).read_bytes() == (b / name).read_bytes()


def test_report_md_shows_the_figures_of_report_json(outputs):
    a, _, _ = outputs
    data = json.loads((a / "report.json").read_text())
    assert data["seeds"] == [0, 1]
    simulated = data["variants"]["simulated"]["measures"]["run"][m.USD_PER_USEFUL]
    static = data["variants"]["static"]["measures"]["run"][m.USD_PER_USEFUL]
    line = next(line for line in (a / "report.md").read_text().splitlines() if line.startswith("| USD per useful GPU-hour |"))
    assert line == (f"| USD per useful GPU-hour | {static['mean']:,.2f} ({static['low']:,.2f} to {static['high']:,.2f}) | "
                    f"{simulated['mean']:,.2f} ({simulated['low']:,.2f} to {simulated['high']:,.2f}) |")
    assert len(data["variants"]["simulated"]["per_seed"]) == 2


def test_a_what_if_writes_to_a_directory_of_its_own():
    normal = default_out_dir("prod", Path("workloads/surge-warm-start.yaml"), frozenset())
    without = default_out_dir("prod", Path("workloads/surge-warm-start.yaml"), frozenset({"model-source", "headroom"}))
    assert normal == Path("build/sim-prod-surge-warm-start")
    assert without == Path("build/sim-prod-surge-warm-start-without-headroom-without-model-source")


@pytest.mark.parametrize(("text", "first", "seeds"), [("3", 0, [0, 1, 2]), ("2", 5, [5, 6]), ("3-5", 0, [3, 4, 5])])
def test_seeds_are_a_count_from_the_first_or_a_range(text, first, seeds):
    assert seed_list(text, first) == seeds


@pytest.mark.parametrize("text", ["0", "5-3", "x", "-2"])
def test_a_bad_seed_list_is_one_line(text):
    with pytest.raises(ValueError, match=r"--seeds .*: give a count \(10\) or a range of seeds \(3-12\)"):
        seed_list(text)


def test_an_invalid_workload_still_exits_2(tmp_path: Path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text('start: "2026-06-01T00:00:00Z"\nduration: 2 hours\n')
    config = load(shipped_document("dev"))
    code = run(config, "dev", path, tmp_path / "out", seed=0, seeds=[0, 1], baseline=None, project_dir=project_path())
    assert code == EXIT_INVALID
    assert "invalid workload" in capsys.readouterr().err


def test_the_command_line_refuses_a_bad_seed_list_in_one_line_with_exit_2(tmp_path: Path, capsys, shipped_project):
    from offline.__main__ import main

    code = main(["simulate", "--stack", "dev", "--workload", "workloads/design-surge.yaml", "--seeds", "9-2",
                 "--out", str(tmp_path / "out")])
    assert code == 2
    assert capsys.readouterr().err.splitlines() == ["error: --seeds '9-2': give a count (10) or a range of seeds (3-12)"]
    assert not (tmp_path / "out").exists()
