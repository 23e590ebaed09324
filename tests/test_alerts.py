"""Alerts and recording rules: real PromQL, complete annotations, and promtool unit tests for every alert.

The rule file promtool checks and the unit-test file it runs are generated from the same data as
the PrometheusRule (components/monitoring/alerts.py). promtool comes from Debian's `prometheus` package;
`.ci/run` installs it. The unit tests compare labels only: promtool also compares rendered
annotations, whose templates `promtool check rules` already checks on the full file.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from components.autoscaling import gpu_utilization_query
from components.monitoring import alerts
from components.monitoring.alerts import (
    DEVICE_GPU_UTILISATION,
    MEMORY_PRESSURE_RATIO,
    NAMESPACE_GPU_REQUESTS,
    NAMESPACE_GPU_UTILISATION,
    POD_GPU_UTILISATION,
    PODS_AT_MIN_REPLICAS,
    AlertRule,
    check_promql,
)
from config.monitoring import DEFAULT_RUNBOOK_BASE_URL, MonitoringConfig
from config.versions import CHARTS
from offline.engine import PROJECT_DIR
from offline.upstream import crd_documents

from .promql_inventory import Inventory

IDLE_HOURS = 1
CONFIG = MonitoringConfig.model_validate({"idleGpuHours": IDLE_HOURS})
# Every group a stack may declare: a fleet manager's MultiKueue alerts and a KAI pool's too.
GROUPS = (*alerts.all_groups(CONFIG), alerts.multikueue_group(), alerts.kai_group())
INVENTORY = Inventory.load()
ALERTS = [rule for group in GROUPS for rule in group.rules if isinstance(rule, AlertRule)]
# The monitoring.coreos.com CRDs the platform installs (the prometheus-operator-crds release).
CRD_CHART = "prometheus-operator-crds"
RUNBOOKS = PROJECT_DIR / "docs" / "runbooks.md"

# Every input series is built by the inventory, which refuses a metric or a label the pinned exporters
# do not write (tests/promql_inventory.py): a renamed label fails here before promtool runs.
S = Inventory.load().series
GPU0 = {"gpu": "0", "hostname": "gpu-node-1", "UUID": "GPU-0", "modelName": "NVIDIA L40S", "pci_bus_id": "0000:00:1e.0"}
GPU1 = {**GPU0, "gpu": "1", "UUID": "GPU-1", "pci_bus_id": "0000:00:1f.0"}
DEVICE = {key: GPU0[key] for key in ("gpu", "hostname", "UUID", "modelName")}
# A MIG-enabled H100 with one 1g.10gb instance held by a notebook.
MIG_GPU = {"gpu": "0", "hostname": "gpu-node-3", "UUID": "GPU-9", "modelName": "NVIDIA H100 80GB HBM3"}
MIG_INSTANCE = {**MIG_GPU, "GPU_I_ID": "7", "GPU_I_PROFILE": "1g.10gb"}
WORKLOAD = {"namespace": "team-a", "pod": "train-0", "container": "main"}
REQUEST = S(
    "kube_pod_container_resource_requests", namespace="team-a", pod="train-0", container="main", node="gpu-node-1",
    resource="nvidia_com_gpu", unit="integer",
)
RUNNING = S("kube_pod_status_phase", namespace="team-a", pod="train-0", uid="u1", phase="Running")
# A placeholder of a pool's warm headroom (components/headroom.py).
PLACEHOLDER = {"namespace": "gpu-headroom", "pod": "gpu-l40s-headroom-7d9f8b4d5c-q2w8r", "container": "pause"}
PLACEHOLDER_REQUEST = S(
    "kube_pod_container_resource_requests", **PLACEHOLDER, node="gpu-node-1", resource="nvidia_com_gpu", unit="integer"
)
PLACEHOLDER_RUNNING = S("kube_pod_status_phase", namespace="gpu-headroom", pod=PLACEHOLDER["pod"], uid="u9", phase="Running")
# An inference server's pod, its ReplicaSet and Deployment, and KEDA's HPA holding it at minReplicas.
SERVER = {"namespace": "inference", "pod": "chat-5c7d9f8b4d-x7k2p", "container": "vllm"}
SERVER_REQUEST = S(
    "kube_pod_container_resource_requests", **SERVER, node="gpu-node-1", resource="nvidia_com_gpu", unit="integer"
)
SERVER_RUNNING = S("kube_pod_status_phase", namespace="inference", pod=SERVER["pod"], uid="u2", phase="Running")
SERVER_OWNER = S(
    "kube_pod_owner", namespace="inference", pod=SERVER["pod"], uid="u2", owner_kind="ReplicaSet",
    owner_name="chat-5c7d9f8b4d", owner_is_controller="true",
)
REPLICASET_OWNER = S(
    "kube_replicaset_owner", namespace="inference", replicaset="chat-5c7d9f8b4d", owner_kind="Deployment",
    owner_name="chat", owner_is_controller="true",
)
HPA = {"namespace": "inference", "horizontalpodautoscaler": "keda-hpa-chat"}
HPA_INFO = S(
    "kube_horizontalpodautoscaler_info", **HPA, scaletargetref_api_version="apps/v1", scaletargetref_kind="Deployment",
    scaletargetref_name="chat",
)
POOL = {"nodepool": "gpu-l40s", "resource_type": "nvidia.com/gpu"}
MIG_POOL = {"nodepool": "gpu-h100", "resource_type": "nvidia.com/mig-1g.10gb"}
DRA_POOL = {"nodepool": "gpu-l4-dra", "resource_type": "nodes"}
LEADER = {"cohort": "gpu-dev", "cluster_queue": "team-a", "flavor": "h100-mig", "resource": "nvidia.com/mig-1g.10gb",
          "replica_role": "leader"}
FOLLOWER = {**LEADER, "replica_role": "follower"}
# A fleet manager's ClusterQueue (components/fleet.py), on the leader and on a follower.
FLEET_QUEUE = {"cluster_queue": "llm-training", "replica_role": "leader"}
FLEET_QUEUE_FOLLOWER = {**FLEET_QUEUE, "replica_role": "follower"}
SCALER = {"exported_namespace": "inference", "scaledObject": "chat", "scaler": "prometheusScaler",
          "metric": "s0-prometheus", "triggerIndex": "0", "type": "scaledobject"}
EMPTY = {"exported_namespace": "inference", "scaledResource": "chat", "triggerName": "queue-depth",
         "metricName": "s1-prometheus", "resourceType": "scaledobject", "ignoreNullValues": "true"}
# The scrapes of the Services KAI v0.17.0's operator makes (pkg/operator/operands/*/resources.go), written out:
# the scheduler's `kai-scheduler-default` (schedulerName-shard), `binder`, `queue-controller`, `admission`.
KAI_TARGETS = {
    job: {"job": job, "namespace": "kai-scheduler", "service": job, "endpoint": port, "instance": f"10.0.3.{i}:8080"}
    for i, (job, port) in enumerate((("kai-scheduler-default", "http-metrics"), ("binder", "http-metrics"),
                                     ("queue-controller", "metrics"), ("admission", "http-metrics")))
}
KAI_QUEUE = {"queue_name": "data-science", "queue_metadata_name": "data-science", "queue_display_name": ""}
KAI_ROOT = {"queue_name": "gpu-platform.tenants", "queue_metadata_name": "gpu-platform.tenants", "queue_display_name": ""}
# A tenant with no quota of its own on the KAI pool, borrowing only (config/kai.py: deserved = nominal = 0).
KAI_BORROWER = {"queue_name": "experiments", "queue_metadata_name": "experiments", "queue_display_name": ""}

# alert -> (eval time, expected labels when it fires, series that fire it, series that keep it quiet)
CASES: dict[str, tuple[str, dict[str, str], dict[str, str], dict[str, str]]] = {
    "HighGPUUtilization": (
        "10m",
        {},
        # A busy MIG instance counts by its engine activity; its parent's GPU_UTIL (0 in MIG mode) does not.
        {S("DCGM_FI_DEV_GPU_UTIL", **GPU0): "92x10", S("DCGM_FI_DEV_GPU_UTIL", **MIG_GPU): "0x10",
         S("DCGM_FI_PROF_GR_ENGINE_ACTIVE", **MIG_INSTANCE): "0.95x10"},
        {S("DCGM_FI_DEV_GPU_UTIL", **GPU0): "95x10", S("DCGM_FI_DEV_GPU_UTIL", **GPU1): "50x10"},
    ),
    "GPUMemoryPressure": (
        "15m",
        DEVICE,
        {S("DCGM_FI_DEV_FB_USED", **GPU0, **WORKLOAD): "45500x15", S("DCGM_FI_DEV_FB_FREE", **GPU0, **WORKLOAD): "500x15"},
        # A vLLM replica: 90% of the GPU's memory reserved at start, the rest free.
        {S("DCGM_FI_DEV_FB_USED", **GPU0, **SERVER): "41500x15", S("DCGM_FI_DEV_FB_FREE", **GPU0, **SERVER): "3900x15"},
    ),
    "GPUXidError": (
        "3m",
        DEVICE,
        {S("DCGM_FI_DEV_XID_ERRORS", **GPU0): "0 0 79 79"},
        # The gauge keeps the last XID: 79, reported before this window and not since.
        {S("DCGM_FI_DEV_XID_ERRORS", **GPU0): "79x40"},
    ),
    "GPUTemperatureHigh": (
        "15m",
        DEVICE,
        {S("DCGM_FI_DEV_GPU_TEMP", **GPU0): "90x15"},
        {S("DCGM_FI_DEV_GPU_TEMP", **GPU0): "70x15"},
    ),
    "GPURowRemapFailure": (
        "2m",
        DEVICE,
        {S("DCGM_FI_DEV_ROW_REMAP_FAILURE", **GPU0): "0 1 1"},
        {S("DCGM_FI_DEV_ROW_REMAP_FAILURE", **GPU0): "0x5"},
    ),
    "GPUUncorrectableMemoryErrors": (
        "4m",
        DEVICE,
        {S("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", **GPU0): "0 0 1 1 1"},
        {S("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", **GPU0): "3x10"},
    ),
    "GPUsAllocatedButIdle": (
        "80m",
        {"namespace": "team-a", "pod": "train-0"},
        {S("DCGM_FI_DEV_GPU_UTIL", **GPU0, **WORKLOAD): "0x90", REQUEST: "1x90", RUNNING: "1x90"},
        # An idle inference server its autoscaler holds at minReplicas is kept warm on purpose.
        {
            S("DCGM_FI_DEV_GPU_UTIL", **GPU0, **SERVER): "0x90", SERVER_REQUEST: "1x90", SERVER_RUNNING: "1x90",
            SERVER_OWNER: "1x90", REPLICASET_OWNER: "1x90", HPA_INFO: "1x90",
            S("kube_horizontalpodautoscaler_status_current_replicas", **HPA): "1x90",
            S("kube_horizontalpodautoscaler_spec_min_replicas", **HPA): "1x90",
            # A warm headroom placeholder holds its GPU idle on purpose.
            S("DCGM_FI_DEV_GPU_UTIL", **GPU1, **PLACEHOLDER): "0x90", PLACEHOLDER_REQUEST: "1x90",
            PLACEHOLDER_RUNNING: "1x90",
        },
    ),
    # A mixed-MIG pool is limited per profile (config/advertised.py); its nodes report no nvidia.com/gpu, so
    # only its profile limits can be reached. A DRA pool is limited in nodes.
    "NodePoolAtGPULimit": (
        "20m",
        {"nodepool": "gpu-h100"},
        {S("karpenter_nodepools_usage", **MIG_POOL): "64x20", S("karpenter_nodepools_limit", **MIG_POOL): "64x20",
         S("karpenter_nodepools_usage", nodepool="gpu-h100", resource_type="nvidia.com/gpu"): "0x20"},
        {S("karpenter_nodepools_usage", **POOL): "4x20", S("karpenter_nodepools_limit", **POOL): "8x20",
         S("karpenter_nodepools_usage", **DRA_POOL): "1x20", S("karpenter_nodepools_limit", **DRA_POOL): "2x20"},
    ),
    "KueueWorkloadsPendingTooLong": (
        "65m",
        {"cluster_queue": "team-a"},
        {S("kueue_pending_workloads", cluster_queue="team-a", status="active", replica_role="leader"): "3x65",
         S("kueue_admitted_workloads_total", cluster_queue="team-a", priority_class="", replica_role="leader"): "5x65"},
        # The follower's gauges are stale copies: only the leader's admissions count.
        {S("kueue_pending_workloads", cluster_queue="team-a", status="active", replica_role="leader"): "3x65",
         S("kueue_pending_workloads", cluster_queue="team-a", status="active", replica_role="follower"): "9x65",
         S("kueue_admitted_workloads_total", cluster_queue="team-a", priority_class="", replica_role="leader"): "5+1x65"},
    ),
    "ClusterQueueAtGPUQuota": (
        "90m",
        {"cluster_queue": "team-a", "flavor": "h100-mig", "resource": "nvidia.com/mig-1g.10gb"},
        {S("kueue_cluster_queue_resource_usage", **LEADER): "14x90",
         S("kueue_cluster_queue_nominal_quota", **LEADER): "14x90"},
        # Under quota on the leader; a follower's copy at the quota counts for nothing.
        {S("kueue_cluster_queue_resource_usage", **LEADER): "6x90",
         S("kueue_cluster_queue_nominal_quota", **LEADER): "14x90",
         S("kueue_cluster_queue_resource_usage", **FOLLOWER): "14x90",
         S("kueue_cluster_queue_nominal_quota", **FOLLOWER): "14x90"},
    ),
    "MultiKueueNoActiveWorker": (
        "15m",
        {"cluster_queue": "llm-training"},
        {S("kueue_cluster_queue_status", **FLEET_QUEUE, status="active"): "0x15",
         S("kueue_cluster_queue_status", **FLEET_QUEUE, status="pending"): "1x15"},
        # Active on the leader; a follower's stale copy of the pending status counts for nothing.
        {S("kueue_cluster_queue_status", **FLEET_QUEUE, status="active"): "1x15",
         S("kueue_cluster_queue_status", **FLEET_QUEUE_FOLLOWER, status="active"): "0x15"},
    ),
    "MultiKueueWorkloadsStuckDispatching": (
        "40m",
        {"cluster_queue": "llm-training"},
        {S("kueue_reserving_active_workloads", **FLEET_QUEUE): "3x40",
         S("kueue_admitted_active_workloads", **FLEET_QUEUE): "1x40",
         S("multikueue_workloads_admitted_total", **FLEET_QUEUE, cluster="fleet-worker-usw2"): "5x40"},
        # The same two waiting, while a worker admits one of the queue's workloads every ten minutes.
        {S("kueue_reserving_active_workloads", **FLEET_QUEUE): "3x40",
         S("kueue_admitted_active_workloads", **FLEET_QUEUE): "1x40",
         S("multikueue_workloads_admitted_total", **FLEET_QUEUE, cluster="fleet-worker-usw2"): "5+0.1x40"},
    ),
    "KedaScalerErrors": (
        "20m",
        {"exported_namespace": "inference", "scaledObject": "chat", "scaler": "prometheusScaler"},
        {S("keda_scaler_detail_errors_total", **SCALER): "0+1x20"},
        {S("keda_scaler_detail_errors_total", **SCALER): "0x20"},
    ),
    "KaiControllerDown": (
        "15m",
        {"job": "binder", "namespace": "kai-scheduler"},
        # The binder's only replica stopped answering (tests/test_kai_signals.py: a Service with no target at all).
        {S("up", **KAI_TARGETS["kai-scheduler-default"]): "1x15", S("up", **KAI_TARGETS["binder"]): "1 1 0x13",
         S("up", **KAI_TARGETS["admission"]): "1x15", S("up", **KAI_TARGETS["queue-controller"]): "1x15"},
        # Every controller answers; a second binder replica down while the first answers is not an outage.
        {S("up", **KAI_TARGETS["kai-scheduler-default"]): "1x15", S("up", **KAI_TARGETS["binder"]): "1x15",
         S("up", **{**KAI_TARGETS["binder"], "instance": "10.0.3.9:8080"}): "0x15",
         S("up", **KAI_TARGETS["admission"]): "1x15", S("up", **KAI_TARGETS["queue-controller"]): "1x15"},
    ),
    "KaiBindingFailures": (
        "25m",
        {"job": "binder", "controller": "bindrequest"},
        # A bind fails every two minutes (a reservation pod that cannot start); the Pod controller's errors do not count.
        {S("controller_runtime_reconcile_errors_total", controller="bindrequest"): "0+0.5x25",
         S("controller_runtime_reconcile_errors_total", controller="pod"): "0x25"},
        # One failure at minute 5, bound on the retry; the Pod controller failing is not a bind failing.
        {S("controller_runtime_reconcile_errors_total", controller="bindrequest"): "0x5 1x20",
         S("controller_runtime_reconcile_errors_total", controller="pod"): "0+1x25"},
    ),
    "KaiQueueAtDeservedGPUs": (
        "70m",
        {"queue_name": "data-science"},
        # Six GPUs deserved and held exactly: ten half-GPU pods and one whole one. The root Queue holds 6.5 of the
        # pool's 8; a borrower's half GPU is no deserved quota reached (it has none).
        {S("kai_queue_deserved_gpus", **KAI_QUEUE): "6x70", S("kai_queue_allocated_gpus", **KAI_QUEUE): "6x70",
         S("kai_queue_deserved_gpus", **KAI_BORROWER): "0x70", S("kai_queue_allocated_gpus", **KAI_BORROWER): "0.5x70",
         S("kai_queue_deserved_gpus", **KAI_ROOT): "8x70", S("kai_queue_allocated_gpus", **KAI_ROOT): "6.5x70"},
        # 5.75 of 6 deserved.
        {S("kai_queue_deserved_gpus", **KAI_QUEUE): "6x70", S("kai_queue_allocated_gpus", **KAI_QUEUE): "5.75x70",
         S("kai_queue_deserved_gpus", **KAI_ROOT): "8x70", S("kai_queue_allocated_gpus", **KAI_ROOT): "5.75x70"},
    ),
    "KedaTriggerWithoutData": (
        "30m",
        {"exported_namespace": "inference", "scaledResource": "chat", "triggerName": "queue-depth"},
        {S("keda_scaler_empty_upstream_responses_total", **EMPTY): "0+4x30"},
        {S("keda_scaler_empty_upstream_responses_total", **EMPTY): "6x30"},
    ),
}


def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.fail(
            "promtool is not installed: the alert rules cannot be unit-tested. Install Debian's `prometheus` "
            "package (apt-get install prometheus), as .ci/run does."
        )
    return path


def run_promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([promtool(), *args], capture_output=True, text=True, timeout=120, check=False)


def run_promtools(*calls: tuple[str, ...]) -> list[subprocess.CompletedProcess[str]]:
    """Several promtool runs side by side (one core each), in the order given."""
    processes = [
        subprocess.Popen([promtool(), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for args in calls
    ]
    results = []
    for args, process in zip(calls, processes, strict=True):
        stdout, stderr = process.communicate(timeout=120)
        results.append(subprocess.CompletedProcess([promtool(), *args], process.returncode, stdout, stderr))
    return results


def run_promtool_tests(rule_file: dict[str, Any], tests: list[dict[str, Any]], folder: Path) -> subprocess.CompletedProcess[str]:
    """`promtool test rules` of `tests` (promtool's unit-test groups) against `rule_file`, both written to `folder`."""
    (folder / "rules.yaml").write_text(yaml.safe_dump(_without_annotations(rule_file), sort_keys=False))
    test_file = folder / "test.yaml"
    test_file.write_text(yaml.safe_dump({"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": tests}))
    return run_promtool("test", "rules", str(test_file))


# --- the rules as data ------------------------------------------------------------------------

@pytest.mark.parametrize("rule", [r for g in GROUPS for r in g.rules], ids=lambda r: getattr(r, "name", None) or r.record)
def test_every_expression_is_valid_promql(rule):
    check_promql(rule.expr)


def test_an_invalid_expression_is_reported_with_the_expression():
    with pytest.raises(ValueError, match=r"invalid PromQL 'sum\(rate\(x\[5m\]\)'"):
        check_promql("sum(rate(x[5m])")


@pytest.mark.parametrize("alert", ALERTS, ids=lambda a: a.name)
def test_every_alert_has_severity_summary_description_and_an_absolute_runbook_url(alert: AlertRule):
    rule = alert.as_rule(DEFAULT_RUNBOOK_BASE_URL)
    assert rule["labels"]["severity"] in alerts.SEVERITIES
    assert set(rule["annotations"]) == {"summary", "description", "runbook_url"}
    assert all(rule["annotations"].values()) and alert.watches and alert.quiet
    assert rule["annotations"]["runbook_url"] == f"{DEFAULT_RUNBOOK_BASE_URL}#{alert.name.lower()}"
    anchor = rule["annotations"]["runbook_url"].rsplit("#", 1)[1]
    headings = {line[3:].strip().lower() for line in RUNBOOKS.read_text().splitlines() if line.startswith("## ")}
    assert anchor in headings, f"docs/runbooks.md has no section '## {alert.name}'"


def test_runbook_urls_follow_the_configured_base_url():
    config = MonitoringConfig.model_validate({"runbookBaseUrl": "https://wiki.example.com/gpu-runbooks"})
    rule = alerts.prometheus_rule("gpu-platform", "monitoring", config)
    urls = {r["annotations"]["runbook_url"] for g in rule["spec"]["groups"] for r in g["rules"] if "alert" in r}
    assert urls == {f"https://wiki.example.com/gpu-runbooks#{a.name.lower()}" for a in alerts.alerts(config)}


def test_a_vllm_replica_at_its_default_reservation_stays_below_memory_pressure():
    # vLLM 0.11.0 vllm/config/cache.py: gpu_memory_utilization = 0.9 of the GPU's memory, CUDA context aside.
    assert MEMORY_PRESSURE_RATIO > 0.9 + 0.05


def test_idle_gpu_alert_waits_the_configured_hours():
    six = MonitoringConfig.model_validate({"idleGpuHours": 6})
    assert {a.name: a.for_ for a in alerts.alerts(six)}["GPUsAllocatedButIdle"] == "6h"


def test_recording_rules_publish_the_names_other_code_reads():
    rules = alerts.recording_rules().rules
    assert all(isinstance(rule, alerts.RecordingRule) for rule in rules)
    records = {rule.record for rule in rules if isinstance(rule, alerts.RecordingRule)}
    assert {DEVICE_GPU_UTILISATION, NAMESPACE_GPU_UTILISATION, NAMESPACE_GPU_REQUESTS, POD_GPU_UTILISATION,
            PODS_AT_MIN_REPLICAS} <= records
    for name in records:
        assert re.fullmatch(r"[a-z_]+:[a-z_]+:[a-z]+", name), f"{name} does not follow level:metric:operation"


def test_prometheus_rule_passes_the_crd_schema():
    [crd] = [
        document for document in crd_documents({CRD_CHART: CHARTS[CRD_CHART].version})
        if document["spec"]["names"]["kind"] == "PrometheusRule"
    ]
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1")
    schema = version["schema"]["openAPIV3Schema"]
    manifest = alerts.prometheus_rule("gpu-platform", "monitoring", CONFIG)
    assert (manifest["apiVersion"], manifest["kind"]) == ("monitoring.coreos.com/v1", "PrometheusRule")
    spec_schema = schema["properties"]["spec"]
    # The CRD's own patterns use Go regexp syntax; validate without checking the schema itself.
    jsonschema.Draft7Validator(spec_schema).validate(manifest["spec"])
    _no_unknown_fields(manifest["spec"], spec_schema, "spec")


# --- promtool ---------------------------------------------------------------------------------

def test_promtool_accepts_the_rule_file(tmp_path: Path):
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump(alerts.rule_file(GROUPS, CONFIG.runbook_base_url), sort_keys=False))
    result = run_promtool("check", "rules", str(rules))
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_has_a_firing_and_a_quiet_case():
    assert sorted(CASES) == sorted(a.name for a in ALERTS)


