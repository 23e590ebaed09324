"""The attack table: what a tenant admin (the built-in `admin` role in its own namespace) tries against
other tenants or the platform, each as the request it sends, and the one guard that stops it.

Every row is evaluated against the multi-pool render (the models in models/ answer for RBAC,
admission, quotas, container defaults and IAM trust), then again with its guard taken out of the render: the
attempt must then succeed, so each guard is shown to be the thing that stops it. docs/security.md
lists the same rows, and what stays the tenant's own responsibility.
"""

from __future__ import annotations

import copy
import fnmatch
import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.node_pools import NVIDIA_TOOLKIT_SETTINGS
from config.kai import ROOT_QUEUE
from config.labels import POOL_LABEL, TENANT_LABEL
from models.aws_iam import identity_allows, trust_allows
from models.kai.constants import (
    CHART_PRIORITY_CLASSES,
    RESERVATION_NAMESPACE,
    SCALING_POD_NAMESPACE,
    SCHEDULER_NAME,
    SYSTEM_NAMESPACE,
)
from models.kai.constants import QUEUE_LABEL as KAI_QUEUE_LABEL
from models.kai.sharing import CONFIG_MAP_ANNOTATION as KAI_CONFIG_MAP_ANNOTATION
from models.kai.sharing import mutated
from models.kubernetes import preemption
from models.kubernetes.admission import Request, admission_denials
from models.kubernetes.limitranger import with_container_defaults
from models.kubernetes.networkpolicy import Endpoint, connection_allowed
from models.kubernetes.resourcequota import exceeded, quota_denials
from models.kubernetes.user import SERVICE_ACCOUNT_USERNAME_PREFIX, User, service_account
from models.kueue.constants import ADMISSION_SCHEDULING_GATE as KUEUE_SCHEDULING_GATE
from models.kueue.constants import MANAGED_LABEL, SUSPENDED_BY_PARENT_ANNOTATION
from models.kueue.webhooks import default_job, default_pod, default_pod_template_owner
from models.prometheus.scrape import relabel, scraped
from offline.engine import Recording
from offline.upstream import chart_values

from .builders import kueue_manager_config
from .conftest import render, render_fixture
from .guards import rbac_allows
from .recorded import kubernetes_objects

TENANT = "data-science"
ACCOUNT, CLUSTER = "111122223333", "gpu-prod"
ADMIN = User(f"arn:aws:sts::{ACCOUNT}:assumed-role/DataScienceAdmin/alice", (f"gpu-platform:{TENANT}:admins",))
OTHER_TENANT = "llm-training"
# Every identity a tenant admin can act as. `admin` may impersonate the namespace's service accounts and
# mint their tokens; it may bind `edit` in its namespace to any service account, another tenant's too,
# whose token that tenant's admin can mint (or a principal that is admin of both tenants).
IDENTITIES = {
    "tenant-admin": ADMIN,
    "tenant-service-account": service_account(TENANT, "builder"),
    "another-tenants-service-account": service_account(OTHER_TENANT, "default"),
    "admin-of-two-tenants": User(
        f"arn:aws:sts::{ACCOUNT}:assumed-role/MLPlatformOnCall/carol",
        (f"gpu-platform:{TENANT}:admins", f"gpu-platform:{OTHER_TENANT}:admins"),
    ),
    # data-science's `viewers` (the fixture's DataScienceAnalyst), bound to `view`: RBAC refuses its writes,
    # and admission would refuse them too.
    "tenant-viewer": User(f"arn:aws:sts::{ACCOUNT}:assumed-role/DataScienceAnalyst/dave", (f"gpu-platform:{TENANT}:viewers",)),
}
VIEWER = "tenant-viewer"
TENANT_SERVICE_ACCOUNT = IDENTITIES["tenant-service-account"]
JOB_CONTROLLER = service_account("kube-system", "job-controller")
KUEUE = service_account("kueue-system", "kueue-controller-manager")
# Whoever runs `pulumi up`: an EKS cluster admin (cluster.admins), in no tenant group.
DEPLOYER = User(f"arn:aws:sts::{ACCOUNT}:assumed-role/PlatformDeploy/ci", ())
TINY_JOB_UID = "5b1c0c7e-0000-4000-8000-000000000001"


Objects = list[dict[str, Any]]


# The rows about pools the KAI Scheduler schedules run against tests/fixtures/kai/kai-fractional.yaml (multi-pool's
# cluster and tenants, a whole-GPU L40S pool and `gpu-l4-kai`, eight L4s KAI schedules, data-science's alone).
KAI_STACK = "kai-fractional"
KAI_FIXTURE = Path(__file__).resolve().parent / "fixtures" / "kai" / f"{KAI_STACK}.yaml"
KAI_POOL, WHOLE_GPU_POOL = "gpu-l4-kai", "gpu-l40s"


@functools.cache
def kai_recording() -> Recording:
    """The KAI fixture rendered once for every module that reads it (this table and tests/test_kai.py)."""
    return render(yaml.safe_load(KAI_FIXTURE.read_text())["config"], KAI_STACK)


@functools.cache
def _rendered(stack: str) -> tuple[str, ...]:
    recording = kai_recording() if stack == KAI_STACK else render_fixture(stack)
    manifests = [json.dumps(r.inputs) for r in kubernetes_objects(recording)]
    roles = [json.dumps({"kind": "aws:iam/role:Role", **r.inputs}) for r in recording.by_type("aws:iam/role:Role")]
    queues = [
        json.dumps({"kind": "aws:sqs/queuePolicy:QueuePolicy", **r.inputs})
        for r in recording.by_type("aws:sqs/queuePolicy:QueuePolicy")
    ]
    role_policies = [
        json.dumps({"kind": "aws:iam/rolePolicy:RolePolicy", **r.inputs})
        for r in recording.by_type("aws:iam/rolePolicy:RolePolicy")
    ]
    return (*manifests, *roles, *queues, *role_policies)


def rendered(stack: str = "multi-pool") -> Objects:
    """A fresh copy of the render's objects (Kubernetes manifests and IAM roles' inputs): rows may edit it."""
    return [json.loads(text) for text in _rendered(stack)]


def tenant_labels(objects: Objects) -> dict[str, str]:
    [namespace] = [o for o in objects if o["kind"] == "Namespace" and o["metadata"]["name"] == TENANT]
    return namespace["metadata"]["labels"]


def request(objects: Objects, operation: str, api_group: str, resource: str, user: User = ADMIN, **objs: Any) -> Request:
    return Request(
        operation, api_group, resource, TENANT, user, objs.get("object"), objs.get("old"), tenant_labels(objects),
        objs.get("options"),
    )


def pod(**spec: Any) -> dict[str, Any]:
    metadata = spec.pop("metadata", {})
    containers = spec.pop("containers", [{"name": "main", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"}])
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": TENANT, **metadata},
        "spec": {"containers": containers, **spec},
    }


OWNED_BY_TINY_JOB = {
    "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "tiny", "uid": TINY_JOB_UID, "controller": True}]
}
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


# --- the attempts: each returns True when it is stopped ----------------------------------------------


@dataclass(frozen=True)
class Sent:
    """One API request in a tenant namespace, and the RBAC verb it takes (None: no built-in role grants it,
    so admission is the only guard a custom role could leave).

    `by`: the controller that sends it on the tenant's behalf (a pod the ReplicaSet controller makes from
    a template the tenant edited); None when the tenant sends it. `step`: then the tenant's own request
    (verb, API group, resource) that RBAC must allow for the attempt to be the tenant's to make."""

    verb: str | None
    operation: str
    api_group: str
    resource: str
    object: dict[str, Any] | None = None
    old: dict[str, Any] | None = None
    by: User | None = None
    step: tuple[str, str, str] | None = None
    options: dict[str, Any] | None = None

    def tenant_request(self) -> tuple[str, str, str] | None:
        """What the tenant itself asks RBAC for: its step, or the request itself when no controller sends it."""
        if self.step is not None:
            return self.step
        return None if self.verb is None else (self.verb, self.api_group, self.resource)


def granted_to(objects: Objects, user: User) -> Objects:
    """The tenant admin's `kubectl create rolebinding x --clusterrole=edit --serviceaccount=<ns>:<name>`."""
    if not user.username.startswith(SERVICE_ACCOUNT_USERNAME_PREFIX):
        return objects
    namespace, name = user.username.removeprefix(SERVICE_ACCOUNT_USERNAME_PREFIX).split(":")
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": f"edit-{namespace}-{name}", "namespace": TENANT},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
    }
    return [*objects, binding]


def created(**spec: Any) -> dict[str, Any]:
    """A tenant's bare pod as validating admission receives it: gated by Kueue's pod webhook."""
    return kueue_defaults("pod", pod(**spec))


def nvidia_env_in_pod(objects: Objects) -> Sent:
    attack = created(
        tolerations=[GPU_TOLERATION],
        containers=[{"name": "main", "image": "busybox:1.36", "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}],
    )
    return Sent("create", "CREATE", "", "pods", attack)


def nvidia_env_from_prefix_in_an_init_container(objects: Objects) -> Sent:
    """`NVIDIA` + a ConfigMap key `_VISIBLE_DEVICES` makes NVIDIA_VISIBLE_DEVICES."""
    init = {"name": "setup", "image": "busybox:1.36", "envFrom": [{"prefix": "NVIDIA", "configMapRef": {"name": "gpus"}}]}
    return Sent("create", "CREATE", "", "pods", created(tolerations=[GPU_TOLERATION], initContainers=[init]))


def nvidia_env_in_ephemeral_container(objects: Objects) -> Sent:
    before = pod()
    after = pod(
        ephemeralContainers=[
            {"name": "debug", "image": "busybox:1.36", "envFrom": [{"prefix": "NVIDIA_", "secretRef": {"name": "s"}}]}
        ]
    )
    return Sent(None, "UPDATE", "", "pods/ephemeralcontainers", after, before)


def nvidia_env_in_image(objects: Objects) -> bool:
    """A CUDA base image sets NVIDIA_VISIBLE_DEVICES=all in its own ENV, which no admission sees: the
    node's toolkit decides. Stopped when every AL2023 GPU node class tells it to ignore the variable
    from unprivileged containers (tenants' Pod Security forbids privileged ones)."""
    classes = [
        o for o in objects if o["kind"] == "EC2NodeClass" and o["spec"]["amiSelectorTerms"][0]["alias"].startswith("al2023")
    ]
    gpu_classes = [c for c in classes if c["metadata"]["name"] != "cpu"]
    assert gpu_classes, "the fixture has AL2023 GPU pools"
    return all(
        toolkit_settings(c["spec"].get("userData", "")).get("accept-nvidia-visible-devices-envvar-when-unprivileged") == "false"
        for c in gpu_classes
    )


def toolkit_settings(user_data: str) -> dict[str, str]:
    """The toolkit keys the user data's `nvidia-ctk config --in-place --set k=v ...` line sets."""
    settings: dict[str, str] = {}
    for line in user_data.splitlines():
        if line.startswith("nvidia-ctk config --in-place"):
            settings.update(re.findall(r"--set ([\w-]+)=(\S+)", line))
    return settings


def pod_owned_by_a_tiny_job(objects: Objects) -> Sent:
    attack = pod(metadata=OWNED_BY_TINY_JOB, tolerations=[GPU_TOLERATION], nodeSelector={"gpu-platform/node-pool": "gpu-h100"})
    return Sent("create", "CREATE", "", "pods", attack)


def replica_set_owned_by_a_tiny_job(objects: Objects) -> Sent:
    attack = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "rs", "namespace": TENANT, **OWNED_BY_TINY_JOB},
        "spec": {"replicas": 8, "selector": {"matchLabels": {"a": "b"}}, "template": pod()},
    }
    return Sent("create", "CREATE", "apps", "replicasets", attack)


def kueue_gate_lifted_by_hand(objects: Objects) -> Sent:
    gated = pod(schedulingGates=[{"name": KUEUE_SCHEDULING_GATE}])
    return Sent("update", "UPDATE", "", "pods", pod(), gated)


def default_deny(objects: Objects) -> dict[str, Any]:
    [deny] = [
        o for o in objects if o["kind"] == "NetworkPolicy" and o["metadata"] == {"name": "default-deny-all", "namespace": TENANT}
    ]
    return deny


def default_deny_deleted(objects: Objects) -> Sent:
    return Sent("delete", "DELETE", "networking.k8s.io", "networkpolicies", None, default_deny(objects))


def allow_all_created(objects: Objects) -> Sent:
    allow_all = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "allow-all", "namespace": TENANT},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"], "ingress": [{}], "egress": [{}]},
    }
    return Sent("create", "CREATE", "networking.k8s.io", "networkpolicies", allow_all)


