"""Kueue: flavors select the right nodes, each tenant's queue admits exactly its quota, the controller is set up as documented."""

from __future__ import annotations

import functools
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest
import yaml

from components import queueing
from config import PlatformConfig
from config.fair_share import CPU_FLAVOR, TenantPlan
from config.labels import CAPACITY_TYPE_LABEL, GPU_TAINT, POOL_LABEL
from config.versions import CHARTS, ChartPin
from models.kubernetes.quantity import plain_decimal
from offline.engine import RecordedResource, normalise, run_program
from offline.upstream import chart_dir
from offline.validate import CustomResourceDefinitions, object_findings

from .conftest import FIXTURES, chart_values_problems, fixture_document, load, stand_in_namespaces

CHART_VALUES = chart_dir("kueue", CHARTS["kueue"].version) / "values.yaml"
# The pin the lead adds to config.versions.CHARTS; until then the tests use it directly.
KUEUE_PIN = CHARTS.get("kueue", ChartPin(chart="oci://registry.k8s.io/kueue/charts/kueue", version="0.19.2"))
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}


@functools.cache
def _config(fixture: str) -> PlatformConfig:
    return load(fixture_document(fixture))


@pytest.fixture(params=FIXTURES)
def config(request) -> PlatformConfig:
    return _config(request.param)


def queues(config: PlatformConfig) -> dict[str, dict[str, Any]]:
    return {tenant.name: queueing.cluster_queue(tenant) for tenant in config.tenants}


def group(queue: dict[str, Any]) -> dict[str, Any]:
    groups = queue["spec"]["resourceGroups"]
    assert len(groups) == 1
    return groups[0]


def flavor_resources(queue: dict[str, Any], flavor: str) -> dict[str, dict[str, str]]:
    flavors = {f["name"]: f for f in group(queue)["flavors"]}
    return {r["name"]: r for r in flavors[flavor]["resources"]}


def _amount(resource: str, value: int) -> str:
    return f"{value}Gi" if resource == "memory" else str(value)


def tenant(config: PlatformConfig, name: str) -> TenantPlan:
    return next(t for t in config.tenants if t.name == name)


# --- flavors -------------------------------------------------------------------------------------

def test_every_gpu_flavor_selects_exactly_its_pools_nodes_and_tolerates_the_gpu_taint(config):
    assert config.flavors
    for flavor in config.flavors:
        spec = queueing.resource_flavor(flavor)["spec"]
        expected = {POOL_LABEL: flavor.pool.name}
        if flavor.capacity_type is not None:
            expected[CAPACITY_TYPE_LABEL] = flavor.capacity_type
        assert spec["nodeLabels"] == expected, flavor.name
        # The toleration must match the taint the NodePools put on GPU nodes, effect spelled for Kubernetes.
        assert spec["tolerations"] == [GPU_TOLERATION]
        assert {k: spec["tolerations"][0][k] for k in ("key", "value", "effect")} == GPU_TAINT


def test_split_pool_flavors_select_one_capacity_type_each():
    flavors = {
        f.name: queueing.resource_flavor(f)["spec"]["nodeLabels"]
        for f in _config("single-pool").flavors
        if f.pool.name == "gpu-l40s"
    }
    assert flavors == {
        "l40s-on-demand": {POOL_LABEL: "gpu-l40s", CAPACITY_TYPE_LABEL: "on-demand"},
        "l40s-spot": {POOL_LABEL: "gpu-l40s", CAPACITY_TYPE_LABEL: "spot"},
    }


def test_cpu_flavor_selects_the_cpu_pool_and_never_tolerates_the_gpu_taint():
    flavor = queueing.cpu_resource_flavor()
    assert flavor["metadata"]["name"] == CPU_FLAVOR
    assert flavor["spec"] == {"nodeLabels": {POOL_LABEL: "cpu"}}


# --- ClusterQueues -------------------------------------------------------------------------------

def test_cpu_flavor_comes_first_in_every_cluster_queue_with_no_gpus(config):
    for name, queue in queues(config).items():
        first = group(queue)["flavors"][0]
        assert first["name"] == CPU_FLAVOR, name
        gpus = [r for r in first["resources"] if r["name"] not in ("cpu", "memory")]
        assert gpus and all(r["nominalQuota"] == "0" and r["borrowingLimit"] == "0" for r in gpus), name


