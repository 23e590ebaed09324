"""Everything a tenant gets: its namespace, quota, container defaults, network rules and access.

Access model. EKS access entries put each tenant principal into Kubernetes groups
(`gpu-platform:<tenant>:admins`, `gpu-platform:<tenant>:viewers`); RoleBindings in the tenant's
namespace bind those groups to the built-in ClusterRoles `admin` and `view`. Why not EKS access
policies: the built-in admin/edit/view ClusterRoles aggregate the rules CRD owners publish for them
(Kueue's LocalQueues, the trainer's TrainJobs and JobSets), which EKS's fixed access policies cannot
grant. And a RoleBinding is namespaced, so a tenant gets nothing cluster-scoped, not even the right
to relabel its own namespace (its Pod Security level and Kueue selector stay ours).
EKS allows one access entry per principal, so a principal in several tenants gets one entry that
carries all its groups.

Network model. Every pod in a tenant namespace is denied all traffic, then allowed: DNS to CoreDNS,
its own namespace both ways, scrapes from `monitoring`, ingress from the namespaces the tenant names,
and the internet (never the VPC's private ranges or the instance metadata service) when allowed.
No egress to the Kubernetes API: the workloads tenants run (TrainJob and Kueue-admitted Job pods,
notebooks, inference servers) only talk to each other and to data; the operators that create and
watch their pods run in their own namespaces. Pods that drive the API themselves (Spark's driver,
KubeRay's autoscaler) need a network allowance the config does not offer.
These policies are enforced only when the vpc-cni add-on runs with `enableNetworkPolicy: "true"`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
from pulumi_aws import eks as aws_eks

from config import namespaces
from config.cluster import principal_slug
from config.fair_share import TenantPlan
from config.labels import EPHEMERAL_STORAGE, POD_SECURITY_LABEL, TENANT_GROUP_PREFIX, TENANT_LABEL
from config.tenants import DEFAULT_EPHEMERAL_LIMIT_GIB, DEFAULT_EPHEMERAL_REQUEST_GIB

from .lib.namespaces import namespace_peer, namespace_selector
from .lib.resources import Children, declare

# `warn` and `audit` stay restricted even where `enforce` is relaxed: users still see what would fail.
POD_SECURITY_AUDIT_LEVEL = "restricted"

DNS_NAMESPACE = namespaces.KUBE_SYSTEM
DNS_POD_LABELS = {"k8s-app": "kube-dns"}  # CoreDNS's pods, as the EKS add-on labels them

# Internet egress means everything but the private ranges (the VPC, peered networks, the cluster's
# own services) and the instance metadata service (the node's IAM role).
PRIVATE_RANGES = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")
INSTANCE_METADATA = "169.254.169.254/32"

# Containers that declare no requests get these, so every pod is admitted under the ResourceQuota
# (which rejects pods that omit a resource it limits), counted by Kueue, and charged to the tenant.
# The quota limits `limits.memory`, so a default memory limit is needed as well. No default CPU limit:
# the quota has no `limits.cpu`, and CPU limits only throttle (data loaders starve GPUs).
# A container that sets a memory request above the default limit must set its own limit too.
# Ephemeral storage too: the quota limits it, and a pod without a limit could fill its node's disk and
# have the kubelet evict its neighbours (DiskPressure); with one, the kubelet evicts that pod alone.
DEFAULT_CONTAINER_REQUESTS = {"cpu": "100m", "memory": "256Mi", EPHEMERAL_STORAGE: f"{DEFAULT_EPHEMERAL_REQUEST_GIB}Gi"}
DEFAULT_CONTAINER_LIMITS = {"memory": "1Gi", EPHEMERAL_STORAGE: f"{DEFAULT_EPHEMERAL_LIMIT_GIB}Gi"}

# The PriorityClasses Kubernetes creates for node and cluster add-ons. Any namespace may use them
# (the Priority admission plugin stopped confining them to kube-system in 1.17); a pod at their priority
# preempts every tenant's pods. The Kubernetes docs' way to keep them out: a quota scoped to them
# with nothing allowed ("Limit Priority Class consumption by default").
SYSTEM_PRIORITY_CLASSES = ("system-cluster-critical", "system-node-critical")

ADMIN_CLUSTER_ROLE = "admin"
VIEWER_CLUSTER_ROLE = "view"
RBAC_API_GROUP = "rbac.authorization.k8s.io"


class Tenants(pulumi.ComponentResource):
    """Every tenant of the stack, one `Tenant` child each, and the access entries of their principals."""

    namespaces: dict[str, pulumi.CustomResource]
    access_entries: dict[str, aws_eks.AccessEntry]

    def __init__(
        self,
        name: str,
        tenants: Sequence[TenantPlan],
        *,
        cluster_name: str,
        kubernetes_version: str,
        provider: k8s.Provider,
        tags: Mapping[str, str] | None = None,
        protect: bool = False,
        bootstrap_admin: str | None = None,
        namespaces_after: Sequence[pulumi.Input[pulumi.Resource]] = (),
        depends_on: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ):
        """`kubernetes_version` is the cluster's minor ("1.35"); `depends_on` is what the access entries
        wait for (the cluster); `protect` keeps `pulumi up` from deleting a namespace, and every volume
        in it, when a tenant disappears from the config. `bootstrap_admin` (`Cluster.creator`: the
        creator, or the caller on the first `up`) holds EKS's own entry and gets none here: EKS refuses
        a second entry for a principal (ResourceInUseException), and it is cluster-admin already.
        `namespaces_after` is what each namespace waits for, and so what a destroy deletes after it
        (Kueue's release: its controller removes the finalizers it put on the namespace's pods and Workloads)."""
        super().__init__("gpu-platform:tenants:Tenants", name, None, opts)
        self.namespaces = {}
        for plan in tenants:
            tenant = Tenant(
                f"{cluster_name}-tenant-{plan.name}",
                plan,
                kubernetes_version=kubernetes_version,
                provider=provider,
                protect=protect,
                namespace_after=namespaces_after,
                opts=pulumi.ResourceOptions(parent=self),
            )
            self.namespaces[plan.name] = tenant.namespace

        # Named for the principal, never for a tenant: adding a tenant adds entries or groups, it renames nothing.
        self.access_entries = {
            principal: aws_eks.AccessEntry(
                f"{name}-access-{principal_slug(principal)}",
                cluster_name=cluster_name,
                principal_arn=principal,
                type="STANDARD",
                kubernetes_groups=groups,
                tags=dict(tags or {}),
                opts=Children(self, depends_on=depends_on).opts(),
            )
            for principal, groups in principal_groups(tenants).items()
            if principal != bootstrap_admin
        }
        self.register_outputs({"namespaces": sorted(self.namespaces)})


class Tenant(pulumi.ComponentResource):
    """One tenant's namespaced objects; the namespace first, everything else waits for it."""

    namespace: pulumi.CustomResource

    def __init__(
        self,
        name: str,
        plan: TenantPlan,
        *,
        kubernetes_version: str,
        provider: k8s.Provider,
        protect: bool = False,
        namespace_after: Sequence[pulumi.Input[pulumi.Resource]] = (),
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("gpu-platform:tenants:Tenant", name, None, opts)
        children = Children(self, provider)
        objects = tenant_objects(plan, kubernetes_version)
        namespace_manifest = objects.pop("namespace")
        namespace_opts = pulumi.ResourceOptions.merge(
            children.opts(protect=protect), pulumi.ResourceOptions(depends_on=list(namespace_after))
        )
        self.namespace = declare(f"{plan.name}-namespace", namespace_manifest, namespace_opts)
        for suffix, manifest in objects.items():
            declare(f"{plan.name}-{suffix}", manifest, children.opts(self.namespace))
        self.register_outputs({"namespace": plan.namespace})


# --- builders: validated config in, manifests out ------------------------------------------------


def tenant_objects(plan: TenantPlan, kubernetes_version: str) -> dict[str, dict[str, Any]]:
    """Logical-name suffix -> manifest, the namespace first. Suffixes derive from what the object is."""
    objects = {
        "namespace": namespace(plan, kubernetes_version),
        "quota": resource_quota(plan),
        "system-priority-quota": system_priority_quota(plan),
        "limits": limit_range(plan),
    }
    objects.update(network_policies(plan))
    objects.update(role_bindings(plan))
    return objects


def namespace(plan: TenantPlan, kubernetes_version: str) -> dict[str, Any]:
    """The tenant's namespace: Pod Security Standards pinned to the cluster's minor, and the tenant label."""
    version = f"v{kubernetes_version}"
    labels = {TENANT_LABEL: plan.name}
    for mode, level in (
        ("enforce", plan.config.pod_security),
        ("audit", POD_SECURITY_AUDIT_LEVEL),
        ("warn", POD_SECURITY_AUDIT_LEVEL),
    ):
        labels[f"{POD_SECURITY_LABEL}/{mode}"] = level
        # Pinned, so a control-plane upgrade never tightens the rules under running workloads unannounced.
        labels[f"{POD_SECURITY_LABEL}/{mode}-version"] = version
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": plan.namespace, "labels": dict(sorted(labels.items()))}}


def resource_quota(plan: TenantPlan) -> dict[str, Any]:
    """The quota derived in config/fair_share.py: never below what Kueue admits for the tenant."""
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "tenant-quota", "namespace": plan.namespace},
        "spec": {"hard": dict(plan.resource_quota)},
    }


