"""Workload files: their schema, the shipped ones against their stacks, the trace mapping, and mistakes in one line."""

from __future__ import annotations

import jsonschema
import pytest
import yaml

from sim.schema import schema_json, workload_schema
from sim.trace import TraceTask, read_alibaba_2023
from sim.workload import SCHEMA_PATH, load_workload
from sim.workload_check import check, check_runnable

from .conftest import load, project_path, shipped_document

# Each shipped workload and the stack it is written for, as shipped (tests/fixtures/shipped/): the
# workloads name that stack's tenants and flavors, which an operator's edits to the stack file may change.
SHIPPED = {
    "design-surge.yaml": "dev",
    "alibaba-gpu-2023.yaml": "prod",
    "surge-warm-start.yaml": "prod",
    "week-working-hours.yaml": "prod",
}
TRACE = "upstream/alibaba-clusterdata/cluster-trace-gpu-v2023/openb_pod_list_default.csv"


def test_the_committed_schema_is_what_the_models_generate():
    assert project_path(SCHEMA_PATH).read_text() == schema_json(), "run `make schema`"


@pytest.mark.parametrize(("name", "stack"), SHIPPED.items())
def test_each_shipped_workload_satisfies_the_schema_and_fits_its_stack(name, stack):
    path = project_path("workloads", name)
    text = path.read_text()
    assert text.splitlines()[0] == f"# yaml-language-server: $schema=../{SCHEMA_PATH}"
    jsonschema.validate(yaml.safe_load(text), workload_schema())
    config, workload = load(shipped_document(stack)), load_workload(path)
    check(config, workload, name, project_dir=project_path())  # raises WorkloadError on a mismatch
    check_runnable(config, workload, name)


def test_the_trace_rule_keeps_gpu_tasks_that_ran():
    tasks, stats = read_alibaba_2023(project_path(TRACE))
    # 8,152 pods: 1,088 without a GPU, 861 GPU pods never scheduled (no scheduled_time).
    assert (stats.rows, stats.without_gpu, stats.never_scheduled, stats.no_run_time) == (8152, 1088, 861, 0)
    assert stats.kept == len(tasks) == 8152 - 1088 - 861
    first = tasks[0]  # openb-pod-0000: 1 GPU, LS, scheduled at 0, deleted at 12537496
    assert (first.name, first.qos, first.arrival, first.run_seconds, first.gpus) == ("openb-pod-0000", "LS", 0.0, 12537496.0, 1)


@pytest.mark.parametrize(
    ("gpus", "milli", "slices", "units"),
    [
        (1, 1000, 1, 1),
        (2, 1000, 4, 8),  # two whole GPUs on a 4-way time-sliced flavor
        (1, 460, 4, 2),  # ceil(0.46 x 4)
        (1, 50, 4, 1),  # at least one slice
        (1, 460, 1, 1),  # a fraction takes a whole GPU without time-slicing
        (8, 1000, 1, 8),
    ],
)
def test_a_task_requests_its_gpus_in_the_flavors_units(gpus, milli, slices, units):
    assert TraceTask("t", "LS", 0.0, 1.0, gpus, milli).units(slices) == units
