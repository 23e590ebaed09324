"""Why a workload can never run on the stack, found when it is first queued.

The simulator still runs such a workload as the cluster would (Kueue leaves it pending, or admits it
and its pods stay Pending, evicted and requeued by waitForPodsReady), but the report counts it as never
admissible, with its reason, instead of as a wait, or as "0 wait" when Kueue admits what no node holds:

    quota            no flavor of its ClusterQueue holds it even with the whole borrowingLimit lent
                     (models/kueue best_case_admission)
    no-flavor        none of the flavors it may use is one of its tenant's
    larger-than-node one pod asks for more GPUs than the biggest instance type of every pool it may use
                     has (the static baseline: than its biggest node)
    gang-cannot-fit  its pods, packed as Karpenter packs them (models/karpenter pack), never all fit within
                     the NodePool limit of any pool it may use (the static baseline: onto the pool's nodes),
                     so they are never all Running at once
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from models.karpenter.provisioning import InstanceOption, pack

from . import warm_start
from .queueing import QueuedWorkload
from .state import Group, Pool

if TYPE_CHECKING:
    from .engine import Simulation

QUOTA = "quota"
NO_FLAVOR = "no-flavor"
LARGER_THAN_NODE = "larger-than-node"
GANG_CANNOT_FIT = "gang-cannot-fit"
REASONS = (QUOTA, NO_FLAVOR, LARGER_THAN_NODE, GANG_CANNOT_FIT)


def _biggest_node(sim: Simulation, pool: Pool) -> int:
    """Units of the biggest node the pool can have."""
    if pool.static:
        return max((node.units for node in pool.nodes), default=0)
    return max((option.gpus for option in pool.options), default=0) * pool.slices_per_gpu


def _gang_fits(sim: Simulation, pool: Pool, pods: int, units: int) -> bool:
    """All the gang's pods at once: on new NodeClaims within the NodePool limit, or onto the static baseline's
    nodes (first fit, largest room first)."""
    if pool.static:
        rooms = sorted((node.units for node in pool.nodes), reverse=True)
        for _ in range(pods):
            index = next((i for i, room in enumerate(rooms) if room >= units), None)
            if index is None:
                return False
            rooms[index] -= units
        return True
    slices = pool.slices_per_gpu
    options = [InstanceOption(o.name, o.gpus * slices, o.on_demand_usd_per_hour) for o in pool.options]
    _, unplaced = pack([units] * pods, options, warm_start.limit_gpus(sim, pool) * slices)
    return not unplaced


def never_runs(sim: Simulation, group: Group, queued: QueuedWorkload) -> str | None:
    if warm_start.is_placeholder(group):
        return None
    pools = [sim.pools[sim.flavors[name].pool.name] for name in group.flavors if name in sim.flavors]
    if not pools:
        return NO_FLAVOR
    if sim.kueue.never_admits(queued):
        return QUOTA
    if all(group.units_per_pod > _biggest_node(sim, pool) for pool in pools):
        return LARGER_THAN_NODE
    if not any(_gang_fits(sim, pool, group.size, group.units_per_pod) for pool in pools):
        return GANG_CANNOT_FIT
    return None
