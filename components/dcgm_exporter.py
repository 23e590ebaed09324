"""Standalone DCGM exporters on the nodes where the GPU Operator's operands stay off: Bottlerocket and DRA pools.

NVIDIA does not support the GPU Operator's operands on Bottlerocket (NVIDIA/gpu-operator#946), and on DRA
nodes its validator would crash-loop (config/capacity.py, GpuPoolPlan.runs_operator_operands), so those
pools label their nodes `nvidia.com/gpu.deploy.operands=false` and the operator's exporter never lands
there. A release of NVIDIA's own chart (NVIDIA/dcgm-exporter tag 4.5.3-4.8.2,
deployment/values.yaml and templates/daemonset.yaml, service-monitor.yaml; pinned in config/versions.py)
takes its place, writing the series the operator's would: the same image and counters, the same
`hostname` label (NODE_NAME from spec.nodeName), the same pod attribution through the kubelet's
pod-resources socket (the chart mounts `kubeletPath` as the operator does), KUBERNETES_VIRTUAL_GPUS
and hostPID when a Bottlerocket pool time-slices, and the same `job`, scraped with honorLabels by a
ServiceMonitor the monitoring stack's Prometheus selects (it selects every ServiceMonitor).

Two releases, because one exporter cannot name the pods of both kinds: with KUBERNETES_VIRTUAL_GPUS (a
time-sliced Bottlerocket pool) its Process returns before it reads DRA allocations (models/nvidia/
dcgm_exporter.py). `dcgm-exporter` serves the Bottlerocket pools from the GPU Operator's namespace;
`dcgm-exporter-dra` the DRA pools, with the chart's `kubernetesDRA.enabled` (KUBERNETES_ENABLE_DRA, and a
ClusterRole reading ResourceSlices), from the DRA driver's namespace. Not one namespace: the chart names
its Role `dcgm-exporter-read-cm` and its ConfigMap `exporter-metrics-config-map` whatever the release
(templates/role.yaml, metrics-configmap.yaml; no value scopes them), and Helm refuses to install an
object another release owns (offline/chart_objects.py reads every name the releases create).

Each pod's own utilisation on a time-sliced GPU is keyed by its UID, which the exporter reads only
through its pod informer: `kubernetes.enablePodUID` makes the chart mount the service-account token,
set DCGM_EXPORTER_KUBERNETES_ENABLE_POD_UID and grant pods get/list/watch (models/nvidia/dcgm_exporter.py,
attribution_gaps); without it every pod's share reads 0.

How the exporter reaches the GPUs on Bottlerocket: the NVIDIA variants run every container through the
NVIDIA container toolkit's hooks (bottlerocket-os/bottlerocket sources/shared-defaults/
nvidia-oci-hooks-containerd-cri.toml), so no RuntimeClass is needed, but they set
`settings.nvidia-container-runtime.visible-devices-envvar-when-unprivileged = false`
(sources/shared-defaults/nvidia-k8s-container-toolkit.toml; SECURITY_GUIDANCE.md "Enforce requested
NVIDIA GPU limits for unprivileged containers"): the image's NVIDIA_VISIBLE_DEVICES=all is honoured
only for a privileged container, which the toolkit takes to mean one with CAP_SYS_ADMIN in its bounding
set (NVIDIA/nvidia-container-toolkit v1.20 internal/config/image/privileged.go, IsPrivileged). The chart's
default securityContext (root, CAP_SYS_ADMIN, every other capability dropped) is that; DCGM then
initialises on Bottlerocket (bottlerocket-os/bottlerocket#3992: "indeed it works with CAP_SYS_ADMIN"),
without the full `privileged: true` the operator's exporter runs with. On a bump, diff values.yaml and
templates/ between the two tags and the image tag against the GPU Operator's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from config import namespaces
from config.capacity import GpuPoolPlan
from config.labels import POOL_LABEL
from config.versions import ChartPin
from models.nvidia import dcgm_exporter as dcgm

from .lib.helm import helm_release
from .lib.placement import gpu_toleration
from .lib.prometheus import EXPORTER_JOBS
from .lib.resources import Children

CHART_KEY = "dcgm-exporter"
RELEASE_NAME = "dcgm-exporter"
DRA_RELEASE_NAME = "dcgm-exporter-dra"
# The GPU Operator's and the DRA driver's namespaces: `privileged` under Pod Security, which root,
# CAP_SYS_ADMIN and a hostPath volume need, and open to Prometheus' scrapes (components/platform_network.py).
NAMESPACE = namespaces.GPU_OPERATOR
DRA_NAMESPACE = namespaces.DRA_DRIVER

# The exporter image the GPU Operator v26.7.0 deploys (deployments/gpu-operator/values.yaml
# dcgmExporter.version), so both exporters write the same metrics and labels.
OPERATOR_EXPORTER_TAG = "4.6.0-4.8.3-distroless"
# The counters the operator's exporter collects (assets/state-dcgm-exporter/0800_daemonset.yaml,
# DCGM_EXPORTER_COLLECTORS), a file in the image: the alerts and dashboards are written against it.
OPERATOR_COUNTERS = "/etc/dcgm-exporter/dcp-metrics-included.csv"
# The `job` of the operator's exporter's series (components/lib/prometheus.py), which this one writes too.
OPERATOR_JOB = EXPORTER_JOBS["dcgm-exporter"]


class DcgmExporter(pulumi.ComponentResource):
    """The dcgm-exporter chart's releases, on the nodes of the pools the GPU Operator's operands skip."""

    release: k8s.helm.v3.Release | None
    dra_release: k8s.helm.v3.Release | None

    def __init__(
        self,
        name: str,
        pools: Sequence[GpuPoolPlan],
        *,
        chart: ChartPin,
        provider: k8s.Provider,
        depends_on: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ):
        """
        :param pools: `PlatformConfig.gpu_pools`; the exporters run on the nodes of those without operator operands.
        :param chart: `PlatformConfig.charts["dcgm-exporter"]`.
        :param provider: the cluster's Kubernetes provider.
        :param depends_on: the GPU Operator's releases (their namespaces) and the monitoring CRDs (the ServiceMonitor).
        """
        super().__init__("gpu-platform:gpu:DcgmExporter", name, None, opts)
        children = Children(self, provider, depends_on)
        # A release moved to another namespace is replaced, and its successor names its ClusterRole and
        # ClusterRoleBinding as it does (`<release>-read-pods`, cluster-scoped): created first, it would
        # find them owned by the release it replaces (models/helm.py), so the old one goes first.
        replaced_first = {"delete_before_replace": True}
        self.release = self.dra_release = None
        if any(not pool.is_dra for pool in exporter_pools(pools)):
            self.release = helm_release(
                f"{name}-release",
                release_name=RELEASE_NAME,
                pin=chart,
                namespace=NAMESPACE,
                values=exporter_values(pools),
                opts=children.opts(**replaced_first),
            )
        if any(pool.is_dra for pool in exporter_pools(pools)):
            self.dra_release = helm_release(
                f"{name}-dra-release",
                release_name=DRA_RELEASE_NAME,
                pin=chart,
                namespace=DRA_NAMESPACE,
                values=exporter_values(pools, dra=True),
                opts=children.opts(**replaced_first),
            )
        release = self.release or self.dra_release
        self.register_outputs({"chartVersion": release.version if release is not None else None})


def exporter_pools(pools: Sequence[GpuPoolPlan]) -> list[GpuPoolPlan]:
    """The pools whose GPU metrics come from this exporter: those the operator's operands skip."""
    return [pool for pool in pools if not pool.runs_operator_operands]


