"""The Kueue objects a stack's queueing derives from its plans: Cohorts and each tenant's ClusterQueue.

They are plain manifests, built here rather than in the component that declares them, because the
simulator (sim/) drives the Kueue model (models/kueue) with the very objects the render declares.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from models.kubernetes.quantity import gibibytes, plain_decimal

from .fair_share import CPU_FLAVOR, TenantPlan
from .namespaces import namespace_selector
from .tenants import QueueingConfig

API_VERSION = "kueue.x-k8s.io/v1beta2"


def cohorts(queueing: QueueingConfig) -> list[dict[str, Any]]:
    """The root Cohort, then one per business unit nested under it (`spec.parentName`)."""
    root = manifest("Cohort", queueing.cohort, {})
    return [root, *(manifest("Cohort", unit, {"parentName": queueing.cohort}) for unit in queueing.business_units)]


def cluster_queue(tenant: TenantPlan) -> dict[str, Any]:
    """The tenant's ClusterQueue: one resource group over every resource its pods can request.

    Flavors are tried in order: `cpu` first with no GPUs, so CPU-only pods get the CPU pool (a GPU
    flavor would put them on GPU nodes); then the tenant's GPU flavors in the order its config lists
    them. One group means a GPU pod's cpu and memory come from the same flavor as its GPUs.
    """
    covered = tenant.covered_resources
    cpu_quota = {"cpu": (tenant.config.cpu, 0, None), "memory": (tenant.config.memory_gib, 0, None)}
    flavors = [_flavor_quotas(CPU_FLAVOR, covered, cpu_quota)]
    flavors += [_flavor_quotas(quota.flavor.name, covered, quota.resources()) for quota in tenant.quotas]
    spec = {
        "cohortName": tenant.cohort,
        "namespaceSelector": namespace_selector(tenant.namespace),
        "resourceGroups": [{"coveredResources": list(covered), "flavors": flavors}],
        # Reclaim: a tenant gets its nominal quota back from borrowers whatever their priority.
        # Within its own queue, higher tiers preempt lower ones. borrowWithinCohort stays Never:
        # with fair sharing on, Kueue ignores it and preempts borrowers by share instead.
        "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
        "fairSharing": {"weight": plain_decimal(tenant.config.fair_share_weight)},
    }
    return manifest("ClusterQueue", tenant.name, spec)


def _flavor_quotas(
    flavor: str, covered: Sequence[str], quotas: Mapping[str, tuple[int, int, int | None]]
) -> dict[str, Any]:
    """Every covered resource, in coveredResources' order (the webhook checks names by position), 0 where none.

    borrowingLimit is always written: Kueue reads a missing one as unlimited, which would admit more
    than the namespace's ResourceQuota (derived from nominal + borrowing) lets pods use.
    lendingLimit only where the tenant set one: missing means it lends all its idle nominal.
    """
    resources = []
    for resource in covered:
        nominal, borrowing, lending = quotas.get(resource, (0, 0, None))
        entry = {"name": resource, "nominalQuota": _amount(resource, nominal), "borrowingLimit": _amount(resource, borrowing)}
        if lending is not None:
            entry["lendingLimit"] = _amount(resource, lending)
        resources.append(entry)
    return {"name": flavor, "resources": resources}


def _amount(resource: str, value: int) -> str:
    """cpu in cores, memory in GiB, devices in units, as Quantity strings."""
    return gibibytes(value) if resource == "memory" else plain_decimal(value)


def manifest(kind: str, name: str, spec: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
    metadata = {"name": name} if namespace is None else {"name": name, "namespace": namespace}
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": metadata, "spec": spec}