def system_priority_pod(objects: Objects) -> bool:
    return bool(quota_denials(objects, pod(priorityClassName="system-node-critical"), TENANT))


def pod_at_a_priority_class(name: str) -> Callable[[Objects], Sent]:
    """A tenant pod naming one of the PriorityClasses KAI's chart creates: on a node full of another tenant's pods
    (priority 0), kube-scheduler evicts them to place it, though Kueue admitted both within quota."""
    def sent(objects: Objects) -> Sent:
        attack = created(priorityClassName=name, tolerations=[GPU_TOLERATION])
        node = preemption.Node("shared-h100", {"nvidia.com/gpu": 8},
                               (preemption.Pod(f"{OTHER_TENANT}/train", 0, {"nvidia.com/gpu": 8}),))
        evicted = preemption.victims_on_node(preemption.Pod("p", CHART_PRIORITY_CLASSES[name], {"nvidia.com/gpu": 8}), node)
        assert evicted == list(node.pods), "the class evicts the other tenant's pod once admitted"
        return Sent("create", "CREATE", "", "pods", attack)

    return sent


def job_pods_at_the_inference_priority(objects: Objects) -> Sent:
    """The tenant's Job names the class in its pod template: the Job controller creates the pods (and Kueue, with no
    WorkloadPriorityClass label, gives the Workload the class's value)."""
    template = {**pod(tolerations=[GPU_TOLERATION])["spec"], "restartPolicy": "Never", "priorityClassName": "inference"}
    job = suspended("Job", "batch/v1", {"template": {"spec": template}})
    created_pod = kueue_defaults("pod", pod_of(job, job["spec"]["template"]), job)
    return Sent("create", "CREATE", "", "pods", created_pod, by=JOB_CONTROLLER, step=("create", "batch", "jobs"))


def kai_pod(pool: str = KAI_POOL, scheduler: str | None = SCHEDULER_NAME, queue: str | None = TENANT,
            annotations: dict[str, str] | None = None, **container: Any) -> dict[str, Any]:
    """A tenant's bare pod on the KAI fixture as validating admission receives it: gated by Kueue's pod webhook."""
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04", **container}],
        "nodeSelector": {POOL_LABEL: pool},
        "tolerations": [GPU_TOLERATION],
    }
    if scheduler is not None:
        spec["schedulerName"] = scheduler
    labels = {} if queue is None else {KAI_QUEUE_LABEL: queue}
    obj = pod(metadata={"labels": labels, "annotations": dict(annotations or {})}, **spec)
    return default_pod(obj, {}, *kai_kueue_settings())


@functools.cache
def kai_kueue_settings() -> tuple[tuple[str, ...], bool]:
    """The KAI render's Kueue frameworks and manageJobsWithoutQueueName, parsed once."""
    config = kueue_manager_config(kai_recording())
    return tuple(config["integrations"]["frameworks"]), bool(config["manageJobsWithoutQueueName"])


def kai_pod_sent(**changes: Any) -> Callable[[Objects], Sent]:
    """The pod as validation receives it: after KAI's webhook, which takes the pods naming its scheduler only."""
    def sent(objects: Objects) -> Sent:
        obj = kai_pod(**changes)
        kais = obj["spec"].get("schedulerName") == SCHEDULER_NAME
        return Sent("create", "CREATE", "", "pods", mutated(obj, KAI_PREFIX) if kais else obj)

    return sent


def job_labelled_with_another_tenants_kai_queue(objects: Objects) -> Sent:
    """KAI's pod grouper reads the queue label of the pod's top owner before the pod's own."""
    job = {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "j", "namespace": TENANT, "labels": {KAI_QUEUE_LABEL: OTHER_TENANT}},
        "spec": {"suspend": True, "template": {"spec": {"containers": [{"name": "m", "image": "busybox:1.36"}],
                                                        "restartPolicy": "Never"}}},
    }
    return Sent("create", "CREATE", "batch", "jobs", job)


def pod_in_kais_own_namespaces(objects: Objects) -> bool:
    """A pod in KAI's reservation or scale-adjust namespace, as KAI's binder makes them: a whole GPU outside every
    tenant's Kueue quota; or one in KAI's own namespace, beside its scheduler."""
    namespaces = (RESERVATION_NAMESPACE, SCALING_POD_NAMESPACE, SYSTEM_NAMESPACE)
    writers = [who for who in IDENTITIES if who != VIEWER]
    return not any(
        rbac_allows(granted_to(objects, IDENTITIES[who]), IDENTITIES[who], verb, "", "pods", namespace)
        for who in writers for verb in ("create", "update", "patch", "delete") for namespace in namespaces
    )


# KAI's GPU sharing (models/kai/sharing.py): each pod as validation receives it, after KAI's webhook (`mutated`).
KAI_PREFIX = "p-x7k2p9q-shared-gpu"
KAI_SHARING_CONFIG_MAP = f"{KAI_PREFIX}-0"
VOIDED = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}]
WHOLE_GPU = {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}
CUDA_SIDECAR = {"name": "sidecar", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"}


def kai_handed_on(**changes: Any) -> dict[str, Any]:
    return mutated(kai_pod(**changes), KAI_PREFIX)


def kai_pod_handed_on_sent(first_env: list[dict[str, Any]] | None = None, **changes: Any) -> Callable[[Objects], Sent]:
    """A KAI pod as KAI's webhook hands it on, its first container's env then replaced by `first_env` (what a
    tenant's literal or reference in that container comes to when KAI does not overwrite it)."""
    def sent(objects: Objects) -> Sent:
        obj = kai_handed_on(**changes)
        if first_env is not None:
            obj["spec"]["containers"][0]["env"] = first_env
        return Sent("create", "CREATE", "", "pods", obj)

    return sent


def kai_reference(name: str) -> list[dict[str, Any]]:
    ref = {"configMapKeyRef": {"name": name, "key": "NVIDIA_VISIBLE_DEVICES"}}
    return [{"name": "NVIDIA_VISIBLE_DEVICES", "valueFrom": ref}]


def kai_reference_on_a_default_scheduler_pod(objects: Objects) -> Sent:
    """KAI's exact form, annotation and reference, on a pod of the whole-GPU pool that KAI does not schedule."""
    obj = kai_pod(pool=WHOLE_GPU_POOL, scheduler=None, queue=None)
    obj["metadata"]["annotations"][KAI_CONFIG_MAP_ANNOTATION] = KAI_PREFIX
    obj["spec"]["containers"][0]["env"] = kai_reference(KAI_SHARING_CONFIG_MAP)
    return Sent("create", "CREATE", "", "pods", obj)


def unvoided_ephemeral_container_beside_a_fraction(objects: Objects) -> Sent:
    """`kubectl debug` into a running fractional pod: KAI's webhook sees pod CREATE only, so nothing voids the
    CUDA image's NVIDIA_VISIBLE_DEVICES=all in the ephemeral container, on a node that honours it."""
    before = kai_handed_on(annotations=FRACTION)
    after = copy.deepcopy(before)
    after["spec"]["ephemeralContainers"] = [{"name": "debug", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"}]
    return Sent(None, "UPDATE", "", "pods/ephemeralcontainers", after, before)


def kai_sharing_config_map(data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": KAI_SHARING_CONFIG_MAP, "namespace": TENANT},
            "data": data}


def kai_sharing_config_map_written(operation: str) -> Callable[[Objects], Sent]:
    """The tenant's own write of a fraction's ConfigMap: made before the pod is admitted (the binder then finds it
    and keeps its data), edited after binding, or deleted."""
    bound = kai_sharing_config_map({"NVIDIA_VISIBLE_DEVICES": "k8s.device-plugin.nvidia.com/gpu=3", "GPU_PORTION": "0.5"})
    every_gpu = kai_sharing_config_map({"NVIDIA_VISIBLE_DEVICES": "all", "GPU_PORTION": "0.5"})

    def sent(objects: Objects) -> Sent:
        if operation == "CREATE":
            return Sent("create", "CREATE", "", "configmaps", every_gpu)
        if operation == "UPDATE":
            return Sent("update", "UPDATE", "", "configmaps", every_gpu, bound)
        return Sent("delete", "DELETE", "", "configmaps", None, bound)

    return sent


def image_registry_spelled_to_escape_the_signature_policy(image: str) -> Callable[[Objects], Sent]:
    def sent(objects: Objects) -> Sent:
        return Sent("create", "CREATE", "", "pods", created(initContainers=[{"name": "fetch", "image": image}]))

    return sent


def service_external_ips(objects: Objects) -> Sent:
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s", "namespace": TENANT},
        "spec": {"ports": [{"port": 443}], "externalIPs": ["10.0.32.10"]},
    }
    return Sent("create", "CREATE", "", "services", service)


def volumes_fill_the_account(objects: Objects) -> bool:
    """One claim of 6 TiB of EBS: a tenant without a storage quota spends the account's volume limits."""
    claim = {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "6Ti"}}}}
    return bool(exceeded(objects, TENANT, "", "persistentvolumeclaims", claim))


def etcd_filled_with_config_maps(objects: Objects) -> bool:
    """The 1001st ConfigMap of a namespace (each up to 1 MiB in etcd, which every tenant shares)."""
    return bool(exceeded(objects, TENANT, "", "configmaps", {}, used={"configmaps": "1000"}))


