"""What every EKS managed node group of the platform shares: how it follows the cluster and how it is replaced.

Version: a group carries the cluster's Kubernetes minor (`version`) and the AMI release pinned for
that minor (`releaseVersion`, `config.versions.NODE_GROUP_RELEASE_VERSIONS`). pulumi-aws 7.51.1
eks.NodeGroup detects drift on `version` "only if a configuration value is provided": unset, a minor
bump leaves the nodes on the old minor and EKS refuses the next bump ("Nodegroups ... must be updated
to match cluster version"). With both set, a bump moves the group in place.

In place: `version`, `releaseVersion` and the launch template's `version` go to EKS in one
UpdateNodegroupVersion call; scaling, labels, taints and `updateConfig` in UpdateNodegroupConfig
(terraform-provider-aws internal/service/eks/node_group.go, resourceNodeGroupUpdate). EKS rolls the
nodes `updateConfig.maxUnavailable` at a time, by the group's `updateConfig.updateStrategy`
(models/aws_eks.py `update_surge`): DEFAULT launches up to twice the group's zones in extra nodes
first, MINIMAL none (it drains a node, then replaces it). Each group's launch template is created with
`update_default_version` and the group names the template's latest version, so a change to the
template is a new template version and an in-place update of the group, never a replacement.

Replacement: the AMI type, the instance types (a list: their order too), the capacity type, the
subnets, the node role and the launch template's id are ForceNew in the same schema, and Pulumi
creates the replacement before deleting the old group. A group's name is therefore a prefix
(`nodeGroupNamePrefix`) the provider completes with a unique suffix, so both can exist while the
pods move.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi_aws import ec2, iam
from pulumi_aws import eks as aws_eks

from config.versions import node_group_release_version
from models.aws_eks import DEFAULT_UPDATE, MINIMAL_UPDATE

from . import iam as policies
from .iam import NODE_ROLE_POLICIES

# EKS takes node group names of up to 63 characters, and the provider appends a 26-character unique
# suffix to a prefix (terraform-provider-aws internal/service/eks/node_group.go validates
# `node_group_name_prefix` to 63 - id.UniqueIDSuffixLength): 37 characters.
NODE_GROUP_NAME_PREFIX_MAX = 63 - 26

# IMDSv2 only, hop limit 1: pods (one network hop further) cannot reach the node's instance
# credentials; controllers get their own AWS identity through Pod Identity instead.
METADATA_OPTIONS = {
    "http_endpoint": "enabled",
    "http_tokens": "required",
    "http_put_response_hop_limit": 1,
    "instance_metadata_tags": "disabled",
}


# How each kind of group rolls a version update, one node at a time. The system nodes keep their
# controllers' capacity through it (DEFAULT: replacements first; a few extra general-purpose nodes).
# A DRA pool's group needs no instance beyond its own count (MINIMAL): with DEFAULT a version bump
# would first ask EC2 for up to two more GPU nodes per zone, and if they cannot launch the `up` fails
# with the control plane already on the new minor. MINIMAL takes one node's GPUs away at a time instead.
@dataclass(frozen=True)
class UpdateSettings:
    strategy: str  # models.aws_eks.UPDATE_STRATEGIES
    max_unavailable: int


SYSTEM_NODES_UPDATE = UpdateSettings(DEFAULT_UPDATE, 1)
DRA_NODES_UPDATE = UpdateSettings(MINIMAL_UPDATE, 1)


def update_config(settings: UpdateSettings) -> aws_eks.NodeGroupUpdateConfigArgs:
    """`SYSTEM_NODES_UPDATE` or `DRA_NODES_UPDATE` as the provider takes it (pulumi-aws 7.51.1
    eks.NodeGroupUpdateConfigArgs: `max_unavailable`, `update_strategy`)."""
    return aws_eks.NodeGroupUpdateConfigArgs(max_unavailable=settings.max_unavailable, update_strategy=settings.strategy)


def node_group_name_prefix(cluster_name: str, group: str) -> str:
    """`<cluster>-<group>-`, cut to NODE_GROUP_NAME_PREFIX_MAX characters.

    A 32-character cluster name and `sys` fit whole; a long pool name is cut, which keeps names unique
    (the provider's suffix does that) and still says which cluster the group belongs to.
    """
    return f"{cluster_name}-{group}"[: NODE_GROUP_NAME_PREFIX_MAX - 1] + "-"


def lifecycle_args(
    *,
    cluster_name: str,
    group: str,
    kubernetes_version: str,
    ami_type: str,
    template: ec2.LaunchTemplate,
    release_version: str | None = None,
) -> dict[str, Any]:
    """The node group inputs that decide how it follows the cluster and how it is replaced.

    :param group: names the group after the cluster (`sys`, a DRA pool's name).
    :param kubernetes_version: `ClusterConfig.kubernetes_version`: the group follows the control plane's minor.
    :param ami_type: the EKS AMI type; its release is pinned per minor (None for Bottlerocket, see
        `config.versions.node_group_release_version`).
    :param template: the group's launch template, created with `update_default_version=True`.
    :param release_version: a release pinned in the stack (Bottlerocket system nodes' `releaseVersion`), over
        the one config/versions.py pins for `ami_type`.
    """
    return {
        "cluster_name": cluster_name,
        "node_group_name_prefix": node_group_name_prefix(cluster_name, group),
        "version": kubernetes_version,
        "release_version": release_version or node_group_release_version(kubernetes_version, ami_type),
        "ami_type": ami_type,
        "launch_template": aws_eks.NodeGroupLaunchTemplateArgs(
            id=template.id, version=template.latest_version.apply(str)
        ),
    }


def node_role(
    name: str,
    role_name: str,
    partition: str,
    account_id: pulumi.Input[str],
    repository_prefixes: Sequence[str],
    tags: Mapping[str, str],
    parent: pulumi.Resource,
) -> tuple[iam.Role, list[pulumi.Resource]]:
    """A managed node group's IAM role, trusted by EC2 only, with the managed policies every EKS node needs
    and its image pulls (`policies.node_image_pull_policy`: this account's ECR only under `repository_prefixes`).

    Returns the role and its policies: a node group waits for them, or its nodes boot without the
    permissions to join.
    """
    role = iam.Role(
        f"{name}-node",
        name=role_name,
        assume_role_policy=policies.to_json(policies.service_trust_policy(policies.EC2_SERVICE)),
        tags=dict(tags),
        opts=pulumi.ResourceOptions(parent=parent),
    )
    attachments: list[pulumi.Resource] = [
        iam.RolePolicyAttachment(
            f"{name}-node-{policy}",
            role=role.name,
            policy_arn=policies.managed_policy(partition, policy),
            opts=pulumi.ResourceOptions(parent=role),
        )
        for policy in NODE_ROLE_POLICIES
    ]
    attachments.append(
        iam.RolePolicy(
            f"{name}-node-image-pull",
            role=role.id,
            policy=pulumi.Output.from_input(account_id).apply(
                lambda account: policies.to_json(policies.node_image_pull_policy(partition, account, repository_prefixes))
            ),
            opts=pulumi.ResourceOptions(parent=role),
        )
    )
    return role, attachments
