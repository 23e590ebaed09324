"""The shapes of the GPU catalog (`config/catalog.py` holds the data)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class MigProfile:
    """One MIG profile of a GPU model, as NVIDIA's MIG user guide lists it."""

    name: str
    max_instances: int
    compute_slices: int
    memory_slices: int


@dataclass(frozen=True)
class GpuModel:
    name: str
    label: str  # the node label value: lowercase, label-safe
    memory_gib: int
    mig_profiles: dict[str, MigProfile] = field(default_factory=dict)
    # A GPU has 7 compute slices and 8 memory slices to hand out when MIG-partitioned.
    compute_slices: int = 7
    memory_slices: int = 8

    @property
    def supports_mig(self) -> bool:
        return bool(self.mig_profiles)


@dataclass(frozen=True)
class InstanceType:
    name: str
    gpu: GpuModel
    gpus: int
    vcpu: int
    memory_gib: int
    efa: int  # EFA interfaces the type takes (Karpenter's vpc.amazonaws.com/efa capacity); 0: none
    instance_store_gb: int
    # None when the type has no on-demand price (p5e: Capacity Blocks and reservations only).
    on_demand_usd_per_hour: float | None

    @property
    def reservation_only(self) -> bool:
        """Sold only through capacity reservations and Capacity Blocks: no on-demand price."""
        return self.on_demand_usd_per_hour is None

    @property
    def family(self) -> str:
        return self.name.split(".")[0]
