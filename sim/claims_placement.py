"""Pods that take their GPUs through a ResourceClaimTemplate (`jobs[].claimTemplate`), on the DRA pools.

A tenant's pod names a template in `spec.resourceClaims[].resourceClaimTemplateName`; the pod holds one
claim made from it, so the template's `count` devices of its DeviceClass, each matching its selectors.

- Kueue charges the pod `count` devices of the class under the class's quota resource (config/claims.py
  `claim_charge`, from kueue v0.19.2 pkg/dra/claims.go and pkg/dra/mapper.go), on the first of the tenant's
  flavors with room; it reads no selector, so a flavor of a pool whose devices do not match would admit a pod
  that never schedules (config/claims.py refuses quota there).
- kube-scheduler's DRA plugin binds the pod only to a node that publishes `count` free devices of the class
  matching every selector, all in one claim on that node. Which devices a node of a DRA pool publishes, and
  which match: config/dra_devices.py (`pool_devices`, `in_class`, `device_matches`), the same evaluation that
  proves the stack's selectors. Among several matching kinds the simulator takes the first published
  first; which equal matches the scheduler's allocator picks is not modelled.
- A DRA pool is an EKS managed node group of fixed size (config/capacity.py `node_group_size`): Karpenter
  launches nothing for a pod with claims, so its nodes stand from the start, on-demand, of the group's first
  type, and are never consolidated or expired; they cost their price all run long.
- Capacity and cost count devices: a node of the pool offers `devices per GPU x GPUs` (a MIG pool: its
  layout's devices), and a pod holding k of them holds k / devices-per-GPU of a GPU and that share of the
  node's price. Each device of a MIG layout counts as an equal share of its GPU, whatever its slice size.

Left out: claims shared by several pods, DRA sharing strategies, and the allocator's backtracking across
several requests of one claim (a template has one request).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from config import PlatformConfig
from config.capacity import GpuPoolPlan
from config.claims import claim_charge
from config.dra_devices import describe, device_class_selectors, in_class, pool_devices
from config.fair_share import TenantPlan
from config.node_pools import ClaimTemplateConfig
from models.karpenter.provisioning import ON_DEMAND
from models.kubernetes.cel import Verdict
from models.kubernetes.dra_cel import device_matches

from .state import Node, Pod

if TYPE_CHECKING:
    from .engine import Simulation


@dataclass(frozen=True)
class ClaimShape:
    """What one pod of a claim stream asks for: `count` devices, charged as `charge`, of the kinds each pool
    publishes that match (indices into `pool_devices` of the pool)."""

    template: str
    count: int
    charge: tuple[tuple[str, int], ...]
    kinds: tuple[tuple[str, tuple[int, ...]], ...]  # (pool name, matching kinds), DRA pools with any

    def matching(self, pool: str) -> tuple[int, ...]:
        return dict(self.kinds).get(pool, ())


def find_template(config: PlatformConfig, tenant: TenantPlan, name: str) -> ClaimTemplateConfig | None:
    """The template of that name in the tenant's namespace (a pod can name only a template of its own namespace)."""
    return next((t for t in config.gpu.dra.claim_templates if t.name == name and t.namespace == tenant.namespace), None)


def matching_kinds(config: PlatformConfig, template: ClaimTemplateConfig, pool: GpuPoolPlan) -> tuple[int, ...]:
    """The kinds of device the pool's nodes publish that are in the template's class and pass every selector."""
    classes = device_class_selectors(config.gpu.dra)
    class_selectors = classes.get(template.device_class, [])
    expressions = [expression for _, expression in template.selector_expressions]
    return tuple(
        index
        for index, kind in enumerate(pool_devices(pool))
        if in_class(class_selectors, kind.device)
        and all(device_matches(e, kind.device).verdict is Verdict.PASSED for e in expressions)
    )


def shape(config: PlatformConfig, template: ClaimTemplateConfig) -> ClaimShape:
    """The pod's claim as the simulator places it: its charge, and the kinds of device each DRA pool has for it."""
    kinds = tuple(
        (pool.name, found) for pool in config.gpu_pools if pool.is_dra and (found := matching_kinds(config, template, pool))
    )
    return ClaimShape(template.name, template.count, tuple(sorted(claim_charge(template).items())), kinds)