def without_hard(resource: str) -> Callable[[Objects], Objects]:
    def remove(objects: Objects) -> Objects:
        for o in objects:
            if o["kind"] == "ResourceQuota" and o["metadata"]["namespace"] == TENANT:
                o["spec"]["hard"].pop(resource, None)
        return objects

    return remove


def unbounded_scratch(objects: Objects) -> bool:
    """A pod that declares no storage limit writes until the node's disk is full and the kubelet evicts
    its neighbours; with a limit, the kubelet evicts that pod alone."""
    defaulted = with_container_defaults(objects, pod(), TENANT)
    return all("ephemeral-storage" in c.get("resources", {}).get("limits", {}) for c in defaulted["spec"]["containers"])


def alertmanager_reached(objects: Objects) -> bool:
    """A tenant pod silencing alerts (or reading every tenant's metrics from Prometheus) in `monitoring`."""
    tenant_pod = Endpoint(TENANT, "10.30.64.10", {"app": "notebook"}, tenant_labels(objects))
    alertmanager = Endpoint("monitoring", "10.30.32.20", {"app.kubernetes.io/name": "alertmanager"})
    return not any(connection_allowed(objects, tenant_pod, alertmanager, port) for port in (9093, 9090))


def unsigned_image(objects: Objects) -> bool:
    """A pod running an image from a registry a supply-chain policy covers, unsigned. Kyverno's CEL
    library (verifyImageSignatures) is not evaluated offline: the policy is checked structurally to
    deny, fail closed, bind this namespace's pods, match the image and verify every container list."""
    image = "ghcr.io/acme-ai/trainer:1.0"
    for policy in (o for o in objects if o["kind"] == "ImageValidatingPolicy"):
        spec = policy["spec"]
        rules = spec["matchConstraints"]["resourceRules"]
        checked = " ".join(v["expression"] for v in spec["validations"])
        if (
            spec["validationActions"] == ["Deny"]
            and spec["failurePolicy"] == "Fail"
            and _selects_namespace(spec["matchConstraints"]["namespaceSelector"], tenant_labels(objects))
            and any("pods" in r["resources"] and "CREATE" in r["operations"] for r in rules)
            and any(fnmatch.fnmatchcase(image, m["glob"]) for m in spec["matchImageReferences"])
            and all(f"images.{kind}.all(" in checked for kind in ("containers", "initContainers", "ephemeralContainers"))
            and "verifyImageSignatures" in checked
            and spec["attestors"]
        ):
            return True
    return False


def _selects_namespace(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    return (
        all((e["key"] in labels) == (e["operator"] == "Exists") for e in selector.get("matchExpressions", ()))
        and selector.get("matchLabels", {}).items() <= labels.items()
    )


# What a tenant's model server can expose to pass for the platform's GPU series: another node's row-remap
# failure (pages PagerDuty, the runbook drains the node) and a MIG instance's activity on a victim's GPU.
FORGED = [
    {"__name__": "DCGM_FI_DEV_ROW_REMAP_FAILURE", "hostname": "node-b", "gpu": "3", "job": "nvidia-dcgm-exporter"},
    {"__name__": "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "Hostname": "node-a", "gpu": "0", "GPU_I_PROFILE": "1g.10gb"},
    {"__name__": "vllm:num_requests_waiting", "model_name": "m", "engine": "0", "hostname": "node-a", "namespace": "inference"},
]


def serving_scrape(objects: Objects) -> list[dict[str, str] | None]:
    """FORGED as the tenant's serving PodMonitor stores them (None: dropped)."""
    [monitor] = [o for o in objects if o["kind"] == "PodMonitor" and o["metadata"]["namespace"] == TENANT]
    [endpoint] = monitor["spec"]["podMetricsEndpoints"]
    target = {"job": f"{TENANT}/{monitor['metadata']['name']}", "namespace": TENANT, "pod": "server-0",
              "instance": "10.30.64.10:8000", "container": "server", "endpoint": endpoint["port"]}
    return [relabel(scraped(series, target), endpoint.get("metricRelabelings", ())) for series in FORGED]


def platform_series_forged(objects: Objects) -> bool:
    """Stopped when no DCGM-named series is stored and the kept serving series carries no label beyond its
    own and the scrape's (its forged `hostname` and `namespace` gone)."""
    dcgm_row, dcgm_mig, queue = serving_scrape(objects)
    return dcgm_row is None and dcgm_mig is None and queue is not None and set(queue) == {
        "__name__", "model_name", "engine", "job", "namespace", "pod", "instance", "container", "endpoint"
    } and queue["namespace"] == TENANT


def without_metric_relabelings(objects: Objects) -> Objects:
    for o in objects:
        if o["kind"] == "PodMonitor":
            for endpoint in o["spec"]["podMetricsEndpoints"]:
                endpoint.pop("metricRelabelings", None)
    return objects


def rbac_denies(verb: str, api_group: str, resource: str) -> Callable[[Objects], bool]:
    def attempt(objects: Objects) -> bool:
        return not rbac_allows(objects, ADMIN, verb, api_group, resource, TENANT)

    return attempt


def assume_role(role: str, context: dict[str, str], service: str) -> Callable[[Objects], bool]:
    def attempt(objects: Objects) -> bool:
        [found] = [o for o in objects if o["kind"] == "aws:iam/role:Role" and o["name"] == role]
        return not trust_allows(json.loads(found["assumeRolePolicy"]), service, context)

    return attempt


def interruption_sent(context: dict[str, str], service: str) -> Callable[[Objects], bool]:
    """A message in Karpenter's interruption queue drains a node: stopped when the queue's policy refuses it."""

    def attempt(objects: Objects) -> bool:
        [found] = [o for o in objects if o["kind"] == "aws:sqs/queuePolicy:QueuePolicy"]
        return not trust_allows(json.loads(found["policy"]), service, context)

    return attempt


def without_queue_conditions(objects: Objects) -> Objects:
    for o in objects:
        if o["kind"] == "aws:sqs/queuePolicy:QueuePolicy":
            document = json.loads(o["policy"])
            for statement in document["Statement"]:
                if statement["Effect"] == "Allow":
                    statement.pop("Condition")
            o["policy"] = json.dumps(document)
    return objects


def pod_identity_context(namespace: str, service_account: str, cluster: str = CLUSTER) -> dict[str, str]:
    return {
        "aws:SourceAccount": ACCOUNT,
        "aws:RequestTag/eks-cluster-name": cluster,
        "aws:RequestTag/kubernetes-namespace": namespace,
        "aws:RequestTag/kubernetes-service-account": service_account,
    }


# --- Kueue's paths: every pod gated or a suspended job's, and only Kueue resumes ------------------------
# Each attempt is built as the API server's validating phase receives it: after Kueue's mutating webhooks
# (models/kueue/webhooks.py) over the namespace's objects, with the rendered Kueue Configuration.

REPLICA_SET_CONTROLLER = service_account("kube-system", "replicaset-controller")
DEPLOYMENT_UID, REPLICA_SET_UID = "5b1c0c7e-0000-4000-8000-0000000000d1", "5b1c0c7e-0000-4000-8000-0000000000r1"
JOBSET_UID = "5b1c0c7e-0000-4000-8000-0000000000j5"
WEEK_SECONDS = 7 * 24 * 3600
# What the attacks' pods ask for: a system node, every taint tolerated, GPUs.
ANYWHERE = {
    "nodeSelector": {"gpu-platform/node-pool": "system"},
    "tolerations": [{"operator": "Exists"}],
}
GPUS = {"resources": {"limits": {"nvidia.com/gpu": "8"}, "requests": {"nvidia.com/gpu": "8"}}}


@functools.cache
def _kueue_settings() -> tuple[tuple[str, ...], bool]:
    config = kueue_manager_config(render_fixture("multi-pool"))
    return tuple(config["integrations"]["frameworks"]), bool(config["manageJobsWithoutQueueName"])


def kueue_defaults(kind: str, obj: dict[str, Any], *owners: dict[str, Any]) -> dict[str, Any]:
    """`obj` after Kueue's mutating webhooks, in a namespace holding `owners`."""
    frameworks, without_queue_name = _kueue_settings()
    by_uid = {o["metadata"]["uid"]: o for o in owners}
    if kind == "pod":
        return default_pod(obj, by_uid, frameworks, without_queue_name)
    if kind == "job":
        return default_job(obj, by_uid, frameworks, without_queue_name)
    return default_pod_template_owner(obj, frameworks)


def reference(owner: dict[str, Any]) -> dict[str, Any]:
    meta = owner["metadata"]
    return {
        "apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": meta["name"], "uid": meta["uid"], "controller": True
    }


def managed_deployment() -> dict[str, Any]:
    """A tenant's Deployment as Kueue's webhook leaves it (its template marked for gating)."""
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": TENANT, "uid": DEPLOYMENT_UID},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {**pod(), "metadata": {"labels": {"app": "web"}}}},
    }
    return kueue_defaults("template", deployment)


def edited_replica_set(deployment: dict[str, Any]) -> dict[str, Any]:
    """The Deployment's ReplicaSet after `kubectl rollout pause` and an edit of its template: Kueue's annotation
    and label gone, a system node selector, every taint tolerated, eight GPUs."""
    template = copy.deepcopy(deployment["spec"]["template"])
    template["metadata"]["annotations"].pop(SUSPENDED_BY_PARENT_ANNOTATION)
    template["metadata"]["labels"].pop(MANAGED_LABEL)
    template["spec"].update(copy.deepcopy(ANYWHERE))
    template["spec"]["containers"][0].update(copy.deepcopy(GPUS))
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web-5d8f", "namespace": TENANT, "uid": REPLICA_SET_UID, "ownerReferences": [reference(deployment)]},
        "spec": {"replicas": 8, "selector": deployment["spec"]["selector"], "template": template},
    }


def pod_of(owner: dict[str, Any], template: dict[str, Any]) -> dict[str, Any]:
    """The pod a controller creates from `template`, owned by `owner`."""
    metadata = {
        **copy.deepcopy(template.get("metadata") or {}), "name": "p", "namespace": TENANT, "ownerReferences": [reference(owner)]
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": copy.deepcopy(template["spec"])}


def pods_of_an_edited_replica_set(objects: Objects) -> Sent:
    """The ReplicaSet controller makes the pods; Kueue's pod webhook follows pod -> ReplicaSet -> managed
    Deployment, finds a managed ancestor and adds no gate."""
    deployment = managed_deployment()
    replica_set = edited_replica_set(deployment)
    created = kueue_defaults("pod", pod_of(replica_set, replica_set["spec"]["template"]), deployment, replica_set)
    assert "schedulingGates" not in created["spec"], "Kueue's webhook gates the edited template's pods"
    return Sent("create", "CREATE", "", "pods", created, by=REPLICA_SET_CONTROLLER, step=("update", "apps", "replicasets"))


def suspended(kind: str, api_version: str, spec: dict[str, Any]) -> dict[str, Any]:
    """A tenant's job as Kueue's webhook creates it: suspended."""
    job = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "big", "namespace": TENANT, "uid": "u"}, "spec": spec}
    created = kueue_defaults("job", job)
    assert created["spec"]["suspend"] is True
    return created


