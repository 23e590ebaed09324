"""Alerting and recording rules as data, and the PrometheusRule objects built from them.

Every metric name and label here is in the metric inventory (upstream/metrics-inventory.json, generated
from the exporters' own files in upstream/metrics/ at the pinned versions); tests/test_inventory.py
checks each expression against it. The files each rule relies on:
- dcgm-exporter (upstream/metrics/dcgm-exporter/: etc/dcp-metrics-included.csv, the counters the GPU
  Operator's exporter loads; internal/pkg/rendermetrics/render_metrics.go, the labels; and
  internal/pkg/transformation/const.go, `pod`, `namespace`, `container` of the GPU's workload).
  DCGM_FI_DEV_ECC_DBE_VOL_TOTAL is commented out there, so uncorrectable memory errors are watched
  through the row-remapping fields (Ampere and newer), which are on. With KUBERNETES_VIRTUAL_GPUS (set
  for time-sliced pools, components/gpu_operator.py) the exporter writes a copy of each device series
  per pod sharing the GPU (internal/pkg/transformation/kubernetes.go, Process): per-device rules take
  the `max` over the copies.
- kube-state-metrics (upstream/metrics/kube-state-metrics/, docs/metrics/*.md):
  kube_pod_container_resource_requests, kube_pod_status_phase, kube_pod_owner, kube_replicaset_owner,
  kube_horizontalpodautoscaler_*.
- Karpenter (upstream/metrics/karpenter/, pkg/controllers/metrics/nodepool/controller.go):
  karpenter_nodepools_{usage,limit}{nodepool, resource_type}.
- Kueue (upstream/metrics/kueue/, pkg/metrics/metrics.go): kueue_pending_workloads,
  kueue_admitted_workloads_total, kueue_cluster_queue_{resource_usage,nominal_quota}; every series has
  `replica_role` (pkg/util/roletracker: `leader`, `follower`, `standalone`), and each of the manager's
  replicas exports the gauges, so rules read the leader's (or a standalone manager's) only.
- KEDA (upstream/metrics/keda/, pkg/metricscollector/prommetrics.go): keda_scaler_detail_errors_total,
  keda_scaler_empty_upstream_responses_total; scraped without honorLabels, their `namespace` arrives
  as `exported_namespace`.
- KAI's queue-controller (upstream/metrics/kai-queue-controller/, pkg/queuecontroller/metrics/metrics.go):
  kai_queue_{deserved,allocated}_gpus{queue_name}; KAI's binder (upstream/metrics/kai-binder/, controller-runtime
  v0.23.3 pkg/internal/controller/metrics/metrics.go): controller_runtime_reconcile_errors_total{controller};
  and Prometheus' own `up` of each KAI controller's scrape (models/kai/metrics.py names the Services,
  components/kai.py scrapes them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from config import namespaces
from config.labels import GPU_RESOURCE, device_class_resource
from config.monitoring import MonitoringConfig
from models.kai import metrics as kai_metrics
from models.kai.constants import SYSTEM_NAMESPACE as KAI_NAMESPACE

from ..lib.prometheus import (
    DCGM_DEVICE,
    DCGM_JOB,
    DCGM_NODE,
    KAI_BINDER_JOB,
    KAI_QUEUE_CONTROLLER_JOB,
    KARPENTER_JOB,
    KEDA_JOB,
    KSM_GPU_RESOURCES,
    KUEUE_JOB,
    gpu_busy_percent,
    ksm_resource,
)

# --- recording rules other code reads ---------------------------------------------------------
# Dashboards query these names; renaming one breaks them.
DEVICE_GPU_UTILISATION = "device:dcgm_gpu_utilization:max"
NAMESPACE_GPU_UTILISATION = "namespace:dcgm_gpu_utilization:avg"
POD_GPU_UTILISATION = "namespace_pod:dcgm_gpu_utilization:avg"
NAMESPACE_GPU_REQUESTS = "namespace_resource:gpu_requests:sum"
PODS_AT_MIN_REPLICAS = "namespace_pod:autoscaled_at_min_replicas:max"
# The render's estimate of a tenant's GPU cost per hour (TenantPlan.guaranteed_hourly_cost), one rule
# per tenant so that adding a tenant adds a rule and changes no other object.
COST_ESTIMATE = "namespace:gpu_quota_cost_estimate:hourly"

SEVERITIES = ("critical", "warning", "info")

# One GPU (device-level fields: temperature, XIDs, row remapping) and one GPU or MIG instance (fields a
# MIG instance reports for itself: utilisation, framebuffer).
_GPU = ", ".join(label for label in DCGM_DEVICE if not label.startswith("GPU_I_"))
_DEVICE = ", ".join(DCGM_DEVICE)
# GPUs and MIG devices requested by running pods, as kube-state-metrics spells the resources.
_GPU_REQUESTS = f"kube_pod_container_resource_requests{{{KSM_GPU_RESOURCES}}}"
_RUNNING = 'kube_pod_status_phase{phase="Running"} == 1'
# A GPU's series carries its workload's namespace and pod only while one holds it (honorLabels on the
# exporter's ServiceMonitor; otherwise the scrape's own namespace and pod, the exporter's, which request
# no GPU); joining with requests keeps the GPUs of workloads only. A DRA pod requests no extended
# resource: kube-state-metrics names it by its ResourceClaims instead (kube_pod_resourceclaim_info, 2.20.0).
_BUSY_OF_WORKLOADS = f"({gpu_busy_percent()}) and on (namespace, pod) ({_GPU_REQUESTS} > 0 or kube_pod_resourceclaim_info)"
# Kueue's leader (or its only, standalone manager); followers export the same gauges.
KUEUE_LEADER = f'{KUEUE_JOB}, replica_role=~"leader|standalone"'
# The NodePool limits that bound GPU pools (config/advertised.py): NVIDIA resources, or nodes for DRA pools.
POOL_GPU_LIMITS = 'resource_type=~"nvidia.com/.+|nodes"'
# Kueue names resources as Kubernetes does: whole GPUs and the mixed strategy's MIG profiles, and DRA
# devices under the quota resource each DeviceClass is mapped to (components/queueing.py): the driver's
# classes and every administrator's (gpu.dra.deviceClasses), hence any class's resource.
_KUEUE_GPU_RESOURCES = (GPU_RESOURCE, "nvidia.com/mig-.+", device_class_resource(".+"))
KUEUE_GPU = f'resource=~"{"|".join(_KUEUE_GPU_RESOURCES)}"'
# vLLM reserves gpu_memory_utilization (0.9 by default: vllm/config/cache.py at v0.11.0) of a GPU's memory
# when it starts, so a healthy replica sits at ~91% of used + free; pressure is less than 3% left.
MEMORY_PRESSURE_RATIO = 0.97
# How long after the exporter's last-XID gauge changes the XID alert keeps firing.
XID_WINDOW = "15m"

@dataclass(frozen=True)
class RecordingRule:
    record: str
    expr: str
    labels: tuple[tuple[str, str], ...] = ()  # set on every series the rule records

    def as_rule(self) -> dict[str, Any]:
        rule: dict[str, Any] = {"record": self.record, "expr": self.expr}
        if self.labels:
            rule["labels"] = dict(self.labels)
        return rule


@dataclass(frozen=True)
class AlertRule:
    """One alert: what fires, for how long, how bad, what the person paged reads first, and (for the
    summary) what it watches and when it stays quiet."""

    name: str
    expr: str
    severity: str
    summary: str
    description: str
    for_: str = "0m"
    watches: str = ""
    quiet: str = ""

    def runbook_url(self, base_url: str) -> str:
        return f"{base_url}#{self.name.lower()}"

    def as_rule(self, runbook_base_url: str) -> dict[str, Any]:
        rule: dict[str, Any] = {"alert": self.name, "expr": self.expr}
        if self.for_ != "0m":
            rule["for"] = self.for_
        rule["labels"] = {"severity": self.severity}
        rule["annotations"] = {
            "summary": self.summary,
            "description": self.description,
            "runbook_url": self.runbook_url(runbook_base_url),
        }
        return rule


@dataclass(frozen=True)
class RuleGroup:
    name: str
    rules: tuple[RecordingRule | AlertRule, ...]

    def as_group(self, runbook_base_url: str) -> dict[str, Any]:
        rules = [
            rule.as_rule(runbook_base_url) if isinstance(rule, AlertRule) else rule.as_rule() for rule in self.rules
        ]
        return {"name": self.name, "rules": rules}


def dra_requests(claims: Mapping[tuple[str, str], Mapping[str, int]]) -> list[str]:
    """The devices running pods hold through ResourceClaimTemplates, as series like kube-state-metrics' requests.

    `claims`: (namespace, ResourceClaimTemplate) -> what Kueue charges a pod using it (config/claims.py
    claim_charge). A DRA pod requests no extended resource; kube-state-metrics lists each of its claims
    (kube_pod_resourceclaim_info, with the template it came from), and the template says how many devices
    of which class each claim holds. The resource is spelled as kube-state-metrics spells a resource.
    """
    terms = []
    for (namespace, template), charge in sorted(claims.items()):
        claims_of = (
            "count by (namespace, pod, resourceclaim_template_name) "
            f'(kube_pod_resourceclaim_info{{namespace="{namespace}", resourceclaim_template_name="{template}"}} '
            f"and on (namespace, pod) ({_RUNNING}))"
        )
        for resource, count in sorted(charge.items()):
            terms.append(f'label_replace({claims_of}, "resource", "{ksm_resource(resource)}", "", "") * {count}')
    return terms


def recording_rules(claims: Mapping[tuple[str, str], Mapping[str, int]] | None = None) -> RuleGroup:
    """GPU use per device, pod and tenant: the numbers dashboards and alerts share.

    `claims`: the DRA claim templates' charges (`dra_requests`), counted in the tenant's GPU requests.
    """
    hpa = "kube_horizontalpodautoscaler_%s"
    # Deployments their HPA (KEDA's) holds at minReplicas, named as `deployment`...
    at_minimum = (
        f"({hpa % 'status_current_replicas'} <= on (namespace, horizontalpodautoscaler) {hpa % 'spec_min_replicas'}) "
        f"* on (namespace, horizontalpodautoscaler) group_left (scaletargetref_name) "
        f'{hpa % "info"}{{scaletargetref_kind="Deployment"}}'
    )
    # ...and each pod with the Deployment that owns its ReplicaSet.
    pod_deployment = (
        'label_replace(kube_pod_owner{owner_kind="ReplicaSet"}, "replicaset", "$1", "owner_name", "(.*)") '
        "* on (namespace, replicaset) group_left (deployment) "
        'label_replace(kube_replicaset_owner{owner_kind="Deployment"}, "deployment", "$1", "owner_name", "(.*)")'
    )
    return RuleGroup(
        "gpu-platform.recording",
        (
            # One series per GPU or MIG instance, whatever the number of pods sharing it.
            RecordingRule(DEVICE_GPU_UTILISATION, f"max by ({_DEVICE}) ({gpu_busy_percent()})"),
            RecordingRule(POD_GPU_UTILISATION, f"avg by (namespace, pod) ({_BUSY_OF_WORKLOADS})"),
            RecordingRule(NAMESPACE_GPU_UTILISATION, f"avg by (namespace) ({_BUSY_OF_WORKLOADS})"),
            RecordingRule(
                NAMESPACE_GPU_REQUESTS,
                "sum by (namespace, resource) ("
                + " or ".join([f"({_GPU_REQUESTS} and on (namespace, pod) ({_RUNNING}))", *dra_requests(claims or {})])
                + ")",
            ),
            RecordingRule(
                PODS_AT_MIN_REPLICAS,
                f"max by (namespace, pod) (({pod_deployment}) and on (namespace, deployment) "
                f'label_replace({at_minimum}, "deployment", "$1", "scaletargetref_name", "(.*)"))',
            ),
        ),
    )


def cost_estimate_group(namespace: str, hourly: float) -> RuleGroup:
    """The tenant's estimate as a constant series labelled with its namespace."""
    return RuleGroup(
        f"gpu-platform.cost-estimate.{namespace}",
        (RecordingRule(COST_ESTIMATE, f"vector({hourly:.4f})", (("namespace", namespace),)),),
    )


