"""`python -m offline check-manifest`: a tenant's pre-flight check gives the right answer for every
workload in docs/tenants.md and for near misses of them, each with the line the tenant reads.

The stacks are the ones the docs name: dev as shipped, and the fixtures multi-pool (data-science:
h100-on-demand 8 + 8 borrowing, a100-spot 8, l40s-on-demand 4 + 8) and single-pool-dra.
"""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from offline import check_manifest
from offline.check_manifest import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, Cluster, Finding, check, rendered_objects, report
from offline.stack import load_stack

from .conftest import load, render_fixture, shipped_document
from .test_big_gpus import document as big_gpu_document
from .test_big_gpus import rendered as big_gpu_render
from .test_doc_snippets import SNIPPETS, rendered, stack_config, stack_crds, stack_document

EXAMPLES = [s for s in SNIPPETS if s.kind == "manifest" and s.where.startswith("docs/tenants.md")]


@functools.cache
def cluster_of(stack: str, tenant: str) -> Cluster:
    """The render's objects of a docs stack, read once per stack and tenant (checks never change them)."""
    if stack.startswith("fixture:"):
        recording = render_fixture(stack.removeprefix("fixture:"))
    else:
        recording = rendered(json.dumps(stack_document(stack), sort_keys=True))
    return Cluster.of(stack_config(stack), tenant, rendered_objects(recording), stack_crds(stack))


def example(where_prefix: str) -> tuple[str, str, dict[str, Any]]:
    """(stack, tenant, first object) of the docs/tenants.md example whose manifest names `where_prefix`."""
    for snippet in EXAMPLES:
        [obj, *_] = [o for o in yaml.safe_load_all(snippet.body) if o]
        if f"{obj['kind']}/{obj['metadata']['name']}" == where_prefix:
            return snippet.options["stack"], snippet.options["tenant"], obj
    raise KeyError(where_prefix)


def lines(stack: str, tenant: str, *objects: dict[str, Any]) -> list[Finding]:
    return check(cluster_of(stack, tenant), [("job.yaml", obj) for obj in objects])


def said(findings: list[Finding], aspect: str) -> list[str]:
    return [f"{'PROBLEM ' if f.problem else ''}{f.text}" for f in findings if f.aspect == aspect]


# --- the docs' examples --------------------------------------------------------------------------------

# workload -> what Kueue does with it, word for word up to the amounts
DOC_ANSWERS = {
    "Job/fine-tune-small": "admitted on l40s-on-demand within ml-research's nominal quota: 1 pod(s), cpu 4, memory 16Gi, "
    "nvidia.com/gpu 1",
    "TrainJob/resnet-ddp": "admitted on a100-spot within data-science's nominal quota: 8 pod(s), cpu 80, memory 960Gi, "
    "nvidia.com/gpu 8",
    "Job/notebook-alice": "admitted on h100-on-demand within data-science's nominal quota: 1 pod(s), cpu 4, memory 32Gi, "
    "nvidia.com/mig-1g.10gb 1",
    "Job/l4-eval": "admitted on l4-dra-on-demand within ml-research's nominal quota: 1 pod(s), cpu 2, "
    "gpu.nvidia.com.deviceclass.resource.k8s.io/devices 1, memory 8Gi",
    "Job/big-memory-eval": "admitted on h100-dra-on-demand within ml-research's nominal quota: 1 pod(s), cpu 2, "
    "gpu-80gb.deviceclass.resource.k8s.io/devices 1, memory 8Gi",
}


@pytest.mark.parametrize("workload", sorted(DOC_ANSWERS))
def test_every_workload_in_the_tenants_guide_is_admitted_as_the_guide_says(workload):
    stack, tenant, obj = example(workload)
    findings = lines(stack, tenant, obj)
    assert [f for f in findings if f.problem] == []
    [kueue] = [line for line in said(findings, "kueue") if line.startswith("admitted")]
    assert kueue == DOC_ANSWERS[workload]
    assert report(findings) == EXIT_OK


def test_the_guides_pod_monitor_is_checked_as_an_object_not_queued():
    stack, tenant, obj = example("PodMonitor/inference-servers")
    findings = lines(stack, tenant, obj)
    assert [(f.aspect, f.problem) for f in findings] == [("schema", False)]


def test_the_guide_starts_with_the_command():
    guide = Path(__file__).resolve().parent.parent.joinpath("docs", "tenants.md").read_text()
    first_section = guide[: guide.index("\n## ", guide.index("\n## ") + 1)]
    assert "python -m offline check-manifest --stack" in first_section


