"""What Kueue, the namespace's ResourceQuota and the node pools do with a tenant's workload, for
`check-manifest` (offline/check_manifest.py): the flavor Kueue gives each PodSet (within nominal quota, by
borrowing and from whom, or never, with the fix), a spot flavor taken without a choice, MIG devices where
whole GPUs were meant, the ResourceQuota after the LimitRange's defaults, and the instance types that hold
each pod. Kueue's rules are models.kueue's; this module only asks them and words the answers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from config.dra_devices import describe, device_class_selectors, matching_per_node, pool_devices
from config.errors import did_you_mean
from config.fair_share import CPU_FLAVOR, FlavorPlan
from config.labels import CAPACITY_TYPE_LABEL, LOCAL_QUEUE, POOL_LABEL, device_class_resource
from config.system_capacity import VM_MEMORY_OVERHEAD
from models import kubelet
from models.karpenter.disruption import SPOT_NOTICE_SECONDS
from models.karpenter.provisioning import SPOT, capacity_type
from models.kubernetes.limitranger import with_container_defaults
from models.kubernetes.quantity import parse_quantity
from models.kueue.cohort import Snapshot
from models.kueue.constants import PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL
from models.kueue.flavorassigner import best_case_admission, flavor_matches
from models.kueue.integrations import is_queued
from models.kueue.resources import resource_value
from models.kueue.workload import Inadmissible, PodSet, Tenancy, pod_set_of, pod_sets, workload_priority
from models.nvidia.labels import GPU_RESOURCE

from .manifest_cluster import Cluster, Finding, pod_templates


def kueue_quota_capacity(cluster: Cluster, tenancy: Tenancy, where: str, obj: Mapping[str, Any]) -> list[Finding]:
    frameworks = tenancy.kueue_config["integrations"]["frameworks"]
    if not is_queued(obj["apiVersion"], obj["kind"], frameworks):
        return [Finding(where, "kueue", f"{obj['kind']} is not a kind Kueue queues here", True)]

    def never(reason: str, fix: str) -> Finding:
        return Finding(where, "kueue", f"never admitted: {reason}; {fix}", True)

    queue = (obj["metadata"].get("labels") or {}).get(QUEUE_NAME_LABEL)
    found: list[Finding] = []
    if queue is None:
        found.append(Finding(where, "kueue", f"no {QUEUE_NAME_LABEL} label: Kueue gives it the namespace's LocalQueue "
                             f"`{LOCAL_QUEUE}` (manageJobsWithoutQueueName and the default LocalQueue)"))
    elif queue != LOCAL_QUEUE:
        reason = f"LocalQueue {queue} does not exist in {cluster.namespace}, so its Workload waits for it forever"
        return [*found, never(reason, f"set {QUEUE_NAME_LABEL}: {LOCAL_QUEUE} or drop the label")]
    missing = _missing_reference(obj, tenancy) or _missing_tier(cluster, obj)
    if missing is not None:
        return [*found, never(*missing)]
    try:
        sets = _pod_sets(obj, tenancy)
    except Inadmissible as err:
        return [*found, never(str(err), _fix_for(str(err), cluster))]
    except (ValueError, KeyError) as err:
        reason = f"{err.args[0]} is missing" if isinstance(err, KeyError) else str(err)
        return [*found, Finding(where, "kueue", f"not judged: {reason}", True)]
    whole_queue, node_labels = _queue_and_labels(cluster)
    try:
        admission = best_case_admission(sets, whole_queue, node_labels)
    except Inadmissible as err:
        reason = str(err)
        if not reason.startswith("no flavor"):
            return [*found, never(reason, _fix_for(reason, cluster))]
        # Kueue assigns each PodSet a flavor in turn; the first one no flavor can hold is the one to fix.
        failing = next(i for i in range(len(sets)) if not _admissible(sets[: i + 1], whole_queue, node_labels))
        pod_set, allowed = sets[failing], _allowed(whole_queue, node_labels, sets[failing])
        whose = "its node selector allows" if len(sets) == 1 else f"the node selector of PodSet {pod_set.name} allows"
        reason = (f"no flavor of ClusterQueue {cluster.tenant.name} that {whose} ({', '.join(allowed) or 'none'}) "
                  f"can ever hold its {pod_set.count} pod(s): {_amounts(_totals([pod_set]))}")
        if failing and _admissible([pod_set], whole_queue, node_labels):
            earlier = [s.name for s in sets[:failing]]
            many = len(earlier) > 1
            reason += f" (after PodSet{'s' if many else ''} {', '.join(earlier)} take{'' if many else 's'} a share)"
        fix = _unknown_pool(cluster, pod_set) or _fix_for(reason, cluster, [pod_set], whole_queue, allowed)
        return [*found, never(reason, fix)]
    found += _admitted(cluster, where, sets, admission.flavors, admission.borrowing, obj)
    found += _mig_single_slices(cluster, where, sets, admission.flavors)
    found += _spot_warnings(cluster, where, sets, admission.flavors, whole_queue, node_labels)
    found += _quota(cluster, where, obj, sets)
    found += _capacity(cluster, where, sets, admission.flavors)
    return found


def _missing_reference(obj: Mapping[str, Any], tenancy: Tenancy) -> tuple[str, str] | None:
    """(reason, fix) when the workload names a training runtime or a claim template that does not exist: Kueue
    cannot count its PodSets, so its Workload stays pending."""
    if obj["kind"] == "TrainJob":
        name = ((obj.get("spec") or {}).get("runtimeRef") or {}).get("name", "")
        if name not in tenancy.runtimes:
            runtimes = ", ".join(sorted(tenancy.runtimes)) or "none"
            return (f"ClusterTrainingRuntime {name} does not exist",
                    f"fix: set spec.runtimeRef.name to one the platform declares ({runtimes})"
                    f"{did_you_mean(name, tenancy.runtimes)}")
    for pod in pod_templates(obj, tenancy):
        for claim in pod.get("resourceClaims") or ():
            template = claim.get("resourceClaimTemplateName")
            if template is None:
                return (f"claim {claim.get('name')} names no resourceClaimTemplateName, and the check reads claims "
                        "only through templates", "fix: claim devices through a ResourceClaimTemplate")
            if template not in tenancy.claim_templates:
                templates = ", ".join(sorted(tenancy.claim_templates)) or "none"
                namespace = obj["metadata"].get("namespace") or "the namespace"
                return (f"ResourceClaimTemplate {template} does not exist in {namespace}",
                        f"fix: use one the platform declares or include yours in the files checked (declared: {templates})"
                        f"{did_you_mean(template, tenancy.claim_templates)}")
    return None


def _missing_tier(cluster: Cluster, obj: Mapping[str, Any]) -> tuple[str, str] | None:
    """(reason, fix) when the workload's priority-class label names no WorkloadPriorityClass of the render:
    Kueue then creates no Workload for it (models.kueue.workload.workload_priority)."""
    tiers = {o["metadata"]["name"]: o.get("value", 0) for o in cluster.objects if o["kind"] == "WorkloadPriorityClass"}
    try:
        workload_priority(obj["metadata"].get("labels") or {}, [], tiers, {})
    except Inadmissible as err:
        named = (obj["metadata"].get("labels") or {})[PRIORITY_CLASS_LABEL]
        return (str(err), f"fix: set {PRIORITY_CLASS_LABEL} to one of the tiers ({', '.join(sorted(tiers))})"
                          f"{did_you_mean(named, tiers)}")
    return None


def _pod_sets(obj: Mapping[str, Any], tenancy: Tenancy) -> list[PodSet]:
    """Kueue's PodSets of the workload, each with the node selector and required affinity of its pods."""
    kind, spec = obj["kind"], obj.get("spec") or {}
    if kind in ("Job", "TrainJob"):
        return pod_sets(obj, tenancy)
    if kind == "JobSet":
        return [
            pod_set_of(r["name"], r.get("replicas", 1) * r["template"]["spec"].get("parallelism", 1),
                    r["template"]["spec"]["template"]["spec"], tenancy)
            for r in spec["replicatedJobs"]
        ]
    if kind == "Deployment":
        # The pod integration: each replica is a Workload of its own, admitted one at a time.
        return [pod_set_of("main", 1, spec["template"]["spec"], tenancy)]
    return [pod_set_of("main", 1, spec, tenancy)]


