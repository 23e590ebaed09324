"""The capacity planner (offline/plan.py, sim/plan_slo.py): its service-level grammar, its knobs' steps, and a
plan on a tiny workload whose answer is worked out by hand.

The tiny workload: ml-research submits three one-GPU jobs (4 slices each on dev's time-sliced L40S pool) at
10 minutes, each running 2 hours, and the level is `standard.p95_time_to_start<=30m` (of three jobs the 95th
percentile is the last to start). All three start together only when ml-research's nominal quota holds 3 x 4 = 12
slices (nobody else has quota to lend on the fixture stack): with 11 the third waits two hours for a job to
finish. So the plan must pick nominal 12 (pool gpus 3), with no borrowing and no headroom, from a stack that
promises 16 (pool gpus 4); at 10 (12 lowered by 10 % on its grid of 2) the level is missed.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import ruamel.yaml
import yaml

from offline import plan as planner
from sim import plan_slo
from sim.plan_slo import Names, SloError

from .conftest import load, shipped_document

NAMES = Names(("production", "standard", "best-effort"), ("ml-research", "inference"), ("inference/chat",))
LEVEL = "standard.p95_time_to_start<=30m"
NOMINAL = "tenants[ml-research].gpu.l40s-on-demand.nominal"
BORROWING = "tenants[ml-research].gpu.l40s-on-demand.borrowingLimit"
HEADROOM = "nodePools[gpu-l40s].warmStart.headroom.gpus"
WORKLOAD = """\
start: "2026-06-01T06:00:00Z"
duration: 3h
sampleInterval: 10m
jobs:
  - name: three-at-once
    tenant: ml-research
    flavors: [l40s-on-demand]
    gpusPerPod: 4
    arrivals: {at: [10m, 10m, 10m]}
    duration: {fixed: 2h}
