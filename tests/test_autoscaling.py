"""KEDA and the inference deployments it scales: what a tenant's service does under load, idle and outages."""

from __future__ import annotations

import functools
import random
import re
import shutil
import subprocess
from typing import Any

import promql_parser
import pulumi
import pulumi_kubernetes as k8s
import pytest

from components import autoscaling
from components.autoscaling import vllm
from config import PlatformConfig
from config.autoscaling import CLASS_PRESETS
from config.labels import GPU_TAINT, LOCAL_QUEUE
from config.versions import CHARTS
from offline.builtin_kinds import built_in_findings
from offline.engine import RecordedResource, run_program
from offline.openapi import Finding
from offline.validate import CustomResourceDefinitions, object_findings

from .conftest import FIXTURES, chart_values_problems, fixture_document, load, render_fixture, stand_in_namespaces
from .conftest import fixture_config as _config

KEDA_PIN = CHARTS["keda"]
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
SYSTEM_PLACEMENT = {
    "nodeSelector": {"CriticalAddonsOnly": "true"},
    "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
}


def _with_chat(**changes: Any) -> PlatformConfig:
    """single-pool, with its `inference/chat` deployment changed."""
    document = fixture_document("single-pool")
    tenant = next(t for t in document["gpu-platform:tenants"] if t["name"] == "inference")
    tenant["inference"][0].update(changes)
    return load(document)


def _deployment(config: PlatformConfig, tenant: str, name: str):
    plan = next(t for t in config.tenants if t.name == tenant)
    return plan, next(d for d in plan.config.inference if d.name == name)


def _scaled_object(config: PlatformConfig, tenant: str, name: str) -> dict[str, Any]:
    plan, deployment = _deployment(config, tenant, name)
    return autoscaling.scaled_object(plan, deployment, config.autoscaling)


def _triggers(scaled: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["name"]: t for t in scaled["spec"]["triggers"]}


def _every_scaled_object() -> list[dict[str, Any]]:
    return [
        autoscaling.scaled_object(t, d, config.autoscaling)
        for config in map(_config, FIXTURES)
        for t in config.tenants
        for d in t.config.inference
    ]


@pytest.fixture
def embeddings() -> list[dict[str, Any]]:
    """multi-pool's llm-training/embeddings, served by the platform on a100-spot: Deployment, Service, PDB, ScaledObject."""
    config = _config("multi-pool")
    plan, deployment = _deployment(config, "llm-training", "embeddings")
    return autoscaling.deployment_objects(plan, deployment, config.autoscaling)


