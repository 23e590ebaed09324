"""KAI's own signals: the platform's monitors reach the Services KAI's operator makes, and the alerts read what KAI exports.

The Services are written out here from the operator's builders at kai-scheduler/KAI-Scheduler v0.17.0, not taken
from models/kai/metrics.py; the render is the KAI fixture's, shared with tests/test_kai.py and the attack table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from components.monitoring import alerts
from config.monitoring import DEFAULT_RUNBOOK_BASE_URL
from config.versions import CHARTS
from offline.metrics_inventory import load_inventory
from offline.upstream import chart_values

from .recorded import describe, group_of, kubernetes_objects, releases, waits_for
from .test_alerts import run_promtool_tests
from .test_attacks import kai_recording
from .test_deploy_order import crd_providers, waits_for_one_of
from .test_kai import _rendered as kai_rendered

NAMESPACE = "kai-scheduler"


# Service name -> (its labels, its ports, the port serving metrics or None), as the operator builds them:
# pkg/operator/operands/common/common.go ObjectForKAIConfig sets `app: <name>` on every object;
# scheduler/resources_for_shard.go serviceForShard: `<schedulerName>-<shard>`, port http-metrics;
# binder/resources.go serviceForKAIConfig: port http-metrics;
# queue_controller/resources.go serviceForKAIConfig: ports webhook, metrics (queue_controller.go PortMapping defaults);
# admission/resources.go serviceForKAIConfig: ports webhook, http-metrics;
# pod_group_controller/resources.go serviceForKAIConfig: port webhook only (its metrics are served on no Service port).
OPERATOR_SERVICES: dict[str, tuple[dict[str, str], tuple[str, ...], str | None]] = {
    "kai-scheduler-default": ({"app": "kai-scheduler-default"}, ("http-metrics",), "http-metrics"),
    "binder": ({"app": "binder"}, ("http-metrics",), "http-metrics"),
    "queue-controller": ({"app": "queue-controller"}, ("webhook", "metrics"), "metrics"),
    "admission": ({"app": "admission"}, ("webhook", "http-metrics"), "http-metrics"),
    "podgroup-controller": ({"app": "podgroup-controller"}, ("webhook",), None),
}


def monitors() -> list[dict[str, Any]]:
    return [r.inputs for r in kubernetes_objects(kai_recording()) if r.inputs["kind"] == "ServiceMonitor"]


def selected(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    assert set(selector) == {"matchLabels"}, f"selector {selector}: only matchLabels is modelled here"
    return all(labels.get(key) == value for key, value in selector["matchLabels"].items())


def test_each_kai_monitor_scrapes_a_metrics_port_of_a_service_kais_operator_makes():
    scraped = []
    for monitor in monitors():
        spec = monitor["spec"]
        assert monitor["metadata"]["namespace"] == NAMESPACE and "namespaceSelector" not in spec
        services = [name for name, (labels, _, _) in OPERATOR_SERVICES.items() if selected(spec["selector"], labels)]
        assert len(services) == 1, f"{monitor['metadata']['name']} selects {services}"
        _, ports, metrics_port = OPERATOR_SERVICES[services[0]]
        assert [endpoint["port"] for endpoint in spec["endpoints"]] == [metrics_port], monitor
        assert metrics_port in ports
        scraped.append(services[0])
    # Every Service with a metrics port, once each.
    assert sorted(scraped) == ["admission", "binder", "kai-scheduler-default", "queue-controller"]


def test_kai_monitors_and_rule_wait_for_the_monitoring_crds_and_the_monitors_for_kais_release():
    recording = kai_recording()
    [kai_release] = [r for name, r in releases(recording).items() if name == "kai-scheduler"]
    custom = [r for r in kubernetes_objects(recording) if r.inputs["kind"] in ("ServiceMonitor", "PrometheusRule")]
    checked = set()
    providers_by_kind = crd_providers(recording)
    for resource in custom:
        providers = providers_by_kind[(group_of(resource.inputs["apiVersion"]), resource.inputs["kind"])]
        assert providers and waits_for_one_of(recording, resource, providers), f"{describe(resource)} waits for no CRD provider"
        if resource.inputs["kind"] == "ServiceMonitor":
            assert kai_release.urn in waits_for(recording, resource), f"{describe(resource)} may precede KAI's namespace"
        checked.add((resource.inputs["kind"], resource.inputs["metadata"]["name"]))
    expected = {("ServiceMonitor", "kai-scheduler"), ("ServiceMonitor", "kai-binder"), ("PrometheusRule", "gpu-platform-kai")}
    assert expected <= checked


def test_the_kai_rule_holds_kais_alerts_on_a_stack_with_a_kai_pool():
    [rule] = [
        r.inputs for r in kubernetes_objects(kai_recording())
        if r.inputs["kind"] == "PrometheusRule" and r.inputs["metadata"]["name"] == "gpu-platform-kai"
    ]
    assert rule["metadata"]["namespace"] == "monitoring"
    names = [r["alert"] for group in rule["spec"]["groups"] for r in group["rules"]]
    assert names == ["KaiControllerDown", "KaiBindingFailures", "KaiQueueAtDeservedGPUs"]


def test_the_summary_lists_kais_alerts_with_their_runbooks():
    summary = kai_rendered()[3]
    for name in ("KaiControllerDown", "KaiBindingFailures", "KaiQueueAtDeservedGPUs"):
        assert f"[`{name}`]({DEFAULT_RUNBOOK_BASE_URL}#{name.lower()})" in summary


def test_the_scheduler_service_keeps_its_selector_at_one_replica():
    # serviceForShard drops the selector above one replica (an EndpointSlice of the leader, which Prometheus' default
    # Endpoints discovery does not read); the scheduler's replicas follow the chart's operator.replicaCount.
    [release] = [r for name, r in releases(kai_recording()).items() if name == "kai-scheduler"]
    assert "replicaCount" not in release.inputs["values"].get("operator", {})
    assert chart_values("kai-scheduler", CHARTS["kai-scheduler"].version)["operator"]["replicaCount"] == 1


def test_the_inventory_holds_kais_prefixed_metrics_only():
    kai = load_inventory()
    # DefaultMetricsNamespace "kai" (pkg/common/constants/constants.go) before each Name of metrics.go.
    assert kai["kai-queue-controller"]["kai_queue_allocated_gpus"] == ["queue_display_name", "queue_metadata_name", "queue_name"]
    assert "kai_queue_deserved_gpus" in kai["kai-queue-controller"]
    assert "kai_e2e_scheduling_latency_milliseconds" in kai["kai-scheduler"]
    # The binder's only metrics are controller-runtime's (v0.23.3), per controller.
    assert kai["kai-binder"]["controller_runtime_reconcile_errors_total"] == ["controller"]
    # The unprefixed copies the scheduler's init() registers never move: nothing may read them.
    assert not any(name.startswith("queue_") or name.startswith("e2e_") for source in kai.values() for name in source)


def test_a_controller_whose_service_has_no_target_fires_kai_controller_down(tmp_path: Path):
    up = {job: f'up{{job="{job}", namespace="{NAMESPACE}", service="{job}", endpoint="{port}", instance="10.0.3.{i}:8080"}}'
          for i, (job, port) in enumerate((("kai-scheduler-default", "http-metrics"), ("binder", "http-metrics"),
                                           ("admission", "http-metrics")))}
    test = {
        "interval": "1m",
        # The queue-controller's Service selects nothing: Prometheus writes no `up` for it.
        "input_series": [{"series": series, "values": "1x15"} for series in up.values()],
        "alert_rule_test": [{
            "eval_time": "15m", "alertname": "KaiControllerDown",
            "exp_alerts": [{"exp_labels": {"job": "queue-controller", "namespace": NAMESPACE, "severity": "critical"}}],
        }],
    }
    result = run_promtool_tests(alerts.rule_file([alerts.kai_group()], "https://example.com/runbooks"), [test], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
