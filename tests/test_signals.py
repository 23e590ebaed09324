"""Every dashboard panel and KEDA trigger has data on a cluster running whole-GPU, time-sliced and MIG pods.

The cluster is a set of promtool input series built by the metric inventory (tests/promql_inventory.py),
shaped as the pinned exporters write them: on the time-sliced GPU the exporter runs with
KUBERNETES_VIRTUAL_GPUS (components/gpu_operator.py), so it keeps the device's own series (labelled with
the exporter's pod by the scrape, honorLabels filling the gaps) and adds a copy per pod, with each pod's
own utilisation and memory (NVIDIA/dcgm-exporter internal/pkg/transformation/kubernetes.go, Process);
the MIG GPU reports its instance's DCGM_FI_PROF_GR_ENGINE_ACTIVE and its parent's GPU_UTIL reads 0.
One promtool run evaluates every query.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from components.autoscaling import gpu_utilization_query, queue_depth_query
from components.monitoring import alerts, dashboards
from components.monitoring.alerts import NAMESPACE_GPU_UTILISATION, POD_GPU_UTILISATION
from config.monitoring import MonitoringConfig

from .promql_inventory import Inventory
from .test_alerts import run_promtool

S = Inventory.load().series
CONFIG = MonitoringConfig.model_validate({})
EXPORTER = {"namespace": "gpu-operator", "pod": "nvidia-dcgm-exporter-4xk2p", "container": "nvidia-dcgm-exporter"}
NODES = {
    "gpu-node-1": ("gpu-l40s", "l40s"),  # whole GPUs
    "gpu-node-2": ("gpu-a10g-shared", "a10g"),  # time-sliced
    "gpu-node-3": ("gpu-h100-mig", "h100"),  # MIG
}
WHOLE = {"gpu": "0", "UUID": "GPU-1", "hostname": "gpu-node-1", "modelName": "NVIDIA L40S"}
SHARED = {"gpu": "0", "UUID": "GPU-2", "hostname": "gpu-node-2", "modelName": "NVIDIA A10G"}
MIG = {"gpu": "0", "UUID": "GPU-3", "hostname": "gpu-node-3", "modelName": "NVIDIA H100 80GB HBM3"}
MIG_INSTANCE = {**MIG, "GPU_I_ID": "7", "GPU_I_PROFILE": "1g.10gb"}
CHAT = {"namespace": "inference", "pod": "chat-5c7d9f8b4d-x7k2p", "container": "vllm"}
EMBED = [
    {"namespace": "inference", "pod": "embed-6d8f9b7c5d-q2w4z", "container": "server", "pod_uid": "u-e1", "vgpu": "0"},
    {"namespace": "inference", "pod": "embed-6d8f9b7c5d-b2k4n", "container": "server", "pod_uid": "u-e2", "vgpu": "1"},
]
SMALL = {"namespace": "team-b", "pod": "small-7c9d5b8f6d-z9x8w", "container": "notebook"}
HPA = {"namespace": "inference", "horizontalpodautoscaler": "keda-hpa-chat"}
KUEUE = {"cohort": "gpu", "cluster_queue": "team-b", "flavor": "h100-mig", "resource": "nvidia.com/mig-1g.10gb",
         "replica_role": "leader"}


def cluster() -> dict[str, float]:
    """Series -> constant value."""
    series: dict[str, float] = {}
    for node, (pool, model) in NODES.items():
        series[S("kube_node_labels", node=node, label_gpu_platform_node_pool=pool, label_gpu_platform_gpu_model=model)] = 1
    # A whole GPU held by one pod.
    for metric, value in (("GPU_UTIL", 50), ("FB_USED", 30000), ("FB_FREE", 16000), ("POWER_USAGE", 250),
                          ("GPU_TEMP", 60), ("XID_ERRORS", 13)):
        series[S(f"DCGM_FI_DEV_{metric}", **WHOLE, **CHAT)] = value
    # A time-sliced GPU: the device's own series, and per pod its share or a copy.
    series[S("DCGM_FI_DEV_GPU_UTIL", **SHARED, **EXPORTER)] = 70
    series[S("DCGM_FI_DEV_FB_USED", **SHARED, **EXPORTER)] = 12000
    for pod, util in zip(EMBED, (30, 40), strict=True):
        series[S("DCGM_FI_DEV_GPU_UTIL", **SHARED, **pod)] = util
        series[S("DCGM_FI_DEV_FB_USED", **SHARED, **pod)] = 6000
        for metric, value in (("FB_FREE", 10000), ("POWER_USAGE", 150), ("GPU_TEMP", 55), ("XID_ERRORS", 0)):
            series[S(f"DCGM_FI_DEV_{metric}", **SHARED, **{k: v for k, v in pod.items() if k != "pod_uid"})] = value
    # A MIG GPU: the instance's engine activity and memory; the parent's utilisation reads 0 in MIG mode.
    series[S("DCGM_FI_DEV_GPU_UTIL", **MIG, **EXPORTER)] = 0
    series[S("DCGM_FI_PROF_GR_ENGINE_ACTIVE", **MIG_INSTANCE, **SMALL)] = 0.5
    series[S("DCGM_FI_DEV_FB_USED", **MIG_INSTANCE, **SMALL)] = 4000
    series[S("DCGM_FI_DEV_FB_FREE", **MIG_INSTANCE, **SMALL)] = 5700
    for metric, value in (("POWER_USAGE", 300), ("GPU_TEMP", 50), ("XID_ERRORS", 0)):
        series[S(f"DCGM_FI_DEV_{metric}", **MIG, **EXPORTER)] = value
    # kube-state-metrics: what each pod requests, that it runs, quotas, KEDA's HPA.
    for pod, resource in ((CHAT, "nvidia_com_gpu"), (EMBED[0], "nvidia_com_gpu"), (EMBED[1], "nvidia_com_gpu"),
                          (SMALL, "nvidia_com_mig_1g_10gb")):
        where = {k: pod[k] for k in ("namespace", "pod", "container")}
        series[S("kube_pod_container_resource_requests", **where, resource=resource, unit="integer")] = 1
        series[S("kube_pod_status_phase", namespace=pod["namespace"], pod=pod["pod"], phase="Running")] = 1
    for kind, value in (("hard", 8), ("used", 3)):
        series[S("kube_resourcequota", namespace="inference", resourcequota="gpu", resource="requests.nvidia.com/gpu",
                 type=kind)] = value
    for metric, value in (("status_current_replicas", 1), ("status_desired_replicas", 1), ("spec_max_replicas", 4)):
        series[S(f"kube_horizontalpodautoscaler_{metric}", **HPA)] = value
    series[S("kube_horizontalpodautoscaler_spec_target_metric", **HPA, metric_name="s0-prometheus",
             metric_target_type="value")] = 75
    # Kueue's leader, KEDA's operator, the vLLM server.
    series[S("kueue_cluster_queue_resource_usage", **KUEUE)] = 1
    series[S("kueue_cluster_queue_nominal_quota", **KUEUE)] = 4
    series[S("kueue_pending_workloads", cluster_queue="team-b", status="active", replica_role="leader")] = 0
    scaler = {"exported_namespace": "inference", "scaledObject": "chat", "scaler": "prometheusScaler",
              "metric": "s0-prometheus", "triggerIndex": "0", "type": "scaledobject"}
    series[S("keda_scaler_metrics_value", **scaler)] = 60
    series[S("keda_scaler_detail_errors_total", **scaler)] = 0
    series[S("vllm:num_requests_waiting", model_name="chat", engine="0", **CHAT)] = 2
    # OpenCost: the GPU the chat server holds, and its node's price per GPU-hour.
    series[S("container_gpu_allocation", **CHAT, node="gpu-node-1", instance="10.0.1.5:9003")] = 1
    series[S("node_gpu_hourly_cost", node="gpu-node-1", instance="10.0.1.5:9003", instance_type="g6e.xlarge",
             region="us-east-1", provider_id="aws:///us-east-1a/i-0abc", arch="amd64")] = 1.86
    return series


# The render's estimate per tenant namespace (TenantPlan.guaranteed_hourly_cost).
ESTIMATES = {"inference": 5.58, "team-b": 7.44}
KEDA_QUERIES = {
    "whole-GPU server": gpu_utilization_query("inference", "chat"),
    "time-sliced server": gpu_utilization_query("inference", "embed"),
    "MIG server": gpu_utilization_query("team-b", "small"),
    "queue depth": queue_depth_query("inference", "chat"),
}
PANELS = {
    f"{dashboard.uid}: {panel.title} [{index}]": expr
    for dashboard in dashboards.dashboards()
    for panel in dashboard.panels
    for index, (expr, _) in enumerate(panel.queries)
}
# What the numbers are, beyond there being some: each pod its own share, MIG by engine activity.
VALUES: dict[str, tuple[str, str, float]] = {
    "a time-sliced pod its own share": (
        f'sum by (pod) ({POD_GPU_UTILISATION}{{pod="embed-6d8f9b7c5d-q2w4z"}})', '{pod="embed-6d8f9b7c5d-q2w4z"}', 30
    ),
    "a MIG pod its instance's engine activity": (
        f'sum by (pod) ({POD_GPU_UTILISATION}{{pod="small-7c9d5b8f6d-z9x8w"}})', '{pod="small-7c9d5b8f6d-z9x8w"}', 50
    ),
    "a namespace the mean over its pods' GPUs": (
        f'sum by (namespace) ({NAMESPACE_GPU_UTILISATION}{{namespace="inference"}})', '{namespace="inference"}', 40
    ),
    "the time-sliced server's trigger its pods' shares": (KEDA_QUERIES["time-sliced server"], "{}", 35),
    "the MIG server's trigger its instance": (KEDA_QUERIES["MIG server"], "{}", 50),
    "the queue-depth trigger the waiting requests": (KEDA_QUERIES["queue depth"], "{}", 2),
}


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    folder: Path = tmp_path_factory.mktemp("signals")
    groups = (alerts.recording_rules(), *(alerts.cost_estimate_group(ns, hourly) for ns, hourly in ESTIMATES.items()))
    (folder / "rules.yaml").write_text(yaml.safe_dump(alerts.rule_file(groups, CONFIG.runbook_base_url)))
    queries = {**KEDA_QUERIES, **PANELS}
    tests = [
        {"expr": f"clamp_max(count({expr}), 1)", "eval_time": "5m", "exp_samples": [{"labels": "{}", "value": 1}]}
        for expr in queries.values()
    ] + [
        {"expr": expr, "eval_time": "5m", "exp_samples": [{"labels": labels, "value": value}]}
        for expr, labels, value in VALUES.values()
    ]
    test_file = folder / "test.yaml"
    test_file.write_text(yaml.safe_dump({
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [{
            "interval": "1m",
            "input_series": [{"series": name, "values": f"{value}x10"} for name, value in cluster().items()],
            "promql_expr_test": tests,
        }],
    }, sort_keys=False))
    return run_promtool("test", "rules", str(test_file))


def _failed(result: subprocess.CompletedProcess[str], tested: str) -> bool:
    """promtool names a failed expression test as `expr: <Go-quoted expression>`."""
    output = result.stdout + result.stderr
    assert result.returncode == 0 or "FAILED" in output, output
    return f"expr: {json.dumps(tested)}" in output


@pytest.mark.parametrize("name", [*KEDA_QUERIES, *PANELS])
def test_every_keda_trigger_and_panel_has_data(name: str, evaluated: subprocess.CompletedProcess[str]):
    expr = {**KEDA_QUERIES, **PANELS}[name]
    assert not _failed(evaluated, f"clamp_max(count({expr}), 1)"), evaluated.stdout + evaluated.stderr


@pytest.mark.parametrize("case", VALUES)
def test_utilisation_gives(case: str, evaluated: subprocess.CompletedProcess[str]):
    assert not _failed(evaluated, VALUES[case][0]), evaluated.stdout + evaluated.stderr