JOB_SPEC = {"template": {"spec": {**pod(terminationGracePeriodSeconds=WEEK_SECONDS)["spec"], "restartPolicy": "Never"}}}
RESUMABLE: dict[str, tuple[str, str, str, str, dict[str, Any]]] = {
    "job": ("batch", "jobs", "Job", "batch/v1", JOB_SPEC),
    "jobset": ("jobset.x-k8s.io", "jobsets", "JobSet", "jobset.x-k8s.io/v1alpha2",
               {"replicatedJobs": [{"name": "w", "replicas": 4, "template": {"spec": JOB_SPEC}}]}),
    "trainjob": ("trainer.kubeflow.org", "trainjobs", "TrainJob", "trainer.kubeflow.org/v1alpha1",
                 {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 4}}),
}


def resumed_by_its_tenant(which: str) -> Callable[[Objects], Sent]:
    """`kubectl patch --type merge -p '{"spec":{"suspend":false}}'` on the tenant's own suspended job: its pods
    (a week's grace period each) start before Kueue suspends it again."""
    group, plural, kind, api_version, spec = RESUMABLE[which]

    def sent(objects: Objects) -> Sent:
        before = suspended(kind, api_version, copy.deepcopy(spec))
        after = copy.deepcopy(before)
        after["spec"]["suspend"] = False
        return Sent("patch", "UPDATE", group, plural, after, before)

    return sent


def running_job() -> dict[str, Any]:
    """The tenant's one-pod Job as Kueue resumes it after admitting it."""
    job = suspended("Job", "batch/v1", {**copy.deepcopy(JOB_SPEC), "parallelism": 1, "completions": 1})
    job["spec"]["suspend"] = False
    return job


def job_resized_while_running(objects: Objects) -> Sent:
    """The admitted one-pod Job scaled to eight: the Job controller starts seven more pods (a Job's, ungated) at
    once; Kueue then finds no matching Workload, stops the Job and deletes the Workload, freeing its quota
    while the pods take their week-long grace period to stop."""
    before = running_job()
    after = copy.deepcopy(before)
    after["spec"]["parallelism"] = after["spec"]["completions"] = 8
    return Sent("patch", "UPDATE", "batch", "jobs", after, before)


def admitted_jobset() -> dict[str, Any]:
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "tiny", "namespace": TENANT, "uid": JOBSET_UID}, "spec": {"suspend": False}}


def job_under_an_admitted_jobset(objects: Objects) -> Sent:
    """A Job naming the tenant's small admitted JobSet as its controller: Kueue's job webhook finds the
    managed ancestor and leaves it running, and its pods ungated."""
    jobset = admitted_jobset()
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "big", "namespace": TENANT, "uid": "u", "ownerReferences": [reference(jobset)]},
           "spec": {**copy.deepcopy(JOB_SPEC), "parallelism": 8}}
    created = kueue_defaults("job", job, jobset)
    assert "suspend" not in created["spec"], "Kueue's webhook suspends the Job"
    return Sent("create", "CREATE", "batch", "jobs", created)


def job_pod_with_a_weeks_grace(objects: Objects) -> Sent:
    """The Job controller creates the pods of the tenant's Job with a week-long grace period: when Kueue preempts
    or evicts the Job, it frees the quota as soon as the pods are terminating, and they run on for a week."""
    job = suspended("Job", "batch/v1", copy.deepcopy(JOB_SPEC))
    created_pod = kueue_defaults("pod", pod_of(job, job["spec"]["template"]), job)
    assert created_pod["spec"]["terminationGracePeriodSeconds"] == WEEK_SECONDS
    return Sent("create", "CREATE", "", "pods", created_pod, by=JOB_CONTROLLER, step=("create", "batch", "jobs"))


def admitted_job_pod() -> dict[str, Any]:
    job = running_job()
    return kueue_defaults("pod", pod_of(job, job["spec"]["template"]), job)


def pod_deleted_with_a_weeks_grace(objects: Objects) -> Sent:
    """`kubectl delete pod --grace-period=604800` on a running Job pod: no longer active, so the Job controller
    replaces it under the same admission while it runs on for a week."""
    return Sent("delete", "DELETE", "", "pods", None, admitted_job_pod(), options={
        "apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions", "gracePeriodSeconds": WEEK_SECONDS,
    })


def pod_evicted_with_a_weeks_grace(objects: Objects) -> Sent:
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "p", "namespace": TENANT},
        "deleteOptions": {"gracePeriodSeconds": WEEK_SECONDS},
    }
    return Sent("create", "CREATE", "", "pods/eviction", eviction)


def pod_with_a_named_claim(objects: Objects) -> Sent:
    """A pod naming a ResourceClaim the tenant created: Kueue charges claim templates' devices, not this one's."""
    bare = pod(resourceClaims=[{"name": "gpus", "resourceClaimName": "eight-gpus"}])
    bare["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpus"}]}
    return Sent("create", "CREATE", "", "pods", kueue_defaults("pod", bare))


# --- private images: pulled with the tenant's own credentials, never from another tenant's cache --------

OTHER_TENANTS_IMAGE = f"{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com/{OTHER_TENANT}/trainer"


def private_image_reused_from_the_node(container: dict[str, Any], where: str) -> Callable[[Objects], Sent]:
    """A pod naming another tenant's private image with no credentials for it, on a node where that tenant's pod
    pulled it: with IfNotPresent (the API server's default for a tagged or digested image) the kubelet starts
    the node's copy without asking the registry."""

    def sent(objects: Objects) -> Sent:
        return Sent("create", "CREATE", "", "pods", created(**{where: [container]}))

    return sent


def external_secret_from(source: dict[str, Any]) -> Callable[[Objects], Sent]:
    """An ExternalSecret reading through a cluster-wide source, which reads as its own role for every namespace."""

    def sent(objects: Objects) -> Sent:
        external_secret = {
            "apiVersion": "external-secrets.io/v1",
            "kind": "ExternalSecret",
            "metadata": {"name": "pull", "namespace": TENANT},
            "spec": {"refreshInterval": "1h", "target": {"name": "pull"}, **source},
        }
        return Sent("create", "CREATE", "external-secrets.io", "externalsecrets", external_secret)

    return sent


def pull_policies(objects: Objects) -> list[dict[str, Any]]:
    """The permissions of the tenant's image-pull role and of every node role, as the render declares them."""
    roles = {f"{CLUSTER}-image-pull-{TENANT}", f"{CLUSTER}-system-node", f"{CLUSTER}-karpenter-node"}
    found = [json.loads(o["policy"]) for o in objects if o["kind"] == "aws:iam/rolePolicy:RolePolicy" and o["role"] in roles]
    assert len(found) == len(roles), "the tenant's pull role and the node roles each carry one policy"
    return found


def another_tenants_private_image_pulled(objects: Objects) -> bool:
    """data-science's pods pull with its `ecr-pull` Secret (its role) or the node's role: neither reaches
    llm-training's repositories."""
    [region] = {o["spec"]["region"] for o in objects if o["kind"] == "ECRAuthorizationToken"}
    repository = f"arn:aws:ecr:{region}:{ACCOUNT}:repository/{OTHER_TENANT}/trainer"
    return not any(identity_allows(p, "ecr:BatchGetImage", repository) for p in pull_policies(objects))


def pull_role_reaching_every_repository(objects: Objects) -> Objects:
    for o in objects:
        if o["kind"] == "aws:iam/rolePolicy:RolePolicy" and o["role"] == f"{CLUSTER}-image-pull-{TENANT}":
            document = json.loads(o["policy"])
            for statement in document["Statement"]:
                if statement.get("Sid") == "OwnRepositories":
                    statement["Resource"] = statement["Resource"].split("repository/")[0] + "repository/*"
            o["policy"] = json.dumps(document)
    return objects


def another_tenants_pull_secret_read(objects: Objects) -> bool:
    """The tenant's admin and viewer neither read nor change llm-training's `ecr-pull` Secret, its ExternalSecret or
    its generator (a principal that is admin of both tenants holds both by right)."""
    asks = [
        (verb, group, resource)
        for verb in ("get", "list", "update", "patch", "delete")
        for group, resource in (("", "secrets"), ("external-secrets.io", "externalsecrets"),
                                ("generators.external-secrets.io", "ecrauthorizationtokens"))
    ]
    return not any(
        rbac_allows(objects, IDENTITIES[who], *ask, OTHER_TENANT) for who in ("tenant-admin", VIEWER) for ask in asks
    )


def tenant_bound_cluster_wide(objects: Objects) -> Objects:
    """The tenant's admins bound to `admin` by a ClusterRoleBinding instead of their namespace's RoleBinding."""
    for o in objects:
        if o["kind"] == "RoleBinding" and o["metadata"] == {"name": "tenant-admins", "namespace": TENANT}:
            o["kind"], o["metadata"] = "ClusterRoleBinding", {"name": "tenant-admins"}
    return objects


# --- taking a guard out ------------------------------------------------------------------------------


def without(kind: str, name: str) -> Callable[[Objects], Objects]:
    def remove(objects: Objects) -> Objects:
        kept = [o for o in objects if not (o["kind"] == kind and o.get("metadata", {}).get("name") == name)]
        assert len(kept) < len(objects), f"no {kind} {name} in the render"
        return kept

    return remove


def without_network_isolation(objects: Objects) -> Objects:
    """Both layers: the tenant's own policies (egress) and monitoring's ingress policy."""
    return [o for o in objects if not (o["kind"] == "NetworkPolicy" and o["metadata"]["namespace"] in (TENANT, "monitoring"))]


def without_user_data(objects: Objects) -> Objects:
    for o in objects:
        if o["kind"] == "EC2NodeClass":
            o["spec"].pop("userData", None)
    return objects


def tenant_bound_to_cluster_admin(objects: Objects) -> Objects:
    for o in objects:
        if o["kind"] == "RoleBinding" and o["metadata"] == {"name": "tenant-admins", "namespace": TENANT}:
            o["roleRef"]["name"] = "cluster-admin"
    return objects


def without_trust_condition(role: str) -> Callable[[Objects], Objects]:
    def remove(objects: Objects) -> Objects:
        [found] = [o for o in objects if o["kind"] == "aws:iam/role:Role" and o["name"] == role]
        document = json.loads(found["assumeRolePolicy"])
        for statement in document["Statement"]:
            statement.pop("Condition")
        found["assumeRolePolicy"] = json.dumps(document)
        return objects

    return remove


def without_cluster_admin_role(objects: Objects) -> Objects:
    """The tenant's binding is what keeps it to `admin`: bound to cluster-admin, the RBAC rows fall."""
    return tenant_bound_to_cluster_admin(objects)