OUTCOMES = ("fires", "stays quiet")


@pytest.fixture(scope="module")
def promtool_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, subprocess.CompletedProcess[str]]:
    """One `promtool test rules` run per outcome, a test group per alert (each alert once per run)."""
    folder = tmp_path_factory.mktemp("promtool")
    rules = folder / "rules.yaml"
    rules.write_text(yaml.safe_dump(_without_annotations(alerts.rule_file(GROUPS, CONFIG.runbook_base_url)), sort_keys=False))
    test_files = {}
    for index, outcome in enumerate(OUTCOMES):
        groups = []
        for alert in ALERTS:
            eval_time, labels, firing, quiet = CASES[alert.name]
            series = firing if outcome == "fires" else quiet
            expected = [{"exp_labels": {**labels, "severity": alert.severity}}] if outcome == "fires" else []
            groups.append({
                "interval": "1m",
                "input_series": [{"series": name, "values": values} for name, values in series.items()],
                "alert_rule_test": [{"eval_time": eval_time, "alertname": alert.name, "exp_alerts": expected}],
            })
        test_file = folder / f"test-{index}.yaml"
        test_file.write_text(
            yaml.safe_dump({"rule_files": [rules.name], "evaluation_interval": "1m", "tests": groups}, sort_keys=False)
        )
        test_files[outcome] = test_file
    results = run_promtools(*(("test", "rules", str(test_file)) for test_file in test_files.values()))
    return dict(zip(test_files, results, strict=True))