def alert_groups(config: MonitoringConfig) -> tuple[RuleGroup, ...]:
    """Every alert, grouped by what it watches (`monitoring.idleGpuHours` sets the idle alert's wait)."""
    idle_gpu_hours = config.idle_gpu_hours
    node = f"{{{{ $labels.{DCGM_NODE} }}}}"
    gpus = RuleGroup(
        "gpu-platform.gpus",
        (
            AlertRule(
                "HighGPUUtilization",
                f"avg({DEVICE_GPU_UTILISATION}) > 90",
                "warning",
                "GPU fleet above 90% utilisation",
                "Average utilisation over every GPU and MIG instance has been {{ $value | humanize }}% for 5 minutes: "
                "new work will queue; check pool limits and tenant quotas.",
                "5m",
                watches="average utilisation of every GPU and MIG instance (MIG instances by graphics-engine activity)",
                quiet="while the fleet averages 90% or less; with no GPU series at all it has nothing to average",
            ),
            AlertRule(
                "GPUMemoryPressure",
                f"max by ({_DEVICE}) (DCGM_FI_DEV_FB_USED{{{DCGM_JOB}}}) "
                f"/ (max by ({_DEVICE}) (DCGM_FI_DEV_FB_USED{{{DCGM_JOB}}}) "
                f"+ max by ({_DEVICE}) (DCGM_FI_DEV_FB_FREE{{{DCGM_JOB}}})) > {MEMORY_PRESSURE_RATIO}",
                "warning",
                f"GPU memory above {MEMORY_PRESSURE_RATIO:.0%} on {node} GPU {{{{ $labels.gpu }}}}",
                f"Framebuffer use is {{{{ $value | humanizePercentage }}}} on GPU {{{{ $labels.gpu }}}} "
                f"{{{{ $labels.GPU_I_PROFILE }}}} of {node}; its workload is close to CUDA out-of-memory.",
                "10m",
                watches=f"framebuffer used / (used + free) of each GPU or MIG instance, above {MEMORY_PRESSURE_RATIO}",
                quiet="on a vLLM replica, which reserves 90% of its GPU's memory (gpu_memory_utilization) and stays below",
            ),
            AlertRule(
                "GPUXidError",
                f"max by ({_GPU}) (DCGM_FI_DEV_XID_ERRORS{{{DCGM_JOB}}} > 0 "
                f"and changes(DCGM_FI_DEV_XID_ERRORS{{{DCGM_JOB}}}[{XID_WINDOW}]) > 0)",
                "warning",
                f"XID {{{{ $value }}}} on {node} GPU {{{{ $labels.gpu }}}}",
                f"The NVIDIA driver reported XID {{{{ $value }}}} on GPU {{{{ $labels.gpu }}}} of {node} in the last "
                f"{XID_WINDOW}. 13/31/43 are usually the application's; 48, 63, 64, 74, 79, 94, 95 point at the hardware.",
                watches="DCGM_FI_DEV_XID_ERRORS, the last XID a GPU reported, changing to a non-zero value",
                quiet=f"{XID_WINDOW} after the last new XID: the gauge keeps the last XID forever, so it fires on a change only",
            ),
            AlertRule(
                "GPUTemperatureHigh",
                f"max by ({_GPU}) (DCGM_FI_DEV_GPU_TEMP{{{DCGM_JOB}}}) > 85",
                "warning",
                f"GPU at {{{{ $value }}}}°C on {node}",
                f"GPU {{{{ $labels.gpu }}}} of {node} has been above 85°C for 10 minutes; it throttles "
                "its clocks and may shut down.",
                "10m",
                watches="each GPU's temperature",
                quiet="while every GPU stays at or below 85°C",
            ),
            AlertRule(
                "GPURowRemapFailure",
                f"max by ({_GPU}) (DCGM_FI_DEV_ROW_REMAP_FAILURE{{{DCGM_JOB}}}) > 0",
                "critical",
                f"GPU memory row remapping failed on {node}",
                f"GPU {{{{ $labels.gpu }}}} ({{{{ $labels.UUID }}}}) of {node} could not remap a failing memory "
                "row: its memory is no longer reliable. Drain the node and replace the instance.",
                watches="DCGM_FI_DEV_ROW_REMAP_FAILURE of each GPU",
                quiet="until the GPU reports a failed remap; it resolves when the instance is gone",
            ),
            AlertRule(
                "GPUUncorrectableMemoryErrors",
                f"max by ({_GPU}) (increase(DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{{{DCGM_JOB}}}[1h])) > 0",
                "warning",
                f"Uncorrectable GPU memory errors on {node}",
                f"GPU {{{{ $labels.gpu }}}} of {node} remapped rows after uncorrectable (double-bit) ECC "
                "errors in the last hour; the remap takes effect after a GPU reset.",
                watches="new rows remapped after uncorrectable ECC errors, per GPU, over an hour",
                quiet="an hour after the last new remap; rows remapped before that do not count",
            ),
        ),
    )
    capacity = RuleGroup(
        "gpu-platform.capacity",
        (
            AlertRule(
                "GPUsAllocatedButIdle",
                # The headroom's placeholders hold idle GPUs on purpose (components/headroom.py).
                f'{POD_GPU_UTILISATION}{{namespace!="{namespaces.HEADROOM}"}} < 1 '
                f"unless on (namespace, pod) {PODS_AT_MIN_REPLICAS}",
                "info",
                "Idle GPUs held by {{ $labels.namespace }}/{{ $labels.pod }}",
                f"Pod {{{{ $labels.pod }}}} in {{{{ $labels.namespace }}}} holds GPUs it has not used (below 1% "
                f"utilisation) for {idle_gpu_hours}h: capacity other tenants are waiting for.",
                f"{idle_gpu_hours}h",
                watches="running pods holding GPUs or MIG devices below 1% utilisation",
                quiet="for the pods of a Deployment its autoscaler holds at minReplicas (an idle server kept warm), "
                "and for the headroom's placeholders",
            ),
            AlertRule(
                "NodePoolAtGPULimit",
                # A GPU pool's limit is in the units Karpenter counts for its sharing mode (config/advertised.py):
                # nvidia.com/gpu, a nvidia.com/mig-<profile> each, or nodes for DRA; any one reached stops the pool.
                f"max by (nodepool) (max by (nodepool, resource_type) "
                f"(karpenter_nodepools_usage{{{KARPENTER_JOB}, {POOL_GPU_LIMITS}}}) "
                f">= on (nodepool, resource_type) max by (nodepool, resource_type) "
                f"(karpenter_nodepools_limit{{{KARPENTER_JOB}, {POOL_GPU_LIMITS}}}))",
                "warning",
                "NodePool {{ $labels.nodepool }} is at its GPU limit",
                "Karpenter has provisioned every GPU NodePool {{ $labels.nodepool }} may have; pending GPU pods "
                "stay pending until capacity frees up or nodePools[].gpus is raised.",
                "15m",
                watches="Karpenter's GPUs provisioned per NodePool against the NodePool's limit",
                quiet="while any NodePool has GPUs left under its limit",
            ),
            AlertRule(
                "KueueWorkloadsPendingTooLong",
                f"sum by (cluster_queue) (kueue_pending_workloads{{{KUEUE_LEADER}}}) > 0 "
                f"unless on (cluster_queue) sum by (cluster_queue) "
                f"(increase(kueue_admitted_workloads_total{{{KUEUE_LEADER}}}[30m])) > 0",
                "warning",
                "ClusterQueue {{ $labels.cluster_queue }} admitted nothing for 30 minutes",
                "{{ $value }} workloads are pending in ClusterQueue {{ $labels.cluster_queue }} and none was admitted "
                "in the last 30 minutes.",
                "30m",
                watches="the Kueue leader's pending workloads per ClusterQueue, and its admissions",
                quiet="while the queue admits something every 30 minutes, or has nothing pending",
            ),
            AlertRule(
                "ClusterQueueAtGPUQuota",
                f"sum by (cluster_queue, flavor, resource) (kueue_cluster_queue_resource_usage{{{KUEUE_LEADER}, {KUEUE_GPU}}}) "
                f">= sum by (cluster_queue, flavor, resource) "
                f"(kueue_cluster_queue_nominal_quota{{{KUEUE_LEADER}, {KUEUE_GPU}}} > 0)",
                "info",
                "ClusterQueue {{ $labels.cluster_queue }} uses its whole {{ $labels.flavor }} {{ $labels.resource }} quota",
                "Tenant {{ $labels.cluster_queue }} has used its nominal {{ $labels.resource }} quota in flavor "
                "{{ $labels.flavor }} for an hour; further work borrows or waits.",
                "1h",
                watches="each ClusterQueue's GPU, MIG-device and DRA-device usage against its nominal quota, per flavor",
                quiet="while usage stays under the nominal quota in every flavor and resource",
            ),
        ),
    )
    autoscaling = RuleGroup(
        "gpu-platform.autoscaling",
        (
            AlertRule(
                "KedaScalerErrors",
                "sum by (exported_namespace, scaledObject, scaler) "
                f"(rate(keda_scaler_detail_errors_total{{{KEDA_JOB}}}[5m])) > 0",
                "warning",
                "KEDA scaler {{ $labels.scaler }} of {{ $labels.exported_namespace }}/{{ $labels.scaledObject }} is failing",
                "KEDA cannot read the trigger of {{ $labels.exported_namespace }}/{{ $labels.scaledObject }} (Prometheus "
                "unreachable or the query refused); after 3 failed polls it holds the current replicas (at least the "
                "fallback) instead of scaling.",
                "10m",
                watches="errors of KEDA's Prometheus queries (Prometheus down, a refused query)",
                quiet="while every query answers, empty answers included (those read as 0)",
            ),
            AlertRule(
                "KedaTriggerWithoutData",
                "sum by (exported_namespace, scaledResource, triggerName) "
                f"(increase(keda_scaler_empty_upstream_responses_total{{{KEDA_JOB}}}[10m])) > 0",
                "warning",
                "Trigger {{ $labels.triggerName }} of {{ $labels.exported_namespace }}/{{ $labels.scaledResource }} "
                "reads no data",
                "KEDA's query for trigger {{ $labels.triggerName }} of {{ $labels.exported_namespace }}/"
                "{{ $labels.scaledResource }} has returned no series for 15 minutes; it reads as 0, so the deployment "
                "scales as if idle. No replica is running, or its metrics are not scraped.",
                "15m",
                watches="KEDA triggers whose query returns no series (no replica running, or its metrics unscraped)",
                quiet="while every trigger's query returns a series",
            ),
        ),
    )
    return (gpus, capacity, autoscaling)


