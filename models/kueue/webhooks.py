"""What Kueue's mutating webhooks do to an object created in a namespace Kueue manages, before any
validating admission sees it (kubernetes-sigs/kueue v0.19.2).

- pkg/controller/jobframework/reconciler.go `FindAncestorJobManagedByKueue`: from the object, follow each
  controller ownerReference (`metav1.GetControllerOf`) while the owner's apiVersion and kind are a
  registered integration's or `apps/v1` ReplicaSet (integrationmanager.go `isKnownOwner`) and the owner
  exists with the referenced UID; the topmost owner of an enabled integration (`getJobTypeForOwner`) with a
  queue name, or any such owner under `manageJobsWithoutQueueName`, is the managed ancestor.
- pkg/controller/jobframework/utils.go `WorkloadShouldBeSuspended` and defaults.go
  `ApplyDefaultForSuspend`: a job with a managed ancestor is left as it is; one with a queue name, or in a
  managed namespace under `manageJobsWithoutQueueName`, is created suspended (`spec.suspend: true` for
  Job, JobSet, TrainJob).
- pkg/controller/jobs/pod/pod_webhook.go `Default`: a pod carrying the `pod-suspending-parent` annotation
  is gated; otherwise a pod with a managed ancestor is left ungated, and any other pod in a managed
  namespace under `manageJobsWithoutQueueName` gets the `managed` label, Kueue's finalizer and its
  scheduling gate.
- pkg/controller/jobs/deployment/deployment_webhook.go and statefulset/statefulset_webhook.go `Default`
  (CREATE and UPDATE): the pod template gets the `pod-suspending-parent` annotation (a Deployment's the
  `managed` label too), so each pod the ReplicaSet or StatefulSet creates is gated. A StatefulSet whose
  template already names another framework in the annotation is left as it is
  (statefulset_controller.go `managedByAnotherFramework`). No Kueue webhook sees a ReplicaSet.

Callers pass the namespace's objects the walk can find, by UID; the functions return a changed copy.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from .constants import (
    ADMISSION_SCHEDULING_GATE,
    MANAGED_LABEL,
    MANAGED_LABEL_VALUE,
    POD_FINALIZER,
    QUEUE_NAME_LABEL,
    SUSPENDED_BY_PARENT_ANNOTATION,
)
from .integrations import INTEGRATIONS

# The kinds whose Kueue integration suspends them through `spec.suspend` (GenericJob.Suspend of
# batch/job, jobset, trainjob); `deployment` and `statefulset` suspend through their pods' gate instead.
SPEC_SUSPEND_FRAMEWORKS: tuple[str, ...] = ("batch/job", "jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob")
# Deployment and StatefulSet: the value their webhooks write into the annotation is the framework name.
TEMPLATE_GATING_FRAMEWORKS: tuple[str, ...] = ("deployment", "statefulset")
_REPLICA_SET = ("apps/v1", "ReplicaSet")


def _framework(api_version: str, kind: str) -> str | None:
    for framework, integration in INTEGRATIONS.items():
        if (integration.api_version, integration.kind) == (api_version, kind):
            return framework
    return None


def controller_of(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """metav1.GetControllerOf: the first ownerReference with `controller: true`."""
    for reference in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if reference.get("controller"):
            return reference
    return None


def managed_ancestor(
    obj: Mapping[str, Any],
    by_uid: Mapping[str, Mapping[str, Any]],
    frameworks: Iterable[str],
    manage_jobs_without_queue_name: bool,
) -> Mapping[str, Any] | None:
    """FindAncestorJobManagedByKueue: the topmost Kueue-managed owner, or None."""
    enabled = set(frameworks)
    top, current, seen = None, obj, set()
    while True:
        uid = (current.get("metadata") or {}).get("uid")
        if uid is not None and uid in seen:
            return None  # ErrCyclicOwnership: the webhook fails the request
        seen.add(uid)
        owner = controller_of(current)
        if owner is None:
            return top
        framework = _framework(owner["apiVersion"], owner["kind"])
        if framework is None and (owner["apiVersion"], owner["kind"]) != _REPLICA_SET:
            return top
        parent = by_uid.get(owner.get("uid", ""))
        if parent is None or parent["kind"] != owner["kind"] or parent["metadata"].get("name") != owner["name"]:
            return top  # the UID names no such object: the walk stops
        queue = ((parent.get("metadata") or {}).get("labels") or {}).get(QUEUE_NAME_LABEL)
        if framework in enabled and (manage_jobs_without_queue_name or queue):
            top = parent
        current = parent


def default_job(
    job: Mapping[str, Any],
    by_uid: Mapping[str, Mapping[str, Any]],
    frameworks: Iterable[str],
    manage_jobs_without_queue_name: bool,
) -> dict[str, Any]:
    """ApplyDefaultForSuspend on CREATE in a managed namespace: suspended unless an ancestor is managed."""
    frameworks = tuple(frameworks)
    result = copy.deepcopy(dict(job))
    if _framework(job["apiVersion"], job["kind"]) not in SPEC_SUSPEND_FRAMEWORKS:
        return result
    if managed_ancestor(job, by_uid, frameworks, manage_jobs_without_queue_name) is not None:
        return result
    queue = ((job.get("metadata") or {}).get("labels") or {}).get(QUEUE_NAME_LABEL)
    if queue or manage_jobs_without_queue_name:
        result.setdefault("spec", {})["suspend"] = True
    return result


def default_pod_template_owner(obj: Mapping[str, Any], frameworks: Iterable[str]) -> dict[str, Any]:
    """The Deployment and StatefulSet webhooks in a managed namespace (CREATE and UPDATE)."""
    result = copy.deepcopy(dict(obj))
    framework = _framework(obj["apiVersion"], obj["kind"])
    if framework not in TEMPLATE_GATING_FRAMEWORKS or framework not in set(frameworks):
        return result
    metadata = result["spec"]["template"].setdefault("metadata", {})
    annotations = metadata.setdefault("annotations", {})
    if annotations.get(SUSPENDED_BY_PARENT_ANNOTATION, framework) != framework:
        return result
    annotations[SUSPENDED_BY_PARENT_ANNOTATION] = framework
    if framework == "deployment":
        metadata.setdefault("labels", {})[MANAGED_LABEL] = MANAGED_LABEL_VALUE
    return result


def default_pod(
    pod: Mapping[str, Any],
    by_uid: Mapping[str, Mapping[str, Any]],
    frameworks: Iterable[str],
    manage_jobs_without_queue_name: bool,
) -> dict[str, Any]:
    """PodWebhook.Default on CREATE in a managed namespace (no podOptions selectors)."""
    result = copy.deepcopy(dict(pod))
    metadata = result.setdefault("metadata", {})
    by_parent = SUSPENDED_BY_PARENT_ANNOTATION in (metadata.get("annotations") or {})
    if not by_parent:
        if managed_ancestor(pod, by_uid, frameworks, manage_jobs_without_queue_name) is not None:
            return result
        if not ((metadata.get("labels") or {}).get(QUEUE_NAME_LABEL) or manage_jobs_without_queue_name):
            return result
        metadata.setdefault("labels", {})[MANAGED_LABEL] = MANAGED_LABEL_VALUE
        finalizers = metadata.setdefault("finalizers", [])
        if POD_FINALIZER not in finalizers:
            finalizers.append(POD_FINALIZER)
    gates = result.setdefault("spec", {}).setdefault("schedulingGates", [])
    if not any(g.get("name") == ADMISSION_SCHEDULING_GATE for g in gates):
        gates.append({"name": ADMISSION_SCHEDULING_GATE})
    return result
