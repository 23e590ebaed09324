"""Every pinned version in one table, and `gpu-platform:versions` to override it per stack.

EKS add-on versions depend on the Kubernetes minor version, so their table has a row per supported
Kubernetes version. The supported versions are the ones every pinned component supports and this
table has a row for; moving to a new Kubernetes version starts here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated

from pydantic import AfterValidator, Field

from .base import ConfigModel
from .errors import did_you_mean

# --- EKS managed add-ons ----------------------------------------------------------------------
# Source: the "latest version of the Amazon EKS type of the add-on" tables of the EKS user guide
# (managing-vpc-cni, managing-coredns, managing-kube-proxy), newest stored copy, read 2026-11-29.
# eks-pod-identity-agent and aws-ebs-csi-driver are not tied to a Kubernetes minor; see
# _VERSION_INDEPENDENT_ADDONS for their sources. Check a bump with
# `aws eks describe-addon-versions --addon-name <name> --kubernetes-version <version>`.
ADDON_VERSIONS: dict[str, dict[str, str]] = {
    "1.33": {
        "vpc-cni": "v1.21.1-eksbuild.7",
        "coredns": "v1.12.4-eksbuild.18",
        "kube-proxy": "v1.33.10-eksbuild.13",
    },
    "1.34": {
        "vpc-cni": "v1.21.1-eksbuild.7",
        "coredns": "v1.13.2-eksbuild.11",
        "kube-proxy": "v1.34.6-eksbuild.13",
    },
    "1.35": {
        "vpc-cni": "v1.21.1-eksbuild.7",
        "coredns": "v1.14.3-eksbuild.3",
        "kube-proxy": "v1.35.3-eksbuild.13",
    },
}

# The user guide has no per-version table for these two; the pins are the versions
# `aws eks describe-addon-versions` reported as available for 1.33-1.35 in public configs of
# 2026-09/10 (eks-pod-identity-agent: the 1.35 default; aws-ebs-csi-driver: the newest build).
_VERSION_INDEPENDENT_ADDONS: dict[str, str] = {
    "eks-pod-identity-agent": "v1.3.10-eksbuild.3",
    "aws-ebs-csi-driver": "v1.66.0-eksbuild.1",
}

# The Kubernetes versions the platform deploys: EKS standard support on 2026-11-29 (1.33 is in
# extended support until 2027-07-29) and within the range of every pinned controller.
KUBERNETES_VERSIONS: tuple[str, ...] = tuple(ADDON_VERSIONS)

# Why no newer minor is supported even once its pins exist (models/kubernetes/features.py): from 1.36
# DRAExtendedResource is on by default, and the NVIDIA DRA driver's `gpu.nvidia.com` DeviceClass names
# `extendedResourceName: nvidia.com/gpu` (its chart's deviceclass template on resource.k8s.io/v1), so the
# scheduler may give a pod that asks for `nvidia.com/gpu` a DRA pool's GPU through a claim it makes
# itself, while Kueue's quotas and the ResourceQuota count DRA GPUs under the DeviceClass's resource
# (config/fair_share.py): the same GPU would be counted under either key, or both.
DRA_EXTENDED_RESOURCE_REASON = (
    "from Kubernetes {first} DRAExtendedResource is on by default, and the NVIDIA DRA driver's DeviceClass names "
    "extendedResourceName nvidia.com/gpu: a pod asking for nvidia.com/gpu could take a DRA pool's GPU, counted "
    "against a quota key the platform's quotas do not give it; stay on {latest} until the platform handles that"
)

# How far the nodes' kubelets lag the control plane. EKS moves a control plane one minor at a time
# (offline/diff.py warns of a skip), and `pulumi up` moves the managed node groups in the same run while
# Karpenter's nodes drift onto the new minor's AMIs afterwards: after an upgrade to N, kubelets run N or
# N-1 until the last old node is replaced. A kubelet-side default the platform relies on must hold at N-1.
KUBELET_MINORS_BEHIND = 1


def oldest_kubelet_minor(kubernetes_version: str) -> str:
    """The oldest kubelet minor a cluster at `kubernetes_version` ("1.35") may run: "1.34"."""
    major, minor = kubernetes_version.split(".")
    return f"{major}.{int(minor) - KUBELET_MINORS_BEHIND}"


ADDON_NAMES: tuple[str, ...] = (*ADDON_VERSIONS[KUBERNETES_VERSIONS[-1]], *_VERSION_INDEPENDENT_ADDONS)

_CHART_VERSION = re.compile(r"^v?\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?$")
_ADDON_VERSION = re.compile(r"^v\d+\.\d+\.\d+-eksbuild\.\d+$")


# --- Node AMIs ---------------------------------------------------------------------------------
# Releases pinned in EC2NodeClass aliases (`al2023@v20260903`): Karpenter resolves the release's
# NVIDIA variant for GPU instance types. A new release rolls nodes (drift), so bumps are deliberate.
# The alias names no Kubernetes minor: Karpenter reads the SSM parameter
# `/aws/service/eks/optimized-ami/<cluster minor>/amazon-linux-2023/<arch>/<variant>/
# amazon-eks-node-al2023-<arch>-<variant>-<cluster minor>-<release>/image_id` for the minor it finds
# the cluster at (karpenter-provider-aws v1.14.1 pkg/providers/amifamily/al2023.go `resolvePath`;
# bottlerocket.go likewise), so after a control-plane upgrade the same alias resolves to the new
# minor's AMIs and the nodes drift onto them. A release without AMIs for the minor leaves every node
# class not ready (AMIsNotDiscoveredForAliasError), hence AMI_RELEASE_MINORS.
AMI_RELEASES: dict[str, str] = {
    "al2023": "v20260903",  # awslabs/amazon-eks-ami release
    "bottlerocket": "v1.57.0",  # bottlerocket-os/bottlerocket release
}

# The Kubernetes minors each pinned AMI release publishes AMIs for. al2023: awslabs/amazon-eks-ami
# CHANGELOG.md, "Kubernetes 1.NN" sections of each release (commit 81fec2e8, newest entry v20260714,
# which like v20260610 and v20260625 publishes 1.30-1.36; v20260505 and older stop at 1.35). v20260903's
# entry is newer than the stored CHANGELOG: its row is v20260714's without 1.30, whose extended
# support ends in July 2026. bottlerocket: `aws-k8s-1.35*` variants arrive in v1.53.0 (PR #4737,
# CHANGELOG "Add new kubernetes 1.35 variants") and `aws-k8s-1.29` leaves in v1.58.0 (PR #4797).
AMI_RELEASE_MINORS: dict[tuple[str, str], tuple[str, ...]] = {
    ("al2023", "v20260903"): ("1.31", "1.32", "1.33", "1.34", "1.35", "1.36"),
    ("bottlerocket", "v1.57.0"): ("1.29", "1.30", "1.31", "1.32", "1.33", "1.34", "1.35"),
}

# The managed node groups' AMI (the system nodes, DRA pools), pinned per Kubernetes minor as EKS
# names it (`releaseVersion`, `<kubernetes patch>-<release date>`): awslabs/amazon-eks-ami
# CHANGELOG.md, release v20260714 (the newest entry stored, commit 81fec2e8), "Release version"
# column of each Kubernetes section. That column spans every AMI of the minor (`rowspan="5"`): the
# standard and NVIDIA AMIs of one release share one release version (1.35: 1.35.6-20260714 for both
# amazon-eks-node-al2023-x86_64-standard-1.35-v20260714 and amazon-eks-node-al2023-x86_64-nvidia-1.35-
# v20260714), so one pin serves every AMI type of NODE_GROUP_RELEASE_AMI_TYPES. Without a pin the
# provider sees no drift on the AMI ("only if a configuration value is provided", pulumi-aws 7.51.1
# eks.NodeGroup `version`/`releaseVersion`) and the nodes keep their first AMI for good.
NODE_GROUP_RELEASE_VERSIONS: dict[str, str] = {
    "1.33": "1.33.13-20260714",
    "1.34": "1.34.9-20260714",
    "1.35": "1.35.6-20260714",
}
# The AMI types the release's tables name for each minor (the same CHANGELOG entry, "AMI Details").
NODE_GROUP_RELEASE_AMI_TYPES = (
    "AL2023_x86_64_STANDARD",
    "AL2023_x86_64_NVIDIA",
    "AL2023_x86_64_NEURON",
    "AL2023_ARM_64_STANDARD",
    "AL2023_ARM_64_NVIDIA",
)


def ami_family_of_node_group(ami_type: str) -> str:
    """`AL2023_x86_64_STANDARD` -> `al2023`, `BOTTLEROCKET_ARM_64` -> `bottlerocket`."""
    return ami_type.split("_", 1)[0].lower()


def node_group_release_version(kubernetes_version: str, ami_type: str) -> str | None:
    """The pinned `releaseVersion` of a managed node group of `ami_type`, or None where no pin exists.

    Bottlerocket node groups name their release `<bottlerocket version>-<commit>`, which no stored
    upstream source gives for v1.57.0; such a group takes the stack's `systemNodes.releaseVersion`
    (`SystemNodesConfig.node_group_release`), or without one follows `version` alone, EKS then choosing
    the newest Bottlerocket release for the minor at each version update.
    """
    if ami_family_of_node_group(ami_type) != "al2023":
        return None
    if ami_type not in NODE_GROUP_RELEASE_AMI_TYPES:
        raise ValueError(f"amazon-eks-ami v20260714 publishes no {ami_type} AMI; it has {NODE_GROUP_RELEASE_AMI_TYPES}")
    return NODE_GROUP_RELEASE_VERSIONS[kubernetes_version]


def ami_release_problems(kubernetes_version: str) -> list[str]:
    """Why the pinned AMI releases cannot serve a cluster of `kubernetes_version`, one reason each."""
    problems = [
        f"the pinned {family} AMI release {release} publishes no AMIs for Kubernetes {kubernetes_version} "
        f"(it has {', '.join(AMI_RELEASE_MINORS[(family, release)])}): bump AMI_RELEASES in config/versions.py "
        "to a release that has them, or stay on this minor"
        for family, release in AMI_RELEASES.items()
        if kubernetes_version not in AMI_RELEASE_MINORS[(family, release)]
    ]
    if kubernetes_version not in NODE_GROUP_RELEASE_VERSIONS:
        problems.append(
            f"config/versions.py NODE_GROUP_RELEASE_VERSIONS has no managed node group AMI for Kubernetes {kubernetes_version}"
        )
    return problems

# --- Helm charts -----------------------------------------------------------------------------
@dataclass(frozen=True)
class ChartPin:
    """A Helm chart at an exact version. `repository` is empty for OCI charts, whose `chart` is the full reference."""

    chart: str
    version: str
    repository: str = ""


CHARTS: dict[str, ChartPin] = {
    # Karpenter's CRDs come from their own chart so that `helm upgrade` upgrades them too (Helm never
    # upgrades a chart's crds/ directory); the controller chart then skips its copy. Keep both equal.
    "karpenter-crd": ChartPin(chart="oci://public.ecr.aws/karpenter/karpenter-crd", version="1.14.1"),
    "karpenter": ChartPin(chart="oci://public.ecr.aws/karpenter/karpenter", version="1.14.1"),
    "gpu-operator": ChartPin(chart="gpu-operator", repository="https://helm.ngc.nvidia.com/nvidia", version="v26.7.0"),
    # Kueue's chart ships its CRDs as templates (charts/kueue/templates/crd), so `helm upgrade` upgrades them.
    "kueue": ChartPin(chart="oci://registry.k8s.io/kueue/charts/kueue", version="0.19.2"),
    # The prometheus-operator CRDs (monitoring.coreos.com) come from their own chart, installed before
    # every release that renders a ServiceMonitor: its CRDs are templates, so `helm upgrade` upgrades
    # them, unlike kube-prometheus-stack's crds/ subchart, which the platform turns off. Keep its
    # appVersion equal to kube-prometheus-stack's (v0.93.1 in both Chart.yaml files at these tags).
    "prometheus-operator-crds": ChartPin(
        chart="prometheus-operator-crds", repository="https://prometheus-community.github.io/helm-charts", version="31.0.1"
    ),
    # prometheus-community/helm-charts tag kube-prometheus-stack-88.5.3 (prometheus-operator v0.93).
    "kube-prometheus-stack": ChartPin(
        chart="kube-prometheus-stack", repository="https://prometheus-community.github.io/helm-charts", version="88.5.3"
    ),
    # kedacore/charts v2.20.2 (KEDA v2.20.2); its CRDs are chart templates, so `helm upgrade` upgrades them.
    "keda": ChartPin(chart="keda", repository="https://kedacore.github.io/charts", version="2.20.2"),
    # kubernetes-sigs/dra-driver-nvidia-gpu tag v0.4.1, its newest release (NVIDIA/k8s-dra-driver-gpu's
    # `nvidia-dra-driver-gpu` chart until 25.12.0, renamed with SemVer from 0.4.0). gpu-operator v26.7.0's
    # values name a v0.5.0 driver image, but no 0.5.0 chart is released.
    # opencost/opencost-helm-chart tag opencost-2.5.17 (OpenCost 1.120.1): cost per namespace from this
    # Prometheus, which also scrapes it.
    "opencost": ChartPin(chart="opencost", repository="https://opencost.github.io/opencost-helm-chart", version="2.5.17"),
    "dra-driver-nvidia-gpu": ChartPin(
        chart="oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu", version="0.4.1"
    ),
    # kubeflow/trainer tag v2.3.0 (Kubeflow Trainer v2: TrainJob, TrainingRuntime, ClusterTrainingRuntime),
    # published by .github/workflows/publish-helm-charts.yaml. Its CRDs are chart templates, so `helm
    # upgrade` upgrades them. It brings JobSet as a dependency at the version its Chart.yaml pins
    # (0.12.0, the JobSet API kubernetes-sigs/kueue v0.19.2's go.mod builds its TrainJob integration on).
    "kubeflow-trainer": ChartPin(chart="oci://ghcr.io/kubeflow/charts/kubeflow-trainer", version="2.3.0"),
    # kyverno/kyverno tag kyverno-chart-3.9.0, the same commit as v1.19.0 (appVersion). Installed when the
    # stack verifies images (gpu-platform:supplyChain.imageVerification). Its images are pinned by tag only:
    # the chart writes `<registry>/<repository>:<tag>` (templates/_helpers/_image.tpl, tag defaulting to
    # appVersion, the hooks' readiness-checker too), so a digest could only ride in as `tag: v1.19.0@sha256:...`.
    "kyverno": ChartPin(chart="kyverno", repository="https://kyverno.github.io/kyverno/", version="3.9.0"),
    # aws/eks-charts stable/aws-efa-k8s-device-plugin v0.5.30 (image v0.5.20), first in the repository's
    # tag v0.0.241 (eks-charts tags the repository, not each chart). Installed when a pool sets `efa`:
    # neither the AL2023 nor the Bottlerocket NVIDIA AMI runs a device plugin for vpc.amazonaws.com/efa.
    "aws-efa-k8s-device-plugin": ChartPin(
        chart="aws-efa-k8s-device-plugin", repository="https://aws.github.io/eks-charts", version="v0.5.30"
    ),
    # external-secrets/external-secrets tag helm-chart-2.9.0 (External Secrets Operator v2.9.0), the chart-release
    # commit after v2.9.0. Installed when the stack hands tenants secrets (gpu-platform:secrets.enabled). Its
    # images are pinned by tag only: templates/_helpers.tpl `external-secrets.image` writes `<repository>:<tag>`.
    "external-secrets": ChartPin(
        chart="external-secrets", repository="https://charts.external-secrets.io", version="2.9.0"
    ),
    # NVIDIA/dcgm-exporter tag 4.5.3-4.8.2 (deployment/, chart 4.8.2). Installed when a GPU pool runs
    # Bottlerocket, whose nodes the GPU Operator's operands stay off (components/dcgm_exporter.py).
    "dcgm-exporter": ChartPin(
        chart="dcgm-exporter", repository="https://nvidia.github.io/dcgm-exporter/helm-charts", version="4.8.2"
    ),
    # kai-scheduler/KAI-Scheduler tag v0.17.0 (deployments/kai-scheduler), its newest release: v0.20.0 and v0.20.1
    # are retracted (commit 5922dc7d "chore(release): retract versions v0.20.0 and v0.20.1"). The release job
    # packages the chart with the tag as version and appVersion (.github/workflows/on-release.yaml) and pushes it
    # to ghcr.io. Installed when a GPU pool sets `scheduler: kai` (components/kai.py).
    "kai-scheduler": ChartPin(chart="oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler", version="v0.17.0"),
}

# The KAI Scheduler's images: the release job rewrites values.yaml's `global.registry` placeholder
# (`registry/local/kai-scheduler`) to this registry before packaging (.github/workflows/on-release.yaml at
# v0.17.0, DOCKER_REGISTRY), and every image's tag defaults to the chart's appVersion. The platform writes both,
# so the images do not depend on what the packaged chart carries.
KAI_IMAGE_REGISTRY = "ghcr.io/kai-scheduler/kai-scheduler"
KAI_IMAGE_TAG = "v0.17.0"


# Data sets vendored in upstream/ that config tables are checked against: botocore's region list
# (botocore/data/partitions.json at this release) and Karpenter's generated on-demand price lists
# (pkg/providers/pricing at the karpenter chart's tag).
BOTOCORE = "1.43.67"
KARPENTER_PRICING = "v1.14.1"

# The image of the headroom's placeholder pods (components/headroom.py): the pause container kubeadm pins
# for the cluster's newest Kubernetes (kubernetes/kubernetes v1.35, cmd/kubeadm/app/constants/constants.go
# PauseVersion), by the digest of its image index as registry.k8s.io serves it (`crane digest
# registry.k8s.io/pause:3.10.1`). It sleeps until SIGTERM and runs as UID 65535 (build/pause/Dockerfile).
PAUSE_IMAGE = "registry.k8s.io/pause:3.10.1@sha256:278fb9dbcca9518083ad1e11276933a2e96f23de604a3a08cc3c80002767d24c"

# The vLLM release whose metrics the queue-depth trigger and the dashboards read (vllm/v1/metrics/loggers.py,
# vendored in upstream/metrics/vllm/). A stack's `serving.image` picks the image it runs; one of another
# release may name its metrics differently.
VLLM = "v0.11.0"


@dataclass(frozen=True)
class HelmInstall:
    """How `pulumi up` installs and upgrades a chart's release (pulumi-kubernetes helm.v3.Release).

    pulumi-kubernetes' provider/pkg/provider/helm_release.go (v4.32.0, the newest stored tag; SDK
    4.34.2's Release args are the same): `timeout` bounds each install, upgrade and uninstall, Helm's
    wait for the release's Deployments, DaemonSets, hooks and webhooks included (300 s when unset,
    `defaultTimeoutSeconds`); `atomic` uninstalls a failed install and rolls a failed upgrade back (it
    implies the wait); `cleanupOnFail` deletes what a failed upgrade created. A failed install without
    `atomic` stays in the state as a release with a failed status, and the next `up` upgrades it in place.
    """

    timeout_seconds: int
    atomic: bool = True
    cleanup_on_fail: bool = True


# Per chart, what Helm waits for decides the timeout: the image pulls of the pods the release creates
# on the system nodes (first pull on a new node: ~1 min per image), their readiness, and the hooks.
# Every release is atomic: a failed first install leaves nothing behind, so the next `up` installs
# afresh instead of upgrading a half-installed release; a failed upgrade returns to the last working
# revision. For kube-prometheus-stack that is safe too: an atomic install removes only what that
# install created, and an upgrade is rolled back, never uninstalled, so Prometheus' volume is untouched.
HELM_INSTALL: dict[str, HelmInstall] = {
    # CRDs only: no pod to wait for.
    "karpenter-crd": HelmInstall(timeout_seconds=300),
    "prometheus-operator-crds": HelmInstall(timeout_seconds=300),
    # Two controller replicas, one per node (required anti-affinity), pulled from public.ecr.aws.
    "karpenter": HelmInstall(timeout_seconds=600),
    # The controller generates its own webhook certificate before it turns ready (internal cert manager).
    "kueue": HelmInstall(timeout_seconds=600),
    # Operator, metrics API server (an APIService) and admission webhooks: three images.
    "keda": HelmInstall(timeout_seconds=600),
    # The operator and NFD master/gc on the system nodes; the operand DaemonSets come later from the
    # ClusterPolicy and are not part of the release's wait.
    "gpu-operator": HelmInstall(timeout_seconds=600),
    # Controller on the system nodes; its kubelet plugin DaemonSet has no GPU node to wait for yet.
    "dra-driver-nvidia-gpu": HelmInstall(timeout_seconds=600),
    # The trainer's controller (ghcr.io) and JobSet's (registry.k8s.io), each generating its own
    # webhook certificate before it turns ready.
    "kubeflow-trainer": HelmInstall(timeout_seconds=600),
    # One exporter pod pulled from ghcr.io onto the system nodes; it turns ready once it answers.
    "opencost": HelmInstall(timeout_seconds=600),
    # Pre-install admission-webhook Jobs (certgen), then operator, Grafana with its sidecars,
    # kube-state-metrics and node-exporter on every node: the most images of any release.
    "kube-prometheus-stack": HelmInstall(timeout_seconds=900),
    # Admission controller (three replicas), reports controller; each generates its webhook certificate first.
    "kyverno": HelmInstall(timeout_seconds=600),
    # One DaemonSet on the EFA pools' nodes (none may exist yet); its image comes from an EKS ECR in us-west-2.
    "aws-efa-k8s-device-plugin": HelmInstall(timeout_seconds=600),
    # Controller, webhook (two replicas) and cert controller; the webhook turns ready once the cert controller
    # has written its certificate and injected the CA.
    "external-secrets": HelmInstall(timeout_seconds=600),
    # One DaemonSet on the Bottlerocket GPU pools' nodes (none may exist yet); where some do, each pod
    # pulls its image from nvcr.io and turns ready 45 s after it starts (readinessProbe initialDelaySeconds).
    "dcgm-exporter": HelmInstall(timeout_seconds=600),
    # The operator, then the deployments it creates from the kai-config Config (scheduler, binder, admission,
    # pod grouper, queue controller...) and the post-install hook that applies it: several images from ghcr.io.
    "kai-scheduler": HelmInstall(timeout_seconds=900),
}


def helm_install(pin: ChartPin) -> HelmInstall:
    """The install options of `pin`'s chart, found by its chart reference as CHARTS spells it."""
    [key] = [key for key, known in CHARTS.items() if known.chart == pin.chart]
    return HELM_INSTALL[key]


