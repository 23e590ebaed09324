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
  a warning when a PodSet that names no capacity type lands on spot, with the selector for on-demand;
- quota: its pods, after the LimitRange's defaults (models.kubernetes.limitranger), against the ResourceQuota;
- capacity: the pool and instance types that can run each of its pods;
- kai: on a pool the KAI Scheduler schedules, what KAI's admission and the tenant's KAI Queue make of it
  (offline/manifest_kai.py).

Reading the files: offline/manifest_files.py; the render and config a workload meets:
offline/manifest_cluster.py; kueue, quota and capacity: offline/manifest_kueue.py.

One line per finding, then a count; exit 0 when nothing would refuse or strand it, 1 when something
would, 2 when the stack, the tenant or a file cannot be read (as `validate`): a file out of
offline/manifest_files.py's bounds, a document that is not a Kubernetes object, or a workload field of a
shape the API server would not decode, one line each, before anything is rendered.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from config import ConfigError
from config.errors import counted, did_you_mean
from models.kubernetes.admission import Request, admission_denials
from models.kubernetes.podsecurity import ENFORCE_LABEL, ENFORCE_VERSION_LABEL, LATEST, violations
from models.kubernetes.user import User, service_account
from models.kueue.webhooks import default_job, default_pod, default_pod_template_owner
from models.kueue.workload import Tenancy

from .builtin_kinds import is_built_in_group
from .manifest_cluster import Cluster, Finding, pod_templates, rendered_objects
from .manifest_files import MAX_NODES, MAX_RUN_NODES, Unreadable, read_manifest
from .manifest_kai import as_kais_webhook_hands_it_on, kai_findings
from .manifest_kueue import kueue_quota_capacity
from .openapi import describe, dotted, quantity_problem, type_name
from .validate import CustomResourceDefinitions, object_findings

__all__ = ["Cluster", "Finding", "check", "main", "read_documents", "rendered_objects", "report", "unjudgeable"]

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


def check(cluster: Cluster, documents: Sequence[tuple[str, Mapping[str, Any]]]) -> list[Finding]:
    """Findings for every workload among `documents` ((file, object) pairs); the templates among them are the tenant's."""
    own = [without_nulls(obj) for _, obj in documents if obj.get("kind") == "ResourceClaimTemplate"]
    tenancy = cluster.tenancy(own)
    findings: list[Finding] = []
    for file, written in documents:
        where = f"{file}: {written.get('kind', '?')}/{_name(written)}"
        findings += _schema(cluster, where, written)
        obj = without_nulls(written)
        if obj.get("kind") not in WORKLOADS:
            continue
        findings += _namespace(cluster, where, obj)
        pods = pod_templates(obj, tenancy)
        findings += _policies(cluster, tenancy, where, obj, pods)
        findings += kueue_quota_capacity(cluster, tenancy, where, obj)
        findings += kai_findings(cluster, where, obj)
    return findings


