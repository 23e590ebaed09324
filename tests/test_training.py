"""Distributed training: Kubeflow Trainer and JobSet installed and placed, queued by Kueue, reachable by tenants only at home.

Upstream, at the pinned tags: kubeflow/trainer v2.3.0 (charts/kubeflow-trainer, manifests/base/crds),
kubernetes-sigs/jobset v0.12.0 (charts/jobset), kubernetes-sigs/kueue v0.19.2 (pkg/controller/jobs/
trainjob, jobset; pkg/controller/jobframework), kubernetes/kubernetes' RBAC bootstrap policy
(plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go) for how admin/edit/view aggregate.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from components import training
from components.queueing import cluster_queue, manager_config
from components.tenants import limit_range
from components.training import TORCH_RUNTIME, torch_runtime
from config.labels import LOCAL_QUEUE, SYSTEM_NODE_LABELS, TENANT_LABEL
from config.namespaces import CONTROLLER_NAMESPACES, TRAINER
from config.versions import CHARTS
from models.kubeflow_trainer import ANCESTOR_STEP_LABEL, TRAINER_ANCESTOR
from models.kubernetes.user import User
from models.kueue.flavorassigner import Admission, best_case_admission
from models.kueue.workload import Inadmissible, Tenancy, pod_sets
from offline.engine import Recording
from offline.helm_values import chart_key
from offline.summary import render_summary
from offline.upstream import chart_dir, chart_metadata, chart_values, crd_documents, subchart_values
from offline.validate import CustomResourceDefinitions, object_findings

from .builders import kueue_manager_config, tenancy_of
from .conftest import chart_values_problems, fixture_config, fixture_document, load, project_path, render_fixture
from .guards import rbac_allows
from .recorded import declared, kubernetes_objects, releases, waits_for

PIN = CHARTS[training.CHART_KEY]
# The JobSet API kubernetes-sigs/kueue v0.19.2 builds its jobset and trainjob integrations on (go.mod:
# sigs.k8s.io/jobset v0.12.0); the JobSet controller the trainer chart brings must serve it.
KUEUE_JOBSET_VERSION = "0.12.0"


def served(crds: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], set[str]]:
    """(group, kind) -> the versions the CRDs serve."""
    return {
        (crd["spec"]["group"], crd["spec"]["names"]["kind"]): {v["name"] for v in crd["spec"]["versions"] if v["served"]}
        for crd in crds
    }


# --- the pinned chart --------------------------------------------------------------------------------


def test_the_trainer_chart_serves_trainjobs_and_jobsets_but_not_the_v1_pytorchjob():
    # Trainer v2 dropped the v1 training operator's kubeflow.org API: its chart (templates/crd, generated
    # from manifests/base/crds) and its JobSet subchart's crds/ are all the CRDs a release installs.
    kinds = served(crd_documents({training.CHART_KEY: PIN.version}))
    assert kinds == {
        ("trainer.kubeflow.org", "TrainJob"): {"v1alpha1"},
        ("trainer.kubeflow.org", "TrainingRuntime"): {"v1alpha1"},
        ("trainer.kubeflow.org", "ClusterTrainingRuntime"): {"v1alpha1"},
        ("jobset.x-k8s.io", "JobSet"): {"v1alpha2"},
    }
    assert not any(group == "kubeflow.org" for group, _ in kinds)


def test_the_jobset_the_chart_brings_is_the_one_kueue_builds_its_integrations_on():
    [dependency] = [d for d in chart_metadata(training.CHART_KEY, PIN.version)["dependencies"] if d["name"] == "jobset"]
    vendored = yaml.safe_load((chart_dir(training.CHART_KEY, PIN.version) / "charts" / "jobset" / "Chart.yaml").read_text())
    assert dependency["version"] == vendored["version"] == KUEUE_JOBSET_VERSION
    # The dependency is installed only under its condition, which the platform turns on.
    assert dependency["condition"] == "jobset.install"
    assert training.trainer_values()["jobset"]["install"] is True


def test_the_release_sets_only_values_the_pinned_charts_have():
    assert chart_values_problems(training.CHART_KEY, training.trainer_values()) == []


def test_no_builtin_runtime_hook_job_runs():
    # templates/runtimes/*.yaml render the installer and cleanup hook Jobs (alpine + `apk add kubectl` at
    # run time) only when a runtime is enabled; every one is off by default and the platform sets none.
    defaults = chart_values(training.CHART_KEY, PIN.version)
    runtimes = defaults["runtimes"]
    assert runtimes["defaultEnabled"] is False
    switches = [runtimes[name]["enabled"] for name in
                ("torchDistributed", "deepspeedDistributed", "mlxDistributed", "jaxDistributed", "xgboostDistributed")]
    switches += [runtimes["torchtuneDistributed"][model]["enabled"] for model in ("llama3_2_1B", "llama3_2_3B", "qwen2_5_1_5B")]
    assert not any(switches) and defaults["dataCache"]["enabled"] is False
    assert "runtimes" not in training.trainer_values() and "dataCache" not in training.trainer_values()


def test_both_controllers_run_on_the_system_nodes():
    values = training.trainer_values()
    jobset_defaults = subchart_values(training.CHART_KEY, PIN.version)["jobset"]
    for pod in (values["manager"], values["jobset"]["controller"]):
        assert pod["nodeSelector"].items() <= SYSTEM_NODE_LABELS.items()
        assert [t["key"] for t in pod["tolerations"]] == ["CriticalAddonsOnly"]
    # JobSet's controller keeps its chart's requests, which config/system_capacity.py counts.
    assert "resources" not in values["jobset"]["controller"]
    assert jobset_defaults["controller"]["resources"]["requests"] == {"cpu": "500m", "memory": "128Mi"}


def test_the_controllers_namespace_is_restricted_and_no_tenant_may_take_it():
    assert CONTROLLER_NAMESPACES[TRAINER] == "restricted"
    defaults = chart_values(training.CHART_KEY, PIN.version)["manager"]["securityContext"]
    # What Pod Security `restricted` asks of a container the chart's manager already does.
    assert defaults["runAsNonRoot"] is True and defaults["allowPrivilegeEscalation"] is False
    assert defaults["capabilities"] == {"drop": ["ALL"]} and defaults["seccompProfile"] == {"type": "RuntimeDefault"}
    jobset = subchart_values(training.CHART_KEY, PIN.version)["jobset"]["controller"]
    assert jobset["podSecurityContext"] == {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    assert jobset["securityContext"]["allowPrivilegeEscalation"] is False
    assert jobset["securityContext"]["capabilities"] == {"drop": ["ALL"]}


def test_the_torch_runtime_passes_the_trainers_runtime_webhook():
    # kubeflow/trainer v2.3.0 pkg/webhooks/trainingruntime_webhook.go validateReplicatedJobs: the replicated job
    # labelled as the trainer ancestor has exactly one replica and a container named `node`. The platform's
    # runtime goes through the webhook (no `trainer.kubeflow.org/webhook-validation: disabled` label).
    runtime = training.torch_runtime()
    assert "trainer.kubeflow.org/webhook-validation" not in runtime["metadata"]["labels"]
    crds = crd_documents({training.CHART_KEY: PIN.version})
    [crd] = [c for c in crds if c["spec"]["names"]["kind"] == "ClusterTrainingRuntime"]
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["template"]
    default_replicas = schema["properties"]["spec"]["properties"]["replicatedJobs"]["items"]["properties"]["replicas"]["default"]
    [trainer] = [
        job for job in runtime["spec"]["template"]["spec"]["replicatedJobs"]
        if job["template"]["metadata"]["labels"].get(ANCESTOR_STEP_LABEL) == TRAINER_ANCESTOR
    ]
    assert trainer.get("replicas", default_replicas) == 1
    assert "node" in [c["name"] for c in trainer["template"]["spec"]["template"]["spec"]["containers"]]


def test_the_torch_runtime_is_admitted_by_pod_security_restricted():
    pod = training.torch_runtime()["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] > 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    [container] = pod["containers"]
    # The trainer's torch plugin addresses the trainer container as `node`.
    assert container["name"] == "node"
    assert container["securityContext"] == {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


# --- the render ----------------------------------------------------------------------------------------


def test_the_trainer_installs_after_kueue_and_its_runtime_after_the_trainer():
    recording = render_fixture("multi-pool")
    by_name = releases(recording)
    trainer = by_name[training.RELEASE_NAME]
    assert by_name["kueue"].urn in waits_for(recording, trainer)
    [runtime] = [r for r in kubernetes_objects(recording) if r.inputs["kind"] == "ClusterTrainingRuntime"]
    assert trainer.urn in waits_for(recording, runtime)
    assert trainer.inputs["namespace"] == TRAINER


def test_kueue_queues_trainjobs_and_jobsets_and_labels_queue_less_ones_with_the_tenants_default_queue():
    # Framework names: kubernetes-sigs/kueue v0.19.2 pkg/controller/jobs/trainjob/trainjob_controller.go and
    # jobset/jobset_controller.go (`FrameworkName`).
    recording = render_fixture("multi-pool")
    config = kueue_manager_config(recording)
    assert {"trainer.kubeflow.org/trainjob", "jobset.x-k8s.io/jobset"} <= set(config["integrations"]["frameworks"])
    # Both webhooks label a job without a queue name with `default` when its namespace matches
    # managedJobsNamespaceSelector and has a LocalQueue of that name, and suspend it when
    # manageJobsWithoutQueueName is on (jobframework/defaults.go ApplyDefaultLocalQueueWithManagedJobsNamespaceSelector,
    # utils.go WorkloadShouldBeSuspended).
    assert config["manageJobsWithoutQueueName"] is True
    assert config["managedJobsNamespaceSelector"] == {"matchExpressions": [{"key": TENANT_LABEL, "operator": "Exists"}]}
    namespaces = {r.inputs["metadata"]["name"]: r.inputs["metadata"].get("labels", {})
                  for r in kubernetes_objects(recording) if r.inputs["kind"] == "Namespace"}
    queues = {(r.inputs["metadata"]["namespace"], r.inputs["metadata"]["name"])
              for r in kubernetes_objects(recording) if r.inputs["kind"] == "LocalQueue"}
    tenants = [name for name, labels in namespaces.items() if TENANT_LABEL in labels]
    assert tenants and all((tenant, LOCAL_QUEUE) in queues for tenant in tenants)
    assert TENANT_LABEL not in namespaces[TRAINER]


def test_a_trainjob_whose_pods_do_not_all_start_gives_its_quota_back():
    # A TrainJob's PodsReady counts its JobSet's child Jobs that have every pod ready (or succeeded) against
    # all of them (pkg/controller/jobs/trainjob/trainjob_controller.go, PodsReady); with waitForPodsReady,
    # a workload not PodsReady by the timeout is evicted, its quota released, and requeued with backoff.
    wait = kueue_manager_config(render_fixture("multi-pool"))["waitForPodsReady"]
    assert wait["timeout"] and wait["requeuingStrategy"]["timestamp"] == "Eviction"
    assert wait.get("blockAdmission", False) is False


# --- tenants' rights, resolved from the rendered bindings and roles -------------------------------------


def allowed(recording: Recording, group: str, verb: str, api_group: str, resource: str, namespace: str | None) -> bool:
    """Whether a member of `group` may `verb` `resource` in `namespace` (None: cluster-scoped), by RBAC alone:
    the rendered bindings and roles with the built-in admin/edit/view aggregated (models/kubernetes/rbac.py)."""
    objects = [r.inputs for r in kubernetes_objects(recording)]
    return rbac_allows(objects, User(f"member-of-{group}", (group,)), verb, api_group, resource, namespace)


ADMINS, VIEWERS = "gpu-platform:data-science:admins", "gpu-platform:data-science:viewers"
HOME, ELSEWHERE = "data-science", "llm-training"

ACCESS = [
    # (group, verb, api group, resource, namespace, allowed)
    (ADMINS, "create", "trainer.kubeflow.org", "trainjobs", HOME, True),
    (ADMINS, "watch", "trainer.kubeflow.org", "trainjobs", HOME, True),
    (ADMINS, "delete", "trainer.kubeflow.org", "trainjobs", HOME, True),
    (ADMINS, "create", "jobset.x-k8s.io", "jobsets", HOME, True),
    (ADMINS, "create", "trainer.kubeflow.org", "trainingruntimes", HOME, True),
    (ADMINS, "create", "trainer.kubeflow.org", "trainjobs", ELSEWHERE, False),
    (ADMINS, "list", "trainer.kubeflow.org", "trainjobs", ELSEWHERE, False),
    (ADMINS, "delete", "jobset.x-k8s.io", "jobsets", ELSEWHERE, False),
    (ADMINS, "create", "trainer.kubeflow.org", "trainjobs", TRAINER, False),
    (ADMINS, "create", "trainer.kubeflow.org", "clustertrainingruntimes", None, False),
    (ADMINS, "list", "trainer.kubeflow.org", "clustertrainingruntimes", None, True),
    (VIEWERS, "watch", "trainer.kubeflow.org", "trainjobs", HOME, True),
    (VIEWERS, "get", "jobset.x-k8s.io", "jobsets/status", HOME, True),
    (VIEWERS, "create", "trainer.kubeflow.org", "trainjobs", HOME, False),
    (VIEWERS, "delete", "jobset.x-k8s.io", "jobsets", HOME, False),
    (VIEWERS, "watch", "trainer.kubeflow.org", "trainjobs", ELSEWHERE, False),
]


@pytest.mark.parametrize("group, verb, api_group, resource, namespace, expected", ACCESS)
def test_tenants_run_training_jobs_in_their_own_namespace_and_nowhere_else(group, verb, api_group, resource, namespace, expected):
    assert allowed(render_fixture("multi-pool"), group, verb, api_group, resource, namespace) is expected


def test_the_training_roles_aggregate_into_the_built_in_roles_only():
    for manifest in training.access_manifests():
        labels = manifest["metadata"].get("labels", {})
        if manifest["kind"] == "ClusterRole" and labels:
            [(key, value)] = labels.items()
            assert key in training.AGGREGATE_TO.values() and value == "true"
            # An aggregated role grants nothing cluster-scoped: bound through RoleBindings, it is namespaced.
            assert all(r["resources"] != ["clustertrainingruntimes"] for r in manifest["rules"])


# --- the worked examples in docs/tenants.md -------------------------------------------------------------

DOC = project_path("docs", "tenants.md")
SECTION = "## Training jobs"
_SNIPPET = re.compile(
    r"<!-- snippet: manifest stack=fixture:(?P<stack>[\w-]+) tenant=(?P<tenant>[\w-]+) -->\n```yaml\n(?P<body>.*?)```", re.S
)


@dataclass(frozen=True)
class Example:
    stack: str
    tenant: str
    manifest: dict[str, Any]

    def __str__(self) -> str:
        return f"{self.manifest['kind']} {self.manifest['metadata']['name']}"


def training_examples() -> list[Example]:
    """The manifest blocks of the doc's training section, each with the fixture stack and tenant it names."""
    text = DOC.read_text()
    start = text.index(SECTION)
    section = text[start : text.index("\n## ", start + len(SECTION))]
    return [Example(m["stack"], m["tenant"], yaml.safe_load(m["body"])) for m in _SNIPPET.finditer(section)]


