"""A model of how Kueue admits a job on a tenant's ClusterQueue, for tests that show a job admissible or not.

It mirrors kubernetes-sigs/kueue v0.19.2:
- PodSets. A batch Job is one PodSet of `parallelism` pods (pkg/controller/jobs/job/job_controller.go,
  PodSets). A TrainJob is the PodSets of the JobSet its runtime makes (pkg/controller/jobs/trainjob/
  trainjob_controller.go, getChildJobSet, then the jobset integration's PodSets): one per replicated job,
  `replicas` x `parallelism` pods, where the trainer's replicated job (label
  `trainer.kubeflow.org/trainjob-ancestor-step: trainer`) runs `numNodes` pods whose `node` container
  gets `resourcesPerNode` (kubeflow/trainer v2.3.0 pkg/runtime/framework/plugins/jobset, torch).
- What a pod is charged: the sum of its containers' requests, a LimitRange's `defaultRequest` where a
  container sets none (pkg/workload/resources.go, AdjustResources), plus for each ResourceClaimTemplate
  the devices of its ExactCount requests under the resource `resources.deviceClassMappings` maps their
  DeviceClass to, an unmapped class being inadmissible (pkg/dra/claims.go, mapper.go); resources under
  `resources.excludeResourcePrefixes` are not charged (pkg/workload/workload.go, dropExcludedResources).
- The flavor (pkg/scheduler/flavorassigner/flavorassigner.go): with the default quotaCheckStrategy
  BlockUndeclared a resource the queue does not cover is inadmissible; the flavors of the queue's
  resource group are tried in order, and all of a PodSet's pods take the first flavor where every
  charged resource fits nominal quota, or nominal plus borrowingLimit (flavorFungibility whenCanBorrow
  defaults to MayStopSearch, apis/kueue/v1beta2/clusterqueue_types.go). Borrowing needs idle quota in the
  cohort; admission within nominal quota is what the tenant is guaranteed.

Not modelled, and refused rather than guessed at: node selectors and affinities (which filter flavors by
their node labels), init containers, pod overhead, CEL device selectors.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

ANCESTOR_STEP_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
TRAINER_CONTAINER = "node"

_QUANTITY = re.compile(r"^([0-9.]+)(m|k|M|G|T|Ki|Mi|Gi|Ti)?$")
_SUFFIX = {
    None: Fraction(1), "m": Fraction(1, 1000), "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9),
    "T": Fraction(10**12), "Ki": Fraction(2**10), "Mi": Fraction(2**20), "Gi": Fraction(2**30), "Ti": Fraction(2**40),
}


class Inadmissible(Exception):
    """Kueue leaves the workload pending; the message is the reason."""


def quantity(value: str | int | float) -> Fraction:
    """A resource.Quantity in base units (cores, bytes, devices)."""
    match = _QUANTITY.match(str(value))
    if match is None:
        raise ValueError(f"{value!r} is not a quantity this model reads")
    return Fraction(match.group(1)) * _SUFFIX[match.group(2)]


@dataclass(frozen=True)
class PodSet:
    name: str
    count: int
    requests: Mapping[str, Fraction]  # per pod

    def total(self) -> dict[str, Fraction]:
        return {resource: amount * self.count for resource, amount in self.requests.items()}


@dataclass(frozen=True)
class Tenancy:
    """What Kueue reads besides the job: the namespace's LimitRange defaults, its claim templates, Kueue's config."""

    default_requests: Mapping[str, str]
    claim_templates: Mapping[str, Mapping[str, Any]]  # name -> ResourceClaimTemplate
    kueue_config: Mapping[str, Any]
    runtimes: Mapping[str, Mapping[str, Any]]  # name -> ClusterTrainingRuntime


def pod_sets(job: Mapping[str, Any], tenancy: Tenancy) -> list[PodSet]:
    kind = job["kind"]
    if kind == "Job":
        spec = job["spec"]
        return [PodSet("main", spec.get("parallelism", 1), pod_requests(spec["template"]["spec"], tenancy))]
    if kind == "TrainJob":
        return _train_job_pod_sets(job, tenancy)
    raise ValueError(f"{kind}: not a kind this model reads")


def _train_job_pod_sets(job: Mapping[str, Any], tenancy: Tenancy) -> list[PodSet]:
    spec, trainer = job["spec"], job["spec"].get("trainer", {})
    runtime = tenancy.runtimes[spec["runtimeRef"]["name"]]
    found = []
    for replicated in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        job_template = replicated["template"]
        pod = copy.deepcopy(job_template["spec"]["template"]["spec"])
        parallelism = job_template["spec"].get("parallelism", 1)
        if job_template.get("metadata", {}).get("labels", {}).get(ANCESTOR_STEP_LABEL) == "trainer":
            parallelism = trainer.get("numNodes", runtime["spec"]["mlPolicy"].get("numNodes", 1))
            for container in pod["containers"]:
                if container["name"] == TRAINER_CONTAINER and "resourcesPerNode" in trainer:
                    container["resources"] = trainer["resourcesPerNode"]
        found.append(PodSet(replicated["name"], replicated.get("replicas", 1) * parallelism, pod_requests(pod, tenancy)))
    return found


def pod_requests(pod: Mapping[str, Any], tenancy: Tenancy) -> dict[str, Fraction]:
    """What Kueue charges one pod."""
    for refused in ("nodeSelector", "affinity", "initContainers", "overhead"):
        if refused in pod:
            raise ValueError(f"the model does not read a pod's {refused}")
    charged: dict[str, Fraction] = {}
    for container in pod["containers"]:
        own = (container.get("resources") or {}).get("requests") or {}
        for resource, amount in {**tenancy.default_requests, **own}.items():
            charged[resource] = charged.get(resource, Fraction(0)) + quantity(amount)
    resources_config = tenancy.kueue_config.get("resources", {})
    mapping = {
        device_class: entry["name"]
        for entry in resources_config.get("deviceClassMappings", [])
        for device_class in entry["deviceClassNames"]
    }
    for claim in pod.get("resourceClaims", []):
        template = tenancy.claim_templates[claim["resourceClaimTemplateName"]]
        for request in template["spec"]["spec"]["devices"]["requests"]:
            exactly = request["exactly"]
            if exactly.get("selectors") or exactly.get("allocationMode", "ExactCount") != "ExactCount":
                raise ValueError("the model reads ExactCount requests without selectors only")
            device_class = exactly["deviceClassName"]
            if device_class not in mapping:
                raise Inadmissible(f"DeviceClass {device_class} is not mapped in DRA configuration")
            resource = mapping[device_class]
            charged[resource] = charged.get(resource, Fraction(0)) + exactly.get("count", 1)
    excluded = tuple(resources_config.get("excludeResourcePrefixes", []))
    return {resource: amount for resource, amount in charged.items() if not resource.startswith(excluded)}


@dataclass(frozen=True)
class Admission:
    flavors: tuple[str, ...]  # per PodSet
    borrowing: bool  # needs idle quota of the cohort; False: within the tenant's nominal quota


def admit(sets: Sequence[PodSet], cluster_queue: Mapping[str, Any]) -> Admission:
    """The flavor each PodSet gets on the queue, or Inadmissible when no flavor can ever hold it."""
    [group] = cluster_queue["spec"]["resourceGroups"]
    used: dict[tuple[str, str], Fraction] = {}
    flavors, borrowing = [], False
    for pod_set in sets:
        total = pod_set.total()
        undeclared = sorted(set(total) - set(group["coveredResources"]))
        if undeclared:
            raise Inadmissible(f"resources not covered by ClusterQueue {cluster_queue['metadata']['name']}: {undeclared}")
        for flavor in group["flavors"]:
            quotas = {r["name"]: r for r in flavor["resources"]}
            nominal = {name: quantity(r["nominalQuota"]) for name, r in quotas.items()}
            ceiling = {name: nominal[name] + quantity(r.get("borrowingLimit", 0)) for name, r in quotas.items()}
            after = {resource: used.get((flavor["name"], resource), Fraction(0)) + amount for resource, amount in total.items()}
            if all(amount <= ceiling[resource] for resource, amount in after.items()):
                flavors.append(flavor["name"])
                borrowing = borrowing or any(amount > nominal[resource] for resource, amount in after.items())
                used.update({(flavor["name"], resource): amount for resource, amount in after.items()})
                break
        else:
            name = cluster_queue["metadata"]["name"]
            raise Inadmissible(f"no flavor of ClusterQueue {name} holds PodSet {pod_set.name}: {total}")
    return Admission(tuple(flavors), borrowing)
