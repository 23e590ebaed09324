"""Every pod the platform's charts put on the system nodes has explicit requests and limits, and each
number is the recommendation its chart's values.yaml writes in a comment beside `resources: {}`, or ours.

The system-node check (config/system_capacity.py) counts these requests; with a chart left unsized a pod
would count 0m/0Mi and "fits" would be a guess.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from config import system_capacity as sc
from config.versions import CHARTS

from .conftest import fixture_document, load, project_path, render_fixture
from .test_system_capacity import release_values, walk

KPS = f"upstream/kube-prometheus-stack/{CHARTS['kube-prometheus-stack'].version}"
ESO = f"upstream/external-secrets/{CHARTS['external-secrets'].version}"

# (constant, values file, key path of its `resources: {}`, the resources upstream's comment gives: the rest is ours)
CITED: list[tuple[str, str, tuple[str, ...], dict[str, dict[str, str]]]] = [
    ("PROMETHEUS_OPERATOR_RESOURCES", f"{KPS}/values.yaml", ("prometheusOperator", "resources"),
     {"requests": {"cpu": "100m", "memory": "100Mi"}, "limits": {"cpu": "200m", "memory": "200Mi"}}),
    ("PROMETHEUS_RESOURCES", f"{KPS}/values.yaml", ("prometheus", "prometheusSpec", "resources"),
     {"requests": {"memory": "400Mi"}}),
    ("ALERTMANAGER_RESOURCES", f"{KPS}/values.yaml", ("alertmanager", "alertmanagerSpec", "resources"),
     {"requests": {"memory": "400Mi"}}),
    ("GRAFANA_RESOURCES", f"{KPS}/charts/grafana/values.yaml", ("resources",),
     {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "100m", "memory": "128Mi"}}),
    ("GRAFANA_SIDECAR_RESOURCES", f"{KPS}/charts/grafana/values.yaml", ("sidecar", "resources"),
     {"requests": {"cpu": "50m", "memory": "50Mi"}, "limits": {"cpu": "100m", "memory": "100Mi"}}),
    ("KUBE_STATE_METRICS_RESOURCES", f"{KPS}/charts/kube-state-metrics/values.yaml", ("resources",),
     {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"cpu": "100m", "memory": "64Mi"}}),
    ("NODE_EXPORTER_RESOURCES", f"{KPS}/charts/prometheus-node-exporter/values.yaml", ("resources",),
     {"requests": {"cpu": "100m", "memory": "30Mi"}, "limits": {"cpu": "200m", "memory": "50Mi"}}),
    ("EXTERNAL_SECRETS_RESOURCES", f"{ESO}/values.yaml", ("resources",), {"requests": {"cpu": "10m", "memory": "32Mi"}}),
    ("EXTERNAL_SECRETS_RESOURCES", f"{ESO}/values.yaml", ("webhook", "resources"),
     {"requests": {"cpu": "10m", "memory": "32Mi"}}),
    ("EXTERNAL_SECRETS_RESOURCES", f"{ESO}/values.yaml", ("certController", "resources"),
     {"requests": {"cpu": "10m", "memory": "32Mi"}}),
]
_AMOUNT = re.compile(r"^(cpu|memory):\s*(\S+)$")


def commented_recommendation(path: Path, keys: tuple[str, ...]) -> dict[str, dict[str, str]]:
    """The `limits:`/`requests:` block commented out under the key path's `resources: {}` line."""
    lines = path.read_text().splitlines()
    position, indent = -1, -1
    for key in keys:
        position = _child_line(lines, position, indent, key)
        indent = _indent(lines[position])
    assert lines[position].strip() == "resources: {}", f"{path}:{position + 1}"
    found: dict[str, dict[str, str]] = {}
    section = ""
    for line in lines[position + 1 :]:
        text = line.strip()
        if not text.startswith("#"):
            break
        text = text.lstrip("#").strip()
        if text in ("limits:", "requests:"):
            section = text[:-1]
            found[section] = {}
        elif (amount := _AMOUNT.match(text)) and section:
            found[section][amount[1]] = amount[2]
    return found


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _child_line(lines: list[str], parent: int, parent_indent: int, key: str) -> int:
    """The line of `key:` directly inside the mapping at `parent` (-1: the document), by indentation."""
    child_indent = None
    for i in range(parent + 1, len(lines)):
        text = lines[i].strip()
        if not text or text.startswith("#"):
            continue
        if _indent(lines[i]) <= parent_indent:
            break
        child_indent = _indent(lines[i]) if child_indent is None else child_indent
        if _indent(lines[i]) == child_indent and text.startswith(f"{key}:"):
            return i
    raise AssertionError(f"no {key!r} under line {parent + 1}")


@pytest.mark.parametrize("name, file, keys, upstream", CITED, ids=[f"{c[0]}:{'.'.join(c[2])}" for c in CITED])
def test_each_chart_resource_is_what_the_charts_comment_recommends_where_it_gives_a_number(name, file, keys, upstream):
    assert commented_recommendation(project_path(file), keys) == upstream
    ours: Any = getattr(sc, name)
    for kind, amounts in upstream.items():
        assert dict(ours[kind]).items() >= amounts.items(), f"{name}.{kind}"


@pytest.mark.parametrize("name", sorted({c[0] for c in CITED}))
def test_each_pod_sized_by_the_program_has_cpu_and_memory_requests_and_a_memory_limit(name):
    resources: Any = getattr(sc, name)
    assert set(resources["requests"]) == {"cpu", "memory"} and "memory" in resources["limits"]


def test_no_pod_of_a_platform_chart_counts_as_zero_on_the_system_nodes():
    """Only the EKS add-ons, whose manifests EKS writes, may request nothing of a resource."""
    document = fixture_document("multi-pool")
    plan = load(document).system_capacity
    addons = {addon.name for addon in sc.ADDON_ESTIMATES}
    unsized = [pod.name for pod in plan.pods if pod.name not in addons and not (pod.requests.cpu_m and pod.requests.memory_mib)]
    assert unsized == []
    grafana = next(pod for pod in plan.pods if pod.name == "grafana")
    # grafana 100m/128Mi and two sidecars of 50m/50Mi.
    assert (grafana.requests.cpu_m, grafana.requests.memory_mib) == (200, 228)


def test_the_monitoring_release_carries_every_limit_the_check_reads():
    values = release_values(render_fixture("multi-pool"), "kube-prometheus-stack")
    rendered = {
        "PROMETHEUS_OPERATOR_RESOURCES": walk(values, ("prometheusOperator", "resources")),
        "PROMETHEUS_RESOURCES": walk(values, ("prometheus", "prometheusSpec", "resources")),
        "ALERTMANAGER_RESOURCES": walk(values, ("alertmanager", "alertmanagerSpec", "resources")),
        "GRAFANA_RESOURCES": walk(values, ("grafana", "resources")),
        "GRAFANA_SIDECAR_RESOURCES": walk(values, ("grafana", "sidecar", "resources")),
        "KUBE_STATE_METRICS_RESOURCES": walk(values, ("kube-state-metrics", "resources")),
        "NODE_EXPORTER_RESOURCES": walk(values, ("prometheus-node-exporter", "resources")),
    }
    assert rendered == {name: getattr(sc, name) for name in rendered}
