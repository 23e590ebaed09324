"""The NVIDIA GPU Operator (device plugin, time-slicing, MIG, DCGM exporter) and, optionally, DRA.

Upstream, checked at these exact versions:
- the chart: NVIDIA/gpu-operator v26.7.0, deployments/gpu-operator/values.yaml and templates/;
  the operator's node labels and operand selectors: controllers/state_manager.go,
  controllers/object_controls.go, assets/state-*/ at the same tag;
- the device plugin's config file (the chart pins k8s-device-plugin v0.20.0):
  NVIDIA/k8s-device-plugin v0.20.0, api/config/v1/{config,sharing,replicas}.go;
- the MIG manager's config file (the chart pins k8s-mig-manager v0.15.0):
  NVIDIA/mig-parted v0.15.0, api/spec/v1/spec.go;
- DRA: kubernetes-sigs/dra-driver-nvidia-gpu (formerly NVIDIA/k8s-dra-driver-gpu) v0.4.1 and main at
  0.5.0-dev: deployments/helm/dra-driver-nvidia-gpu/{values.yaml,templates/}, and the attributes its
  kubelet plugin publishes in cmd/gpu-kubelet-plugin/{deviceinfo,mig,partitions}.go.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

from config import namespaces
from config.capacity import GpuPoolPlan
from config.dra_devices import device_class_selectors
from config.labels import DEVICE_PLUGIN_CONFIG_LABEL, DRA_ALLOCATION, GPU_ALLOCATION_LABEL, GPU_RESOURCE, MIG_CONFIG_LABEL
from config.node_pools import ClaimTemplateConfig, DraConfig, GpuConfig
from config.platform import DRA_MIN_KUBERNETES
from config.versions import ChartPin
from models.nvidia import dcgm_exporter as dcgm

from .lib.helm import helm_release
from .lib.namespaces import controller_namespace
from .lib.placement import on_system_nodes
from .lib.resources import Children, declare

NAMESPACE = namespaces.GPU_OPERATOR
RELEASE_NAME = "gpu-operator"
CHART_KEY = "gpu-operator"

# The operator reads both ConfigMaps from its own namespace.
DEVICE_PLUGIN_CONFIG_MAP = "device-plugin-config"
MIG_CONFIG_MAP = "mig-parted-config"  # not `default-mig-parted-config`: the operator owns that name
# The device plugin's configuration for nodes without a `nvidia.com/device-plugin.config` label.
DEFAULT_SHARING_CONFIG = "default"
# The operator labels every MIG-capable node that has no `nvidia.com/mig.config` label with this
# configuration (migManager.config.default), so a custom MIG config must define it.
MIG_DISABLED_CONFIG = "all-disabled"
# The MIG manager reads a custom ConfigMap's `config.yaml` key (CONFIG_FILE=/mig-parted-config/config.yaml).
MIG_CONFIG_KEY = "config.yaml"

DRA_NAMESPACE = namespaces.DRA_DRIVER
DRA_RELEASE_NAME = "dra-driver-nvidia-gpu"
DRA_CHART_KEY = "dra-driver-nvidia-gpu"

# The EKS API spells taint effects differently from Kubernetes.


@dataclass(frozen=True)
class NodeOsGpuStack:
    """What a node OS's NVIDIA AMI variant already ships, so the operator must not install it again."""

    driver: bool
    toolkit: bool
    device_plugin: bool


# Karpenter's al2023 alias resolves to the EKS AL2023 NVIDIA AMI (driver + container toolkit);
# Bottlerocket's NVIDIA variant also runs its own device plugin.
NODE_OS_GPU_STACK: dict[str, NodeOsGpuStack] = {
    "al2023": NodeOsGpuStack(driver=True, toolkit=True, device_plugin=False),
    "bottlerocket": NodeOsGpuStack(driver=True, toolkit=True, device_plugin=True),
}


