"""Regions, their zones and their prices: every row traced to vendored upstream data, any listed region deploys.

Regions: botocore's partitions.json (upstream/botocore/<BOTOCORE>/). Prices: Karpenter's generated
price lists (upstream/karpenter-pricing/<KARPENTER_PRICING>/), which cover us-east-1 and GovCloud.
"""

from __future__ import annotations

import json
import re

import pulumi
import pytest

from config.catalog import INSTANCE_TYPES
from config.catalog_prices import ON_DEMAND_USD, PRICE_DATES, on_demand_prices, price_region
from config.regions import AVAILABILITY_ZONES, eks_zone_problems
from config.versions import BOTOCORE, KARPENTER_PRICING
from offline.cloud import Account, fake_zone_ids
from offline.summary import render_summary

from .conftest import fixture_document, load, problems_of, project_path, render

UPSTREAM = project_path("upstream")
PRICE_FILES = ("zz_generated.pricing_aws.go", "zz_generated.pricing_aws_us_gov.go")


def botocore_regions() -> dict[str, str]:
    """Region -> partition, as botocore's partitions.json lists them."""
    data = json.loads((UPSTREAM / "botocore" / BOTOCORE / "partitions.json").read_text())
    return {region: partition["id"] for partition in data["partitions"] for region in partition["regions"]}


def vendored_prices() -> dict[str, dict[str, float]]:
    """Region -> type -> USD/hour, read from the Go maps Karpenter generates."""
    prices: dict[str, dict[str, float]] = {}
    for name in PRICE_FILES:
        region = None
        for line in (UPSTREAM / "karpenter-pricing" / KARPENTER_PRICING / name).read_text().splitlines():
            if match := re.match(r'\s*"([a-z0-9-]+)": \{$', line):
                region = match.group(1)
                prices[region] = {}
            elif region is not None:
                prices[region].update({k: float(v) for k, v in re.findall(r'"([a-z0-9]+\.[a-z0-9]+)": ([0-9.]+)', line)})
    return prices


@pytest.mark.parametrize("region", sorted(AVAILABILITY_ZONES))
def test_every_region_is_one_botocore_knows_and_its_zones_are_the_region_and_a_letter(region):
    assert botocore_regions()[region] in ("aws", "aws-us-gov", "aws-cn")
    zones = AVAILABILITY_ZONES[region]
    assert len(zones) >= 3  # "Each Region has at least three Availability Zones"
    assert all(re.fullmatch(re.escape(region) + "[a-z]", zone) for zone in zones) and len(set(zones)) == len(zones)


def test_the_price_table_is_the_vendored_price_lists_for_every_catalog_type():
    vendored = vendored_prices()
    assert set(ON_DEMAND_USD) == set(vendored) & {"us-east-1", "us-gov-east-1", "us-gov-west-1"}
    for region, table in ON_DEMAND_USD.items():
        assert table == {name: vendored[region][name] for name in INSTANCE_TYPES if name in vendored[region]}, region


def test_the_catalogs_own_price_column_is_us_east_1s_list():
    for name, instance_type in INSTANCE_TYPES.items():
        assert instance_type.on_demand_usd_per_hour == ON_DEMAND_USD["us-east-1"].get(name), name


def test_seoul_deploys_with_its_four_zones_and_says_its_prices_are_us_east_1s():
    document = fixture_document("single-pool")
    document["aws:region"] = "ap-northeast-2"
    document["gpu-platform:cluster"]["network"]["azCount"] = 4
    config = load(document)
    assert [subnet.availability_zone for subnet in config.network.subnets] == [
        "ap-northeast-2a", "ap-northeast-2b", "ap-northeast-2c", "ap-northeast-2d"
    ]
    assert price_region("ap-northeast-2") == "us-east-1"
    assert config.gpu_pools[0].prices == ON_DEMAND_USD["us-east-1"]


def without_l40s(document):
    """The stack less its L40S pool (g6e, not sold in GovCloud), its flavors' quotas and the server on it."""
    document["gpu-platform:nodePools"] = [p for p in document["gpu-platform:nodePools"] if p["name"] != "gpu-l40s"]
    document["gpu-platform:queueing"].pop("flavorPerCapacityType")
    for tenant in document["gpu-platform:tenants"]:
        tenant["gpu"] = {flavor: quota for flavor, quota in tenant["gpu"].items() if not flavor.startswith("l40s")}
        tenant["inference"] = [s for s in tenant.get("inference", []) if not s["flavor"].startswith("l40s")]
    return document