# --- near misses ---------------------------------------------------------------------------------------


def fine_tune(**changes: Any) -> dict[str, Any]:
    _, _, obj = example("Job/fine-tune-small")
    job = copy.deepcopy(obj)
    container = job["spec"]["template"]["spec"]["containers"][0]
    for key, value in changes.items():
        if key == "gpus":
            container["resources"]["requests"]["nvidia.com/gpu"] = value
            container["resources"]["limits"]["nvidia.com/gpu"] = value
        elif key == "labels":
            job["metadata"]["labels"] = value
        elif key == "env":
            container["env"] = value
        elif key == "securityContext":
            container["securityContext"] = value
    return job


def test_gpus_within_nominal_then_by_borrowing_then_never():
    """dev's ml-research: l40s-on-demand 12 nominal + 4 borrowing; l40s-spot 4; each slice a GPU request."""
    assert said(lines("dev", "ml-research", fine_tune(gpus=12)), "kueue")[0].startswith(
        "admitted on l40s-on-demand within ml-research's nominal quota"
    )
    [borrowing] = said(lines("dev", "ml-research", fine_tune(gpus=16)), "kueue")
    assert borrowing.startswith("admitted on l40s-on-demand only by borrowing")
    # inference holds 12 there and lends at most 4 (its lendingLimit).
    assert borrowing.endswith("lenders: nvidia.com/gpu on l40s-on-demand from inference 4")
    [never] = said(lines("dev", "ml-research", fine_tune(gpus=17)), "kueue")
    assert never == (
        "PROBLEM never admitted: no flavor of ClusterQueue ml-research that its node selector allows (cpu, "
        "l40s-on-demand, l40s-spot) can ever hold its 1 pod(s): cpu 4, memory 16Gi, nvidia.com/gpu 17; fix: fit what "
        "one flavor can ever hold for ml-research, nominal + borrowingLimit (cpu: cpu 32, memory 128Gi, nvidia.com/gpu 0; "
        "l40s-on-demand: cpu 256, memory 2048Gi, nvidia.com/gpu 16; l40s-spot: cpu 64, memory 512Gi, nvidia.com/gpu 4)"
    )


def test_a_node_selector_keeps_a_job_off_the_flavors_it_excludes():
    """12 slices fit l40s-on-demand's nominal quota, but a selector on spot leaves l40s-spot, which holds 4, and
    the cpu flavor, whose nodeLabels do not set the key (Kueue keeps only the keys each flavor sets), which holds 0."""
    job = fine_tune(gpus=12)
    job["spec"]["template"]["spec"]["nodeSelector"] = {"karpenter.sh/capacity-type": "spot"}
    [never] = said(lines("dev", "ml-research", job), "kueue")
    assert never.startswith("PROBLEM never admitted: no flavor of ClusterQueue ml-research that its node selector "
                            "allows (cpu, l40s-spot) can ever hold its 1 pod(s)")
    job["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = 4
    assert said(lines("dev", "ml-research", job), "kueue")[0].startswith("admitted on l40s-spot within")


def test_a_mig_profile_the_pool_lacks_is_never_admitted_and_the_fix_names_what_is_handed_out():
    _, _, obj = example("Job/notebook-alice")
    job = json.loads(json.dumps(obj).replace("nvidia.com/mig-1g.10gb", "nvidia.com/mig-1g.20gb"))
    *_, kueue = said(lines("fixture:multi-pool", "data-science", job), "kueue")
    assert kueue.startswith("PROBLEM never admitted: resources not covered by ClusterQueue data-science: "
                            "nvidia.com/mig-1g.20gb;")
    assert "nvidia.com/mig-1g.10gb, nvidia.com/mig-2g.20gb, nvidia.com/mig-3g.40gb" in kueue


def test_a_claim_of_a_device_class_without_quota_is_never_admitted():
    _, _, obj = example("Job/l4-eval")
    job = copy.deepcopy(obj)
    job["spec"]["template"]["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] = "own-mig"
    own = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "own-mig", "namespace": "ml-research"},
        "spec": {"spec": {"devices": {"requests": [{"name": "mig", "exactly": {"deviceClassName": "mig.nvidia.com"}}]}}},
    }
    findings = lines("fixture:single-pool-dra", "ml-research", own, job)
    *_, kueue = said([f for f in findings if f.workload.endswith("Job/l4-eval")], "kueue")
    # Kueue maps the MIG DeviceClass to a quota resource, and ml-research has no quota on it.
    assert kueue == (
        "PROBLEM never admitted: resources not covered by ClusterQueue ml-research: "
        "mig.nvidia.com.deviceclass.resource.k8s.io/devices; fix: request what ml-research's flavors hand out "
        "(gpu.nvidia.com.deviceclass.resource.k8s.io/devices, nvidia.com/gpu)"
    )


