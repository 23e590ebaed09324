"""Alerting and recording rules as data, and the PrometheusRule objects built from them.

Every metric name and label here was read upstream at the version the platform pins:
- DCGM: NVIDIA/dcgm-exporter 4.5.3-4.8.2, etc/dcp-metrics-included.csv (the file the GPU Operator's
  exporter loads, DCGM_EXPORTER_COLLECTORS in assets/state-dcgm-exporter/0800_daemonset.yaml) and
  internal/pkg/transformation/const.go (`pod`, `namespace`, `container` of the GPU's workload).
  DCGM_FI_DEV_ECC_DBE_VOL_TOTAL is commented out there, so uncorrectable memory errors are watched
  through the row-remapping fields (Ampere and newer), which are on.
- kube-state-metrics (chart 8.4.0): kube_pod_container_resource_requests{resource="nvidia_com_gpu"},
  kube_pod_status_phase.
- Karpenter v1.14: kubernetes-sigs/karpenter pkg/controllers/metrics/nodepool/controller.go,
  karpenter_nodepools_{usage,limit}{nodepool, resource_type} (resource_type is the resource name).
- Kueue v0.19: pkg/metrics/metrics.go, kueue_pending_workloads{cluster_queue, status},
  kueue_admitted_workloads_total, kueue_cluster_queue_{resource_usage,nominal_quota}{cluster_queue,
  flavor, resource} (the last two only with `metrics.enableClusterQueueResources: true`).
- KEDA v2.20: pkg/metricscollector/prommetrics.go, keda_scaler_detail_errors_total{namespace,
  scaledObject, scaler, ...}; scraped without honorLabels, its `namespace` arrives as `exported_namespace`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from config.labels import GPU_RESOURCE

# --- recording rules other code reads ---------------------------------------------------------
# Dashboards and the KEDA scalers query these names; renaming one breaks them.
NAMESPACE_GPU_UTILISATION = "namespace:dcgm_gpu_utilization:avg"
POD_GPU_UTILISATION = "namespace_pod:dcgm_gpu_utilization:avg"
NAMESPACE_GPUS_ALLOCATED = "namespace:gpu_allocated:sum"

# The runbooks live beside this code; the annotation names the file and section in this repository.
RUNBOOK_BASE = "docs/runbooks.md"
SEVERITIES = ("critical", "warning", "info")

# GPUs requested by running pods, as kube-state-metrics spells the resource (`.` and `/` become `_`).
_GPU_REQUESTS = 'kube_pod_container_resource_requests{resource="nvidia_com_gpu"}'
_RUNNING = 'kube_pod_status_phase{phase="Running"} == 1'
# A GPU's series carries its workload's namespace and pod only while one holds it (honorLabels on the
# exporter's ServiceMonitor); joining with requests drops GPUs that belong to no running pod.
_GPU_UTIL_OF_WORKLOADS = f"DCGM_FI_DEV_GPU_UTIL and on (namespace, pod) ({_GPU_REQUESTS} > 0)"


@dataclass(frozen=True)
class RecordingRule:
    record: str
    expr: str

    def as_rule(self) -> dict[str, Any]:
        return {"record": self.record, "expr": self.expr}


@dataclass(frozen=True)
class AlertRule:
    """One alert: what fires, for how long, how bad, and what the person paged reads first."""

    name: str
    expr: str
    severity: str
    summary: str
    description: str
    for_: str = "0m"

    @property
    def runbook_url(self) -> str:
        return f"{RUNBOOK_BASE}#{self.name.lower()}"

    def as_rule(self) -> dict[str, Any]:
        rule: dict[str, Any] = {"alert": self.name, "expr": self.expr}
        if self.for_ != "0m":
            rule["for"] = self.for_
        rule["labels"] = {"severity": self.severity}
        rule["annotations"] = {
            "summary": self.summary,
            "description": self.description,
            "runbook_url": self.runbook_url,
        }
        return rule


@dataclass(frozen=True)
class RuleGroup:
    name: str
    rules: tuple[RecordingRule | AlertRule, ...]

    def as_group(self) -> dict[str, Any]:
        return {"name": self.name, "rules": [rule.as_rule() for rule in self.rules]}


def recording_rules() -> RuleGroup:
    """Per-tenant GPU use: the numbers dashboards and scalers share."""
    return RuleGroup(
        "gpu-platform.recording",
        (
            RecordingRule(POD_GPU_UTILISATION, f"avg by (namespace, pod) ({_GPU_UTIL_OF_WORKLOADS})"),
            RecordingRule(NAMESPACE_GPU_UTILISATION, f"avg by (namespace) ({_GPU_UTIL_OF_WORKLOADS})"),
            RecordingRule(
                NAMESPACE_GPUS_ALLOCATED,
                f"sum by (namespace) ({_GPU_REQUESTS} and on (namespace, pod) ({_RUNNING}))",
            ),
        ),
    )


def alert_groups(idle_gpu_hours: int) -> tuple[RuleGroup, ...]:
    """Every alert, grouped by what it watches. `idle_gpu_hours` comes from `monitoring.idleGpuHours`."""
    gpus = RuleGroup(
        "gpu-platform.gpus",
        (
            AlertRule(
                "HighGPUUtilization",
                "avg(DCGM_FI_DEV_GPU_UTIL) > 90",
                "warning",
                "GPU fleet above 90% utilisation",
                "Average utilisation over every GPU has been {{ $value | humanize }}% for 5 minutes: "
                "new work will queue; check pool limits and tenant quotas.",
                "5m",
            ),
            AlertRule(
                "GPUMemoryPressure",
                "DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE) > 0.9",
                "warning",
                "GPU memory above 90% on {{ $labels.Hostname }} GPU {{ $labels.gpu }}",
                "Framebuffer use is {{ $value | humanizePercentage }} on GPU {{ $labels.gpu }} of {{ $labels.Hostname }} "
                "(pod {{ $labels.namespace }}/{{ $labels.pod }}); the workload is close to CUDA out-of-memory.",
                "2m",
            ),
            AlertRule(
                "GPUXidError",
                "DCGM_FI_DEV_XID_ERRORS > 0",
                "warning",
                "XID {{ $value }} on {{ $labels.Hostname }} GPU {{ $labels.gpu }}",
                "The NVIDIA driver reported XID {{ $value }} on GPU {{ $labels.gpu }} of {{ $labels.Hostname }} "
                "(pod {{ $labels.namespace }}/{{ $labels.pod }}). 13/31/43 are usually the application's; "
                "48, 63, 64, 74, 79, 94, 95 point at the hardware.",
            ),
            AlertRule(
                "GPUTemperatureHigh",
                "DCGM_FI_DEV_GPU_TEMP > 85",
                "warning",
                "GPU at {{ $value }}°C on {{ $labels.Hostname }}",
                "GPU {{ $labels.gpu }} of {{ $labels.Hostname }} has been above 85°C for 10 minutes; it throttles "
                "its clocks and may shut down.",
                "10m",
            ),
            AlertRule(
                "GPURowRemapFailure",
                "DCGM_FI_DEV_ROW_REMAP_FAILURE > 0",
                "critical",
                "GPU memory row remapping failed on {{ $labels.Hostname }}",
                "GPU {{ $labels.gpu }} ({{ $labels.UUID }}) of {{ $labels.Hostname }} could not remap a failing memory "
                "row: its memory is no longer reliable. Drain the node and replace the instance.",
            ),
            AlertRule(
                "GPUUncorrectableMemoryErrors",
                "increase(DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS[1h]) > 0",
                "warning",
                "Uncorrectable GPU memory errors on {{ $labels.Hostname }}",
                "GPU {{ $labels.gpu }} of {{ $labels.Hostname }} remapped rows after uncorrectable (double-bit) ECC "
                "errors in the last hour; the remap takes effect after a GPU reset.",
            ),
        ),
    )
    capacity = RuleGroup(
        "gpu-platform.capacity",
        (
            AlertRule(
                "GPUsAllocatedButIdle",
                f"{POD_GPU_UTILISATION} < 1",
                "info",
                "Idle GPUs held by {{ $labels.namespace }}/{{ $labels.pod }}",
                f"Pod {{{{ $labels.pod }}}} in {{{{ $labels.namespace }}}} holds GPUs it has not used (below 1% "
                f"utilisation) for {idle_gpu_hours}h: capacity other tenants are waiting for.",
                f"{idle_gpu_hours}h",
            ),
            AlertRule(
                "NodePoolAtGPULimit",
                f'max by (nodepool) (karpenter_nodepools_usage{{resource_type="{GPU_RESOURCE}"}}) '
                f'>= max by (nodepool) (karpenter_nodepools_limit{{resource_type="{GPU_RESOURCE}"}})',
                "warning",
                "NodePool {{ $labels.nodepool }} is at its GPU limit",
                "Karpenter has provisioned every GPU NodePool {{ $labels.nodepool }} may have; pending GPU pods "
                "stay pending until capacity frees up or nodePools[].gpus is raised.",
                "15m",
            ),
            AlertRule(
                "KueueWorkloadsPendingTooLong",
                "sum by (cluster_queue) (kueue_pending_workloads) > 0 "
                "unless on (cluster_queue) sum by (cluster_queue) (increase(kueue_admitted_workloads_total[30m])) > 0",
                "warning",
                "ClusterQueue {{ $labels.cluster_queue }} admitted nothing for 30 minutes",
                "{{ $value }} workloads are pending in ClusterQueue {{ $labels.cluster_queue }} and none was admitted "
                "in the last 30 minutes.",
                "30m",
            ),
            AlertRule(
                "ClusterQueueAtGPUQuota",
                f'sum by (cluster_queue, flavor) (kueue_cluster_queue_resource_usage{{resource="{GPU_RESOURCE}"}}) '
                f'>= sum by (cluster_queue, flavor) (kueue_cluster_queue_nominal_quota{{resource="{GPU_RESOURCE}"}} > 0)',
                "info",
                "ClusterQueue {{ $labels.cluster_queue }} uses its whole {{ $labels.flavor }} GPU quota",
                "Tenant {{ $labels.cluster_queue }} has used its nominal GPU quota in flavor {{ $labels.flavor }} for "
                "an hour; further work borrows or waits.",
                "1h",
            ),
        ),
    )
    autoscaling = RuleGroup(
        "gpu-platform.autoscaling",
        (
            AlertRule(
                "KedaScalerErrors",
                "sum by (exported_namespace, scaledObject, scaler) (rate(keda_scaler_detail_errors_total[5m])) > 0",
                "warning",
                "KEDA scaler {{ $labels.scaler }} of {{ $labels.exported_namespace }}/{{ $labels.scaledObject }} is failing",
                "KEDA cannot read the trigger of {{ $labels.exported_namespace }}/{{ $labels.scaledObject }}; after "
                "its failure threshold it holds the fallback replica count instead of scaling.",
                "10m",
            ),
        ),
    )
    return (gpus, capacity, autoscaling)


def all_groups(idle_gpu_hours: int) -> tuple[RuleGroup, ...]:
    return (recording_rules(), *alert_groups(idle_gpu_hours))


def alerts(idle_gpu_hours: int) -> list[AlertRule]:
    return [rule for group in alert_groups(idle_gpu_hours) for rule in group.rules if isinstance(rule, AlertRule)]


def rule_file(groups: Sequence[RuleGroup]) -> dict[str, Any]:
    """The groups as a Prometheus rule file (what `promtool check rules` reads)."""
    return {"groups": [group.as_group() for group in groups]}


def prometheus_rule(name: str, namespace: str, groups: Sequence[RuleGroup]) -> dict[str, Any]:
    """A monitoring.coreos.com/v1 PrometheusRule holding `groups`."""
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app.kubernetes.io/part-of": "gpu-platform"}},
        "spec": rule_file(groups),
    }


def check_promql(expr: str) -> None:
    """Raise ValueError naming the expression when `expr` is not valid PromQL.

    For every module that writes PromQL (rules, dashboards, KEDA triggers): call it in a test.
    promql-parser is a test dependency (requirements-dev.txt), hence the import here.
    """
    import promql_parser

    try:
        promql_parser.parse(expr)
    except ValueError as err:
        raise ValueError(f"invalid PromQL {expr!r}: {err}") from None