def test_cpu_flavor_quota_is_the_tenants_cpu_and_memory_with_no_borrowing(config):
    for plan in config.tenants:
        resources = flavor_resources(queueing.cluster_queue(plan), CPU_FLAVOR)
        assert resources["cpu"] == {"name": "cpu", "nominalQuota": str(plan.config.cpu), "borrowingLimit": "0"}
        assert resources["memory"] == {"name": "memory", "nominalQuota": f"{plan.config.memory_gib}Gi", "borrowingLimit": "0Gi"}


def test_gpu_flavors_follow_in_the_order_the_tenant_lists_them(config):
    for plan in config.tenants:
        names = [f["name"] for f in group(queueing.cluster_queue(plan))["flavors"]]
        assert names == [CPU_FLAVOR, *plan.config.gpu], plan.name


def test_covered_resources_are_cpu_memory_and_every_gpu_resource(config):
    for plan in config.tenants:
        covered = group(queueing.cluster_queue(plan))["coveredResources"]
        assert covered[:2] == ["cpu", "memory"] and "nvidia.com/gpu" in covered
        assert covered == plan.covered_resources


def test_dra_resources_are_covered_where_a_tenant_has_dra_quota():
    covered = {name: group(q)["coveredResources"] for name, q in queues(_config("single-pool-dra")).items()}
    assert covered == {
        "ml-research": ["cpu", "memory", "gpu.nvidia.com.deviceclass.resource.k8s.io/devices", "nvidia.com/gpu"],
        "inference": ["cpu", "memory", "nvidia.com/gpu"],
    }


def test_mig_resources_are_covered_where_a_tenant_has_mig_quota():
    covered = {name: group(q)["coveredResources"] for name, q in queues(_config("multi-pool")).items()}
    mig = ["nvidia.com/mig-1g.10gb", "nvidia.com/mig-2g.20gb", "nvidia.com/mig-3g.40gb"]
    for name in ("llm-training", "inference", "data-science", "experiments"):  # all have H100 (MIG) quota
        assert covered[name] == ["cpu", "memory", "nvidia.com/gpu", *mig], name


def test_every_flavor_lists_every_covered_resource_in_the_same_order(config):
    for name, queue in queues(config).items():
        covered = group(queue)["coveredResources"]
        for flavor in group(queue)["flavors"]:
            assert [r["name"] for r in flavor["resources"]] == covered, (name, flavor["name"])


def test_gpu_flavor_quotas_equal_the_tenants_quota_resources(config):
    for plan in config.tenants:
        queue = queueing.cluster_queue(plan)
        for quota in plan.quotas:
            resources = flavor_resources(queue, quota.flavor.name)
            derived = quota.resources()
            for resource, entry in resources.items():
                nominal, borrowing, _ = derived.get(resource, (0, 0, None))
                assert entry["nominalQuota"] == _amount(resource, nominal), (plan.name, quota.flavor.name, resource)
                assert entry["borrowingLimit"] == _amount(resource, borrowing), (plan.name, quota.flavor.name, resource)


def test_h100_mig_quota_is_counted_in_mig_devices():
    resources = flavor_resources(queueing.cluster_queue(tenant(_config("multi-pool"), "llm-training")), "h100-on-demand")
    # 16 H100s, each cut 3g.40gb + 2g.20gb + 2x 1g.10gb; borrowing 12 GPUs likewise.
    assert resources["nvidia.com/mig-1g.10gb"]["nominalQuota"] == "32"
    assert resources["nvidia.com/mig-3g.40gb"]["borrowingLimit"] == "12"
    assert resources["nvidia.com/gpu"]["nominalQuota"] == "0"


def test_borrowing_limit_is_always_explicit_because_missing_means_unlimited(config):
    for name, queue in queues(config).items():
        for flavor in group(queue)["flavors"]:
            assert all("borrowingLimit" in r for r in flavor["resources"]), (name, flavor["name"])


def test_lending_limit_appears_only_where_the_tenant_set_one(config):
    for plan in config.tenants:
        queue = queueing.cluster_queue(plan)
        for quota in plan.quotas:
            for resource, entry in flavor_resources(queue, quota.flavor.name).items():
                lending = quota.resources().get(resource, (0, 0, None))[2]
                if lending is None:
                    assert "lendingLimit" not in entry, (plan.name, quota.flavor.name, resource)
                else:
                    assert entry["lendingLimit"] == _amount(resource, lending)