def test_an_nvidia_variable_is_refused_by_the_admission_guard():
    findings = lines("dev", "ml-research", fine_tune(env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]))
    [policy] = said(findings, "policies")
    assert policy.startswith("PROBLEM an admission guard refuses it: ")
    assert "NVIDIA_" in policy
    assert report(findings) == EXIT_FINDINGS


def test_a_pod_priority_class_in_the_template_is_refused_by_the_admission_guard():
    job = fine_tune()
    job["spec"]["template"]["spec"]["priorityClassName"] = "build"
    findings = lines("dev", "ml-research", job)
    [policy] = said(findings, "policies")
    assert policy.startswith("PROBLEM an admission guard refuses it: pods in tenant namespaces name no priorityClassName")
    assert report(findings) == EXIT_FINDINGS
    job["spec"]["template"]["spec"]["priorityClassName"] = ""
    assert said(lines("dev", "ml-research", job), "policies")[0].startswith("admitted by Pod Security")


def test_a_missing_queue_label_takes_the_default_queue_and_a_wrong_one_never_runs():
    findings = lines("dev", "ml-research", fine_tune(labels={}))
    assert said(findings, "kueue")[0] == (
        "no kueue.x-k8s.io/queue-name label: Kueue gives it the namespace's LocalQueue `default` "
        "(manageJobsWithoutQueueName and the default LocalQueue)"
    )
    assert said(findings, "kueue")[1].startswith("admitted on l40s-on-demand within ml-research's nominal quota")
    [wrong] = said(lines("dev", "ml-research", fine_tune(labels={"kueue.x-k8s.io/queue-name": "research"})), "kueue")
    assert wrong == (
        "PROBLEM never admitted: LocalQueue research does not exist in ml-research, so its Workload waits for it "
        "forever; set kueue.x-k8s.io/queue-name: default or drop the label"
    )


def test_a_privileged_container_is_refused_by_pod_security_restricted():
    context = {"privileged": True, "allowPrivilegeEscalation": True, "capabilities": {"drop": ["ALL"]}}
    findings = lines("dev", "ml-research", fine_tune(securityContext=context))
    assert said(findings, "policies") == [
        'PROBLEM Pod Security restricted refuses each of its pods: privileged (container "train" must not set '
        'securityContext.privileged=true); allowPrivilegeEscalation != false (container "train" must set '
        "securityContext.allowPrivilegeEscalation=false)"
    ]


def test_a_job_of_more_pods_than_the_resource_quota_allows_is_told_by_how_much():
    """501 small pods fit Kueue's CPU quota (5 vCPUs) but not the namespace's 500 pods."""
    job = fine_tune()
    job["spec"]["parallelism"] = 501
    container = job["spec"]["template"]["spec"]["containers"][0]
    container["resources"] = {"requests": {"cpu": "10m", "memory": "64Mi"}, "limits": {"memory": "64Mi"}}
    findings = lines("dev", "ml-research", job)
    assert said(findings, "kueue")[0].startswith("admitted on cpu within ml-research's nominal quota: 501 pod(s)")
    [quota] = said(findings, "quota")
    # The LimitRange limits each container that sets none to 10Gi of ephemeral storage: 501 x 10Gi.
    assert quota == (
        "PROBLEM exceeds ResourceQuota tenant-quota: limits.ephemeral-storage 5010Gi > 1000Gi, pods 501 > 500; "
        "with the LimitRange's defaults for containers that set none"
    )
    assert said(findings, "capacity") == ["main: the CPU pool (cpu flavor; families m7i, m6i, c7i, r7i)"]


def test_a_deployments_replicas_are_admitted_one_by_one_but_all_count_against_the_quota():
    _, _, obj = example("Job/fine-tune-small")
    pod = copy.deepcopy(obj["spec"]["template"])
    pod["spec"].pop("restartPolicy")
    pod["metadata"] = {"labels": {"app": "web"}}
    pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "10m", "memory": "64Mi"}, "limits": {"memory": "64Mi"}}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ml-research"},
        "spec": {"replicas": 600, "selector": {"matchLabels": {"app": "web"}}, "template": pod},
    }
    findings = lines("dev", "ml-research", deployment)
    assert said(findings, "kueue")[1].startswith(
        "admitted on cpu within ml-research's nominal quota: 1 pod(s) (each replica a Workload of its own)"
    )
    [quota] = said(findings, "quota")
    assert quota.startswith(
        "PROBLEM exceeds ResourceQuota tenant-quota: limits.ephemeral-storage 6000Gi > 1000Gi, pods 600 > 500"
    )


