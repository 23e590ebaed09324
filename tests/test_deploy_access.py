"""Who reaches the Kubernetes API on the first `pulumi up` and after: the creator, the admins, their credentials.

pulumi-eks 4.4.0 creates the cluster with `accessConfig.bootstrapClusterCreatorAdminPermissions: true`
(pulumi/pulumi-eks `nodejs/eks/cluster/cluster.ts`, `createCore`; the Python SDK has no argument for
it, pulumi/pulumi-eks#2373), so EKS gives the principal that creates the cluster an access entry with
AmazonEKSClusterAdminPolicy. CreateAccessEntry for that principal again fails with
ResourceInUseException (terraform-aws-modules/terraform-aws-eks#2969), and the principal is keyed by
the IAM role's ARN with its path, not by the STS session (the same issue's SSO case).
"""

from __future__ import annotations

import json

import pulumi
import pytest

from components.admission import deployer_request
from components.lib.iam import cluster_access_policy, managed_policy
from components.lib.kubeconfig import KubeconfigCredentials, kubeconfig
from components.platform import GpuPlatform
from config import ConfigError
from models.aws_eks import access_entry_username
from offline import cloud
from offline.engine import Recording, run_program

from .conftest import fixture_document, load, render, render_fixture

ACCOUNT = cloud.ACCOUNT_ID
PLATFORM_ADMIN = f"arn:aws:iam::{ACCOUNT}:role/PlatformAdmin"
PLATFORM_DEPLOY = f"arn:aws:iam::{ACCOUNT}:role/PlatformDeploy"
SSO_ADMIN = f"arn:aws:iam::{ACCOUNT}:role/aws-reserved/sso.amazonaws.com/us-west-2/AWSReservedSSO_Admin_0123456789abcdef"
ENTRY = "aws:eks/accessEntry:AccessEntry"
ASSOCIATION = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"


def cluster_admin_principals(recording) -> list[str]:
    """Principals the stack grants cluster-admin at cluster scope, each through an entry of its own."""
    entries = {e.urn: e.inputs["principalArn"] for e in recording.by_type(ENTRY)}
    return sorted(
        entries[a.parent]
        for a in recording.by_type(ASSOCIATION)
        if a.inputs["policyArn"].endswith("/AmazonEKSClusterAdminPolicy") and a.inputs["accessScope"] == {"type": "cluster"}
    )


def with_admins(fixture: str, admins: list[str], creator: str | None = None) -> dict:
    doc = fixture_document(fixture)
    doc["gpu-platform:cluster"]["admins"] = admins
    if creator is not None:
        doc["gpu-platform:cluster"]["creator"] = creator
    return doc


# --- who gets an access entry -------------------------------------------------------------------


def test_a_deployer_listed_in_admins_gets_no_second_access_entry():
    recording = render_fixture("multi-pool")  # lists PlatformAdmin and the fake account's deployer
    assert cloud.DEPLOYER_ARN == PLATFORM_DEPLOY
    assert cluster_admin_principals(recording) == [PLATFORM_ADMIN]
    assert PLATFORM_DEPLOY not in {e.inputs["principalArn"] for e in recording.by_type(ENTRY)}
    assert recording.outputs["clusterCreator"] == PLATFORM_DEPLOY


def test_an_unlisted_deployer_leaves_every_listed_admin_its_entry():
    recording = render_fixture("single-pool")  # lists PlatformAdmin only
    assert cluster_admin_principals(recording) == [PLATFORM_ADMIN]
    assert recording.outputs["clusterCreator"] == PLATFORM_DEPLOY


