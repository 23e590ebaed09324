"""The stack config: every mistake is one line naming the key, the value and what is allowed."""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any

import pytest

from config import ConfigError
from config.versions import ADDON_VERSIONS, KUBERNETES_VERSIONS

from .conftest import fixture_document, load

Doc = dict[str, Any]


def cluster(doc: Doc) -> Doc:
    return doc["gpu-platform:cluster"]


def set_in(*path: str, value: Any) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        target = doc
        for key in path[:-1]:
            target = target.setdefault(key, {})
        target[path[-1]] = value

    return mutate


def delete(*path: str) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        target = doc
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]

    return mutate


C = "gpu-platform:cluster"

BAD_CONFIGS = [
    pytest.param(
        set_in(C, "systemNodes", "minSize", value=0),
        "gpu-platform:cluster.systemNodes.minSize: 0 is out of range; must be >= 1",
        id="min-size-zero",
    ),
    pytest.param(
        set_in(C, "systemNodes", "minSize", value="two"),
        "gpu-platform:cluster.systemNodes.minSize: 'two' is not an integer",
        id="wrong-type",
    ),
    pytest.param(
        set_in(C, "systemNodes", "desiredSize", value=9),
        "gpu-platform:cluster.systemNodes.desiredSize: 9 must lie between minSize (2) and maxSize (3)",
        id="desired-outside-min-max",
    ),
    pytest.param(
        set_in(C, "network", "nodes", value=3),
        "gpu-platform:cluster.network.nodes: unknown key; allowed here: vpcCidr, azCount, availabilityZones, natGateways, "
        "flowLogs, ecrEndpoints",
        id="unknown-nested-key",
    ),
    pytest.param(
        set_in("gpu-platform:clusters", value={}),
        "gpu-platform:clusters: unknown key; did you mean gpu-platform:cluster? known keys: "
        "gpu-platform:cluster, gpu-platform:nodePools, "
        "gpu-platform:cpuPool, gpu-platform:gpu, gpu-platform:queueing, gpu-platform:tenants, gpu-platform:monitoring, "
        "gpu-platform:autoscaling, gpu-platform:supplyChain, gpu-platform:secrets, gpu-platform:versions, gpu-platform:fleet",
        id="unknown-top-level-key",
    ),
    pytest.param(
        set_in(C, "network", "vpcCidr", value="10.20.0.0/33"),
        "gpu-platform:cluster.network.vpcCidr: '10.20.0.0/33' is not an IPv4 network CIDR such as 10.0.0.0/16 "
        "('33' is not a valid netmask)",
        id="cidr-does-not-parse",
    ),
    pytest.param(
        set_in(C, "network", "vpcCidr", value="10.20.0.0/24"),
        "gpu-platform:cluster.network.vpcCidr: '10.20.0.0/24' must be a /16 to /20: smaller VPCs run out of pod addresses",
        id="vpc-too-small",
    ),
    pytest.param(
        set_in(C, "network", "azCount", value=5),
        "gpu-platform:cluster.network.azCount: 5 exceeds the 4 availability zones of us-west-2 "
        "(us-west-2a, us-west-2b, us-west-2c, us-west-2d); use 2 to 4",
        id="more-azs-than-region",
    ),
    pytest.param(
        set_in(C, "network", "natGateways", value="perZone"),
        "gpu-platform:cluster.network.natGateways: 'perZone' is not allowed; expected one of 'single' or 'perAz'",
        id="nat-mode",
    ),
    pytest.param(
        set_in(C, "kubernetesVersion", value="1.28"),
        "gpu-platform:cluster.kubernetesVersion: '1.28' is not supported by the pinned components; use one of "
        f"{', '.join(KUBERNETES_VERSIONS)} (quote it in YAML: \"1.30\" is not 1.3)",
        id="kubernetes-version-unsupported",
    ),
    pytest.param(
        set_in(C, "admins", value=["arn:aws:iam::111122223333:role/A", "arn:aws:iam::111122223333:role/A"]),
        "gpu-platform:cluster.admins: ['arn:aws:iam::111122223333:role/A', 'arn:aws:iam::111122223333:role/A'] "
        "lists principal 'arn:aws:iam::111122223333:role/A' twice",
        id="duplicate-admin",
    ),
    pytest.param(
        set_in(C, "admins", value=["arn:aws:iam::111122223333:group/Admins"]),
        "gpu-platform:cluster.admins[0]: 'arn:aws:iam::111122223333:group/Admins' is not an IAM role or user ARN "
        "such as 'arn:aws:iam::111122223333:role/PlatformAdmin'",
        id="admin-not-a-role",
    ),
    pytest.param(
        set_in(C, "admins", value=[]),
        "gpu-platform:cluster.admins: [] has 0 entries; must have at least 1",
        id="no-admins",
    ),
    pytest.param(
        set_in(C, "endpoint", "publicAccessCidrs", value=["0.0.0.0/0"]),
        "gpu-platform:cluster.endpoint.publicAccessCidrs[0]: '0.0.0.0/0' opens the API to the internet; "
        "list your office or VPN CIDRs instead",
        id="api-open-to-internet",
    ),
    pytest.param(
        set_in(C, "endpoint", "publicAccessCidrs", value=["203.0.113.0/24", "100.64.0.0/10"]),
        "gpu-platform:cluster.endpoint.publicAccessCidrs[1]: '100.64.0.0/10' opens the API to 4,194,304 addresses; "
        "list your office or VPN CIDRs, each /16 or narrower",
        id="api-open-to-a-wide-range",
    ),
    pytest.param(
        set_in(C, "systemNodes", "instanceTypes", value=["m7i.large", "m7i.large"]),
        "gpu-platform:cluster.systemNodes.instanceTypes: [m7i.large, m7i.large] lists instance type 'm7i.large' twice",
        id="duplicate-instance-type",
    ),
    pytest.param(
        set_in(C, "systemNodes", "instanceTypes", value=["m7g.large"]),
        "gpu-platform:cluster.systemNodes.instanceTypes[0]: 'm7g.large' is arm64 but amiType AL2023_x86_64_STANDARD "
        "is x86_64; pick instance types of one architecture",
        id="architecture-mismatch",
    ),
    pytest.param(
        delete(C, "name"),
        "gpu-platform:cluster.name: required but not set (EKS cluster name (2-32 characters, lowercase letters, digits "
        "and '-'). It prefixes every AWS resource name and is the value of the `karpenter.sh/discovery` tag.)",
        id="missing-name",
    ),
    pytest.param(
        delete("aws:region"),
        "aws:region: required but not set; e.g. `pulumi config set aws:region us-west-2`",
        id="missing-region",
    ),
    pytest.param(
        set_in("aws:region", value="mars-north-1"),
        "aws:region: 'mars-north-1' is not in config/regions.py; use one of us-east-1, us-east-2, us-west-2, "
        "ca-central-1, eu-west-1, eu-west-2, eu-central-1, eu-north-1, ap-northeast-1, ap-southeast-1, "
        "ap-southeast-2, ap-south-1, ap-northeast-2, us-gov-west-1, us-gov-east-1 or add its zones there",
        id="unknown-region",
    ),
    pytest.param(
        set_in("gpu-platform:versions", value={"addons": {"vpc-cni": "latest"}}),
        "gpu-platform:versions.addons.vpc-cni: 'latest' is not an EKS add-on version; they look like "
        "v1.21.1-eksbuild.7",
        id="addon-version-unpinned",
    ),
    pytest.param(
        set_in(C, "logging", "retentionDays", value=10),
        "gpu-platform:cluster.logging.retentionDays: 10 is not a CloudWatch retention period; use one of 1, 3, 5, 7, "
        "14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653",
        id="log-retention",
    ),
    pytest.param(
        set_in(C, "tags", value={"aws:team": "ml"}),
        "gpu-platform:cluster.tags.aws:team: 'aws:team' is a tag key AWS sets and owns: remove it or rename it",
        id="reserved-tag",
    ),
]


