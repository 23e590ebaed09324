"""Time to GPU for a new replica on a pool, step by step: the numbers are data, each with where it comes from.

A replica becomes Ready after three steps, each shortened by one of the pool's warm-start features:
1. a node: EC2 launch, boot and join, then the GPU ready to schedule; with headroom, a placeholder's
   node is already up and the scheduler only evicts the placeholder;
2. the image: pulled and unpacked; from an image snapshot, containerd finds it on the data volume and
   only the files the server reads at start are read, from S3-backed blocks of the restored volume;
3. the model: downloaded from the Hugging Face Hub, or streamed from S3 by the Run:ai model streamer
   (`modelSource: s3://...`), then the engine starts (weights to GPU, CUDA graphs).
Every figure is an assumption stated with its source; docs/time-to-gpu.md explains them and how to
measure your own. `offline/summary.py` shows them per pool, the simulator draws surge start times from them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .capacity import GpuPoolPlan

MIB_PER_GIB = 1024


@dataclass(frozen=True)
class Figure:
    value: float
    unit: str
    source: str


# --- 1. the node ------------------------------------------------------------------------------------
NODE_LAUNCH = Figure(
    75, "s", "EC2 RunInstances to kubelet Ready for a GPU instance from Karpenter's launch: assumption, in the "
    "range AWS's Karpenter docs and re:Invent talks quote (about 60-90 s); measure with karpenter_nodeclaims_"
    "(launched|initialized) timestamps",
)
GPU_READY = {
    "al2023": Figure(
        90, "s", "GPU Operator on an AL2023 NVIDIA AMI (driver preinstalled): container toolkit, validator and device "
        "plugin pods start and the node advertises nvidia.com/gpu: assumption",
    ),
    "bottlerocket": Figure(
        20, "s", "Bottlerocket's NVIDIA variant runs its own device plugin at boot; the node advertises nvidia.com/gpu "
        "soon after Ready: assumption",
    ),
}
PREEMPTION = Figure(
    5, "s", "kube-scheduler evicts a placeholder (grace period 0, pause exits at once) and binds the replica on "
    "its next attempt: assumption",
)

# --- 2. the image -------------------------------------------------------------------------------------
IMAGE = Figure(10, "GiB", "vllm/vllm-openai:v0.11.0 compressed layers, about 10 GB (issue text; check with `crane manifest`)")
UNPACK = Figure(
    150, "MiB/s", "containerd's pull (download, gunzip, unpack, mostly one core): assumption; the node's network is the "
    "limit only below it",
)
READ_AT_START = Figure(
    4, "GiB", "what the vLLM server reads of its image to start (Python, torch and CUDA libraries): assumption",
)
LAZY_SNAPSHOT = Figure(
    40, "MiB/s", "first reads of blocks of a volume restored from a snapshot without an initialization rate, fetched "
    "from S3 on demand (Amazon EBS User Guide, 'Initialize Amazon EBS volumes': higher latency on first access): "
    "assumption",
)

# --- 3. the model ---------------------------------------------------------------------------------------
MODEL = Figure(16, "GiB", "a reference model: an 8B-parameter model in bf16 (e.g. Llama-3.1-8B-Instruct, 16 GB)")
HUB = Figure(
    100, "MiB/s", "Hugging Face Hub download to one replica (huggingface_hub without hf_transfer): assumption",
)
S3_STREAMER = Figure(
    1000, "MiB/s", "Run:ai model streamer reading safetensors from S3 in parallel into GPU memory (run-ai/"
    "runai-model-streamer docs, benchmarks of GB/s on 25-100 Gbps instances): assumption, capped by the node's network",
)
ENGINE_START = Figure(
    60, "s", "vLLM engine start after the weights are read: profiling, KV cache allocation, CUDA graph capture: "
    "assumption",
)

# Each instance type's network bandwidth, Gbit/s, as the AWS accelerated-computing instance type pages
# list it ('Network bandwidth'; an 'up to' figure is a burst, the baseline is lower). Not vendored: check
# with `aws ec2 describe-instance-types --query 'InstanceTypes[].NetworkInfo.NetworkPerformance'`.
NETWORK_GBPS: dict[str, float] = {
    "g5.xlarge": 10, "g5.2xlarge": 10, "g5.4xlarge": 25, "g5.8xlarge": 25, "g5.12xlarge": 40, "g5.16xlarge": 25,
    "g5.24xlarge": 50, "g5.48xlarge": 100,
    "g6.xlarge": 10, "g6.2xlarge": 10, "g6.4xlarge": 25, "g6.8xlarge": 25, "g6.12xlarge": 40, "g6.16xlarge": 25,
    "g6.24xlarge": 50, "g6.48xlarge": 100,
    "g6e.xlarge": 20, "g6e.2xlarge": 20, "g6e.4xlarge": 20, "g6e.8xlarge": 25, "g6e.12xlarge": 100,
    "g6e.16xlarge": 35, "g6e.24xlarge": 200, "g6e.48xlarge": 400,
    "p4d.24xlarge": 400, "p4de.24xlarge": 400, "p5.4xlarge": 100, "p5.48xlarge": 3200, "p5e.48xlarge": 3200,
    "p5en.48xlarge": 3200,
}


def network_mib_s(pool: GpuPoolPlan) -> float:
    """The slowest network of the pool's instance types, MiB/s: what a new node surely has."""
    gbps = min(NETWORK_GBPS[t.name] for t in pool.instance_types)
    return gbps * 1e9 / 8 / 2**20


@dataclass(frozen=True)
class Step:
    """One step's seconds on the cold path and with each feature; `how` says what each number assumes."""

    name: str
    cold: float
    warm: float
    how: str


def steps(pool: GpuPoolPlan, s3_weights: bool) -> tuple[Step, Step, Step]:
    """The three steps of a surge replica on `pool`, cold and warm (headroom for the node, the snapshot for
    the image, S3 for the model when `s3_weights`)."""
    warm_start = pool.config.warm_start
    node = Step(
        "node: launch, join, GPU ready",
        NODE_LAUNCH.value + GPU_READY[pool.config.ami_family].value,
        PREEMPTION.value if pool.headroom_gpus else NODE_LAUNCH.value + GPU_READY[pool.config.ami_family].value,
        "headroom: evict a placeholder" if pool.headroom_gpus else "no headroom: a new node",
    )
    pull_rate = min(network_mib_s(pool), UNPACK.value)
    cold_image = IMAGE.value * MIB_PER_GIB / pull_rate
    if warm_start.image_snapshot is not None:
        rate = warm_start.volume_initialization_rate or LAZY_SNAPSHOT.value
        rate = min(rate, pool.config.root_volume.throughput)
        image = Step("image", cold_image, READ_AT_START.value * MIB_PER_GIB / rate, f"snapshot, read at {rate:g} MiB/s")
    else:
        image = Step("image", cold_image, cold_image, f"pulled at {pull_rate:g} MiB/s")
    source_rate = min(S3_STREAMER.value, network_mib_s(pool)) if s3_weights else HUB.value
    model = Step(
        "model: load and engine start",
        MODEL.value * MIB_PER_GIB / HUB.value + ENGINE_START.value,
        MODEL.value * MIB_PER_GIB / source_rate + ENGINE_START.value,
        f"{'S3 streamer' if s3_weights else 'Hub'} at {source_rate:g} MiB/s",
    )
    return node, image, model
