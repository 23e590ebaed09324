"""OpenCost in `opencost` on the system nodes: cost per namespace from the platform's Prometheus.

Upstream, checked at these exact versions:
- the chart: opencost/opencost-helm-chart tag opencost-2.5.17 (OpenCost 1.120.1), charts/opencost/
  values.yaml (every key below exists there) and templates/deployment.yaml (`opencost.prometheus.
  external.url` becomes PROMETHEUS_SERVER_ENDPOINT; the kubeStateMetrics switches become
  EMIT_KSM_V1_METRICS and EMIT_KSM_V1_METRICS_ONLY);
- OpenCost itself (the store's newest release, v1.112.0; upstream/metrics/opencost/): pkg/costmodel/
  metrics.go, the series it exports (container_gpu_allocation{namespace, pod, container, node},
  node_gpu_hourly_cost{node, instance_type, ...}), and pkg/env/costmodelenv.go (EMIT_KSM_V1_METRICS
  defaults to true).

OpenCost reads this Prometheus (kube-state-metrics, cAdvisor and its own series) and exports prices and
allocations, which the same Prometheus scrapes through the chart's ServiceMonitor (honorLabels: the
`namespace` and `pod` of an allocation are the workload's). The tenant dashboard shows GPU-hours and
GPU cost per namespace from these, beside the render's quota estimate.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from config import namespaces
from config.versions import ChartPin

from .lib.helm import helm_release
from .lib.namespaces import controller_namespace
from .lib.placement import on_system_nodes
from .lib.prometheus import PROMETHEUS_URL
from .lib.resources import Children, declare

CHART_KEY = "opencost"
NAMESPACE = namespaces.OPENCOST
RELEASE_NAME = "opencost"


class OpenCost(pulumi.ComponentResource):
    """The OpenCost exporter (no UI: Grafana shows its numbers), scraped by the platform's Prometheus."""

    release: k8s.helm.v3.Release

    def __init__(
        self,
        name: str,
        cluster_name: str,
        *,
        chart: ChartPin,
        provider: k8s.Provider,
        depends_on: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ):
        """
        :param cluster_name: `cluster.name`: the cluster id OpenCost labels its numbers with.
        :param chart: the pinned `opencost` chart (config/versions.py CHARTS["opencost"]).
        :param provider: the cluster's Kubernetes provider.
        :param depends_on: the system nodes, and the monitoring CRDs' release (its ServiceMonitor).
        """
        super().__init__("gpu-platform:opencost:OpenCost", name, None, opts)
        children = Children(self, provider, depends_on)
        namespace = declare(f"{name}-namespace", controller_namespace(NAMESPACE), children.opts())
        self.release = helm_release(
            f"{name}-release",
            release_name=RELEASE_NAME,
            pin=chart,
            namespace=NAMESPACE,
            values=opencost_values(cluster_name),
            opts=children.opts(namespace),
        )
        self.register_outputs({"namespace": NAMESPACE, "chartVersion": self.release.version})


def opencost_values(cluster_name: str) -> dict[str, Any]:
    """Values of the opencost chart (2.5.17)."""
    return {
        "clusterName": cluster_name,
        "opencost": {
            **on_system_nodes(),
            "exporter": {"defaultClusterId": cluster_name},
            "prometheus": {
                "internal": {"enabled": False},
                "external": {"enabled": True, "url": PROMETHEUS_URL},
            },
            "metrics": {
                # Only the KSM v1 series kube-state-metrics 2 no longer exports (pkg/metrics/kubemetrics.go:
                # node, namespace, pod-label and PV collectors). With the default, every collector, OpenCost
                # would export a second kube_pod_container_resource_requests and kube_pod_owner, which
                # the platform's per-namespace sums and joins would count twice.
                "kubeStateMetrics": {"emitKsmV1Metrics": False, "emitKsmV1MetricsOnly": True},
                "serviceMonitor": {"enabled": True},
            },
            "ui": {"enabled": False},
        },
    }
