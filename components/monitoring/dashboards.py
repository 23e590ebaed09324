"""Grafana dashboards as code: Python data in, deterministic JSON (sorted keys) out.

Grafana's dashboard sidecar loads every ConfigMap labelled `grafana_dashboard: "1"` (the label and
value kube-prometheus-stack 88.5.3 sets in grafana.sidecar.dashboards). Node labels come from
kube_node_labels, which kube-state-metrics exports only for the keys allow-listed in the chart values
(see monitoring.NODE_LABELS_ALLOWLIST); DCGM series name their node in `Hostname`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from config.labels import GPU_MODEL_LABEL, GPU_RESOURCE, POOL_LABEL

from .alerts import NAMESPACE_GPU_UTILISATION, NAMESPACE_GPUS_ALLOCATED

DASHBOARD_LABEL = {"grafana_dashboard": "1"}
DATASOURCE = {"type": "prometheus", "uid": "prometheus"}  # the uid the chart's default datasource gets


def _prom_label(node_label: str) -> str:
    """kube-state-metrics' spelling of a node label: `gpu-platform/node-pool` -> `label_gpu_platform_node_pool`."""
    return "label_" + "".join(ch if ch.isalnum() else "_" for ch in node_label)


POOL = _prom_label(POOL_LABEL)
MODEL = _prom_label(GPU_MODEL_LABEL)
# Each GPU series with its node's pool and model (kube_node_labels names the node `node`).
_NODE_LABELS = 'label_replace(kube_node_labels, "Hostname", "$1", "node", "(.*)")'


def _by_pool(metric: str, aggregation: str = "avg") -> str:
    return f"{aggregation} by ({POOL}) ({metric} * on (Hostname) group_left ({POOL}, {MODEL}) {_NODE_LABELS})"


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
    return Dashboard(
        "gpu-fleet",
        "GPU fleet",
        (
            Panel("GPU utilisation by node", (("avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL)", "{{Hostname}}"),), "percent"),
            Panel("GPU utilisation by pool", ((_by_pool("DCGM_FI_DEV_GPU_UTIL"), f"{{{{{POOL}}}}}"),), "percent"),
            Panel("GPU utilisation by model", (("avg by (modelName) (DCGM_FI_DEV_GPU_UTIL)", "{{modelName}}"),), "percent"),
            Panel(
                "GPU memory used by node",
                (
                    (
                        "sum by (Hostname) (DCGM_FI_DEV_FB_USED) / sum by (Hostname) (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE)",
                        "{{Hostname}}",
                    ),
                ),
                "percentunit",
            ),
            Panel("Power by pool", ((_by_pool("DCGM_FI_DEV_POWER_USAGE", "sum"), f"{{{{{POOL}}}}}"),), "watt"),
            Panel(
                "Temperature by node (hottest GPU)", (("max by (Hostname) (DCGM_FI_DEV_GPU_TEMP)", "{{Hostname}}"),), "celsius"
            ),
            Panel("GPUs by model", (("count by (modelName) (DCGM_FI_DEV_GPU_UTIL)", "{{modelName}}"),), "short", "stat"),
            Panel("XID errors", (("DCGM_FI_DEV_XID_ERRORS > 0", "{{Hostname}} GPU {{gpu}}"),), "short", "table"),
        ),
    )


def tenant_accounting() -> Dashboard:
    quota = f'kube_resourcequota{{resource="requests.{GPU_RESOURCE}", type="%s"}}'
    return Dashboard(
        "gpu-tenants",
        "GPU tenant accounting",
        (
            Panel("GPUs allocated by namespace", ((NAMESPACE_GPUS_ALLOCATED, "{{namespace}}"),)),
            Panel("GPU utilisation by namespace", ((NAMESPACE_GPU_UTILISATION, "{{namespace}}"),), "percent"),
            Panel(
                "GPUs used (allocated x utilisation) by namespace",
                ((f"{NAMESPACE_GPUS_ALLOCATED} * on (namespace) {NAMESPACE_GPU_UTILISATION} / 100", "{{namespace}}"),),
            ),
            Panel(
                "GPU quota (ResourceQuota) against use",
                (
                    (f"sum by (namespace) ({quota % 'hard'})", "{{namespace}} hard"),
                    (f"sum by (namespace) ({quota % 'used'})", "{{namespace}} used"),
                ),
            ),
            Panel(
                "ClusterQueue GPU usage against nominal quota",
                (
                    (
                        f'sum by (cluster_queue, flavor) (kueue_cluster_queue_resource_usage{{resource="{GPU_RESOURCE}"}})',
                        "{{cluster_queue}} {{flavor}} used",
                    ),
                    (
                        f'sum by (cluster_queue, flavor) (kueue_cluster_queue_nominal_quota{{resource="{GPU_RESOURCE}"}})',
                        "{{cluster_queue}} {{flavor}} nominal",
                    ),
                ),
            ),
            Panel(
                "Pending workloads by ClusterQueue",
                (("sum by (cluster_queue, status) (kueue_pending_workloads)", "{{cluster_queue}} {{status}}"),),
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
                        "sum by (exported_namespace, scaledObject, metric) (keda_scaler_metrics_value)",
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
                        "sum by (exported_namespace, scaledObject, scaler) (rate(keda_scaler_detail_errors_total[5m]))",
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
