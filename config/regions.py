"""The AWS regions the platform is set up for, and the availability zones it spreads across.

Validation must run before any cloud call, so the zones are data here rather than an
`ec2:DescribeAvailabilityZones` lookup. Zones are listed in the order the platform takes them
(`network.azCount: 2` takes the first two). To run in another region, add a row: its zones as
`aws ec2 describe-availability-zones --region <region>` lists them.

Zone names are mapped to zone IDs per account in the older regions, and EKS refuses zones by ID
(models/aws_eks.py `EKS_UNSUPPORTED_ZONE_IDS`): a row's order is the usual mapping's, and every deploy
asks the account for the IDs of the zones it takes and refuses one EKS does not support
(`eks_zone_problems`, `__main__.py`) before anything is created; `cluster.network.availabilityZones`
then names other zones.

Every row's region is one botocore knows (`upstream/botocore/<BOTOCORE>/partitions.json`, vendored at
the pin in config/versions.py; tests/test_regions.py checks it). botocore has no zones, and zone
names are mapped per account in the oldest regions, so the zones are a table: a zone code is the
region code and a letter ("AWS Availability Zones", AWS Regions and Availability Zones guide, read
2026-12-01). Prices per region: config/catalog_prices.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from models.aws_eks import EKS_UNSUPPORTED_ZONE_IDS

from .keys import CONFIG_NAMESPACE

AVAILABILITY_ZONES: dict[str, tuple[str, ...]] = {
    # us-east-1e is left out of the default order: it is use1-az3 in the accounts this row follows, a zone
    # EKS refuses and with no current-generation GPU instance types. Another account's mapping differs;
    # the deploy's zone ID check catches it.
    "us-east-1": ("us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d", "us-east-1f"),
    "us-east-2": ("us-east-2a", "us-east-2b", "us-east-2c"),
    "us-west-2": ("us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"),
    "ca-central-1": ("ca-central-1a", "ca-central-1b", "ca-central-1d"),
    "eu-west-1": ("eu-west-1a", "eu-west-1b", "eu-west-1c"),
    "eu-west-2": ("eu-west-2a", "eu-west-2b", "eu-west-2c"),
    "eu-central-1": ("eu-central-1a", "eu-central-1b", "eu-central-1c"),
    "eu-north-1": ("eu-north-1a", "eu-north-1b", "eu-north-1c"),
    "ap-northeast-1": ("ap-northeast-1a", "ap-northeast-1c", "ap-northeast-1d"),
    "ap-southeast-1": ("ap-southeast-1a", "ap-southeast-1b", "ap-southeast-1c"),
    "ap-southeast-2": ("ap-southeast-2a", "ap-southeast-2b", "ap-southeast-2c"),
    "ap-south-1": ("ap-south-1a", "ap-south-1b", "ap-south-1c"),
    # Seoul: four zones (AZ IDs apne2-az1 to apne2-az4), uniformly mapped.
    "ap-northeast-2": ("ap-northeast-2a", "ap-northeast-2b", "ap-northeast-2c", "ap-northeast-2d"),
    # AWS GovCloud (US), partition aws-us-gov: three zones each.
    "us-gov-west-1": ("us-gov-west-1a", "us-gov-west-1b", "us-gov-west-1c"),
    "us-gov-east-1": ("us-gov-east-1a", "us-gov-east-1b", "us-gov-east-1c"),
}


def eks_zone_problems(region: str, zones: Sequence[str], zone_ids: Mapping[str, str]) -> list[str]:
    """One line per zone of `zones` whose ID in this account is one EKS refuses.

    `zone_ids` is the account's zones of the region, name -> ID, as `aws ec2 describe-availability-zones`
    answers; the line lists the ones EKS takes.
    """
    refused = EKS_UNSUPPORTED_ZONE_IDS.get(region, ())
    taken = ", ".join(sorted(name for name, zone_id in zone_ids.items() if zone_id not in refused))
    key = f"{CONFIG_NAMESPACE}:cluster.network"
    return [
        f"{key}: zone {name} is {zone_ids[name]} in this account, where EKS creates no cluster (EKS user guide, subnet "
        f"requirements): set {key}.availabilityZones to zones EKS takes here: [{taken}]"
        for name in zones
        if zone_ids.get(name) in refused
    ]


# Region code prefix -> partition, as botocore's partitions.json `regionRegex` assigns every row above
# (tests/test_fleet.py checks each row against it); any other region is in `aws`.
_PARTITION_PREFIXES: tuple[tuple[str, str], ...] = (("us-gov-", "aws-us-gov"), ("cn-", "aws-cn"))


def partition_of(region: str) -> str:
    """`aws`, `aws-us-gov` or `aws-cn`: the AWS partition, a separate set of accounts and IAM, of `region`."""
    return next((partition for prefix, partition in _PARTITION_PREFIXES if region.startswith(prefix)), "aws")
