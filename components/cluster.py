"""The EKS control plane: secrets encryption, logging, API access, and the Kubernetes provider.

Access: pulumi-eks creates the cluster with `bootstrapClusterCreatorAdminPermissions: true` and no
switch to turn it off (pulumi/pulumi-eks `nodejs/eks/cluster/cluster.ts`, `accessConfig`; open issue
pulumi/pulumi-eks#2373), so EKS gives the principal that creates the cluster an admin access entry
of its own. A second entry for that principal fails with ResourceInUseException, so the stack
declares entries for the other admins only. Who the creator is comes from `cluster.creator`, or is
the caller while the cluster does not exist yet (`ClusterConfig.bootstrap_admin`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import pulumi
import pulumi_aws as aws
import pulumi_eks as eks
import pulumi_kubernetes as k8s
from pulumi_aws import cloudwatch, ec2, kms
from pulumi_aws import eks as aws_eks

from config import ConfigError
from config.cluster import ClusterConfig, principal_slug
from config.labels import DISCOVERY_TAG

from .lib.iam import cluster_access_policy
from .lib.kubeconfig import KubeconfigCredentials, kubeconfig

CLUSTER_ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"


def deploying_principal(parent: pulumi.Resource) -> str:
    """The IAM role (its ARN with path) or user running `pulumi up`, not its STS session.

    EKS records the bootstrap entry under this ARN; terraform-aws-eks resolves its deployer the same
    way (`data.aws_iam_session_context.current.issuer_arn`).
    """
    opts = pulumi.InvokeOptions(parent=parent)
    caller = aws.get_caller_identity(opts=opts)
    return aws.iam.get_session_context(arn=caller.arn, opts=opts).issuer_arn


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
    provider_kubeconfig: pulumi.Output[str]
    creator: str
    provider: k8s.Provider
    ready: list[pulumi.Resource]

    def __init__(
        self,
        name: str,
        config: ClusterConfig,
        *,
        vpc_id: pulumi.Input[str],
        private_subnet_ids: Sequence[pulumi.Input[str]],
        partition: str,
        credentials: KubeconfigCredentials,
        tags: Mapping[str, str],
        efa: bool = False,
        opts: pulumi.ResourceOptions | None = None,
    ):
        """
        :param config: `PlatformConfig.cluster`.
        :param partition: `aws.get_partition().partition`; the access policy's ARN lies in it.
        :param credentials: what the stack's AWS provider authenticates with (`KubeconfigCredentials.from_stack_config`).
        :param efa: whether a GPU pool uses EFA (`NodePoolConfig.efa`): the node security group then lets
            its members send to each other, as EFA needs.
        """
        super().__init__("gpu-platform:cluster:Cluster", name, None, opts)
        self.name = config.name
        self.creator = self._bootstrap_admin(config)
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
            provider_credential_opts=credentials.provider_credential_opts(),
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
        # The API server's CA (base64 PEM): what a fleet manager trusts a worker's endpoint by.
        self.certificate_authority = described.certificate_authorities.apply(lambda authorities: authorities[0].data)
        # pulumi-eks's variant without `--profile`: other admins use it with their own credentials.
        self.kubeconfig = pulumi.Output.secret(self.eks.kubeconfig_json)
        # The stack's own: `aws eks get-token` runs with the AWS provider's profile and role.
        own_kubeconfig: pulumi.Output[str] = described.apply(
            lambda c: json.dumps(
                kubeconfig(config.name, c.endpoint, c.certificate_authorities[0].data, c.arn.split(":")[3], credentials),
                sort_keys=True,
            )
        )
        self.provider_kubeconfig = pulumi.Output.secret(own_kubeconfig)

        ec2.Tag(
            f"{name}-node-sg-discovery",
            resource_id=self.security_group_id,
            key=DISCOVERY_TAG,
            value=config.name,
            # Recorded so that a destroy removes the tag before the cluster (and its security group).
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.eks]),
        )

        if efa:
            # EFA traffic must be allowed both in and out between the nodes' security group and itself (Amazon
            # EC2 User Guide, "Get started with EFA": a security group allowing all traffic to and from itself).
            # EKS's cluster security group, which the nodes use, already lets in all traffic from itself and
            # lets out traffic to 0.0.0.0/0 only (EKS User Guide, sec-group-reqs): this adds the egress to itself.
            ec2.SecurityGroupRule(
                f"{name}-node-sg-efa-egress",
                type="egress",
                from_port=0,
                to_port=0,
                protocol="-1",
                self=True,
                security_group_id=self.security_group_id,
                description="EFA: all traffic to the node security group itself",
                opts=pulumi.ResourceOptions(parent=self, depends_on=[self.eks]),
            )

        # The creator's access comes with the cluster itself; every other admin's with its association.
        self.ready = [self.eks, *self._admin_access(name, config, partition)]

        # Every Kubernetes object goes through this provider, and only after the admins' access exists:
        # the identity running `pulumi up` is the creator or one of them.
        self.provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=self.provider_kubeconfig,
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
                "creator": self.creator,
            }
        )

    def _bootstrap_admin(self, config: ClusterConfig) -> str:
        """The principal EKS made an admin at creation; a config mistake about it ends the run with its one line.

        Plain invokes: the answer decides which access entries exist, so it is known before any is declared.
        """
        caller = deploying_principal(self)
        cluster_exists = config.name in aws_eks.get_clusters(opts=pulumi.InvokeOptions(parent=self)).names
        try:
            creator = config.bootstrap_admin(caller, cluster_exists=cluster_exists)
        except ConfigError as err:
            raise pulumi.RunError(str(err)) from None
        if caller != creator and caller not in config.admins:
            pulumi.log.warn(
                f"{caller} runs `pulumi up` but is neither gpu-platform:cluster.creator nor in cluster.admins: "
                "it has no access entry here, so the Kubernetes API refuses it unless one exists outside this stack",
                self,
            )
        return creator

    def _admin_access(self, name: str, config: ClusterConfig, partition: str) -> list[pulumi.Resource]:
        """One access entry per admin but the creator, each with the cluster-admin policy at cluster scope."""
        associations: list[pulumi.Resource] = []
        for principal_arn in config.managed_admins(self.creator):
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
                    policy_arn=cluster_access_policy(partition, CLUSTER_ADMIN_POLICY),
                    access_scope=aws_eks.AccessPolicyAssociationAccessScopeArgs(type="cluster"),
                    opts=pulumi.ResourceOptions(parent=entry),
                )
            )
        return associations
