"""GPU metrics on Bottlerocket: the GPU Operator's operands stay off there, a standalone exporter takes over.

The standalone exporter (components/dcgm_exporter.py) must write what the operator's would, so the
alerts, recording rules, dashboards and KEDA triggers see Bottlerocket GPUs like any other.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from components import dcgm_exporter
from components.gpu_operator import operator_values
from config.labels import OPERANDS_DEPLOY_LABEL
from config.node_pools import GpuConfig
from config.versions import CHARTS
from models.nvidia import dcgm_exporter as dcgm
from models.nvidia.gpu_operator import OPERATOR_STATE_LABELS, labelled_by_operator
from offline.helm_values import helm_merge
from offline.metrics_inventory import load_inventory
from offline.upstream import UPSTREAM_DIR

from .conftest import chart_values_problems, fixture_document, load, render_fixture
from .promql_inventory import SCRAPES, Checker, Inventory, Scrape, scraped_labels
from .recorded import releases
from .test_inventory import rules_and_dashboard_problems

NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"
OPERATOR_VERSION = CHARTS["gpu-operator"].version
OPERATOR_DAEMONSET = UPSTREAM_DIR / f"metrics/gpu-operator/{OPERATOR_VERSION}/0800_daemonset.yaml"
EXPORTER_CHART_VALUES = UPSTREAM_DIR / f"{dcgm_exporter.CHART_KEY}/{CHARTS[dcgm_exporter.CHART_KEY].version}/values.yaml"

UPSTREAM_OPERANDS_LABEL = "nvidia.com/gpu.deploy.operands"


def operator_exporter_daemonset() -> dict[str, Any]:
    return yaml.safe_load(Path(OPERATOR_DAEMONSET).read_text())


def node_pools(fixture: str) -> dict[str, dict[str, Any]]:
    """Each NodePool's template (labels, taints) by pool name."""
    return {
        r.inputs["metadata"]["name"]: r.inputs["spec"]["template"]
        for r in render_fixture(fixture).by_type(NODE_POOL)
    }


def bottlerocket_pools(fixture: str) -> set[str]:
    return {p.name for p in load(fixture_document(fixture)).gpu_pools if p.config.ami_family == "bottlerocket"}


def selects(affinity: dict[str, Any], labels: dict[str, str]) -> bool:
    """Whether a required node affinity of `In` expressions admits a node with `labels`."""
    terms = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    return any(
        all(e["operator"] == "In" and labels.get(e["key"]) in e["values"] for e in term["matchExpressions"])
        for term in terms
    )


def tolerates(tolerations: list[dict[str, str]], taint: dict[str, str]) -> bool:
    return any(
        t["key"] == taint["key"] and t["effect"] == taint["effect"]
        and (t["operator"] == "Exists" or t.get("value") == taint.get("value"))
        for t in tolerations
    )


@pytest.fixture(scope="module")
def standalone() -> dict[str, Any]:
    return releases(render_fixture("single-pool"))[dcgm_exporter.RELEASE_NAME].inputs["values"]


# --- the operator's exporter ---------------------------------------------------------------------

@pytest.mark.parametrize("fixture", ["single-pool", "multi-pool"])
def test_the_operators_dcgm_exporter_skips_bottlerocket_nodes_and_runs_on_every_other_gpu_node(fixture):
    assert OPERANDS_DEPLOY_LABEL == UPSTREAM_OPERANDS_LABEL
    # assets/state-dcgm-exporter/0800_daemonset.yaml: the DaemonSet selects its deploy label "true".
    selector = operator_exporter_daemonset()["spec"]["template"]["spec"]["nodeSelector"]
    bottlerocket = bottlerocket_pools(fixture)
    for name, template in node_pools(fixture).items():
        if name == "cpu":
            continue
        node = labelled_by_operator(template["metadata"]["labels"])
        runs = all(node.get(key) == value for key, value in selector.items())
        assert runs is (name not in bottlerocket), name
        # No operand at all on Bottlerocket: every operand DaemonSet selects its own deploy label.
        assert (name in bottlerocket) is not any(key in node for key in OPERATOR_STATE_LABELS), name


def test_the_operators_exporter_attributes_shared_gpus_only_where_its_own_nodes_time_slice():
    # single-pool's only pool is time-sliced Bottlerocket: the operator's exporter serves no node there.
    exporter = operator_values(load(fixture_document("single-pool")).gpu_pools, GpuConfig())["dcgmExporter"]
    assert "env" not in exporter and "hostPID" not in exporter


