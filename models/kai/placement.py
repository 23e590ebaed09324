"""Where the KAI Scheduler puts a fractional GPU pod (kai-scheduler/KAI-Scheduler v0.17.0).

A pod asks for part of one GPU with the `gpu-fraction` annotation (a share, e.g. "0.5") or `gpu-memory`
(MiB) (pkg/common/constants/constants.go `GpuFraction`, `GpuMemory`). The scheduler accounts for it in
GPU memory: `gpu-memory` as given, a fraction as `int(fraction x MemoryOfEveryGpuOnNode)`, the node's
per-GPU memory from the `nvidia.com/gpu.memory` label (pkg/scheduler/api/node_info/node_info.go
`GetResourceGpuMemory`). The rules encoded here, each from a file at v0.17.0:

1. Shared GPUs (pkg/scheduler/api/node_info/gpu_sharing_node_info.go `IsTaskFitOnGpuGroup`,
   `enoughResourcesOnGpu`): a fraction fits a GPU that already holds fractions (used memory not 0) when
   the GPU's memory less what its fractions hold is at least the request. A GPU holding a whole-GPU pod
   is no candidate: whole GPUs and shared ones are apart.
2. Candidate order (pkg/scheduler/framework/session.go `FittingGPUs`, `filterGpusByEnoughResources`,
   `sortGPUs`): the fitting shared GPUs and one "whole GPU" candidate per idle GPU, sorted by the GPU
   order score, highest first. The default configuration enables `gpupack`
   (pkg/scheduler/conf_util/scheduler_conf_util.go `defaultSchedulerConf`), whose score is a shared GPU's
   used memory share and 0 for an idle GPU (pkg/scheduler/plugins/gpupack/gpupack.go): the fullest shared
   GPU that fits, an idle GPU only when none does. `gpuspread` scores 1 - used share and 1 for an idle GPU
   (pkg/scheduler/plugins/gpuspread/gpuspread.go): an idle GPU first, then the emptiest shared one. The
   operator enables one of the two from the SchedulingShard's placement strategy, binpack by default
   (pkg/apis/kai/v1/schedulingshard_types.go).
   Equal scores keep Go's map order (random); here the lower GPU index goes first.
3. The first candidate is taken (pkg/scheduler/gpu_sharing/gpuSharing.go `GetNodePreferableGpuForSharing`);
   an idle GPU becomes a new shared GPU group, and the binder holds it with one reservation pod requesting
   `nvidia.com/gpu: 1` in KAI's reservation namespace while any fraction uses it
   (pkg/binder/binding/resourcereservation/resource_reservation.go `createGPUReservationPod`): to the
   kubelet, Karpenter and Kueue's pod counting the shared GPU is one whole GPU taken.
4. Node order (pkg/scheduler/plugins/nodeplacement/pack.go, spread.go; gpusharingorder.go; scores.go):
   `gpusharingorder` adds 10000 (`scores.GpuSharing`) to a node with a shared GPU the pod fits on; the
   default `nodeplacement` binpack adds 9 x (1 - (idle - least) / (most - least)) over the fitting nodes'
   idle whole GPUs (`NonAllocatedResource`: GPUs with no pod at all), 9 when every node has as many and 0
   when none has any; spread adds idle / GPUs. The highest total wins; here ties go to the first node given.
"""

from __future__ import annotations

from collections.abc import Sequence

BINPACK = "binpack"
SPREAD = "spread"
STRATEGIES = (BINPACK, SPREAD)
# pkg/scheduler/plugins/scores/scores.go at v0.17.0.
MAX_HIGH_DENSITY = 9
GPU_SHARING_SCORE = 10000
# pkg/common/constants/constants.go: the annotations a tenant's pod asks for a share of a GPU with.
GPU_FRACTION_ANNOTATION = "gpu-fraction"
GPU_MEMORY_ANNOTATION = "gpu-memory"


def fraction_memory(fraction: float, gpu_memory_mib: int) -> int:
    """`GetResourceGpuMemory` for a `gpu-fraction` request: the MiB the fraction holds on a GPU of this memory."""
    return int(fraction * gpu_memory_mib)


def fits_shared_gpu(used_mib: int, request_mib: int, gpu_memory_mib: int) -> bool:
    """Rule 1: a GPU already shared (used memory not 0) with room for the request."""
    return used_mib != 0 and gpu_memory_mib - used_mib - request_mib >= 0


def choose_gpu(used_mib: Sequence[int], whole: Sequence[bool], request_mib: int, gpu_memory_mib: int,
               strategy: str = BINPACK) -> int | None:
    """Rules 2-3: the index of the GPU a fraction of `request_mib` goes to on one node, or None.

    `used_mib[i]` is what fractions hold on GPU i, `whole[i]` whether a whole-GPU pod holds it."""
    if strategy not in STRATEGIES:
        raise ValueError(f"no GPU placement strategy {strategy!r}: one of {', '.join(STRATEGIES)}")
    scored: list[tuple[float, int]] = []
    for index, (used, taken) in enumerate(zip(used_mib, whole, strict=True)):
        if taken:
            continue
        if used == 0:
            scored.append((0.0 if strategy == BINPACK else 1.0, index))
        elif fits_shared_gpu(used, request_mib, gpu_memory_mib):
            share = used / gpu_memory_mib
            scored.append((share if strategy == BINPACK else 1 - share, index))
    if not scored:
        return None
    return min(scored, key=lambda item: (-item[0], item[1]))[1]


def idle_gpus(used_mib: Sequence[int], whole: Sequence[bool]) -> int:
    """`NonAllocatedResource` for GPUs: those with neither a whole-GPU pod nor a fraction."""
    return sum(1 for used, taken in zip(used_mib, whole, strict=True) if used == 0 and not taken)


def node_scores(idle: Sequence[int], gpus: Sequence[int], shares: Sequence[bool], strategy: str = BINPACK) -> list[float]:
    """Rule 4 over the fitting nodes: each node's score from its idle GPUs, its GPUs, and whether a shared GPU of it
    fits the pod (`gpusharingorder`)."""
    if strategy not in STRATEGIES:
        raise ValueError(f"no node placement strategy {strategy!r}: one of {', '.join(STRATEGIES)}")
    scores = []
    least, most = (min(idle), max(idle)) if idle else (0, 0)
    for free, count, shared in zip(idle, gpus, shares, strict=True):
        if strategy == BINPACK:
            if count == 0 or most == 0:
                score = 0.0
            elif least == most:
                score = float(MAX_HIGH_DENSITY)
            else:
                score = MAX_HIGH_DENSITY * (1 - (free - least) / (most - least))
        else:
            score = free / count if count else 0.0
        scores.append(score + (GPU_SHARING_SCORE if shared else 0))
    return scores


def best_node(scores: Sequence[float]) -> int | None:
    """The index of the highest score, the first one on a tie; None without nodes."""
    if not scores:
        return None
    return max(range(len(scores)), key=lambda index: (scores[index], -index))
