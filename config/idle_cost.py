"""What a stack costs with no work running: the AWS resources that bill by the hour whatever the load.

Karpenter's GPU and CPU pools launch nothing while no pod waits, so an idle stack pays for the EKS control
plane, its NAT gateways and their public IPv4 addresses, the system node group at its desired size, the
interface endpoints, the volumes of the system nodes and of Prometheus, and the secrets KMS key. Two kinds
of GPU node run idle too: the nodes a pool's warm headroom keeps up (its placeholder pods always wait for
them; `GpuPoolPlan.headroom_nodes`, the types Karpenter launches for them), and a DRA pool's managed node
group (`GpuPoolPlan.node_group_size` nodes of its first type). Traffic (NAT processing, endpoint data) and
logs are billed by use and are not in it.

Prices: us-east-1, on-demand, USD, read 2026-07-20 from
- EKS: aws.amazon.com/eks/pricing (a cluster in standard support: $0.10 an hour);
- NAT gateways and public IPv4: aws.amazon.com/vpc/pricing ($0.045 a gateway-hour; $0.005 an hour for
  each public IPv4 address, the gateways' Elastic IPs included);
- interface endpoints: aws.amazon.com/privatelink/pricing ($0.01 an hour per endpoint per zone; the S3
  gateway endpoint is free);
- gp3: aws.amazon.com/ebs/pricing ($0.08 per GB-month); KMS: aws.amazon.com/kms/pricing ($1 a key-month);
- EC2 (the system node types): aws/karpenter-provider-aws v1.14.1
  pkg/providers/pricing/zz_generated.pricing_aws.go, the list config/catalog.py prices GPUs from. Each
  family's price doubles with each size, large to 4xlarge. GPU nodes: the pool's own prices, in the
  stack's region where a price list is vendored (config/catalog_prices.py).

Only us-east-1 is priced here; `idle_prices` is the one lookup, and says which region its prices are for.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .capacity import HOURS_PER_MONTH, GpuPoolPlan
from .catalog import PRICE_REGION

# USD an hour of each system-node family's `large` size in PRICE_REGION.
_LARGE_USD_PER_HOUR = {
    "m5": 0.096, "m6i": 0.096, "m6a": 0.0864, "m7i": 0.1008, "m7a": 0.11592, "m8i": 0.10584,
    "m6g": 0.077, "m7g": 0.0816, "c7i": 0.08925, "r7i": 0.1323,
}
_SIZES = {"large": 1, "xlarge": 2, "2xlarge": 4, "4xlarge": 8}


@dataclass(frozen=True)
class IdlePrices:
    """Hourly and monthly prices of what an idle stack pays for, in `region`."""

    region: str
    eks_cluster_hour: float = 0.10
    nat_gateway_hour: float = 0.045
    public_ipv4_hour: float = 0.005
    interface_endpoint_zone_hour: float = 0.01
    gp3_gib_month: float = 0.08
    kms_key_month: float = 1.0
    instance_hour: Mapping[str, float] | None = None

    def instance(self, instance_type: str) -> float | None:
        return (self.instance_hour or {}).get(instance_type)


def idle_prices(region: str) -> IdlePrices:
    """The prices for `region`: PRICE_REGION's, the only ones recorded; `.region` says which they are."""
    del region  # every region is priced at PRICE_REGION's rates until a per-region table exists
    instances = {
        f"{family}.{size}": round(large * times, 6)
        for family, large in _LARGE_USD_PER_HOUR.items()
        for size, times in _SIZES.items()
    }
    return IdlePrices(PRICE_REGION, instance_hour=instances)


@dataclass(frozen=True)
class IdleLine:
    """One thing an idle stack pays for: how many, at what price each, per month."""

    item: str
    count: int
    unit: str
    usd_per_month: float | None  # None: no price recorded (an instance type without a row)


@dataclass(frozen=True)
class GpuNodes:
    """GPU nodes of one type that run with no work: a pool's headroom nodes or its DRA node group."""

    item: str  # what keeps them up, and the pool
    instance_type: str
    count: int
    usd_per_hour: float | None  # each; None: no on-demand price


