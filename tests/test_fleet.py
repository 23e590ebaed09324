"""A MultiKueue fleet: the manager and worker as shipped (frozen copies), the fleet check, and MultiKueue's
behaviour at Kueue v0.19.2 (models/kueue/multikueue.py) following one TrainJob and one worker outage.

The worker renders once and the manager once per session (tests/conftest.py `shared_render`, which
tests/test_stacks.py's second render of the same content reuses); the manager's StackReference is answered
with the worker's rendered outputs, as `python -m offline render` does (offline/fleet.py).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.fleet import kubeconfig_template
from config import ConfigError, PlatformConfig
from config.fleet import FleetConfig, fleet_problems, tenant_quotas
from config.regions import AVAILABILITY_ZONES, partition_of
from models.kubernetes.labels import NAMESPACE_NAME_LABEL
from models.kubernetes.user import service_account
from models.kueue import multikueue
from models.kueue.cohort import Snapshot
from models.kueue.constants import QUEUE_NAME_LABEL
from models.kueue.integrations import framework_of
from models.kueue.scheduler import ADMITTED, apply, schedule
from models.kueue.workload import Workload, pod_sets
from offline.engine import Recording
from offline.fleet import fleet_check
from offline.manifest_cluster import Cluster, rendered_objects
from offline.stack import stack_config_from_mapping
from offline.summary import render_summary
from offline.validate import CustomResourceDefinitions

from .conftest import load, project_path, shared_render, shipped_document
from .guards import rbac_allows

MANAGER, WORKER = "fleet-manager", "fleet-worker-usw2"
WORKER_REFERENCE = f"organization/gpu-platform/{WORKER}"
TRAINJOB_CONTROLLER = "trainer.kubeflow.org/trainjob-controller"


def _render(stack: str, outputs: dict[str, Any]) -> Recording:
    config = stack_config_from_mapping(stack, shipped_document(stack))
    return shared_render(stack, config.values, config.secret_keys, outputs)


@pytest.fixture(scope="module")
def worker() -> Recording:
    return _render(WORKER, {})


@pytest.fixture(scope="module")
def manager(worker: Recording) -> Recording:
    return _render(MANAGER, {WORKER_REFERENCE: worker.outputs})


def objects(recording: Recording, kind: str) -> list[dict[str, Any]]:
    return [o for o in rendered_objects(recording) if o["kind"] == kind]


def kueue_config(recording: Recording) -> dict[str, Any]:
    [release] = [r for r in recording.resources if r.type.endswith("helm.sh/v3:Release") and r.inputs["name"] == "kueue"]
    return yaml.safe_load(release.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])


# --- the render ------------------------------------------------------------------------------------------


def test_every_tenant_queue_on_the_manager_waits_for_multikueue_and_none_on_the_worker(manager, worker):
    manager_queues = {q["metadata"]["name"]: q["spec"].get("admissionChecksStrategy") for q in objects(manager, "ClusterQueue")}
    assert manager_queues == {
        "ml-research": {"admissionChecks": [{"name": "multikueue"}]},
        "llm-training": {"admissionChecks": [{"name": "multikueue"}]},
    }
    assert [q["spec"].get("admissionChecksStrategy") for q in objects(worker, "ClusterQueue")] == [None, None]
    assert objects(worker, "AdmissionCheck") == [] and objects(worker, "MultiKueueCluster") == []


def test_the_check_is_multikueues_and_names_the_config_of_the_workers(manager):
    [check] = objects(manager, "AdmissionCheck")
    assert check["spec"] == {
        "controllerName": "kueue.x-k8s.io/multikueue",
        "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "multikueue"},
    }
    [config] = objects(manager, "MultiKueueConfig")
    assert (config["metadata"]["name"], config["spec"]) == ("multikueue", {"clusters": [WORKER]})


def test_each_worker_connects_through_the_secret_its_external_secret_writes_from_the_workers_outputs(manager, worker):
    [cluster] = objects(manager, "MultiKueueCluster")
    assert cluster["metadata"]["name"] == WORKER
    source = cluster["spec"]["clusterSource"]["kubeConfig"]
    [external] = [e for e in objects(manager, "ExternalSecret") if e["metadata"]["namespace"] == "kueue-system"]
    assert source == {"location": external["spec"]["target"]["name"], "locationType": "Secret"}
    assert external["spec"]["data"] == [
        {"secretKey": "token", "remoteRef": {"key": "/gpu-fleet-manager/kueue-system/multikueue-fleet-worker-usw2"}}
    ]
    assert external["spec"]["secretStoreRef"] == {"kind": "SecretStore", "name": "multikueue-tokens"}
    kubeconfig = yaml.safe_load(
        external["spec"]["target"]["template"]["data"]["kubeconfig"].replace("{{ .token }}", "a-service-account-token")
    )
    [entry] = kubeconfig["clusters"]
    assert entry["cluster"] == {
        "server": worker.outputs["clusterEndpoint"],
        "certificate-authority-data": worker.outputs["clusterCertificateAuthority"],
    }
    assert worker.outputs["clusterEndpoint"].endswith(".us-west-2.eks.amazonaws.com")
    assert multikueue.kubeconfig_problems(kubeconfig) == []
    # Kueue builds its client with client-go's RESTConfigFromKubeConfig, which reads the current context: it must
    # name a context whose cluster is the worker's and whose user carries the token.
    contexts = {entry["name"]: entry["context"] for entry in kubeconfig["contexts"]}
    users = {entry["name"]: entry["user"] for entry in kubeconfig["users"]}
    context = contexts[kubeconfig["current-context"]]
    assert context["cluster"] == entry["name"] == WORKER
    assert users[context["user"]] == {"token": "a-service-account-token"}


def test_the_token_store_reads_the_fleets_tokens_only_for_kueue_system(manager):
    [role] = [r for r in manager.resources if r.type == "aws:iam/role:Role" and r.name.endswith("-fleet-token-role")]
    trust = json.loads(role.inputs["assumeRolePolicy"])
    [statement] = trust["Statement"]
    assert statement["Condition"]["StringEquals"]["aws:RequestTag/esoNamespace"] == "kueue-system"
    assert statement["Principal"]["AWS"].endswith(":role/gpu-fleet-manager-external-secrets")
    [policy] = [
        r for r in manager.resources if r.type == "aws:iam/rolePolicy:RolePolicy" and r.name.endswith("-fleet-token-read")
    ]
    [read] = json.loads(policy.inputs["policy"])["Statement"]
    assert read["Resource"].endswith(":secret:/gpu-fleet-manager/kueue-system/*")
    assert read["Resource"].startswith("arn:aws:secretsmanager:us-east-1:")


def test_the_worker_gives_the_manager_upstreams_rights_writing_only_in_tenant_namespaces(worker):
    roles = {r["metadata"]["name"]: r["rules"] for r in objects(worker, "ClusterRole")}
    reads, writes = roles["multikueue-manager-read"], roles["multikueue-manager-write"]
    assert {verb for rule in reads for verb in rule["verbs"]} == {"get", "list", "watch"}
    assert {verb for rule in writes for verb in rule["verbs"]} == {"create", "delete", "update", "patch"}
    # Together, exactly upstream's rules (with TrainJobs): every (group, resource, verb) once.
    def triples(rules):
        return sorted((g, r, v) for rule in rules for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"])
    assert triples(reads + writes) == triples(multikueue.WORKER_RBAC_RULES)
    [cluster_binding] = [b for b in objects(worker, "ClusterRoleBinding") if b["metadata"]["name"] == "multikueue-manager-read"]
    subject = {"kind": "ServiceAccount", "name": "multikueue-manager", "namespace": "kueue-system"}
    assert cluster_binding["subjects"] == [subject]
    assert not [b for b in objects(worker, "ClusterRoleBinding") if b["roleRef"]["name"] == "multikueue-manager-write"]
    bindings = {
        b["metadata"]["namespace"]: b
        for b in objects(worker, "RoleBinding")
        if b["metadata"]["name"] == "multikueue-manager-write"
    }
    assert sorted(bindings) == ["llm-training", "ml-research"]
    assert all(b["subjects"] == [subject] and b["roleRef"]["name"] == "multikueue-manager-write" for b in bindings.values())
    [token] = [s for s in objects(worker, "Secret") if s["metadata"]["name"] == "multikueue-manager-token"]
    assert token["type"] == "kubernetes.io/service-account-token"
    assert token["metadata"]["annotations"] == {"kubernetes.io/service-account.name": "multikueue-manager"}


MANAGER_ON_WORKER = service_account("kueue-system", "multikueue-manager")
# (verb, group, resource, namespace) -> whether the manager's token may, on the worker.
WORKER_ACCESS = [
    ("create", "trainer.kubeflow.org", "trainjobs", "llm-training", True),
    ("delete", "jobset.x-k8s.io", "jobsets", "ml-research", True),
    ("patch", "kueue.x-k8s.io", "workloads/status", "llm-training", True),
    ("watch", "kueue.x-k8s.io", "workloads", None, True),
    ("list", "batch", "jobs", None, True),
    ("create", "", "pods", "kube-system", False),
    ("create", "batch", "jobs", "kueue-system", False),
    ("delete", "kueue.x-k8s.io", "workloads", "monitoring", False),
    ("update", "kueue.x-k8s.io", "clusterqueues", None, False),
    ("get", "", "secrets", "llm-training", False),
    ("create", "apps", "deployments", "llm-training", False),
]


@pytest.fixture(scope="module")
def worker_objects(worker: Recording) -> list[dict[str, Any]]:
    return rendered_objects(worker)


@pytest.mark.parametrize(("verb", "group", "resource", "namespace", "allowed"), WORKER_ACCESS)
def test_the_managers_token_writes_only_the_dispatched_kinds_in_tenant_namespaces(
    worker_objects, verb, group, resource, namespace, allowed
):
    assert rbac_allows(worker_objects, MANAGER_ON_WORKER, verb, group, resource, namespace) is allowed


def test_the_manager_alone_sets_gc_origin_and_lost_worker_timeout(manager, worker):
    assert kueue_config(manager)["multiKueue"] == {
        "gcInterval": "1m", "origin": "gpu-fleet-manager", "workerLostTimeout": "15m",
    }
    assert "multiKueue" not in kueue_config(worker)


def test_the_manager_alone_alerts_on_dispatch(manager, worker):
    def alert_names(recording: Recording) -> set[str]:
        return {
            rule["alert"]
            for manifest in objects(recording, "PrometheusRule")
            for group in manifest["spec"]["groups"]
            for rule in group["rules"]
            if "alert" in rule
        }

    fleet_alerts = {"MultiKueueNoActiveWorker", "MultiKueueWorkloadsStuckDispatching"}
    assert fleet_alerts <= alert_names(manager)
    assert not fleet_alerts & alert_names(worker)


def test_the_managers_summary_names_its_workers_their_tokens_and_its_alerts(manager, worker):
    summary = render_summary(manager, load(shipped_document(MANAGER)))
    assert "| `fleet-worker-usw2` | `/gpu-fleet-manager/kueue-system/multikueue-fleet-worker-usw2` |" in summary
    assert "#multikueuenoactiveworker" in summary and "#multikueueworkloadsstuckdispatching" in summary
    worker_summary = render_summary(worker, load(shipped_document(WORKER)))
    assert "A MultiKueue worker of `fleet-manager`" in worker_summary and "multikueuenoactiveworker" not in worker_summary


def test_every_kind_multikueue_dispatches_is_queued_on_both_sides(manager, worker):
    for recording in (manager, worker):
        frameworks = set(kueue_config(recording)["integrations"]["frameworks"])
        assert set(multikueue.DISPATCHABLE_FRAMEWORKS) <= frameworks


RULE_KINDS = {("trainer.kubeflow.org", "trainjobs"), ("jobset.x-k8s.io", "jobsets"), ("batch", "jobs")}


def test_the_worker_role_creates_reads_and_deletes_trainjobs_jobsets_and_jobs():
    for group, resource in RULE_KINDS:
        [rule] = [r for r in multikueue.WORKER_RBAC_RULES if r["apiGroups"] == [group] and r["resources"] == [resource]]
        assert set(rule["verbs"]) == {"create", "delete", "get", "list", "watch"}
        [status] = [r for r in multikueue.WORKER_RBAC_RULES if r["resources"] == [f"{resource}/status"]]
        assert status["verbs"] == ["get"]


# --- the fleet check -------------------------------------------------------------------------------------

Edit = Callable[[dict[str, Any], dict[str, Any]], None]


def _set(stack: str, path: str, value: Any) -> Edit:
    """Set `path` (a top-level key, then `.`-separated keys and list indexes) in the stack's document."""
    def edit(manager_doc: dict[str, Any], worker_doc: dict[str, Any]) -> None:
        key, *steps = path.split(".")
        target: Any = manager_doc if stack == MANAGER else worker_doc
        for step in [key, *steps][:-1]:
            target = target[int(step)] if isinstance(target, list) else target[step]
        last = [key, *steps][-1]
        target[int(last) if isinstance(target, list) else last] = value
    return edit


