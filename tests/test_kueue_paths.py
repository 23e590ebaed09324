"""Every path to a pod in a tenant namespace ends at Kueue: what the real controllers do still passes the
guards of components/admission.py, and what Kueue's own webhooks hold needs no guard.

The attempts that the guards refuse are rows of tests/test_attacks.py; this file holds the other side:
Kueue (kueue-system), the trainer and JobSet (kubeflow-system), kube-controller-manager's Job, ReplicaSet,
StatefulSet, DaemonSet and CronJob controllers, and tenants doing ordinary things, each request as the API
server's validating phase receives it (after Kueue's mutating webhooks, models/kueue/webhooks.py).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from config.labels import TENANT_LABEL
from config.timing import TENANT_POD_MAX_GRACE_SECONDS
from models.kubernetes.admission import Request, admission_denials
from models.kubernetes.user import User, service_account
from models.kueue.constants import ADMISSION_SCHEDULING_GATE, SUSPENDED_BY_PARENT_ANNOTATION

from .test_attacks import (
    ADMIN,
    IDENTITIES,
    JOB_CONTROLLER,
    KUEUE,
    REPLICA_SET_CONTROLLER,
    RESUMABLE,
    admitted_job_pod,
    admitted_jobset,
    created,
    kueue_defaults,
    managed_deployment,
    pod,
    pod_of,
    reference,
    rendered,
    request,
    running_job,
    suspended,
)

TRAINER = service_account("kubeflow-system", "kubeflow-trainer-controller-manager")
JOBSET = service_account("kubeflow-system", "jobset-controller-manager")
KEDA = service_account("keda", "keda-operator")
CRONJOB_CONTROLLER = service_account("kube-system", "cronjob-controller")


def refusals(
    user: User, operation: str, group: str, resource: str, obj: Any, old: Any = None, options: Any = None
) -> list[str]:
    objects = rendered()
    return admission_denials(objects, request(objects, operation, group, resource, user, object=obj, old=old, options=options))


def gates(obj: dict[str, Any]) -> list[str]:
    return [g["name"] for g in obj["spec"].get("schedulingGates", [])]


def resumed(which: str) -> tuple[str, str, dict[str, Any], dict[str, Any]]:
    group, plural, kind, api_version, spec = RESUMABLE[which]
    before = suspended(kind, api_version, copy.deepcopy(spec))
    after = copy.deepcopy(before)
    after["spec"]["suspend"] = False
    return group, plural, after, before


# --- resuming ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("which", RESUMABLE)
def test_kueue_resumes_the_jobs_it_admits(which):
    group, plural, after, before = resumed(which)
    assert refusals(KUEUE, "UPDATE", group, plural, after, before) == []


def test_the_trainer_resumes_a_trainjobs_jobset_and_jobset_resumes_its_jobs():
    group, plural, after, before = resumed("jobset")
    assert refusals(TRAINER, "UPDATE", group, plural, after, before) == []
    group, plural, after, before = resumed("job")
    assert refusals(JOBSET, "UPDATE", group, plural, after, before) == []


@pytest.mark.parametrize("who", [KEDA, JOB_CONTROLLER, service_account("external-secrets", "external-secrets")],
                         ids=["keda", "job-controller", "external-secrets"])
def test_a_platform_controller_that_resumes_nothing_cannot_resume_a_job(who):
    group, plural, after, before = resumed("job")
    assert refusals(who, "UPDATE", group, plural, after, before) != []


@pytest.mark.parametrize("who", IDENTITIES)
def test_tenants_suspend_their_running_jobs_and_edit_them_either_way(who):
    group, plural, running, suspended_job = resumed("job")
    user = IDENTITIES[who]
    assert refusals(user, "UPDATE", group, plural, suspended_job, running) == []
    relabelled = copy.deepcopy(suspended_job)
    relabelled["metadata"]["labels"] = {"team": "nlp"}
    assert refusals(user, "UPDATE", group, plural, relabelled, suspended_job) == []
    assert refusals(user, "UPDATE", group, plural, {**running, "metadata": relabelled["metadata"]}, running) == []


def test_a_job_is_resized_suspended_or_by_kueue_and_other_kinds_never_reach_the_size_check():
    running = running_job()
    resized = copy.deepcopy(running)
    resized["spec"]["parallelism"] = 4
    # Kueue's partial admission sets parallelism as it resumes a Job.
    assert refusals(KUEUE, "UPDATE", "batch", "jobs", resized, running) == []
    stopped = {**copy.deepcopy(running), "spec": {**running["spec"], "suspend": True}}
    resized_stopped = {**copy.deepcopy(stopped), "spec": {**stopped["spec"], "parallelism": 4}}
    assert refusals(ADMIN, "UPDATE", "batch", "jobs", resized_stopped, stopped) == []
    # completions set where it was unset is a resize too; unchanged fields pass.
    assert refusals(ADMIN, "UPDATE", "batch", "jobs", running, running) == []
    unset = copy.deepcopy(running)
    del unset["spec"]["completions"]
    assert refusals(ADMIN, "UPDATE", "batch", "jobs", running, unset) != []
    # A running JobSet has no parallelism of its own: the size check never reads it.
    group, plural, running_jobset, _ = resumed("jobset")
    relabelled = copy.deepcopy(running_jobset)
    relabelled["metadata"]["labels"] = {"team": "nlp"}
    assert refusals(ADMIN, "UPDATE", group, plural, relabelled, running_jobset) == []


@pytest.mark.parametrize("which", RESUMABLE)
def test_tenants_create_jobs_kueue_suspends(which):
    group, plural, kind, api_version, spec = RESUMABLE[which]
    assert refusals(ADMIN, "CREATE", group, plural, suspended(kind, api_version, copy.deepcopy(spec))) == []


def test_the_cronjob_controller_creates_jobs_kueue_suspends():
    cron = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly", "uid": "c"}}
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "nightly-1", "uid": "j", "ownerReferences": [reference(cron)]},
           "spec": {"template": {"spec": pod()["spec"]}}}
    created_job = kueue_defaults("job", job, cron)
    assert created_job["spec"]["suspend"] is True  # a CronJob is no integration: its Jobs are top-level
    assert refusals(CRONJOB_CONTROLLER, "CREATE", "batch", "jobs", created_job) == []


def test_jobset_creates_running_jobs_for_the_jobset_kueue_admitted():
    jobset = admitted_jobset()
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "tiny-w-0", "uid": "j", "ownerReferences": [reference(jobset)]},
           "spec": {"suspend": False, "template": {"spec": pod()["spec"]}}}
    assert refusals(JOBSET, "CREATE", "batch", "jobs", kueue_defaults("job", job, jobset)) == []


# --- creating pods -------------------------------------------------------------------------------------


def test_the_replicaset_controller_creates_a_deployments_pods_gated():
    deployment = managed_deployment()
    assert deployment["spec"]["template"]["metadata"]["annotations"] == {SUSPENDED_BY_PARENT_ANNOTATION: "deployment"}
    replica_set: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                   "metadata": {"name": "web-1", "uid": "rs", "ownerReferences": [reference(deployment)]},
                                   "spec": {"template": copy.deepcopy(deployment["spec"]["template"])}}
    created_pod = kueue_defaults("pod", pod_of(replica_set, replica_set["spec"]["template"]), deployment, replica_set)
    assert gates(created_pod) == [ADMISSION_SCHEDULING_GATE]
    assert refusals(REPLICA_SET_CONTROLLER, "CREATE", "", "pods", created_pod) == []


def test_a_statefulset_template_edited_without_kueues_marks_still_makes_gated_pods():
    """Kueue's StatefulSet webhook runs on UPDATE too, so the edit gets the annotation back; no guard needed."""
    statefulset = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "uid": "ss"},
                   "spec": {"template": {"metadata": {"labels": {"app": "db"}}, "spec": pod()["spec"]}}}
    edited = kueue_defaults("template", statefulset)
    assert edited["spec"]["template"]["metadata"]["annotations"] == {SUSPENDED_BY_PARENT_ANNOTATION: "statefulset"}
    created_pod = kueue_defaults("pod", pod_of(edited, edited["spec"]["template"]), edited)
    assert gates(created_pod) == [ADMISSION_SCHEDULING_GATE]
    controller = service_account("kube-system", "statefulset-controller")
    assert refusals(controller, "CREATE", "", "pods", created_pod) == []


