"""The metric inventory: generated from the vendored exporter files, and every query reads only what is in it.

Rules, dashboards and KEDA queries are parsed (promql-parser) and checked by tests/promql_inventory.py:
every metric is in the inventory or is a recording rule, and every label a selector, grouping, join,
label_replace, alert annotation or panel legend names is one the series carries.
"""

from __future__ import annotations

import copy
import json

import pytest
import yaml

from components.monitoring import alerts, dashboards
from config.monitoring import MonitoringConfig
from config.versions import CHARTS
from offline import metrics_inventory
from offline.metrics_inventory import INVENTORY_FILE, METRIC_SOURCES, inventory_text, load_inventory, source_dir
from offline.upstream import sources

from .conftest import FIXTURES, render_fixture
from .promql_inventory import Checker, Inventory

CONFIG = MonitoringConfig.model_validate({})


def rules_and_dashboard_problems(inventory: Inventory) -> list[str]:
    checker = Checker(inventory)
    for group in (
        *alerts.all_groups(CONFIG), alerts.multikueue_group(), alerts.kai_group(), alerts.cost_estimate_group("team-a", 1.5)
    ):
        for rule in group.rules:
            if isinstance(rule, alerts.RecordingRule):
                checker.record(rule.record, rule.expr, dict(rule.labels))
            else:
                checker.check(rule.expr, [rule.summary, rule.description])
    for dashboard in dashboards.dashboards():
        for panel in dashboard.panels:
            for expr, legend in panel.queries:
                checker.check(expr, [legend])
    return checker.problems


def keda_queries() -> list[str]:
    """The query of every Prometheus trigger of every fixture stack's ScaledObjects."""
    found = []
    for name in FIXTURES:
        for resource in render_fixture(name).resources:
            if resource.inputs.get("kind") == "ScaledObject":
                found += [t["metadata"]["query"] for t in resource.inputs["spec"]["triggers"] if t["type"] == "prometheus"]
    return found


# --- the inventory file ------------------------------------------------------------------------

def test_the_inventory_is_generated_from_the_vendored_files():
    assert INVENTORY_FILE.read_text() == inventory_text(), (
        "upstream/metrics-inventory.json is stale: run `python -m offline metrics-inventory`"
    )


@pytest.mark.parametrize("source", METRIC_SOURCES)
def test_every_metric_source_is_vendored_at_the_version_the_platform_runs(source: str):
    folder = source_dir(source).relative_to(metrics_inventory.UPSTREAM_DIR).as_posix()
    rows = [row for row in sources() if row.file.startswith(f"{folder}/")]
    _, where = METRIC_SOURCES[source]
    assert sorted(row.path for row in rows) == sorted(where.files), f"run `python -m offline vendor-metrics` for {folder}"


