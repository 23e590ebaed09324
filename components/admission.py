"""Admission guards in tenant namespaces: ValidatingAdmissionPolicies the API server evaluates itself.

Tenant admins hold the built-in `admin` ClusterRole in their namespace (components/tenants.py). RBAC
cannot subtract from it: `admin` aggregates `edit`, whose rules (system:aggregate-to-edit) include
writing NetworkPolicies, and a custom copy of its rules would lose what CRD owners aggregate into it.
So the limits live here, as CEL the API server evaluates on every request in a namespace carrying the
tenant label, whoever sends it (admissionregistration.k8s.io/v1, GA since Kubernetes 1.30):

- NetworkPolicies are the platform's: a tenant's own request (its groups, or a service account of the
  namespace, which `admin` may impersonate) may not create, change or delete one.
- A controller ownerReference is set by controllers only. Kueue's pod webhook leaves a pod ungated when
  its controller ownerReference leads, in the same namespace, to a job of an enabled integration
  (kueue v0.19.2 pkg/controller/jobs/pod/pod_webhook.go `Default` -> jobframework/reconciler.go
  `FindAncestorJobManagedByKueue`: each hop follows `metav1.GetControllerOf`, the owner's kind must be an
  integration or apps/v1 ReplicaSet (integrationmanager.go `isKnownOwner`), the owner must exist with the
  referenced UID, and with `manageJobsWithoutQueueName` any enabled-integration owner counts). A job whose
  ancestor is admitted runs without a Workload of its own (reconciler.go, non-top-level jobs). A pod,
  ReplicaSet or Job "owned" by a tenant's small admitted Job would run outside the quota. Controllers
  (kube-controller-manager's per-controller service accounts, operators in their own namespaces) create
  every legitimately owned object; a tenant's own identity never needs to.
- Kueue's scheduling gate is lifted by Kueue only: removing it by hand starts a pod Kueue never admitted.
- No `NVIDIA_*` variable in a container's env: the NVIDIA container toolkit reads them to choose the
  GPUs a container sees. The nodes' toolkit ignores them from unprivileged containers too (node_pools.py);
  this refuses the ones a pod spec carries, with a message, before a node is involved.
- No Service `externalIPs` (CVE-2020-8554: a Service claiming another's address intercepts its traffic).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from config.labels import TENANT_GROUP_PREFIX
from models.kueue.constants import ADMISSION_SCHEDULING_GATE as KUEUE_SCHEDULING_GATE

from .lib.namespaces import every_tenant_namespace
from .lib.resources import Children, declare

API_VERSION = "admissionregistration.k8s.io/v1"
# The environment variable prefix the NVIDIA container toolkit reads (NVIDIA_VISIBLE_DEVICES,
# NVIDIA_MIG_CONFIG_DEVICES, NVIDIA_IMEX_CHANNELS, ...).
NVIDIA_ENV_PREFIX = "NVIDIA_"

# A request a tenant sends itself: as one of its principals (EKS puts them in the tenant's groups) or as
# a service account of the namespace (`admin` may impersonate them and mint their tokens).
TENANT_REQUEST = (
    f"request.userInfo.groups.exists(g, g.startsWith('{TENANT_GROUP_PREFIX}')) || "
    "('system:serviceaccounts:' + request.namespace) in request.userInfo.groups"
)
# A request from a controller: kube-controller-manager (its own identity, or the per-controller service
# accounts it uses with --use-service-account-credentials) or a service account of another namespace
# (operators run in their own); never the namespace's own service accounts, which its tenant controls.
CONTROLLER_REQUEST = (
    "request.userInfo.username == 'system:kube-controller-manager' || "
    "('system:serviceaccounts' in request.userInfo.groups && "
    "!(('system:serviceaccounts:' + request.namespace) in request.userInfo.groups))"
)

_ALL_CONTAINERS = (
    "(has(object.spec.containers) ? object.spec.containers : []) + "
    "(has(object.spec.initContainers) ? object.spec.initContainers : []) + "
    "(has(object.spec.ephemeralContainers) ? object.spec.ephemeralContainers : [])"
)
_CONTROLLER_OWNERS = (
    "has({o}.metadata.ownerReferences) ? {o}.metadata.ownerReferences.filter(r, has(r.controller) && r.controller) : []"
)
_GATES = "has({o}.spec.schedulingGates) ? {o}.spec.schedulingGates.map(g, g.name) : []"


def _rule(groups: Sequence[str], resources: Sequence[str], operations: Sequence[str]) -> dict[str, Any]:
    return {"apiGroups": list(groups), "apiVersions": ["*"], "resources": list(resources), "operations": list(operations)}


# name -> (what it matches, variables, validations). Each validation's message is what the tenant reads.
POLICIES: dict[str, dict[str, Any]] = {
    "tenant-network-policies-are-platform-owned": {
        "rules": [_rule(["networking.k8s.io"], ["networkpolicies"], ["CREATE", "UPDATE", "DELETE"])],
        "variables": [],
        "validations": [
            {
                "expression": f"!({TENANT_REQUEST})",
                "message": "NetworkPolicies in tenant namespaces belong to the platform: ask for an allowance "
                "in the tenant's config (network.ingressFromNamespaces, network.internetEgress)",
            }
        ],
    },
    "tenant-controller-owners-from-controllers": {
        # Every kind: a ReplicaSet or Job owned by a Kueue-managed Job escapes Kueue as a pod would.
        "rules": [_rule(["*"], ["*"], ["CREATE", "UPDATE"])],
        "variables": [
            {"name": "owners", "expression": _CONTROLLER_OWNERS.format(o="object")},
            {
                "name": "previousOwners",
                "expression": f"oldObject == null ? [] : ({_CONTROLLER_OWNERS.format(o='oldObject')})",
            },
        ],
        "validations": [
            {
                "expression": f"({CONTROLLER_REQUEST}) || "
                "variables.owners.all(r, variables.previousOwners.exists(p, p.uid == r.uid))",
                "message": "only controllers set a controller ownerReference in tenant namespaces; create the "
                "owning object (Job, Deployment, ...) and let its controller create what it owns",
            }
        ],
    },
    "tenant-pods-keep-the-kueue-gate": {
        "rules": [_rule([""], ["pods"], ["UPDATE"])],
        "variables": [],
        "validations": [
            {
                "expression": f"({CONTROLLER_REQUEST}) || !('{KUEUE_SCHEDULING_GATE}' in ({_GATES.format(o='oldObject')})) "
                f"|| '{KUEUE_SCHEDULING_GATE}' in ({_GATES.format(o='object')})",
                "message": f"only Kueue lifts the {KUEUE_SCHEDULING_GATE} scheduling gate, when it admits the pod",
            }
        ],
    },
    "tenant-pods-no-nvidia-env": {
        "rules": [_rule([""], ["pods", "pods/ephemeralcontainers"], ["CREATE", "UPDATE"])],
        "variables": [{"name": "containers", "expression": _ALL_CONTAINERS}],
        "validations": [
            {
                "expression": "variables.containers.all(c, !has(c.env) || "
                f"c.env.all(e, !e.name.startsWith('{NVIDIA_ENV_PREFIX}')))",
                "message": f"containers in tenant namespaces may not set {NVIDIA_ENV_PREFIX}* variables: request "
                "GPUs as resources (nvidia.com/gpu) and the device plugin gives the container exactly those",
            }
        ],
    },
    "tenant-services-no-external-ips": {
        "rules": [_rule([""], ["services"], ["CREATE", "UPDATE"])],
        "variables": [],
        "validations": [
            {
                "expression": "!has(object.spec.externalIPs) || size(object.spec.externalIPs) == 0",
                "message": "Services in tenant namespaces may not set externalIPs (CVE-2020-8554)",
            }
        ],
    },
}


def validating_admission_policy(name: str) -> dict[str, Any]:
    """One policy: fails closed (an evaluation error refuses the request), like an RBAC denial."""
    policy = POLICIES[name]
    spec: dict[str, Any] = {
        "failurePolicy": "Fail",
        "matchConstraints": {"namespaceSelector": every_tenant_namespace(), "resourceRules": policy["rules"]},
        "validations": [dict(v, reason="Forbidden") for v in policy["validations"]],
    }
    if policy["variables"]:
        spec["variables"] = policy["variables"]
    return {"apiVersion": API_VERSION, "kind": "ValidatingAdmissionPolicy", "metadata": {"name": name}, "spec": spec}


def validating_admission_policy_binding(name: str) -> dict[str, Any]:
    """The policy's binding: every tenant namespace, by label, so onboarding a tenant changes neither."""
    return {
        "apiVersion": API_VERSION,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {
            "policyName": name,
            "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": every_tenant_namespace()},
        },
    }


def admission_objects() -> dict[str, dict[str, Any]]:
    """Logical-name suffix -> manifest: each policy, then its binding."""
    objects = {}
    for name in POLICIES:
        objects[f"{name}-policy"] = validating_admission_policy(name)
        objects[f"{name}-binding"] = validating_admission_policy_binding(name)
    return objects


class TenantAdmission(pulumi.ComponentResource):
    """The admission policies of every tenant namespace; each binding waits for its policy."""

    def __init__(
        self,
        name: str,
        *,
        provider: k8s.Provider,
        depends_on: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ):
        """`depends_on`: the cluster. Tenants' namespaces need not exist: bindings select them by label."""
        super().__init__("gpu-platform:admission:TenantAdmission", name, None, opts)
        children = Children(self, provider, depends_on)
        policies: dict[str, pulumi.Resource] = {}
        for suffix, manifest in admission_objects().items():
            if manifest["kind"] == "ValidatingAdmissionPolicy":
                policies[manifest["metadata"]["name"]] = declare(f"{name}-{suffix}", manifest, children.opts())
            else:
                policy = policies[manifest["spec"]["policyName"]]
                declare(f"{name}-{suffix}", manifest, children.opts(policy))
        self.register_outputs({"policies": sorted(policies)})
