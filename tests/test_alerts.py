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

from components.monitoring import alerts
from components.monitoring.alerts import (
    NAMESPACE_GPU_UTILISATION,
    NAMESPACE_GPUS_ALLOCATED,
    POD_GPU_UTILISATION,
    AlertRule,
    check_promql,
)
from config.versions import CHARTS
from offline.engine import PROJECT_DIR
from offline.upstream import crd_documents

IDLE_HOURS = 1
GROUPS = alerts.all_groups(IDLE_HOURS)
ALERTS = alerts.alerts(IDLE_HOURS)
# The monitoring.coreos.com CRDs the platform installs (the prometheus-operator-crds release).
CRD_CHART = "prometheus-operator-crds"
RUNBOOKS = PROJECT_DIR / "docs" / "runbooks.md"

GPU0 = 'gpu="0",Hostname="gpu-node-1",UUID="GPU-0",modelName="NVIDIA L40S"'
WORKLOAD = 'namespace="team-a",pod="train-0",container="main"'
REQUEST = (
    'kube_pod_container_resource_requests{namespace="team-a",pod="train-0",container="main",node="gpu-node-1",'
    'resource="nvidia_com_gpu",unit="integer"}'
)
RUNNING = 'kube_pod_status_phase{namespace="team-a",pod="train-0",uid="u1",phase="Running"}'
POOL = 'nodepool="gpu-l40s",resource_type="nvidia.com/gpu"'
QUEUE = 'cohort="gpu-dev",cluster_queue="team-a",flavor="l40s-on-demand",resource="nvidia.com/gpu"'
SCALER = (
    'exported_namespace="inference",scaledObject="chat",scaler="prometheusScaler",metric="s0-prometheus",'
    'triggerIndex="0",type="scaledobject"'
)

