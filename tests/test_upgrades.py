"""A Kubernetes minor upgrade: every version-bound part of each stack moves with `kubernetesVersion`.

Each fixture stack is rendered at the minor before its own and compared with its own render (the
cached one). What changes is exactly the table below; a field still carrying the old minor after
the bump is one that did not follow. The EKS rule behind it: a node group must be on the cluster's
minor before the next control-plane upgrade ("Nodegroups ... must be updated to match cluster
version"), and pulumi-aws 7.51.1 eks.NodeGroup sees drift on `version` only when it is set. Every
managed node group follows, the DRA pools' (single-pool-dra) as the system nodes'.
"""

from __future__ import annotations

import pytest

from components.lib.node_groups import NODE_GROUP_NAME_PREFIX_MAX, node_group_name_prefix
from config import ConfigError, versions

from .conftest import fixture_document, load, problems_of, render, render_fixture

OLD, NEW = "1.34", "1.35"
CLUSTER, NODE_GROUP, ADDON, NAMESPACE = (
    "eks:index:Cluster", "aws:eks/nodeGroup:NodeGroup", "aws:eks/addon:Addon", "kubernetes:core/v1:Namespace"
)
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
# (type, logical name without the stack's prefix, input field) -> (at 1.34, at 1.35). Values from the
# EKS user guide's add-on tables, the amazon-eks-ami v20260714 release notes and Pod Security's
# version labels (`v<minor>`), written out here.
CHANGES = {
    (CLUSTER, "cluster-eks", "version"): ("1.34", "1.35"),
    (NODE_GROUP, "system-nodes", "version"): ("1.34", "1.35"),
    (NODE_GROUP, "system-nodes", "releaseVersion"): ("1.34.9-20260714", "1.35.6-20260714"),
    (ADDON, "node-addons-kube-proxy", "addonVersion"): ("v1.34.6-eksbuild.13", "v1.35.3-eksbuild.13"),
    (ADDON, "addons-coredns", "addonVersion"): ("v1.13.2-eksbuild.11", "v1.14.3-eksbuild.3"),
}
PSS_LABELS = tuple(f"metadata.labels.pod-security.kubernetes.io/{mode}-version" for mode in ("enforce", "audit", "warn"))
# Each DRA pool's node group (`<cluster>-dra-nodes-<pool>`) runs the AL2023 NVIDIA AMI, whose release
# version in amazon-eks-ami v20260714 is the standard AMI's (one "Release version" cell per minor).
DRA_CHANGES = {
    "version": ("1.34", "1.35"),
    "releaseVersion": ("1.34.9-20260714", "1.35.6-20260714"),
}
# vpc-cni's table row is the same build for 1.34 and 1.35; the AMI aliases name no minor (Karpenter
# resolves them against the cluster's minor, karpenter-provider-aws v1.14.1 amifamily/al2023.go).
UNCHANGED = {(ADDON, "node-addons-vpc-cni", "addonVersion"): "v1.21.1-eksbuild.7"}
# Node group fields EKS updates in place (UpdateNodegroupVersion / UpdateNodegroupConfig, tags through
# tagging; terraform-provider-aws internal/service/eks/node_group.go); any other change, the launch
# template's id among them, replaces the group.
NODE_GROUP_IN_PLACE = {
    "version", "releaseVersion", "launchTemplate.version", "scalingConfig", "updateConfig", "labels", "taints", "tags"
}


def node_group_field(field: str) -> str:
    """`scalingConfig.minSize` -> `scalingConfig`, `taints[0].key` -> `taints`; the launch template's id and version apart."""
    top = field.split(".")[0].split("[")[0]
    return field if top == "launchTemplate" else top


def flatten(value, path=""):
    if isinstance(value, dict):
        for key, item in value.items():
            yield from flatten(item, f"{path}.{key}" if path else key)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from flatten(item, f"{path}[{index}]")
    else:
        yield path, value


