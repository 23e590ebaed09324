"""docs/simulation.md's prod + Alibaba tables read back against docs/simulation-prod-alibaba.json, which
`make doc-figures` writes from the documented 5-seed run (offline/doc_figures.py). The run itself is not made here.

Every number of every row is parsed out of the page and compared with the JSON's figure at the places the page
prints it, through a table of row labels to metric ids written out here, so a number changed on the page, a
figure changed in the JSON or a row that quotes the wrong metric each turns a test red."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

import pytest

from offline import doc_figures
from sim.variants import ABLATIONS

from .conftest import project_path

REGENERATE = "run `make doc-figures` (5 to 12 minutes) to rerun the documented replication and rewrite both"
STATIC, SIMULATED = "static", "simulated"
MINUTES = "min"

# Each row's label on the page -> the metric ids its cells quote, in order ("min": seconds shown in minutes).
TRACE_SUMMARY_ROWS = {
    "GPU-hours provisioned": ["gpu_hours.provisioned"],
    "GPU-hours allocated": ["gpu_hours.allocated"],
    "of which useful (finished, running at the end, or a service's running time)": ["gpu_hours.useful"],
    "of which lost (job runs restarted from zero, services starting again)": ["gpu_hours.lost"],
    "allocation %": ["allocation_pct"],
    "Kueue wait p50 / p95 (min)": ["wait.p50_s", "wait.p95_s"],
    "workloads finished": ["workloads.finished"],
    "never started by the end": ["never_started"],
    "of which never admissible": ["never_admissible"],
    "preemptions": ["restarts.preemption"],
    "cost USD": ["cost_usd"],
    "USD per allocated GPU-hour": ["usd_per_allocated_gpu_hour"],
    "**USD per useful GPU-hour**": ["usd_per_useful_gpu_hour"],
}
MEASURED_ROWS = {
    "GPU-hours provisioned": ["gpu_hours.provisioned"],
    "allocated": ["gpu_hours.allocated"],
    "useful": ["gpu_hours.useful"],
    "lost: expiry": ["gpu_hours.lost.expiry"],
    "lost: interruption": ["gpu_hours.lost.interruption"],
    "lost: preemption": ["gpu_hours.lost.preemption"],
    "service hours down after evictions": ["service_hours.down"],
    "of which after preemption": ["service_hours.down.preemption"],
    "of which after expiry": ["service_hours.down.expiry"],
    "held by the headroom": ["gpu_hours.headroom"],
    "idle": ["gpu_hours.idle"],
    "cost USD": ["cost_usd"],
    "of which the headroom's": ["cost_usd.headroom"],
    "USD per allocated GPU-hour": ["usd_per_allocated_gpu_hour"],
    "**USD per useful GPU-hour**": ["usd_per_useful_gpu_hour"],
    "P(Kueue wait > 0)": ["wait.p_positive"],
    "Kueue wait mean (min)": ["wait.mean_s"],
    "mean Kueue queue length": ["queue.mean_length"],
    "finished": ["workloads.finished"],
    "never started by the end": ["never_started"],
    "never admissible (`quota`: best-effort work has no nominal quota to run on without borrowing)": [
        "never_admissible.quota"
    ],
}
# The ablation table's columns: (metric id, whether the cell is the difference from the full platform).
ABLATION_COLUMNS = [
    ("usd_per_useful_gpu_hour", False), ("usd_per_useful_gpu_hour", True),
    ("gpu_hours.useful", False), ("gpu_hours.useful", True),
    ("start.p95_s", False), ("start.p95_s", True),
]
ABLATION_ROWS = {"full platform": "simulated", **{variant.replace("-", " "): variant for variant in ABLATIONS}}
NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?")


def page() -> str:
    return project_path("docs", "simulation.md").read_text()


def committed() -> dict[str, Any]:
    return json.loads(project_path("docs", "simulation-prod-alibaba.json").read_text())


def quoted_table(name: str) -> list[list[str]]:
    """The cells of the page's table `name` (between its markers), header rows left out."""
    begin, end = (f"<!-- doc-figures:{name}:", f"<!-- /doc-figures:{name} -->")
    text = page()
    assert begin in text and end in text, f"docs/simulation.md lost its {name} table's markers; {REGENERATE}"
    block = text[text.index(begin): text.index(end)].splitlines()[1:]
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in block if line.startswith("|")]
    return rows[2:]


