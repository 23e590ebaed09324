"""summary.md: what a stack stands up, in tables a reviewer reads in a minute."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import yaml

from components import dra_nodes, queueing, training
from components.addons import ADDON_IDENTITIES, BEFORE_NODES
from components.autoscaling import SERVING_POD_MONITOR
from components.monitoring.alerts import AlertRule, kai_group, multikueue_group
from components.monitoring.alerts import alerts as alert_rules
from config import PlatformConfig, time_to_gpu, timing
from config.advertised import limit_units
from config.capacity import HOURS_PER_MONTH
from config.catalog_prices import PRICE_DATES, price_region
from config.device_classes import promises as class_promises
from config.fleet import worker_token_secret
from config.idle_cost import IdleInputs, idle_lines, idle_prices, idle_total, standing_gpu_nodes
from config.kai import is_kai_pool, kai_pools
from config.labels import (
    CPU_POOL_NAME,
    DEVICE_CLASS_RESOURCE_SUFFIX,
    SERVING_METRICS_LABEL,
    SERVING_METRICS_PATH,
    SERVING_METRICS_PORT,
    SYSTEM_NODE_LABELS,
    SYSTEM_NODE_TAINT,
    device_class_resource,
)
from config.schedulability import promises, unpromised
from models import kubelet
from models.kai.constants import GPU_FRACTION_ANNOTATION
from models.kai.queues import gpu_share
from models.keda import cron
from models.kueue.integrations import INTEGRATIONS
from models.nvidia.dcgm_exporter import PER_PROCESS_METRICS

from .deploy_path import after_destroy_steps, render_deploy_path
from .quotas import render_service_quotas

if TYPE_CHECKING:
    from .engine import Recording


def render_summary(recording: Recording, config: PlatformConfig) -> str:
    sections = [
        f"# gpu-platform: stack `{recording.stack}`\n",
        _cluster(config),
        _network(config),
        _node_groups(config),
        _system_capacity(config),
        _gpu_pools(config),
        *([_device_classes(config)] if config.gpu.dra.device_classes else []),
        render_service_quotas(config),
        _tenants(config),
        _capacity(config),
        *([_kai_queues(config)] if config.uses_kai else []),
        _idle_cost(recording, config),
        _schedulability(config),
        *([_fleet(config)] if config.fleet.role != "none" else []),
        _alerts(config),
        _autoscaling(config),
        _warm_start(config),
        _job_kinds(recording),
        _supply_chain(config),
        _addons(config),
        _access(config),
        render_deploy_path(recording, config.cluster.name),
        _outputs(recording),
        _destroy(recording, config),
        _resources(recording),
    ]
    return "\n".join(sections)


def table(headers: list[str], rows: Sequence[Sequence[object]]) -> str:
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


def _system_capacity(config: PlatformConfig) -> str:
    plan = config.system_capacity
    rows = []
    for pod in plan.pods:
        total = plan.total(pod)
        rows.append(
            [
                f"`{pod.name}`",
                f"1 per node ({plan.min_size})" if pod.per_node else pod.replicas,
                f"{pod.requests.cpu_m}m",
                f"{pod.requests.memory_mib}Mi",
                f"{total.cpu_m}m",
                f"{total.memory_mib}Mi",
                pod.source,
            ]
        )
    requested, allocatable = plan.requested, plan.allocatable
    rows.append(
        [
            "**requested / allocatable**",
            "",
            "",
            "",
            f"**{requested.cpu_m}m / {allocatable.cpu_m}m**",
            f"**{requested.memory_mib}Mi / {allocatable.memory_mib}Mi**",
            "",
        ]
    )
    header = (
        f"## System nodes: requests vs allocatable\n\n{plan.min_size} nodes (minSize) of the smallest of "
        f"{', '.join(plan.instance_types)}, each allocating {plan.node_allocatable.cpu_m}m CPU and "
        f"{plan.node_allocatable.memory_mib}Mi memory: capacity less EKS kube-reserved and the "
        f"{kubelet.EVICTION_HARD_MEMORY_MIB}Mi eviction threshold, memory capacity estimated "
        "(config/system_capacity.py). EKS add-on rows are estimates. "
        f"Pods: {plan.pod_count} of {plan.node_max_pods * plan.min_size} ({plan.node_max_pods} per node).\n\n"
    )
    notes = "".join(f"\n{note}.\n" for note in plan.chart_notes)
    return header + table(
        ["pod", "replicas", "CPU each", "memory each", "CPU", "memory", "requests from"], rows
    ) + notes


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
            mixed = len(pool.config.capacity_types) > 1
            cost_text += " (on-demand rate; spot is usually cheaper)" if mixed else " (on-demand rate; runs on spot)"
        rows.append(
            [
                f"`{pool.name}`",
                ", ".join(t.name for t in pool.instance_types),
                "/".join(str(n) for n in sorted({t.gpus for t in pool.instance_types})),
                pool.gpu.name,
                ", ".join(pool.config.capacity_types),
                f"{dra_nodes.AMI_TYPE} (managed node group)" if pool.is_dra else f"{pool.config.ami_family}@{pool.ami_release}",
                pool.gpu_limit,
                mode,
                units,
                cost_text,
            ]
        )
    cpu = config.cpu_pool
    note = (
        f"\nGeneral CPU pool `cpu`: {', '.join(cpu.instance_families)} ({', '.join(cpu.capacity_types)}), "
        f"up to {cpu.cpu_limit} vCPU and {cpu.memory_limit_gib} GiB. "
        "Every GPU node is tainted `nvidia.com/gpu=true:NoSchedule`.\n"
        "Costs: on-demand USD per hour of the pool's GPUs on the cheapest whole nodes that hold them within its NodePool "
        f"limit, as the simulator's static baseline buys them: config/capacity.py cheapest_nodes ({_prices(config)}).\n"
    )
    dra = [pool for pool in config.gpu_pools if pool.is_dra]
    if dra:
        note += (
            f"DRA pools ({', '.join(pool.name for pool in dra)}) advertise no `nvidia.com/gpu`: pods claim their GPUs "
            "through a ResourceClaimTemplate, and Kueue and the namespace's ResourceQuota count them as devices of the "
            "claim's DeviceClass (`<class>.deviceclass.resource.k8s.io/devices`). Karpenter 1.14 launches no node for "
            "a pod with resource claims, so each DRA pool is an EKS managed node group of fixed size, running whether "
            "or not anything claims its GPUs (components/dra_nodes.py):\n"
        )
        for pool in dra:
            cost = pool.standing_hourly_cost
            standing = (
                "n/a (no on-demand price)" if cost is None
                else f"${cost:,.2f}/hour, ${cost * HOURS_PER_MONTH:,.0f}/month at the on-demand price of "
                f"{pool.instance_types[0].name}, the type EKS launches first"
            )
            note += f"- `{pool.name}`: {pool.node_group_size} nodes standing: {standing}.\n"
    shared = [pool.name for pool in config.gpu_pools if pool.config.sharing.mode == "timeSlicing"]
    if shared:
        note += (
            f"Time-sliced pools ({', '.join(shared)}): the DCGM exporter writes a copy of each GPU series per pod "
            f"sharing the GPU, with that pod's own value only for {', '.join(sorted(PER_PROCESS_METRICS))} (per "
            "process, through hostPID); every other series (DCGM_FI_PROF_*, power, temperature, clocks, "
            "DCGM_FI_DEV_FB_FREE, XID) is the whole GPU's under each sharing pod's name. The KEDA GPU triggers and "
            "the tenant dashboard's utilisation read DCGM_FI_DEV_GPU_UTIL, so they see each pod's own share; the "
            "fleet dashboard's power, temperature and memory panels are per GPU by design.\n"
        )
    return "## GPU pools (Karpenter; DRA pools as managed node groups)\n\n" + table(
        [
            "pool",
            "instance types",
            "GPUs/node",
            "GPU",
            "capacity",
            "AMI",
            "GPU limit",
            "sharing",
            "schedulable at limit",
            "cost/hour at limit",
        ],
        rows,
    ) + note


def _device_classes(config: PlatformConfig) -> str:
    """The administrator's DeviceClasses: the DRA pools whose devices each takes and the quota promised in it."""
    found = class_promises(config.gpu.dra, config.tenants, config.gpu_pools)
    rows = [
        [f"`{p.name}`", ", ".join(p.pools), p.devices, p.promised, f"`{device_class_resource(p.name)}`"] for p in found
    ]
    return (
        "## DeviceClasses (the administrator's)\n\n"
        + table(["class", "DRA pools", "devices published", "nominal quota promised", "quota resource"], rows)
        + "\nEach class is mapped in Kueue's `deviceClassMappings` to its own quota resource; claims naming it are "
        "charged there, and its selectors were matched against each DRA pool's devices.\n"
    )


