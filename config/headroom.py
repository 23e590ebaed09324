"""A GPU pool's `warmStart`: what makes a surge replica start in minutes rather than after the whole cold path.

- `headroom`: GPUs kept running and idle for surges. Placeholder pods (components/headroom.py) hold
  them at a priority below every tenant pod, so a tenant pod that finds no free GPU preempts one
  (models/kubernetes/preemption.py) and starts on a node that is already up, and Karpenter launches
  a node for the evicted placeholder. The NodePool limit is the pool's `gpus` plus the headroom
  (`GpuPoolPlan.nodepool_gpus`): tenants' quotas still add up to `gpus`, and the headroom is extra.
- `imageSnapshot`: Bottlerocket's data volume restored from an EBS snapshot holding the serving images
  already pulled, so containerd finds them on the node (docs/time-to-gpu.md says how to build one).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import Field, field_validator, model_validator

from .autoscaling import KMS_KEY_ARN
from .base import ConfigModel
from .errors import Problems, item_labels, show

if TYPE_CHECKING:
    from .capacity import GpuPoolPlan

# EBS snapshot ids: `snap-` and 8 (older) or 17 hexadecimal digits (EC2 API reference, Snapshot.SnapshotId).
_SNAPSHOT_ID = re.compile(r"^snap-([0-9a-f]{8}|[0-9a-f]{17})$")
# The range EC2 accepts for the Provisioned Rate for Volume Initialization, MiB/s (karpenter-crd 1.14.1,
# karpenter.k8s.aws_ec2nodeclasses.yaml, `volumeInitializationRate`: minimum 100, maximum 300).
MIN_INITIALIZATION_RATE = 100
MAX_INITIALIZATION_RATE = 300


class HeadroomConfig(ConfigModel):
    """Idle GPUs kept on running nodes, held by placeholder pods any tenant pod preempts."""

    gpus: int = Field(
        0, ge=0, le=1000, description="Physical GPUs kept warm; 0 keeps none. Added to the NodePool limit, never to quotas."
    )
    gpus_per_pod: int = Field(
        1,
        ge=1,
        le=16,
        description="GPUs one placeholder pod holds: the largest `gpusPerReplica` (in GPUs) a surge replica on "
        "the pool needs, since a replica preempts placeholders on one node only. `gpus` must be a multiple.",
    )
    capacity_type: str | None = Field(
        None,
        description="The capacity type the placeholders' nodes run on, one of the pool's `capacityTypes`; by "
        "default `on-demand` when the pool has it, else its first type. A surge replica preempts a "
        "placeholder only on a node its own flavor selects.",
    )

    @model_validator(mode="after")
    def _whole_pods(self) -> HeadroomConfig:
        if self.gpus % self.gpus_per_pod:
            lower = self.gpus - self.gpus % self.gpus_per_pod
            raise ValueError(
                f"gpus {self.gpus} is not a multiple of gpusPerPod {self.gpus_per_pod}: set gpus to {lower} or "
                f"{lower + self.gpus_per_pod}"
            )
        return self


class WarmStartConfig(ConfigModel):
    """What shortens a new replica's path to a GPU on this pool: warm headroom, and images already on the node."""

    headroom: HeadroomConfig = Field(default_factory=HeadroomConfig, description="Warm GPUs for surges.")
    image_snapshot: str | None = Field(
        None,
        description="Bottlerocket pools: an EBS snapshot (`snap-...`) of a data volume with the serving images "
        "pulled, restored as each node's data volume (`/dev/xvdb`). Build and refresh it as docs/time-to-gpu.md "
        "says; the data volume's size must be at least the snapshot's.",
    )
    image_snapshot_kms_key: str | None = Field(
        None,
        description="With imageSnapshot encrypted under a customer managed KMS key: that key's ARN "
        "(`aws ec2 describe-snapshots --snapshot-ids <id> --query 'Snapshots[0].KmsKeyId'`). Karpenter's controller "
        "launches the nodes, so its role gets the key's use for EBS, through EC2 only; without it each node "
        "terminates right after launch. Unset: the snapshot is unencrypted or under the AWS managed key `aws/ebs`.",
    )
    volume_initialization_rate: int | None = Field(
        None,
        description=f"With imageSnapshot: MiB/s ({MIN_INITIALIZATION_RATE}-{MAX_INITIALIZATION_RATE}) at which "
        "EBS initialises the restored volume from the snapshot (billed per GiB); without it blocks load lazily on "
        "first read, which slows the first image start.",
    )

    @field_validator("image_snapshot")
    @classmethod
    def _snapshot_id(cls, snapshot: str | None) -> str | None:
        if snapshot is not None and not _SNAPSHOT_ID.match(snapshot):
            raise ValueError("is not an EBS snapshot id such as 'snap-0123456789abcdef0'")
        return snapshot

    @field_validator("volume_initialization_rate")
    @classmethod
    def _rate(cls, rate: int | None) -> int | None:
        if rate is not None and not MIN_INITIALIZATION_RATE <= rate <= MAX_INITIALIZATION_RATE:
            raise ValueError(
                f"is outside EBS's {MIN_INITIALIZATION_RATE}-{MAX_INITIALIZATION_RATE} MiB/s for volume initialization"
            )
        return rate

    @field_validator("image_snapshot_kms_key")
    @classmethod
    def _key_arn(cls, key: str | None) -> str | None:
        if key is not None and not KMS_KEY_ARN.match(key):
            raise ValueError(
                "is not a KMS key ARN such as 'arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab' "
                "(the snapshot's KmsKeyId; an alias does not work in an IAM policy's Resource)"
            )
        return key

    @model_validator(mode="after")
    def _rate_needs_snapshot(self) -> WarmStartConfig:
        # The node class refuses it too (CEL: "snapshotID must be set when volumeInitializationRate is set").
        if self.volume_initialization_rate is not None and self.image_snapshot is None:
            raise ValueError("volumeInitializationRate applies to a volume restored from imageSnapshot: set imageSnapshot")
        if self.image_snapshot_kms_key is not None and self.image_snapshot is None:
            raise ValueError("imageSnapshotKmsKey is the key of imageSnapshot's encryption: set imageSnapshot")
        return self


