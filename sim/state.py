"""What the simulated cluster holds: pools and their nodes, flavors, workloads and their pods.

Built from the derived plans (`PlatformConfig.gpu_pools`, `.flavors`, `.tenants`), never from the stack
file. Quota lives behind the Kueue seam (sim/queueing.py); here is only what the nodes hold. Nothing
here counts: what happened goes to the ledger (sim/ledger.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from config.capacity import GpuPoolPlan
from config.fair_share import FlavorPlan
from models.karpenter.disruption import Budget
from models.karpenter.provisioning import InstanceOption
from models.kubernetes.duration import duration_seconds

if TYPE_CHECKING:
    from .claims_placement import ClaimShape

NEVER = "Never"


def _seconds_or_never(text: str) -> float | None:
    return None if text == NEVER else float(duration_seconds(text))


@dataclass
class Pool:
    """A Karpenter NodePool as the simulator runs it."""

    plan: GpuPoolPlan
    options: tuple[InstanceOption, ...]
    slices_per_gpu: int
    consolidation_policy: str
    consolidate_after: float | None
    budgets: tuple[Budget, ...]
    expire_after: float | None
    termination_grace_period: float | None = None  # the NodeClaim's: how long its drain waits for blocking pods
    static: bool = False  # the static baseline: nodes launched once, never provisioned or disrupted
    nodes: list[Node] = field(default_factory=list)

    @classmethod
    def from_plan(cls, plan: GpuPoolPlan) -> Pool:
        # Priced in the stack's region, as the summary prices the pool.
        options = tuple(
            InstanceOption(t.name, t.gpus, price)
            for t in plan.instance_types
            if (price := plan.on_demand_price(t)) is not None
        )
        disruption = plan.config.disruption
        budgets = tuple(
            Budget(
                b.nodes,
                b.schedule,
                duration_seconds(b.duration) if b.duration else None,
                tuple(b.reasons) if b.reasons is not None else None,
            )
            for b in disruption.budgets
        )
        return cls(
            plan,
            options,
            plan.slices_per_gpu,
            disruption.consolidation_policy,
            _seconds_or_never(disruption.consolidate_after),
            budgets,
            _seconds_or_never(plan.config.expire_after),
            float(duration_seconds(plan.config.termination_grace_period)),
        )

    @property
    def name(self) -> str:
        return self.plan.name

    def gpus_in_use(self) -> int:
        """Physical GPUs of the pool's live NodeClaims, launching ones included (what counts against its limit)."""
        return sum(node.instance.gpus for node in self.nodes)


@dataclass(eq=False)
class Node:
    id: int
    pool: Pool
    instance: InstanceOption
    capacity_type: str
    price_per_hour: float
    launched_at: float
    ready: bool = False
    ready_at: float | None = None
    deleting: bool = False
    last_pod_event: float = 0.0
    pods: list[Pod] = field(default_factory=list)
    nominated: list[Pod] = field(default_factory=list)  # pending pods Karpenter launched this node for
    check_at: float | None = None  # the next disruption check scheduled for it
    cause: str | None = None  # why it is being removed (sim/ledger.py NODE_CAUSES)
    draining: bool = False  # deleted, its drain waiting for pods that block eviction
    images: set[str] = field(default_factory=set)  # deployments whose server image this node has pulled

    @property
    def units(self) -> int:
        return self.instance.gpus * self.pool.slices_per_gpu

    @property
    def used(self) -> int:
        return sum(pod.units for pod in self.pods)

    @property
    def free(self) -> int:
        return self.units - self.used


@dataclass(eq=False)
class Group:
    """A Kueue Workload and its pods: a job (a gang of `size` pods) or one inference replica."""

    key: int
    tenant: str
    tier: str
    priority: int
    size: int
    units_per_pod: int
    flavors: tuple[str, ...]
    run_seconds: float | None  # None: runs until scaled down (an inference replica)
    created: float
    stream: str
    deployment: str | None = None
    start_delay: float = 0.0  # from a pod's binding to its Ready (server start)
    flavor: FlavorPlan | None = None
    admitted_at: float | None = None
    started_at: float | None = None
    pods: list[Pod] = field(default_factory=list)
    evictions: int = 0
    preemptions: int = 0
    waited: float | None = None  # creation to first admission
    generation: int = 0  # bumped on every eviction, so stale timers do nothing
    attempt: int = 0  # runs so far that ended (sim/ledger.py Ended); its pods' holds carry it
    submitted: bool = False  # queued in Kueue at least once
    queued: bool = False  # pending in Kueue's queue now
    done: bool = False
    deleted: bool = False
    service: bool = False  # a trace's service: its running time before an eviction counts towards run_seconds
    ran: float = 0.0  # a service's running seconds in its attempts that ended
    do_not_disrupt: bool = False  # its pods carry karpenter.sh/do-not-disrupt: they block eviction
    claim: ClaimShape | None = None  # its pods take devices through a claim template (sim/claims_placement.py)


@dataclass(eq=False)
class Pod:
    group: Group
    units: int
    created: float
    node: Node | None = None
    node_id: int | None = None  # the node it was last bound to, kept after it leaves
    bound_at: float | None = None
    ready_at: float | None = None
    devices: tuple[tuple[int, int], ...] = ()  # a claim's devices on its node: (kind of the pool's, how many)