def _prices(config: PlatformConfig) -> str:
    """Which region's price list the costs use, and when it was generated."""
    region = price_region(config.region)
    text = f"{region} prices, {PRICE_DATES[region]}; config/catalog_prices.py"
    if region != config.region:
        text += f"; no vendored price list for {config.region}, so these are {region}'s"
    return text


def _tenants(config: PlatformConfig) -> str:
    if not config.tenants:
        return "## Tenants\n\nNone yet: add one under `gpu-platform:tenants`.\n"
    rows = []
    for tenant in config.tenants:
        guaranteed = ", ".join(
            f"{q.quota.nominal} {q.flavor.name}{q.flavor.in_gpus(q.quota.nominal)}" for q in tenant.quotas if q.quota.nominal
        ) or "none"
        borrow = ", ".join(
            f"+{q.quota.borrowing_limit} {q.flavor.name}{q.flavor.in_gpus(q.quota.borrowing_limit)}"
            for q in tenant.quotas
            if q.quota.borrowing_limit
        ) or "-"
        gpu_quota = ", ".join(
            f"{key.removeprefix('requests.')}={value}" for key, value in tenant.resource_quota.items()
            if "nvidia.com" in key or key.endswith(DEVICE_CLASS_RESOURCE_SUFFIX)
        )
        monthly = tenant.guaranteed_hourly_cost * HOURS_PER_MONTH
        rows.append(
            [
                f"`{tenant.name}`",
                tenant.cohort,
                guaranteed,
                borrow,
                gpu_quota,
                f"{tenant.config.cpu} vCPU / {tenant.config.memory_gib} GiB",
                f"{tenant.config.priority} ({tenant.priority_value})",
                tenant.config.pod_security,
                f"${monthly:,.0f}",
            ]
        )
    note = (
        "\nGuaranteed and borrowable amounts are in each flavor's units: GPUs, or GPU slices on time-sliced pools "
        "(their physical-GPU equivalent in brackets); on MIG pools one unit is one GPU's MIG layout; on DRA pools "
        "GPUs claimed through ResourceClaimTemplates. "
        f"Monthly cost: the guaranteed GPUs at on-demand prices ({_prices(config)}), {HOURS_PER_MONTH} hours.\n"
    )
    return "## Tenants\n\n" + table(
        [
            "tenant",
            "cohort",
            "guaranteed",
            "may borrow",
            "ResourceQuota (GPU)",
            "CPU-only quota",
            "priority",
            "Pod Security",
            "monthly cost (guaranteed)",
        ],
        rows,
    ) + note



