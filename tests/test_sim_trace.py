"""Trace replay (sim/trace.py, sim/arrivals.py): every row accounted for, a window, inflation, and services.

The tiny traces in tests/fixtures/traces/ are written so each rule has a row of its own; the values below
are worked out by hand from those rows. Runs use the frozen dev stack: one time-sliced L40S pool (4 slices
per GPU, 8 GPUs declared), Karpenter's batch BATCH s and launch to Ready LAUNCH s, made exact.
"""

from __future__ import annotations

from typing import Any

import pytest

from sim import measures as m
from sim.experiment import measure
from sim.ledger import EXPIRY, INTERRUPTION, SERVICE, Created, Ended, Held, Ledger, Started
from sim.measures import Scope, compute
from sim.report import _trace_lines
from sim.trace import read_alibaba_2023
from sim.workload import WorkloadError, load_workload

from .conftest import fixture_document, project_path
from .test_sim_measures import run as measures_run
from .test_sim_measures import workload as measures_workload
from .test_sim_scenarios import BATCH, LAUNCH, dev, run, workload

TINY = "tests/fixtures/traces/tiny-alibaba.csv"
UNIFORM = "tests/fixtures/traces/uniform-alibaba.csv"
ONE_SERVICE = "tests/fixtures/traces/one-service.csv"
HOUR = 3600.0


def trace(file: str, classes: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"format": "alibaba-gpu-v2023", "file": file, "classes": classes, **fields}


# --- rows left out, and the window --------------------------------------------------------------------------


def test_every_row_of_the_tiny_trace_is_replayed_or_counted_with_its_reason():
    tasks, stats = read_alibaba_2023(project_path(TINY), window_start=HOUR, window_end=5 * HOUR)
    # t-cpu has no GPU, t-pending was never scheduled, t-zero ran 0 s, t-early was deleted at 3000 s (before the
    # window opens at 3600 s), t-after was created at 18000 s (when it closes). t-long and t-late-start were
    # created before it opens and still there: carried in.
    assert (stats.rows, stats.without_gpu, stats.never_scheduled, stats.no_run_time) == (9, 1, 1, 1)
    assert (stats.ended_before_window, stats.after_window, stats.carried_in, stats.kept) == (1, 1, 2, 4)
    assert [(t.name, t.arrival, t.run_seconds) for t in tasks] == [
        ("t-long", 0.0, 20000 - 3600),  # running at the window's start: the rest of its run
        ("t-late-start", 0.0, 9000 - 4000),  # scheduled after the window opened: its whole run
        ("t-in", 7200 - 3600, 10800 - 7300),
        ("t-unmapped", 8000 - 3600, 9000 - 8000),
    ]


def test_without_a_window_arrivals_count_from_the_first_task_and_nothing_is_carried():
    tasks, stats = read_alibaba_2023(project_path(TINY))
    assert (stats.kept, stats.ended_before_window, stats.after_window, stats.carried_in) == (6, 0, 0, 0)
    # The first GPU task that ran is t-long, created at 20 s.
    assert [(t.name, t.arrival) for t in tasks] == [
        ("t-early", 30.0), ("t-long", 0.0), ("t-late-start", 2980.0), ("t-in", 7180.0), ("t-unmapped", 7980.0),
        ("t-after", 17980.0),
    ]


def test_a_window_that_skips_the_first_hour_replays_the_rest_from_the_runs_start():
    classes = {"LS": {"tenants": ["inference"], "flavors": ["l40s-on-demand"], "replay": "service"},
               "BE": {"tenants": ["ml-research"], "flavors": ["l40s-on-demand"]}}
    source = trace(TINY, classes, window={"start": "1h", "end": "5h"})
    result = run(dev(), workload(duration="8h", traces=[source]))
    created = sorted((c.at, c.stream, c.kind, c.units_per_pod) for c in result.sim.ledger.created)
    # t-long (2 GPUs: 8 slices) and t-late-start (half a GPU: 2 slices) at 0 as services; t-in at 1 h as a job.
    assert created == [(0.0, "trace:LS", "service", 2), (0.0, "trace:LS", "service", 8), (3600.0, "trace:BE", "job", 4)]
    (stats,) = result.trace_stats
    assert (stats.unmapped, stats.services) == (1, 2)
    line = _trace_lines([vars(stats)])
    assert "9 rows: 3 replayed (2 of them as services); left out 1 CPU-only (no GPU), 1 the trace never placed" in line
    assert "1 of a class the workload does not map, 1 ended before the window and 1 created after it; 2 running" in line