def test_inference_lends_at_most_four_h100s():
    resources = flavor_resources(queueing.cluster_queue(tenant(_config("multi-pool"), "inference")), "h100-on-demand")
    assert resources["nvidia.com/mig-3g.40gb"]["lendingLimit"] == "4"
    assert resources["nvidia.com/mig-1g.10gb"]["lendingLimit"] == "8"
    l40s = flavor_resources(queueing.cluster_queue(tenant(_config("multi-pool"), "inference")), "l40s-on-demand")
    assert "lendingLimit" not in l40s["nvidia.com/gpu"]


def test_each_cluster_queue_admits_only_its_tenants_namespace(config):
    for name, queue in queues(config).items():
        assert queue["metadata"] == {"name": name}
        assert queue["spec"]["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": name}}


def test_tenants_reclaim_their_quota_from_borrowers_and_higher_tiers_preempt_lower_within_a_queue(config):
    for queue in queues(config).values():
        assert queue["spec"]["preemption"] == {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}


def test_fair_sharing_weight_is_the_tenants_weight_as_a_quantity():
    weights = {name: q["spec"]["fairSharing"]["weight"] for name, q in queues(_config("multi-pool")).items()}
    assert weights == {"llm-training": "2", "inference": "1", "data-science": "1", "experiments": "0.5"}


@pytest.mark.parametrize(
    ("weight", "rendered"), [(1.0, "1"), (2.0, "2"), (0.5, "0.5"), (0.25, "0.25"), (100.0, "100"), (1.1, "1.1")]
)
def test_weights_render_as_plain_decimal_quantities(weight, rendered):
    assert plain_decimal(weight) == rendered


# --- cohorts, LocalQueues, priorities --------------------------------------------------------------

def test_business_units_are_cohorts_nested_under_the_root():
    multi_pool = _config("multi-pool")
    tree = {c["metadata"]["name"]: c["spec"].get("parentName") for c in queueing.cohorts(multi_pool.queueing)}
    assert tree == {"acme-ai": None, "research": "acme-ai", "product": "acme-ai"}
    cohort_of = {name: q["spec"]["cohortName"] for name, q in queues(multi_pool).items()}
    assert cohort_of == {"llm-training": "research", "inference": "product", "data-science": "research", "experiments": "product"}


def test_without_business_units_every_queue_joins_the_root_cohort():
    single_pool = _config("single-pool")
    assert [c["metadata"]["name"] for c in queueing.cohorts(single_pool.queueing)] == ["gpu-dev"]
    assert {q["spec"]["cohortName"] for q in queues(single_pool).values()} == {"gpu-dev"}


def test_each_tenant_namespace_has_a_default_local_queue_feeding_its_cluster_queue(config):
    for plan in config.tenants:
        queue = queueing.local_queue(plan)
        # `default` is the name Kueue assigns to jobs that name no queue.
        assert queue["kind"] == "LocalQueue"
        assert queue["metadata"] == {"name": "default", "namespace": plan.name}
        assert queue["spec"] == {"clusterQueue": plan.name}


def test_priority_classes_are_the_configured_tiers(config):
    classes = {c["metadata"]["name"]: c for c in queueing.workload_priority_classes(config.queueing)}
    assert {name: c["value"] for name, c in classes.items()} == config.queueing.priorities
    assert all(c["description"] and "spec" not in c for c in classes.values())


# --- the controller ----------------------------------------------------------------------------------

def _chart_defaults() -> dict[str, Any]:
    return yaml.safe_load(CHART_VALUES.read_text())


def _unknown_keys(values: Any, defaults: Any, path: str = "") -> list[str]:
    """Key paths of `values` that the chart's defaults do not have; maps defaulting to {} and lists are free-form."""
    if not isinstance(values, dict) or not isinstance(defaults, dict) or defaults == {}:
        return []
    unknown = []
    for key, value in values.items():
        if key not in defaults:
            unknown.append(f"{path}{key}")
        else:
            unknown += _unknown_keys(value, defaults[key], f"{path}{key}.")
    return unknown


def test_every_helm_value_is_a_key_of_the_pinned_chart(config):
    assert _unknown_keys(queueing.kueue_values(config.flavors), _chart_defaults()) == []


def test_chart_default_config_is_the_pinned_charts(config):
    defaults = _chart_defaults()
    assert yaml.safe_load(defaults["managerConfig"]["controllerManagerConfigYaml"]) == queueing.CHART_DEFAULT_MANAGER_CONFIG


