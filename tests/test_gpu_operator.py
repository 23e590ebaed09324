"""The NVIDIA GPU Operator and DRA: what a platform user relies on, checked against the pinned charts.

The expectations marked "upstream" restate NVIDIA/gpu-operator v26.7.0 (chart values, node labels,
operand selectors), NVIDIA/k8s-device-plugin v0.20.0 and NVIDIA/mig-parted v0.15.0 (config file
formats), and kubernetes-sigs/dra-driver-nvidia-gpu (DeviceClasses, published attributes).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Sequence
from typing import Any

import pulumi_kubernetes as k8s
import pytest
import yaml

from components.gpu_operator import (
    DEVICE_PLUGIN_CONFIG_MAP,
    DRA_NAMESPACE,
    MIG_CONFIG_KEY,
    MIG_CONFIG_MAP,
    NAMESPACE,
    GpuOperator,
    dra_api_version,
    dra_driver_values,
    mig_config_map,
    operator_values,
    privileged_namespace,
    resource_claim_templates,
    time_slicing_config_map,
)
from config.capacity import GpuPoolPlan
from config.catalog import INSTANCE_TYPES
from config.labels import (
    DEVICE_PLUGIN_CONFIG_LABEL,
    DEVICE_PLUGIN_DEPLOY_LABEL,
    GPU_ALLOCATION_LABEL,
    GPU_TAINT,
    MIG_CONFIG_LABEL,
    SYSTEM_NODE_LABELS,
    SYSTEM_NODE_TAINT,
)
from config.node_pools import ClaimTemplateConfig, DraConfig, GpuConfig, NodePoolConfig
from config.versions import CHARTS
from offline.builtin_kinds import built_in_findings
from offline.engine import Recording, run_program
from offline.helm_values import helm_merge
from offline.upstream import chart_dir

from .conftest import chart_values_problems

CHART_DIR = chart_dir("gpu-operator", CHARTS["gpu-operator"].version)
NFD_SUBCHART = "node-feature-discovery"
COMPONENT = "gpu-test-gpu"
RELEASE = "kubernetes:helm.sh/v3:Release"
NAMESPACE_TYPE = "kubernetes:core/v1:Namespace"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
CLAIM_TEMPLATE = "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate"

# Upstream: the label the operator's device-plugin DaemonSet selects on (assets/state-device-plugin),
# and which it leaves alone when a node already carries a non-empty value (addGPUStateLabels).
UPSTREAM_DEVICE_PLUGIN_DEPLOY_LABEL = "nvidia.com/gpu.deploy.device-plugin"
# Upstream: the labels the device plugin's config-manager and the MIG manager read.
UPSTREAM_DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
UPSTREAM_MIG_CONFIG_LABEL = "nvidia.com/mig.config"

DRA_PIN = CHARTS["dra-driver-nvidia-gpu"]


# --- pools and configs ------------------------------------------------------------------------


def pool(name: str, instance_type: str, *, ami: str = "al2023", sharing: dict[str, Any] | None = None) -> GpuPoolPlan:
    config = NodePoolConfig.model_validate(
        {"name": name, "instanceTypes": [instance_type], "gpus": 8, "amiFamily": ami, "sharing": sharing or {"mode": "none"}}
    )
    instance = INSTANCE_TYPES[instance_type]
    return GpuPoolPlan(config=config, instance_types=(instance,), gpu=instance.gpu)


H100_LAYOUT = {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2}
L40S_SLICED = pool("gpu-l40s", "g6e.12xlarge", sharing={"mode": "timeSlicing", "replicas": 4})
L4_SLICED = pool("gpu-l4", "g6.12xlarge", ami="bottlerocket", sharing={"mode": "timeSlicing", "replicas": 2})
H100_MIG = pool("gpu-h100", "p5.48xlarge", sharing={"mode": "mig", "migLayout": H100_LAYOUT})
A100_MIG = pool("gpu-a100", "p4d.24xlarge", sharing={"mode": "mig", "migLayout": {"1g.5gb": 7}})
A10G_WHOLE = pool("gpu-a10g", "g5.48xlarge", ami="bottlerocket")
POOLS = (L40S_SLICED, L4_SLICED, H100_MIG, A100_MIG, A10G_WHOLE)

CLAIM_TEMPLATES = [
    ClaimTemplateConfig.model_validate({"name": "gpu-40gb", "namespace": "team-a", "minMemoryGiB": 40}),
    ClaimTemplateConfig.model_validate({"name": "mig-3g", "namespace": "team-a", "migProfile": "3g.40gb", "count": 2}),
    ClaimTemplateConfig.model_validate({"name": "any-gpu", "namespace": "team-b"}),
]


def gpu_config(*, mig_strategy: str = "mixed", dra: bool = False) -> GpuConfig:
    return GpuConfig(migStrategy=mig_strategy, dra=DraConfig(enabled=dra, claimTemplates=CLAIM_TEMPLATES))


# --- chart defaults and Helm's merge ------------------------------------------------------------


@functools.cache
def chart_defaults() -> dict[str, Any]:
    """gpu-operator v26.7.0's defaults with the NFD subchart's under its key, as Helm merges them."""
    defaults = yaml.safe_load((CHART_DIR / "values.yaml").read_text())
    subchart = yaml.safe_load((CHART_DIR / "charts" / NFD_SUBCHART / "values.yaml").read_text())
    defaults[NFD_SUBCHART] = helm_merge(subchart, defaults[NFD_SUBCHART])
    return defaults


def effective_values(pools: Sequence[GpuPoolPlan] = POOLS, gpu: GpuConfig | None = None) -> dict[str, Any]:
    # A copy: the merge shares the cached defaults' untouched sections, which a test may not change.
    return copy.deepcopy(helm_merge(chart_defaults(), operator_values(pools, gpu or gpu_config())))


def tolerates(tolerations: list[dict[str, Any]], taint: dict[str, str]) -> bool:
    """Kubernetes' toleration matching for one taint."""
    for toleration in tolerations:
        if toleration.get("effect") not in (None, "", taint["effect"]):
            continue
        if toleration.get("operator", "Equal") == "Exists":
            if toleration.get("key") in (None, "", taint["key"]):
                return True
        elif toleration.get("key") == taint["key"] and toleration.get("value", "") == taint["value"]:
            return True
    return False


