"""`python -m offline check-manifest --stack S --tenant T FILE...`: a tenant's pre-flight check.

For each workload in the files (Jobs, TrainJobs, JobSets, Deployments, Pods; the ResourceClaimTemplates
among them are read as the tenant's own), it says what the cluster the stack declares will do with it:

- schema: valid against the cluster's Kubernetes version and the pinned charts' CRDs (offline/validate.py);
- policies: refused or not by the namespace's Pod Security level (models.kubernetes.podsecurity) and the
  admission guards (models.kubernetes.admission, over the render's ValidatingAdmissionPolicies), for the
  object as the tenant creates it and for each pod its controllers create, each as Kueue's mutating
  webhooks leave it (models.kueue.webhooks);
- kueue: the flavor it takes, within the tenant's nominal quota or only by borrowing (and from whom), or
  never, with the reason and the fix (models.kueue: PodSets, charged resources, best-case flavor assignment);
- quota: its pods, after the LimitRange's defaults (models.kubernetes.limitranger), against the ResourceQuota;
- capacity: the pool and instance types that can run each of its pods.

One line per finding, then a count; exit 0 when nothing would refuse or strand it, 1 when something
would, 2 when the stack, the tenant or a file cannot be read (as `validate`).
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from components.queueing import manager_config
from config import ConfigError, PlatformConfig
from config.dra_devices import describe, device_class_selectors, matching_per_node, pool_devices, published_devices
from config.fair_share import CPU_FLAVOR, FlavorPlan, TenantPlan
from config.labels import LOCAL_QUEUE, POOL_LABEL, TENANT_GROUP_PREFIX, device_class_resource
from config.system_capacity import VM_MEMORY_OVERHEAD
from models import kubeflow_trainer, kubelet
from models.kubernetes.admission import Request, admission_denials
from models.kubernetes.limitranger import with_container_defaults
from models.kubernetes.podsecurity import ENFORCE_LABEL, ENFORCE_VERSION_LABEL, LATEST, violations
from models.kubernetes.quantity import parse_quantity
from models.kubernetes.user import User, service_account
from models.kueue.cohort import Snapshot
from models.kueue.constants import QUEUE_NAME_LABEL
from models.kueue.flavorassigner import best_case_admission, flavor_matches
from models.kueue.integrations import is_queued
from models.kueue.resources import resource_value
from models.kueue.webhooks import default_job, default_pod, default_pod_template_owner
from models.kueue.workload import Inadmissible, PodSet, Tenancy, pod_set_of, pod_sets
from models.nvidia.labels import GPU_RESOURCE

from .validate import CustomResourceDefinitions, object_findings

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2
# kind -> (API group, plural) of the workloads the check reads.
WORKLOADS: dict[str, tuple[str, str]] = {
    "Job": ("batch", "jobs"),
    "TrainJob": ("trainer.kubeflow.org", "trainjobs"),
    "JobSet": ("jobset.x-k8s.io", "jobsets"),
    "Deployment": ("apps", "deployments"),
    "Pod": ("", "pods"),
}
# Who creates each workload's pods (kube-controller-manager's per-controller service accounts; the JobSet
# and trainer controllers create Jobs, whose pods the Job controller creates).
POD_CREATOR: dict[str, User] = {
    "Job": service_account("kube-system", "job-controller"),
    "TrainJob": service_account("kube-system", "job-controller"),
    "JobSet": service_account("kube-system", "job-controller"),
    "Deployment": service_account("kube-system", "replicaset-controller"),
}
# The owners between each workload and its pods, outermost first: the trainer makes a JobSet, JobSet its
# Jobs, the Job controller the pods; a Deployment's pods come through a ReplicaSet.
POD_OWNER_CHAIN: dict[str, tuple[tuple[str, str], ...]] = {
    "Job": (),
    "JobSet": (("batch/v1", "Job"),),
    "TrainJob": (("jobset.x-k8s.io/v1alpha2", "JobSet"), ("batch/v1", "Job")),
    "Deployment": (("apps/v1", "ReplicaSet"),),
}
RELEASE = "kubernetes:helm.sh/v3:Release"


@dataclass(frozen=True)
class Finding:
    workload: str  # `FILE: Kind/name`
    aspect: str  # schema, namespace, policies, kueue, quota, capacity
    text: str
    problem: bool = False

    def __str__(self) -> str:
        return f"{self.workload}: {self.aspect}: {self.text}"


@dataclass(frozen=True)
class Cluster:
    """What the stack declares that a tenant's workload meets: the render's objects and the config they come from."""

    config: PlatformConfig
    tenant: TenantPlan
    objects: tuple[Mapping[str, Any], ...]
    crds: CustomResourceDefinitions

    @classmethod
    def of(
        cls, config: PlatformConfig, tenant: str, objects: Iterable[Mapping[str, Any]],
        crds: CustomResourceDefinitions | None = None,
    ) -> Cluster:
        """The cluster a tenant's workloads meet; `crds`: the stack's charts' CRDs, when already read."""
        [plan] = [t for t in config.tenants if t.name == tenant]
        if crds is None:
            charts = ({"chart": pin.chart, "version": pin.version} for pin in config.charts.values())
            crds = CustomResourceDefinitions.installed_by(charts)
        return cls(config, plan, tuple(objects), crds)

    @property
    def namespace(self) -> str:
        return self.tenant.namespace

    def one(self, kind: str, name: str | None = None, namespace: str | None = None) -> Mapping[str, Any] | None:
        found = [
            o for o in self.objects
            if o["kind"] == kind
            and (name is None or o["metadata"]["name"] == name)
            and (namespace is None or o["metadata"].get("namespace") == namespace)
        ]
        return found[0] if found else None

    def namespace_labels(self) -> dict[str, str]:
        namespace = self.one("Namespace", self.namespace)
        return dict((namespace or {}).get("metadata", {}).get("labels") or {})

    def tenant_admin(self) -> User:
        return User(f"{self.tenant.name}-admin", (f"{TENANT_GROUP_PREFIX}{self.tenant.name}:admins",))

    def tenancy(self, own_templates: Sequence[Mapping[str, Any]]) -> Tenancy:
        limit_range = self.one("LimitRange", namespace=self.namespace)
        defaults = {}
        for item in (limit_range or {}).get("spec", {}).get("limits", []):
            if item["type"] == "Container":
                defaults = dict(item.get("defaultRequest") or {})
        templates = {
            o["metadata"]["name"]: o
            for o in (*self.objects, *own_templates)
            if o["kind"] == "ResourceClaimTemplate" and o["metadata"].get("namespace", self.namespace) == self.namespace
        }
        runtimes = {o["metadata"]["name"]: o for o in self.objects if o["kind"] == "ClusterTrainingRuntime"}
        return Tenancy(
            defaults,
            templates,
            manager_config(self.config.flavors, [c.name for c in self.config.gpu.dra.device_classes]),
            runtimes,
            published_devices(self.config.gpu_pools),
            device_class_selectors(self.config.gpu.dra),
        )