def changes(before, after) -> dict[tuple[str, str, str], tuple[object, object]]:
    """Every input field that differs between two renders of one stack, by (type, logical name, field)."""
    new = {r.urn: r for r in after.resources}
    found = {}
    for resource in before.resources:
        old_fields, new_fields = dict(flatten(resource.inputs)), dict(flatten(new[resource.urn].inputs))
        for field in sorted(old_fields.keys() | new_fields.keys()):
            if old_fields.get(field) != new_fields.get(field):
                found[(resource.type, resource.name, field)] = (old_fields.get(field), new_fields.get(field))
    return found


@pytest.fixture(scope="module", params=["single-pool", "multi-pool", "single-pool-dra"])
def upgrade(request):
    fixture = request.param
    document = fixture_document(fixture)
    assert document["gpu-platform:cluster"]["kubernetesVersion"] == NEW
    document["gpu-platform:cluster"]["kubernetesVersion"] = OLD
    return fixture, render(document, fixture), render_fixture(fixture)


def test_an_upgrade_keeps_every_urn(upgrade):
    _, before, after = upgrade
    assert sorted(r.urn for r in before.resources) == sorted(r.urn for r in after.resources)


def test_every_version_bound_field_follows_the_minor_and_nothing_else_changes(upgrade):
    fixture, before, after = upgrade
    prefix = fixture_document(fixture)["gpu-platform:cluster"]["name"] + "-"
    tenants = [tenant["name"] for tenant in fixture_document(fixture)["gpu-platform:tenants"]]
    expected = {(kind, prefix + name, field): values for (kind, name, field), values in CHANGES.items()}
    expected |= {
        (NAMESPACE, f"{tenant}-namespace", label): ("v1.34", "v1.35") for tenant in tenants for label in PSS_LABELS
    }
    dra_pools = [pool["name"] for pool in fixture_document(fixture)["gpu-platform:nodePools"] if pool.get("allocation") == "dra"]
    assert bool(dra_pools) == (fixture == "single-pool-dra")
    expected |= {
        (NODE_GROUP, f"{prefix}dra-nodes-{pool}", field): values for pool in dra_pools for field, values in DRA_CHANGES.items()
    }
    found = changes(before, after)
    listing = "\n".join(f"{kind} {name} {field}: {old} -> {new}" for (kind, name, field), (old, new) in sorted(found.items()))
    assert found == expected, f"what the {OLD} -> {NEW} upgrade changes in {fixture}:\n{listing}"


def test_no_field_keeps_the_old_minor_after_the_upgrade(upgrade):
    """A field that names 1.34 at 1.34 and still does at 1.35 is version-bound and did not follow."""
    _, before, after = upgrade
    new = {r.urn: dict(flatten(r.inputs)) for r in after.resources}
    stuck = [
        (resource.name, field, value)
        for resource in before.resources
        for field, value in flatten(resource.inputs)
        if isinstance(value, str) and OLD in value and new[resource.urn].get(field) == value
    ]
    assert stuck == []


def test_what_does_not_change_is_minor_independent(upgrade):
    fixture, before, after = upgrade
    prefix = fixture_document(fixture)["gpu-platform:cluster"]["name"] + "-"
    for (kind, name, field), value in UNCHANGED.items():
        for recording in (before, after):
            assert dict(flatten(recording.named(kind, prefix + name).inputs))[field] == value
    # Node classes select AMIs by alias only, never by an image ID that would pin one minor's AMI.
    for node_class in after.by_type("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"):
        [term] = node_class.inputs["spec"]["amiSelectorTerms"]
        family, release = term["alias"].split("@")
        assert list(term) == ["alias"] and NEW in versions.AMI_RELEASE_MINORS[(family, release)]