def kubernetes_system_taint() -> dict[str, str]:
    """SYSTEM_NODE_TAINT as the kubelet applies it (the EKS API spells the effect NO_SCHEDULE)."""
    effect = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}
    return {**SYSTEM_NODE_TAINT, "effect": effect[SYSTEM_NODE_TAINT["effect"]]}


def config_files(config_map: dict[str, Any]) -> dict[str, Any]:
    return {key: yaml.safe_load(text) for key, text in config_map["data"].items()}


# --- GPU Operator: what the node OS already ships ---------------------------------------------


@pytest.mark.parametrize(
    "pools",
    [(L40S_SLICED, H100_MIG), (L4_SLICED, A10G_WHOLE), POOLS, ()],
    ids=["al2023", "bottlerocket", "both", "no-pools"],
)
def test_driver_and_toolkit_stay_off_because_every_node_ami_ships_them(pools):
    values = operator_values(pools, gpu_config())
    assert values["driver"] == {"enabled": False}
    assert values["toolkit"] == {"enabled": False}


def test_bottlerocket_nodes_opt_out_of_the_operators_device_plugin_by_the_label_it_honours():
    assert DEVICE_PLUGIN_DEPLOY_LABEL == UPSTREAM_DEVICE_PLUGIN_DEPLOY_LABEL
    for bottlerocket in (L4_SLICED, A10G_WHOLE):
        assert bottlerocket.labels[DEVICE_PLUGIN_DEPLOY_LABEL] == "false"
    for al2023 in (L40S_SLICED, H100_MIG):
        assert DEVICE_PLUGIN_DEPLOY_LABEL not in al2023.labels
    # The device plugin itself stays on for the AL2023 pools, which have none of their own.
    assert effective_values()["devicePlugin"]["enabled"] is True


# --- GPU Operator: placement ----------------------------------------------------------------------


@pytest.mark.parametrize("controller", [("operator",), (NFD_SUBCHART, "master"), (NFD_SUBCHART, "gc")], ids="/".join)
def test_operator_and_nfd_controllers_run_only_on_system_nodes(controller):
    values = effective_values()
    for key in controller:
        values = values[key]
    assert values["nodeSelector"].items() >= {"CriticalAddonsOnly": "true"}.items()
    assert values["nodeSelector"].items() <= SYSTEM_NODE_LABELS.items() | {"kubernetes.io/os": "linux"}.items()
    assert tolerates(values["tolerations"], kubernetes_system_taint())
    assert not tolerates(values["tolerations"], GPU_TAINT), "controllers must not land on (and keep alive) GPU nodes"