EXAMPLES = training_examples()
# Which flavor of the tenant's ClusterQueue Kueue admits each example on, within nominal quota.
ADMITTED_ON = {
    "TrainJob resnet-ddp": ("a100-spot",),
    "Job notebook-alice": ("h100-on-demand",),
    "Job l4-eval": ("l4-dra-on-demand",),
    "Job big-memory-eval": ("h100-dra-on-demand",),
}


def test_the_training_section_has_a_whole_gpu_a_mig_and_a_dra_example():
    assert sorted(map(str, EXAMPLES)) == sorted(ADMITTED_ON)


def admitting_in(recording: Recording, tenant: str) -> Admitting:
    config = fixture_config(recording.stack)
    return Admitting(tenancy_of(recording, tenant, config=config), declared(recording, "ClusterQueue", tenant).inputs)


@dataclass(frozen=True)
class Admitting:
    tenancy: Tenancy
    cluster_queue: dict[str, Any]


@pytest.mark.parametrize("example", EXAMPLES, ids=str)
def test_each_training_example_is_valid_against_its_stacks_schemas(example):
    recording = render_fixture(example.stack)
    crds = CustomResourceDefinitions.installed_by(r.inputs for r in releases(recording).values())
    version = load(fixture_document(example.stack)).cluster.kubernetes_version
    assert example.manifest["metadata"]["namespace"] == example.tenant
    assert object_findings(example.manifest, crds, version).findings == []


