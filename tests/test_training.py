"""Distributed training: Kubeflow Trainer and JobSet installed and placed, queued by Kueue, reachable by tenants only at home.

Upstream, at the pinned tags: kubeflow/trainer v2.3.0 (charts/kubeflow-trainer, manifests/base/crds),
kubernetes-sigs/jobset v0.12.0 (charts/jobset), kubernetes-sigs/kueue v0.19.2 (pkg/controller/jobs/
trainjob, jobset; pkg/controller/jobframework), kubernetes/kubernetes' RBAC bootstrap policy
(plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go) for how admin/edit/view aggregate.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from components import training
from config.labels import LOCAL_QUEUE, SYSTEM_NODE_LABELS, TENANT_LABEL
from config.namespaces import CONTROLLER_NAMESPACES, TRAINER
from config.versions import CHARTS
from offline.engine import Recording
from offline.upstream import chart_dir, chart_metadata, chart_values, crd_documents, subchart_values

from .conftest import chart_values_problems, render_fixture
from .recorded import kubernetes_objects, releases, waits_for

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


def kueue_config(recording: Recording) -> dict[str, Any]:
    values = releases(recording)["kueue"].inputs["values"]
    return yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])


def test_kueue_queues_trainjobs_and_jobsets_and_labels_queue_less_ones_with_the_tenants_default_queue():
    # Framework names: kubernetes-sigs/kueue v0.19.2 pkg/controller/jobs/trainjob/trainjob_controller.go and
    # jobset/jobset_controller.go (`FrameworkName`).
    recording = render_fixture("multi-pool")
    config = kueue_config(recording)
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


# --- tenants' rights, resolved from the rendered bindings and roles -------------------------------------


# kubernetes/kubernetes plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go: the built-in roles'
# own labels and aggregation selectors. Their own rules name no training kind, so only aggregation counts.
BUILT_IN_ROLES: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    "admin": ({}, {"rbac.authorization.k8s.io/aggregate-to-admin": "true"}),
    "edit": ({"rbac.authorization.k8s.io/aggregate-to-admin": "true"}, {"rbac.authorization.k8s.io/aggregate-to-edit": "true"}),
    "view": ({"rbac.authorization.k8s.io/aggregate-to-edit": "true"}, {"rbac.authorization.k8s.io/aggregate-to-view": "true"}),
}


@dataclass(frozen=True)
class Role:
    labels: Mapping[str, str]
    selector: Mapping[str, str] | None
    rules: tuple[Mapping[str, Any], ...]


def cluster_roles(recording: Recording) -> dict[str, Role]:
    roles = {name: Role(labels, selector, ()) for name, (labels, selector) in BUILT_IN_ROLES.items()}
    for r in kubernetes_objects(recording):
        if r.inputs["kind"] == "ClusterRole":
            metadata = r.inputs["metadata"]
            roles[metadata["name"]] = Role(metadata.get("labels", {}), None, tuple(r.inputs.get("rules") or ()))
    return roles


def effective_rules(roles: Mapping[str, Role], name: str) -> list[Mapping[str, Any]]:
    """The rules of a ClusterRole after the aggregation controller: its own plus every selected role's, transitively."""
    role = roles[name]
    rules = list(role.rules)
    if role.selector:
        for other, candidate in roles.items():
            if other != name and role.selector.items() <= candidate.labels.items():
                rules += effective_rules(roles, other)
    return rules


def allowed(recording: Recording, group: str, verb: str, api_group: str, resource: str, namespace: str | None) -> bool:
    """Whether a member of `group` may `verb` `resource` in `namespace` (None: cluster-scoped), by RBAC alone."""
    roles = cluster_roles(recording)
    granted: list[Mapping[str, Any]] = []
    for r in kubernetes_objects(recording):
        kind = r.inputs["kind"]
        if kind not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        if not any(s["kind"] == "Group" and s["name"] in (group, training.AUTHENTICATED) for s in r.inputs["subjects"]):
            continue
        if kind == "RoleBinding" and r.inputs["metadata"]["namespace"] != namespace:
            continue
        granted += effective_rules(roles, r.inputs["roleRef"]["name"])
    return any(
        api_group in rule["apiGroups"] and resource in rule["resources"] and verb in rule["verbs"] for rule in granted
    )


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
