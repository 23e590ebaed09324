"""What every GPU node's OS is given at boot, whoever launches it (Karpenter or an EKS managed node group)."""

from __future__ import annotations

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
    "accept-nvidia-visible-devices-envvar-when-unprivileged": "false",
    "accept-nvidia-visible-devices-as-volume-mounts": "true",
}
USER_DATA_BOUNDARY = "GPU-PLATFORM"


def toolkit_user_data() -> str:
    """AL2023 user data (MIME multipart) whose shell part sets NVIDIA_TOOLKIT_SETTINGS before the kubelet starts.

    Karpenter and EKS managed node groups both add their own NodeConfig part and keep this one
    (cloud-init runs it before nodeadm's `run` phase starts the kubelet, so no pod starts first).
    """
    settings = " ".join(f"--set {key}={value}" for key, value in NVIDIA_TOOLKIT_SETTINGS.items())
    return "\n".join(
        [
            "MIME-Version: 1.0",
            f'Content-Type: multipart/mixed; boundary="{USER_DATA_BOUNDARY}"',
            "",
            f"--{USER_DATA_BOUNDARY}",
            'Content-Type: text/x-shellscript; charset="us-ascii"',
            "",
            "#!/bin/bash",
            "set -euo pipefail",
            f"nvidia-ctk config --in-place {settings}",
            "",
            f"--{USER_DATA_BOUNDARY}--",
            "",
        ]
    )