@dataclass(frozen=True)
class AdmissionAttack:
    """A request a tenant sends (or makes a controller send), refused by each of `policies` alone, whoever of
    IDENTITIES sends it. Severity is what it gains once every one of them is gone."""

    name: str
    sent: Callable[[Objects], Sent]
    policies: tuple[str, ...]
    severity: str
    stack: str = "multi-pool"  # the render it is tried against


OWNERS = "tenant-controller-owners-from-controllers"
GATED = "tenant-pods-gated-or-owned-by-a-job"
RESUMED = "tenant-jobs-run-as-kueue-admits-them"
PROMPT = "tenant-pods-stop-promptly"
PULL_ALWAYS = "tenant-pods-pull-private-images-always"
OWN_SOURCES = "tenant-external-secrets-name-their-own-sources"
NO_PRIORITY_CLASS = "tenant-pods-name-no-priority-class"
KAI_QUEUE = "tenant-kai-queue-is-the-namespaces"
KAI_POOLS = "tenant-pods-kai-fractions-on-kai-pools"
FRACTION = {"gpu-fraction": "0.5"}
NVIDIA_ENV = "tenant-pods-no-nvidia-env"
KAI_SHARING_CONFIG_MAPS = "tenant-kai-sharing-config-maps-are-kais"
KAI_SHARING_ATTACKS = [
    AdmissionAttack("kai-pod-sets-its-own-nvidia-visible-devices",
                    kai_pod_handed_on_sent(resources=WHOLE_GPU, env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]),
                    (NVIDIA_ENV,), "HIGH", KAI_STACK),
    AdmissionAttack("kai-fraction-reads-a-configmap-other-than-kais",
                    kai_pod_handed_on_sent(kai_reference("gpus"), annotations=FRACTION), (NVIDIA_ENV,), "HIGH", KAI_STACK),
    AdmissionAttack("kai-fraction-reads-its-direct-variables-configmap",
                    kai_pod_handed_on_sent(kai_reference(f"{KAI_SHARING_CONFIG_MAP}-evar"), annotations=FRACTION),
                    (NVIDIA_ENV,), "HIGH", KAI_STACK),
    AdmissionAttack("kai-style-configmap-reference-on-a-pod-kai-does-not-schedule",
                    kai_reference_on_a_default_scheduler_pod, (NVIDIA_ENV,), "HIGH", KAI_STACK),
    AdmissionAttack("unvoided-container-beside-a-fraction-on-a-kai-node",
                    unvoided_ephemeral_container_beside_a_fraction, (NVIDIA_ENV,), "HIGH", KAI_STACK),
    AdmissionAttack("whole-gpu-kai-pod-without-the-void", kai_pod_handed_on_sent(resources=WHOLE_GPU),
                    (NVIDIA_ENV,), "HIGH", KAI_STACK),
    AdmissionAttack("fraction-moved-to-a-named-container",
                    kai_pod_handed_on_sent(annotations={**FRACTION, "gpu-fraction-container-name": "main"}),
                    ("tenant-pods-kai-fractions-on-kai-pools",), "MEDIUM", KAI_STACK),
    *[
        AdmissionAttack(f"tenant-{verb}-kais-sharing-configmap", kai_sharing_config_map_written(operation),
                        (KAI_SHARING_CONFIG_MAPS,), "HIGH", KAI_STACK)
        for verb, operation in (("creates", "CREATE"), ("edits", "UPDATE"), ("deletes", "DELETE"))
    ],
]
KAI_ATTACKS = [
    AdmissionAttack(name, kai_pod_sent(**changes), (policy,), severity, KAI_STACK)
    for name, changes, policy, severity in (
        ("fraction-of-more-than-one-gpu", {"annotations": {"gpu-fraction": "1.5"}}, KAI_POOLS, "MEDIUM"),
        ("fraction-of-a-whole-gpu", {"annotations": {"gpu-fraction": "1"}}, KAI_POOLS, "MEDIUM"),
        ("fraction-in-scientific-notation-past-one", {"annotations": {"gpu-fraction": "2e0"}}, KAI_POOLS, "MEDIUM"),
        ("gpu-memory-past-the-gpus", {"annotations": {"gpu-memory": "24577"}}, KAI_POOLS, "MEDIUM"),
        ("fractions-on-several-gpus", {"annotations": {**FRACTION, "gpu-fraction-num-devices": "4"}}, KAI_POOLS, "MEDIUM"),
        ("another-tenants-kai-queue-on-a-pod", {"queue": OTHER_TENANT, "annotations": FRACTION}, KAI_QUEUE, "HIGH"),
        ("the-root-kai-queue-on-a-pod", {"queue": ROOT_QUEUE, "annotations": FRACTION}, KAI_QUEUE, "HIGH"),
        ("kai-pod-without-a-queue-label", {"queue": None, "annotations": FRACTION}, KAI_POOLS, "HIGH"),
        ("kai-fraction-on-a-pool-kueue-counts-whole-gpus", {"pool": WHOLE_GPU_POOL, "annotations": FRACTION}, KAI_POOLS,
         "HIGH"),
        ("default-scheduler-pod-on-a-kai-pool",
         {"scheduler": None, "queue": None, "resources": {"limits": {"nvidia.com/gpu": "1"}}}, KAI_POOLS, "HIGH"),
        ("fraction-annotation-without-kai", {"pool": WHOLE_GPU_POOL, "scheduler": None, "annotations": FRACTION},
         KAI_POOLS, "HIGH"),
    )
]
ADMISSION_ATTACKS = [
    # The highest of KAI's classes; the policy refuses any name alike, so one row stands for each.
    AdmissionAttack("pod-at-kais-inference-priority-evicts-other-tenants-pods", pod_at_a_priority_class("inference"),
                    (NO_PRIORITY_CLASS,), "HIGH"),
    AdmissionAttack("job-pods-at-the-inference-priority-evict-other-tenants-pods", job_pods_at_the_inference_priority,
                    (NO_PRIORITY_CLASS,), "HIGH"),
    AdmissionAttack(
        "gpu-through-nvidia-visible-devices-in-the-pod-spec", nvidia_env_in_pod, ("tenant-pods-no-nvidia-env",), "HIGH"
    ),
    AdmissionAttack(
        "gpu-through-an-nvidia-envfrom-prefix-in-an-init-container",
        nvidia_env_from_prefix_in_an_init_container,
        ("tenant-pods-no-nvidia-env",),
        "HIGH",
    ),
    AdmissionAttack(
        "gpu-through-an-nvidia-envfrom-prefix-in-an-ephemeral-container",
        nvidia_env_in_ephemeral_container,
        ("tenant-pods-no-nvidia-env",),
        "HIGH",
    ),
    AdmissionAttack("pod-owned-by-a-tiny-admitted-job-skips-kueue", pod_owned_by_a_tiny_job, (OWNERS, GATED), "HIGH"),
    AdmissionAttack(
        "replicaset-owned-by-a-tiny-admitted-job-skips-kueue", replica_set_owned_by_a_tiny_job, (OWNERS,), "HIGH"
    ),
    AdmissionAttack(
        "pods-of-an-edited-replicaset-template-skip-kueue", pods_of_an_edited_replica_set, (GATED,), "HIGH"
    ),
    AdmissionAttack("job-under-an-admitted-jobset-starts-unsuspended", job_under_an_admitted_jobset, (OWNERS, RESUMED), "HIGH"),
    *(
        AdmissionAttack(f"{which}-resumed-by-its-tenant", resumed_by_its_tenant(which), (RESUMED,), "MEDIUM")
        for which in RESUMABLE
    ),
    AdmissionAttack("job-resized-while-running", job_resized_while_running, (RESUMED,), "MEDIUM"),
    AdmissionAttack("job-pods-with-a-weeks-grace-outlive-their-quota", job_pod_with_a_weeks_grace, (PROMPT,), "MEDIUM"),
    AdmissionAttack("pod-deleted-with-a-weeks-grace-runs-beside-its-replacement", pod_deleted_with_a_weeks_grace,
                    (PROMPT,), "MEDIUM"),
    AdmissionAttack("pod-evicted-with-a-weeks-grace-runs-beside-its-replacement", pod_evicted_with_a_weeks_grace,
                    (PROMPT,), "MEDIUM"),
    AdmissionAttack("pod-with-a-named-resourceclaim-skips-kueues-charge", pod_with_a_named_claim,
                    ("tenant-pods-claims-from-templates",), "LOW"),
    AdmissionAttack("kueue-gate-lifted-by-hand", kueue_gate_lifted_by_hand, ("tenant-pods-keep-the-kueue-gate",), "HIGH"),
    AdmissionAttack("default-deny-deleted", default_deny_deleted, ("tenant-network-policies-are-platform-owned",), "HIGH"),
    AdmissionAttack(
        "allow-all-network-policy-created", allow_all_created, ("tenant-network-policies-are-platform-owned",), "HIGH"
    ),
    AdmissionAttack(
        "service-external-ips-intercept-traffic", service_external_ips, ("tenant-services-no-external-ips",), "HIGH"
    ),
    AdmissionAttack(
        "unsigned-image-behind-a-registry-port",
        image_registry_spelled_to_escape_the_signature_policy("ghcr.io:443/acme-ai/trainer:1.0"),
        ("tenant-pods-canonical-image-registries",),
        "HIGH",
    ),
    AdmissionAttack(
        "unsigned-image-behind-an-upper-case-registry",
        image_registry_spelled_to_escape_the_signature_policy("GHCR.IO/acme-ai/trainer:1.0"),
        ("tenant-pods-canonical-image-registries",),
        "HIGH",
    ),
    AdmissionAttack(
        "private-ecr-image-reused-from-the-nodes-cache-if-not-present",
        private_image_reused_from_the_node(
            {"name": "main", "image": f"{OTHER_TENANTS_IMAGE}:2.1", "imagePullPolicy": "IfNotPresent"}, "containers"
        ),
        (PULL_ALWAYS,),
        "MEDIUM",
    ),
    AdmissionAttack(
        "private-ecr-image-reused-from-the-nodes-cache-by-an-init-container-without-a-pull-policy",
        private_image_reused_from_the_node(
            {"name": "fetch", "image": f"{OTHER_TENANTS_IMAGE}@sha256:{'c' * 64}"}, "initContainers"
        ),
        (PULL_ALWAYS,),
        "MEDIUM",
    ),
    AdmissionAttack(
        "external-secret-reads-a-cluster-generator",
        external_secret_from({"dataFrom": [{"sourceRef": {"generatorRef": {
            "apiVersion": "generators.external-secrets.io/v1alpha1", "kind": "ClusterGenerator", "name": "ecr-pull"}}}]}),
        (OWN_SOURCES,),
        "LOW",
    ),
    AdmissionAttack(
        "external-secret-reads-a-cluster-secret-store",
        external_secret_from({"secretStoreRef": {"kind": "ClusterSecretStore", "name": "aws"},
                              "data": [{"secretKey": "t", "remoteRef": {"key": "/gpu-prod/llm-training/hf-token"}}]}),
        (OWN_SOURCES,),
        "LOW",
    ),
    AdmissionAttack(
        "external-secret-reads-a-cluster-secret-store-through-one-key",
        external_secret_from({"data": [{"secretKey": "t", "remoteRef": {"key": "/gpu-prod/llm-training/hf-token"},
                                        "sourceRef": {"storeRef": {"kind": "ClusterSecretStore", "name": "aws"}}}]}),
        (OWN_SOURCES,),
        "LOW",
    ),
    *KAI_ATTACKS,
    AdmissionAttack("another-tenants-kai-queue-on-the-top-owner", job_labelled_with_another_tenants_kai_queue,
                    (KAI_QUEUE,), "HIGH", KAI_STACK),
    *KAI_SHARING_ATTACKS,
]
BY_IDENTITY = [(a, who) for a in ADMISSION_ATTACKS for who in IDENTITIES]
BY_POLICY = [(a, p) for a in ADMISSION_ATTACKS for p in a.policies]