# alert -> (eval time, expected labels when it fires, series that fire it, series that keep it quiet)
CASES: dict[str, tuple[str, dict[str, str], dict[str, str], dict[str, str]]] = {
    "HighGPUUtilization": (
        "10m",
        {},
        {f"DCGM_FI_DEV_GPU_UTIL{{{GPU0}}}": "95x10", 'DCGM_FI_DEV_GPU_UTIL{gpu="1",Hostname="gpu-node-1"}': "92x10"},
        {f"DCGM_FI_DEV_GPU_UTIL{{{GPU0}}}": "95x10", 'DCGM_FI_DEV_GPU_UTIL{gpu="1",Hostname="gpu-node-1"}': "50x10"},
    ),
    "GPUMemoryPressure": (
        "5m",
        {
            "gpu": "0",
            "Hostname": "gpu-node-1",
            "UUID": "GPU-0",
            "modelName": "NVIDIA L40S",
            "namespace": "team-a",
            "pod": "train-0",
            "container": "main",
        },
        {f"DCGM_FI_DEV_FB_USED{{{GPU0},{WORKLOAD}}}": "46000x5", f"DCGM_FI_DEV_FB_FREE{{{GPU0},{WORKLOAD}}}": "2000x5"},
        {f"DCGM_FI_DEV_FB_USED{{{GPU0},{WORKLOAD}}}": "20000x5", f"DCGM_FI_DEV_FB_FREE{{{GPU0},{WORKLOAD}}}": "28000x5"},
    ),
    "GPUXidError": (
        "3m",
        {"gpu": "0", "Hostname": "gpu-node-1", "UUID": "GPU-0", "modelName": "NVIDIA L40S"},
        {f"DCGM_FI_DEV_XID_ERRORS{{{GPU0}}}": "0 0 79 79"},
        {f"DCGM_FI_DEV_XID_ERRORS{{{GPU0}}}": "0x5"},
    ),
    "GPUTemperatureHigh": (
        "15m",
        {"gpu": "0", "Hostname": "gpu-node-1", "UUID": "GPU-0", "modelName": "NVIDIA L40S"},
        {f"DCGM_FI_DEV_GPU_TEMP{{{GPU0}}}": "90x15"},
        {f"DCGM_FI_DEV_GPU_TEMP{{{GPU0}}}": "70x15"},
    ),
    "GPURowRemapFailure": (
        "2m",
        {"gpu": "0", "Hostname": "gpu-node-1", "UUID": "GPU-0", "modelName": "NVIDIA L40S"},
        {f"DCGM_FI_DEV_ROW_REMAP_FAILURE{{{GPU0}}}": "0 1 1"},
        {f"DCGM_FI_DEV_ROW_REMAP_FAILURE{{{GPU0}}}": "0x5"},
    ),
    "GPUUncorrectableMemoryErrors": (
        "4m",
        {"gpu": "0", "Hostname": "gpu-node-1", "UUID": "GPU-0", "modelName": "NVIDIA L40S"},
        {f"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{{{GPU0}}}": "0 0 1 1 1"},
        {f"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{{{GPU0}}}": "3x10"},
    ),
    "GPUsAllocatedButIdle": (
        "80m",
        {"namespace": "team-a", "pod": "train-0"},
        {f"DCGM_FI_DEV_GPU_UTIL{{{GPU0},{WORKLOAD}}}": "0x90", REQUEST: "1x90", RUNNING: "1x90"},
        {f"DCGM_FI_DEV_GPU_UTIL{{{GPU0},{WORKLOAD}}}": "0x30 60x60", REQUEST: "1x90", RUNNING: "1x90"},
    ),
    "NodePoolAtGPULimit": (
        "20m",
        {"nodepool": "gpu-l40s"},
        {f"karpenter_nodepools_usage{{{POOL}}}": "8x20", f"karpenter_nodepools_limit{{{POOL}}}": "8x20"},
        {f"karpenter_nodepools_usage{{{POOL}}}": "4x20", f"karpenter_nodepools_limit{{{POOL}}}": "8x20"},
    ),
    "KueueWorkloadsPendingTooLong": (
        "65m",
        {"cluster_queue": "team-a"},
        {'kueue_pending_workloads{cluster_queue="team-a",status="active"}': "3x65",
         'kueue_admitted_workloads_total{cluster_queue="team-a"}': "5x65"},
        {'kueue_pending_workloads{cluster_queue="team-a",status="active"}': "3x65",
         'kueue_admitted_workloads_total{cluster_queue="team-a"}': "5+1x65"},
    ),
    "ClusterQueueAtGPUQuota": (
        "90m",
        {"cluster_queue": "team-a", "flavor": "l40s-on-demand"},
        {f"kueue_cluster_queue_resource_usage{{{QUEUE}}}": "12x90", f"kueue_cluster_queue_nominal_quota{{{QUEUE}}}": "12x90"},
        {f"kueue_cluster_queue_resource_usage{{{QUEUE}}}": "6x90", f"kueue_cluster_queue_nominal_quota{{{QUEUE}}}": "12x90"},
    ),
    "KedaScalerErrors": (
        "20m",
        {"exported_namespace": "inference", "scaledObject": "chat", "scaler": "prometheusScaler"},
        {f"keda_scaler_detail_errors_total{{{SCALER}}}": "0+1x20"},
        {f"keda_scaler_detail_errors_total{{{SCALER}}}": "0x20"},
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


# --- the rules as data ------------------------------------------------------------------------

@pytest.mark.parametrize("rule", [r for g in GROUPS for r in g.rules], ids=lambda r: getattr(r, "name", None) or r.record)
def test_every_expression_is_valid_promql(rule):
    check_promql(rule.expr)


def test_an_invalid_expression_is_reported_with_the_expression():
    with pytest.raises(ValueError, match=r"invalid PromQL 'sum\(rate\(x\[5m\]\)'"):
        check_promql("sum(rate(x[5m])")


@pytest.mark.parametrize("alert", ALERTS, ids=lambda a: a.name)
def test_every_alert_has_severity_summary_description_and_runbook(alert: AlertRule):
    rule = alert.as_rule()
    assert rule["labels"]["severity"] in alerts.SEVERITIES
    assert set(rule["annotations"]) == {"summary", "description", "runbook_url"}
    assert all(rule["annotations"].values())
    anchor = rule["annotations"]["runbook_url"].rsplit("#", 1)[1]
    headings = {line[3:].strip().lower() for line in RUNBOOKS.read_text().splitlines() if line.startswith("## ")}
    assert anchor in headings, f"docs/runbooks.md has no section '## {alert.name}'"


def test_the_seed_alerts_keep_their_conditions():
    by_name = {a.name: a for a in ALERTS}
    assert (by_name["HighGPUUtilization"].expr, by_name["HighGPUUtilization"].for_) == ("avg(DCGM_FI_DEV_GPU_UTIL) > 90", "5m")
    assert (by_name["GPUMemoryPressure"].expr, by_name["GPUMemoryPressure"].for_) == (
        "DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE) > 0.9",
        "2m",
    )


def test_idle_gpu_alert_waits_the_configured_hours():
    assert {a.name: a.for_ for a in alerts.alerts(6)}["GPUsAllocatedButIdle"] == "6h"


def test_recording_rules_publish_the_names_other_code_reads():
    rules = alerts.recording_rules().rules
    assert all(isinstance(rule, alerts.RecordingRule) for rule in rules)
    records = {rule.record for rule in rules if isinstance(rule, alerts.RecordingRule)}
    assert {NAMESPACE_GPU_UTILISATION, NAMESPACE_GPUS_ALLOCATED, POD_GPU_UTILISATION} <= records
    for name in records:
        assert re.fullmatch(r"[a-z_]+:[a-z_]+:[a-z]+", name), f"{name} does not follow level:metric:operation"


def test_prometheus_rule_passes_the_crd_schema():
    [crd] = [
        document for document in crd_documents({CRD_CHART: CHARTS[CRD_CHART].version})
        if document["spec"]["names"]["kind"] == "PrometheusRule"
    ]
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1")
    schema = version["schema"]["openAPIV3Schema"]
    manifest = alerts.prometheus_rule("gpu-platform", "monitoring", GROUPS)
    assert (manifest["apiVersion"], manifest["kind"]) == ("monitoring.coreos.com/v1", "PrometheusRule")
    spec_schema = schema["properties"]["spec"]
    # The CRD's own patterns use Go regexp syntax; validate without checking the schema itself.
    jsonschema.Draft7Validator(spec_schema).validate(manifest["spec"])
    _no_unknown_fields(manifest["spec"], spec_schema, "spec")


# --- promtool ---------------------------------------------------------------------------------

def test_promtool_accepts_the_rule_file(tmp_path: Path):
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump(alerts.rule_file(GROUPS), sort_keys=False))
    result = run_promtool("check", "rules", str(rules))
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_has_a_firing_and_a_quiet_case():
    assert sorted(CASES) == sorted(a.name for a in ALERTS)


@pytest.mark.parametrize("outcome", ["fires", "stays quiet"])
@pytest.mark.parametrize("alert", ALERTS, ids=lambda a: a.name)
def test_alert_unit_test(alert: AlertRule, outcome: str, tmp_path: Path):
    eval_time, labels, firing, quiet = CASES[alert.name]
    series = firing if outcome == "fires" else quiet
    expected = [{"exp_labels": {**labels, "severity": alert.severity}}] if outcome == "fires" else []
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump(_without_annotations(alerts.rule_file(GROUPS)), sort_keys=False))
    test_file = tmp_path / "test.yaml"
    test_file.write_text(
        yaml.safe_dump(
            {
                "rule_files": [rules.name],
                "evaluation_interval": "1m",
                "tests": [
                    {
                        "interval": "1m",
                        "input_series": [{"series": name, "values": values} for name, values in series.items()],
                        "alert_rule_test": [{"eval_time": eval_time, "alertname": alert.name, "exp_alerts": expected}],
                    }
                ],
            },
            sort_keys=False,
        )
    )
    result = run_promtool("test", "rules", str(test_file))
    assert result.returncode == 0, result.stdout + result.stderr


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
