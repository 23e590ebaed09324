"""The GPU instance catalog: what each supported instance type offers, and how its GPUs partition.

It drives validation (a pool may only name types listed here, a MIG layout only profiles its GPU
has), the NodePool limits and the cost figures of the summary.

Sources:
- Instance specs: Karpenter's generated instance-type reference (aws/karpenter-provider-aws,
  website/content/en/docs/reference/instance-types.md, 2026-07-11), from the EC2 API; EFA interfaces
  are its `vpc.amazonaws.com/efa` rows at the v1.14.1 tag.
- Prices: us-east-1, Linux, on-demand, shared tenancy, from the AWS Price List API as captured in
  aws/karpenter-provider-aws pkg/providers/pricing/zz_generated.pricing_aws.go at v1.14.1, generated
  2026-07-06 (after the June 2025 cut of P4d/P4de/P5/P5en prices); the same file, and other regions'
  lists, in config/catalog_prices.py, which prices each stack in its region. p5e.48xlarge has no on-demand
  price: it is sold through Capacity Blocks and reservations only, so a pool with it must launch into
  reservations (`reserved`). p5en.48xlarge has an on-demand price there, so it is not reservation-only.
- MIG profiles: NVIDIA Multi-Instance GPU User Guide, "Supported MIG Profiles" (r580), read 2026-08.
  A10G, L4 and L40S do not support MIG.
"""

from __future__ import annotations

from models.nvidia.dra_driver import GpuFacts

from .catalog_types import GpuModel, InstanceType, MigProfile

PRICE_REGION = "us-east-1"
PRICE_DATE = "2026-07-06"


def _profiles(*rows: tuple[str, int, int, int]) -> dict[str, MigProfile]:
    """(name, instances per GPU at most, compute slices of 7, memory slices of 8) per profile."""
    return {name: MigProfile(name, most, compute, memory) for name, most, compute, memory in rows}


# The 80 GB A100 and the H100 cut the same way; "+me" profiles carry the media engines (one per GPU).
_EIGHTY_GB = _profiles(
    ("1g.10gb", 7, 1, 1),
    ("1g.10gb+me", 1, 1, 1),
    ("1g.20gb", 4, 1, 2),
    ("2g.20gb", 3, 2, 2),
    ("3g.40gb", 2, 3, 4),
    ("4g.40gb", 1, 4, 4),
    ("7g.80gb", 1, 7, 8),
)

A10G = GpuModel("A10G", label="a10g", memory_gib=24)
L4 = GpuModel("L4", label="l4", memory_gib=24)
L40S = GpuModel("L40S", label="l40s", memory_gib=48)
A100_40GB = GpuModel(
    "A100-40GB",
    label="a100-40gb",
    memory_gib=40,
    mig_profiles=_profiles(
        ("1g.5gb", 7, 1, 1),
        ("1g.5gb+me", 1, 1, 1),
        ("1g.10gb", 4, 1, 2),
        ("2g.10gb", 3, 2, 2),
        ("3g.20gb", 2, 3, 4),
        ("4g.20gb", 1, 4, 4),
        ("7g.40gb", 1, 7, 8),
    ),
)
A100_80GB = GpuModel("A100-80GB", label="a100-80gb", memory_gib=80, mig_profiles=_EIGHTY_GB)
H100_80GB = GpuModel("H100-80GB", label="h100-80gb", memory_gib=80, mig_profiles=_EIGHTY_GB)
H200_141GB = GpuModel(
    "H200-141GB",
    label="h200-141gb",
    memory_gib=141,
    mig_profiles=_profiles(
        ("1g.18gb", 7, 1, 1),
        ("1g.18gb+me", 1, 1, 1),
        ("1g.35gb", 4, 1, 2),
        ("2g.35gb", 3, 2, 2),
        ("3g.71gb", 2, 3, 4),
        ("4g.71gb", 1, 4, 4),
        ("7g.141gb", 1, 7, 8),
    ),
)

