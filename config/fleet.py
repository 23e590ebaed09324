"""`gpu-platform:fleet`: a stack as MultiKueue's manager or one of its workers, and the fleet's rules.

A manager names its workers by Pulumi stack; each worker names its manager. The manager reads each
worker's endpoint and CA through a `pulumi.StackReference`, never copied values. Upstream has no role
sharing at v0.19.2 (site/content/en/docs/concepts/multikueue.md, "Using manager to run workloads"):
a manager is never one of its own workers, so a stack is a manager or a worker, not both.

Every stack still declares its own pools, tenants and quotas; `fleet_problems` holds the fleet to one
set of tenants and flavors, and each tenant's quota on the manager to the sum of its quotas on the
workers, as upstream advises ("the quota in the manager cluster should equal the total quota
available in all worker clusters"): lower leaves workers idle, higher dispatches work no worker admits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import Field, model_validator

from models.kubernetes.duration import duration_seconds

from . import namespaces
from .base import ConfigModel
from .errors import show
from .fair_share import TenantPlan
from .keys import CONFIG_NAMESPACE
from .secrets import tenant_secret_prefix

KEY = f"{CONFIG_NAMESPACE}:fleet"
# The Pulumi project (Pulumi.yaml `name`), which a StackReference names; the same as the config namespace.
PROJECT = CONFIG_NAMESPACE
# Each worker's token for the manager is the Secrets Manager secret `<prefix>-<worker stack>` in the manager's region.
TOKEN_PREFIX = "multikueue"
# The worker-side ServiceAccount (in kueue-system) the manager acts as, and its token Secret.
WORKER_SERVICE_ACCOUNT = "multikueue-manager"
# The one AdmissionCheck and MultiKueueConfig on a manager; every tenant's ClusterQueue names the check.
ADMISSION_CHECK = "multikueue"


class FleetConfig(ConfigModel):
    """This stack's place in a MultiKueue fleet; left out, the stack is a cluster of its own."""

    role: Literal["none", "manager", "worker"] = Field(
        "none",
        description="`manager`: the tenants' ClusterQueues dispatch every admitted workload to `workers` through "
        "MultiKueue and run nothing here. `worker`: runs what `manager` dispatches, under the same tenants' "
        "quotas. `none`: not in a fleet.",
    )
    manager: str | None = Field(
        None, description="A worker's manager: its Pulumi stack name (in this project). Required for a worker."
    )
    workers: list[str] = Field(
        default_factory=list,
        description="A manager's workers, by Pulumi stack name, most preferred first (MultiKueueConfig "
        "`spec.clusters` keeps this order; 1 to 20).",
    )
    gc_interval: str = Field(
        "1m",
        description="A manager's `multiKueue.gcInterval`: how often it deletes worker objects whose workload "
        "is gone from the manager. Kueue's default; `0s` turns collection off.",
    )
    worker_lost_timeout: str = Field(
        "15m",
        description="A manager's `multiKueue.workerLostTimeout`: how long a workload stays admitted on a worker "
        "the manager cannot reach before it is evicted and queued again. Kueue's default.",
    )

    @model_validator(mode="after")
    def _role_fields(self) -> FleetConfig:
        if self.role == "worker" and not self.manager:
            raise ValueError("a worker names its manager's stack: set `manager`")
        if self.role != "worker" and self.manager:
            raise ValueError(f"`manager` is for a worker; this stack's role is {self.role}")
        if self.role == "manager" and not 1 <= len(self.workers) <= 20:
            raise ValueError("a manager names 1 to 20 worker stacks in `workers` (MultiKueueConfig spec.clusters)")
        if self.role != "manager" and self.workers:
            raise ValueError(f"`workers` is for a manager; this stack's role is {self.role}")
        if len(set(self.workers)) != len(self.workers):
            raise ValueError("`workers` names a stack twice")
        for key, value in (("gcInterval", self.gc_interval), ("workerLostTimeout", self.worker_lost_timeout)):
            try:
                duration_seconds(value)
            except ValueError:
                raise ValueError(f"{key}: {show(value)} is not a duration such as 1m or 90s") from None
        return self

    @property
    def gc_interval_seconds(self) -> int:
        return duration_seconds(self.gc_interval)

    @property
    def worker_lost_timeout_seconds(self) -> int:
        return duration_seconds(self.worker_lost_timeout)


def origin(manager_cluster: str) -> str:
    """The manager's `multiKueue.origin`: its cluster name, so two managers sharing a worker never
    collect each other's objects (the garbage collector deletes by this label value)."""
    return manager_cluster


def worker_token_secret(manager_cluster: str, worker_stack: str) -> str:
    """The Secrets Manager secret holding the worker's token for the manager:
    `/<manager>/kueue-system/multikueue-<worker>`. Under the controller namespace's path, which no tenant's
    SecretStore reads (a tenant is never named for a controller namespace), and which the manager's token
    store reads whole."""
    return f"{tenant_secret_prefix(manager_cluster, namespaces.KUEUE)}{TOKEN_PREFIX}-{worker_stack}"


def stack_reference_name(stack: str) -> str:
    """A stack of this project as `pulumi.StackReference` names it: `organization/<project>/<stack>`, the
    self-managed backends' organization (Pulumi Cloud users write their organization's name here)."""
    return f"organization/{PROJECT}/{stack}"


def kubeconfig_secret(worker_stack: str) -> str:
    """The Secret in kueue-system the manager's MultiKueueCluster for `worker_stack` reads its kubeconfig from."""
    return f"multikueue-{worker_stack}"


