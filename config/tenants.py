"""`gpu-platform:tenants` and `gpu-platform:queueing`: who gets which GPUs, and how they share.

A tenant is one team: a namespace, a Kueue LocalQueue and ClusterQueue, quotas, network rules and
access. Its GPU quota is written per flavor (a pool, or a pool's capacity type); every number in
its ResourceQuota and ClusterQueue is derived from that in `config/fair_share.py`.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, RootModel, field_validator, model_validator

from .autoscaling import InferenceDeploymentConfig
from .base import ConfigModel
from .cluster import PrincipalArn
from .errors import duplicates, show

_DNS_LABEL = re.compile(r"^[a-z]([a-z0-9-]{0,38}[a-z0-9])?$")


def _dns_label(value: str) -> str:
    if not _DNS_LABEL.match(value):
        raise ValueError("is not a DNS label: lowercase letters, digits and '-', starting with a letter, at most 40 characters")
    return value


DnsLabel = Annotated[str, AfterValidator(_dns_label)]

# How a pool's flavors are named (config/fair_share.py plan_flavors); the config reference and the errors quote it.
FLAVOR_NAMING_RULE = (
    "a flavor is the pool's name without its 'gpu-' prefix, then '-<capacity type>' when the pool has one capacity "
    "type or is listed in queueing.flavorPerCapacityType (one flavor per type), else nothing"
)
# What one unit of quota is on each kind of flavor.
QUOTA_UNITS = (
    "Units are the flavor's: GPUs; GPU slices on a time-sliced pool (`nominal: 2` at `replicas: 4` is half a GPU, "
    "and the pool's capacity is gpus x replicas); one GPU's whole MIG layout on a MIG pool."
)


class FlavorQuota(ConfigModel):
    """A tenant's share of one flavor, in the flavor's units: GPUs, or GPU slices on a time-sliced pool."""

    nominal: int = Field(
        ge=0,
        description=f"Guaranteed units; the sum over tenants must fit the pool's declared capacity. {QUOTA_UNITS}",
    )
    borrowing_limit: int = Field(
        0, ge=0, description="Units the tenant may borrow beyond nominal from the rest of its cohort when they are idle."
    )
    lending_limit: int | None = Field(
        None, ge=0, description="Units of its nominal the tenant lends to others at most; all of them when unset."
    )
    device_class: str | None = Field(
        None,
        alias="deviceClass",
        description="On a DRA flavor: the administrator's DeviceClass (gpu.dra.deviceClasses) the quota is in, counted "
        "under `<class>.deviceclass.resource.k8s.io/devices`, so only claims of that class use it; unset: the driver's.",
    )

    @model_validator(mode="after")
    def _lend_only_what_you_have(self) -> FlavorQuota:
        if self.lending_limit is not None and self.lending_limit > self.nominal:
            raise ValueError(f"lendingLimit {self.lending_limit} exceeds nominal {self.nominal}: a tenant lends only what it has")
        return self


class NetworkAllowances(ConfigModel):
    """What may reach the tenant's pods and what they may reach, beyond DNS, their own namespace and metrics scrapes."""

    ingress_from_namespaces: list[DnsLabel] = Field(
        default_factory=list,
        description="Namespaces whose pods may connect to this tenant's pods (e.g. an ingress controller's).",
    )
    internet_egress: bool = Field(False, description="Allow connections to addresses outside the VPC's private ranges.")
    load_balancers: int = Field(0, ge=0, le=20, description="Services of type LoadBalancer the tenant may create.")


# Node-local storage a container gets when it declares none (the tenant's LimitRange): a pod that fills
# its node's disk is evicted at its limit instead of evicting its neighbours (DiskPressure).
DEFAULT_EPHEMERAL_REQUEST_GIB = 1
DEFAULT_EPHEMERAL_LIMIT_GIB = 10
# What a model server writes besides its model cache (logs, its writable layer): its limit is cache + this.
SERVER_SCRATCH_GIB = 10
# A tenant's ephemeral-storage quota when it sets none and its model servers need less.
DEFAULT_EPHEMERAL_STORAGE_GIB = 1000


