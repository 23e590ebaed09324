"""summary.md: what a stack stands up, in tables a reviewer reads in a minute."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from components.addons import ADDON_IDENTITIES, BEFORE_NODES
from components.system_nodes import SYSTEM_NODE_LABELS, SYSTEM_NODE_TAINT
from config import PlatformConfig

if TYPE_CHECKING:
    from .engine import Recording


def render_summary(recording: Recording, config: PlatformConfig) -> str:
    sections = [
        f"# gpu-platform: stack `{recording.stack}`\n",
        _cluster(config),
        _network(config),
        _node_groups(config),
        _gpu_pools(config),
        _addons(config),
        _access(config),
        _outputs(recording),
        _resources(recording),
    ]
    return "\n".join(sections)


def table(headers: list[str], rows: list[list[object]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _cluster(config: PlatformConfig) -> str:
    cluster = config.cluster
    cidrs = cluster.endpoint.public_access_cidrs
    return "## Cluster\n\n" + table(
        ["setting", "value"],
        [
            ["name", f"`{cluster.name}`"],
            ["region", config.region],
            ["Kubernetes", cluster.kubernetes_version],
            ["authentication", "EKS access entries (API mode)"],
            ["API endpoint", "private" + (f" + public from {', '.join(cidrs)}" if cidrs else " only")],
            ["secrets encryption", "KMS key with yearly rotation"],
            ["control-plane logs", f"{', '.join(cluster.logging.types)} ({cluster.logging.retention_days} days)"],
            ["protected from destroy", "yes" if cluster.protect else "no"],
        ],
    )


def _network(config: PlatformConfig) -> str:
    plan = config.network
    nat = "one per zone" if plan.nat_per_az else f"single, in {plan.subnets[0].availability_zone}"
    flow_logs = config.cluster.network.flow_logs
    header = (
        f"## Network\n\nVPC `{plan.vpc_cidr}`, NAT gateways: {nat}, flow logs: "
        f"{f'on ({flow_logs.retention_days} days)' if flow_logs.enabled else 'off'}.\n\n"
    )
    return header + table(
        ["zone", "public subnet", "private subnet (nodes, pods)"],
        [[s.availability_zone, s.public_cidr, s.private_cidr] for s in plan.subnets],
    )


def _node_groups(config: PlatformConfig) -> str:
    nodes = config.cluster.system_nodes
    labels = ", ".join(f"`{k}={v}`" for k, v in SYSTEM_NODE_LABELS.items())
    taint = f"`{SYSTEM_NODE_TAINT['key']}={SYSTEM_NODE_TAINT['value']}:NoSchedule`"
    return "## Node groups\n\n" + table(
        ["group", "instance types", "AMI", "min / desired / max", "disk", "labels", "taint"],
        [
            [
                "system (on-demand)",
                ", ".join(nodes.instance_types),
                nodes.ami_type,
                f"{nodes.min_size} / {nodes.desired_size} / {nodes.max_size}",
                f"{nodes.disk_size_gib} GiB gp3, encrypted",
                labels,
                taint,
            ]
        ],
    )


def _gpu_pools(config: PlatformConfig) -> str:
    rows = []
    for pool in config.gpu_pools:
        sharing = pool.config.sharing
        mode = {
            "none": "none",
            "timeSlicing": f"time-slicing x{sharing.replicas}",
            "mig": f"MIG ({pool.mig_strategy}): " + ", ".join(f"{n}x {p}" for p, n in sorted((sharing.mig_layout or {}).items())),
        }[sharing.mode]
        units = ", ".join(f"{count} `{resource}`" for resource, count in pool.schedulable_units.items())
        cost = pool.hourly_cost_at_limit
        cost_text = "n/a (no on-demand price)" if cost is None else f"${cost:,.2f}"
        if cost is not None and "spot" in pool.config.capacity_types:
            cost_text += " (on-demand rate; spot is usually cheaper)" if len(pool.config.capacity_types) > 1 else " (on-demand rate; runs on spot)"
        rows.append(
            [
                f"`{pool.name}`",
                ", ".join(t.name for t in pool.instance_types),
                "/".join(str(n) for n in sorted({t.gpus for t in pool.instance_types})),
                pool.gpu.name,
                ", ".join(pool.config.capacity_types),
                f"{pool.config.ami_family}@{pool.ami_release}",
                pool.gpu_limit,
                mode,
                units,
                cost_text,
            ]
        )
    cpu = config.cpu_pool
    note = (
        f"\nGeneral CPU pool `cpu`: {', '.join(cpu.instance_families)} ({', '.join(cpu.capacity_types)}), "
        f"up to {cpu.cpu_limit} vCPU and {cpu.memory_limit_gib} GiB. Every GPU node is tainted `nvidia.com/gpu=true:NoSchedule`.\n"
        "Costs: on-demand USD per hour with the pool at its GPU limit on its cheapest type per GPU "
        "(us-east-1 prices, 2026-07-20; config/catalog.py).\n"
    )
    return "## GPU pools (Karpenter)\n\n" + table(
        ["pool", "instance types", "GPUs/node", "GPU", "capacity", "AMI", "GPU limit", "sharing", "schedulable at limit", "cost/hour at limit"],
        rows,
    ) + note


def _addons(config: PlatformConfig) -> str:
    rows = []
    for addon in config.addon_versions:
        identity = f"Pod Identity (`{ADDON_IDENTITIES[addon.name][0]}`)" if addon.name in ADDON_IDENTITIES else "-"
        rows.append(
            [
                addon.name,
                addon.version,
                "stack override" if addon.overridden else "default",
                "before nodes" if addon.name in BEFORE_NODES else "after nodes",
                identity,
            ]
        )
    return "## EKS add-ons\n\n" + table(["add-on", "version", "pinned by", "installed", "AWS credentials"], rows)


def _access(config: PlatformConfig) -> str:
    return "## Cluster admins\n\n" + table(
        ["principal", "access policy"], [[f"`{arn}`", "AmazonEKSClusterAdminPolicy (cluster)"] for arn in config.cluster.admins]
    )


def _outputs(recording: Recording) -> str:
    rows = [
        [f"`{name}`", "(secret)" if name in recording.secret_outputs else _short(value)]
        for name, value in recording.outputs.items()
    ]
    return "## Stack outputs\n\n" + table(["output", "value (offline)"], rows)


def _resources(recording: Recording) -> str:
    counts = Counter(r.type for r in recording.resources)
    rows = [[f"`{type_}`", count] for type_, count in sorted(counts.items())]
    return f"## Resources ({len(recording.resources)})\n\n" + table(["type", "count"], rows)


def _short(value: object) -> str:
    text = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
    return f"`{text}`" if len(text) <= 100 else f"`{text[:97]}...`"