def test_every_node_group_changes_only_in_place_on_an_upgrade(upgrade):
    _, before, after = upgrade
    changed: dict[str, set[str]] = {}
    for kind, name, field in changes(before, after):
        if kind == NODE_GROUP:
            changed.setdefault(name, set()).add(node_group_field(field))
    assert set(changed) == {group.name for group in after.by_type(NODE_GROUP)}
    assert all(fields <= NODE_GROUP_IN_PLACE for fields in changed.values()), changed


def test_a_launch_template_change_is_a_new_version_of_the_same_template():
    """EKS takes a new launch template version in place; a new template (another id) would replace the group."""
    recording = render_fixture("single-pool-dra")
    templates = {t.name: t for t in recording.by_type(LAUNCH_TEMPLATE)}
    # Launch template names are unique in the region: a DRA pool named `system` cannot take the system nodes'.
    assert sorted(t.inputs["name"] for t in templates.values()) == ["gpu-dev-dra-gpu-l4-dra", "gpu-dev-system"]
    for group in recording.by_type(NODE_GROUP):
        template = templates[group.name]
        assert template.inputs["updateDefaultVersion"] is True
        assert group.property_dependencies["launchTemplate"] == (template.urn,)
        # The template's latest version number: a changed template is a new number, which the group
        # takes in place. `$Latest` never changes, so the group would never roll onto a new template.
        assert group.inputs["launchTemplate"]["version"].isdigit()
        assert node_group_field("launchTemplate.version") in NODE_GROUP_IN_PLACE
        assert node_group_field("launchTemplate.id") not in NODE_GROUP_IN_PLACE
        # Replaced create-first: the old group keeps its nodes until the new one is ACTIVE.
        assert group.delete_before_replace is not True


def test_every_node_group_name_is_a_prefix_that_fits_eks_with_the_providers_suffix():
    groups = {group.name: group.inputs for group in render_fixture("single-pool-dra").by_type(NODE_GROUP)}
    assert {name: inputs["nodeGroupNamePrefix"] for name, inputs in groups.items()} == {
        "gpu-dev-system-nodes": "gpu-dev-sys-",
        "gpu-dev-dra-nodes-gpu-l4-dra": "gpu-dev-gpu-l4-dra-",
    }
    assert not any("nodeGroupName" in inputs for inputs in groups.values())
    longest_cluster_name = "a" * 32
    assert NODE_GROUP_NAME_PREFIX_MAX == 37
    assert node_group_name_prefix(longest_cluster_name, "sys") == longest_cluster_name + "-sys-"
    # A 63-character pool name is cut: the cluster's name and as much of the pool's as fits.
    assert node_group_name_prefix(longest_cluster_name, "p" * 63) == longest_cluster_name + "-ppp-"
    assert node_group_name_prefix("gpu-dev", "gpu-h100-reserved-training-x") == "gpu-dev-gpu-h100-reserved-training-x-"


def test_every_supported_minor_has_a_system_node_ami_and_every_pinned_release_serves_it():
    for minor in versions.KUBERNETES_VERSIONS:
        assert versions.NODE_GROUP_RELEASE_VERSIONS[minor].startswith(minor + ".")
        assert versions.ami_release_problems(minor) == []
    assert versions.node_group_release_version("1.35", "BOTTLEROCKET_x86_64") is None
    assert versions.node_group_release_version("1.35", "AL2023_ARM_64_STANDARD") == "1.35.6-20260714"
    # The DRA pools' NVIDIA AMI: the same release version as the standard AMI of the release.
    assert versions.node_group_release_version("1.34", "AL2023_x86_64_NVIDIA") == "1.34.9-20260714"
    with pytest.raises(ValueError, match="publishes no AL2023_x86_64_NEURONX AMI"):
        versions.node_group_release_version("1.35", "AL2023_x86_64_NEURONX")