@pytest.mark.parametrize("example", EXAMPLES, ids=str)
def test_each_training_example_is_admitted_whole_within_its_tenants_nominal_quota(example):
    admitting = admitting_in(render_fixture(example.stack), example.tenant)
    admission = best_case_admission(pod_sets(example.manifest, admitting.tenancy), admitting.cluster_queue)
    assert admission == Admission(ADMITTED_ON[str(example)], borrowing=False)


def example_train_job() -> dict[str, Any]:
    """The TrainJob among the documented training examples."""
    [job] = [e.manifest for e in EXAMPLES if e.manifest["kind"] == "TrainJob"]
    return job


def data_science_queue(document: dict[str, Any]) -> tuple[Tenancy, dict[str, Any]]:
    config = load(document)
    [plan] = [t for t in config.tenants if t.name == "data-science"]
    defaults = limit_range(plan)["spec"]["limits"][0]["defaultRequest"]
    tenancy = Tenancy(defaults, {}, manager_config(config.flavors), {TORCH_RUNTIME: torch_runtime()})
    return tenancy, cluster_queue(plan)


def test_the_example_train_job_needs_eight_gpus_in_one_gang():
    [pod_set] = pod_sets(example_train_job(), data_science_queue(fixture_document("multi-pool"))[0])
    assert pod_set.count == 8 and pod_set.total()["nvidia.com/gpu"] == 8


