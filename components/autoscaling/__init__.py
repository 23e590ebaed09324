"""KEDA, and per tenant inference deployment a ScaledObject (plus the vLLM server, `vllm.py`, when the platform serves it).

Upstream, checked at these exact versions:
- the chart: kedacore/charts v2.20.2, keda/values.yaml and keda/templates/{manager,metrics-server,webhooks}/
  (each component's nodeSelector/tolerations fall back to the top-level ones; the operator's
  ServiceMonitor needs both `prometheus.operator.enabled` and `...serviceMonitor.enabled`);
- KEDA itself: kedacore/keda v2.20.2, pkg/scalers/prometheus_scaler.go (trigger metadata keys,
  `ignoreNullValues` default true, active = value > activationThreshold), pkg/fallback/fallback.go and
  apis/keda/v1alpha1/scaledobject_types.go (CheckFallbackValid), pkg/scaling/executor/scale_scaledobjects.go,
  pkg/metricscollector/prommetrics.go (the operator's metric names, vendored in upstream/metrics/keda/);
- the Prometheus Service: prometheus-community/helm-charts kube-prometheus-stack-88.5.3,
  charts/kube-prometheus-stack/templates/prometheus/service.yaml and _helpers.tpl (fullname).

How a class preset maps onto KEDA and the HPA (an imperfect fit, on purpose stated here):
- `scaleUpUtilization` is the HPA target of the GPU trigger (metricType Value): desired replicas =
  ceil(current x utilisation / target), so the deployment settles where its average GPU sits at the
  target. The HPA has no separate "scale down below X%" threshold: it scales down whenever the
  proportional rule says fewer replicas would stay under the target, slowed only by the HPA's
  scale-down behaviour (config/timing.py HPA_SCALE_DOWN: 300 s stabilisation, at most 25 % per minute).
- `scaleDownUtilization` becomes KEDA's `activationThreshold`: the trigger counts as active only
  above it. Activation decides 0 <-> 1 only, and deployments keep at least one replica (their own
  pods emit both metrics, so nothing could wake one at zero), so it shows only in the ScaledObject's
  Active condition and `keda_scaler_active`.
- `cooldownSeconds` is KEDA's `cooldownPeriod`, which likewise applies only to scaling to zero;
  HPA_SCALE_DOWN's 300 s stabilisation is what paces scaling down.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from config import namespaces, timing
from config.autoscaling import AutoscalingConfig, InferenceDeploymentConfig, WorkingHoursConfig
from config.fair_share import TenantPlan
from config.labels import SERVING_METRICS_LABEL, SERVING_METRICS_PATH, SERVING_METRICS_PORT
from config.system_capacity import KEDA_METRICS_SERVER, KEDA_OPERATOR
from config.versions import ChartPin

from ..lib.helm import helm_release
from ..lib.namespaces import controller_namespace
from ..lib.placement import on_system_nodes
from ..lib.prometheus import (
    PROMETHEUS_RELEASE,
    PROMETHEUS_URL,
    gpu_busy_percent,
    tenant_metric_relabelings,
    tenant_scrape_limits,
)
from ..lib.resources import Children, declare
from .vllm import deployment_labels, server_manifests

NAMESPACE = namespaces.KEDA
RELEASE_NAME = "keda"
CHART_KEY = "keda"
API_VERSION = "keda.sh/v1alpha1"

# Metrics the triggers read: the dcgm-exporter's per-GPU utilisation, labelled with the pod using the
# GPU (components.lib.prometheus.gpu_busy_percent: MIG instances by their graphics-engine activity),
# and vLLM's queue of requests waiting for a batch slot (upstream/metrics/vllm/loggers.py,
# labels model_name and engine; the scrape adds namespace and pod).
QUEUE_DEPTH_METRIC = "vllm:num_requests_waiting"
# The serving metrics the platform reads from tenants' pods, with the labels each writes: all that the
# serving PodMonitor keeps.
SERVING_METRICS_KEPT: dict[str, tuple[str, ...]] = {QUEUE_DEPTH_METRIC: ("engine", "model_name")}
# The PodMonitor each tenant namespace with inference deployments gets: it scrapes every pod following
# the serving convention (config/labels.py), the platform's vLLM servers and the tenant's own.
SERVING_POD_MONITOR = "inference-servers"

# ReplicaSet pod names are `<deployment>-<pod-template-hash>-<5 random>`; both generated parts come
# from apimachinery's rand alphabet (SafeEncodeString for the hash, rand.String(5) for generateName):
# consonants and digits, never '-'. Deployment names here are <= 40 characters, so the 58-character
# cut of generateName's base never truncates the hash.
POD_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


class Autoscaling(pulumi.ComponentResource):
    """KEDA in `keda` on the system nodes; per inference deployment its ScaledObject, and the served
    Deployment, Service and PodDisruptionBudget when the platform declares the model server."""

    release: k8s.helm.v3.Release
    scaled_objects: dict[str, pulumi.CustomResource]

    def __init__(
        self,
        name: str,
        tenants: Sequence[TenantPlan],
        autoscaling: AutoscalingConfig,
        *,
        chart: ChartPin,
        provider: k8s.Provider,
        namespaces: Mapping[str, pulumi.Resource],
        local_queues: Mapping[str, pulumi.Resource],
        gpu_nodes: Sequence[pulumi.Resource] = (),
        depends_on: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ):
        """
        :param name: prefixes every logical name: `<name>-<tenant>-<deployment>-scaler`.
        :param tenants: `PlatformConfig.tenants`; each one's `inference` deployments are scaled.
        :param autoscaling: presets (with the stack's overrides) and the fallback replicas.
        :param chart: the pinned `keda` chart (config/versions.py CHARTS["keda"]).
        :param provider: the cluster's Kubernetes provider.
        :param namespaces: tenant name -> its Namespace resource (the tenants component's).
        :param local_queues: tenant name -> its Kueue LocalQueue (`Queueing.local_queues`), which admits a
            served Deployment's pods (they carry its queue-name label).
        :param gpu_nodes: what a served Deployment's pods need to run on a GPU node: the GPU Operator
            release (device plugin) and Karpenter's NodePools. `pulumi destroy` then removes the
            Deployment before them, while the queue still admits and the nodes still drain. Also what
            admits its pods and what they read: the image verification policies (`SupplyChain.policies`) and
            the ExternalSecrets of model-hub tokens (`TenantSecrets.external_secrets`), when the stack has them.
        :param depends_on: what the KEDA release waits for: the system nodes, and the release of the
            monitoring CRDs (`Monitoring.crd_release`), which the chart's ServiceMonitors need.
        """
        super().__init__("gpu-platform:autoscaling:Autoscaling", name, None, opts)
        installs = Children(self, provider, depends_on)
        in_cluster = Children(self, provider)

        namespace = declare(f"{name}-keda-namespace", controller_namespace(NAMESPACE), installs.opts())
        self.release = helm_release(
            f"{name}-keda",
            release_name=RELEASE_NAME,
            pin=chart,
            namespace=NAMESPACE,
            values=keda_values(),
            opts=installs.opts(namespace),
        )

        self.scaled_objects = {}
        for tenant in tenants:
            if tenant.config.inference:
                declare(
                    f"{name}-{tenant.name}-serving-metrics",
                    serving_pod_monitor(tenant),
                    in_cluster.opts(namespaces[tenant.name], self.release),
                )
            for deployment in tenant.config.inference:
                # ScaledObjects need KEDA's CRDs (and its webhook); everything needs the namespace.
                after = [namespaces[tenant.name], self.release]
                server_after = [*after, local_queues[tenant.name], *gpu_nodes]
                declared = {
                    suffix: declare(
                        f"{name}-{tenant.name}-{deployment.name}-{suffix}",
                        manifest,
                        in_cluster.opts(*(server_after if manifest["kind"] == "Deployment" else after)),
                    )
                    for suffix, manifest in deployment_manifests(tenant, deployment, autoscaling).items()
                }
                self.scaled_objects[f"{tenant.name}/{deployment.name}"] = declared["scaler"]

        self.register_outputs(
            {"namespace": NAMESPACE, "chartVersion": self.release.version, "scaledObjects": sorted(self.scaled_objects)}
        )


# --- KEDA ------------------------------------------------------------------------------------------

def keda_values() -> dict[str, Any]:
    """Values of the keda chart (2.20.2); every key exists in its values.yaml."""
    # Not the Prometheus Operator's default label selector alone: kube-prometheus-stack's Prometheus picks
    # ServiceMonitors labelled with its release unless told to take all; the label works either way.
    scrape = {"enabled": True, "serviceMonitor": {"enabled": True, "additionalLabels": {"release": PROMETHEUS_RELEASE}}}
    return {
        # The top-level placement is the default of all three: operator, metrics API server, webhooks.
        **on_system_nodes(),
        "image": {"pullPolicy": "IfNotPresent"},  # the chart pins the image tag to its appVersion
        # Only the leader acts; the second replica shortens failover. The metrics API server serves the
        # HPA's external metrics: while it is down no ScaledObject scales at all.
        "operator": {"replicaCount": KEDA_OPERATOR.replicas},
        "metricsServer": {"replicaCount": KEDA_METRICS_SERVER.replicas},
        "podDisruptionBudget": {"operator": {"minAvailable": 1}, "metricServer": {"minAvailable": 1}},
        # The operator exposes keda_scaler_detail_errors_total, keda_scaled_object_errors_total,
        # keda_scaler_metrics_value, keda_scaler_active...; the metrics API server its request metrics;
        # the webhooks keda_webhook_scaled_object_validation_*.
        "prometheus": {component: copy.deepcopy(scrape) for component in ("operator", "metricServer", "webhooks")},
    }


# --- queries -----------------------------------------------------------------------------------------

def pod_name_pattern(deployment: str) -> str:
    """RE2 pattern (Prometheus anchors it at both ends) for the pods of Deployment `deployment` only.

    Each generated part is '-'-free, so `chat` cannot match `chat-v2-<hash>-<id>`: after `chat-` exactly
    two '-'-free parts may follow, and chat-v2's pods have three.
    """
    part = f"[{POD_NAME_ALPHABET}]"
    return f"{deployment}-{part}+-{part}{{5}}"


def gpu_utilization_query(namespace: str, deployment: str) -> str:
    """Average GPU utilisation (%) over the deployment's GPUs, time-slices or MIG instances.

    Deployments keep at least one replica (config refuses minReplicas 0: their own pods emit both
    metrics), so an empty result means no replica runs yet or its GPU series lost their pod labels;
    it reads as 0 (`ignoreNullValues`, see _prometheus_trigger) and alert KedaTriggerWithoutData says so.
    """
    return f"avg({gpu_busy_percent(_selector(namespace, deployment))})"


def queue_depth_query(namespace: str, deployment: str) -> str:
    """Requests waiting in the deployment's vLLM servers, summed (the HPA divides by replicas)."""
    return f'sum({QUEUE_DEPTH_METRIC}{{{_selector(namespace, deployment)}}})'


def _selector(namespace: str, deployment: str) -> str:
    return f'namespace="{namespace}", pod=~"{pod_name_pattern(deployment)}"'


def queries(tenant: TenantPlan, deployment: InferenceDeploymentConfig) -> dict[str, str]:
    """Every PromQL query of the deployment's ScaledObject, by trigger name."""
    found = {"gpu-utilization": gpu_utilization_query(tenant.namespace, deployment.name)}
    if deployment.queue_depth_target is not None:
        found["queue-depth"] = queue_depth_query(tenant.namespace, deployment.name)
    return found


# --- ScaledObject ------------------------------------------------------------------------------------

def scaled_object(tenant: TenantPlan, deployment: InferenceDeploymentConfig, autoscaling: AutoscalingConfig) -> dict[str, Any]:
    """The deployment's ScaledObject: GPU utilisation, and queue depth when it has a target."""
    preset = autoscaling.preset(deployment.workload_class)
    found = queries(tenant, deployment)
    triggers = [
        # Value: the query is already an average per GPU, so the HPA must not divide it by replicas again.
        _prometheus_trigger(
            "gpu-utilization", found["gpu-utilization"], "Value",
            threshold=preset.scale_up_utilization, activation=preset.scale_down_utilization,
        ),
    ]
    if deployment.queue_depth_target is not None:
        # AverageValue: the sum over pods divided by replicas is compared with the per-replica target.
        triggers.append(
            _prometheus_trigger("queue-depth", found["queue-depth"], "AverageValue", threshold=deployment.queue_depth_target)
        )
    if deployment.working_hours is not None:
        triggers.append(cron_trigger(deployment.working_hours))
    return copy.deepcopy({
        "apiVersion": API_VERSION,
        "kind": "ScaledObject",
        "metadata": {"name": deployment.name, "namespace": tenant.namespace, "labels": deployment_labels(deployment)},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": deployment.name},
            "minReplicaCount": deployment.min_replicas,
            "maxReplicaCount": deployment.max_replicas,
            "pollingInterval": timing.KEDA_POLLING_INTERVAL_SECONDS,
            "cooldownPeriod": preset.cooldown_seconds,
            # While Prometheus cannot answer, hold at least the fallback and never scale a loaded
            # deployment down to it: a monitoring outage must not become a serving outage.
            "fallback": {
                "failureThreshold": timing.KEDA_FALLBACK_FAILURE_THRESHOLD,
                "replicas": min(autoscaling.fallback_replicas, deployment.max_replicas),
                "behavior": "currentReplicasIfHigher",
            },
            "advanced": {"horizontalPodAutoscalerConfig": {"behavior": hpa_behavior()}},
            "triggers": triggers,
        },
    })


def hpa_behavior() -> dict[str, Any]:
    """The HPA's `behavior` (autoscaling/v2 HorizontalPodAutoscalerBehavior) from config/timing.py."""
    return {"scaleUp": _scaling_rules(timing.HPA_SCALE_UP), "scaleDown": _scaling_rules(timing.HPA_SCALE_DOWN)}


def _scaling_rules(rules: timing.ScalingRules) -> dict[str, Any]:
    found: dict[str, Any] = {"stabilizationWindowSeconds": rules.stabilization_window_seconds}
    if rules.select_policy is not None:
        found["selectPolicy"] = rules.select_policy
    found["policies"] = [
        {"type": policy.type, "value": policy.value, "periodSeconds": policy.period_seconds} for policy in rules.policies
    ]
    return found



def _prometheus_trigger(
    name: str, query: str, metric_type: str, *, threshold: int, activation: int | None = None
) -> dict[str, Any]:
    metadata = {
        "serverAddress": PROMETHEUS_URL,
        "query": query,
        "threshold": str(threshold),
        # An empty result reads as 0 (pkg/scalers/prometheus_scaler.go), so the HPA gives replicas back
        # down to minReplicas. As an error ("false") it would count towards the fallback, whose
        # currentReplicasIfHigher then holds the replicas of the moment for as long as the series is
        # missing: a server whose metrics are not scraped would keep its peak GPUs forever. KEDA
        # counts every empty answer in keda_scaler_empty_upstream_responses_total either way, which
        # alert KedaTriggerWithoutData watches.
        "ignoreNullValues": "true",
    }
    if activation is not None:
        metadata["activationThreshold"] = str(activation)
    return {"type": "prometheus", "name": name, "metricType": metric_type, "metadata": metadata}


def cron_trigger(hours: WorkingHoursConfig) -> dict[str, Any]:
    """KEDA's cron trigger: `replicas` from start to end, nothing outside (models/keda/cron.py).

    The HPA takes the largest proposal of all triggers, so during working hours the deployment keeps at
    least `replicas` and its load triggers add more; outside, the ScaledObject's `minReplicaCount` is
    the floor, and the HPA's scale-down behaviour gives the replicas back.
    """
    return {
        "type": "cron",
        "name": "working-hours",
        "metadata": {
            "timezone": hours.timezone,
            "start": hours.start,
            "end": hours.end,
            "desiredReplicas": str(hours.replicas),
        },
    }


# --- scraping the model servers ---------------------------------------------------------------------

def serving_pod_monitor(tenant: TenantPlan) -> dict[str, Any]:
    """The tenant's PodMonitor: every pod of its namespace that follows the serving convention.

    The platform declares the scrape, so a trigger never depends on a PodMonitor a tenant may or may
    not be allowed to create: a server the tenant runs itself is scraped by labelling its pods
    SERVING_METRICS_LABEL: "true" and naming the metrics port SERVING_METRICS_PORT; the platform's own
    servers carry the same label. One monitor
    per namespace scrapes each pod once, so the queue-depth sum counts every replica once. The
    tenant's NetworkPolicy admits scrapes from the monitoring namespace. What a pod exposes is the
    tenant's, so the scrape keeps SERVING_METRICS_KEPT only, bounded in body size, samples and labels,
    and follows no redirect.
    """
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PodMonitor",
        "metadata": {
            "name": SERVING_POD_MONITOR,
            "namespace": tenant.namespace,
            "labels": {"app.kubernetes.io/managed-by": "gpu-platform"},
        },
        "spec": {
            "selector": {"matchLabels": {SERVING_METRICS_LABEL: "true"}},
            # The selector goes to the API server (prometheus-operator v0.93.0 promcfg.go
            # generateRoleSelectorConfig: kubernetes_sd `selectors`), so Prometheus watches, and holds in
            # memory, only the labelled pods of the namespace, not every pod the tenant creates.
            "selectorMechanism": "RoleSelector",
            "podMetricsEndpoints": [
                {
                    "port": SERVING_METRICS_PORT,
                    "path": SERVING_METRICS_PATH,
                    "interval": "15s",
                    "metricRelabelings": tenant_metric_relabelings(SERVING_METRICS_KEPT),
                    # The pod answers the scrape: a redirect would send Prometheus wherever it points.
                    "followRedirects": False,
                }
            ],
            **tenant_scrape_limits(),
        },
    }


# --- everything one deployment adds, for tests and the render --------------------------------------------

def deployment_manifests(
    tenant: TenantPlan, deployment: InferenceDeploymentConfig, autoscaling: AutoscalingConfig
) -> dict[str, dict[str, Any]]:
    """Logical-name suffix -> manifest: every object one inference deployment adds, in apply order."""
    servers = server_manifests(tenant, deployment, autoscaling.model_store) if deployment.serving is not None else {}
    return {**servers, "scaler": scaled_object(tenant, deployment, autoscaling)}


def deployment_objects(
    tenant: TenantPlan, deployment: InferenceDeploymentConfig, autoscaling: AutoscalingConfig
) -> list[dict[str, Any]]:
    """The Kubernetes objects one inference deployment adds, in apply order."""
    return list(deployment_manifests(tenant, deployment, autoscaling).values())