def multikueue_group() -> RuleGroup:
    """A fleet manager's alerts (components/fleet.py), from what Kueue v0.19.2 exports there.

    Kueue exports no MultiKueueCluster status: a worker that loses its connection shows only when no
    worker is left (the MultiKueue AdmissionCheck turns inactive, `NoUsableClusters`, and with it every
    ClusterQueue naming it, reason AdmissionCheckInactive: pkg/cache/scheduler/clusterqueue.go), or as
    work that stays reserved on the manager while no worker admits it.
    """
    return RuleGroup(
        "gpu-platform.multikueue",
        (
            AlertRule(
                "MultiKueueNoActiveWorker",
                f"max by (cluster_queue) (kueue_cluster_queue_status{{{KUEUE_LEADER}, status=\"active\"}}) == 0",
                "critical",
                "ClusterQueue {{ $labels.cluster_queue }} on the fleet manager dispatches to no worker",
                "The manager's ClusterQueue {{ $labels.cluster_queue }} is inactive: its MultiKueue AdmissionCheck "
                "has no Active MultiKueueCluster (every worker unreachable, its kubeconfig Secret missing or its token "
                "refused). Nothing new is admitted; workloads running on a lost worker are requeued after "
                "workerLostTimeout.",
                "10m",
                watches="the fleet manager's ClusterQueues, each inactive while no worker is connected",
                quiet="while at least one worker is connected (the check stays Active)",
            ),
            AlertRule(
                "MultiKueueWorkloadsStuckDispatching",
                f"(sum by (cluster_queue) (kueue_reserving_active_workloads{{{KUEUE_LEADER}}}) "
                f"- sum by (cluster_queue) (kueue_admitted_active_workloads{{{KUEUE_LEADER}}})) > 0 "
                f"unless on (cluster_queue) sum by (cluster_queue) "
                f"(increase(multikueue_workloads_admitted_total{{{KUEUE_LEADER}}}[30m])) > 0",
                "warning",
                "Workloads of {{ $labels.cluster_queue }} wait on the manager and no worker admits them",
                "{{ $value }} workloads hold quota in ClusterQueue {{ $labels.cluster_queue }} on the fleet manager "
                "but no worker has admitted any for 30 minutes: the workers' own queues are full, or a worker "
                "cannot be reached. Each worker's ClusterQueue of the same name shows which.",
                "30m",
                watches="workloads with quota reserved on the manager but not yet admitted by a worker",
                quiet="while a worker admits one of the queue's workloads every 30 minutes, or none waits",
            ),
        ),
    )


