"""A job as Kueue sees it: its PodSets, and what each pod is charged (kubernetes-sigs/kueue v0.19.2).

- PodSets. A batch Job is one PodSet of `parallelism` pods (pkg/controller/jobs/job/job_controller.go,
  PodSets). A TrainJob is the PodSets of the JobSet its runtime makes (pkg/controller/jobs/trainjob/
  trainjob_controller.go, getChildJobSet, then the jobset integration's PodSets): one per replicated
  job, `replicas` x `parallelism` pods, the trainer's step shaped by `models.kubeflow_trainer`.
- What a pod is charged: the sum of its containers' requests, a LimitRange's `defaultRequest` where a
  container sets none (pkg/workload/resources.go, AdjustResources), plus for each ResourceClaimTemplate
  the devices of its ExactCount requests under the resource `resources.deviceClassMappings` maps their
  DeviceClass to, an unmapped class being inadmissible (pkg/dra/claims.go, mapper.go); resources under
  `resources.excludeResourcePrefixes` are not charged (pkg/workload/workload.go, dropExcludedResources).
  Amounts are in Kueue's units (`models.kueue.resources`).

- What narrows its flavors: each PodSet carries its pods' `nodeSelector`, the terms of their required node
  affinity and their tolerations, as Kueue copies the pod template into the Workload's PodSet; the flavor
  assigner compares them with each flavor (`models.kueue.flavorassigner.flavor_matches`).

- A request with CEL selectors is admitted only when enough published devices match the class's and
  the request's selectors, counted over every device in the cluster, each device once per claim
  (pkg/dra/claims.go, validateCELSelectorsAgainstDevices, countMatchingDevices): too few is
  "insufficient matching devices" (retried), an evaluation error "CEL evaluation failed". `Tenancy`
  carries the devices the cluster publishes and each DeviceClass's selectors.

- A pod that names a ResourceClaim (`resourceClaimName`, the one way several pods share a claim and so its
  devices) leaves its workload inadmissible: "KueueDRAIntegration feature does not support use of resource
  claims" (pkg/controller/core/workload_controller.go, `workload.HasResourceClaim`; the same at main). So no
  claim is shared by pods Kueue admits, and the driver's sharing strategies, which configure one claim's
  devices for the pods sharing it, have nothing to share (models/nvidia/dra_driver.py).

Not modelled, and refused rather than guessed at: init containers, pod overhead, selectors cel-python
cannot evaluate.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from models import kubeflow_trainer
from models.kubernetes.cel import Verdict
from models.kubernetes.dra_cel import Device, device_matches

from .constants import PRIORITY_CLASS_LABEL
from .resources import resource_value


class Inadmissible(Exception):
    """Kueue leaves the workload pending; the message is the reason."""


NAMED_CLAIM_REASON = "KueueDRAIntegration feature does not support use of resource claims"


@dataclass(frozen=True, slots=True)
class PodSet:
    name: str
    count: int
    requests: Mapping[str, int]  # per pod, in Kueue's units
    tolerations: tuple[Mapping[str, Any], ...] = ()
    node_selector: Mapping[str, str] = field(default_factory=dict)  # the pod's nodeSelector
    # nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms (ORed)
    node_affinity: tuple[Mapping[str, Any], ...] = ()

    def total(self) -> dict[str, int]:
        return {resource: amount * self.count for resource, amount in self.requests.items()}


@dataclass(eq=False, slots=True)
class Workload:
    """A Kueue Workload: pending, or admitted with `usage` charged to its ClusterQueue.

    `timestamp` orders the queue (creation, or the last eviction with requeuingStrategy.timestamp
    Eviction); `reserved_at` orders preemption candidates (QuotaReserved's transition time); `evicted`
    marks one whose eviction is under way (its quota is still held until it is gone).
    """

    name: str
    cluster_queue: str
    pod_sets: tuple[PodSet, ...]
    priority: int = 0
    timestamp: float = 0.0
    usage: dict[tuple[str, str], int] = field(default_factory=dict)
    flavors: tuple[Mapping[str, str], ...] = ()  # per PodSet, resource -> flavor, while admitted
    reserved_at: float = 0.0
    evicted: bool = False
    namespace_labels: Mapping[str, str] | None = None  # None: the ClusterQueue's namespaceSelector is not checked

    def total_requests(self) -> list[dict[str, int]]:
        return [pod_set.total() for pod_set in self.pod_sets]

    def uses(self, frs: Collection[tuple[str, str]]) -> bool:
        """WorkloadUsesResources: it holds quota in one of these (flavor, resource)s."""
        return any(fr in frs for fr in self.usage)


@dataclass(frozen=True)
class Tenancy:
    """What Kueue reads besides the job: the namespace's LimitRange defaults, its claim templates, Kueue's config."""

    default_requests: Mapping[str, str]
    claim_templates: Mapping[str, Mapping[str, Any]]  # name -> ResourceClaimTemplate
    kueue_config: Mapping[str, Any]
    runtimes: Mapping[str, Mapping[str, Any]]  # name -> ClusterTrainingRuntime
    # What the cluster's ResourceSlices publish: (device, how many such devices), and each DeviceClass's selectors.
    published_devices: Sequence[tuple[Device, int]] = ()
    device_class_selectors: Mapping[str, Sequence[str]] = field(default_factory=dict)


def pod_sets(job: Mapping[str, Any], tenancy: Tenancy) -> list[PodSet]:
    kind = job["kind"]
    if kind == "Job":
        spec = job["spec"]
        return [pod_set_of("main", spec.get("parallelism", 1), spec["template"]["spec"], tenancy)]
    if kind == "TrainJob":
        return _train_job_pod_sets(job, tenancy)
    raise ValueError(f"{kind}: not a kind this model reads")


def _train_job_pod_sets(job: Mapping[str, Any], tenancy: Tenancy) -> list[PodSet]:
    runtime = tenancy.runtimes[job["spec"]["runtimeRef"]["name"]]
    found = []
    for replicated in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        job_template = replicated["template"]
        pod = job_template["spec"]["template"]["spec"]
        parallelism = job_template["spec"].get("parallelism", 1)
        if kubeflow_trainer.is_trainer_step(replicated):
            parallelism = kubeflow_trainer.trainer_nodes(job, runtime)
            pod = kubeflow_trainer.trainer_pod(pod, job)
        found.append(pod_set_of(replicated["name"], replicated.get("replicas", 1) * parallelism, pod, tenancy))
    return found


def pod_set_of(name: str, count: int, pod: Mapping[str, Any], tenancy: Tenancy) -> PodSet:
    """The PodSet of `count` pods shaped like `pod`: what each is charged and what narrows its flavors."""
    affinity = ((pod.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    return PodSet(
        name,
        count,
        pod_requests(pod, tenancy),
        tuple(pod.get("tolerations") or ()),
        dict(pod.get("nodeSelector") or {}),
        tuple((affinity or {}).get("nodeSelectorTerms") or ()),
    )


def pod_requests(pod: Mapping[str, Any], tenancy: Tenancy) -> dict[str, int]:
    """What Kueue charges one pod."""
    for refused in ("initContainers", "overhead"):
        if refused in pod:
            raise ValueError(f"the model does not read a pod's {refused}")
    charged: dict[str, int] = {}
    for container in pod["containers"]:
        own = (container.get("resources") or {}).get("requests") or {}
        for resource, amount in {**tenancy.default_requests, **own}.items():
            charged[resource] = charged.get(resource, 0) + resource_value(resource, amount)
    resources_config = tenancy.kueue_config.get("resources", {})
    mapping = {
        device_class: entry["name"]
        for entry in resources_config.get("deviceClassMappings", [])
        for device_class in entry["deviceClassNames"]
    }
    for claim in pod.get("resourceClaims", []):
        if claim.get("resourceClaimName") is not None:
            raise Inadmissible(NAMED_CLAIM_REASON)
        template = tenancy.claim_templates[claim["resourceClaimTemplateName"]]
        taken: dict[int, int] = {}  # published entry -> devices of it matched by earlier requests of the claim
        for request in ((template.get("spec") or {}).get("spec") or {}).get("devices", {}).get("requests") or ():
            exactly = request.get("exactly")
            if exactly is None:
                raise ValueError(f"the model reads `exactly` device requests only, not request {request.get('name')}'s")
            if exactly.get("allocationMode", "ExactCount") != "ExactCount":
                raise ValueError("the model reads ExactCount requests only")
            device_class = exactly["deviceClassName"]
            if device_class not in mapping:
                raise Inadmissible(f"DeviceClass {device_class} is not mapped in DRA configuration")
            selectors = [s["cel"]["expression"] for s in exactly.get("selectors") or () if s.get("cel")]
            if selectors:
                _match_published(device_class, selectors, int(exactly.get("count", 1)), tenancy, taken)
            resource = mapping[device_class]
            charged[resource] = charged.get(resource, 0) + int(exactly.get("count", 1))
    excluded = tuple(resources_config.get("excludeResourcePrefixes", []))
    return {resource: amount for resource, amount in charged.items() if not resource.startswith(excluded)}


def _match_published(
    device_class: str, selectors: Sequence[str], needed: int, tenancy: Tenancy, taken: dict[int, int]
) -> None:
    """validateCELSelectorsAgainstDevices for one request: enough published devices pass the class's selectors
    and the request's, not counting those earlier requests of the claim matched."""
    class_selectors = tenancy.device_class_selectors.get(device_class)
    if class_selectors is None:
        raise Inadmissible(f"failed to get DeviceClass {device_class}")
    matched = 0
    for index, (device, count) in enumerate(tenancy.published_devices):
        if matched >= needed:
            break
        verdicts = []
        for expression in (*class_selectors, *selectors):
            outcome = device_matches(expression, device)
            if outcome.verdict is Verdict.NOT_EVALUATED:
                raise ValueError(f"the model cannot evaluate {expression} ({outcome.detail})")
            if outcome.verdict is Verdict.ERRORED:
                raise Inadmissible(f"CEL evaluation failed for DeviceClass {device_class}: {outcome.detail}")
            verdicts.append(outcome.verdict is Verdict.PASSED)
            if not verdicts[-1]:
                break  # evaluateSelectorsOnDevice stops at the first selector that does not match
        if all(verdicts):
            free = count - taken.get(index, 0)
            used = min(free, needed - matched)
            taken[index] = taken.get(index, 0) + used
            matched += used
    if matched < needed:
        raise Inadmissible(
            f"insufficient matching devices for CEL selector in DeviceClass {device_class}: {matched} device(s) match "
            f"in the cluster but {needed} requested"
        )


def workload_priority(
    labels: Mapping[str, str],
    pod_specs: Sequence[Mapping[str, Any]],
    workload_priority_classes: Mapping[str, int],
    priority_classes: Mapping[str, tuple[int, bool]],
) -> int:
    """The priority Kueue gives a job's Workload (pkg/controller/jobframework/reconciler.go ExtractPriority,
    pkg/util/priority/priority.go): the value of the WorkloadPriorityClass its `kueue.x-k8s.io/priority-class`
    label names; else of the PriorityClass the first PodSet naming one names; else of the PriorityClass
    marked globalDefault; else 0. A class that does not exist leaves the job without a Workload.

    `priority_classes`: name -> (value, globalDefault).
    """
    named = labels.get(PRIORITY_CLASS_LABEL)
    if named:
        if named not in workload_priority_classes:
            raise Inadmissible(f"WorkloadPriorityClass {named} does not exist")
        return workload_priority_classes[named]
    pod_class = next((spec["priorityClassName"] for spec in pod_specs if spec.get("priorityClassName")), None)
    if pod_class is not None:
        if pod_class not in priority_classes:
            raise Inadmissible(f"PriorityClass {pod_class} does not exist")
        return priority_classes[pod_class][0]
    return next((value for value, default in priority_classes.values() if default), 0)