def _unknown_pool(cluster: Cluster, pod_set: PodSet) -> str | None:
    """The fix when the PodSet's node selector names a pool the stack does not have: every flavor sets the
    pool label, so none is left to it."""
    named = pod_set.node_selector.get(POOL_LABEL)
    pools = list(dict.fromkeys(f.pool.name for f in cluster.config.flavors))
    if named is None or named in pools:
        return None
    return f"fix: nodeSelector {POOL_LABEL}: {named} names no pool{did_you_mean(named, pools)} (pools: {', '.join(pools)})"


def _queue_and_labels(cluster: Cluster) -> tuple[Mapping[str, Any], dict[str, dict[str, str]]]:
    """The tenant's ClusterQueue and each of its flavors' node labels (the ResourceFlavor's spec.nodeLabels)."""
    cluster_queue = cluster.one("ClusterQueue", cluster.tenant.name)
    if cluster_queue is None:
        raise Inadmissible(f"tenant {cluster.tenant.name} has no ClusterQueue")
    [group] = cluster_queue["spec"]["resourceGroups"]
    labels = {
        f["name"]: dict(((cluster.one("ResourceFlavor", f["name"]) or {}).get("spec") or {}).get("nodeLabels") or {})
        for f in group["flavors"]
    }
    return cluster_queue, labels