def kai_group() -> RuleGroup:
    """A stack with a KAI pool: KAI's controllers answering their scrape, and its Queues' GPUs (models/kai/metrics.py).

    KAI v0.17.0 exports no pending-pod or PodGroup count and no Queue limit, so none is alerted on; a failed bind is
    controller-runtime's reconcile error of the binder's BindRequest controller. A controller that is down stops
    placing (scheduler), binding (binder), admitting (admission) or accounting (queue-controller) KAI's pods, which
    the first alert catches.
    """
    services = sorted(service.name for service in kai_metrics.METRICS_SERVICES.values())
    scraped = f'up{{namespace="{KAI_NAMESPACE}", job=~"{"|".join(services)}"}}'
    unscraped = " or ".join(f'absent(up{{namespace="{KAI_NAMESPACE}", job="{service}"}})' for service in services)
    queue = kai_metrics.QUEUE_NAME_LABEL
    job = {controller: service.name for controller, service in kai_metrics.METRICS_SERVICES.items()}
    return RuleGroup(
        "gpu-platform.kai",
        (
            AlertRule(
                "KaiControllerDown",
                f"max by (namespace, job) ({scraped}) == 0 or {unscraped}",
                "critical",
                "KAI's {{ $labels.job }} is down or not scraped",
                "No replica of KAI's {{ $labels.job }} in {{ $labels.namespace }} has answered Prometheus for 10 minutes, "
                f"or its Service has no target: pods on KAI pools are not placed ({job['scheduler']}), bound "
                f"({job['binder']}), admitted ({job['admission']}) or counted in their Queue ({job['queue-controller']}). "
                "Check the Deployment and the kai-operator's logs.",
                "10m",
                watches="the scrape of the KAI operator's scheduler, binder, queue-controller and admission Services",
                quiet="while at least one replica of each answers its scrape",
            ),
            AlertRule(
                "KaiBindingFailures",
                f"sum by (job, controller) (increase({kai_metrics.RECONCILE_ERRORS}"
                f'{{{KAI_BINDER_JOB}, controller="{kai_metrics.BIND_REQUEST_CONTROLLER}"}}[10m])) > 0',
                "warning",
                "KAI's binder keeps failing to bind pods",
                "KAI's binder failed {{ $value | humanize }} binds in the last 10 minutes, and has kept failing for 15: "
                "pods KAI placed stay Pending, unbound. Each failed pod has a BindingError event and its BindRequest a "
                "Failed status with the reason (a reservation pod that cannot start, a node gone, a volume).",
                "15m",
                watches="failed reconciles of the KAI binder's BindRequest controller (each a failed bind)",
                quiet="while no bind fails, and after a failure that does not recur within 15 minutes",
            ),
            AlertRule(
                "KaiQueueAtDeservedGPUs",
                f"max by ({queue}) ({kai_metrics.QUEUE_ALLOCATED_GPUS}{{{KAI_QUEUE_CONTROLLER_JOB}}}) "
                f">= max by ({queue}) ({kai_metrics.QUEUE_DESERVED_GPUS}{{{KAI_QUEUE_CONTROLLER_JOB}}} > 0)",
                "info",
                "KAI Queue {{ $labels.queue_name }} uses all its deserved GPUs",
                "KAI Queue {{ $labels.queue_name }} has held its whole deserved GPU quota, fractions counted as "
                "fractions, for an hour; further pods run over quota (preemptible) up to its limit, or wait.",
                "1h",
                watches="each KAI Queue's allocated GPUs (fractions included) against its deserved quota",
                quiet="while allocation stays under the deserved quota, and for Queues with no GPU quota",
            ),
        ),
    )


