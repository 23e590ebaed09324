"""The attack table: what a tenant admin (the built-in `admin` role in its own namespace) tries against
other tenants or the platform, each as the request it sends, and the one guard that stops it.

Every row is evaluated against the multi-pool render (tests/guards.py answers for RBAC, admission,
quotas, container defaults and IAM trust), then again with its guard taken out of the render: the
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
from typing import Any

import pytest

from components.node_pools import NVIDIA_TOOLKIT_SETTINGS
from config.labels import TENANT_LABEL
from models.kueue.constants import ADMISSION_SCHEDULING_GATE as KUEUE_SCHEDULING_GATE
from offline.upstream import chart_values

from .conftest import render_fixture
from .guards import (
    Endpoint,
    Request,
    User,
    admission_denials,
    connection_allowed,
    quota_denials,
    rbac_allows,
    trust_allows,
    with_container_defaults,
)
from .recorded import kubernetes_objects

TENANT = "data-science"
ACCOUNT, CLUSTER = "111122223333", "gpu-prod"
ADMIN = User(f"arn:aws:sts::{ACCOUNT}:assumed-role/DataScienceAdmin/alice", (f"gpu-platform:{TENANT}:admins",))
# `admin` may impersonate the namespace's service accounts and mint their tokens.
TENANT_SERVICE_ACCOUNT = User(
    f"system:serviceaccount:{TENANT}:builder", ("system:serviceaccounts", f"system:serviceaccounts:{TENANT}")
)
JOB_CONTROLLER = User(
    "system:serviceaccount:kube-system:job-controller", ("system:serviceaccounts", "system:serviceaccounts:kube-system")
)
KUEUE = User(
    "system:serviceaccount:kueue-system:kueue-controller-manager",
    ("system:serviceaccounts", "system:serviceaccounts:kueue-system"),
)
# Whoever runs `pulumi up`: an EKS cluster admin, in no tenant group.
DEPLOYER = User(f"arn:aws:sts::{ACCOUNT}:assumed-role/PlatformDeploy/ci", ())
TINY_JOB_UID = "5b1c0c7e-0000-4000-8000-000000000001"


Objects = list[dict[str, Any]]


@functools.cache
def _rendered() -> tuple[str, ...]:
    recording = render_fixture("multi-pool")
    manifests = [json.dumps(r.inputs) for r in kubernetes_objects(recording)]
    roles = [json.dumps({"kind": "aws:iam/role:Role", **r.inputs}) for r in recording.by_type("aws:iam/role:Role")]
    return (*manifests, *roles)


def rendered() -> Objects:
    """A fresh copy of the render's objects (Kubernetes manifests and IAM roles' inputs): rows may edit it."""
    return [json.loads(text) for text in _rendered()]


def tenant_labels(objects: Objects) -> dict[str, str]:
    [namespace] = [o for o in objects if o["kind"] == "Namespace" and o["metadata"]["name"] == TENANT]
    return namespace["metadata"]["labels"]


def request(objects: Objects, operation: str, api_group: str, resource: str, user: User = ADMIN, **objs: Any) -> Request:
    return Request(operation, api_group, resource, TENANT, user, objs.get("object"), objs.get("old"), tenant_labels(objects))


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


def nvidia_env_in_pod(objects: Objects) -> bool:
    attack = pod(
        tolerations=[GPU_TOLERATION],
        containers=[{"name": "main", "image": "busybox:1.36", "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}],
    )
    return bool(admission_denials(objects, request(objects, "CREATE", "", "pods", object=attack)))


def nvidia_env_in_ephemeral_container(objects: Objects) -> bool:
    before = pod()
    after = pod(
        ephemeralContainers=[
            {"name": "debug", "image": "busybox:1.36", "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}
        ]
    )
    return bool(admission_denials(objects, request(objects, "UPDATE", "", "pods/ephemeralcontainers", object=after, old=before)))


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


def pod_owned_by_a_tiny_job(objects: Objects) -> bool:
    attack = pod(metadata=OWNED_BY_TINY_JOB, tolerations=[GPU_TOLERATION], nodeSelector={"gpu-platform/node-pool": "gpu-h100"})
    return bool(admission_denials(objects, request(objects, "CREATE", "", "pods", object=attack)))


def replica_set_owned_by_a_tiny_job(objects: Objects) -> bool:
    attack = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "rs", "namespace": TENANT, **OWNED_BY_TINY_JOB},
        "spec": {"replicas": 8, "selector": {"matchLabels": {"a": "b"}}, "template": pod()},
    }
    return bool(admission_denials(objects, request(objects, "CREATE", "apps", "replicasets", object=attack)))


def kueue_gate_lifted_by_hand(objects: Objects) -> bool:
    gated = pod(schedulingGates=[{"name": KUEUE_SCHEDULING_GATE}])
    return bool(admission_denials(objects, request(objects, "UPDATE", "", "pods", object=pod(), old=gated)))


def default_deny_deleted(user: User) -> Callable[[Objects], bool]:
    def attempt(objects: Objects) -> bool:
        [deny] = [
            o
            for o in objects
            if o["kind"] == "NetworkPolicy" and o["metadata"] == {"name": "default-deny-all", "namespace": TENANT}
        ]
        assert rbac_allows(objects, user, "delete", "networking.k8s.io", "networkpolicies", TENANT) or user is not ADMIN
        return bool(
            admission_denials(objects, request(objects, "DELETE", "networking.k8s.io", "networkpolicies", user, old=deny))
        )

    return attempt


def system_priority_pod(objects: Objects) -> bool:
    return bool(quota_denials(objects, pod(priorityClassName="system-node-critical"), TENANT))


def service_external_ips(objects: Objects) -> bool:
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s", "namespace": TENANT},
        "spec": {"ports": [{"port": 443}], "externalIPs": ["10.0.32.10"]},
    }
    return bool(admission_denials(objects, request(objects, "CREATE", "", "services", object=service)))


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


def rbac_denies(verb: str, api_group: str, resource: str) -> Callable[[Objects], bool]:
    def attempt(objects: Objects) -> bool:
        return not rbac_allows(objects, ADMIN, verb, api_group, resource, TENANT)

    return attempt


def assume_role(role: str, context: dict[str, str], service: str) -> Callable[[Objects], bool]:
    def attempt(objects: Objects) -> bool:
        [found] = [o for o in objects if o["kind"] == "aws:iam/role:Role" and o["name"] == role]
        return not trust_allows(json.loads(found["assumeRolePolicy"]), service, context)

    return attempt


def pod_identity_context(namespace: str, service_account: str, cluster: str = CLUSTER) -> dict[str, str]:
    return {
        "aws:SourceAccount": ACCOUNT,
        "aws:RequestTag/eks-cluster-name": cluster,
        "aws:RequestTag/kubernetes-namespace": namespace,
        "aws:RequestTag/kubernetes-service-account": service_account,
    }


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
class Attack:
    name: str
    stopped: Callable[[Objects], bool]
    guard: str  # what docs/security.md names
    remove_guard: Callable[[Objects], Objects]


VAP = "ValidatingAdmissionPolicy"
ATTACKS = [
    Attack(
        "gpu-through-nvidia-visible-devices-in-the-pod-spec",
        nvidia_env_in_pod,
        "admission: tenant-pods-no-nvidia-env",
        without(VAP, "tenant-pods-no-nvidia-env"),
    ),
    Attack(
        "gpu-through-nvidia-visible-devices-in-an-ephemeral-container",
        nvidia_env_in_ephemeral_container,
        "admission: tenant-pods-no-nvidia-env",
        without(VAP, "tenant-pods-no-nvidia-env"),
    ),
    Attack(
        "gpu-through-nvidia-visible-devices-in-the-image",
        nvidia_env_in_image,
        "node: container toolkit ignores the variable from unprivileged containers",
        without_user_data,
    ),
    Attack(
        "pod-owned-by-a-tiny-admitted-job-skips-kueue",
        pod_owned_by_a_tiny_job,
        "admission: tenant-controller-owners-from-controllers",
        without(VAP, "tenant-controller-owners-from-controllers"),
    ),
    Attack(
        "replicaset-owned-by-a-tiny-admitted-job-skips-kueue",
        replica_set_owned_by_a_tiny_job,
        "admission: tenant-controller-owners-from-controllers",
        without(VAP, "tenant-controller-owners-from-controllers"),
    ),
    Attack(
        "kueue-gate-lifted-by-hand",
        kueue_gate_lifted_by_hand,
        "admission: tenant-pods-keep-the-kueue-gate",
        without(VAP, "tenant-pods-keep-the-kueue-gate"),
    ),
    Attack(
        "default-deny-deleted-by-the-tenant-admin",
        default_deny_deleted(ADMIN),
        "admission: tenant-network-policies-are-platform-owned",
        without(VAP, "tenant-network-policies-are-platform-owned"),
    ),
    Attack(
        "default-deny-deleted-as-a-tenant-service-account",
        default_deny_deleted(TENANT_SERVICE_ACCOUNT),
        "admission: tenant-network-policies-are-platform-owned",
        without(VAP, "tenant-network-policies-are-platform-owned"),
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
        "service-external-ips-intercept-traffic",
        service_external_ips,
        "admission: tenant-services-no-external-ips",
        without(VAP, "tenant-services-no-external-ips"),
    ),
    Attack(
        "pod-without-a-storage-limit-fills-the-node",
        unbounded_scratch,
        "LimitRange: container-defaults",
        without("LimitRange", "container-defaults"),
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
        "another-accounts-flow-logs-assume-the-flow-logs-role",
        assume_role(
            f"{CLUSTER}-vpc-flow-logs",
            {"aws:SourceAccount": "444455556666", "aws:SourceArn": "arn:aws:ec2:us-east-1:444455556666:vpc-flow-log/fl-1"},
            "vpc-flow-logs.amazonaws.com",
        ),
        "IAM trust: aws:SourceAccount, aws:SourceArn",
        without_trust_condition(f"{CLUSTER}-vpc-flow-logs"),
    ),
]


@pytest.mark.parametrize("attack", ATTACKS, ids=[a.name for a in ATTACKS])
def test_each_attempt_is_stopped(attack):
    assert attack.stopped(rendered()), attack.guard


@pytest.mark.parametrize("attack", ATTACKS, ids=[a.name for a in ATTACKS])
def test_each_attempt_succeeds_once_its_guard_is_removed(attack):
    assert not attack.stopped(attack.remove_guard(rendered())), f"{attack.name} is stopped by something besides {attack.guard}"


def test_every_admission_policy_stops_some_row():
    named = {a.guard.removeprefix("admission: ") for a in ATTACKS if a.guard.startswith("admission: ")}
    policies = {o["metadata"]["name"] for o in rendered() if o["kind"] == VAP}
    assert policies == named


# --- what the policies still admit -------------------------------------------------------------------


def _admitted(objects: Objects, req: Request) -> bool:
    return not admission_denials(objects, req)


def test_controllers_create_owned_pods_and_kueue_lifts_its_gate():
    objects = rendered()
    owned = pod(metadata=OWNED_BY_TINY_JOB)
    assert _admitted(objects, request(objects, "CREATE", "", "pods", JOB_CONTROLLER, object=owned))
    gated = pod(schedulingGates=[{"name": KUEUE_SCHEDULING_GATE}])
    assert _admitted(objects, request(objects, "UPDATE", "", "pods", KUEUE, object=pod(), old=gated))


def test_tenants_keep_the_owner_references_controllers_set_and_add_non_controller_ones():
    objects = rendered()
    owned = pod(metadata=OWNED_BY_TINY_JOB)
    relabelled = copy.deepcopy(owned)
    relabelled["metadata"]["labels"] = {"team": "x"}
    assert _admitted(objects, request(objects, "UPDATE", "", "pods", object=relabelled, old=owned))
    weak = pod(metadata={"ownerReferences": [{**OWNED_BY_TINY_JOB["ownerReferences"][0], "controller": False}]})
    assert _admitted(objects, request(objects, "CREATE", "", "pods", object=weak))


def test_tenants_run_ordinary_pods_and_services():
    objects = rendered()
    ordinary = pod(containers=[{"name": "main", "image": "busybox:1.36", "env": [{"name": "CUDA_CACHE_PATH", "value": "/tmp"}]}])
    assert _admitted(objects, request(objects, "CREATE", "", "pods", object=ordinary))
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s", "namespace": TENANT},
        "spec": {"ports": [{"port": 80}]},
    }
    assert _admitted(objects, request(objects, "CREATE", "", "services", object=service))
    assert not quota_denials(objects, pod(), TENANT)


def test_the_deployer_still_manages_tenant_network_policies():
    objects = rendered()
    [deny] = [
        o for o in objects if o["kind"] == "NetworkPolicy" and o["metadata"] == {"name": "default-deny-all", "namespace": TENANT}
    ]
    assert _admitted(objects, request(objects, "UPDATE", "networking.k8s.io", "networkpolicies", DEPLOYER, object=deny, old=deny))


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