def test_controller_runs_on_the_system_nodes_with_two_replicas(config):
    manager = queueing.kueue_values(config.flavors)["controllerManager"]
    assert manager["nodeSelector"] == {"CriticalAddonsOnly": "true"}
    assert manager["tolerations"] == [{"key": "CriticalAddonsOnly", "operator": "Equal", "value": "true", "effect": "NoSchedule"}]
    assert manager["replicas"] == 2 and manager["podDisruptionBudget"] == {"enabled": True, "minAvailable": 1}


def _controller_config(config: PlatformConfig) -> dict[str, Any]:
    return yaml.safe_load(queueing.kueue_values(config.flavors)["managerConfig"]["controllerManagerConfigYaml"])


def test_controller_config_changes_the_chart_default_only_where_documented(config):
    ours = _controller_config(config)
    default = yaml.safe_load(_chart_defaults()["managerConfig"]["controllerManagerConfigYaml"])
    changed = {key for key in ours.keys() | default.keys() if ours.get(key) != default.get(key)}
    assert changed == {
        "integrations",
        "manageJobsWithoutQueueName",
        "managedJobsNamespaceSelector",
        "fairSharing",
        "metrics",
        "waitForPodsReady",
        "resources",
    }
    assert ours["metrics"] == {**default["metrics"], "enableClusterQueueResources": True}
    # Integrations are only added to: nothing the chart enables is dropped.
    default_frameworks = default["integrations"]["frameworks"]
    assert ours["integrations"]["frameworks"][: len(default_frameworks)] == default_frameworks


def test_controller_manages_jobs_pods_and_training_operator_kinds(config):
    frameworks = _controller_config(config)["integrations"]["frameworks"]
    for kind in ("batch/job", "pod", "kubeflow.org/pytorchjob", "kubeflow.org/tfjob"):
        assert kind in frameworks
    assert len(frameworks) == len(set(frameworks))


def test_jobs_without_a_queue_name_are_managed_in_tenant_namespaces_only(config):
    controller = _controller_config(config)
    assert controller["manageJobsWithoutQueueName"] is True
    # The label only tenant namespaces carry (kube-system and kueue-system never do, which Kueue requires).
    assert controller["managedJobsNamespaceSelector"] == {
        "matchExpressions": [{"key": "gpu-platform/tenant", "operator": "Exists"}]
    }



def test_admitted_work_that_never_starts_gives_its_quota_back_after_the_slowest_model_server_start(config):
    from config.autoscaling import SERVER_STARTUP_SECONDS

    ready = _controller_config(config)["waitForPodsReady"]
    # apis/config/v1beta2/configuration_types.go (v0.19.2): WaitForPodsReady{timeout, blockAdmission,
    # requeuingStrategy{timestamp, backoffLimitCount, backoffBaseSeconds, backoffMaxSeconds}, recoveryTimeout}.
    assert set(ready) <= {"timeout", "blockAdmission", "requeuingStrategy", "recoveryTimeout"}
    assert set(ready["requeuingStrategy"]) <= {"timestamp", "backoffLimitCount", "backoffBaseSeconds", "backoffMaxSeconds"}
    # Karpenter's launch (5 min) and registration (15 min) timeouts, node setup and image pull (10 min),
    # then the server's startup probe (15 min): 45 minutes, more than Kueue's 30-minute default.
    assert SERVER_STARTUP_SECONDS == 15 * 60
    assert ready["timeout"] == "45m"
    # Evicted work is requeued with backoff and never deactivated (no backoffLimitCount).
    assert ready["requeuingStrategy"] == {"timestamp": "Eviction", "backoffBaseSeconds": 60, "backoffMaxSeconds": 3600}


def test_the_model_servers_startup_probe_allows_the_startup_kueue_waits_for():
    from components.autoscaling.vllm import server_deployment
    from config.autoscaling import SERVER_STARTUP_SECONDS

    platform = _config("multi-pool")
    tenant_plan, deployment = next((t, d) for t in platform.tenants for d in t.config.inference if d.serving)
    flavor = next(q.flavor for q in tenant_plan.quotas if q.flavor.name == deployment.flavor)
    [container] = server_deployment(tenant_plan, deployment, flavor)["spec"]["template"]["spec"]["containers"]
    probe = container["startupProbe"]
    assert probe["failureThreshold"] * probe["periodSeconds"] == SERVER_STARTUP_SECONDS