# --- inflation -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ratio", "created", "added", "removed"),
    [
        # Four 1-GPU tasks of 2 h in an 8 h run ask for 4 x 2 / 8 = 1 GPU on average; dev's pool declares 8 GPUs.
        (1.0, 32, 28, 0),  # 8 GPUs: copies of a quarter GPU each until 32 quarters
        (0.5, 16, 12, 0),  # 4 GPUs
        (0.3, 9, 5, 0),  # 2.4 GPUs: 9 quarters; a tenth would pass it
        (0.1, 3, 0, 1),  # 0.8 GPUs: one task removed leaves 0.75
        (0.125, 4, 0, 0),  # exactly the demand: as recorded
    ],
)
def test_inflation_scales_arrivals_to_the_ratio_of_the_pools_gpus(ratio, created, added, removed):
    classes = {"BE": {"tenants": ["ml-research"], "flavors": ["l40s-on-demand"]}}
    result = run(dev(), workload(duration="8h", traces=[trace(UNIFORM, classes, inflation={"ratio": ratio})]))
    (stats,) = result.trace_stats
    assert (stats.demand_gpus, stats.capacity_gpus) == (pytest.approx(1.0), 8)
    assert (stats.added, stats.removed) == (added, removed)
    arrivals = [c.at for c in result.sim.ledger.created]
    assert arrivals == [0.0] * created


def test_inflation_counts_the_declared_gpus_not_the_headrooms():
    # The multi-pool fixture's A100 pool declares 16 GPUs (its NodePool limit adds 6 for the headroom, which holds
    # them idle by design). Ratio 0.5: 8 GPUs, 32 quarter-GPU tasks.
    classes = {"BE": {"tenants": ["data-science"], "flavors": ["a100-spot"]}}
    load_ = measures_workload(duration="8h", traces=[trace(UNIFORM, classes, inflation={"ratio": 0.5})])
    result = measures_run(fixture_document("multi-pool"), load_)
    (stats,) = result.trace_stats
    assert (stats.capacity_gpus, stats.added) == (16, 28)


def test_inflation_draws_from_its_own_stream_so_a_seed_gives_the_same_copies():
    tasks = {"LS": {"tenants": ["inference"], "flavors": ["l40s-on-demand"]},
             "BE": {"tenants": ["ml-research"], "flavors": ["l40s-on-demand"]}}
    source = trace(TINY, tasks, window={"start": "1h"}, inflation={"ratio": 2})

    def drawn(seed: int) -> list[tuple[float, int]]:
        return sorted((c.at, c.units_per_pod) for c in run(dev(), workload(duration="8h", traces=[source]), seed=seed)
                      .sim.ledger.created)

    assert drawn(3) == drawn(3)
    assert len(drawn(3)) > 3


# --- services --------------------------------------------------------------------------------------------------


def service_run(replay: str) -> dict[str, Any]:
    """One 1-GPU LS task of 5 h on dev with nodes expiring after 2 h and 10 min to start."""
    document = dev()
    document["gpu-platform:nodePools"][0]["expireAfter"] = "2h"
    classes = {"LS": {"tenants": ["ml-research"], "flavors": ["l40s-on-demand"], "replay": replay, "startSeconds": 600}}
    return measure(run(document, workload(duration="8h", traces=[trace(ONE_SERVICE, classes)])))


