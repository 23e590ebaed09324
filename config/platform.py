"""The whole stack config: parsed, checked as one, and the numbers everything else reads.

`load_platform_config` takes the stack's raw config map (what `pulumi up` hands the program, or
what the offline engine reads from `Pulumi.<stack>.yaml`) and returns a `PlatformConfig`, or raises
`ConfigError` with every problem found. Nothing is declared before this succeeds.
"""

from __future__ import annotations

import difflib
import ipaddress
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, RootModel, ValidationError

from .autoscaling import HUB, AutoscalingConfig, check_model_sources
from .capacity import GpuPoolPlan, plan_gpu_pools
from .claims import check_claim_templates
from .cluster import ClusterConfig
from .errors import Problems, item_labels, show
from .fair_share import FlavorPlan, TenantPlan, plan_flavors, plan_tenants
from .headroom import check_warm_start
from .monitoring import MonitoringConfig
from .node_pools import CpuPoolConfig, GpuConfig, NodePoolConfig
from .regions import AVAILABILITY_ZONES
from .schedulability import check_schedulability
from .secrets import IAM_ROLE_NAME_LIMIT, SecretsConfig, tenant_secrets_role_name
from .supply_chain import SupplyChainConfig
from .system_capacity import INSTANCE_SHAPES, SystemCapacityPlan, capacity_problems, plan_system_capacity
from .tenants import QueueingConfig, TenantConfig, TenantsConfig
from .versions import AddonVersion, ChartPin, VersionsConfig, resolve_addon_versions, resolve_charts

# The first Kubernetes version whose resource.k8s.io API (v1) the NVIDIA DRA driver needs.
DRA_MIN_KUBERNETES = (1, 34)


class NodePoolsConfig(RootModel[list[NodePoolConfig]]):
    """GPU pools: each one a Karpenter NodePool and EC2NodeClass."""

NAMESPACE = "gpu-platform"
REGION_KEY = "aws:region"
# Config namespaces a stack may hold besides the project's: the providers the program uses and
# Pulumi's own. A key in any other namespace is a typo (`gpu-platfrom:tenants`) that would otherwise be
# ignored, and on an unprotected stack `pulumi up` would then delete what the misspelt section declares.
PROVIDER_NAMESPACES = ("aws", "eks", "kubernetes", "pulumi")