def rendered_objects(recording: Any) -> list[dict[str, Any]]:
    """The Kubernetes objects a recording declares (Helm releases aside), as plain dicts."""
    return [
        json.loads(json.dumps(r.inputs)) for r in recording.resources
        if r.custom and r.type.startswith("kubernetes:") and r.type != RELEASE
    ]


def check(cluster: Cluster, documents: Sequence[tuple[str, Mapping[str, Any]]]) -> list[Finding]:
    """Findings for every workload among `documents` ((file, object) pairs); the templates among them are the tenant's."""
    own = [obj for _, obj in documents if obj.get("kind") == "ResourceClaimTemplate"]
    tenancy = cluster.tenancy(own)
    findings: list[Finding] = []
    for file, obj in documents:
        name = (obj.get("metadata") or {}).get("name", "?")
        where = f"{file}: {obj.get('kind', '?')}/{name}"
        findings += _schema(cluster, where, obj)
        if obj.get("kind") not in WORKLOADS:
            continue
        findings += _namespace(cluster, where, obj)
        pods = _pod_templates(obj, tenancy)
        findings += _policies(cluster, tenancy, where, obj, pods)
        findings += _kueue_quota_capacity(cluster, tenancy, where, obj)
    return findings


def _schema(cluster: Cluster, where: str, obj: Mapping[str, Any]) -> list[Finding]:
    version = cluster.config.cluster.kubernetes_version
    found = object_findings(obj, cluster.crds, version).findings
    if found:
        return [Finding(where, "schema", f"{'.'.join(map(str, f.path)) or '(object)'}: {f.reason}", True) for f in found]
    return [Finding(where, "schema", f"valid for Kubernetes {version} and the pinned CRDs")]


