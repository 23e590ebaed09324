"""The whole stack config: parsed, checked as one, and the numbers everything else reads.

`load_platform_config` takes the stack's raw config map (what `pulumi up` hands the program, or
what the offline engine reads from `Pulumi.<stack>.yaml`) and returns a `PlatformConfig`, or raises
`ConfigError` with every problem found. Nothing is declared before this succeeds.
"""

from __future__ import annotations

import dataclasses
import difflib
import ipaddress
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from pydantic import BaseModel, RootModel, ValidationError

from models.kubernetes.features import DRA_EXTENDED_RESOURCE, enabled_by_default

from .autoscaling import HUB, AutoscalingConfig, check_model_sources
from .capacity import GpuPoolPlan, check_sold_in_region, plan_gpu_pools
from .catalog_prices import on_demand_prices
from .claims import check_claim_templates
from .cluster import ClusterConfig, dra_extended_resource_reason
from .device_classes import check_device_classes
from .dra_devices import class_devices_per_gpu
from .errors import Problems, item_labels, show
from .fair_share import DRA_OPTION, DRA_SERVED_FROM, SECRETS_OPTION, FlavorPlan, TenantPlan, plan_flavors, plan_tenants
from .fleet import FleetConfig
from .headroom import check_snapshot_keys, check_warm_start
from .kai import KAI_SCHEDULER, KaiQueuePlan, kai_pools, plan_kai_queues
from .keys import CONFIG_NAMESPACE
from .monitoring import MonitoringConfig
from .node_pools import CpuPoolConfig, GpuConfig, NodePoolConfig
from .regions import AVAILABILITY_ZONES
from .schedulability import check_schedulability
from .secrets import (
    IAM_ROLE_NAME_LIMIT,
    SecretsConfig,
    tenant_image_pull_role_name,
    tenant_repository_prefix,
    tenant_secrets_role_name,
)
from .supply_chain import SupplyChainConfig
from .system_capacity import INSTANCE_SHAPES, SystemCapacityPlan, capacity_problems, plan_system_capacity
from .tenants import QueueingConfig, TenantConfig, TenantsConfig
from .versions import (
    AddonVersion,
    ChartPin,
    VersionsConfig,
    ami_family_of_node_group,
    resolve_addon_versions,
    resolve_charts,
)

# The first Kubernetes version whose resource.k8s.io API (v1) the NVIDIA DRA driver needs.
DRA_MIN_KUBERNETES = (1, 34)


class NodePoolsConfig(RootModel[list[NodePoolConfig]]):
    """GPU pools: each one a Karpenter NodePool and EC2NodeClass."""


REGION_KEY = "aws:region"
# Config namespaces a stack may hold besides the project's: the providers the program uses and
# Pulumi's own. A key in any other namespace is a typo (`gpu-platfrom:tenants`) that would otherwise be
# ignored, and on an unprotected stack `pulumi up` would then delete what the misspelt section declares.
PROVIDER_NAMESPACES = ("aws", "eks", "kubernetes", "pulumi")

# The top-level keys under `gpu-platform:` and the model of each; a new section adds its key here.
SECTIONS: dict[str, type[BaseModel]] = {
    "cluster": ClusterConfig,
    "nodePools": NodePoolsConfig,
    "cpuPool": CpuPoolConfig,
    "gpu": GpuConfig,
    "queueing": QueueingConfig,
    "tenants": TenantsConfig,
    "monitoring": MonitoringConfig,
    "autoscaling": AutoscalingConfig,
    "supplyChain": SupplyChainConfig,
    "secrets": SecretsConfig,
    "versions": VersionsConfig,
    "fleet": FleetConfig,
}
# Sections that may be left out entirely, and what they mean then.
OPTIONAL_SECTIONS: dict[str, Any] = {
    "nodePools": [], "cpuPool": {}, "gpu": {}, "queueing": {}, "tenants": [], "monitoring": {}, "autoscaling": {},
    "supplyChain": {}, "secrets": {}, "versions": {}, "fleet": {},
}


@dataclass(frozen=True)
class Subnet:
    availability_zone: str
    public_cidr: str
    private_cidr: str


@dataclass(frozen=True)
class NetworkPlan:
    """Derived once from `cluster.network` and the region: which zones, which CIDRs, how many NATs."""

    vpc_cidr: str
    subnets: tuple[Subnet, ...]
    nat_per_az: bool

    @property
    def availability_zones(self) -> tuple[str, ...]:
        return tuple(subnet.availability_zone for subnet in self.subnets)