# The top-level keys under `gpu-platform:` and the model of each. Later capabilities add theirs here.
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
}
# Sections that may be left out entirely, and what they mean then.
OPTIONAL_SECTIONS: dict[str, Any] = {
    "nodePools": [], "cpuPool": {}, "gpu": {}, "queueing": {}, "tenants": [], "monitoring": {}, "autoscaling": {},
    "supplyChain": {}, "secrets": {}, "versions": {},
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

    @property
    def tags(self) -> dict[str, str]:
        """Tags for every AWS resource: the stack's own plus who manages it."""
        return {**self.cluster.tags, "gpu-platform/cluster": self.cluster.name, "managed-by": "pulumi"}

    @property
    def uses_spot(self) -> bool:
        """Whether any Karpenter pool, a GPU pool or the CPU pool, may launch spot instances."""
        return self.cpu_pool.uses_spot or any(pool.uses_spot for pool in self.gpu_pools)

    @property
    def uses_efa(self) -> bool:
        """Whether any GPU pool asks for EFA: the device plugin and the security group's self egress then exist."""
        return any(pool.config.efa for pool in self.gpu_pools)

    @property
    def creates_spot_service_linked_role(self) -> bool:
        """Spot launches need the account's spot service-linked role; the stack creates it unless told it exists."""
        return self.uses_spot and self.cluster.create_spot_service_linked_role


def load_platform_config(raw: Mapping[str, Any]) -> PlatformConfig:
    """Parse and check the whole stack config; raise `ConfigError` listing every problem."""
    problems = Problems()
    sections: dict[str, BaseModel] = {}
    partial_tenants: TenantsConfig | None = None

    for key in sorted(raw):
        _check_key(key, problems)

    for name, model in SECTIONS.items():
        key = f"{NAMESPACE}:{name}"
        value = _decode(raw.get(key))
        if value is None and name in OPTIONAL_SECTIONS:
            value = OPTIONAL_SECTIONS[name]
        if value is None:
            problems.add(key, "required but not set; see the config reference in README.md")
            continue
        try:
            sections[name] = model.model_validate(value)
        except ValidationError as err:
            problems.add_validation_error(key, model, err, value)
            if model is TenantsConfig and isinstance(value, list):
                # The tenants that are sound are still checked against pools and each other, so a second
                # tenant's over-quota shows up in the same run as the first tenant's typo.
                sound = [tenant for tenant in value if _validates(TenantConfig, tenant)]
                partial_tenants = TenantsConfig.model_validate(sound)

    region = raw.get(REGION_KEY)
    if not region:
        problems.add(REGION_KEY, "required but not set; e.g. `pulumi config set aws:region us-west-2`")
    elif region not in AVAILABILITY_ZONES:
        problems.add(
            REGION_KEY,
            f"{show(region)} is not in config/regions.py; use one of {', '.join(AVAILABILITY_ZONES)} or add its zones there",
        )

    cluster = sections.get("cluster")
    versions = sections.get("versions")
    addon_versions: tuple[AddonVersion, ...] = ()
    gpu_pools: tuple[GpuPoolPlan, ...] = ()
    system_capacity: SystemCapacityPlan | None = None
    if isinstance(cluster, ClusterConfig):
        problems_before_cluster = len(problems.lines)
        _check_cluster(cluster, region if region in AVAILABILITY_ZONES else None, problems)
        monitoring_section = sections.get("monitoring")
        # Sized only when the system node group itself is sound: a wrong architecture says enough.
        system_nodes_ok = len(problems.lines) == problems_before_cluster
        if system_nodes_ok and isinstance(versions, VersionsConfig) and isinstance(monitoring_section, MonitoringConfig):
            system_capacity = _check_system_capacity(
                cluster, versions, monitoring_section, sections.get("supplyChain"), sections.get("secrets"), problems
            )
    if isinstance(cluster, ClusterConfig) and isinstance(versions, VersionsConfig):
        addon_versions = resolve_addon_versions(cluster.kubernetes_version, versions)
    pools = sections.get("nodePools")
    gpu = sections.get("gpu")
    problems_before_pools = len(problems.lines)
    if isinstance(pools, NodePoolsConfig) and isinstance(gpu, GpuConfig):
        protected = cluster.protect if isinstance(cluster, ClusterConfig) else True
        gpu_pools = plan_gpu_pools(pools.root, f"{NAMESPACE}:nodePools", protected, gpu.mig_strategy, problems)
        check_warm_start(gpu_pools, f"{NAMESPACE}:nodePools", problems)
    # Quotas are checked against pools only when every pool is sound: a broken pool would otherwise
    # show up again as tenants' "no such flavor" or as capacity it never declared.
    pools_ok = isinstance(pools, NodePoolsConfig) and len(problems.lines) == problems_before_pools
    if isinstance(gpu, GpuConfig) and isinstance(cluster, ClusterConfig):
        _check_gpu(gpu, cluster, gpu_pools, problems)
    queueing = sections.get("queueing")
    tenants = sections.get("tenants")
    flavors: tuple[FlavorPlan, ...] = ()
    tenant_plans: tuple[TenantPlan, ...] = ()
    if isinstance(queueing, QueueingConfig) and pools_ok:
        flavors = plan_flavors(gpu_pools, queueing, problems)
        # Tenants are checked even when the cluster section is broken (its admins then count as none), or
        # when some tenants are: independent mistakes are all reported in one run.
        admins = cluster.admins if isinstance(cluster, ClusterConfig) else []
        creator = cluster.creator if isinstance(cluster, ClusterConfig) else None
        checked = tenants if isinstance(tenants, TenantsConfig) else partial_tenants
        if checked is not None:
            plans = plan_tenants(checked.root, flavors, queueing, admins, problems, creator, complete=checked is tenants)
            tenant_plans = plans if checked is tenants else ()
            check_schedulability(flavors, plans, gpu_pools, problems)
    if isinstance(pools, NodePoolsConfig):
        _check_time_slice_tenants(pools, tenant_plans, problems)
    if isinstance(gpu, GpuConfig) and isinstance(tenants, TenantsConfig):
        names = [tenant.name for tenant in tenants.root]
        templates = item_labels(gpu.dra.claim_templates)
        for index, template in enumerate(gpu.dra.claim_templates):
            if template.namespace not in names:
                problems.add(
                    f"{NAMESPACE}:gpu.dra.claimTemplates[{templates[index]}].namespace",
                    f"{show(template.namespace)} is not a tenant's namespace ({', '.join(names) or 'no tenants'})",
                )
        if gpu.dra.enabled:
            check_claim_templates(gpu.dra.claim_templates, tenant_plans, gpu_pools, problems)
    supply_chain, secrets = sections.get("supplyChain"), sections.get("secrets")
    if isinstance(tenants, TenantsConfig) and isinstance(supply_chain, SupplyChainConfig) and isinstance(secrets, SecretsConfig):
        _check_serving(tenants, supply_chain, secrets, problems)
    autoscaling_section = sections.get("autoscaling")
    if isinstance(tenants, TenantsConfig) and isinstance(autoscaling_section, AutoscalingConfig):
        check_model_sources(tenants.root, autoscaling_section, f"{NAMESPACE}:tenants", problems)
    if isinstance(tenants, TenantsConfig) and isinstance(secrets, SecretsConfig) and isinstance(cluster, ClusterConfig):
        _check_secrets_roles(tenants, secrets, cluster, problems)
    problems.raise_if_any()

    assert isinstance(region, str)
    assert isinstance(cluster, ClusterConfig) and isinstance(versions, VersionsConfig)
    assert isinstance(gpu, GpuConfig) and isinstance(queueing, QueueingConfig)
    cpu_pool, monitoring, autoscaling = sections["cpuPool"], sections["monitoring"], sections["autoscaling"]
    assert isinstance(cpu_pool, CpuPoolConfig)
    assert isinstance(monitoring, MonitoringConfig) and isinstance(autoscaling, AutoscalingConfig)
    assert system_capacity is not None
    assert isinstance(supply_chain, SupplyChainConfig) and isinstance(secrets, SecretsConfig)
    return PlatformConfig(
        region=region,
        cluster=cluster,
        versions=versions,
        network=plan_network(cluster, AVAILABILITY_ZONES[region]),
        addon_versions=addon_versions,
        gpu_pools=gpu_pools,
        cpu_pool=cpu_pool,
        gpu=gpu,
        charts=resolve_charts(versions),
        queueing=queueing,
        flavors=flavors,
        tenants=tenant_plans,
        monitoring=monitoring,
        autoscaling=autoscaling,
        supply_chain=supply_chain,
        secrets=secrets,
        system_capacity=system_capacity,
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
    zones = region_zones[: network.az_count]
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
    root = f"{NAMESPACE}:cluster"
    nodes = cluster.system_nodes
    if not nodes.min_size <= nodes.desired_size <= nodes.max_size:
        problems.add(
            f"{root}.systemNodes.desiredSize",
            f"{nodes.desired_size} must lie between minSize ({nodes.min_size}) and maxSize ({nodes.max_size})",
        )
    arm = nodes.ami_type.endswith("ARM_64_STANDARD") or nodes.ami_type.endswith("ARM_64")
    for index, instance_type in enumerate(nodes.instance_types):
        if _is_graviton(instance_type) != arm:
            problems.add(
                f"{root}.systemNodes.instanceTypes[{index}]",
                f"{show(instance_type)} is {'arm64' if _is_graviton(instance_type) else 'x86_64'} but amiType "
                f"{nodes.ami_type} is {'arm64' if arm else 'x86_64'}; pick instance types of one architecture",
            )
    if region is not None:
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
    problems: Problems,
) -> SystemCapacityPlan | None:
    """The controllers, add-ons and DaemonSets on the system nodes must fit `minSize` nodes of the smallest type."""
    root = f"{NAMESPACE}:cluster.systemNodes"
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
    )
    for path, message in capacity_problems(plan, root):
        problems.add(path, message)
    return plan