class TenantConfig(ConfigModel):
    """One team: its namespace, GPU quota per flavor, CPU and memory quota, priority, access and network rules."""

    name: DnsLabel = Field(
        description="Tenant name; also its namespace and ClusterQueue name (its LocalQueue is `default`, where Kueue "
        "puts jobs that name no queue)."
    )
    business_unit: str | None = Field(
        None, description="The business unit (a nested cohort under `queueing.businessUnits`) the tenant belongs to."
    )
    gpu: dict[str, FlavorQuota] = Field(
        default_factory=dict,
        description=f"GPU quota per flavor name (the render's summary lists them): {FLAVOR_NAMING_RULE}; e.g. pool "
        "`gpu-h100` on on-demand only makes `h100-on-demand`. " + QUOTA_UNITS,
    )
    cpu: int = Field(32, ge=0, le=100000, description="vCPUs for work without GPUs (the CPU pool), nominal.")
    memory_gib: int = Field(128, alias="memoryGiB", ge=0, le=1000000, description="Memory for work without GPUs, GiB, nominal.")
    max_pods: int = Field(500, ge=1, le=100000, description="ResourceQuota on pods in the namespace.")
    max_volume_claims: int = Field(50, ge=0, le=10000, description="ResourceQuota on PersistentVolumeClaims.")
    volume_storage_gib: int = Field(
        5000,
        alias="volumeStorageGiB",
        ge=0,
        le=1000000,
        description="ResourceQuota on the storage PersistentVolumeClaims request (EBS volumes the tenant's claims "
        "create), GiB, over all claims of the namespace.",
    )
    max_objects: int = Field(
        1000,
        ge=1,
        le=100000,
        description="ResourceQuota on the count of each kind of object the tenant can create in its namespace (ConfigMaps, "
        "Secrets, Services, Deployments, Roles, Leases, ExternalSecrets, ...): what one tenant may store in the "
        "cluster's etcd. Kinds made in bulk get a multiple: ReplicaSets 11x, Jobs, JobSets, TrainJobs and "
        "ResourceClaims 10x, pods in storage (finished ones included) maxPods + 10x (docs/tenants.md). The "
        "platform's own objects there (a Service per inference deployment, synced Secrets) count too.",
    )
    ephemeral_storage_gib: int | None = Field(
        None,
        alias="ephemeralStorageGiB",
        ge=0,
        le=1000000,
        description="ResourceQuota on node-local storage (emptyDir volumes, container layers and logs), GiB, requested "
        f"and limited. Containers that declare none request {DEFAULT_EPHEMERAL_REQUEST_GIB} GiB, limited to "
        f"{DEFAULT_EPHEMERAL_LIMIT_GIB} GiB; it must hold every platform-served model cache at maxReplicas plus one. "
        f"Unset: {DEFAULT_EPHEMERAL_STORAGE_GIB} GiB, or what those caches need when that is more.",
    )
    priority: str = Field("standard", description="Priority tier, a name from `queueing.priorities`.")
    fair_share_weight: float = Field(
        1.0, gt=0, le=100, description="Weight of the tenant's ClusterQueue in fair sharing of borrowed capacity."
    )
    pod_security: Literal["restricted", "baseline"] = Field(
        "restricted", description="Pod Security Standard enforced in the namespace (`warn` and `audit` stay restricted)."
    )
    admins: list[PrincipalArn] = Field(
        default_factory=list, description="IAM roles or users with admin rights in the tenant's namespace only."
    )
    viewers: list[PrincipalArn] = Field(
        default_factory=list, description="IAM roles or users with read-only rights in the tenant's namespace."
    )
    network: NetworkAllowances = Field(default_factory=NetworkAllowances, description="Network allowances.")
    inference: list[InferenceDeploymentConfig] = Field(
        default_factory=list, description="Inference deployments KEDA scales on GPU utilisation and queue depth."
    )

    @field_validator("inference")
    @classmethod
    def _unique_deployments(cls, deployments: list[InferenceDeploymentConfig]) -> list[InferenceDeploymentConfig]:
        repeated = duplicates([d.name for d in deployments])
        if repeated:
            raise ValueError(f"declares deployment {show(repeated[0])} twice")
        return deployments

    @property
    def served_model_storage_gib(self) -> int:
        """Node-local storage the platform's model servers limit at maxReplicas + 1: a rollout adds one replica
        before removing one (maxSurge 1), so that many caches, each with its scratch space, exist at once."""
        return sum(
            (d.max_replicas + 1) * (d.serving.cache_gib + SERVER_SCRATCH_GIB) for d in self.inference if d.serving is not None
        )

    @property
    def ephemeral_storage_quota_gib(self) -> int:
        """The namespace's ephemeral-storage quota: as set, or derived from what the tenant declares."""
        if self.ephemeral_storage_gib is not None:
            return self.ephemeral_storage_gib
        return max(DEFAULT_EPHEMERAL_STORAGE_GIB, self.served_model_storage_gib)

    @model_validator(mode="after")
    def _caches_fit_the_storage_quota(self) -> TenantConfig:
        """Only a quota the user set can be too small; a derived one covers the caches by construction."""
        needed = self.served_model_storage_gib
        if self.ephemeral_storage_gib is not None and needed > self.ephemeral_storage_gib:
            raise ValueError(
                f"ephemeralStorageGiB {self.ephemeral_storage_gib} is below the {needed} GiB its model servers limit at "
                f"maxReplicas + 1 (cacheGiB + {SERVER_SCRATCH_GIB} GiB each): raise ephemeralStorageGiB or lower cacheGiB"
            )
        return self

    @field_validator("gpu")
    @classmethod
    def _flavor_names(cls, gpu: dict[str, FlavorQuota]) -> dict[str, FlavorQuota]:
        for flavor in gpu:
            if not _DNS_LABEL.match(flavor):
                raise ValueError(f"names flavor {show(flavor)}, which is not a DNS label")
        return gpu