def admission_refuses(objects: Objects, attack: AdmissionAttack, who: str) -> bool:
    sent = attack.sent(objects)
    user = sent.by or IDENTITIES[who]
    req = request(
        objects, sent.operation, sent.api_group, sent.resource, user, object=sent.object, old=sent.old, options=sent.options
    )
    return bool(admission_denials(objects, req))


def without_policies(names: tuple[str, ...]) -> Callable[[Objects], Objects]:
    def remove(objects: Objects) -> Objects:
        for name in names:
            objects = without(VAP, name)(objects)
        return objects

    return remove


@pytest.mark.parametrize("attack, who", BY_IDENTITY, ids=[f"{a.name}-as-{who}" for a, who in BY_IDENTITY])
def test_each_admission_attempt_is_refused_whoever_sends_it(attack, who):
    assert admission_refuses(rendered(attack.stack), attack, who), attack.policies


@pytest.mark.parametrize("attack, who", BY_IDENTITY, ids=[f"{a.name}-as-{who}" for a, who in BY_IDENTITY])
def test_each_admission_attempt_succeeds_once_its_policies_are_removed(attack, who):
    objects = without_policies(attack.policies)(rendered(attack.stack))
    assert not admission_refuses(objects, attack, who), f"{attack.name} is refused by something besides {attack.policies}"


@pytest.mark.parametrize("attack, policy", BY_POLICY, ids=[f"{a.name}-by-{p}" for a, p in BY_POLICY])
def test_each_of_an_attempts_policies_refuses_it_alone(attack, policy):
    others = tuple(p for p in attack.policies if p != policy)
    objects = without_policies(others)(rendered(attack.stack))
    assert admission_refuses(objects, attack, "tenant-admin"), f"{policy} alone admits {attack.name}"


@pytest.mark.parametrize("who", IDENTITIES)
def test_kais_fraction_and_a_voided_whole_gpu_are_admitted_whoever_sends_them(who):
    """The rows above are refused because of what they change, not because the guards refuse every KAI pod: the
    fraction as KAI's webhook hands it on (a CUDA sidecar voided by KAI), a whole GPU written with the void, and the
    binder's own write of the ConfigMap pass."""
    objects = rendered(KAI_STACK)
    fraction = kai_pod(annotations=FRACTION)
    fraction["spec"]["containers"].append(dict(CUDA_SIDECAR))
    for obj in (mutated(fraction, KAI_PREFIX), kai_handed_on(resources=WHOLE_GPU, env=VOIDED)):
        assert admission_denials(objects, request(objects, "CREATE", "", "pods", IDENTITIES[who], object=obj)) == []


def test_kais_binder_writes_the_sharing_configmap():
    objects = rendered(KAI_STACK)
    binder = service_account("kai-scheduler", "binder")
    written = kai_sharing_config_map({"NVIDIA_VISIBLE_DEVICES": "k8s.device-plugin.nvidia.com/gpu=3"})
    assert admission_denials(objects, request(objects, "CREATE", "", "configmaps", binder, object=written)) == []


WRITERS = [who for who in IDENTITIES if who != VIEWER]


@pytest.mark.parametrize("who", WRITERS)
def test_rbac_lets_every_writing_identity_send_the_requests_so_admission_is_the_guard(who):
    user = IDENTITIES[who]
    for attack in ADMISSION_ATTACKS:
        objects = granted_to(rendered(attack.stack), user)
        asked = attack.sent(objects).tenant_request()
        if asked is not None:
            assert rbac_allows(objects, user, *asked, TENANT), attack.name


def test_rbac_refuses_the_viewer_every_request_admission_also_refuses():
    user, objects = IDENTITIES[VIEWER], rendered()
    asked = [a.sent(objects).tenant_request() for a in ADMISSION_ATTACKS]
    allowed = [
        a.name for a, r in zip(ADMISSION_ATTACKS, asked, strict=True)
        if r and rbac_allows(rendered(a.stack), user, *r, TENANT)
    ]
    assert allowed == []
    # The viewer does read its namespace's pods and jobs: the identity is the tenant's.
    assert rbac_allows(objects, user, "list", "", "pods", TENANT) and rbac_allows(objects, user, "get", "batch", "jobs", TENANT)


@dataclass(frozen=True)
class Attack:
    name: str
    stopped: Callable[[Objects], bool]
    guard: str  # what docs/security.md names
    remove_guard: Callable[[Objects], Objects]
    stack: str = "multi-pool"  # the render it is tried against


VAP = "ValidatingAdmissionPolicy"
ATTACKS = [
    Attack(
        "tenant-server-writes-dcgm-series-for-another-tenants-node",
        platform_series_forged,
        "serving PodMonitor: metric-name and label allowlist (and every DCGM selector's job, tests/test_alerts.py)",
        without_metric_relabelings,
    ),
    Attack(
        "gpu-through-nvidia-visible-devices-in-the-image",
        nvidia_env_in_image,
        "node: container toolkit ignores the variable from unprivileged containers",
        without_user_data,
    ),
    Attack(
        "tenant-pod-silences-alerts-or-reads-every-tenants-metrics",
        alertmanager_reached,
        "NetworkPolicy: the tenant's egress (platform-owned) and monitoring's platform-ingress",
        without_network_isolation,
    ),
    Attack(
        "unsigned-image-from-a-verified-registry",
        unsigned_image,
        "Kyverno ImageValidatingPolicy (structural)",
        lambda objects: [o for o in objects if o["kind"] != "ImageValidatingPolicy"],
    ),
    Attack(
        "pod-at-system-node-critical-preempts-other-tenants",
        system_priority_pod,
        "quota: no-system-priority",
        without("ResourceQuota", "no-system-priority"),
    ),
    Attack(
        "pod-without-a-storage-limit-fills-the-node",
        unbounded_scratch,
        "LimitRange: container-defaults",
        without("LimitRange", "container-defaults"),
    ),
    Attack(
        "claims-of-unbounded-ebs-storage",
        volumes_fill_the_account,
        "quota: requests.storage (volumeStorageGiB)",
        without_hard("requests.storage"),
    ),
    Attack(
        "configmaps-fill-the-clusters-etcd",
        etcd_filled_with_config_maps,
        "quota: object counts (maxObjects)",
        without_hard("configmaps"),
    ),
    Attack(
        "tenant-raises-its-own-quota",
        rbac_denies("update", "", "resourcequotas"),
        "RBAC: admin only reads quotas",
        without_cluster_admin_role,
    ),
    Attack(
        "tenant-relabels-its-namespace-out-of-the-policies",
        rbac_denies("update", "", "namespaces"),
        "RBAC: admin only reads its namespace",
        without_cluster_admin_role,
    ),
    Attack(
        "tenant-edits-its-limit-range",
        rbac_denies("update", "", "limitranges"),
        "RBAC: admin only reads limit ranges",
        without_cluster_admin_role,
    ),
    Attack(
        "tenant-admits-its-own-workload",
        rbac_denies("patch", "kueue.x-k8s.io", "workloads/status"),
        "RBAC: Kueue's chart aggregates only read access to Workloads into admin, edit and view",
        without_cluster_admin_role,
    ),
    Attack(
        "running-pod-resized-past-kueues-charge",
        rbac_denies("patch", "", "pods/resize"),
        "RBAC: no built-in role a tenant holds grants pods/resize",
        without_cluster_admin_role,
    ),
    Attack(
        "tenant-runs-another-tenants-private-image",
        another_tenants_private_image_pulled,
        "IAM: the tenant's image-pull role pulls `<tenant>/*`; node roles reach no tenant repository",
        pull_role_reaching_every_repository,
    ),
    Attack(
        "tenant-reads-or-changes-another-tenants-pull-secret",
        another_tenants_pull_secret_read,
        "RBAC: the tenant's admins and viewers are bound in their own namespace only",
        tenant_bound_cluster_wide,
    ),
    Attack(
        "tenant-writes-a-generator-naming-another-tenants-pull-role",
        lambda objects: all(
            rbac_denies(verb, "generators.external-secrets.io", "ecrauthorizationtokens")(objects)
            for verb in ("create", "update", "patch")
        ),
        "RBAC: External Secrets' chart aggregates no generator writes into admin or edit",
        without_cluster_admin_role,
    ),
    Attack(
        "tenant-pod-identity-association-assumes-karpenters-role",
        assume_role(f"{CLUSTER}-karpenter-controller", pod_identity_context(TENANT, "karpenter"), "pods.eks.amazonaws.com"),
        "IAM trust: namespace and service account tags",
        without_trust_condition(f"{CLUSTER}-karpenter-controller"),
    ),
    Attack(
        "another-clusters-association-assumes-the-ebs-driver-role",
        assume_role(
            f"{CLUSTER}-aws-ebs-csi-driver",
            pod_identity_context("kube-system", "ebs-csi-controller-sa", "other"),
            "pods.eks.amazonaws.com",
        ),
        "IAM trust: cluster tag",
        without_trust_condition(f"{CLUSTER}-aws-ebs-csi-driver"),
    ),
    Attack(
        "another-accounts-eventbridge-rule-drains-nodes-through-the-interruption-queue",
        interruption_sent(
            {"aws:SourceArn": f"arn:aws:events:us-east-1:444455556666:rule/{CLUSTER}-karpenter-spot-interruption",
             "aws:SourceAccount": "444455556666"},
            "events.amazonaws.com",
        ),
        "SQS queue policy: aws:SourceArn of the cluster's own rules",
        without_queue_conditions,
    ),
    Attack(
        "another-accounts-sqs-redrive-into-the-interruption-queue",
        interruption_sent({"aws:SourceAccount": "444455556666"}, "sqs.amazonaws.com"),
        "SQS queue policy: aws:SourceAccount",
        without_queue_conditions,
    ),
    Attack(
        "another-accounts-flow-logs-assume-the-flow-logs-role",
        assume_role(
            f"{CLUSTER}-vpc-flow-logs",
            {"aws:SourceAccount": "444455556666", "aws:SourceArn": "arn:aws:ec2:us-east-1:444455556666:vpc-flow-log/fl-1"},
            "vpc-flow-logs.amazonaws.com",
        ),
        "IAM trust: aws:SourceAccount, aws:SourceArn",
        without_trust_condition(f"{CLUSTER}-vpc-flow-logs"),
    ),
    Attack(
        "pod-in-kais-reservation-namespace-holds-a-whole-gpu-outside-quota",
        pod_in_kais_own_namespaces,
        "RBAC: the tenant's admins and viewers are bound in their own namespace only",
        tenant_bound_cluster_wide,
        KAI_STACK,
    ),
]