def _kind(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    return next(o for o in objects if o["kind"] == kind)


# --- thresholds from the class presets --------------------------------------------------------------------

@pytest.mark.parametrize("workload_class", ["realtime", "batch", "interactive"])
def test_class_preset_sets_gpu_thresholds_and_cooldown(workload_class):
    preset = CLASS_PRESETS[workload_class]
    scaled = _scaled_object(_with_chat(**{"class": workload_class}), "inference", "chat")
    gpu = _triggers(scaled)["gpu-utilization"]["metadata"]
    assert gpu["threshold"] == str(preset.scale_up_utilization)
    assert gpu["activationThreshold"] == str(preset.scale_down_utilization)
    assert scaled["spec"]["cooldownPeriod"] == preset.cooldown_seconds


def test_stack_override_of_a_class_replaces_its_preset():
    document = fixture_document("single-pool")
    document["gpu-platform:autoscaling"] = {
        "classes": {"realtime": {"scaleUpUtilization": 80, "scaleDownUtilization": 20, "cooldownSeconds": 120}}
    }
    scaled = _scaled_object(load(document), "inference", "chat")
    gpu = _triggers(scaled)["gpu-utilization"]["metadata"]
    assert (gpu["threshold"], gpu["activationThreshold"], scaled["spec"]["cooldownPeriod"]) == ("80", "20", 120)


def test_replica_bounds_and_target_come_from_the_deployment():
    spec = _scaled_object(_config("multi-pool"), "inference", "chat")["spec"]
    assert (spec["minReplicaCount"], spec["maxReplicaCount"]) == (2, 12)
    assert spec["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "chat"}
    assert spec["pollingInterval"] == 15


# --- triggers -----------------------------------------------------------------------------------------------

def test_queue_depth_trigger_exists_only_with_a_target():
    with_target = _triggers(_scaled_object(_config("single-pool"), "inference", "chat"))
    assert with_target["queue-depth"]["metadata"]["threshold"] == "10"
    assert "vllm:num_requests_waiting" in with_target["queue-depth"]["metadata"]["query"]
    without = _triggers(_scaled_object(_config("multi-pool"), "data-science", "notebook-assist"))
    assert list(without) == ["gpu-utilization", "working-hours"]  # its working hours are a cron trigger


def test_gpu_average_is_not_divided_by_replicas_but_queue_sum_is():
    # The HPA divides an AverageValue metric by the replica count: right for a sum of waiting requests,
    # wrong for a utilisation that is already an average (4 replicas at 80 % would read as 20 %).
    triggers = _triggers(_scaled_object(_config("single-pool"), "inference", "chat"))
    assert triggers["gpu-utilization"]["metricType"] == "Value"
    assert triggers["gpu-utilization"]["metadata"]["query"].startswith("avg(")
    assert triggers["queue-depth"]["metricType"] == "AverageValue"
    assert triggers["queue-depth"]["metadata"]["query"].startswith("sum(")


@pytest.mark.parametrize("scaled", _every_scaled_object(), ids=lambda s: f"{s['metadata']['namespace']}/{s['metadata']['name']}")
def test_an_empty_query_reads_as_zero_so_the_fallback_never_holds_replicas_for_missing_series(scaled):
    # kedacore/keda v2.20.2 pkg/scalers/prometheus_scaler.go: an empty result is 0 with ignoreNullValues
    # true, an error otherwise; pkg/fallback/fallback.go: after failureThreshold errors
    # currentReplicasIfHigher serves max(current, fallback) replicas for as long as the errors last.
    # Every trigger but the working-hours cron (which reads no metric) queries Prometheus.
    for trigger in (t for t in scaled["spec"]["triggers"] if t["name"] != "working-hours"):
        assert trigger["type"] == "prometheus"
        assert trigger["metadata"]["ignoreNullValues"] == "true"
        assert trigger["metadata"]["serverAddress"] == "http://kube-prometheus-stack-prometheus.monitoring.svc:9090"


def test_the_hpa_doubles_within_15_seconds_and_gives_back_a_quarter_a_minute_after_5_quiet_minutes():
    advanced = _scaled_object(_config("multi-pool"), "inference", "chat")["spec"]["advanced"]
    behavior = advanced["horizontalPodAutoscalerConfig"]["behavior"]
    assert behavior == {
        "scaleUp": {
            "stabilizationWindowSeconds": 0,
            "selectPolicy": "Max",
            "policies": [
                {"type": "Percent", "value": 100, "periodSeconds": 15},
                {"type": "Pods", "value": 4, "periodSeconds": 15},
            ],
        },
        "scaleDown": {"stabilizationWindowSeconds": 300, "policies": [{"type": "Percent", "value": 25, "periodSeconds": 60}]},
    }


@pytest.mark.parametrize(("fixture", "replicas"), [("single-pool", 1), ("multi-pool", 2)])
def test_failing_queries_fall_back_without_scaling_a_loaded_service_down(fixture, replicas):
    scaled = _scaled_object(_config(fixture), "inference", "chat")
    assert scaled["spec"]["fallback"] == {
        "failureThreshold": 3,
        "replicas": replicas,
        "behavior": "currentReplicasIfHigher",
    }
    # KEDA computes fallback metrics only for Value / AverageValue targets.
    assert {t["metricType"] for t in scaled["spec"]["triggers"]} <= {"Value", "AverageValue"}


def test_fallback_never_exceeds_what_the_deployment_may_run():
    document = fixture_document("single-pool")
    document["gpu-platform:autoscaling"] = {"fallbackReplicas": 50}
    assert _scaled_object(load(document), "inference", "chat")["spec"]["fallback"]["replicas"] == 8


# --- queries --------------------------------------------------------------------------------------------------

def _pod_names(deployment: str, count: int, seed: int) -> list[str]:
    """Pod names a ReplicaSet of `deployment` can get: <deployment>-<hash>-<5 random>, apimachinery's alphabet."""
    rng = random.Random(seed)
    alphabet = autoscaling.POD_NAME_ALPHABET
    return [
        f"{deployment}-{''.join(rng.choices(alphabet, k=rng.randint(6, 10)))}-{''.join(rng.choices(alphabet, k=5))}"
        for _ in range(count)
    ]


def _matchers(query: str, metric: str) -> dict[str, tuple[str, str]]:
    """The label matchers of `metric`'s selector in `query`, parsed by a real PromQL parser: name -> (op, value)."""
    found: list[Any] = []

    def walk(node: Any) -> None:
        if isinstance(node, promql_parser.VectorSelector) and node.name == metric:
            found.append(node)
        for child in ("expr", "lhs", "rhs"):
            if hasattr(node, child):
                walk(getattr(node, child))

    walk(promql_parser.parse(query))
    assert len(found) == 1, query
    return {m.name: (str(m.op), m.value) for m in found[0].matchers.matchers}


def _selects(matchers: dict[str, tuple[str, str]], labels: dict[str, str]) -> bool:
    """Prometheus semantics: `=` is equality, `=~` a fully anchored RE2 match (Python's fullmatch for these patterns)."""
    for name, (op, value) in matchers.items():
        actual = labels.get(name, "")
        if op.endswith("Equal") and actual != value:
            return False
        if op.endswith("Re") and not re.fullmatch(value, actual):
            return False
    return True


@pytest.mark.parametrize("metric", ["DCGM_FI_DEV_GPU_UTIL", "vllm:num_requests_waiting"])
def test_query_selects_only_its_deployments_pods_in_its_namespace(metric):
    config = _with_chat(minReplicas=1)
    plan, deployment = _deployment(config, "inference", "chat")
    query = next(q for q in autoscaling.queries(plan, deployment).values() if metric in q)
    matchers = _matchers(query, metric)
    scrape = {"job": "nvidia-dcgm-exporter"} if metric.startswith("DCGM") else {}  # the exporter's series only
    for pod in ["chat-5c7d9f8b4d-x7k2p", *_pod_names("chat", 200, seed=1)]:
        assert _selects(matchers, {**scrape, "namespace": "inference", "pod": pod}), pod
    others = [
        *_pod_names("chat-v2", 200, seed=2),  # a deployment whose name extends ours
        *_pod_names("chat-b", 200, seed=3),
        "chat-v2-5c7d9f8b4d-x7k2p",
        "chatbot-5c7d9f8b4d-x7k2p",
        "xchat-5c7d9f8b4d-x7k2p",
        "chat-0",  # a StatefulSet's pod
        "chat-warmup-x7k2p",  # a Job's pod
        "chat-5c7d9f8b4d",
    ]
    for pod in others:
        assert not _selects(matchers, {**scrape, "namespace": "inference", "pod": pod}), pod
    assert not _selects(matchers, {**scrape, "namespace": "data-science", "pod": "chat-5c7d9f8b4d-x7k2p"})


def _all_queries() -> list[str]:
    found: list[str] = []
    for config in map(_config, FIXTURES):
        for plan in config.tenants:
            for deployment in plan.config.inference:
                found += autoscaling.queries(plan, deployment).values()
                found.append(autoscaling.queue_depth_query(plan.namespace, deployment.name))
    return found


@pytest.mark.parametrize("query", _all_queries())
def test_every_query_parses_as_promql(query):
    promql_parser.parse(query)


def test_the_parser_would_catch_a_broken_query():
    with pytest.raises(ValueError):
        promql_parser.parse('avg(DCGM_FI_DEV_GPU_UTIL{namespace="inference"')


def test_queue_metric_name_keeps_its_colon():
    assert _matchers(autoscaling.queue_depth_query("inference", "chat"), "vllm:num_requests_waiting")


def test_a_deployment_cannot_be_configured_to_scale_to_zero():
    """Both triggers read metrics the deployment's own pods emit: at zero replicas nothing would wake it."""
    from config import ConfigError

    from .conftest import fixture_document, load

    doc = fixture_document("multi-pool")
    doc["gpu-platform:tenants"][0]["inference"][0]["minReplicas"] = 0
    with pytest.raises(ConfigError) as caught:
        load(doc)
    assert caught.value.problems == [
        "gpu-platform:tenants[llm-training].inference[embeddings].minReplicas: 0 would scale the deployment to zero, "
        "and nothing wakes it there: both triggers (GPU utilisation and queue depth) read metrics its own pods emit; "
        "use 1 or more"
    ]


PROMTOOL_TEST = """
rule_files: []
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - {{series: 'DCGM_FI_DEV_GPU_UTIL{{{dcgm}, namespace="inference", pod="chat-5c7d9f8b4d-x7k2p", gpu="0"}}', values: '90x5'}}
      - {{series: 'DCGM_FI_DEV_GPU_UTIL{{{dcgm}, namespace="inference", pod="chat-5c7d9f8b4d-b2k4n", gpu="1"}}', values: '70x5'}}
      - {{series: 'DCGM_FI_DEV_GPU_UTIL{{{dcgm}, namespace="inference", pod="chat-v2-6d8f9b7c5d-q2w4z", gpu="2"}}', values: 0x5}}
      - {{series: 'DCGM_FI_DEV_GPU_UTIL{{{dcgm}, namespace="other", pod="chat-5c7d9f8b4d-x7k2p", gpu="0"}}', values: '0x5'}}
      - {{series: 'vllm:num_requests_waiting{{namespace="inference", pod="chat-5c7d9f8b4d-x7k2p"}}', values: '6x5'}}
      - {{series: 'vllm:num_requests_waiting{{namespace="inference", pod="chat-5c7d9f8b4d-b2k4n"}}', values: '4x5'}}
      - {{series: 'vllm:num_requests_waiting{{namespace="inference", pod="chat-v2-6d8f9b7c5d-q2w4z"}}', values: '100x5'}}
    promql_expr_test:
      - expr: '{gpu}'
        eval_time: 2m
        exp_samples: [{{labels: '{{}}', value: 80}}]
      - expr: '{queue}'
        eval_time: 2m
        exp_samples: [{{labels: '{{}}', value: 10}}]
      - expr: '{broken}'
        eval_time: 2m
        exp_samples: []
"""


def test_queries_compute_the_deployments_own_load_in_prometheus(tmp_path):
    """promtool evaluates the queries on samples: chat-v2's idle GPU and long queue do not count for chat."""
    promtool = shutil.which("promtool")
    assert promtool, "promtool is missing: `make test` installs it (scripts/ensure-promtool)"
    path = tmp_path / "queries.test.yaml"
    path.write_text(
        PROMTOOL_TEST.format(
            dcgm='job="nvidia-dcgm-exporter"',  # the GPU Operator's exporter writes these series
            gpu=autoscaling.gpu_utilization_query("inference", "chat"),
            queue=autoscaling.queue_depth_query("inference", "chat"),
            # A deployment with no GPU series stays empty: KEDA reads 0 and counts an empty response.
            broken=autoscaling.gpu_utilization_query("inference", "chat-v3"),
        )
    )
    result = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


# --- the served model -----------------------------------------------------------------------------------------

def test_server_requests_its_gpus_on_its_flavors_nodes(embeddings):
    pod = _kind(embeddings, "Deployment")["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["resources"]["requests"]["nvidia.com/gpu"] == "1"
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert GPU_TOLERATION in pod["tolerations"]
    assert GPU_TOLERATION == {**GPU_TAINT, "operator": "Equal"}
    assert pod["nodeSelector"] == {"gpu-platform/node-pool": "gpu-a100"}
    assert container["args"] == [
        "--model", "BAAI/bge-large-en-v1.5", "--port", "8000", "--revision", "d4aa6901d3a41ba39fb536a557fa166f842b0e09"
    ]


def test_server_is_admitted_through_the_tenants_local_queue(embeddings):
    deployment = _kind(embeddings, "Deployment")
    assert LOCAL_QUEUE == "default"
    assert deployment["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == LOCAL_QUEUE
    assert deployment["spec"]["template"]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == LOCAL_QUEUE


def test_server_runs_as_non_root_under_pod_security_restricted(embeddings):
    pod = _kind(embeddings, "Deployment")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 1000
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    container = pod["containers"][0]["securityContext"]
    assert container == {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def test_server_drains_in_flight_requests_within_a_spot_warning(embeddings):
    pod = _kind(embeddings, "Deployment")["spec"]["template"]["spec"]
    drain = pod["containers"][0]["lifecycle"]["preStop"]["sleep"]["seconds"]
    assert pod["terminationGracePeriodSeconds"] >= 120 + 15
    # Drain plus a shutdown of up to 20 s fits inside the two-minute warning.
    assert 30 <= drain <= 120 - 20
    assert drain < pod["terminationGracePeriodSeconds"]


def test_server_is_probed_on_vllm_health(embeddings):
    container = _kind(embeddings, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": "/health", "port": "http"}
    # Liveness never runs during a model download: the startup probe allows 15 minutes.
    assert container["startupProbe"]["failureThreshold"] * container["startupProbe"]["periodSeconds"] >= 600


def test_keda_owns_the_replica_count(embeddings):
    assert "replicas" not in _kind(embeddings, "Deployment")["spec"]
    deployment = _kind(embeddings, "Deployment")
    assert _kind(embeddings, "ScaledObject")["spec"]["scaleTargetRef"]["name"] == deployment["metadata"]["name"]


def test_service_keeps_traffic_in_the_callers_zone(embeddings):
    service = _kind(embeddings, "Service")
    deployment = _kind(embeddings, "Deployment")
    assert service["spec"]["trafficDistribution"] == "PreferClose"
    assert service["spec"]["type"] == "ClusterIP"
    assert service["spec"]["selector"].items() <= deployment["spec"]["template"]["metadata"]["labels"].items()


def test_disruption_budget_lets_drains_progress_one_replica_at_a_time(embeddings):
    budget = _kind(embeddings, "PodDisruptionBudget")["spec"]
    assert budget["maxUnavailable"] == 1 and "minAvailable" not in budget
    pod_labels = _kind(embeddings, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert budget["selector"]["matchLabels"].items() <= pod_labels.items()


def test_tensor_parallel_replicas_use_all_their_gpus():
    document = fixture_document("multi-pool")
    tenant = next(t for t in document["gpu-platform:tenants"] if t["name"] == "llm-training")
    tenant["inference"][0].update(gpusPerReplica=2, maxReplicas=4)
    config = load(document)
    plan, deployment = _deployment(config, "llm-training", "embeddings")
    server = vllm.server_deployment(plan, deployment, vllm.tenant_flavor(plan, "a100-spot"))
    container = server["spec"]["template"]["spec"]["containers"][0]
    assert container["args"][-2:] == ["--tensor-parallel-size", "2"]
    assert container["resources"]["requests"]["nvidia.com/gpu"] == "2"


@pytest.mark.parametrize("version", ["1.33", "1.35"])
def test_built_in_kinds_validate_strictly(embeddings, version):
    for manifest in embeddings:
        if manifest["kind"] not in ("ScaledObject", "PodMonitor"):  # custom resources: checked against their CRDs below
            assert built_in_findings(manifest, version) == [], manifest["kind"]


# --- conformance against the upstream schemas ----------------------------------------------------------------

@functools.cache
def _keda_crds() -> CustomResourceDefinitions:
    return CustomResourceDefinitions.installed_by([{"chart": KEDA_PIN.chart, "version": KEDA_PIN.version}])


def _crd_findings(scaled: dict[str, Any], fixture: str) -> list[Finding]:
    return object_findings(scaled, _keda_crds(), _config(fixture).cluster.kubernetes_version).findings


def test_scaled_objects_validate_against_the_keda_crd():
    for fixture in FIXTURES:
        config = _config(fixture)
        for tenant in config.tenants:
            for deployment in tenant.config.inference:
                assert _crd_findings(autoscaling.scaled_object(tenant, deployment, config.autoscaling), fixture) == []


def test_the_crd_check_catches_a_broken_scaled_object():
    broken = _scaled_object(_config("multi-pool"), "inference", "chat")
    broken["spec"]["minReplicaCount"] = 20  # above maxReplicaCount: a CEL rule of the CRD
    assert [(f.path, f.reason.split(" (rule: ")[0]) for f in _crd_findings(broken, "multi-pool")] == [
        (("spec",), "minReplicaCount must be less than or equal to maxReplicaCount")
    ]


def test_helm_values_pass_the_chart_conformance_check():
    assert chart_values_problems("keda", autoscaling.keda_values()) == []


def test_keda_runs_on_the_system_nodes_and_is_scraped():
    values = autoscaling.keda_values()
    assert {key: values[key] for key in SYSTEM_PLACEMENT} == SYSTEM_PLACEMENT
    # No component overrides the top-level placement the chart falls back to.
    for component in ("operator", "metricsServer", "webhooks"):
        assert not {"nodeSelector", "tolerations"} & set(values.get(component, {}))
    operator = values["prometheus"]["operator"]
    assert operator["enabled"] and operator["serviceMonitor"]["enabled"]
    assert operator["serviceMonitor"]["additionalLabels"] == {"release": "kube-prometheus-stack"}


def _contains(outer: Any, inner: Any) -> bool:
    if isinstance(inner, dict):
        return isinstance(outer, dict) and all(k in outer and _contains(outer[k], v) for k, v in inner.items())
    return outer == inner


def test_keda_exposes_what_the_monitoring_stack_scrapes():
    prometheus = pytest.importorskip("components.lib.prometheus")
    assert _contains(autoscaling.keda_values(), prometheus.CHART_SCRAPE_VALUES["keda"])


# --- the component under mocks -------------------------------------------------------------------------------

def declare(config: PlatformConfig, stack: str = "test") -> list[RecordedResource]:
    """Run the Autoscaling component alone under the offline engine's mocks, with stand-in namespaces."""

    def program() -> None:
        provider = k8s.Provider("k8s", kubeconfig="{}")
        namespaces = stand_in_namespaces(provider, config.tenants)
        monitoring = k8s.core.v1.ConfigMap(
            "monitoring-ready", metadata={"name": "ready"}, opts=pulumi.ResourceOptions(provider=provider)
        )
        autoscaling.Autoscaling(
            "gpu",
            config.tenants,
            config.autoscaling,
            chart=KEDA_PIN,
            provider=provider,
            namespaces=namespaces,
            local_queues=namespaces,  # stand-ins: the whole program's queues are checked in test_deploy_order.py
            depends_on=[monitoring],
        )

    return run_program(stack, {"aws:region": config.region}, program=program).resources


@functools.cache
def _declared(fixture: str) -> tuple[RecordedResource, ...]:
    return tuple(declare(_config(fixture)))


@pytest.fixture(params=FIXTURES)
def declared(request) -> dict[str, RecordedResource]:
    return {r.name: r for r in _declared(request.param)}


def test_multi_pool_declares_keda_and_one_scaler_per_deployment_plus_the_served_model():
    names = {r.name for r in _declared("multi-pool")}
    assert {
        "gpu-keda-namespace", "gpu-keda",
        "gpu-inference-chat-scaler", "gpu-data-science-notebook-assist-scaler", "gpu-llm-training-embeddings-scaler",
        "gpu-llm-training-embeddings-server", "gpu-llm-training-embeddings-service", "gpu-llm-training-embeddings-pdb",
    } <= names
    assert not any(n.startswith("gpu-inference-chat-") and not n.endswith("-scaler") for n in names)


def test_release_is_the_pinned_chart_in_keda_after_monitoring(declared):
    release = declared["gpu-keda"]
    assert release.type == "kubernetes:helm.sh/v3:Release"
    assert (release.inputs["name"], release.inputs["namespace"]) == ("keda", "keda")
    assert (release.inputs["chart"], release.inputs["version"]) == (KEDA_PIN.chart, KEDA_PIN.version)
    assert release.inputs["repositoryOpts"] == {"repo": KEDA_PIN.repository}
    assert {declared["monitoring-ready"].urn, declared["gpu-keda-namespace"].urn} <= set(release.dependencies)


def test_every_tenant_object_waits_for_its_namespace_and_the_keda_crds(declared):
    release = declared["gpu-keda"].urn
    tenant_objects = [r for r in declared.values() if r.name.rsplit("-", 1)[-1] in ("scaler", "server", "service", "pdb")]
    assert tenant_objects
    for record in tenant_objects:
        namespace = record.inputs["metadata"]["namespace"]
        assert {declared[f"ns-{namespace}"].urn, release} <= set(record.dependencies), record.name


def test_every_object_is_a_child_on_the_cluster_provider(declared):
    component = next(r for r in declared.values() if r.type == "gpu-platform:autoscaling:Autoscaling")
    for record in declared.values():
        if record.parent == component.urn:
            assert record.custom and record.provider.endswith("::k8s"), record.name


def test_scaled_object_is_declared_as_built(declared):
    record = next(r for r in declared.values() if r.name == "gpu-inference-chat-scaler")
    assert record.type == "kubernetes:keda.sh/v1alpha1:ScaledObject"
    config = _config("multi-pool") if "gpu-data-science-notebook-assist-scaler" in declared else _config("single-pool")
    expected = _scaled_object(config, "inference", "chat")
    assert record.inputs["spec"] == expected["spec"]
    assert record.inputs["metadata"]["name"] == "chat" and record.inputs["metadata"]["namespace"] == "inference"


def test_adding_a_deployment_only_adds_resources():
    before = {r.name: r.inputs for r in _declared("single-pool")}
    document = fixture_document("single-pool")
    tenant = next(t for t in document["gpu-platform:tenants"] if t["name"] == "inference")
    tenant["inference"].append({"name": "chat-v2", "flavor": "l40s-on-demand", "class": "interactive", "maxReplicas": 2})
    after = {r.name: r.inputs for r in declare(load(document))}
    assert set(after) - set(before) == {"gpu-inference-chat-v2-scaler"}
    assert all(after[name] == inputs for name, inputs in before.items())


def test_a_platform_served_model_follows_the_serving_convention_its_tenants_pod_monitor_scrapes(embeddings):
    deployment = _kind(embeddings, "Deployment")
    plan, _ = _deployment(_config("multi-pool"), "llm-training", "embeddings")
    monitor = autoscaling.serving_pod_monitor(plan)
    assert monitor["metadata"]["namespace"] == deployment["metadata"]["namespace"]
    template_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= template_labels.items()
    [endpoint] = monitor["spec"]["podMetricsEndpoints"]
    ports = {p["name"] for p in deployment["spec"]["template"]["spec"]["containers"][0]["ports"]}
    assert endpoint["port"] in ports and endpoint["path"] == "/metrics"
    assert "PodMonitor" not in {m["kind"] for m in embeddings}, "one PodMonitor per namespace scrapes each server once"


def test_every_tenant_with_inference_gets_one_serving_pod_monitor_and_no_other_tenant_does():
    for name in FIXTURES:
        config = _config(name)
        monitors = [
            r.inputs for r in render_fixture(name).resources
            if r.inputs.get("kind") == "PodMonitor" and r.name.endswith("-serving-metrics")
        ]
        expected = sorted(plan.namespace for plan in config.tenants if plan.config.inference)
        assert sorted(m["metadata"]["namespace"] for m in monitors) == expected
        assert all(m["metadata"]["name"] == autoscaling.SERVING_POD_MONITOR for m in monitors)
