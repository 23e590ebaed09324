"""The platform's Prometheus as the other components see it: where it answers, and what gets a chart scraped."""

from __future__ import annotations

from typing import Any

from config.namespaces import MONITORING

# kube-prometheus-stack installed as release `kube-prometheus-stack` in `monitoring`: the release name
# contains the chart name, so its fullname is the release name and the Service `<fullname>-prometheus`.
PROMETHEUS_RELEASE = "kube-prometheus-stack"
PROMETHEUS_URL = f"http://{PROMETHEUS_RELEASE}-prometheus.{MONITORING}.svc:9090"

# What the controllers' charts need to be scraped (their own ServiceMonitors); Prometheus selects
# ServiceMonitors in every namespace. Karpenter's and Kueue's values merge these; KEDA's add labels
# and its webhooks (a test checks they contain these).
CHART_SCRAPE_VALUES: dict[str, dict[str, Any]] = {
    # aws/karpenter-provider-aws v1.14.1 charts/karpenter: ServiceMonitor on the `http-metrics` port (8080).
    "karpenter": {"serviceMonitor": {"enabled": True}},
    # kedacore/charts v2.20.2 keda: operator (scalers' metrics) and metrics server, port `metrics` (8080).
    "keda": {
        "prometheus": {
            "operator": {"enabled": True, "serviceMonitor": {"enabled": True}},
            "metricServer": {"enabled": True, "serviceMonitor": {"enabled": True}},
        }
    },
    # kubernetes-sigs/kueue v0.19.2 charts/kueue: ServiceMonitor on the https metrics port (bearer token),
    # RoleBinding for Prometheus; ClusterQueue quota/usage gauges are opt-in in the manager config.
    "kueue": {"enablePrometheus": True},
}
