"""The sharing-mode tables of docs/fractional-gpus-measured.md and README.md read back against
docs/fractional-gpus-prod-alibaba.json, which `make doc-sharing` writes from the documented whole-trace run
(offline/doc_sharing.py). The run itself is not made here.

Every number of every cell is parsed out of the page and compared with the JSON's figure (mean, then the
interval's ends when printed), rounded as the row's decimals say, through row labels to metric ids written out
here: a number edited on a page, a figure changed in the JSON, or a row quoting the wrong metric each turns red."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from .conftest import project_path

REGENERATE = "run `make doc-sharing` (about 3 CPU minutes) to rerun the documented replication and rewrite them"
MODES = ("simulated", "sharing-time-slice", "sharing-mig", "sharing-kai")
TITLES = ("whole", "time-slice", "mig", "kai")
HOURS = 3600.0
# label -> (metric id, decimals, divisor): the divisor turns the JSON's seconds into the page's hours.
MODE_ROWS = {
    "trace tasks finished": ("workloads.finished", 0, 1.0),
    "never started by the end": ("never_started", 0, 1.0),
    "runnable work never started %": ("start.unstarted_pct", 1, 1.0),
    "time to start p50 (h)": ("start.p50_s", 1, HOURS),
    "time to start p95 (h)": ("start.p95_s", 0, HOURS),
    "restarts by preemption": ("restarts.preemption", 0, 1.0),
    "allocation % of provisioned": ("allocation_pct", 1, 1.0),
    "useful GPU-hours (held)": ("gpu_hours.useful", 0, 1.0),
    "cost USD": ("cost_usd", 0, 1.0),
    "USD per useful GPU-hour (held)": ("usd_per_useful_gpu_hour", 2, 1.0),
    "fragmentation % of free GPU-hours": ("fragmentation_pct", 1, 1.0),
}
TIER_ROWS = {"never started": ("never_started", 0, 1.0), "time to start p95 (h)": ("start.p95_s", 0, HOURS)}
DELTA_ROWS = {"cost USD": ("cost_usd", 0, 1.0), "useful GPU-hours": ("gpu_hours.useful", 0, 1.0),
              "time to start p95 (h)": ("start.p95_s", 0, HOURS)}
NUMBER = re.compile(r"[+-]?[\d,]+(?:\.\d+)?")


@pytest.fixture(scope="module")
def data() -> dict[str, Any]:
    return json.loads(project_path("docs/fractional-gpus-prod-alibaba.json").read_text())


def table(page: str, name: str) -> list[list[str]]:
    begin = page.index(f"<!-- doc-sharing:{name}:")
    body = page[page.index("-->", begin) + 3: page.index(f"<!-- /doc-sharing:{name} -->")]
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in body.strip().splitlines()]
    assert rows, f"the {name} table is empty: {REGENERATE}"
    return rows[2:]  # after the header and its rule


def numbers(cell: str) -> list[float]:
    return [float(text.replace(",", "")) for text in NUMBER.findall(cell)]


def assert_cell(cell: str, figure: dict[str, Any], decimals: int, divisor: float, where: str) -> None:
    shown = numbers(cell)
    expected = [figure["mean"]] + ([figure["low"], figure["high"]] if len(shown) == 3 else [])
    assert len(shown) in (1, 3), f"{where}: {cell!r} is neither a mean nor a mean with its interval"
    if len(shown) == 1 and figure["low"] is not None:
        # The interval is left out only when its ends print as the mean.
        for end in (figure["low"], figure["high"]):
            assert round(end / divisor, decimals) == pytest.approx(shown[0], abs=10 ** -decimals), f"{where}: {REGENERATE}"
    for value, wanted in zip(shown, expected, strict=True):
        assert value == pytest.approx(wanted / divisor, abs=0.5 * 10 ** -decimals + 1e-9), f"{where}: {cell!r}; {REGENERATE}"


@pytest.mark.parametrize("page_path", ["docs/fractional-gpus-measured.md", "README.md"])
def test_every_number_of_the_mode_table_is_the_jsons(page_path, data):
    page = project_path(page_path).read_text()
    header = page[page.index("<!-- doc-sharing:sharing-modes:"):].split("\n")[1]
    assert [cell.strip() for cell in header.strip().strip("|").split("|")][1:] == list(TITLES)
    rows = table(page, "sharing-modes")
    assert [row[0] for row in rows] == list(MODE_ROWS)
    for row in rows:
        metric, decimals, divisor = MODE_ROWS[row[0]]
        for cell, mode in zip(row[1:], MODES, strict=True):
            assert_cell(cell, data["modes"][mode]["run"][metric], decimals, divisor, f"{page_path} {row[0]} {mode}")


def test_every_number_of_the_tier_table_is_the_jsons(data):
    rows = table(project_path("docs/fractional-gpus-measured.md").read_text(), "sharing-tiers")
    assert [(row[0], row[1]) for row in rows] == [(tier, label) for tier in ("production", "standard", "best-effort")
                                                  for label in TIER_ROWS]
    for row in rows:
        metric, decimals, divisor = TIER_ROWS[row[1]]
        for cell, mode in zip(row[2:], MODES, strict=True):
            assert_cell(cell, data["modes"][mode]["tiers"][row[0]][metric], decimals, divisor, f"{row[0]} {row[1]} {mode}")


def test_every_paired_difference_is_the_jsons(data):
    rows = table(project_path("docs/fractional-gpus-measured.md").read_text(), "sharing-deltas")
    assert [row[0] for row in rows] == list(DELTA_ROWS)
    for row in rows:
        metric, decimals, divisor = DELTA_ROWS[row[0]]
        for cell, mode in zip(row[1:], MODES[1:], strict=True):
            assert_cell(cell, data["modes"][mode]["delta_vs_whole"][metric], decimals, divisor, f"{row[0]} {mode}")


def test_the_prose_claims_hold_for_the_figures(data):
    """The sentences the pages build on: the same cost in every mode, kai and time-slice finishing about 60 % and
    50 % more tasks, and the production tier's p95 time to start about halved."""
    run = {mode: data["modes"][mode]["run"] for mode in MODES}
    costs = [run[mode]["cost_usd"]["mean"] for mode in MODES]
    assert max(costs) - min(costs) < 0.001 * min(costs)
    finished = {mode: run[mode]["workloads.finished"]["mean"] for mode in MODES}
    assert finished["sharing-kai"] / finished["simulated"] == pytest.approx(1.6, abs=0.05)
    assert finished["sharing-time-slice"] / finished["simulated"] == pytest.approx(1.5, abs=0.05)
    production = {mode: data["modes"][mode]["tiers"]["production"]["start.p95_s"]["mean"] for mode in MODES}
    for mode in ("sharing-kai", "sharing-time-slice"):
        assert production[mode] / production["simulated"] == pytest.approx(0.5, abs=0.1)
    preemptions = {mode: run[mode]["restarts.preemption"]["mean"] for mode in MODES}
    assert preemptions["sharing-kai"] / preemptions["simulated"] == pytest.approx(13, abs=2)
    assert data["command"] == ("make simulate STACK=prod WORKLOAD=workloads/alibaba-gpu-2023.yaml SHARING=all SEEDS=3 "
                               "WITHOUT=headroom")


@pytest.mark.parametrize("page_path", ["docs/fractional-gpus-measured.md", "README.md"])
def test_each_page_quotes_the_tables_make_doc_sharing_writes(page_path, data):
    """The tables as the page has them are what `make doc-sharing` writes from the JSON (the cells above are
    checked against the JSON by hand; this holds the writer to them)."""
    from offline import doc_sharing

    written = doc_sharing.render_tables(data)
    quoted = doc_sharing.doc_tables(project_path(page_path).read_text())
    assert quoted == {name: written[name] for name in quoted}, REGENERATE