# --- the standalone exporter ---------------------------------------------------------------------

def test_the_standalone_exporter_is_installed_only_where_a_gpu_pool_runs_bottlerocket():
    assert bottlerocket_pools("single-pool")
    assert dcgm_exporter.RELEASE_NAME in releases(render_fixture("single-pool"))
    assert not bottlerocket_pools("single-pool-dra")
    assert dcgm_exporter.RELEASE_NAME not in releases(render_fixture("single-pool-dra"))


@pytest.mark.parametrize("fixture", ["single-pool", "multi-pool"])
def test_the_standalone_exporter_runs_on_exactly_the_bottlerocket_gpu_nodes_past_their_taints(fixture):
    values = releases(render_fixture(fixture))[dcgm_exporter.RELEASE_NAME].inputs["values"]
    bottlerocket = bottlerocket_pools(fixture)
    for name, template in node_pools(fixture).items():
        assert selects(values["affinity"], template["metadata"]["labels"]) is (name in bottlerocket), name
        if name in bottlerocket:
            assert all(tolerates(values["tolerations"], taint) for taint in template["spec"].get("taints", [])), name
    assert "nodeSelector" not in values


def test_the_standalone_exporters_values_exist_in_the_pinned_chart(standalone):
    assert chart_values_problems(dcgm_exporter.CHART_KEY, standalone) == []


