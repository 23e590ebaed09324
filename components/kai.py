"""The KAI Scheduler: fractions of a GPU on pools with `scheduler: kai`, and the tenants' KAI Queues.

The chart is kai-scheduler/KAI-Scheduler deployments/kai-scheduler (pinned in config/versions.py, values.yaml
vendored in upstream/kai-scheduler/). Its operator deploys the scheduler, binder, admission webhook, pod grouper
and queue controller from the `kai-config` Config a post-install hook applies (templates/_helpers.tpl
`kai-scheduler.kai-config`, fed by the values below). The values the platform sets, and why:

- `global.gpuSharing: true`: without it KAI's admission refuses every pod with a sharing annotation
  (pkg/admission/webhook/v1alpha2/gpusharing/gpu_sharing.go `Validate`).
- `global.blockNvidiaVisibleDevices: true`: KAI's webhook writes NVIDIA_VISIBLE_DEVICES=void into every container of a
  KAI pod that requests no GPU and is not the fraction's (models/kai/sharing.py, deviceaccess): KAI pools' nodes
  honour the variable (components/lib/gpu_nodes.py), and the platform's admission requires it of every such
  container (components/admission.py `tenant-pods-no-nvidia-env`).
- `global.clusterAutoscaling: true`: fractions are annotations Karpenter does not read; the node-scale-adjuster
  starts scaling pods requesting whole GPUs in `kai-scale-adjust` for fractional pods that do not fit
  (docs/gpu-sharing/autoscaling/README.md).
- `global.registry` and `global.tag`: the images config/versions.py pins (values.yaml at the tag carries a
  placeholder registry the release job rewrites).
- `global.nodeSelector` and `global.tolerations`: KAI's controllers on the system nodes.
- `global.resourceReservation.createNamespace: false`: the reservation pods' namespace is declared here with its
  Pod Security level (`baseline`: the binder gives reservation pods no securityContext, pkg/binder/binding/
  resourcereservation/resource_reservation.go `createResourceReservationPod`, and they need no privilege; the
  GPU comes from the device plugin through their `nvidia.com/gpu` request). The scaling pods' namespace likewise
  (templates/services/scalingpod-namespace.yaml creates it only when absent).
- `defaultQueue.createDefaultQueue: false`: the chart's default Queues have no limit (templates/default-queue.yaml
  with values.yaml `defaultQueue`), and the pod grouper charges a workload naming no Queue to `default-queue`
  (models/kai/constants.py DEFAULT_QUEUE): such a pod must stay pending, not run outside every quota.
- Nothing for the NUMA placement exporter, a DaemonSet reading host paths that `baseline` refuses: the operator
  deploys it only when a SchedulingShard enables the `numa` plugin (pkg/operator/operands/numa_placement_exporter/
  numa_placement_exporter.go `shouldDeploy`), and the chart's default shard enables none (`scheduler.plugins: {}`).

The Queues are config/kai.py's, declared after the release, whose crds/ installs their CRD, each after its parent.

KAI's metrics: the chart renders no monitor, and the operator's own ServiceMonitors need `prometheus.enabled`, which
would also deploy a Prometheus of KAI's (pkg/operator/operands/prometheus/). The platform's Prometheus selects every
ServiceMonitor, so one per Service the operator creates for a controller's metrics (`service_monitor`,
models/kai/metrics.py), in KAI's namespace, after the release (the namespace's objects) and the monitoring CRDs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from config.kai import KaiQueuePlan
from config.labels import POD_SECURITY_LABEL
from config.versions import KAI_IMAGE_REGISTRY, KAI_IMAGE_TAG, ChartPin
from models.kai.constants import RESERVATION_NAMESPACE, SCALING_POD_NAMESPACE, SYSTEM_NAMESPACE
from models.kai.metrics import APP_LABEL, METRICS_SERVICES

from .lib.helm import helm_release
from .lib.placement import system_node_selector, system_node_toleration
from .lib.resources import Children, declare

CHART_KEY = "kai-scheduler"
RELEASE_NAME = "kai-scheduler"
NAMESPACE = SYSTEM_NAMESPACE
# Each namespace's Pod Security level, enforced, audited and warned at. The operator's deployments set no
# securityContext unless `global.securityContext` does (values.yaml: {}), which `restricted` refuses.
NAMESPACE_LEVELS = {SYSTEM_NAMESPACE: "baseline", RESERVATION_NAMESPACE: "baseline", SCALING_POD_NAMESPACE: "baseline"}


def namespace(name: str) -> dict[str, Any]:
    level = NAMESPACE_LEVELS[name]
    labels = {f"{POD_SECURITY_LABEL}/{mode}": level for mode in ("enforce", "audit", "warn")}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def kai_values() -> dict[str, Any]:
    return {
        "global": {
            "registry": KAI_IMAGE_REGISTRY,
            "tag": KAI_IMAGE_TAG,
            "gpuSharing": True,
            "blockNvidiaVisibleDevices": True,
            "clusterAutoscaling": True,
            "nodeSelector": system_node_selector(),
            "tolerations": [system_node_toleration()],
            "resourceReservation": {"createNamespace": False},
        },
        "defaultQueue": {"createDefaultQueue": False},
    }


def service_monitor(controller: str) -> dict[str, Any]:
    """The ServiceMonitor of one KAI controller's metrics Service: the Service by its `app` label, its metrics port by
    name; the `job` is the Service's name (no jobLabel; components/lib/prometheus.py EXPORTER_JOBS)."""
    service = METRICS_SERVICES[controller]
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": f"kai-{controller}", "namespace": NAMESPACE},
        "spec": {
            "selector": {"matchLabels": {APP_LABEL: service.name}},
            "endpoints": [{"port": service.port}],
        },
    }


