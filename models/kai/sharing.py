"""What KAI does to a fractional pod and to the GPU it shares, and so what the rest of the cluster sees of them.

kai-scheduler/KAI-Scheduler v0.17.0:

- pkg/admission/webhook/v1alpha2/gpusharing/gpu_sharing.go `Mutate`, with pkg/binder/common/gpu_access.go
  `AddGPUSharingEnvVars` and env_vars.go `AddDirectEnvVarsConfigMapSource`: KAI's mutating webhook gives the
  fraction's container (the first, or the one `gpu-fraction-container-name` names) `NVIDIA_VISIBLE_DEVICES`,
  `RUNAI_NUM_OF_GPUS` and `GPU_PORTION` from the ConfigMap `<prefix>-<index>` (`i<index>` for an init container)
  and an envFrom of `<prefix>-<index>-evar`; the prefix is the pod's `runai/shared-gpu-configmap` annotation,
  which the webhook sets when absent (pkg/binder/common/gpusharingconfigmap/config_map.go
  `SetGpuCapabilitiesConfigMapName`), and mounts that ConfigMap as a volume (pkg/binder/common/volumes.go
  `SetConfigMapVolume`). At binding the binder writes the shared GPU into that ConfigMap
  (gpu_access.go `SetNvidiaVisibleDevices`): the NVIDIA container runtime then reads NVIDIA_VISIBLE_DEVICES to
  give the container its GPU. The pod itself requests no `nvidia.com/gpu`.
- pkg/binder/binding/resourcereservation/resource_reservation.go `createResourceReservationPod`: the GPU is held
  by a reservation pod in KAI's reservation namespace, bound to the node (`nodeName`), requesting one whole
  `nvidia.com/gpu`, labelled `runai-gpu-group: <group>` and annotated `karpenter.sh/do-not-disrupt`, with the
  fractional pod's tolerations and no securityContext unless KAI's config sets one.
- pkg/binder/common/gpusharingconfigmap/config_map.go `generateConfigMapNamePrefix`: the prefix the webhook
  writes is `<base>-<7 random>-shared-gpu`, the base the pod's first owner's name (else the pod's), cut to fit
  and stripped of trailing `.`/`-`; the random part is apimachinery's rand.String (k8s.io/apimachinery
  v0.35.0 pkg/util/rand/rand.go `alphanums`). `UpsertJobConfigMap` (called by pkg/binder/plugins/gpusharing/
  gpu_sharing.go `PreBind` for both ConfigMaps): the binder creates the ConfigMap when absent; when one exists
  it patches it: if its owners differ, to the binder's owners and empty data (a JSON merge patch from the found
  object to the desired one drops its keys), else keeping every key and adding none. It sets no labels, only an
  ownerReference to the pod (no `controller`), so nothing but the writer's identity and the name tells KAI's
  ConfigMap from a tenant's; the binder deletes both on a failed bind (`Rollback`), the garbage collector when the
  pod goes.
- pkg/admission/webhook/v1alpha2/deviceaccess/device_access.go (on with the Config's
  `admission.blockNvidiaVisibleDevices`, chart value `global.blockNvidiaVisibleDevices`, off by default;
  cmd/admission/main.go `registerPlugins`): KAI's webhook gives every container but the fraction's that
  requests no `nvidia.com/gpu` (or MIG resource) `NVIDIA_VISIBLE_DEVICES=void`, and refuses a non-fraction
  container whose variable is other than `void`/`none` or comes from `valueFrom`. Containers requesting whole
  GPUs are left as written. KAI's mutating webhook takes pod CREATE only, for pods naming its scheduler
  (pkg/operator/operands/admission/resources.go `mutatingWCForKAIConfig`, `buildSchedulerNameMatchConditions`).
"""

from __future__ import annotations

import re
from typing import Any

from .constants import GPU_FRACTION_ANNOTATION, GPU_MEMORY_ANNOTATION, RESERVATION_NAMESPACE, SYSTEM_NAMESPACE

CONFIG_MAP_ANNOTATION = "runai/shared-gpu-configmap"
VISIBLE_DEVICES_ENV = "NVIDIA_VISIBLE_DEVICES"
# What the deviceaccess plugin writes into every other container (and all the platform lets one carry).
VOID = "void"
# The end of every prefix the webhook generates, the random part's alphabet and length.
CONFIG_MAP_PREFIX_END = "shared-gpu"
RANDOM_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
RANDOM_LENGTH = 7
_MAX_VOLUME_NAME = 63
# A prefix of the form the webhook generates (any base: the security of a fraction rests on who may write the
# ConfigMaps it names, not on the base).
CONFIG_MAP_PREFIX_PATTERN = rf"^[a-z0-9.-]*-[{RANDOM_ALPHABET}]{{{RANDOM_LENGTH}}}-{CONFIG_MAP_PREFIX_END}$"
# Every name of a sharing ConfigMap some such prefix yields: `<prefix>-<index>`, `-i<index>` for an init
# container, each with or without `-evar`. Only KAI's binder writes ConfigMaps so named in tenant namespaces.
CONFIG_MAP_NAME_PATTERN = rf"-{CONFIG_MAP_PREFIX_END}-i?[0-9]+(-evar)?$"
# The binder's service account: the operator names the binder's Deployment and its service account `binder`
# in KAI's namespace (pkg/operator/operands/binder/resources.go `defaultResourceName`, operands/common/
# common.go `ServiceAccountName = deploymentName`).
BINDER_SERVICE_ACCOUNT = "binder"
BINDER_NAMESPACE = SYSTEM_NAMESPACE
# The variables the webhook sets from the ConfigMap, in its order (RUNAI_NUM_OF_GPUS is deprecated upstream).
SHARING_ENV = (VISIBLE_DEVICES_ENV, "RUNAI_NUM_OF_GPUS", "GPU_PORTION")
GPU_GROUP_LABEL = "runai-gpu-group"


