"""What NVIDIA's DRA driver publishes in ResourceSlices for a GPU, whole or MIG, and its DeviceClasses.

kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1:
- cmd/gpu-kubelet-plugin/deviceinfo.go `GpuInfo.Attributes`, `GpuInfo.GetDevice`: a whole GPU, device
  `gpu-<minor>`, attributes `type` "gpu", `uuid`, `productName` (NVML's device name), `brand`,
  `architecture` (go-nvlib `GetArchitectureAsString`: "Ampere", "Ada Lovelace", "Hopper", ...),
  `cudaComputeCapability`, `driverVersion`, `cudaDriverVersion` (VersionValues: Masterminds semver
  reads "8.9" as 8.9.0), the PCI bus ID and root (`resource.kubernetes.io/...`), `addressingMode` on
  coherent systems; capacity `memory` (partitions.go `fullGpuCapacity`: NVML's total memory in bytes).
- cmd/gpu-kubelet-plugin/mig.go `CommonAttributesMig`, `CommonCapacitiesMig`, deviceinfo.go
  `MigDeviceInfo.GetDevice`: a MIG device, attributes `type` "mig", `profile` ("3g.40gb"),
  `parentUUID` and its parent's `productName`, `brand`, `architecture`, `cudaComputeCapability`,
  versions and PCI attributes; capacity `memory` (the profile's NVML MemorySizeMB x 2^20 bytes),
  `multiprocessors`, the engines and one `memorySlice<i>` per slice it occupies.
- A MIG device is published for each MIG device that exists on the node when the kubelet plugin starts
  (types.go `MigStaticDeviceType`, created beforehand, e.g. by nvidia-smi or mig-parted; nvlib.go
  `GetPerGpuAllocatableDevices`, see `published_on_gpu`); the driver creates them on demand only with its
  `DynamicMIG` feature gate, alpha and off by default (pkg/featuregates/featuregates.go), and so it
  is at main (0.5.0-dev, 2026-08-07) too: v0.4.1 is the newest release.
- Sharing: the `TimeSlicing` and `MPS` strategies of a GpuConfig are refused unless the alpha gates
  `TimeSlicingSettings` and `MPSSupport` are on (api/nvidia.com/resource/v1beta1/validate.go, both off
  by default in featuregates.go at v0.4.1 and at main), and they configure the devices of one claim,
  shared by the pods that reference that claim (cmd/gpu-kubelet-plugin/device_state.go), which Kueue
  v0.19.2 does not admit (models/kueue/workload.py).
- Unqualified attribute and capacity names take the driver's name as domain in CEL (Kubernetes
  dynamic-resource-allocation/cel/compile.go), hence `device.attributes["gpu.nvidia.com"].productName`.
- deployments/helm/dra-driver-nvidia-gpu/templates/deviceclass-{gpu,mig}.yaml: the chart's classes.

What the platform knows before a node exists (the GPU model's NVML facts) is `GpuFacts`; the
attributes only a running node knows (UUIDs, PCI addresses, the node image's driver versions, brand)
are `RUNTIME_ATTRIBUTES`: a selector that reads one cannot be proven in advance.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from models.kubernetes.dra_cel import Device, Semver

DRIVER = "gpu.nvidia.com"
GPU_TYPE = "gpu"
MIG_TYPE = "mig"

# Published on every device, known only once the node runs (the UUIDs, the PCI topology, the driver
# the node image carries, NVML's brand); the platform leaves them out of its devices.
RUNTIME_ATTRIBUTES = (
    "uuid",
    "parentUUID",
    "brand",
    "driverVersion",
    "cudaDriverVersion",
    "addressingMode",
    "resource.kubernetes.io/pciBusID",
    "resource.kubernetes.io/pcieRoot",
)
# A MIG device's capacities besides `memory`, from the profile's NVML info on the node.
RUNTIME_MIG_CAPACITIES = ("multiprocessors", "copyEngines", "decoders", "encoders", "jpegEngines", "ofaEngines")

# The chart's DeviceClasses and their selectors (deviceclass-gpu.yaml, deviceclass-mig.yaml).
DEVICE_CLASS_SELECTORS: dict[str, str] = {
    "gpu.nvidia.com": "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
    "mig.nvidia.com": "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'",
}


@dataclass(frozen=True)
class GpuFacts:
    """What NVML reports for a GPU model: the values the driver copies into its attributes."""

    product_name: str  # nvmlDeviceGetName
    architecture: str  # go-nvlib GetArchitectureAsString
    cuda_compute_capability: str  # "major.minor"
    memory_bytes: int  # nvmlDeviceGetMemoryInfo total


def _version(text: str) -> Semver:
    """Masterminds semver's reading of "8.9" (a missing minor or patch is 0), as the driver publishes it."""
    parts = [int(part) for part in text.split(".")]
    parts += [0] * (3 - len(parts))
    return Semver(*parts[:3])