@pytest.mark.parametrize("owner_kind", ["ReplicaSet", "DaemonSet"])
def test_pods_of_a_tenants_own_replicaset_or_daemonset_are_gated_and_pass(owner_kind):
    owner: dict[str, Any] = {"apiVersion": "apps/v1", "kind": owner_kind, "metadata": {"name": "o", "uid": "o"},
             "spec": {"template": {"spec": pod()["spec"]}}}
    created_pod = kueue_defaults("pod", pod_of(owner, owner["spec"]["template"]), owner)
    assert gates(created_pod) == [ADMISSION_SCHEDULING_GATE]
    name = "replicaset-controller" if owner_kind == "ReplicaSet" else "daemon-set-controller"
    controller = service_account("kube-system", name)
    assert refusals(controller, "CREATE", "", "pods", created_pod) == []


def test_a_bare_pod_without_a_queue_label_is_gated_and_passes():
    bare = created()
    assert "kueue.x-k8s.io/queue-name" not in bare["metadata"].get("labels", {})
    assert gates(bare) == [ADMISSION_SCHEDULING_GATE]
    for who in IDENTITIES.values():
        assert refusals(who, "CREATE", "", "pods", bare) == []


@pytest.mark.parametrize(
    "user, owner, admitted",
    [
        (JOB_CONTROLLER, ("batch/v1", "Job"), True),
        (User("system:kube-controller-manager", ()), ("batch/v1", "Job"), True),
        # The Job branch is the Job controller's and a Job's only.
        (REPLICA_SET_CONTROLLER, ("batch/v1", "Job"), False),
        (KUEUE, ("batch/v1", "Job"), False),
        (JOB_CONTROLLER, ("apps/v1", "ReplicaSet"), False),
        (JOB_CONTROLLER, ("batch/v2", "Job"), False),
        (JOB_CONTROLLER, ("jobset.x-k8s.io/v1alpha2", "JobSet"), False),
    ],
    ids=["job-controller", "kube-controller-manager", "replicaset-controller", "kueue", "replicaset-owner",
         "other-version", "jobset-owner"],
)
def test_an_ungated_pod_passes_only_as_a_jobs_created_by_the_job_controller(user, owner, admitted):
    api_version, kind = owner
    ungated = pod(metadata={"ownerReferences": [{"apiVersion": api_version, "kind": kind, "name": "o", "uid": "u",
                                                 "controller": True}]})
    denied = refusals(user, "CREATE", "", "pods", ungated)
    gated_policy = [d for d in denied if d.startswith("pods in tenant namespaces wait for Kueue")]
    assert (gated_policy == []) is admitted


