"""Every kind of GPU pool, end to end: an admitted pod gets a node, a device, and GPU series that name it.

One case per kind of pool, each in a fixture stack's render (cached, shared with other tests). Every link
reads the rendered objects and applies the rule of the upstream controller that reads them:

1. Kueue admits the pod on a flavor of its tenant's ClusterQueue (models/kueue: workload charge,
   flavorassigner) and injects the flavor's nodeLabels and tolerations into it.
2. A pool can place it: a NodePool whose template and requirements carry those labels, whose taints the
   flavor tolerates, and which can launch a type whose capacity (the provider's, NodeOverlays merged:
   models/karpenter/capacity.py) covers the pod within the NodePool's limits; or, for DRA, an EKS managed
   node group with those labels that already holds nodes whose devices cover the claim.
3. A device is handed to it: the GPU Operator's device plugin (models/nvidia/gpu_operator.py decides where
   it runs; the rendered device-plugin and MIG configs decide what it advertises: models/nvidia/
   device_plugin.py), Bottlerocket's host plugin (its settings in the node class: models/bottlerocket.py),
   or the DRA driver's kubelet plugin (its nodeSelector).
4. Exactly one DCGM exporter serves the node and names the pod (models/nvidia/dcgm_exporter.py): the
   device ID the kubelet lists meets the exporter's series ID, sharing pods are split per pod, DRA claims
   are read, the exporter has the API access each pod's own value needs (attribution_gaps: env, token,
   RBAC, as the operator or the chart renders them), and its ServiceMonitor keeps the exporter's
   `namespace` and `pod` (honorLabels).
5. promtool evaluates the pod's KEDA GPU trigger and the recorded per-namespace utilisation the tenant
   dashboard plots on the pod's series, and both select them.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml

from components import autoscaling
from components.lib.prometheus import DCGM_JOB
from components.monitoring.alerts import NAMESPACE_GPU_UTILISATION
from config import PlatformConfig
from config.catalog import INSTANCE_TYPES
from config.dra_devices import published_devices
from config.labels import CAPACITY_TYPE_LABEL, DEVICE_PLUGIN_CONFIG_LABEL, EFA_LABEL, MIG_CONFIG_LABEL, POOL_LABEL
from config.versions import CHARTS
from models import bottlerocket
from models.karpenter.capacity import apply_overlay, native_capacity
from models.karpenter.labels import EFA_RESOURCE, INSTANCE_TYPE_LABEL, NODEPOOL_LABEL
from models.kueue.flavorassigner import best_case_admission
from models.kueue.workload import Tenancy, pod_sets
from models.nvidia import dcgm_exporter as dcgm
from models.nvidia.device_plugin import Sharing, device_plugin_resources, dra_devices, kubelet_device_id
from models.nvidia.dra_driver import DEVICE_CLASS_SELECTORS
from models.nvidia.gpu_operator import DCGM_EXPORTER_OPERAND, DEVICE_PLUGIN_OPERAND, runs_operand
from offline.engine import Recording
from offline.helm_values import helm_merge
from offline.upstream import chart_values

from .conftest import fixture_config, render_fixture
from .recorded import kubernetes_objects, releases
from .test_big_gpus import rendered as big_gpu_render
from .test_dra_mig import held_out_config as dra_mig_config
from .test_dra_mig import held_out_render as dra_mig_render

NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"
NODECLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
NODEOVERLAY = "kubernetes:karpenter.sh/v1alpha1:NodeOverlay"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
EKS_EFFECTS = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}
UUID = "GPU-6d2a1b0e-9f3c-4c1a-8e6b-2f4d5a7c9e10"
HELD_OUT_DRA_MIG = "held_out:dra-mig"  # tests/fixtures/held_out/dra-mig.yaml, rendered once by tests/test_dra_mig.py


@dataclass(frozen=True)
class Case:
    kind: str
    fixture: str
    pool: str
    tenant: str
    flavor: str  # where Kueue admits the pod
    requests: dict[str, str] = field(default_factory=dict)  # the container's extended resources
    claim_template: str | None = None  # DRA: the ResourceClaimTemplate the pod uses
    mig_profile: str | None = None  # the MIG instance the pod's series describe
    node_selector: dict[str, str] = field(default_factory=dict)  # the pod's own, which narrows Kueue's flavors

    @property
    def deployment(self) -> str:
        return f"{self.kind}-server"

    @property
    def pod_name(self) -> str:
        return f"{self.deployment}-5c7d9f8b4d-x7k2p"


CASES = [
    Case("whole-gpu", "multi-pool", "gpu-a100", "llm-training", "a100-spot", {"nvidia.com/gpu": "1"}),
    Case("time-sliced-al2023", "single-pool-dra", "gpu-l40s", "ml-research", "l40s-on-demand", {"nvidia.com/gpu": "1"}),
    Case("time-sliced-bottlerocket", "single-pool", "gpu-l40s", "inference", "l40s-on-demand", {"nvidia.com/gpu": "1"}),
    Case("mig-mixed", "multi-pool", "gpu-h100", "llm-training", "h100-on-demand", {"nvidia.com/mig-1g.10gb": "1"},
         mig_profile="1g.10gb"),
    Case("mig-single", "big-gpu", "gpu-h100", "llm-training", "h100-on-demand", {"nvidia.com/gpu": "1"},
         mig_profile="1g.10gb"),
    Case("dra", "single-pool-dra", "gpu-l4-dra", "ml-research", "l4-dra-on-demand", claim_template="l4-gpu"),
    # Selectors over the devices' attributes, in the driver's class and in an administrator's DeviceClass.
    Case("dra-selectors", "dra-attributes", "gpu-l4-dra", "inference", "l4-dra-on-demand", claim_template="four-l4"),
    Case("dra-device-class", "dra-attributes", "gpu-h100-dra", "ml-research", "h100-dra-on-demand",
         claim_template="big-memory"),
    # MIG devices through DRA: the held-out stack's H100s cut into a layout at boot, a claim by profile and memory.
    Case("dra-mig", HELD_OUT_DRA_MIG, "gpu-h100-mig", "ml-research", "h100-mig-on-demand", claim_template="big-slice",
         mig_profile="3g.40gb"),
    # Both flavors of big-gpu's tenant hand out nvidia.com/gpu (MIG single on H100), so the pod names its pool.
    Case("efa", "big-gpu", "gpu-h200", "llm-training", "h200-reserved", {"nvidia.com/gpu": "8", EFA_RESOURCE: "32"},
         node_selector={POOL_LABEL: "gpu-h200"}),
    Case("reserved", "big-gpu", "gpu-h200", "llm-training", "h200-reserved", {"nvidia.com/gpu": "1"},
         node_selector={POOL_LABEL: "gpu-h200"}),
]


def recording(case: Case) -> Recording:
    if case.fixture == HELD_OUT_DRA_MIG:
        return dra_mig_render()
    return big_gpu_render() if case.fixture == "big-gpu" else render_fixture(case.fixture)


def config_of(case: Case) -> PlatformConfig:
    return dra_mig_config() if case.fixture == HELD_OUT_DRA_MIG else fixture_config(case.fixture)


def objects(case: Case, kind: str) -> list[dict[str, Any]]:
    return [r.inputs for r in kubernetes_objects(recording(case)) if r.inputs["kind"] == kind]


def named(case: Case, kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
    [found] = [
        o for o in objects(case, kind)
        if o["metadata"]["name"] == name and o["metadata"].get("namespace") in (namespace, None)
    ]
    return found


def values(case: Case, release: str) -> dict[str, Any] | None:
    found = releases(recording(case)).get(release)
    return None if found is None else found.inputs["values"]


def pod_spec(case: Case) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": "busybox:1.36", "resources": {"requests": dict(case.requests)}}
    pod: dict[str, Any] = {"containers": [container]}
    if case.claim_template is not None:
        container["resources"]["claims"] = [{"name": "gpu"}]
        pod["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": case.claim_template}]
    return pod


def tenancy(case: Case) -> Tenancy:
    namespace = case.tenant
    kueue = yaml.safe_load(values(case, "kueue")["managerConfig"]["controllerManagerConfigYaml"])  # type: ignore[index]
    templates = {
        o["metadata"]["name"]: o for o in objects(case, "ResourceClaimTemplate") if o["metadata"]["namespace"] == namespace
    }
    defaults = named(case, "LimitRange", "container-defaults", namespace)["spec"]["limits"][0]["defaultRequest"]
    if case.claim_template is None:
        return Tenancy(defaults, templates, kueue, {})
    # The driver chart's classes, then the administrator's as rendered; the devices the DRA pools publish.
    classes: dict[str, list[str]] = {name: [expression] for name, expression in DEVICE_CLASS_SELECTORS.items()}
    for device_class in objects(case, "DeviceClass"):
        classes[device_class["metadata"]["name"]] = [s["cel"]["expression"] for s in device_class["spec"]["selectors"]]
    published = published_devices(config_of(case).gpu_pools)
    return Tenancy(defaults, templates, kueue, {}, published, classes)


# --- 1. Kueue ------------------------------------------------------------------------------------------------

def admitted_flavor(case: Case) -> dict[str, Any]:
    """The ResourceFlavor Kueue admits the pod on (models.kueue.flavorassigner, which skips the flavors whose
    nodeLabels the pod's nodeSelector rules out), within the tenant's nominal quota."""
    pod = {**pod_spec(case), "nodeSelector": dict(case.node_selector)}
    job = {"kind": "Job", "spec": {"parallelism": 1, "template": {"spec": pod}}}
    labels = {f["metadata"]["name"]: f["spec"].get("nodeLabels", {}) for f in objects(case, "ResourceFlavor")}
    admission = best_case_admission(pod_sets(job, tenancy(case)), named(case, "ClusterQueue", case.tenant), labels)
    assert not admission.borrowing, f"{case.kind}: admitted only by borrowing"
    [flavor] = admission.flavors
    return named(case, "ResourceFlavor", flavor)


# --- 2. capacity ---------------------------------------------------------------------------------------------

def tolerated(taints: list[dict[str, str]], tolerations: list[dict[str, str]]) -> bool:
    """Every NoSchedule/NoExecute taint is tolerated (k8s.io/api core/v1 toleration.go, ToleratesTaint)."""
    def tolerates(toleration: dict[str, str], taint: dict[str, str]) -> bool:
        if toleration.get("effect") not in (None, "", taint["effect"]):
            return False
        if toleration.get("operator") == "Exists":
            return toleration.get("key") in (None, "", taint["key"])
        return toleration.get("key") == taint["key"] and toleration.get("value", "") == taint.get("value", "")
    return all(any(tolerates(t, taint) for t in tolerations) for taint in taints if taint["effect"] != "PreferNoSchedule")


def nodepool_carries(nodepool: dict[str, Any], labels: dict[str, str]) -> bool:
    """A node of this NodePool can carry every label: a template label, or a requirement allowing the value
    (kubernetes-sigs/karpenter pkg/scheduling/requirements.go: the NodeClaim's labels come from both)."""
    template = nodepool["spec"]["template"]
    allowed = {r["key"]: set(r["values"]) for r in template["spec"]["requirements"] if r["operator"] == "In"}
    own = template["metadata"].get("labels", {})
    return all(own.get(key) == value or (key not in own and value in allowed.get(key, ())) for key, value in labels.items())


def karpenter_node(case: Case, flavor: dict[str, Any]) -> dict[str, str] | None:
    """The labels of a node Karpenter can launch for the pod, or None when no NodePool can."""
    spec = flavor["spec"]
    tolerations = spec.get("tolerations", [])
    nodepools = [
        np for np in objects(case, "NodePool")
        if nodepool_carries(np, spec["nodeLabels"]) and tolerated(np["spec"]["template"]["spec"].get("taints", []), tolerations)
    ]
    if not nodepools:
        return None
    [nodepool] = nodepools
    name = nodepool["metadata"]["name"]
    overlays = {
        o["spec"]["requirements"][1]["values"][0]: {k: int(v) for k, v in o["spec"]["capacity"].items()}
        for o in objects(case, "NodeOverlay")
        if o["spec"]["requirements"][0] == {"key": NODEPOOL_LABEL, "operator": "In", "values": [name]}
    }
    types = next(r["values"] for r in nodepool["spec"]["template"]["spec"]["requirements"] if r["key"] == INSTANCE_TYPE_LABEL)
    limits = {k: int(v) for k, v in nodepool["spec"]["limits"].items() if k.startswith(("nvidia.com/", "nodes"))}
    wanted = {k: int(v) for k, v in case.requests.items()}
    for type_name in types:
        instance = INSTANCE_TYPES[type_name]
        # karpenter-provider-aws v1.14.1 pkg/providers/instancetype/types.go, computeCapacity: GPUs and EFAs.
        native = {**native_capacity(instance.gpus), **({EFA_RESOURCE: instance.efa} if instance.efa else {})}
        capacity = {**apply_overlay(native, overlays.get(type_name)), "nodes": 1}
        # scheduler.go filterByRemainingResources: the node must fit in what the limits leave.
        fits_limits = all(capacity.get(resource, 0) <= limit for resource, limit in limits.items())
        if fits_limits and all(capacity.get(resource, 0) >= amount for resource, amount in wanted.items()):
            template = nodepool["spec"]["template"]
            return {**template["metadata"]["labels"], "nodeclass": template["spec"]["nodeClassRef"]["name"]}
    return None


def node_group_node(case: Case, flavor: dict[str, Any]) -> dict[str, str] | None:
    """The labels of a standing node of a managed node group that holds the pod's claim, or None."""
    spec = flavor["spec"]
    for group in recording(case).by_type(NODE_GROUP):
        inputs = group.inputs
        labels = inputs.get("labels", {})
        taints = [{**t, "effect": EKS_EFFECTS[t["effect"]]} for t in inputs.get("taints", [])]
        if not all(labels.get(k) == v for k, v in spec["nodeLabels"].items()):
            continue
        if not tolerated(taints, spec.get("tolerations", [])):
            continue
        if inputs["scalingConfig"]["minSize"] < 1:
            return None  # nothing stands; Karpenter launches none for a claim
        template = named(case, "ResourceClaimTemplate", case.claim_template or "", case.tenant)
        count = template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"]
        if all(dra_devices(Sharing(), INSTANCE_TYPES[t].gpus) >= count for t in inputs["instanceTypes"]):
            return dict(labels)
    return None


# --- 3. the device ---------------------------------------------------------------------------------------------

def advertised_on(case: Case, node: dict[str, str]) -> dict[str, int]:
    """What the node's device plugin advertises for one GPU, from the rendered configs it reads."""
    if runs_operand(node, DEVICE_PLUGIN_OPERAND):
        operator = values(case, "gpu-operator") or {}
        config_maps = {o["metadata"]["name"]: o["data"] for o in objects(case, "ConfigMap")}
        plugin = yaml.safe_load(config_maps[operator["devicePlugin"]["config"]["name"]][
            node.get(DEVICE_PLUGIN_CONFIG_LABEL, operator["devicePlugin"]["config"]["default"])
        ])
        replicas = {r["name"]: r["replicas"] for r in plugin.get("sharing", {}).get("timeSlicing", {}).get("resources", [])}
        mig = yaml.safe_load(config_maps[operator["migManager"]["config"]["name"]]["config.yaml"])["mig-configs"]
        [layout] = mig[node.get(MIG_CONFIG_LABEL, operator["migManager"]["config"]["default"])]
        if layout.get("mig-enabled"):
            sharing = Sharing("mig", mig_layout=layout["mig-devices"], mig_strategy=operator["mig"]["strategy"])
        elif replicas:
            sharing = Sharing("timeSlicing", replicas=replicas["nvidia.com/gpu"])
        else:
            sharing = Sharing()
        return device_plugin_resources(sharing, 1)
    node_class = named(case, "EC2NodeClass", node["nodeclass"]) if "nodeclass" in node else None
    if node_class is not None and node_class["spec"]["amiSelectorTerms"][0]["alias"].startswith("bottlerocket@"):
        user_data = node_class["spec"].get("userData")
        if bottlerocket.setting(user_data, "device-sharing-strategy") == "time-slicing":
            return {bottlerocket.time_sliced_resource(user_data): bottlerocket.setting(user_data, "time-slicing.replicas")}
        return {"nvidia.com/gpu": 1}
    return {}


def dra_driver_serves(case: Case, node: dict[str, str]) -> bool:
    driver = values(case, "dra-driver-nvidia-gpu")
    return driver is not None and driver["resources"]["gpus"]["enabled"] and all(
        node.get(k) == v for k, v in driver["kubeletPlugin"]["nodeSelector"].items()
    )


# --- 4. the exporter ---------------------------------------------------------------------------------------------

def exporters_of(case: Case, node: dict[str, str]) -> list[tuple[dcgm.ExporterSettings, dict[str, Any]]]:
    """(settings, ServiceMonitor) of every DCGM exporter that runs on the node, as the operator or the chart
    renders it from the release's values (the chart's merged over its vendored defaults)."""
    found = []
    if runs_operand(node, DCGM_EXPORTER_OPERAND):
        operator = (values(case, "gpu-operator") or {})["dcgmExporter"]
        found.append((dcgm.operator_settings(operator), operator["serviceMonitor"]))
    for release in ("dcgm-exporter", "dcgm-exporter-dra"):
        standalone = values(case, release)
        if standalone is None:
            continue
        terms = standalone["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        if any(all(node.get(e["key"]) in e["values"] for e in term["matchExpressions"]) for term in terms):
            merged = helm_merge(chart_values("dcgm-exporter", CHARTS["dcgm-exporter"].version), standalone)
            found.append((dcgm.chart_settings(merged), standalone["serviceMonitor"]))
    return found


def env_of(settings: dcgm.ExporterSettings, name: str) -> str | None:
    return settings.env.get(name)


# --- the chain, link by link --------------------------------------------------------------------------------------

PARAMS = pytest.mark.parametrize("case", CASES, ids=[case.kind for case in CASES])


def node_for(case: Case) -> dict[str, str]:
    flavor = admitted_flavor(case)
    if case.claim_template is not None:
        # Never a NodePool that takes the flavor's pods but cannot launch for a claim.
        assert karpenter_node(case, flavor) is None, f"{case.kind}: a NodePool selects the DRA flavor"
        node = node_group_node(case, flavor)
    else:
        node = karpenter_node(case, flavor)
    assert node is not None, f"{case.kind}: no pool holds or can launch a node for flavor {case.flavor}"
    return node


def gpu_requests(case: Case) -> dict[str, int]:
    return {r: int(v) for r, v in case.requests.items() if r.startswith("nvidia.com/")}


@PARAMS
def test_kueue_admits_the_pod_on_its_pools_flavor(case):
    flavor = admitted_flavor(case)
    assert flavor["metadata"]["name"] == case.flavor
    assert flavor["spec"]["nodeLabels"][POOL_LABEL] == case.pool


@PARAMS
def test_the_pool_holds_or_launches_a_node_that_fits_the_pod(case):
    node = node_for(case)
    assert node[POOL_LABEL] == case.pool
    if case.kind == "reserved":
        # Karpenter offers `reserved` only for the reservations its node class selects (karpenter-provider-aws
        # v1.14.1 pkg/providers/instancetype/offering/reserved_capacity_resolver.go).
        requirements = named(case, "NodePool", case.pool)["spec"]["template"]["spec"]["requirements"]
        assert "reserved" in next(r["values"] for r in requirements if r["key"] == CAPACITY_TYPE_LABEL)
        assert named(case, "EC2NodeClass", node["nodeclass"])["spec"].get("capacityReservationSelectorTerms")


@PARAMS
def test_one_device_plugin_or_the_dra_driver_hands_the_pod_its_device(case):
    node = node_for(case)
    advertised = advertised_on(case, node)
    if case.claim_template is not None:
        assert dra_driver_serves(case, node)
        # A GPU advertised by both the device plugin and DRA could be handed out twice.
        assert advertised == {}
    else:
        assert not dra_driver_serves(case, node)
        for resource in gpu_requests(case):
            assert advertised.get(resource, 0) >= 1, f"{case.kind}: the node advertises {advertised}, not {resource}"
        # The operator's plugin never runs beside Bottlerocket's host plugin.
        if "nodeclass" in node and named(case, "EC2NodeClass", node["nodeclass"])["spec"]["amiSelectorTerms"][0][
            "alias"
        ].startswith("bottlerocket@"):
            assert not runs_operand(node, DEVICE_PLUGIN_OPERAND)
    if EFA_RESOURCE in case.requests:
        efa = values(case, "aws-efa-k8s-device-plugin")
        assert efa is not None and all(node.get(k) == v for k, v in efa["nodeSelector"].items())
        assert node.get(EFA_LABEL) == "true"


@PARAMS
def test_exactly_one_exporter_names_the_pod_on_its_gpu_series(case):
    node = node_for(case)
    [(settings, service_monitor)] = exporters_of(case, node)
    # Without honorLabels Prometheus renames the exporter's `namespace` and `pod` to exported_*.
    assert service_monitor.get("honorLabels") is True
    id_type = env_of(settings, "DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE") or dcgm.DEFAULT_GPU_ID_TYPE
    per_gpu = advertised_on(case, node).get("nvidia.com/gpu", 0)
    shared = case.mig_profile is None and per_gpu > 1
    if case.mig_profile is None:
        # A MIG series is looked up by GPU and instance whatever the ID type (collector/types.go, GetIDOfType).
        listed = kubelet_device_id(UUID, 0 if shared else None)
        assert dcgm.names_pod(listed, id_type, 0, UUID), f"{case.kind}: {listed} never meets a {id_type} series"
    virtual = env_of(settings, dcgm.VIRTUAL_GPUS_ENV) == "true"
    if shared:
        # Without it the series of a shared GPU name only the last pod listed (kubernetes.go, toDeviceToPod).
        assert virtual and settings.host_pid is True
    if case.claim_template is not None:
        assert env_of(settings, dcgm.ENABLE_DRA_ENV) == "true"
        assert not virtual, "KUBERNETES_VIRTUAL_GPUS returns before the DRA mapping (kubernetes.go, Process)"
    # Each pod's own value needs its UID from the exporter's pod informer: env, token, RBAC (the model's list).
    assert dcgm.attribution_gaps(settings) == [], case.kind


def test_bottlerocket_keeps_its_index_device_ids_and_its_gpus_still_name_their_pods():
    """Bottlerocket's host plugin runs with deviceIDStrategy `index` (core-kit nvidia-k8s-device-plugin-conf:
    `{{default "index" ...}}`), which the platform leaves: it shapes only the device list handed to the
    container runtime, while the kubelet, and so dcgm-exporter, sees the plugin's device IDs, which are UUIDs
    (k8s-device-plugin v0.20.0 internal/rm/devices.go BuildDevice; internal/plugin/server.go)."""
    case = next(c for c in CASES if c.kind == "time-sliced-bottlerocket")
    node = node_for(case)
    user_data = named(case, "EC2NodeClass", node["nodeclass"])["spec"].get("userData")
    assert bottlerocket.setting(user_data, "device-id-strategy") == "index"
    listed = kubelet_device_id(UUID, 3)
    assert listed == f"{UUID}::3"
    assert dcgm.names_pod(listed, dcgm.DEFAULT_GPU_ID_TYPE, 0, UUID)
    # The exporter's other ID type would miss it: `nvidia0` is never a kubelet device ID.
    assert not dcgm.names_pod(listed, dcgm.GPU_ID_TYPE_DEVICE_NAME, 0, UUID)


def test_pods_sharing_a_time_sliced_gpu_see_their_own_value_only_for_utilisation_and_framebuffer_used():
    """NVIDIA/dcgm-exporter (the release GPU Operator v26.7.0 deploys) internal/pkg/transformation/
    process_metrics.go isPerProcessMetric: GPU utilisation and framebuffer used are split per process;
    every other series is copied whole to each pod sharing the GPU."""
    exposed = {
        "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_POWER_USAGE",
        "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_DEV_XID_ERRORS",
    }
    assert dcgm.whole_gpu_metrics_when_shared(exposed) == {
        "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_DEV_XID_ERRORS",
    }


PROMTOOL_CASE = """
  - name: {name}
    interval: 1m
    input_series:
{series}
    promql_expr_test:
      - expr: '{trigger}'
        eval_time: 2m
        exp_samples: [{{labels: '{{}}', value: {value}}}]
      - expr: '{dashboard}'
        eval_time: 2m
        exp_samples: [{{labels: '{{namespace="{namespace}"}}', value: {value}}}]
"""


def series_of(case: Case) -> list[str]:
    """The pod's GPU series as the exporter writes them, and what kube-state-metrics says the pod holds."""
    pod = f'namespace="{case.tenant}", pod="{case.pod_name}"'
    # The scrape writes the operator's exporter job on every exporter's series (standalone ones relabel to it).
    device = f'{DCGM_JOB}, hostname="ip-10-20-1-7.ec2.internal", gpu="0", UUID="{UUID}"'
    if case.mig_profile is not None:
        found = [f"DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{pod}, {device}, GPU_I_ID=\"1\", GPU_I_PROFILE=\"{case.mig_profile}\"}}"]
    else:
        found = [f"DCGM_FI_DEV_GPU_UTIL{{{pod}, {device}}}"]
    values_ = ["0.4x5" if case.mig_profile else "40x5"]
    if case.claim_template is not None:
        claim = f'claim_name="gpu", resourceclaim_template_name="{case.claim_template}"'
        found.append(f"kube_pod_resourceclaim_info{{{pod}, {claim}}}")
    for resource, amount in gpu_requests(case).items():
        spelled = resource.replace(".", "_").replace("/", "_").replace("-", "_")
        found.append(f'kube_pod_container_resource_requests{{{pod}, container="main", resource="{spelled}"}}')
        values_.append(f"{amount}x5")
    values_ += ["1x5"] * (len(found) - len(values_))
    return [f"      - {{series: '{s}', values: '{v}'}}" for s, v in zip(found, values_, strict=True)]


def dashboard_rule(case: Case) -> str:
    """The recorded per-namespace utilisation, as rendered; the tenant dashboard plots it."""
    dashboard = json.loads(named(case, "ConfigMap", "grafana-dashboard-gpu-tenants", "monitoring")["data"]["gpu-tenants.json"])
    assert NAMESPACE_GPU_UTILISATION in json.dumps(dashboard)
    return next(
        rule["expr"]
        for rules in objects(case, "PrometheusRule")
        for group in rules["spec"]["groups"]
        for rule in group["rules"]
        if rule.get("record") == NAMESPACE_GPU_UTILISATION
    )


def test_the_pods_trigger_and_its_tenant_dashboard_select_its_series(tmp_path):
    """promtool evaluates each case's KEDA GPU trigger (the query components/autoscaling renders into every
    ScaledObject) and the dashboard's recording rule on the pod's series: both must find it."""
    promtool = shutil.which("promtool")
    assert promtool, "promtool is missing: `make test` installs it (scripts/ensure-promtool)"
    tests = "".join(
        PROMTOOL_CASE.format(
            name=case.kind,
            series="\n".join(series_of(case)),
            trigger=autoscaling.gpu_utilization_query(case.tenant, case.deployment),
            dashboard=dashboard_rule(case),
            namespace=case.tenant,
            value=40,
        )
        for case in CASES
    )
    path = tmp_path / "chains.test.yaml"
    path.write_text("rule_files: []\nevaluation_interval: 1m\ntests:" + tests)
    result = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


# --- who preempts a served replica ---------------------------------------------------------------------------------

def test_a_served_replica_runs_at_its_tenants_tier_and_only_higher_tiers_preempt_it():
    """The platform's vLLM Deployment carries the tenant's tier; Kueue's withinClusterQueue: LowerPriority then
    lets only strictly higher tiers preempt its replicas, and a surge replica preempts only lower tiers
    (models/kueue: workload_priority, pkg/util/priority; satisfies_policy, preemption_policy.go)."""
    from models.kueue.preemption import satisfies_policy
    from models.kueue.workload import Workload, workload_priority

    case = Case("served", "multi-pool", "gpu-a100", "llm-training", "a100-spot")
    deployment = named(case, "Deployment", "embeddings", "llm-training")
    classes = {o["metadata"]["name"]: o["value"] for o in objects(case, "WorkloadPriorityClass")}
    policy = named(case, "ClusterQueue", "llm-training")["spec"]["preemption"]["withinClusterQueue"]
    template = deployment["spec"]["template"]

    def workload(name: str, labels: dict[str, str], at: float) -> Workload:
        priority = workload_priority(labels, [template["spec"]], classes, {})
        return Workload(name, "llm-training", (), priority=priority, timestamp=at)

    # llm-training is a `production` tenant (tests/fixtures/stacks/multi-pool.yaml): 1000.
    replica = workload("replica", template["metadata"]["labels"], 1.0)
    assert replica.priority == 1000
    jobs = {name: workload(name, {"kueue.x-k8s.io/priority-class": name}, 2.0) for name in sorted(classes)}
    jobs["unlabelled"] = workload("unlabelled", {}, 2.0)
    assert [name for name, job in jobs.items() if satisfies_policy(job, replica, policy)] == []
    surge = workload("surge", template["metadata"]["labels"], 3.0)
    assert not satisfies_policy(surge, replica, policy)  # a surge replica never evicts its siblings
    assert [name for name, job in jobs.items() if satisfies_policy(surge, job, policy)] == [
        "best-effort",
        "standard",
        "unlabelled",
    ]
    # Unlabelled, a replica would be priority 0 and every tier's job would preempt it.
    bare = workload("bare", {}, 1.0)
    assert [name for name, job in jobs.items() if satisfies_policy(job, bare, policy)] == [
        "best-effort",
        "production",
        "standard",
    ]
