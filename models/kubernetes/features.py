"""Kubernetes feature gates the platform depends on, with their default per minor version.

kubernetes/kubernetes versioned feature gate specs (`defaultVersionedKubernetesFeatureGates`, the copy
the search index stores, which already lists 1.37) and kubernetes/website
content/en/docs/reference/command-line-tools-reference/feature-gates/DRAExtendedResource.md:
DRAExtendedResource (KEP-5004) is alpha and off from 1.34, beta and on by default from 1.36, GA from
1.37. With it on, a DeviceClass's `extendedResourceName` lets the scheduler satisfy a pod's plain
extended-resource request (`nvidia.com/gpu: 1`) from DRA devices through a claim it makes itself.

KubeletEnsureSecretPulledImages (KEP-2535), the same table: alpha and off from 1.33, beta and on by
default from 1.35 (the copy before 1.35 lists only the alpha entry). With it on, the kubelet's default
`imagePullCredentialsVerificationPolicy`, `NeverVerifyPreloadedImages` (pkg/kubelet/apis/config
v1beta1 defaults), makes a pod present credentials recorded for an image the kubelet pulled with
credentials before it reuses the node's copy; with it off, any pod on the node runs any image the node
holds under `imagePullPolicy: IfNotPresent`, whoever pulled it.
"""

from __future__ import annotations

DRA_EXTENDED_RESOURCE = "DRAExtendedResource"
KUBELET_ENSURE_SECRET_PULLED_IMAGES = "KubeletEnsureSecretPulledImages"

# Gate -> (minor, on by default) from that minor on, oldest first.
DEFAULTS: dict[str, tuple[tuple[tuple[int, int], bool], ...]] = {
    DRA_EXTENDED_RESOURCE: (((1, 34), False), ((1, 36), True), ((1, 37), True)),
    KUBELET_ENSURE_SECRET_PULLED_IMAGES: (((1, 33), False), ((1, 35), True)),
}


def enabled_by_default(gate: str, kubernetes_version: str) -> bool:
    """Whether `gate` is on in a cluster of `kubernetes_version` ("1.36") that sets no feature gates, as EKS does."""
    minor = tuple(int(part) for part in kubernetes_version.split("."))
    enabled = False
    for since, default in DEFAULTS[gate]:
        if minor >= since:
            enabled = default
    return enabled


def first_enabled(gate: str) -> str:
    """The first minor ("1.36") in which `gate` is on by default."""
    return next(f"{major}.{minor}" for (major, minor), default in DEFAULTS[gate] if default)