def system_priority_quota(plan: TenantPlan) -> dict[str, Any]:
    """No pod at a system priority: a quota of zero pods scoped to the system PriorityClasses.

    Tenants cannot change quotas: `admin` only reads them (system:aggregate-to-view).
    """
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "no-system-priority", "namespace": plan.namespace},
        "spec": {
            "hard": {"pods": "0"},
            "scopeSelector": {
                "matchExpressions": [
                    {"scopeName": "PriorityClass", "operator": "In", "values": list(SYSTEM_PRIORITY_CLASSES)}
                ]
            },
        },
    }


def limit_range(plan: TenantPlan) -> dict[str, Any]:
    """Container defaults, so a pod that declares nothing is still admitted, counted and charged."""
    return {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": "container-defaults", "namespace": plan.namespace},
        "spec": {
            "limits": [
                {
                    "type": "Container",
                    "defaultRequest": dict(DEFAULT_CONTAINER_REQUESTS),
                    "default": dict(DEFAULT_CONTAINER_LIMITS),
                }
            ]
        },
    }


def network_policies(plan: TenantPlan) -> dict[str, dict[str, Any]]:
    """Deny everything, then allow what a tenant's pods need; suffix -> NetworkPolicy."""
    every_pod: dict[str, Any] = {}
    same_namespace: list[dict[str, Any]] = [{"podSelector": {}}]
    policies = {
        "deny-all": _policy(plan, "default-deny-all", {"podSelector": every_pod, "policyTypes": ["Ingress", "Egress"]}),
        "allow-dns": _policy(
            plan,
            "allow-dns",
            {
                "podSelector": every_pod,
                "policyTypes": ["Egress"],
                "egress": [
                    {
                        "to": [
                            {
                                "namespaceSelector": namespace_selector(DNS_NAMESPACE),
                                "podSelector": {"matchLabels": dict(DNS_POD_LABELS)},
                            }
                        ],
                        "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
                    }
                ],
            },
        ),
        # Distributed training: workers reach the master's rendezvous and each other on any port.
        "allow-same-namespace": _policy(
            plan,
            "allow-same-namespace",
            {
                "podSelector": every_pod,
                "policyTypes": ["Ingress", "Egress"],
                "ingress": [{"from": same_namespace}],
                "egress": [{"to": same_namespace}],
            },
        ),
        "allow-monitoring": _policy(
            plan,
            "allow-monitoring-scrapes",
            {
                "podSelector": every_pod,
                "policyTypes": ["Ingress"],
                "ingress": [{"from": [namespace_peer(namespaces.MONITORING)]}],
            },
        ),
    }
    network = plan.config.network
    if network.ingress_from_namespaces:
        policies["allow-ingress-from-namespaces"] = _policy(
            plan,
            "allow-ingress-from-namespaces",
            {
                "podSelector": every_pod,
                "policyTypes": ["Ingress"],
                "ingress": [{"from": [namespace_peer(ns) for ns in network.ingress_from_namespaces]}],
            },
        )
    if network.internet_egress:
        policies["allow-internet-egress"] = _policy(
            plan,
            "allow-internet-egress",
            {
                "podSelector": every_pod,
                "policyTypes": ["Egress"],
                "egress": [{"to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": [*PRIVATE_RANGES, INSTANCE_METADATA]}}]}],
            },
        )
    return policies


