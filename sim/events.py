"""The plots' series: sampled every `sampleInterval` (sim/sampling.py). Every other figure comes from the ledger."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field


@dataclass
class Series:
    """Samples every `sample_interval`: time (hours) and one value per name."""

    times: list[float] = field(default_factory=list)
    values: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))

    def as_data(self) -> dict[str, object]:
        return {"times": list(self.times), "values": {name: list(v) for name, v in sorted(self.values.items())}}


@dataclass
class Record:
    allocation: Series = field(default_factory=Series)  # per pool: allocated / provisioned GPUs
    queue_depth: Series = field(default_factory=Series)  # per tenant: pending workloads
    nodes: Series = field(default_factory=Series)  # per pool: nodes
    replicas: Series = field(default_factory=Series)  # per deployment: replicas, and demand in replicas

    def as_data(self) -> dict[str, dict[str, object]]:
        return {name: getattr(self, name).as_data() for name in ("allocation", "queue_depth", "nodes", "replicas")}
