"""GPU capacity, derived once: each pool's instance types, GPU model, limit, schedulable units, labels, cost.

Everything that reads GPU capacity (NodePools, the GPU Operator's sharing configs, the summary, the
quotas and queues) reads a `GpuPoolPlan`; nothing recomputes it from raw config.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from models.karpenter import provisioning
from models.karpenter.limits import most_carried
from models.nvidia import device_plugin
from models.nvidia.labels import mig_resource as mig_resource

from .catalog import FAMILIES, INSTANCE_TYPES
from .catalog_prices import ON_DEMAND_USD, PRICE_DATES
from .catalog_types import GpuModel, InstanceType
from .errors import Problems, duplicates, item_labels, show
from .keys import CONFIG_NAMESPACE
from .labels import (
    CPU_POOL_NAME,
    DEVICE_PLUGIN_CONFIG_LABEL,
    DEVICE_PLUGIN_DEPLOY_LABEL,
    DRA_ALLOCATION,
    EFA_LABEL,
    GPU_ALLOCATION_LABEL,
    GPU_DEVICE_CLASS,
    GPU_MODEL_LABEL,
    GPU_RESOURCE,
    MIG_CONFIG_LABEL,
    MIG_DEVICE_CLASS,
    OPERANDS_DEPLOY_LABEL,
    POOL_LABEL,
    device_class_resource,
)
from .node_pools import RESERVED, SPOT, NodePoolConfig, delete_timeout
from .versions import AMI_RELEASES

HOURS_PER_MONTH = 730


@dataclass(frozen=True)
class GpuPoolPlan:
    config: NodePoolConfig
    instance_types: tuple[InstanceType, ...]
    gpu: GpuModel
    mig_strategy: str = "mixed"
    # On-demand USD/hour by type in the stack's region (config/catalog_prices.py); None: the catalog's.
    prices: Mapping[str, float] | None = None

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def gpu_limit(self) -> int:
        """The pool's declared physical GPUs; its NodePool limits derive from it (config/advertised.py)."""
        return self.config.gpus

    @property
    def headroom_gpus(self) -> int:
        """Physical GPUs kept warm for surges (`warmStart.headroom.gpus`), on top of the declared ones."""
        return self.config.warm_start.headroom.gpus

    @property
    def nodepool_gpus(self) -> int:
        """The physical GPUs the NodePool limit allows: the declared capacity, which quotas share, plus the headroom."""
        return self.gpu_limit + self.headroom_gpus

    @property
    def headroom_capacity_type(self) -> str:
        """Where the placeholders run: the configured type, else on-demand when the pool has it, else its first type."""
        chosen = self.config.warm_start.headroom.capacity_type
        if chosen is not None:
            return chosen
        return "on-demand" if "on-demand" in self.config.capacity_types else self.config.capacity_types[0]

    @property
    def headroom_pods(self) -> int:
        """Placeholder pods holding the headroom."""
        headroom = self.config.warm_start.headroom
        return headroom.gpus // headroom.gpus_per_pod

    @property
    def headroom_pod_requests(self) -> dict[str, int]:
        """What one placeholder pod requests, in the units the pool's nodes advertise: slices on a time-sliced pool."""
        return {GPU_RESOURCE: self.config.warm_start.headroom.gpus_per_pod * self.slices_per_gpu}

    @property
    def slices_per_gpu(self) -> int:
        """Schedulable units per physical GPU: `replicas` on a time-sliced pool, else 1."""
        sharing = self.config.sharing
        return sharing.replicas if sharing.mode == "timeSlicing" and sharing.replicas else 1

    @property
    def headroom_nodes(self) -> tuple[InstanceType, ...] | None:
        """The nodes Karpenter launches for the placeholders on an otherwise idle pool, one per NodeClaim.

        Its scheduler packs the pending placeholders onto NodeClaims while one type still fits them all,
        and each claim launches its cheapest fitting type within the NodePool limit
        (models/karpenter/provisioning.py `pack`), priced in the stack's region. Ten 1-GPU placeholders
        on 4- and 8-GPU types are an 8-GPU node and a 4-GPU node: 12 GPUs running for 10 held.
        () without headroom; None when a type has no on-demand price, as Karpenter's choice then is unknown.
        """
        if not self.headroom_pods:
            return ()
        prices = {t.name: self.on_demand_price(t) for t in self.instance_types}
        options = [
            provisioning.InstanceOption(t.name, t.gpus * self.slices_per_gpu, price)
            for t in self.instance_types
            if (price := prices[t.name]) is not None
        ]
        if len(options) < len(self.instance_types):
            return None
        units = sum(self.headroom_pod_requests.values())
        claims, _ = provisioning.pack([units] * self.headroom_pods, options, self.nodepool_gpus * self.slices_per_gpu)
        by_name = {t.name: t for t in self.instance_types}
        return tuple(by_name[claim.instance_type.name] for claim in claims)

    @property
    def headroom_hourly_cost(self) -> float | None:
        """On-demand USD/hour of the nodes the idle headroom runs on (`headroom_nodes`); None without a price."""
        nodes = self.headroom_nodes
        if nodes is None:
            return None
        return sum(self.on_demand_price(t) or 0.0 for t in nodes)

    @property
    def ami_release(self) -> str:
        """The AMI release the pool's node class pins: its own, else the versions table's."""
        return self.config.ami_version or AMI_RELEASES[self.config.ami_family]

    @property
    def sharing_config_name(self) -> str:
        """The device-plugin configuration (time-slicing) or MIG layout this pool's nodes select."""
        return self.name

    @property
    def runs_operator_operands(self) -> bool:
        """Whether the GPU Operator's operands, its DCGM exporter among them, run on the pool's nodes.

        Not on Bottlerocket: NVIDIA does not support them there (NVIDIA/gpu-operator#946), and
        Bottlerocket's NVIDIA variant brings the driver, toolkit and device plugin itself. Not on DRA
        nodes: with the device plugin on in the ClusterPolicy, the operator's validator keeps its
        plugin-validation step (controllers/object_controls.go, TransformValidator), which fails until the
        node's capacity has `nvidia.com/gpu` or `nvidia.com/mig-*` (cmd/nvidia-validator/main.go,
        validateGPUResource), and a DRA node has neither, so it would crash-loop there for ever
        (NVIDIA/gpu-operator v26.7.0). A standalone DCGM exporter serves both kinds' GPU metrics
        (components/dcgm_exporter.py).
        """
        return self.config.ami_family != "bottlerocket" and not self.is_dra

    @property
    def is_dra(self) -> bool:
        """Whether the pool's GPUs are allocated through DRA, on an EKS managed node group (components/dra_nodes.py)."""
        return self.config.allocation == "dra"

    @property
    def node_group_size(self) -> int:
        """A DRA pool's standing node count: its declared GPUs in nodes of its types' one GPU count
        (`_check_dra_node_group` refuses types that differ in it).

        Karpenter v1.14.1 launches nothing for a pod with resource claims: `ignoreDRARequests` defaults to
        true in the chart and the binary (kubernetes-sigs/karpenter pkg/operator/options/options.go), and
        with it the scheduler skips such pods (pkg/controllers/provisioning/scheduling/scheduler.go,
        DRAError). So a DRA pool's capacity is a managed node group of fixed size, there before its pods.
        """
        assert self.is_dra
        return self.config.gpus // self.instance_types[0].gpus

    @property
    def vcpus_at_limit(self) -> int:
        """The most vCPUs the pool's nodes can hold at once: what its EC2 vCPU quota must cover.

        A Karpenter pool: the worst mix of its types within the NodePool's GPU limit (headroom included;
        models/karpenter/limits.py `most_carried`), capped by its `cpuLimit`. A DRA pool: its node group's
        nodes, each of its largest type, since EKS may launch any type of the group.
        """
        limit = self.gpu_limit if self.is_dra else self.nodepool_gpus
        vcpus = most_carried(limit, [(t.gpus, t.vcpu) for t in self.instance_types])
        return vcpus if self.is_dra or self.config.cpu_limit is None else min(vcpus, self.config.cpu_limit)

    @property
    def standing_hourly_cost(self) -> float | None:
        """A DRA pool's node group, always running, at the on-demand price of the type EKS launches first.

        EKS managed node groups launch on-demand capacity with the `prioritized` allocation strategy, the
        first listed type first. None for other pools, or when that type has no on-demand price.
        """
        if not self.is_dra:
            return None
        price = self.on_demand_price(self.instance_types[0])
        return None if price is None else round(price * self.node_group_size, 2)

    @property
    def dra_device_class(self) -> str | None:
        """The DeviceClass a DRA pool's devices belong to: MIG devices on a MIG pool, whole GPUs otherwise."""
        if self.config.allocation != "dra":
            return None
        return MIG_DEVICE_CLASS if self.config.sharing.mode == "mig" else GPU_DEVICE_CLASS

    @property
    def mig_instances(self) -> tuple[str, ...]:
        """A MIG pool's profiles, one entry per instance on each GPU, largest first (most memory slices, then
        compute slices, then name), the order that leaves the smaller ones room to be placed; () otherwise."""
        layout = self.config.sharing.mig_layout if self.config.sharing.mode == "mig" else None
        if not layout:
            return ()
        specs = self.gpu.mig_profiles

        def order(profile: str) -> tuple[int, int, str]:
            spec = specs[profile]
            return (-spec.memory_slices, -spec.compute_slices, profile)

        return tuple(profile for profile in sorted(layout, key=order) for _ in range(layout[profile]))

    @property
    def sharing(self) -> device_plugin.Sharing:
        """The pool's sharing as the device plugin model takes it (models/nvidia/device_plugin.py)."""
        sharing = self.config.sharing
        return device_plugin.Sharing(
            mode=sharing.mode,
            replicas=sharing.replicas,
            mig_layout=dict(sharing.mig_layout or {}),
            mig_strategy=self.mig_strategy,
        )

    @property
    def schedulable_units(self) -> dict[str, int]:
        """What the scheduler (and Kueue) can hand out when the pool is at its limit, by resource name.

        A DRA pool advertises no extended resource: its devices are claimed through its DeviceClass,
        and counted under that class's quota resource.
        """
        if self.dra_device_class is not None:
            return {device_class_resource(self.dra_device_class): device_plugin.dra_devices(self.sharing, self.gpu_limit)}
        return device_plugin.device_plugin_resources(self.sharing, self.gpu_limit)

    @property
    def labels(self) -> dict[str, str]:
        labels = {POOL_LABEL: self.name, GPU_MODEL_LABEL: self.gpu.label}
        if self.config.sharing.mode == "timeSlicing" and self.config.ami_family != "bottlerocket":
            # Bottlerocket's own device plugin takes its time-slicing from the node class's user data.
            labels[DEVICE_PLUGIN_CONFIG_LABEL] = self.sharing_config_name
        if self.config.sharing.mode == "mig" and not self.is_dra:
            # A DRA pool's nodes partition themselves at boot; the MIG manager that reads the label stays off them.
            labels[MIG_CONFIG_LABEL] = self.sharing_config_name
        if self.config.allocation == "dra":
            labels[GPU_ALLOCATION_LABEL] = DRA_ALLOCATION
            # A GPU advertised by both the device plugin and DRA could be handed out twice.
            labels[DEVICE_PLUGIN_DEPLOY_LABEL] = "false"
        if self.config.efa:
            labels[EFA_LABEL] = "true"
        if self.config.ami_family == "bottlerocket":
            # Bottlerocket's NVIDIA variant runs its own device plugin; a second one would advertise every GPU twice.
            labels[DEVICE_PLUGIN_DEPLOY_LABEL] = "false"
        if not self.runs_operator_operands:
            labels[OPERANDS_DEPLOY_LABEL] = "false"
        return labels

    @property
    def uses_spot(self) -> bool:
        return SPOT in self.config.capacity_types

    @property
    def delete_timeout(self) -> str:
        """How long `pulumi destroy` waits for the pool's NodePool and EC2NodeClass (see `delete_timeout`)."""
        return delete_timeout(self.config.termination_grace_period)

    @property
    def has_instance_store(self) -> bool:
        return any(t.instance_store_gb > 0 for t in self.instance_types)

    @property
    def hourly_cost_at_limit(self) -> float | None:
        """On-demand USD/hour of the pool's declared GPUs on the cheapest whole nodes that hold them within the
        NodePool limit (`cheapest_nodes`); None when no type has a price."""
        nodes = self.cheapest_nodes(self.gpu_limit)
        return None if nodes is None else round(sum(self.on_demand_price(t) or 0.0 for t in nodes), 2)

    def cheapest_nodes(self, gpus: int, limit: int | None = None, largest_pod: int = 1) -> tuple[InstanceType, ...] | None:
        """The cheapest whole nodes of the pool's priced types that hold `gpus` physical GPUs, their GPUs together
        within `limit` (default: the NodePool limit, `nodepool_gpus`), one of them at least `largest_pod` GPUs
        so the largest pod fits; in the pool's type order.

        The one rule for standing capacity: what the summary prices a full pool at and what the simulator's
        fixed-capacity variants (the static baseline, pools pinned at their limit) launch. When no set within
        the limit holds `gpus`, the set holding the most GPUs the limit allows, cheapest first. Ties go to fewer
        GPUs, then fewer nodes, then the pool's order. When no type holds `largest_pod`, the plain rule.
        None when no type has an on-demand price.
        """
        limit = self.nodepool_gpus if limit is None else limit
        priced = [(t, price) for t in self.instance_types if (price := self.on_demand_price(t)) is not None]
        if not priced:
            return None
        best = _cheapest_sums([(t.gpus, price) for t, price in priced], limit)
        candidates = [(cost, total, count, members) for total, (cost, count, members) in best.items()]
        big = [i for i, (t, _) in enumerate(priced) if largest_pod <= t.gpus <= limit]
        if largest_pod > 1 and big:
            # One node the largest pod fits on, the rest the cheapest sums within what it leaves of the limit.
            candidates = [
                (cost + priced[i][1], total + priced[i][0].gpus, count + 1, tuple(sorted((*members, i))))
                for i in big
                for total, (cost, count, members) in best.items() if total + priced[i][0].gpus <= limit
            ]
        enough = [found for found in candidates if found[1] >= gpus]
        if enough:
            chosen = min(enough)
        else:
            most = max(found[1] for found in candidates)
            chosen = min(found for found in candidates if found[1] == most)
        return tuple(priced[index][0] for index in chosen[3])


    @property
    def cheapest_on_demand_per_gpu(self) -> float | None:
        """On-demand USD/hour per GPU of the pool's cheapest type in the stack's region; None when no type has a price."""
        per_gpu_prices = [price / t.gpus for t in self.instance_types if (price := self.on_demand_price(t)) is not None]
        return min(per_gpu_prices) if per_gpu_prices else None

    def on_demand_price(self, instance: InstanceType) -> float | None:
        """On-demand USD/hour of one of the pool's types in the stack's region (config/catalog_prices.py), or the
        catalog's when the plan carries no regional prices; None when neither has one."""
        return instance.on_demand_usd_per_hour if self.prices is None else self.prices.get(instance.name)