FLEET = "gpu-platform:fleet"
REFUSALS: dict[str, tuple[list[Edit], list[str]]] = {
    "a sound fleet": ([], []),
    "a worker naming no manager": (
        [_set(WORKER, FLEET, {"role": "none"})],
        [f"Pulumi.{MANAGER}.yaml: {FLEET}.workers[{WORKER}]: {WORKER} names no manager: set {FLEET}.manager: "
         f"{MANAGER} in Pulumi.{WORKER}.yaml"],
    ),
    "a worker naming another manager": (
        [_set(WORKER, f"{FLEET}.manager", "fleet-eu")],
        [f"Pulumi.{MANAGER}.yaml: {FLEET}.workers[{WORKER}]: {WORKER} names fleet-eu as its manager, not {MANAGER}"],
    ),
    "a worker that is a manager": (
        [_set(WORKER, FLEET, {"role": "manager", "workers": [MANAGER]})],
        [f"Pulumi.{MANAGER}.yaml: {FLEET}.workers[{WORKER}]: {WORKER} is itself a manager, a cycle: name a worker stack"],
    ),
    "a quota the workers do not sum to": (
        [_set(WORKER, "gpu-platform:tenants.1.gpu.l40s-on-demand.nominal", 8)],
        [f"Pulumi.{MANAGER}.yaml: gpu-platform:tenants[llm-training].l40s-on-demand: nominal nvidia.com/gpu 12 on the "
         "manager, 8 across the workers: make the manager's the workers' sum"],
    ),
    "a tenant only the manager has": (
        [_set(WORKER, "gpu-platform:tenants.1.name", "llm-pretraining")],
        [f"Pulumi.{WORKER}.yaml: gpu-platform:tenants: no tenant llm-training, which the manager {MANAGER} queues: "
         "add it, so its workloads are admissible here",
         f"Pulumi.{WORKER}.yaml: gpu-platform:tenants[llm-pretraining]: not a tenant of the manager {MANAGER}: declare "
         "it there too, or remove it here"],
    ),
    "a flavor only a worker has": (
        [_set(WORKER, "gpu-platform:queueing", {"cohort": "gpu-fleet"}),
         _set(WORKER, "gpu-platform:tenants.0.gpu", {"l40s": {"nominal": 16, "borrowingLimit": 4}}),
         _set(WORKER, "gpu-platform:tenants.1.gpu", {"l40s": {"nominal": 12, "borrowingLimit": 4}})],
        [f"Pulumi.{MANAGER}.yaml: gpu-platform:tenants: no tenant has quota in flavor l40s, which a worker "
         "offers: the manager would never dispatch work for it",
         f"Pulumi.{MANAGER}.yaml: gpu-platform:tenants: flavor l40s-on-demand is on no worker: work admitted to it "
         "could never be admitted by a worker",
         f"Pulumi.{MANAGER}.yaml: gpu-platform:tenants: flavor l40s-spot is on no worker: work admitted to it could "
         "never be admitted by a worker"],
    ),
}


