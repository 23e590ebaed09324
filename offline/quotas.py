"""The summary's "Service quotas" section: the EC2 GPU vCPU quotas each pool needs at its limit.

EC2 counts running GPU instances' vCPUs against per-Region quotas (models/aws_ec2_quotas.py) that start
low, often at 0, in a new account. A pool whose quota is short fails to launch nodes (Karpenter logs
`VcpuLimitExceeded` / `MaxSpotInstanceCountExceeded`; a DRA pool's node group never turns ACTIVE), so the
summary lists, per pool and purchase option, the vCPUs the pool can hold (`GpuPoolPlan.vcpus_at_limit`)
and the quota they count against, then each quota's total with every pool at its limit.
"""

from __future__ import annotations

from components.lib.node_groups import DRA_NODES_UPDATE
from config import PlatformConfig
from models.aws_ec2_quotas import ON_DEMAND, SERVICE_CODE, SPOT, vcpu_quota
from models.aws_eks import update_surge


def quota_rows(config: PlatformConfig) -> list[tuple[str, str, str, int]]:
    """(pool, purchase option, quota code, vCPUs) for every GPU pool and each of its capacity types.

    A pool allowed both on-demand and spot may run wholly on either, so it needs its vCPUs in both quotas.
    A DRA pool's version update adds what EKS surges by (none with its MINIMAL strategy, models/aws_eks.py).
    """
    zones = len(config.network.subnets)
    rows: list[tuple[str, str, str, int]] = []
    for pool in config.gpu_pools:
        vcpus = pool.vcpus_at_limit
        if pool.is_dra:
            surge = update_surge(DRA_NODES_UPDATE.strategy, DRA_NODES_UPDATE.max_unavailable, zones)
            vcpus += surge * max(t.vcpu for t in pool.instance_types)
        # `reserved` runs in capacity reservations the account already holds, whose quota was needed to make them.
        for option in (o for o in pool.config.capacity_types if o in (ON_DEMAND, SPOT)):
            codes = {vcpu_quota(t.name, option).code for t in pool.instance_types}
            [code] = codes  # a pool has one GPU model, hence one family group
            rows.append((pool.name, option, code, vcpus))
    return rows


def render_service_quotas(config: PlatformConfig) -> str:
    from .summary import table

    rows = quota_rows(config)
    names = {}
    for pool in config.gpu_pools:
        for option in (o for o in pool.config.capacity_types if o in (ON_DEMAND, SPOT)):
            quota = vcpu_quota(pool.instance_types[0].name, option)
            names[quota.code] = quota.name
    totals: dict[str, int] = {}
    for _, _, code, vcpus in rows:
        totals[code] = totals.get(code, 0) + vcpus
    header = (
        "## Service quotas\n\n"
        f"EC2 vCPU quotas the GPU pools need in {config.region} (Service Quotas, service `{SERVICE_CODE}`), with each "
        "pool at its limit: Karpenter pools at their NodePool's GPU limit (headroom included) in the mix of their "
        "types that holds the most vCPUs, DRA pools at their node group's size in their largest type. A pool that "
        "allows on-demand and spot may run on either, so it counts in both. New accounts start these quotas low, "
        "often at 0; raise them before the first `pulumi up` (docs/upgrading.md, \"Service quotas\"). Capacity "
        "reservations (`reserved`) already hold theirs and are not listed:\n\n"
    )
    per_pool = table(
        ["pool", "capacity", "quota", "vCPUs at limit"],
        [[f"`{pool}`", option, f"`{code}` {names[code]}", vcpus] for pool, option, code, vcpus in rows],
    )
    total = table(
        ["quota", "name", "vCPUs with every pool at its limit", "raise with"],
        [
            [
                f"`{code}`",
                names[code],
                vcpus,
                f"`aws service-quotas request-service-quota-increase --service-code {SERVICE_CODE} --quota-code {code} "
                f"--desired-value {vcpus} --region {config.region}`",
            ]
            for code, vcpus in sorted(totals.items())
        ],
    )
    return header + per_pool + "\n" + total