def check_warm_start(pools: Sequence[GpuPoolPlan], root: str, problems: Problems) -> None:
    """Rules of `warmStart` that need the pool around it: sharing mode, OS, capacity types, instance sizes."""
    labels = item_labels([pool.config for pool in pools])
    for index, pool in enumerate(pools):
        key = f"{root}[{labels[index]}].warmStart"
        warm = pool.config.warm_start
        headroom = warm.headroom
        if headroom.gpus:
            _check_headroom(pool, headroom, f"{key}.headroom", problems)
        if warm.image_snapshot is not None and pool.config.ami_family != "bottlerocket":
            problems.add(
                f"{key}.imageSnapshot",
                f"{show(warm.image_snapshot)} on an {pool.config.ami_family} pool: only Bottlerocket keeps images on a "
                "separate data volume a snapshot can fill (AL2023 keeps them on the AMI's root volume); use amiFamily "
                "bottlerocket or remove imageSnapshot",
            )


def check_snapshot_keys(pools: Sequence[GpuPoolPlan], root: str, region: str, problems: Problems) -> None:
    """An image snapshot's KMS key is in the stack's region: EBS restores a volume with a key of its own region."""
    labels = item_labels([pool.config for pool in pools])
    for index, pool in enumerate(pools):
        key_arn = pool.config.warm_start.image_snapshot_kms_key
        found = KMS_KEY_ARN.match(key_arn) if key_arn is not None else None
        if found is not None and found["region"] != region:
            problems.add(
                f"{root}[{labels[index]}].warmStart.imageSnapshotKmsKey",
                f"{show(key_arn)} is a key in {found['region']}, the stack deploys to {region}: a snapshot and its key are "
                "in the region the nodes launch in; copy the snapshot there (`aws ec2 copy-snapshot --kms-key-id`) and "
                "give that key",
            )


def _check_headroom(pool: GpuPoolPlan, headroom: HeadroomConfig, key: str, problems: Problems) -> None:
    config = pool.config
    if config.allocation == "dra" or config.sharing.mode == "mig":
        kind = "allocates GPUs through DRA" if config.allocation == "dra" else "is cut into MIG devices"
        problems.add(
            f"{key}.gpus",
            f"{headroom.gpus} on pool {pool.name}, which {kind}: headroom holds whole GPUs or time slices, what "
            "inference replicas request; remove it or move it to a whole-GPU or time-sliced pool",
        )
    if headroom.capacity_type is not None and headroom.capacity_type not in config.capacity_types:
        problems.add(
            f"{key}.capacityType",
            f"{show(headroom.capacity_type)} is not one of the pool's capacityTypes {list(config.capacity_types)}: "
            "placeholders could never get a node",
        )
    largest = max(t.gpus for t in pool.instance_types)
    if headroom.gpus_per_pod > largest:
        problems.add(
            f"{key}.gpusPerPod",
            f"{headroom.gpus_per_pod} is more than the pool's largest instance type has ({largest} GPUs): the "
            f"placeholders would never schedule; set gpusPerPod to at most {largest}",
        )


# The placeholders' PriorityClass. Tenant pods run at priority 0: they name no PriorityClass (Kueue's
# tiers are WorkloadPriorityClasses, which set a Workload's priority, not the pod's) and none is
# `globalDefault`; the system classes are closed to them by quota. Anything below 0 is below them all.
HEADROOM_PRIORITY_CLASS = "gpu-headroom"
HEADROOM_PRIORITY = -100