def kinds_of(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A JobSet, a Deployment and a bare Pod running `template`'s pod in ml-research."""
    meta = {"name": "w", "namespace": "ml-research"}
    spec = copy.deepcopy(template["spec"])
    return {
        "JobSet": {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": meta,
                   "spec": {"replicatedJobs": [{"name": "w", "replicas": 1, "template": {"spec": {"template": template}}}]}},
        "Deployment": {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
                       "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "w"}},
                                "template": {"metadata": {"labels": {"app": "w"}}, "spec": {**spec, "restartPolicy": "Always"}}}},
        "Pod": {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec},
    }


@pytest.mark.parametrize("kind", ["JobSet", "Deployment", "Pod"])
def test_each_kind_passes_the_guards_as_kueues_webhooks_and_its_controllers_leave_it(kind):
    """The guards see objects after Kueue's mutating webhooks: a JobSet created suspended, its pods a Job's
    made by the Job controller; a Deployment's and a bare Pod's pods gated."""
    _, _, job = example("Job/fine-tune-small")
    [policy] = said(lines("dev", "ml-research", kinds_of(job["spec"]["template"])[kind]), "policies")
    assert policy == "admitted by Pod Security restricted and the admission guards"


@pytest.mark.parametrize("kind", ["JobSet", "Deployment", "Pod"])
def test_a_pod_naming_a_resource_claim_is_refused_whatever_makes_it(kind):
    _, _, job = example("Job/fine-tune-small")
    template = copy.deepcopy(job["spec"]["template"])
    template["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "mine"}]
    policies = said(lines("dev", "ml-research", kinds_of(template)[kind]), "policies")
    assert [p for p in policies if "resourceClaimName" in p] == [
        "PROBLEM an admission guard refuses it: pods in tenant namespaces take DRA devices through "
        "resourceClaims[].resourceClaimTemplateName, which Kueue charges to the tenant's quota; a named "
        "ResourceClaim (resourceClaimName) is not charged, and Kueue never admits a workload whose pods name one"
    ]


# --- the command line ----------------------------------------------------------------------------------


def test_an_unknown_tenant_or_an_unreadable_file_exits_2(tmp_path, monkeypatch, capsys):
    # dev as shipped, in a project of its own: the command reads the stack file the way a tenant runs it.
    (tmp_path / "Pulumi.dev.yaml").write_text(yaml.safe_dump({"config": shipped_document("dev")}))
    monkeypatch.setattr("offline.stack.load_stack", functools.partial(load_stack, project_dir=tmp_path))
    manifest = tmp_path / "job.yaml"
    manifest.write_text("kind: Job\n")
    assert check_manifest.main("dev", "nobody", [manifest]) == EXIT_USAGE
    assert "has no tenant nobody (tenants: " in capsys.readouterr().err
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: [Job\n")
    assert check_manifest.main("dev", "ml-research", [broken]) == EXIT_USAGE
    assert str(broken) in capsys.readouterr().err


def test_the_report_counts_objects_and_problems(capsys):
    findings = [Finding("a.yaml: Job/x", "schema", "valid"), Finding("a.yaml: Job/y", "kueue", "never", True)]
    assert report(findings) == EXIT_FINDINGS
    assert capsys.readouterr().out.splitlines()[-1] == "2 objects checked, 1 problem"


# --- migStrategy single: nvidia.com/gpu names two things ---------------------------------------------------


@functools.cache
def big_gpu_cluster() -> Cluster:
    """big-gpu's llm-training: quota on h100-on-demand (MIG single, 1g.10gb x 7) first, then h200-reserved."""
    return Cluster.of(load(big_gpu_document()), "llm-training", rendered_objects(big_gpu_render()), stack_crds("dev"))


def whole_gpu_job(node_selector: dict[str, str] | None = None) -> dict[str, Any]:
    job = fine_tune(gpus=8)
    job["metadata"]["namespace"] = "llm-training"
    if node_selector:
        job["spec"]["template"]["spec"]["nodeSelector"] = node_selector
    return job


def test_under_mig_single_a_pod_selecting_no_pool_gets_mig_devices_and_is_told_how_to_get_whole_gpus():
    # Kueue tries h100-on-demand first; its 112 nvidia.com/gpu are 1g.10gb devices, and 8 of them fit.
    findings = check(big_gpu_cluster(), [("job.yaml", whole_gpu_job())])
    admitted, note = said(findings, "kueue")
    assert admitted.startswith("admitted on h100-on-demand within llm-training's nominal quota")
    assert note == (
        "on h100-on-demand each nvidia.com/gpu of PodSet main is a MIG device (1g.10gb; migStrategy single), not a "
        "whole GPU; if you meant whole GPUs, add nodeSelector gpu-platform/node-pool: gpu-h200"
    )


def test_under_mig_single_a_pod_selecting_the_whole_gpu_pool_gets_whole_gpus():
    findings = check(big_gpu_cluster(), [("job.yaml", whole_gpu_job({"gpu-platform/node-pool": "gpu-h200"}))])
    [admitted] = said(findings, "kueue")
    assert admitted.startswith("admitted on h200-reserved within llm-training's nominal quota")


def test_only_the_resources_above_nominal_are_borrowed_and_name_their_lenders():
    """dev's ml-research on l40s-on-demand: nominal cpu 192 and 12 GPUs. A job asking exactly the nominal cpu
    and 16 GPUs borrows GPUs only; cpu at its nominal is its own (Kueue borrows what exceeds nominalQuota,
    pkg/cache/scheduler/clusterqueue_snapshot.go Borrowing)."""
    job = fine_tune(gpus=16)
    container = job["spec"]["template"]["spec"]["containers"][0]
    container["resources"]["requests"]["cpu"] = "192"
    container["resources"]["limits"]["cpu"] = "192"
    [borrowing] = said(lines("dev", "ml-research", job), "kueue")
    assert borrowing == (
        "admitted on l40s-on-demand only by borrowing (1 pod(s), cpu 192, memory 16Gi, nvidia.com/gpu 16; above the "
        "nominal quota: nvidia.com/gpu 16 of 12 on l40s-on-demand): it waits until the cohort has that much idle; "
        "lenders: nvidia.com/gpu on l40s-on-demand from inference 4"
    )


def test_a_workload_aimed_at_another_tenants_namespace_is_a_problem():
    """`kubectl apply` of a manifest naming another tenant's namespace is refused there by RBAC; the check
    says so before, with the fix. Its own namespace, or none, is not a problem."""
    job = fine_tune(gpus=1)
    job["metadata"]["namespace"] = "inference"
    assert said(lines("dev", "ml-research", job), "namespace") == [
        "PROBLEM inference is not tenant ml-research's namespace (ml-research): set metadata.namespace to ml-research"
    ]
    job["metadata"]["namespace"] = "ml-research"
    assert said(lines("dev", "ml-research", job), "namespace") == []
    del job["metadata"]["namespace"]
    assert said(lines("dev", "ml-research", job), "namespace") == ["none set: apply it with `kubectl -n ml-research`"]


# --- JobSets, several PodSets, the exact quota limit, time-sliced slices ----------------------------------


def pod_template(cpu: str, memory: str, gpus: int = 0, selector: dict[str, str] | None = None) -> dict[str, Any]:
    """The guide's fine-tune pod with other requests (and a node selector)."""
    _, _, obj = example("Job/fine-tune-small")
    pod = copy.deepcopy(obj["spec"]["template"])
    requests: dict[str, Any] = {"cpu": cpu, "memory": memory}
    limits: dict[str, Any] = {"memory": memory}
    if gpus:
        requests["nvidia.com/gpu"] = limits["nvidia.com/gpu"] = gpus
    pod["spec"]["containers"][0]["resources"] = {"requests": requests, "limits": limits}
    if selector:
        pod["spec"]["nodeSelector"] = selector
    return pod


def replicated(name: str, replicas: int, parallelism: int, pod: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "replicas": replicas,
            "template": {"spec": {"parallelism": parallelism, "completions": parallelism, "template": pod}}}


def jobset(*jobs: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "ddp", "namespace": "ml-research"}, "spec": {"replicatedJobs": list(jobs)}}


def test_a_jobsets_pods_are_replicas_times_parallelism_of_each_replicated_job():
    """driver: 1 x 1 pod of 2 CPUs; workers: 2 replicas x 3 pods of 5 CPUs and 3 slices each = 6 pods, 18 slices,
    over l40s-on-demand's 12 + 4: never. With 2 pods per replica: 4 pods, 12 slices, at the nominal exactly."""
    workers = replicated("workers", 2, 3, pod_template("5", "20Gi", gpus=3))
    driver = replicated("driver", 1, 1, pod_template("2", "4Gi"))
    [never] = said(lines("dev", "ml-research", jobset(driver, workers)), "kueue")[1:]
    assert never == (
        "PROBLEM never admitted: no flavor of ClusterQueue ml-research that the node selector of PodSet workers allows "
        "(cpu, l40s-on-demand, l40s-spot) can ever hold its 6 pod(s): cpu 30, memory 120Gi, nvidia.com/gpu 18; fix: fit "
        "what one flavor can ever hold for ml-research, nominal + borrowingLimit (cpu: cpu 32, memory 128Gi, "
        "nvidia.com/gpu 0; l40s-on-demand: cpu 256, memory 2048Gi, nvidia.com/gpu 16; l40s-spot: cpu 64, memory 512Gi, "
        "nvidia.com/gpu 4)"
    )
    workers["template"]["spec"]["parallelism"] = workers["template"]["spec"]["completions"] = 2
    findings = lines("dev", "ml-research", jobset(driver, workers))
    assert said(findings, "kueue")[1] == (
        "admitted on cpu, l40s-on-demand within ml-research's nominal quota: 5 pod(s), cpu 22, memory 84Gi, nvidia.com/gpu 12"
    )
    [quota] = said(findings, "quota")
    assert quota == (
        "fits ResourceQuota tenant-quota with the LimitRange's defaults (limits.ephemeral-storage 50Gi of 1000Gi, "
        "limits.memory 84Gi of 2688Gi, pods 5 of 500, requests.cpu 22 of 352, requests.ephemeral-storage 5Gi of 1000Gi, "
        "requests.memory 84Gi of 2688Gi, requests.nvidia.com/gpu 12 of 20)"
    )


def test_a_jobset_of_sixteen_slices_borrows_the_four_above_nominal():
    """4 replicas x 1 pod x 4 slices: 16 on l40s-on-demand, 4 over its nominal 12, lent by inference."""
    workers = replicated("workers", 4, 1, pod_template("3", "10Gi", gpus=4))
    [borrowing] = said(lines("dev", "ml-research", jobset(workers)), "kueue")[1:]
    assert borrowing == (
        "admitted on l40s-on-demand only by borrowing (4 pod(s), cpu 12, memory 40Gi, nvidia.com/gpu 16; above the "
        "nominal quota: nvidia.com/gpu 16 of 12 on l40s-on-demand): it waits until the cohort has that much idle; "
        "lenders: nvidia.com/gpu on l40s-on-demand from inference 4"
    )


def test_only_the_flavors_the_failing_podsets_selector_allows_are_named():
    """The driver selects on-demand and fits the cpu flavor; the workers select spot: l40s-spot holds 4 slices of
    their 2 x 4. The line names the workers' flavors (cpu, l40s-spot), never l40s-on-demand, which their selector
    excludes, nor only the flavors both PodSets allow."""
    driver = replicated("driver", 1, 1, pod_template("2", "4Gi", selector={"karpenter.sh/capacity-type": "on-demand"}))
    workers = replicated("workers", 1, 2, pod_template("6", "24Gi", gpus=4, selector={"karpenter.sh/capacity-type": "spot"}))
    [never] = said(lines("dev", "ml-research", jobset(driver, workers)), "kueue")[1:]
    assert never == (
        "PROBLEM never admitted: no flavor of ClusterQueue ml-research that the node selector of PodSet workers allows "
        "(cpu, l40s-spot) can ever hold its 2 pod(s): cpu 12, memory 48Gi, nvidia.com/gpu 8; fix: fit what one flavor "
        "can ever hold for ml-research, nominal + borrowingLimit (cpu: cpu 32, memory 128Gi, nvidia.com/gpu 0; "
        "l40s-spot: cpu 64, memory 512Gi, nvidia.com/gpu 4)"
    )


def test_a_job_that_exactly_fills_the_resource_quota_fits_and_one_more_pod_does_not():
    """The LimitRange limits each container that sets none to 10Gi of scratch: 100 pods are 1000Gi, the hard limit."""
    job = fine_tune()
    job["spec"]["parallelism"] = 100
    job["spec"]["template"] = pod_template("10m", "64Mi")
    [quota] = said(lines("dev", "ml-research", job), "quota")
    assert quota == (
        "fits ResourceQuota tenant-quota with the LimitRange's defaults (limits.ephemeral-storage 1000Gi of 1000Gi, "
        "limits.memory 6.25Gi of 2688Gi, pods 100 of 500, requests.cpu 1 of 352, requests.ephemeral-storage 100Gi of "
        "1000Gi, requests.memory 6.25Gi of 2688Gi)"
    )
    job["spec"]["parallelism"] = 101
    [quota] = said(lines("dev", "ml-research", job), "quota")
    assert quota.startswith("PROBLEM exceeds ResourceQuota tenant-quota: limits.ephemeral-storage 1010Gi > 1000Gi; ")


@pytest.mark.parametrize(
    ("slices", "types"),
    [
        # 4 slices are one L40S: every g6e type with the CPU and memory; 5 need two GPUs: the 4- and 8-GPU types.
        (4, "g6e.xlarge, g6e.2xlarge, g6e.4xlarge, g6e.8xlarge, g6e.12xlarge, g6e.16xlarge, g6e.24xlarge, g6e.48xlarge"),
        (5, "g6e.12xlarge, g6e.24xlarge, g6e.48xlarge"),
    ],
)
def test_on_a_time_sliced_pool_a_node_holds_four_slices_per_gpu(slices, types):
    job = fine_tune()
    job["spec"]["template"] = pod_template("3", "8Gi", gpus=slices)
    assert said(lines("dev", "ml-research", job), "capacity") == [f"main: pool gpu-l40s, instance types {types}"]


# --- spot capacity without a choice -------------------------------------------------------------------


def notebook(selector: dict[str, str] | None = None) -> dict[str, Any]:
    job = fine_tune()
    job["metadata"]["namespace"] = "data-science"
    job["spec"]["template"] = pod_template("4", "16Gi", gpus=1, selector=selector)
    return job


def test_a_notebook_without_a_selector_lands_on_spot_a100s_and_is_told_how_to_get_on_demand():
    """multi-pool's data-science: h100-on-demand hands out MIG devices, so one nvidia.com/gpu goes to a100-spot
    (a spot-only pool). A capacity-type selector would not move it (a100-spot's node labels do not set the key,
    so Kueue keeps it); selecting l40s-on-demand's pool does."""
    admitted, warning = said(lines("fixture:multi-pool", "data-science", notebook()), "kueue")
    assert admitted.startswith("admitted on a100-spot within data-science's nominal quota")
    assert warning == (
        "PodSet main lands on spot capacity (flavor a100-spot): its pods can be stopped with 2 minutes' notice; for "
        "on-demand nodes add nodeSelector gpu-platform/node-pool: gpu-l40s (flavor l40s-on-demand)"
    )


def test_a_workload_that_chose_spot_is_not_warned():
    findings = lines("fixture:multi-pool", "data-science", notebook({"karpenter.sh/capacity-type": "spot"}))
    [admitted] = said(findings, "kueue")
    assert admitted.startswith("admitted on a100-spot within")


def test_a_podset_pushed_to_spot_by_the_others_is_warned_when_no_on_demand_flavor_holds_it():
    """dev: the workers take all 16 slices l40s-on-demand can ever hold (12 + 4); the eval PodSet's 2 slices fit
    only l40s-spot, and with an on-demand selector nowhere."""
    workers = replicated("workers", 4, 1, pod_template("3", "10Gi", gpus=4))
    evaluation = replicated("eval", 1, 1, pod_template("2", "8Gi", gpus=2))
    admitted, warning = said(lines("dev", "ml-research", jobset(workers, evaluation)), "kueue")[1:]
    assert admitted.startswith("admitted on l40s-on-demand, l40s-spot only by borrowing")
    assert warning == (
        "PodSet eval lands on spot capacity (flavor l40s-spot): its pods can be stopped with 2 minutes' notice; "
        "ml-research has no on-demand flavor that can hold it"
    )


def test_a_reference_to_a_runtime_or_claim_template_that_does_not_exist_is_named_with_the_fix():
    """Kueue cannot count such a workload's PodSets, so its Workload stays pending. dev declares the runtime
    torch-distributed and no claim template in ml-research."""
    trainjob = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                "metadata": {"name": "ddp", "namespace": "ml-research"}, "spec": {"runtimeRef": {"name": "torch-distributd"}}}
    assert said(lines("dev", "ml-research", trainjob), "kueue")[1:] == [
        "PROBLEM never admitted: ClusterTrainingRuntime torch-distributd does not exist; fix: set spec.runtimeRef.name "
        "to one the platform declares (torch-distributed); did you mean torch-distributed?"
    ]
    job = fine_tune()
    pod = job["spec"]["template"]["spec"]
    pod["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-l4"}]
    pod["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    assert said(lines("dev", "ml-research", job), "kueue") == [
        "PROBLEM never admitted: ResourceClaimTemplate one-l4 does not exist in ml-research; fix: use one the platform "
        "declares or include yours in the files checked (declared: none)"
    ]


