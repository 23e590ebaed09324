"""Names more than one module must agree on: node labels, taints, resource names, tag keys, queue names.

Each is defined here once and imported wherever it is written or read, the way karpenter-provider-aws
keeps its labels and tag keys in pkg/apis/v1/labels.go: a name typed twice can drift, and a label one
module sets under one spelling and another selects under a second matches nothing.
"""

from __future__ import annotations

from models.kueue.constants import DEFAULT_LOCAL_QUEUE

# --- node labels the platform sets on its nodes ---------------------------------------------------
# Every Karpenter node carries its pool's name; Kueue's ResourceFlavors select a pool's nodes by it,
# and EC2NodeClasses tag their instances with the same key.
POOL_LABEL = "gpu-platform/node-pool"
GPU_MODEL_LABEL = "gpu-platform/gpu-model"
# The general CPU pool's name, and so the POOL_LABEL value of its nodes (the CPU flavor selects them).
CPU_POOL_NAME = "cpu"
# The DRA driver's kubelet plugin runs only where this is DRA_ALLOCATION.
GPU_ALLOCATION_LABEL = "gpu-platform/gpu-allocation"
DRA_ALLOCATION = "dra"
# "true" on the nodes of pools with `efa`: the EFA device plugin runs only there.
EFA_LABEL = "gpu-platform/efa"

# --- labels the GPU Operator reads ----------------------------------------------------------------
# The device plugin reads its named sharing configuration from this label...
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
# ...and the MIG manager the named MIG layout from this one.
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
# Set to "false" where the node OS brings its own device plugin (Bottlerocket) or DRA allocates the GPUs.
DEVICE_PLUGIN_DEPLOY_LABEL = "nvidia.com/gpu.deploy.device-plugin"
# Set to "false" where none of the operator's operands may run (Bottlerocket): the operator then removes
# every nvidia.com/gpu.deploy.<operand> label from the node, and each operand's DaemonSet selects
# `<its label>: "true"` (NVIDIA/gpu-operator v26.7.0 controllers/state_manager.go, hasOperandsDisabled).
OPERANDS_DEPLOY_LABEL = "nvidia.com/gpu.deploy.operands"

# --- labels Karpenter sets ------------------------------------------------------------------------
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"

# --- node-local storage ---------------------------------------------------------------------------
# The resource emptyDir volumes, container layers and logs count against (LimitRange, ResourceQuota).
EPHEMERAL_STORAGE = "ephemeral-storage"

# --- GPUs -----------------------------------------------------------------------------------------
# The extended resource the device plugin advertises whole GPUs (and time-sliced shares) as.
GPU_RESOURCE = "nvidia.com/gpu"
# Every GPU node carries this taint: an untainted GPU node would take CPU pods, which would then keep
# an idle GPU node (and its bill) alive. GPU pods tolerate it; the GPU Operator's operands do too.
GPU_TAINT = {"key": GPU_RESOURCE, "value": "true", "effect": "NoSchedule"}
# The DeviceClasses NVIDIA's DRA driver chart installs (kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1,
# deployments/helm/dra-driver-nvidia-gpu/templates/deviceclass-{gpu,mig}.yaml): whole GPUs, and MIG
# devices. Claim templates request them; Kueue's deviceClassMappings map them to quota resources.
GPU_DEVICE_CLASS = "gpu.nvidia.com"
MIG_DEVICE_CLASS = "mig.nvidia.com"
DRA_DEVICE_CLASSES: tuple[str, ...] = (GPU_DEVICE_CLASS, MIG_DEVICE_CLASS)
# The resource a ResourceQuota counts a DeviceClass's claimed devices under (Kubernetes
# pkg/quota/v1/evaluator/core/resource_claims.go, V1ResourceByDeviceClass: `<class>` +
# corev1.ResourceClaimsPerClass). Kueue's quota resource for the class has the same name, so the
# ClusterQueue and the namespace's ResourceQuota count the same devices under one name.
DEVICE_CLASS_RESOURCE_SUFFIX = ".deviceclass.resource.k8s.io/devices"


def device_class_resource(device_class: str) -> str:
    """`gpu.nvidia.com` -> `gpu.nvidia.com.deviceclass.resource.k8s.io/devices`."""
    return device_class + DEVICE_CLASS_RESOURCE_SUFFIX

# --- the system node group ------------------------------------------------------------------------
# Controllers (Karpenter, the GPU Operator, Prometheus, KEDA, Kueue) select these nodes by the label
# and tolerate the taint; everything else is kept off them. The taint is in the EKS API's spelling.
SYSTEM_NODE_LABELS = {"CriticalAddonsOnly": "true", "gpu-platform/node-role": "system"}
SYSTEM_NODE_TAINT = {"key": "CriticalAddonsOnly", "value": "true", "effect": "NO_SCHEDULE"}

# --- workloads ------------------------------------------------------------------------------------
# The recommended label naming an application; Services and PodDisruptionBudgets select by it.
APP_NAME_LABEL = "app.kubernetes.io/name"
# The convention a model server's pods follow to be scraped, the platform's vLLM servers and a tenant's
# own alike: the pod carries SERVING_METRICS_LABEL: "true" and serves Prometheus text at /metrics on a
# container port named SERVING_METRICS_PORT. One PodMonitor per tenant namespace with inference
# deployments selects exactly these pods; the queue-depth trigger reads what it scrapes.
SERVING_METRICS_LABEL = "gpu-platform/serving-metrics"
SERVING_METRICS_PORT = "http"
SERVING_METRICS_PATH = "/metrics"

# --- namespaces -----------------------------------------------------------------------------------
# Every tenant namespace carries this label with the tenant's name as its value; Kueue manages the
# jobs of the namespaces that carry it, and only those. Tenants cannot relabel their namespace.
TENANT_LABEL = "gpu-platform/tenant"
# Every namespace carries this label with its own name (the API server sets it since 1.22).
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
# Pod Security admission's label prefix: `<prefix>/enforce`, `<prefix>/audit`, `<prefix>/warn`.
POD_SECURITY_LABEL = "pod-security.kubernetes.io"

# --- Kubernetes groups ----------------------------------------------------------------------------
# EKS access entries put each tenant principal into `<prefix><tenant>:admins` or `...:viewers`; the
# admission policies recognise a tenant's own request by this prefix.
TENANT_GROUP_PREFIX = "gpu-platform:"

# --- Kueue ----------------------------------------------------------------------------------------
# Kueue's own names (its queue label, priority-class label, scheduling gate) are in models/kueue/constants.py.
# Kueue's default LocalQueue name: in a namespace that has a LocalQueue called `default`, Kueue's
# webhooks label every job (and pod, deployment...) without a queue name with it
# (pkg/controller/constants.DefaultLocalQueueName, jobframework.ApplyDefaultLocalQueue*). Naming the
# tenant's one LocalQueue `default` makes unlabelled work run under the tenant's quota instead of
# waiting forever for a queue.
LOCAL_QUEUE = DEFAULT_LOCAL_QUEUE

# --- AWS tag keys ---------------------------------------------------------------------------------
# Karpenter's EC2NodeClasses find the node subnets and security group by this tag, valued with the
# cluster's name.
DISCOVERY_TAG = "karpenter.sh/discovery"

# --- storage --------------------------------------------------------------------------------------
# The cluster's default StorageClass, which Prometheus' volume claims name.
DEFAULT_STORAGE_CLASS = "gp3-encrypted"
