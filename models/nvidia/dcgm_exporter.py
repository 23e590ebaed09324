"""How dcgm-exporter names the pod a GPU series belongs to, in the 4.6.0-4.8.3 image GPU Operator v26.7.0 deploys.

The store holds no 4.6.0-4.8.3 tag of NVIDIA/dcgm-exporter. The rules below are read at two commits on
either side of it and hold at both: d5e5f51 (main one commit after 4.5.3-4.8.2, the standalone chart's
tag) and 7ad58324 (main after the release; its hack/versions.env says DCGM 4.6.0, exporter 4.8.3).
Files are internal/pkg/transformation/ unless named otherwise; where the commits differ, both are named.

- The exporter reads the kubelet's pod-resources socket and keys each pod by the device IDs listed for
  it (internal/pkg/transformation/kubernetes.go, toDeviceToPod / toDeviceToSharingPods), which are the
  device plugin's: the GPU's UUID, `<uuid>::<n>` for a time-slicing replica (the part before `::` is the
  key), `MIG-<uuid>` for a MIG device (keyed by its parent GPU and GPU instance).
- It looks each GPU series up by `--kubernetes-gpu-id-type` (pkg/cmd/app.go, default `uid`):
  `uid` -> the GPU's UUID, `device-name` -> `nvidia<index>` (internal/pkg/collector/types.go,
  GetIDOfType). Only `uid` meets the device plugin's UUIDs.
- With KUBERNETES_VIRTUAL_GPUS each sharing pod gets a copy of the GPU's series; only
  PER_PROCESS_METRICS carry the pod's own value (process_metrics.go, isPerProcessMetric; pidmapper.go maps
  PIDs to pods, which needs hostPID), every other series is the whole GPU's. Process then returns before
  its DRA block (kubernetes.go, Process), so one exporter cannot serve both time-sliced and DRA GPUs.
- DRA-allocated GPUs are named only with KUBERNETES_ENABLE_DRA (the chart's `kubernetesDRA.enabled`),
  from the pod-resources socket's dynamic resources and the ResourceSlices (toDeviceToPodsDRA).

What per-pod attribution needs from the Kubernetes API (`attribution_gaps`): the per-pod value of a
PER_PROCESS_METRICS series is keyed by the pod's UID (createPerProcessMetrics, buildPodValueMap: the
processes' pods are found by the UID in /proc/<pid>/cgroup, pidmapper.go buildPIDToPodMap), and the UID
comes only from the pod informer (createPodInfo: `uid := ""` unless podLister finds the pod). A pod
without one gets the value "0" (buildIdlePodValues), so every sharing pod's GPU_UTIL and FB_USED read 0.
The informer exists only when NewPodMapper gets an in-cluster config (a mounted service-account token)
and, in the 4.8.3 line, only with DCGM_EXPORTER_KUBERNETES_ENABLE_POD_LABELS, _POD_UID or
KUBERNETES_ENABLE_DRA set (NewPodMapper at 7ad58324, main after the 4.6.0-4.8.3 release; d5e5f51 builds
it whenever the token is there); it lists and watches pods (informers.Core().V1().Pods()). DRA adds a
ResourceSlice informer (dra.go NewDRAResourceSliceManager: resource.k8s.io v1 when served, else
v1beta1 at 7ad58324; v1beta1 only at d5e5f51), which lists and watches `resourceslices`. ResourceClaims
are never read: the claim's name comes from the pod-resources socket.

Who grants it: the GPU Operator (v26.7.0 controllers/object_controls.go TransformDCGMExporter) mounts
the token (assets/state-dcgm-exporter/0800_daemonset.yaml sets automountServiceAccountToken: false),
sets the env and installs ClusterRole nvidia-dcgm-exporter-read-pods (pods get/list/watch; rbacGates)
only with `dcgmExporter.enablePodLabels` or `enablePodUID` (IsKubernetesPodMetadataEnabled) or those
env vars in `dcgmExporter.env`. The standalone chart (4.5.3-4.8.2 deployment/templates/daemonset.yaml,
serviceaccount.yaml, clusterrole.yaml) does so only with `kubernetes.enablePodLabels`/`enablePodUID`
and `kubernetes.rbac.create`, or `kubernetesDRA.enabled`; its ClusterRole grants pods and
resourceslices get/list/watch in "" and resource.k8s.io.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# --kubernetes-gpu-id-type values (internal/pkg/appconfig/const.go, KubernetesGPUIDType).
GPU_ID_TYPE_UID = "uid"
GPU_ID_TYPE_DEVICE_NAME = "device-name"
DEFAULT_GPU_ID_TYPE = GPU_ID_TYPE_UID
# The series KUBERNETES_VIRTUAL_GPUS splits per pod by process (transformation/const.go).
PER_PROCESS_METRICS = frozenset({"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED"})
# The labels the exporter writes the pod's identity under (transformation/const.go, podAttribute...).
POD_LABEL = "pod"
NAMESPACE_LABEL = "namespace"
CONTAINER_LABEL = "container"
VIRTUAL_GPUS_ENV = "KUBERNETES_VIRTUAL_GPUS"
ENABLE_DRA_ENV = "KUBERNETES_ENABLE_DRA"
# pkg/cmd/app.go: the env vars of --kubernetes, --kubernetes-enable-pod-labels, --kubernetes-enable-pod-uid.
KUBERNETES_ENV = "DCGM_EXPORTER_KUBERNETES"
POD_LABELS_ENV = "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_LABELS"
POD_UID_ENV = "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_UID"
# (API group, resource) the pod informer and the ResourceSlice informer list and watch.
PODS = ("", "pods")
RESOURCE_SLICES = ("resource.k8s.io", "resourceslices")
INFORMER_VERBS = frozenset({"list", "watch"})


@dataclass(frozen=True)
class ExporterSettings:
    """What one exporter DaemonSet runs with, as its chart or operator renders it."""

    env: Mapping[str, str]
    service_account_token: bool  # automountServiceAccountToken on the pod
    granted: Mapping[tuple[str, str], frozenset[str]] = field(default_factory=dict)  # cluster-wide, by (group, resource)
    host_pid: bool = False

    def on(self, name: str) -> bool:
        """A boolean flag as urfave/cli reads it from the environment (strconv.ParseBool)."""
        return self.env.get(name, "") in ("1", "t", "T", "TRUE", "true", "True")


def attribution_gaps(settings: ExporterSettings) -> list[str]:
    """What keeps this exporter from writing each pod's own value on its series (the module docstring); [] when nothing."""
    gaps: list[str] = []
    if not settings.on(KUBERNETES_ENV):
        gaps.append(f"{KUBERNETES_ENV} is off: no series names a pod")
    virtual, dra = settings.on(VIRTUAL_GPUS_ENV), settings.on(ENABLE_DRA_ENV)
    if virtual and dra:
        gaps.append(f"{VIRTUAL_GPUS_ENV} returns before the DRA mapping (kubernetes.go Process): DRA pods go unnamed")
    if not (virtual or dra):
        return gaps
    informer = settings.on(POD_UID_ENV) or settings.on(POD_LABELS_ENV) or dra
    if not informer:
        gaps.append(f"no pod informer without {POD_UID_ENV}, {POD_LABELS_ENV} or {ENABLE_DRA_ENV}: every pod's UID is empty")
    if not settings.service_account_token:
        gaps.append("no service-account token: rest.InClusterConfig fails and the pod informer never starts")
    needed = [PODS, RESOURCE_SLICES] if dra else [PODS]
    for group, resource in needed:
        if not settings.granted.get((group, resource), frozenset()) >= INFORMER_VERBS:
            gaps.append(f"no cluster-wide list and watch on {resource} ({group or 'core'}): its informer never syncs")
    if virtual and not settings.host_pid:
        gaps.append("no hostPID: /proc/<pid>/cgroup of the GPU's processes is out of sight (pidmapper.go)")
    return gaps