@dataclass(frozen=True)
class PlatformConfig:
    """The validated stack config plus everything derived from it."""

    region: str
    cluster: ClusterConfig
    versions: VersionsConfig
    network: NetworkPlan
    addon_versions: tuple[AddonVersion, ...]
    gpu_pools: tuple[GpuPoolPlan, ...]
    cpu_pool: CpuPoolConfig
    gpu: GpuConfig
    charts: dict[str, ChartPin]
    queueing: QueueingConfig
    flavors: tuple[FlavorPlan, ...]
    tenants: tuple[TenantPlan, ...]
    monitoring: MonitoringConfig
    autoscaling: AutoscalingConfig
    supply_chain: SupplyChainConfig
    secrets: SecretsConfig
    # The system pods' requests against the system nodes' allocatable (config/system_capacity.py).
    system_capacity: SystemCapacityPlan
    # This stack's place in a MultiKueue fleet (config/fleet.py); role `none` outside one.
    fleet: FleetConfig = dataclasses.field(default_factory=FleetConfig)

    @property
    def tags(self) -> dict[str, str]:
        """Tags for every AWS resource: the stack's own plus who manages it."""
        return {**self.cluster.tags, "gpu-platform/cluster": self.cluster.name, "managed-by": "pulumi"}

    @property
    def uses_spot(self) -> bool:
        """Whether any Karpenter pool, a GPU pool or the CPU pool, may launch spot instances."""
        return self.cpu_pool.uses_spot or any(pool.uses_spot for pool in self.gpu_pools)

    @property
    def snapshot_kms_keys(self) -> tuple[str, ...]:
        """The customer managed KMS keys of the pools' image snapshots, each once: Karpenter's controller,
        which launches the nodes that restore them, needs their use (`warmStart.imageSnapshotKmsKey`)."""
        keys = {pool.config.warm_start.image_snapshot_kms_key for pool in self.gpu_pools}
        return tuple(sorted(key for key in keys if key is not None))

    @property
    def kai_queues(self) -> tuple[KaiQueuePlan, ...]:
        """The KAI Scheduler's Queues (config/kai.py); () when no pool has `scheduler: kai`."""
        return plan_kai_queues(self.gpu_pools, self.tenants)

    @property
    def uses_kai(self) -> bool:
        """Whether any GPU pool is scheduled by KAI: its chart, Queues and guards then exist."""
        return bool(kai_pools(self.gpu_pools))

    @property
    def uses_efa(self) -> bool:
        """Whether any GPU pool asks for EFA: the device plugin and the security group's self egress then exist."""
        return any(pool.config.efa for pool in self.gpu_pools)


def load_platform_config(raw: Mapping[str, Any]) -> PlatformConfig:
    """Parse and check the whole stack config; raise `ConfigError` listing every problem.

    Each section is parsed on its own, then every rule of `RULES` runs, in order, on what parsed.
    """
    problems = Problems()
    for key in sorted(raw):
        _check_key(key, problems)
    parsed = _parse_sections(raw, problems)
    for rule in RULES:
        rule(parsed, problems)
    problems.raise_if_any()
    return _platform_config(parsed)


_Section = TypeVar("_Section", bound=BaseModel)


@dataclass
class ParsedConfig:
    """The sections that parsed, and what the rules derive from them as they run.

    A rule reads a section only when it parsed (`section` returns None otherwise), so one broken
    section never hides the mistakes of another. Rules that derive (pools, flavors, tenant plans) set
    their field for the rules after them.
    """

    region: Any
    sections: dict[str, BaseModel]
    # The tenants that validate on their own, when the tenants section as a whole does not.
    partial_tenants: TenantsConfig | None = None
    system_capacity: SystemCapacityPlan | None = None
    addon_versions: tuple[AddonVersion, ...] = ()
    gpu_pools: tuple[GpuPoolPlan, ...] = ()
    # Every pool is sound: quotas are checked against pools only then, so a broken pool does not show
    # up again as tenants' "no such flavor" or as capacity it never declared.
    pools_ok: bool = False
    flavors: tuple[FlavorPlan, ...] = ()
    tenant_plans: tuple[TenantPlan, ...] = ()

    def section(self, name: str, model: type[_Section]) -> _Section | None:
        value = self.sections.get(name)
        return value if isinstance(value, model) else None

    @property
    def known_region(self) -> str | None:
        return self.region if self.region in AVAILABILITY_ZONES else None


def _parse_sections(raw: Mapping[str, Any], problems: Problems) -> ParsedConfig:
    """Each section of `SECTIONS` through its model; one line per problem, the sound sections kept."""
    parsed = ParsedConfig(region=raw.get(REGION_KEY), sections={})
    for name, model in SECTIONS.items():
        key = f"{CONFIG_NAMESPACE}:{name}"
        value = _decode(raw.get(key))
        if value is None and name in OPTIONAL_SECTIONS:
            value = OPTIONAL_SECTIONS[name]
        if value is None:
            problems.add(key, "required but not set; see the config reference in docs/configuration.md")
            continue
        try:
            parsed.sections[name] = model.model_validate(value)
        except ValidationError as err:
            problems.add_validation_error(key, model, err, value)
            if model is TenantsConfig and isinstance(value, list):
                # The tenants that are sound are still checked against pools and each other, so a second
                # tenant's over-quota shows up in the same run as the first tenant's typo.
                sound = [tenant for tenant in value if _validates(TenantConfig, tenant)]
                parsed.partial_tenants = TenantsConfig.model_validate(sound)
    return parsed