def test_a_deployer_role_with_a_path_is_matched_with_its_path(monkeypatch):
    # SSO roles live under aws-reserved/sso.amazonaws.com/...; a role of the same name without that
    # path is another principal and keeps its entry.
    monkeypatch.setattr(cloud, "DEPLOYER_ARN", SSO_ADMIN)
    same_name_no_path = f"arn:aws:iam::{ACCOUNT}:role/AWSReservedSSO_Admin_0123456789abcdef"
    recording = render(with_admins("single-pool", [PLATFORM_ADMIN, SSO_ADMIN, same_name_no_path]))
    assert cluster_admin_principals(recording) == sorted([PLATFORM_ADMIN, same_name_no_path])
    assert recording.outputs["clusterCreator"] == SSO_ADMIN


def test_an_iam_user_deployer_is_matched_by_its_own_arn(monkeypatch):
    user = f"arn:aws:iam::{ACCOUNT}:user/ci"
    monkeypatch.setattr(cloud, "DEPLOYER_ARN", user)
    assert cluster_admin_principals(render(with_admins("single-pool", [PLATFORM_ADMIN, user]))) == [PLATFORM_ADMIN]


def test_the_kubernetes_provider_waits_for_the_cluster_and_every_declared_admin_access():
    # The creator's access comes with the cluster; the others' with their policy associations.
    recording = render_fixture("multi-pool")
    [provider] = recording.by_type("pulumi:providers:kubernetes")
    [cluster] = recording.by_type("eks:index:Cluster")
    associations = {
        a.urn for a in recording.by_type(ASSOCIATION) if a.parent.rsplit("::", 1)[-1].startswith("gpu-prod-cluster-admin-")
    }
    assert associations
    assert {cluster.urn, *associations} <= set(provider.dependencies)


def test_the_deployer_listed_as_a_tenant_principal_on_the_first_up_gets_no_second_access_entry():
    # creator unset: the caller creates the cluster and EKS gives it its own entry; a tenant entry for it
    # would fail the first `up` with ResourceInUseException. The tenant's other principals keep theirs.
    doc = fixture_document("single-pool")
    inference = next(t for t in doc["gpu-platform:tenants"] if t["name"] == "inference")
    inference["viewers"].append(PLATFORM_DEPLOY)
    recording = render(doc)
    entries = sorted(e.inputs["principalArn"] for e in recording.by_type(ENTRY) if "-tenants-access-" in e.name)
    assert entries == [
        f"arn:aws:iam::{ACCOUNT}:role/InferenceAdmin",
        f"arn:aws:iam::{ACCOUNT}:role/InferenceOnCall",
        f"arn:aws:iam::{ACCOUNT}:role/MLResearchAdmin",
    ]


# --- the creator from one `up` to the next ------------------------------------------------------


def test_another_admin_deploying_later_keeps_the_creator_skipped_and_its_own_entry(monkeypatch):
    # cluster.creator pins the skipped principal: PlatformAdmin's run declares the same entries as the
    # creator's did, so nothing is deleted and EKS is never asked for the creator's entry again.
    monkeypatch.setattr(cloud, "DEPLOYER_ARN", PLATFORM_ADMIN)
    recording = render(
        with_admins("multi-pool", [PLATFORM_ADMIN, PLATFORM_DEPLOY], creator=PLATFORM_DEPLOY),
        account=cloud.Account(clusters={"gpu-prod"}),
    )
    assert cluster_admin_principals(recording) == [PLATFORM_ADMIN]
    assert recording.outputs["clusterCreator"] == PLATFORM_DEPLOY


def test_an_existing_cluster_without_a_creator_is_refused_naming_the_key_and_the_caller():
    with pytest.raises(Exception) as raised:
        render(fixture_document("single-pool"), account=cloud.Account(clusters={"gpu-dev"}))
    assert (
        "gpu-platform:cluster.creator: not set, and cluster gpu-dev exists already: set it to the IAM role or user whose "
        "`pulumi up` created the cluster (if that was you: "
        f"`pulumi config set --path gpu-platform:cluster.creator {PLATFORM_DEPLOY}`)"
    ) in str(raised.value)


