"""How a trace's fractional GPU tasks share GPUs: one mode per run, compared on the same seeds (`--sharing`).

A fractional task asks for part of one GPU (sim/trace.py: `num_gpu` 1, `gpu_milli` below 1000). Each mode
gives the pools the trace's classes use a unit (S units per physical GPU), sizes each task in it, and says
which GPU of a node a pod takes:

    whole        S 1: a fraction takes a whole GPU (sim/trace.py rule 5 on a pool without time-slicing)
    time-slice   S = the pool's time-slicing `replicas` (TIME_SLICE_REPLICAS on a pool without them):
                 ceil(fraction x S) slices; the device plugin hands out replicas, so a pod's slices may sit on
                 any GPU of the node (node-level count only) and nothing isolates memory between tenants
    mig          S 7 (compute slices) on a GPU with MIG profiles (config/catalog.py), S 1 elsewhere: the
                 smallest profile whose compute and memory shares both cover the fraction, one per compute
                 size (the one with least memory); a GPU holds profiles while their compute slices fit 7 and
                 their memory slices 8. MIG devices are assumed made when needed: the GPU Operator's fixed
                 `migLayout` would only do worse
    dra          not run: see DRA_NOT_EXPRESSIBLE
    kai          S KAI_UNITS_PER_GPU: a fraction as KAI's `gpu-fraction`, accounted in GPU memory, on one GPU
                 and node chosen by models/kai/placement.py (gpupack and nodeplacement binpack, KAI's
                 defaults). KAI keeps no tenant apart on a GPU: fractions of any tenants with quota on the pool
                 share one, so a pool of several tenants needs `shareBetweenTenants` (docs/fractional-gpus.md)

Whole-GPU pods take S units per GPU on GPUs nothing else holds, in every mode but time-slice. Quotas on the
pools' flavors are scaled by S (`shared_config`), so quota counts what a pod holds: with KAI, a fraction's
share of its GPU, not the reservation pod's whole GPU. The platform counts that share in the tenant's KAI
Queue (docs/fractional-gpus.md); the simulator counts it in Kueue's model of the tenant's ClusterQueue.
The engine asks `GpuSharing` whether a pod fits a node and which node a KAI pod goes to (sim/engine.py
`_fits`, `_bind_pending`); Karpenter's packing (as KAI's node-scale-adjuster asks for ceil(sum of the
pending fractions) GPUs) and consolidation count a node's units.
Every sample interval the free share of each GPU and the sizes of the tasks waiting for each pool go to the
ledger (`Fragments`), from which sim/measures.py computes fragmentation.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from config import PlatformConfig
from config.capacity import GpuPoolPlan
from config.catalog import DRA_FACTS
from config.catalog_types import GpuModel, MigProfile
from config.fair_share import FlavorPlan, TenantQuota
from config.node_pools import SharingConfig
from models.kai import placement

from .ledger import Fragments
from .state import Node, Pod
from .variants import HEADROOM
from .variants import SHARING_ALL as ALL
from .variants import SHARING_MODES as MODES
from .workload import Workload

WHOLE, TIME_SLICE, MIG, DRA, KAI = MODES
# The modes a run can use; `--sharing all` runs each of them on the same seeds.
RUNNABLE = (WHOLE, TIME_SLICE, MIG, KAI)
DRA_NOT_EXPRESSIBLE = (
    "dra-driver-nvidia-gpu v0.4.1 allocates whole devices (a GPU or a MIG device) to a ResourceClaim; pods share a "
    "GPU only by referencing the same claim (GpuConfig sharing: TimeSlicing or MPS, api/nvidia.com/resource/v1beta1 "
    "sharing.go), so two independent trace tasks share a GPU only if something outside the scheduler assigns them "
    "to one claim. That is time-slicing (or MPS) by another API, measured as time-slice; no per-request fraction "
    "of a device exists at this version."
)
# NVIDIA's GPU Operator time-slicing example (`replicas: 4`), for a pool that declares no replicas of its own.
TIME_SLICE_REPLICAS = 4
# KAI's shares in hundredths of a GPU: the trace's gpu_milli are all multiples of 10, so none is rounded.
KAI_UNITS_PER_GPU = 100


# Mechanisms a mode cannot run with: the platform refuses warm-start headroom on a KAI pool (its placeholders are
# the default scheduler's to preempt; KAI would never get their GPUs back).
WITHOUT = {KAI: frozenset({HEADROOM})}


def switched_off(mode: str | None) -> frozenset[str]:
    """The mechanisms `mode` runs without (sim/variants.py MECHANISMS)."""
    return WITHOUT.get(mode or "", frozenset())


# What each mode assumes, in the report's words.
ASSUMPTIONS = {
    WHOLE: "Fractional trace tasks take a whole GPU each (sampled for fragmentation).",
    TIME_SLICE: f"The trace's pools time-sliced (the pool's replicas, else {TIME_SLICE_REPLICAS} per GPU); a fraction takes "
    "ceil(fraction x replicas) slices; no memory isolation, shared between tenants (shareBetweenTenants).",
    MIG: "MIG devices made on demand on GPUs that support MIG: a fraction takes the smallest profile covering it in "
    "compute and memory; other GPUs whole. Fixed layouts would do worse.",
    KAI: "KAI Scheduler fractions by GPU memory on the trace's pools: gpupack and binpack (KAI's defaults); "
    "fractions of different tenants share a GPU (shareBetweenTenants); quota counts each fraction's share, not its "
    "reservation pod's whole GPU; no warm headroom (the platform refuses it on a KAI pool).",
}


def runnable(mode: str) -> str:
    """The mode, or a one-line reason it cannot run."""
    if mode == DRA:
        raise ValueError(f"--sharing dra: {DRA_NOT_EXPRESSIBLE}")
    if mode not in RUNNABLE:
        raise ValueError(f"--sharing {mode!r}: one of {', '.join(RUNNABLE)} or {ALL}")
    return mode


def start(sim: Any, mode: str, pools: Iterable[str], interval: float) -> GpuSharing:
    """The run's GPU placement under `mode`, sampling fragmentation into the ledger every `interval` seconds."""
    tracker = GpuSharing(runnable(mode), frozenset(pools))

    def sample() -> None:
        sim.ledger.fragments.extend(tracker.sample(sim, sim.now, interval))

    sim.clock.every(interval, sample)
    return tracker


