"""DRA pools as EKS managed node groups: GPU capacity that exists before the pods that claim it.

Karpenter v1.14.1 launches no node for a pod with resource claims. `settings.ignoreDRARequests` is true
in the chart (charts/karpenter/values.yaml) and the binary (kubernetes-sigs/karpenter
pkg/operator/options/options.go), and the chart's `{{- with }}` renders nothing for false; with it on,
the provisioner skips every such pod ("pod has Dynamic Resource Allocation requirements that are not yet
supported by Karpenter", pkg/controllers/provisioning/scheduling/scheduler.go); karpenter-provider-aws
v1.14.1 has no DRA code with which it could predict a new node's ResourceSlices. So each DRA pool is a managed node group of
fixed size (`GpuPoolPlan.node_group_size`: its `gpus` in nodes of its types' one GPU count), whose nodes publish
their GPUs in ResourceSlices before any claim is allocated; the scheduler places a claiming pod on them.

Each node group runs the EKS AL2023 NVIDIA AMI (driver and container toolkit; the toolkit hardened as on
Karpenter's GPU nodes, components/lib/gpu_nodes.py), carries the pool's labels (the DRA driver's kubelet
plugin selects `gpu-platform/gpu-allocation: dra`; `nvidia.com/gpu.deploy.operands: false` keeps the GPU
Operator's device plugin and validator off) and the GPU taint. Its GPU metrics come from the standalone
DCGM exporter with DRA attribution (components/dcgm_exporter.py). It costs its nodes around the clock:
the summary shows the standing cost.

Each group follows the cluster's minor with the pinned AMI release of the AL2023 NVIDIA AMI type, and is
replaced create-first under a name prefix (components/lib/node_groups.py). A replacement (another
instance type list, or capacity type) stands the new group up at full size before the old one goes, so
for that time the pool needs twice its nodes in GPU capacity and in the account's EC2 vCPU quota; the
provider waits for the new group to be ACTIVE (terraform-provider-aws internal/service/eks/node_group.go,
waitNodegroupCreated), so one that cannot get its instances fails the `up` with the old one serving. A
change of `gpus` or of labels updates the group in place. A version update (the cluster's minor, the
AMI release, the launch template) rolls the nodes with the MINIMAL strategy, one at a time: drained,
terminated, then replaced, so it needs no instance beyond the group's size, and the pool has one
node fewer while each is replaced (models/aws_eks.py `update_surge`, docs/upgrading.md).

When a Karpenter release provisions for DRA claims (the provider's NVIDIA DRA support, behind its own
feature gate, is not in v1.14.1), a DRA pool can become a NodePool again: pin that release, turn its gate
on and `ignoreDRARequests` off in components/karpenter (the chart's `{{- with }}` drops a false value, so
set it through the controller's IGNORE_DRA_REQUESTS env), drop the pool from here, and let
components/node_pools.py declare it, scaled by its pods rather than standing. Until then Karpenter's
static NodePools (`spec.replicas`, alpha, gate StaticCapacity off in 1.14.1) are the other way to keep
nodes standing; the GA managed node group is used instead.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
from pulumi_aws import ec2
from pulumi_aws import eks as aws_eks

from config.capacity import GpuPoolPlan
from config.labels import GPU_TAINT

from .lib.gpu_nodes import toolkit_user_data
from .lib.node_groups import DRA_NODES_UPDATE, METADATA_OPTIONS, lifecycle_args, node_role, update_config
from .lib.resources import Children

# The EKS-optimized AL2023 NVIDIA AMI (driver and toolkit); Bottlerocket DRA pools are refused in config,
# as its host device plugin would advertise the same GPUs again.
AMI_TYPE = "AL2023_x86_64_NVIDIA"
CAPACITY_TYPES = {"on-demand": "ON_DEMAND", "spot": "SPOT"}
# The EKS API spells taint effects in capitals with underscores.
EKS_TAINT_EFFECTS = {"NoSchedule": "NO_SCHEDULE", "NoExecute": "NO_EXECUTE", "PreferNoSchedule": "PREFER_NO_SCHEDULE"}


class DraNodeGroups(pulumi.ComponentResource):
    """One EKS managed node group per DRA pool, sharing one node role."""

    node_groups: dict[str, aws_eks.NodeGroup]

    def __init__(
        self,
        name: str,
        pools: Sequence[GpuPoolPlan],
        *,
        cluster_name: str,
        kubernetes_version: str,
        partition: str,
        account_id: pulumi.Input[str],
        repository_prefixes: Sequence[str],
        subnet_ids: Sequence[pulumi.Input[str]],
        tags: Mapping[str, str],
        depends_on: Sequence[pulumi.Resource] = (),
        spot_after: Sequence[pulumi.Input[pulumi.Resource]] = (),
        opts: pulumi.ResourceOptions | None = None,
    ):
        """
        :param pools: `PlatformConfig.gpu_pools`; one node group for each DRA pool (`GpuPoolPlan.is_dra`).
        :param cluster_name: the EKS cluster's name; names the role and the node groups.
        :param kubernetes_version: `ClusterConfig.kubernetes_version`: each group follows the control plane's minor.
        :param partition: `aws`, `aws-cn`, ... (`aws.get_partition().partition`), for the managed policies' ARNs.
        :param account_id: the cluster's account, whose ECR the nodes pull from only under `repository_prefixes`.
        :param repository_prefixes: `SupplyChainConfig.node_repositories`.
        :param subnet_ids: `Network.private_subnet_ids`, where the nodes run.
        :param tags: tags on every AWS resource.
        :param depends_on: what a node needs from the cluster before it boots (the cluster, its networking add-ons).
        :param spot_after: what a spot pool's group waits for besides: the EC2 Spot service-linked role when the
            stack creates it (`Karpenter.spot_service_linked_role`), without which EC2 refuses spot launches.
        """
        super().__init__("gpu-platform:nodes:DraNodeGroups", name, None, opts)
        dra_pools = [pool for pool in pools if pool.is_dra]
        role, attachments = node_role(
            name, f"{cluster_name}-dra-node", partition, account_id, repository_prefixes, tags, self
        )
        self.node_groups = {}
        for pool in dra_pools:
            template = ec2.LaunchTemplate(
                f"{name}-{pool.name}",
                # `-dra-`: a pool named `system` must not take the system nodes' template name.
                name=f"{cluster_name}-dra-{pool.name}",
                update_default_version=True,
                **launch_template_args(pool, tags, cluster_name),
                opts=pulumi.ResourceOptions(parent=self),
            )
            self.node_groups[pool.name] = aws_eks.NodeGroup(
                f"{name}-{pool.name}",
                **lifecycle_args(
                    cluster_name=cluster_name,
                    group=pool.name,
                    kubernetes_version=kubernetes_version,
                    ami_type=AMI_TYPE,
                    template=template,
                ),
                node_role_arn=role.arn,
                subnet_ids=list(subnet_ids),
                **node_group_args(pool, tags),
                # The role's policies must be attached before nodes boot, or they never join.
                opts=pulumi.ResourceOptions.merge(
                    Children(self, depends_on=depends_on).opts(*attachments),
                    pulumi.ResourceOptions(depends_on=list(spot_after) if pool.uses_spot else []),
                ),
            )
        self.register_outputs({"nodeGroups": {pool: group.node_group_name for pool, group in self.node_groups.items()}})


def node_group_args(pool: GpuPoolPlan, tags: Mapping[str, str]) -> dict[str, Any]:
    """The node group's own inputs: fixed size, the pool's types, capacity type, labels and GPU taint."""
    size = pool.node_group_size
    [capacity_type] = pool.config.capacity_types  # one, checked in config/capacity.py
    return {
        "capacity_type": CAPACITY_TYPES[capacity_type],
        "instance_types": [t.name for t in pool.instance_types],
        "scaling_config": aws_eks.NodeGroupScalingConfigArgs(min_size=size, desired_size=size, max_size=size),
        # One node at a time, drained before its replacement launches: a bump needs no GPU beyond the pool's.
        "update_config": update_config(DRA_NODES_UPDATE),
        "labels": dict(pool.labels),
        "taints": [aws_eks.NodeGroupTaintArgs(**eks_taint(GPU_TAINT))],
        "tags": dict(tags),
    }


def eks_taint(taint: Mapping[str, str]) -> dict[str, str]:
    """A Kubernetes taint in the EKS API's spelling."""
    return {"key": taint["key"], "value": taint["value"], "effect": EKS_TAINT_EFFECTS[taint["effect"]]}