def config_map_name(config_map_prefix: str, index: int = 0, init: bool = False) -> str:
    """The capabilities ConfigMap of the fraction's container (`SetGpuCapabilitiesConfigMapName`)."""
    return f"{config_map_prefix}-{'i' if init else ''}{index}"


def config_volume_name(config_map: str) -> str:
    """The volume the webhook mounts the ConfigMap as (pkg/binder/common/volumes.go `GetConfigVolumeName`)."""
    return re.sub(r"[^a-z0-9-]+", "-", f"{config_map}-vol".lower()).strip("-")


def generated_prefix(pod: dict[str, Any], random: str, index: int = 0) -> str:
    """The prefix the webhook writes into a pod without one, `random` standing for rand.String(7)."""
    owners = pod["metadata"].get("ownerReferences") or []
    base = owners[0]["name"] if owners else pod["metadata"].get("name", "")
    longest = _MAX_VOLUME_NAME - (RANDOM_LENGTH + 6) - len(CONFIG_MAP_PREFIX_END) - len(str(index)) - 1 - 5
    return f"{base[:longest].rstrip('.-')}-{random}-{CONFIG_MAP_PREFIX_END}"


def fraction_container_env(config_map_prefix: str, index: int = 0, init: bool = False) -> list[dict[str, Any]]:
    """The env entries KAI's webhook adds to the fraction's container, each read from the sharing ConfigMap."""
    name = config_map_name(config_map_prefix, index, init)
    return [
        {"name": env, "valueFrom": {"configMapKeyRef": {"key": env, "name": name}}} for env in SHARING_ENV
    ]


def fraction_container_env_from(config_map_prefix: str, index: int = 0, init: bool = False) -> list[dict[str, Any]]:
    """The envFrom entry the webhook adds beside the env: the ConfigMap of direct variables, required."""
    name = f"{config_map_name(config_map_prefix, index, init)}-evar"
    return [{"configMapRef": {"name": name, "optional": False}}]


def _requests_gpu(container: dict[str, Any]) -> bool:
    """device_access.go `containerRequestsGPU`: a non-zero `nvidia.com/gpu` or MIG request; a limit alone counts, as
    the API server copies limits into unset requests before admission (kubernetes v1.35.0 pkg/apis/core/v1/
    defaults.go `SetDefaults_Pod`)."""
    resources = container.get("resources", {})
    requests = {**resources.get("limits", {}), **resources.get("requests", {})}
    return any(
        (name == "nvidia.com/gpu" or name.startswith("nvidia.com/mig-")) and str(qty) not in ("0", "")
        for name, qty in requests.items()
    )


def _voided(container: dict[str, Any]) -> dict[str, Any]:
    """device_access.go `blockGPUAccessIfNotRequested`: the variable set to void in place, else appended."""
    if _requests_gpu(container):
        return container
    env = [dict(e) for e in container.get("env", [])]
    for entry in env:
        if entry["name"] == VISIBLE_DEVICES_ENV:
            entry["value"] = VOID
            break
    else:
        env.append({"name": VISIBLE_DEVICES_ENV, "value": VOID})
    return {**container, "env": env}


def mutated(pod: dict[str, Any], config_map_prefix: str, block_visible_devices: bool = True) -> dict[str, Any]:
    """`pod` as KAI's webhook hands it on to validation: its gpusharing plugin, for a fraction (of its first
    container), gives that container the sharing variables and mounts the ConfigMap, under the pod's own prefix
    annotation or, without one, `config_map_prefix`; then, with `block_visible_devices` (the platform sets
    it), deviceaccess voids NVIDIA_VISIBLE_DEVICES in every other container requesting no GPU."""
    spec = dict(pod["spec"])
    metadata = dict(pod["metadata"])
    annotations = dict(metadata.get("annotations") or {})
    fractional = any(a in annotations for a in (GPU_FRACTION_ANNOTATION, GPU_MEMORY_ANNOTATION))
    containers = [dict(c) for c in spec["containers"]]
    if fractional:
        prefix = annotations.setdefault(CONFIG_MAP_ANNOTATION, config_map_prefix)
        first = containers[0]
        first["env"] = [e for e in first.get("env", []) if e["name"] not in SHARING_ENV] + fraction_container_env(prefix)
        env_from = fraction_container_env_from(prefix)
        if not any(f.get("configMapRef", {}).get("name") == env_from[0]["configMapRef"]["name"]
                   for f in first.get("envFrom", [])):
            first["envFrom"] = [*first.get("envFrom", []), *env_from]
        volume_name = config_volume_name(config_map_name(prefix))
        volumes = [v for v in spec.get("volumes", []) if v["name"] != volume_name]
        spec["volumes"] = [*volumes, {"name": volume_name, "configMap": {"name": config_map_name(prefix)}}]
        metadata["annotations"] = annotations
    if block_visible_devices:
        skip = 1 if fractional else 0
        containers = containers[:skip] + [_voided(c) for c in containers[skip:]]
        if spec.get("initContainers"):
            spec["initContainers"] = [_voided(dict(c)) for c in spec["initContainers"]]
    spec["containers"] = containers
    return {**pod, "metadata": metadata, "spec": spec}


def device_holder_namespace() -> str:
    """The namespace of the pod the device plugin allocates a shared GPU to: KAI's reservation pod's, whichever
    tenant's fractions run on the GPU. The kubelet's pod-resources API, and so whatever keys GPUs to pods by it
    (dcgm-exporter: models/nvidia/dcgm_exporter.py), lists the GPU under that pod only."""
    return RESERVATION_NAMESPACE