def test_operands_and_nfd_workers_tolerate_the_gpu_taint():
    values = effective_values()
    assert tolerates(values["daemonsets"]["tolerations"], GPU_TAINT)
    assert tolerates(values[NFD_SUBCHART]["worker"]["tolerations"], GPU_TAINT)
    assert values[NFD_SUBCHART]["worker"]["nodeSelector"] == {}, "NFD workers must reach every GPU node"


# --- GPU Operator: time-slicing -------------------------------------------------------------------


def test_each_time_sliced_pool_gets_its_named_config_with_its_replicas():
    files = config_files(time_slicing_config_map(POOLS))
    for sliced in (L40S_SLICED,):
        # The node's label names the configuration the device plugin loads.
        assert sliced.labels[UPSTREAM_DEVICE_PLUGIN_CONFIG_LABEL] == sliced.sharing_config_name
        config = files[sliced.sharing_config_name]
        assert config["version"] == "v1"
        assert config["sharing"] == {
            "timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": sliced.config.sharing.replicas}]}
        }
    assert DEVICE_PLUGIN_CONFIG_LABEL == UPSTREAM_DEVICE_PLUGIN_CONFIG_LABEL


def test_nodes_without_a_sharing_label_get_the_default_config_which_shares_nothing():
    config_map = time_slicing_config_map(POOLS)
    files = config_files(config_map)
    assert files["default"] == {"version": "v1"}
    # A time-sliced Bottlerocket pool configures Bottlerocket's own device plugin instead
    # (components/node_pools.py, bottlerocket_user_data): the operator's has no config for it.
    assert set(files) == {"default", L40S_SLICED.sharing_config_name}
    assert DEVICE_PLUGIN_CONFIG_LABEL not in L4_SLICED.labels
    plugin = effective_values()["devicePlugin"]["config"]
    assert plugin["name"] == config_map["metadata"]["name"] == DEVICE_PLUGIN_CONFIG_MAP
    assert plugin["default"] == "default"
    assert plugin["create"] is False, "the platform owns the ConfigMap, not the chart"
    assert config_map["metadata"]["namespace"] == NAMESPACE


# --- GPU Operator: MIG ----------------------------------------------------------------------------


def test_each_mig_pool_gets_its_layout_on_all_of_its_gpus():
    config_map = mig_config_map(POOLS)
    [key] = config_map["data"]
    assert key == MIG_CONFIG_KEY == "config.yaml"  # upstream: the MIG manager reads this key of a custom ConfigMap
    spec = config_files(config_map)[key]
    assert spec["version"] == "v1"
    for mig_pool in (H100_MIG, A100_MIG):
        assert mig_pool.labels[UPSTREAM_MIG_CONFIG_LABEL] == mig_pool.sharing_config_name
        assert spec["mig-configs"][mig_pool.sharing_config_name] == [
            {"devices": "all", "mig-enabled": True, "mig-devices": mig_pool.config.sharing.mig_layout}
        ]
    assert MIG_CONFIG_LABEL == UPSTREAM_MIG_CONFIG_LABEL


def test_mig_capable_gpus_outside_mig_pools_get_mig_disabled():
    spec = config_files(mig_config_map(POOLS))["config.yaml"]
    manager = effective_values()["migManager"]["config"]
    # upstream: the operator labels MIG-capable nodes without a layout with migManager.config.default.
    assert manager["default"] == "all-disabled"
    assert spec["mig-configs"]["all-disabled"] == [{"devices": "all", "mig-enabled": False}]
    assert set(spec["mig-configs"]) == {"all-disabled", H100_MIG.sharing_config_name, A100_MIG.sharing_config_name}
    assert manager["name"] == MIG_CONFIG_MAP and manager["create"] is False


@pytest.mark.parametrize("strategy", ["single", "mixed"])
def test_mig_devices_are_advertised_by_the_configured_strategy(strategy):
    assert operator_values(POOLS, gpu_config(mig_strategy=strategy))["mig"] == {"strategy": strategy}


# --- GPU Operator: monitoring and the chart itself -------------------------------------------------


def test_dcgm_exporter_runs_with_its_service_monitor():
    exporter = effective_values()["dcgmExporter"]
    assert exporter["enabled"] is True
    assert exporter["serviceMonitor"]["enabled"] is True


@pytest.mark.parametrize(
    ("pools", "virtual"), [(POOLS, True), ((L40S_SLICED,), True), ((H100_MIG, A10G_WHOLE), False), ((), False)],
    ids=["all", "time-sliced", "mig-and-whole", "none"],
)
def test_time_sliced_gpus_are_attributed_to_every_pod_sharing_them(pools, virtual):
    # NVIDIA/dcgm-exporter pkg/cmd/app.go: KUBERNETES_VIRTUAL_GPUS (default false) maps a shared GPU to
    # every pod holding a slice of it; the per-pod shares come from /proc/<pid>/cgroup, hence hostPID.
    exporter = operator_values(pools, gpu_config())["dcgmExporter"]
    assert (exporter.get("env"), exporter.get("hostPID")) == (
        ([{"name": "KUBERNETES_VIRTUAL_GPUS", "value": "true"}], True) if virtual else (None, None)
    )


