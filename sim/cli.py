"""`python -m offline simulate`: run a workload through a stack (and its static baseline) for one or more seeds,
write report.json (every figure), report.md (read from it) and plots (read from it)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from config import PlatformConfig

from .experiment import STATIC, Scenario, replicate, run_many
from .report import render_report, report_data, report_json
from .workload import WorkloadError, read_workload
from .workload_check import check, check_runnable

EXIT_INVALID = 2


def seed_list(text: str, first: int = 0) -> list[int]:
    """`--seeds 10`: ten seeds from `first`; `--seeds 3-12`: seeds 3 to 12."""
    try:
        if "-" in text:
            low, high = (int(part) for part in text.split("-", 1))
            if low < 0 or high < low:
                raise ValueError
            return list(range(low, high + 1))
        count = int(text)
        if count < 1:
            raise ValueError
        return list(range(first, first + count))
    except ValueError:
        raise ValueError(f"--seeds {text!r}: give a count (10) or a range of seeds (3-12)") from None


def default_out_dir(stack: str, workload_path: Path, without: frozenset[str]) -> Path:
    """build/sim-<stack>-<workload>, and a directory of its own for each what-if, so none overwrites the normal run."""
    suffix = "".join(f"-without-{feature}" for feature in sorted(without))
    return Path("build") / f"sim-{stack}-{workload_path.stem}{suffix}"


def run(config: PlatformConfig, stack: str, workload_path: Path, out_dir: Path | None, *, seed: int, baseline: str | None,
        project_dir: Path, without: frozenset[str] = frozenset(), seeds: list[int] | None = None,
        workers: int | None = None) -> int:
    seeds = seeds or [seed]
    out_dir = out_dir or default_out_dir(stack, workload_path, without)
    try:
        read = read_workload(workload_path)
        workload = read.workload
        check(config, workload, locator=read.locator, project_dir=project_dir)
        check_runnable(config, workload, locator=read.locator, without=without)
        scenario = Scenario(config, workload, str(workload_path), project_dir, without=without)
        started = time.perf_counter()
        runs = {"simulated": run_many(scenario, seeds, workers)}
        if baseline == STATIC:
            runs[STATIC] = run_many(scenario.variant(static_baseline=True), seeds, workers)
        wall = time.perf_counter() - started
    except WorkloadError as err:
        count = len(err.problems)
        print(f"{workload_path}: invalid workload ({count} problem{'s' if count > 1 else ''}):", file=sys.stderr)
        for problem in err.problems:
            print(f"  {problem}", file=sys.stderr)
        return EXIT_INVALID
    data = report_data(stack, workload_path.stem, workload, seeds,
                       {name: (replicate(outcomes), outcomes) for name, outcomes in runs.items()})
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "report.json").write_text(report_json(data))
    (out_dir / "report.md").write_text(render_report(data))
    # matplotlib takes a good part of a second to load; only a run that gets this far draws.
    from .plots import write_plots

    plots = write_plots(data, out_dir)
    events = sum(run["events"] for outcomes in runs.values() for run in outcomes)
    print(
        f"simulated stack {stack} with {workload_path.name} ({len(seeds)} seed{'s' if len(seeds) > 1 else ''}) in "
        f"{wall:.1f} s ({events:,} events) -> {out_dir}/report.json, report.md and {len(plots)} plots"
    )
    return 0
