"""GPUs through DRA claim templates, as Kueue admits them: what a pod is charged, and where it fits.

Kueue (kubernetes-sigs/kueue v0.19.2, KueueDRAIntegration on by default: pkg/features/kube_features.go)
charges a pod that uses a ResourceClaimTemplate in pkg/dra/claims.go,
GetResourceRequestsForResourceClaimTemplates:
1. each `exactly` request with allocationMode ExactCount counts `count` devices of its deviceClassName
   (countDevicesPerClass; FirstAvailable, AllocationMode All and adminAccess make the pod inadmissible);
2. a request with CEL selectors is admitted only when enough matching devices are already published in
   ResourceSlices (validateCELSelectorsAgainstDevices: "insufficient matching devices", retried);
3. each class is looked up in `resources.deviceClassMappings` (pkg/dra/mapper.go, Lookup); an unmapped
   class makes the workload inadmissible;
4. the mapped resource is charged like any other against the ClusterQueue's flavors.

The platform maps each of the driver's classes to `device_class_resource(class)` (components/queueing.py)
and gives DRA flavors quota in it (`FlavorPlan.resources_per_unit`).
"""

from __future__ import annotations

from collections.abc import Sequence

from models.kueue.flavorassigner import fits_queue

from .advertised import dra_devices
from .capacity import GpuPoolPlan
from .errors import Problems, item_labels
from .fair_share import TenantPlan
from .keys import CONFIG_NAMESPACE
from .labels import device_class_resource
from .node_pools import ClaimTemplateConfig

ROOT = f"{CONFIG_NAMESPACE}:gpu.dra.claimTemplates"


def claim_charge(template: ClaimTemplateConfig) -> dict[str, int]:
    """What Kueue charges one pod that uses the template: `count` devices of its class, under the mapped resource."""
    return {device_class_resource(template.device_class): template.count}


def template_charges(templates: Sequence[ClaimTemplateConfig]) -> dict[tuple[str, str], dict[str, int]]:
    """(namespace, template name) -> `claim_charge`: the devices each claim made from the template holds."""
    return {(template.namespace, template.name): claim_charge(template) for template in templates}


def admitting_flavors(tenant: TenantPlan, charge: dict[str, int]) -> list[str]:
    """The tenant's flavors where a pod charged this much fits nominal plus borrowing, in the queue's order."""
    return [
        quota.flavor.name
        for quota in tenant.quotas
        if all(fits_queue(amount, *quota.resources().get(resource, (0, 0, None))[:2]) for resource, amount in charge.items())
    ]


def smallest_node(pool: GpuPoolPlan) -> tuple[str, int]:
    """The pool's instance type whose node publishes the fewest devices of its class, and how many.

    A claim's devices all come from one node, and a DRA pool is an EKS managed node group that may hold
    any of its instance types (components/dra_nodes.py), so the claim must fit the smallest.
    """
    return min(((t.name, dra_devices(pool, t)) for t in pool.instance_types), key=lambda entry: entry[1])


def check_claim_templates(
    templates: Sequence[ClaimTemplateConfig],
    tenants: Sequence[TenantPlan],
    pools: Sequence[GpuPoolPlan],
    problems: Problems,
) -> None:
    """Every claim template's pods can be admitted by Kueue and placed on one node of a DRA pool."""
    by_namespace = {tenant.namespace: tenant for tenant in tenants}
    labels = item_labels(templates)
    for index, template in enumerate(templates):
        key = f"{ROOT}[{labels[index]}]"
        selector = "minMemoryGiB" if template.min_memory_gib is not None else "migProfile" if template.mig_profile else None
        if selector is not None:
            problems.add(
                f"{key}.{selector}",
                "makes the claim a CEL selector, and Kueue 0.19 admits such a pod only while matching devices are "
                "published (pkg/dra/claims.go), which the platform cannot check before its nodes publish theirs; a "
                f"selector no device matches would wait forever: remove {selector} to take any device of class "
                f"{template.device_class}",
            )
        pools_of_class = [pool for pool in pools if pool.dra_device_class == template.device_class]
        if not pools_of_class:
            dra_pools = [pool.name for pool in pools if pool.dra_device_class is not None]
            if template.mig_profile is None and dra_pools:
                # (MIG claims without a MIG pool, and claims without any DRA pool: config/platform.py says so.)
                problems.add(
                    key,
                    f"takes whole GPUs (class {template.device_class}), but every DRA pool ({', '.join(dra_pools)}) is "
                    "partitioned into MIG devices (class mig.nvidia.com): add a DRA pool without MIG",
                )
            continue
        for pool in pools_of_class:
            instance_type, devices = smallest_node(pool)
            if template.count > devices:
                problems.add(
                    f"{key}.count",
                    f"{template.count} devices of class {template.device_class} in one claim, but the node group of "
                    f"pool {pool.name} may hold a {instance_type} with {devices}: lower it to {devices} or give the pool "
                    "instance types with more GPUs",
                )
                break
        tenant = by_namespace.get(template.namespace)
        if tenant is None:
            continue  # config/platform.py names the missing tenant
        resource = device_class_resource(template.device_class)
        if not admitting_flavors(tenant, claim_charge(template)):
            problems.add(
                key,
                f"pods using it are charged {template.count} {resource}, and tenant {tenant.name} has no flavor with "
                "that much quota (nominal + borrowing), so Kueue never admits them: give the tenant quota on a "
                f"DRA flavor of class {template.device_class}",
            )
