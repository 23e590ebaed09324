"""The figures docs/simulation.md quotes in its prose around the prod + Alibaba tables, read back against
docs/simulation-prod-alibaba.json (what `make doc-figures` writes from the documented 5-seed run).

tests/test_doc_figures.py reads the generated tables; the sentences that interpret them are written by hand,
so each quoted figure is listed here with the metric it quotes and the way the page rounds it, and the
sentence is rebuilt from the JSON with this file's own formatting. A figure edited on the page, a JSON
regenerated without the prose following, or a sentence that quotes the wrong metric turns a test red."""

from __future__ import annotations

import json
import re
from decimal import ROUND_HALF_EVEN, Decimal

import pytest

from .conftest import project_path

PAGE = "docs/simulation.md"
FIGURES = "docs/simulation-prod-alibaba.json"


def _figures() -> dict:
    return json.loads(project_path(FIGURES).read_text())


def _metric(where: str, metric: str) -> float:
    """`where` is a variant of the main comparison (static, simulated), `ablation:<name>` for an ablation's
    own figure, or `delta:<name>` for its difference from the full platform, seed by seed."""
    doc = _figures()
    if where.startswith("ablation:"):
        return float(doc["ablations"][where.split(":", 1)[1]]["figures"][metric]["mean"])
    if where.startswith("delta:"):
        return float(doc["ablations"][where.split(":", 1)[1]]["delta_vs_simulated"][metric]["mean"])
    return float(doc["variants"][where][metric]["mean"])


def _shown(value: float, decimals: int, unit: str = "", signed: bool = False) -> str:
    """The value as the page prints it: thousands separated by commas, rounded half to even."""
    if unit == "min":
        value /= 60
    quantum = Decimal(1).scaleb(-decimals)
    rounded = Decimal(repr(abs(value))).quantize(quantum, rounding=ROUND_HALF_EVEN)
    text = f"{rounded:,.{decimals}f}"
    if value < 0 and rounded != 0:
        return "-" + text
    return ("+" if signed and rounded != 0 else "") + text


# Each sentence of the page with its figures as {} and, in order, what each figure quotes:
# (variant, metric id, decimals[, unit or "signed"]).
PROSE = [
    (
        "Per useful GPU-hour that static fleet is **cheaper** than prod ({} against {} USD)",
        [("static", "usd_per_useful_gpu_hour", 2), ("simulated", "usd_per_useful_gpu_hour", 2)],
    ),
    (
        "{} workloads finish against {}, because the best-effort tenants ({} tasks, no nominal quota)",
        [("simulated", "workloads.finished", 0), ("static", "workloads.finished", 0), ("static", "never_admissible", 0)],
    ),
    (
        "the mean Kueue wait is {} minutes against {}.",
        [("simulated", "wait.mean_s", 0, "min"), ("static", "wait.mean_s", 0, "min")],
    ),
    (
        "({} GPU-hours, ${} over the 44 days,",
        [("simulated", "gpu_hours.headroom", 0), ("simulated", "cost_usd.headroom", 0)],
    ),
    (
        "without the headroom prod costs {} USD per useful GPU-hour, below static",
        [("ablation:without-headroom", "usd_per_useful_gpu_hour", 2)],
    ),
    ("restarted from zero by spot interruptions ({} GPU-hours", [("simulated", "gpu_hours.lost.interruption", 0)]),
    ("Node expiry costs about {} GPU-hour,", [("simulated", "gpu_hours.lost.expiry", 0)]),
    ("wait weeks to run again: {} service-hours down.", [("simulated", "service_hours.down.preemption", 0)]),
    (
        "Allocation ({} % against {} %) and cost per useful GPU-hour ({} against {} USD) both favour the fair "
        "static fleet on cost; finished work ({} against {}) and waiting favour prod.",
        [
            ("simulated", "allocation_pct", 0),
            ("static", "allocation_pct", 0),
            ("simulated", "usd_per_useful_gpu_hour", 2),
            ("static", "usd_per_useful_gpu_hour", 2),
            ("simulated", "workloads.finished", 0),
            ("static", "workloads.finished", 0),
        ],
    ),
    (
        "borrowing pays (switched off, a useful GPU-hour costs {} USD more and {} fewer GPU-hours of work are done)",
        [("delta:without-borrowing", "usd_per_useful_gpu_hour", 2), ("delta:without-borrowing", "gpu_hours.useful", 0)],
    ),
    (
        "on-demand A100s do {} more useful GPU-hours, since no run is interrupted, for about the same cost per "
        "useful GPU-hour ({}, an interval that includes 0)",
        [("delta:without-spot", "gpu_hours.useful", 0), ("delta:without-spot", "usd_per_useful_gpu_hour", 2, "signed")],
    ),
    (
        "The headroom's 10 warm L40S GPUs cost {} USD per useful GPU-hour",
        [("delta:without-headroom", "usd_per_useful_gpu_hour", 2)],
    ),
    (
        "{} USD more per useful GPU-hour for the same work.",
        [("delta:without-autoscaling", "usd_per_useful_gpu_hour", 2)],
    ),
]

# Signs the prose words itself ("more", "fewer", "cost"): the sentence states the magnitude.
_MAGNITUDE = {("delta:without-borrowing", "gpu_hours.useful"), ("delta:without-headroom", "usd_per_useful_gpu_hour")}


def _page() -> str:
    return re.sub(r"\s+", " ", project_path(PAGE).read_text())


def _sentence(template: str, quotes: list[tuple]) -> str:
    values = []
    for quote in quotes:
        where, metric, decimals, *rest = quote
        value = _metric(where, metric)
        if (where, metric) in _MAGNITUDE:
            value = abs(value)
        values.append(_shown(value, decimals, unit=rest[0] if rest and rest[0] == "min" else "", signed=rest == ["signed"]))
    return template.format(*values)


@pytest.mark.parametrize(("template", "quotes"), PROSE, ids=[template[:48] for template, _ in PROSE])
def test_each_figure_the_prose_quotes_is_the_documented_runs(template, quotes):
    expected = _sentence(template, quotes)
    assert expected in _page(), (
        f"{PAGE} should read {expected!r} (from {FIGURES}); after `make doc-figures` rewrites the tables, "
        "update the sentence to the new figures"
    )


def test_the_formatting_rounds_as_the_page_prints():
    assert _shown(4116.6, 0) == "4,117"
    assert _shown(247020.0, 0, "min") == "4,117"
    assert _shown(0.0925, 2, signed=True) == "+0.09"
    assert _shown(-4027.8373, 0) == "-4,028"
    assert _shown(0.004, 2, signed=True) == "0.00"
