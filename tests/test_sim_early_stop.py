"""A run stopped once a work level is certainly missed (sim/early_stop.py): the lower bound, what a run counts,
and a stopped run against the same run to the end.

The stopped run: the planner's tiny stack (tests/test_plan.py) with ml-research's nominal quota at 4 slices, one
GPU: of three one-GPU jobs created at 10 minutes and running 2 hours, the first starts after a node's launch, the
second only when the first ends, and the third never within the 3 hours. The level is
`standard.p95_time_to_start<=30m`; of three jobs the nearest-rank 95th percentile is the last to start.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest
import yaml

from sim import measures as m
from sim import plan_slo
from sim.admission import kueue_for
from sim.early_stop import Watch, lower_bound, watches
from sim.experiment import Scenario, run_one
from sim.plan_slo import Names
from sim.run import simulate
from sim.stats import percentile
from sim.workload import Workload

from .conftest import load
from .test_plan import WORKLOAD, _tiny_document
from .test_sim_scenarios import dev, run, workload

NAMES = Names(("production", "standard", "best-effort"), ("ml-research", "inference"), ())
LEVEL = "standard.p95_time_to_start<=30m"


# --- the lower bound --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("metric", "known", "count", "bound"), [
    # nearest rank: ceil(10 x 0.95) = 10th of 10 -> the largest; 3 known and 7 zeros
    ("p95_time_to_start", [10.0, 20.0, 30.0], 10, 30.0),
    # the 5th of [0 x 7, 10, 20, 30] is a zero: the other seven may yet start at once
    ("p50_time_to_start", [10.0, 20.0, 30.0], 10, 0.0),
    # the 2nd of [10, 20, 30]: nothing else can come
    ("p50_time_to_start", [10.0, 20.0, 30.0], 3, 20.0),
    # 60 s over 10 workloads
    ("mean_time_to_start", [10.0, 20.0, 30.0], 10, 6.0),
    # p95 of 40: the 38th of [0 x 36, 100, 200, 300, 400] is 200
    ("p95_wait", [100.0, 200.0, 300.0, 400.0], 40, 200.0),
    ("p95_time_to_start", [], 0, None),
])
def test_the_lower_bound_counts_the_work_still_to_come_as_zeros(metric: str, known: list[float], count: int,
                                                                 bound: float | None) -> None:
    assert lower_bound(metric, known, count) == bound


@pytest.mark.parametrize("metric", ["p95_time_to_start", "p50_time_to_start", "mean_time_to_start"])
def test_no_ending_of_the_run_gives_less_than_the_bound_and_one_gives_exactly_it(metric: str) -> None:
    """The final figure is over the work that started by the end: the known values and any of the rest, each
    starting after anything from 0 up, or never. Drawn at random: none falls below the bound; the rest all starting
    at 0 meets it."""
    draw = random.Random(7)
    q = {"p95_time_to_start": 95, "p50_time_to_start": 50, "mean_time_to_start": None}[metric]

    def figure(values: list[float]) -> float:
        return sum(values) / len(values) if q is None else percentile(values, q)  # type: ignore[return-value]

    for _ in range(300):
        count = draw.randint(1, 40)
        known = [draw.uniform(0, 5000) for _ in range(draw.randint(1, count))]
        bound = lower_bound(metric, known, count)
        assert bound is not None
        rest = count - len(known)
        later = [draw.uniform(0, 5000) * draw.choice((0, 1)) for _ in range(draw.randint(0, rest))]
        assert figure(known + later) >= bound
        assert figure(known + [0.0] * rest) == pytest.approx(bound)


def test_watches_are_the_time_levels_of_work_past_k_times_their_bound() -> None:
    slos = plan_slo.parse_all(["production.p95_time_to_start<=15m", "ml-research.mean_time_to_start<=1h",
                               "all.p95_wait<=10m", "standard.unstarted<=1%"], NAMES)
    found = watches(slos, NAMES, 3, has_inference=False)
    assert [(w.slo.text, w.level, w.beyond) for w in found] == [
        ("production.p95_time_to_start<=15m", "tier", 3 * 900.0),
        ("ml-research.mean_time_to_start<=1h", "tenant", 3 * 3600.0),
        ("all.p95_wait<=10m", "run", 3 * 600.0),
    ]
    # Inference replicas are created on demand: nothing counts them in advance, so nothing is watched.
    assert watches(slos, NAMES, 3, has_inference=True) == ()


def test_every_job_and_trace_task_is_counted_by_tenant_and_tier_before_the_clock_runs() -> None:
    """Two job streams (ml-research at its own standard tier and at production) and the tiny trace's window: t-long
    and t-late-start (LS) to inference at production, t-in (BE) to ml-research; t-unmapped's class is not mapped."""
    classes = {"LS": {"tenants": ["inference"], "priority": "production", "flavors": ["l40s-on-demand"],
                      "replay": "service"},
               "BE": {"tenants": ["ml-research"], "flavors": ["l40s-on-demand"]}}
    jobs = [{"name": "own", "tenant": "ml-research", "gpusPerPod": 4, "arrivals": {"at": ["10m", "20m"]},
             "duration": {"fixed": "10m"}},
            {"name": "urgent", "tenant": "ml-research", "priority": "production", "gpusPerPod": 4,
             "arrivals": {"at": ["30m"]}, "duration": {"fixed": "10m"}}]
    trace = {"format": "alibaba-gpu-v2023", "file": "tests/fixtures/traces/tiny-alibaba.csv", "classes": classes,
             "window": {"start": "1h", "end": "5h"}}
    result = run(dev(), workload(duration="8h", jobs=jobs, traces=[trace]))
    assert result.sim.expected == Counter({("ml-research", "standard"): 3, ("ml-research", "production"): 1,
                                           ("inference", "production"): 2})


