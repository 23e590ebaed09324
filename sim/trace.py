"""Recorded traces, mapped onto a stack's tenants and flavors.

Alibaba's GPU cluster trace 2023 (`alibaba-gpu-v2023`: alibaba/clusterdata,
cluster-trace-gpu-v2023/csv/openb_pod_list_default.csv, vendored verbatim under upstream/). Each row
is a pod: `num_gpu`, `gpu_milli` (thousandths of a GPU when `num_gpu` is 1), `qos`, and its creation,
scheduling and deletion times in seconds from the trace's start. The mapping rule:

1. A task arrives at its `creation_time`.
2. It runs for `deletion_time - scheduled_time`: the time it held its GPUs in Alibaba's cluster.
3. Tasks with no GPU (`num_gpu` 0) are left out: the simulator models GPU capacity only. Tasks never
   scheduled (`scheduled_time` empty: pods deleted while Pending) are left out: the trace holds no run
   time for them. Tasks whose run time is not positive are left out.
4. Its `qos` picks a class of the workload file's `classes`: tenant, priority tier and flavors.
5. What it requests, in its flavors' units (S = slices per GPU of the class's flavors: the time-slicing
   `replicas` of a time-sliced flavor, 1 on whole-GPU and MIG flavors):
   `num_gpu x S` for whole GPUs, `ceil(gpu_milli x S / 1000)` for a fraction of one. On a flavor
   without time-slicing a fraction of a GPU therefore takes a whole GPU (the report says so).
6. One pod per task: the trace has no gangs.

Licence: cluster-trace-gpu-v2023 carries no licence file; the repository's README lets anyone use the
traces for research or study (SOURCES records it as LicenseRef-alibaba-clusterdata-research-use).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

ALIBABA_GPU_2023 = "alibaba-gpu-v2023"
# The columns the rule reads (sim/workload_check.py refuses a file without them).
ALIBABA_COLUMNS = ("name", "qos", "num_gpu", "gpu_milli", "creation_time", "scheduled_time", "deletion_time")


@dataclass(frozen=True)
class TraceTask:
    name: str
    qos: str
    arrival: float
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


def read_alibaba_2023(path: Path) -> tuple[list[TraceTask], TraceStats]:
    """Rules 1-3 over the CSV: the tasks kept, and how many rows each rule left out."""
    tasks: list[TraceTask] = []
    rows = without_gpu = never_scheduled = no_run_time = 0
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
            run = int(row["deletion_time"]) - int(row["scheduled_time"])
            if run <= 0:
                no_run_time += 1
                continue
            tasks.append(TraceTask(row["name"], row["qos"], float(row["creation_time"]), float(run), gpus, int(row["gpu_milli"])))
    return tasks, TraceStats(rows, len(tasks), without_gpu, never_scheduled, no_run_time)


def _rows(handle: TextIO) -> Iterator[dict[str, str]]:
    yield from csv.DictReader(handle)