# --- cross-section rules, run in this order ------------------------------------------------------------


def _rule_region(parsed: ParsedConfig, problems: Problems) -> None:
    """`aws:region` is set and config/regions.py knows its zones."""
    if not parsed.region:
        problems.add(REGION_KEY, "required but not set; e.g. `pulumi config set aws:region us-west-2`")
    elif parsed.region not in AVAILABILITY_ZONES:
        problems.add(
            REGION_KEY,
            f"{show(parsed.region)} is not in config/regions.py; use one of {', '.join(AVAILABILITY_ZONES)} "
            "or add its zones there",
        )


def _rule_cluster(parsed: ParsedConfig, problems: Problems) -> None:
    """The cluster's own cross-field rules, then the system nodes sized for what runs on them."""
    cluster = parsed.section("cluster", ClusterConfig)
    if cluster is None:
        return
    problems_before_cluster = len(problems.lines)
    _check_cluster(cluster, parsed.known_region, problems)
    versions, monitoring = parsed.section("versions", VersionsConfig), parsed.section("monitoring", MonitoringConfig)
    # Sized only when the system node group itself is sound: a wrong architecture says enough.
    if len(problems.lines) == problems_before_cluster and versions is not None and monitoring is not None:
        parsed.system_capacity = _check_system_capacity(
            cluster, versions, monitoring, parsed.sections.get("supplyChain"), parsed.sections.get("secrets"),
            parsed.section("nodePools", NodePoolsConfig), problems,
        )


def _rule_addon_versions(parsed: ParsedConfig, problems: Problems) -> None:
    """The EKS add-ons' versions for the cluster's Kubernetes version."""
    cluster, versions = parsed.section("cluster", ClusterConfig), parsed.section("versions", VersionsConfig)
    if cluster is not None and versions is not None:
        parsed.addon_versions = resolve_addon_versions(cluster.kubernetes_version, versions)


def _rule_gpu_pools(parsed: ParsedConfig, problems: Problems) -> None:
    """Each GPU pool planned (config/capacity.py) under the stack's MIG strategy."""
    pools, gpu = parsed.section("nodePools", NodePoolsConfig), parsed.section("gpu", GpuConfig)
    problems_before_pools = len(problems.lines)
    if pools is not None and gpu is not None:
        cluster = parsed.section("cluster", ClusterConfig)
        protected = cluster.protect if cluster is not None else True
        check_sold_in_region(pools.root, f"{CONFIG_NAMESPACE}:nodePools", parsed.region or "", problems)
        planned = plan_gpu_pools(pools.root, f"{CONFIG_NAMESPACE}:nodePools", protected, gpu.mig_strategy, problems)
        parsed.gpu_pools = tuple(replace(pool, prices=on_demand_prices(parsed.region or "")) for pool in planned)
        check_warm_start(parsed.gpu_pools, f"{CONFIG_NAMESPACE}:nodePools", problems)
        check_snapshot_keys(parsed.gpu_pools, f"{CONFIG_NAMESPACE}:nodePools", parsed.region or "", problems)
    parsed.pools_ok = pools is not None and len(problems.lines) == problems_before_pools


def _rule_gpu(parsed: ParsedConfig, problems: Problems) -> None:
    """DRA against the cluster's Kubernetes version and the pools (`_check_gpu`)."""
    gpu, cluster = parsed.section("gpu", GpuConfig), parsed.section("cluster", ClusterConfig)
    if gpu is not None and cluster is not None:
        _check_gpu(gpu, cluster, parsed.gpu_pools, problems)


def _rule_queues(parsed: ParsedConfig, problems: Problems) -> None:
    """Flavors from the pools, tenant plans against the flavors, and whether every tenant's pods can schedule."""
    queueing = parsed.section("queueing", QueueingConfig)
    if queueing is None or not parsed.pools_ok:
        return
    parsed.flavors = plan_flavors(parsed.gpu_pools, queueing, problems)
    # Tenants are checked even when the cluster section is broken (its admins then count as none), or
    # when some tenants are: independent mistakes are all reported in one run.
    cluster = parsed.section("cluster", ClusterConfig)
    admins = cluster.admins if cluster is not None else []
    creator = cluster.creator if cluster is not None else None
    tenants = parsed.section("tenants", TenantsConfig)
    checked = tenants if tenants is not None else parsed.partial_tenants
    secrets, gpu = parsed.section("secrets", SecretsConfig), parsed.section("gpu", GpuConfig)
    # resource.k8s.io/v1 is served by default from 1.34 (DRA is GA there), DRA driver or not, and the
    # built-in `edit` role lets a tenant admin create ResourceClaims there (upstream/kubernetes-rbac).
    dra_served = cluster is not None and tuple(map(int, cluster.kubernetes_version.split("."))) >= DRA_SERVED_FROM
    options = frozenset(
        option for option, on in ((SECRETS_OPTION, secrets is not None and secrets.enabled),
                                  (DRA_OPTION, dra_served or (gpu is not None and gpu.dra.enabled))) if on
    )
    if checked is not None:
        plans = plan_tenants(
            checked.root,
            parsed.flavors,
            queueing,
            admins,
            problems,
            creator,
            complete=checked is tenants,
            options=options,
            class_devices_per_gpu=None if gpu is None else class_devices_per_gpu(gpu.dra),
        )
        parsed.tenant_plans = plans if checked is tenants else ()
        check_schedulability(parsed.flavors, plans, parsed.gpu_pools, problems)