def _cheapest_sums(types: list[tuple[int, float]], limit: int) -> dict[int, tuple[float, int, tuple[int, ...]]]:
    """For each total of GPUs up to `limit` that whole nodes of `types` (GPUs, price) can make: the cheapest
    (price, node count, type indices) making exactly that total. An unbounded knapsack."""
    best: dict[int, tuple[float, int, tuple[int, ...]]] = {0: (0.0, 0, ())}
    for total in range(1, limit + 1):
        for index, (gpus, price) in enumerate(types):
            before = best.get(total - gpus)
            if before is None:
                continue
            candidate = (before[0] + price, before[1] + 1, tuple(sorted((*before[2], index))))
            if total not in best or candidate < best[total]:
                best[total] = candidate
    return best


def plan_gpu_pools(
    pools: list[NodePoolConfig], root: str, protected: bool, mig_strategy: str, problems: Problems
) -> tuple[GpuPoolPlan, ...]:
    """Check every pool against the catalog and each other; return the plans of the pools that passed."""
    plans = []
    seen: dict[str, int] = {}
    labels = item_labels(pools)
    for index, pool in enumerate(pools):
        key = f"{root}[{labels[index]}]"
        if pool.name in seen:
            problems.add(
                f"{root}[{index}].name",
                f"{show(pool.name)} is already the name of {root}[{seen[pool.name]}]; pool names must be unique",
            )
        seen.setdefault(pool.name, index)
        if pool.name == CPU_POOL_NAME:
            problems.add(
                f"{key}.name",
                f"{show(pool.name)} is the general CPU pool's NodePool and EC2NodeClass name; pick another, "
                f"e.g. 'gpu-{pool.name}'",
            )
            continue
        plan = _plan_pool(pool, key, protected, mig_strategy, problems)
        if plan is not None:
            plans.append(plan)
    return tuple(plans)