def _namespace(cluster: Cluster, where: str, obj: Mapping[str, Any]) -> list[Finding]:
    namespace = obj["metadata"].get("namespace")
    if namespace is None:
        return [Finding(where, "namespace", f"none set: apply it with `kubectl -n {cluster.namespace}`")]
    if namespace != cluster.namespace:
        return [Finding(where, "namespace", f"{namespace} is not tenant {cluster.tenant.name}'s namespace "
                        f"({cluster.namespace}): set metadata.namespace to {cluster.namespace}", True)]
    return []


def _pod_templates(obj: Mapping[str, Any], tenancy: Tenancy) -> list[Mapping[str, Any]]:
    """The pod specs the workload's pods are made from (a TrainJob's through its runtime)."""
    spec = obj.get("spec") or {}
    kind = obj["kind"]
    if kind == "Pod":
        return [spec]
    if kind in ("Job", "Deployment"):
        return [spec["template"]["spec"]]
    if kind == "JobSet":
        return [r["template"]["spec"]["template"]["spec"] for r in spec.get("replicatedJobs", [])]
    runtime = tenancy.runtimes.get((spec.get("runtimeRef") or {}).get("name", ""))
    if runtime is None:
        return []
    pods = []
    for replicated in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        pod = replicated["template"]["spec"]["template"]["spec"]
        pods.append(kubeflow_trainer.trainer_pod(pod, obj) if kubeflow_trainer.is_trainer_step(replicated) else pod)
    return pods


def _policies(
    cluster: Cluster, tenancy: Tenancy, where: str, obj: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]
) -> list[Finding]:
    labels = cluster.namespace_labels()
    level = labels.get(ENFORCE_LABEL, "privileged")
    version = labels.get(ENFORCE_VERSION_LABEL, LATEST)
    group, plural = WORKLOADS[obj["kind"]]
    creator = POD_CREATOR.get(obj["kind"], cluster.tenant_admin())
    found: list[Finding] = []
    workload, chain = _as_kueue_defaults(tenancy, obj)
    denials = admission_denials(
        cluster.objects, Request("CREATE", group, plural, cluster.namespace, cluster.tenant_admin(), workload, None, labels)
    )
    for pod in pods:
        reasons = violations(pod, level, version)
        if reasons:
            who = "it" if obj["kind"] == "Pod" else "each of its pods"
            found.append(Finding(where, "policies", f"Pod Security {level} refuses {who}: {'; '.join(reasons)}", True))
        if obj["kind"] != "Pod":
            as_pod = _created_pod(tenancy, cluster.namespace, workload, chain, pod)
            denials += admission_denials(
                cluster.objects, Request("CREATE", "", "pods", cluster.namespace, creator, as_pod, None, labels)
            )
    for denial in dict.fromkeys(denials):
        found.append(Finding(where, "policies", f"an admission guard refuses it: {denial}", True))
    if not found:
        found.append(Finding(where, "policies", f"admitted by Pod Security {level} and the admission guards"))
    return found


def _kueue_settings(tenancy: Tenancy) -> tuple[list[str], bool]:
    config = tenancy.kueue_config
    return config["integrations"]["frameworks"], bool(config.get("manageJobsWithoutQueueName"))