def test_the_standalone_exporter_runs_the_operators_image_and_counters(standalone):
    # gpu-operator v26.7.0 values.yaml dcgmExporter.version; the operator's DaemonSet's DCGM_EXPORTER_COLLECTORS.
    operator_chart = yaml.safe_load((UPSTREAM_DIR / f"gpu-operator/{OPERATOR_VERSION}/values.yaml").read_text())
    assert standalone["image"] == {"tag": operator_chart["dcgmExporter"]["version"]}
    [container] = operator_exporter_daemonset()["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert standalone["arguments"] == ["-f", env["DCGM_EXPORTER_COLLECTORS"]]
    # The chart's own counters ConfigMap would shadow the file at its mount path: not mounted.
    assert standalone["extraVolumeMounts"] == standalone["extraConfigMapVolumes"] == []


def test_the_standalone_exporter_maps_gpus_to_pods_through_the_same_kubelet_socket(standalone):
    # dcgm-exporter 4.8.2 templates/daemonset.yaml mounts `kubeletPath` at /var/lib/kubelet/pod-resources,
    # where the operator's DaemonSet mounts the host's /var/lib/kubelet/pod-resources.
    chart = yaml.safe_load(EXPORTER_CHART_VALUES.read_text())
    volumes = operator_exporter_daemonset()["spec"]["template"]["spec"]["volumes"]
    [volume] = [v for v in volumes if v["name"] == "pod-gpu-resources"]
    assert "kubeletPath" not in standalone and chart["kubeletPath"] == volume["hostPath"]["path"]


def test_the_standalone_exporter_attributes_time_sliced_gpus_to_every_pod_as_the_operators_does(standalone):
    [time_sliced] = [p for p in load(fixture_document("single-pool-dra")).gpu_pools if p.config.sharing.mode == "timeSlicing"]
    operator = operator_values((time_sliced,), GpuConfig())["dcgmExporter"]
    assert (standalone["extraEnv"], standalone["hostPID"]) == (operator["env"], operator["hostPID"])


def test_bottlerocket_lets_the_standalone_exporter_see_the_gpus_by_cap_sys_admin():
    # Bottlerocket honours NVIDIA_VISIBLE_DEVICES=all only in privileged containers, which the NVIDIA
    # container toolkit takes to mean CAP_SYS_ADMIN in the bounding set (bottlerocket-os/bottlerocket
    # SECURITY_GUIDANCE.md, #3992; NVIDIA/nvidia-container-toolkit internal/config/image/privileged.go):
    # the chart's default securityContext grants it, and the values leave it alone.
    chart = yaml.safe_load(EXPORTER_CHART_VALUES.read_text())
    assert "SYS_ADMIN" in chart["securityContext"]["capabilities"]["add"]
    values = dcgm_exporter.exporter_values(load(fixture_document("single-pool")).gpu_pools)
    assert "securityContext" not in values and "runtimeClassName" not in values


def test_the_standalone_exporters_series_carry_every_label_the_rules_dashboards_and_triggers_read(standalone):
    monitor = standalone["serviceMonitor"]
    # honorLabels keeps the exporter's `namespace`/`pod` (the workload's) over the scrape's (the exporter's).
    assert monitor["honorLabels"] is SCRAPES["dcgm-exporter"].honor_labels is True
    scrape = Scrape(monitor["honorLabels"], SCRAPES["dcgm-exporter"].target_labels)
    raw = load_inventory()
    inventory = Inventory.load({source: metrics for source, metrics in raw.items() if source != "dcgm-exporter"})
    inventory.metrics |= {name: scraped_labels(labels, scrape) for name, labels in raw["dcgm-exporter"].items()}
    assert rules_and_dashboard_problems(inventory) == []
    checker = Checker(inventory)
    queries = [
        trigger["metadata"]["query"]
        for fixture in ("single-pool", "multi-pool")
        for r in render_fixture(fixture).resources if r.inputs.get("kind") == "ScaledObject"
        for trigger in r.inputs["spec"]["triggers"] if trigger["type"] == "prometheus"
    ]
    assert queries
    for query in queries:
        checker.check(query)
    assert checker.problems == []
    # The operator's ServiceMonitor's job (jobLabel: app of Service nvidia-dcgm-exporter).
    assert monitor["relabelings"] == [{"action": "replace", "targetLabel": "job", "replacement": "nvidia-dcgm-exporter"}]


# --- per-pod attribution: what the exporter needs from the Kubernetes API ------------------------

VERBS = frozenset({"get", "list", "watch"})
VIRTUAL = {dcgm.KUBERNETES_ENV: "true", dcgm.VIRTUAL_GPUS_ENV: "true"}

# (case, settings, the gaps the model finds, by their text before the first colon)
ATTRIBUTION = [
    ("whole GPUs name their pods from the kubelet socket alone", dcgm.ExporterSettings({dcgm.KUBERNETES_ENV: "true"}, False), []),
    ("kubernetes mapping off", dcgm.ExporterSettings({dcgm.KUBERNETES_ENV: "false"}, True), ["DCGM_EXPORTER_KUBERNETES is off"]),
    (
        "time-sliced without API access", dcgm.ExporterSettings(VIRTUAL, False, {}, host_pid=True),
        [
            "no pod informer without DCGM_EXPORTER_KUBERNETES_ENABLE_POD_UID, DCGM_EXPORTER_KUBERNETES_ENABLE_POD_LABELS "
            "or KUBERNETES_ENABLE_DRA",
            "no service-account token", "no cluster-wide list and watch on pods (core)",
        ],
    ),
    (
        "pod UID with a token but no watch on pods",
        dcgm.ExporterSettings({**VIRTUAL, dcgm.POD_UID_ENV: "1"}, True, {dcgm.PODS: frozenset({"get", "list"})}, True),
        ["no cluster-wide list and watch on pods (core)"],
    ),
    (
        "pod labels on, but no hostPID",
        dcgm.ExporterSettings({**VIRTUAL, dcgm.POD_LABELS_ENV: "True"}, True, {dcgm.PODS: VERBS}),
        ["no hostPID"],
    ),
    (
        "DRA reading pods but not ResourceSlices",
        dcgm.ExporterSettings({dcgm.KUBERNETES_ENV: "true", dcgm.ENABLE_DRA_ENV: "true"}, True, {dcgm.PODS: VERBS}),
        ["no cluster-wide list and watch on resourceslices (resource.k8s.io)"],
    ),
    (
        "DRA and time-slicing in one exporter",
        dcgm.ExporterSettings({**VIRTUAL, dcgm.ENABLE_DRA_ENV: "t"}, True, {dcgm.PODS: VERBS, dcgm.RESOURCE_SLICES: VERBS}, True),
        ["KUBERNETES_VIRTUAL_GPUS returns before the DRA mapping (kubernetes.go Process)"],
    ),
    (
        "time-sliced with everything",
        dcgm.ExporterSettings({**VIRTUAL, dcgm.POD_UID_ENV: "true"}, True, {dcgm.PODS: VERBS}, True),
        [],
    ),
]


@pytest.mark.parametrize(("case", "settings", "gaps"), ATTRIBUTION, ids=[a[0] for a in ATTRIBUTION])
def test_per_pod_attribution_needs_the_pod_informer_wherever_a_pods_value_is_keyed_by_its_uid(case, settings, gaps):
    assert [gap.split(":")[0] for gap in dcgm.attribution_gaps(settings)] == gaps


def chart_defaults() -> dict[str, Any]:
    return yaml.safe_load(EXPORTER_CHART_VALUES.read_text())


# (case, values over the chart's defaults, env vars set, token mounted, resources granted)
CHART_SETTINGS = [
    ("defaults", {}, {dcgm.KUBERNETES_ENV}, False, set()),
    ("pod UID", {"kubernetes": {"enablePodUID": True}}, {dcgm.KUBERNETES_ENV, dcgm.POD_UID_ENV}, True,
     {dcgm.PODS, dcgm.RESOURCE_SLICES}),
    # clusterrole.yaml and the token need rbac.create as well; the env is set regardless.
    ("pod labels without RBAC", {"kubernetes": {"enablePodLabels": True, "rbac": {"create": False}}},
     {dcgm.KUBERNETES_ENV, dcgm.POD_LABELS_ENV}, False, set()),
    ("DRA without RBAC", {"kubernetesDRA": {"enabled": True}, "kubernetes": {"rbac": {"create": False}}},
     {dcgm.KUBERNETES_ENV, dcgm.ENABLE_DRA_ENV}, True, {dcgm.PODS, dcgm.RESOURCE_SLICES}),
]


@pytest.mark.parametrize(("case", "values", "env", "token", "granted"), CHART_SETTINGS, ids=[c[0] for c in CHART_SETTINGS])
def test_the_standalone_chart_grants_api_access_only_with_pod_metadata_and_rbac_or_dra(case, values, env, token, granted):
    """dcgm-exporter 4.8.2 templates/daemonset.yaml, serviceaccount.yaml, clusterrole.yaml (vendored)."""
    settings = dcgm.chart_settings(helm_merge(chart_defaults(), values))
    assert (set(settings.env), settings.service_account_token, set(settings.granted)) == (env, token, granted)


def test_the_charts_templates_gate_token_and_rbac_on_the_condition_the_model_reads():
    templates = EXPORTER_CHART_VALUES.parent / "templates"
    condition = (
        "or (and (or .Values.kubernetes.enablePodLabels .Values.kubernetes.enablePodUID) .Values.kubernetes.rbac.create) "
        ".Values.kubernetesDRA.enabled"
    )
    assert f"automountServiceAccountToken: {{{{ {condition} }}}}" in (templates / "daemonset.yaml").read_text()
    assert (templates / "clusterrole.yaml").read_text().startswith(f"{{{{- if {condition} }}}}")
    assert 'resources: ["pods", "resourceslices"]' in (templates / "clusterrole.yaml").read_text()


# (case, the operator's dcgmExporter values, token and pods granted)
OPERATOR_SETTINGS = [
    ("defaults", {"enabled": True}, False),
    ("enablePodUID", {"enablePodUID": True}, True),
    # dcgmExporterEnvEnablesPodMetadata compares with strings.EqualFold.
    ("pod labels by env", {"env": [{"name": dcgm.POD_LABELS_ENV, "value": "TRUE"}]}, True),
    ("virtual GPUs alone", {"env": [{"name": dcgm.VIRTUAL_GPUS_ENV, "value": "true"}], "hostPID": True}, False),
]


@pytest.mark.parametrize(("case", "values", "access"), OPERATOR_SETTINGS, ids=[c[0] for c in OPERATOR_SETTINGS])
def test_the_operator_grants_its_exporter_api_access_only_for_pod_metadata(case, values, access):
    """gpu-operator v26.7.0 controllers/object_controls.go TransformDCGMExporter, rbacGates."""
    settings = dcgm.operator_settings(values)
    assert (settings.service_account_token, set(settings.granted)) == (access, {dcgm.PODS} if access else set())


def test_the_operators_exporter_daemonset_mounts_no_token_unless_the_operator_says_so():
    assert operator_exporter_daemonset()["spec"]["template"]["spec"]["automountServiceAccountToken"] is False


@pytest.mark.parametrize("fixture", ["single-pool", "single-pool-dra", "multi-pool"])
def test_every_exporter_a_fixture_installs_can_attribute_each_pod(fixture):
    found = releases(render_fixture(fixture))
    exporters = [dcgm.operator_settings(found["gpu-operator"].inputs["values"]["dcgmExporter"])]
    defaults = chart_defaults()
    for name in (dcgm_exporter.RELEASE_NAME, dcgm_exporter.DRA_RELEASE_NAME):
        if name in found:
            exporters.append(dcgm.chart_settings(helm_merge(defaults, found[name].inputs["values"])))
    assert [dcgm.attribution_gaps(settings) for settings in exporters] == [[]] * len(exporters)
