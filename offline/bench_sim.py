"""`make bench-sim`: the simulator's cost on prod with the Alibaba trace at 1x, 4x and 16x its load.

The stack grows with the load. At k x (each trace task replayed k times, the trace's `copies`) every GPU
NodePool's limit (`gpus`) and every tenant's GPU quota (`nominal`, `borrowingLimit`, `lendingLimit`) are
k times the stack's, written into the stack document and derived like any stack (`scaled_stack`), so
the queues carry about the load they carry at 1x instead of a k-fold jam. The headroom stays as it is:
it serves inference, which the trace does not have.

Figures, not a test: wall and CPU seconds of the run (CPU: user + sys, `time.process_time` around
`simulate`, which on a shared machine measures this run's work and not the others'), CPU seconds per
unit of load against 1x (1.0: linear), events, events per CPU second, simulated hours per CPU second,
and the run's peak resident memory: each load runs in a process of its own, whose peak (`os.wait4`)
is that run's alone, interpreter and stack included.
`python -m offline.bench_sim [--copies 1 4 16] [--stack prod] [--workload PATH]`.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from .project import PROJECT_DIR
from .stack import load_config, stack_config_from_mapping

WORKLOAD = PROJECT_DIR / "workloads" / "alibaba-gpu-2023.yaml"
QUOTA_KEYS = ("nominal", "borrowingLimit", "lendingLimit")
# What the whole trace at 1x on prod must stay within: 60 s and 1 GiB (issue #28), and 10 s on 2 cores so
# that a capacity plan's hundreds of runs fit in minutes (issue #33).
LIMIT_SECONDS = 60
PLAN_LIMIT_SECONDS = 10
LIMIT_MIB = 1024


def scaled_stack(document: dict[str, Any], factor: int) -> dict[str, Any]:
    """A stack document's `config:` with every GPU NodePool limit and tenant GPU quota `factor` times as large."""
    scaled = copy.deepcopy(document)
    for pool in scaled.get("gpu-platform:nodePools", []):
        pool["gpus"] *= factor
    for tenant in scaled.get("gpu-platform:tenants", []):
        for quota in (tenant.get("gpu") or {}).values():
            for key in QUOTA_KEYS:
                if key in quota:
                    quota[key] *= factor
    return scaled


def run_one(stack: str, workload_path: Path, factor: int) -> dict[str, float]:
    """One run at `factor` x on the stack scaled by `factor`: its cost, as plain numbers."""
    from sim.admission import kueue_for
    from sim.run import simulate
    from sim.workload import load_workload

    document = yaml.safe_load((PROJECT_DIR / f"Pulumi.{stack}.yaml").read_text())["config"]
    config = load_config(stack_config_from_mapping(stack, scaled_stack(document, factor)))
    base = load_workload(workload_path)
    workload = base.model_copy(update={"traces": [t.model_copy(update={"copies": t.copies * factor}) for t in base.traces]})
    wall, cpu = time.perf_counter(), time.process_time()
    result = simulate(config, workload, kueue_for, source=str(workload_path), project_dir=PROJECT_DIR)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"wall": wall, "cpu": cpu, "events": result.sim.clock.events, "hours": result.sim.clock.end / 3600}


def measure(stack: str, workload_path: Path, factor: int) -> dict[str, float]:
    """`run_one` in a process of its own, with that process's peak resident memory."""
    command = [sys.executable, "-m", "offline.bench_sim", "--one", str(factor), "--stack", stack,
               "--workload", str(workload_path)]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, cwd=PROJECT_DIR)
    assert child.stdout is not None
    output = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"the run at {factor}x failed (exit {child.returncode})")
    return {**json.loads(output), "rss_mib": usage.ru_maxrss / 1024}


def main(copies: list[int], stack: str, workload_path: Path) -> None:
    print(f"stack {stack} scaled with the load (GPU NodePool limits and tenant GPU quotas x the load), "
          f"{workload_path.name} replayed at each load; one process per run; CPU: user + sys of the run")
    print(f"{'load':>5} {'wall s':>8} {'CPU s':>8} {'CPU/load vs 1x':>15} {'events':>10} {'events/CPU s':>13} "
          f"{'sim h / CPU s':>14} {'peak RSS MiB':>13}")
    base: float | None = None
    for factor in copies:
        run = measure(stack, workload_path, factor)
        if base is None:
            base = run["cpu"] / factor
        print(f"{factor:>4}x {run['wall']:>8.1f} {run['cpu']:>8.1f} {run['cpu'] / factor / base:>15.2f} {run['events']:>10,} "
              f"{run['events'] / run['cpu']:>13,.0f} {run['hours'] / run['cpu']:>14,.0f} {run['rss_mib']:>13,.0f}")
        if factor == 1:
            # CPU seconds: on a machine others share, wall time measures their work as well as this run's.
            within = run["cpu"] < LIMIT_SECONDS and run["rss_mib"] < LIMIT_MIB
            plan = run["cpu"] < PLAN_LIMIT_SECONDS
            print(f"      the whole trace at 1x: {run['cpu']:.1f} CPU s and {run['rss_mib']:.0f} MiB, "
                  f"{'within' if within else 'OVER'} {LIMIT_SECONDS} s and {LIMIT_MIB} MiB; "
                  f"{'within' if plan else 'OVER'} the {PLAN_LIMIT_SECONDS} s a capacity plan's runs need")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m offline.bench_sim", description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--stack", default="prod")
    parser.add_argument("--workload", type=Path, default=WORKLOAD)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # the child process of one run
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(run_one(args.stack, args.workload, args.one)))
    else:
        main(args.copies, args.stack, args.workload)