def _check_time_slice_tenants(pools: NodePoolsConfig, tenants: Sequence[TenantPlan], problems: Problems) -> None:
    """A time-sliced pool serves one tenant unless it says `shareBetweenTenants`.

    Time slices of a GPU share its memory and its faults: one tenant's pod can read another's memory
    or take it down. A tenant holds quota on a pool when any flavor of it gives the tenant nominal or
    borrowing units.
    """
    for pool in pools.root:
        if pool.sharing.mode != "timeSlicing" or pool.sharing.share_between_tenants:
            continue
        holders: list[tuple[int, str, str]] = []
        for position, tenant in enumerate(tenants):
            for quota in tenant.quotas:
                if quota.flavor.pool.name == pool.name and (quota.quota.nominal or quota.quota.borrowing_limit):
                    holders.append((position, tenant.name, quota.flavor.name))
                    break
        if len({name for _, name, _ in holders}) > 1:
            position, name, flavor = holders[1]
            problems.add(
                f"{NAMESPACE}:tenants[{name}].gpu.{flavor}",
                f"gives {name} time slices of pool {pool.name}, which {holders[0][1]} holds quota on too; time slices share "
                f"a GPU's memory and faults between tenants: give the pool to one tenant or set "
                f"{NAMESPACE}:nodePools[{pool.name}].sharing.shareBetweenTenants: true",
            )


