"""EKS managed add-ons at pinned versions, and the encrypted default StorageClass."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
from pulumi_aws import eks as aws_eks
from pulumi_aws import iam

from config import namespaces
from config.labels import DEFAULT_STORAGE_CLASS
from config.versions import AddonVersion

from .lib import iam as policies
from .lib.resources import Children, declare

# Add-ons a node needs before it turns Ready (networking, service routing, credentials) go in before
# the node group. The rest run Deployments that need a node: created first, they sit DEGRADED and
# the create fails after twenty minutes.
BEFORE_NODES = frozenset({"vpc-cni", "kube-proxy", "eks-pod-identity-agent"})

# The add-on that provisions EBS volumes: the default StorageClass waits for it.
EBS_CSI_DRIVER = "aws-ebs-csi-driver"

# Add-ons that call AWS APIs, the service account they run as, and the managed policy they need.
# Their credentials come from EKS Pod Identity, never from the node role.
# Every add-on here runs in kube-system (an add-on's pod identity association names only the service account).
ADDON_NAMESPACE = namespaces.KUBE_SYSTEM
ADDON_IDENTITIES: dict[str, tuple[str, str]] = {
    EBS_CSI_DRIVER: ("ebs-csi-controller-sa", "service-role/AmazonEBSCSIDriverPolicy"),
}

# Add-on configuration beyond the defaults. vpc-cni: enforce NetworkPolicies (tenants' isolation);
# without it they are accepted and silently ignored.
ADDON_CONFIGURATION: dict[str, dict[str, str]] = {"vpc-cni": {"enableNetworkPolicy": "true"}}


class ClusterAddons(pulumi.ComponentResource):
    """A set of EKS managed add-ons, each pinned, conflicts resolved in favour of the declared config."""

    addons: dict[str, aws_eks.Addon]

    def __init__(
        self,
        name: str,
        addons: Sequence[AddonVersion],
        *,
        cluster_name: str,
        account_id: pulumi.Input[str],
        partition: str,
        tags: Mapping[str, str],
        depends_on: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ):
        """`account_id` is the cluster's account: the add-on roles' trust policies name it."""
        super().__init__("gpu-platform:cluster:ClusterAddons", name, None, opts)
        self.addons = {}
        for addon in addons:
            pod_identities: list[aws_eks.AddonPodIdentityAssociationArgs] = []
            if addon.name in ADDON_IDENTITIES:
                service_account, policy = ADDON_IDENTITIES[addon.name]
                trust = pulumi.Output.from_input(account_id).apply(
                    functools.partial(_trust_json, cluster_name=cluster_name, service_account=service_account)
                )
                policy_arn = policies.managed_policy(partition, policy)
                role = self._pod_identity_role(name, cluster_name, addon.name, trust, policy_arn, tags)
                pod_identities.append(aws_eks.AddonPodIdentityAssociationArgs(role_arn=role.arn, service_account=service_account))
            self.addons[addon.name] = aws_eks.Addon(
                f"{name}-{addon.name}",
                cluster_name=cluster_name,
                addon_name=addon.name,
                addon_version=addon.version,
                resolve_conflicts_on_create="OVERWRITE",
                resolve_conflicts_on_update="OVERWRITE",
                pod_identity_associations=pod_identities or None,
                configuration_values=(
                    json.dumps(ADDON_CONFIGURATION[addon.name], sort_keys=True) if addon.name in ADDON_CONFIGURATION else None
                ),
                tags=dict(tags),
                opts=Children(self, depends_on=depends_on).opts(),
            )
        self.register_outputs({"addons": {n: a.addon_version for n, a in self.addons.items()}})

    def _pod_identity_role(
        self, name: str, cluster_name: str, addon: str, trust: pulumi.Input[str], policy_arn: str, tags: Mapping[str, str]
    ) -> iam.Role:
        role = iam.Role(
            f"{name}-{addon}",
            name=f"{cluster_name}-{addon}",
            assume_role_policy=trust,
            tags=dict(tags),
            opts=pulumi.ResourceOptions(parent=self),
        )
        iam.RolePolicyAttachment(
            f"{name}-{addon}",
            role=role.name,
            policy_arn=policy_arn,
            opts=pulumi.ResourceOptions(parent=role),
        )
        return role


def _trust_json(account_id: str, *, cluster_name: str, service_account: str) -> str:
    return policies.to_json(policies.pod_identity_trust_policy(account_id, cluster_name, ADDON_NAMESPACE, service_account))


class DefaultStorageClass(pulumi.ComponentResource):
    """The cluster's default StorageClass: encrypted gp3 through the EBS CSI driver."""

    def __init__(
        self,
        name: str,
        *,
        provider: k8s.Provider,
        depends_on: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("gpu-platform:cluster:DefaultStorageClass", name, None, opts)
        manifest = default_storage_class()
        # The EBS CSI driver must be running before a volume can be provisioned from this class.
        declare(f"{name}-{manifest['metadata']['name']}", manifest, Children(self, provider, depends_on).opts())
        self.register_outputs({"name": manifest["metadata"]["name"]})


def default_storage_class() -> dict[str, Any]:
    """gp3, encrypted, bound where the pod lands (an EBS volume lives in one zone)."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {
            "name": DEFAULT_STORAGE_CLASS,
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
        },
        "provisioner": "ebs.csi.aws.com",
        "parameters": {"type": "gp3", "encrypted": "true", "csi.storage.k8s.io/fstype": "ext4"},
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "WaitForFirstConsumer",
        "allowVolumeExpansion": True,
    }