def test_a_held_out_region_renders_with_its_own_zones_partition_and_prices():
    """GovCloud (US-West), a region no stack of the project uses: its zones, its partition's ARNs, its price list."""
    document = without_l40s(fixture_document("single-pool-dra"))
    document["aws:region"] = "us-gov-west-1"
    recording = render(document, "held-out")
    zones = sorted({s.inputs["availabilityZone"] for s in recording.by_type("aws:ec2/subnet:Subnet")})
    assert zones == ["us-gov-west-1a", "us-gov-west-1b"]
    attachments = recording.by_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    assert attachments and all(a.inputs["policyArn"].startswith("arn:aws-us-gov:iam::") for a in attachments)
    config = load(document)
    [l4] = [pool for pool in config.gpu_pools if pool.name == "gpu-l4-dra"]
    # g6.xlarge in us-gov-west-1: 1.0144 USD/hour for its one GPU (us-east-1: 0.8048); the pool's limit is 2 GPUs.
    assert l4.gpu_limit == 2 and l4.hourly_cost_at_limit == 2.03
    summary = render_summary(recording, config)
    assert "| `gpu-l4-dra` |" in summary and "$2.03" in summary
    assert f"(us-gov-west-1 prices, {PRICE_DATES['us-gov-west-1']}; config/catalog_prices.py)" in summary
    assert on_demand_prices("us-gov-west-1") is ON_DEMAND_USD["us-gov-west-1"]


# (region, pool, field, value) -> the one line, for types and families a region's vendored list lacks.
NOT_SOLD = [
    (
        "us-gov-west-1", "gpu-l40s", "instanceFamilies", ["g6e"],
        "gpu-platform:nodePools[gpu-l40s].instanceFamilies[0]: 'g6e' is not sold in us-gov-west-1: its price list "
        "(config/catalog_prices.py, Karpenter's of 2026-06-15) has none of its types; use a family it sells "
        "(g6, p4d, p5, p5en)",
    ),
    (
        "us-gov-east-1", "gpu-l40s", "instanceTypes", ["g6.xlarge", "g5.xlarge"],
        "gpu-platform:nodePools[gpu-l40s].instanceTypes[1]: 'g5.xlarge' is not sold in us-gov-east-1: its price list "
        "(config/catalog_prices.py, Karpenter's of 2026-06-15) lacks it; use a type of a family it sells (g6)",
    ),
    (
        "us-gov-east-1", "gpu-l40s", "instanceFamilies", ["g6", "g5"],
        "gpu-platform:nodePools[gpu-l40s].instanceFamilies[1]: 'g5' is not sold in us-gov-east-1: its price list "
        "(config/catalog_prices.py, Karpenter's of 2026-06-15) has none of its types; use a family it sells (g6)",
    ),
]


@pytest.mark.parametrize("region, pool, field, value, expected", NOT_SOLD)
def test_an_instance_type_the_regions_price_list_lacks_is_refused(region, pool, field, value, expected):
    document = fixture_document("single-pool-dra")
    document["aws:region"] = region
    [entry] = [p for p in document["gpu-platform:nodePools"] if p["name"] == pool]
    entry.pop("instanceFamilies", None)
    entry.pop("instanceTypes", None)
    entry[field] = value
    assert expected in problems_of(document)


def test_a_region_without_a_vendored_list_and_us_east_1_accept_every_catalog_family():
    for region in ("us-east-1", "ap-northeast-2", "eu-west-1"):
        document = fixture_document("single-pool-dra")
        document["aws:region"] = region
        assert load(document).region == region


def test_a_stack_outside_the_price_lists_is_priced_at_us_east_1_and_the_summary_says_so():
    from .conftest import render_fixture

    summary = render_summary(render_fixture("single-pool"), load(fixture_document("single-pool")))
    assert (
        "(us-east-1 prices, 2026-07-06; config/catalog_prices.py; no vendored price list for us-west-2, "
        "so these are us-east-1's)"
    ) in summary
    assert "(us-east-1 prices, 2026-07-20" not in summary



def test_the_simulator_prices_a_pools_nodes_in_the_stacks_region():
    from sim.state import Pool

    document = without_l40s(fixture_document("single-pool-dra"))
    document["aws:region"] = "us-gov-west-1"
    [pool] = [p for p in load(document).gpu_pools if p.name == "gpu-l4-dra"]
    # g6.xlarge in us-gov-west-1 (zz_generated.pricing_aws_us_gov.go): 1.0144 USD/hour; us-east-1's is 0.8048.
    assert {o.name: o.on_demand_usd_per_hour for o in Pool.from_plan(pool).options}["g6.xlarge"] == 1.0144


