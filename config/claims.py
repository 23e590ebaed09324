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
and gives DRA flavors quota in it (`FlavorPlan.resources_per_unit`). DRA pools are standing node groups
whose devices are published before any pod, so step 2 is decided here: a template's selectors are
evaluated over the devices each DRA pool publishes (config/dra_devices.py) and refused unless a pool's
devices match them. Step 4 does not read selectors: a tenant's quota in the class on a pool whose devices
do not match would admit a pod that never schedules, so that is refused too.
"""

from __future__ import annotations

from collections.abc import Sequence

from models.kueue.flavorassigner import fits_queue

from .capacity import GpuPoolPlan
from .dra_devices import describe, device_class_selectors, matching_per_node, matching_pools, pool_devices
from .errors import Problems, item_labels
from .fair_share import TenantPlan
from .keys import CONFIG_NAMESPACE
from .labels import device_class_resource
from .node_pools import ClaimTemplateConfig, DraConfig

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


def check_claim_templates(
    dra: DraConfig,
    tenants: Sequence[TenantPlan],
    pools: Sequence[GpuPoolPlan],
    problems: Problems,
) -> None:
    """Every claim template's selectors match devices a DRA pool publishes, and its pods can be admitted by
    Kueue and placed on one node of such a pool."""
    templates = dra.claim_templates
    classes = device_class_selectors(dra)
    by_namespace = {tenant.namespace: tenant for tenant in tenants}
    labels = item_labels(templates)
    for index, template in enumerate(templates):
        key = f"{ROOT}[{labels[index]}]"
        if template.device_class not in classes:
            problems.add(
                f"{key}.deviceClass",
                f"{template.device_class} is no DeviceClass of gpu.dra.deviceClasses "
                f"({', '.join(c.name for c in dra.device_classes) or 'none defined'}): define it or name one of those",
            )
            continue
        class_selectors = classes[template.device_class]
        admin = next((c for c in dra.device_classes if c.name == template.device_class), None)
        kind = (admin or template).driver_class
        pools_of_class = [pool for pool in pools if pool.dra_device_class == kind]
        if not pools_of_class:
            dra_pools = [pool for pool in pools if pool.dra_device_class is not None]
            if template.mig_profile is None and dra_pools:
                # (Claims without any DRA pool: config/platform.py says so.)
                problems.add(
                    key,
                    f"takes whole GPUs (class {template.device_class}), but every DRA pool "
                    f"({', '.join(p.name for p in dra_pools)}) is partitioned into MIG devices (class mig.nvidia.com): "
                    "add a DRA pool without MIG",
                )
            elif dra_pools:
                offered = "; ".join(f"{pool.name}: {describe(kind.device)}" for pool in dra_pools for kind in pool_devices(pool))
                problems.add(
                    f"{key}.migProfile",
                    f"{template.mig_profile} asks for a MIG device (class {template.device_class}), and no DRA pool "
                    f"publishes one, only whole GPUs ({offered}): drop migProfile to take a whole GPU",
                )
            continue
        matching = matching_pools(template, key, class_selectors, pools_of_class, problems, template.device_class)
        if not matching:
            continue
        expressions = [expression for _, expression in template.selector_expressions]
        for pool in matching:
            instance_type = min(pool.instance_types, key=lambda t: t.gpus)
            devices = matching_per_node(expressions, class_selectors, pool, instance_type.gpus)
            if template.count > devices:
                problems.add(
                    f"{key}.count",
                    f"{template.count} devices of class {template.device_class} in one claim, but the node group of "
                    f"pool {pool.name} may hold a {instance_type.name} with {devices}: lower it to {devices} or give the "
                    "pool instance types with more GPUs",
                )
                break
        tenant = by_namespace.get(template.namespace)
        if tenant is None:
            continue  # config/platform.py names the missing tenant
        _check_tenant_flavors(template, key, tenant, [pool.name for pool in matching], problems)


def _check_tenant_flavors(
    template: ClaimTemplateConfig, key: str, tenant: TenantPlan, matching: Sequence[str], problems: Problems
) -> None:
    """Kueue admits the pod on the first of the tenant's flavors with room for the class's devices; each such
    flavor must be on a pool whose devices match, or the pod is admitted where it can never be scheduled."""
    resource = device_class_resource(template.device_class)
    flavors = admitting_flavors(tenant, claim_charge(template))
    if not flavors:
        problems.add(
            key,
            f"pods using it are charged {template.count} {resource}, and tenant {tenant.name} has no flavor with "
            "that much quota (nominal + borrowing), so Kueue never admits them: give the tenant quota on a "
            f"DRA flavor of class {template.device_class}",
        )
        return
    pool_of = {quota.flavor.name: quota.flavor.pool.name for quota in tenant.quotas}
    wrong = [flavor for flavor in flavors if pool_of[flavor] not in matching]
    if wrong:
        problems.add(
            key,
            f"tenant {tenant.name} has quota in {resource} on flavor {wrong[0]} of pool {pool_of[wrong[0]]}, whose "
            f"devices do not match the template's selectors, and Kueue charges the class without reading them: a pod "
            f"admitted there never schedules; take that quota off the tenant, or keep it to pools {', '.join(matching)}",
        )