def test_a_pod_taking_devices_through_a_claim_template_passes():
    claimed = created(resourceClaims=[{"name": "gpus", "resourceClaimTemplateName": "one-gpu"}])
    assert refusals(ADMIN, "CREATE", "", "pods", claimed) == []


# --- stopping ------------------------------------------------------------------------------------------


def test_the_platforms_model_servers_stop_within_the_cap_and_pass_every_pod_guard():
    """Each inference Deployment the render declares in a tenant namespace, its pods as the ReplicaSet controller
    creates them after Kueue's webhooks."""
    objects = rendered()
    tenants = {o["metadata"]["name"]: o["metadata"]["labels"] for o in objects
               if o["kind"] == "Namespace" and TENANT_LABEL in o["metadata"].get("labels", {})}
    deployments = [o for o in objects if o["kind"] == "Deployment" and o["metadata"].get("namespace") in tenants]
    assert deployments, "the fixture declares inference Deployments in tenant namespaces"
    for deployment in deployments:
        managed = kueue_defaults("template", {**deployment, "metadata": {**deployment["metadata"], "uid": "d"}})
        replica_set: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                   "metadata": {"name": "rs", "uid": "rs", "ownerReferences": [reference(managed)]},
                                   "spec": {"template": managed["spec"]["template"]}}
        created_pod = kueue_defaults("pod", pod_of(replica_set, replica_set["spec"]["template"]), managed, replica_set)
        assert 0 < created_pod["spec"]["terminationGracePeriodSeconds"] <= TENANT_POD_MAX_GRACE_SECONDS
        namespace = deployment["metadata"]["namespace"]
        sent = Request("CREATE", "", "pods", namespace, REPLICA_SET_CONTROLLER, created_pod, None, tenants[namespace])
        assert admission_denials(objects, sent) == [], deployment["metadata"]["name"]


@pytest.mark.parametrize(
    "grace, refused",
    [(None, False), (0, False), (TENANT_POD_MAX_GRACE_SECONDS, False), (TENANT_POD_MAX_GRACE_SECONDS + 1, True)],
    ids=["unset", "zero", "at-the-cap", "over-the-cap"],
)
def test_a_pods_grace_period_up_to_the_cap_passes_in_its_spec_a_delete_and_an_eviction(grace, refused):
    spec = {} if grace is None else {"terminationGracePeriodSeconds": grace}
    assert bool(refusals(ADMIN, "CREATE", "", "pods", created(**spec))) is refused
    options = {"kind": "DeleteOptions"} if grace is None else {"kind": "DeleteOptions", "gracePeriodSeconds": grace}
    assert bool(refusals(ADMIN, "DELETE", "", "pods", None, admitted_job_pod(), options)) is refused
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p"},
                "deleteOptions": {} if grace is None else {"gracePeriodSeconds": grace}}
    assert bool(refusals(ADMIN, "CREATE", "", "pods/eviction", eviction)) is refused


def test_the_job_controller_and_karpenter_stop_pods_as_their_specs_say():
    job_controller_delete = {"kind": "DeleteOptions", "propagationPolicy": "Background"}
    assert refusals(JOB_CONTROLLER, "DELETE", "", "pods", None, admitted_job_pod(), job_controller_delete) == []
    karpenter = service_account("kube-system", "karpenter")
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p"}}
    assert refusals(karpenter, "CREATE", "", "pods/eviction", eviction) == []