def _rule_time_slice_tenants(parsed: ParsedConfig, problems: Problems) -> None:
    pools = parsed.section("nodePools", NodePoolsConfig)
    if pools is not None:
        _check_time_slice_tenants(pools, parsed.tenant_plans, problems)


def _rule_cpu_pool_quotas(parsed: ParsedConfig, problems: Problems) -> None:
    cpu_pool, tenants = parsed.section("cpuPool", CpuPoolConfig), parsed.section("tenants", TenantsConfig)
    if cpu_pool is not None and tenants is not None:
        _check_cpu_pool_quotas(tenants, cpu_pool, problems)


def _rule_claim_templates(parsed: ParsedConfig, problems: Problems) -> None:
    """Each DRA claim template lives in a tenant's namespace and can be satisfied by a DRA pool."""
    gpu, tenants = parsed.section("gpu", GpuConfig), parsed.section("tenants", TenantsConfig)
    if gpu is None or tenants is None:
        return
    names = [tenant.name for tenant in tenants.root]
    templates = item_labels(gpu.dra.claim_templates)
    for index, template in enumerate(gpu.dra.claim_templates):
        if template.namespace not in names:
            problems.add(
                f"{CONFIG_NAMESPACE}:gpu.dra.claimTemplates[{templates[index]}].namespace",
                f"{show(template.namespace)} is not a tenant's namespace ({', '.join(names) or 'no tenants'})",
            )
    if gpu.dra.enabled:
        check_claim_templates(gpu.dra, parsed.tenant_plans, parsed.gpu_pools, problems)
    check_device_classes(gpu.dra, parsed.tenant_plans, parsed.gpu_pools, problems)


def _rule_serving(parsed: ParsedConfig, problems: Problems) -> None:
    tenants = parsed.section("tenants", TenantsConfig)
    supply_chain, secrets = parsed.section("supplyChain", SupplyChainConfig), parsed.section("secrets", SecretsConfig)
    if tenants is not None and supply_chain is not None and secrets is not None:
        _check_serving(tenants, supply_chain, secrets, problems)


def _rule_model_sources(parsed: ParsedConfig, problems: Problems) -> None:
    tenants, autoscaling = parsed.section("tenants", TenantsConfig), parsed.section("autoscaling", AutoscalingConfig)
    if tenants is not None and autoscaling is not None:
        check_model_sources(tenants.root, autoscaling, f"{CONFIG_NAMESPACE}:tenants", problems)


def _rule_secrets_roles(parsed: ParsedConfig, problems: Problems) -> None:
    tenants, secrets = parsed.section("tenants", TenantsConfig), parsed.section("secrets", SecretsConfig)
    cluster = parsed.section("cluster", ClusterConfig)
    if tenants is not None and secrets is not None and cluster is not None:
        _check_secrets_roles(tenants, secrets, cluster, problems)


def _rule_node_repositories(parsed: ParsedConfig, problems: Problems) -> None:
    tenants, supply_chain = parsed.section("tenants", TenantsConfig), parsed.section("supplyChain", SupplyChainConfig)
    if tenants is not None and supply_chain is not None:
        _check_node_repositories(tenants, supply_chain, problems)


def _rule_fleet_credentials(parsed: ParsedConfig, problems: Problems) -> None:
    """A manager reads each worker's token from Secrets Manager through External Secrets, so it needs them."""
    fleet, secrets = parsed.section("fleet", FleetConfig), parsed.section("secrets", SecretsConfig)
    if fleet is not None and fleet.role == "manager" and secrets is not None and not secrets.enabled:
        problems.add(
            f"{CONFIG_NAMESPACE}:secrets.enabled",
            "false on a fleet manager, which reads each worker's token from Secrets Manager through External "
            "Secrets: set it to true",
        )


# The order is the order of the problem lines, and a deriving rule runs before the rules that read it.
RULES: tuple[Callable[[ParsedConfig, Problems], None], ...] = (
    _rule_region,
    _rule_cluster,
    _rule_addon_versions,
    _rule_gpu_pools,
    _rule_gpu,
    _rule_queues,
    _rule_time_slice_tenants,
    _rule_cpu_pool_quotas,
    _rule_claim_templates,
    _rule_serving,
    _rule_model_sources,
    _rule_secrets_roles,
    _rule_node_repositories,
    _rule_fleet_credentials,
)


