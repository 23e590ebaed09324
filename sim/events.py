"""What a run records: per tenant and pool totals, waits, times to GPU, and the sampled series for plots."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field


@dataclass
class TenantRecord:
    allocated_gpu_seconds: float = 0.0
    cost: float = 0.0
    preemptions: int = 0
    evictions: int = 0  # waitForPodsReady, and pods lost with their node (consolidation, interruption, expiry)
    admitted: int = 0
    finished: int = 0


@dataclass
class Series:
    """Samples every `sample_interval`: time (hours) and one value per name."""

    times: list[float] = field(default_factory=list)
    values: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))


@dataclass
class Record:
    tenants: dict[str, TenantRecord] = field(default_factory=lambda: defaultdict(TenantRecord))
    # Queue wait (creation to first admission) by priority tier, seconds.
    waits: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    # Never admitted by the end, by tier: how long each had waited.
    still_waiting: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    # Scale-up replicas: the HPA's decision to a Ready server, seconds, per deployment.
    time_to_gpu: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    allocation: Series = field(default_factory=Series)  # per pool: allocated / provisioned GPUs
    queue_depth: Series = field(default_factory=Series)  # per tenant: pending workloads
    nodes: Series = field(default_factory=Series)  # per pool: nodes
    replicas: Series = field(default_factory=Series)  # per deployment: replicas, and demand in replicas


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0-100); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]