def _common(facts: GpuFacts, device_type: str) -> dict[str, str | int | bool | Semver]:
    return {
        "type": device_type,
        "productName": facts.product_name,
        "architecture": facts.architecture,
        "cudaComputeCapability": _version(facts.cuda_compute_capability),
    }


def gpu_device(facts: GpuFacts) -> Device:
    """A whole GPU's device (its plan-time attributes): `GpuInfo.GetDevice`."""
    return Device(DRIVER, _common(facts, GPU_TYPE), {"memory": facts.memory_bytes})


def mig_device(facts: GpuFacts, profile: str, memory_bytes: int) -> Device:
    """A MIG device of `profile` on a GPU of this model: `MigDeviceInfo.GetDevice`."""
    return Device(DRIVER, {**_common(facts, MIG_TYPE), "profile": profile}, {"memory": memory_bytes})


def published_on_gpu(mig_layout: Mapping[str, int] | None) -> list[tuple[str | None, int]]:
    """What the kubelet plugin publishes for one GPU, with DynamicMIG off (its default): (MIG profile, how
    many) for each profile of the MIG devices that exist on it, or [(None, 1)], the whole GPU, when its
    MIG mode is off.

    cmd/gpu-kubelet-plugin/nvlib.go `GetPerGpuAllocatableDevices` (v0.4.1): a GPU with MIG mode off is
    announced whole; a GPU with MIG mode on announces each of its existing MIG devices
    (`discoverMigDevicesByGPU`, `MigStatic`) and never itself, and with MIG mode on but no MIG device
    nothing ("Physical GPU %s has MIG mode enabled but no configured MIG devices"). The devices are
    enumerated once, when the plugin starts: MIG devices made later are not published until it restarts.
    """
    if mig_layout is None:
        return [(None, 1)]
    return [(profile, count) for profile, count in sorted(mig_layout.items()) if count > 0]




# Selectors over the driver's attributes and capacity, as a claim's request carries them.
def _attribute(name: str) -> str:
    return f"device.attributes['{DRIVER}'].{name}"


def _string(value: str) -> str:
    """A CEL string literal in single quotes."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def min_memory(gib: int) -> str:
    """Devices with at least `gib` GiB of memory: Kubernetes' quantity library orders the capacities."""
    return f"device.capacity['{DRIVER}'].memory.compareTo(quantity('{gib}Gi')) >= 0"


def mig_profile(profile: str) -> str:
    return f"{_attribute('profile')} == {_string(profile)}"


def product_name(name: str) -> str:
    return f"{_attribute('productName')} == {_string(name)}"


def architecture(name: str) -> str:
    return f"{_attribute('architecture')} == {_string(name)}"


def min_compute_capability(version: str) -> str:
    """At least `major.minor`: the attribute is a semver, compared with Kubernetes' semver library."""
    major, minor = version.split(".")
    return f"{_attribute('cudaComputeCapability')}.compareTo(semver('{int(major)}.{int(minor)}.0')) >= 0"