def _platform_config(parsed: ParsedConfig) -> PlatformConfig:
    """The config once no rule found a problem: every section parsed, everything derived."""
    region, sections = parsed.region, parsed.sections
    cluster, versions = sections["cluster"], sections["versions"]
    gpu, queueing, cpu_pool = sections["gpu"], sections["queueing"], sections["cpuPool"]
    monitoring, autoscaling = sections["monitoring"], sections["autoscaling"]
    supply_chain, secrets = sections["supplyChain"], sections["secrets"]
    assert isinstance(region, str) and parsed.system_capacity is not None
    assert isinstance(cluster, ClusterConfig) and isinstance(versions, VersionsConfig)
    assert isinstance(gpu, GpuConfig) and isinstance(queueing, QueueingConfig) and isinstance(cpu_pool, CpuPoolConfig)
    assert isinstance(monitoring, MonitoringConfig) and isinstance(autoscaling, AutoscalingConfig)
    assert isinstance(supply_chain, SupplyChainConfig) and isinstance(secrets, SecretsConfig)
    return PlatformConfig(
        region=region,
        cluster=cluster,
        versions=versions,
        network=plan_network(cluster, AVAILABILITY_ZONES[region]),
        addon_versions=parsed.addon_versions,
        gpu_pools=parsed.gpu_pools,
        cpu_pool=cpu_pool,
        gpu=gpu,
        charts=resolve_charts(versions),
        queueing=queueing,
        flavors=parsed.flavors,
        tenants=parsed.tenant_plans,
        monitoring=monitoring,
        autoscaling=autoscaling,
        supply_chain=supply_chain,
        secrets=secrets,
        system_capacity=parsed.system_capacity,
        fleet=sections["fleet"],  # type: ignore[arg-type]
    )


def plan_network(cluster: ClusterConfig, region_zones: tuple[str, ...]) -> NetworkPlan:
    """Carve the VPC: one private /(n+3) per zone for nodes and pods, public subnets from the last block.

    A /16 gives each zone a /19 private subnet (8,190 addresses: the VPC CNI gives every pod a VPC
    address) and a /22 public subnet for load balancers and NAT gateways.
    """
    network = cluster.network
    vpc = ipaddress.IPv4Network(network.vpc_cidr)
    blocks = list(vpc.subnets(prefixlen_diff=3))
    public_block = blocks[-1]
    public_subnets = list(public_block.subnets(prefixlen_diff=3))
    zones = tuple(network.availability_zones or region_zones)[: network.az_count]
    return NetworkPlan(
        vpc_cidr=str(vpc),
        subnets=tuple(
            Subnet(availability_zone=zone, public_cidr=str(public_subnets[i]), private_cidr=str(blocks[i]))
            for i, zone in enumerate(zones)
        ),
        nat_per_az=network.nat_gateways == "perAz",
    )


def _check_cluster(cluster: ClusterConfig, region: str | None, problems: Problems) -> None:
    """Rules that span fields of `gpu-platform:cluster`."""
    root = f"{CONFIG_NAMESPACE}:cluster"
    nodes = cluster.system_nodes
    if not nodes.min_size <= nodes.desired_size <= nodes.max_size:
        problems.add(
            f"{root}.systemNodes.desiredSize",
            f"{nodes.desired_size} must lie between minSize ({nodes.min_size}) and maxSize ({nodes.max_size})",
        )
    bottlerocket = ami_family_of_node_group(nodes.ami_type) == "bottlerocket"
    if nodes.release_version is not None and not bottlerocket:
        problems.add(
            f"{root}.systemNodes.releaseVersion",
            f"{show(nodes.release_version)} on {nodes.ami_type} system nodes, which run the AMI release config/versions.py "
            "pins for the cluster's minor (NODE_GROUP_RELEASE_VERSIONS): remove releaseVersion",
        )
    if nodes.release_version is None and bottlerocket and cluster.protect:
        problems.add(
            f"{root}.systemNodes.releaseVersion",
            f"not set on {nodes.ami_type} system nodes of a production stack (protect: true): EKS would take whatever "
            "Bottlerocket release is newest at each update; pin one, e.g. the output of `aws ssm get-parameter --name "
            "/aws/service/bottlerocket/aws-k8s-<minor>/x86_64/latest/image_version --query Parameter.Value`",
        )
    arm = nodes.ami_type.endswith("ARM_64_STANDARD") or nodes.ami_type.endswith("ARM_64")
    for index, instance_type in enumerate(nodes.instance_types):
        if _is_graviton(instance_type) != arm:
            problems.add(
                f"{root}.systemNodes.instanceTypes[{index}]",
                f"{show(instance_type)} is {'arm64' if _is_graviton(instance_type) else 'x86_64'} but amiType "
                f"{nodes.ami_type} is {'arm64' if arm else 'x86_64'}; pick instance types of one architecture",
            )
    if region is not None and cluster.network.availability_zones:
        listed = cluster.network.availability_zones
        for index, zone in enumerate(listed):
            if not re.fullmatch(re.escape(region) + "[a-z]", zone):
                problems.add(
                    f"{root}.network.availabilityZones[{index}]",
                    f"{show(zone)} is not a zone name of {region}: the region and a letter, e.g. {region}a",
                )
        if cluster.network.az_count > len(listed):
            problems.add(
                f"{root}.network.azCount",
                f"{cluster.network.az_count} exceeds the {len(listed)} zones availabilityZones lists; list more, or "
                f"lower azCount to {len(listed)}",
            )
    elif region is not None:
        available = AVAILABILITY_ZONES[region]
        if cluster.network.az_count > len(available):
            problems.add(
                f"{root}.network.azCount",
                f"{cluster.network.az_count} exceeds the {len(available)} availability zones of {region} "
                f"({', '.join(available)}); use 2 to {len(available)}",
            )


