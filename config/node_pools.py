"""`gpu-platform:nodePools`, `gpu-platform:cpuPool` and `gpu-platform:gpu`: where GPU capacity comes from.

Each GPU pool becomes a Karpenter NodePool and EC2NodeClass. The pool declares its GPU capacity once
(`gpus`); the NodePool's `nvidia.com/gpu` limit, the schedulable units its sharing mode yields, its
cost and every quota and queue are derived from that one number.
"""

from __future__ import annotations

import difflib
import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, ValidationInfo, field_validator, model_validator

from models.cron import CronError
from models.karpenter import disruption
from models.kubernetes.duration import duration_seconds as duration_seconds
from models.nvidia import dra_driver

from .base import ConfigModel
from .catalog import CPU_FAMILIES
from .errors import show
from .headroom import WarmStartConfig
from .labels import GPU_DEVICE_CLASS, MIG_DEVICE_CLASS

_DNS_LABEL = re.compile(r"^[a-z]([a-z0-9-]{0,38}[a-z0-9])?$")
# A DeviceClass name is a DNS subdomain (resource.k8s.io/v1 ValidateDeviceClass); at most 63 characters here,
# so `<name>.deviceclass.resource.k8s.io/devices` stays a valid quota resource name with room to spare.
_DEVICE_CLASS_NAME = re.compile(r"^(?=.{1,63}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# Karpenter's own patterns (karpenter.sh_nodepools.yaml at v1.14.1), so a typo fails here, not in the API server.
_BUDGET_NODES = re.compile(r"^((100|[0-9]{1,2})%|[0-9]+)$")
_DURATION = re.compile(r"^(([0-9]+(s|m|h))+)$")
_BUDGET_DURATION = re.compile(r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$")
_CRON_FIELD = r"[0-9A-Za-z*/,\-]+"
_CRON = re.compile(rf"^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|{_CRON_FIELD}( {_CRON_FIELD}){{4}})$")
# g5, p4d, inf2, trn1, dl1, gr6...: instance families that carry accelerators.
_ACCELERATOR_FAMILY = re.compile(r"^(g|gr|p|inf|trn|dl|vt|f)[0-9]")
_AMI_VERSION = re.compile(r"^(latest|v[0-9][0-9.]*)$")


def _duration(allow_never: bool):
    def check(value: str) -> str:
        if allow_never and value == "Never":
            return value
        if not _DURATION.match(value):
            never = " or 'Never'" if allow_never else ""
            raise ValueError(f"is not a duration such as '30s', '10m' or '720h'{never}")
        return value

    return AfterValidator(check)


Duration = Annotated[str, _duration(allow_never=False)]
DurationOrNever = Annotated[str, _duration(allow_never=True)]
CapacityType = Literal["on-demand", "spot"]
# GPU pools may also launch into capacity reservations: On-Demand Capacity Reservations and Capacity
# Blocks, Karpenter 1.14's `reserved` capacity type (its ReservedCapacity feature gate is on by default).
GpuCapacityType = Literal["on-demand", "spot", "reserved"]
SPOT: CapacityType = "spot"
RESERVED: GpuCapacityType = "reserved"
_RESERVATION_ID = re.compile(r"^cr-[0-9a-z]+$")
_ACCOUNT_ID = re.compile(r"^[0-9]{12}$")

# Deleting a NodePool waits for its nodes: each NodeClaim holds the NodePool through an ownerReference
# with blockOwnerDeletion (kubernetes-sigs/karpenter pkg/controllers/provisioning/scheduling/
# nodeclaimtemplate.go) and pulumi-kubernetes deletes in the foreground, and the EC2NodeClass's
# `karpenter.k8s.aws/termination` finalizer waits while any NodeClaim names it (karpenter-provider-aws
# v1.14.1 pkg/controllers/nodeclass/controller.go). A node goes once it is drained, its volumes detach
# or the pool's terminationGracePeriod has passed, and its instance is terminated (kubernetes-sigs/karpenter
# at the commit karpenter-provider-aws v1.14.1 pins, pkg/controllers/node/termination/controller.go:
# awaitDrain, awaitVolumeDetachment, awaitInstanceTermination). The margin covers the instance's
# termination and the node class's instance profile clean-up after the grace period runs out.
DELETE_MARGIN_MINUTES = 15
def delete_timeout(termination_grace_period: str) -> str:
    """How long `pulumi destroy` waits for a pool's NodePool and EC2NodeClass: its grace period plus the margin."""
    minutes = -(-duration_seconds(termination_grace_period) // 60) + DELETE_MARGIN_MINUTES
    return f"{minutes}m"


def _on_demand_only() -> list[CapacityType]:
    return ["on-demand"]


def _gpu_on_demand_only() -> list[GpuCapacityType]:
    return ["on-demand"]


class CapacityReservationConfig(ConfigModel):
    """Capacity reservations a pool's `reserved` capacity type launches into: by id, or by tags.

    Mirrors one EC2NodeClass `capacityReservationSelectorTerms` entry (karpenter-crd 1.14.1,
    karpenter.k8s.aws_ec2nodeclasses.yaml): an id stands alone; tags may name the owning account.
    """

    id: str | None = Field(None, description="An On-Demand Capacity Reservation or Capacity Block id, `cr-...`.")
    tags: dict[str, str] | None = Field(
        None, description="Tags selecting reservations (`'*'` matches any value), e.g. `{team: ml}`."
    )
    owner_id: str | None = Field(
        None, alias="ownerID", description="With tags: the AWS account that owns the reservations (shared ones)."
    )

    @field_validator("id")
    @classmethod
    def _valid_id(cls, value: str | None) -> str | None:
        if value is not None and not _RESERVATION_ID.match(value):
            raise ValueError("is not a capacity reservation id such as 'cr-0123456789abcdef0'")
        return value

    @field_validator("owner_id")
    @classmethod
    def _valid_owner(cls, value: str | None) -> str | None:
        if value is not None and not _ACCOUNT_ID.match(value):
            raise ValueError("is not a 12-digit AWS account id")
        return value

    @field_validator("tags")
    @classmethod
    def _valid_tags(cls, tags: dict[str, str] | None) -> dict[str, str] | None:
        if tags is not None and (not tags or any(not key or not value for key, value in tags.items())):
            raise ValueError("needs at least one tag, with no empty key or value")
        return tags

    @model_validator(mode="after")
    def _id_or_tags(self) -> CapacityReservationConfig:
        if (self.id is None) == (self.tags is None):
            raise ValueError("give exactly one of id (one reservation) or tags (every reservation carrying them)")
        if self.id is not None and self.owner_id is not None:
            raise ValueError("ownerID goes with tags; an id names one reservation already")
        return self


class BudgetConfig(ConfigModel):
    """One disruption budget: how many nodes Karpenter may disrupt at once, optionally only in a window."""

    nodes: str = Field(description="Nodes that may be disrupted at once: a count ('0', '2') or a percentage ('20%').")
    schedule: str | None = Field(
        None, description="Cron schedule (UTC) when this budget starts to apply, e.g. '0 9 * * mon-fri'; needs `duration`."
    )
    duration: str | None = Field(None, description="How long the budget applies after each `schedule` start, e.g. '8h'.")
    reasons: list[Literal["Underutilized", "Empty", "Drifted"]] | None = Field(
        None, description="Disruption reasons this budget limits; all reasons when unset."
    )

    @field_validator("nodes")
    @classmethod
    def _valid_nodes(cls, nodes: str) -> str:
        if not _BUDGET_NODES.match(nodes):
            raise ValueError("is not a node count ('0', '3') or a percentage ('20%')")
        return nodes

    @field_validator("schedule")
    @classmethod
    def _valid_schedule(cls, schedule: str | None) -> str | None:
        if schedule is not None and not _CRON.match(schedule):
            raise ValueError("is not a cron schedule with five fields, e.g. '0 9 * * mon-fri'")
        if schedule is not None:
            try:
                disruption.parse_schedule(schedule)
            except CronError as error:
                # Karpenter fails closed on it: no node of the pool is ever disrupted by a budget-gated method.
                raise ValueError(f"is not a schedule Karpenter's cron parser accepts: {error}") from None
        return schedule

    @field_validator("duration")
    @classmethod
    def _valid_duration(cls, duration: str | None) -> str | None:
        if duration is not None and not _BUDGET_DURATION.match(duration):
            raise ValueError("is not a budget duration in hours and minutes, e.g. '8h' or '1h30m'")
        return duration

    @model_validator(mode="after")
    def _schedule_needs_duration(self) -> BudgetConfig:
        if (self.schedule is None) != (self.duration is None):
            raise ValueError("schedule and duration must be set together (a window has a start and a length)")
        return self


def _default_budgets() -> list[BudgetConfig]:
    # Up to a fifth of the pool at a time, and nothing during weekday working hours (UTC).
    return [
        BudgetConfig(nodes="20%"),
        BudgetConfig(nodes="0", schedule="0 9 * * mon-fri", duration="8h"),
    ]


class DisruptionConfig(ConfigModel):
    """When Karpenter may take a pool's nodes away."""

    consolidation_policy: Literal["WhenEmpty", "WhenEmptyOrUnderutilized"] = Field(
        "WhenEmpty",
        description="`WhenEmpty` removes only idle nodes (safe for long training runs); `WhenEmptyOrUnderutilized` "
        "also repacks pods onto fewer nodes.",
    )
    consolidate_after: DurationOrNever = Field(
        "10m", description="How long a node must be empty (or underutilized) before Karpenter consolidates it."
    )
    budgets: list[BudgetConfig] = Field(
        default_factory=_default_budgets,
        description="Disruption budgets; default: 20% at a time, and none on weekdays from 09:00 UTC for 8h.",
    )


# What EC2 accepts for a gp3 volume (Amazon EBS User Guide, "General Purpose SSD volumes", with the
# September 2025 raise to 80,000 IOPS and 2,000 MiB/s; the EC2 API reference's ModifyVolume and
# CreateVolume give throughput 125-2,000). Karpenter's EC2NodeClass CRD (v1.14.1,
# karpenter.k8s.aws_ec2nodeclasses.yaml) bounds none of them in its schema, so a volume EC2 refuses
# passes `pulumi up` and shows up only as NodeClaims whose CreateFleet fails.
GP3_MIN_IOPS = 3000
GP3_MAX_IOPS = 80000
GP3_MAX_IOPS_PER_GIB = 500
GP3_MIN_THROUGHPUT = 125
GP3_MAX_THROUGHPUT = 2000
# At most 0.25 MiB/s per provisioned IOPS: 1 MiB/s for every 4 IOPS.
GP3_IOPS_PER_MIB_S = 4


class RootVolumeConfig(ConfigModel):
    """The encrypted gp3 volume of each node (images, container layers, model caches)."""

    size_gib: int = Field(200, alias="sizeGiB", ge=20, le=16384, description="Volume size, GiB.")
    iops: int = Field(
        3000,
        description=f"Provisioned gp3 IOPS, {GP3_MIN_IOPS}-{GP3_MAX_IOPS} and at most {GP3_MAX_IOPS_PER_GIB} per GiB "
        "of sizeGiB.",
    )
    throughput: int = Field(
        125,
        description=f"Provisioned gp3 throughput, MiB/s: {GP3_MIN_THROUGHPUT}-{GP3_MAX_THROUGHPUT} and at most "
        f"1 per {GP3_IOPS_PER_MIB_S} provisioned IOPS (EC2 refuses more).",
    )

    @field_validator("iops")
    @classmethod
    def _gp3_iops(cls, iops: int, info: ValidationInfo) -> int:
        if iops < GP3_MIN_IOPS:
            raise ValueError(f"is below gp3's minimum of {GP3_MIN_IOPS} IOPS: set iops to at least {GP3_MIN_IOPS}")
        if iops > GP3_MAX_IOPS:
            raise ValueError(f"is above gp3's maximum of {GP3_MAX_IOPS} IOPS: set iops to at most {GP3_MAX_IOPS}")
        size = info.data.get("size_gib")
        if size is not None and iops > size * GP3_MAX_IOPS_PER_GIB:
            raise ValueError(
                f"is above gp3's {GP3_MAX_IOPS_PER_GIB} IOPS per GiB, {size * GP3_MAX_IOPS_PER_GIB} on a {size} GiB "
                f"volume: lower iops to {size * GP3_MAX_IOPS_PER_GIB} or raise sizeGiB to "
                f"{-(-iops // GP3_MAX_IOPS_PER_GIB)}"
            )
        return iops

    @field_validator("throughput")
    @classmethod
    def _gp3_throughput(cls, throughput: int, info: ValidationInfo) -> int:
        if throughput < GP3_MIN_THROUGHPUT:
            raise ValueError(
                f"is below gp3's minimum of {GP3_MIN_THROUGHPUT} MiB/s: set throughput to at least {GP3_MIN_THROUGHPUT}"
            )
        if throughput > GP3_MAX_THROUGHPUT:
            raise ValueError(
                f"is above gp3's maximum of {GP3_MAX_THROUGHPUT} MiB/s: set throughput to at most {GP3_MAX_THROUGHPUT}"
            )
        iops = info.data.get("iops")
        if iops is not None and throughput * GP3_IOPS_PER_MIB_S > iops:
            raise ValueError(
                f"MiB/s is above gp3's 0.25 MiB/s per provisioned IOPS, {iops // GP3_IOPS_PER_MIB_S} with iops {iops}: "
                f"lower throughput to {iops // GP3_IOPS_PER_MIB_S} or raise iops to {throughput * GP3_IOPS_PER_MIB_S}"
            )
        return throughput


class SharingConfig(ConfigModel):
    """How a pool's GPUs are shared between pods."""

    mode: Literal["none", "timeSlicing", "mig"] = Field(
        "none",
        description="`none`: one pod per GPU. `timeSlicing`: each GPU advertised `replicas` times (no memory "
        "isolation). `mig`: each GPU partitioned by `migLayout` (A100, H100, H200 only).",
    )
    replicas: int | None = Field(None, ge=2, le=48, description="timeSlicing: schedulable units per physical GPU.")
    mig_layout: dict[str, int] | None = Field(
        None,
        description="mig: MIG profile -> instances on each GPU, e.g. `{3g.40gb: 1, 2g.20gb: 1, 1g.10gb: 2}`.",
    )
    share_between_tenants: bool = Field(
        False,
        description="timeSlicing, or a pool with `scheduler: kai`: let more than one tenant hold quota on the pool. Time "
        "slices and KAI's fractions of one GPU share its memory and faults, so a tenant's pod can read or crash "
        "another's; refused unless set.",
    )

    @model_validator(mode="after")
    def _fields_match_mode(self) -> SharingConfig:
        if self.mode == "timeSlicing" and self.replicas is None:
            raise ValueError("timeSlicing needs `replicas` (schedulable units per GPU), e.g. 4")
        if self.mode == "mig" and not self.mig_layout:
            raise ValueError("mig needs `migLayout`, e.g. {1g.10gb: 7}")
        if self.mode != "timeSlicing" and self.replicas is not None:
            raise ValueError(f"`replicas` applies to timeSlicing only, not {self.mode}")
        if self.mode != "mig" and self.mig_layout is not None:
            raise ValueError(f"`migLayout` applies to mig only, not {self.mode}")
        # Mode `none` may share a GPU between tenants through KAI's fractions; NodePoolConfig checks the scheduler.
        if self.mode == "mig" and self.share_between_tenants:
            raise ValueError(f"`shareBetweenTenants` applies to timeSlicing only, not {self.mode}")
        return self


class NodePoolConfig(ConfigModel):
    """A GPU pool: one Karpenter NodePool and its EC2NodeClass."""

    name: str = Field(description="Pool name (a DNS label, e.g. `gpu-h100`): the NodePool's and EC2NodeClass's name.")
    instance_types: list[str] = Field(
        default_factory=list, description="Exact instance types, e.g. `[p5.48xlarge]`; or give `instanceFamilies`."
    )
    instance_families: list[str] = Field(
        default_factory=list, description="Instance families, e.g. `[g6e]`: every catalog size of each family."
    )
    capacity_types: list[GpuCapacityType] = Field(
        default_factory=_gpu_on_demand_only,
        min_length=1,
        description="`on-demand`, `spot` and/or `reserved` (the pool's capacityReservations; Karpenter prefers them "
        "and falls back to the other types listed).",
    )
    capacity_reservations: list[CapacityReservationConfig] = Field(
        default_factory=list,
        max_length=30,
        description="On-Demand Capacity Reservations and Capacity Blocks the `reserved` capacity type launches into; "
        "required with it, and only with it.",
    )
    ami_family: Literal["al2023", "bottlerocket"] = Field(
        "al2023", description="Node OS; Karpenter picks the NVIDIA variant of the family's AMI for GPU instances."
    )
    ami_version: str | None = Field(
        None,
        description="AMI release pinned in the node class alias (e.g. `v20251120` for al2023); defaults to "
        "config/versions.py. `latest` is refused on protected (production) stacks.",
    )
    gpus: int = Field(ge=1, le=100000, description="Declared GPU capacity: the NodePool's `nvidia.com/gpu` limit.")
    cpu_limit: int | None = Field(None, ge=1, description="Optional NodePool limit on vCPUs.")
    memory_limit_gib: int | None = Field(
        None, alias="memoryLimitGiB", ge=1, description="Optional NodePool limit on memory, GiB."
    )
    disruption: DisruptionConfig = Field(default_factory=DisruptionConfig, description="Consolidation and budgets.")
    expire_after: DurationOrNever = Field("720h", description="Replace nodes after this age (picks up new AMIs), or `Never`.")
    termination_grace_period: Duration = Field(
        "1h", description="Longest a draining node waits for its pods before it is terminated anyway."
    )
    weight: int | None = Field(None, ge=1, le=100, description="NodePool weight: higher pools are tried first.")
    root_volume: RootVolumeConfig = Field(default_factory=RootVolumeConfig, description="Node volume.")
    sharing: SharingConfig = Field(default_factory=SharingConfig, description="GPU sharing mode.")
    efa: bool = Field(
        False,
        description="Run the EFA device plugin on the pool's nodes and open the node security group to itself, so pods "
        "requesting `vpc.amazonaws.com/efa` get Elastic Fabric Adapters: Karpenter launches their nodes with every "
        "EFA the instance type has. Every type of the pool must have EFA.",
    )
    allocation: Literal["devicePlugin", "dra"] = Field(
        "devicePlugin",
        description="`dra`: the pool's GPUs are allocated through ResourceClaims (needs gpu.dra.enabled). Karpenter 1.14 "
        "launches no node for a pod with resource claims, so the pool is an EKS managed node group of gpus / (its types' "
        "GPUs) nodes, always running; instance types of one GPU count, one capacity type, AL2023, no EFA; a MIG "
        "layout is cut at each node's boot. The device plugin and the GPU Operator's operands are off on its nodes.",
    )

    warm_start: WarmStartConfig = Field(
        default_factory=WarmStartConfig,
        description="Warm GPUs kept for surges and images already on new nodes (docs/time-to-gpu.md).",
    )
    scheduler: Literal["default", "kai"] = Field(
        "default",
        description="`kai`: the pool's pods are scheduled by the KAI Scheduler, which places fractions of a GPU "
        "(`gpu-fraction` or `gpu-memory` annotations) and charges them, and whole GPUs, to the tenants' KAI Queues "
        "(docs/fractional-gpus.md). Whole GPUs advertised (`sharing.mode: none`), device-plugin allocation, no "
        "warm-start headroom.",
    )

    @field_validator("name")
    @classmethod
    def _dns_label(cls, name: str) -> str:
        if not _DNS_LABEL.match(name):
            raise ValueError("is not a DNS label: lowercase letters, digits and '-', at most 40 characters")
        return name

    @field_validator("ami_version")
    @classmethod
    def _valid_ami_version(cls, version: str | None) -> str | None:
        if version is not None and not _AMI_VERSION.match(version):
            raise ValueError("is not an AMI release such as 'v20251120' (al2023) or 'v1.51.0' (bottlerocket), or 'latest'")
        return version

    @field_validator("capacity_types")
    @classmethod
    def _unique_capacity_types(cls, capacity_types: list[str]) -> list[str]:
        if len(set(capacity_types)) != len(capacity_types):
            raise ValueError("lists a capacity type twice")
        return capacity_types

    @model_validator(mode="after")
    def _kai_shares_whole_gpus(self) -> NodePoolConfig:
        # KAI's binder reserves each shared GPU with a pod requesting one whole `nvidia.com/gpu` (kai-scheduler
        # v0.17.0 pkg/binder/binding/resourcereservation/resource_reservation.go), so the pool advertises whole
        # GPUs through the device plugin. Headroom placeholders are default-scheduler pods that only the default
        # scheduler preempts: KAI would see their GPUs as taken and never get them back.
        if self.scheduler != "kai":
            if self.sharing.share_between_tenants and self.sharing.mode == "none":
                raise ValueError(
                    "sharing.shareBetweenTenants applies to time-sliced pools and pools with scheduler: kai; "
                    "this pool hands out whole GPUs: remove it"
                )
            return self
        if self.sharing.mode != "none":
            raise ValueError(
                f"scheduler: kai shares whole GPUs in fractions itself; sharing.mode {self.sharing.mode} cuts them "
                "first: set sharing.mode: none"
            )
        if self.allocation != "devicePlugin":
            raise ValueError("scheduler: kai places GPUs the device plugin advertises; set allocation: devicePlugin")
        if self.ami_family != "al2023":
            # KAI hands a fraction its GPU through NVIDIA_VISIBLE_DEVICES alone (models/kai/sharing.py); Bottlerocket's
            # toolkit ignores it from unprivileged containers (bottlerocket-os/bottlerocket sources/shared-defaults/
            # nvidia-k8s-container-toolkit.toml), and only AL2023 node classes get the platform's toolkit user data.
            raise ValueError(
                f"scheduler: kai hands fractions their GPU through NVIDIA_VISIBLE_DEVICES, which {self.ami_family}'s "
                "container toolkit ignores from tenant containers: set amiFamily: al2023"
            )
        if self.warm_start.headroom.gpus:
            raise ValueError(
                "scheduler: kai cannot take back warm-start headroom (placeholders only the default scheduler "
                "preempts): set warmStart.headroom.gpus: 0"
            )
        return self

    @model_validator(mode="after")
    def _reserved_needs_reservations(self) -> NodePoolConfig:
        # Karpenter offers `reserved` only for the reservations the node class's selector terms find
        # (karpenter-provider-aws v1.14.1 pkg/controllers/nodeclass/capacityreservation.go fills the node
        # class's status; pkg/providers/instancetype/offering/reserved_capacity_resolver.go offers those):
        # without terms the capacity type never launches.
        if RESERVED in self.capacity_types and not self.capacity_reservations:
            raise ValueError(
                "capacityTypes has 'reserved' but capacityReservations is empty: name the reservations by id or tags"
            )
        if self.capacity_reservations and RESERVED not in self.capacity_types:
            raise ValueError("capacityReservations are used only by the 'reserved' capacity type: add it to capacityTypes")
        return self


class CpuPoolConfig(ConfigModel):
    """The general-purpose pool for pods that need no GPU, so they never land on (and keep alive) GPU nodes."""

    instance_families: list[str] = Field(
        default_factory=lambda: ["m7i", "m6i", "c7i", "r7i"], min_length=1, description="Non-GPU instance families."
    )

    @field_validator("instance_families")
    @classmethod
    def _no_accelerators(cls, families: list[str]) -> list[str]:
        for family in families:
            if _ACCELERATOR_FAMILY.match(family):
                raise ValueError(f"contains {show(family)}, an accelerator family; GPU capacity belongs in nodePools")
            if family not in CPU_FAMILIES:
                guess = difflib.get_close_matches(family, sorted(CPU_FAMILIES), n=1)
                hint = f"did you mean {guess[0]}? " if guess else ""
                raise ValueError(
                    f"contains {show(family)}, which is not an x86_64 EC2 family (the CPU pool launches amd64 nodes; "
                    f"config/catalog.py CPU_FAMILIES): {hint}e.g. m7i, c7i, r7i"
                )
        if len(set(families)) != len(families):
            raise ValueError("lists a family twice")
        return families
    capacity_types: list[CapacityType] = Field(
        default_factory=_on_demand_only, min_length=1, description="`on-demand`, `spot`, or both."
    )
    cpu_limit: int = Field(1000, ge=1, description="NodePool limit on vCPUs.")
    memory_limit_gib: int = Field(4000, alias="memoryLimitGiB", ge=1, description="NodePool limit on memory, GiB.")
    consolidation_policy: Literal["WhenEmpty", "WhenEmptyOrUnderutilized"] = Field(
        "WhenEmptyOrUnderutilized", description="CPU pods are cheap to move: repack them by default."
    )
    consolidate_after: DurationOrNever = Field("1m", description="How long before Karpenter consolidates a node.")
    expire_after: DurationOrNever = Field("720h", description="Replace nodes after this age, or `Never`.")
    termination_grace_period: Duration = Field(
        "1h",
        description="Longest a draining node waits for its pods before it is terminated anyway; without one a "
        "PodDisruptionBudget could hold a node, and `pulumi destroy`, forever.",
    )
    root_volume: RootVolumeConfig = Field(
        default_factory=lambda: RootVolumeConfig(sizeGiB=100), description="Node volume."
    )

    @property
    def uses_spot(self) -> bool:
        return SPOT in self.capacity_types

    @property
    def delete_timeout(self) -> str:
        """How long `pulumi destroy` waits for the CPU pool's NodePool and EC2NodeClass."""
        return delete_timeout(self.termination_grace_period)


class DeviceSelectionConfig(ConfigModel):
    """Which devices of the DRA driver: whole GPUs, or MIG devices of a profile, narrowed by their attributes.

    Each field becomes one CEL selector over what the driver publishes (models/nvidia/dra_driver.py); the
    platform evaluates them against every DRA pool's devices before anything is declared.
    """

    min_memory_gib: int | None = Field(
        None,
        alias="minMemoryGiB",
        ge=1,
        description="Devices with at least this much memory (the driver's `memory` capacity): an 80 GB H100 publishes "
        "79.6Gi, a 3g.40gb MIG device of an 80 GB A100 39.25Gi. Accepted when a DRA pool's devices have it.",
    )
    mig_profile: str | None = Field(
        None,
        description="A MIG device of this profile, e.g. `3g.40gb` (class mig.nvidia.com). Accepted when a DRA pool "
        "publishes devices of it.",
    )
    product_name: str | None = Field(
        None,
        description="Devices whose `productName` is exactly this, as NVML names the GPU, e.g. `NVIDIA H100 80GB HBM3`.",
    )
    architecture: str | None = Field(
        None, description="Devices of this GPU architecture, as the driver publishes it: `Ampere`, `Ada Lovelace`, `Hopper`."
    )
    min_compute_capability: str | None = Field(
        None,
        pattern=r"^[0-9]+\.[0-9]+$",
        description="Devices of at least this CUDA compute capability, e.g. `8.9` (L4, L40S) or `9.0` (H100, H200).",
    )
    selectors: list[str] = Field(
        default_factory=list,
        description="Further CEL selectors over `device.attributes[\"gpu.nvidia.com\"]` and "
        "`device.capacity[\"gpu.nvidia.com\"]`, evaluated against every DRA pool's devices before anything is "
        "declared; each must match some pool's devices.",
    )

    @property
    def selector_expressions(self) -> list[tuple[str, str]]:
        """(config field, CEL expression) for each selector the claim's request carries, in a fixed order."""
        fields = (
            ("minMemoryGiB", None if self.min_memory_gib is None else dra_driver.min_memory(self.min_memory_gib)),
            ("migProfile", None if self.mig_profile is None else dra_driver.mig_profile(self.mig_profile)),
            ("productName", None if self.product_name is None else dra_driver.product_name(self.product_name)),
            ("architecture", None if self.architecture is None else dra_driver.architecture(self.architecture)),
            (
                "minComputeCapability",
                None if self.min_compute_capability is None else dra_driver.min_compute_capability(self.min_compute_capability),
            ),
        )
        expressions = [(field, expression) for field, expression in fields if expression is not None]
        return expressions + [(f"selectors[{index}]", text) for index, text in enumerate(self.selectors)]

    @property
    def driver_class(self) -> str:
        """The driver's DeviceClass of the kind selected: MIG devices with a profile, whole GPUs otherwise."""
        return MIG_DEVICE_CLASS if self.mig_profile is not None else GPU_DEVICE_CLASS


class ClaimTemplateConfig(DeviceSelectionConfig):
    """A ResourceClaimTemplate pods reference to get GPUs through DRA."""

    name: str = Field(description="ResourceClaimTemplate name (a DNS label).")
    namespace: str = Field(description="Namespace the template lives in; pods can only use templates in their own.")
    count: int = Field(1, ge=1, le=8, description="Devices per claim.")
    device_class_name: str | None = Field(
        None,
        alias="deviceClass",
        description="An administrator's DeviceClass (gpu.dra.deviceClasses) to take the devices from, charged to the "
        "tenant's quota in that class; without it the driver's gpu.nvidia.com, or mig.nvidia.com with migProfile.",
    )

    @field_validator("name", "namespace")
    @classmethod
    def _dns_label(cls, value: str) -> str:
        if not _DNS_LABEL.match(value):
            raise ValueError("is not a DNS label: lowercase letters, digits and '-'")
        return value

    @property
    def device_class(self) -> str:
        """The DeviceClass the claim's devices come from: the administrator's named one, else the driver's."""
        return self.device_class_name or self.driver_class


class DeviceClassConfig(DeviceSelectionConfig):
    """An administrator's DeviceClass: a named set of the driver's devices, with its own quota resource."""

    name: str = Field(
        description="DeviceClass name (cluster-scoped; a DNS subdomain of at most 63 characters, e.g. `gpu-80gb`). "
        "Tenants get quota in it per flavor (`tenants[].gpu.<flavor>.deviceClass`) and claims name it (`deviceClass`)."
    )

    @field_validator("name")
    @classmethod
    def _dns_subdomain(cls, value: str) -> str:
        if not _DEVICE_CLASS_NAME.match(value):
            raise ValueError("is not a DNS subdomain of at most 63 characters: lowercase letters, digits, '-' and '.'")
        if value in (GPU_DEVICE_CLASS, MIG_DEVICE_CLASS):
            raise ValueError("is one of the DRA driver's own DeviceClasses; give yours another name (e.g. gpu-80gb)")
        return value


class DraConfig(ConfigModel):
    """Dynamic Resource Allocation: GPUs requested through ResourceClaims instead of `nvidia.com/gpu`."""

    enabled: bool = Field(False, description="Install NVIDIA's DRA driver for GPUs (Kubernetes 1.34 or newer).")
    device_classes: list[DeviceClassConfig] = Field(
        default_factory=list,
        description="DeviceClasses (resource.k8s.io/v1) the administrator defines: each selects the driver's devices by "
        "attributes, is mapped in Kueue to its own quota resource `<name>.deviceclass.resource.k8s.io/devices`, and "
        "must match devices some DRA pool publishes.",
    )
    claim_templates: list[ClaimTemplateConfig] = Field(
        default_factory=list,
        description="ResourceClaimTemplates (resource.k8s.io/v1): whole GPUs (gpu.nvidia.com) or MIG devices "
        "(mig.nvidia.com), optionally selected by memory, profile, product name, architecture or compute capability.",
    )


class GpuConfig(ConfigModel):
    """Cluster-wide GPU settings of the NVIDIA GPU Operator."""

    mig_strategy: Literal["single", "mixed"] = Field(
        "mixed",
        description="How MIG devices are advertised: `single` as `nvidia.com/gpu` (every GPU of a node cut the same), "
        "`mixed` as `nvidia.com/mig-<profile>` per profile.",
    )
    dra: DraConfig = Field(default_factory=DraConfig, description="Dynamic Resource Allocation.")