def _truthy(value: Any) -> bool:
    """A Helm template's truth (text/template: false, 0, nil and empty values are false)."""
    return bool(value)


def chart_settings(values: Mapping[str, Any]) -> ExporterSettings:
    """The exporter the standalone chart renders from these (merged) values: 4.5.3-4.8.2 deployment/templates/
    daemonset.yaml (env, automountServiceAccountToken, hostPID), clusterrole.yaml (rules and condition)."""
    kubernetes = values.get("kubernetes") or {}
    labels, uid = _truthy(kubernetes.get("enablePodLabels")), _truthy(kubernetes.get("enablePodUID"))
    dra = _truthy((values.get("kubernetesDRA") or {}).get("enabled"))
    api_access = ((labels or uid) and _truthy((kubernetes.get("rbac") or {}).get("create"))) or dra
    env = {KUBERNETES_ENV: "true"}
    if labels:
        env[POD_LABELS_ENV] = "true"
    if uid:
        env[POD_UID_ENV] = "true"
    if dra:
        env[ENABLE_DRA_ENV] = "true"
    env.update({e["name"]: str(e.get("value", "")) for e in values.get("extraEnv") or []})
    verbs = frozenset({"get", "list", "watch"})
    granted = {PODS: verbs, RESOURCE_SLICES: verbs} if api_access else {}
    return ExporterSettings(env, bool(api_access), granted, _truthy(values.get("hostPID")))