@pytest.mark.parametrize("mutate, expected", BAD_CONFIGS)
def test_a_config_mistake_is_one_line_naming_key_value_and_fix(mutate, expected):
    doc = fixture_document("single-pool")
    mutate(doc)
    with pytest.raises(ConfigError) as caught:
        load(doc)
    assert caught.value.problems == [expected]


def test_every_mistake_is_reported_together():
    doc = fixture_document("single-pool")
    cluster(doc)["systemNodes"]["minSize"] = 0
    cluster(doc)["network"]["natGateways"] = "many"
    doc["gpu-platform:typo"] = "x"
    with pytest.raises(ConfigError) as caught:
        load(doc)
    paths = [line.split(": ", 1)[0] for line in caught.value.problems]
    assert paths == [
        "gpu-platform:typo",
        "gpu-platform:cluster.network.natGateways",
        "gpu-platform:cluster.systemNodes.minSize",
    ]


def test_an_unquoted_kubernetes_version_that_yaml_reads_as_a_number_still_works():
    doc = fixture_document("single-pool")
    cluster(doc)["kubernetesVersion"] = 1.34
    assert load(doc).cluster.kubernetes_version == "1.34"


def test_every_supported_kubernetes_version_has_a_row_of_addon_versions():
    assert set(KUBERNETES_VERSIONS) == set(ADDON_VERSIONS)
    for row in ADDON_VERSIONS.values():
        assert set(row) == {"vpc-cni", "coredns", "kube-proxy"}