@pytest.mark.parametrize("outcome", OUTCOMES)
@pytest.mark.parametrize("alert", ALERTS, ids=lambda a: a.name)
def test_alert_unit_test(alert: AlertRule, outcome: str, promtool_runs: dict[str, subprocess.CompletedProcess[str]]):
    result = promtool_runs[outcome]
    output = result.stdout + result.stderr
    failed = set(re.findall(r"alertname: (\w+), time:", output))
    # A run that failed without naming an alert could not read its files.
    assert result.returncode == 0 or failed, output
    assert alert.name not in failed, output


def _without_annotations(rule_file: dict[str, Any]) -> dict[str, Any]:
    return {
        "groups": [
            {**group, "rules": [{k: v for k, v in rule.items() if k != "annotations"} for rule in group["rules"]]}
            for group in rule_file["groups"]
        ]
    }


def _no_unknown_fields(value: Any, schema: dict[str, Any], path: str) -> None:
    """Structural CRD schemas prune unknown fields silently; here they are errors."""
    if isinstance(value, dict) and "properties" in schema:
        for key, item in value.items():
            assert key in schema["properties"], f"{path}.{key} is not in the PrometheusRule schema"
            _no_unknown_fields(item, schema["properties"][key], f"{path}.{key}")
    elif isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            _no_unknown_fields(item, schema["items"], f"{path}[{index}]")