@pytest.mark.parametrize("attack", ATTACKS, ids=[a.name for a in ATTACKS])
def test_each_attempt_is_stopped(attack):
    assert attack.stopped(rendered(attack.stack)), attack.guard


@pytest.mark.parametrize("attack", ATTACKS, ids=[a.name for a in ATTACKS])
def test_each_attempt_succeeds_once_its_guard_is_removed(attack):
    objects = attack.remove_guard(rendered(attack.stack))
    assert not attack.stopped(objects), f"{attack.name} is stopped by something besides {attack.guard}"


def test_every_admission_policy_stops_some_row():
    policies = {o["metadata"]["name"] for stack in ("multi-pool", KAI_STACK) for o in rendered(stack) if o["kind"] == VAP}
    assert policies == {p for a in ADMISSION_ATTACKS for p in a.policies}


# --- what the policies still admit -------------------------------------------------------------------


def _admitted(objects: Objects, req: Request) -> bool:
    return not admission_denials(objects, req)


def owned(kind: str, api_version: str, owner_kind: str, owner_api_version: str, **extra: Any) -> dict[str, Any]:
    reference = {"apiVersion": owner_api_version, "kind": owner_kind, "name": "o", "uid": TINY_JOB_UID, "controller": True}
    metadata = {"name": "x", "namespace": TENANT, "ownerReferences": [reference]}
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, **extra}


# What the platform's real controllers do in a tenant namespace, as the identity each runs as at its pinned
# version: kube-controller-manager's per-controller service accounts (or its own identity without
# --use-service-account-credentials), and each operator's service account in its own namespace.
CONTROLLERS = [
    ("job-controller", JOB_CONTROLLER, "CREATE", "", "pods", owned("Pod", "v1", "Job", "batch/v1")),
    (
        "replicaset-controller",
        service_account("kube-system", "replicaset-controller"),
        "CREATE", "", "pods",
        owned("Pod", "v1", "ReplicaSet", "apps/v1", spec={"schedulingGates": [{"name": KUEUE_SCHEDULING_GATE}]}),
    ),
    (
        "deployment-controller",
        service_account("kube-system", "deployment-controller"),
        "CREATE", "apps", "replicasets", owned("ReplicaSet", "apps/v1", "Deployment", "apps/v1"),
    ),
    (
        "kube-controller-manager-own-identity",
        User("system:kube-controller-manager", ()),
        "CREATE", "", "pods", owned("Pod", "v1", "Job", "batch/v1"),
    ),
    (
        "endpointslice-controller",
        service_account("kube-system", "endpointslice-controller"),
        "CREATE", "discovery.k8s.io", "endpointslices", owned("EndpointSlice", "discovery.k8s.io/v1", "Service", "v1"),
    ),
    (
        "resource-claim-controller",
        service_account("kube-system", "resource-claim-controller"),
        "CREATE", "resource.k8s.io", "resourceclaims", owned("ResourceClaim", "resource.k8s.io/v1", "Pod", "v1"),
    ),
    (
        "kueue-workload",
        KUEUE,
        "CREATE", "kueue.x-k8s.io", "workloads", owned("Workload", "kueue.x-k8s.io/v1beta2", "Job", "batch/v1"),
    ),
    (
        "trainer-jobset",
        service_account("kubeflow-system", "kubeflow-trainer-controller-manager"),
        "CREATE", "jobset.x-k8s.io", "jobsets",
        owned("JobSet", "jobset.x-k8s.io/v1alpha2", "TrainJob", "trainer.kubeflow.org/v1alpha1"),
    ),
    (
        "jobset-job",
        service_account("kubeflow-system", "jobset-controller-manager"),
        "CREATE", "batch", "jobs", owned("Job", "batch/v1", "JobSet", "jobset.x-k8s.io/v1alpha2"),
    ),
    (
        "keda-hpa",
        service_account("keda", "keda-operator"),
        "CREATE", "autoscaling", "horizontalpodautoscalers",
        owned("HorizontalPodAutoscaler", "autoscaling/v2", "ScaledObject", "keda.sh/v1alpha1"),
    ),
    (
        "external-secrets-secret",
        service_account("external-secrets", "external-secrets"),
        "CREATE", "", "secrets", owned("Secret", "v1", "ExternalSecret", "external-secrets.io/v1"),
    ),
]


@pytest.mark.parametrize("controller, user, operation, group, resource, obj", CONTROLLERS, ids=[c[0] for c in CONTROLLERS])
def test_the_platforms_real_controllers_create_what_they_own(controller, user, operation, group, resource, obj):
    objects = rendered()
    assert _admitted(objects, request(objects, operation, group, resource, user, object=obj))


def test_only_kueue_lifts_its_gate():
    objects = rendered()
    gated = pod(schedulingGates=[{"name": KUEUE_SCHEDULING_GATE}])
    assert _admitted(objects, request(objects, "UPDATE", "", "pods", KUEUE, object=pod(), old=gated))
    assert not _admitted(objects, request(objects, "UPDATE", "", "pods", JOB_CONTROLLER, object=pod(), old=gated))


def test_the_namespace_controller_empties_a_deleted_tenant_namespace():
    objects = rendered()
    controller = service_account("kube-system", "namespace-controller")
    deletion = request(objects, "DELETE", "networking.k8s.io", "networkpolicies", controller, old=default_deny(objects))
    assert _admitted(objects, deletion)
    # Its sibling controllers are not writers of NetworkPolicies.
    other = request(objects, "DELETE", "networking.k8s.io", "networkpolicies", JOB_CONTROLLER, old=default_deny(objects))
    assert not _admitted(objects, other)


def test_a_cluster_admin_creates_cluster_scoped_objects_with_controller_owners():
    """A namespaceSelector never excludes a cluster-scoped request; the owners policy skips them itself."""
    objects = rendered()
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "r", "ownerReferences": OWNED_BY_TINY_JOB["ownerReferences"]},
        "rules": [],
    }
    cluster_scoped = Request("CREATE", "rbac.authorization.k8s.io", "clusterroles", "", DEPLOYER, role)
    assert _admitted(objects, cluster_scoped)
    for policy in (o for o in objects if o["kind"] == VAP):
        policy["spec"].pop("matchConditions", None)
    assert not _admitted(objects, cluster_scoped)


def test_tenants_keep_the_owner_references_controllers_set_and_add_non_controller_ones():
    objects = rendered()
    owned = pod(metadata=OWNED_BY_TINY_JOB)
    relabelled = copy.deepcopy(owned)
    relabelled["metadata"]["labels"] = {"team": "x"}
    assert _admitted(objects, request(objects, "UPDATE", "", "pods", object=relabelled, old=owned))
    weak = created(metadata={"ownerReferences": [{**OWNED_BY_TINY_JOB["ownerReferences"][0], "controller": False}]})
    assert _admitted(objects, request(objects, "CREATE", "", "pods", object=weak))


def test_tenants_run_ordinary_pods_and_services():
    objects = rendered()
    for image in ("busybox:1.36", "nvcr.io/nvidia/cuda:12.4.1", "acme-ai/tool@sha256:" + "a" * 64, "localhost/x:1",
                  "public.ecr.aws/docker/library/python:3.12"):
        tenants_pod = created(containers=[{"name": "m", "image": image}])
        assert _admitted(objects, request(objects, "CREATE", "", "pods", object=tenants_pod))
    env = [{"name": "CUDA_CACHE_PATH", "value": "/tmp"}]
    ordinary = created(containers=[{"name": "main", "image": "busybox:1.36", "env": env}])
    assert _admitted(objects, request(objects, "CREATE", "", "pods", object=ordinary))
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s", "namespace": TENANT},
        "spec": {"ports": [{"port": 80}]},
    }
    assert _admitted(objects, request(objects, "CREATE", "", "services", object=service))
    assert not quota_denials(objects, pod(), TENANT)
    claim = {"spec": {"resources": {"requests": {"storage": "500Gi"}}}}
    assert not exceeded(objects, TENANT, "", "persistentvolumeclaims", claim, used={"requests.storage": "4500Gi"})
    assert exceeded(objects, TENANT, "", "persistentvolumeclaims", claim, used={"requests.storage": "4501Gi"})
    assert not exceeded(objects, TENANT, "", "configmaps", {}, used={"configmaps": "999"})


def test_every_cluster_admin_manages_tenant_network_policies_and_no_one_else():
    """cluster.admins of the fixture: PlatformAdmin and PlatformDeploy, as EKS names their sessions."""
    objects = rendered()
    deny = default_deny(objects)

    def update_by(username: str) -> Request:
        return request(objects, "UPDATE", "networking.k8s.io", "networkpolicies", User(username, ()), object=deny, old=deny)

    for role in ("PlatformDeploy", "PlatformAdmin"):
        assert _admitted(objects, update_by(f"arn:aws:sts::{ACCOUNT}:assumed-role/{role}/ci"))
    for impostor in (f"arn:aws:sts::{ACCOUNT}:assumed-role/PlatformDeployer/ci", f"arn:aws:iam::{ACCOUNT}:user/PlatformDeploy"):
        assert not _admitted(objects, update_by(impostor))


def test_the_policies_bind_to_every_tenant_namespace_and_no_platform_one():
    objects = rendered()
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"externalIPs": ["10.0.32.10"]}}
    elsewhere = Request(
        "CREATE", "", "services", "monitoring", DEPLOYER, service, None, {"kubernetes.io/metadata.name": "monitoring"}
    )
    assert _admitted(objects, elsewhere)
    for namespace in (o for o in objects if o["kind"] == "Namespace" and TENANT_LABEL in o["metadata"].get("labels", {})):
        labels = namespace["metadata"]["labels"]
        there = Request("CREATE", "", "services", namespace["metadata"]["name"], ADMIN, service, None, labels)
        assert not _admitted(objects, there)


def test_the_clusters_own_event_rules_still_reach_the_interruption_queue():
    source = f"arn:aws:events:us-east-1:{ACCOUNT}:rule/{CLUSTER}-karpenter-spot-interruption"
    assert not interruption_sent({"aws:SourceArn": source, "aws:SourceAccount": ACCOUNT}, "events.amazonaws.com")(rendered())


def test_a_tenants_scrape_is_bounded():
    """A pod exposing more samples or labels than the scrape keeps fails its own scrape, not Prometheus."""
    objects = rendered()
    monitors = [o for o in objects if o["kind"] == "PodMonitor" and o["metadata"]["namespace"] == TENANT]
    assert [(m["spec"]["sampleLimit"], m["spec"]["labelLimit"]) for m in monitors] == [(200, 16)]
    # The kept queue-depth series fits under the label limit with room for the scrape's labels.
    [_, _, queue] = serving_scrape(objects)
    assert queue is not None and len(queue) <= 16