def test_the_example_train_job_is_admitted_for_a_tenant_with_eight_gpus_nominal():
    document = fixture_document("multi-pool")
    assert document["gpu-platform:tenants"][2]["gpu"]["a100-spot"] == {"nominal": 8}
    tenancy, queue = data_science_queue(document)
    assert best_case_admission(pod_sets(example_train_job(), tenancy), queue) == Admission(("a100-spot",), borrowing=False)


def test_the_example_train_job_is_refused_for_a_tenant_with_four_gpus_on_each_flavor():
    document = fixture_document("multi-pool")
    tenants = document["gpu-platform:tenants"]
    tenants[2]["gpu"]["a100-spot"], tenants[2]["gpu"]["l40s-on-demand"] = {"nominal": 4}, {"nominal": 4}
    # llm-training may borrow only what the cohort can then lend it on a100-spot.
    tenants[0]["gpu"]["a100-spot"]["borrowingLimit"] = 4
    tenancy, queue = data_science_queue(document)
    with pytest.raises(Inadmissible, match="no flavor of ClusterQueue data-science holds PodSet node"):
        best_case_admission(pod_sets(example_train_job(), tenancy), queue)


# --- the summary -----------------------------------------------------------------------------------------


def summary_rows(summary: str, heading: str) -> dict[str, list[str]]:
    section = summary[summary.index(heading) :].split("\n\n")[1]
    return {cells[0].strip("`"): cells[1:] for cells in
            ([c.strip() for c in line.strip("|").split("|")] for line in section.splitlines()[2:])}