def _allowed(cluster_queue: Mapping[str, Any], labels: Mapping[str, Mapping[str, str]], pod_set: PodSet) -> list[str]:
    """The queue's flavors, in order, whose node labels the PodSet's selector and affinity allow
    (models.kueue.flavorassigner.flavor_matches)."""
    flavors = cluster_queue["spec"]["resourceGroups"][0]["flavors"]
    return [f["name"] for f in flavors if flavor_matches(pod_set, labels[f["name"]])]


def _admissible(sets: Sequence[PodSet], cluster_queue: Mapping[str, Any], labels: Mapping[str, Mapping[str, str]]) -> bool:
    try:
        best_case_admission(sets, cluster_queue, labels)
    except Inadmissible:
        return False
    return True


def _admitted(
    cluster: Cluster, where: str, sets: Sequence[PodSet], flavors: Sequence[str], borrowing: bool, obj: Mapping[str, Any]
) -> list[Finding]:
    pods = sum(s.count for s in sets)
    each = " (each replica a Workload of its own)" if obj["kind"] == "Deployment" else ""
    names = ", ".join(dict.fromkeys(flavors))
    if not borrowing:
        return [Finding(where, "kueue", f"admitted on {names} within {cluster.tenant.name}'s nominal quota: {pods} pod(s)"
                        f"{each}, {_amounts(_totals(sets))}")]
    above, lenders = _borrowed(cluster, sets, flavors)
    return [Finding(where, "kueue", f"admitted on {names} only by borrowing ({pods} pod(s), {_amounts(_totals(sets))}; "
                    f"above the nominal quota: {above}): it waits until the cohort has that much idle; lenders: {lenders}")]


def _mig_single(flavor: FlavorPlan) -> bool:
    sharing = flavor.pool.sharing
    return sharing.mode == "mig" and sharing.mig_strategy == "single"


def _mig_single_slices(cluster: Cluster, where: str, sets: Sequence[PodSet], flavors: Sequence[str]) -> list[Finding]:
    """A PodSet asking nvidia.com/gpu admitted on a flavor whose pool runs MIG with the single strategy gets MIG
    devices: the device plugin advertises each as nvidia.com/gpu (models.nvidia.device_plugin), the name whole
    GPUs have on the tenant's other pools, and Kueue takes the first flavor in queue order that holds it."""
    plans = {f.name: f for f in cluster.config.flavors}
    whole = sorted({
        q.flavor.pool.name for q in cluster.tenant.quotas
        if GPU_RESOURCE in q.flavor.resources_per_unit and q.flavor.pool.sharing.mode == "none"
    })
    found = []
    for pod_set, name in zip(sets, flavors, strict=True):
        plan = plans.get(name)
        if plan is None or not _mig_single(plan) or GPU_RESOURCE not in pod_set.requests:
            continue
        profiles = ", ".join(sorted(plan.pool.sharing.mig_layout))
        fix = (f"if you meant whole GPUs, add nodeSelector {POOL_LABEL}: {' or '.join(whole)}" if whole
               else f"{cluster.tenant.name} has no quota on whole GPUs")
        found.append(Finding(where, "kueue", f"on {name} each {GPU_RESOURCE} of PodSet {pod_set.name} is a MIG device "
                             f"({profiles}; migStrategy single), not a whole GPU; {fix}"))
    return found


