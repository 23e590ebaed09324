"""Recorded traces, mapped onto a stack's tenants and flavors.

Alibaba's GPU cluster trace 2023 (`alibaba-gpu-v2023`: alibaba/clusterdata,
cluster-trace-gpu-v2023/csv/openb_pod_list_default.csv, vendored verbatim under upstream/). Each row
is a pod: `num_gpu`, `gpu_milli` (thousandths of a GPU when `num_gpu` is 1), `qos`, and its creation,
scheduling and deletion times in seconds from the trace's start. The mapping rule:

1. A task arrives at its `creation_time`, less the window's start (`window.start`; without a window, less
   the first task's creation).
2. It runs for `deletion_time - scheduled_time`: the time it held its GPUs in Alibaba's cluster.
3. Rows are counted, never dropped silently (`TraceStats`, in report.json and report.md):
   `without_gpu` (`num_gpu` 0: the simulator models GPU capacity only), `never_scheduled`
   (`scheduled_time` empty: deleted while Pending, so the trace holds no run time), `no_run_time`
   (deleted at or before its scheduling), and with a window `ended_before_window` (deleted before the
   window opens) and `after_window` (created at or after it closes). A task created before the window
   opens and deleted after it is `carried_in`: it arrives at the window's start with what was left of its
   run (from its scheduling or the window's start, whichever is later, to its deletion).
4. Its `qos` picks a class of the workload file's `classes`: tenant, priority tier, flavors, and whether it
   replays as a job (a run that restarts from zero when evicted) or a service (sim/engine.py: an eviction
   costs the time to be placed and start again; the running time it had is kept). A `qos` the file does
   not map is counted (`unmapped`).
5. What it requests, in its flavors' units (S = slices per GPU of the class's flavors: the time-slicing
   `replicas` of a time-sliced flavor, 1 on whole-GPU and MIG flavors):
   `num_gpu x S` for whole GPUs, `ceil(gpu_milli x S / 1000)` for a fraction of one. On a flavor
   without time-slicing a fraction of a GPU therefore takes a whole GPU (the report says so).
6. One pod per task: the trace has no gangs.
7. Inflation (`inflation.ratio`), as the FGD simulator tunes a trace to a cluster (Weng et al., "Beware of
   Fragmentation", USENIX ATC'23; hkust-adsl/kubernetes-scheduler-simulator pkg/simulator/simulator.go
   `TunePodsByNodeTotalResource`, `tuneUpPods`, `tuneDownPods`; the paper's runs use ratio 1.3,
   experiments/run_scripts/generate_run_scripts.py): the target is `ratio x` the cluster's GPU capacity;
   below it, tasks drawn uniformly at random from the trace are added as copies until the next draw would
   pass the target; above it, tasks drawn at random are removed until it is met. FGD's snapshot sums GPU
   requests; a replay over time sums each task's GPUs x the part of its run inside the simulated time,
   divided by that time (the mean GPUs it asks for), against the NodePool GPU limits of the pools the
   mapped classes use. A copy arrives when its original does. (That repository's `WorkloadInflationConfig`
   is another knob: ceil(n x ratio) - n random clones, stopped at the cluster's capacity, for an evaluation
   after the replay; the paper's runs tune with `-tune 1.3`, the rule followed here. Read at commit
   29a1e4c4c51130ae55bda03ea0c794d613a60295.)

Licence: cluster-trace-gpu-v2023 carries no licence file; the repository's README lets anyone use the
traces for research or study (SOURCES records it as LicenseRef-alibaba-clusterdata-research-use).
"""

from __future__ import annotations

import csv
import math
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

ALIBABA_GPU_2023 = "alibaba-gpu-v2023"
# Inflation adds at most this many copies per task (the bound of `copies`), so a tiny trace against a large
# stack cannot grow without bound; the report states the demand reached.
MAX_COPIES = 64
# The columns the rule reads (sim/workload_check.py refuses a file without them).
ALIBABA_COLUMNS = ("name", "qos", "num_gpu", "gpu_milli", "creation_time", "scheduled_time", "deletion_time")


