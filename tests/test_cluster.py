"""The EKS cluster as declared: authentication, access, endpoint, encryption, logging, protection."""

from __future__ import annotations

import functools

import pytest

from components.cluster import CLUSTER_ADMIN_POLICY
from components.lib.iam import cluster_access_policy
from config.cluster import principal_slug

from .conftest import fixture_document, render, render_fixture, short

EKS = "eks:index:Cluster"


def admin_entries(recording):
    """The cluster admins' access entries: the Cluster component's own.

    Karpenter's node role and tenants' principals have access entries of their own.
    """
    return [
        e
        for e in recording.by_type("aws:eks/accessEntry:AccessEntry")
        if e.parent.rsplit("::", 1)[0].endswith("$gpu-platform:cluster:Cluster")
    ]


def eks_cluster(recording):
    [cluster] = recording.by_type(EKS)
    return cluster


# Two variants, each rendered once: the changes each test reads are independent of one another.
ONCALL = "arn:aws:iam::111122223333:role/PlatformOnCall"
OTHER_ACCOUNT_ADMIN = "arn:aws:iam::444455556666:role/PlatformAdmin"


@functools.cache
def single_pool_variant():
    """single-pool on Kubernetes 1.34 with an admin of another account."""
    doc = fixture_document("single-pool")
    doc["gpu-platform:cluster"]["kubernetesVersion"] = "1.34"
    doc["gpu-platform:cluster"]["admins"].append(OTHER_ACCOUNT_ADMIN)
    return render(doc)


@functools.cache
def multi_pool_variant():
    """multi-pool without public endpoint CIDRs and with an on-call admin."""
    doc = fixture_document("multi-pool")
    doc["gpu-platform:cluster"]["endpoint"] = {"publicAccessCidrs": []}
    doc["gpu-platform:cluster"]["admins"].append(ONCALL)
    return render(doc)


def test_cluster_uses_api_authentication_and_skips_the_default_node_group(recording):
    inputs = eks_cluster(recording).inputs
    assert inputs["authenticationMode"] == "API"
    assert inputs["skipDefaultNodeGroup"] is True
    assert inputs["skipDefaultSecurityGroups"] is True
    assert inputs["bootstrapSelfManagedAddons"] is False


def test_cluster_runs_the_configured_kubernetes_version():
    assert eks_cluster(single_pool_variant()).inputs["version"] == "1.34"


def test_secrets_are_encrypted_with_a_rotating_kms_key(recording):
    [key] = recording.by_type("aws:kms/key:Key")
    assert key.inputs["enableKeyRotation"] is True
    cluster = eks_cluster(recording)
    assert cluster.inputs["encryptionConfigKeyArn"].startswith("arn:aws:kms:")
    assert cluster.property_dependencies["encryptionConfigKeyArn"] == (key.urn,)


def test_control_plane_logs_api_audit_and_authenticator_into_a_retained_log_group(recording):
    cluster = eks_cluster(recording)
    assert {"api", "audit", "authenticator"} <= set(cluster.inputs["enabledClusterLogTypes"])
    [group] = [g for g in recording.by_type("aws:cloudwatch/logGroup:LogGroup") if g.inputs["name"].startswith("/aws/eks/")]
    assert group.inputs["name"] == f"/aws/eks/{cluster.inputs['name']}/cluster"
    assert group.urn in cluster.dependencies, "the group must exist before EKS creates one without retention"


def test_dev_endpoint_is_private_plus_the_example_office_range():
    inputs = eks_cluster(render_fixture("single-pool")).inputs
    assert inputs["endpointPrivateAccess"] is True
    assert inputs["endpointPublicAccess"] is True
    assert inputs["publicAccessCidrs"] == ["203.0.113.0/24"]


def test_without_public_cidrs_the_public_endpoint_is_off():
    inputs = eks_cluster(multi_pool_variant()).inputs
    assert inputs["endpointPrivateAccess"] is True
    assert inputs["endpointPublicAccess"] is False
    assert "publicAccessCidrs" not in inputs