def _plan_pool(pool: NodePoolConfig, key: str, protected: bool, mig_strategy: str, problems: Problems) -> GpuPoolPlan | None:
    before = len(problems.lines)
    types = _resolve_instance_types(pool, key, problems)
    if len(problems.lines) > before or not types:
        return None

    models = sorted({t.gpu.name for t in types})
    if len(models) > 1:
        problems.add(
            key,
            f"mixes GPU models {', '.join(models)}; a pool has one GPU model (its label, sharing layout and price "
            "depend on it): split it into one pool per model",
        )
        return None
    gpu = types[0].gpu

    smallest = min(t.gpus for t in types)
    if pool.gpus < smallest and pool.allocation != "dra":  # a DRA pool's node group: _check_dra_node_group
        problems.add(
            f"{key}.gpus",
            f"{pool.gpus} is less than the {smallest} GPUs of the pool's smallest instance type; Karpenter could never "
            f"launch a node: declare at least {smallest}",
        )
    _check_purchase_and_network(pool, types, key, problems)
    if pool.allocation == "dra":
        _check_dra_node_group(pool, types, key, problems)
    if pool.ami_version == "latest" and protected:
        problems.add(
            f"{key}.amiVersion",
            "'latest' rolls every node to each new AMI the day it ships; production stacks (cluster.protect: true) "
            "pin a release such as 'v20260903'",
        )
    _check_sharing(pool, gpu, key, mig_strategy, problems)
    for index, budget in enumerate(pool.disruption.budgets):
        if budget.reasons is not None and len(set(budget.reasons)) != len(budget.reasons):
            problems.add(f"{key}.disruption.budgets[{index}].reasons", "lists a reason twice")
    return GpuPoolPlan(config=pool, instance_types=types, gpu=gpu, mig_strategy=mig_strategy)


