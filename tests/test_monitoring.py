"""Monitoring: kube-prometheus-stack values against the pinned chart, receivers, dashboards, the component's wiring."""

from __future__ import annotations

import json
from typing import Any

import pulumi_kubernetes as k8s
import pytest

from components.lib.prometheus import CHART_SCRAPE_VALUES
from components.monitoring import (
    NAMESPACE,
    RECEIVER_SECRET,
    Monitoring,
    alertmanager_config,
    dashboards,
    receiver_secret,
    stack_values,
)
from components.monitoring.alerts import check_promql
from config.labels import SYSTEM_NODE_TAINT
from config.monitoring import MonitoringConfig, ReceiverConfig
from config.versions import CHARTS, ChartPin
from offline.engine import SECRET, Recording, run_program
from offline.upstream import chart_values

from .conftest import chart_values_problems

KPS = "kube-prometheus-stack"
PIN_CHART = "kube-prometheus-stack"

SLACK_URL = "https://hooks.slack.com/services/T000/B000/XXXX"
PAGERDUTY_KEY = "0123456789abcdef0123456789abcdef"
RECEIVERS = [
    {"name": "gpu-oncall", "severities": ["critical"], "pagerdutyRoutingKey": PAGERDUTY_KEY},
    {"name": "gpu-platform", "severities": ["critical", "warning", "info"], "slackWebhookUrl": SLACK_URL, "slackChannel": "#gpu"},
]


def config(**overrides: Any) -> MonitoringConfig:
    return MonitoringConfig.model_validate({"retention": "30d", "storageGiB": 500, "replicas": 2, **overrides})


def values_text(values: Any) -> str:
    return json.dumps(values, sort_keys=True)


# --- values ------------------------------------------------------------------------------------

def test_every_values_key_exists_in_the_pinned_chart():
    assert chart_values_problems(KPS, stack_values(config(receivers=RECEIVERS))) == []


@pytest.mark.parametrize("chart", sorted(CHART_SCRAPE_VALUES))
def test_scrape_toggles_for_other_controllers_exist_in_their_charts(chart: str):
    assert chart_values_problems(chart, CHART_SCRAPE_VALUES[chart]) == []


def test_prometheus_selects_monitors_and_rules_from_every_namespace():
    spec = stack_values(config())["prometheus"]["prometheusSpec"]
    for kind in ("rule", "serviceMonitor", "podMonitor", "probe", "scrapeConfig"):
        assert spec[f"{kind}SelectorNilUsesHelmValues"] is False
        assert spec[f"{kind}Selector"] == {} and spec[f"{kind}NamespaceSelector"] == {}


def test_prometheus_keeps_retention_replicas_and_a_gp3_volume_from_config():
    spec = stack_values(config())["prometheus"]["prometheusSpec"]
    assert (spec["retention"], spec["replicas"]) == ("30d", 2)
    claim = spec["storageSpec"]["volumeClaimTemplate"]["spec"]
    assert claim["storageClassName"] == "gp3-encrypted"
    assert claim["resources"]["requests"]["storage"] == "500Gi"


def test_controllers_run_on_the_system_nodes_and_node_exporter_everywhere():
    values = stack_values(config())
    placed = [
        values["prometheusOperator"],
        values["prometheusOperator"]["admissionWebhooks"]["patch"],
        values["prometheus"]["prometheusSpec"],
        values["alertmanager"]["alertmanagerSpec"],
        values["grafana"],
        values["kube-state-metrics"],
    ]
    for component in placed:
        assert component["nodeSelector"] == {"CriticalAddonsOnly": "true"}
        assert component["tolerations"] == [
            {"key": SYSTEM_NODE_TAINT["key"], "operator": "Equal", "value": "true", "effect": "NoSchedule"}
        ]
    assert values["prometheus-node-exporter"]["tolerations"] == [{"operator": "Exists"}]