def _check_gpu(gpu: GpuConfig, cluster: ClusterConfig, pools: Sequence[GpuPoolPlan], problems: Problems) -> None:
    """DRA needs its Kubernetes version, a pool to allocate from, and templates that can be satisfied."""
    version = tuple(int(part) for part in cluster.kubernetes_version.split("."))
    if gpu.dra.enabled and version < DRA_MIN_KUBERNETES:
        problems.add(
            f"{NAMESPACE}:gpu.dra.enabled",
            f"true needs Kubernetes 1.34 or newer (resource.k8s.io/v1); the cluster runs {cluster.kubernetes_version}: "
            "upgrade cluster.kubernetesVersion or set dra.enabled: false",
        )
    dra_pools = [pool for pool in pools if pool.config.allocation == "dra"]
    for pool in pools:
        if pool.config.allocation != "dra":
            continue
        key = f"{NAMESPACE}:nodePools[{pool.name}].allocation"
        if not gpu.dra.enabled:
            problems.add(key, f"'dra' on pool {pool.name} needs gpu-platform:gpu.dra.enabled: true")
        if pool.config.ami_family == "bottlerocket":
            problems.add(key, f"'dra' on pool {pool.name}: Bottlerocket runs its own device plugin; use amiFamily al2023")
        if pool.config.sharing.mode == "timeSlicing":
            problems.add(key, f"'dra' on pool {pool.name}: time-slicing is a device-plugin feature; use sharing none or mig")
    seen: set[tuple[str, str]] = set()
    # Each template's resource is named `<namespace>-<name>` (components/gpu_operator.py), so
    # ml/a-b and ml-a/b would declare one URN twice.
    joined: dict[str, tuple[str, str]] = {}
    profiles = {profile for pool in dra_pools for profile in (pool.config.sharing.mig_layout or {})}
    templates = item_labels(gpu.dra.claim_templates)
    for index, template in enumerate(gpu.dra.claim_templates):
        key = f"{NAMESPACE}:gpu.dra.claimTemplates[{templates[index]}]"
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
        if template.mig_profile is not None and template.mig_profile not in profiles:
            problems.add(
                f"{key}.migProfile",
                f"{show(template.mig_profile)} is in no DRA pool's migLayout "
                f"({', '.join(sorted(profiles)) or 'no DRA pool has MIG'})",
            )
    if gpu.dra.claim_templates and not dra_pools:
        problems.add(f"{NAMESPACE}:gpu.dra.claimTemplates", "no pool has allocation: dra, so no claim could ever be satisfied")


def _check_serving(tenants: TenantsConfig, supply_chain: SupplyChainConfig, secrets: SecretsConfig, problems: Problems) -> None:
    """What `supplyChain` asks of the model servers the platform declares, and the secrets they name."""
    labels = item_labels(tenants.root)
    for i, tenant in enumerate(tenants.root):
        deployments = item_labels(tenant.inference)
        for j, deployment in enumerate(tenant.inference):
            serving = deployment.serving
            if serving is None:
                continue
            key = f"{NAMESPACE}:tenants[{labels[i]}].inference[{deployments[j]}].serving"
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
                    f"{show(serving.hf_token_secret)} needs gpu-platform:secrets.enabled: true, which reads it from "
                    "AWS Secrets Manager",
                )


def _check_secrets_roles(tenants: TenantsConfig, secrets: SecretsConfig, cluster: ClusterConfig, problems: Problems) -> None:
    """Each tenant's secrets role is named `<cluster>-secrets-<tenant>`, which IAM caps at 64 characters."""
    if not secrets.enabled:
        return
    labels = item_labels(tenants.root)
    for i, tenant in enumerate(tenants.root):
        role = tenant_secrets_role_name(cluster.name, tenant.name)
        if len(role) > IAM_ROLE_NAME_LIMIT:
            problems.add(
                f"{NAMESPACE}:tenants[{labels[i]}].name",
                f"{show(tenant.name)} makes its secrets role {role!r}, {len(role)} characters; IAM allows "
                f"{IAM_ROLE_NAME_LIMIT}: shorten the tenant or cluster name by {len(role) - IAM_ROLE_NAME_LIMIT}",
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
    known = [f"{NAMESPACE}:{section}" for section in SECTIONS]
    if namespace == NAMESPACE and name not in SECTIONS:
        guess = difflib.get_close_matches(key, known, n=1)
        hint = f"did you mean {guess[0]}? " if guess else ""
        problems.add(key, f"unknown key; {hint}known keys: {', '.join(known)}")
    elif namespace != NAMESPACE and namespace not in PROVIDER_NAMESPACES:
        guess = difflib.get_close_matches(key, known, n=1) or (
            [f"{NAMESPACE}:{name}"] if difflib.get_close_matches(namespace, [NAMESPACE], n=1) else []
        )
        hint = f"did you mean {guess[0]}? " if guess else ""
        problems.add(
            key,
            f"unknown namespace {namespace!r}; {hint}keys belong to {NAMESPACE} or a provider "
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