def test_the_summary_lists_every_kind_kueue_queues_and_the_release_that_installs_its_crd():
    recording = render_fixture("multi-pool")
    rows = summary_rows(render_summary(recording, load(fixture_document("multi-pool"))), "## Job kinds Kueue queues")
    assert list(rows) == kueue_manager_config(recording)["integrations"]["frameworks"]
    # The truth, from the CRDs each rendered release installs (upstream/<chart>/<version>/).
    installed = {}
    for release in releases(recording).values():
        key = chart_key(release.inputs["chart"])
        for crd in crd_documents({key: release.inputs["version"]}) if key else ():
            names, group = crd["spec"]["names"], crd["spec"]["group"]
            [version] = [v["name"] for v in crd["spec"]["versions"] if v["storage"]]
            installed[f"{group}/{names['kind'].lower()}"] = [
                f"{group}/{version} {names['kind']}", f"{key} {release.inputs['version']}"
            ]
    for framework, cells in rows.items():
        if cells[1] != "Kubernetes":
            assert cells == installed.get(framework, ["-", "not installed: Kueue waits for its CRD"]), framework
    # The kinds Kubernetes serves itself, at the versions Kueue's integrations watch (k8s.io/api batch/v1,
    # core/v1, apps/v1 in pkg/controller/jobs/{job,pod,deployment,statefulset}).
    assert {framework: cells for framework, cells in rows.items() if cells[1] == "Kubernetes"} == {
        "batch/job": ["batch/v1 Job", "Kubernetes"],
        "pod": ["v1 Pod", "Kubernetes"],
        "deployment": ["apps/v1 Deployment", "Kubernetes"],
        "statefulset": ["apps/v1 StatefulSet", "Kubernetes"],
    }
    assert rows["trainer.kubeflow.org/trainjob"][1] == rows["jobset.x-k8s.io/jobset"][1] == f"kubeflow-trainer {PIN.version}"