def _fleet_lines(manager_config_: PlatformConfig, workers: dict[str, PlatformConfig]) -> list[str]:
    return fleet_problems(
        MANAGER,
        manager_config_.fleet,
        partition_of(manager_config_.region),
        tenant_quotas(manager_config_.tenants),
        {name: (c.fleet, partition_of(c.region), tenant_quotas(c.tenants)) for name, c in workers.items()},
    )


@pytest.mark.parametrize("case", REFUSALS, ids=str)
def test_the_fleet_check_refuses_each_disagreement_in_one_line(case):
    edits, expected = REFUSALS[case]
    manager_doc, worker_doc = shipped_document(MANAGER), shipped_document(WORKER)
    for edit in edits:
        edit(manager_doc, worker_doc)
    assert _fleet_lines(load(manager_doc), {WORKER: load(worker_doc)}) == expected


def test_a_worker_in_another_partition_is_refused():
    manager_config_, worker_config = load(shipped_document(MANAGER)), load(shipped_document(WORKER))
    quotas = tenant_quotas(worker_config.tenants)
    lines = fleet_problems(MANAGER, manager_config_.fleet, partition_of(manager_config_.region),
                           tenant_quotas(manager_config_.tenants),
                           {WORKER: (worker_config.fleet, partition_of("us-gov-west-1"), quotas)})
    assert lines == [
        f"Pulumi.{MANAGER}.yaml: {FLEET}.workers[{WORKER}]: {WORKER} is in partition aws-us-gov, the manager in aws: "
        "the manager's IAM roles and Secrets Manager do not reach across partitions; keep a fleet in one partition"
    ]


