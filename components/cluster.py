"""The EKS control plane: secrets encryption, logging, API access, and the Kubernetes provider."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pulumi
import pulumi_eks as eks
import pulumi_kubernetes as k8s
from pulumi_aws import cloudwatch, ec2, kms
from pulumi_aws import eks as aws_eks

from config.cluster import ClusterConfig
from config.labels import DISCOVERY_TAG

from .lib.iam import principal_slug

CLUSTER_ADMIN_POLICY = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"


class Cluster(pulumi.ComponentResource):
    """An EKS cluster with API-mode authentication, KMS-encrypted secrets and audit logging.

    Nodes come from elsewhere (the system node group, then Karpenter): the default node group and
    pulumi-eks's own security groups are skipped, so every node shares the security group EKS
    creates for the cluster. That group is tagged for Karpenter's discovery.
    """

    name: str
    endpoint: pulumi.Output[str]
    oidc_issuer: pulumi.Output[str]
    security_group_id: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]
    provider: k8s.Provider
    ready: list[pulumi.Resource]

    def __init__(
        self,
        name: str,
        config: ClusterConfig,
        *,
        vpc_id: pulumi.Input[str],
        private_subnet_ids: Sequence[pulumi.Input[str]],
        tags: Mapping[str, str],
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("gpu-platform:cluster:Cluster", name, None, opts)
        self.name = config.name
        protected = pulumi.ResourceOptions(parent=self, protect=config.protect)

        secrets_key = kms.Key(
            f"{name}-secrets",
            description=f"Envelope encryption of Kubernetes secrets in EKS cluster {config.name}",
            enable_key_rotation=True,
            deletion_window_in_days=30,
            tags=dict(tags),
            opts=protected,
        )
        kms.Alias(
            f"{name}-secrets",
            name=f"alias/{config.name}-eks-secrets",
            target_key_id=secrets_key.key_id,
            opts=pulumi.ResourceOptions(parent=secrets_key),
        )

        # Created before the cluster so EKS writes into a group with a retention period instead of
        # creating its own that keeps logs forever.
        log_group = cloudwatch.LogGroup(
            f"{name}-control-plane-logs",
            name=f"/aws/eks/{config.name}/cluster",
            retention_in_days=config.logging.retention_days,
            tags=dict(tags),
            opts=pulumi.ResourceOptions(parent=self),
        )

        public_cidrs = config.endpoint.public_access_cidrs
        self.eks = eks.Cluster(
            f"{name}-eks",
            name=config.name,
            version=config.kubernetes_version,
            vpc_id=vpc_id,
            private_subnet_ids=list(private_subnet_ids),
            node_associate_public_ip_address=False,
            authentication_mode=eks.AuthenticationMode.API,
            skip_default_node_group=True,
            skip_default_security_groups=True,
            # The add-ons are declared below as EKS managed add-ons with pinned versions; nothing is
            # installed behind their back.
            bootstrap_self_managed_addons=False,
            use_default_vpc_cni=True,
            coredns_addon_options=eks.CoreDnsAddonOptionsArgs(enabled=False),
            kube_proxy_addon_options=eks.KubeProxyAddonOptionsArgs(enabled=False),
            endpoint_private_access=True,
            endpoint_public_access=bool(public_cidrs),
            public_access_cidrs=list(public_cidrs) or None,
            encryption_config_key_arn=secrets_key.arn,
            enabled_cluster_log_types=list(config.logging.types),
            # Workloads get AWS credentials through EKS Pod Identity, which needs no IAM OIDC provider.
            create_oidc_provider=False,
            deletion_protection=config.protect,
            # Extended support costs six times standard; upgrading on time is the cheaper policy.
            upgrade_policy=aws_eks.ClusterUpgradePolicyArgs(support_type="STANDARD"),
            tags=dict(tags),
            opts=pulumi.ResourceOptions(parent=self, protect=config.protect, depends_on=[log_group]),
        )

        described = aws_eks.get_cluster_output(
            name=config.name, opts=pulumi.InvokeOutputOptions(parent=self, depends_on=[self.eks])
        )
        self.endpoint = described.endpoint
        self.oidc_issuer = described.identities.apply(lambda identities: identities[0].oidcs[0].issuer)
        self.security_group_id = described.vpc_config.cluster_security_group_id
        self.kubeconfig = pulumi.Output.secret(self.eks.kubeconfig_json)

        ec2.Tag(
            f"{name}-node-sg-discovery",
            resource_id=self.security_group_id,
            key=DISCOVERY_TAG,
            value=config.name,
            # Recorded so that a destroy removes the tag before the cluster (and its security group).
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.eks]),
        )

        self.ready = [self.eks, *self._admin_access(name, config)]

        # Every Kubernetes object goes through this provider, and only after the admins' access exists:
        # the identity running `pulumi up` is one of them.
        self.provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=self.kubeconfig,
            enable_server_side_apply=True,
            opts=pulumi.ResourceOptions(parent=self, depends_on=self.ready),
        )

        self.register_outputs(
            {
                "name": self.name,
                "endpoint": self.endpoint,
                "oidcIssuer": self.oidc_issuer,
                "securityGroupId": self.security_group_id,
                "kubeconfig": self.kubeconfig,
            }
        )

    def _admin_access(self, name: str, config: ClusterConfig) -> list[pulumi.Resource]:
        """One access entry per admin principal, each with the cluster-admin policy at cluster scope."""
        associations: list[pulumi.Resource] = []
        for principal_arn in config.admins:
            logical = f"{name}-admin-{principal_slug(principal_arn)}"
            entry = aws_eks.AccessEntry(
                logical,
                cluster_name=config.name,
                principal_arn=principal_arn,
                type="STANDARD",
                opts=pulumi.ResourceOptions(parent=self, depends_on=[self.eks]),
            )
            associations.append(
                aws_eks.AccessPolicyAssociation(
                    logical,
                    cluster_name=config.name,
                    principal_arn=entry.principal_arn,
                    policy_arn=CLUSTER_ADMIN_POLICY,
                    access_scope=aws_eks.AccessPolicyAssociationAccessScopeArgs(type="cluster"),
                    opts=pulumi.ResourceOptions(parent=entry),
                )
            )
        return associations