def test_a_minor_the_pinned_ami_release_has_no_amis_for_is_refused_at_config_time(monkeypatch):
    # amazon-eks-ami v20251209 publishes 1.29-1.34 (its CHANGELOG entry): no 1.35 AMIs, so no node class would turn ready.
    monkeypatch.setitem(versions.AMI_RELEASES, "al2023", "v20251209")
    monkeypatch.setitem(
        versions.AMI_RELEASE_MINORS, ("al2023", "v20251209"), ("1.29", "1.30", "1.31", "1.32", "1.33", "1.34")
    )
    with pytest.raises(ConfigError) as raised:
        load(fixture_document("single-pool"))
    [line] = str(raised.value).splitlines()
    assert "gpu-platform:cluster.kubernetesVersion" in line
    assert "the pinned al2023 AMI release v20251209 publishes no AMIs for Kubernetes 1.35" in line
    assert "bump AMI_RELEASES in config/versions.py" in line
    document = fixture_document("single-pool")
    document["gpu-platform:cluster"]["kubernetesVersion"] = "1.34"
    assert load(document).cluster.kubernetes_version == "1.34"


# Bottlerocket system nodes: the release the stack pins, since no stored upstream source gives v1.57.0's
# `<version>-<commit>`; AL2023 system nodes: the pin of config/versions.py, for each minor.
@pytest.mark.parametrize(
    "ami_type, release, minor, expected",
    [
        ("BOTTLEROCKET_x86_64", "1.57.0-0123abcd", "1.35", "1.57.0-0123abcd"),
        ("BOTTLEROCKET_ARM_64", "1.57.0-0123abcd", "1.34", "1.57.0-0123abcd"),
        ("BOTTLEROCKET_x86_64", None, "1.35", None),
        ("AL2023_x86_64_STANDARD", None, "1.34", "1.34.9-20260714"),
    ],
)
def test_the_system_nodes_release_is_the_stacks_bottlerocket_pin_or_the_al2023_one(ami_type, release, minor, expected):
    document = fixture_document("single-pool")
    nodes = document["gpu-platform:cluster"]["systemNodes"]
    nodes["amiType"] = ami_type
    if ami_type.endswith("ARM_64"):
        nodes["instanceTypes"] = ["m7g.xlarge"]
    if release is not None:
        nodes["releaseVersion"] = release
    assert load(document).cluster.system_nodes.node_group_release(minor) == expected


@pytest.mark.parametrize(
    "ami_type, release, protect, expected",
    [
        (
            "BOTTLEROCKET_x86_64", None, True,
            "gpu-platform:cluster.systemNodes.releaseVersion: not set on BOTTLEROCKET_x86_64 system nodes of a production "
            "stack (protect: true): EKS would take whatever Bottlerocket release is newest at each update; pin one, e.g. "
            "the output of `aws ssm get-parameter --name /aws/service/bottlerocket/aws-k8s-<minor>/x86_64/latest/"
            "image_version --query Parameter.Value`",
        ),
        (
            "AL2023_x86_64_STANDARD", "1.57.0-0123abcd", False,
            "gpu-platform:cluster.systemNodes.releaseVersion: '1.57.0-0123abcd' on AL2023_x86_64_STANDARD system nodes, "
            "which run the AMI release config/versions.py pins for the cluster's minor (NODE_GROUP_RELEASE_VERSIONS): "
            "remove releaseVersion",
        ),
        (
            "BOTTLEROCKET_x86_64", "v1.57.0", False,
            "gpu-platform:cluster.systemNodes.releaseVersion: 'v1.57.0' is not a Bottlerocket release version such as "
            "'1.57.0-0123abcd' (version, '-', 8 hex digits)",
        ),
    ],
)
def test_a_system_node_release_that_cannot_be_pinned_is_one_line(ami_type, release, protect, expected):
    document = fixture_document("single-pool")
    document["gpu-platform:cluster"]["protect"] = protect
    nodes = document["gpu-platform:cluster"]["systemNodes"]
    nodes["amiType"] = ami_type
    if release is not None:
        nodes["releaseVersion"] = release
    assert problems_of(document) == [expected]