def test_the_gpu_operator_loads_the_vendored_default_counters():
    daemonset = yaml.safe_load((source_dir("gpu-operator") / "0800_daemonset.yaml").read_text())
    env = {e["name"]: e.get("value") for e in daemonset["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["DCGM_EXPORTER_COLLECTORS"] == "/etc/dcgm-exporter/dcp-metrics-included.csv"
    assert (source_dir("dcgm-exporter") / "dcp-metrics-included.csv").is_file()


def test_dcgm_series_name_their_node_hostname_since_dcgm_exporter_655():
    gpu_util = set(load_inventory()["dcgm-exporter"]["DCGM_FI_DEV_GPU_UTIL"])
    assert {"hostname", "gpu", "UUID", "GPU_I_ID", "GPU_I_PROFILE", "namespace", "pod", "container"} <= gpu_util
    assert "Hostname" not in gpu_util


def test_parsers_read_labels_across_go_constants_and_escaped_markdown_pipes():
    metrics = load_inventory()
    # karpenter pkg/metrics/constants.go ResourceTypeLabel, NodePoolLabel; Namespace, NodePoolSubsystem.
    assert metrics["karpenter"]["karpenter_nodepools_usage"] == ["nodepool", "resource_type"]
    # kube-state-metrics: `phase`=&lt;Pending\|Running…&gt; sits in one cell.
    assert metrics["kube-state-metrics"]["kube_pod_status_phase"] == ["namespace", "phase", "pod", "uid"]
    assert "replica_role" in metrics["kueue"]["kueue_cluster_queue_resource_usage"]
    assert metrics["vllm"]["vllm:num_requests_waiting"] == ["engine", "model_name"]


# --- every query against it -------------------------------------------------------------------------

def test_every_rule_annotation_panel_and_legend_reads_only_inventory_metrics_and_labels():
    assert rules_and_dashboard_problems(Inventory.load()) == []


def test_every_keda_trigger_query_reads_only_inventory_metrics_and_labels():
    queries = keda_queries()
    assert queries
    checker = Checker(Inventory.load())
    for query in queries:
        checker.check(query)
    assert checker.problems == []


# --- a planted rename fails -------------------------------------------------------------------------

def _renamed_label(old: str, new: str) -> Inventory:
    raw = copy.deepcopy(load_inventory())
    raw["dcgm-exporter"] = {name: [new if label == old else label for label in labels]
                            for name, labels in raw["dcgm-exporter"].items()}
    return Inventory.load(raw)


def test_a_dcgm_label_renamed_upstream_fails_the_rules_and_dashboards():
    problems = rules_and_dashboard_problems(_renamed_label("hostname", "Hostname"))
    assert any("'hostname'" in problem for problem in problems)
    # An alert annotation reading the old name fails too.
    checker = Checker(_renamed_label("hostname", "Hostname"))
    hot = 'max by (Hostname) (DCGM_FI_DEV_GPU_TEMP{job="nvidia-dcgm-exporter"}) > 85'
    checker.check(hot, ["GPU hot on {{ $labels.hostname }}"])
    assert checker.problems and "template" in checker.problems[0]


def test_a_metric_renamed_upstream_fails_the_rules_dashboards_and_keda():
    raw = copy.deepcopy(load_inventory())
    raw["dcgm-exporter"]["DCGM_FI_DEV_GPU_UTILIZATION"] = raw["dcgm-exporter"].pop("DCGM_FI_DEV_GPU_UTIL")
    inventory = Inventory.load(raw)
    assert any("'DCGM_FI_DEV_GPU_UTIL'" in p for p in rules_and_dashboard_problems(inventory))
    checker = Checker(Inventory.load(raw))
    checker.check(keda_queries()[0])
    assert checker.problems


def test_promtool_fixtures_refuse_a_label_the_exporter_does_not_write():
    with pytest.raises(KeyError, match="Hostname"):
        Inventory.load().series("DCGM_FI_DEV_GPU_TEMP", Hostname="gpu-node-1", gpu="0")
    with pytest.raises(KeyError, match="not in the metric inventory"):
        _renamed_label("hostname", "Hostname").series("DCGM_FI_DEV_GPU_UTILIZATION", gpu="0")


DCGM = "nvidia-dcgm-exporter"
JOB_SELECTORS = [
    # (expression, the selector that lacks its exporter's job, that job)
    ("DCGM_FI_DEV_GPU_TEMP > 85", "DCGM_FI_DEV_GPU_TEMP", DCGM),
    (
        f'DCGM_FI_DEV_GPU_UTIL{{job="{DCGM}"}} unless on (hostname, gpu) DCGM_FI_PROF_GR_ENGINE_ACTIVE{{GPU_I_PROFILE!=""}}',
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        DCGM,
    ),
    (f'DCGM_FI_DEV_XID_ERRORS{{job=~"{DCGM}|.*"}} > 0', "DCGM_FI_DEV_XID_ERRORS", DCGM),
    ('kueue_pending_workloads{job="karpenter"} > 0', "kueue_pending_workloads", "kueue-controller-manager-metrics-service"),
    (
        'karpenter_nodepools_usage and on (nodepool) karpenter_nodepools_limit{job="karpenter"}',
        "karpenter_nodepools_usage",
        "karpenter",
    ),
    ("rate(keda_scaler_detail_errors_total[5m])", "keda_scaler_detail_errors_total", "keda-operator"),
]


@pytest.mark.parametrize("expr, lacking, job", JOB_SELECTORS)
def test_a_platform_exporters_series_read_without_its_job_is_a_problem(expr, lacking, job):
    checker = Checker(Inventory.load())
    checker.check(expr)
    lacks = [p for p in checker.problems if "does not select job" in p]
    assert lacks == [f'{expr}: selector of {lacking} does not select job="{job}"']


def test_series_of_the_tenants_servers_and_kube_state_metrics_need_no_job():
    checker = Checker(Inventory.load())
    checker.check('sum by (namespace) (vllm:num_requests_waiting) + on (namespace) sum by (namespace) (kube_pod_info)')
    assert checker.problems == []


def test_labels_a_scrape_renames_arrive_as_exported():
    keda = Inventory.load().metrics["keda_scaler_detail_errors_total"]
    # kedacore/charts v2.20.2: its ServiceMonitor does not honour the operator's `namespace`.
    assert "exported_namespace" in keda and "namespace" in keda
    # The dcgm-exporter's ServiceMonitor honours its labels: `pod` is the GPU's workload, not exported_pod.
    assert "exported_pod" not in Inventory.load().metrics["DCGM_FI_DEV_GPU_UTIL"]


def test_the_inventory_versions_are_the_pins():
    versions = json.loads(INVENTORY_FILE.read_text())["versions"]
    assert versions["kueue"] == CHARTS["kueue"].version and versions["keda"] == CHARTS["keda"].version
    assert versions["karpenter"] == CHARTS["karpenter"].version
