"""How Karpenter turns pending pods into nodes: which NodePool, which instance type, which capacity type.

Rules from kubernetes-sigs/karpenter v1.14.1 and aws/karpenter-provider-aws v1.14.1 (config/versions.py):
- pkg/utils/nodepool/nodepool.go `OrderByWeight` (called by provisioning/provisioner.go): NodePools are
  tried by weight, highest first (unset is 0); equal weights by name, the later name first.
- pkg/controllers/provisioning/scheduling/scheduler.go and nodeclaim.go: pods are taken largest first
  (queue.go, `byCPUAndMemoryDescending`; GPUs here) and added to an existing in-flight NodeClaim while
  some instance type still fits all its pods, else to a new NodeClaim; `filterInstanceTypesByRequirements`
  drops types whose capacity exceeds what the NodePool's limits leave (`remainingResources`).
- karpenter-provider-aws pkg/providers/instance/instance.go: a NodeClaim that allows the `reserved`
  capacity type launches into a reservation when one has room, else `spot` when allowed, else
  `on-demand`; CreateFleet's allocation strategy is `lowest-price` for on-demand and
  `price-capacity-optimized` for spot, which here is the lowest price (capacity pools are not modelled).

Launch to Ready (`LAUNCH_TO_READY`) is not in Karpenter's code: it is a stated assumption per instance
family, overridable per workload file.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

RESERVED = "reserved"
SPOT = "spot"
ON_DEMAND = "on-demand"


@dataclass(frozen=True)
class InstanceOption:
    """One instance type a NodePool may launch: its GPUs and on-demand price per hour."""

    name: str
    gpus: int
    on_demand_usd_per_hour: float


@dataclass(frozen=True)
class PoolRef:
    name: str
    weight: int | None


def order_by_weight(pools: Sequence[PoolRef]) -> list[PoolRef]:
    """`OrderByWeight`: highest weight first (unset counts as 0), ties by name descending."""
    return sorted(pools, key=lambda pool: (-(pool.weight or 0), _desc(pool.name)))


def _desc(name: str) -> tuple[int, ...]:
    return (*(-ord(ch) for ch in name), 1)


def capacity_type(allowed: Sequence[str], reservation_has_room: bool) -> str:
    """The capacity type a NodeClaim launches as: reserved with room, else spot, else on-demand."""
    if RESERVED in allowed and reservation_has_room:
        return RESERVED
    if SPOT in allowed:
        return SPOT
    return ON_DEMAND


def cheapest_fitting(options: Sequence[InstanceOption], gpus_needed: int, gpus_remaining: float) -> InstanceOption | None:
    """The lowest-priced type with at least `gpus_needed` GPUs whose GPUs fit what the limit leaves.

    Ties go to the earlier option, which is the pool's order (deterministic, as CreateFleet's
    overrides are sorted by price)."""
    fitting = [o for o in options if gpus_needed <= o.gpus <= gpus_remaining]
    if not fitting:
        return None
    return min(fitting, key=lambda o: o.on_demand_usd_per_hour)


@dataclass
class NodeClaimPlan:
    """An in-flight NodeClaim: the pods packed on it (their GPUs) and the type it launches."""

    pods: list[int]
    instance_type: InstanceOption


def pack(
    pod_gpus: Sequence[int], options: Sequence[InstanceOption], gpus_remaining: float
) -> tuple[list[NodeClaimPlan], list[int]]:
    """Pack pending pods (GPUs each) onto new NodeClaims as Karpenter's scheduler does.

    Pods go largest first onto the first claim that some type still fits, else onto a new claim; each
    claim launches the cheapest type that fits its pods. The NodePool's remaining GPU limit shrinks with
    each claim by the largest type it could still become (Karpenter reserves a claim's max capacity
    against the limit while it is in flight). Returns the claims and the indices of pods left pending.
    """
    claims: list[list[int]] = []
    sums: list[int] = []
    reserved: list[int] = []
    unplaced: list[int] = []
    biggest = max((o.gpus for o in options), default=0)
    order = sorted(range(len(pod_gpus)), key=lambda i: (-pod_gpus[i], i))
    for index in order:
        need = pod_gpus[index]
        for claim, total in enumerate(sums):
            if total + need <= reserved[claim]:
                claims[claim].append(index)
                sums[claim] += need
                break
        else:
            left = gpus_remaining - sum(reserved)
            cap = max((o.gpus for o in options if need <= o.gpus <= left), default=0)
            if cap == 0:
                unplaced.append(index)
                continue
            claims.append([index])
            sums.append(need)
            reserved.append(min(cap, biggest))
    plans = []
    for members, total in zip(claims, sums, strict=True):
        choice = cheapest_fitting(options, total, math.inf)
        assert choice is not None  # `reserved` came from a fitting option
        plans.append(NodeClaimPlan([pod_gpus[i] for i in members], choice))
    return plans, sorted(unplaced)


@dataclass(frozen=True)
class LaunchTime:
    """Seconds from NodeClaim creation to a Ready node whose GPUs are advertised: a log-normal
    distribution given by its median and 95th percentile."""

    median_seconds: float
    p95_seconds: float

    @property
    def sigma(self) -> float:
        return math.log(self.p95_seconds / self.median_seconds) / 1.6448536269514722


# Launch to Ready per instance family: stated assumptions, not measurements (override them in the
# workload file's `launchToReady`). Each adds up EC2 launch to running (~1 min for GPU instances,
# longer for the large p-families whose EFA interfaces attach at launch), node registration (~30 s),
# the NVIDIA AMI's driver load, and the GPU Operator's or Bottlerocket's device plugin advertising the
# GPUs (~1-2 min on al2023 with the operator's validator; the validator and MIG manager add minutes on
# MIG pools, which the p5 row includes). The p95s allow for slow EC2 capacity and image pulls of the
# operator's DaemonSets.
LAUNCH_TO_READY: dict[str, LaunchTime] = {
    "g5": LaunchTime(210, 360),
    "g6": LaunchTime(210, 360),
    "g6e": LaunchTime(240, 420),
    "p4d": LaunchTime(360, 600),
    "p4de": LaunchTime(360, 600),
    "p5": LaunchTime(420, 720),
    "p5e": LaunchTime(420, 720),
    "p5en": LaunchTime(420, 720),
}
# Families without a row: the slowest row's figures, so a missing assumption never flatters the result.
DEFAULT_LAUNCH_TO_READY = LaunchTime(420, 720)