# The pool fields only a Karpenter NodePool reads (components/node_pools.py): how it consolidates, expires
# and drains nodes, its rank among pools, and its CPU and memory limits. A DRA pool's managed node group
# (components/dra_nodes.py) reads none of them.
KARPENTER_ONLY_FIELDS = ("disruption", "expire_after", "weight", "termination_grace_period", "cpu_limit", "memory_limit_gib")


def _check_dra_node_group(pool: NodePoolConfig, types: tuple[InstanceType, ...], key: str, problems: Problems) -> None:
    """What a DRA pool's EKS managed node group can be: instance types of one GPU count, at least one node;
    one capacity type, on-demand or spot; no EFA; no MIG.

    The group has a fixed node count, `gpus` / the types' GPU count, but not a fixed type: EKS launches
    on-demand nodes with the `prioritized` allocation strategy, the first listed type first and the next
    only for what that one cannot fill (docs.aws.amazon.com/eks/latest/userguide/managed-node-groups.html,
    "Managed node group capacity types"), and any listed type may fill a spot group. With types of
    different GPU counts no node count holds the declared GPUs: [g6.xlarge, g6.12xlarge] with gpus 9
    would be two nodes, which EKS fills with two 1-GPU g6.xlarge.
    A managed node group takes one `capacityType` (ON_DEMAND or SPOT) and no capacity reservation
    without a launch template that names one. MIG is allowed: the GPU Operator's MIG manager stays off
    DRA nodes with the other operands (GpuPoolPlan.runs_operator_operands), and the node group's own
    boot partitions the GPUs into the pool's layout before the kubelet starts (components/dra_nodes.py).
    """
    counts = sorted({t.gpus for t in types})
    if len(counts) > 1:
        field = "instanceFamilies" if pool.instance_families and not pool.instance_types else "instanceTypes"
        problems.add(
            f"{key}.{field}",
            f"{', '.join(f'{t.name} ({t.gpus} GPUs)' for t in types)} on DRA pool {pool.name} differ in GPU count: its "
            "EKS managed node group has a fixed node count but launches the first listed type it can get, so the node "
            f"count cannot hold gpus {pool.gpus}; list types of one GPU count (e.g. only those with {counts[-1]})",
        )
    elif pool.gpus < counts[0]:
        # Karpenter counts no DRA device against a limit, so the group's size is in whole nodes.
        problems.add(
            f"{key}.gpus",
            f"{pool.gpus} is less than the {counts[0]} GPUs of each of the DRA pool's instance types; its node group "
            f"holds gpus / {counts[0]} nodes, which would be 0: declare at least {counts[0]}",
        )
    if len(pool.capacity_types) != 1 or RESERVED in pool.capacity_types:
        problems.add(
            f"{key}.capacityTypes",
            f"{show(pool.capacity_types)} on DRA pool {pool.name}: its capacity is an EKS managed node group, which takes "
            "one capacity type: give exactly one of on-demand or spot",
        )
    if pool.efa:
        problems.add(f"{key}.efa", f"true on DRA pool {pool.name}: its managed node group attaches no EFA; set efa false")
    if pool.ami_version is not None:
        problems.add(
            f"{key}.amiVersion",
            f"{show(pool.ami_version)} on DRA pool {pool.name}: its managed node group runs the EKS AL2023 NVIDIA AMI "
            "of the release pinned per Kubernetes minor (config/versions.py NODE_GROUP_RELEASE_VERSIONS); remove amiVersion",
        )
    for field in KARPENTER_ONLY_FIELDS:
        if field in pool.model_fields_set:
            alias = NodePoolConfig.model_fields[field].alias
            problems.add(
                f"{key}.{alias}",
                f"set on DRA pool {pool.name}, configures nothing: the pool is an EKS managed node group of fixed "
                f"size, not a Karpenter NodePool, and nothing reads {alias} for it; remove it",
            )