def test_each_admin_but_the_creator_gets_an_access_entry_with_cluster_admin_at_cluster_scope():
    # The creator (the fake account's deployer, PlatformDeploy) has EKS's own entry: tests/test_deploy_access.py.
    recording = multi_pool_variant()
    entries = {e.inputs["principalArn"]: e for e in admin_entries(recording)}
    assert set(entries) == {"arn:aws:iam::111122223333:role/PlatformAdmin", ONCALL}
    associations = recording.by_type("aws:eks/accessPolicyAssociation:AccessPolicyAssociation")
    assert len(associations) == 2
    for association in associations:
        assert association.inputs["policyArn"] == cluster_access_policy("aws", CLUSTER_ADMIN_POLICY)
        assert association.inputs["accessScope"] == {"type": "cluster"}
        assert entries[association.inputs["principalArn"]].urn == association.parent
    for entry in entries.values():
        assert eks_cluster(recording).urn in entry.dependencies


def test_access_entry_names_are_stable_per_principal():
    assert principal_slug("arn:aws:iam::111122223333:role/team/PlatformAdmin") == "111122223333-role-team-platformadmin"
    names = sorted(e.name for e in admin_entries(single_pool_variant()))
    assert names == [
        "gpu-dev-cluster-admin-111122223333-role-platformadmin",
        "gpu-dev-cluster-admin-444455556666-role-platformadmin",
    ]


def test_the_cluster_security_group_is_tagged_for_karpenter_discovery(recording):
    [tag] = recording.by_type("aws:ec2/tag:Tag")
    assert tag.inputs["key"] == "karpenter.sh/discovery"
    assert tag.inputs["value"] == recording.outputs["clusterName"]
    assert tag.inputs["resourceId"] == recording.outputs["nodeSecurityGroupId"]


@pytest.mark.parametrize("fixture, protected", [("single-pool", False), ("multi-pool", True)])
def test_cluster_kms_key_and_vpc_are_protected_where_config_says(fixture, protected):
    recording = render_fixture(fixture)
    for type_ in (EKS, "aws:kms/key:Key", "aws:ec2/vpc:Vpc"):
        [resource] = recording.by_type(type_)
        assert resource.protect is protected, type_
    assert eks_cluster(recording).inputs["deletionProtection"] is protected


def test_every_kubernetes_resource_goes_through_the_clusters_provider(recording):
    [provider] = recording.by_type("pulumi:providers:kubernetes")
    kubernetes = [r for r in recording.resources if r.custom and r.type.startswith("kubernetes:")]
    assert kubernetes
    for resource in kubernetes:
        assert resource.provider == provider.urn, resource.name


def test_the_kubernetes_provider_waits_for_the_admins_access(recording):
    [provider] = recording.by_type("pulumi:providers:kubernetes")
    associations = recording.by_type("aws:eks/accessPolicyAssociation:AccessPolicyAssociation")
    assert {a.urn for a in associations} <= set(provider.dependencies)
    assert provider.inputs["kubeconfig"] == "[secret]"


def test_stack_outputs_include_a_secret_kubeconfig(recording):
    assert set(recording.outputs) == {
        "clusterName",
        "clusterEndpoint",
        "oidcIssuer",
        "kubeconfig",
        "clusterCreator",
        "vpcId",
        "publicSubnetIds",
        "privateSubnetIds",
        "nodeSecurityGroupId",
    }
    assert recording.secret_outputs == {"kubeconfig"}
    assert recording.outputs["kubeconfig"] == "[secret]"
    assert recording.outputs["clusterEndpoint"].startswith("https://")
    assert recording.outputs["oidcIssuer"].startswith("https://oidc.eks.")


def test_resources_are_parented_under_the_platform_component(recording):
    [platform] = recording.by_type("gpu-platform:index:GpuPlatform")
    by_urn = {r.urn: r for r in recording.resources}
    for resource in recording.resources:
        if resource is platform:
            continue
        ancestor = resource
        while ancestor.parent in by_urn:
            ancestor = by_urn[ancestor.parent]
        assert ancestor is platform, f"{short(resource.urn)} is not under the platform component"