def test_an_object_named_by_generate_name_is_shown_with_a_star():
    job = fine_tune()
    del job["metadata"]["name"]
    job["metadata"]["generateName"] = "sweep-"
    assert {f.workload for f in lines("dev", "ml-research", job)} == {"job.yaml: Job/sweep-*"}


def test_a_null_field_is_an_unset_field():
    """The API server decodes `null` as not set: the pod's seccompProfile is then missing (Pod Security restricted
    refuses it) and the memory request is the LimitRange's default, 256Mi."""
    job = fine_tune()
    job["spec"]["template"]["spec"]["securityContext"]["seccompProfile"] = None
    job["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["memory"] = None
    findings = lines("dev", "ml-research", job)
    assert said(findings, "policies") == [
        'PROBLEM Pod Security restricted refuses each of its pods: seccompProfile (pod or container "train" must set '
        'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")'
    ]
    assert said(findings, "kueue") == [
        "admitted on l40s-on-demand within ml-research's nominal quota: 1 pod(s), cpu 4, memory 0.25Gi, nvidia.com/gpu 1"
    ]


def test_a_claim_template_the_model_cannot_count_is_not_judged_and_says_why():
    _, _, obj = example("Job/l4-eval")
    job = copy.deepcopy(obj)
    job["spec"]["template"]["spec"]["resourceClaims"][0]["resourceClaimTemplateName"] = "any-gpu"
    own = {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": "any-gpu", "namespace": "ml-research"},
        "spec": {"spec": {"devices": {"requests": [
            {"name": "gpu", "firstAvailable": [{"name": "l4", "deviceClassName": "gpu.nvidia.com"}]}
        ]}}},
    }
    findings = lines("fixture:single-pool-dra", "ml-research", own, job)
    assert said([f for f in findings if f.workload.endswith("Job/l4-eval")], "kueue")[-1] == (
        "PROBLEM not judged: the model reads `exactly` device requests only, not request gpu's"
    )


def test_a_schema_problem_names_the_field_as_the_other_lines_do():
    job = fine_tune()
    job["spec"]["template"]["spec"]["containers"][0]["gpus"] = 1
    assert said(lines("dev", "ml-research", job), "schema") == [
        "PROBLEM spec.template.spec.containers[0].gpus: unknown field (the API server would drop it)"
    ]


def test_a_misspelt_tier_is_never_admitted_and_the_fix_names_the_closest_tier():
    """dev's tiers are the WorkloadPriorityClasses best-effort, production and standard; Kueue creates no
    Workload for a job whose priority-class label names none of them."""
    job = fine_tune(labels={"kueue.x-k8s.io/queue-name": "default", "kueue.x-k8s.io/priority-class": "standrd"})
    assert said(lines("dev", "ml-research", job), "kueue") == [
        "PROBLEM never admitted: WorkloadPriorityClass standrd does not exist; fix: set kueue.x-k8s.io/priority-class "
        "to one of the tiers (best-effort, production, standard); did you mean standard?"
    ]
    job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "production"
    assert said(lines("dev", "ml-research", job), "kueue")[0].startswith("admitted on l40s-on-demand within")


def test_a_node_selector_naming_a_pool_that_does_not_exist_gets_the_closest_pool():
    """Every flavor, cpu too, sets the pool label, so the selector leaves none."""
    job = fine_tune(gpus=2)
    job["spec"]["template"]["spec"]["nodeSelector"] = {"gpu-platform/node-pool": "gpu-l40"}
    assert said(lines("dev", "ml-research", job), "kueue") == [
        "PROBLEM never admitted: no flavor of ClusterQueue ml-research that its node selector allows (none) can ever "
        "hold its 1 pod(s): cpu 4, memory 16Gi, nvidia.com/gpu 2; fix: nodeSelector gpu-platform/node-pool: gpu-l40 "
        "names no pool; did you mean gpu-l40s? (pools: gpu-l40s)"
    ]