def _capacity(config: PlatformConfig) -> str:
    rows = []
    for pool in config.gpu_pools:
        flavors = [f for f in config.flavors if f.pool is pool]
        if not flavors:
            continue
        promised = sum(q.quota.nominal for t in config.tenants for q in t.quotas if q.flavor.pool is pool)
        capacity = flavors[0].capacity_units
        rows.append(
            [
                f"`{pool.name}`",
                ", ".join(f.name for f in flavors),
                f"{promised} / {capacity} {flavors[0].unit}" + (
                    f" ({promised / flavors[0].slices_per_gpu:g} / {capacity / flavors[0].slices_per_gpu:g} GPUs)"
                    if flavors[0].slices_per_gpu > 1 else ""
                ),
                f"{capacity - promised}",
            ]
        )
    # The CPU pool serves the `cpu` flavor: every tenant's cpu and memory against the NodePool's limits.
    cpu_pool = config.cpu_pool
    for resource, promised, declared, unit in (
        ("cpu", sum(t.config.cpu for t in config.tenants), cpu_pool.cpu_limit, "vCPUs"),
        ("memory", sum(t.config.memory_gib for t in config.tenants), cpu_pool.memory_limit_gib, "GiB"),
    ):
        rows.append(
            [f"`{CPU_POOL_NAME}` ({resource})", queueing.CPU_FLAVOR, f"{promised} / {declared} {unit}", f"{declared - promised}"]
        )
    return "## Capacity promised vs declared\n\n" + table(["pool", "flavors", "nominal promised / declared", "unpromised"], rows)