def test_a_service_evicted_twice_keeps_its_running_time_and_loses_only_its_restarts():
    # Node 1 is launched at BATCH, Ready LAUNCH later; the pod binds then and runs 600 s later. The node expires
    # 2 h after its launch: node 2 is launched a BATCH later, and so on. Each node runs the service from its Ready
    # + 600 s to its expiry: 7200 - LAUNCH - 600 s = 6360 s, twice, and the last 18000 - 2 x 6360 = 5280 s on node 3.
    research = service_run("service")["tenants"]["ml-research"]
    first_expiry = BATCH + 2 * HOUR
    second_launch = first_expiry + BATCH
    second_expiry = second_launch + 2 * HOUR
    third_running = second_expiry + BATCH + LAUNCH + 600
    held = [first_expiry - (BATCH + LAUNCH), second_expiry - (second_launch + LAUNCH),
            third_running + 5280 - (third_running - 600)]
    assert research[m.ALLOCATED] == pytest.approx(sum(held) / HOUR)
    assert research[m.lost("expiry")] == pytest.approx(2 * 600 / HOUR)  # the two starts again, 1 GPU each
    assert research[m.LOST] == research[m.lost("expiry")]
    assert research[m.USEFUL] == pytest.approx((sum(held) - 2 * 600) / HOUR)
    assert (research[m.restarts("expiry")], research[m.FINISHED]) == (2, 1)
    # Down from each expiry to running again: a batch, a launch and the 10 min start.
    assert research[m.SERVICE_DOWN] == pytest.approx(2 * (BATCH + LAUNCH + 600) / HOUR)
    assert research[m.service_down("expiry")] == research[m.SERVICE_DOWN]


def test_the_same_task_replayed_as_a_job_loses_every_attempt_and_never_finishes():
    # Each 2 h node gives it 6360 s of its 18000 s run: every attempt starts over, and is thrown away.
    research = service_run("job")["tenants"]["ml-research"]
    assert research[m.USEFUL] == pytest.approx(research[m.ALLOCATED] - research[m.LOST])
    assert research[m.FINISHED] == 0
    assert research[m.restarts("expiry")] == 3  # expiries at 2 h, 4 h and 6 h of the 8 h run
    assert research[m.SERVICE_DOWN] == 0.0
    assert research[m.lost("expiry")] == pytest.approx(3 * (2 * HOUR - LAUNCH) / HOUR)


def test_a_window_that_ends_before_it_starts_is_one_line_naming_the_key(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text(
        'start: "2026-06-01T00:00:00Z"\nduration: 2h\ntraces:\n  - format: alibaba-gpu-v2023\n'
        f"    file: {TINY}\n    classes: {{BE: {{tenants: [ml-research]}}}}\n    window: {{start: 2h, end: 1h}}\n"
    )
    with pytest.raises(WorkloadError) as caught:
        load_workload(path)
    assert caught.value.problems == [
        f"{path}:7: traces[0].window: end '1h' is not after start '2h'"
    ]


def test_a_service_evicted_again_before_it_runs_is_down_once_with_each_cause_taking_its_part():
    # Facts written out: a 1-GPU service runs 0-10 h on node 1; node 1 expires at 10 h. Its pod binds at 10 h 30 min
    # on node 2, which is interrupted at 11 h before the pod is running (a 1 h start). It binds on node 3 at 12 h
    # and runs from 13 h to the end at 20 h.
    ledger = Ledger(end=20 * HOUR)
    ledger.created.append(Created(1, "inference", "production", "trace:LS", SERVICE, 1, 1, 0.0, None))
    ledger.started += [Started(1, 0, 0.0), Started(1, 2, 13 * HOUR)]
    ledger.ended += [Ended(1, 0, EXPIRY, 10 * HOUR), Ended(1, 1, INTERRUPTION, 11 * HOUR)]
    ledger.held += [Held(1, 0, "gpu-l40s", 1.0, 0.0, 10 * HOUR, 0.0), Held(1, 1, "gpu-l40s", 1.0, 10.5 * HOUR, 11 * HOUR, 0.0),
                    Held(1, 2, "gpu-l40s", 1.0, 12 * HOUR, 20 * HOUR, 0.0)]
    scope = Scope(("gpu-l40s",), ("inference",), ("production",), ())
    service = compute(ledger, scope)["tenants"]["inference"]
    assert service[m.SERVICE_DOWN] == pytest.approx(3.0)  # 10 h to 13 h
    assert service[m.service_down(EXPIRY)] == pytest.approx(1.0)  # 10 h to the next eviction at 11 h
    assert service[m.service_down(INTERRUPTION)] == pytest.approx(2.0)
    # Starting again: 30 min on node 2 after the expiry, 1 h on node 3 after the interruption.
    assert (service[m.lost(EXPIRY)], service[m.lost(INTERRUPTION)]) == (pytest.approx(0.5), pytest.approx(1.0))
    assert service[m.USEFUL] == pytest.approx(10 + 7)
