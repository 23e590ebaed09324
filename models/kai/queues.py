"""KAI's queue quota rules and what a pod's GPU-sharing request counts in its queue.

kai-scheduler/KAI-Scheduler v0.17.0:

- pkg/scheduler/plugins/proportion/proportion.go `createQueueResourceAttrs`: a Queue's `spec.resources.<r>` gives
  each resource (cpu, memory, gpu) its deserved share (`quota`), its cap (`limit`, MaxAllowed) and its
  over-quota weight, as written; a resource the Queue leaves out reads as 0 (quota) and 0 (limit).
- capacity_policy/max_allowed_check.go `resultsOverLimit` / `isOverLimit`: a job is refused when, for the queue or
  any queue above it (`ParentQueue`), some resource it requests (non-zero) would take the queue's allocation past
  its limit: `MaxAllowed < Allocated + requested`; a limit of -1 is no limit. A limit of 0 admits nothing.
- capacity_policy/quota_check.go `resultsWithNonPreemptibleOverQuota` / `isAllocatedNonPreemptibleOverQuota`: a
  non-preemptible job is refused when, for the queue or any above it, a requested resource would take the queue's
  non-preemptible allocation past its deserved quota: `Deserved < AllocatedNotPreemptible + requested`; -1 is no
  bound. Preemptible jobs skip this check: they may run over quota up to the limit and are reclaimed first.
- pkg/scheduler/api/resource_info/gpu_resource_requirment.go: a fractional request counts
  `round(portion * 100) * devices / 100` GPUs (`getExtendedResourceGpus`, `GetGpusQuota`); a gpu-memory request
  counts `devices * memory / device memory` (`GpuMemoryAsGpuFraction`), the device's memory being the GPU's the
  pod is placed on.
- pkg/binder/plugins/gpusharing/gpu-request/gpu_request_validator.go `ValidateGpuRequests`: which combinations of
  the sharing annotations and `nvidia.com/gpu` limits KAI's admission webhook accepts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from .constants import (
    GPU_FRACTION_ANNOTATION,
    GPU_FRACTION_NUM_DEVICES_ANNOTATION,
    GPU_MEMORY_ANNOTATION,
    UNLIMITED,
)

RESOURCES = ("cpu", "memory", "gpu")
# GPU portions are compared and summed in hundredths (gpuPortionsAsDecimalsRoundingFactor).
_PORTION_FACTOR = 100
# strconv.ParseUint: decimal digits only.
_UINT = re.compile(r"^[0-9]+$")
# The float forms strconv.ParseFloat and resource.ParseQuantity both read ("0.5", ".5", "5e-1").
_DECIMAL = re.compile(r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$")


@dataclass(frozen=True)
class ResourceQuota:
    """One resource of a Queue's `spec.resources`: `quota` (deserved), `limit` (MaxAllowed), `overQuotaWeight`."""

    quota: float = 0
    limit: float = 0
    over_quota_weight: float = 0


@dataclass(frozen=True)
class Queue:
    name: str
    parent: str | None = None
    resources: Mapping[str, ResourceQuota] = field(default_factory=dict)
    priority: int | None = None

    def share(self, resource: str) -> ResourceQuota:
        """The resource's quota as the scheduler reads it: all zero when the Queue leaves it out."""
        return self.resources.get(resource, ResourceQuota())


def _chain(queues: Mapping[str, Queue], name: str) -> list[Queue]:
    """The queue and every queue above it, nearest first; stops at a parent that does not exist."""
    chain: list[Queue] = []
    current = queues.get(name)
    while current is not None and current not in chain:
        chain.append(current)
        current = queues.get(current.parent) if current.parent is not None else None
    return chain


def _first_past(
    queues: Mapping[str, Queue],
    name: str,
    allocated: Mapping[str, Mapping[str, float]],
    requested: Mapping[str, float],
    bound: Callable[[ResourceQuota], float],
) -> str | None:
    """The first `<queue>/<resource>`, nearest queue first, whose `bound` the request would pass, else None."""
    for queue in _chain(queues, name):
        for resource in RESOURCES:
            ceiling = bound(queue.share(resource))
            wanted = requested.get(resource, 0)
            if ceiling == UNLIMITED or not wanted:
                continue
            if ceiling < allocated.get(queue.name, {}).get(resource, 0) + wanted:
                return f"{queue.name}/{resource}"
    return None