@dataclass(frozen=True)
class AddonVersion:
    name: str
    version: str
    overridden: bool


# Each override is checked on its own key, so every mistake is a line of its own at its own key path.
def _addon_name(name: str) -> str:
    if name not in ADDON_NAMES:
        raise ValueError(f"is not an add-on the platform installs{did_you_mean(name, ADDON_NAMES)} "
                         f"(add-ons: {', '.join(ADDON_NAMES)})")
    return name


def _addon_version(version: str) -> str:
    if not _ADDON_VERSION.match(version):
        raise ValueError("is not an EKS add-on version; they look like v1.21.1-eksbuild.7")
    return version


def _chart_name(name: str) -> str:
    if name not in CHARTS:
        raise ValueError(f"is not a chart the platform installs{did_you_mean(name, CHARTS)} (charts: {', '.join(CHARTS)})")
    return name


def _chart_version(version: str) -> str:
    if not _CHART_VERSION.match(version):
        raise ValueError("is not an exact release; pin one such as 1.14.1")
    return version


class VersionsConfig(ConfigModel):
    """Per-stack overrides of the pinned versions in `config/versions.py`."""

    addons: dict[Annotated[str, AfterValidator(_addon_name)], Annotated[str, AfterValidator(_addon_version)]] = Field(
        default_factory=dict,
        description="EKS add-on versions by add-on name, overriding the defaults in config/versions.py for the "
        f"cluster's Kubernetes version (e.g. `vpc-cni: v1.21.1-eksbuild.7`). Add-ons: {', '.join(ADDON_NAMES)}.",
    )

    charts: dict[Annotated[str, AfterValidator(_chart_name)], Annotated[str, AfterValidator(_chart_version)]] = Field(
        default_factory=dict,
        description="Helm chart versions by chart name, overriding config/versions.py (e.g. `karpenter: 1.14.2`). "
        f"Charts: {', '.join(CHARTS)}.",
    )


def resolve_addon_versions(kubernetes_version: str, versions: VersionsConfig) -> tuple[AddonVersion, ...]:
    """The add-on versions a cluster of `kubernetes_version` gets: the table's row, then the stack's overrides."""
    defaults = {**ADDON_VERSIONS[kubernetes_version], **_VERSION_INDEPENDENT_ADDONS}
    return tuple(
        AddonVersion(name=name, version=versions.addons.get(name, default), overridden=name in versions.addons)
        for name, default in defaults.items()
    )


def resolve_charts(versions: VersionsConfig) -> dict[str, ChartPin]:
    """The chart pins a stack installs: the table's, with the stack's version overrides."""
    return {
        name: ChartPin(pin.chart, versions.charts.get(name, pin.version), pin.repository) for name, pin in CHARTS.items()
    }