def exporter_values(pools: Sequence[GpuPoolPlan], *, dra: bool = False) -> dict[str, Any]:
    """Values of the dcgm-exporter chart (4.8.2) for the Bottlerocket pools, or with `dra` the DRA pools; every
    key exists in its values.yaml."""
    served = [pool for pool in exporter_pools(pools) if pool.is_dra == dra]
    if not served:
        raise ValueError(f"no {'DRA' if dra else 'Bottlerocket'} GPU pool: the operator's exporter serves them all")
    values: dict[str, Any] = {
        "image": {"tag": OPERATOR_EXPORTER_TAG},
        # `-f` replaces the chart's default, its own exporter-metrics-config-map, which is then not mounted.
        "arguments": ["-f", OPERATOR_COUNTERS],
        "extraConfigMapVolumes": [],
        "extraVolumeMounts": [],
        # Exactly those pools' nodes, past the GPU taint; the chart's control-plane toleration is dropped.
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": POOL_LABEL, "operator": "In", "values": sorted(p.name for p in served)}]}
                    ]
                }
            }
        },
        "tolerations": [gpu_toleration()],
        # honorLabels keeps the `namespace`, `pod` and `container` the exporter labels each GPU with
        # (Prometheus would rename them exported_*), as on the operator's ServiceMonitor; `job` is the
        # operator's, so a query or rule that names the job sees every GPU node.
        "serviceMonitor": {
            "enabled": True,
            "honorLabels": True,
            "relabelings": [{"action": "replace", "targetLabel": "job", "replacement": OPERATOR_JOB}],
        },
    }
    if dra:
        # Pods get these GPUs through ResourceClaims, which the exporter reads only with this on.
        values["kubernetesDRA"] = {"enabled": True}
    if any(pool.config.sharing.mode == "timeSlicing" for pool in served):
        # A time-sliced GPU's series name one pod unless the exporter writes one per pod, which it maps
        # through /proc/<pid>/cgroup (the same setting as the operator's exporter, components/gpu_operator.py).
        values["extraEnv"] = [{"name": dcgm.VIRTUAL_GPUS_ENV, "value": "true"}]
        values["hostPID"] = True
        # Each pod's share is keyed by its UID, which only the pod informer supplies (the module docstring).
        values["kubernetes"] = {"enablePodUID": True}
    return values
