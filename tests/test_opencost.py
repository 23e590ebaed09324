"""OpenCost: reads the platform's Prometheus, is scraped by it, and its GPU cost sits beside the render's estimate."""

from __future__ import annotations

from components import opencost
from components.lib.placement import on_system_nodes
from components.lib.prometheus import PROMETHEUS_URL
from components.monitoring import dashboards
from components.monitoring.alerts import COST_ESTIMATE
from config.capacity import HOURS_PER_MONTH
from offline.summary import render_summary

from .conftest import chart_values_problems, fixture_document, load, render_fixture

VALUES = opencost.opencost_values("gpu-test")


def test_every_values_key_exists_in_the_pinned_chart():
    assert chart_values_problems("opencost", VALUES) == []


def test_opencost_reads_the_platforms_prometheus_not_an_in_cluster_default():
    # opencost-2.5.17 templates/deployment.yaml: external.url becomes PROMETHEUS_SERVER_ENDPOINT when
    # external.enabled; internal would point at prometheus-server.prometheus-system, which is not there.
    prometheus = VALUES["opencost"]["prometheus"]
    assert prometheus == {"internal": {"enabled": False}, "external": {"enabled": True, "url": PROMETHEUS_URL}}


def test_opencost_is_scraped_and_exports_no_second_copy_of_kube_state_metrics():
    metrics = VALUES["opencost"]["metrics"]
    assert metrics["serviceMonitor"] == {"enabled": True}
    # pkg/metrics/kubemetrics.go: EMIT_KSM_V1_METRICS false with ..._ONLY true registers the node, namespace,
    # pod-label and PV collectors only, not the pod collector (kube_pod_container_resource_requests).
    assert metrics["kubeStateMetrics"] == {"emitKsmV1Metrics": False, "emitKsmV1MetricsOnly": True}


def test_opencost_runs_on_the_system_nodes_labelled_with_the_cluster_name():
    assert {k: VALUES["opencost"][k] for k in ("nodeSelector", "tolerations")} == on_system_nodes()
    assert VALUES["clusterName"] == VALUES["opencost"]["exporter"]["defaultClusterId"] == "gpu-test"


def test_each_tenant_gets_its_estimate_recorded_for_the_dashboard_beside_opencosts_cost():
    config = load(fixture_document("multi-pool"))
    rules = {
        r.inputs["metadata"]["name"]: r.inputs["spec"]["groups"]
        for r in render_fixture("multi-pool").resources
        if r.inputs.get("kind") == "PrometheusRule" and "-cost-estimate-" in r.inputs["metadata"]["name"]
    }
    assert len(rules) == len(config.tenants)
    for tenant in config.tenants:
        [group] = rules[f"gpu-platform-cost-estimate-{tenant.namespace}"]
        assert group["rules"] == [{
            "record": COST_ESTIMATE, "expr": f"vector({tenant.guaranteed_hourly_cost:.4f})",
            "labels": {"namespace": tenant.namespace},
        }]
    [panel] = [p for p in dashboards.tenant_accounting().panels if p.title.startswith("GPU cost per hour by namespace")]
    measured, estimate = (expr for expr, _ in panel.queries)
    assert "container_gpu_allocation" in measured and "node_gpu_hourly_cost" in measured
    assert COST_ESTIMATE in estimate


def test_the_estimate_is_the_summarys_monthly_cost_per_hour():
    config = load(fixture_document("multi-pool"))
    summary = render_summary(render_fixture("multi-pool"), config)
    priced = [tenant for tenant in config.tenants if tenant.guaranteed_hourly_cost > 0]
    assert priced
    for tenant in priced:
        [row] = [line for line in summary.splitlines() if line.startswith(f"| `{tenant.name}` |")]
        assert row.endswith(f"| ${tenant.guaranteed_hourly_cost * HOURS_PER_MONTH:,.0f} |")