def standing_gpu_nodes(pools: Sequence[GpuPoolPlan]) -> tuple[GpuNodes, ...]:
    """Per pool and instance type, the GPU nodes an idle stack runs: headroom nodes, DRA node groups."""
    found = []
    for pool in pools:
        if pool.is_dra:
            first = pool.instance_types[0]  # the type EKS launches first (`GpuPoolPlan.standing_hourly_cost`)
            found.append(GpuNodes(f"DRA node group `{pool.name}`", first.name, pool.node_group_size, pool.on_demand_price(first)))
            continue
        nodes = pool.headroom_nodes
        item = f"GPU headroom `{pool.name}`"
        if pool.headroom_capacity_type == "spot":
            item += ", spot at the on-demand rate"
        if nodes is None:
            # No price for some type: which one Karpenter launches is unknown, so name the pool without one.
            found.append(GpuNodes(item, "type unknown", pool.headroom_pods, None))
            continue
        for name, count in Counter(t.name for t in nodes).items():
            instance = next(t for t in pool.instance_types if t.name == name)
            found.append(GpuNodes(item, name, count, pool.on_demand_price(instance)))
    return tuple(found)


@dataclass(frozen=True)
class IdleInputs:
    """What the stack declares that bills by the hour (the render counts the network's parts)."""

    nat_gateways: int
    public_ipv4: int
    interface_endpoint_zones: int  # interface endpoints x the zones each spans
    system_nodes: int  # the node group's desired size
    system_node_type: str  # its first instance type: managed node groups launch on-demand types in list order
    system_disk_gib: int  # per node
    prometheus_volume_gib: int  # every replica's volume together
    kms_keys: int
    gpu_nodes: tuple[GpuNodes, ...] = ()  # `standing_gpu_nodes`


def idle_lines(inputs: IdleInputs, prices: IdlePrices) -> tuple[IdleLine, ...]:
    month = HOURS_PER_MONTH
    node = prices.instance(inputs.system_node_type)
    volumes = inputs.system_nodes * inputs.system_disk_gib + inputs.prometheus_volume_gib
    return (
        IdleLine("EKS control plane", 1, f"${prices.eks_cluster_hour:g}/h", prices.eks_cluster_hour * month),
        IdleLine(
            "NAT gateways", inputs.nat_gateways, f"${prices.nat_gateway_hour:g}/h",
            inputs.nat_gateways * prices.nat_gateway_hour * month,
        ),
        IdleLine(
            "public IPv4 addresses", inputs.public_ipv4, f"${prices.public_ipv4_hour:g}/h",
            inputs.public_ipv4 * prices.public_ipv4_hour * month,
        ),
        IdleLine(
            "interface endpoints (endpoint x zone)", inputs.interface_endpoint_zones,
            f"${prices.interface_endpoint_zone_hour:g}/h",
            inputs.interface_endpoint_zones * prices.interface_endpoint_zone_hour * month,
        ),
        IdleLine(
            f"system nodes ({inputs.system_node_type})", inputs.system_nodes,
            f"${node:g}/h" if node is not None else "no price recorded",
            None if node is None else inputs.system_nodes * node * month,
        ),
        IdleLine("gp3 volumes (GiB)", volumes, f"${prices.gp3_gib_month:g}/GiB-month", volumes * prices.gp3_gib_month),
        IdleLine("KMS keys", inputs.kms_keys, f"${prices.kms_key_month:g}/month", inputs.kms_keys * prices.kms_key_month),
        *(
            IdleLine(
                f"{nodes.item} ({nodes.instance_type})", nodes.count,
                "no price recorded" if nodes.usd_per_hour is None else f"${nodes.usd_per_hour:g}/h",
                None if nodes.usd_per_hour is None else nodes.count * nodes.usd_per_hour * month,
            )
            for nodes in inputs.gpu_nodes
        ),
    )


def idle_total(lines: tuple[IdleLine, ...]) -> float:
    return sum(line.usd_per_month or 0.0 for line in lines)
