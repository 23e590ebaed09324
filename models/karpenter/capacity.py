"""How Karpenter sizes a node before it exists: the provider's instance-type capacity and NodeOverlays over it.

Karpenter sizes and counts nodes in extended resources, and which ones depends on the moment:
- While it simulates a launch it reads the instance type's capacity: karpenter-provider-aws v1.14.1
  (pkg/providers/instancetype/types.go, computeCapacity) knows only `nvidia.com/gpu` = physical GPUs,
  with NodeOverlay `capacity` merged over it (kubernetes-sigs/karpenter at the commit the provider pins,
  pkg/cloudprovider/types.go ApplyCapacityOverlay: `lo.Assign`, the overlay's value wins per resource).
- A launched, not yet initialised node counts as its NodeClaim's capacity, which the provider copies from
  the same overlaid instance type, dropping zero quantities (karpenter-provider-aws v1.14.1
  pkg/cloudprovider/cloudprovider.go, Create and instanceToNodeClaim).
- An initialised node counts as `Node.status.capacity`, what the device plugin reports
  (kubernetes-sigs/karpenter pkg/controllers/state/statenode.go, StateNode.Capacity).

So the three agree only when the overlay says what the device plugin will report.
"""

from __future__ import annotations

from collections.abc import Mapping

# karpenter-provider-aws pkg/apis/v1/labels.go, ResourceNVIDIAGPU: the device plugin's name.
from ..nvidia.labels import GPU_RESOURCE


def native_capacity(gpus: int) -> dict[str, int]:
    """The GPU resources karpenter-provider-aws gives an instance type of `gpus` NVIDIA GPUs (computeCapacity)."""
    return {GPU_RESOURCE: gpus}


def apply_overlay(native: Mapping[str, int], overlay: Mapping[str, int] | None) -> dict[str, int]:
    """The capacity Karpenter simulates with: the overlay's value wins per resource (ApplyCapacityOverlay, lo.Assign)."""
    return {**native, **(overlay or {})}


def overlay_capacity(native: Mapping[str, int], advertised: Mapping[str, int]) -> dict[str, int] | None:
    """The NodeOverlay `capacity` that makes Karpenter's view match what the node advertises; None if it already does.

    A native resource the node will not advertise is set to 0, so Karpenter neither places a pod wanting
    it nor counts it; the overlay adds resources the instance type does not know (`nvidia.com/mig-*`).
    """
    merged = {**{resource: 0 for resource in native}, **advertised}
    if merged == dict(native):
        return None
    return dict(sorted(merged.items()))