def sharing_name(mode: str) -> str:
    """The report's variant name of a mode: `sharing-kai`."""
    return f"sharing-{mode}"


def trace_pools(config: PlatformConfig, workload: Workload) -> tuple[str, ...]:
    """The pools the workload's trace classes may use (each class's flavors, or its tenants' flavors) that share
    nothing: a pool already time-sliced or MIG-partitioned keeps its own sharing in every mode."""
    flavors = {f.name: f for f in config.flavors}
    tenants = {t.name: t for t in config.tenants}
    found: set[str] = set()
    for trace in workload.traces:
        for target in trace.classes.values():
            for name in target.tenants:
                tenant = tenants.get(name)
                own = [q.flavor.name for q in tenant.quotas] if tenant is not None else []
                found.update(flavors[f].pool.name for f in own if target.flavors is None or f in target.flavors)
    unshared = {plan.name for plan in config.gpu_pools if plan.config.sharing.mode == "none"}
    return tuple(sorted(found & unshared))


def units_per_gpu(mode: str, pool: GpuPoolPlan) -> int:
    """S for a pool the trace uses; 1 leaves the pool as configured."""
    if mode == TIME_SLICE:
        return TIME_SLICE_REPLICAS
    if mode == MIG:
        return pool.gpu.compute_slices if pool.gpu.supports_mig else 1
    if mode == KAI:
        return KAI_UNITS_PER_GPU
    return 1


def shared_config(config: PlatformConfig, mode: str, pools: Iterable[str]) -> PlatformConfig:
    """The stack with each of `pools` counted in S units per GPU: the pool advertises S units per GPU and every
    quota on its flavors is S times as many units, so the same GPUs are promised."""
    scale = {plan.name: units_per_gpu(mode, plan) for plan in config.gpu_pools if plan.name in set(pools)}
    scale = {name: s for name, s in scale.items() if s > 1}
    if not scale:
        return config
    plans = {}
    for plan in config.gpu_pools:
        if plan.name in scale:
            sharing = SharingConfig.model_construct(mode="timeSlicing", replicas=scale[plan.name], mig_layout=None,
                                                    share_between_tenants=True)
            plan = replace(plan, config=plan.config.model_copy(update={"sharing": sharing}))
        plans[plan.name] = plan
    flavors = {f.name: FlavorPlan(f.name, plans[f.pool.name], f.capacity_type) for f in config.flavors}

    def scaled(quota: TenantQuota) -> TenantQuota:
        s = scale.get(quota.flavor.pool.name, 1)
        q = quota.quota
        lending = None if q.lending_limit is None else q.lending_limit * s
        return TenantQuota(flavors[quota.flavor.name], q.model_copy(update={
            "nominal": q.nominal * s, "borrowing_limit": q.borrowing_limit * s, "lending_limit": lending}))

    tenants = tuple(replace(t, quotas=tuple(scaled(q) for q in t.quotas)) for t in config.tenants)
    return replace(config, gpu_pools=tuple(plans.values()), flavors=tuple(flavors.values()), tenants=tenants)


