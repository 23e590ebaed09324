"""Kinds before their users, and no `pulumi up` that waits on GPU capacity.

Which release installs a custom kind is derived, not listed: the CRDs each release's chart installs
are the vendored `upstream/<chart>/<version>/crds/` (offline/upstream.py), and the custom kinds a
chart's own templates render are `CHART_KINDS`, read from the templates at the pinned tags. So a new
custom resource, a new chart, or a value that turns a template on is held to the rule unchanged: the
object or release must wait, transitively, for the release that installs the CRD of its kind.
Without it a first `pulumi up` fails ("no matches for kind ...") or, where a chart checks
`.Capabilities.APIVersions`, silently leaves the object out until the next upgrade.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import yaml

from components.autoscaling.vllm import SKIP_AWAIT
from config.labels import GPU_RESOURCE
from config.versions import CHARTS
from models.kueue.constants import QUEUE_NAME_LABEL
from offline.builtin_kinds import is_built_in_group
from offline.engine import RecordedResource, Recording
from offline.helm_values import chart_key, helm_merge
from offline.upstream import chart_metadata, chart_values, crd_documents, render_crd_template

from .conftest import render_fixture
from .recorded import describe, group_of, kubernetes_objects, releases, value_at, waits_for


@dataclass(frozen=True)
class Renders:
    """A custom kind a chart's template renders when every value path in `when` is true."""

    api_version: str
    kind: str
    when: tuple[str, ...]
    template: str  # the template, at the pinned tag of config/versions.py CHARTS
    # The CRD ships in a subchart's crds/ that is not vendored; Helm installs crds/ before templates.
    crd_in_chart: bool = False


