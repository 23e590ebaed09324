"""How a NodePool's `limits` stop Karpenter launching (kubernetes-sigs/karpenter at the commit v1.14.1 pins).

An initialised node counts as its `Node.status.capacity` (pkg/controllers/state/statenode.go,
StateNode.Capacity, which adds one `nodes`); the scheduler subtracts every node's capacity from the
NodePool's `limits` (pkg/controllers/provisioning/scheduling/scheduler.go, updateRemainingResources) and
launches an instance type only while its capacity fits in what remains (filterByRemainingResources).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from math import gcd


def nodepool_limits(units: Mapping[str, int], cpu: int | None = None, memory_gib: int | None = None) -> dict[str, str]:
    """A NodePool's `spec.limits` as Kubernetes quantities: the given limits, then the optional cpu and memory."""
    limits = {resource: str(amount) for resource, amount in units.items()}
    if cpu is not None:
        limits["cpu"] = str(cpu)
    if memory_gib is not None:
        limits["memory"] = f"{memory_gib}Gi"
    return limits


def guaranteed(limit: int, sizes: Sequence[int]) -> int:
    """The least of a resource the pool reaches before `limit` stops Karpenter launching nodes of these sizes.

    Launching stops with less left than the smallest size (filterByRemainingResources), and every amount
    reached is a multiple of the sizes' greatest common divisor. Sizes of 0 (types without the resource)
    are ignored; for `nodes` every size is 1 and the limit is reached exactly.
    """
    sizes = [size for size in sizes if size > 0]
    step = 0
    for size in sizes:
        step = gcd(step, size)
    # The most that can be left over: below the smallest size, and the limit less whole steps.
    left = limit % step + (min(sizes) - 1 - limit % step) // step * step
    return limit - min(left, limit)


def most_carried(limit: int, types: Sequence[tuple[int, int]]) -> int:
    """The most of a second resource nodes can carry while a NodePool's `limit` on the first still admits them.

    `types` are (first, second) per instance type, e.g. (GPUs, vCPUs). Karpenter launches a type while its
    first resource fits in what the limit leaves (filterByRemainingResources), in any mix, so the worst
    case is the unbounded knapsack of the types within the limit. Types without the first resource are
    not bounded by it and are ignored.
    """
    best = [0] * (limit + 1)
    for used in range(1, limit + 1):
        best[used] = max([best[used - 1], *(best[used - size] + carried for size, carried in types if 0 < size <= used)])
    return best[limit]