@dataclass(frozen=True)
class TraceTask:
    name: str
    qos: str
    arrival: float  # seconds from the trace's start (rule 1 subtracts the window's start)
    run_seconds: float
    gpus: int
    gpu_milli: int

    def units(self, slices_per_gpu: int) -> int:
        """Rule 5: what the task requests on flavors with `slices_per_gpu` slices per GPU."""
        if self.gpus == 1 and self.gpu_milli < 1000:
            return max(1, math.ceil(self.gpu_milli * slices_per_gpu / 1000))
        return self.gpus * slices_per_gpu


@dataclass(frozen=True)
class TraceStats:
    rows: int
    kept: int
    without_gpu: int
    never_scheduled: int
    no_run_time: int
    ended_before_window: int = 0
    after_window: int = 0
    carried_in: int = 0  # kept, with the part of their run left when the window opens
    unmapped: int = 0  # kept by rules 1-3, but of a class the workload does not map
    services: int = 0  # replayed as services (rule 4)
    inflation_ratio: float | None = None
    demand_gpus: float | None = None  # mean GPUs the mapped tasks ask for, before inflation
    capacity_gpus: int | None = None  # NodePool GPU limits of the pools they use
    added: int = 0  # copies inflation added
    removed: int = 0  # tasks inflation removed


def read_alibaba_2023(path: Path, window_start: float | None = None,
                      window_end: float | None = None) -> tuple[list[TraceTask], TraceStats]:
    """Rules 1-3 over the CSV: the tasks kept (arrivals from the window's start), and how many rows each rule left out."""
    tasks: list[TraceTask] = []
    rows = without_gpu = never_scheduled = no_run_time = before = after = carried = 0
    opens = window_start or 0.0
    with path.open(newline="") as handle:
        for row in _rows(handle):
            rows += 1
            gpus = int(row["num_gpu"])
            if gpus == 0:
                without_gpu += 1
                continue
            if not row["scheduled_time"]:
                never_scheduled += 1
                continue
            created, scheduled, deleted = int(row["creation_time"]), int(row["scheduled_time"]), int(row["deletion_time"])
            if deleted - scheduled <= 0:
                no_run_time += 1
                continue
            if window_end is not None and created >= window_end:
                after += 1
                continue
            arrival, run = float(created), float(deleted - scheduled)
            if window_start is not None and created < window_start:
                if deleted <= window_start:
                    before += 1
                    continue
                carried += 1
                arrival, run = window_start, float(deleted - max(scheduled, window_start))
            tasks.append(TraceTask(row["name"], row["qos"], arrival - opens, run, gpus, int(row["gpu_milli"])))
    if window_start is None and tasks:
        first = min(task.arrival for task in tasks)
        tasks = [TraceTask(t.name, t.qos, t.arrival - first, t.run_seconds, t.gpus, t.gpu_milli) for t in tasks]
    stats = TraceStats(rows, len(tasks), without_gpu, never_scheduled, no_run_time, before, after, carried)
    return tasks, stats


def mean_gpus(gpus: Sequence[float], arrivals: Sequence[float], runs: Sequence[float], horizon: float) -> float:
    """Rule 7's demand: each task's GPUs x the part of its run before `horizon`, over `horizon`."""
    return sum(g * max(0.0, min(run, horizon - at)) for g, at, run in zip(gpus, arrivals, runs, strict=True)) / horizon


def inflate(weights: Sequence[float], target: float, draw: random.Random) -> tuple[list[int], list[int]]:
    """Rule 7 (`tuneUpPods` / `tuneDownPods`): indices of the tasks to add as copies (with repeats) and to remove,
    so the summed weight (each task's share of the demand) reaches `target` without passing it."""
    total = sum(weights)
    added: list[int] = []
    removed: list[int] = []
    if total < target and total > 0:
        while len(added) < MAX_COPIES * len(weights):
            index = draw.randrange(len(weights))
            if total + weights[index] > target:
                break
            total += weights[index]
            added.append(index)
    else:
        left = list(range(len(weights)))
        while total > target and left:
            index = left.pop(draw.randrange(len(left)))
            total -= weights[index]
            removed.append(index)
    return added, removed


def _rows(handle: TextIO) -> Iterator[dict[str, str]]:
    yield from csv.DictReader(handle)