def _check_system_capacity(
    cluster: ClusterConfig,
    versions: VersionsConfig,
    monitoring: MonitoringConfig,
    supply_chain: BaseModel | None,
    secrets: BaseModel | None,
    pools: NodePoolsConfig | None,
    problems: Problems,
) -> SystemCapacityPlan | None:
    """The controllers, add-ons and DaemonSets on the system nodes must fit `minSize` nodes of the smallest type."""
    root = f"{CONFIG_NAMESPACE}:cluster.systemNodes"
    nodes = cluster.system_nodes
    unknown = [(i, name) for i, name in enumerate(nodes.instance_types) if name not in INSTANCE_SHAPES]
    for index, name in unknown:
        families = sorted({known.split(".")[0] for known in INSTANCE_SHAPES})
        problems.add(
            f"{root}.instanceTypes[{index}]",
            f"{show(name)} has no row in config/system_capacity.py INSTANCE_SHAPES, so its allocatable is unknown; "
            f"use {', '.join(families)} in sizes large to 4xlarge, or add its vCPUs, memory and ENIs there",
        )
    if unknown:
        return None
    verification = supply_chain.image_verification if isinstance(supply_chain, SupplyChainConfig) else None
    plan = plan_system_capacity(
        nodes.instance_types,
        nodes.min_size,
        resolve_charts(versions),
        monitoring.replicas,
        kyverno_replicas=verification.admission_replicas if verification is not None else None,
        external_secrets=isinstance(secrets, SecretsConfig) and secrets.enabled,
        kai=pools is not None and any(pool.scheduler == KAI_SCHEDULER for pool in pools.root),
    )
    for path, message in capacity_problems(plan, root):
        problems.add(path, message)
    return plan


def _check_cpu_pool_quotas(tenants: TenantsConfig, cpu_pool: CpuPoolConfig, problems: Problems) -> None:
    """Tenants' nominal CPU and memory, summed in tenant order, must fit the CPU pool's NodePool limits.

    Each tenant's `cpu` and `memoryGiB` are its nominal quota on the `cpu` flavor, which only the CPU pool
    serves; Karpenter launches no node past `cpuLimit`/`memoryLimitGiB`, so quota beyond them is admitted
    by Kueue and then stays Pending, as a GPU quota past its pool's `gpus` would.
    """
    labels = item_labels(tenants.root)
    for field, key, limit_key, limit, unit in (
        ("cpu", "cpu", "cpuLimit", cpu_pool.cpu_limit, "vCPUs"),
        ("memory_gib", "memoryGiB", "memoryLimitGiB", cpu_pool.memory_limit_gib, "GiB"),
    ):
        amounts = [getattr(tenant, field) for tenant in tenants.root]
        promised = 0
        for index, amount in enumerate(amounts):
            promised += amount
            if amount and promised > limit:
                # The first tenant past the limit names the key; the fix covers every tenant's quota.
                problems.add(
                    f"{CONFIG_NAMESPACE}:tenants[{labels[index]}].{key}",
                    f"{amount} {unit} makes {promised} promised on the CPU pool, whose {limit_key} is {limit}: "
                    f"lower the quota or raise {CONFIG_NAMESPACE}:cpuPool.{limit_key} to {sum(amounts)}",
                )
                break