# --- forged series from a tenant's pod ---------------------------------------------------------------

TENANT_SCRAPE_JOB = "data-science/inference-servers"  # the job a PodMonitor's scrape writes: <namespace>/<name>
VICTIM_POD = "chat-7d9f8b6c5-x2z4q"


def forged_metrics_test(rules: str, query: str) -> dict[str, Any]:
    """A tenant's server in data-science exposes DCGM-named series for another tenant's node: a row-remap
    failure on node-b's GPU 3, and a MIG instance's activity on node-a's GPU 0, where inference's `chat`
    runs at 80%. Were they stored (the serving scrape keeps none of them), they carry the scrape's job."""
    forged = f'job="{TENANT_SCRAPE_JOB}", namespace="data-science", pod="server-0"'
    victim = INVENTORY.series(
        "DCGM_FI_DEV_GPU_UTIL", hostname="node-a", gpu="0", UUID="GPU-a", namespace="inference", pod=VICTIM_POD
    )
    return {
        "rule_files": [rules],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [
                    {"series": victim, "values": "80x30"},
                    {"series": f'DCGM_FI_DEV_ROW_REMAP_FAILURE{{{forged}, hostname="node-b", gpu="3"}}', "values": "1x30"},
                    {
                        "series": f'DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{forged}, hostname="node-a", gpu="0", '
                        'GPU_I_PROFILE="1g.10gb"}',
                        "values": "0x30",
                    },
                ],
                "alert_rule_test": [{"eval_time": "20m", "alertname": "GPURowRemapFailure", "exp_alerts": []}],
                "promql_expr_test": [{"expr": query, "eval_time": "20m", "exp_samples": [{"labels": "{}", "value": 80}]}],
            }
        ],
    }