def mig_sizes(gpu: GpuModel) -> tuple[MigProfile, ...]:
    """One profile per compute size, the one with least memory, smallest first (media-engine variants left out)."""
    by_compute: dict[int, MigProfile] = {}
    for profile in gpu.mig_profiles.values():
        if "+" in profile.name:
            continue
        held = by_compute.get(profile.compute_slices)
        if held is None or profile.memory_slices < held.memory_slices:
            by_compute[profile.compute_slices] = profile
    return tuple(by_compute[c] for c in sorted(by_compute))


def mig_profile(gpu: GpuModel, milli: int) -> MigProfile:
    """The smallest MIG profile whose compute share and memory share both cover `milli` thousandths of a GPU."""
    for profile in mig_sizes(gpu):
        if profile.compute_slices * 1000 >= milli * gpu.compute_slices and \
                profile.memory_slices * 1000 >= milli * gpu.memory_slices:
            return profile
    return mig_sizes(gpu)[-1]


def task_units(mode: str, pool: GpuPoolPlan, slices: int, gpus: int, milli: int) -> int:
    """What a trace task of `gpus` GPUs (`milli` thousandths of one when a fraction) requests in the pool's units."""
    if not (gpus == 1 and milli < 1000):
        return gpus * slices
    if mode == MIG and pool.gpu.supports_mig and slices == pool.gpu.compute_slices:
        return mig_profile(pool.gpu, milli).compute_slices
    return max(1, math.ceil(milli * slices / 1000))


def gpu_memory_mib(gpu: GpuModel) -> int:
    """What GPU feature discovery labels `nvidia.com/gpu.memory` with (MiB): NVML's total (config/catalog.py)."""
    return DRA_FACTS[gpu.name].memory_bytes // 2**20


@dataclass
class _NodeGpus:
    used: list[int]  # units per GPU (KAI: MiB)
    memory: list[int]  # MIG memory slices per GPU
    whole: list[bool]  # a whole-GPU pod holds it