def kai_rule(name: str, namespace: str, runbook_base_url: str) -> dict[str, Any]:
    """A PrometheusRule of a stack's KAI alerts."""
    return _prometheus_rule(name, namespace, rule_file([kai_group()], runbook_base_url))


def multikueue_rule(name: str, namespace: str, runbook_base_url: str) -> dict[str, Any]:
    """A PrometheusRule of a fleet manager's alerts."""
    return _prometheus_rule(name, namespace, rule_file([multikueue_group()], runbook_base_url))


def all_groups(
    config: MonitoringConfig, claims: Mapping[tuple[str, str], Mapping[str, int]] | None = None
) -> tuple[RuleGroup, ...]:
    return (recording_rules(claims), *alert_groups(config))


def alerts(config: MonitoringConfig) -> list[AlertRule]:
    return [rule for group in alert_groups(config) for rule in group.rules if isinstance(rule, AlertRule)]


def rule_file(groups: Sequence[RuleGroup], runbook_base_url: str) -> dict[str, Any]:
    """The groups as a Prometheus rule file (what `promtool check rules` reads)."""
    return {"groups": [group.as_group(runbook_base_url) for group in groups]}


def prometheus_rule(
    name: str, namespace: str, config: MonitoringConfig, claims: Mapping[tuple[str, str], Mapping[str, int]] | None = None
) -> dict[str, Any]:
    """A monitoring.coreos.com/v1 PrometheusRule holding every group; `claims` as for `recording_rules`."""
    return _prometheus_rule(name, namespace, rule_file(all_groups(config, claims), config.runbook_base_url))


def cost_estimate_rule(name: str, namespace: str, tenant_namespace: str, hourly: float) -> dict[str, Any]:
    """A PrometheusRule recording one tenant's cost estimate."""
    return _prometheus_rule(name, namespace, {"groups": [cost_estimate_group(tenant_namespace, hourly).as_group("")]})


def _prometheus_rule(name: str, namespace: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app.kubernetes.io/part-of": "gpu-platform"}},
        "spec": spec,
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
