"""What NVIDIA's device plugin advertises for a node's GPUs, per sharing mode, and what the DRA driver publishes.

| sharing              | G physical GPUs advertise                                  |
|----------------------|------------------------------------------------------------|
| none                 | `nvidia.com/gpu`: G                                        |
| timeSlicing, R       | `nvidia.com/gpu`: R x G                                    |
| mig, strategy single | `nvidia.com/gpu`: devices per GPU x G                      |
| mig, strategy mixed  | `nvidia.com/mig-<profile>`: count x G, no whole GPU        |

NVIDIA/k8s-device-plugin v0.20.0 (the release GPU Operator v26.7.0 deploys): api/config/v1/replicas.go
(time-slicing replicas), internal/rm (MIG strategies). The DRA driver (kubernetes-sigs/dra-driver-nvidia-gpu
v0.4.1, cmd/gpu-kubelet-plugin/deviceinfo.go and mig.go) publishes one ResourceSlice device per GPU, or
per MIG device on a partitioned GPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .labels import GPU_RESOURCE, mig_resource

SHARING_MODES = ("none", "timeSlicing", "mig")
MIG_STRATEGIES = ("single", "mixed")


@dataclass(frozen=True)
class Sharing:
    """How a node's GPUs are shared: the device plugin's sharing config and the operator's MIG strategy."""

    mode: str = "none"  # one of SHARING_MODES
    replicas: int | None = None  # timeSlicing: shares per GPU
    mig_layout: Mapping[str, int] = field(default_factory=dict)  # mig: profile -> devices per GPU
    mig_strategy: str = "mixed"  # one of MIG_STRATEGIES

    @property
    def mig_devices_per_gpu(self) -> int:
        return sum(self.mig_layout.values())


def time_sliced_resource() -> str:
    """The resource a time-sliced GPU is advertised as.

    The device-plugin configs this platform writes and Bottlerocket's device-plugin settings leave
    `renameByDefault` false, so shares keep the name `nvidia.com/gpu` (k8s-device-plugin v0.20.0
    api/config/v1/replicas.go: renamed to `<name>.shared` only when true).
    """
    return GPU_RESOURCE


def device_plugin_resources(sharing: Sharing, gpus: int) -> dict[str, int]:
    """What `gpus` physical GPUs advertise through the device plugin, by extended resource (the table above)."""
    if sharing.mode == "timeSlicing":
        assert sharing.replicas is not None
        return {time_sliced_resource(): sharing.replicas * gpus}
    if sharing.mode == "mig":
        if sharing.mig_strategy == "single":
            return {GPU_RESOURCE: sharing.mig_devices_per_gpu * gpus}
        # Mixed: the layout MIG-enables every GPU (mig-parted `devices: all`), so no whole GPU is left.
        return {mig_resource(profile): count * gpus for profile, count in sorted(sharing.mig_layout.items())}
    return {GPU_RESOURCE: gpus}


def dra_devices(sharing: Sharing, gpus: int) -> int:
    """Devices the DRA driver's kubelet plugin publishes for `gpus` GPUs: each GPU, or each of its MIG devices."""
    return gpus * (sharing.mig_devices_per_gpu if sharing.mode == "mig" and sharing.mig_layout else 1)



def kubelet_device_id(uuid: str, replica: int | None = None) -> str:
    """The ID the device plugin lists a device to the kubelet under, and so the pod-resources API names it by.

    Always the GPU's (or MIG device's) UUID, `::<n>` appended per time-slicing replica
    (k8s-device-plugin v0.20.0 internal/rm/devices.go, BuildDevice: `dev.ID = uuid`; internal/rm/
    device_map.go, replicated AnnotatedIDs). `deviceIDStrategy` does not change it: it only shapes the
    device list handed to the container runtime in Allocate (internal/plugin/server.go,
    uniqueDeviceIDsFromAnnotatedDeviceIDs), so Bottlerocket's default of `index` leaves the mapping alone.
    """
    return uuid if replica is None else f"{uuid}::{replica}"


# The device-list strategy the GPU Operator gives its device plugin while CDI is on (its default): gpu-operator
# v26.7.0 controllers/object_controls.go `transformDevicePluginCtrForCDI`.
GPU_OPERATOR_DEVICE_LIST_STRATEGIES = ("cdi-annotations", "cdi-cri")
CDI_STRATEGIES = ("cdi-annotations", "cdi-cri")


def allocate_env(strategies: tuple[str, ...], device_ids: tuple[str, ...]) -> dict[str, str]:
    """The device-list variables the device plugin's Allocate response sets for a container given `device_ids`
    (k8s-device-plugin v0.20.0 internal/plugin/server.go `getAllocateResponse`): none when every strategy is a
    CDI one (the devices go as CDI names: annotations and the CRI's CDIDevices); NVIDIA_VISIBLE_DEVICES with the
    IDs under the `envvar` strategy. The GDRCopy/GDS/MOFED flags, off in the platform's configs, are left out."""
    if all(s in CDI_STRATEGIES for s in strategies):
        return {}
    if "envvar" in strategies:
        return {"NVIDIA_VISIBLE_DEVICES": ",".join(device_ids)}
    return {}