@dataclass
class GpuSharing:
    """Which GPU of a node each pod of the trace's pools holds, under one mode."""

    mode: str
    pools: frozenset[str]
    strategy: str = placement.BINPACK
    nodes: dict[int, _NodeGpus] = field(default_factory=dict)
    held: dict[Pod, list[tuple[int, int, int]]] = field(default_factory=dict)  # (gpu, used, memory) per GPU held

    def _gpus(self, node: Node) -> _NodeGpus:
        state = self.nodes.get(node.id)
        if state is None:
            count = node.instance.gpus
            state = self.nodes[node.id] = _NodeGpus([0] * count, [0] * count, [False] * count)
        return state

    def _applies(self, node: Node) -> bool:
        return node.pool.name in self.pools and self.mode != TIME_SLICE

    def _request(self, node: Node, pod: Pod) -> tuple[int, int]:
        """A fraction's (used, memory slices) on one GPU; memory slices only under MIG."""
        slices, gpu = node.pool.slices_per_gpu, node.pool.plan.gpu
        if self.mode == KAI:
            return placement.fraction_memory(pod.units / slices, gpu_memory_mib(gpu)), 0
        if self.mode == MIG and gpu.supports_mig:
            profile = next(p for p in mig_sizes(gpu) if p.compute_slices >= pod.units)
            return pod.units, profile.memory_slices
        return pod.units, 0

    def _capacity(self, node: Node) -> int:
        return gpu_memory_mib(node.pool.plan.gpu) if self.mode == KAI else node.pool.slices_per_gpu

    def _is_fraction(self, node: Node, pod: Pod) -> bool:
        return pod.units < node.pool.slices_per_gpu

    def _fraction_gpu(self, node: Node, pod: Pod) -> int | None:
        state, (used, memory) = self._gpus(node), self._request(node, pod)
        capacity = self._capacity(node)
        if self.mode == KAI:
            return placement.choose_gpu(state.used, state.whole, used, capacity, self.strategy)
        fitting = [i for i in range(len(state.used)) if not state.whole[i] and state.used[i] + used <= capacity
                   and state.memory[i] + memory <= node.pool.plan.gpu.memory_slices]
        return max(fitting, key=lambda i: (state.used[i], -i)) if fitting else None  # the fullest GPU that fits

    def _idle(self, state: _NodeGpus) -> list[int]:
        return [i for i in range(len(state.used)) if state.used[i] == 0 and not state.whole[i]]

    def fits(self, node: Node, pod: Pod) -> bool:
        """Whether the pod has its GPUs on the node: a whole GPU each, or one GPU with room for its fraction."""
        if not self._applies(node):
            return True
        if self._is_fraction(node, pod):
            return self._fraction_gpu(node, pod) is not None
        return len(self._idle(self._gpus(node))) >= pod.units // node.pool.slices_per_gpu

    def choose(self, candidates: list[Node], pod: Pod) -> Node:
        """KAI's node for the pod (rule 4 of models/kai/placement.py); kube-scheduler's LeastAllocated otherwise."""
        if self.mode != KAI or not candidates or not self._applies(candidates[0]):
            return min(candidates, key=lambda n: (n.used / n.units, n.id))
        ordered = sorted(candidates, key=lambda n: n.id)
        states = [self._gpus(n) for n in ordered]
        fraction = self._is_fraction(ordered[0], pod)
        shares = []
        for node, state in zip(ordered, states, strict=True):
            request, _ = self._request(node, pod)
            shares.append(fraction and any(not state.whole[i] and placement.fits_shared_gpu(
                state.used[i], request, self._capacity(node)) for i in range(len(state.used))))
        scores = placement.node_scores([placement.idle_gpus(s.used, s.whole) for s in states],
                                       [len(s.used) for s in states], shares, self.strategy)
        best = placement.best_node(scores)
        assert best is not None
        return ordered[best]

    def bind(self, node: Node, pod: Pod) -> None:
        if not self._applies(node):
            return
        state = self._gpus(node)
        if self._is_fraction(node, pod):
            index = self._fraction_gpu(node, pod)
            if index is None:  # bound past the check (a preemption's target): the GPU with most room
                index = min(range(len(state.used)), key=lambda i: (state.whole[i], state.used[i], i))
            used, memory = self._request(node, pod)
            state.used[index] += used
            state.memory[index] += memory
            self.held[pod] = [(index, used, memory)]
            return
        wanted = pod.units // node.pool.slices_per_gpu
        idle = self._idle(state)
        chosen = (idle + [i for i in range(len(state.used)) if i not in idle])[:wanted]
        for index in chosen:
            state.whole[index] = True
        self.held[pod] = [(index, -1, 0) for index in chosen]

    def release(self, node: Node, pod: Pod) -> None:
        holds = self.held.pop(pod, None)
        if holds is None:
            return
        state = self._gpus(node)
        for index, used, memory in holds:
            if used < 0:
                state.whole[index] = False
                continue
            state.used[index] -= used
            state.memory[index] -= memory

    def free_shares(self, node: Node) -> tuple[float, ...]:
        """Each GPU's free share (0 to 1); under time-slicing the node's free slices filled onto its GPUs in order."""
        slices = node.pool.slices_per_gpu
        if not self._applies(node):
            used = node.used
            shares = []
            for _ in range(node.instance.gpus):
                taken = min(slices, used)
                used -= taken
                shares.append((slices - taken) / slices)
            return tuple(shares)
        state, capacity = self._gpus(node), self._capacity(node)
        return tuple(0.0 if whole else (capacity - used) / capacity for used, whole in zip(state.used, state.whole,
                                                                                             strict=True))

    def sample(self, sim: Any, at: float, seconds: float) -> list[Fragments]:
        """Each trace pool's Ready nodes' free GPU shares and the GPUs each task waiting for the pool asks for."""
        waiting: dict[str, list[float]] = {name: [] for name in self.pools}
        for p in sim.pending_pods:
            name = p.group.flavor.pool.name if p.group.flavor is not None else None
            if name in waiting and p.group.tenant in sim.tenants:
                waiting[name].append(p.units / sim.pools[name].slices_per_gpu)
        for group in sim.groups.values():
            if not group.queued:
                continue
            for name in {sim.flavors[f].pool.name for f in group.flavors} & self.pools:
                waiting[name].extend([group.units_per_pod / sim.pools[name].slices_per_gpu] * group.size)
        facts = []
        for name in sorted(self.pools):
            ready = sorted((n for n in sim.pools[name].nodes if n.ready and not n.deleting), key=lambda n: n.id)
            facts.append(Fragments(name, at, seconds, tuple(self.free_shares(n) for n in ready), tuple(sorted(waiting[name]))))
        return facts