def test_node_local_resources_are_left_out_of_quota_and_every_other_resource_is_checked(config):
    resources = _controller_config(config)["resources"]
    # BlockUndeclared stays Kueue's default (cmd/kueue/main.go quotaCheckStrategy): a GPU resource the
    # tenant has no quota for keeps its pod out; IgnoreUndeclared would let it through uncounted.
    assert "quotaCheckStrategy" not in resources
    # dropExcludedResources (pkg/workload/workload.go) matches prefixes: none may catch a GPU resource.
    prefixes = resources["excludeResourcePrefixes"]
    assert prefixes == ["ephemeral-storage", "hugepages-", "vpc.amazonaws.com/"]
    for flavor in config.flavors:
        for resource in flavor.resources_per_unit:
            assert not any(resource.startswith(prefix) for prefix in prefixes), resource
    for resource in ("vpc.amazonaws.com/efa", "ephemeral-storage", "hugepages-2Mi"):
        assert any(resource.startswith(prefix) for prefix in prefixes)


def test_dra_device_classes_are_mapped_only_where_a_pool_allocates_through_dra(config):
    resources = _controller_config(config)["resources"]
    has_dra = any(flavor.pool.config.allocation == "dra" for flavor in config.flavors)
    assert ("deviceClassMappings" in resources) is has_dra
    for mapping in resources.get("deviceClassMappings", []):
        # At most 16 mappings of at most 8 classes each (pkg/config/validation.go, validateDeviceClassMappings).
        assert 1 <= len(mapping["deviceClassNames"]) <= 8
    assert len(resources.get("deviceClassMappings", [])) <= 16


def test_fair_sharing_is_on_with_valid_strategies(config):
    # v1beta2 has no `enable`: the section's presence turns it on, and it needs preemptionStrategies.
    assert _controller_config(config)["fairSharing"] == {
        "preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
    }


def test_controller_config_is_deterministic(config):
    assert queueing.manager_config_yaml(config.flavors) == queueing.manager_config_yaml(config.flavors)


# --- conformance against the upstream schemas ----------------------------------------------------------

@functools.cache
def _kueue_crds() -> CustomResourceDefinitions:
    return CustomResourceDefinitions.installed_by([{"chart": KUEUE_PIN.chart, "version": KUEUE_PIN.version}])


def test_kueue_objects_validate_against_the_v1beta2_crds(config):
    manifests = queueing.queueing_manifests(config.queueing, config.flavors, config.tenants)
    version = config.cluster.kubernetes_version
    findings = [
        (m["kind"], m["metadata"]["name"], f) for m in manifests for f in object_findings(m, _kueue_crds(), version).findings
    ]
    assert findings == []
    assert {m["apiVersion"] for m in manifests} == {"kueue.x-k8s.io/v1beta2"}


def test_helm_values_pass_the_chart_conformance_check(config):
    assert chart_values_problems("kueue", queueing.kueue_values(config.flavors)) == []


# --- the component under mocks --------------------------------------------------------------------------

def declare(config: PlatformConfig, stack: str = "test") -> list[RecordedResource]:
    """Run the Queueing component alone under the offline engine's mocks, with stand-in tenant namespaces."""

    def program() -> None:
        provider = k8s.Provider("k8s", kubeconfig="{}")
        namespaces = stand_in_namespaces(provider, config.tenants)
        ready = k8s.core.v1.ConfigMap("system-ready", metadata={"name": "ready"}, opts=pulumi.ResourceOptions(provider=provider))
        queueing.Queueing(
            "q",
            config.queueing,
            config.flavors,
            config.tenants,
            chart=KUEUE_PIN,
            provider=provider,
            namespaces=namespaces,
            depends_on=[ready],
        )

    return run_program(stack, {"aws:region": config.region}, program=program).resources


@functools.cache
def _declared(fixture: str) -> tuple[RecordedResource, ...]:
    return tuple(declare(_config(fixture)))


@pytest.fixture(params=FIXTURES)
def declared(request) -> dict[str, RecordedResource]:
    return {r.name: r for r in _declared(request.param)}


def test_logical_names_derive_from_config_names(declared):
    kueue = {name for name, r in declared.items() if r.type.startswith("kubernetes:kueue.x-k8s.io/")}
    assert "q-flavor-cpu" in kueue
    assert all(name.split("-")[1] in ("flavor", "cohort", "cq", "lq", "priority") for name in kueue)


