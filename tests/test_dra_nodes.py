"""DRA pools as EKS managed node groups: what config accepts, what is declared, what the summary says.

Karpenter v1.14.1 launches no node for a pod with resource claims (kubernetes-sigs/karpenter
pkg/controllers/provisioning/scheduling/scheduler.go, DRAError; `ignoreDRARequests` defaults to true in
charts/karpenter/values.yaml and pkg/operator/options/options.go), so a DRA pool's capacity stands.
"""

from __future__ import annotations

import base64

import pytest

from components.dra_nodes import node_group_args
from offline.summary import render_summary

from .conftest import fixture_document, load, problems_of, render_fixture

P = "gpu-platform:nodePools"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"



def dra_pool(**changes):
    document = fixture_document("single-pool-dra")
    document[P][1].update(changes)
    return document


def test_the_dra_pool_is_a_node_group_of_its_gpus_and_no_nodepool():
    recording = render_fixture("single-pool-dra")
    group = recording.named(NODE_GROUP, "gpu-dev-dra-nodes-gpu-l4-dra").inputs
    # Replaced create-first under a prefix; on the cluster's minor and the AMI release pinned for it
    # (amazon-eks-ami v20260714: Kubernetes 1.35's NVIDIA AMI is release 1.35.6-20260714).
    assert group["nodeGroupNamePrefix"] == "gpu-dev-gpu-l4-dra-"
    assert (group["version"], group["releaseVersion"]) == ("1.35", "1.35.6-20260714")
    assert group["amiType"] == "AL2023_x86_64_NVIDIA"
    assert group["capacityType"] == "ON_DEMAND"
    assert group["instanceTypes"] == ["g6.xlarge", "g6.2xlarge"]
    # 2 GPUs in 1-GPU nodes: two nodes, standing, never scaled by anything.
    assert group["scalingConfig"] == {"minSize": 2, "desiredSize": 2, "maxSize": 2}
    # A version or template rollout drains one node at a time before replacing it: half of this pool, never
    # all of it, and no GPU node beyond the two (tests/test_node_group_updates.py).
    assert group["updateConfig"] == {"maxUnavailable": 1, "updateStrategy": "MINIMAL"}
    assert group["labels"] == {
        "gpu-platform/gpu-allocation": "dra",
        "gpu-platform/gpu-model": "l4",
        "gpu-platform/node-pool": "gpu-l4-dra",
        "nvidia.com/gpu.deploy.device-plugin": "false",
        "nvidia.com/gpu.deploy.operands": "false",
    }
    assert group["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}]
    nodepools = [r.inputs["metadata"]["name"] for r in recording.by_type("kubernetes:karpenter.sh/v1:NodePool")]
    assert sorted(nodepools) == ["cpu", "gpu-l40s"]


def test_its_nodes_are_hardened_as_karpenters_are():
    template = render_fixture("single-pool-dra").named(LAUNCH_TEMPLATE, "gpu-dev-dra-nodes-gpu-l4-dra").inputs
    assert template["metadataOptions"]["httpPutResponseHopLimit"] == 1
    assert template["metadataOptions"]["httpTokens"] == "required"
    [volume] = template["blockDeviceMappings"]
    assert volume["ebs"] == {
        "deleteOnTermination": "true",
        "encrypted": "true",
        "iops": 3000,
        "throughput": 125,
        "volumeSize": 200,
        "volumeType": "gp3",
    }
    user_data = base64.b64decode(template["userData"]).decode()
    assert "nvidia-ctk config --in-place --set accept-nvidia-visible-devices-envvar-when-unprivileged=false" in user_data


@pytest.mark.parametrize(
    "changes, expected",
    [
        (
            {"capacityTypes": ["on-demand", "spot"]},
            "gpu-platform:nodePools[gpu-l4-dra].capacityTypes: [on-demand, spot] on DRA pool gpu-l4-dra: its capacity "
            "is an EKS managed node group, which takes one capacity type: give exactly one of on-demand or spot",
        ),
        (
            {"amiVersion": "v20260903"},
            "gpu-platform:nodePools[gpu-l4-dra].amiVersion: 'v20260903' on DRA pool gpu-l4-dra: its managed node group "
            "runs the EKS AL2023 NVIDIA AMI of the release pinned per Kubernetes minor (config/versions.py "
            "NODE_GROUP_RELEASE_VERSIONS); remove amiVersion",
        ),
    ],
    ids=["two-capacity-types", "pinned-ami"],
)
def test_what_a_managed_node_group_cannot_be_is_refused(changes, expected):
    assert problems_of(dra_pool(**changes))[0] == expected


def test_the_summary_shows_the_standing_cost_and_the_shared_gpu_series():
    summary = render_summary(render_fixture("single-pool-dra"), load(fixture_document("single-pool-dra")))
    # 2 x g6.xlarge at $0.8048/h (config/catalog.py), 730 h a month.
    assert "- `gpu-l4-dra`: 2 nodes standing: $1.61/hour, $1,175/month at the on-demand price of g6.xlarge" in summary
    assert (
        "Time-sliced pools (gpu-l40s): the DCGM exporter writes a copy of each GPU series per pod sharing the GPU, "
        "with that pod's own value only for DCGM_FI_DEV_FB_USED, DCGM_FI_DEV_GPU_UTIL" in summary
    )


def test_a_spot_dra_pool_asks_eks_for_spot_capacity():
    """EKS CreateNodegroup `capacityType`: ON_DEMAND or SPOT; a spot DRA pool billed on-demand would cost
    the on-demand rate its owner chose spot to avoid."""
    document = dra_pool(capacityTypes=["spot"])
    for tenant in document["gpu-platform:tenants"]:
        gpu = tenant.get("gpu") or {}
        if "l4-dra-on-demand" in gpu:
            gpu["l4-dra-spot"] = gpu.pop("l4-dra-on-demand")
    [pool] = [p for p in load(document).gpu_pools if p.is_dra]
    assert node_group_args(pool, {"team": "ml"})["capacity_type"] == "SPOT"
    [on_demand] = [p for p in load(dra_pool()).gpu_pools if p.is_dra]
    assert node_group_args(on_demand, {})["capacity_type"] == "ON_DEMAND"


SERVICE_LINKED_ROLE = "aws:iam/serviceLinkedRole:ServiceLinkedRole"


def spot_dra_document():
    document = dra_pool(capacityTypes=["spot"])
    for tenant in document["gpu-platform:tenants"]:
        gpu = tenant.get("gpu") or {}
        if "l4-dra-on-demand" in gpu:
            gpu["l4-dra-spot"] = gpu.pop("l4-dra-on-demand")
    return document


def test_a_spot_dra_group_waits_for_the_spot_role_the_stack_creates():
    """EC2 refuses spot launches in an account without AWSServiceRoleForEC2Spot; the stack creates it with
    Karpenter (declared after the node groups), and the spot group must not launch before it exists."""
    from .conftest import render

    recording = render(spot_dra_document(), "spot-dra")
    [role] = recording.by_type(SERVICE_LINKED_ROLE)
    group = recording.named(NODE_GROUP, "gpu-dev-dra-nodes-gpu-l4-dra")
    assert group.inputs["capacityType"] == "SPOT"
    assert role.urn in group.dependencies
    # The system nodes run on-demand and wait for nothing of the kind.
    assert role.urn not in recording.named(NODE_GROUP, "gpu-dev-system-nodes").dependencies


def test_an_on_demand_dra_group_does_not_wait_for_the_spot_role():
    recording = render_fixture("single-pool-dra")  # its L40S pool allows spot, so the role is created
    [role] = recording.by_type(SERVICE_LINKED_ROLE)
    assert role.urn not in recording.named(NODE_GROUP, "gpu-dev-dra-nodes-gpu-l4-dra").dependencies