def _check_purchase_and_network(pool: NodePoolConfig, types: tuple[InstanceType, ...], key: str, problems: Problems) -> None:
    """Reservation-only types need the `reserved` capacity type; an EFA pool only types that have EFA."""
    for name in [t.name for t in types if t.reservation_only]:
        if RESERVED not in pool.capacity_types:
            problems.add(
                f"{key}.capacityTypes",
                f"{name} is sold only through capacity reservations and Capacity Blocks (config/catalog.py has no "
                "on-demand price): add 'reserved' and name them in capacityReservations",
            )
            break
    if not pool.efa:
        return
    without = [t.name for t in types if t.efa == 0]
    if without:
        one = len(without) == 1
        problems.add(
            f"{key}.efa",
            f"true, but {', '.join(without)} {'has' if one else 'have'} no Elastic Fabric Adapter: drop "
            f"{'it' if one else 'them'} or set efa false",
        )


def check_sold_in_region(pools: list[NodePoolConfig], root: str, region: str, problems: Problems) -> None:
    """Every pool's types are sold in the stack's region, where its price list is vendored (config/catalog_prices.py).

    A type the region's list lacks is not sold on-demand there, and EC2 has no capacity of it to launch
    (GovCloud sells no g5 or g6e): Karpenter would find no offering, a DRA pool's node group would never
    turn ACTIVE. A named type must be in the list; a family must have at least one type in it (Karpenter
    skips the sizes a region lacks). Reservation-only types are in no on-demand list and pass. Regions
    without a vendored list are not checked: nothing here says what they sell.
    """
    prices = ON_DEMAND_USD.get(region)
    if prices is None:
        return
    source = f"its price list (config/catalog_prices.py, Karpenter's of {PRICE_DATES[region]})"
    sold = ", ".join(sorted({name.split(".")[0] for name in prices}))
    labels = item_labels(pools)
    for index, pool in enumerate(pools):
        key = f"{root}[{labels[index]}]"
        for position, name in enumerate(pool.instance_types):
            instance = INSTANCE_TYPES.get(name)
            if instance is not None and not instance.reservation_only and name not in prices:
                problems.add(
                    f"{key}.instanceTypes[{position}]",
                    f"{show(name)} is not sold in {region}: {source} lacks it; use a type of a family it sells ({sold})",
                )
        for position, family in enumerate(pool.instance_families):
            members = [t.name for t in FAMILIES.get(family, ()) if not t.reservation_only]
            if members and not any(name in prices for name in members):
                problems.add(
                    f"{key}.instanceFamilies[{position}]",
                    f"{show(family)} is not sold in {region}: {source} has none of its types; use a family it sells ({sold})",
                )