def test_grafana_loads_dashboards_only_from_labelled_config_maps_in_monitoring_and_has_no_password_in_values():
    grafana = stack_values(config())["grafana"]
    assert grafana["sidecar"]["dashboards"] == {
        "enabled": True,
        "label": "grafana_dashboard",
        "labelValue": "1",
        "searchNamespace": "monitoring",
    }
    assert "adminPassword" not in grafana and "admin" not in grafana  # the chart generates its own Secret


def test_kube_state_metrics_exports_the_pool_and_model_node_labels():
    allow = stack_values(config())["kube-state-metrics"]["metricLabelsAllowlist"]
    assert allow == ["nodes=[gpu-platform/node-pool,gpu-platform/gpu-model]"]


def test_no_credential_appears_in_the_values():
    text = values_text(stack_values(config(receivers=RECEIVERS)))
    assert SLACK_URL not in text and PAGERDUTY_KEY not in text
    assert "api_url_file" in text and "routing_key_file" in text


def test_receivers_are_routed_by_severity_and_read_credentials_from_the_mounted_secret():
    am = alertmanager_config(config(receivers=RECEIVERS).receivers)
    routes = {r["receiver"]: r for r in am["route"]["routes"]}
    assert routes["gpu-oncall"]["matchers"] == ['severity =~ "critical"']
    assert routes["gpu-platform"]["matchers"] == ['severity =~ "critical|warning|info"']
    assert all(r["continue"] for name, r in routes.items() if name != "null")
    receivers = {r["name"]: r for r in am["receivers"]}
    assert receivers["gpu-oncall"]["pagerduty_configs"][0]["routing_key_file"] == (
        f"/etc/alertmanager/secrets/{RECEIVER_SECRET}/gpu-oncall-pagerduty-routing-key"
    )
    slack = receivers["gpu-platform"]["slack_configs"][0]
    assert slack["api_url_file"] == f"/etc/alertmanager/secrets/{RECEIVER_SECRET}/gpu-platform-slack-webhook-url"
    assert slack["channel"] == "#gpu"
    assert stack_values(config(receivers=RECEIVERS))["alertmanager"]["alertmanagerSpec"]["secrets"] == [RECEIVER_SECRET]
    secret = receiver_secret(config(receivers=RECEIVERS).receivers)
    assert secret is not None
    assert set(secret["stringData"]) == {
        "gpu-oncall-pagerduty-routing-key",
        "gpu-platform-slack-webhook-url",
    }


def test_without_receivers_everything_goes_to_the_null_receiver_and_no_secret_is_mounted():
    am = alertmanager_config([])
    assert am["route"]["receiver"] == "null" and am["receivers"] == [{"name": "null"}]
    assert receiver_secret([]) is None
    assert stack_values(config())["alertmanager"]["alertmanagerSpec"]["secrets"] == []


def test_alertmanager_keeps_the_charts_inhibit_rules_info_inhibitor_included():
    # kube-prometheus-stack 88.5.3 values.yaml alertmanager.config.inhibit_rules: a config that sets the
    # list replaces it (Helm replaces lists), so the platform's repeats the chart's, InfoInhibitor's too.
    chart = chart_values(KPS, CHARTS[KPS].version)["alertmanager"]["config"]["inhibit_rules"]
    for receivers in ([], RECEIVERS):
        ours = alertmanager_config([ReceiverConfig.model_validate(r) for r in receivers])["inhibit_rules"]
        assert ours == chart
    assert {"source_matchers": ["alertname = InfoInhibitor"], "target_matchers": ["severity = info"],
            "equal": ["namespace"]} in chart


# --- dashboards --------------------------------------------------------------------------------

@pytest.mark.parametrize("dashboard", dashboards.dashboards(), ids=lambda d: d.uid)
def test_every_panel_query_is_valid_promql(dashboard):
    queries = dashboards.dashboard_queries(dashboard)
    assert queries
    for query in queries:
        check_promql(query)