def test_addon_versions_come_from_the_table_for_the_clusters_kubernetes_version():
    doc = fixture_document("multi-pool")
    cluster(doc)["kubernetesVersion"] = "1.33"
    versions = {addon.name: addon.version for addon in load(doc).addon_versions}
    assert versions["kube-proxy"] == ADDON_VERSIONS["1.33"]["kube-proxy"]
    assert versions["coredns"] == ADDON_VERSIONS["1.33"]["coredns"]


def test_a_stack_may_override_one_addon_version():
    doc = fixture_document("single-pool")
    doc["gpu-platform:versions"] = {"addons": {"coredns": "v1.14.3-eksbuild.9"}}
    addons = {addon.name: addon for addon in load(doc).addon_versions}
    assert addons["coredns"].version == "v1.14.3-eksbuild.9" and addons["coredns"].overridden
    assert not addons["vpc-cni"].overridden


@pytest.mark.parametrize(
    "az_count, nat, vpc, expected_private, expected_public",
    [
        (2, "single", "10.20.0.0/16", ["10.20.0.0/19", "10.20.32.0/19"], ["10.20.224.0/22", "10.20.228.0/22"]),
        (
            3,
            "perAz",
            "10.30.0.0/20",
            ["10.30.0.0/23", "10.30.2.0/23", "10.30.4.0/23"],
            ["10.30.14.0/26", "10.30.14.64/26", "10.30.14.128/26"],
        ),
    ],
)
def test_subnets_are_carved_from_the_vpc_without_overlap(az_count, nat, vpc, expected_private, expected_public):
    doc = fixture_document("single-pool")
    cluster(doc)["network"] = {"vpcCidr": vpc, "azCount": az_count, "natGateways": nat}
    plan = load(doc).network
    assert [s.private_cidr for s in plan.subnets] == expected_private
    assert [s.public_cidr for s in plan.subnets] == expected_public
    assert plan.availability_zones == ("us-west-2a", "us-west-2b", "us-west-2c")[:az_count]
    assert plan.nat_per_az == (nat == "perAz")


def test_the_config_reference_matches_the_models():
    from config.reference import BEGIN, END, REFERENCE_FILE, reference_markdown

    from .conftest import project_path

    text = project_path(REFERENCE_FILE).read_text()
    documented = text[text.index(BEGIN) : text.index(END) + len(END)]
    assert documented == reference_markdown(), f"run `make docs` to regenerate {REFERENCE_FILE}"


def test_every_config_field_has_a_description_for_the_reference():
    from pydantic import BaseModel, RootModel

    from config import SECTIONS

    def fields(model: type[BaseModel], prefix: str):
        if issubclass(model, RootModel):
            yield from fields(typing.get_args(model.model_fields["root"].annotation)[0], f"{prefix}[]")
            return
        for name, info in model.model_fields.items():
            yield f"{prefix}.{info.alias or name}", info
            nested = info.annotation
            if isinstance(nested, type) and issubclass(nested, BaseModel):
                yield from fields(nested, f"{prefix}.{info.alias or name}")

    missing = [key for section, model in SECTIONS.items() for key, info in fields(model, section) if not info.description]
    assert missing == []
