"""Grafana dashboards as code: Python data in, deterministic JSON (sorted keys) out.

Grafana's dashboard sidecar loads every ConfigMap labelled `grafana_dashboard: "1"` (the label and
value kube-prometheus-stack 88.5.3 sets in grafana.sidecar.dashboards). Node labels come from
kube_node_labels, which kube-state-metrics exports only for the keys allow-listed in the chart values
(see monitoring.NODE_LABELS_ALLOWLIST); DCGM series name their node in `hostname`
(upstream/metrics/dcgm-exporter/render_metrics.go), which the exporter takes from NODE_NAME, the
node's name. Every query's metrics and labels are checked against the metric inventory
(tests/test_inventory.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from config.labels import GPU_MODEL_LABEL, POOL_LABEL

from ..lib.prometheus import DCGM_JOB, DCGM_NODE, KEDA_JOB
from .alerts import (
    COST_ESTIMATE,
    DEVICE_GPU_UTILISATION,
    KUEUE_GPU,
    KUEUE_LEADER,
    NAMESPACE_GPU_REQUESTS,
    NAMESPACE_GPU_UTILISATION,
)

DASHBOARD_LABEL = {"grafana_dashboard": "1"}
DATASOURCE = {"type": "prometheus", "uid": "prometheus"}  # the uid the chart's default datasource gets


def _prom_label(node_label: str) -> str:
    """kube-state-metrics' spelling of a node label: `gpu-platform/node-pool` -> `label_gpu_platform_node_pool`."""
    return "label_" + "".join(ch if ch.isalnum() else "_" for ch in node_label)


POOL = _prom_label(POOL_LABEL)
MODEL = _prom_label(GPU_MODEL_LABEL)
# Each GPU series with its node's pool and model (kube_node_labels names the node `node`).
_NODE_LABELS = f'label_replace(kube_node_labels, "{DCGM_NODE}", "$1", "node", "(.*)")'
_NODE = f"{{{{{DCGM_NODE}}}}}"
# Per GPU, whatever the number of pods sharing it (the exporter writes a copy per pod on time-sliced GPUs).
_GPU_POWER = f"max by ({DCGM_NODE}, gpu) (DCGM_FI_DEV_POWER_USAGE{{{DCGM_JOB}}})"
_GPU_TEMP = f"max by ({DCGM_NODE}, gpu) (DCGM_FI_DEV_GPU_TEMP{{{DCGM_JOB}}})"
_DEVICE = f"{DCGM_NODE}, gpu, GPU_I_ID"


def _by_pool(metric: str, aggregation: str = "avg") -> str:
    return f"{aggregation} by ({POOL}) ({metric} * on ({DCGM_NODE}) group_left ({POOL}, {MODEL}) {_NODE_LABELS})"


@dataclass(frozen=True)
class Panel:
    title: str
    queries: tuple[tuple[str, str], ...]  # (PromQL, legend)
    unit: str = "short"
    kind: str = "timeseries"
    description: str = ""


@dataclass(frozen=True)
class Dashboard:
    uid: str
    title: str
    panels: tuple[Panel, ...]

    @property
    def config_map_name(self) -> str:
        return f"grafana-dashboard-{self.uid}"

    def as_json(self) -> str:
        return json.dumps(dashboard_model(self), sort_keys=True, indent=2)


def dashboards() -> tuple[Dashboard, ...]:
    return (gpu_fleet(), tenant_accounting(), autoscaling())