class TenantsConfig(RootModel[list[TenantConfig]]):
    """Tenants: one entry per team onboarded to the platform."""


class QueueingConfig(ConfigModel):
    """Kueue: the organisation's cohort tree and the workload priority tiers."""

    cohort: DnsLabel = Field("organization", description="The root Cohort every tenant's ClusterQueue belongs to.")
    business_units: list[DnsLabel] = Field(
        default_factory=list, description="Nested cohorts under the root, one per business unit; tenants name theirs."
    )
    priorities: dict[str, int] = Field(
        default_factory=lambda: {"production": 1000, "standard": 500, "best-effort": 100},
        description="WorkloadPriorityClasses by name -> value; higher preempts lower within a ClusterQueue.",
    )
    flavor_per_capacity_type: list[str] = Field(
        default_factory=list,
        description="Pools that mix on-demand and spot and get one flavor per capacity type (`<pool>-on-demand`, "
        "`<pool>-spot`) instead of one for both.",
    )

    @model_validator(mode="after")
    def _distinct_cohorts(self) -> QueueingConfig:
        repeated = duplicates([self.cohort, *self.business_units])
        if repeated:
            raise ValueError(f"cohort {show(repeated[0])} is named twice (the root and business units are all Cohorts)")
        return self

    @field_validator("priorities")
    @classmethod
    def _valid_priorities(cls, priorities: dict[str, int]) -> dict[str, int]:
        if not priorities:
            raise ValueError("must name at least one priority tier")
        for name, value in priorities.items():
            if not _DNS_LABEL.match(name):
                raise ValueError(f"names tier {show(name)}, which is not a DNS label")
            if not -(10**9) <= value <= 10**9:
                raise ValueError(f"gives {name} value {value}; WorkloadPriorityClass values lie within +-1,000,000,000")
        return priorities