@pytest.mark.parametrize("verb", ["create", "update", "patch", "delete"])
def test_a_tenant_can_neither_add_nor_loosen_a_scrape(verb):
    """The PodMonitor's limits bound every scrape of tenant pods only while tenants cannot write monitors; so
    Prometheus needs no enforcedSampleLimit, which prometheus-operator v0.93 applies to every scrape
    (pkg/prometheus/promcfg.go getLimit: the global sample_limit, and the cap on a monitor's own)."""
    objects = rendered()
    for resource in ("podmonitors", "servicemonitors", "probes", "scrapeconfigs"):
        assert not rbac_allows(objects, ADMIN, verb, "monitoring.coreos.com", resource, TENANT), resource
    # The chart's aggregated roles would add monitoring.coreos.com to admin and edit; they stay off.
    recording = render_fixture("multi-pool")
    [release] = [r for r in recording.by_type("kubernetes:helm.sh/v3:Release") if r.inputs["name"] == "kube-prometheus-stack"]
    chosen = ((release.inputs["values"].get("global") or {}).get("rbac") or {}).get("createAggregateClusterRoles")
    assert chosen in (None, False)
    assert chart_values("kube-prometheus-stack", "88.5.3")["global"]["rbac"]["createAggregateClusterRoles"] is False


# --- the node side and the device plugin -------------------------------------------------------------


def test_gpu_node_classes_set_both_settings_nvidia_documents():
    for o in rendered():
        if (
            o["kind"] == "EC2NodeClass"
            and o["spec"]["amiSelectorTerms"][0]["alias"].startswith("al2023")
            and "userData" in o["spec"]
        ):
            assert toolkit_settings(o["spec"]["userData"]) == NVIDIA_TOOLKIT_SETTINGS


def test_the_device_plugin_hands_out_gpus_through_cdi_never_the_variable():
    # gpu-operator v26.7.0: cdi.enabled defaults to true (values.yaml; api/nvidia/v1 CDIConfigSpec.IsEnabled
    # treats unset as true) and controllers/object_controls.go then sets the device plugin's
    # DEVICE_LIST_STRATEGY to cdi-annotations,cdi-cri; devicePlugin.env would override it.
    assert chart_values("gpu-operator", "v26.7.0")["cdi"]["enabled"] is True
    [release] = [o for o in render_fixture("multi-pool").resources if o.inputs.get("chart") == "gpu-operator"]
    values = json.loads(release.inputs["values"]) if isinstance(release.inputs["values"], str) else release.inputs["values"]
    assert values.get("cdi", {}).get("enabled", True) is True
    assert all(e["name"] != "DEVICE_LIST_STRATEGY" for e in values.get("devicePlugin", {}).get("env", ()))


# --- docs/security.md lists every row -----------------------------------------------------------------

SECURITY_DOC = Path(__file__).resolve().parent.parent / "docs" / "security.md"


def documented_rows() -> list[str]:
    """The row names (globs) in the Test column of docs/security.md's attack table."""
    rows = [line for line in SECURITY_DOC.read_text().splitlines() if line.startswith("| ") and line.count("|") == 6]
    return [name for row in rows[2:] for name in re.findall(r"`([a-z0-9*-]+)`", row.split("|")[5])]


def test_every_attack_row_is_in_the_security_table_and_every_table_row_is_an_attack():
    names = [a.name for a in ATTACKS] + [a.name for a in ADMISSION_ATTACKS]
    documented = documented_rows()
    assert [n for n in names if not any(fnmatch.fnmatchcase(n, d) for d in documented)] == []
    tests = {n.removeprefix("test_") for n in globals() if n.startswith("test_")}
    assert [d for d in documented if not any(fnmatch.fnmatchcase(n, d) for n in names) and d not in tests] == []


def test_a_container_without_resources_gets_the_namespaces_default_requests_and_limits_by_value():
    """The LimitRanger fills each missing request from `defaultRequest` and each missing limit from `default`
    (kubernetes/kubernetes v1.35.0 plugin/pkg/admission/limitranger/admission.go); what a container sets is
    kept. A tenant's bare container runs with a 1Gi memory limit and a 10Gi scratch limit, not its requests."""
    objects = rendered()
    bare = {"name": "main", "image": "busybox:1.36"}
    sized = {"name": "side", "image": "busybox:1.36", "resources": {"limits": {"memory": "3Gi"}, "requests": {"cpu": "2"}}}
    defaulted = with_container_defaults(objects, pod(containers=[bare, sized]), TENANT)
    main, side = defaulted["spec"]["containers"]
    assert main["resources"] == {
        "requests": {"cpu": "100m", "memory": "256Mi", "ephemeral-storage": "1Gi"},
        "limits": {"memory": "1Gi", "ephemeral-storage": "10Gi"},
    }
    assert side["resources"] == {
        "requests": {"cpu": "2", "memory": "256Mi", "ephemeral-storage": "1Gi"},
        "limits": {"memory": "3Gi", "ephemeral-storage": "10Gi"},
    }


def test_a_tenants_internet_egress_reaches_public_addresses_only():
    """llm-training sets network.internetEgress: its pods reach public addresses, but the allowance's
    `except` (the private ranges and the instance metadata address) still holds: an ipBlock matches its
    CIDR minus every `except` (k8s.io/api networking/v1 types.go, IPBlock). The destinations here sit in a
    namespace no policy selects, so only the tenant's egress decides."""
    objects = rendered()
    trainer = Endpoint(OTHER_TENANT, "10.30.70.21", {"app": "trainer"})

    def reaches(ip: str, port: int) -> bool:
        return connection_allowed(objects, trainer, Endpoint("outside", ip, {"app": "x"}), port)

    assert reaches("52.94.236.248", 443)
    assert reaches("3.5.140.2", 80)
    for private in ("10.0.5.5", "172.20.0.10", "192.168.1.5"):
        assert not reaches(private, 443), private
    assert not reaches("169.254.169.254", 80)
    # data-science does not set internetEgress: nothing outside the cluster.
    notebook = Endpoint(TENANT, "10.30.64.10", {"app": "notebook"}, tenant_labels(objects))
    assert not connection_allowed(objects, notebook, Endpoint("outside", "52.94.236.248", {"app": "x"}), 443)


@pytest.mark.parametrize(
    ("api_group", "resource", "counted"),
    [
        ("", "configmaps", "configmaps"),
        ("", "secrets", "secrets"),
        ("", "services", "services"),
        ("apps", "deployments", "count/deployments.apps"),
        ("apps", "statefulsets", "count/statefulsets.apps"),
        ("batch", "cronjobs", "count/cronjobs.batch"),
    ],
)
def test_the_thousand_and_first_object_of_each_counted_kind_is_refused(api_group, resource, counted):
    """The tenant quota bounds each kind a tenant creates freely at 1000 (kubernetes/kubernetes v1.35.0
    pkg/quota/v1/evaluator/core/registry.go: core kinds under their short name; generic/evaluator.go
    `count/<resource>.<group>` for the rest); Jobs, submitted in sweeps, get ten times as many."""
    objects = rendered()
    assert exceeded(objects, TENANT, api_group, resource, {}, used={counted: "999"}) == []
    over = exceeded(objects, TENANT, api_group, resource, {}, used={counted: "1000"})
    assert [name.split("/", 1)[1] for name in over] == [counted]
    assert exceeded(objects, TENANT, "batch", "jobs", {}, used={"count/jobs.batch": "9999"}) == []


def test_every_tenant_admission_policy_fails_closed_and_denies():
    """kubernetes/kubernetes v1.35.0 staging/src/k8s.io/api/admissionregistration/v1 types.go: with
    `failurePolicy: Ignore` a CEL error (a field the expression does not guard, a type the request did not
    expect) admits the request; a guard must fail closed. `validationActions: [Deny]` refuses, where
    `Warn` or `Audit` would only report."""
    objects = rendered()
    policies = {o["metadata"]["name"]: o["spec"] for o in objects if o["kind"] == "ValidatingAdmissionPolicy"}
    bindings = {o["metadata"]["name"]: o["spec"] for o in objects if o["kind"] == "ValidatingAdmissionPolicyBinding"}
    tenant_policies = {
        "tenant-network-policies-are-platform-owned",
        "tenant-controller-owners-from-controllers",
        "tenant-pods-keep-the-kueue-gate",
        "tenant-pods-no-nvidia-env",
        "tenant-pods-canonical-image-registries",
        "tenant-services-no-external-ips",
        "tenant-pods-gated-or-owned-by-a-job",
        "tenant-jobs-run-as-kueue-admits-them",
        "tenant-pods-claims-from-templates",
        "tenant-pods-stop-promptly",
        "tenant-external-secrets-name-their-own-sources",
        "tenant-pods-pull-private-images-always",
        "tenant-pods-name-no-priority-class",
    }
    assert tenant_policies <= set(policies)
    for name in tenant_policies:
        assert policies[name]["failurePolicy"] == "Fail", name
        assert bindings[name]["policyName"] == name
        assert bindings[name]["validationActions"] == ["Deny"], name


def test_the_security_table_gives_each_admission_row_its_severity():
    rows = [line.split("|") for line in SECURITY_DOC.read_text().splitlines() if line.startswith("| ") and line.count("|") == 6]
    severities = {name: row[2].strip() for row in rows[2:] for name in re.findall(r"`([a-z0-9*-]+)`", row[5])}
    for attack in ADMISSION_ATTACKS:
        [documented] = {s for name, s in severities.items() if fnmatch.fnmatchcase(attack.name, name)}
        assert documented == attack.severity, attack.name


def test_tenants_create_resource_claims_from_1_34_so_admission_keeps_named_claims_out_of_pods():
    """The bootstrap policy's DRA rules (DynamicResourceAllocation on, the default from 1.34) give `edit`, and so
    `admin`, ResourceClaims and their templates; `view` reads them."""
    objects = rendered()
    admin, viewer = IDENTITIES["tenant-admin"], IDENTITIES[VIEWER]
    for resource in ("resourceclaims", "resourceclaimtemplates"):
        assert rbac_allows(objects, admin, "create", "resource.k8s.io", resource, TENANT), resource
        assert rbac_allows(objects, viewer, "list", "resource.k8s.io", resource, TENANT), resource
        assert not rbac_allows(objects, viewer, "create", "resource.k8s.io", resource, TENANT), resource
    assert not rbac_allows(objects, admin, "create", "resource.k8s.io", "deviceclasses", None)


def test_no_priority_class_is_a_global_default_so_tenant_pods_run_at_zero():
    """The Priority admission plugin writes a `globalDefault` class into every pod that names none, which
    `tenant-pods-name-no-priority-class` would then refuse."""
    classes = [o for o in rendered() if o["kind"] == "PriorityClass"]
    assert classes and not any(o.get("globalDefault") for o in classes)