def gpu_fleet() -> Dashboard:
    """Per node, pool and model; MIG instances count as devices, busy by their graphics-engine activity."""
    memory = f"max by ({_DEVICE}) (DCGM_FI_DEV_FB_%s{{{DCGM_JOB}}})"
    return Dashboard(
        "gpu-fleet",
        "GPU fleet",
        (
            Panel(
                "GPU utilisation by node", ((f"avg by ({DCGM_NODE}) ({DEVICE_GPU_UTILISATION})", _NODE),), "percent"
            ),
            Panel("GPU utilisation by pool", ((_by_pool(DEVICE_GPU_UTILISATION), f"{{{{{POOL}}}}}"),), "percent"),
            Panel(
                "GPU utilisation by model", (("avg by (modelName) (" + DEVICE_GPU_UTILISATION + ")", "{{modelName}}"),),
                "percent",
            ),
            Panel(
                "MIG instance utilisation by profile",
                ((f'avg by (GPU_I_PROFILE) ({DEVICE_GPU_UTILISATION}{{GPU_I_PROFILE!=""}})', "{{GPU_I_PROFILE}}"),),
                "percent",
            ),
            Panel(
                "GPU memory used by node",
                (
                    (
                        f"sum by ({DCGM_NODE}) ({memory % 'USED'}) / "
                        f"sum by ({DCGM_NODE}) ({memory % 'USED'} + {memory % 'FREE'})",
                        _NODE,
                    ),
                ),
                "percentunit",
            ),
            Panel("Power by pool", ((_by_pool(_GPU_POWER, "sum"), f"{{{{{POOL}}}}}"),), "watt"),
            Panel("Temperature by node (hottest GPU)", ((f"max by ({DCGM_NODE}) ({_GPU_TEMP})", _NODE),), "celsius"),
            Panel(
                "GPUs and MIG instances by model",
                ((f"count by (modelName, GPU_I_PROFILE) ({DEVICE_GPU_UTILISATION})", "{{modelName}} {{GPU_I_PROFILE}}"),),
                "short",
                "stat",
            ),
            Panel(
                "Last XID per GPU (non-zero)",
                ((f"max by ({DCGM_NODE}, gpu) (DCGM_FI_DEV_XID_ERRORS{{{DCGM_JOB}}}) > 0", f"{_NODE} GPU {{{{gpu}}}}"),),
                "short",
                "table",
            ),
        ),
    )


# OpenCost's series (upstream/metrics/opencost/metrics.go): GPUs each container holds, and each node's
# price per GPU-hour; scraped with honorLabels, so `namespace` is the workload's.
_GPU_ALLOCATION = 'container_gpu_allocation{container!=""}'
_GPU_COST_PER_HOUR = f"{_GPU_ALLOCATION} * on (node) group_left () max by (node) (node_gpu_hourly_cost)"
# A day's GPU-hours: the allocation sampled every 5 minutes over 24 h, 12 samples an hour.
_DAY = "[24h:5m]"


def tenant_accounting() -> Dashboard:
    quota = 'kube_resourcequota{resource=~"requests.nvidia.com/(gpu|mig-.+)", type="%s"}'
    kueue = f"{KUEUE_LEADER}, {KUEUE_GPU}"
    return Dashboard(
        "gpu-tenants",
        "GPU tenant accounting",
        (
            Panel(
                "GPUs and MIG devices requested by namespace",
                ((f"sum by (namespace, resource) ({NAMESPACE_GPU_REQUESTS})", "{{namespace}} {{resource}}"),),
            ),
            Panel("GPU utilisation by namespace", ((NAMESPACE_GPU_UTILISATION, "{{namespace}}"),), "percent"),
            Panel(
                "Devices used (requested x utilisation) by namespace",
                (
                    (
                        f"sum by (namespace) ({NAMESPACE_GPU_REQUESTS}) * on (namespace) {NAMESPACE_GPU_UTILISATION} / 100",
                        "{{namespace}}",
                    ),
                ),
            ),
            Panel(
                "GPU quota (ResourceQuota) against use",
                (
                    (f"sum by (namespace, resource) ({quota % 'hard'})", "{{namespace}} {{resource}} hard"),
                    (f"sum by (namespace, resource) ({quota % 'used'})", "{{namespace}} {{resource}} used"),
                ),
            ),
            Panel(
                "ClusterQueue GPU usage against nominal quota",
                (
                    (
                        f"sum by (cluster_queue, flavor, resource) (kueue_cluster_queue_resource_usage{{{kueue}}})",
                        "{{cluster_queue}} {{flavor}} {{resource}} used",
                    ),
                    (
                        f"sum by (cluster_queue, flavor, resource) (kueue_cluster_queue_nominal_quota{{{kueue}}})",
                        "{{cluster_queue}} {{flavor}} {{resource}} nominal",
                    ),
                ),
            ),
            Panel(
                "GPU-hours by namespace, last 24 h (OpenCost)",
                ((f"sum by (namespace) (sum_over_time({_GPU_ALLOCATION}{_DAY})) / 12", "{{namespace}}"),),
            ),
            Panel(
                "GPU cost per hour by namespace: OpenCost against the render's estimate",
                (
                    (f"sum by (namespace) ({_GPU_COST_PER_HOUR})", "{{namespace}} measured (OpenCost)"),
                    (f"sum by (namespace) ({COST_ESTIMATE})", "{{namespace}} estimate (guaranteed quota, on-demand)"),
                ),
                "currencyUSD",
                description="Measured: the GPUs each namespace's containers hold at their node's OpenCost price "
                "per GPU-hour. Estimate: the tenant's guaranteed quota at on-demand prices, from the stack config "
                "(summary.md, Tenants).",
            ),
            Panel(
                "GPU cost by namespace, last 24 h (OpenCost)",
                ((f"sum by (namespace) (sum_over_time(({_GPU_COST_PER_HOUR}){_DAY})) / 12", "{{namespace}}"),),
                "currencyUSD",
            ),
            Panel(
                "Pending workloads by ClusterQueue",
                (
                    (
                        f"sum by (cluster_queue, status) (kueue_pending_workloads{{{KUEUE_LEADER}}})",
                        "{{cluster_queue}} {{status}}",
                    ),
                ),
            ),
        ),
    )