# --- the fleet as a whole -------------------------------------------------------------------------------

Quotas = dict[tuple[str, str, str], int]  # (tenant, flavor, resource) -> nominal


def fleet_problems(
    manager_stack: str,
    manager_fleet: FleetConfig,
    manager_partition: str,
    manager_quotas: Quotas,
    workers: Mapping[str, tuple[FleetConfig, str, Quotas]],
) -> list[str]:
    """One line per way the manager and its workers disagree; [] for a sound fleet.

    `workers` maps each stack the manager names to its fleet section, its region's partition and its
    quotas; a stack that does not exist is left out of it.
    """
    problems: list[str] = []
    key = f"Pulumi.{manager_stack}.yaml: {KEY}.workers"
    for name in manager_fleet.workers:
        where = f"{key}[{name}]"
        if name == manager_stack:
            problems.append(f"{where}: the manager names itself, a cycle: a MultiKueue manager is never its own worker")
            continue
        if name not in workers:
            problems.append(f"{where}: no stack {show(name)} (Pulumi.{name}.yaml does not exist)")
            continue
        fleet, partition, _ = workers[name]
        if fleet.role == "manager":
            problems.append(f"{where}: {name} is itself a manager, a cycle: name a worker stack")
        elif fleet.role != "worker" or fleet.manager is None:
            problems.append(f"{where}: {name} names no manager: set {KEY}.manager: {manager_stack} in Pulumi.{name}.yaml")
        elif fleet.manager != manager_stack:
            problems.append(f"{where}: {name} names {fleet.manager} as its manager, not {manager_stack}")
        if partition != manager_partition:
            problems.append(
                f"{where}: {name} is in partition {partition}, the manager in {manager_partition}: the manager's "
                "IAM roles and Secrets Manager do not reach across partitions; keep a fleet in one partition"
            )
    sound = {name: quotas for name, (_, _, quotas) in workers.items() if name in manager_fleet.workers}
    if sound:
        problems += _quota_problems(manager_stack, manager_quotas, sound)
    return problems


def _quota_problems(manager_stack: str, manager: Quotas, workers: Mapping[str, Quotas]) -> list[str]:
    """Tenants and flavors the same on both sides; each nominal on the manager the workers' sum."""
    problems = []
    manager_tenants = {tenant for tenant, _, _ in manager}
    for name, quotas in sorted(workers.items()):
        tenants = {tenant for tenant, _, _ in quotas}
        for tenant in sorted(manager_tenants - tenants):
            problems.append(f"Pulumi.{name}.yaml: {CONFIG_NAMESPACE}:tenants: no tenant {tenant}, which the manager "
                            f"{manager_stack} queues: add it, so its workloads are admissible here")
        for tenant in sorted(tenants - manager_tenants):
            problems.append(f"Pulumi.{name}.yaml: {CONFIG_NAMESPACE}:tenants[{tenant}]: not a tenant of the manager "
                            f"{manager_stack}: declare it there too, or remove it here")
    manager_flavors = {flavor for _, flavor, _ in manager}
    worker_flavors = {flavor for quotas in workers.values() for _, flavor, _ in quotas}
    for flavor in sorted(worker_flavors - manager_flavors):
        problems.append(f"Pulumi.{manager_stack}.yaml: {CONFIG_NAMESPACE}:tenants: no tenant has quota in flavor "
                        f"{flavor}, which a worker offers: the manager would never dispatch work for it")
    for flavor in sorted(manager_flavors - worker_flavors):
        problems.append(f"Pulumi.{manager_stack}.yaml: {CONFIG_NAMESPACE}:tenants: flavor {flavor} is on no worker: "
                        "work admitted to it could never be admitted by a worker")
    # A tenant some worker lacks, or a flavor one side lacks, is reported above; its sums would only repeat that.
    shared = manager_flavors & worker_flavors
    everywhere = manager_tenants.intersection(*({tenant for tenant, _, _ in quotas} for quotas in workers.values()))
    total: Quotas = {}
    for quotas in workers.values():
        for entry, nominal in quotas.items():
            total[entry] = total.get(entry, 0) + nominal
    for entry in sorted(set(manager) | set(total)):
        tenant, flavor, resource = entry
        if tenant in everywhere and flavor in shared and manager.get(entry, 0) != total.get(entry, 0):
            problems.append(
                f"Pulumi.{manager_stack}.yaml: {CONFIG_NAMESPACE}:tenants[{tenant}].{flavor}: nominal {resource} "
                f"{manager.get(entry, 0)} on the manager, {total.get(entry, 0)} across the workers: make the "
                "manager's the workers' sum"
            )
    return problems


def tenant_quotas(tenants: Sequence[TenantPlan]) -> Quotas:
    """(tenant, flavor, resource) -> nominal, for the GPU resources of every tenant's flavors."""
    return {
        (tenant.name, quota.flavor.name, resource): nominal
        for tenant in tenants
        for quota in tenant.quotas
        for resource, (nominal, _, _) in quota.resources().items()
        if resource not in ("cpu", "memory")
    }


def manager_multikueue(fleet: FleetConfig, manager_cluster: str) -> dict[str, str]:
    """The manager's Configuration `multiKueue` section: the stack's GC interval and lost-worker timeout,
    and its own origin; the dispatcher stays Kueue's default, AllAtOnce."""
    return {
        "gcInterval": fleet.gc_interval,
        "origin": origin(manager_cluster),
        "workerLostTimeout": fleet.worker_lost_timeout,
    }
