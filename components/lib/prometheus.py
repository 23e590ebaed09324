"""The platform's Prometheus as the other components see it: where it answers, and what gets a chart scraped."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from config.monitoring import (
    TENANT_SCRAPE_BODY_SIZE_LIMIT,
    TENANT_SCRAPE_KEEP_DROPPED_TARGETS,
    TENANT_SCRAPE_LABEL_LIMIT,
    TENANT_SCRAPE_LABEL_NAME_LENGTH_LIMIT,
    TENANT_SCRAPE_LABEL_VALUE_LENGTH_LIMIT,
    TENANT_SCRAPE_SAMPLE_LIMIT,
)
from config.namespaces import MONITORING
from models.kai.metrics import METRICS_SERVICES

# kube-prometheus-stack installed as release `kube-prometheus-stack` in `monitoring`: the release name
# contains the chart name, so its fullname is the release name and the Service `<fullname>-prometheus`.
PROMETHEUS_RELEASE = "kube-prometheus-stack"
PROMETHEUS_URL = f"http://{PROMETHEUS_RELEASE}-prometheus.{MONITORING}.svc:9090"

# What the controllers' charts need to be scraped (their own ServiceMonitors); Prometheus selects
# ServiceMonitors in every namespace. Karpenter's and Kueue's values merge these; KEDA's add labels
# and its webhooks (a test checks they contain these).
CHART_SCRAPE_VALUES: dict[str, dict[str, Any]] = {
    # aws/karpenter-provider-aws v1.14.1 charts/karpenter: ServiceMonitor on the `http-metrics` port (8080).
    "karpenter": {"serviceMonitor": {"enabled": True}},
    # kedacore/charts v2.20.2 keda: operator (scalers' metrics) and metrics server, port `metrics` (8080).
    "keda": {
        "prometheus": {
            "operator": {"enabled": True, "serviceMonitor": {"enabled": True}},
            "metricServer": {"enabled": True, "serviceMonitor": {"enabled": True}},
        }
    },
    # kubernetes-sigs/kueue v0.19.2 charts/kueue: ServiceMonitor on the https metrics port (bearer token),
    # RoleBinding for Prometheus; ClusterQueue quota/usage gauges are opt-in in the manager config.
    "kueue": {"enablePrometheus": True},
}

# --- which exporter wrote a series ------------------------------------------------------------------
# A series' `job` is set by the scrape: prometheus-operator v0.93.0 pkg/prometheus/promcfg.go writes the
# value of the Service's label the ServiceMonitor names in `jobLabel`, or else the Service's name (these
# exporters write no `job` of their own, and the tenants' serving scrape overwrites theirs). A tenant's
# server can name a series like a platform one, so every expression reading the
# platform's exporters selects the exporter's job, on each side of every join.
EXPORTER_JOBS: dict[str, str] = {
    # NVIDIA/gpu-operator v26.7.0 assets/state-dcgm-exporter 0500_service_monitor.yaml jobLabel: app,
    # 0400_service.yaml app: nvidia-dcgm-exporter; the standalone exporter relabels to the same job.
    "dcgm-exporter": "nvidia-dcgm-exporter",
    # kubernetes-sigs/kueue v0.19.2 charts/kueue/templates/prometheus/monitor.yaml: no jobLabel; the
    # Service is `<fullname>-controller-manager-metrics-service`, fullname the release name `kueue`.
    "kueue": "kueue-controller-manager-metrics-service",
    # aws/karpenter-provider-aws v1.14.1 charts/karpenter/templates/service.yaml: Service `karpenter`.
    "karpenter": "karpenter",
    # kedacore/charts v2.20.2 keda/templates/manager/servicemonitor.yaml: jobLabel "" (values.yaml), the
    # operator's Service `operator.name` (keda-operator).
    "keda": "keda-operator",
    # KAI's operator's Services, scraped by components/kai.py's ServiceMonitors (no jobLabel): the scheduler's,
    # the queue-controller's and the binder's (models/kai/metrics.py).
    "kai-scheduler": METRICS_SERVICES["scheduler"].name,
    "kai-queue-controller": METRICS_SERVICES["queue-controller"].name,
    "kai-binder": METRICS_SERVICES["binder"].name,
}
DCGM_JOB = f'job="{EXPORTER_JOBS["dcgm-exporter"]}"'
KUEUE_JOB = f'job="{EXPORTER_JOBS["kueue"]}"'
KARPENTER_JOB = f'job="{EXPORTER_JOBS["karpenter"]}"'
KEDA_JOB = f'job="{EXPORTER_JOBS["keda"]}"'
KAI_QUEUE_CONTROLLER_JOB = f'job="{EXPORTER_JOBS["kai-queue-controller"]}"'
KAI_BINDER_JOB = f'job="{EXPORTER_JOBS["kai-binder"]}"'

# --- what the platform keeps from tenants' pods -----------------------------------------------------
# A tenant (or a compromised model server) writes whatever its /metrics says. Prometheus attaches the
# scrape's target labels first (no honorLabels: a clashing label the pod writes becomes `exported_<name>`),
# then applies metricRelabelings, then counts sampleLimit and the label limits on what is left
# (prometheus/prometheus scrape/scrape.go `mutateSampleLabels`, `relabel.Process`, `sampleLimitErr`;
# prometheus-operator v0.93.0 crd-podmonitors.yaml). So a scrape of tenant pods keeps the named metrics
# only, with their own labels and the target's, and any other label (`hostname`, `gpu`, `UUID`,
# `modelName`, `exported_job`, ...) is dropped before it can pose as a platform series.
POD_MONITOR_TARGET_LABELS = ("job", "instance", "namespace", "pod", "container", "endpoint")


def tenant_scrape_limits() -> dict[str, Any]:
    """A tenant PodMonitor's spec-level limits (prometheus-operator v0.93 crd-podmonitors.yaml) on the body,
    samples, labels and dropped targets, so a pod exposing more fails its own scrape instead of filling
    Prometheus.
    They sit on the platform's PodMonitor, which tenants cannot write; config/monitoring.py sizes them
    and says why Prometheus' enforced* caps are not their home."""
    return {
        "bodySizeLimit": TENANT_SCRAPE_BODY_SIZE_LIMIT,
        "sampleLimit": TENANT_SCRAPE_SAMPLE_LIMIT,
        "labelLimit": TENANT_SCRAPE_LABEL_LIMIT,
        "labelNameLengthLimit": TENANT_SCRAPE_LABEL_NAME_LENGTH_LIMIT,
        "labelValueLengthLimit": TENANT_SCRAPE_LABEL_VALUE_LENGTH_LIMIT,
        "keepDroppedTargets": TENANT_SCRAPE_KEEP_DROPPED_TARGETS,
    }