def _check_time_slice_tenants(pools: NodePoolsConfig, tenants: Sequence[TenantPlan], problems: Problems) -> None:
    """A time-sliced pool, or one KAI shares in fractions, serves one tenant unless it says `shareBetweenTenants`.

    Time slices of a GPU share its memory and its faults: one tenant's pod can read another's memory
    or take it down. A tenant holds quota on a pool when any flavor of it gives the tenant nominal or
    borrowing units.
    """
    for pool in pools.root:
        kai = pool.scheduler == "kai"
        if (pool.sharing.mode != "timeSlicing" and not kai) or pool.sharing.share_between_tenants:
            continue
        holders: list[tuple[int, str, str]] = []
        for position, tenant in enumerate(tenants):
            for quota in tenant.quotas:
                if quota.flavor.pool.name == pool.name and (quota.quota.nominal or quota.quota.borrowing_limit):
                    holders.append((position, tenant.name, quota.flavor.name))
                    break
        if len({name for _, name, _ in holders}) > 1:
            position, name, flavor = holders[1]
            shares = "KAI's fractions" if kai else "time slices"
            problems.add(
                f"{CONFIG_NAMESPACE}:tenants[{name}].gpu.{flavor}",
                f"gives {name} {shares} of pool {pool.name}, which {holders[0][1]} holds quota on too; {shares} share "
                f"a GPU's memory and faults between tenants: give the pool to one tenant or set "
                f"{CONFIG_NAMESPACE}:nodePools[{pool.name}].sharing.shareBetweenTenants: true",
            )


def _check_gpu(gpu: GpuConfig, cluster: ClusterConfig, pools: Sequence[GpuPoolPlan], problems: Problems) -> None:
    """DRA needs its Kubernetes version, a pool to allocate from, and templates that can be satisfied."""
    version = tuple(int(part) for part in cluster.kubernetes_version.split("."))
    if gpu.dra.enabled and version < DRA_MIN_KUBERNETES:
        problems.add(
            f"{CONFIG_NAMESPACE}:gpu.dra.enabled",
            f"true needs Kubernetes 1.34 or newer (resource.k8s.io/v1); the cluster runs {cluster.kubernetes_version}: "
            "upgrade cluster.kubernetesVersion or set dra.enabled: false",
        )
    if gpu.dra.enabled and enabled_by_default(DRA_EXTENDED_RESOURCE, cluster.kubernetes_version):
        problems.add(
            f"{CONFIG_NAMESPACE}:cluster.kubernetesVersion",
            f"{cluster.kubernetes_version} with gpu.dra.enabled: {dra_extended_resource_reason()}",
        )
    dra_pools = [pool for pool in pools if pool.config.allocation == "dra"]
    for pool in pools:
        if pool.config.allocation != "dra":
            continue
        key = f"{CONFIG_NAMESPACE}:nodePools[{pool.name}].allocation"
        if not gpu.dra.enabled:
            problems.add(key, f"'dra' on pool {pool.name} needs {CONFIG_NAMESPACE}:gpu.dra.enabled: true")
        if pool.config.ami_family == "bottlerocket":
            problems.add(key, f"'dra' on pool {pool.name}: Bottlerocket runs its own device plugin; use amiFamily al2023")
        if pool.config.sharing.mode == "timeSlicing":
            # models/nvidia/dra_driver.py (sharing) and models/kueue/workload.py (NAMED_CLAIM_REASON).
            problems.add(
                key,
                f"'dra' on pool {pool.name}: the DRA driver time-slices a GPU only behind its alpha TimeSlicingSettings "
                "gate (off in v0.4.1), and only among pods sharing one named claim, which Kueue never admits; use "
                "sharing none or mig",
            )
    seen: set[tuple[str, str]] = set()
    # Each template's resource is named `<namespace>-<name>` (components/gpu_operator.py), so
    # ml/a-b and ml-a/b would declare one URN twice.
    joined: dict[str, tuple[str, str]] = {}
    templates = item_labels(gpu.dra.claim_templates)
    for index, template in enumerate(gpu.dra.claim_templates):
        key = f"{CONFIG_NAMESPACE}:gpu.dra.claimTemplates[{templates[index]}]"
        if (template.namespace, template.name) in seen:
            problems.add(f"{key}.name", f"{template.namespace}/{template.name} is declared twice")
        seen.add((template.namespace, template.name))
        other = joined.setdefault(f"{template.namespace}-{template.name}", (template.namespace, template.name))
        if other != (template.namespace, template.name):
            problems.add(
                f"{key}.name",
                f"{template.namespace}/{template.name} and {other[0]}/{other[1]} would both name their resource "
                f"{template.namespace}-{template.name}: rename one of the templates",
            )
    if gpu.dra.claim_templates and not dra_pools:
        problems.add(
            f"{CONFIG_NAMESPACE}:gpu.dra.claimTemplates", "no pool has allocation: dra, so no claim could ever be satisfied"
        )