@pytest.mark.parametrize("dashboard", dashboards.dashboards(), ids=lambda d: d.uid)
def test_dashboards_are_deterministic_json_in_labelled_config_maps(dashboard):
    manifest = dashboards.dashboard_config_map(dashboard, NAMESPACE)
    assert manifest["metadata"]["labels"] == {"grafana_dashboard": "1"}
    (text,) = manifest["data"].values()
    assert text == json.dumps(json.loads(text), sort_keys=True, indent=2)
    assert text == dashboards.dashboards()[[d.uid for d in dashboards.dashboards()].index(dashboard.uid)].as_json()


def test_fleet_dashboard_breaks_gpus_down_by_node_pool_and_model():
    text = dashboards.gpu_fleet().as_json()
    for needle in ("hostname", "label_gpu_platform_node_pool", "modelName", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_TEMP"):
        assert needle in text


# --- the component under mocks -----------------------------------------------------------------

def monitoring_recording(monitoring_config: MonitoringConfig) -> Recording:
    def build() -> None:
        provider = k8s.Provider("cluster", kubeconfig="{}")
        storage = k8s.core.v1.Namespace("storage-class")  # stands in for the StorageClass
        Monitoring(
            "gpu-test-monitoring", monitoring_config, chart=CHART_PIN, crd_chart=CHARTS["prometheus-operator-crds"],
            provider=provider, storage=[storage],
        )

    return run_program("test", {}, [], program=build)


CHART_PIN = ChartPin(chart=PIN_CHART, version="88.5.3", repository="https://prometheus-community.github.io/helm-charts")


@pytest.fixture(scope="module")
def recording() -> Recording:
    return monitoring_recording(config(receivers=RECEIVERS))


def test_component_declares_namespace_secret_release_rules_and_dashboards(recording: Recording):
    component = next(r for r in recording.resources if r.type == "gpu-platform:monitoring:Monitoring")
    children = {r.name: r for r in recording.resources if r.parent == component.urn}
    assert sorted(children) == sorted(
        [
            "gpu-test-monitoring-namespace",
            f"gpu-test-monitoring-{RECEIVER_SECRET}",
            "gpu-test-monitoring-crds",
            "gpu-test-monitoring-stack",
            "gpu-test-monitoring-rules-gpu-platform",
            *(f"gpu-test-monitoring-dashboard-{d.uid}" for d in dashboards.dashboards()),
        ]
    )
    for child in children.values():
        assert child.provider and child.provider.split("::")[-1].startswith("cluster")
        assert child.inputs["metadata"]["name"] if "metadata" in child.inputs else child.inputs["name"]
    namespace = children["gpu-test-monitoring-namespace"].inputs["metadata"]
    assert namespace["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    release = children["gpu-test-monitoring-stack"]
    assert (release.inputs["name"], release.inputs["namespace"], release.inputs["version"]) == (
        "kube-prometheus-stack",
        "monitoring",
        "88.5.3",
    )
    dashboard_names = (f"gpu-test-monitoring-dashboard-{d.uid}" for d in dashboards.dashboards())
    for name in ("gpu-test-monitoring-rules-gpu-platform", *dashboard_names):
        assert release.urn in children[name].dependencies
    assert children[f"gpu-test-monitoring-{RECEIVER_SECRET}"].urn in release.dependencies
    assert children["gpu-test-monitoring-crds"].urn in release.dependencies


def test_receiver_secret_data_is_a_pulumi_secret(recording: Recording):
    (secret,) = [r for r in recording.resources if r.type == "kubernetes:core/v1:Secret"]
    # The whole map is redacted, or (with the render keeping a secret map's keys) each value.
    assert secret.inputs["stringData"] in (
        SECRET,
        {"gpu-oncall-pagerduty-routing-key": SECRET, "gpu-platform-slack-webhook-url": SECRET},
    )
    text = json.dumps([r.inputs for r in recording.resources])
    assert SLACK_URL not in text and PAGERDUTY_KEY not in text


def test_no_secret_without_receivers():
    assert not [r for r in monitoring_recording(config()).resources if r.type == "kubernetes:core/v1:Secret"]