@pytest.mark.parametrize("pools", [POOLS, (), (L40S_SLICED,)], ids=["all", "none", "one"])
def test_every_value_set_exists_in_the_pinned_chart_and_its_nfd_subchart(pools):
    assert chart_values_problems("gpu-operator", operator_values(pools, gpu_config())) == []


def test_namespaces_admit_the_privileged_operands():
    namespace = privileged_namespace(NAMESPACE)
    labels = namespace["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "privileged"


# --- DRA ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("version", "api"), [("1.33", None), ("1.34", "resource.k8s.io/v1"), ("1.35", "resource.k8s.io/v1")])
def test_dra_uses_the_resource_api_the_cluster_serves_and_nothing_before_1_34(version, api):
    assert dra_api_version(version) == api
    templates = resource_claim_templates(CLAIM_TEMPLATES, version)
    assert [t["apiVersion"] for t in templates] == ([api] * len(CLAIM_TEMPLATES) if api else [])


def test_claim_template_selects_whole_gpus_by_memory_with_cel():
    [template] = [t for t in resource_claim_templates(CLAIM_TEMPLATES, "1.35") if t["metadata"]["name"] == "gpu-40gb"]
    [request] = template["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"]["deviceClassName"] == "gpu.nvidia.com"
    assert request["exactly"]["count"] == 1
    [selector] = request["exactly"]["selectors"]
    # upstream: the kubelet plugin publishes capacity `memory` (bytes) under the driver's domain.
    assert selector["cel"]["expression"] == "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0"


def test_claim_template_selects_mig_devices_by_profile_with_cel():
    [template] = [t for t in resource_claim_templates(CLAIM_TEMPLATES, "1.35") if t["metadata"]["name"] == "mig-3g"]
    [request] = template["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"]["deviceClassName"] == "mig.nvidia.com"
    assert request["exactly"]["count"] == 2
    # upstream: MIG devices carry the string attribute `profile`.
    assert request["exactly"]["selectors"] == [
        {"cel": {"expression": "device.attributes['gpu.nvidia.com'].profile == '3g.40gb'"}}
    ]


def test_claim_template_without_a_selector_takes_any_whole_gpu():
    [template] = [t for t in resource_claim_templates(CLAIM_TEMPLATES, "1.34") if t["metadata"]["name"] == "any-gpu"]
    [request] = template["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"] == {"allocationMode": "ExactCount", "count": 1, "deviceClassName": "gpu.nvidia.com"}
    assert template["metadata"]["namespace"] == "team-b"


@pytest.mark.parametrize("version", ["1.34", "1.35"])
def test_every_manifest_is_valid_for_the_clusters_kubernetes_version(version):
    manifests = [
        privileged_namespace(NAMESPACE),
        privileged_namespace(DRA_NAMESPACE),
        time_slicing_config_map(POOLS),
        mig_config_map(POOLS),
        *resource_claim_templates(CLAIM_TEMPLATES, version),
    ]
    for manifest in manifests:
        assert built_in_findings(manifest, version) == [], manifest["kind"]


def test_dra_kubelet_plugin_runs_only_on_dra_pool_nodes_with_gpu_allocation_only():
    values = dra_driver_values("resource.k8s.io/v1")
    assert values["kubeletPlugin"]["nodeSelector"] == {GPU_ALLOCATION_LABEL: "dra"}
    assert values["resources"] == {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}}
    # upstream: the chart refuses resources.gpus.enabled without this acknowledgement.
    assert values["gpuResourcesEnabledOverride"] is True
    assert values["resourceApiVersion"] == "resource.k8s.io/v1"
    assert values["nvidiaDriverRoot"] == "/", "the AMI's driver is on the host root"


# --- the component's wiring --------------------------------------------------------------------


def run_component(build: Callable[[], None]) -> Recording:
    return run_program("test", {"aws:region": "us-west-2"}, program=build)