def test_a_manager_naming_itself_or_a_missing_stack_is_refused():
    manager_config_ = load(shipped_document(MANAGER))
    fleet = FleetConfig.model_validate({"role": "manager", "workers": [MANAGER, "fleet-worker-apne2"]})
    lines = fleet_problems(MANAGER, fleet, "aws", tenant_quotas(manager_config_.tenants), {})
    assert lines == [
        f"Pulumi.{MANAGER}.yaml: {FLEET}.workers[{MANAGER}]: the manager names itself, a cycle: a MultiKueue manager "
        "is never its own worker",
        f"Pulumi.{MANAGER}.yaml: {FLEET}.workers[fleet-worker-apne2]: no stack 'fleet-worker-apne2' "
        "(Pulumi.fleet-worker-apne2.yaml does not exist)",
    ]


def _write(directory: Path, stack: str, document: dict[str, Any]) -> None:
    (directory / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump({"config": document}))


def test_a_worker_whose_manager_does_not_list_it_is_refused_from_the_workers_side(tmp_path):
    manager_doc, worker_doc = shipped_document(MANAGER), shipped_document(WORKER)
    manager_doc[FLEET]["workers"] = ["fleet-worker-euw1"]
    _write(tmp_path, MANAGER, manager_doc)
    assert fleet_check(WORKER, load(worker_doc), tmp_path) == [
        f"Pulumi.{WORKER}.yaml: {FLEET}.manager: {MANAGER} does not list {WORKER} in its {FLEET}.workers"
    ]
    _write(tmp_path, MANAGER, shipped_document(MANAGER))
    assert fleet_check(WORKER, load(worker_doc), tmp_path) == []
    (tmp_path / f"Pulumi.{MANAGER}.yaml").unlink()
    assert fleet_check(WORKER, load(worker_doc), tmp_path) == [
        f"Pulumi.{WORKER}.yaml: {FLEET}.manager: no stack 'fleet-manager' (Pulumi.fleet-manager.yaml does not exist)"
    ]