class GpuOperator(pulumi.ComponentResource):
    """The GPU Operator's namespace, sharing ConfigMaps and Helm release; DRA's when enabled on 1.34+."""

    release: k8s.helm.v3.Release
    dra_release: k8s.helm.v3.Release | None

    def __init__(
        self,
        name: str,
        pools: Sequence[GpuPoolPlan],
        gpu: GpuConfig,
        *,
        kubernetes_version: str,
        charts: Mapping[str, ChartPin],
        provider: k8s.Provider,
        namespaces: Mapping[str, pulumi.Resource] | None = None,
        depends_on: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ):
        """
        :param namespaces: tenant namespaces by name; a ResourceClaimTemplate waits for its namespace.
        :param pools: the GPU pools' plans; their sharing modes shape the device plugin and MIG configs.
        :param gpu: cluster-wide GPU settings (MIG strategy, DRA).
        :param kubernetes_version: the control plane's minor version; DRA needs 1.34 (resource.k8s.io/v1).
        :param charts: the pinned charts table (config/versions.py CHARTS).
        :param provider: the cluster's Kubernetes provider.
        :param depends_on: what must exist before anything is applied (system nodes, add-ons).
        """
        super().__init__("gpu-platform:gpu:GpuOperator", name, None, opts)
        children = Children(self, provider, depends_on)

        namespace = declare(f"{name}-namespace", privileged_namespace(NAMESPACE), children.opts())
        config_maps = [
            declare(f"{name}-device-plugin-config", time_slicing_config_map(pools), children.opts(namespace)),
            declare(f"{name}-mig-config", mig_config_map(pools), children.opts(namespace)),
        ]
        # The operator mounts both ConfigMaps into its operands: they must exist before it starts.
        self.release = helm_release(
            f"{name}-operator",
            release_name=RELEASE_NAME,
            pin=charts[CHART_KEY],
            namespace=NAMESPACE,
            values=operator_values(pools, gpu),
            opts=children.opts(namespace, *config_maps),
        )

        self.dra_release = None
        api_version = dra_api_version(kubernetes_version)
        if gpu.dra.enabled and api_version is not None:
            dra_namespace = declare(f"{name}-dra-namespace", privileged_namespace(DRA_NAMESPACE), children.opts())
            # After the operator: the kubelet plugin is scheduled by the NFD labels the operator's NFD sets.
            self.dra_release = helm_release(
                f"{name}-dra-driver",
                release_name=DRA_RELEASE_NAME,
                pin=charts[DRA_CHART_KEY],
                namespace=DRA_NAMESPACE,
                values=dra_driver_values(api_version),
                opts=children.opts(dra_namespace, self.release),
            )
            for device_class in device_classes(gpu.dra, kubernetes_version):
                declare(f"{name}-device-class-{device_class['metadata']['name']}", device_class, children.opts(self.dra_release))
            for template in resource_claim_templates(gpu.dra.claim_templates, kubernetes_version):
                metadata = template["metadata"]
                tenant_namespace = (namespaces or {}).get(metadata["namespace"])
                waits_for = [self.dra_release, *([tenant_namespace] if tenant_namespace is not None else [])]
                declare(f"{name}-claim-{metadata['namespace']}-{metadata['name']}", template, children.opts(*waits_for))

        self.register_outputs(
            {
                "namespace": NAMESPACE,
                "chartVersion": self.release.version,
                "draChartVersion": self.dra_release.version if self.dra_release else None,
            }
        )



# --- GPU Operator builders -----------------------------------------------------------------------

def operator_values(pools: Sequence[GpuPoolPlan], gpu: GpuConfig) -> dict[str, Any]:
    """Values of the gpu-operator chart (v26.7.0); every key exists in its values.yaml."""
    stacks = [NODE_OS_GPU_STACK[pool.config.ami_family] for pool in pools]
    return {
        # Controllers run on the system nodes; the chart's default toleration (control-plane) is
        # dropped, as EKS runs no schedulable control-plane nodes.
        "operator": on_system_nodes(),
        # Every node OS the pools use ships the driver and the container toolkit in its NVIDIA AMI:
        # a second copy from the operator would fight the host's.
        "driver": {"enabled": not all(stack.driver for stack in stacks)},
        "toolkit": {"enabled": not all(stack.toolkit for stack in stacks)},
        # Operands keep the chart's daemonsets.tolerations (nvidia.com/gpu Exists NoSchedule), which
        # covers the GPU taint every GPU node carries. Bottlerocket and DRA pools label their nodes
        # nvidia.com/gpu.deploy.operands=false (GpuPoolPlan.labels): the operator then strips every
        # operand's deploy label there, so none of its DaemonSets (device plugin, DCGM exporter,
        # validator, GFD...) selects those nodes.
        "mig": {"strategy": gpu.mig_strategy},
        # Each node picks its named configuration through its nvidia.com/device-plugin.config label.
        "devicePlugin": {"config": {"name": DEVICE_PLUGIN_CONFIG_MAP, "default": DEFAULT_SHARING_CONFIG}},
        # Each MIG node picks its layout through its nvidia.com/mig.config label.
        "migManager": {"config": {"name": MIG_CONFIG_MAP, "default": MIG_DISABLED_CONFIG}},
        # GPU metrics for the monitoring stack; the operator skips the ServiceMonitor until its CRD exists.
        # honorLabels: the exporter labels each GPU with the `namespace`, `pod` and `container` using it;
        # without it Prometheus renames them exported_* and every per-workload query (KEDA's) finds nothing.
        "dcgmExporter": dcgm_exporter_values(pools),
        # NFD's master and garbage collector are controllers too; its workers keep the subchart
        # defaults, whose tolerations already include the GPU taint, so they label GPU nodes.
        "node-feature-discovery": {"master": on_system_nodes(), "gc": on_system_nodes()},
    }