# --- a stopped run ----------------------------------------------------------------------------------------------


def _one_gpu() -> tuple[Scenario, Watch]:
    document = _tiny_document()
    [tenant] = document["gpu-platform:tenants"]
    tenant["gpu"]["l40s-on-demand"]["nominal"] = 4
    scenario = Scenario(load(document), Workload.model_validate(yaml.safe_load(WORKLOAD)))
    [watch] = watches(plan_slo.parse_all([LEVEL], NAMES), NAMES, 1, has_inference=False)
    return scenario, watch


@pytest.fixture(scope="module")
def both() -> tuple[dict[str, Any], dict[str, Any]]:
    scenario, watch = _one_gpu()
    return run_one(scenario, 0, (watch,)), run_one(scenario, 0)


def test_the_run_stops_at_the_first_check_after_the_second_job_starts(both: tuple[dict[str, Any], dict[str, Any]]) -> None:
    stopped, whole = both
    assert whole["stopped"] is None
    # The whole run's p95 over the two jobs that started (the third never does) is the second's time to start.
    second = whole["measures"]["tiers"]["standard"][m.START_P95]
    assert whole["measures"]["tiers"]["standard"][m.UNSTARTED_PCT] == pytest.approx(100 / 3)
    assert second > 2 * 3600  # it waited for the first to end
    info = stopped["stopped"]
    assert info["level"] == LEVEL
    # Checked every 10 minutes (the workload's sample interval) from 10 minutes: the first check at or after the
    # second job's start (created at 10 minutes).
    assert info["at"] == 600 * -(-(600 + second) // 600)
    assert info["at"] < 3 * 3600
    # The bound is the whole run's own figure: the third job never starts.
    assert info["lower_bounds"][LEVEL] == second


def test_a_stopped_run_spends_less_and_its_ledger_ends_where_it_stopped(both: tuple[dict[str, Any], dict[str, Any]]) -> None:
    stopped, whole = both
    assert stopped["measures"]["run"][m.COST] < whole["measures"]["run"][m.COST]
    scenario, watch = _one_gpu()

    result = simulate(scenario.config, scenario.workload, kueue_for, watch=(watch,))
    assert result.stopped is not None and result.sim.ledger.end == result.stopped["at"] == result.sim.now


def test_a_level_met_or_not_yet_certain_leaves_the_run_as_it_would_be() -> None:
    """A watch past 3 h (K = 6 seeds) never stops the run: every measure is the unwatched run's."""
    scenario, _ = _one_gpu()
    [loose] = watches(plan_slo.parse_all([LEVEL], NAMES), NAMES, 6, has_inference=False)
    watched, whole = run_one(scenario, 0, (loose,)), run_one(scenario, 0)
    assert watched["stopped"] is None
    assert watched["measures"] == whole["measures"] and watched["series"] == whole["series"]