@pytest.mark.parametrize(
    ("fleet", "line"),
    [
        ({"role": "worker"}, "a worker names its manager's stack: set `manager`"),
        ({"role": "manager", "workers": []}, "a manager names 1 to 20 worker stacks in `workers`"),
        ({"role": "manager", "workers": ["a", "a"]}, "`workers` names a stack twice"),
        ({"role": "worker", "manager": "m", "workers": ["a"]}, "`workers` is for a manager; this stack's role is worker"),
        ({"role": "manager", "workers": ["a"], "workerLostTimeout": "15 minutes"}, "workerLostTimeout: '15 minutes'"),
    ],
)
def test_a_fleet_section_that_cannot_be_is_one_line(fleet, line):
    document = shipped_document(WORKER)
    document[FLEET] = fleet
    with pytest.raises(ConfigError) as caught:
        load(document)
    [problem] = caught.value.problems
    assert problem.startswith(f"{FLEET}: ") and line in problem, problem


def test_a_manager_without_external_secrets_is_refused():
    document = shipped_document(MANAGER)
    document["gpu-platform:secrets"] = {"enabled": False}
    with pytest.raises(ConfigError) as caught:
        load(document)
    assert caught.value.problems == [
        "gpu-platform:secrets.enabled: false on a fleet manager, which reads each worker's token from Secrets Manager "
        "through External Secrets: set it to true"
    ]


