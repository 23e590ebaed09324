"""The system node group and the EKS add-ons: what runs where, with which credentials, in which order."""

from __future__ import annotations

import json

import pytest

from components.system_nodes import data_volume_device, launch_template_args
from config.labels import SYSTEM_NODE_LABELS
from config.versions import ADDON_VERSIONS

from .conftest import fixture_document, load, render, render_fixture, short

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
ADDON = "aws:eks/addon:Addon"


def node_group(recording):
    # The DRA pools' node groups (tests/test_dra_nodes.py) carry no CriticalAddonsOnly label.
    [group] = [g for g in recording.by_type(NODE_GROUP) if "CriticalAddonsOnly" in g.inputs["labels"]]
    return group


def addons(recording):
    return {a.inputs["addonName"]: a for a in recording.by_type(ADDON)}


def test_system_nodes_are_on_demand_and_sized_from_config():
    inputs = node_group(render_fixture("multi-pool")).inputs
    assert inputs["capacityType"] == "ON_DEMAND"
    assert inputs["instanceTypes"] == ["m7i.xlarge", "m6i.xlarge"]
    assert inputs["scalingConfig"] == {"minSize": 3, "desiredSize": 3, "maxSize": 6}


def test_system_nodes_are_labelled_and_tainted_critical_addons_only(recording):
    inputs = node_group(recording).inputs
    assert inputs["labels"]["CriticalAddonsOnly"] == "true"
    assert inputs["labels"] == SYSTEM_NODE_LABELS
    assert inputs["taints"] == [{"key": "CriticalAddonsOnly", "value": "true", "effect": "NO_SCHEDULE"}]


def test_system_nodes_require_imdsv2_and_encrypt_their_volume(recording):
    [template] = [
        t for t in recording.by_type("aws:ec2/launchTemplate:LaunchTemplate")
        if short(node_group(recording).property_dependencies["launchTemplate"][0]) == t.name
    ]
    metadata = template.inputs["metadataOptions"]
    assert metadata["httpTokens"] == "required"
    assert metadata["httpPutResponseHopLimit"] == 1
    [volume] = template.inputs["blockDeviceMappings"]
    assert volume["ebs"]["encrypted"] == "true"
    assert volume["ebs"]["volumeType"] == "gp3"
    assert short(node_group(recording).property_dependencies["launchTemplate"][0]) == template.name


@pytest.mark.parametrize("ami_type, device", [("AL2023_x86_64_STANDARD", "/dev/xvda"), ("BOTTLEROCKET_x86_64", "/dev/xvdb")])
def test_the_sized_volume_is_the_one_that_holds_pod_data(ami_type, device):
    doc = fixture_document("single-pool")
    doc["gpu-platform:cluster"]["systemNodes"]["amiType"] = ami_type
    nodes = load(doc).cluster.system_nodes
    assert data_volume_device(ami_type) == device
    assert launch_template_args(nodes, {}, "gpu-dev")["block_device_mappings"][0]["device_name"] == device


def test_node_role_is_trusted_by_ec2_and_has_only_the_node_policies(recording):
    role = recording.named("aws:iam/role:Role", f"{recording.outputs['clusterName']}-system-node")
    trust = json.loads(role.inputs["assumeRolePolicy"])
    assert trust["Statement"] == [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}]
    attached = {
        a.inputs["policyArn"].rsplit("/", 1)[1]
        for a in recording.by_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
        if a.parent == role.urn
    }
    assert attached == {
        "AmazonEKSWorkerNodePolicy",
        "AmazonEKS_CNI_Policy",
        "AmazonSSMManagedInstanceCore",
    }


def test_the_five_addons_are_installed_at_the_pinned_versions(recording):
    installed = {name: addon.inputs["addonVersion"] for name, addon in addons(recording).items()}
    row = ADDON_VERSIONS["1.35"]
    assert installed == {
        "vpc-cni": row["vpc-cni"],
        "coredns": row["coredns"],
        "kube-proxy": row["kube-proxy"],
        "eks-pod-identity-agent": installed["eks-pod-identity-agent"],
        "aws-ebs-csi-driver": installed["aws-ebs-csi-driver"],
    }
    assert all(version.startswith("v") and "-eksbuild." in version for version in installed.values())
    for addon in addons(recording).values():
        assert addon.inputs["resolveConflictsOnUpdate"] == "OVERWRITE"


def test_a_stack_override_changes_only_that_addon():
    doc = fixture_document("single-pool")
    doc["gpu-platform:versions"] = {"addons": {"coredns": "v1.14.3-eksbuild.9"}}
    installed = {name: addon.inputs["addonVersion"] for name, addon in addons(render(doc)).items()}
    assert installed["coredns"] == "v1.14.3-eksbuild.9"
    assert installed["kube-proxy"] == ADDON_VERSIONS["1.35"]["kube-proxy"]


def test_ebs_csi_driver_gets_its_credentials_through_pod_identity(recording):
    ebs = addons(recording)["aws-ebs-csi-driver"]
    [association] = ebs.inputs["podIdentityAssociations"]
    assert association["serviceAccount"] == "ebs-csi-controller-sa"
    role = recording.named("aws:iam/role:Role", f"{recording.outputs['clusterName']}-addons-aws-ebs-csi-driver")
    assert association["roleArn"].endswith(f":role/{role.inputs['name']}")
    trust = json.loads(role.inputs["assumeRolePolicy"])["Statement"]
    assert trust == [
        {
            "Effect": "Allow",
            "Principal": {"Service": "pods.eks.amazonaws.com"},
            "Action": ["sts:AssumeRole", "sts:TagSession"],
            # Only the driver's controller service account on this cluster, in this account.
            "Condition": {
                "StringEquals": {
                    "aws:SourceAccount": "111122223333",
                    "aws:RequestTag/eks-cluster-name": recording.outputs["clusterName"],
                    "aws:RequestTag/kubernetes-namespace": "kube-system",
                    "aws:RequestTag/kubernetes-service-account": "ebs-csi-controller-sa",
                }
            },
        }
    ]
    [attachment] = [a for a in recording.by_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment") if a.parent == role.urn]
    assert attachment.inputs["policyArn"] == "arn:aws:iam::aws:policy/service-role/AmazonEBSCSIDriverPolicy"


def test_networking_addons_come_before_the_nodes_and_deployments_after(recording):
    installed = addons(recording)
    group = node_group(recording)
    for name in ("vpc-cni", "kube-proxy", "eks-pod-identity-agent"):
        assert installed[name].urn in group.dependencies, f"nodes would boot without {name}"
    for name in ("coredns", "aws-ebs-csi-driver"):
        assert group.urn in installed[name].dependencies, f"{name} would wait DEGRADED for a node"


def test_the_default_storage_class_is_encrypted_gp3_and_waits_for_the_ebs_driver(recording):
    [storage_class] = recording.by_type("kubernetes:storage.k8s.io/v1:StorageClass")
    assert storage_class.inputs["metadata"]["annotations"] == {"storageclass.kubernetes.io/is-default-class": "true"}
    assert storage_class.inputs["parameters"]["encrypted"] == "true"
    assert storage_class.inputs["parameters"]["type"] == "gp3"
    assert addons(recording)["aws-ebs-csi-driver"].urn in storage_class.dependencies


def test_vpc_cni_enforces_network_policies(recording):
    """Without this the tenants' NetworkPolicies are accepted and silently ignored."""
    assert json.loads(addons(recording)["vpc-cni"].inputs["configurationValues"]) == {"enableNetworkPolicy": "true"}