# Who EKS made the bootstrap admin, decided from the config and what the account says.
BOOTSTRAP_ADMIN = [
    # creator, caller, cluster exists -> bootstrap admin
    (None, PLATFORM_DEPLOY, False, PLATFORM_DEPLOY),
    (PLATFORM_DEPLOY, PLATFORM_DEPLOY, False, PLATFORM_DEPLOY),
    (PLATFORM_DEPLOY, PLATFORM_DEPLOY, True, PLATFORM_DEPLOY),
    (PLATFORM_DEPLOY, PLATFORM_ADMIN, True, PLATFORM_DEPLOY),
]


@pytest.mark.parametrize("creator, caller, exists, expected", BOOTSTRAP_ADMIN)
def test_the_bootstrap_admin_is_the_creator_once_set_and_the_caller_only_before_the_cluster_exists(
    creator, caller, exists, expected
):
    config = load(with_admins("single-pool", [PLATFORM_ADMIN], creator=creator)).cluster
    assert config.bootstrap_admin(caller, cluster_exists=exists) == expected


REFUSED = [
    (None, PLATFORM_ADMIN, True, "gpu-platform:cluster.creator: not set, and cluster gpu-dev exists already"),
    (
        PLATFORM_DEPLOY, PLATFORM_ADMIN, False,
        f"gpu-platform:cluster.creator: {PLATFORM_DEPLOY!r} is not who creates cluster gpu-dev: `pulumi up` runs as "
        f"{PLATFORM_ADMIN!r}, and EKS makes that principal the bootstrap admin",
    ),
]


@pytest.mark.parametrize("creator, caller, exists, message", REFUSED)
def test_a_guess_at_the_bootstrap_admin_is_one_line_naming_the_key(creator, caller, exists, message):
    config = load(with_admins("single-pool", [PLATFORM_ADMIN], creator=creator)).cluster
    with pytest.raises(ConfigError) as raised:
        config.bootstrap_admin(caller, cluster_exists=exists)
    [line] = raised.value.problems
    assert line.startswith(message)


def test_the_creator_must_be_an_iam_role_or_user_arn():
    with pytest.raises(ConfigError) as raised:
        load(with_admins("single-pool", [PLATFORM_ADMIN], creator=f"arn:aws:sts::{ACCOUNT}:assumed-role/PlatformDeploy/me"))
    assert raised.value.problems == [
        f"gpu-platform:cluster.creator: 'arn:aws:sts::{ACCOUNT}:assumed-role/PlatformDeploy/me' is not an IAM role or "
        "user ARN such as 'arn:aws:iam::111122223333:role/PlatformAdmin'"
    ]


# --- partition ----------------------------------------------------------------------------------


def test_aws_owned_policy_arns_follow_the_partition():
    # aws-cn and aws-us-gov keep their own copies of AWS-managed and EKS access policies; an `arn:aws:`
    # one does not exist there. The fake account answers getPartition from the region, as AWS does.
    config = load(fixture_document("single-pool"))

    def program() -> None:
        GpuPlatform(config)

    recording = run_program("cn", {"aws:region": "cn-north-1"}, program=program)
    # AWS-owned policies have `aws` for an account; the stack's own are in the fake account.
    attached = [r.inputs["policyArn"] for r in recording.resources if r.inputs.get("policyArn", "").split(":")[4:5] == ["aws"]]
    assert len(attached) >= 6 and all(arn.startswith("arn:aws-cn:") for arn in attached), attached
    assert cluster_access_policy("aws-cn", "AmazonEKSClusterAdminPolicy") in attached
    assert managed_policy("aws-cn", "AmazonEKSWorkerNodePolicy") in attached
    text = json.dumps([r.inputs for r in recording.resources])
    assert "arn:aws:iam::aws:" not in text and "arn:aws:eks::aws:" not in text


# --- the Kubernetes provider's credentials ------------------------------------------------------