# The custom kinds each chart renders from its own templates (CRDs aside), with the values that turn
# each on; the chart's defaults apply where the release sets nothing. Read from the templates at the
# pinned tags (`git grep -n '^kind:' <tag> -- <chart>/templates`); a chart not listed renders none.
CHART_KINDS: dict[str, tuple[Renders, ...]] = {
    # aws/karpenter-provider-aws v1.14.1 charts/karpenter/templates/: also gated on
    # `.Capabilities.APIVersions.Has "monitoring.coreos.com/v1"`, so without the CRD it is left out.
    "karpenter": (Renders("monitoring.coreos.com/v1", "ServiceMonitor", ("serviceMonitor.enabled",), "servicemonitor.yaml"),),
    # kubernetes-sigs/kueue v0.19.2 charts/kueue/templates/
    "kueue": (
        Renders("monitoring.coreos.com/v1", "ServiceMonitor", ("enablePrometheus",), "prometheus/monitor.yaml"),
        Renders("cert-manager.io/v1", "Certificate", ("enableCertManager",), "certmanager/certificate.yaml"),
    ),
    # kedacore/charts v2.20.2 keda/templates/
    "keda": (
        Renders("monitoring.coreos.com/v1", "ServiceMonitor",
                ("prometheus.operator.enabled", "prometheus.operator.serviceMonitor.enabled"), "manager/servicemonitor.yaml"),
        Renders("monitoring.coreos.com/v1", "PodMonitor",
                ("prometheus.operator.enabled", "prometheus.operator.podMonitor.enabled"), "manager/podmonitor.yaml"),
        Renders("monitoring.coreos.com/v1", "PrometheusRule",
                ("prometheus.operator.enabled", "prometheus.operator.prometheusRules.enabled"), "manager/prometheusrules.yaml"),
        Renders("monitoring.coreos.com/v1", "ServiceMonitor",
                ("metricsServer.enabled", "prometheus.metricServer.enabled", "prometheus.metricServer.serviceMonitor.enabled"),
                "metrics-server/servicemonitor.yaml"),
        Renders("monitoring.coreos.com/v1", "PodMonitor",
                ("metricsServer.enabled", "prometheus.metricServer.enabled", "prometheus.metricServer.podMonitor.enabled"),
                "metrics-server/podmonitor.yaml"),
        Renders("monitoring.coreos.com/v1", "ServiceMonitor",
                ("webhooks.enabled", "prometheus.webhooks.enabled", "prometheus.webhooks.serviceMonitor.enabled"),
                "webhooks/servicemonitor.yaml"),
        Renders("monitoring.coreos.com/v1", "PrometheusRule",
                ("webhooks.enabled", "prometheus.webhooks.enabled", "prometheus.webhooks.prometheusRules.enabled"),
                "webhooks/prometheusrules.yaml"),
        Renders("cert-manager.io/v1", "Certificate", ("certificates.certManager.enabled",),
                "cert-manager/keda-tls-certificate.yaml"),
    ),
    # NVIDIA/gpu-operator v26.7.0 deployments/gpu-operator/templates/
    "gpu-operator": (
        Renders("nvidia.com/v1", "ClusterPolicy", ("clusterPolicy.deployCR",), "clusterpolicy.yaml"),
        Renders("nvidia.com/v1alpha1", "NVIDIADriver",
                ("driver.enabled", "driver.nvidiaDriverCRD.enabled", "driver.nvidiaDriverCRD.deployDefaultCR"),
                "nvidiadriver.yaml"),
        Renders("nvidia.com/v1alpha1", "GPUCluster", ("gpuCluster.deployCR",), "gpucluster.yaml"),
        # The node-feature-discovery subchart's crds/.
        Renders("nfd.k8s-sigs.io/v1alpha1", "NodeFeatureRule", ("nfd.nodefeaturerules",), "nodefeaturerules.yaml",
                crd_in_chart=True),
    ),
    # NVIDIA/dcgm-exporter 4.5.3-4.8.2 deployment/templates/
    "dcgm-exporter": (
        Renders("monitoring.coreos.com/v1", "ServiceMonitor", ("serviceMonitor.enabled",), "service-monitor.yaml"),
    ),
    # kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1 deployments/helm/dra-driver-nvidia-gpu/templates/
    # (only with `webhook.tls.mode: cert-manager`, which `when` cannot express; the platform leaves the default).
    "dra-driver-nvidia-gpu": (),
    # prometheus-community/helm-charts kube-prometheus-stack-88.5.3 charts/kube-prometheus-stack/templates/
    "kube-prometheus-stack": (
        Renders("monitoring.coreos.com/v1", "Prometheus", ("prometheus.enabled",), "prometheus/prometheus.yaml"),
        Renders("monitoring.coreos.com/v1", "Alertmanager", ("alertmanager.enabled",), "alertmanager/alertmanager.yaml"),
        Renders("monitoring.coreos.com/v1", "ServiceMonitor",
                ("prometheus.enabled", "prometheus.serviceMonitor.selfMonitor"), "prometheus/servicemonitor.yaml"),
        Renders("monitoring.coreos.com/v1", "PrometheusRule", ("defaultRules.create",), "prometheus/rules-1.14/*.yaml"),
    ),
    # kubeflow/trainer v2.3.0 charts/kubeflow-trainer/templates/ renders no custom kind (its runtimes are
    # applied by a hook Job from a ConfigMap); its jobset subchart, kubernetes-sigs/jobset v0.12.0
    # charts/jobset/templates/, values under the parent's `jobset` key.
    "kubeflow-trainer": (
        Renders("monitoring.coreos.com/v1", "ServiceMonitor", ("jobset.prometheus.enable",), "jobset: prometheus/monitor.yaml"),
        Renders("cert-manager.io/v1", "Certificate", ("jobset.certManager.enable",), "jobset: certmanager/certificate.yaml"),
    ),
    # kyverno/kyverno kyverno-chart-3.9.0 charts/kyverno/templates/ (cert-manager's kinds also need
    # `createSelfSignedCert: false`, the default; the background and cleanup ones their controller enabled).
    "kyverno": (
        *(
            Renders("monitoring.coreos.com/v1", "ServiceMonitor", (f"{controller}.serviceMonitor.enabled",),
                    f"{path}/servicemonitor.yaml")
            for controller, path in (
                ("admissionController", "admission-controller"), ("backgroundController", "background-controller"),
                ("cleanupController", "cleanup-controller"), ("reportsController", "reports-controller"),
            )
        ),
        Renders("monitoring.coreos.com/v1", "PrometheusRule", ("prometheusRule.enabled",), "prometheusrule.yaml"),
        *(
            Renders("cert-manager.io/v1", kind, (f"{controller}.certManager.enabled",), f"{path}/cert-manager-certificates.yaml")
            for controller, path in (("admissionController", "admission-controller"), ("cleanupController", "cleanup-controller"))
            for kind in ("Certificate", "Issuer")
        ),
    ),
    # opencost/opencost-helm-chart opencost-2.5.17 charts/opencost/templates/ (the OpenShift Route and
    # SecurityContextConstraints need OpenShift's own APIs and platforms.openshift.enabled).
    "opencost": (
        Renders("monitoring.coreos.com/v1", "ServiceMonitor", ("opencost.metrics.serviceMonitor.enabled",),
                "servicemonitor.yaml"),
        Renders("gateway.networking.k8s.io/v1", "HTTPRoute", ("opencost.ui.enabled", "opencost.ui.httpRoute.enabled"),
                "httproute.yaml"),
        Renders("gateway.networking.k8s.io/v1", "HTTPRoute", ("opencost.exporter.apiHttpRoute.enabled",),
                "httproute.yaml"),
        Renders("gateway.networking.k8s.io/v1", "HTTPRoute", ("opencost.mcp.enabled", "opencost.mcp.httpRoute.enabled"),
                "httproute.yaml"),
        Renders("security.openshift.io/v1", "SecurityContextConstraints",
                ("opencost.platforms.openshift.enabled", "opencost.platforms.openshift.enableSCC"), "scc.yaml"),
    ),
    # external-secrets/external-secrets helm-chart-2.9.0 deploy/charts/external-secrets/templates/ (the
    # ServiceMonitors also check `.Capabilities.APIVersions` unless `serviceMonitor.renderMode` says otherwise).
    "external-secrets": (
        Renders("monitoring.coreos.com/v1", "ServiceMonitor", ("serviceMonitor.enabled",), "servicemonitor.yaml"),
        Renders("cert-manager.io/v1", "Certificate",
                ("webhook.create", "webhook.certManager.enabled", "webhook.certManager.cert.create"), "webhook-certificate.yaml"),
    ),
    # CRDs only.
    "karpenter-crd": (),
    "prometheus-operator-crds": (),
}