GPU_MODELS: dict[str, GpuModel] = {m.name: m for m in (A10G, L4, L40S, A100_40GB, A100_80GB, H100_80GB, H200_141GB)}

# What NVML reports for each model, the values the DRA driver publishes as attributes and capacity
# (models/nvidia/dra_driver.py): the device name (nvmlDeviceGetName, the `name` column of nvidia-smi),
# go-nvlib's architecture name, the CUDA compute capability, and the total memory in MiB as
# `nvidia-smi --query-gpu=memory.total` prints it on the EC2 types of the model (g5, g6, g6e, p4d,
# p4de, p5, p5e/p5en). The totals are what the hardware reports, below the marketed size: a selector
# for "at least 80Gi" matches no H100. These totals have no stored upstream source: the driver reads them
# from NVML on the node (cmd/gpu-kubelet-plugin/nvlib.go getGpuInfo, `GetMemoryInfo().Total`), and
# go-nvml's NVML models (pkg/nvml/mock/shared/gpus) carry the marketed sizes (A100-SXM4-40GB 40960 MiB,
# H100 81920 MiB, H200 144384 MiB), not what hardware reports. They are recalled `nvidia-smi` figures;
# a floor within a GiB of one is a guess, so claims and classes are best written with a GiB of margin.
_MIB = 2**20
DRA_FACTS: dict[str, GpuFacts] = {
    A10G.name: GpuFacts("NVIDIA A10G", "Ampere", "8.6", 23028 * _MIB),
    L4.name: GpuFacts("NVIDIA L4", "Ada Lovelace", "8.9", 23034 * _MIB),
    L40S.name: GpuFacts("NVIDIA L40S", "Ada Lovelace", "8.9", 46068 * _MIB),
    A100_40GB.name: GpuFacts("NVIDIA A100-SXM4-40GB", "Ampere", "8.0", 40960 * _MIB),
    A100_80GB.name: GpuFacts("NVIDIA A100-SXM4-80GB", "Ampere", "8.0", 81920 * _MIB),
    H100_80GB.name: GpuFacts("NVIDIA H100 80GB HBM3", "Hopper", "9.0", 81559 * _MIB),
    H200_141GB.name: GpuFacts("NVIDIA H200", "Hopper", "9.0", 143771 * _MIB),
}

# The memory of each MIG profile, in MiB as NVML reports it (nvmlGpuInstanceProfileInfo_t.memorySizeMB),
# which the DRA driver publishes as a MIG device's `memory` capacity (x 2^20, models/nvidia/dra_driver.py).
# Source: NVIDIA/go-nvml's NVML models of each GPU, pkg/nvml/mock/shared/gpus/a100.go (commit 6d52bb30),
# h100.go and h200.go (commit 3d26c396), `MemorySizeMB` of each GPU instance profile (the "+me" profile
# is GPU_INSTANCE_PROFILE_1_SLICE_REV1, sized as the 1-slice profile). The A100 figures are below the
# marketed sizes (3g.40gb: 40192 MiB, 39.25 GiB), as hardware reports them; the H100 and H200 models
# carry the marketed sizes ("40GB (MIG 3g.40gb)": 40960 MiB), which hardware may undercut as it does
# the whole GPUs' totals above. A selector's memory floor meant for a profile is therefore best set a
# GiB under the profile's name (docs/tenants.md).
_A100_40GB_MIG_MIB = {
    "1g.5gb": 4864, "1g.5gb+me": 4864, "1g.10gb": 9856, "2g.10gb": 9856,
    "3g.20gb": 19968, "4g.20gb": 19968, "7g.40gb": 40192,
}
_A100_80GB_MIG_MIB = {
    "1g.10gb": 9856, "1g.10gb+me": 9856, "1g.20gb": 19968, "2g.20gb": 19968,
    "3g.40gb": 40192, "4g.40gb": 40192, "7g.80gb": 80384,
}
_H100_80GB_MIG_MIB = {
    "1g.10gb": 10240, "1g.10gb+me": 10240, "1g.20gb": 20480, "2g.20gb": 20480,
    "3g.40gb": 40960, "4g.40gb": 40960, "7g.80gb": 81920,
}
_H200_141GB_MIG_MIB = {
    "1g.18gb": 18432, "1g.18gb+me": 18432, "1g.35gb": 35840, "2g.35gb": 35840,
    "3g.71gb": 72704, "4g.71gb": 72704, "7g.141gb": 144384,
}
MIG_MEMORY_BYTES: dict[str, dict[str, int]] = {
    model: {profile: mib * _MIB for profile, mib in table.items()}
    for model, table in (
        (A100_40GB.name, _A100_40GB_MIG_MIB),
        (A100_80GB.name, _A100_80GB_MIG_MIB),
        (H100_80GB.name, _H100_80GB_MIG_MIB),
        (H200_141GB.name, _H200_141GB_MIG_MIB),
    )
}