def dcgm_exporter_values(pools: Sequence[GpuPoolPlan]) -> dict[str, Any]:
    """The operator's dcgm-exporter: scraped with its own labels; per-pod series on time-sliced GPUs.

    NVIDIA/dcgm-exporter (the release GPU Operator v26.7.0 deploys; upstream/metrics/dcgm-exporter/):
    without KUBERNETES_VIRTUAL_GPUS (pkg/cmd/app.go, default false) a shared GPU's series name one of the
    pods sharing it (internal/pkg/transformation/kubernetes.go, toDeviceToPod keeps the last), so the
    others' per-pod queries, KEDA's included, find nothing. With it the exporter writes a copy of each
    series per pod, and for DCGM_FI_DEV_GPU_UTIL and DCGM_FI_DEV_FB_USED each pod's own share, which it
    finds by mapping the GPU's processes to pods through /proc/<pid>/cgroup (pidmapper.go): hence
    hostPID. The chart's env and hostPID apply to every node's exporter, so both are on whenever a
    pool the operator's operands run on time-slices; whole and MIG GPUs map to pods the same way either
    way. Each pod's own share is keyed by its UID, which the exporter reads only from its pod informer:
    `enablePodUID` makes the operator mount the service-account token, set the env and grant pods
    get/list/watch (models/nvidia/dcgm_exporter.py, attribution_gaps); without it every pod's share
    reads 0. Bottlerocket and DRA pools' GPUs are exported by standalone exporters (components/dcgm_exporter.py).
    """
    values: dict[str, Any] = {"enabled": True, "serviceMonitor": {"enabled": True, "honorLabels": True}}
    if any(pool.config.sharing.mode == "timeSlicing" for pool in pools if pool.runs_operator_operands):
        values["env"] = [{"name": dcgm.VIRTUAL_GPUS_ENV, "value": "true"}]
        values["hostPID"] = True
        values["enablePodUID"] = True
    return values


def time_slicing_config_map(pools: Sequence[GpuPoolPlan]) -> dict[str, Any]:
    """The device plugin's named configurations: `default` (no sharing) and one per time-sliced pool.

    The MIG strategy is not repeated here: the operator passes mig.strategy as MIG_STRATEGY, and the
    device plugin lets environment flags override its config file.
    """
    configs: dict[str, dict[str, Any]] = {DEFAULT_SHARING_CONFIG: {"version": "v1"}}
    for pool in pools:
        sharing = pool.config.sharing
        if sharing.mode == "timeSlicing" and DEVICE_PLUGIN_CONFIG_LABEL in pool.labels:
            configs[pool.sharing_config_name] = {
                "version": "v1",
                "sharing": {"timeSlicing": {"resources": [{"name": GPU_RESOURCE, "replicas": sharing.replicas}]}},
            }
    return _config_map(DEVICE_PLUGIN_CONFIG_MAP, NAMESPACE, {name: _yaml(config) for name, config in configs.items()})