# --- helpers ---------------------------------------------------------------------------------------


def release_chart(release: RecordedResource) -> tuple[str, str]:
    key = chart_key(release.inputs["chart"])
    assert key is not None, f"release {release.inputs['name']}: chart {release.inputs['chart']} is not in CHARTS"
    return key, release.inputs["version"]


def crd_providers(recording: Recording) -> dict[tuple[str, str], list[RecordedResource]]:
    """(group, kind) -> every release or declared object that installs its CRD."""
    providers: dict[tuple[str, str], list[RecordedResource]] = {}
    for release in releases(recording).values():
        if release.inputs.get("skipCrds"):
            continue
        for crd in crd_documents(dict([release_chart(release)])):
            providers.setdefault((crd["spec"]["group"], crd["spec"]["names"]["kind"]), []).append(release)
    for resource in kubernetes_objects(recording):
        if resource.inputs["kind"] == "CustomResourceDefinition":
            spec = resource.inputs["spec"]
            providers.setdefault((spec["group"], spec["names"]["kind"]), []).append(resource)
    return providers


def rendered_kinds(release: RecordedResource) -> list[Renders]:
    """The custom kinds the release's chart renders with the release's values."""
    key, version = release_chart(release)
    assert key in CHART_KINDS, f"chart {key}: which custom kinds do its templates render? add it to CHART_KINDS"
    values = helm_merge(chart_values(key, version), release.inputs.get("values", {}))
    return [r for r in CHART_KINDS[key] if all(value_at(values, path) is True for path in r.when)]


def providers_of(recording: Recording, api_version: str, kind: str, user: str) -> list[RecordedResource]:
    found = crd_providers(recording).get((group_of(api_version), kind), [])
    assert found, f"{user}: no release or object installs the CRD of {api_version} {kind}"
    return found