def launch_template_args(pool: GpuPoolPlan, tags: Mapping[str, str], cluster_name: str) -> dict[str, Any]:
    """IMDSv2 only with hop limit 1, the pool's encrypted gp3 volume, the hardened toolkit, a MIG pool's layout cut
    at boot (components/lib/gpu_nodes.py `mig_layout_unit`), tagged instances.

    As on Karpenter's nodes (components/node_pools.py ec2_node_class): pods cannot reach the node's
    credentials, and an unprivileged container cannot see GPUs it did not claim.
    """
    volume = pool.config.root_volume
    name_tags = {**tags, "Name": f"{cluster_name}-{pool.name}"}
    return {
        "metadata_options": dict(METADATA_OPTIONS),
        "block_device_mappings": [
            {
                "device_name": "/dev/xvda",
                "ebs": {
                    "volume_size": volume.size_gib,
                    "volume_type": "gp3",
                    "iops": volume.iops,
                    "throughput": volume.throughput,
                    "encrypted": "true",
                    "delete_on_termination": "true",
                },
            }
        ],
        "user_data": base64.b64encode(toolkit_user_data(pool.mig_instances).encode()).decode(),
        "tag_specifications": [
            {"resource_type": "instance", "tags": name_tags},
            {"resource_type": "volume", "tags": name_tags},
        ],
        "tags": dict(tags),
    }