def mig_config_map(pools: Sequence[GpuPoolPlan]) -> dict[str, Any]:
    """mig-parted's config: `all-disabled` and one named layout per MIG pool, applied to all of a node's GPUs."""
    mig_configs: dict[str, list[dict[str, Any]]] = {MIG_DISABLED_CONFIG: [{"devices": "all", "mig-enabled": False}]}
    for pool in pools:
        sharing = pool.config.sharing
        if sharing.mode == "mig" and MIG_CONFIG_LABEL in pool.labels:
            assert sharing.mig_layout is not None
            mig_configs[pool.sharing_config_name] = [
                {"devices": "all", "mig-enabled": True, "mig-devices": dict(sorted(sharing.mig_layout.items()))}
            ]
    return _config_map(MIG_CONFIG_MAP, NAMESPACE, {MIG_CONFIG_KEY: _yaml({"version": "v1", "mig-configs": mig_configs})})


def privileged_namespace(name: str) -> dict[str, Any]:
    """The operator's or the DRA driver's namespace: `privileged`, as their pods load into the host's GPU stack."""
    return controller_namespace(name)








# --- DRA builders --------------------------------------------------------------------------------

def dra_api_version(kubernetes_version: str) -> str | None:
    """The resource.k8s.io version DRA objects use: v1 from 1.34 (GA); None below, where DRA stays off."""
    version = tuple(int(part) for part in kubernetes_version.split("."))
    return "resource.k8s.io/v1" if version >= DRA_MIN_KUBERNETES else None


def dra_driver_values(api_version: str) -> dict[str, Any]:
    """Values of the dra-driver-nvidia-gpu chart: GPU allocation only, on the DRA pools' nodes only."""
    return {
        # The AMI's driver lives on the host root, not under the operator's /run/nvidia/driver.
        "nvidiaDriverRoot": "/",
        # The chart refuses GPU allocation unless told the device plugin is off where the kubelet
        # plugin runs: DRA pools label their nodes nvidia.com/gpu.deploy.device-plugin=false.
        "gpuResourcesEnabledOverride": True,
        # ComputeDomains are for multi-node NVLink (GB200); no pool has it.
        "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}},
        # Pinned rather than discovered, so the DeviceClasses match the claim templates' version.
        "resourceApiVersion": api_version,
        # Only DRA pools: a GPU advertised by both the device plugin and DRA could be handed out twice.
        # The chart's default tolerations already cover the GPU taint.
        "kubeletPlugin": {"nodeSelector": {GPU_ALLOCATION_LABEL: DRA_ALLOCATION}},
    }


def device_classes(dra: DraConfig, kubernetes_version: str) -> list[dict[str, Any]]:
    """The administrator's DeviceClasses (cluster-scoped), each the driver's selector of its kind and its own,
    as proven against the DRA pools' devices (config/device_classes.py)."""
    api_version = dra_api_version(kubernetes_version)
    if api_version is None:
        return []
    selectors = device_class_selectors(dra)
    return [
        {
            "apiVersion": api_version,
            "kind": "DeviceClass",
            "metadata": {"name": device_class.name},
            "spec": {"selectors": [{"cel": {"expression": expression}} for expression in selectors[device_class.name]]},
        }
        for device_class in dra.device_classes
    ]


def resource_claim_templates(templates: Sequence[ClaimTemplateConfig], kubernetes_version: str) -> list[dict[str, Any]]:
    """One ResourceClaimTemplate per configured template; none where the cluster serves no resource.k8s.io/v1."""
    api_version = dra_api_version(kubernetes_version)
    if api_version is None:
        return []
    return [
        {
            "apiVersion": api_version,
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": template.name, "namespace": template.namespace},
            "spec": {"spec": {"devices": {"requests": [_device_request(template)]}}},
        }
        for template in templates
    ]


def _device_request(template: ClaimTemplateConfig) -> dict[str, Any]:
    exactly: dict[str, Any] = {"allocationMode": "ExactCount", "count": template.count}
    exactly["deviceClassName"] = template.device_class
    # Proven against the DRA pools' devices before anything is declared (config/claims.py).
    selectors = [{"cel": {"expression": expression}} for _, expression in template.selector_expressions]
    if selectors:
        exactly["selectors"] = selectors
    return {"name": "gpu", "exactly": exactly}


# --- helpers -------------------------------------------------------------------------------------

def _config_map(name: str, namespace: str, data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}, "data": data}


def _yaml(document: Any) -> str:
    return yaml.safe_dump(document, sort_keys=False, default_flow_style=False)
