"""The managed system node group: on-demand nodes reserved for the platform's own controllers.

It follows the cluster's Kubernetes minor with a pinned AMI release, and is replaced create-first under
a name prefix, as every managed node group does (components/lib/node_groups.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
from pulumi_aws import ec2
from pulumi_aws import eks as aws_eks

from config.cluster import SystemNodesConfig
from config.labels import SYSTEM_NODE_LABELS, SYSTEM_NODE_TAINT

from .lib.node_groups import METADATA_OPTIONS, SYSTEM_NODES_UPDATE, lifecycle_args, node_role, update_config
from .lib.resources import Children

# The group names itself `<cluster>-sys-<suffix>`.
NODE_GROUP = "sys"


class SystemNodeGroup(pulumi.ComponentResource):
    """An EKS managed node group, labelled and tainted `CriticalAddonsOnly`, with IMDSv2 and encrypted disks."""

    node_group: aws_eks.NodeGroup
    node_group_name: pulumi.Output[str]
    role_arn: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        config: SystemNodesConfig,
        *,
        cluster_name: str,
        kubernetes_version: str,
        partition: str,
        account_id: pulumi.Input[str],
        repository_prefixes: Sequence[str],
        subnet_ids: Sequence[pulumi.Input[str]],
        tags: Mapping[str, str],
        depends_on: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ):
        """
        :param config: `ClusterConfig.system_nodes`.
        :param kubernetes_version: `ClusterConfig.kubernetes_version`: the group follows the control plane's minor.
        :param account_id: the cluster's account, whose ECR the nodes pull from only under `repository_prefixes`.
        :param repository_prefixes: `SupplyChainConfig.node_repositories`.
        """
        super().__init__("gpu-platform:nodes:SystemNodeGroup", name, None, opts)

        role, attachments = node_role(
            name, f"{cluster_name}-system-node", partition, account_id, repository_prefixes, tags, self
        )

        template = ec2.LaunchTemplate(
            f"{name}-nodes",
            name=f"{cluster_name}-system",
            update_default_version=True,
            **launch_template_args(config, tags, cluster_name),
            opts=pulumi.ResourceOptions(parent=self),
        )

        self.node_group = aws_eks.NodeGroup(
            f"{name}-nodes",
            **lifecycle_args(
                cluster_name=cluster_name,
                group=NODE_GROUP,
                kubernetes_version=kubernetes_version,
                ami_type=config.ami_type,
                template=template,
                release_version=config.node_group_release(kubernetes_version),
            ),
            node_role_arn=role.arn,
            subnet_ids=list(subnet_ids),
            capacity_type="ON_DEMAND",
            instance_types=list(config.instance_types),
            scaling_config=aws_eks.NodeGroupScalingConfigArgs(
                min_size=config.min_size, desired_size=config.desired_size, max_size=config.max_size
            ),
            update_config=update_config(SYSTEM_NODES_UPDATE),
            labels=dict(SYSTEM_NODE_LABELS),
            taints=[aws_eks.NodeGroupTaintArgs(**SYSTEM_NODE_TAINT)],
            tags=dict(tags),
            # The role's policies must be attached before nodes boot, or they never join; `depends_on`
            # brings what a node needs from the cluster (its networking add-ons).
            opts=Children(self, depends_on=depends_on).opts(*attachments),
        )

        self.node_group_name = self.node_group.node_group_name
        self.role_arn = role.arn
        self.register_outputs({"nodeGroupName": self.node_group_name, "roleArn": self.role_arn})


def launch_template_args(config: SystemNodesConfig, tags: Mapping[str, str], cluster_name: str) -> dict[str, Any]:
    """Launch template inputs: IMDSv2 only with hop limit 1, an encrypted gp3 volume, tagged instances."""
    name_tags = {**tags, "Name": f"{cluster_name}-system"}
    return {
        "metadata_options": dict(METADATA_OPTIONS),
        "block_device_mappings": [
            {
                "device_name": data_volume_device(config.ami_type),
                "ebs": {
                    "volume_size": config.disk_size_gib,
                    "volume_type": "gp3",
                    "encrypted": "true",
                    "delete_on_termination": "true",
                },
            }
        ],
        "tag_specifications": [
            {"resource_type": "instance", "tags": name_tags},
            {"resource_type": "volume", "tags": name_tags},
        ],
        "tags": dict(tags),
    }


def data_volume_device(ami_type: str) -> str:
    """The volume that holds images and pod data: AL2023's root, Bottlerocket's second (data) volume."""
    return "/dev/xvdb" if ami_type.startswith("BOTTLEROCKET") else "/dev/xvda"

