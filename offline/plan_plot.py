"""The plan's frontier plot: cost against each service level, one panel per level (matplotlib, Agg backend)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from sim import plan_slo
from sim.plan_slo import Slo

# PNG metadata matplotlib would write: its version under Software; left out so files compare equal across runs.
_METADATA: dict[str, str | None] = {"Software": None}


def _scaled(value: float | None, unit: str) -> float | None:
    """Seconds in minutes on the axis; shares as they are."""
    if value is None:
        return None
    return value / 60 if unit == plan_slo.SECONDS else value


def _bars(values: Sequence[Mapping[str, Any]], unit: str) -> tuple[list[float], list[list[float]]]:
    """Means (in the axis' unit) and their distances to the interval's ends; none where an interval is unknown."""
    means: list[float] = []
    below: list[float] = []
    above: list[float] = []
    for value in values:
        mean = _scaled(value["mean"], unit) or 0.0
        low, high = _scaled(value.get("low"), unit), _scaled(value.get("high"), unit)
        means.append(mean)
        below.append(0.0 if low is None else mean - low)
        above.append(0.0 if high is None else high - mean)
    return means, [below, above]


def write_frontier(data: Mapping[str, Any], slos: Sequence[Slo], path: Path) -> Path:
    """Each trial the rules accepted and simulated to the end (a stopped one's figures are only lower bounds): its
    mean cost (x, with its interval) against each level's mean (y, with its interval); trials meeting every level
    filled, the rest hollow; the level's bound dashed; the chosen stack's trial ringed."""
    trials = [t for t in data["trials"] if t["problem"] is None and t.get("stopped") is None]
    chosen = data["verified"][-1]["trial"] if data["chosen"] is not None and data["verified"] else None
    figure, panels = plt.subplots(1, len(slos), figsize=(4.2 * len(slos), 3.8), dpi=100, squeeze=False)
    for index, (slo, axes) in enumerate(zip(slos, panels[0], strict=True)):
        unit = slo.kind.unit
        for meets in (True, False):
            points = [t for t in trials if t["meets"] is meets and t["levels"][index]["mean"] is not None]
            xs, xerr = _bars([t["cost"] for t in points], "usd")
            ys, yerr = _bars([t["levels"][index] for t in points], unit)
            axes.errorbar(xs, ys, xerr=xerr, yerr=yerr, fmt="o", markersize=5, elinewidth=0.6, capsize=1.5,
                          color="tab:green" if meets else "tab:gray", markerfacecolor=None if meets else "none",
                          label="meets every level" if meets else "misses a level")
        axes.axhline(_scaled(slo.bound, unit), linestyle="--", color="tab:red", linewidth=1, label="bound")
        for t in trials:
            if t["trial"] == chosen and t["levels"][index]["mean"] is not None:
                axes.plot([t["cost"]["mean"]], [_scaled(t["levels"][index]["mean"], unit)], "o", markersize=12,
                          markerfacecolor="none", markeredgecolor="tab:blue", label="chosen")
        axes.set_title(slo.text, fontsize="small")
        axes.set_xlabel("cost over the workload, USD")
        axes.set_ylabel("minutes" if unit == plan_slo.SECONDS else "%")
        axes.grid(alpha=0.3)
        if index == 0:
            axes.legend(fontsize="x-small", loc="best")
    figure.tight_layout()
    figure.savefig(path, metadata=_METADATA)
    plt.close(figure)
    return path