def _spot_warnings(
    cluster: Cluster, where: str, sets: Sequence[PodSet], flavors: Sequence[str],
    cluster_queue: Mapping[str, Any], labels: Mapping[str, Mapping[str, str]],
) -> list[Finding]:
    """A PodSet that says nothing of capacity type, admitted on a GPU flavor whose nodes Karpenter launches as
    spot (models.karpenter.provisioning.capacity_type: spot whenever the NodePool allows it), may be stopped
    with two minutes' notice. The warning names the flavor and the node selector that gets an on-demand
    flavor instead, checked by admitting the workload with it (a selector on capacity type alone does not
    rule out a flavor whose node labels do not set it, such as a spot-only pool's)."""
    plans = {f.name: f for f in cluster.config.flavors}
    found = []
    for index, (pod_set, name) in enumerate(zip(sets, flavors, strict=True)):
        plan = plans.get(name)
        if plan is None or _constrains_capacity_type(pod_set):
            continue
        if capacity_type(_capacity_types(plan), reservation_has_room=False) != SPOT:
            continue
        fix = f"{cluster.tenant.name} has no on-demand flavor that can hold it"
        for other in cluster.config.flavors:
            if other.name not in labels or SPOT in _capacity_types(other):
                continue
            chosen = replace(pod_set, node_selector={**pod_set.node_selector, **other.node_labels})
            trial = [*sets[:index], chosen, *sets[index + 1:]]
            try:
                if best_case_admission(trial, cluster_queue, labels).flavors[index] != other.name:
                    continue
            except Inadmissible:
                continue
            selector = ", ".join(f"{key}: {value}" for key, value in sorted(other.node_labels.items()))
            fix = f"for on-demand nodes add nodeSelector {selector} (flavor {other.name})"
            break
        found.append(Finding(where, "kueue", f"PodSet {pod_set.name} lands on spot capacity (flavor {name}): its pods "
                             f"can be stopped with {SPOT_NOTICE_SECONDS // 60} minutes' notice; {fix}"))
    return found


def _capacity_types(flavor: FlavorPlan) -> list[str]:
    return [flavor.capacity_type] if flavor.capacity_type else list(flavor.pool.config.capacity_types)


def _constrains_capacity_type(pod_set: PodSet) -> bool:
    """The PodSet's node selector or required node affinity names the capacity type: a choice made."""
    if CAPACITY_TYPE_LABEL in pod_set.node_selector:
        return True
    return any(
        expression.get("key") == CAPACITY_TYPE_LABEL
        for term in pod_set.node_affinity for expression in (term.get("matchExpressions") or ())
    )


def _borrowed(cluster: Cluster, sets: Sequence[PodSet], flavors: Sequence[str]) -> tuple[str, str]:
    """What the workload takes above its nominal quota on each flavor, and who lends it and how much each
    has to lend with nothing running (models.kueue.cohort.Snapshot.lenders over the rendered ClusterQueues,
    Cohorts and ResourceFlavors). A resource at its nominal exactly is not borrowed (Kueue borrows what
    exceeds nominalQuota, pkg/cache/scheduler/clusterqueue_snapshot.go Borrowing)."""
    of_kind = {kind: [o for o in cluster.objects if o["kind"] == kind] for kind in ("ClusterQueue", "Cohort", "ResourceFlavor")}
    snapshot = Snapshot.from_manifests(of_kind["ClusterQueue"], of_kind["Cohort"], flavors=of_kind["ResourceFlavor"])
    queue = snapshot.cluster_queues[cluster.tenant.name]
    wanted: dict[tuple[str, str], int] = {}
    for pod_set, flavor in zip(sets, flavors, strict=True):
        for resource, amount in pod_set.total().items():
            wanted[(flavor, resource)] = wanted.get((flavor, resource), 0) + amount
    above, parts = [], []
    for (flavor, resource), amount in sorted(wanted.items()):
        quota = queue.quotas.get((flavor, resource))
        if quota is None or amount <= quota.nominal:
            continue
        above.append(f"{resource} {_show_amount(resource, amount)} of {_show_amount(resource, quota.nominal)} on {flavor}")
        lenders = snapshot.lenders(cluster.tenant.name, (flavor, resource))
        who = ", ".join(f"{name} {_show_amount(resource, idle)}" for name, idle in sorted(lenders.items()))
        parts.append(f"{resource} on {flavor} from {who or 'nobody: no other queue lends it, so it never runs'}")
    return ", ".join(above), "; ".join(parts)


