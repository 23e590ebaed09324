"""Which GPUs the NVIDIA container toolkit gives a container, from its environment and the node's toolkit config.

NVIDIA/nvidia-container-toolkit v1.20.0 (the toolkit GPU Operator v26.7.0 deploys, values.yaml `toolkit.version`;
the AL2023 NVIDIA AMI installs NVIDIA's packaged toolkit of the same line):

- internal/config/image/cuda_image.go `VisibleDevices`: CDI annotation requests first, then (with
  `accept-nvidia-visible-devices-as-volume-mounts`) the `/var/run/nvidia-container-devices/...` mounts of
  /dev/null, then NVIDIA_VISIBLE_DEVICES, taken only from a privileged container or with
  `accept-nvidia-visible-devices-envvar-when-unprivileged` true; otherwise ignored (a warning is logged).
  `ImexChannelRequests` reads NVIDIA_IMEX_CHANNELS under the same setting: that is all the setting changes.
- cuda_image.go `devicesFromEnvvars`: the variable unset on a legacy image (CUDA_VERSION set, no
  NVIDIA_REQUIRE_CUDA) means `all`; unset, empty, or any entry `void` means void.
- internal/config/image/devices.go `NewVisibleDevices`: `void` lists no device (not a GPU container:
  cmd/nvidia-container-runtime-hook/container_config.go `getNvidiaConfig` returns nil, and the runtime's CDI
  modifier requests nothing); `none` lists `""` (a GPU container with the driver's files and no device).
- api/config/v1/config.go `GetDefault`: `accept-nvidia-visible-devices-envvar-when-unprivileged` defaults to true.

The device plugin the GPU Operator runs hands out a whole GPU through CDI only (models/nvidia/device_plugin.py
`allocate_env`): a container whose NVIDIA_VISIBLE_DEVICES is `void` still gets the GPU the kubelet allocated it,
injected by containerd from the CDI device names; the variable adds none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

ACCEPT_ENVVAR_UNPRIVILEGED = "accept-nvidia-visible-devices-envvar-when-unprivileged"
ACCEPT_VOLUME_MOUNTS = "accept-nvidia-visible-devices-as-volume-mounts"
VISIBLE_DEVICES_ENV = "NVIDIA_VISIBLE_DEVICES"
IMEX_CHANNELS_ENV = "NVIDIA_IMEX_CHANNELS"
CUDA_VERSION_ENV = "CUDA_VERSION"
REQUIRE_CUDA_ENV = "NVIDIA_REQUIRE_CUDA"
# The value that gives a container no GPU and makes it no GPU container at all.
VOID = "void"
NONE = "none"
ALL = "all"
# The toolkit's default for ACCEPT_ENVVAR_UNPRIVILEGED (config.go `GetDefault`).
DEFAULT_ACCEPT_ENVVAR_UNPRIVILEGED = True


def _is_legacy(env: Mapping[str, str]) -> bool:
    return bool(env.get(CUDA_VERSION_ENV)) and not env.get(REQUIRE_CUDA_ENV)


def devices_from_env(env: Mapping[str, str], name: str = VISIBLE_DEVICES_ENV) -> list[str]:
    """The devices `env` (the container's final environment: image ENV overridden by the pod's) asks for through
    `name`, before the privilege check: ["all"], [""] for none, [] for void, else the listed IDs."""
    value = env.get(name)
    entries = [d.strip() for d in (value or "").split(",") if d.strip()]
    if value is None and not entries and _is_legacy(env):
        entries = [ALL]
    if not entries or VOID in entries:
        return []
    # NewVisibleDevices: the first `all` or `none`, in the variable's order, decides.
    for entry in entries:
        if entry in (ALL, NONE):
            return [ALL] if entry == ALL else [""]
    return entries


def visible_devices(env: Mapping[str, str], *, privileged: bool, accept_envvar_unprivileged: bool,
                    mounted: Sequence[str] = ()) -> list[str]:
    """The GPUs the toolkit injects into a container: `mounted` (the device-list volume mounts, when the node
    accepts them) first, then the variable, honoured only as `VisibleDevices` allows."""
    if mounted:
        return list(mounted)
    requested = devices_from_env(env)
    if not requested:
        return []
    return requested if privileged or accept_envvar_unprivileged else []


def container_env(image_env: Mapping[str, str], env_from: Mapping[str, str], env: Mapping[str, str]) -> dict[str, str]:
    """A container's final environment: the image's ENV, then the pod's envFrom, then its env, each overriding
    the one before (core/v1 Container.envFrom: "Values defined by an Env with a duplicate key will take
    precedence"; the container runtime puts the kubelet's variables over the image's)."""
    return {**image_env, **env_from, **env}
