"""Warm GPU headroom: placeholder pods that hold idle GPUs on running nodes until a tenant pod needs them.

The model (config/headroom.py, models/kubernetes/preemption.py):
- One Deployment of pause containers per pool with `warmStart.headroom.gpus`, in the platform namespace
  `gpu-headroom`, each pod requesting `gpusPerPod` GPUs in the units the pool's nodes advertise, on the
  pool's nodes (its POOL_LABEL and capacity type, tolerating the GPU taint). Karpenter launches nodes for
  pending pods whatever their priority, so it keeps nodes for them within the NodePool limit, which
  counts the headroom (`GpuPoolPlan.nodepool_gpus`).
- The PriorityClass is below every tenant pod (config/headroom.py HEADROOM_PRIORITY) with
  `preemptionPolicy: Never`. kube-scheduler lets a pending tenant pod evict lower-priority pods
  (default_preemption.go SelectVictimsOnNode), so a surge replica evicts placeholders and starts on
  their node; a placeholder never evicts anything (PodEligibleToPreemptOthers), not even another
  placeholder, whose priority is the same. The Deployment recreates the evicted placeholder, which
  waits pending until Karpenter's new node is up: the headroom refills.
- Outside every tenant's quota and Kueue: the namespace carries no tenant label, so no ResourceQuota
  applies and Kueue's pod integrations never touch its pods (`managedJobsNamespaceSelector` selects
  tenant namespaces only, components/queueing.py manager_config; kueue v0.19.2 pkg/controller/jobs/pod/
  pod_webhook.go Default returns before anything else for a namespace outside it), and the pods carry no
  queue label.
- `terminationGracePeriodSeconds: 0`: the preemptor waits for its victims to terminate, and a pause
  container has nothing to flush.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from config import namespaces
from config.capacity import GpuPoolPlan
from config.headroom import HEADROOM_PRIORITY, HEADROOM_PRIORITY_CLASS
from config.labels import APP_NAME_LABEL, CAPACITY_TYPE_LABEL, POOL_LABEL
from config.versions import PAUSE_IMAGE

from .lib.namespaces import controller_namespace
from .lib.placement import gpu_toleration
from .lib.resources import Children, declare

NAMESPACE = namespaces.HEADROOM
PAUSE_UID = 65535  # the pause image's USER
PAUSE_RESOURCES = {"cpu": "10m", "memory": "16Mi"}


class Headroom(pulumi.ComponentResource):
    """The headroom namespace, PriorityClass and one placeholder Deployment per pool that keeps GPUs warm."""

    def __init__(
        self,
        name: str,
        pools: Sequence[GpuPoolPlan],
        *,
        provider: k8s.Provider,
        depends_on: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ):
        """
        :param pools: `PlatformConfig.gpu_pools`: a placeholder Deployment for each with headroom.
        :param provider: the cluster's Kubernetes provider.
        :param depends_on: the NodePools and the GPU Operator's release (placeholders are pending until
            Karpenter launches their nodes and the device plugin advertises GPUs; `pulumi destroy` removes
            them before the pools drain).
        """
        super().__init__("gpu-platform:headroom:Headroom", name, None, opts)
        children = Children(self, provider, depends_on)
        objects = headroom_objects(pools)
        namespace = declare(f"{name}-namespace", objects[0], children.opts())
        priority = declare(f"{name}-priority-class", objects[1], children.opts())
        for manifest in objects[2:]:
            declare(f"{name}-{manifest['metadata']['labels'][POOL_LABEL]}", manifest, children.opts(namespace, priority))
        self.register_outputs({"namespace": NAMESPACE})


def headroom_objects(pools: Sequence[GpuPoolPlan]) -> list[dict[str, Any]]:
    """Every object of the headroom: namespace, PriorityClass, then a Deployment per pool with headroom."""
    return [
        controller_namespace(NAMESPACE),
        priority_class(),
        *(placeholders(pool) for pool in pools if pool.headroom_pods),
    ]


def priority_class() -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": HEADROOM_PRIORITY_CLASS},
        "value": HEADROOM_PRIORITY,
        "globalDefault": False,
        "preemptionPolicy": "Never",
        "description": "Placeholders holding warm GPU headroom: evicted first by any pod, never evicting one.",
    }


def placeholders(pool: GpuPoolPlan) -> dict[str, Any]:
    """The pool's placeholder Deployment: `headroom_pods` pause pods each holding `headroom_pod_requests`."""
    name = f"{pool.name}-headroom"
    labels = {APP_NAME_LABEL: name}
    gpus = {resource: str(units) for resource, units in pool.headroom_pod_requests.items()}
    container = {
        "name": "pause",
        "image": PAUSE_IMAGE,
        # Extended resources must be requested and limited alike. The pause process itself needs next to
        # nothing; asking for it keeps the node's CPU and memory for the surge replica that evicts it, and
        # limiting it to the same (Guaranteed QoS) keeps it from ever taking more.
        "resources": {"requests": {**PAUSE_RESOURCES, **gpus}, "limits": {**PAUSE_RESOURCES, **gpus}},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "readOnlyRootFilesystem": True,
        },
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {**labels, POOL_LABEL: pool.name},
            "annotations": {
                # Applied without waiting to become Available (pulumi-kubernetes v4.32.0 provider/pkg/await/
                # deployment.go waits 10 minutes): the placeholders wait for nodes Karpenter launches for them.
                "pulumi.com/skipAwait": "true",
                "checkov.io/skip1": "CKV_K8S_8=a pause container serves nothing a liveness probe could ask",
                "checkov.io/skip2": "CKV_K8S_9=a placeholder is never a Service endpoint; readiness means nothing",
            },
        },
        "spec": {
            "replicas": pool.headroom_pods,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "priorityClassName": HEADROOM_PRIORITY_CLASS,
                    "terminationGracePeriodSeconds": 0,
                    "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                    "nodeSelector": {POOL_LABEL: pool.name, CAPACITY_TYPE_LABEL: pool.headroom_capacity_type},
                    "tolerations": [gpu_toleration()],
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": PAUSE_UID,
                        "runAsGroup": PAUSE_UID,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [container],
                },
            },
        },
    }
