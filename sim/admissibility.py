"""Why a workload can never run on the stack, found when it is first queued.

The simulator still runs such a workload as the cluster would (Kueue leaves it pending, or admits it
and its pods stay Pending, evicted and requeued by waitForPodsReady), but the report counts it as never
admissible, with its reason, instead of as a wait, or as "0 wait" when Kueue admits what no node holds:

    quota            no flavor of its ClusterQueue holds it even with the whole borrowingLimit lent
                     (models/kueue best_case_admission)
    no-flavor        none of the flavors it may use is one of its tenant's
    larger-than-node one pod asks for more GPUs than the biggest instance type of every pool it may use
                     has (the static baseline: than its biggest node)
    gang-over-limit  its pods together ask for more than the NodePool limit of every pool it may use
                     (the static baseline: than the pool's nodes), so they are never all Running at once
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import warm_start
from .queueing import QueuedWorkload
from .state import Group, Pool

if TYPE_CHECKING:
    from .engine import Simulation

QUOTA = "quota"
NO_FLAVOR = "no-flavor"
LARGER_THAN_NODE = "larger-than-node"
GANG_OVER_LIMIT = "gang-over-limit"
REASONS = (QUOTA, NO_FLAVOR, LARGER_THAN_NODE, GANG_OVER_LIMIT)


def _biggest_node(sim: Simulation, pool: Pool) -> int:
    """Units of the biggest node the pool can have."""
    if pool.static:
        return max((node.units for node in pool.nodes), default=0)
    return max((option.gpus for option in pool.options), default=0) * pool.slices_per_gpu


def _limit(sim: Simulation, pool: Pool) -> int:
    """Units the pool can hold at once: its NodePool limit, or the static baseline's nodes."""
    if pool.static:
        return sum(node.units for node in pool.nodes)
    return warm_start.limit_gpus(sim, pool) * pool.slices_per_gpu


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
    if all(group.size * group.units_per_pod > _limit(sim, pool) for pool in pools):
        return GANG_OVER_LIMIT
    return None
