"""What every GPU node's OS is given at boot, whoever launches it (Karpenter or an EKS managed node group)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from models.nvidia.container_toolkit import ACCEPT_ENVVAR_UNPRIVILEGED, ACCEPT_VOLUME_MOUNTS

# The NVIDIA container toolkit's settings on a GPU node: NVIDIA's "Preventing unprivileged access to
# GPUs in Kubernetes". With the defaults, an unprivileged container that sets NVIDIA_VISIBLE_DEVICES
# (CUDA base images set it to `all`) sees every GPU of its node without requesting one, since the
# AL2023 NVIDIA AMI makes `nvidia` containerd's default runtime (amazon-eks-ami
# nodeadm/internal/containerd/runtime_config_nvidia.go) and installs the toolkit from NVIDIA's
# repository with its stock /etc/nvidia-container-runtime/config.toml
# (templates/al2023/provisioners/install-nvidia-driver.sh, which leaves it as packaged). The device
# plugin the GPU Operator runs hands out devices through CDI (gpu-operator v26.7.0: `cdi.enabled`
# defaults to true, and controllers/object_controls.go sets DEVICE_LIST_STRATEGY=cdi-annotations,cdi-cri),
# which never reads the variable; privileged operands (DCGM, the validator) keep it.
NVIDIA_TOOLKIT_SETTINGS = {
    ACCEPT_ENVVAR_UNPRIVILEGED: "false",
    ACCEPT_VOLUME_MOUNTS: "true",
}
# On a pool the KAI Scheduler shares in fractions: KAI's binder hands a fraction its GPU only through
# NVIDIA_VISIBLE_DEVICES (models/kai/sharing.py), which the toolkit takes from an unprivileged container only
# with the setting true (models/nvidia/container_toolkit.py). Every other container of those nodes is then kept
# off the variable by admission: KAI pods alone run there, each container with NVIDIA_VISIBLE_DEVICES=void but
# the fraction's (components/admission.py `tenant-pods-no-nvidia-env`).
KAI_TOOLKIT_SETTINGS = {**NVIDIA_TOOLKIT_SETTINGS, ACCEPT_ENVVAR_UNPRIVILEGED: "true"}
USER_DATA_BOUNDARY = "GPU-PLATFORM"


MIG_LAYOUT_UNIT = "gpu-platform-mig-layout"
MIG_LAYOUT_SCRIPT = f"/usr/local/sbin/{MIG_LAYOUT_UNIT}"


def toolkit_user_data(mig_profiles: Sequence[str] = (), settings: Mapping[str, str] = NVIDIA_TOOLKIT_SETTINGS) -> str:
    """AL2023 user data (MIME multipart) whose shell part sets the toolkit's `settings` before the kubelet starts,
    and with `mig_profiles` installs and runs `mig_layout_unit`, which partitions every GPU into them.

    Karpenter and EKS managed node groups both add their own NodeConfig part and keep this one
    (cloud-init runs it before nodeadm's `run` phase starts the kubelet, so no pod starts first).
    """
    flags = " ".join(f"--set {key}={value}" for key, value in settings.items())
    lines = ["#!/bin/bash", "set -euo pipefail", f"nvidia-ctk config --in-place {flags}"]
    if mig_profiles:
        script, unit = mig_layout_unit(mig_profiles)
        lines += [
            f"cat > {MIG_LAYOUT_SCRIPT} <<'SCRIPT'",
            script,
            "SCRIPT",
            f"chmod 0755 {MIG_LAYOUT_SCRIPT}",
            f"cat > /etc/systemd/system/{MIG_LAYOUT_UNIT}.service <<'UNIT'",
            unit,
            "UNIT",
            "systemctl daemon-reload",
            f"systemctl enable --now {MIG_LAYOUT_UNIT}.service",
        ]
    return "\n".join(
        [
            "MIME-Version: 1.0",
            f'Content-Type: multipart/mixed; boundary="{USER_DATA_BOUNDARY}"',
            "",
            f"--{USER_DATA_BOUNDARY}",
            'Content-Type: text/x-shellscript; charset="us-ascii"',
            "",
            *lines,
            "",
            f"--{USER_DATA_BOUNDARY}--",
            "",
        ]
    )


def mig_layout_unit(mig_profiles: Sequence[str]) -> tuple[str, str]:
    """The script and systemd unit that cut each GPU of a node into `mig_profiles` (one entry per instance, in
    the order they are created) on every boot, before the kubelet starts.

    Why at boot, before the kubelet: the DRA driver's kubelet plugin (dra-driver-nvidia-gpu v0.4.1, DynamicMIG
    off) publishes the MIG devices that exist when it starts and nothing it did not see then
    (models/nvidia/dra_driver.py `published_on_gpu`), and its pod starts only once the kubelet runs. MIG
    instances do not survive a reboot, MIG mode does; so the unit runs on each boot. nvidia-smi (on the
    AL2023 NVIDIA AMI with the driver) turns MIG mode on (`-mig 1`), resets a GPU whose mode stays pending
    (A100s apply it at reset; no process holds a GPU before the kubelet), and creates the GPU instances with
    their default compute instance (`mig -cgi <profiles> -C`). The kubelet requires the unit: a node whose
    GPUs it could not cut never turns Ready, rather than publishing whole GPUs the pool's claims do not select.
    """
    profiles = ",".join(mig_profiles)
    script = "\n".join(
        [
            "#!/bin/bash",
            "set -euo pipefail",
            "nvidia-smi -mig 1",
            "nvidia-smi --query-gpu=index,mig.mode.current --format=csv,noheader | while IFS=', ' read -r gpu mode; do",
            '  if [ "$mode" != "Enabled" ]; then nvidia-smi --gpu-reset -i "$gpu"; fi',
            "done",
            "for gpu in $(nvidia-smi --query-gpu=index --format=csv,noheader); do",
            f'  nvidia-smi mig -i "$gpu" -cgi {profiles} -C',
            "done",
        ]
    )
    unit = "\n".join(
        [
            "[Unit]",
            "Description=Cut the GPUs into the pool's MIG layout before the kubelet and the DRA driver start",
            "Before=kubelet.service",
            "[Service]",
            "Type=oneshot",
            "RemainAfterExit=yes",
            f"ExecStart={MIG_LAYOUT_SCRIPT}",
            "[Install]",
            "WantedBy=multi-user.target",
            "RequiredBy=kubelet.service",
        ]
    )
    return script, unit