def numbers(cell: str) -> list[Decimal]:
    return [Decimal(n.replace(",", "").lstrip("+")) for n in NUMBER.findall(cell)]


def shown(value: float, unit: str, places: int) -> Decimal:
    """`value` (seconds when unit is minutes) as the page would print it with `places` decimals."""
    value = value / 60 if unit == MINUTES else value
    return Decimal(value).quantize(Decimal(1).scaleb(-places)) + 0


def places(text: Decimal) -> int:
    return max(0, -text.as_tuple().exponent)  # type: ignore[operator]


def agrees(cell: str, figures: list[dict[str, Any]], unit: str, where: str) -> None:
    """The cell's numbers are each figure's mean, then its interval where the page shows one, at the page's places."""
    found = numbers(cell)
    assert found, f"{where}: no number in {cell!r}"
    for figure in figures:
        assert found, f"{where}: {cell!r} quotes fewer figures than {len(figures)}"
        mean = found.pop(0)
        expected = [figure["mean"]]
        # An interval follows the mean unless the page left it out (all seeds agree at its places).
        if found and f"{mean_text(cell, mean)} (" in cell:
            expected += [figure["low"], figure["high"]]
            low, high = found.pop(0), found.pop(0)
            got = [mean, low, high]
        else:
            got = [mean]
            width = shown(figure["high"], unit, places(mean)) - shown(figure["low"], unit, places(mean))
            assert width == 0, f"{where}: {cell!r} leaves out an interval that is {width} wide; {REGENERATE}"
        for text, value in zip(got, expected, strict=True):
            assert text == shown(value, unit, places(text)), (
                f"{where}: the page says {text}, docs/simulation-prod-alibaba.json {value}; {REGENERATE}")
    assert not found, f"{where}: {cell!r} has numbers no figure accounts for"


def mean_text(cell: str, mean: Decimal) -> str:
    """The mean as written in the cell (its first number that equals it)."""
    return next(n for n in NUMBER.findall(cell) if Decimal(n.replace(",", "").lstrip("+")) == mean)


def unit_of(label: str) -> str:
    return MINUTES if "(min)" in label else ""


@pytest.mark.parametrize(("table", "rows"), [("trace-summary", TRACE_SUMMARY_ROWS), ("measured", MEASURED_ROWS)])
def test_every_number_of_the_static_against_simulated_tables_is_the_jsons(table, rows):
    data = committed()
    quoted = quoted_table(table)
    assert [row[0] for row in quoted] == list(rows), f"{table}: rows differ from what this test reads; {REGENERATE}"
    for label, static_cell, simulated_cell in quoted:
        for variant, cell in ((STATIC, static_cell), (SIMULATED, simulated_cell)):
            figures = [data["variants"][variant][metric] for metric in rows[label]]
            agrees(cell, figures, unit_of(label), f"{table}: {label}, {variant}")


def test_every_number_of_the_ablation_table_is_the_jsons():
    data = committed()
    quoted = quoted_table("ablations")
    assert [row[0] for row in quoted] == list(ABLATION_ROWS), REGENERATE
    for label, *cells in quoted:
        variant = data["ablations"][ABLATION_ROWS[label]]
        assert len(cells) == len(ABLATION_COLUMNS)
        for cell, (metric, difference) in zip(cells, ABLATION_COLUMNS, strict=True):
            unit = MINUTES if metric == "start.p95_s" else ""
            where = f"ablations: {label}, {metric}{' difference' if difference else ''}"
            if difference and label == "full platform":
                assert cell == "", where
                continue
            figure = variant["delta_vs_simulated" if difference else "figures"][metric]
            agrees(cell, [figure], unit, where)