# An account of the kind EKS's table warns of: its us-east-1a is use1-az3 (zone names map to IDs per account).
SHIFTED = {
    "us-east-1a": "use1-az3", "us-east-1b": "use1-az1", "us-east-1c": "use1-az2", "us-east-1d": "use1-az4",
    "us-east-1e": "use1-az6", "us-east-1f": "use1-az5",
}
REFUSED_1A = (
    "gpu-platform:cluster.network: zone us-east-1a is use1-az3 in this account, where EKS creates no cluster (EKS user "
    "guide, subnet requirements): set gpu-platform:cluster.network.availabilityZones to zones EKS takes here: "
    "[us-east-1b, us-east-1c, us-east-1d, us-east-1e, us-east-1f]"
)


@pytest.mark.parametrize(
    "region, zones, zone_ids, expected",
    [
        ("us-east-1", ["us-east-1a", "us-east-1b", "us-east-1c"], SHIFTED, [REFUSED_1A]),
        ("us-east-1", ["us-east-1b", "us-east-1c", "us-east-1e"], SHIFTED, []),
        # The name the table leaves out is fine in this account, and a name is never refused for itself.
        ("us-east-1", ["us-east-1e"], {"us-east-1e": "use1-az6"}, []),
        (
            "us-west-1", ["us-west-1a", "us-west-1c"], {"us-west-1a": "usw1-az1", "us-west-1c": "usw1-az2"},
            [
                "gpu-platform:cluster.network: zone us-west-1c is usw1-az2 in this account, where EKS creates no cluster "
                "(EKS user guide, subnet requirements): set gpu-platform:cluster.network.availabilityZones to zones EKS "
                "takes here: [us-west-1a]"
            ],
        ),
        # use1-az3 means nothing outside us-east-1.
        ("eu-west-1", ["eu-west-1a"], {"eu-west-1a": "use1-az3"}, []),
    ],
)
def test_a_zone_is_refused_by_its_id_in_the_account_not_by_its_name(region, zones, zone_ids, expected):
    assert eks_zone_problems(region, zones, zone_ids) == expected


def us_east_1(document):
    document["aws:region"] = "us-east-1"
    return document


def test_a_deploy_into_an_account_whose_zone_is_use1_az3_is_refused_before_anything_is_declared():
    account = Account(zone_ids={"us-east-1": SHIFTED})
    with pytest.raises(pulumi.RunError) as refused:
        render(us_east_1(fixture_document("single-pool-dra")), "shifted", account=account)
    assert str(refused.value).splitlines() == ["zones EKS refuses in this account (1):", REFUSED_1A]


def test_listed_zones_replace_the_rows_order():
    document = us_east_1(fixture_document("single-pool-dra"))
    document["gpu-platform:cluster"]["network"]["availabilityZones"] = ["us-east-1c", "us-east-1b", "us-east-1e"]
    config = load(document)
    assert [s.availability_zone for s in config.network.subnets] == ["us-east-1c", "us-east-1b"]
    assert eks_zone_problems("us-east-1", [s.availability_zone for s in config.network.subnets], SHIFTED) == []


@pytest.mark.parametrize(
    "zones, expected",
    [
        (
            ["us-east-1b", "us-west-2a"],
            "gpu-platform:cluster.network.availabilityZones[1]: 'us-west-2a' is not a zone name of us-east-1: the region "
            "and a letter, e.g. us-east-1a",
        ),
        (
            ["us-east-1b"],
            "gpu-platform:cluster.network.azCount: 2 exceeds the 1 zones availabilityZones lists; list more, or lower "
            "azCount to 1",
        ),
    ],
)
def test_listed_zones_that_cannot_serve_are_one_line(zones, expected):
    document = us_east_1(fixture_document("single-pool-dra"))
    document["gpu-platform:cluster"]["network"]["availabilityZones"] = zones
    assert problems_of(document) == [expected]


def test_the_fake_accounts_mapping_leaves_the_refused_id_to_the_name_the_row_leaves_out():
    """The row follows accounts whose us-east-1e is use1-az3; every shipped stack passes the check in them."""
    assert fake_zone_ids("us-east-1")["us-east-1e"] == "use1-az3"
    assert "us-east-1e" not in AVAILABILITY_ZONES["us-east-1"]
    for region in AVAILABILITY_ZONES:
        assert eks_zone_problems(region, AVAILABILITY_ZONES[region], fake_zone_ids(region)) == []
