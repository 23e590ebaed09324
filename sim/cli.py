"""`python -m offline simulate`: run a workload through a stack (with its static baseline and ablations) for one or more seeds,
write report.json (every figure), report.md (read from it) and plots (read from it)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from config import PlatformConfig

from . import sharing as gpu_sharing
from .experiment import ABLATIONS, SIMULATED, STATIC, VARIANTS, Scenario, paired_deltas, replicate, run_many
from .report import COMPARED, render_report, report_data, report_json
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


def default_out_dir(stack: str, workload_path: Path, without: frozenset[str], sharing: str | None = None) -> Path:
    """build/sim-<stack>-<workload>, and a directory of its own for each what-if, so none overwrites the normal run."""
    suffix = "".join(f"-without-{feature}" for feature in sorted(without))
    suffix += f"-sharing-{sharing}" if sharing else ""
    return Path("build") / f"sim-{stack}-{workload_path.stem}{suffix}"


def commitment_discount(text: str) -> float:
    """`--commitment-discount 0.3`: a share of the on-demand price, from 0 up to (not including) 1."""
    try:
        value = float(text)
        if not 0.0 <= value < 1.0:
            raise ValueError
        return value
    except ValueError:
        raise ValueError(f"--commitment-discount {text!r}: give a share of the on-demand price from 0 to below 1, "
                         "e.g. 0.3 for 30 % off") from None


def run(config: PlatformConfig, stack: str, workload_path: Path, out_dir: Path | None, *, seed: int, baseline: str | None,
        project_dir: Path, without: frozenset[str] = frozenset(), seeds: list[int] | None = None,
        workers: int | None = None, ablations: bool = False, discount: float = 0.0, sharing: str | None = None) -> int:
    """The stack as configured, and on the same seeds the static baseline (`baseline="static"`) and each mechanism
    switched off in turn (`ablations`), into one report. `sharing`: how fractional trace tasks share GPUs (one of
    sim/sharing.py MODES), or `all`: every runnable mode on the same seeds, whole GPUs as `simulated`."""
    seeds = seeds or [seed]
    out_dir = out_dir or default_out_dir(stack, workload_path, without, sharing)
    try:
        modes = gpu_sharing.RUNNABLE if sharing == gpu_sharing.ALL else (gpu_sharing.runnable(sharing),) if sharing else ()
    except ValueError as err:
        print(err, file=sys.stderr)
        return EXIT_INVALID
    try:
        read = read_workload(workload_path)
        workload = read.workload
        check(config, workload, locator=read.locator, project_dir=project_dir)
        check_runnable(config, workload, locator=read.locator, without=without)
        first = modes[0] if modes else None
        scenario = Scenario(config, workload, str(workload_path), project_dir, without=without | gpu_sharing.switched_off(first),
                            commitment_discount=discount, sharing=first)
        names = [SIMULATED] + ([STATIC] if baseline == STATIC else [])
        names += [name for name in ABLATIONS if ablations and not VARIANTS[name].without <= without]
        started = time.perf_counter()
        scenarios = {name: scenario if name == SIMULATED else scenario.variant(name) for name in names}
        for mode in modes[1:]:
            scenarios[gpu_sharing.sharing_name(mode)] = scenario.replace(
                name=gpu_sharing.sharing_name(mode), sharing=mode, without=scenario.without | gpu_sharing.switched_off(mode))
        runs = {name: run_many(variant, seeds, workers) for name, variant in scenarios.items()}
        wall = time.perf_counter() - started
    except WorkloadError as err:
        count = len(err.problems)
        print(f"{workload_path}: invalid workload ({count} problem{'s' if count > 1 else ''}):", file=sys.stderr)
        for problem in err.problems:
            print(f"  {problem}", file=sys.stderr)
        return EXIT_INVALID
    data = report_data(stack, workload_path.stem, workload, seeds,
                       {name: (replicate(outcomes), outcomes) for name, outcomes in runs.items()},
                       assumptions={name: variant.assumptions + ([gpu_sharing.ASSUMPTIONS[variant.sharing]] if variant.sharing
                                                                 else []) for name, variant in scenarios.items()},
                       deltas={name: paired_deltas(outcomes, runs[SIMULATED], COMPARED)
                               for name, outcomes in runs.items() if name != SIMULATED},
                       commitment_discount=discount)
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
