"""On-demand prices of the catalog's instance types, per region, from vendored upstream price lists.

Source: Karpenter's generated price lists at the pinned tag (aws/karpenter-provider-aws v1.14.1,
`pkg/providers/pricing/zz_generated.pricing_aws.go`, generated 2026-07-06, and
`zz_generated.pricing_aws_us_gov.go`, generated 2026-06-15), vendored verbatim in
`upstream/karpenter-pricing/v1.14.1/`: Linux, on-demand, shared tenancy, USD per hour, from the AWS
Price List API. They cover us-east-1 and the two GovCloud regions; Karpenter fetches every other
region's prices at run time, and no other public price list with these types is vendored. A type a
region's list lacks is not sold on-demand there. `aws-cn`'s list is in CNY and is left out.

A stack in a region without a list is priced at us-east-1's and the summary says so. No vendored
source gives spot prices: the summary shows on-demand rates only, marked as such for spot pools.
"""

from __future__ import annotations

from collections.abc import Mapping

# The list a region without its own is priced from.
FALLBACK_REGION = "us-east-1"
# Region -> the date its list was generated (the file's `generated at` line).
PRICE_DATES: dict[str, str] = {"us-east-1": "2026-07-06", "us-gov-east-1": "2026-06-15", "us-gov-west-1": "2026-06-15"}

ON_DEMAND_USD: dict[str, dict[str, float]] = {
    "us-east-1": {
        "g5.xlarge": 1.006, "g5.2xlarge": 1.212, "g5.4xlarge": 1.624, "g5.8xlarge": 2.448, "g5.12xlarge": 5.672,
        "g5.16xlarge": 4.096, "g5.24xlarge": 8.144, "g5.48xlarge": 16.288, "g6.xlarge": 0.8048, "g6.2xlarge": 0.9776,
        "g6.4xlarge": 1.3232, "g6.8xlarge": 2.0144, "g6.12xlarge": 4.6016, "g6.16xlarge": 3.3968,
        "g6.24xlarge": 6.6752, "g6.48xlarge": 13.3504, "g6e.xlarge": 1.861, "g6e.2xlarge": 2.24208,
        "g6e.4xlarge": 3.00424, "g6e.8xlarge": 4.52856, "g6e.12xlarge": 10.49264, "g6e.16xlarge": 7.57719,
        "g6e.24xlarge": 15.06559, "g6e.48xlarge": 30.13118, "p4d.24xlarge": 21.957642, "p4de.24xlarge": 27.44705,
        "p5.4xlarge": 6.88, "p5.48xlarge": 55.04, "p5en.48xlarge": 63.296,
    },
    "us-gov-east-1": {
        "g6.xlarge": 1.0144, "g6.2xlarge": 1.2322, "g6.4xlarge": 1.66781, "g6.8xlarge": 2.53903,
        "g6.12xlarge": 5.80003, "g6.16xlarge": 4.28145, "g6.24xlarge": 8.41367, "g6.48xlarge": 16.82734,
    },
    "us-gov-west-1": {
        "g6.xlarge": 1.0144, "g6.2xlarge": 1.2322, "g6.4xlarge": 1.66781, "g6.8xlarge": 2.53903,
        "g6.12xlarge": 5.80003, "g6.16xlarge": 4.28145, "g6.24xlarge": 8.41367, "g6.48xlarge": 16.82734,
        "p4d.24xlarge": 26.3511, "p5.4xlarge": 8.256, "p5.48xlarge": 66.048, "p5en.48xlarge": 75.9552,
    },
}


def price_region(region: str) -> str:
    """The region whose price list prices a stack in `region`: its own, or FALLBACK_REGION."""
    return region if region in ON_DEMAND_USD else FALLBACK_REGION


def on_demand_prices(region: str) -> Mapping[str, float]:
    """Instance type -> on-demand USD/hour in the list that prices `region`."""
    return ON_DEMAND_USD[price_region(region)]
