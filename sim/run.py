"""One simulation from a stack's `PlatformConfig` and a workload file: check, build, run, and hand back the result."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from config import PlatformConfig

from . import claims_placement, variants
from . import sharing as gpu_sharing
from .arrivals import schedule_jobs, schedule_trace
from .baseline import largest_pods
from .early_stop import Watch, Watcher
from .engine import Options, Simulation
from .queueing import Kueue
from .sampling import start_sampling
from .serving import Deployment, deployments, start
from .trace import ALIBABA_GPU_2023, TraceStats
from .workload import Workload, seconds
from .workload_check import check

# The Kueue seam for a stack; the flag: borrowing switched off (every borrowingLimit and lendingLimit 0).
KueueFactory = Callable[[PlatformConfig, bool], Kueue]


@dataclass
class Result:
    """The finished simulation, live: for tests and sim/experiment.py, which reduces it to plain data."""

    sim: Simulation
    deployments: list[Deployment]
    trace_stats: list[TraceStats]
    stopped: dict[str, Any] | None = None  # when a watched level stopped the run early (sim/early_stop.py)


def simulate(
    config: PlatformConfig,
    workload: Workload,
    kueue: KueueFactory,
    *,
    source: str = "workload",
    seed: int = 0,
    static_baseline: bool = False,
    project_dir: Path = Path("."),
    without: frozenset[str] = frozenset(),
    commitment_discount: float = 0.0,
    sharing: str | None = None,
    watch: Sequence[Watch] = (),
) -> Result:
    """One run. `static_baseline` buys each tenant's usable nominal quota as fixed nodes and switches off what the
    static baseline leaves out (sim/variants.py STATIC_WITHOUT); `without` switches mechanisms off one by one.
    `sharing`: how the trace's fractional tasks share GPUs (sim/sharing.py MODES); None: whole GPUs, unsampled.
    `watch`: levels that stop the run once certainly missed (sim/early_stop.py); the ledger then ends there."""
    pools = gpu_sharing.trace_pools(config, workload) if sharing is not None else ()
    if sharing is not None:
        config = gpu_sharing.shared_config(config, gpu_sharing.runnable(sharing), pools)
    check(config, workload, source, project_dir=project_dir)
    if static_baseline:
        without = without | variants.STATIC_WITHOUT
    options = Options(seed, static_baseline, without, commitment_discount)
    sim = Simulation(config, workload, kueue(config, variants.BORROWING in without), options)
    if sharing is not None:
        sim.gpu_sharing = gpu_sharing.start(sim, sharing, pools, seconds(workload.sample_interval))
    if static_baseline or variants.AUTOSCALING in without:
        sim.launch_fixed_capacity(largest_pods(config, workload, project_dir))
    claims_placement.stand_up(sim)
    sim.place_headroom()
    schedule_jobs(sim)
    stats = [schedule_trace(sim, trace, project_dir) for trace in workload.traces if trace.format == ALIBABA_GPU_2023]
    found = deployments(sim)
    for deployment in found:
        start(sim, deployment)
    start_sampling(sim, found, seconds(workload.sample_interval))
    watcher = Watcher(sim, watch, seconds(workload.sample_interval))
    sim.clock.run()
    if sim.clock.halted_at is not None:
        sim.ledger.end = sim.clock.halted_at
    sim.close()
    return Result(sim, found, stats, watcher.stopped)