def autoscaling() -> Dashboard:
    hpa = 'kube_horizontalpodautoscaler_%s{horizontalpodautoscaler=~"keda-hpa-.+"}'
    return Dashboard(
        "gpu-autoscaling",
        "GPU inference autoscaling",
        (
            Panel(
                "Replicas: current, desired, max",
                (
                    (
                        f"sum by (namespace, horizontalpodautoscaler) ({hpa % 'status_current_replicas'})",
                        "{{namespace}}/{{horizontalpodautoscaler}} current",
                    ),
                    (
                        f"sum by (namespace, horizontalpodautoscaler) ({hpa % 'status_desired_replicas'})",
                        "{{namespace}}/{{horizontalpodautoscaler}} desired",
                    ),
                    (
                        f"sum by (namespace, horizontalpodautoscaler) ({hpa % 'spec_max_replicas'})",
                        "{{namespace}}/{{horizontalpodautoscaler}} max",
                    ),
                ),
            ),
            Panel(
                "Trigger values",
                (
                    (
                        f"sum by (exported_namespace, scaledObject, metric) (keda_scaler_metrics_value{{{KEDA_JOB}}})",
                        "{{exported_namespace}}/{{scaledObject}} {{metric}}",
                    ),
                ),
            ),
            Panel(
                "Trigger targets",
                (
                    (
                        f"sum by (namespace, horizontalpodautoscaler, metric_name) ({hpa % 'spec_target_metric'})",
                        "{{namespace}}/{{horizontalpodautoscaler}} {{metric_name}}",
                    ),
                ),
            ),
            Panel(
                "Scaler errors",
                (
                    (
                        "sum by (exported_namespace, scaledObject, scaler) "
                        f"(rate(keda_scaler_detail_errors_total{{{KEDA_JOB}}}[5m]))",
                        "{{exported_namespace}}/{{scaledObject}} {{scaler}}",
                    ),
                ),
                "ops",
            ),
        ),
    )


def dashboard_model(dashboard: Dashboard) -> dict[str, Any]:
    """Grafana's dashboard JSON model: two panels a row, each 12 columns by 8 rows."""
    panels = []
    for index, panel in enumerate(dashboard.panels):
        panels.append(
            {
                "id": index + 1,
                "type": panel.kind,
                "title": panel.title,
                "description": panel.description,
                "datasource": DATASOURCE,
                "gridPos": {"h": 8, "w": 12, "x": 12 * (index % 2), "y": 8 * (index // 2)},
                "fieldConfig": {"defaults": {"unit": panel.unit}, "overrides": []},
                "targets": [
                    {"refId": chr(ord("A") + i), "expr": expr, "legendFormat": legend, "datasource": DATASOURCE}
                    for i, (expr, legend) in enumerate(panel.queries)
                ],
            }
        )
    return {
        "uid": dashboard.uid,
        "title": dashboard.title,
        "tags": ["gpu-platform"],
        "timezone": "utc",
        "schemaVersion": 39,
        "editable": False,
        "refresh": "1m",
        "time": {"from": "now-6h", "to": "now"},
        "panels": panels,
    }


def dashboard_queries(dashboard: Dashboard) -> list[str]:
    return [expr for panel in dashboard.panels for expr, _ in panel.queries]


def dashboard_config_map(dashboard: Dashboard, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": dashboard.config_map_name, "namespace": namespace, "labels": dict(DASHBOARD_LABEL)},
        "data": {f"{dashboard.uid}.json": dashboard.as_json()},
    }
