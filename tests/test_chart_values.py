"""Helm values the platform's behaviour rests on, read from the rendered releases of the fixtures.

Each expectation is a literal with the reason it matters; where it overrides a chart default, the
default is named with the upstream file it comes from (vendored under upstream/<chart>/<version>/).
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from offline.engine import Recording

from .conftest import render_fixture

RELEASE = "kubernetes:helm.sh/v3:Release"
# The system node group's label and taint (components/system_nodes.py declares them on the group).
SYSTEM_NODE_PLACEMENT = {
    "nodeSelector": {"CriticalAddonsOnly": "true"},
    "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
}


def values(recording: Recording, release: str) -> dict[str, Any]:
    [found] = [r for r in recording.by_type(RELEASE) if r.inputs["name"] == release]
    return found.inputs["values"]


def scaled_objects(recording: Recording) -> list[dict[str, Any]]:
    return [r.inputs for r in recording.resources if r.inputs.get("kind") == "ScaledObject"]


# --- GPU metrics reach the autoscaler -----------------------------------------------------------------


@pytest.mark.parametrize("fixture", ["single-pool", "multi-pool"])
def test_dcgm_metrics_keep_the_namespace_and_pod_of_the_workload_using_each_gpu(fixture):
    # dcgm-exporter labels each GPU's series with the `namespace` and `pod` using it. Those collide
    # with the target's own labels (the exporter's pod in gpu-operator); with honorLabels false (the
    # chart default: NVIDIA/gpu-operator v26.7.0 deployments/gpu-operator/values.yaml,
    # dcgmExporter.serviceMonitor.honorLabels) Prometheus renames them exported_namespace/exported_pod.
    exporter = values(render_fixture(fixture), "gpu-operator")["dcgmExporter"]
    assert exporter["serviceMonitor"] == {"enabled": True, "honorLabels": True}


@pytest.mark.parametrize("fixture", ["single-pool", "multi-pool"])
def test_the_gpu_trigger_selects_dcgm_series_by_the_labels_honor_labels_keeps(fixture):
    objects = scaled_objects(render_fixture(fixture))
    assert objects
    for scaled in objects:
        namespace = scaled["metadata"]["namespace"]
        [gpu] = [t for t in scaled["spec"]["triggers"] if t["name"] == "gpu-utilization"]
        query = gpu["metadata"]["query"]
        assert query.startswith("avg((DCGM_FI_DEV_GPU_UTIL{")
        assert f'namespace="{namespace}"' in query and 'pod=~"' in query
        assert "exported_" not in query


def test_keda_queries_the_prometheus_service_kube_prometheus_stack_creates():
    # Release `kube-prometheus-stack` in `monitoring`: its fullname is the release name, the Service
    # `<fullname>-prometheus` on port 9090 (kube-prometheus-stack-88.5.3 templates/prometheus/service.yaml).
    for scaled in scaled_objects(render_fixture("multi-pool")):
        # The working-hours cron trigger reads no metric; every other trigger queries Prometheus.
        for trigger in (t for t in scaled["spec"]["triggers"] if t["type"] != "cron"):
            assert trigger["type"] == "prometheus"
            assert trigger["metadata"]["serverAddress"] == "http://kube-prometheus-stack-prometheus.monitoring.svc:9090"


# --- Prometheus scrapes every namespace -----------------------------------------------------------------


def test_prometheus_selects_monitors_rules_and_probes_of_every_release_and_namespace():
    # The chart defaults `*SelectorNilUsesHelmValues: true`, which limits Prometheus to objects labelled
    # with its own release (kube-prometheus-stack-88.5.3 values.yaml, prometheus.prometheusSpec).
    spec = values(render_fixture("multi-pool"), "kube-prometheus-stack")["prometheus"]["prometheusSpec"]
    for kind in ("rule", "serviceMonitor", "podMonitor", "probe", "scrapeConfig"):
        assert spec[f"{kind}SelectorNilUsesHelmValues"] is False, kind
        assert spec[f"{kind}Selector"] == {} and spec[f"{kind}NamespaceSelector"] == {}, kind


def test_prometheus_keeps_the_fixtures_retention_replicas_and_volume():
    spec = values(render_fixture("multi-pool"), "kube-prometheus-stack")["prometheus"]["prometheusSpec"]
    # multi-pool.yaml: monitoring.retention 30d, storageGiB 500, replicas 2.
    assert (spec["retention"], spec["replicas"]) == ("30d", 2)
    assert spec["storageSpec"]["volumeClaimTemplate"]["spec"] == {
        "storageClassName": "gp3-encrypted",
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "500Gi"}},
    }


def test_alertmanager_reads_each_credential_from_a_key_of_the_secret_it_mounts():
    recording = render_fixture("multi-pool")
    alertmanager = values(recording, "kube-prometheus-stack")["alertmanager"]
    [secret] = [r.inputs for r in recording.resources if r.inputs.get("kind") == "Secret"]
    assert alertmanager["alertmanagerSpec"]["secrets"] == [secret["metadata"]["name"]]
    files = [
        config[key]
        for receiver in alertmanager["config"]["receivers"]
        for configs in (receiver.get("slack_configs", []), receiver.get("pagerduty_configs", []))
        for config in configs
        for key in ("api_url_file", "routing_key_file")
        if key in config
    ]
    # prometheus-operator mounts alertmanagerSpec.secrets at /etc/alertmanager/secrets/<secret>/<key>.
    mounted = f"/etc/alertmanager/secrets/{secret['metadata']['name']}"
    assert sorted(files) == sorted(f"{mounted}/{key}" for key in secret["stringData"])
    assert not any(key in config for receiver in alertmanager["config"]["receivers"]
                   for configs in receiver.values() if isinstance(configs, list)
                   for config in configs for key in ("api_url", "routing_key", "service_key"))


def test_alerts_go_to_every_receiver_that_takes_their_severity():
    route = values(render_fixture("multi-pool"), "kube-prometheus-stack")["alertmanager"]["config"]["route"]
    # multi-pool.yaml: gpu-oncall takes critical, gpu-platform warning and info; the Watchdog goes nowhere.
    assert route["receiver"] == "null"
    assert route["routes"] == [
        {"receiver": "null", "matchers": ['alertname = "Watchdog"']},
        {"receiver": "gpu-oncall", "matchers": ['severity =~ "critical"'], "continue": True},
        {"receiver": "gpu-platform", "matchers": ['severity =~ "warning|info"'], "continue": True},
    ]


# --- controllers -------------------------------------------------------------------------------------


def test_karpenter_knows_its_cluster_queue_and_region_and_takes_crds_from_their_own_release():
    recording = render_fixture("multi-pool")
    [controller] = [r for r in recording.by_type(RELEASE) if r.inputs["name"] == "karpenter"]
    settings = controller.inputs["values"]
    # The fixture's cluster gpu-prod in us-east-1; the interruption queue is named for the cluster.
    assert settings["settings"] == {
        "clusterName": "gpu-prod",
        "interruptionQueue": "gpu-prod",
        "featureGates": {"nodeOverlay": True},
    }
    assert settings["controller"]["env"] == [{"name": "AWS_REGION", "value": "us-east-1"}]
    assert settings["serviceAccount"] == {"name": "karpenter"}
    assert controller.inputs["skipCrds"] is True
    assert controller.inputs["namespace"] == "kube-system"


@pytest.mark.parametrize("release", ["karpenter", "keda"])
def test_controllers_run_two_replicas_on_the_system_nodes(release):
    found = values(render_fixture("multi-pool"), release)
    assert {key: found[key] for key in SYSTEM_NODE_PLACEMENT} == SYSTEM_NODE_PLACEMENT
    replicas = found["replicas"] if release == "karpenter" else found["operator"]["replicaCount"]
    assert replicas == 2


def test_keda_service_monitors_carry_the_label_kube_prometheus_stack_selects_by_default():
    prometheus = values(render_fixture("multi-pool"), "keda")["prometheus"]
    for component in ("operator", "metricServer", "webhooks"):
        assert prometheus[component]["enabled"] is True
        monitor = prometheus[component]["serviceMonitor"]
        assert monitor == {"enabled": True, "additionalLabels": {"release": "kube-prometheus-stack"}}


@pytest.mark.parametrize(
    "fixture, strategy, layouts",
    [
        ("single-pool", "mixed", {}),
        ("multi-pool", "mixed", {"gpu-h100": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}}),
    ],
)
def test_the_gpu_operator_applies_the_configured_mig_strategy_and_layouts(fixture, strategy, layouts):
    recording = render_fixture(fixture)
    found = values(recording, "gpu-operator")
    assert found["mig"] == {"strategy": strategy}
    # Every pool's AMI (AL2023 and Bottlerocket NVIDIA variants) ships the driver and toolkit.
    assert (found["driver"], found["toolkit"]) == ({"enabled": False}, {"enabled": False})
    [mig_config] = [
        r.inputs for r in recording.resources
        if r.inputs.get("kind") == "ConfigMap" and r.inputs["metadata"]["name"] == found["migManager"]["config"]["name"]
    ]
    # mig-parted's config (NVIDIA/mig-parted v1 format): `all-disabled` for nodes outside MIG pools,
    # the operator's migManager.config.default.
    configs = yaml.safe_load(mig_config["data"]["config.yaml"])["mig-configs"]
    assert configs == {
        "all-disabled": [{"devices": "all", "mig-enabled": False}],
        **{pool: [{"devices": "all", "mig-enabled": True, "mig-devices": layout}] for pool, layout in layouts.items()},
    }
