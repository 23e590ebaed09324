"""The KAI Scheduler's Queues, derived from the same tenant config as Kueue's ClusterQueues.

Pools with `scheduler: kai` are placed by KAI (docs/fractional-gpus.md). Kueue still admits every pod of a
tenant namespace (it gates them all: components/queueing.py), charging its cpu and memory and any whole
`nvidia.com/gpu` to the KAI pool's flavor; but a fraction is an annotation, which Kueue does not read
(kueue v0.19.2 counts container requests only), so the GPUs on KAI pools are counted by KAI's Queues:

- one root Queue holding every KAI pool's declared GPUs as its quota and its limit, so KAI never hands out more;
- one Queue per tenant holding quota on a KAI pool: its nominal over the KAI flavors as deserved quota, nominal
  plus borrowing as limit (models/kai/queues.py: a limit caps what the queue holds, fractions included), its
  nominal as over-quota weight (at least 1, so a borrower without nominal still borrows), its tier's value as
  priority (KAI divides over-quota GPUs among higher-priority queues first);
- cpu and memory unbounded (-1) in every KAI Queue: Kueue bounds them, and a KAI quota of 0 would refuse every
  non-preemptible job that asks for any (models/kai/queues.py `non_preemptible_over_quota`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from models.kai.constants import QUEUE_API_VERSION, QUEUE_KIND, UNLIMITED

from .capacity import GpuPoolPlan
from .fair_share import FlavorPlan, TenantPlan

# The root of the tenants' KAI Queues. A dotted name no tenant (a DNS label) can take.
ROOT_QUEUE = "gpu-platform.tenants"
KAI_SCHEDULER = "kai"


@dataclass(frozen=True)
class KaiQueuePlan:
    """One KAI Queue's GPU quota; cpu and memory are left to Kueue."""

    name: str
    parent: str | None
    gpu_quota: int
    gpu_limit: int
    over_quota_weight: int
    priority: int | None

    def manifest(self) -> dict[str, Any]:
        unbounded = {"quota": UNLIMITED, "limit": UNLIMITED, "overQuotaWeight": 1}
        spec: dict[str, Any] = {}
        if self.parent is not None:
            spec["parentQueue"] = self.parent
        if self.priority is not None:
            spec["priority"] = self.priority
        spec["resources"] = {
            "cpu": dict(unbounded),
            "gpu": {"quota": self.gpu_quota, "limit": self.gpu_limit, "overQuotaWeight": self.over_quota_weight},
            "memory": dict(unbounded),
        }
        return {"apiVersion": QUEUE_API_VERSION, "kind": QUEUE_KIND, "metadata": {"name": self.name}, "spec": spec}


def is_kai_pool(pool: GpuPoolPlan) -> bool:
    return pool.config.scheduler == KAI_SCHEDULER


def kai_pools(pools: Sequence[GpuPoolPlan]) -> tuple[GpuPoolPlan, ...]:
    return tuple(pool for pool in pools if is_kai_pool(pool))


def kai_flavors(flavors: Sequence[FlavorPlan]) -> tuple[FlavorPlan, ...]:
    return tuple(flavor for flavor in flavors if is_kai_pool(flavor.pool))


def kai_gpu_memory_mib(pools: Sequence[GpuPoolPlan]) -> dict[str, int]:
    """Each KAI pool's GPU memory in MiB, the most a `gpu-memory` request may ask: the catalog's GiB (the
    product's nominal memory; NVML reports somewhat less, and KAI then leaves a request between the two pending)."""
    return {pool.name: pool.gpu.memory_gib * 1024 for pool in kai_pools(pools)}


def tenant_queue(tenant: TenantPlan) -> str:
    """The KAI Queue a tenant's pods name (`kai.scheduler/queue`): the tenant's name."""
    return tenant.name


def plan_kai_queues(pools: Sequence[GpuPoolPlan], tenants: Sequence[TenantPlan]) -> tuple[KaiQueuePlan, ...]:
    """The root Queue, then each tenant's with GPU quota on a KAI pool, in the tenants' order; () without KAI pools."""
    capacity = sum(pool.gpu_limit for pool in kai_pools(pools))
    if not capacity:
        return ()
    plans = [KaiQueuePlan(ROOT_QUEUE, None, capacity, capacity, 1, None)]
    for tenant in tenants:
        quotas = [q.quota for q in tenant.quotas if is_kai_pool(q.flavor.pool)]
        nominal = sum(q.nominal for q in quotas)
        borrowing = sum(q.borrowing_limit for q in quotas)
        if nominal + borrowing:
            plans.append(
                KaiQueuePlan(tenant_queue(tenant), ROOT_QUEUE, nominal, nominal + borrowing, max(nominal, 1),
                             tenant.priority_value)
            )
    return tuple(plans)
