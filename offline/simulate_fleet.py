"""`python -m offline simulate-fleet --workers prod,tests/fixtures/fleet/prod-eu.yaml --workload W`: a fleet of worker
stacks behind one MultiKueue manager queue against the same clusters each with its own queues (sim/fleet.py), on the
same seeds; report.json and report.md in build/sim-fleet-<workers>-<workload>/.

A worker is a stack name (`Pulumi.<name>.yaml`) or a stack file's path; its MultiKueueCluster name is the stack's
name (the file's stem) and its region the stack's `aws:region`. `--stack <manager>` instead reads the workers from a
manager stack's `gpu-platform:fleet` (config/fleet.py), with its `workerLostTimeout`.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from config import ConfigError
from config.errors import counted
from config.fleet import KEY
from models.kueue.multikueue_dispatch import ALL_AT_ONCE, DEFAULT_WORKER_LOST_TIMEOUT_SECONDS, INCREMENTAL
from sim.fleet import FleetError, FleetScenario, Worker, check_fleet
from sim.fleet_report import fleet_json, fleet_report, render_fleet, run_fleet
from sim.workload import WorkloadError, read_workload

from .project import PROJECT_DIR
from .stack import StackNotFound, load_config, load_stack, stack_config_from_text

EXIT_INVALID = 2
DISPATCHERS = {"all-at-once": ALL_AT_ONCE, "incremental": INCREMENTAL}


def load_worker(entry: str, project_dir: Path = PROJECT_DIR) -> Worker:
    """A stack name or a stack file's path -> the worker; `ConfigError`/`StackNotFound` as `load_stack` raises."""
    path = Path(entry)
    if entry.endswith((".yaml", ".yml")):
        full = path if path.is_absolute() else project_dir / path
        if not full.is_file():
            raise StackNotFound(f"--workers: no stack file {entry}")
        stack = stack_config_from_text(path.stem, full.read_bytes(), entry)
    else:
        stack = load_stack(entry, project_dir)
    config = load_config(stack)
    return Worker(stack.stack, config.region, config)


def manager_fleet(stack: str, project_dir: Path = PROJECT_DIR) -> tuple[list[str], float]:
    """A manager stack's workers (its `gpu-platform:fleet.workers`, the MultiKueueConfig's cluster order) and its
    `workerLostTimeout` in seconds; `FleetError` for a stack that is not a manager. The dispatcher is Kueue's
    default, AllAtOnce, as the manager's Configuration leaves it (config/fleet.py `manager_multikueue`)."""
    config = load_config(load_stack(stack, project_dir))
    fleet = config.fleet
    if fleet.role != "manager":
        raise FleetError(f"--stack {stack}: {KEY}.role is {fleet.role}, not manager: give a manager stack, whose "
                         "`workers` the fleet runs, or name the workers with --workers")
    return list(fleet.workers), float(fleet.worker_lost_timeout_seconds)


def main(workers: list[str], workload_path: Path, out_dir: Path | None, *, seeds: list[int], dispatcher: str,
         step_size: int, latency: float, split: str, processes: int | None = None, manager: str | None = None,
         project_dir: Path = PROJECT_DIR) -> int:
    worker_lost_timeout = DEFAULT_WORKER_LOST_TIMEOUT_SECONDS
    try:
        if manager is not None:
            workers, worker_lost_timeout = manager_fleet(manager, project_dir)
        fleet = tuple(load_worker(entry, project_dir) for entry in workers)
    except (FleetError, StackNotFound) as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_INVALID
    except ConfigError as err:
        print(f"--workers: invalid stack config ({counted(len(err.problems), 'problem')}):", file=sys.stderr)
        for problem in err.problems:
            print(f"  {problem}", file=sys.stderr)
        return EXIT_INVALID
    if latency < 0 or step_size < 1:
        print("error: --dispatch-latency is 0 or more seconds and --step-size at least 1", file=sys.stderr)
        return EXIT_INVALID
    started = time.perf_counter()
    try:
        workload = read_workload(workload_path).workload
        scenario = FleetScenario(fleet, workload, str(workload_path), project_dir, split=split,
                                 dispatcher=DISPATCHERS[dispatcher], step_size=step_size, latency=latency,
                                 worker_lost_timeout=worker_lost_timeout)
        check_fleet(scenario)
        runs = run_fleet(scenario, seeds, processes)
    except FleetError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_INVALID
    except WorkloadError as err:
        print(f"{workload_path}: invalid workload ({counted(len(err.problems), 'problem')}):", file=sys.stderr)
        for problem in err.problems:
            print(f"  {problem}", file=sys.stderr)
        return EXIT_INVALID
    wall = time.perf_counter() - started
    data = fleet_report(scenario, seeds, runs)
    out_dir = out_dir or Path("build") / f"sim-fleet-{'-'.join(w.name for w in fleet)}-{workload_path.stem}"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "report.json").write_text(fleet_json(data))
    (out_dir / "report.md").write_text(render_fleet(data))
    print(f"simulated fleet {', '.join(w.name for w in fleet)} with {workload_path.name} ({len(seeds)} seeds, fleet and "
          f"baseline) in {wall:.1f} s ({data['fleet']['events']:,} events) -> {out_dir}/report.json, report.md")
    return 0