def _as_kueue_defaults(tenancy: Tenancy, obj: Mapping[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The workload as validating admission sees it, after Kueue's mutating webhooks (models/kueue/webhooks.py),
    and the objects its controllers create between it and its pods, each owned by the one before."""
    frameworks, without_queue_name = _kueue_settings(tenancy)
    workload = {**obj, "metadata": {**(obj.get("metadata") or {}), "uid": "workload"}}
    if obj["kind"] == "Pod":
        return default_pod(workload, {}, frameworks, without_queue_name), []
    workload = default_pod_template_owner(default_job(workload, {}, frameworks, without_queue_name), frameworks)
    chain, owner = [], workload
    for position, (api_version, kind) in enumerate(POD_OWNER_CHAIN[obj["kind"]]):
        child = {"apiVersion": api_version, "kind": kind, "metadata": _owned_by(owner, f"owned-{position}")}
        chain.append(child)
        owner = child
    return workload, chain


def _owned_by(owner: Mapping[str, Any], uid: str) -> dict[str, Any]:
    reference = {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"].get("name", "?"),
                 "uid": owner["metadata"]["uid"], "controller": True}
    return {"name": uid, "uid": uid, "ownerReferences": [reference]}


def _created_pod(
    tenancy: Tenancy, namespace: str, workload: Mapping[str, Any], chain: Sequence[Mapping[str, Any]], spec: Mapping[str, Any]
) -> dict[str, Any]:
    """A pod the workload's controllers create, after Kueue's pod webhook: a Deployment's pods carry their
    template's metadata (the suspending-parent annotation), every other pod only its owner."""
    frameworks, without_queue_name = _kueue_settings(tenancy)
    owner = chain[-1] if chain else workload
    template = (workload.get("spec") or {}).get("template") if workload["kind"] == "Deployment" else None
    metadata = {**((template or {}).get("metadata") or {}), **_owned_by(owner, "pod"), "namespace": namespace}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
    by_uid = {o["metadata"]["uid"]: o for o in (workload, *chain)}
    return default_pod(pod, by_uid, frameworks, without_queue_name)


def _kueue_quota_capacity(cluster: Cluster, tenancy: Tenancy, where: str, obj: Mapping[str, Any]) -> list[Finding]:
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
    try:
        sets = _pod_sets(obj, tenancy)
    except Inadmissible as err:
        return [*found, never(str(err), _fix_for(str(err), cluster))]
    except (ValueError, KeyError) as err:
        return [*found, Finding(where, "kueue", f"not judged: {err}", True)]
    whole_queue, cluster_queue, node_labels = _eligible_flavors(cluster, sets)
    try:
        admission = best_case_admission(sets, whole_queue, node_labels)
    except Inadmissible as err:
        reason = str(err)
        if reason.startswith("no flavor"):
            names = ", ".join(f["name"] for f in cluster_queue["spec"]["resourceGroups"][0]["flavors"]) or "none"
            reason = (f"no flavor of ClusterQueue {cluster.tenant.name} that its node selector allows ({names}) "
                      f"can ever hold its {sum(s.count for s in sets)} pod(s): {_amounts(_totals(sets))}")
        return [*found, never(reason, _fix_for(reason, cluster, sets, cluster_queue))]
    found += _admitted(cluster, where, sets, admission.flavors, admission.borrowing, obj)
    found += _mig_single_slices(cluster, where, sets, admission.flavors)
    found += _quota(cluster, where, obj, sets)
    found += _capacity(cluster, where, sets, admission.flavors)
    return found


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


def _eligible_flavors(
    cluster: Cluster, sets: Sequence[PodSet]
) -> tuple[Mapping[str, Any], dict[str, Any], dict[str, dict[str, str]]]:
    """The tenant's ClusterQueue; a copy with only the flavors whose node labels every PodSet's selector
    allows (models.kueue.flavorassigner.flavor_matches), which the messages name; each flavor's node labels."""
    cluster_queue = cluster.one("ClusterQueue", cluster.tenant.name)
    if cluster_queue is None:
        raise Inadmissible(f"tenant {cluster.tenant.name} has no ClusterQueue")
    queue = json.loads(json.dumps(cluster_queue))
    [group] = queue["spec"]["resourceGroups"]
    labels = {
        f["name"]: dict(((cluster.one("ResourceFlavor", f["name"]) or {}).get("spec") or {}).get("nodeLabels") or {})
        for f in group["flavors"]
    }
    group["flavors"] = [f for f in group["flavors"] if all(flavor_matches(s, labels[f["name"]]) for s in sets)]
    return cluster_queue, queue, labels


def _admitted(
    cluster: Cluster, where: str, sets: Sequence[PodSet], flavors: Sequence[str], borrowing: bool, obj: Mapping[str, Any]
) -> list[Finding]:
    pods = sum(s.count for s in sets)
    each = " (each replica a Workload of its own)" if obj["kind"] == "Deployment" else ""
    names = ", ".join(dict.fromkeys(flavors))
    if not borrowing:
        return [Finding(where, "kueue", f"admitted on {names} within {cluster.tenant.name}'s nominal quota: {pods} pod(s)"
                        f"{each}, {_amounts(_totals(sets))}")]
    return [Finding(where, "kueue", f"admitted on {names} only by borrowing ({_amounts(_totals(sets))} is above the nominal "
                    f"quota there): it waits until the cohort has that much idle; {_lenders(cluster, sets, flavors)}")]


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


def _lenders(cluster: Cluster, sets: Sequence[PodSet], flavors: Sequence[str]) -> str:
    """Who lends each resource the workload borrows, and how much each has to lend with nothing running
    (models.kueue.cohort.Snapshot.lenders over the rendered ClusterQueues, Cohorts and ResourceFlavors)."""
    of_kind = {kind: [o for o in cluster.objects if o["kind"] == kind] for kind in ("ClusterQueue", "Cohort", "ResourceFlavor")}
    snapshot = Snapshot.from_manifests(of_kind["ClusterQueue"], of_kind["Cohort"], flavors=of_kind["ResourceFlavor"])
    queue = snapshot.cluster_queues[cluster.tenant.name]
    wanted: dict[tuple[str, str], int] = {}
    for pod_set, flavor in zip(sets, flavors, strict=True):
        for resource, amount in pod_set.total().items():
            wanted[(flavor, resource)] = wanted.get((flavor, resource), 0) + amount
    parts = []
    for (flavor, resource), amount in sorted(wanted.items()):
        quota = queue.quotas.get((flavor, resource))
        if quota is None or amount <= quota.nominal:
            continue
        lenders = snapshot.lenders(cluster.tenant.name, (flavor, resource))
        who = ", ".join(f"{name} {_show_amount(resource, idle)}" for name, idle in sorted(lenders.items()))
        parts.append(f"{resource} on {flavor} from {who or 'nobody: no other queue lends it, so it never runs'}")
    return f"lenders: {'; '.join(parts)}"


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


def _fix_for(reason: str, cluster: Cluster, sets: Sequence[PodSet] = (), cluster_queue: Mapping[str, Any] | None = None) -> str:
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
        quotas = {r["name"]: r for r in flavor["resources"]}
        most = {
            name: resource_value(name, quotas[name]["nominalQuota"]) + resource_value(name, quotas[name].get("borrowingLimit", 0))
            if name in quotas else 0
            for name in wanted
        }
        ceilings.append(f"{flavor['name']}: {_amounts(most, zeros=True)}")
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
    for count, template in zip(counts, _pod_templates(obj, cluster.tenancy(())), strict=False):
        pod = with_container_defaults(cluster.objects, {"spec": template}, cluster.namespace)["spec"]
        for container in pod["containers"]:
            resources = container.get("resources") or {}
            for kind in ("requests", "limits"):
                for resource, value in (resources.get(kind) or {}).items():
                    key = f"{kind}.{resource}" if f"{kind}.{resource}" in hard else resource if resource in hard else None
                    if key is not None:
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


def read_documents(paths: Sequence[Path]) -> list[tuple[str, dict[str, Any]]]:
    """(file, object) for every YAML document of the files; ConfigError with one line per unreadable file."""
    found, problems = [], []
    for path in paths:
        try:
            documents = list(yaml.safe_load_all(path.read_text()))
        except (OSError, yaml.YAMLError) as err:
            problems.append(f"{path}: {str(err).splitlines()[0]}")
            continue
        for document in documents:
            if document is None:
                continue
            if not isinstance(document, dict):
                problems.append(f"{path}: a document is {type(document).__name__}, not a Kubernetes object")
                continue
            found.append((str(path), document))
    if problems:
        raise ConfigError(problems)
    return found


def main(stack: str, tenant: str, files: Sequence[Path]) -> int:
    from .engine import run_program
    from .stack import StackNotFound, load_config, load_stack

    try:
        stack_config = load_stack(stack)
        config = load_config(stack_config)
        documents = read_documents(files)
    except StackNotFound as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except ConfigError as err:
        print("\n".join(err.problems), file=sys.stderr)
        return EXIT_USAGE
    names = [t.name for t in config.tenants]
    if tenant not in names:
        print(f"error: stack {stack} has no tenant {tenant!r} (tenants: {', '.join(names) or 'none'})", file=sys.stderr)
        return EXIT_USAGE
    recording = run_program(stack_config.stack, stack_config.values, stack_config.secret_keys)
    return report(check(Cluster.of(config, tenant, rendered_objects(recording)), documents))


def report(findings: Sequence[Finding]) -> int:
    """Print each finding and the count; the exit code: 1 when any finding would refuse or strand a workload."""
    for finding in findings:
        print(finding)
    problems = [f for f in findings if f.problem]
    print(f"{len({f.workload for f in findings})} objects checked, {len(problems)} problems")
    return EXIT_FINDINGS if problems else EXIT_OK
