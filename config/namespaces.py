"""Kubernetes namespaces: the ones the platform's controllers run in, and the names no tenant may take.

`CONTROLLER_NAMESPACES` is the one table: the controllers' Namespace objects are built from it
(components/lib/namespaces.py) and tenant validation refuses every name in it, so a namespace the
platform creates can never also be a tenant's.
"""

from __future__ import annotations

from typing import Any, Literal

from models.kai.constants import RESERVATION_NAMESPACE, SCALING_POD_NAMESPACE
from models.kai.constants import SYSTEM_NAMESPACE as KAI_SYSTEM_NAMESPACE

from .labels import NAMESPACE_NAME_LABEL

PodSecurityLevel = Literal["privileged", "baseline", "restricted"]

KUBE_SYSTEM = "kube-system"
# Karpenter runs where upstream's reference install puts it: its controller is a cluster-critical add-on.
KARPENTER = KUBE_SYSTEM
MONITORING = "monitoring"
KEDA = "keda"
KUEUE = "kueue-system"
GPU_OPERATOR = "gpu-operator"
DRA_DRIVER = "dra-driver-nvidia-gpu"
# Kubeflow Trainer and the JobSet controller it brings, where upstream's manifests put them.
TRAINER = "kubeflow-system"
KYVERNO = "kyverno"
OPENCOST = "opencost"
EXTERNAL_SECRETS = "external-secrets"
# The placeholder pods that hold each GPU pool's warm headroom (config/headroom.py).
HEADROOM = "gpu-headroom"

# The namespaces the platform creates for its controllers, each with the one Pod Security level it
# enforces, audits and warns at.
CONTROLLER_NAMESPACES: dict[str, PodSecurityLevel] = {
    # The operands and the DRA kubelet plugin load into the host's GPU stack (host paths, privileged
    # containers, host PID), which `baseline` and `restricted` refuse.
    GPU_OPERATOR: "privileged",
    DRA_DRIVER: "privileged",
    # node-exporter runs with hostNetwork, hostPID and host paths, which `baseline` refuses.
    MONITORING: "privileged",
    # The chart's manager already runs non-root, no privilege escalation, all capabilities dropped,
    # RuntimeDefault seccomp.
    KUEUE: "restricted",
    # KEDA's pods meet `restricted` with the chart's defaults (non-root, no capabilities).
    KEDA: "restricted",
    # The trainer's manager (container: non-root, no privilege escalation, all capabilities dropped,
    # RuntimeDefault seccomp) and JobSet's controller (the same, non-root and seccomp set on the pod)
    # meet `restricted` with the charts' defaults.
    TRAINER: "restricted",
    # Kyverno's controllers and hook Jobs, and External Secrets Operator's controller, webhook and cert
    # controller, run non-root, with no privilege escalation, all capabilities dropped and RuntimeDefault
    # seccomp (the charts' defaults).
    KYVERNO: "restricted",
    # OpenCost's chart sets no pod or container securityContext (podSecurityContext: {}), which
    # `restricted` refuses; nothing of it needs more than `baseline`.
    OPENCOST: "baseline",
    EXTERNAL_SECRETS: "restricted",
    # Pause containers only: non-root, no capabilities, no privilege escalation, RuntimeDefault seccomp.
    HEADROOM: "restricted",
}

# The platform's controllers that create objects in tenant namespaces, each owned by the tenant's object it
# serves (a controller ownerReference): Kueue's Workloads, the trainer's JobSets and JobSet's Jobs, KEDA's
# HPAs, External Secrets' Secrets. Their service accounts are the only ones admission treats as controllers.
TENANT_WORKLOAD_CONTROLLERS: tuple[str, ...] = (KUEUE, TRAINER, KEDA, EXTERNAL_SECRETS)
# The controllers that resume a suspended job in a tenant namespace: Kueue the top-level job it admits, the
# trainer a TrainJob's JobSet (kubeflow/trainer v2.3.0 pkg/runtime/framework/plugins/jobset/jobset.go: the
# JobSet's suspend is the TrainJob's) and JobSet its Jobs (kubernetes-sigs/jobset v0.12.0
# pkg/controllers/jobset_controller.go `resumeJob`).
JOB_RESUMERS: tuple[str, ...] = (KUEUE, TRAINER)

# Namespaces Kubernetes itself owns (every `kube-` name is refused as well).
KUBERNETES_NAMESPACES = frozenset({"default", KUBE_SYSTEM, "kube-public", "kube-node-lease"})
# Where add-ons commonly installed beside the platform live: installing one must not collide with a tenant.
ADD_ON_NAMESPACES = frozenset({"karpenter", "cert-manager", "ingress-nginx", "amazon-cloudwatch"})

# The KAI Scheduler's: its controllers', its reservation pods' and its scaling pods' (models/kai/constants.py).
# Created only where a pool is scheduled by KAI (components/kai.py, with their Pod Security levels); reserved
# on every stack, so turning KAI on never meets a tenant of the same name.
KAI_NAMESPACES = frozenset({KAI_SYSTEM_NAMESPACE, RESERVATION_NAMESPACE, SCALING_POD_NAMESPACE})

RESERVED_NAMESPACES = KUBERNETES_NAMESPACES | CONTROLLER_NAMESPACES.keys() | ADD_ON_NAMESPACES | KAI_NAMESPACES


def namespace_selector(name: str) -> dict[str, Any]:
    """A label selector of the one namespace `name`, by the name label the API server sets on every
    namespace (kubernetes.io/metadata.name, immutable, so no one who can label a namespace can match it)."""
    return {"matchLabels": {NAMESPACE_NAME_LABEL: name}}