def role_bindings(plan: TenantPlan) -> dict[str, dict[str, Any]]:
    """The tenant's groups bound to the built-in `admin` and `view` ClusterRoles, in its namespace only."""
    bindings = {}
    for role, principals, cluster_role in (
        ("admins", plan.config.admins, ADMIN_CLUSTER_ROLE),
        ("viewers", plan.config.viewers, VIEWER_CLUSTER_ROLE),
    ):
        if not principals:
            continue
        bindings[role] = {
            "apiVersion": f"{RBAC_API_GROUP}/v1",
            "kind": "RoleBinding",
            "metadata": {"name": f"tenant-{role}", "namespace": plan.namespace},
            "roleRef": {"apiGroup": RBAC_API_GROUP, "kind": "ClusterRole", "name": cluster_role},
            "subjects": [{"apiGroup": RBAC_API_GROUP, "kind": "Group", "name": tenant_group(plan.name, role)}],
        }
    return bindings


def tenant_group(tenant: str, role: str) -> str:
    """`gpu-platform:<tenant>:admins` or `...:viewers`; EKS refuses groups that start with `system:`."""
    return f"{TENANT_GROUP_PREFIX}{tenant}:{role}"


def principal_groups(tenants: Sequence[TenantPlan]) -> dict[str, list[str]]:
    """Principal ARN -> every tenant group it belongs to, sorted: one EKS access entry each."""
    groups: dict[str, set[str]] = {}
    for plan in tenants:
        for role, principals in (("admins", plan.config.admins), ("viewers", plan.config.viewers)):
            for principal in principals:
                groups.setdefault(principal, set()).add(tenant_group(plan.name, role))
    return {principal: sorted(names) for principal, names in sorted(groups.items())}


def _policy(plan: TenantPlan, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": plan.namespace},
        "spec": spec,
    }