_DCGM_JOB = re.compile(r'\{job="nvidia-dcgm-exporter"\}|job="nvidia-dcgm-exporter",\s*')


def _forged_run(folder: Path, strip_job: bool) -> subprocess.CompletedProcess[str]:
    rule_file = _without_annotations(alerts.rule_file(GROUPS, CONFIG.runbook_base_url))
    query = gpu_utilization_query("inference", "chat")
    if strip_job:  # the expressions as they would read with no job selectors
        for group in rule_file["groups"]:
            for rule in group["rules"]:
                rule["expr"] = _DCGM_JOB.sub("", rule["expr"])
        query = _DCGM_JOB.sub("", query)
    (folder / "rules.yaml").write_text(yaml.safe_dump(rule_file, sort_keys=False))
    test = folder / "forged.yaml"
    test.write_text(yaml.safe_dump(forged_metrics_test("rules.yaml", query), sort_keys=False))
    return run_promtool("test", "rules", str(test))


def test_a_tenants_dcgm_named_series_fire_nothing_and_move_no_trigger(tmp_path: Path):
    result = _forged_run(tmp_path, strip_job=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_without_the_job_selectors_the_forged_series_page_and_empty_the_trigger(tmp_path: Path):
    output = _forged_run(tmp_path, strip_job=True)
    text = output.stdout + output.stderr
    assert output.returncode != 0
    assert "alertname: GPURowRemapFailure" in text and "expr: " in text, text


# --- DRA devices: Kueue's quota on a DeviceClass, and the devices running pods hold through claims -----------

DRA_RESOURCE = "gpu.nvidia.com.deviceclass.resource.k8s.io/devices"  # components/queueing.py deviceClassMappings
DRA_LEADER = {"cohort": "gpu-dev", "cluster_queue": "ml-research", "flavor": "l4-dra-on-demand", "resource": DRA_RESOURCE,
              "replica_role": "leader"}
# Two claims of 2 devices each from one template in a running pod, one in a pending pod, and a template of
# the same name in a namespace whose templates the stack does not declare.
DRA_CLAIMS = {("ml-research", "l4-pair"): {DRA_RESOURCE: 2}, ("inference", "l4-one"): {DRA_RESOURCE: 1}}


def claim_info(namespace: str, pod: str, claim: str, template: str) -> str:
    return S("kube_pod_resourceclaim_info", namespace=namespace, pod=pod, uid=f"u-{pod}", claim_name=claim,
             resourceclaim_name=f"{pod}-{claim}-x7k2p", resourceclaim_template_name=template)


def phase(namespace: str, pod: str, value: str) -> str:
    return S("kube_pod_status_phase", namespace=namespace, pod=pod, uid=f"u-{pod}", phase=value)


def dra_promtool_test(rules: str) -> dict[str, Any]:
    quota = S("kueue_cluster_queue_nominal_quota", **DRA_LEADER)
    usage = S("kueue_cluster_queue_resource_usage", **DRA_LEADER)
    fired = [{"exp_labels": {"cluster_queue": "ml-research", "flavor": "l4-dra-on-demand", "resource": DRA_RESOURCE,
                             "severity": "info"}}]
    requests = {
        claim_info("ml-research", "train-1", "gpu", "l4-pair"): "1x10",
        claim_info("ml-research", "train-1", "gpu-b", "l4-pair"): "1x10",
        phase("ml-research", "train-1", "Running"): "1x10",
        claim_info("ml-research", "train-2", "gpu", "l4-pair"): "1x10",
        phase("ml-research", "train-2", "Running"): "0x10",
        phase("ml-research", "train-2", "Pending"): "1x10",
        claim_info("team-b", "eval-0", "gpu", "l4-pair"): "1x10",
        phase("team-b", "eval-0", "Running"): "1x10",
        claim_info("inference", "chat-0", "gpu", "l4-one"): "1x10",
        phase("inference", "chat-0", "Running"): "1x10",
        S("kube_pod_container_resource_requests", namespace="ml-research", pod="nb-0", container="main",
          node="gpu-node-1", resource="nvidia_com_gpu", unit="integer"): "1x10",
        phase("ml-research", "nb-0", "Running"): "1x10",
    }
    dra = "gpu_nvidia_com_deviceclass_resource_k8s_io_devices"
    return {
        "rule_files": [rules],
        "evaluation_interval": "1m",
        "tests": [
            {"interval": "1m", "input_series": [{"series": quota, "values": "2x90"}, {"series": usage, "values": "2x90"}],
             "alert_rule_test": [{"eval_time": "90m", "alertname": "ClusterQueueAtGPUQuota", "exp_alerts": fired}]},
            {"interval": "1m", "input_series": [{"series": quota, "values": "2x90"}, {"series": usage, "values": "1x90"}],
             "alert_rule_test": [{"eval_time": "90m", "alertname": "ClusterQueueAtGPUQuota", "exp_alerts": []}]},
            {"interval": "1m", "input_series": [{"series": k, "values": v} for k, v in requests.items()],
             "promql_expr_test": [{"expr": NAMESPACE_GPU_REQUESTS, "eval_time": "5m", "exp_samples": [
                 {"labels": f'{NAMESPACE_GPU_REQUESTS}{{namespace="inference", resource="{dra}"}}', "value": 1},
                 {"labels": f'{NAMESPACE_GPU_REQUESTS}{{namespace="ml-research", resource="{dra}"}}', "value": 4},
                 {"labels": f'{NAMESPACE_GPU_REQUESTS}{{namespace="ml-research", resource="nvidia_com_gpu"}}', "value": 1},
             ]}]},
        ],
    }


def test_dra_devices_count_in_the_quota_alert_and_the_tenants_gpu_requests(tmp_path: Path):
    groups = alerts.all_groups(CONFIG, DRA_CLAIMS)
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(_without_annotations(alerts.rule_file(groups, "")), sort_keys=False))
    (tmp_path / "test.yaml").write_text(yaml.safe_dump(dra_promtool_test("rules.yaml"), sort_keys=False))
    result = run_promtool("test", "rules", str(tmp_path / "test.yaml"))
    assert result.returncode == 0, result.stdout + result.stderr


def test_without_claim_templates_the_requests_rollup_reads_extended_resources_only():
    [rule] = [r for r in alerts.recording_rules().rules if getattr(r, "record", None) == NAMESPACE_GPU_REQUESTS]
    assert "kube_pod_resourceclaim_info" not in rule.expr
