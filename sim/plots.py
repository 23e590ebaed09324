"""The report's plots (matplotlib, Agg backend: no display): one PNG per series, no timestamps in the files."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from .events import Series
from .run import Result

# PNG metadata matplotlib would write: its version under Software; left out so files compare equal across runs.
_METADATA: dict[str, str | None] = {"Software": None}

PLOTS = {
    "allocation.png": ("allocation", "Allocated GPUs per pool, % of provisioned", "%"),
    "queue-depth.png": ("queue_depth", "Pending workloads per tenant", "workloads"),
    "nodes.png": ("nodes", "Nodes per pool", "nodes"),
    "replicas.png": ("replicas", "Replicas against demand (in replicas) per deployment", "replicas"),
}


def _plot(series: Series, title: str, unit: str, path: Path) -> None:
    figure, axes = plt.subplots(figsize=(9, 4), dpi=100)
    for name in sorted(series.values):
        values = series.values[name]
        style = "--" if name.endswith(" demand") else "-"
        axes.plot(series.times[: len(values)], values, style, label=name, linewidth=1.2)
    axes.set_title(title)
    axes.set_xlabel("hours")
    axes.set_ylabel(unit)
    if series.values:
        axes.legend(fontsize="small", loc="upper left")
    axes.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, metadata=_METADATA)
    plt.close(figure)


def write_plots(result: Result, out_dir: Path) -> list[Path]:
    written = []
    for filename, (attribute, title, unit) in PLOTS.items():
        series = getattr(result.sim.record, attribute)
        if attribute == "replicas" and not result.deployments:
            continue
        path = out_dir / filename
        _plot(series, title, unit, path)
        written.append(path)
    return written