def provider_kubeconfig(document: dict) -> tuple[dict, Recording]:
    """The kubeconfig the stack's Kubernetes provider gets, read through a program of its own, and that program's recording."""
    from offline.stack import stack_config_from_mapping

    config = stack_config_from_mapping("test", document)

    def program() -> None:
        platform = GpuPlatform(load(document))
        pulumi.export("providerKubeconfig", pulumi.Output.unsecret(platform.cluster.provider_kubeconfig))

    recording = run_program("test", config.values, config.secret_keys, program)
    return json.loads(recording.outputs["providerKubeconfig"]), recording


def test_get_token_runs_with_the_stacks_profile_and_assumed_role():
    doc = fixture_document("single-pool")
    doc["aws:profile"] = "platform"
    doc["aws:assumeRoles"] = [{"roleArn": f"arn:aws:iam::{ACCOUNT}:role/Hop"}, {"roleArn": PLATFORM_DEPLOY}]
    kubeconfig, recording = provider_kubeconfig(doc)
    [user] = kubeconfig["users"]
    args = user["user"]["exec"]["args"]
    assert user["user"]["exec"]["command"] == "aws"
    assert args[:8] == ["--region", "us-west-2", "eks", "get-token", "--cluster-name", "gpu-dev", "--output", "json"]
    assert args[8:] == ["--role-arn", PLATFORM_DEPLOY, "--profile", "platform"]
    # pulumi-eks stops reading aws:profile once providerCredentialOpts is set, so both go in.
    [cluster] = recording.by_type("eks:index:Cluster")
    assert cluster.inputs["providerCredentialOpts"] == {"profileName": "platform", "roleArn": PLATFORM_DEPLOY}


def test_without_profile_or_role_get_token_uses_the_ambient_credentials():
    [user] = provider_kubeconfig(fixture_document("single-pool"))[0]["users"]
    assert "--profile" not in user["user"]["exec"]["args"] and "--role-arn" not in user["user"]["exec"]["args"]
    [cluster] = render_fixture("single-pool").by_type("eks:index:Cluster")
    assert "providerCredentialOpts" not in cluster.inputs


def test_a_profile_alone_goes_to_get_token():
    credentials = KubeconfigCredentials(profile="platform")
    config = kubeconfig("gpu-dev", "https://example", "Q0E=", "us-west-2", credentials)
    assert config["users"][0]["user"]["exec"]["args"][-2:] == ["--profile", "platform"]
    assert config["clusters"][0]["cluster"] == {"server": "https://example", "certificate-authority-data": "Q0E="}


def test_an_admin_roles_sessions_authenticate_as_sts_assumed_role_without_the_path_and_in_its_partition():
    """EKS CreateAccessEntry `username` default: a role's sessions are
    `arn:<partition>:sts::<account>:assumed-role/<role name>/{{SessionName}}`, the role's path dropped as STS
    writes it; an IAM user is its own ARN. The tenant NetworkPolicy guard lets exactly these sessions write."""
    assert access_entry_username(SSO_ADMIN) == (
        f"arn:aws:sts::{ACCOUNT}:assumed-role/AWSReservedSSO_Admin_0123456789abcdef/{{{{SessionName}}}}"
    )
    assert access_entry_username("arn:aws-us-gov:iam::123456789012:role/ops/GovDeploy") == (
        "arn:aws-us-gov:sts::123456789012:assumed-role/GovDeploy/{{SessionName}}"
    )
    assert access_entry_username(f"arn:aws:iam::{ACCOUNT}:user/ci") == f"arn:aws:iam::{ACCOUNT}:user/ci"
    expression = deployer_request([SSO_ADMIN, "arn:aws-us-gov:iam::123456789012:role/ops/GovDeploy"])
    assert (
        f"['arn:aws-us-gov:sts::123456789012:assumed-role/GovDeploy/', "
        f"'arn:aws:sts::{ACCOUNT}:assumed-role/AWSReservedSSO_Admin_0123456789abcdef/']"
        ".exists(p, request.userInfo.username.startsWith(p))"
    ) in expression