@functools.cache
def operator_recording(*, dra: bool, version: str) -> Recording:
    def build() -> None:
        provider = k8s.Provider("cluster", kubeconfig="{}")
        system_nodes = k8s.core.v1.Namespace("system-nodes")  # stands in for the node group
        GpuOperator(
            COMPONENT,
            POOLS,
            gpu_config(dra=dra),
            kubernetes_version=version,
            charts=CHARTS,
            provider=provider,
            depends_on=[system_nodes],
        )

    return run_component(build)


def children(recording: Recording) -> list:
    component = next(r for r in recording.resources if r.type == "gpu-platform:gpu:GpuOperator")
    return [r for r in recording.resources if r.parent == component.urn]


def test_release_installs_the_pinned_chart_into_its_namespace_after_its_config_maps():
    recording = operator_recording(dra=False, version="1.35")
    release = recording.named(RELEASE, f"{COMPONENT}-operator")
    pin = CHARTS["gpu-operator"]
    assert release.inputs["name"] == "gpu-operator" and release.inputs["namespace"] == NAMESPACE
    assert (release.inputs["chart"], release.inputs["version"]) == (pin.chart, pin.version)
    assert release.inputs["repositoryOpts"]["repo"] == pin.repository
    config_maps = {r.urn for r in recording.by_type(CONFIG_MAP)}
    namespace = recording.named(NAMESPACE_TYPE, f"{COMPONENT}-namespace")
    assert len(config_maps) == 2
    assert config_maps | {namespace.urn} <= set(release.dependencies)


def test_every_child_uses_the_cluster_provider_and_waits_for_depends_on():
    recording = operator_recording(dra=True, version="1.35")
    system_nodes = recording.named(NAMESPACE_TYPE, "system-nodes")
    kids = children(recording)
    assert kids
    for child in kids:
        assert child.provider.endswith("::cluster"), child.name
        assert system_nodes.urn in child.dependencies, child.name


def test_dra_driver_and_claim_templates_exist_only_when_enabled():
    assert [r.inputs["name"] for r in operator_recording(dra=False, version="1.35").by_type(RELEASE)] == ["gpu-operator"]
    assert operator_recording(dra=False, version="1.35").by_type(CLAIM_TEMPLATE) == []
    # Below 1.34 the cluster serves no resource.k8s.io/v1: nothing of DRA, even if asked for.
    too_old = operator_recording(dra=True, version="1.33")
    assert [r.inputs["name"] for r in too_old.by_type(RELEASE)] == ["gpu-operator"]
    assert too_old.by_type(CLAIM_TEMPLATE) == []

    recording = operator_recording(dra=True, version="1.35")
    dra = recording.named(RELEASE, f"{COMPONENT}-dra-driver")
    assert (dra.inputs["chart"], dra.inputs["version"]) == (DRA_PIN.chart, DRA_PIN.version)
    assert dra.inputs["namespace"] == DRA_NAMESPACE
    templates = recording.by_type(CLAIM_TEMPLATE)
    assert sorted(t.inputs["metadata"]["name"] for t in templates) == ["any-gpu", "gpu-40gb", "mig-3g"]
    assert all(dra.urn in t.dependencies for t in templates), "claims need the driver's DeviceClasses"


def test_a_claim_template_waits_for_its_tenant_namespace():
    from .conftest import render_fixture

    recording = render_fixture("single-pool-dra")
    [template] = recording.by_type(CLAIM_TEMPLATE)
    [namespace] = [n for n in recording.by_type(NAMESPACE_TYPE) if n.inputs["metadata"]["name"] == "ml-research"]
    assert namespace.urn in template.dependencies


def test_a_claim_template_must_live_in_a_tenant_namespace():
    from config import ConfigError

    from .conftest import fixture_document, load

    doc = fixture_document("single-pool-dra")
    doc["gpu-platform:gpu"]["dra"]["claimTemplates"][0]["namespace"] = "research"
    with pytest.raises(ConfigError) as caught:
        load(doc)
    assert caught.value.problems == [
        "gpu-platform:gpu.dra.claimTemplates[l4-gpu].namespace: 'research' is not a tenant's namespace "
        "(ml-research, inference)"
    ]


def test_a_dra_stack_renders_objects_that_pass_the_kubernetes_schemas():
    from offline.render import kubernetes_objects

    from .conftest import render_fixture

    recording = render_fixture("single-pool-dra")
    claims = [m for m in kubernetes_objects(recording) if m["kind"] == "ResourceClaimTemplate"]
    assert [c["metadata"]["name"] for c in claims] == ["l4-gpu"]
    for claim in claims:
        assert built_in_findings(claim, "1.35") == []
    assert any(r.inputs.get("name") == "dra-driver-nvidia-gpu" for r in recording.by_type(RELEASE))