def _resolve_instance_types(pool: NodePoolConfig, key: str, problems: Problems) -> tuple[InstanceType, ...]:
    if bool(pool.instance_types) == bool(pool.instance_families):
        problems.add(key, "give exactly one of instanceTypes or instanceFamilies")
        return ()
    resolved: list[InstanceType] = []
    for index, name in enumerate(pool.instance_types):
        if name not in INSTANCE_TYPES:
            problems.add(
                f"{key}.instanceTypes[{index}]",
                f"{show(name)} is not in the GPU catalog (config/catalog.py); known: {', '.join(INSTANCE_TYPES)}",
            )
        else:
            resolved.append(INSTANCE_TYPES[name])
    for index, family in enumerate(pool.instance_families):
        if family not in FAMILIES:
            problems.add(
                f"{key}.instanceFamilies[{index}]",
                f"{show(family)} is not a GPU family in the catalog (config/catalog.py); known: {', '.join(FAMILIES)}",
            )
        else:
            resolved.extend(FAMILIES[family])
    repeated = duplicates([t.name for t in resolved])
    if repeated:
        problems.add(key, f"names {', '.join(repeated)} more than once")
    return tuple({t.name: t for t in resolved}.values())


def _check_sharing(pool: NodePoolConfig, gpu: GpuModel, key: str, mig_strategy: str, problems: Problems) -> None:
    sharing = pool.sharing
    if sharing.mode != "mig":
        return
    assert sharing.mig_layout is not None
    if not gpu.supports_mig:
        problems.add(
            f"{key}.sharing.mode",
            f"'mig' is not possible on pool {pool.name}: its {gpu.name} GPUs do not support MIG "
            "(MIG needs A100, H100 or H200); use timeSlicing or none",
        )
        return
    if pool.ami_family == "bottlerocket":
        # Bottlerocket's own device plugin partitions at boot with one profile per GPU model and always
        # the single strategy (bottlerocket-os/bottlerocket-core-kit packages/nvidia-k8s-device-plugin/
        # nvidia-k8s-device-plugin-conf.in); the GPU Operator's MIG manager does not run there.
        problems.add(
            f"{key}.sharing.mode",
            f"'mig' on Bottlerocket pool {pool.name} would not partition its GPUs: the GPU Operator's MIG manager "
            "does not run on Bottlerocket; use amiFamily al2023 or sharing timeSlicing",
        )
        return
    if mig_strategy == "single" and len(sharing.mig_layout) > 1:
        problems.add(
            f"{key}.sharing.migLayout",
            f"{CONFIG_NAMESPACE}:gpu.migStrategy 'single' advertises MIG devices as nvidia.com/gpu, so every device of pool "
            f"{pool.name} must be one profile; it has {', '.join(sharing.mig_layout)}: use one profile or migStrategy 'mixed'",
        )
    before = len(problems.lines)
    compute = memory = 0
    for profile, count in sharing.mig_layout.items():
        path = f"{key}.sharing.migLayout.{profile}"
        spec = gpu.mig_profiles.get(profile)
        if spec is None:
            problems.add(
                path,
                f"{show(profile)} is not a MIG profile of the {gpu.name} in pool {pool.name}; allowed: "
                f"{', '.join(gpu.mig_profiles)}",
            )
            continue
        if not 1 <= count <= spec.max_instances:
            problems.add(path, f"{count} instances of {profile} per GPU; a {gpu.name} fits 1 to {spec.max_instances}")
        compute += spec.compute_slices * count
        memory += spec.memory_slices * count
    if len(problems.lines) == before and (compute > gpu.compute_slices or memory > gpu.memory_slices):
        problems.add(
            f"{key}.sharing.migLayout",
            f"oversubscribes each {gpu.name} of pool {pool.name}: {compute} of {gpu.compute_slices} compute slices and "
            f"{memory} of {gpu.memory_slices} memory slices; remove profiles until both fit",
        )
