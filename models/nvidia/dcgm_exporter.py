"""How dcgm-exporter names the pod a GPU series belongs to (NVIDIA/dcgm-exporter at d5e5f510, the 4.6.0-4.8.3
image GPU Operator v26.7.0 deploys; upstream/metrics/dcgm-exporter/).

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
"""

from __future__ import annotations

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