def _totals(sets: Sequence[PodSet]) -> dict[str, int]:
    totals: dict[str, int] = {}
    for pod_set in sets:
        for resource, amount in pod_set.total().items():
            totals[resource] = totals.get(resource, 0) + amount
    return totals


def _show_amount(resource: str, amount: int) -> str:
    """An amount in Kueue's units as a tenant writes it: cpu in cores, memory and storage in Gi."""
    if resource == "cpu":
        return f"{amount / 1000:g}"
    if resource in ("memory", "ephemeral-storage"):
        return f"{amount / 2**30:g}Gi"
    return f"{amount}"


def _amounts(amounts: Mapping[str, int], zeros: bool = False) -> str:
    return ", ".join(f"{r} {_show_amount(r, a)}" for r, a in sorted(amounts.items()) if a or zeros)


def _fix_for(
    reason: str, cluster: Cluster, sets: Sequence[PodSet] = (), cluster_queue: Mapping[str, Any] | None = None,
    allowed: Sequence[str] = (),
) -> str:
    if "not covered" in reason or "unavailable" in reason:
        offered = sorted({r for q in cluster.tenant.quotas for r in q.devices_per_unit})
        return f"fix: request what {cluster.tenant.name}'s flavors hand out ({', '.join(offered) or 'cpu and memory only'})"
    if "matching devices" in reason or "CEL evaluation failed" in reason:
        published = "; ".join(
            f"{pool.name}: {describe(kind.device)}" for pool in cluster.config.gpu_pools for kind in pool_devices(pool)
        )
        return f"fix: select only what the DRA pools publish ({published or 'no DRA pool'})"
    if "DeviceClass" in reason:
        return "fix: use a claim template the platform declares in the namespace (gpu.dra.claimTemplates)"
    if cluster_queue is None:
        return "fix: ask the platform team"
    wanted = set(_totals(sets))
    ceilings = []
    for flavor in cluster_queue["spec"]["resourceGroups"][0]["flavors"]:
        if flavor["name"] not in allowed:
            continue
        quotas = {r["name"]: r for r in flavor["resources"]}
        most = {
            name: resource_value(name, quotas[name]["nominalQuota"]) + resource_value(name, quotas[name].get("borrowingLimit", 0))
            if name in quotas else 0
            for name in wanted
        }
        ceilings.append(f"{flavor['name']}: {_amounts(most, zeros=True)}")
    if not ceilings:
        return "fix: change the node selector: it allows none of the flavors"
    return f"fix: fit what one flavor can ever hold for {cluster.tenant.name}, nominal + borrowingLimit ({'; '.join(ceilings)})"