def over_limit(
    queues: Mapping[str, Queue], name: str, allocated: Mapping[str, Mapping[str, float]], requested: Mapping[str, float]
) -> str | None:
    """The first `<queue>/<resource>` whose limit the request would pass (`isOverLimit` up the tree), else None.

    `allocated[queue][resource]`: what the queue already holds, its children's allocations included.
    """
    return _first_past(queues, name, allocated, requested, lambda share: share.limit)


def non_preemptible_over_quota(
    queues: Mapping[str, Queue],
    name: str,
    allocated_non_preemptible: Mapping[str, Mapping[str, float]],
    requested: Mapping[str, float],
) -> str | None:
    """The first `<queue>/<resource>` whose deserved quota a non-preemptible request would pass, else None."""
    return _first_past(queues, name, allocated_non_preemptible, requested, lambda share: share.quota)


def allocatable(
    queues: Mapping[str, Queue],
    name: str,
    requested: Mapping[str, float],
    allocated: Mapping[str, Mapping[str, float]],
    allocated_non_preemptible: Mapping[str, Mapping[str, float]],
    preemptible: bool,
) -> bool:
    """Whether the queues let a job of `name` with `requested` be allocated (the node side aside)."""
    if name not in queues:
        return False
    if over_limit(queues, name, allocated, requested) is not None:
        return False
    return preemptible or non_preemptible_over_quota(queues, name, allocated_non_preemptible, requested) is None


def gpu_request_error(annotations: Mapping[str, str], whole_gpu_limit: bool) -> str | None:
    """KAI's admission refusal of a pod's GPU request (`ValidateGpuRequests`), or None when it accepts it.

    `whole_gpu_limit`: some container or init container has an `nvidia.com/gpu` limit.
    """
    fraction = annotations.get(GPU_FRACTION_ANNOTATION)
    memory = annotations.get(GPU_MEMORY_ANNOTATION)
    devices = annotations.get(GPU_FRACTION_NUM_DEVICES_ANNOTATION)
    if fraction is not None and whole_gpu_limit:
        return "cannot have both GPU fraction request and whole GPU resource request/limit"
    if memory is not None and (fraction is not None or whole_gpu_limit):
        return "cannot request both GPU and GPU memory"
    if devices is not None and fraction is None and memory is None:
        return "cannot request multiple fractional devices without specifying fraction portion or gpu-memory"
    if memory is not None and (not _UINT.match(memory) or int(memory) == 0):
        return "gpu-memory annotation value must be a positive integer greater than 0"
    if fraction is not None:
        value = float(fraction) if _DECIMAL.match(fraction) else math.nan
        if math.isnan(value) or not 0 < value < 1:
            return "gpu-fraction annotation value must be a positive number smaller than 1.0"
    if devices is not None and (not _UINT.match(devices) or int(devices) == 0):
        return "fraction count annotation value must be a positive integer greater than 0"
    return None


def gpu_share(annotations: Mapping[str, str], whole_gpus: int = 0, device_memory_mib: int | None = None) -> float:
    """The GPUs a pod counts in its queue: whole GPUs, or its fraction or memory share on each of its devices.

    `device_memory_mib`: the memory of the GPUs it is placed on, needed for a gpu-memory request.
    """
    devices = int(annotations.get(GPU_FRACTION_NUM_DEVICES_ANNOTATION, "1"))
    if GPU_MEMORY_ANNOTATION in annotations:
        if not device_memory_mib:
            raise ValueError("a gpu-memory request counts against the memory of the GPU it is placed on")
        return devices * int(annotations[GPU_MEMORY_ANNOTATION]) / device_memory_mib
    if GPU_FRACTION_ANNOTATION in annotations:
        # Go's math.Round: halves away from zero (Python's round takes them to even).
        hundredths = math.floor(float(annotations[GPU_FRACTION_ANNOTATION]) * _PORTION_FACTOR + 0.5)
        return hundredths * devices / _PORTION_FACTOR
    return float(whole_gpus)