def tenant_metric_relabelings(kept: Mapping[str, Sequence[str]]) -> list[dict[str, Any]]:
    """metricRelabelings keeping only the metrics of `kept` (name -> the labels it writes) and only those
    labels and the target's: Prometheus anchors each regex at both ends."""
    labels = sorted({"__name__", *POD_MONITOR_TARGET_LABELS, *(label for names in kept.values() for label in names)})
    return [
        {"action": "keep", "sourceLabels": ["__name__"], "regex": "|".join(re.escape(name) for name in sorted(kept))},
        {"action": "labelkeep", "regex": "|".join(labels)},
    ]


# --- GPU series as the GPU Operator's dcgm-exporter writes them -----------------------------------
# NVIDIA/dcgm-exporter internal/pkg/rendermetrics/render_metrics.go (upstream/metrics/dcgm-exporter/):
# every GPU series names its node in `hostname` (renamed from `Hostname` by NVIDIA/dcgm-exporter#655),
# its GPU in `gpu` and `UUID`, and a MIG instance in `GPU_I_ID` and `GPU_I_PROFILE` too.
DCGM_NODE = "hostname"
# One GPU, or one MIG instance of it: the labels that identify a device in every DCGM series.
DCGM_DEVICE = (DCGM_NODE, "gpu", "UUID", "GPU_I_ID", "GPU_I_PROFILE", "modelName")
# kube-state-metrics writes a resource name with `.`, `/` and `-` as `_` (nvidia.com/mig-1g.10gb ->
# nvidia_com_mig_1g_10gb): whole GPUs or time-slices, and every MIG profile of the mixed strategy.
KSM_GPU_RESOURCES = 'resource=~"nvidia_com_gpu|nvidia_com_mig_.+"'


def ksm_resource(resource: str) -> str:
    """A resource name as kube-state-metrics writes it in its `resource` label: `.`, `/`, `-` as `_`."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", resource)
_MIG_INSTANCE = 'GPU_I_PROFILE!=""'


def gpu_busy_percent(selector: str = "") -> str:
    """How busy each GPU or MIG instance is, in percent, as one expression for rules and triggers alike.

    A MIG-enabled GPU reports no DCGM_FI_DEV_GPU_UTIL for its instances (DCGM does not support the field
    in MIG mode), so for every GPU that has MIG instances this takes each instance's
    DCGM_FI_PROF_GR_ENGINE_ACTIVE (a 0-1 ratio, in the exporter's default counters) instead, and leaves
    out whatever utilisation the parent reports. `selector` narrows both (e.g. a namespace and pods).
    """
    narrowed = f"{DCGM_JOB}, {selector}" if selector else DCGM_JOB
    whole = f"DCGM_FI_DEV_GPU_UTIL{{{narrowed}}}"
    mig = f"DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{narrowed}, {_MIG_INSTANCE}}}"
    return (
        f"({whole} unless on ({DCGM_NODE}, gpu) DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{DCGM_JOB}, {_MIG_INSTANCE}}}) "
        f"or 100 * {mig}"
    )