def without_nulls(value: Any) -> Any:
    """The object as the API server decodes it for the checks that follow the schema: a field set to null
    is a field not set (a null list item is refused before, by `unjudgeable`)."""
    if isinstance(value, dict):
        return {key: without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [without_nulls(item) for item in value]
    return value


def _name(obj: Mapping[str, Any]) -> str:
    """The object's name, or its generateName with `*` for the suffix the API server adds."""
    metadata = obj.get("metadata") or {}
    return metadata.get("name") or f"{metadata.get('generateName', '?')}*"


def _schema(cluster: Cluster, where: str, obj: Mapping[str, Any]) -> list[Finding]:
    version = cluster.config.cluster.kubernetes_version
    found = object_findings(obj, cluster.crds, version).findings
    if found:
        return [Finding(where, "schema", f"{dotted(f.path)}: {f.reason}", True) for f in found]
    return [Finding(where, "schema", f"valid for Kubernetes {version} and the pinned CRDs")]


def _namespace(cluster: Cluster, where: str, obj: Mapping[str, Any]) -> list[Finding]:
    namespace = obj["metadata"].get("namespace")
    if namespace is None:
        return [Finding(where, "namespace", f"none set: apply it with `kubectl -n {cluster.namespace}`")]
    if namespace != cluster.namespace:
        return [Finding(where, "namespace", f"{namespace} is not tenant {cluster.tenant.name}'s namespace "
                        f"({cluster.namespace}): set metadata.namespace to {cluster.namespace}", True)]
    return []


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
    if obj["kind"] == "Pod":
        workload = as_kais_webhook_hands_it_on(workload)
    denials = admission_denials(
        cluster.objects, Request("CREATE", group, plural, cluster.namespace, cluster.tenant_admin(), workload, None, labels)
    )
    for pod in pods:
        reasons = violations(pod, level, version)
        if reasons:
            who = "it" if obj["kind"] == "Pod" else "each of its pods"
            found.append(Finding(where, "policies", f"Pod Security {level} refuses {who}: {'; '.join(reasons)}", True))
        if obj["kind"] != "Pod":
            as_pod = as_kais_webhook_hands_it_on(_created_pod(tenancy, cluster.namespace, workload, chain, pod))
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


def read_documents(paths: Sequence[Path]) -> list[tuple[str, dict[str, Any]]]:
    """(file, object) for every YAML document of the files; ConfigError with one line per problem."""
    found, problems = documents_and_problems(paths)
    if problems:
        raise ConfigError(problems)
    return found


def documents_and_problems(paths: Sequence[Path]) -> tuple[list[tuple[str, dict[str, Any]]], list[str]]:
    """(file, object) for every YAML document of the files (offline/manifest_files.py bounds what is read),
    and one line per unreadable file or document that is not a Kubernetes object."""
    found: list[tuple[str, dict[str, Any]]] = []
    problems: list[str] = []
    nodes = 0
    for path in paths:
        try:
            documents = read_manifest(path, max_nodes=min(MAX_NODES, MAX_RUN_NODES - nodes))
        except Unreadable as err:
            problems.append(f"{path}: {err}")
            continue
        nodes += documents.nodes
        for number, document in enumerate(documents, 1):
            problem = _not_an_object(document)
            if problem:
                problems.append(f"{path}: document {number}: {problem}")
            else:
                found.append((str(path), document))
    return found, problems


def _not_an_object(document: Any) -> str | None:
    """Why a document is not a Kubernetes object the check can name, or None."""
    if not isinstance(document, dict):
        return f"a {type_name(document).removeprefix('a ').removeprefix('an ')}, not a Kubernetes object (a map)"
    if not (isinstance(document.get("apiVersion"), str) and isinstance(document.get("kind"), str)):
        return "apiVersion and kind must be set, as strings (apiVersion: batch/v1, kind: Job)"
    metadata = document.get("metadata")
    if not isinstance(metadata, dict):
        return f"{document['kind']} has no metadata map: give it metadata.name"
    if not any(isinstance(metadata.get(key), str) for key in ("name", "generateName")):
        return f"{document['kind']} has no metadata.name: name it"
    return None


# What a schema finding says when a field has the wrong shape: the checks read such fields, so a workload
# with one is not judged (as the API server would not decode it), only refused.
_SHAPE_REASONS = ("must be ", "must not be null", "required field is missing", "is not a valid quantity", "does not serve",
                  "is too large", " does not fit int")


# The fields each workload's pods are read from: the API server's validation requires them (a Job's pod
# template and its containers, a TrainJob's runtime), though the OpenAPI schemas leave them optional.
_REQUIRED: dict[str, tuple[tuple[str, ...], ...]] = {
    "Job": (("spec", "template", "spec", "containers"),),
    "Deployment": (("spec", "template", "spec", "containers"),),
    "Pod": (("spec", "containers"),),
    "JobSet": (("spec", "replicatedJobs", "*", "template", "spec", "template", "spec", "containers"),),
    "TrainJob": (("spec", "runtimeRef", "name"),),
}


def _missing(value: Any, path: Sequence[str], walked: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """The paths (`*`: each item of a list) that are absent from `value`."""
    if not path:
        return []
    key, rest = path[0], path[1:]
    if key == "*":
        items = value if isinstance(value, list) else []
        return [gap for index, item in enumerate(items) for gap in _missing(item, rest, (*walked, index))]
    if not isinstance(value, dict) or value.get(key) is None:
        return [(*walked, key)]
    return _missing(value[key], rest, (*walked, key))


def _null_items(value: Any, walked: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """Where a list holds null: the schemas let it through (their item types are nullable), the API server
    decodes it as an empty object its validation then refuses, and the checks have nothing to read."""
    found: list[tuple[str | int, ...]] = []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if item is None and isinstance(value, list):
            found.append((*walked, key))
        else:
            found += _null_items(item, (*walked, key))
    return found


def _bad_quantities(value: Any, walked: tuple[str | int, ...] = ()) -> list[str]:
    """`path: reason` for every amount under a `resources` (or a TrainJob's `resourcesPerNode`) map's requests
    and limits that is not a quantity the API server reads, wherever the schema leaves it unchecked."""
    found: list[str] = []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        path = (*walked, key)
        if key in ("requests", "limits") and walked[-1:] in (("resources",), ("resourcesPerNode",)) and isinstance(item, dict):
            found += [f"{dotted((*path, name))}: {problem}" for name, amount in item.items()
                      if amount is not None and (problem := quantity_problem(amount) or _not_a_quantity_type(amount))]
        else:
            found += _bad_quantities(item, path)
    return found


def _not_a_quantity_type(amount: Any) -> str | None:
    return None if isinstance(amount, str | int | float) and not isinstance(amount, bool) else (
        f"{describe(amount)} is not a quantity (a string or a number)")


def unjudgeable(documents: Sequence[tuple[str, Mapping[str, Any]]], crds: Callable[[], CustomResourceDefinitions],
                kubernetes_version: str) -> list[str]:
    """One line per field of a workload whose shape the API server would refuse to decode (a map where
    a list belongs, a number beyond int32, a quantity that does not parse): such a file cannot be read.
    `crds()` (the charts' CRDs, seconds to read) is called only for a workload of a custom kind."""
    lines = []
    for file, obj in documents:
        if obj["kind"] not in (*WORKLOADS, "ResourceClaimTemplate"):
            continue
        group = obj["apiVersion"].rsplit("/", 1)[0] if "/" in obj["apiVersion"] else ""
        in_scope = CustomResourceDefinitions() if is_built_in_group(group) else crds()
        where = f"{file}: {obj['kind']}/{_name(obj)}"
        found = [
            f"{where}: {dotted(finding.path)}: {finding.reason}"
            for finding in object_findings(obj, in_scope, kubernetes_version).findings
            if any(reason in finding.reason for reason in _SHAPE_REASONS)
        ]
        found += [f"{where}: {dotted(gap)}: a null item; remove it" for gap in _null_items(obj)]
        found += [f"{where}: {line}" for line in _bad_quantities(obj) if f"{where}: {line}" not in found]
        if not found:
            found = [f"{where}: {dotted(gap)}: required field is missing"
                     for path in _REQUIRED.get(obj["kind"], ()) for gap in _missing(obj, path)]
        lines += found
    return lines


def main(stack: str, tenant: str, files: Sequence[Path]) -> int:
    from .engine import run_program
    from .stack import StackNotFound, load_config, load_stack

    try:
        stack_config = load_stack(stack)
        config = load_config(stack_config)
    except StackNotFound as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except ConfigError as err:
        print("\n".join(err.problems), file=sys.stderr)
        return EXIT_USAGE
    names = [t.name for t in config.tenants]
    if tenant not in names:
        print(f"error: stack {stack} has no tenant {tenant}{did_you_mean(tenant, names)} "
              f"(tenants: {', '.join(names) or 'none'})", file=sys.stderr)
        return EXIT_USAGE
    documents, problems = documents_and_problems(files)
    charts = [{"chart": pin.chart, "version": pin.version} for pin in config.charts.values()]
    crds = functools.cache(lambda: CustomResourceDefinitions.installed_by(charts))
    problems += unjudgeable(documents, crds, config.cluster.kubernetes_version)
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return EXIT_USAGE
    recording = run_program(stack_config.stack, stack_config.values, stack_config.secret_keys)
    return report(check(Cluster.of(config, tenant, rendered_objects(recording), crds()), documents))


def report(findings: Sequence[Finding]) -> int:
    """Print each finding and the count; the exit code: 1 when any finding would refuse or strand a workload."""
    for finding in findings:
        print(finding)
    problems = [f for f in findings if f.problem]
    print(f"{counted(len({f.workload for f in findings}), 'object')} checked, {counted(len(problems), 'problem')}")
    return EXIT_FINDINGS if problems else EXIT_OK
