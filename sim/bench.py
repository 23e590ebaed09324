"""`make bench-sim`: the simulator's cost on prod with the Alibaba trace at 1x, 4x and 16x its load.

Figures, not a test: wall seconds, events per second, simulated hours per wall second and peak memory
per run, so the growth with load is seen. `python -m sim.bench [--copies 1 4 16]`.
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

from offline.engine import PROJECT_DIR
from offline.stack import load_config, load_stack

from .admission import kueue_for
from .run import simulate
from .workload import load_workload

WORKLOAD = PROJECT_DIR / "workloads" / "alibaba-gpu-2023.yaml"


def main(copies: list[int], stack: str, workload_path: Path) -> None:
    config = load_config(load_stack(stack))
    base = load_workload(workload_path)
    print(f"stack {stack}, {workload_path.name}: the trace replayed at each load")
    print(f"{'load':>5} {'wall s':>8} {'events':>10} {'events/s':>10} {'sim h / wall s':>15} {'peak RSS MiB':>13}")
    for count in copies:
        workload = base.model_copy(update={"traces": [t.model_copy(update={"copies": count}) for t in base.traces]})
        started = time.perf_counter()
        result = simulate(config, workload, kueue_for, source=str(workload_path), project_dir=PROJECT_DIR)
        wall = time.perf_counter() - started
        events = result.sim.clock.events
        hours = result.sim.clock.end / 3600
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{count:>4}x {wall:>8.1f} {events:>10,} {events / wall:>10,.0f} {hours / wall:>15,.0f} {peak:>13,.0f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m sim.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--stack", default="prod")
    parser.add_argument("--workload", type=Path, default=WORKLOAD)
    args = parser.parse_args()
    main(args.copies, args.stack, args.workload)
