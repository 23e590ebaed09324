"""Kueue's mutating webhooks (models/kueue/webhooks.py) against the cases kubernetes-sigs/kueue v0.19.2 writes
beside FindAncestorJobManagedByKueue (pkg/controller/jobframework/reconciler.go, its doc comment) and
what its pod, job and Deployment webhooks do with them."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from models.kueue.webhooks import default_job, default_pod, default_pod_template_owner, managed_ancestor

ALL = ("batch/job", "jobset.x-k8s.io/jobset", "workload.codeflare.dev/appwrapper", "pod", "deployment", "statefulset")
WITHOUT_JOBSET = tuple(f for f in ALL if f != "jobset.x-k8s.io/jobset")
KINDS = {
    "Job": "batch/v1",
    "JobSet": "jobset.x-k8s.io/v1alpha2",
    "AppWrapper": "workload.codeflare.dev/v1beta2",
    "ReplicaSet": "apps/v1",
    "Deployment": "apps/v1",
    "CronJob": "batch/v1",
}


def chain(*links: str) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """`Job`, `JobSet+q` (with a queue name), ...: the first owned by the second, and so on; returns the first
    and every object by UID."""
    objects: list[dict[str, Any]] = []
    for position, link in enumerate(links):
        kind, _, queue = link.partition("+")
        labels = {"kueue.x-k8s.io/queue-name": "default"} if queue else {}
        objects.append({"apiVersion": KINDS[kind], "kind": kind, "metadata": {"name": f"{kind.lower()}-{position}",
                                                                           "uid": f"uid-{position}", "labels": labels}})
    for child, owner in itertools.pairwise(objects):
        child["metadata"]["ownerReferences"] = [{"apiVersion": owner["apiVersion"], "kind": owner["kind"],
                                                 "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
                                                 "controller": True}]
    return objects[0], {o["metadata"]["uid"]: o for o in objects}


# (links, frameworks, manageJobsWithoutQueueName, the ancestor's kind or None): the doc comment's examples.
ANCESTORS = [
    (("Job", "JobSet", "AppWrapper"), ALL, False, None),
    (("Job+q", "JobSet+q", "AppWrapper"), ALL, False, "JobSet"),
    (("Job+q", "JobSet", "AppWrapper+q"), ALL, False, "AppWrapper"),
    (("Job+q", "JobSet+q", "AppWrapper+q"), ALL, False, "AppWrapper"),
    (("Job", "JobSet", "AppWrapper+q"), WITHOUT_JOBSET, False, "AppWrapper"),
    (("Job", "JobSet", "AppWrapper"), ALL, True, "AppWrapper"),
    (("Job+q", "JobSet+q", "AppWrapper"), ALL, True, "AppWrapper"),
    (("Job", "JobSet", "AppWrapper"), WITHOUT_JOBSET, True, "AppWrapper"),
    # The walk crosses a ReplicaSet (isKnownOwner) and stops at a kind no integration registers.
    (("Job", "ReplicaSet", "Deployment"), ALL, True, "Deployment"),
    (("Job", "CronJob"), ALL, True, None),
    (("Job", "JobSet"), ("batch/job",), True, None),
]


@pytest.mark.parametrize("links, frameworks, without_queue_name, expected", ANCESTORS,
                         ids=[f"{'-'.join(c[0])}-{len(c[1])}-{c[2]}" for c in ANCESTORS])
def test_the_managed_ancestor_is_kueues(links, frameworks, without_queue_name, expected):
    first, by_uid = chain(*links)
    found = managed_ancestor(first, by_uid, frameworks, without_queue_name)
    assert (found and found["kind"]) == expected


def test_an_owner_reference_whose_uid_names_no_such_object_stops_the_walk():
    first, by_uid = chain("Job", "JobSet")
    first["metadata"]["ownerReferences"][0]["uid"] = "forged"
    assert managed_ancestor(first, by_uid, ALL, True) is None
    renamed, by_uid = chain("Job", "JobSet")
    renamed["metadata"]["ownerReferences"][0]["name"] = "another"
    assert managed_ancestor(renamed, by_uid, ALL, True) is None


def test_only_a_controller_reference_is_followed():
    first, by_uid = chain("Job", "JobSet")
    first["metadata"]["ownerReferences"][0]["controller"] = False
    assert managed_ancestor(first, by_uid, ALL, True) is None


def test_a_top_level_job_is_created_suspended_and_one_under_a_managed_owner_is_not():
    top, _ = chain("Job")
    assert default_job(top, {}, ALL, True)["spec"] == {"suspend": True}
    assert "suspend" not in default_job(top, {}, ALL, False).get("spec", {})
    queued, _ = chain("Job+q")
    assert default_job(queued, {}, ALL, False)["spec"] == {"suspend": True}
    owned, by_uid = chain("Job", "JobSet")
    assert "suspend" not in default_job(owned, by_uid, ALL, True).get("spec", {})


def test_the_pod_webhook_gates_unless_a_managed_ancestor_and_no_parent_annotation():
    gate = [{"name": "kueue.x-k8s.io/admission"}]
    bare = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "uid": "p"}, "spec": {}}
    gated = default_pod(bare, {}, ALL, True)
    assert gated["spec"]["schedulingGates"] == gate
    assert gated["metadata"]["labels"] == {"kueue.x-k8s.io/managed": "true"}
    assert gated["metadata"]["finalizers"] == ["kueue.x-k8s.io/managed"]
    assert "schedulingGates" not in default_pod(bare, {}, ALL, False)["spec"]
    job, by_uid = chain("Job")
    owned: dict[str, Any] = {**bare, "metadata": {"name": "p", "uid": "p", "ownerReferences": [
        {"apiVersion": "batch/v1", "kind": "Job", "name": job["metadata"]["name"], "uid": "uid-0", "controller": True}]}}
    assert "schedulingGates" not in default_pod(owned, by_uid, ALL, True)["spec"]
    marked = {**owned, "metadata": {**owned["metadata"], "annotations": {"kueue.x-k8s.io/pod-suspending-parent": "deployment"}}}
    marked_pod = default_pod(marked, by_uid, ALL, True)
    assert marked_pod["spec"]["schedulingGates"] == gate
    assert "finalizers" not in marked_pod["metadata"]  # the parent's pods get no finalizer (suspendByParent)


def test_deployment_and_statefulset_templates_are_marked_and_other_kinds_are_not():
    template = {"spec": {"template": {"metadata": {"labels": {"app": "a"}}, "spec": {}}}}
    deployment = default_pod_template_owner({"apiVersion": "apps/v1", "kind": "Deployment", **template}, ALL)
    assert deployment["spec"]["template"]["metadata"] == {
        "labels": {"app": "a", "kueue.x-k8s.io/managed": "true"},
        "annotations": {"kueue.x-k8s.io/pod-suspending-parent": "deployment"},
    }
    statefulset = default_pod_template_owner({"apiVersion": "apps/v1", "kind": "StatefulSet", **template}, ALL)
    assert statefulset["spec"]["template"]["metadata"] == {
        "labels": {"app": "a"},
        "annotations": {"kueue.x-k8s.io/pod-suspending-parent": "statefulset"},
    }
    # A StatefulSet another framework (LeaderWorkerSet) marked is left to it.
    other = {"metadata": {"annotations": {"kueue.x-k8s.io/pod-suspending-parent": "leaderworkerset"}}, "spec": {}}
    lws_owned = default_pod_template_owner({"apiVersion": "apps/v1", "kind": "StatefulSet", "spec": {"template": other}}, ALL)
    assert lws_owned["spec"]["template"]["metadata"] == other["metadata"]
    replica_set = default_pod_template_owner({"apiVersion": "apps/v1", "kind": "ReplicaSet", **template}, ALL)
    assert replica_set["spec"]["template"]["metadata"] == {"labels": {"app": "a"}}
    unlisted = default_pod_template_owner({"apiVersion": "apps/v1", "kind": "Deployment", **template}, ("batch/job",))
    assert unlisted["spec"]["template"]["metadata"] == {"labels": {"app": "a"}}
