"""Node roles pull from this account's ECR only under the platform's repository prefixes.

AmazonEC2ContainerRegistryPullOnly would let every node pull every private repository of the account,
so any tenant's pod could run another tenant's private image. The node roles carry an inline policy
instead (components/lib/iam.py node_image_pull_policy), evaluated here with models/aws_iam.py.
"""

from __future__ import annotations

import json

import pytest

from components.lib.iam import node_image_pull_policy
from config.errors import ConfigError
from models.aws_iam import identity_allows
from offline.cloud import ACCOUNT_ID

from .conftest import fixture_document, load, render_fixture

OTHER = "602401143452"  # an AWS account the EKS add-ons' images are served from
POLICY = node_image_pull_policy("aws", ACCOUNT_ID, ["platform/", "ecr-public/"])


def repo(account: str, name: str, region: str = "eu-west-1") -> str:
    return f"arn:aws:ecr:{region}:{account}:repository/{name}"


@pytest.mark.parametrize(
    ("resource", "pulled"),
    [
        (repo(OTHER, "eks/kube-proxy"), True),  # AWS's add-on images, another account's repository
        (repo(OTHER, "amazon-k8s-cni", "us-west-2"), True),
        (repo(ACCOUNT_ID, "platform/vllm-openai"), True),
        (repo(ACCOUNT_ID, "platform/nested/image"), True),
        (repo(ACCOUNT_ID, "ecr-public/nvidia/k8s-device-plugin", "us-east-1"), True),
        (repo(ACCOUNT_ID, "ml-research/private-trainer"), False),  # a tenant's private image
        (repo(ACCOUNT_ID, "platformx/image"), False),  # a prefix is whole path components
        (repo(ACCOUNT_ID, "platform"), False),
        (repo(ACCOUNT_ID, "team/platform/image"), False),
        (repo(ACCOUNT_ID, "Platform/image"), False),
    ],
)
@pytest.mark.parametrize("action", ["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"])
def test_a_node_pulls_other_accounts_images_and_only_the_platforms_of_its_own(action, resource, pulled):
    assert identity_allows(POLICY, action, resource) is pulled


def test_a_node_logs_in_to_any_registry_and_nothing_else_is_granted():
    assert identity_allows(POLICY, "ecr:GetAuthorizationToken", "*")
    for action in ("ecr:PutImage", "ecr:InitiateLayerUpload", "ecr:BatchDeleteImage", "ecr:CreateRepository"):
        assert not identity_allows(POLICY, action, repo(ACCOUNT_ID, "platform/x")), action


def test_without_prefixes_no_repository_of_the_account_is_pulled():
    bare = node_image_pull_policy("aws", ACCOUNT_ID, [])
    assert not identity_allows(bare, "ecr:BatchGetImage", repo(ACCOUNT_ID, "platform/x"))
    assert identity_allows(bare, "ecr:BatchGetImage", repo(OTHER, "eks/coredns"))


def test_every_node_role_carries_the_pull_policy_and_no_pull_everything_managed_policy():
    recording = render_fixture("single-pool-dra")
    cluster = recording.outputs["clusterName"]
    roles = {f"{cluster}-system-node", f"{cluster}-karpenter-node", f"{cluster}-dra-node"}
    inline = {
        p.inputs["role"]: json.loads(p.inputs["policy"])
        for p in recording.by_type("aws:iam/rolePolicy:RolePolicy") if p.inputs["role"] in roles
    }
    assert set(inline) == roles
    expected = node_image_pull_policy("aws", ACCOUNT_ID, [])
    assert all(document == expected for document in inline.values())
    attached = {a.inputs["policyArn"] for a in recording.by_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")}
    assert not any(arn.endswith(("AmazonEC2ContainerRegistryPullOnly", "AmazonEC2ContainerRegistryReadOnly"))
                   for arn in attached)


@pytest.mark.parametrize("prefix", ["platform", "Platform/", "/platform/", "plat form/", "-platform/"])
def test_a_repository_prefix_without_its_slash_or_not_a_repository_name_is_one_line(prefix):
    document = fixture_document("multi-pool")
    document.setdefault("gpu-platform:supplyChain", {})["nodeRepositories"] = [prefix]
    with pytest.raises(ConfigError) as caught:
        load(document)
    [line] = caught.value.problems
    assert line.startswith("gpu-platform:supplyChain.nodeRepositories: ")
    assert f"has {prefix!r}, which is not an ECR repository name prefix ending in '/'" in line


def test_prefixes_are_kept_as_listed():
    document = fixture_document("multi-pool")
    document.setdefault("gpu-platform:supplyChain", {})["nodeRepositories"] = ["platform/", "ecr-public/"]
    assert load(document).supply_chain.node_repositories == ["platform/", "ecr-public/"]