# The fractions the KAI table counts pods of: a half and a quarter of one GPU.
KAI_FRACTIONS = ("0.5", "0.25")


def _kai_queues(config: PlatformConfig) -> str:
    """The KAI Queues (config/kai.py) in GPUs and in fractional pods, and what a fraction costs an hour."""
    prices = {pool.name: pool.cheapest_on_demand_per_gpu for pool in kai_pools(config.gpu_pools)}
    rows = []
    for plan in config.kai_queues:
        tenant = next((t for t in config.tenants if t.name == plan.name), None)
        pools = {q.flavor.pool.name for q in tenant.quotas if is_kai_pool(q.flavor.pool)} if tenant else set(prices)
        known = [price for name, price in prices.items() if name in pools and price is not None]
        per_gpu = min(known) if known else None
        pods = [str(int(plan.gpu_limit // gpu_share({GPU_FRACTION_ANNOTATION: f}))) for f in KAI_FRACTIONS]
        rows.append([
            f"`{plan.name}`", f"`{plan.parent}`" if plan.parent else "-", plan.gpu_quota, plan.gpu_limit,
            plan.over_quota_weight, "-" if plan.priority is None else plan.priority, *pods,
            "-" if per_gpu is None else f"${per_gpu * float(KAI_FRACTIONS[0]):.2f}",
        ])
    headers = [
        "KAI Queue", "parent", "deserved GPUs", "limit GPUs", "over-quota weight", "priority",
        *(f"pods of {f} GPU at the limit" for f in KAI_FRACTIONS), f"on-demand $/h of {KAI_FRACTIONS[0]} GPU",
    ]
    return (
        "## KAI Queues (fractions of a GPU)\n\nKAI counts fractions and whole GPUs on its pools against these Queues; "
        "Kueue counts the pods' cpu and memory (docs/fractional-gpus.md).\n\n" + table(headers, rows)
    )


def idle_inputs(recording: Recording, config: PlatformConfig) -> IdleInputs:
    """What bills by the hour with no work running: the network's parts as declared, the rest from config."""
    endpoints = recording.by_type("aws:ec2/vpcEndpoint:VpcEndpoint")
    nodes = config.cluster.system_nodes
    return IdleInputs(
        nat_gateways=len(recording.by_type("aws:ec2/natGateway:NatGateway")),
        public_ipv4=len(recording.by_type("aws:ec2/eip:Eip")),
        interface_endpoint_zones=sum(
            len(e.inputs.get("subnetIds") or []) for e in endpoints if e.inputs.get("vpcEndpointType") == "Interface"
        ),
        system_nodes=nodes.desired_size,
        system_node_type=nodes.instance_types[0],
        system_disk_gib=nodes.disk_size_gib,
        prometheus_volume_gib=config.monitoring.replicas * config.monitoring.storage_gib,
        kms_keys=len(recording.by_type("aws:kms/key:Key")),
        gpu_nodes=standing_gpu_nodes(config.gpu_pools),
    )


def _idle_cost(recording: Recording, config: PlatformConfig) -> str:
    prices = idle_prices(config.region)
    lines = idle_lines(idle_inputs(recording, config), prices)
    rows = [
        [line.item, line.count, line.unit, "" if line.usd_per_month is None else f"${line.usd_per_month:,.0f}"]
        for line in lines
    ]
    total = idle_total(lines)
    rows.append(["**idle, per month**", "", "", f"**${total:,.0f}**"])
    where = "" if prices.region == config.region else f" (at {prices.region} prices; {config.region} may differ)"
    standing = ""
    if any(pool.headroom_pods for pool in config.gpu_pools):
        standing += (
            ", except the nodes a pool's warm headroom keeps up, whose placeholder pods always wait for them (the types "
            "Karpenter launches for them, at their on-demand price)"
        )
    if any(pool.is_dra for pool in config.gpu_pools):
        standing += "; DRA pools' node groups run always"
    header = (
        f"## Idle cost\n\nWhat the stack bills with no work running{where}: Karpenter's pools launch nothing "
        f"while no pod waits{standing}; traffic and logs are billed by use and not counted (prices: "
        "config/idle_cost.py).\n\n"
    )
    return header + table(["item", "count", "price", "per month"], rows)


def _schedulability(config: PlatformConfig) -> str:
    """The proof `offline check` runs (config/schedulability.py): every nominal quota, the nodes that carry it."""
    rows = [
        [
            f"`{p.flavor.name}`",
            f"`{p.resource}`",
            p.quota if p.quota == p.promised_on_pool else f"{p.quota} ({p.promised_on_pool} on the pool)",
            f"`{p.pool.name}`: " + (", ".join(p.advertised_by) or "none"),
            f"`{p.limit_text}`" + ("" if p.reachable is None else f" (reaches {p.reachable})"),
            "✓" if p.holds else "✗",
        ]
        for p in promises(config.flavors, config.tenants)
    ]
    if not rows:
        return "## Schedulability\n\nNo flavor has nominal quota yet.\n"
    note = (
        "\nEach nominal quota, in the resource pods request, against the NodePool limit in the units Karpenter "
        "counts (overlays applied; `nodes` for DRA pools, whose devices Karpenter does not count), and what the "
        "pool surely reaches within it on the listed instance types.\n"
    )
    for spare in unpromised(config.flavors, config.tenants):
        note += f"\n**Unpromised:** {spare.message}.\n"
    return "## Schedulability\n\n" + table(
        ["flavor", "resource", "quota", "advertised by", "limit in Karpenter's units", "✓/✗"], rows
    ) + note


def fleet_alert_rules() -> list[AlertRule]:
    return [rule for rule in multikueue_group().rules if isinstance(rule, AlertRule)]


def kai_alert_rules() -> list[AlertRule]:
    return [rule for rule in kai_group().rules if isinstance(rule, AlertRule)]


def _fleet(config: PlatformConfig) -> str:
    """The stack's place in its MultiKueue fleet (docs/fleet.md)."""
    fleet = config.fleet
    if fleet.role == "worker":
        return (
            "## Fleet\n\n"
            f"A MultiKueue worker of `{fleet.manager}`: it runs what that manager dispatches, under the same tenants' "
            "quotas, and gives the manager the ServiceAccount `multikueue-manager` (reads cluster-wide, writes in the "
            "tenant namespaces only).\n"
        )
    rows = [[f"`{worker}`", f"`{worker_token_secret(config.cluster.name, worker)}`"] for worker in fleet.workers]
    return (
        "## Fleet\n\n"
        f"A MultiKueue manager: every tenant's ClusterQueue dispatches what it admits to these workers, most "
        f"preferred first; nothing admitted here runs here. Garbage collection every {fleet.gc_interval}; a workload "
        f"on a worker unreachable for {fleet.worker_lost_timeout} is requeued. Each worker's token must be in Secrets "
        "Manager before the first deploy (docs/fleet.md).\n\n"
        + table(["worker stack", "its token (Secrets Manager)"], rows)
    )


def _alerts(config: PlatformConfig) -> str:
    rows = [
        [f"[`{a.name}`]({a.runbook_url(config.monitoring.runbook_base_url)})", a.severity,
         a.watches + (f", for {a.for_}" if a.for_ != "0m" else ""), a.quiet]
        for a in alert_rules(config.monitoring)
        + (fleet_alert_rules() if config.fleet.role == "manager" else [])
        + (kai_alert_rules() if config.uses_kai else [])
    ]
    receivers = (
        ", ".join(f"`{r.name}` ({', '.join(r.severities)})" for r in config.monitoring.receivers) or "none (alerts are dropped)"
    )
    return (
        "## Alerts\n\n"
        f"Prometheus keeps {config.monitoring.retention} on a {config.monitoring.storage_gib} GiB gp3 volume; "
        f"receivers: {receivers}. Each alert links to its runbook.\n\n"
        + table(["alert", "severity", "watches", "quiet when"], rows)
        + "\n**When metrics go missing.** An alert whose series is gone goes quiet rather than firing; the lost "
        "scrape itself fires kube-prometheus-stack's own `TargetDown` (its default general rules), and a renamed "
        "metric or label is caught before deploy by the metric inventory test. A KEDA trigger whose query "
        "returns nothing reads 0: the deployment scales down to its `minReplicas` and gives its GPUs back, and "
        f"`KedaTriggerWithoutData` fires after {_alert_for(config, 'KedaTriggerWithoutData')}. A trigger whose query "
        f"fails (Prometheus down or the query refused) is an error: after {timing.KEDA_FALLBACK_FAILURE_THRESHOLD} "
        f"failed polls ({timing.KEDA_FALLBACK_FAILURE_THRESHOLD * timing.KEDA_POLLING_INTERVAL_SECONDS} s) KEDA holds "
        f"the replicas running at that moment (at least {config.autoscaling.fallback_replicas}), never scales a "
        "loaded deployment down, and scales again at the first answer; `KedaScalerErrors` fires after "
        f"{_alert_for(config, 'KedaScalerErrors')}.\n"
    )


def _alert_for(config: PlatformConfig, name: str) -> str:
    """How long alert `name` waits before firing, in words: `15m` -> `15 minutes`."""
    [rule] = [rule for rule in alert_rules(config.monitoring) if rule.name == name]
    return f"{int(rule.for_.removesuffix('m'))} minutes"


def _autoscaling(config: PlatformConfig) -> str:
    deployments = [(tenant, d) for tenant in config.tenants for d in tenant.config.inference]
    if not deployments:
        return "## Autoscaling\n\nKEDA runs on the system nodes; no tenant declares `inference` deployments yet.\n"
    rows = []
    for tenant, d in deployments:
        preset = config.autoscaling.preset(d.workload_class)
        flavor = next((q.flavor for q in tenant.quotas if q.flavor.name == d.flavor), None)
        most = d.max_replicas * d.gpus_per_replica
        rows.append(
            [
                f"`{tenant.name}/{d.name}`",
                d.workload_class,
                f"{d.min_replicas}-{d.max_replicas}",
                f"{flavor.amount(most) if flavor is not None else most} on {d.flavor}",
                f"{preset.scale_up_utilization}% (active above {preset.scale_down_utilization}%)",
                f"{d.queue_depth_target} per replica" if d.queue_depth_target is not None else "-",
                f"{preset.cooldown_seconds} s",
                "platform" if d.serving is not None else "tenant",
            ]
        )
    note = (
        f"\nKEDA polls Prometheus every {timing.KEDA_POLLING_INTERVAL_SECONDS} s; an empty answer reads as 0, a "
        f"failed query is an error, and after {timing.KEDA_FALLBACK_FAILURE_THRESHOLD} errors in a row KEDA holds "
        f"the replicas it runs (at least {config.autoscaling.fallback_replicas}) until Prometheus answers (see "
        f"Alerts, when metrics go missing). Scale-down is paced by the HPA's "
        f"{timing.HPA_SCALE_DOWN.stabilization_window_seconds} s stabilisation window (KEDA's cooldown applies only "
        "to scaling to zero, which the platform does not do).\n"
        f"Queue depth is read from what each tenant namespace's `{SERVING_POD_MONITOR}` PodMonitor scrapes: pods "
        f'labelled `{SERVING_METRICS_LABEL}: "true"` with a container port named `{SERVING_METRICS_PORT}` serving '
        f"`{SERVING_METRICS_PATH}`. The platform's own servers are; a tenant-run server (model server `tenant`) "
        "must follow the same convention, or its queue-depth trigger reads 0.\n"
    )
    return "## Autoscaling\n\n" + table(
        ["deployment", "class", "replicas", "GPU units at max", "GPU target", "queue target", "cooldown", "model server"], rows
    ) + note


# The week off-hours floors are counted over: Monday 2026-11-30 00:00 UTC, seven days.
_WEEK = (datetime(2026, 11, 30, tzinfo=UTC), datetime(2026, 12, 7, tzinfo=UTC))


def _warm_start(config: PlatformConfig) -> str:
    """Per pool: standing headroom and its cost, image snapshot, time to GPU by step; then working-hours floors."""
    rows, steps_rows = [], []
    for pool in config.gpu_pools:
        warm = pool.config.warm_start
        cost = pool.headroom_hourly_cost
        cost_text = "-" if not pool.headroom_gpus else (
            "n/a" if cost is None else f"${cost:,.2f}/h, ${cost * HOURS_PER_MONTH:,.0f}/month"
        )
        limits = (
            "- (managed node group)"
            if pool.is_dra
            else ", ".join(f"{units} `{resource}`" for resource, units in limit_units(pool).items())
        )
        rows.append([
            f"`{pool.name}`",
            pool.headroom_gpus or "-",
            f"{pool.headroom_pods} x {pool.config.warm_start.headroom.gpus_per_pod} on {pool.headroom_capacity_type}"
            if pool.headroom_pods else "-",
            limits,
            cost_text,
            f"`{warm.image_snapshot}`" if warm.image_snapshot else "-",
        ])
        node, image, model = time_to_gpu.steps(pool, s3_weights=True)
        cold = node.cold + image.cold + model.cold
        warm_total = node.warm + image.warm + model.warm
        steps_rows.append([
            f"`{pool.name}`",
            f"{node.cold:.0f} s / {node.warm:.0f} s",
            f"{image.cold:.0f} s / {image.warm:.0f} s ({image.how})",
            f"{model.cold:.0f} s / {model.warm:.0f} s ({model.how})",
            f"{cold / 60:.1f} min",
            f"{warm_total / 60:.1f} min",
        ])
    text = "## Warm start and time to GPU\n\n" + table(
        ["pool", "headroom GPUs", "placeholders", "NodePool GPU limit", "headroom standing cost", "image snapshot"], rows
    )
    text += (
        "\nHeadroom: placeholder pods in `gpu-headroom` at PriorityClass `gpu-headroom` (below every tenant pod, "
        "`preemptionPolicy: Never`), outside Kueue and every quota; a surge replica evicts one and Karpenter "
        "launches its replacement. The NodePool limit is the pool's GPUs plus the headroom; quotas share the "
        "GPUs only. Standing cost: the nodes Karpenter launches for the placeholders at their on-demand prices (the "
        "types are in Idle cost).\n\n"
    )
    text += table(
        ["pool", "node (cold / warm)", "image (cold / warm)", "model (Hub / S3)", "cold total", "warm total"], steps_rows
    )
    text += (
        f"\nA surge replica's path to Ready, per step (config/time_to_gpu.py; docs/time-to-gpu.md). Cold: a new node, "
        f"the image pulled, the reference {time_to_gpu.MODEL.value:g} GiB model from the Hugging Face Hub. Warm: the "
        "pool's headroom and image snapshot as configured, and the weights streamed from the model store "
        "(`modelSource: s3://...`). Each model time includes the engine start.\n"
    )
    floors = [(t, d) for t in config.tenants for d in t.config.inference if d.working_hours is not None]
    if floors:
        floor_rows = []
        for tenant, d in floors:
            hours = d.working_hours
            assert hours is not None
            inside = cron.hours_inside(cron.parse(hours.start), cron.parse(hours.end), hours.timezone, *_WEEK)
            saved = (hours.replicas - d.min_replicas) * d.gpus_per_replica * (7 * 24 - inside)
            floor_rows.append([
                f"`{tenant.name}/{d.name}`",
                f"`{hours.start}` to `{hours.end}` ({hours.timezone})",
                f"{hours.replicas} / {d.min_replicas}",
                f"{inside:g} h",
                f"{saved:g}",
            ])
        text += "\n" + table(
            ["deployment", "working hours", "floor in / out", "open per week", "floor GPU-hours released per week"],
            floor_rows,
        )
        text += (
            "\nKEDA's cron trigger proposes the in-hours floor; the HPA keeps the largest proposal, so load still "
            "scales above either floor. Released GPU-hours count the floor only (GPU units); consolidation then "
            "gives the nodes back.\n"
        )
    return text


def _job_kinds(recording: Recording) -> str:
    """The kinds Kueue's rendered config queues, and which release installs each one's CRD."""
    releases = {r.inputs["name"]: r.inputs for r in recording.by_type("kubernetes:helm.sh/v3:Release")}
    kueue = releases.get(queueing.RELEASE_NAME)
    if kueue is None:
        return "## Job kinds Kueue queues\n\nKueue is not installed.\n"
    config = yaml.safe_load(kueue["values"]["managerConfig"]["controllerManagerConfigYaml"])
    trainer = releases.get(training.RELEASE_NAME)
    rows: list[list[Any]] = []
    for framework in config["integrations"]["frameworks"]:
        integration = INTEGRATIONS.get(framework)
        kind = f"{integration.api_version} {integration.kind}" if integration else "-"
        if integration and integration.built_in:
            rows.append([f"`{framework}`", kind, "Kubernetes"])
        elif trainer is not None and framework in training.QUEUED_FRAMEWORKS:
            rows.append([f"`{framework}`", kind, f"{training.CHART_KEY} {trainer['version']}"])
        else:
            rows.append([f"`{framework}`", "-", "not installed: Kueue waits for its CRD"])
    note = (
        "\nIn tenant namespaces (`managedJobsNamespaceSelector`) a job without a queue name goes to the tenant's `default` "
        "LocalQueue" + (" (`manageJobsWithoutQueueName`)" if config.get("manageJobsWithoutQueueName") else "")
        + ". A Job, JobSet or TrainJob is admitted as one workload: all of its pods or none.\n"
    )
    return "## Job kinds Kueue queues\n\n" + table(["framework", "kind", "CRD installed by"], rows) + note


def _supply_chain(config: PlatformConfig) -> str:
    supply = config.supply_chain
    verification = supply.image_verification
    if verification is None:
        text = "Image signatures are not verified (`supplyChain.imageVerification` is unset).\n"
    else:
        outcome = (
            "refuses unsigned matching images and, while Kyverno cannot answer, tenant pods"
            if verification.mode == "Enforce"
            else "admits unsigned matching images and records them in each namespace's PolicyReports"
        )
        text = (
            f"Kyverno {config.charts['kyverno'].version} ({verification.admission_replicas} admission replicas) checks "
            f"cosign keyless signatures of tenant pods' images in `{verification.mode}` mode: it {outcome}. "
            "Platform namespaces never wait on it.\n\n"
        ) + table(
            ["policy", "images", "signers (issuer: subject)"],
            [
                [
                    f"`gpu-platform-{policy.name}`",
                    ", ".join(f"`{image}`" for image in policy.images),
                    "; ".join(f"{i.issuer}: `{_cell(i.subject or i.subject_reg_exp or '')}`" for i in policy.identities),
                ]
                for policy in verification.policies
            ],
        )
    served = [(tenant, d) for tenant in config.tenants for d in tenant.config.inference if d.serving is not None]
    if served:
        asked = (("digests", supply.require_digests), ("revisions", supply.require_model_revisions))
        required = ", ".join(name for name, on in asked if on)
        text += f"\nPlatform-served model servers ({'required: ' + required if required else 'pinning not required'}):\n\n"
        text += table(
            ["deployment", "image", "by digest", "model revision"],
            [
                [f"`{t.name}/{d.name}`", f"`{d.serving.image}`", "yes" if d.serving.pinned_by_digest else "no",
                 f"`{d.serving.revision}`" if d.serving.revision else "- (the Hub's default branch)"]
                for t, d in served
                if d.serving is not None
            ],
        )
    if config.secrets.enabled:
        text += (
            f"\nTenant secrets: External Secrets Operator {config.charts['external-secrets'].version}. Each tenant namespace's "
            "SecretStore `aws-secrets-manager` reads AWS Secrets Manager secrets named "
            f"`/{config.cluster.name}/<tenant>/*` through role `{config.cluster.name}-secrets-<tenant>`, and nothing else; "
            "tenant admins write ExternalSecrets, never stores.\n"
        )
    return "## Supply chain\n\n" + text


def _cell(text: str) -> str:
    """Text for a table cell: a `|` (a regular expression's alternation) would end the cell."""
    return text.replace("|", "\\|")


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


def _destroy(recording: Recording, config: PlatformConfig) -> str:
    """The commands that take the stack down, in order, and what outlives them.

    `protect` marks the cluster, its KMS key, the VPC and the tenant namespaces, and sets the EKS
    cluster's `deletionProtection`: `pulumi destroy` stops at the first protected resource, and EKS
    refuses DeleteCluster while deletion protection is on. An `up` with protect off clears both first.
    """
    steps = ["`pulumi destroy`", *after_destroy_steps(config)]
    if config.cluster.protect:
        steps = [
            "`pulumi config set --path gpu-platform:cluster.protect false`",
            "`pulumi up`: clears Pulumi's protect flags and the cluster's EKS deletion protection, and changes nothing else",
            *steps,
        ]
    text = "## To destroy this stack\n\n" + "".join(f"{n}. {step}\n" for n, step in enumerate(steps, 1))
    kept = sorted(f"`{r.type}` `{r.name}`" for r in recording.resources if r.retain_on_delete)
    if kept:
        text += (
            "\nKept in the account (account-wide, other stacks may use them; `retainOnDelete`): "
            + ", ".join(kept) + ".\n"
        )
    return text


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