def test_the_json_is_the_documented_run():
    data = committed()
    assert data["command"] == (
        "make simulate STACK=prod WORKLOAD=workloads/alibaba-gpu-2023.yaml BASELINE=static ABLATIONS=1 SEEDS=5")
    assert data["regenerate"] == "make doc-figures"
    assert (data["stack"], data["workload"], data["seeds"], data["commitment_discount"]) == (
        "prod", "workloads/alibaba-gpu-2023.yaml", [0, 1, 2, 3, 4], 0)
    # The page names the same command and seeds beside its tables.
    assert " ".join(data["command"].split()) in " ".join(page().split())
    assert "seeds 0-4" in page()
    figures = [f for v in data["variants"].values() for f in v.values()]
    figures += [f for a in data["ablations"].values() for part in a.values() for f in part.values()]
    for figure in figures:
        assert figure["n"] == 5 and figure["low"] <= figure["mean"] <= figure["high"], figure
    assert list(data["ablations"]) == ["simulated", *ABLATIONS]


def test_the_tables_are_what_make_doc_figures_writes_from_the_json():
    data = committed()
    written = doc_figures.render_tables(data)
    assert doc_figures.doc_tables(page()) == written, REGENERATE
    assert doc_figures.page_with_tables(page(), written) == page()


# --- offline/doc_figures.py on a report made up here ------------------------------------------------------------
def made_up_report() -> tuple[dict[str, Any], list[str], list[str]]:
    """A report.json of the documented run's shape, every figure of a variant a different number: its metric's
    position in a sorted list, plus 1000 per variant."""
    metrics = sorted({m for rows in (TRACE_SUMMARY_ROWS, MEASURED_ROWS) for ms in rows.values() for m in ms}
                     | {metric for metric, _ in ABLATION_COLUMNS})
    variants = ["simulated", "static", *ABLATIONS]

    def figure(value: float) -> dict[str, Any]:
        return {"mean": value, "low": value - 0.25, "high": value + 0.25, "n": 5}

    return {
        "stack": "prod", "workload": "alibaba-gpu-2023", "seeds": [0, 1, 2, 3, 4], "commitment_discount": 0.0,
        "variants": {
            name: {
                "measures": {"run": {m: figure(1000.0 * v + i) for i, m in enumerate(metrics)}},
                "delta_vs_simulated": {m: figure(-(1000.0 * v + i)) for i, m in enumerate(metrics)},
            }
            for v, name in enumerate(variants)
        },
    }, metrics, variants


def test_the_json_takes_each_quoted_figure_from_its_metric_and_variant():
    report, metrics, variants = made_up_report()
    data = doc_figures.figures_data(report)
    for name in ("static", "simulated"):
        v = variants.index(name)
        quoted = {m for rows in (TRACE_SUMMARY_ROWS, MEASURED_ROWS) for ms in rows.values() for m in ms}
        assert {m: f["mean"] for m, f in data["variants"][name].items()} == {m: 1000.0 * v + metrics.index(m) for m in quoted}
    for name in ABLATIONS:
        v = variants.index(name)
        row = data["ablations"][name]
        assert row["figures"]["gpu_hours.useful"]["mean"] == 1000.0 * v + metrics.index("gpu_hours.useful")
        assert row["delta_vs_simulated"]["start.p95_s"]["mean"] == -(1000.0 * v + metrics.index("start.p95_s"))
    assert data["ablations"]["simulated"]["delta_vs_simulated"] == {}


@pytest.mark.parametrize(("edit", "says"), [
    ({"seeds": [0, 1, 2]}, "seeds [0, 1, 2]: not 0-4"),
    ({"stack": "dev"}, "stack 'dev', workload 'alibaba-gpu-2023': not prod, workloads/alibaba-gpu-2023.yaml"),
    ({"commitment_discount": 0.3}, "commitment discount 0.3: not 0"),
])
def test_a_report_of_another_run_is_refused(edit, says):
    report, _, _ = made_up_report()
    assert doc_figures.run_problems(report) == []
    assert doc_figures.run_problems({**report, **edit}) == [says]
    del report["variants"]["without-spot"]
    assert doc_figures.run_problems(report) == ["variants missing: without-spot"]
