"""The report's plots (matplotlib, Agg backend: no display): one PNG per series of report.json's first seed,
no timestamps in the files."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

# PNG metadata matplotlib would write: its version under Software; left out so files compare equal across runs.
_METADATA: dict[str, str | None] = {"Software": None}

PLOTS = {
    "allocation.png": ("allocation", "Allocated GPUs per pool, % of provisioned", "%"),
    "queue-depth.png": ("queue_depth", "Pending workloads per tenant", "workloads"),
    "nodes.png": ("nodes", "Nodes per pool", "nodes"),
    "replicas.png": ("replicas", "Replicas against demand (in replicas) per deployment", "replicas"),
}


def _plot(series: Mapping[str, Any], title: str, unit: str, path: Path) -> None:
    figure, axes = plt.subplots(figsize=(9, 4), dpi=100)
    for name in sorted(series["values"]):
        values = series["values"][name]
        style = "--" if name.endswith(" demand") else "-"
        axes.plot(series["times"][: len(values)], values, style, label=name, linewidth=1.2)
    axes.set_title(title)
    axes.set_xlabel("hours")
    axes.set_ylabel(unit)
    if series["values"]:
        axes.legend(fontsize="small", loc="upper left")
    axes.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, metadata=_METADATA)
    plt.close(figure)


def write_plots(data: Mapping[str, Any], out_dir: Path) -> list[Path]:
    """The simulated variant's plots from report.json's data."""
    simulated = data["variants"]["simulated"]
    written = []
    for filename, (attribute, title, unit) in PLOTS.items():
        series = simulated["series"][attribute]
        if attribute == "replicas" and not simulated["measures"]["deployments"]:
            continue
        path = out_dir / filename
        _plot(series, title, unit, path)
        written.append(path)
    return written
