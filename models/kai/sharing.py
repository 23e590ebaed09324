"""What KAI does to a fractional pod and to the GPU it shares, and so what the rest of the cluster sees of them.

kai-scheduler/KAI-Scheduler v0.17.0:

- pkg/admission/webhook/v1alpha2/gpusharing/gpu_sharing.go `Mutate`, with pkg/binder/common/gpu_access.go
  `AddGPUSharingEnvVars` and env_vars.go `AddDirectEnvVarsConfigMapSource`: KAI's mutating webhook gives the
  fraction's container (the first, or the one `gpu-fraction-container-name` names) `NVIDIA_VISIBLE_DEVICES`,
  `RUNAI_NUM_OF_GPUS` and `GPU_PORTION` from the ConfigMap `<prefix>-<index>` (`i<index>` for an init container)
  and an envFrom of `<prefix>-<index>-evar`; the prefix is the pod's `runai/shared-gpu-configmap` annotation,
  which the webhook sets when absent (pkg/binder/common/gpusharingconfigmap/config_map.go
  `SetGpuCapabilitiesConfigMapName`). At binding the binder writes the shared GPU into that ConfigMap
  (gpu_access.go `SetNvidiaVisibleDevices`): the NVIDIA container runtime then reads NVIDIA_VISIBLE_DEVICES to
  give the container its GPU. The pod itself requests no `nvidia.com/gpu`.
- pkg/binder/binding/resourcereservation/resource_reservation.go `createResourceReservationPod`: the GPU is held
  by a reservation pod in KAI's reservation namespace, bound to the node (`nodeName`), requesting one whole
  `nvidia.com/gpu`, labelled `runai-gpu-group: <group>` and annotated `karpenter.sh/do-not-disrupt`, with the
  fractional pod's tolerations and no securityContext unless KAI's config sets one.
"""

from __future__ import annotations

from typing import Any

from .constants import RESERVATION_NAMESPACE

CONFIG_MAP_ANNOTATION = "runai/shared-gpu-configmap"
VISIBLE_DEVICES_ENV = "NVIDIA_VISIBLE_DEVICES"
# The variables the webhook sets from the ConfigMap, in its order (RUNAI_NUM_OF_GPUS is deprecated upstream).
SHARING_ENV = (VISIBLE_DEVICES_ENV, "RUNAI_NUM_OF_GPUS", "GPU_PORTION")
GPU_GROUP_LABEL = "runai-gpu-group"


def fraction_container_env(config_map_prefix: str, index: int = 0, init: bool = False) -> list[dict[str, Any]]:
    """The env entries KAI's webhook adds to the fraction's container, each read from the sharing ConfigMap."""
    name = f"{config_map_prefix}-{'i' if init else ''}{index}"
    return [
        {"name": env, "valueFrom": {"configMapKeyRef": {"key": env, "name": name}}} for env in SHARING_ENV
    ]


def fraction_container_env_from(config_map_prefix: str, index: int = 0, init: bool = False) -> list[dict[str, Any]]:
    """The envFrom entry the webhook adds beside the env: the ConfigMap of direct variables, required."""
    name = f"{config_map_prefix}-{'i' if init else ''}{index}-evar"
    return [{"configMapRef": {"name": name, "optional": False}}]


def mutated(pod: dict[str, Any], config_map_prefix: str) -> dict[str, Any]:
    """`pod` (a fractional request for its first container) as KAI's webhook hands it on to validation."""
    spec = dict(pod["spec"])
    first = dict(spec["containers"][0])
    first["env"] = [e for e in first.get("env", []) if e["name"] not in SHARING_ENV] + fraction_container_env(
        config_map_prefix
    )
    first["envFrom"] = [*first.get("envFrom", []), *fraction_container_env_from(config_map_prefix)]
    spec["containers"] = [first, *spec["containers"][1:]]
    metadata = dict(pod["metadata"])
    metadata["annotations"] = {**metadata.get("annotations", {}), CONFIG_MAP_ANNOTATION: config_map_prefix}
    return {**pod, "metadata": metadata, "spec": spec}


def device_holder_namespace() -> str:
    """The namespace of the pod the device plugin allocates a shared GPU to: KAI's reservation pod's, whichever
    tenant's fractions run on the GPU. The kubelet's pod-resources API, and so whatever keys GPUs to pods by it
    (dcgm-exporter: models/nvidia/dcgm_exporter.py), lists the GPU under that pod only."""
    return RESERVATION_NAMESPACE