def _quota(cluster: Cluster, where: str, obj: Mapping[str, Any], sets: Sequence[PodSet]) -> list[Finding]:
    quota = cluster.one("ResourceQuota", namespace=cluster.namespace)
    if quota is None:
        return []
    hard = quota["spec"]["hard"]
    # A Deployment's replicas are Workloads of one pod each to Kueue, but all of them count against the quota.
    replicas = (obj.get("spec") or {}).get("replicas", 1) if obj["kind"] == "Deployment" else 1
    counts = [s.count * replicas for s in sets]
    needed: dict[str, Any] = {"pods": sum(counts)}
    for count, template in zip(counts, pod_templates(obj, cluster.tenancy(())), strict=False):
        pod = with_container_defaults(cluster.objects, {"spec": template}, cluster.namespace)["spec"]
        for container in pod["containers"]:
            resources = container.get("resources") or {}
            for kind in ("requests", "limits"):
                for resource, value in (resources.get(kind) or {}).items():
                    key = f"{kind}.{resource}" if f"{kind}.{resource}" in hard else resource if resource in hard else None
                    if key is not None and value is not None:  # null: unset, to the API server's decoder
                        needed[key] = needed.get(key, 0) + parse_quantity(value) * count
    over = [
        f"{key} {_show(needed[key])} > {hard[key]}"
        for key in sorted(needed) if key in hard and needed[key] > parse_quantity(hard[key])
    ]
    if over:
        return [Finding(where, "quota", f"exceeds ResourceQuota {quota['metadata']['name']}: {', '.join(over)}; "
                        "with the LimitRange's defaults for containers that set none", True)]
    return [Finding(where, "quota", f"fits ResourceQuota {quota['metadata']['name']} with the LimitRange's defaults "
                    f"({', '.join(f'{k} {_show(v)} of {hard[k]}' for k, v in sorted(needed.items()) if k in hard)})")]


def _show(value: Any) -> str:
    number = float(value)
    if number >= 2**30 and number % 2**20 == 0:
        return f"{number / 2**30:g}Gi"
    return f"{number:g}"


def _capacity(cluster: Cluster, where: str, sets: Sequence[PodSet], flavors: Sequence[str]) -> list[Finding]:
    found = []
    plans = {f.name: f for f in cluster.config.flavors}
    for pod_set, flavor_name in zip(sets, flavors, strict=True):
        flavor = plans.get(flavor_name)
        if flavor is None:
            families = ", ".join(cluster.config.cpu_pool.instance_families)
            found.append(Finding(where, "capacity", f"{pod_set.name}: the CPU pool ({CPU_FLAVOR} flavor; families {families})"))
            continue
        fitting = [t.name for t in flavor.pool.instance_types if _fits(pod_set, flavor, t, _class_devices(cluster, flavor, t))]
        if fitting:
            types = ", ".join(fitting)
            found.append(Finding(where, "capacity", f"{pod_set.name}: pool {flavor.pool.name}, instance types {types}"))
        else:
            found.append(Finding(where, "capacity", f"{pod_set.name}: no instance type of pool {flavor.pool.name} holds one "
                                 f"of its pods ({_amounts(pod_set.requests)}); ask for less per pod", True))
    return found


# For a GPU node's allocatable memory: nodeadm's kube-reserved at the most pods it allows a node (250, its cap
# for large instances), taking the most that can be reserved; DaemonSets' requests are not counted.
GPU_NODE_MAX_PODS = 250


def _class_devices(cluster: Cluster, flavor: FlavorPlan, instance: Any) -> dict[str, int]:
    """On a DRA pool: the devices of each administrator's DeviceClass a node of the type publishes."""
    if not flavor.pool.is_dra:
        return {}
    selectors = device_class_selectors(cluster.config.gpu.dra)
    return {
        device_class_resource(c.name): matching_per_node((), selectors[c.name], flavor.pool, instance.gpus)
        for c in cluster.config.gpu.dra.device_classes
    }


def _fits(pod_set: PodSet, flavor: FlavorPlan, instance: Any, class_devices: Mapping[str, int]) -> bool:
    """One pod of the set fits an empty node of the type: its devices (on a DRA pool, `class_devices`: those of
    each administrator's DeviceClass a node of the type publishes), and the kubelet's allocatable CPU and memory
    (models/kubelet.py; memory capacity estimated as Karpenter does, config/system_capacity.py)."""
    units = instance.gpus * flavor.slices_per_gpu
    offered = {resource: units * per for resource, per in flavor.resources_per_unit.items()}
    offered.update(class_devices)
    capacity_mib = instance.memory_gib * 1024 - math.ceil(instance.memory_gib * 1024 * VM_MEMORY_OVERHEAD)
    cpu_m, memory_mib = kubelet.allocatable(instance.vcpu, capacity_mib, GPU_NODE_MAX_PODS)
    offered["cpu"] = cpu_m
    offered["memory"] = memory_mib * 2**20
    return all(amount <= offered.get(resource, math.inf) for resource, amount in pod_set.requests.items())