def test_multi_pool_declares_one_object_per_flavor_cohort_tenant_and_tier():
    names = {r.name for r in _declared("multi-pool")}
    expected = {
        "q-namespace", "q-release",
        "q-flavor-cpu", "q-flavor-h100-on-demand", "q-flavor-a100-spot", "q-flavor-l40s-on-demand",
        "q-cohort-acme-ai", "q-cohort-research", "q-cohort-product",
        "q-priority-production", "q-priority-standard", "q-priority-best-effort",
        *(f"q-{kind}-{t}" for kind in ("cq", "lq") for t in ("llm-training", "inference", "data-science", "experiments")),
    }
    assert expected <= names


def test_release_is_the_pinned_chart_in_kueue_system_after_the_system_nodes(declared):
    release = declared["q-release"]
    assert release.type == "kubernetes:helm.sh/v3:Release"
    assert (release.inputs["name"], release.inputs["namespace"]) == ("kueue", "kueue-system")
    assert (release.inputs["chart"], release.inputs["version"]) == (KUEUE_PIN.chart, KUEUE_PIN.version)
    assert {declared["system-ready"].urn, declared["q-namespace"].urn} <= set(release.dependencies)


def test_every_kueue_object_waits_for_the_release_and_uses_the_cluster_provider(declared):
    release, provider = declared["q-release"].urn, declared["k8s"].urn
    component = next(r for r in declared.values() if r.type == "gpu-platform:queueing:Queueing").urn
    kueue = [r for r in declared.values() if r.type.startswith("kubernetes:kueue.x-k8s.io/")]
    assert kueue
    for r in kueue:
        assert release in r.dependencies, r.name
        assert r.provider == provider and r.parent == component, r.name


def test_local_queues_wait_for_their_namespace_and_cluster_queue(declared):
    lqs = [r for r in declared.values() if r.type == "kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue"]
    assert lqs
    for lq in lqs:
        tenant_name = lq.name.removeprefix("q-lq-")
        assert declared[f"ns-{tenant_name}"].urn in lq.dependencies
        assert declared[f"q-cq-{tenant_name}"].urn in lq.dependencies
        assert lq.inputs["metadata"] == {"name": "default", "namespace": tenant_name}


def test_cluster_queues_wait_for_their_flavors_and_cohort(declared):
    for cq in (r for r in declared.values() if r.type == "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"):
        spec = cq.inputs["spec"]
        for flavor in spec["resourceGroups"][0]["flavors"]:
            assert declared[f"q-flavor-{flavor['name']}"].urn in cq.dependencies
        assert declared[f"q-cohort-{spec['cohortName']}"].urn in cq.dependencies


def test_business_unit_cohorts_wait_for_the_root():
    declared = {r.name: r for r in _declared("multi-pool")}
    for unit in ("research", "product"):
        assert declared["q-cohort-acme-ai"].urn in declared[f"q-cohort-{unit}"].dependencies


def test_priority_classes_carry_value_and_description_at_the_top_level():
    declared = {r.name: r for r in _declared("multi-pool")}
    production = declared["q-priority-production"]
    assert production.type == "kubernetes:kueue.x-k8s.io/v1beta2:WorkloadPriorityClass"
    assert production.inputs["value"] == 1000 and production.inputs["description"]
    assert production.inputs["metadata"] == {"name": "production"}


def test_declared_inputs_are_the_builders_manifests():
    multi_pool = _config("multi-pool")
    declared = {r.name: r for r in _declared("multi-pool")}
    assert declared["q-cq-inference"].inputs["spec"] == normalise(queueing.cluster_queue(tenant(multi_pool, "inference"))["spec"])


def test_adding_a_tenant_only_adds_its_resources():
    document = fixture_document("single-pool")
    document["gpu-platform:tenants"].append({"name": "newcomer", "gpu": {"l40s-spot": {"nominal": 4}}})
    before = {r.name: r.inputs for r in _declared("single-pool")}
    after = {r.name: r.inputs for r in declare(load(document)) if not r.name.startswith("ns-")}
    added = set(after) - set(before)
    assert added == {"q-cq-newcomer", "q-lq-newcomer"}
    changed = {name for name in before if not name.startswith("ns-") and before[name] != after[name]}
    # Kueue selects tenant namespaces by label, so nothing else (not even its release) changes.
    assert changed == set()
