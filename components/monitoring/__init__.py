"""Prometheus, Alertmanager and Grafana (kube-prometheus-stack) in namespace `monitoring`, on the system nodes.

The platform's rules (`alerts.py`) and Grafana dashboards (`dashboards.py`) are data beside the component
that declares them, as kubernetes-mixin keeps `alerts/` beside `dashboards/`.

Upstream, checked at these exact versions:
- prometheus-community/helm-charts kube-prometheus-stack-88.5.3, charts/kube-prometheus-stack/values.yaml
  (every key below exists there; subcharts grafana 12.11.1, kube-state-metrics 8.4.0,
  prometheus-node-exporter 4.56.1); it pins Alertmanager v0.34.0, whose Slack `api_url_file` and
  PagerDuty `routing_key_file` read the credentials from the mounted Secret.
- grafana-community/helm-charts grafana-12.11.1, templates/_helpers.tpl `grafana.password`: without
  adminPassword or admin.existingSecret the chart generates a random password into its own Secret
  and keeps it across upgrades (lookup); that is what the platform uses.
- prometheus-operator v0.93: `alertmanagerSpec.secrets` are mounted at /etc/alertmanager/secrets/<name>/.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from config import namespaces
from config.labels import DEFAULT_STORAGE_CLASS, GPU_MODEL_LABEL, POOL_LABEL
from config.monitoring import PROMETHEUS_ENFORCED_LIMITS, MonitoringConfig, ReceiverConfig
from config.system_capacity import (
    ALERTMANAGER_RESOURCES,
    GRAFANA_RESOURCES,
    GRAFANA_SIDECAR_RESOURCES,
    KUBE_STATE_METRICS_RESOURCES,
    NODE_EXPORTER_RESOURCES,
    PROMETHEUS_OPERATOR_RESOURCES,
    PROMETHEUS_RESOURCES,
    Resources,
)
from config.versions import ChartPin

from ..lib.helm import helm_release
from ..lib.namespaces import controller_namespace
from ..lib.placement import on_system_nodes
from ..lib.prometheus import PROMETHEUS_RELEASE
from ..lib.resources import Children, declare
from . import alerts, dashboards

NAMESPACE = namespaces.MONITORING
RELEASE_NAME = PROMETHEUS_RELEASE
CHART_KEY = "kube-prometheus-stack"
CRD_CHART_KEY = "prometheus-operator-crds"
CRD_RELEASE_NAME = "prometheus-operator-crds"
RECEIVER_SECRET = "alertmanager-receivers"
RULES_NAME = "gpu-platform"
NULL_RECEIVER = "null"
SECRETS_DIR = "/etc/alertmanager/secrets"

# `gpu-platform:monitoring.volumeOnDestroy` -> the StatefulSet's PVC retention (the `Retain` defaults, or
# `whenDeleted: Delete`). Scaling Prometheus down keeps the volumes either way.
PVC_RETENTION: dict[str, dict[str, str]] = {
    "keep": {"whenDeleted": "Retain", "whenScaled": "Retain"},
    "delete": {"whenDeleted": "Delete", "whenScaled": "Retain"},
}

# kube-state-metrics exports only the node labels listed here as kube_node_labels' label_* labels.
NODE_LABELS_ALLOWLIST = f"nodes=[{POOL_LABEL},{GPU_MODEL_LABEL}]"

# kube-prometheus-stack 88.5.3's own inhibit rules (values.yaml alertmanager.config.inhibit_rules), which a
# config that sets `inhibit_rules` replaces (Helm replaces lists): a critical alert silences the warning and
# info alerts of the same name and namespace, a warning the info ones; the chart's InfoInhibitor alert
# (general.rules, firing while a namespace has info alerts and nothing worse) silences that namespace's info
# alerts, and nothing silences InfoInhibitor itself but the last rule, which drops it. A test keeps this
# list equal to the vendored chart's.
INHIBIT_RULES: tuple[dict[str, list[str]], ...] = (
    {
        "source_matchers": ["severity = critical"],
        "target_matchers": ["severity =~ warning|info"],
        "equal": ["namespace", "alertname"],
    },
    {"source_matchers": ["severity = warning"], "target_matchers": ["severity = info"], "equal": ["namespace", "alertname"]},
    {"source_matchers": ["alertname = InfoInhibitor"], "target_matchers": ["severity = info"], "equal": ["namespace"]},
    {"target_matchers": ["alertname = InfoInhibitor"]},
)

# Scrape every namespace: with these false, an empty selector means "all", not "this release's".
_SELECTED_KINDS = ("rule", "serviceMonitor", "podMonitor", "probe", "scrapeConfig")


class Monitoring(pulumi.ComponentResource):
    """Namespace, the monitoring CRDs, receiver Secret, the kube-prometheus-stack release, rules and dashboards.

    The prometheus-operator CRDs are a release of their own (`crd_release`), so that every chart that
    renders a ServiceMonitor can wait for them alone rather than for the whole stack and its volume.
    """

    crd_release: k8s.helm.v3.Release
    release: k8s.helm.v3.Release

    def __init__(
        self,
        name: str,
        config: MonitoringConfig,
        *,
        chart: ChartPin,
        crd_chart: ChartPin,
        provider: k8s.Provider,
        cost_estimates: Mapping[str, float] | None = None,
        dra_claims: Mapping[tuple[str, str], Mapping[str, int]] | None = None,
        depends_on: Sequence[pulumi.Resource] = (),
        storage: Sequence[pulumi.Resource] = (),
        multikueue: bool = False,
        kai: bool = False,
        opts: pulumi.ResourceOptions | None = None,
    ):
        """
        :param config: `gpu-platform:monitoring`, validated.
        :param chart: the kube-prometheus-stack pin (config/versions.py CHARTS).
        :param crd_chart: the prometheus-operator-crds pin (config/versions.py CHARTS).
        :param provider: the cluster's Kubernetes provider.
        :param cost_estimates: tenant namespace -> `TenantPlan.guaranteed_hourly_cost`: a recording rule
            each, which the tenant dashboard shows beside OpenCost's measured cost.
        :param dra_claims: (namespace, ResourceClaimTemplate) -> `config.claims.claim_charge` of it: the DRA
            devices a running pod holds through it count in the tenants' GPU requests (alerts.dra_requests).
        :param depends_on: what must exist first (system nodes, add-ons).
        :param storage: what Prometheus' volume claim needs beyond that (the gp3 StorageClass); only
            the kube-prometheus-stack release waits for it.
        :param multikueue: a fleet manager (`PlatformConfig.fleet.role`): its MultiKueue alerts besides the rest.
        :param kai: a pool is scheduled by KAI (`PlatformConfig.uses_kai`): KAI's alerts besides the rest.
        """
        super().__init__("gpu-platform:monitoring:Monitoring", name, None, opts)
        children = Children(self, provider, depends_on)

        namespace = declare(f"{name}-namespace", controller_namespace(NAMESPACE), children.opts())
        # The chart's defaults install every monitoring.coreos.com CRD and nothing else.
        self.crd_release = helm_release(
            f"{name}-crds",
            release_name=CRD_RELEASE_NAME,
            pin=crd_chart,
            namespace=NAMESPACE,
            values={},
            opts=children.opts(namespace),
        )

        before_release: list[pulumi.Resource] = [namespace, self.crd_release, *storage]
        secret_manifest = receiver_secret(config.receivers)
        if secret_manifest is not None:
            # Credentials from the stack's secure config: each value secret in the state and in every preview.
            string_data = {key: pulumi.Output.secret(value) for key, value in secret_manifest["stringData"].items()}
            before_release.append(
                declare(f"{name}-{RECEIVER_SECRET}", {**secret_manifest, "stringData": string_data}, children.opts(namespace))
            )

        self.release = helm_release(
            f"{name}-stack",
            release_name=RELEASE_NAME,
            pin=chart,
            namespace=NAMESPACE,
            values=stack_values(config),
            opts=children.opts(*before_release),
        )

        # Custom resources need the chart's CRDs, and dashboards its Grafana sidecar.
        rule = alerts.prometheus_rule(RULES_NAME, NAMESPACE, config, dra_claims)
        declare(f"{name}-rules-{RULES_NAME}", rule, children.opts(self.release))
        if multikueue:
            rule_name = f"{RULES_NAME}-multikueue"
            manifest = alerts.multikueue_rule(rule_name, NAMESPACE, config.runbook_base_url)
            declare(f"{name}-rules-{rule_name}", manifest, children.opts(self.release))
        if kai:
            rule_name = f"{RULES_NAME}-kai"
            manifest = alerts.kai_rule(rule_name, NAMESPACE, config.runbook_base_url)
            declare(f"{name}-rules-{rule_name}", manifest, children.opts(self.release))
        for tenant_namespace, hourly in sorted((cost_estimates or {}).items()):
            rule_name = f"{RULES_NAME}-cost-estimate-{tenant_namespace}"
            estimate = alerts.cost_estimate_rule(rule_name, NAMESPACE, tenant_namespace, hourly)
            declare(f"{name}-cost-estimate-{tenant_namespace}", estimate, children.opts(self.release))
        for dashboard in dashboards.dashboards():
            manifest = dashboards.dashboard_config_map(dashboard, NAMESPACE)
            declare(f"{name}-dashboard-{dashboard.uid}", manifest, children.opts(self.release))

        self.register_outputs({"namespace": NAMESPACE, "chartVersion": self.release.version})


# --- builders ----------------------------------------------------------------------------------

def stack_values(config: MonitoringConfig) -> dict[str, Any]:
    """Values of kube-prometheus-stack 88.5.3; no credential among them (see alertmanager_config)."""
    placement = on_system_nodes()
    selectors: dict[str, Any] = {}
    for kind in _SELECTED_KINDS:
        selectors[f"{kind}SelectorNilUsesHelmValues"] = False
        selectors[f"{kind}Selector"] = {}
        selectors[f"{kind}NamespaceSelector"] = {}
    secrets = [RECEIVER_SECRET] if config.receivers else []
    return {
        # The CRDs come from the prometheus-operator-crds release, which `helm upgrade` upgrades; this
        # chart's crds/ subchart (values.yaml `crds.enabled`, Chart.yaml dependency condition) would
        # install them once and never upgrade them.
        "crds": {"enabled": False},
        "prometheusOperator": {
            **placement, "admissionWebhooks": {"patch": on_system_nodes()}, "resources": _values(PROMETHEUS_OPERATOR_RESOURCES),
        },
        "prometheus": {
            "prometheusSpec": {
                **placement,
                **selectors,
                "replicas": config.replicas,
                "resources": _values(PROMETHEUS_RESOURCES),
                # Caps on every scrape job; config/monitoring.py says why each is set or not.
                **{field: value for field, value in PROMETHEUS_ENFORCED_LIMITS.items() if value is not None},
                "retention": config.retention,
                # prometheus-operator sets it on the StatefulSet (crd-prometheuses.yaml: "The default behavior is
                # all PVCs are retained"). With Delete, the operator's delete-and-recreate on an immutable change
                # (v0.93.0 pkg/k8s/statefulset.go, ForceUpdateStatefulSet) deletes the volume too.
                "persistentVolumeClaimRetentionPolicy": PVC_RETENTION[config.volume_on_destroy],
                "storageSpec": {
                    "volumeClaimTemplate": {
                        "spec": {
                            "storageClassName": DEFAULT_STORAGE_CLASS,
                            "accessModes": ["ReadWriteOnce"],
                            "resources": {"requests": {"storage": f"{config.storage_gib}Gi"}},
                        }
                    }
                },
            }
        },
        "alertmanager": {
            "config": alertmanager_config(config.receivers),
            "alertmanagerSpec": {**on_system_nodes(), "secrets": secrets, "resources": _values(ALERTMANAGER_RESOURCES)},
        },
        "grafana": {
            **on_system_nodes(),
            "resources": _values(GRAFANA_RESOURCES),
            # admin password: generated by the chart into its own Secret (no adminPassword here).
            "sidecar": {
                "resources": _values(GRAFANA_SIDECAR_RESOURCES),
                "dashboards": {
                    "enabled": True,
                    "label": next(iter(dashboards.DASHBOARD_LABEL)),
                    "labelValue": next(iter(dashboards.DASHBOARD_LABEL.values())),
                    # Only the platform's own ConfigMaps: a tenant's labelled ConfigMap would otherwise
                    # become a dashboard every Grafana user sees (the chart's default is ALL).
                    "searchNamespace": NAMESPACE,
                }
            },
        },
        "kube-state-metrics": {
            **on_system_nodes(), "metricLabelsAllowlist": [NODE_LABELS_ALLOWLIST],
            "resources": _values(KUBE_STATE_METRICS_RESOURCES),
        },
        # A DaemonSet on every node, GPU nodes and system nodes included: it tolerates every taint.
        "prometheus-node-exporter": {"tolerations": [{"operator": "Exists"}], "resources": _values(NODE_EXPORTER_RESOURCES)},
    }


def _values(resources: Resources) -> dict[str, dict[str, str]]:
    """A `resources` map from config/system_capacity.py as chart values (plain dicts, one copy per use)."""
    return {kind: dict(amounts) for kind, amounts in resources.items()}


def alertmanager_config(receivers: Sequence[ReceiverConfig]) -> dict[str, Any]:
    """Alerts routed by `severity` to every receiver that takes it; credentials read from files."""
    routes: list[dict[str, Any]] = [{"receiver": NULL_RECEIVER, "matchers": ['alertname = "Watchdog"']}]
    for receiver in receivers:
        routes.append(
            {
                "receiver": receiver.name,
                "matchers": [f'severity =~ "{"|".join(receiver.severities)}"'],
                # An alert of a severity two receivers take goes to both.
                "continue": True,
            }
        )
    return {
        "global": {"resolve_timeout": "5m"},
        "inhibit_rules": copy.deepcopy(list(INHIBIT_RULES)),
        "route": {
            "receiver": NULL_RECEIVER,
            "group_by": ["namespace", "alertname"],
            "group_wait": "30s",
            "group_interval": "5m",
            "repeat_interval": "12h",
            "routes": routes,
        },
        "receivers": [{"name": NULL_RECEIVER}, *(_receiver(r) for r in receivers)],
        "templates": ["/etc/alertmanager/config/*.tmpl"],
    }


def receiver_secret(receivers: Sequence[ReceiverConfig]) -> dict[str, Any] | None:
    """The Secret Alertmanager reads receiver credentials from; None when no receiver is configured."""
    data: dict[str, str] = {}
    for receiver in receivers:
        if receiver.slack_webhook_url is not None:
            data[_slack_key(receiver)] = receiver.slack_webhook_url
        if receiver.pagerduty_routing_key is not None:
            data[_pagerduty_key(receiver)] = receiver.pagerduty_routing_key
    if not data:
        return None
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": RECEIVER_SECRET, "namespace": NAMESPACE},
        "type": "Opaque",
        "stringData": dict(sorted(data.items())),
    }


def _receiver(receiver: ReceiverConfig) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": receiver.name}
    if receiver.slack_webhook_url is not None:
        entry["slack_configs"] = [
            {
                "api_url_file": _secret_file(_slack_key(receiver)),
                "channel": receiver.slack_channel,
                "send_resolved": True,
                "title": '[{{ .Status | toUpper }}] {{ .CommonLabels.alertname }}',
                "text": "{{ range .Alerts }}{{ .Annotations.summary }}\n{{ .Annotations.description }}\n"
                "Runbook: {{ .Annotations.runbook_url }}\n{{ end }}",
            }
        ]
    if receiver.pagerduty_routing_key is not None:
        entry["pagerduty_configs"] = [{"routing_key_file": _secret_file(_pagerduty_key(receiver)), "send_resolved": True}]
    return entry


def _slack_key(receiver: ReceiverConfig) -> str:
    return f"{receiver.name}-slack-webhook-url"


def _pagerduty_key(receiver: ReceiverConfig) -> str:
    return f"{receiver.name}-pagerduty-routing-key"


def _secret_file(key: str) -> str:
    return f"{SECRETS_DIR}/{RECEIVER_SECRET}/{key}"