def claim_flavors(config: PlatformConfig, tenant: TenantPlan, wanted: Sequence[str] | None, claim: ClaimShape) -> tuple[str, ...]:
    """The tenant's flavors (those the stream names, when it names some) on pools whose devices match, in the
    ClusterQueue's order: the pods' node affinity, so Kueue admits them only there."""
    pools = dict(claim.kinds)
    return tuple(
        quota.flavor.name
        for quota in tenant.quotas
        if (wanted is None or quota.flavor.name in wanted) and quota.flavor.pool.name in pools
    )


def problem(config: PlatformConfig, tenant: TenantPlan, name: str, wanted: Sequence[str] | None) -> tuple[str, str] | None:
    """(key, message) when a stream of the tenant cannot ask for GPUs through the template `name`; None when it can."""
    own = [t.name for t in config.gpu.dra.claim_templates if t.namespace == tenant.namespace]
    template = find_template(config, tenant, name)
    if template is None:
        return ("claimTemplate", f"{name!r} is no claim template of namespace {tenant.namespace} in gpu.dra.claimTemplates "
                f"({', '.join(own) or 'none'}): name one of those, or add it to the stack")
    claim = shape(config, template)
    if claim_flavors(config, tenant, wanted, claim):
        return None
    dra = [pool for pool in config.gpu_pools if pool.is_dra]
    offered = "; ".join(f"{pool.name}: {describe(kind.device)}" for pool in dra for kind in pool_devices(pool)) or "none"
    chosen = f" among flavors {', '.join(wanted)}" if wanted is not None else ""
    return ("claimTemplate", f"{name!r}: no DRA pool{chosen} of tenant {tenant.name} publishes devices that match its "
            f"selectors (class {template.device_class}; the pools publish {offered}): list a flavor of a pool that "
            "matches, or use a template its pools match")


# --- the nodes ------------------------------------------------------------------------------------


def _free(node: Node, kinds: Sequence[int], exclude: Pod | None = None) -> dict[int, int]:
    published = pool_devices(node.pool.plan)
    free = {index: published[index].per_gpu * node.instance.gpus for index in kinds}
    for pod in node.pods:
        if pod is exclude:
            continue
        for index, taken in pod.devices:
            if index in free:
                free[index] -= taken
    return free


def fits(node: Node, pod: Pod) -> bool:
    """The node publishes enough free devices that match the pod's claim."""
    claim = pod.group.claim
    assert claim is not None
    return sum(_free(node, claim.matching(node.pool.name)).values()) >= claim.count


def allocate(node: Node, pod: Pod) -> tuple[tuple[int, int], ...]:
    """The devices the claim takes on the node, (kind, how many), the first published kind first."""
    claim = pod.group.claim
    assert claim is not None
    left, taken = claim.count, []
    for index, free in _free(node, claim.matching(node.pool.name), exclude=pod).items():
        if left and free > 0:
            taken.append((index, min(free, left)))
            left -= min(free, left)
    assert left == 0, "allocate() after fits()"
    return tuple(taken)


def devices_per_gpu(pool: GpuPoolPlan) -> int:
    """Devices one GPU of a DRA pool publishes: 1 whole GPU, or its MIG layout's devices."""
    return sum(kind.per_gpu for kind in pool_devices(pool))


def stand_up(sim: Simulation) -> None:
    """Every DRA pool's node group, Ready at the start and kept: Karpenter launches and removes nothing there.
    A pool already given fixed nodes (the static baseline's) keeps those."""
    for pool in sim.pools.values():
        plan = pool.plan
        if not plan.is_dra or not pool_devices(plan):
            continue
        pool.static = True
        pool.slices_per_gpu = devices_per_gpu(plan)  # the node's units: devices, as pods of claims hold them
        if pool.nodes:
            continue
        first = next((o for o in pool.options if o.name == plan.instance_types[0].name), None)
        if first is None:
            continue  # no on-demand price in the region: sim/workload_check.py has no cost to give it
        for _ in range(plan.node_group_size):
            sim.launch_standing(pool, first, ON_DEMAND)