def _check_serving(tenants: TenantsConfig, supply_chain: SupplyChainConfig, secrets: SecretsConfig, problems: Problems) -> None:
    """What `supplyChain` asks of the model servers the platform declares, and the secrets they name."""
    labels = item_labels(tenants.root)
    for i, tenant in enumerate(tenants.root):
        deployments = item_labels(tenant.inference)
        for j, deployment in enumerate(tenant.inference):
            serving = deployment.serving
            if serving is None:
                continue
            key = f"{CONFIG_NAMESPACE}:tenants[{labels[i]}].inference[{deployments[j]}].serving"
            if supply_chain.require_digests and not serving.pinned_by_digest:
                problems.add(
                    f"{key}.image",
                    f"{show(serving.image)} has no @sha256: digest and supplyChain.requireDigests is true: "
                    f"pin it as '{serving.image}@sha256:<digest>' (`crane digest {serving.image}` prints it)",
                )
            if supply_chain.require_model_revisions and serving.revision is None and serving.model_source == HUB:
                problems.add(
                    f"{key}.revision",
                    f"not set and supplyChain.requireModelRevisions is true: name the commit of {serving.model} "
                    "to serve (the Hub's `main` moves)",
                )
            if serving.hf_token_secret is not None and not secrets.enabled:
                problems.add(
                    f"{key}.hfTokenSecret",
                    f"{show(serving.hf_token_secret)} needs {CONFIG_NAMESPACE}:secrets.enabled: true, which reads it from "
                    "AWS Secrets Manager",
                )


def _check_secrets_roles(tenants: TenantsConfig, secrets: SecretsConfig, cluster: ClusterConfig, problems: Problems) -> None:
    """Each tenant's secrets role (`<cluster>-secrets-<tenant>`) and image-pull role (`<cluster>-image-pull-<tenant>`)
    fit IAM's 64 characters; one line per tenant, for the longer name."""
    if not secrets.enabled:
        return
    labels = item_labels(tenants.root)
    for i, tenant in enumerate(tenants.root):
        for kind, role in (
            ("image-pull", tenant_image_pull_role_name(cluster.name, tenant.name)),
            ("secrets", tenant_secrets_role_name(cluster.name, tenant.name)),
        ):
            if len(role) > IAM_ROLE_NAME_LIMIT:
                problems.add(
                    f"{CONFIG_NAMESPACE}:tenants[{labels[i]}].name",
                    f"{show(tenant.name)} makes its {kind} role '{role}', {len(role)} characters; IAM allows "
                    f"{IAM_ROLE_NAME_LIMIT}: shorten the tenant or cluster name by {len(role) - IAM_ROLE_NAME_LIMIT}",
                )
                break


def _check_node_repositories(tenants: TenantsConfig, supply_chain: SupplyChainConfig, problems: Problems) -> None:
    """No node repository prefix reaches into a tenant's repositories (`<tenant>/...`): every node would pull them
    with its own role, for any tenant's pod."""
    for i, prefix in enumerate(supply_chain.node_repositories):
        for tenant in tenants.root:
            own = tenant_repository_prefix(tenant.name)
            if own.startswith(prefix) or prefix.startswith(own):
                problems.add(
                    f"{CONFIG_NAMESPACE}:supplyChain.nodeRepositories[{i}]",
                    f"{show(prefix)} covers tenant {tenant.name}'s private repositories ({own}...), which every node "
                    "could then pull for any tenant's pod: move the platform's images under a prefix no tenant is named",
                )


def _validates(model: type[BaseModel], value: Any) -> bool:
    try:
        model.model_validate(value)
    except ValidationError:
        return False
    return True


def _check_key(key: str, problems: Problems) -> None:
    """A key names a section of the project or lives in a provider's namespace; anything else is a typo."""
    namespace, _, name = key.partition(":")
    known = [f"{CONFIG_NAMESPACE}:{section}" for section in SECTIONS]
    if namespace == CONFIG_NAMESPACE and name not in SECTIONS:
        guess = difflib.get_close_matches(key, known, n=1)
        hint = f"did you mean {guess[0]}? " if guess else ""
        problems.add(key, f"unknown key; {hint}known keys: {', '.join(known)}")
    elif namespace != CONFIG_NAMESPACE and namespace not in PROVIDER_NAMESPACES:
        guess = difflib.get_close_matches(key, known, n=1) or (
            [f"{CONFIG_NAMESPACE}:{name}"] if difflib.get_close_matches(namespace, [CONFIG_NAMESPACE], n=1) else []
        )
        hint = f"did you mean {guess[0]}? " if guess else ""
        problems.add(
            key,
            f"unknown namespace {show(namespace)}; {hint}keys belong to {CONFIG_NAMESPACE} or a provider "
            f"({', '.join(PROVIDER_NAMESPACES)}), and a key in any other namespace would be ignored",
        )


def _is_graviton(instance_type: str) -> bool:
    """m7g.large, c8gd.xlarge, r6gn.large are arm64: the family's suffix after the generation has a 'g'."""
    family = instance_type.split(".")[0]
    digits = [i for i, ch in enumerate(family) if ch.isdigit()]
    return bool(digits) and "g" in family[digits[0] + 1 :]


def _decode(value: Any) -> Any:
    """Structured stack config reaches a Pulumi program as JSON text; offline it may already be parsed.

    A section left empty (`gpu-platform:tenants:` with every entry commented out) arrives as `null`
    and means the section is not set.
    """
    if isinstance(value, str) and value.strip() == "null":
        return None
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value