def test_every_region_row_is_in_the_partition_botocore_gives_it():
    upstream = project_path("upstream", "botocore")
    [partitions] = list(upstream.glob("*/partitions.json"))
    rows = {region: p["id"] for p in json.loads(partitions.read_text())["partitions"] for region in p["regions"]}
    assert {region: partition_of(region) for region in AVAILABILITY_ZONES} == {
        region: rows[region] for region in AVAILABILITY_ZONES
    }


# --- MultiKueue's behaviour at v0.19.2 -------------------------------------------------------------------

KUBECONFIGS: dict[str, tuple[dict[str, Any], list[str]]] = {
    "a token and inline CA": (yaml.safe_load(kubeconfig_template("w", "https://x.eks.amazonaws.com", "Q0E=")), []),
    "aws eks get-token": (
        {"clusters": [{"name": "w", "cluster": {"server": "https://x", "certificate-authority-data": "Q0E="}}],
         "users": [{"name": "aws", "user": {"exec": {"command": "aws", "args": ["eks", "get-token"]}}}]},
        ["user aws: exec plugins are not allowed"],
    ),
    "a CA file and no TLS check": (
        {"clusters": [{"name": "w", "cluster": {"server": "https://x", "certificate-authority": "/ca.pem",
                                                "insecure-skip-tls-verify": True}}],
         "users": [{"name": "u", "user": {"tokenFile": "/var/run/token"}}]},
        ["cluster w: insecure TLS verification is not allowed",
         "cluster w: certificate-authority file paths are not allowed",
         "user u: tokenFile is not allowed"],
    ),
    "no server, basic auth": (
        {"clusters": [{"name": "w", "cluster": {"certificate-authority-data": "Q0E="}}],
         "users": [{"name": "u", "user": {"username": "admin", "password": "x"}}]},
        ["cluster w: server URL is required", "user u: basic auth is not allowed", "user u: basic auth is not allowed"],
    ),
}


@pytest.mark.parametrize("case", KUBECONFIGS, ids=str)
def test_kueue_takes_a_kubeconfig_secret_only_with_a_token_or_certificate_and_inline_ca(case):
    kubeconfig, expected = KUBECONFIGS[case]
    assert multikueue.kubeconfig_problems(kubeconfig) == expected


@pytest.mark.parametrize(("failures", "seconds"), [(0, 0), (1, 5), (2, 10), (3, 20), (6, 160), (7, 320), (12, 320)])
def test_a_lost_worker_is_retried_after_a_doubling_backoff_capped_at_320_seconds(failures, seconds):
    assert multikueue.retry_after_seconds(failures) == seconds


def test_kueue_defaults_a_trainjobs_manager_to_multikueue_only_in_a_multikueue_queue():
    on = ["kueue.x-k8s.io/multikueue"]
    assert multikueue.defaulted_managed_by(None, TRAINJOB_CONTROLLER, on) == "kueue.x-k8s.io/multikueue"
    assert multikueue.defaulted_managed_by(TRAINJOB_CONTROLLER, TRAINJOB_CONTROLLER, on) == "kueue.x-k8s.io/multikueue"
    assert multikueue.defaulted_managed_by("example.com/other", TRAINJOB_CONTROLLER, on) == "example.com/other"
    assert multikueue.defaulted_managed_by(None, TRAINJOB_CONTROLLER, ["kueue.x-k8s.io/provisioning-request"]) is None