def _row(
    name: str, gpu: GpuModel, gpus: int, vcpu: int, memory_gib: int, *, efa: int, store_gb: int, usd: float | None
) -> InstanceType:
    return InstanceType(name, gpu, gpus, vcpu, memory_gib, efa, store_gb, usd)


# name, GPU, GPUs, vCPU, memory GiB, EFA interfaces (vpc.amazonaws.com/efa), local NVMe GB, on-demand USD/hour
# in PRICE_REGION (None: reservations and Capacity Blocks only)
_INSTANCE_TYPES = (
    # g5
    _row("g5.xlarge", A10G, 1, 4, 16, efa=0, store_gb=250, usd=1.006),
    _row("g5.2xlarge", A10G, 1, 8, 32, efa=0, store_gb=450, usd=1.212),
    _row("g5.4xlarge", A10G, 1, 16, 64, efa=0, store_gb=600, usd=1.624),
    _row("g5.8xlarge", A10G, 1, 32, 128, efa=1, store_gb=900, usd=2.448),
    _row("g5.12xlarge", A10G, 4, 48, 192, efa=1, store_gb=3800, usd=5.672),
    _row("g5.16xlarge", A10G, 1, 64, 256, efa=1, store_gb=1900, usd=4.096),
    _row("g5.24xlarge", A10G, 4, 96, 384, efa=1, store_gb=3800, usd=8.144),
    _row("g5.48xlarge", A10G, 8, 192, 768, efa=1, store_gb=7600, usd=16.288),
    # g6
    _row("g6.xlarge", L4, 1, 4, 16, efa=0, store_gb=250, usd=0.8048),
    _row("g6.2xlarge", L4, 1, 8, 32, efa=0, store_gb=450, usd=0.9776),
    _row("g6.4xlarge", L4, 1, 16, 64, efa=0, store_gb=600, usd=1.3232),
    _row("g6.8xlarge", L4, 1, 32, 128, efa=1, store_gb=900, usd=2.0144),
    _row("g6.12xlarge", L4, 4, 48, 192, efa=1, store_gb=3760, usd=4.6016),
    _row("g6.16xlarge", L4, 1, 64, 256, efa=1, store_gb=1880, usd=3.3968),
    _row("g6.24xlarge", L4, 4, 96, 384, efa=1, store_gb=3760, usd=6.6752),
    _row("g6.48xlarge", L4, 8, 192, 768, efa=1, store_gb=7520, usd=13.3504),
    # g6e
    _row("g6e.xlarge", L40S, 1, 4, 32, efa=0, store_gb=250, usd=1.861),
    _row("g6e.2xlarge", L40S, 1, 8, 64, efa=0, store_gb=450, usd=2.24208),
    _row("g6e.4xlarge", L40S, 1, 16, 128, efa=0, store_gb=600, usd=3.00424),
    _row("g6e.8xlarge", L40S, 1, 32, 256, efa=1, store_gb=900, usd=4.52856),
    _row("g6e.12xlarge", L40S, 4, 48, 384, efa=1, store_gb=3800, usd=10.49264),
    _row("g6e.16xlarge", L40S, 1, 64, 512, efa=1, store_gb=1900, usd=7.57719),
    _row("g6e.24xlarge", L40S, 4, 96, 768, efa=2, store_gb=3800, usd=15.06559),
    _row("g6e.48xlarge", L40S, 8, 192, 1536, efa=4, store_gb=7600, usd=30.13118),
    # p4d
    _row("p4d.24xlarge", A100_40GB, 8, 96, 1152, efa=4, store_gb=8000, usd=21.957642),
    # p4de
    _row("p4de.24xlarge", A100_80GB, 8, 96, 1152, efa=4, store_gb=8000, usd=27.44705),
    # p5
    _row("p5.4xlarge", H100_80GB, 1, 16, 256, efa=1, store_gb=3800, usd=6.88),
    _row("p5.48xlarge", H100_80GB, 8, 192, 2048, efa=32, store_gb=30400, usd=55.04),
    # p5e
    _row("p5e.48xlarge", H200_141GB, 8, 192, 2048, efa=32, store_gb=30400, usd=None),
    # p5en
    _row("p5en.48xlarge", H200_141GB, 8, 192, 2048, efa=16, store_gb=30400, usd=63.296),
)

