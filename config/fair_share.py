"""One source of truth for capacity: flavors from pools, tenants' quotas against them, derived once.

The platform must never promise GPUs it does not have. Every check here runs before anything is
declared: nominal quotas fit the capacity pools declare, borrowing fits what others can lend, and
each tenant's ResourceQuota is derived from what Kueue can admit for it, so the two cannot drift.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from models.kueue.cohort import lendable
from models.kueue.flavorassigner import fits_queue, queue_ceiling

from .capacity import GpuPoolPlan, mig_resource
from .cluster import principal_slug
from .errors import Problems, did_you_mean, item_labels, show
from .keys import CONFIG_NAMESPACE
from .labels import (
    CAPACITY_TYPE_LABEL,
    CPU_POOL_NAME,
    DEVICE_CLASS_RESOURCE_SUFFIX,
    GPU_RESOURCE,
    POOL_LABEL,
    device_class_resource,
)
from .namespaces import RESERVED_NAMESPACES
from .tenants import FLAVOR_NAMING_RULE, FlavorQuota, QueueingConfig, TenantConfig

CPU_FLAVOR = "cpu"


@dataclass(frozen=True)
class FlavorPlan:
    """A Kueue ResourceFlavor: the nodes of one pool (or of one capacity type of a pool)."""

    name: str
    pool: GpuPoolPlan
    capacity_type: str | None  # None: every capacity type the pool has

    @property
    def node_labels(self) -> dict[str, str]:
        labels = {POOL_LABEL: self.pool.name}
        if self.capacity_type is not None:
            labels[CAPACITY_TYPE_LABEL] = self.capacity_type
        return labels

    @property
    def unit(self) -> str:
        return "GPU slices" if self.pool.config.sharing.mode == "timeSlicing" else "GPUs"

    def amount(self, units: int) -> str:
        """`12 GPU slices (3 GPUs at 4 slices each)` on a time-sliced flavor, `12 GPUs` elsewhere.

        A slice is a share of one GPU's time, not a GPU: every figure in slices says what it is in GPUs too.
        """
        slices = self.slices_per_gpu
        if slices == 1:
            return f"{units} {self.unit}"
        return f"{units} {self.unit} ({_gpus(units / slices)} at {slices} slices each)"

    def in_gpus(self, units: int) -> str:
        """`(3 GPUs)` after a figure in slices; empty where a unit is a GPU already."""
        slices = self.slices_per_gpu
        return "" if slices == 1 else f" ({_gpus(units / slices)})"

    @property
    def capacity_units(self) -> int:
        """The pool's declared capacity in this flavor's units (shared with its sibling flavors)."""
        return self.pool.gpu_limit * self.slices_per_gpu

    @property
    def resources_per_unit(self) -> dict[str, int]:
        """What one unit of quota is in Kubernetes resources: a GPU, a slice, or a GPU's MIG devices.

        On a DRA pool those are devices of its DeviceClass, counted under the class's quota resource
        (`config.labels.device_class_resource`), never `nvidia.com/gpu`, which DRA nodes do not advertise.
        """
        sharing = self.pool.config.sharing
        device_class = self.pool.dra_device_class
        if device_class is not None:
            devices = sum(sharing.mig_layout.values()) if sharing.mode == "mig" and sharing.mig_layout else 1
            return {device_class_resource(device_class): devices}
        if sharing.mode == "mig" and sharing.mig_layout:
            if self.pool.mig_strategy == "single":
                return {GPU_RESOURCE: sum(sharing.mig_layout.values())}
            return {mig_resource(profile): count for profile, count in sorted(sharing.mig_layout.items())}
        return {GPU_RESOURCE: 1}

    @property
    def cpu_per_unit(self) -> int:
        """vCPUs that come with one unit: the most generous instance type's share per GPU (GPUs are the limit)."""
        per_gpu = max(t.vcpu // t.gpus for t in self.pool.instance_types)
        return max(1, per_gpu // self.slices_per_gpu)

    @property
    def memory_gib_per_unit(self) -> int:
        per_gpu = max(t.memory_gib // t.gpus for t in self.pool.instance_types)
        return max(1, per_gpu // self.slices_per_gpu)

    @property
    def server_cpu_millis_per_unit(self) -> int:
        """Millicores a platform-served model server requests per unit: half the per-GPU vCPUs of the pool's
        smallest instance type (so a replica fits any node of the pool beside the daemonsets), split among
        the GPU's slices, so a time-sliced node holds a replica per slice and Kueue admits one per unit."""
        per_gpu = min(t.vcpu * 1000 // t.gpus for t in self.pool.instance_types)
        return per_gpu // 2 // self.slices_per_gpu

    @property
    def server_memory_mib_per_unit(self) -> int:
        """MiB a platform-served model server requests per unit, sized as `server_cpu_millis_per_unit`."""
        per_gpu = min(t.memory_gib * 1024 // t.gpus for t in self.pool.instance_types)
        return per_gpu // 2 // self.slices_per_gpu

    @property
    def slices_per_gpu(self) -> int:
        """Schedulable units per physical GPU (`GpuPoolPlan.slices_per_gpu`)."""
        return self.pool.slices_per_gpu


@dataclass(frozen=True)
class TenantQuota:
    flavor: FlavorPlan
    quota: FlavorQuota
    # In an administrator's DeviceClass on a DRA pool: the devices of the class each GPU of the pool publishes
    # (config/dra_devices.py), e.g. 1 for a class of 3g.40gb devices on GPUs cut into four MIG devices.
    class_devices_per_gpu: int | None = None

    @property
    def devices_per_unit(self) -> dict[str, int]:
        """The flavor's GPU resources per unit; in an administrator's DeviceClass, that class's quota resource
        in place of the driver's class (Kueue maps each class to its own resource: components/queueing.py),
        as many as the class's devices on one GPU of the pool (a DRA pool's unit is one GPU)."""
        per_unit = self.flavor.resources_per_unit
        device_class = self.quota.device_class
        if device_class is None or self.flavor.pool.dra_device_class is None:
            return per_unit
        devices = self.class_devices_per_gpu or per_unit[device_class_resource(self.flavor.pool.dra_device_class)]
        return {device_class_resource(device_class): devices}

    def resources(self) -> dict[str, tuple[int, int, int | None]]:
        """Kubernetes resource -> (nominal, borrowing limit, lending limit) in this flavor."""
        scale = {**self.devices_per_unit, "cpu": self.flavor.cpu_per_unit, "memory": self.flavor.memory_gib_per_unit}
        q = self.quota
        return {
            resource: (q.nominal * n, q.borrowing_limit * n, None if q.lending_limit is None else q.lending_limit * n)
            for resource, n in scale.items()
        }


@dataclass(frozen=True)
class TenantPlan:
    config: TenantConfig
    cohort: str
    quotas: tuple[TenantQuota, ...]
    priority_value: int
    # The stack's options that install kinds a tenant writes (OPTIONAL_COUNTS): their counts join the quota.
    options: frozenset[str] = frozenset()

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def namespace(self) -> str:
        return self.config.name

    @property
    def covered_resources(self) -> list[str]:
        """Every resource the ClusterQueue covers: cpu and memory (the LimitRange injects them) and the GPUs."""
        gpu_resources = sorted({r for q in self.quotas for r in q.devices_per_unit} | {GPU_RESOURCE})
        return ["cpu", "memory", *gpu_resources]

    @property
    def guaranteed_hourly_cost(self) -> float:
        """What the tenant's nominal quota costs an hour at on-demand prices (0 where a pool has no price):
        each flavor's guaranteed units as GPUs, at the pool's price per GPU. The render's estimate, which
        the summary shows per month and the tenant dashboard beside OpenCost's measured cost."""
        total = 0.0
        for quota in self.quotas:
            per_gpu = quota.flavor.pool.cheapest_on_demand_per_gpu
            if per_gpu is not None:
                total += per_gpu * quota.quota.nominal / quota.flavor.slices_per_gpu
        return total

    def admissible(self) -> dict[str, int]:
        """The most Kueue can admit for this tenant, per resource: nominal plus borrowing over every flavor.

        cpu in cores and memory in GiB; the CPU flavor contributes the tenant's own cpu and memory.
        """
        totals = {"cpu": self.config.cpu, "memory": self.config.memory_gib}
        for quota in self.quotas:
            for resource, (nominal, borrowing, _) in quota.resources().items():
                totals[resource] = totals.get(resource, 0) + (queue_ceiling(nominal, borrowing) or 0)
        return totals

    @property
    def resource_quota(self) -> dict[str, str]:
        """The namespace's ResourceQuota: never below what Kueue admits, or admitted pods fail at creation."""
        admissible = self.admissible()
        hard = {
            "requests.cpu": str(admissible["cpu"]),
            "requests.memory": f"{admissible['memory']}Gi",
            "limits.memory": f"{admissible['memory']}Gi",
            "pods": str(self.config.max_pods),
            # Node-local storage; Kueue does not count it (the Kueue config excludes it), the quota does.
            "requests.ephemeral-storage": f"{self.config.ephemeral_storage_quota_gib}Gi",
            "limits.ephemeral-storage": f"{self.config.ephemeral_storage_quota_gib}Gi",
            "persistentvolumeclaims": str(self.config.max_volume_claims),
            "requests.storage": f"{self.config.volume_storage_gib}Gi",
            # Object counts: etcd holds every object, and a namespace with no bound fills it for everyone.
            **{
                kind: str(times * self.config.max_objects)
                for kind, times in OBJECT_COUNTS.items()
                if OPTIONAL_COUNTS.get(kind, REQUIRED) in self.options | {REQUIRED}
            },
            "count/pods": str(self.config.max_pods + FINISHED_PODS_PER_OBJECT * self.config.max_objects),
            "services.loadbalancers": str(self.config.network.load_balancers),
            "services.nodeports": "0",
        }
        for resource in self.covered_resources[2:]:
            if resource.endswith(DEVICE_CLASS_RESOURCE_SUFFIX):
                # Devices claimed from a DRA DeviceClass: the quota counts them under this very name.
                hard[resource] = str(admissible.get(resource, 0))
            else:
                # Extended resources cannot be overcommitted: only the `requests.` form exists for them.
                hard[f"requests.{resource}"] = str(admissible.get(resource, 0))
        return dict(sorted(hard.items()))


# What each kind a tenant can create counts against in its ResourceQuota, as a multiple of the tenant's
# `maxObjects` (kubernetes/kubernetes pkg/quota/v1/evaluator/core: a core kind's short name counts its
# stored objects, pods excepted; `count/<resource>.<group>` any kind, custom resources included). Every
# kind the tenant's `admin` role lets it create has a row (tests/test_object_quotas.py derives the kinds
# from the rendered roles). Events have none: the quota system ignores them
# (models/kubernetes/resourcequota.py IGNORED_RESOURCES); the API server drops them after its event TTL
# (`--event-ttl`, an hour by default).
OBJECT_COUNTS: dict[str, int] = {
    # What a team declares: a few dozen of each, hundreds at most.
    "configmaps": 1,
    "secrets": 1,
    "services": 1,
    "replicationcontrollers": 1,
    "count/serviceaccounts": 1,
    "count/deployments.apps": 1,
    "count/statefulsets.apps": 1,
    "count/daemonsets.apps": 1,
    "count/cronjobs.batch": 1,
    "count/horizontalpodautoscalers.autoscaling": 1,
    "count/poddisruptionbudgets.policy": 1,
    "count/ingresses.networking.k8s.io": 1,
    "count/networkpolicies.networking.k8s.io": 1,
    "count/roles.rbac.authorization.k8s.io": 1,
    "count/rolebindings.rbac.authorization.k8s.io": 1,
    "count/leases.coordination.k8s.io": 1,
    "count/resourceclaimtemplates.resource.k8s.io": 1,
    "count/externalsecrets.external-secrets.io": 1,
    "count/trainingruntimes.trainer.kubeflow.org": 1,
    # Each Deployment keeps its ReplicaSet and revisionHistoryLimit (10 by default) old ones.
    "count/replicasets.apps": 11,
    # Submitted in sweeps: Kueue queues thousands of them and admits what the quota holds; a finished
    # one stays until its TTL or its owner deletes it.
    "count/jobs.batch": 10,
    "count/jobsets.jobset.x-k8s.io": 10,
    "count/trainjobs.trainer.kubeflow.org": 10,
    # Made from a pod's claim templates, one per claim, and deleted with the pod.
    "count/resourceclaims.resource.k8s.io": 10,
}
# Kinds the stack serves only with an option (`secrets.enabled`, `gpu.dra.enabled` or 1.34+; the trainer and
# JobSet are always installed): counted only then, since the quota controller computes usage only for
# the resources the API server serves, and a row for another would stay in `hard` with no `used`.
SECRETS_OPTION, DRA_OPTION, REQUIRED = "secrets", "dra", ""
# The first minor whose API server serves resource.k8s.io (v1) by default: DRA is GA in 1.34 (KEP-4381);
# before it the group is served only with a DRA-enabled stack's feature gates.
DRA_SERVED_FROM = (1, 34)
OPTIONAL_COUNTS: dict[str, str] = {
    "count/externalsecrets.external-secrets.io": SECRETS_OPTION,
    "count/resourceclaimtemplates.resource.k8s.io": DRA_OPTION,
    "count/resourceclaims.resource.k8s.io": DRA_OPTION,
}
# Pods in storage, finished ones included (`pods` counts live ones only): a Job's finished pods stay
# with it, so as many as the Jobs on top of the live ones.
FINISHED_PODS_PER_OBJECT = 10


def plan_flavors(pools: Sequence[GpuPoolPlan], queueing: QueueingConfig, problems: Problems) -> tuple[FlavorPlan, ...]:
    by_name = {pool.name: pool for pool in pools}
    for index, name in enumerate(queueing.flavor_per_capacity_type):
        key = f"{CONFIG_NAMESPACE}:queueing.flavorPerCapacityType[{index}]"
        if name not in by_name:
            declared = ", ".join(by_name) or "none"
            problems.add(key, f"{show(name)} is not a pool in {CONFIG_NAMESPACE}:nodePools{did_you_mean(name, by_name)} "
                         f"(pools: {declared})")
        elif len(by_name[name].config.capacity_types) < 2:
            problems.add(key, f"pool {name} runs only on {by_name[name].config.capacity_types[0]}; nothing to split")
    flavors = []
    for pool in pools:
        types = pool.config.capacity_types
        if pool.name in queueing.flavor_per_capacity_type and len(types) > 1:
            flavors += [FlavorPlan(_flavor_name(pool.name, t), pool, t) for t in types]
        elif len(types) == 1:
            flavors.append(FlavorPlan(_flavor_name(pool.name, types[0]), pool, None))
        else:
            flavors.append(FlavorPlan(_flavor_name(pool.name), pool, None))
    _check_flavor_names(flavors, problems)
    return tuple(flavors)


def _flavor_name(pool: str, capacity_type: str | None = None) -> str:
    """FLAVOR_NAMING_RULE: the pool's name without `gpu-`, then its one capacity type when it has one."""
    base = pool.removeprefix("gpu-")
    return f"{base}-{capacity_type}" if capacity_type else base


def _check_flavor_names(flavors: Sequence[FlavorPlan], problems: Problems) -> None:
    """Two pools that would make one flavor (`gpu-l4` and `l4` both make `l4-on-demand`) are refused.

    A ResourceFlavor is cluster-scoped and named by FLAVOR_NAMING_RULE: the second pool's quota
    would silently land on the first pool's nodes.
    """
    first: dict[str, FlavorPlan] = {}
    for flavor in flavors:
        key = f"{CONFIG_NAMESPACE}:nodePools[{flavor.pool.name}].name"
        if flavor.name == CPU_FLAVOR:
            problems.add(
                key,
                f"{show(flavor.pool.name)} makes flavor 'cpu', the CPU pool's flavor ({FLAVOR_NAMING_RULE}); rename the pool",
            )
        elif flavor.name in first and first[flavor.name].pool.name != flavor.pool.name:
            problems.add(
                key,
                f"{show(flavor.pool.name)} makes flavor {flavor.name}, which pool {first[flavor.name].pool.name} makes "
                f"too ({FLAVOR_NAMING_RULE}); rename one of the pools",
            )
        first.setdefault(flavor.name, flavor)


def plan_tenants(
    tenants: Sequence[TenantConfig],
    flavors: Sequence[FlavorPlan],
    queueing: QueueingConfig,
    cluster_admins: Sequence[str],
    problems: Problems,
    creator: str | None = None,
    complete: bool = True,
    options: frozenset[str] = frozenset(),
    class_devices_per_gpu: Callable[[str, GpuPoolPlan], int | None] | None = None,
) -> tuple[TenantPlan, ...]:
    """Plan and check every tenant; `complete` False: some tenants were left out as invalid, so what the
    others could borrow from them is unknown and borrowing is not checked. `options`: the stack's options
    that install kinds tenants write (OPTIONAL_COUNTS). `class_devices_per_gpu(class, pool)`: the devices of an
    administrator's DeviceClass one GPU of a DRA pool publishes (None for a class that does not exist)."""
    root = f"{CONFIG_NAMESPACE}:tenants"
    by_flavor = {flavor.name: flavor for flavor in flavors}
    _check_names(tenants, root, problems)
    _check_principals(tenants, cluster_admins, creator, root, problems)

    plans = []
    labels = item_labels(tenants)
    # Tenants with quota on a flavor that does not exist: their intended quota is unknown, so the rules that
    # weigh it (what the cohort can lend, what a deployment can get) would only echo the misspelling.
    unknown: set[str] = set()
    split_names = _names_if_split(flavors, queueing)
    for index, tenant in enumerate(tenants):
        key = f"{root}[{labels[index]}]"
        if tenant.business_unit is not None and tenant.business_unit not in queueing.business_units:
            problems.add(
                f"{key}.businessUnit",
                f"{show(tenant.business_unit)} is not in {CONFIG_NAMESPACE}:queueing.businessUnits "
                f"({', '.join(queueing.business_units) or 'none declared'})"
                f"{did_you_mean(tenant.business_unit, list(queueing.business_units))}",
            )
        if tenant.priority not in queueing.priorities:
            problems.add(
                f"{key}.priority",
                f"{show(tenant.priority)} is not a tier of {CONFIG_NAMESPACE}:queueing.priorities "
                f"({', '.join(queueing.priorities)}){did_you_mean(tenant.priority, list(queueing.priorities))}",
            )
        quotas = []
        for flavor_name, quota in tenant.gpu.items():
            flavor = by_flavor.get(flavor_name)
            if flavor is None:
                unknown.add(tenant.name)
                if flavor_name not in split_names:  # else the misspelt flavorPerCapacityType entry is the mistake
                    problems.add(
                        f"{key}.gpu.{flavor_name}",
                        f"no such flavor{did_you_mean(flavor_name, list(by_flavor))} (flavors: "
                        f"{', '.join(by_flavor) or f'none; declare {CONFIG_NAMESPACE}:nodePools'})",
                    )
                continue
            per_gpu = None
            if class_devices_per_gpu is not None and quota.device_class is not None and flavor.pool.is_dra:
                per_gpu = class_devices_per_gpu(quota.device_class, flavor.pool)
            quotas.append(TenantQuota(flavor, quota, per_gpu))
        plans.append(
            TenantPlan(
                config=tenant,
                cohort=tenant.business_unit or queueing.cohort,
                quotas=tuple(quotas),
                priority_value=queueing.priorities.get(tenant.priority, 0),
                options=options,
            )
        )
    _check_deployment_names(tenants, root, problems)
    _check_capacity(plans, root, problems)
    if complete and not unknown:
        _check_borrowing(plans, root, problems)
    _check_inference([plan for plan in plans if plan.name not in unknown], root, problems)
    return tuple(plans)


def _names_if_split(flavors: Sequence[FlavorPlan], queueing: QueueingConfig) -> set[str]:
    """When queueing.flavorPerCapacityType names a pool that does not exist (a misspelling, reported there),
    the flavors every pool would make if split per capacity type; otherwise none."""
    pools = {flavor.pool.name: flavor.pool for flavor in flavors}
    if all(name in pools for name in queueing.flavor_per_capacity_type):
        return set()
    return {_flavor_name(name, t) for name, pool in pools.items() for t in pool.config.capacity_types}


def _check_names(tenants: Sequence[TenantConfig], root: str, problems: Problems) -> None:
    seen: dict[str, int] = {}
    labels = item_labels(tenants)
    for index, tenant in enumerate(tenants):
        if tenant.name in RESERVED_NAMESPACES or tenant.name.startswith("kube-"):
            problems.add(
                f"{root}[{labels[index]}].name",
                f"{show(tenant.name)} is a namespace the platform or Kubernetes owns; pick another name",
            )
        if tenant.name == CPU_FLAVOR:
            problems.add(f"{root}[{labels[index]}].name", "'cpu' is the name of the CPU flavor; pick another name")
        if tenant.name in seen:
            problems.add(
                f"{root}[{index}].name",
                f"{show(tenant.name)} is already the name of {root}[{seen[tenant.name]}]; tenant names must be unique",
            )
        seen.setdefault(tenant.name, index)


def _check_deployment_names(tenants: Sequence[TenantConfig], root: str, problems: Problems) -> None:
    """Each inference deployment's resources are named `<tenant>-<deployment>-...` (components/autoscaling),
    so tenant `a-b` with deployment `c` and tenant `a` with deployment `b-c` would declare one URN twice."""
    owners: dict[str, tuple[str, str]] = {}
    for tenant in tenants:
        for deployment in tenant.inference:
            joined = f"{tenant.name}-{deployment.name}"
            other = owners.setdefault(joined, (tenant.name, deployment.name))
            if other != (tenant.name, deployment.name):
                problems.add(
                    f"{root}[{tenant.name}].inference[{deployment.name}].name",
                    f"tenant {tenant.name}'s deployment {deployment.name} and tenant {other[0]}'s deployment "
                    f"{other[1]} both name their resources {joined}-*: rename one of the deployments",
                )


def _check_principals(
    tenants: Sequence[TenantConfig], cluster_admins: Sequence[str], creator: str | None, root: str, problems: Problems
) -> None:
    """One access entry per principal (EKS refuses a second: ResourceInUseException).

    The cluster's creator already has EKS's bootstrap entry, which the stack does not declare.
    """
    admins = set(cluster_admins)
    labels = item_labels(tenants)
    # Access entries are named by principal_slug, which folds case and punctuation: two principals
    # that fold to one slug would declare one URN twice.
    slugs = {principal_slug(arn): arn for arn in cluster_admins}
    for index, tenant in enumerate(tenants):
        for role in ("admins", "viewers"):
            principals = getattr(tenant, role)
            for position, arn in enumerate(principals):
                path = f"{root}[{labels[index]}].{role}[{position}]"
                same = slugs.setdefault(principal_slug(arn), arn)
                if same != arn:
                    problems.add(
                        path,
                        f"{show(arn)} and {show(same)} differ only in case or punctuation, and both would name their "
                        f"EKS access entry {principal_slug(arn)}: use one of them",
                    )
                    continue
                if arn == creator:
                    problems.add(
                        path,
                        f"{show(arn)} created the cluster ({CONFIG_NAMESPACE}:cluster.creator) and holds EKS's own "
                        "cluster-admin entry; EKS allows it one access entry: remove it here",
                    )
                elif arn in admins:
                    problems.add(
                        path,
                        f"{show(arn)} is a cluster admin already ({CONFIG_NAMESPACE}:cluster.admins); "
                        "EKS allows it one access entry: remove it here",
                    )
                elif arn in principals[:position]:
                    problems.add(path, f"{show(arn)} is listed twice")
                elif role == "viewers" and arn in tenant.admins:
                    problems.add(path, f"{show(arn)} is an admin of this tenant already")


def _check_capacity(plans: Sequence[TenantPlan], root: str, problems: Problems) -> None:
    """Nominal quotas, summed in tenant order, must fit each pool's declared capacity."""
    promised: dict[str, int] = {}
    labels = item_labels([plan.config for plan in plans])
    for index, plan in enumerate(plans):
        for quota in plan.quotas:
            pool = quota.flavor.pool
            promised[pool.name] = promised.get(pool.name, 0) + quota.quota.nominal
            capacity = quota.flavor.capacity_units
            if quota.quota.nominal and promised[pool.name] > capacity:
                problems.add(
                    f"{root}[{labels[index]}].gpu.{quota.flavor.name}.nominal",
                    f"{quota.flavor.amount(quota.quota.nominal)} makes {promised[pool.name]} promised on pool "
                    f"{pool.name}, which declares {quota.flavor.amount(capacity)}: lower the quota or raise the pool's gpus",
                )


def _check_borrowing(plans: Sequence[TenantPlan], root: str, problems: Problems) -> None:
    """A tenant cannot borrow more than the rest of the organisation could lend it.

    Linear in tenants: the lendable total per flavor is summed once, and each tenant's own share is
    taken out of it.
    """
    lendable: dict[str, int] = {}
    for plan in plans:
        for quota in plan.quotas:
            lendable[quota.flavor.name] = lendable.get(quota.flavor.name, 0) + _lendable(quota.quota)
    labels = item_labels([plan.config for plan in plans])
    for index, plan in enumerate(plans):
        for quota in plan.quotas:
            available = lendable[quota.flavor.name] - _lendable(quota.quota)
            if quota.quota.borrowing_limit > available:
                lenders = [
                    f"{other.name} {_lendable(theirs.quota)}"
                    for other in plans
                    if other is not plan
                    for theirs in other.quotas
                    if theirs.flavor.name == quota.flavor.name and _lendable(theirs.quota)
                ]
                problems.add(
                    f"{root}[{labels[index]}].gpu.{quota.flavor.name}.borrowingLimit",
                    f"{quota.flavor.amount(quota.quota.borrowing_limit)} exceeds the {available} the rest of the cohort "
                    f"can lend on {quota.flavor.name} ({', '.join(lenders) or 'no other tenant has quota there'}); "
                    f"lower it to {available}",
                )


def _check_inference(plans: Sequence[TenantPlan], root: str, problems: Problems) -> None:
    """An inference deployment at its max must fit what Kueue can admit for its tenant on its flavor."""
    labels = item_labels([plan.config for plan in plans])
    for index, plan in enumerate(plans):
        quotas = {q.flavor.name: q for q in plan.quotas}
        deployments = item_labels(plan.config.inference)
        for position, deployment in enumerate(plan.config.inference):
            key = f"{root}[{labels[index]}].inference[{deployments[position]}]"
            quota = quotas.get(deployment.flavor)
            if quota is None:
                problems.add(
                    f"{key}.flavor",
                    f"{show(deployment.flavor)} is not a flavor tenant {plan.name} has quota on "
                    f"({', '.join(quotas) or 'none'}), so its pods would never be admitted"
                    f"{did_you_mean(deployment.flavor, list(quotas))}",
                )
                continue
            if GPU_RESOURCE not in quota.flavor.resources_per_unit or quota.flavor.pool.config.allocation == "dra":
                problems.add(
                    f"{key}.flavor",
                    f"{show(deployment.flavor)} does not hand out {GPU_RESOURCE} (MIG devices or DRA claims); "
                    "run inference deployments on a whole-GPU or time-sliced flavor",
                )
                continue
            if quota.flavor.pool.config.scheduler == "kai":
                # Its replicas are the default scheduler's, and only KAI's pods may run on a KAI pool (components/admission.py).
                problems.add(
                    f"{key}.flavor",
                    f"{show(deployment.flavor)} is on pool {quota.flavor.pool.name}, scheduled by the KAI Scheduler, which "
                    "takes only pods naming it; the platform's model servers use the default scheduler: run them on "
                    "another flavor",
                )
                continue
            most = deployment.max_replicas * deployment.gpus_per_replica
            if not fits_queue(most, quota.quota.nominal, quota.quota.borrowing_limit):
                admissible = queue_ceiling(quota.quota.nominal, quota.quota.borrowing_limit) or 0
                problems.add(
                    f"{key}.maxReplicas",
                    f"{deployment.max_replicas} replicas x {deployment.gpus_per_replica} {quota.flavor.unit} = "
                    f"{quota.flavor.amount(most)} "
                    f"exceeds the {admissible} tenant {plan.name} can get on {deployment.flavor} (nominal "
                    f"{quota.quota.nominal} + borrowing {quota.quota.borrowing_limit}); lower maxReplicas to "
                    f"{admissible // deployment.gpus_per_replica}",
                )


def _gpus(count: float) -> str:
    """`1 GPU`, `0.5 GPUs`, `3 GPUs`."""
    return f"{count:g} GPU" if count == 1 else f"{count:g} GPUs"


def _lendable(quota: FlavorQuota) -> int:
    return lendable(quota.nominal, quota.lending_limit)


def cpu_flavor_labels() -> dict[str, str]:
    """The CPU flavor selects the general CPU pool's nodes."""
    return {POOL_LABEL: CPU_POOL_NAME}