def test_a_kind_without_an_adapter_or_not_managed_by_multikueue_is_rejected():
    assert multikueue.reserved("deployment", "kueue.x-k8s.io/multikueue") == multikueue.Check(
        "Rejected", message="No multikueue adapter found"
    )
    assert multikueue.reserved("trainer.kubeflow.org/trainjob", None) == multikueue.Check(
        "Rejected",
        message='The owner is not managed by Kueue: Expecting spec.managedBy to be "kueue.x-k8s.io/multikueue" not ""',
    )


TRAIN_JOB: dict[str, Any] = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "metadata": {"name": "llama-sft", "namespace": "llm-training"},
    "spec": {
        "runtimeRef": {"name": "torch-distributed"},
        "trainer": {
            "image": "nvcr.io/nvidia/pytorch:25.01-py3",
            "numNodes": 3,
            "resourcesPerNode": {"requests": {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": 1},
                                 "limits": {"memory": "8Gi", "nvidia.com/gpu": 1}},
        },
    },
}


class Side:
    """One cluster's Kueue, from its render: the tenant's queue, the Snapshot its scheduler reads."""

    def __init__(self, recording: Recording, config: PlatformConfig):
        rendered = rendered_objects(recording)
        # No CRDs: only the tenant's LimitRange, runtimes and Kueue's config are read here, never a schema.
        self.cluster = Cluster.of(config, "llm-training", rendered, CustomResourceDefinitions())
        self.snapshot = Snapshot.from_manifests(
            [o for o in rendered if o["kind"] == "ClusterQueue"],
            [o for o in rendered if o["kind"] == "Cohort"],
            fair_sharing=True,
            flavors=[o for o in rendered if o["kind"] == "ResourceFlavor"],
        )
        local_queue, cluster_queue = self.cluster.one("LocalQueue", namespace="llm-training"), self.cluster.one(
            "ClusterQueue", "llm-training"
        )
        assert local_queue is not None and cluster_queue is not None
        self.local_queue: Mapping[str, Any] = local_queue
        # The API server labels every namespace with its name, which the ClusterQueue's selector reads.
        self.namespace_labels = {**self.cluster.namespace_labels(), NAMESPACE_NAME_LABEL: "llm-training"}
        # The controllers of the checks the tenant's ClusterQueue names: what Kueue's webhook defaults managedBy by.
        named = [c["name"] for c in (cluster_queue["spec"].get("admissionChecksStrategy") or {}).get("admissionChecks", [])]
        self.check_controllers = [
            check["spec"]["controllerName"]
            for check in rendered
            if check["kind"] == "AdmissionCheck" and check["metadata"]["name"] in named
        ]

    def reserve(self, job: dict[str, Any], now: float) -> Workload:
        """Kueue's scheduler on this side: quota reserved for the job's workload in its LocalQueue's ClusterQueue."""
        queue = self.local_queue["spec"]["clusterQueue"]
        workload = Workload(job["metadata"]["name"], queue, tuple(pod_sets(job, self.cluster.tenancy([]))),
                            timestamp=now, namespace_labels=self.namespace_labels)
        cycle = schedule(self.snapshot, [workload])
        [entry] = cycle.entries
        assert entry.status == ADMITTED, entry.status
        apply(self.snapshot, cycle, now)
        return workload


@pytest.fixture(scope="module")
def sides(manager, worker) -> tuple[Side, Side]:
    return Side(manager, load(shipped_document(MANAGER))), Side(worker, load(shipped_document(WORKER)))


def _queued_on_manager(manager_side: Side) -> dict[str, Any]:
    """The tenant's TrainJob as Kueue's webhook leaves it on the manager: the default LocalQueue, MultiKueue's."""
    job = copy.deepcopy(TRAIN_JOB)
    job["metadata"]["labels"] = {QUEUE_NAME_LABEL: manager_side.local_queue["metadata"]["name"]}
    job["spec"]["managedBy"] = multikueue.defaulted_managed_by(None, TRAINJOB_CONTROLLER, manager_side.check_controllers)
    return job