def operator_settings(dcgm_exporter: Mapping[str, Any]) -> ExporterSettings:
    """The exporter the GPU Operator v26.7.0 runs for these `dcgmExporter` values (the module docstring):
    0800_daemonset.yaml's env, then TransformDCGMExporter's."""
    env = {KUBERNETES_ENV: "true"}
    labels, uid = _truthy(dcgm_exporter.get("enablePodLabels")), _truthy(dcgm_exporter.get("enablePodUID"))
    if labels:
        env[POD_LABELS_ENV] = "true"
    if uid:
        env[POD_UID_ENV] = "true"
    env.update({e["name"]: str(e.get("value", "")) for e in dcgm_exporter.get("env") or []})
    # dcgmExporterEnvEnablesPodMetadata: the env vars count too, compared with strings.EqualFold.
    metadata = labels or uid or any(env.get(name, "").lower() == "true" for name in (POD_LABELS_ENV, POD_UID_ENV))
    granted = {PODS: frozenset({"get", "list", "watch"})} if metadata else {}
    return ExporterSettings(env, metadata, granted, _truthy(dcgm_exporter.get("hostPID")))


def series_id(gpu_id_type: str, index: int, uuid: str) -> str:
    """The ID the exporter looks a GPU's series up by (GetIDOfType)."""
    if gpu_id_type == GPU_ID_TYPE_UID:
        return uuid
    if gpu_id_type == GPU_ID_TYPE_DEVICE_NAME:
        return f"nvidia{index}"
    raise ValueError(f"unsupported KubernetesGPUIDType {gpu_id_type!r}")


def pod_key(device_id: str) -> str:
    """The key the exporter files a pod under for one listed device ID: a replica's `::<n>` is dropped."""
    return device_id.partition("::")[0]


def names_pod(device_id: str, gpu_id_type: str, index: int, uuid: str) -> bool:
    """Whether the series of GPU `index`/`uuid` carry the pod that was handed `device_id`."""
    return pod_key(device_id) == series_id(gpu_id_type, index, uuid)


def whole_gpu_metrics_when_shared(metrics: set[str] | frozenset[str]) -> set[str]:
    """Of these DCGM series, those a time-sliced GPU's sharing pods each see as the whole GPU's value."""
    return set(metrics) - PER_PROCESS_METRICS