class KaiScheduler(pulumi.ComponentResource):
    """KAI's namespaces, its Helm release, then the tenants' Queues."""

    release: k8s.helm.v3.Release

    def __init__(
        self,
        name: str,
        queues: Sequence[KaiQueuePlan],
        *,
        chart: ChartPin,
        provider: k8s.Provider,
        depends_on: Sequence[pulumi.Resource] = (),
        service_monitor_crd: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ):
        """
        :param queues: `PlatformConfig.kai_queues`, the root first.
        :param chart: `PlatformConfig.charts["kai-scheduler"]`.
        :param depends_on: what the cluster's controllers wait for (the system nodes and add-ons).
        :param service_monitor_crd: what installs the ServiceMonitor CRD (`Monitoring.crd_release`).
        """
        super().__init__("gpu-platform:kai:KaiScheduler", name, None, opts)
        children = Children(self, provider, depends_on)
        namespaces = [declare(f"{name}-namespace-{ns}", namespace(ns), children.opts()) for ns in NAMESPACE_LEVELS]
        self.release = helm_release(
            f"{name}-release",
            release_name=RELEASE_NAME,
            pin=chart,
            namespace=NAMESPACE,
            values=kai_values(),
            opts=children.opts(*namespaces),
        )
        # KAI's queue webhook refuses a child Queue whose parent it cannot read, and the deletion of a Queue that
        # still has children (pkg/admission/webhook/queuehooks/queue_validator.go `validateParentChildQuota`,
        # `ValidateDelete`): each Queue waits for its parent, so it is created after it and deleted before it.
        declared: dict[str, pulumi.Resource] = {}
        for plan in queues:
            after = [declared[plan.parent]] if plan.parent is not None else []
            declared[plan.name] = declare(f"{name}-queue-{plan.name}", plan.manifest(), children.opts(self.release, *after))
        for controller in METRICS_SERVICES:
            declare(
                f"{name}-monitor-{controller}", service_monitor(controller), children.opts(self.release, *service_monitor_crd)
            )
        self.register_outputs({"queues": [plan.name for plan in queues]})