"""


@pytest.mark.parametrize(("text", "scope", "metric", "bound"), [
    ("production.p95_time_to_start<=15m", "production", "p95_time_to_start", 900.0),
    ("standard.p95_time_to_start <= 1h30m", "standard", "p95_time_to_start", 5400.0),
    ("ml-research.unstarted<=2.5%", "ml-research", "unstarted", 2.5),
    ("all.p95_wait<=45s", "all", "p95_wait", 45.0),
    ("inference.p95_time_to_gpu<=3m", "inference", "p95_time_to_gpu", 180.0),
    ("inference/chat.unserved<=0.5%", "inference/chat", "unserved", 0.5),
])
def test_levels_parse(text: str, scope: str, metric: str, bound: float) -> None:
    slo = plan_slo.parse(text, NAMES)
    assert (slo.scope, slo.metric, slo.bound) == (scope, metric, bound)


@pytest.mark.parametrize(("text", "says"), [
    ("production.p95_time_to_start<=15", "give it a unit, e.g. 90s"),
    ("inference.unserved<=1", "write a percentage, e.g. 1%"),
    ("inference.unserved<=150%", "at most 100%"),
    ("production.p95_time_to_start>=15m", "every service level is an upper bound"),
    ("production.p99_time_to_start<=15m", "no metric 'p99_time_to_start'"),
    ("prodution.p95_time_to_start<=15m", "not 'prodution'"),
    ("ml-research.unserved<=1%", "its scope is 'inference' (every deployment) or a deployment as tenant/name"),
    ("production p95<=15m", "not SCOPE.METRIC<=BOUND"),
])
def test_level_mistakes_are_one_line(text: str, says: str) -> None:
    with pytest.raises(SloError) as raised:
        plan_slo.parse(text, NAMES)
    message = str(raised.value)
    assert says in message and "\n" not in message and message.startswith(f"--slo {text!r}")


def test_a_level_given_twice_and_inference_without_deployments_are_refused() -> None:
    with pytest.raises(SloError, match="given twice"):
        plan_slo.parse_all(["all.p95_wait<=1m", "all.p95_wait<=2m"], NAMES)
    with pytest.raises(SloError, match="no inference deployments"):
        plan_slo.parse("inference.unserved<=1%", Names(("standard",), ("t",), ()))


@pytest.mark.parametrize(("mean", "met", "violation"), [
    (900.0, True, 0.0), (899.0, True, -1 / 900), (1800.0, False, 1.0), (None, False, 1.0),
])
def test_a_level_is_met_when_its_mean_meets_the_bound(mean: float | None, met: bool, violation: float) -> None:
    slo = plan_slo.parse("production.p95_time_to_start<=15m", NAMES)
    value = {"mean": mean, "low": None, "high": None, "n": 3}
    assert plan_slo.met(slo, value) is met
    assert plan_slo.violation(slo, value) == pytest.approx(violation)


@pytest.mark.parametrize(("value", "low", "step", "lowered"), [
    (12, 0, 1, 10),  # 10 % of 12 is 1.2: 11 is only 8 % lower
    (10, 0, 1, 9),
    (20, 0, 1, 18),
    (1, 0, 1, 0),
    (16, 0, 2, 14),
    (8, 0, 4, 4),
    (5, 4, 1, 4),
    (4, 4, 1, None),
    (0, 0, 1, None),
])
def test_a_knob_lowers_by_at_least_ten_percent_on_its_grid(value: int, low: int, step: int, lowered: int | None) -> None:
    knob = planner.Knob("k", planner.NOMINAL, "t", "f", "p", value, low, 100, step, "GPUs")
    assert knob.lowered(value) == lowered


def _tiny_document() -> dict[str, Any]:
    """dev with ml-research alone, on-demand L40S slices only: 16 nominal (pool gpus 4), no borrowing."""
    document = shipped_document("dev")
    [tenant] = [t for t in document["gpu-platform:tenants"] if t["name"] == "ml-research"]
    tenant["gpu"] = {"l40s-on-demand": {"nominal": 16}}
    document["gpu-platform:tenants"] = [tenant]
    document["gpu-platform:nodePools"][0]["gpus"] = 4
    return document


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("plan")
    # Written in the shipped stack files' style (tests/test_readme_steps.py's editor), so an unchanged line reads
    # back unchanged.
    editor = ruamel.yaml.YAML()
    editor.indent(mapping=2, sequence=4, offset=2)
    editor.width = 4096
    stream = io.StringIO()
    editor.dump({"config": _tiny_document()}, stream)
    (directory / "Pulumi.tiny.yaml").write_text("# The planner's fixture: dev with one tenant.\n" + stream.getvalue())
    (directory / "three-at-once.yaml").write_text(WORKLOAD)
    return directory


def test_knobs_and_derived_pool_gpus() -> None:
    document = _tiny_document()
    config = load(document)
    workload = yaml.safe_load(WORKLOAD)
    from sim.workload import Workload

    knobs = planner.knobs_for(config, Workload.model_validate(workload))
    assert [k.name for k in knobs] == [NOMINAL, BORROWING, HEADROOM]
    assert [(k.low, k.high, k.step) for k in knobs] == [(0, 32, 2), (0, 16, 1), (0, 4, 1)]
    # 13 slices need ceil(13 / 4) = 4 GPUs; a borrowing limit with no lender is what the rule allows: 0.
    found = planner.candidate(document, knobs, {NOMINAL: 13, BORROWING: 6, HEADROOM: 0}, config, "tiny")
    assert found.problem is None and found.pool_gpus == {"gpu-l40s": 4}
    assert found.values == {NOMINAL: 13, BORROWING: 0, HEADROOM: 0}
    assert planner.candidate(document, knobs, {NOMINAL: 12, BORROWING: 0, HEADROOM: 0}, config, "tiny").pool_gpus == {
        "gpu-l40s": 3}


def test_range_and_floor_bound_each_knob() -> None:
    """--range 3 --floor 0.5 on the fixture: nominal 16 from 8 to 48 (grid of 2 from 8), borrowing 0 from 0 to 16
    (4 GPUs' worth of slices, the least range), headroom 0 from 0 to 4."""
    from sim.workload import Workload

    knobs = planner.knobs_for(load(_tiny_document()), Workload.model_validate(yaml.safe_load(WORKLOAD)), 3, 0.5)
    assert [(k.low, k.high, k.step) for k in knobs] == [(8, 48, 2), (0, 16, 1), (0, 4, 1)]


def _plan(project: Path, out: Path, **options: Any) -> dict[str, Any]:
    settings = {"trials": 3, "seeds": 1, "verify_seeds": 1, "batch": 2, "workers": 1, "tighten": 4, **options}
    code = planner.plan("tiny", project / "three-at-once.yaml", [LEVEL], out, planner.Options(**settings),
                        project_dir=project, say=lambda line: None)
    assert code == 0
    return json.loads((out / "plan.json").read_text())


@pytest.fixture(scope="module")
def planned(project: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("planned")
    return out, _plan(project, out)


def test_the_plan_picks_the_quota_the_work_needs(planned: tuple[Path, dict[str, Any]]) -> None:
    _, data = planned
    assert data["chosen"]["values"] == {NOMINAL: 12, BORROWING: 0, HEADROOM: 0}
    assert data["chosen"]["pool_gpus"] == {"gpu-l40s": 3}
    why = {row["knob"]: row for row in data["why"]}
    assert why[NOMINAL]["lowered"] == 10 and why[NOMINAL]["binds"] == [LEVEL]
    assert why[BORROWING]["verdict"] == why[HEADROOM]["verdict"] == "at the floor of its range"


def test_the_planned_stack_file_changes_only_the_planned_values(project: Path, planned: tuple[Path, dict[str, Any]]) -> None:
    out, _ = planned
    text = (out / "Pulumi.tiny.yaml").read_text()
    assert text.startswith("# The planner's fixture: dev with one tenant.\n")
    changed = [line for line in (out / "stack.diff").read_text().splitlines()
               if line[:1] in "+-" and not line.startswith(("---", "+++"))]
    assert sorted(changed) == sorted(["-      gpus: 4", "+      gpus: 3", "-          nominal: 16", "+          nominal: 12"])
    document = yaml.safe_load(text)["config"]
    assert load(document).tenants[0].quotas[0].quota.nominal == 12


def _at_nominals(project: Path, nominals: Sequence[int], level: str = LEVEL) -> tuple[list[planner.Candidate], Any, Any]:
    """The tiny stack at each nominal quota (no borrowing, no headroom), the scenario of the tiny workload, the level."""
    from sim.experiment import Scenario
    from sim.workload import read_workload

    document = _tiny_document()
    config = load(document)
    workload = read_workload(project / "three-at-once.yaml").workload
    knobs = planner.knobs_for(config, workload)
    [slo] = plan_slo.parse_all([level], NAMES)
    candidates = [planner.candidate(document, knobs, {NOMINAL: n, BORROWING: 0, HEADROOM: 0}, config, "tiny")
                  for n in nominals]
    return candidates, Scenario(config, workload), slo


def test_one_more_slice_short_misses_the_level(project: Path) -> None:
    """N = 12 meets the level and N - 1 = 11 misses it, on the same seed."""
    candidates, scenario, slo = _at_nominals(project, (12, 11))
    results = planner.evaluate(candidates, scenario, [5], [slo], NAMES, None)
    assert [r.feasible for r in results] == [True, False]
    assert results[1].levels[0]["mean"] > 2 * 3600  # the third job waits for a first one to finish


@pytest.mark.parametrize("at", [2, 3, 4])
def test_an_interrupted_plan_resumed_is_the_plan_run_straight(project: Path, planned: tuple[Path, dict[str, Any]],
                                                              tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              at: int) -> None:
    """Interrupted while simulating its `at`-th batch, then resumed: the search's second batch (its sampled trial),
    the first tightening round and the second (one knob lowers on this stack: the rounds have no lowerings
    together)."""
    out, data = planned
    evaluate, calls = planner.evaluate, []

    def interrupted(*args: Any) -> Any:
        calls.append(1)
        if len(calls) == at:
            raise KeyboardInterrupt
        return evaluate(*args)

    monkeypatch.setattr(planner, "evaluate", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _plan(project, tmp_path / "first")
    monkeypatch.setattr(planner, "evaluate", evaluate)
    resumed = _plan(project, tmp_path / "first", resume=True)
    assert resumed == data
    assert (tmp_path / "first" / "Pulumi.tiny.yaml").read_bytes() == (out / "Pulumi.tiny.yaml").read_bytes()


def test_resume_refuses_another_plans_journal(project: Path, planned: tuple[Path, dict[str, Any]]) -> None:
    out, _ = planned
    with pytest.raises(planner.PlanError, match="a plan of another stack"):
        planner.plan("tiny", project / "three-at-once.yaml", ["standard.p95_time_to_start<=40m"], out,
                     planner.Options(trials=3, seeds=1, verify_seeds=1, batch=2, workers=1, resume=True),
                     project_dir=project, say=lambda line: None)


def test_two_workers_plan_what_one_does(project: Path, planned: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    _, data = planned
    assert _plan(project, tmp_path / "two", workers=2) == data


def test_a_run_stopped_early_gives_the_verdict_of_the_run_to_the_end(project: Path) -> None:
    """Nominal 12 meets the level; 10, 8 and 4 miss it, each stopped once its third (or second) job started late:
    the same verdicts as the runs to the end, with figures no higher than theirs."""
    candidates, scenario, slo = _at_nominals(project, (12, 10, 8, 4))
    early = planner.evaluate(candidates, scenario, [5], [slo], NAMES, None)
    exact = planner.evaluate(candidates, scenario, [5], [slo], NAMES, None, early_stop=False)
    assert [r.feasible for r in early] == [r.feasible for r in exact] == [True, False, False, False]
    assert [r.stopped is not None for r in early] == [False, True, True, True]
    assert all(r.stopped is None for r in exact)
    for stopped, whole in zip(early[1:], exact[1:], strict=True):
        assert stopped.stopped is not None and stopped.stopped["level"] == LEVEL
        assert 1800 < stopped.levels[0]["mean"] <= whole.levels[0]["mean"]
        assert stopped.levels[0]["at_least"] and stopped.cost["at_least"]
        assert stopped.cost["mean"] < whole.cost["mean"]
        assert 0 < stopped.violations[0] <= whole.violations[0]
    assert early[0].levels == exact[0].levels and early[0].cost == exact[0].cost


def test_stopped_trials_are_listed_apart_with_lower_bounds(planned: tuple[Path, dict[str, Any]]) -> None:
    out, data = planned
    stopped = [t for t in data["trials"] if t["stopped"] is not None]
    assert stopped, "the fixture's search stops no run: this test would test nothing"
    text = (out / "plan.md").read_text()
    frontier = text.split("## Frontier")[1].split("trial(s) stopped early")[0]
    listed = text.split("trial(s) stopped early")[1].split("## What the plan does not model")[0]
    for t in stopped:
        assert f"\n| {t['trial']} | " not in frontier
        row = next(line for line in listed.splitlines() if line.startswith(f"| {t['trial']} | "))
        assert f"`{LEVEL}`" in row and "≥ $" in row and f"≥ {plan_slo.show(t['levels'][0]['mean'], 's')}" in row
        assert "pareto" not in t


@pytest.mark.parametrize(("bound", "nominal", "runs", "stopped"), [(40, 4, 1, 1), (60, 8, 3, 2)])
def test_over_three_seeds_the_first_decides_alone_or_lowers_the_others_bar(project: Path, bound: int, nominal: int,
                                                                           runs: int, stopped: int) -> None:
    """Over three seeds, each seed's figure v is the last started job's wait, about 2 h 4 min (launch times vary by
    seed). At `<=40m` the first seed's bound passes 3 x 40 min = 2 h and decides alone: no other seed runs. At
    `<=1h`, v is under 3 h: the first seed runs to the end, and the other two stop once their bound passes
    3 h - v, about 56 min, under their own v."""
    candidates, scenario, slo = _at_nominals(project, (nominal,), f"standard.p95_time_to_start<={bound}m")
    seeds = [5, 6, 7]
    [early] = planner.evaluate(candidates, scenario, seeds, [slo], NAMES, None)
    [exact] = planner.evaluate(candidates, scenario, seeds, [slo], NAMES, None, early_stop=False)
    assert early.stopped is not None and (early.stopped["runs"], early.stopped["seeds"]) == (runs, stopped)
    assert 2 * 3600 < exact.levels[0]["low"] <= exact.levels[0]["high"] < 2.2 * 3600
    assert not exact.feasible and not early.feasible and early.levels[0]["at_least"]
    assert bound * 60 < early.levels[0]["mean"] <= exact.levels[0]["mean"]
    assert early.cost["mean"] < exact.cost["mean"]


def test_a_level_the_largest_stack_misses_says_raise_the_range(project: Path, tmp_path: Path) -> None:
    """No stack starts a job within a second of its creation (a node takes minutes): the largest stack of the ranges
    (trial 2, every knob at the top: nominal 32, borrowing 16, headroom 4) misses the level, and the plan says so."""
    lines: list[str] = []
    code = planner.plan("tiny", project / "three-at-once.yaml", ["standard.p95_time_to_start<=1s"], tmp_path,
                        planner.Options(trials=3, seeds=1, verify_seeds=1, batch=2, workers=1, tighten=0),
                        project_dir=project, say=lines.append)
    assert code == planner.EXIT_UNMET
    data = json.loads((tmp_path / "plan.json").read_text())
    largest = next(t for t in data["trials"] if t["trial"] == 2)
    assert largest["values"] == {NOMINAL: 32, BORROWING: 0, HEADROOM: 4}  # no lender: borrowing clamped to 0
    said = ("the largest stack in range (trial 2, every knob at --range 2 times its value) misses "
            "standard.p95_time_to_start<=1s at ")
    assert data["unmet"].startswith(said) and data["unmet"].endswith(": raise --range, or relax that level")
    assert lines[-1] == f"no candidate met every level on fresh seeds: {data['unmet']}"
    assert f"No candidate met every level on fresh seeds: {data['unmet']}" in (tmp_path / "plan.md").read_text()
    assert not (tmp_path / "Pulumi.tiny.yaml").exists()


def _stand_in(candidates: list[planner.Candidate]) -> list[planner.Evaluation]:
    """A stand-in for the simulator: a stack meets the level when the nominal quota holds 12 slices, and costs a
    dollar per nominal slice and ten per headroom GPU."""
    found = []
    for c in candidates:
        nominal, headroom = c.values[NOMINAL], c.values[HEADROOM]
        cost = {"mean": float(nominal + 10 * headroom), "low": None, "high": None, "n": 1}
        found.append(planner.Evaluation(cost, [{"mean": 0.0, "n": 1}], [0.0 if nominal >= 12 else 1.0]))
    return found


def _free_headroom(candidates: list[planner.Candidate]) -> list[planner.Evaluation]:
    """The stand-in with headroom free: a dollar per nominal slice."""
    return [planner.Evaluation({"mean": float(c.values[NOMINAL]), "low": None, "high": None, "n": 1},
                               [{"mean": 0.0, "n": 1}], [0.0 if c.values[NOMINAL] >= 12 else 1.0]) for c in candidates]


def _tiny_knobs_and_make() -> tuple[list[planner.Knob], Any]:
    from sim.workload import Workload

    document = _tiny_document()
    config = load(document)
    knobs = planner.knobs_for(config, Workload.model_validate(yaml.safe_load(WORKLOAD)))

    def make(values: dict[str, int]) -> planner.Candidate:
        return planner.candidate(document, knobs, values, config, "tiny")

    return knobs, make


def _started(start: tuple[int, int], run: Any) -> Any:
    """A study holding the tiny stack at (nominal, headroom) `start`, evaluated by `run`."""
    import optuna

    knobs, make = _tiny_knobs_and_make()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="minimize")
    study.enqueue_trial({NOMINAL: start[0], BORROWING: 0, HEADROOM: start[1]})
    planner._enqueue_and_run(study, knobs, [], make, run, plan_slo.parse_all([LEVEL], NAMES), lambda line: None)
    return study


def _tighten(study: Any, run: Any, rounds: int = 24) -> Any:
    knobs, make = _tiny_knobs_and_make()
    planner.tighten(study, knobs, make, run, planner.Options(tighten=rounds), plan_slo.parse_all([LEVEL], NAMES),
                    lambda line: None)
    return study


def _tightened(start: tuple[int, int], run: Any, rounds: int = 24) -> Any:
    """The study from `start`, then tightened."""
    return _tighten(_started(start, run), run, rounds)


def _pair(trial: Any) -> tuple[int, int]:
    return trial.user_attrs["values"][NOMINAL], trial.user_attrs["values"][HEADROOM]


def test_tightening_lowers_every_knob_that_can_go_lower_at_once_with_a_widening_step() -> None:
    """From the largest stack (nominal 32, headroom 4), on the stand-in. Round 1 at 10 %: 28 and 3 alone meet the
    level, so (28, 3) together, the cheapest: the step doubles. Round 2 at 20 %: (22, 2); round 3 at 40 %: (12, 1);
    round 4 at 40 %: nominal 6 misses, headroom 0 alone is the cheapest, (12, 0). Rounds 5, 6 and 7 find nothing
    cheaper at 40 %, 20 % and 10 % (nominal 6, 8, 10 miss): the search ends at (12, 0) after seven rounds. One knob
    at 10 % a round would take eleven."""
    study = _tightened((32, 4), _stand_in)
    assert _pair(planner.best_trials(study)[0]) == (12, 0)
    assert study.user_attrs[planner.TIGHTENING] == {"done": 7, "trial": None, "share": 0.10, "ended": True}
    held = [_pair(t) for t in study.get_trials()]
    assert all(p in held for p in [(28, 3), (22, 2), (12, 1), (6, 1), (6, 0), (8, 0), (10, 0)])
    assert (20, 0) not in held  # never one knob at a time down the whole way
    # A limit of two rounds stops at the second round's best.
    assert _pair(planner.best_trials(_tightened((32, 4), _stand_in, rounds=2))[0]) == (22, 2)


def test_a_smaller_stack_of_the_same_cost_is_taken_but_halves_the_step() -> None:
    """The stand-in with headroom free: lowering it alone is a tie. From (32, 4): (28, 3), (22, 2) and (12, 1) as
    before (each cheaper by its nominal quota); at 40 % from (12, 1), nominal 6 misses and (12, 0) only ties: it is
    taken (the smaller stack) and the step halves; nominal 8 at 20 % and 10 at 10 % miss: the end, after six
    rounds, where counting the tie as progress would have spent a seventh at 40 %. From (12, 4), at 10 % from the
    start, only ties: one headroom GPU a round, taken down to (12, 0), where no stack is left to take."""
    study = _tightened((32, 4), _free_headroom)
    assert _pair(planner.best_trials(study)[0]) == (12, 0)
    assert study.user_attrs[planner.TIGHTENING] == {"done": 6, "trial": None, "share": 0.10, "ended": True}
    held = [_pair(t) for t in study.get_trials()]
    assert (8, 0) in held and (6, 0) not in held
    assert _pair(planner.best_trials(_tightened((12, 4), _free_headroom))[0]) == (12, 0)


@pytest.mark.parametrize("at", [2, 3, 4])
def test_a_tightening_interrupted_within_a_round_resumes_it(at: int) -> None:
    """The stand-in's tightening from (32, 4), interrupted at its `at`-th evaluation (2: round 1's lowerings
    together; 3 and 4: round 2's alone and together), then run again on the same study: the same trials, in the
    same order, as the tightening run straight."""
    straight = [_pair(t) for t in _tightened((32, 4), _stand_in).get_trials()]
    calls: list[int] = []

    def interrupted(candidates: list[planner.Candidate]) -> list[planner.Evaluation]:
        calls.append(1)
        if len(calls) == at + 1:  # the first evaluation is the starting stack's, before the tightening
            raise KeyboardInterrupt
        return _stand_in(candidates)

    study = _started((32, 4), interrupted)
    with pytest.raises(KeyboardInterrupt):
        _tighten(study, interrupted)
    assert [_pair(t) for t in _tighten(study, _stand_in).get_trials()] == straight
