"""The system nodes hold what the platform runs there: the check, its numbers, and where they come from.

Allocatable is nodeadm's (awslabs/amazon-eks-ami nodeadm/internal/kubelet/config.go: kubeReserved
CPU tiers, 11 * maxPods + 255 MiB, evictionHard memory.available 100Mi; eni_max_pods.go: maxPods =
ENIs * (IPv4 per ENI - 1) + 2). Requests are the charts' defaults (tested here against the vendored
upstream/<chart>/<version>/values.yaml) under the values the program sets (tested against the render).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from config import ConfigError, load_platform_config
from config.system_capacity import (
    CHART_DEFAULTS,
    INSTANCE_SHAPES,
    KARPENTER,
    ChartPod,
    Requests,
    SystemCapacityPlan,
    SystemPod,
    capacity_problems,
    requests_of,
)
from config.versions import CHARTS
from models.kubernetes.quantity import cpu_millicores, memory_mib
from offline.engine import Recording
from offline.stack import load_stack, stack_names
from offline.upstream import chart_values, subchart_values

from .conftest import fixture_document, load, render_fixture

RELEASE = "kubernetes:helm.sh/v3:Release"
REFUSED_DIR = Path(__file__).resolve().parent / "fixtures" / "refused"
ROOT = "gpu-platform:cluster.systemNodes"

CHART_ROWS = [
    (chart, version, key)
    for chart, versions in CHART_DEFAULTS.items()
    for version, pods in versions.items()
    for key in pods
]


def walk(values: Any, path: tuple[str, ...]) -> Any:
    """The value at `path`, or None where a key on the way is absent."""
    for key in path:
        if not isinstance(values, dict) or key not in values:
            return None
        values = values[key]
    return values


def defaults_of(chart: str, version: str, row: ChartPod) -> dict[str, Any]:
    return subchart_values(chart, version)[row.subchart] if row.subchart else chart_values(chart, version)


def values_file(chart: str, version: str, row: ChartPod) -> str:
    return f"upstream/{chart}/{version}/{f'charts/{row.subchart}/' if row.subchart else ''}values.yaml"


# --- allocatable ---------------------------------------------------------------------------------------

# Worked by hand from the formulas in the module docstring. Memory capacity: nominal MiB (less 64 on
# Graviton) minus ceil(7.5 %), Karpenter's vmMemoryOverheadPercent.
#   m7i.large:   maxPods 3*9+2 = 29;  CPU 2000 - (60+10) = 1930;  memory 8192-615 = 7577, - (11*29+255 = 574) - 100 = 6903
#   m7i.xlarge:  maxPods 4*14+2 = 58; CPU 4000 - (60+10+10) = 3920; memory 16384-1229 = 15155, - 893 - 100 = 14162
#   m7i.2xlarge: maxPods 58; CPU 8000 - (80+10) = 7910; memory 32768-2458 = 30310, - 893 - 100 = 29317
#   m7g.large:   maxPods 29; CPU 1930; memory 8128-610 = 7518, - 574 - 100 = 6844
ALLOCATABLE = [
    ("m7i.large", 29, Requests(70, 574), Requests(1930, 6903)),
    ("m7i.xlarge", 58, Requests(80, 893), Requests(3920, 14162)),
    ("m7i.2xlarge", 58, Requests(90, 893), Requests(7910, 29317)),
    ("m7g.large", 29, Requests(70, 574), Requests(1930, 6844)),
]


@pytest.mark.parametrize("instance_type, max_pods, reserved, allocatable", ALLOCATABLE)
def test_allocatable_is_capacity_less_nodeadms_kube_reserved_and_eviction_threshold(
    instance_type, max_pods, reserved, allocatable
):
    shape = INSTANCE_SHAPES[instance_type]
    assert shape.max_pods == max_pods
    assert shape.kube_reserved == reserved
    assert shape.allocatable == allocatable


@pytest.mark.parametrize(
    "quantity, millicores", [("500m", 500), ("1", 1000), (2, 2000), ("0.5", 500), ("100m", 100)]
)
def test_cpu_quantities_read_as_millicores(quantity, millicores):
    assert cpu_millicores(quantity) == millicores


@pytest.mark.parametrize(
    "quantity, mib", [("512Mi", 512), ("1Gi", 1024), ("100M", 96), ("1000Ki", 1), ("104857600", 100)]
)
def test_memory_quantities_read_as_mebibytes_rounded_up(quantity, mib):
    assert memory_mib(quantity) == mib


# --- chart defaults against the vendored charts --------------------------------------------------------


@pytest.mark.parametrize("chart", sorted(CHART_DEFAULTS))
def test_every_pinned_chart_version_has_a_row_of_defaults(chart):
    version = CHARTS[chart].version
    assert version in CHART_DEFAULTS[chart], (
        f"config/system_capacity.py CHART_DEFAULTS has no {chart} {version}: add its pods' requests and replicas "
        f"from upstream/{chart}/{version}/values.yaml"
    )


@pytest.mark.parametrize("chart, version, key", CHART_ROWS)
def test_chart_default_requests_are_what_the_vendored_values_say(chart, version, key):
    row = CHART_DEFAULTS[chart][version][key]
    resources = walk(defaults_of(chart, version, row), row.resources)
    assert isinstance(resources, dict), f"{values_file(chart, version, row)}: no {'.'.join(row.resources)}"
    written = {name: str(amount) for name, amount in (resources.get("requests") or {}).items()}
    assert written == dict(row.requests), f"{values_file(chart, version, row)} {'.'.join(row.resources)}.requests"


@pytest.mark.parametrize("chart, version, key", CHART_ROWS)
def test_chart_default_replicas_are_what_the_vendored_values_say(chart, version, key):
    row = CHART_DEFAULTS[chart][version][key]
    values = defaults_of(chart, version, row)
    if row.replicas:
        # An unset count (Kyverno's `replicas: ~`) leaves the Deployment's own default, one.
        written = walk(values, row.replicas)
        where = f"{values_file(chart, version, row)} {'.'.join(row.replicas)}"
        assert (1 if written is None else written) == row.default_replicas, where
    else:
        # No replica key: the chart's template runs exactly one.
        block = values[row.resources[0]]
        assert not {"replicas", "replicaCount"} & set(block), f"{values_file(chart, version, row)} {row.resources[0]}"


# --- the render gives each pod what the check counts ---------------------------------------------------


def release_values(recording: Recording, chart: str) -> dict[str, Any]:
    [release] = [r for r in recording.by_type(RELEASE) if r.inputs["chart"] == CHARTS[chart].chart]
    return release.inputs["values"]


def test_the_render_gives_each_chart_pod_the_replicas_and_requests_the_check_counts(fixture_stack, recording):
    plan = load(fixture_document(fixture_stack)).system_capacity
    charted = [pod for pod in plan.pods if pod.chart]
    released = {release.inputs["chart"] for release in recording.by_type(RELEASE)}
    installed = {chart for chart, pin in CHARTS.items() if pin.chart in released}
    expected = {(c, k) for c, v, k in CHART_ROWS if v == CHARTS[c].version and c in installed}
    assert {(pod.chart, pod.chart_pod) for pod in charted} == expected
    for pod in charted:
        row = CHART_DEFAULTS[pod.chart][CHARTS[pod.chart].version][pod.chart_pod]
        rendered = release_values(recording, pod.chart)
        if row.subchart:
            rendered = rendered.get(row.subchart, {})
        replicas = walk(rendered, row.replicas) if row.replicas else None
        assert (row.default_replicas if replicas is None else replicas) == pod.replicas, pod.name
        resources = walk(rendered, row.resources)
        requests = requests_of(resources if resources is not None else {"requests": row.requests})
        assert requests == pod.requests - pod.sidecar, pod.name


def test_karpenters_rendered_resources_are_the_config_sides():
    values = release_values(render_fixture("multi-pool"), "karpenter")
    assert values["controller"]["resources"] == KARPENTER.resources
    assert values["replicas"] == KARPENTER.replicas


# --- the check -----------------------------------------------------------------------------------------


@pytest.mark.stack_files
@pytest.mark.parametrize("stack", stack_names())
def test_every_root_stack_fits_its_system_nodes(stack):
    plan = load_platform_config(load_stack(stack).values).system_capacity
    assert plan.requested.fits_in(plan.allocatable)
    assert capacity_problems(plan, ROOT) == []


def test_two_large_system_nodes_are_refused_with_the_sums_and_the_fix():
    document = yaml.safe_load((REFUSED_DIR / "system-nodes-too-small.yaml").read_text())["config"]
    with pytest.raises(ConfigError) as caught:
        load(document)
    # Per node the DaemonSets take 255m (kube-proxy 100, aws-node 25, ebs-csi-node 30, node-exporter 100),
    # leaving 1675m of 1930m; the Deployments' 5310m need ceil(5310 / 1675) = 4 nodes.
    assert caught.value.problems == [
        "gpu-platform:cluster.systemNodes.minSize: 2 nodes of m7i.large, m6i.large allocate 3860m CPU and 13806Mi "
        "memory (1930m and 6903Mi each on the smallest type); the system pods request 5820m CPU and 6463Mi memory: "
        "CPU is 1960m short; raise minSize to 4 or choose larger instanceTypes"
    ]


def test_the_smallest_instance_type_sets_each_nodes_allocatable():
    document = fixture_document("single-pool")
    document["gpu-platform:cluster"]["systemNodes"]["instanceTypes"] = ["m7i.xlarge", "c7i.xlarge"]
    plan = load(document).system_capacity
    # c7i.xlarge has half the memory of m7i.xlarge; both allocate 3920m CPU.
    assert plan.node_allocatable == Requests(3920, INSTANCE_SHAPES["c7i.xlarge"].allocatable.memory_mib)


def test_karpenters_replicas_each_need_a_node_of_their_own():
    document = fixture_document("single-pool")
    nodes = document["gpu-platform:cluster"]["systemNodes"]
    nodes.update(instanceTypes=["m7i.4xlarge"], minSize=1, desiredSize=1)
    with pytest.raises(ConfigError) as caught:
        load(document)
    assert caught.value.problems == [
        "gpu-platform:cluster.systemNodes.minSize: 1 is fewer than the 2 replicas of karpenter, which run one per node "
        "(required pod anti-affinity on the hostname): raise minSize to 2"
    ]


def test_the_largest_pod_and_the_daemonsets_must_fit_one_node():
    pods = (
        SystemPod("big", Requests(900, 100), 1, "test"),
        SystemPod("small", Requests(100, 900), 1, "test"),
        SystemPod("daemon", Requests(200, 200), 1, "test", per_node=True),
    )
    plan = SystemCapacityPlan(("t.small",), 4, Requests(1000, 1000), pods, node_max_pods=29)
    assert capacity_problems(plan, ROOT) == [
        (
            f"{ROOT}.instanceTypes",
            "t.small: the smallest allocates 1000m CPU / 1000Mi memory per node, but the largest system pods (big 900m "
            "CPU, small 900Mi memory) with every node's DaemonSets (200m CPU / 200Mi memory) need 1100m CPU / 1100Mi "
            "memory: choose larger instanceTypes",
        )
    ]


def test_the_pods_must_fit_the_nodes_max_pods():
    # 30 single replicas and 2 DaemonSets on 2 nodes of 11 pods each (2 ENIs x 5 addresses): 34 pods in 22 slots.
    pods = (
        *(SystemPod(f"pod-{i}", Requests(1, 1), 1, "test") for i in range(30)),
        *(SystemPod(f"daemon-{i}", Requests(1, 1), 1, "test", per_node=True) for i in range(2)),
    )
    plan = SystemCapacityPlan(("t.small",), 2, Requests(4000, 4000), pods, node_max_pods=11)
    assert capacity_problems(plan, ROOT) == [
        (
            f"{ROOT}.minSize",
            "2 nodes of t.small take 22 pods (11 each on the smallest type: ENIs x (IPv4 addresses per ENI - 1) + 2); "
            "the system pods number 34: raise minSize to 4 or choose larger instanceTypes",
        )
    ]


def test_an_instance_type_without_a_shape_is_refused():
    document = fixture_document("single-pool")
    document["gpu-platform:cluster"]["systemNodes"]["instanceTypes"] = ["m7i.xlarge", "x2idn.16xlarge"]
    with pytest.raises(ConfigError) as caught:
        load(document)
    [line] = caught.value.problems
    assert line.startswith(
        "gpu-platform:cluster.systemNodes.instanceTypes[1]: 'x2idn.16xlarge' has no row in config/system_capacity.py "
        "INSTANCE_SHAPES, so its allocatable is unknown; use c7i, m5, m6a, m6g, m6i, m7a, m7g, m7i, m8i, r7i"
    )


def test_a_chart_override_without_a_row_is_sized_with_the_pinned_defaults_and_says_so():
    document = fixture_document("single-pool")
    document["gpu-platform:versions"] = {"charts": {"kueue": "0.19.3"}}
    plan = load(document).system_capacity
    assert plan.chart_notes == (
        "kueue 0.19.3 has no row in config/system_capacity.py CHART_DEFAULTS: sized with 0.19.2's defaults",
    )
    [kueue] = [pod for pod in plan.pods if pod.name == "kueue-controller-manager"]
    assert kueue.requests == Requests(500, 512)