def waits_for_one_of(recording: Recording, resource: RecordedResource, providers: list[RecordedResource]) -> bool:
    """Whether `resource` waits for one of its kind's providers (or is one).

    Two charts may ship the same CRD in crds/ (gpu-operator v26.7.0 and dra-driver-nvidia-gpu 0.4.1 both
    carry resource.nvidia.com's): Helm installs a crds/ CRD only where none exists, so the first one in
    is the one that counts.
    """
    after = waits_for(recording, resource)
    return any(p.urn in after or p.urn == resource.urn for p in providers)


# --- custom kinds wait for their CRDs ----------------------------------------------------------------


def test_every_custom_resource_waits_for_the_release_that_installs_its_crd(recorded):
    checked = set()
    for resource in kubernetes_objects(recorded):
        api_version, kind = resource.inputs["apiVersion"], resource.inputs["kind"]
        if is_built_in_group(group_of(api_version)):
            continue
        providers = providers_of(recorded, api_version, kind, describe(resource))
        assert waits_for_one_of(recorded, resource, providers), (
            f"{describe(resource)} waits for none of {[describe(p) for p in providers]}"
        )
        checked.add(kind)
    # NodePool, EC2NodeClass, ClusterQueue, LocalQueue, ScaledObject, PrometheusRule at least.
    assert len(checked) >= 6


def test_every_release_waits_for_the_crds_of_the_custom_kinds_its_chart_renders(recorded):
    rendering = set()
    for name, release in releases(recorded).items():
        for renders in rendered_kinds(release):
            if renders.crd_in_chart:
                continue
            providers = providers_of(recorded, renders.api_version, renders.kind, f"release {name} ({renders.template})")
            rendering.add((name, renders.kind))
            # Being a provider itself means the chart's own crds/, which Helm installs before its templates.
            assert waits_for_one_of(recorded, release, providers), (
                f"release {name} renders {renders.kind} ({renders.template}) before {[describe(p) for p in providers]} "
                "installs its CRD"
            )
    # The controllers the platform scrapes through their own charts, and the stack itself.
    assert {("karpenter", "ServiceMonitor"), ("kueue", "ServiceMonitor"), ("keda", "ServiceMonitor"),
            ("opencost", "ServiceMonitor"), ("kube-prometheus-stack", "Prometheus")} <= rendering


def test_monitoring_crds_come_from_their_own_release_not_the_stacks_crds_subchart(recorded):
    # kube-prometheus-stack 88.5.3 Chart.yaml: dependency `crds`, condition `crds.enabled`; its crds/
    # directory is installed once and never upgraded, so the platform leaves it off.
    by_name = releases(recorded)
    assert value_at(by_name["kube-prometheus-stack"].inputs["values"], "crds.enabled") is False
    for kind in ("ServiceMonitor", "PodMonitor", "PrometheusRule", "Prometheus"):
        [provider] = providers_of(recorded, "monitoring.coreos.com/v1", kind, kind)
        assert provider.urn == by_name["prometheus-operator-crds"].urn, kind


def test_crd_release_keeps_the_operator_version_of_the_stack():
    # The CRDs must match the operator kube-prometheus-stack runs: both Chart.yaml appVersions agree.
    def app_version(key: str) -> str:
        return chart_metadata(key, CHARTS[key].version)["appVersion"]

    assert app_version("prometheus-operator-crds") == app_version("kube-prometheus-stack")


# --- GPU workloads: applied, not awaited, after what they need -------------------------------------------


def gpu_deployments(recording: Recording) -> list[RecordedResource]:
    found = []
    for resource in kubernetes_objects(recording):
        if resource.inputs["kind"] != "Deployment":
            continue
        containers = resource.inputs["spec"]["template"]["spec"]["containers"]
        if any(GPU_RESOURCE in (c.get("resources", {}).get("requests") or {}) for c in containers):
            found.append(resource)
    return found


def selected_by(service: RecordedResource, deployment: RecordedResource) -> bool:
    selector = service.inputs["spec"].get("selector") or {}
    labels = deployment.inputs["spec"]["template"]["metadata"]["labels"]
    same_namespace = service.inputs["metadata"]["namespace"] == deployment.inputs["metadata"]["namespace"]
    return same_namespace and bool(selector) and selector.items() <= labels.items()


