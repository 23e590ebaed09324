"""`python -m offline simulate`: run a workload through a stack (and its static baseline), write report.md and plots."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from config import PlatformConfig

from .admission import kueue_for
from .report import render_report
from .run import Result, simulate
from .workload import WorkloadError, load_workload

EXIT_INVALID = 2


def run(config: PlatformConfig, stack: str, workload_path: Path, out_dir: Path, *, seed: int, baseline: str | None,
        project_dir: Path, without: frozenset[str] = frozenset()) -> int:
    try:
        workload = load_workload(workload_path)
        started = time.perf_counter()
        result = simulate(config, workload, kueue_for, source=str(workload_path), seed=seed, project_dir=project_dir,
                          without=without)
        result.wall_seconds = time.perf_counter() - started
        static: Result | None = None
        if baseline == "static":
            static = simulate(config, workload, kueue_for, source=str(workload_path), seed=seed, static_baseline=True,
                              project_dir=project_dir, without=without)
    except WorkloadError as err:
        print(f"{workload_path}: invalid workload ({len(err.problems)} problems):", file=sys.stderr)
        for problem in err.problems:
            print(f"  {problem}", file=sys.stderr)
        return EXIT_INVALID
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "report.md").write_text(render_report(result, stack, workload_path.stem, static))
    # matplotlib takes a good part of a second to load; only a run that gets this far draws.
    from .plots import write_plots

    plots = write_plots(result, out_dir)
    hours = result.sim.clock.end / 3600
    print(
        f"simulated stack {stack} with {workload_path.name}: {hours:,.1f} h in {result.wall_seconds:.1f} s "
        f"({result.sim.clock.events:,} events) -> {out_dir}/report.md and {len(plots)} plots"
    )
    return 0