def test_a_trainjob_runs_from_the_managers_local_queue_to_completion_on_the_worker(sides):
    manager_side, worker_side = sides
    job = _queued_on_manager(manager_side)
    assert job["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "default"}
    assert job["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"

    # The manager reserves the tenant's quota, then waits on MultiKueue: nothing runs on the manager.
    local = manager_side.reserve(job, now=0)
    assert local.usage[("l40s-on-demand", "nvidia.com/gpu")] == 3
    framework = framework_of(job["apiVersion"], job["kind"])
    assert framework == "trainer.kubeflow.org/trainjob"
    check = multikueue.reserved(framework, job["spec"]["managedBy"])
    assert check == multikueue.Check("Pending")

    # The copy on the worker is admitted by the worker's own Kueue, under the same tenant's quota there.
    remote = worker_side.reserve(job, now=5)
    assert remote.cluster_queue == local.cluster_queue == "llm-training" and remote.usage == local.usage
    check = multikueue.admitted_on(check, WORKER)
    assert check == multikueue.Check("Ready", WORKER, f'The workload was admitted on "{WORKER}"')

    # It finishes there; the manager copies the status, finishes its own workload and both give the quota back.
    check = multikueue.finished_on_worker(check)
    assert check.finished and check.cluster == WORKER
    worker_side.snapshot.remove_workload(remote)
    manager_side.snapshot.remove_workload(local)


WORKER_LOST_TIMEOUT = 15 * 60

CHECK_CONDITIONS = [
    (["a", "b"], {"a": True, "b": True}, (True, "Active", "The admission check is active")),
    (["a", "b"], {"a": True, "b": False}, (True, "SomeActiveClusters", "Inactive clusters: [b]")),
    (["a", "b", "c"], {"a": True}, (True, "SomeActiveClusters", "Missing clusters: [b c]")),
    (["a", "b"], {"b": False}, (False, "NoUsableClusters", "Missing clusters: [a], Inactive clusters: [b]")),
    (["a"], {"a": False}, (False, "NoUsableClusters", "Inactive clusters: [a]")),
]


@pytest.mark.parametrize(("clusters", "active", "condition"), CHECK_CONDITIONS)
def test_the_check_stays_active_while_any_worker_is_and_its_queues_stop_when_none_is(clusters, active, condition):
    assert multikueue.admission_check_condition(clusters, active) == condition


@pytest.mark.parametrize(
    ("lost_for", "state", "message"),
    [
        (0, "Ready", f'The workload was admitted on "{WORKER}"'),
        (WORKER_LOST_TIMEOUT - 1, "Ready", f'The workload was admitted on "{WORKER}"'),
        (WORKER_LOST_TIMEOUT, "Retry", "Admitting remote lost"),
    ],
)
def test_a_worker_outage_keeps_the_job_admitted_until_the_lost_worker_timeout_then_requeues_it(lost_for, state, message):
    running = multikueue.admitted_on(multikueue.reserved("trainer.kubeflow.org/trainjob", multikueue.CONTROLLER_NAME), WORKER)
    after = multikueue.admitting_worker_unreachable(running, lost_for, WORKER_LOST_TIMEOUT)
    assert (after.state, after.cluster, after.message) == (state, WORKER, message)


def test_what_the_tenant_sees_when_the_worker_is_lost_evicts_or_deletes_its_copy(manager):
    configured = kueue_config(manager)["multiKueue"]["workerLostTimeout"]
    assert configured == "15m"
    running = multikueue.admitted_on(multikueue.Check("Pending"), WORKER)
    assert multikueue.admitting_remote_gone(running).message == "Admitting remote no longer exists"
    assert multikueue.evicted_on_worker(running).message == (
        f'Workload evicted on worker cluster: "{WORKER}", resetting for re-admission. Previously: "Ready"'
    )
    # Retry is final for the dispatch: a second worker's admission does not move it back to Ready.
    lost = multikueue.admitting_worker_unreachable(running, WORKER_LOST_TIMEOUT, WORKER_LOST_TIMEOUT)
    assert multikueue.admitted_on(lost, "fleet-worker-euw1") == lost
    # A workload that never left Pending is not touched by a lost worker.
    assert multikueue.admitting_worker_unreachable(multikueue.Check("Pending"), 10**6, WORKER_LOST_TIMEOUT).state == "Pending"