def test_the_multi_pool_fixture_serves_a_gpu_deployment():
    assert gpu_deployments(render_fixture("multi-pool"))


def test_deployments_that_need_gpus_are_applied_without_waiting_to_become_available(recorded):
    # pulumi-kubernetes (v4.32.0) provider/pkg/await/deployment.go waits 10 minutes for Available;
    # Kueue admission, a GPU node launch and a model download (startup probe: 15 minutes) outlast it.
    for deployment in gpu_deployments(recorded):
        annotations = deployment.inputs["metadata"].get("annotations", {})
        assert annotations.items() >= SKIP_AWAIT.items(), describe(deployment)


def test_services_of_gpu_deployments_do_not_wait_for_ready_endpoints(recorded):
    # provider/pkg/await/service.go shouldWaitForPods: a Service with a selector waits for ready endpoints.
    services = [r for r in kubernetes_objects(recorded) if r.inputs["kind"] == "Service"]
    for deployment in gpu_deployments(recorded):
        for service in (s for s in services if selected_by(s, deployment)):
            assert service.inputs["metadata"].get("annotations", {}).items() >= SKIP_AWAIT.items(), describe(service)


def test_gpu_deployments_wait_for_their_local_queue_the_gpu_operator_and_every_node_pool(recorded):
    operator = releases(recorded)["gpu-operator"]
    pools = [r for r in kubernetes_objects(recorded) if r.inputs["kind"] == "NodePool"]
    for deployment in gpu_deployments(recorded):
        metadata = deployment.inputs["metadata"]
        # The headroom's placeholders are outside Kueue on purpose (components/headroom.py): no queue.
        queues = [
            r for r in kubernetes_objects(recorded)
            if r.inputs["kind"] == "LocalQueue"
            and (r.inputs["metadata"]["name"], r.inputs["metadata"]["namespace"])
            == (metadata["labels"].get(QUEUE_NAME_LABEL), metadata["namespace"])
        ]
        assert len(queues) == (metadata["namespace"] != "gpu-headroom"), describe(deployment)
        after = waits_for(recorded, deployment)
        for needed in (*queues, operator, *pools):
            assert needed.urn in after, f"{describe(deployment)} does not wait for {describe(needed)}"


# --- the CRD templates of prometheus-operator-crds ---------------------------------------------------


TEMPLATE = """{{- if .Values.widgets.enabled -}}
# https://example.invalid/widgets.yaml
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  annotations:
{{- with .Values.annotations }}
{{- toYaml . | nindent 4 }}
{{- end }}
    example.invalid/version: 1.0.0
  name: widgets.example.invalid
{{- end -}}
"""


def test_a_crd_template_renders_with_the_values_it_reads():
    rendered = render_crd_template(TEMPLATE, {"widgets": {"enabled": True}, "annotations": {}}, "crd-widgets.yaml")
    assert yaml.safe_load(rendered)["metadata"] == {
        "annotations": {"example.invalid/version": "1.0.0"}, "name": "widgets.example.invalid"
    }


def test_a_disabled_crd_template_renders_nothing():
    assert render_crd_template(TEMPLATE, {"widgets": {"enabled": False}}, "crd-widgets.yaml").strip() == ""


@pytest.mark.parametrize("template, values", [
    (TEMPLATE, {"widgets": {"enabled": True}, "annotations": {"a": "b"}}),  # would insert annotations
    ("{{ include \"x\" . }}\nkind: CustomResourceDefinition\n", {}),
    ("kind: CustomResourceDefinition  {{ .Values.name }}\n", {}),
    ("{{- if .Values.widgets.enabled }}\nkind: CustomResourceDefinition\n", {"widgets": {"enabled": True}}),
])
def test_a_crd_template_of_any_other_shape_is_refused_not_half_rendered(template, values):
    with pytest.raises(ValueError, match=r"^crd-widgets\.yaml: "):
        render_crd_template(template, values, "crd-widgets.yaml")