INSTANCE_TYPES: dict[str, InstanceType] = {t.name: t for t in _INSTANCE_TYPES}
FAMILIES: dict[str, tuple[InstanceType, ...]] = {
    family: tuple(t for t in _INSTANCE_TYPES if t.family == family) for family in dict.fromkeys(t.family for t in _INSTANCE_TYPES)
}


# x86_64 families without accelerators, the ones the general CPU pool (amd64 only) can launch: every
# family in Karpenter's generated price list (aws/karpenter-provider-aws v1.14.1
# pkg/providers/pricing/zz_generated.pricing_aws.go, generated 2026-07-06 for us-east-1) but the
# accelerator, Graviton (a1, and a 'g' after the generation: m7g, c6gn) and Mac families.
CPU_FAMILIES = frozenset({
    "c1", "c3", "c4", "c5", "c5a", "c5ad", "c5d", "c5n", "c6a", "c6i", "c6id", "c6in", "c7a", "c7i", "c7i-flex",
    "c8a", "c8i", "c8i-flex", "c8ib", "c8id", "c8in", "c8ine", "cr1", "d2", "d3", "d3en", "h1", "i2", "i3", "i3en",
    "i4i", "i7i", "i7ie", "m1", "m2", "m3", "m4", "m5", "m5a", "m5ad", "m5d", "m5dn", "m5n", "m5zn", "m6a", "m6i",
    "m6id", "m6idn", "m6in", "m7a", "m7i", "m7i-flex", "m8a", "m8azn", "m8i", "m8i-flex", "m8ib", "m8id", "m8idb",
    "m8idn", "m8in", "m8ine", "r3", "r4", "r5", "r5a", "r5ad", "r5b", "r5d", "r5dn", "r5n", "r6a", "r6i", "r6id",
    "r6idn", "r6in", "r7a", "r7i", "r7iz", "r8a", "r8i", "r8i-flex", "r8ib", "r8id", "r8idb", "r8idn", "r8in", "t1",
    "t2", "t3", "t3a", "u-12tb1", "u-18tb1", "u-24tb1", "u-3tb1", "u-6tb1", "u-9tb1", "u7i-12tb", "u7i-6tb",
    "u7i-8tb", "u7in-16tb", "u7in-24tb", "u7in-32tb", "x1", "x1e", "x2idn", "x2iedn", "x2iezn", "x8i", "z1d",
})
