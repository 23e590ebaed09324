"""What the system nodes can give, what the platform's pods there ask for, and whether it fits.

The system node group is a managed node group without an autoscaler: nothing adds a node when a
controller's pod stays Pending, and a Pending pod makes its Helm release time out. So the pods that
land there must fit the group's `minSize` nodes of its smallest instance type, checked at config time.

**Allocatable** (what the scheduler may hand out per node) is the kubelet's, `models/kubelet.py`
(EKS AL2023 nodeadm and Bottlerocket share its formula). Memory capacity is an estimate: the kubelet
reports what the kernel sees, less than the instance's nominal memory. It is estimated the way
Karpenter does (karpenter-provider-aws v1.14.1 pkg/providers/instancetype/types.go `memory`: 64 MiB less on Graviton, then
`vmMemoryOverheadPercent` 0.075 off, rounded up; charts/karpenter/values.yaml), which real nodes
exceed slightly: the check errs on the safe side.

**Requests** come from two places: each chart's defaults at its pinned version (`CHART_DEFAULTS`,
tested against the vendored upstream/<chart>/<version>/values.yaml) and the values the program sets
(`KARPENTER`, `KUEUE`, `KEDA_OPERATOR`, `KEDA_METRICS_SERVER`, `TRAINER`: the components read these, so the
check and the render share one number). The EKS add-ons' manifests are not public; their rows are
documented estimates from the upstream projects they package (`ADDON_ESTIMATES`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from models import kubelet
from models.kai.operator import OPERATED_POD_REQUESTS, SINGLE_REPLICA
from models.kubernetes.quantity import cpu_millicores, memory_mib

from .versions import CHARTS, ChartPin

# --- quantities ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Requests:
    """CPU in millicores and memory in MiB: a pod's requests, or what nodes allocate."""

    cpu_m: int = 0
    memory_mib: int = 0

    def __add__(self, other: Requests) -> Requests:
        return Requests(self.cpu_m + other.cpu_m, self.memory_mib + other.memory_mib)

    def __sub__(self, other: Requests) -> Requests:
        return Requests(self.cpu_m - other.cpu_m, self.memory_mib - other.memory_mib)

    def __mul__(self, times: int) -> Requests:
        return Requests(self.cpu_m * times, self.memory_mib * times)

    def fits_in(self, other: Requests) -> bool:
        return self.cpu_m <= other.cpu_m and self.memory_mib <= other.memory_mib

    def show(self) -> str:
        return f"{self.cpu_m}m CPU / {self.memory_mib}Mi memory"


def requests_of(resources: Mapping[str, Any]) -> Requests:
    """The `requests` of a container's `resources` map; a missing request counts as zero."""
    requests = resources.get("requests") or {}
    return Requests(
        cpu_millicores(requests["cpu"]) if "cpu" in requests else 0,
        memory_mib(requests["memory"]) if "memory" in requests else 0,
    )


# --- instance types ----------------------------------------------------------------------------------

# Karpenter's estimate of what the hypervisor and kernel keep (vmMemoryOverheadPercent), and the
# CMA memory Graviton instances reserve.
VM_MEMORY_OVERHEAD = 0.075
GRAVITON_CMA_MIB = 64


@dataclass(frozen=True)
class InstanceShape:
    """An EC2 instance type as the kubelet sizes it: vCPUs and memory (EC2 instance type docs), and
    its default network card's ENIs and IPv4 addresses per ENI (amazon-eks-ami
    nodeadm/internal/kubelet/instance-info.jsonl at v20260724)."""

    vcpus: int
    memory_gib: int
    enis: int
    ipv4_per_eni: int
    graviton: bool = False

    @property
    def max_pods(self) -> int:
        return kubelet.max_pods(self.enis, self.ipv4_per_eni)

    @property
    def kube_reserved(self) -> Requests:
        return Requests(kubelet.kube_reserved_cpu_millicores(self.vcpus), kubelet.kube_reserved_memory_mib(self.max_pods))

    @property
    def memory_capacity_mib(self) -> int:
        """Estimated kubelet memory capacity (Karpenter's estimate; see the module docstring)."""
        nominal = self.memory_gib * 1024 - (GRAVITON_CMA_MIB if self.graviton else 0)
        return nominal - math.ceil(nominal * VM_MEMORY_OVERHEAD)

    @property
    def allocatable(self) -> Requests:
        return Requests(*kubelet.allocatable(self.vcpus, self.memory_capacity_mib, self.max_pods))


def _shapes(
    families: Mapping[str, tuple[int, bool]], enis: Mapping[str, tuple[tuple[int, int], ...]]
) -> dict[str, InstanceShape]:
    sizes = (("large", 2), ("xlarge", 4), ("2xlarge", 8), ("4xlarge", 16))
    return {
        f"{family}.{size}": InstanceShape(vcpus, vcpus * gib_per_vcpu, *network, graviton=graviton)
        for family, (gib_per_vcpu, graviton) in families.items()
        for (size, vcpus), network in zip(sizes, enis[family], strict=True)
    }


# ENIs x IPv4 per ENI of large, xlarge, 2xlarge, 4xlarge, from instance-info.jsonl (v20260724).
_NITRO_NETWORK = ((3, 10), (4, 15), (4, 15), (8, 30))
# The instance types the system node group may use: general purpose (4 GiB per vCPU), compute
# (2 GiB) and memory optimised (8 GiB) families, large to 4xlarge. Another type needs its row here.
INSTANCE_SHAPES: dict[str, InstanceShape] = _shapes(
    {
        "m5": (4, False), "m6i": (4, False), "m6a": (4, False), "m7i": (4, False), "m7a": (4, False),
        "m8i": (4, False), "m6g": (4, True), "m7g": (4, True), "c7i": (2, False), "r7i": (8, False),
    },
    {
        "m5": _NITRO_NETWORK, "m6i": _NITRO_NETWORK, "m6a": _NITRO_NETWORK, "m7i": _NITRO_NETWORK,
        "m7a": _NITRO_NETWORK, "m6g": _NITRO_NETWORK, "m7g": _NITRO_NETWORK, "c7i": _NITRO_NETWORK,
        "r7i": _NITRO_NETWORK, "m8i": ((3, 20), (4, 30), (4, 30), (8, 50)),
    },
)


# --- chart defaults ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ChartPod:
    """One of a chart's pods as its values.yaml sizes it at one version.

    `resources` is the path of the container's `resources` map and `requests` what it requests
    there, as written; `replicas` the path of its replica count and the default (no path: the
    template runs exactly one). `subchart` names the dependency whose values.yaml holds both.
    """

    resources: tuple[str, ...]
    requests: Mapping[str, str] = field(default_factory=dict)
    replicas: tuple[str, ...] = ()
    default_replicas: int = 1
    subchart: str = ""


# Keyed by chart, then version, then pod. A version bump adds a row; tests/test_system_capacity.py
# holds every row against upstream/<chart>/<version>/values.yaml. dra-driver-nvidia-gpu has no row:
# its controller runs only with ComputeDomains and its webhook only when enabled, both off here
# (`resources.computeDomains.enabled`, `webhook.enabled`), and its kubelet plugin runs on GPU nodes.
CHART_DEFAULTS: dict[str, dict[str, dict[str, ChartPod]]] = {
    "karpenter": {
        "1.14.1": {
            # `controller.resources: {}`: unsized upstream; the program sets KARPENTER.
            "controller": ChartPod(("controller", "resources"), replicas=("replicas",), default_replicas=2),
        },
    },
    "kueue": {
        "0.19.2": {
            "controller-manager": ChartPod(
                ("controllerManager", "manager", "resources"), {"cpu": "500m", "memory": "512Mi"},
                replicas=("controllerManager", "replicas"),
            ),
        },
    },
    "keda": {
        "2.20.2": {
            "operator": ChartPod(
                ("resources", "operator"), {"cpu": "100m", "memory": "100Mi"}, replicas=("operator", "replicaCount")
            ),
            "metrics-apiserver": ChartPod(
                ("resources", "metricServer"), {"cpu": "100m", "memory": "100Mi"},
                replicas=("metricsServer", "replicaCount"),
            ),
            "admission-webhooks": ChartPod(
                ("resources", "webhooks"), {"cpu": "100m", "memory": "100Mi"}, replicas=("webhooks", "replicaCount")
            ),
        },
    },
    "gpu-operator": {
        "v26.7.0": {
            "operator": ChartPod(("operator", "resources"), {"cpu": "200m", "memory": "100Mi"}),
            "nfd-master": ChartPod(
                ("master", "resources"), {"cpu": "100m", "memory": "128Mi"},
                replicas=("master", "replicaCount"), subchart="node-feature-discovery",
            ),
            "nfd-gc": ChartPod(
                ("gc", "resources"), {"cpu": "10m", "memory": "128Mi"},
                replicas=("gc", "replicaCount"), subchart="node-feature-discovery",
            ),
        },
    },
    "kubeflow-trainer": {
        "2.3.0": {
            # `manager.resources: {}`: unsized upstream; the program sets TRAINER.
            "manager": ChartPod(("manager", "resources"), replicas=("manager", "replicas")),
            "jobset-controller": ChartPod(
                ("controller", "resources"), {"cpu": "500m", "memory": "128Mi"},
                replicas=("controller", "replicas"), subchart="jobset",
            ),
        },
    },
    "opencost": {
        "2.5.17": {
            # The exporter only: the UI container is off (`opencost.ui.enabled: false`, components/opencost.py).
            "exporter": ChartPod(
                ("opencost", "exporter", "resources"), {"cpu": "10m", "memory": "55Mi"},
                replicas=("opencost", "exporter", "replicas"),
            ),
        },
    },
    "kube-prometheus-stack": {
        "88.5.3": {
            # Prometheus and Alertmanager are unsized; their config-reloader sidecar is not (OPERATOR_RELOADER).
            "prometheus": ChartPod(
                ("prometheus", "prometheusSpec", "resources"), replicas=("prometheus", "prometheusSpec", "replicas")
            ),
            "alertmanager": ChartPod(
                ("alertmanager", "alertmanagerSpec", "resources"), replicas=("alertmanager", "alertmanagerSpec", "replicas")
            ),
            "prometheus-operator": ChartPod(("prometheusOperator", "resources")),
            "grafana": ChartPod(("resources",), replicas=("replicas",), subchart="grafana"),
            "kube-state-metrics": ChartPod(("resources",), replicas=("replicas",), subchart="kube-state-metrics"),
        },
    },
    # Installed with image verification. The admission controller's init container (10m/64Mi) runs before
    # its container and asks less, so the container's requests are the pod's. The background and cleanup
    # controllers are turned off (components/supply_chain.py); `replicas: ~` runs one.
    "kyverno": {
        "3.9.0": {
            "admission-controller": ChartPod(
                ("admissionController", "container", "resources"), {"cpu": "100m", "memory": "128Mi"},
                replicas=("admissionController", "replicas"),
            ),
            "reports-controller": ChartPod(
                ("reportsController", "resources"), {"cpu": "100m", "memory": "64Mi"}, replicas=("reportsController", "replicas")
            ),
        },
    },
    # Installed with gpu-platform:secrets; unsized upstream (`resources: {}`), so only their pod count weighs.
    "external-secrets": {
        "2.9.0": {
            "controller": ChartPod(("resources",), replicas=("replicaCount",)),
            "webhook": ChartPod(("webhook", "resources"), replicas=("webhook", "replicaCount")),
            "cert-controller": ChartPod(("certController", "resources"), replicas=("certController", "replicaCount")),
        },
    },
}

# The config-reloader sidecar in the Prometheus and Alertmanager pods: kube-prometheus-stack's
# `prometheusOperator.prometheusConfigReloader.resources: {}` passes no flag, so the operator's own
# defaults apply (prometheus-operator v0.93.0 cmd/operator/main.go defaultReloaderCPU, defaultReloaderMemory).
OPERATOR_RELOADER = Requests(cpu_m=10, memory_mib=50)


# --- what the program sets where a chart leaves a pod unsized ------------------------------------------

# `resources` maps, written into the charts' values by the components and counted by the check. Each is
# the recommendation the chart's own values.yaml gives in a comment beside the empty `resources: {}`
# (tests/test_chart_resources.py holds each against the vendored file); where that comment gives no
# number for a resource, the number is ours and says why.
Resources = Mapping[str, Mapping[str, str]]

# kube-prometheus-stack 88.5.3 values.yaml `prometheusOperator.resources`.
PROMETHEUS_OPERATOR_RESOURCES: Resources = {
    "requests": {"cpu": "100m", "memory": "100Mi"}, "limits": {"cpu": "200m", "memory": "200Mi"},
}
# kube-prometheus-stack 88.5.3 values.yaml `prometheus.prometheusSpec.resources`: requests memory 400Mi.
# Ours: a quarter core of requests for scraping and rule evaluation, and a 2Gi memory limit (five times
# the request: Prometheus replays its write-ahead log at start and its memory grows with the series it
# holds). No CPU limit: throttling delays rule evaluation, and with it every alert.
PROMETHEUS_RESOURCES: Resources = {"requests": {"cpu": "250m", "memory": "400Mi"}, "limits": {"memory": "2Gi"}}
# kube-prometheus-stack 88.5.3 values.yaml `alertmanager.alertmanagerSpec.resources`: requests memory 400Mi.
# Ours: 10m CPU (it routes a handful of alerts a minute) and a memory limit equal to the request.
ALERTMANAGER_RESOURCES: Resources = {"requests": {"cpu": "10m", "memory": "400Mi"}, "limits": {"memory": "400Mi"}}
# grafana 12.11.1 (kube-prometheus-stack's subchart) values.yaml `resources`.
GRAFANA_RESOURCES: Resources = {
    "requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "100m", "memory": "128Mi"},
}
# grafana 12.11.1 values.yaml `sidecar.resources`, for each of its sidecar containers; kube-prometheus-stack
# 88.5.3 turns two on (`grafana.sidecar.dashboards.enabled`, `grafana.sidecar.datasources.enabled`).
GRAFANA_SIDECAR_RESOURCES: Resources = {
    "requests": {"cpu": "50m", "memory": "50Mi"}, "limits": {"cpu": "100m", "memory": "100Mi"},
}
GRAFANA_SIDECARS = 2
# kube-state-metrics 8.4.0 (subchart) values.yaml `resources`.
KUBE_STATE_METRICS_RESOURCES: Resources = {
    "requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"cpu": "100m", "memory": "64Mi"},
}
# prometheus-node-exporter 4.56.1 (subchart) values.yaml `resources`.
NODE_EXPORTER_RESOURCES: Resources = {
    "requests": {"cpu": "100m", "memory": "30Mi"}, "limits": {"cpu": "200m", "memory": "50Mi"},
}
# external-secrets 2.9.0 values.yaml `resources`, `webhook.resources`, `certController.resources`: requests
# 10m/32Mi each. Ours: a 256Mi memory limit (the controller caches every ExternalSecret and SecretStore it
# watches) and no CPU limit, so a burst of syncs is slowed by nothing but the requests of others.
EXTERNAL_SECRETS_RESOURCES: Resources = {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "256Mi"}}


# --- what the program sets -----------------------------------------------------------------------------

@dataclass(frozen=True)
class ControllerSizing:
    """Replicas (and, where set, container resources) the program writes into a chart's values."""

    replicas: int
    resources: Mapping[str, Mapping[str, str]] | None = None


# Karpenter: upstream's getting-started sizing (scripts/step08-apply-helm-chart.sh); requests equal
# to limits make the pod Guaranteed, the last to be evicted when a system node runs short. Two
# replicas, one per node (the chart's required anti-affinity).
KARPENTER = ControllerSizing(
    replicas=2, resources={"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}
)
# Kueue: its job and pod webhooks fail closed, so a second replica keeps jobs creatable through a node loss.
KUEUE = ControllerSizing(replicas=2)
# KEDA: only the leader acts, the second replica shortens failover; the metrics API server serves
# the HPA's external metrics, and while it is down no ScaledObject scales.
KEDA_OPERATOR = ControllerSizing(replicas=2)
KEDA_METRICS_SERVER = ControllerSizing(replicas=2)
# External Secrets Operator's webhook validates every ExternalSecret and SecretStore and fails closed: a
# second replica keeps them writable through a node's loss. The controller runs one (the chart turns leader
# election off); while it is away, Secrets already synced stay.
EXTERNAL_SECRETS_WEBHOOK = ControllerSizing(replicas=2, resources=EXTERNAL_SECRETS_RESOURCES)
# Kubeflow Trainer's manager: the requests its values.yaml suggests in a comment (`manager.resources`,
# kubeflow/trainer v2.3.0 charts/kubeflow-trainer/values.yaml), no limit. One replica: its webhooks
# cover only the trainer's own kinds, so while it restarts no TrainJob can be created, nothing else.
TRAINER = ControllerSizing(replicas=1, resources={"requests": {"cpu": "100m", "memory": "300Mi"}})


# --- EKS add-ons ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class AddonPod:
    """An EKS add-on's pod on the system nodes: `replicas` of a Deployment, or one per node (DaemonSet)."""

    name: str
    requests: Requests
    replicas: int = 1
    per_node: bool = False
    source: str = ""


# EKS does not publish its add-on manifests; these are the upstream projects' defaults. Check them
# on a cluster with `kubectl -n kube-system get deploy,ds -o yaml`.
ADDON_ESTIMATES: tuple[AddonPod, ...] = (
    AddonPod(
        "coredns", Requests(100, 70), replicas=2,
        source="EKS user guide (coredns-autoscaling: two replicas); kubernetes/kubernetes "
        "cluster/addons/dns/coredns/coredns.yaml.base",
    ),
    AddonPod(
        "ebs-csi-controller", Requests(50, 192), replicas=2,
        source="aws-ebs-csi-driver v1.64.0 charts/aws-ebs-csi-driver/values.yaml: plugin, provisioner, attacher, "
        "resizer 10m/40Mi each, liveness probe 10m/32Mi",
    ),
    AddonPod(
        "kube-proxy", Requests(100, 0), per_node=True,
        source="kubernetes/kubernetes kube-proxy request 100m; aws/containers-roadmap#1509: no memory request",
    ),
    AddonPod(
        "aws-node", Requests(25, 0), per_node=True,
        source="aws/amazon-vpc-cni-k8s v1.21.1 charts/aws-vpc-cni/values.yaml (network policy agent unsized)",
    ),
    AddonPod(
        "ebs-csi-node", Requests(30, 104), per_node=True,
        source="aws-ebs-csi-driver v1.64.0 values.yaml: node plugin 10m/40Mi, node-driver-registrar and "
        "liveness probe 10m/32Mi each",
    ),
    AddonPod(
        "eks-pod-identity-agent", Requests(0, 0), per_node=True,
        source="aws/eks-pod-identity-agent charts/eks-pod-identity-agent/values.yaml: resources {}",
    ),
)


# --- the plan ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SystemPod:
    """A pod on the system nodes: requests per replica, how many, and where the numbers come from."""

    name: str
    requests: Requests
    replicas: int
    source: str
    per_node: bool = False  # a DaemonSet: one on every system node
    one_per_node: bool = False  # required pod anti-affinity on the hostname: each replica needs a node of its own
    chart: str = ""  # sized by CHART_DEFAULTS[chart][<version>][chart_pod]; empty for the add-ons
    chart_pod: str = ""
    sidecar: Requests = Requests()  # part of `requests` the chart's values do not set


@dataclass(frozen=True)
class SystemCapacityPlan:
    """The system pods of a stack against `minSize` nodes of the group's smallest instance type."""

    instance_types: tuple[str, ...]
    min_size: int
    node_allocatable: Requests  # per resource, the smallest among the instance types
    pods: tuple[SystemPod, ...]
    node_max_pods: int  # the smallest maxPods among the instance types
    chart_notes: tuple[str, ...] = ()  # charts whose defaults are assumed from another version

    @property
    def deployments(self) -> tuple[SystemPod, ...]:
        return tuple(pod for pod in self.pods if not pod.per_node)

    @property
    def daemonsets(self) -> tuple[SystemPod, ...]:
        return tuple(pod for pod in self.pods if pod.per_node)

    @property
    def per_node(self) -> Requests:
        """What the DaemonSets take on every system node."""
        return sum((pod.requests for pod in self.daemonsets), Requests())

    def total(self, pod: SystemPod) -> Requests:
        return pod.requests * (self.min_size if pod.per_node else pod.replicas)

    @property
    def requested(self) -> Requests:
        return sum((self.total(pod) for pod in self.pods), Requests())

    @property
    def allocatable(self) -> Requests:
        return self.node_allocatable * self.min_size

    @property
    def pod_count(self) -> int:
        """Pods on `minSize` nodes: every replica, and a DaemonSet pod per node."""
        return sum(pod.replicas for pod in self.deployments) + len(self.daemonsets) * self.min_size

    def nodes_needed(self) -> int | None:
        """The fewest nodes of the smallest type that hold every pod; None when not even one node holds the DaemonSets."""
        room = self.node_allocatable - self.per_node
        if room.cpu_m <= 0 or room.memory_mib <= 0:
            return None
        deployments = sum((self.total(pod) for pod in self.deployments), Requests())
        spread = max((pod.replicas for pod in self.deployments if pod.one_per_node), default=1)
        pod_slots = self.node_max_pods - len(self.daemonsets)
        if pod_slots <= 0:
            return None
        return max(
            spread,
            math.ceil(deployments.cpu_m / room.cpu_m),
            math.ceil(deployments.memory_mib / room.memory_mib),
            math.ceil(sum(pod.replicas for pod in self.deployments) / pod_slots),
        )


def plan_system_capacity(
    instance_types: Sequence[str],
    min_size: int,
    charts: Mapping[str, ChartPin],
    prometheus_replicas: int,
    *,
    kyverno_replicas: int | None = None,
    external_secrets: bool = False,
    kai: bool = False,
) -> SystemCapacityPlan:
    """The pods the platform runs on the system nodes, sized from the charts at `charts`' versions and
    the program's values. Every type in `instance_types` must be in INSTANCE_SHAPES. Kyverno counts when
    `kyverno_replicas` (its admission controller's) is given, External Secrets Operator when `external_secrets`, the KAI
    Scheduler's operator and the controllers it runs when `kai` (a pool has `scheduler: kai`)."""
    shapes = [INSTANCE_SHAPES[name].allocatable for name in instance_types]
    smallest = Requests(min(s.cpu_m for s in shapes), min(s.memory_mib for s in shapes))
    max_pods = min(INSTANCE_SHAPES[name].max_pods for name in instance_types)
    installed = [
        name for name in CHART_DEFAULTS
        if (name != "kyverno" or kyverno_replicas is not None) and (name != "external-secrets" or external_secrets)
    ]
    rows = {name: _chart_rows(name, charts[name].version) for name in installed}
    karpenter, kueue, keda = rows["karpenter"], rows["kueue"], rows["keda"]
    gpu, kps, trainer = rows["gpu-operator"], rows["kube-prometheus-stack"], rows["kubeflow-trainer"]
    cost = rows["opencost"]
    pods = [
        karpenter.pod("controller", "karpenter", KARPENTER, one_per_node=True),
        kueue.pod("controller-manager", "kueue-controller-manager", KUEUE),
        keda.pod("operator", "keda-operator", KEDA_OPERATOR),
        keda.pod("metrics-apiserver", "keda-operator-metrics-apiserver", KEDA_METRICS_SERVER),
        keda.pod("admission-webhooks", "keda-admission-webhooks"),
        gpu.pod("operator", "gpu-operator"),
        gpu.pod("nfd-master", "nfd-master"),
        gpu.pod("nfd-gc", "nfd-gc"),
        trainer.pod("manager", "kubeflow-trainer-controller-manager", TRAINER),
        trainer.pod("jobset-controller", "jobset-controller"),
        cost.pod("exporter", "opencost"),
        kps.pod(
            "prometheus", "prometheus", ControllerSizing(prometheus_replicas, PROMETHEUS_RESOURCES),
            sidecar=OPERATOR_RELOADER, sidecar_name="config-reloader",
        ),
        kps.pod(
            "alertmanager", "alertmanager", resources=ALERTMANAGER_RESOURCES,
            sidecar=OPERATOR_RELOADER, sidecar_name="config-reloader",
        ),
        kps.pod("prometheus-operator", "prometheus-operator", resources=PROMETHEUS_OPERATOR_RESOURCES),
        kps.pod(
            "grafana", "grafana", resources=GRAFANA_RESOURCES,
            sidecar=requests_of(GRAFANA_SIDECAR_RESOURCES) * GRAFANA_SIDECARS, sidecar_name=f"{GRAFANA_SIDECARS} sidecars",
        ),
        kps.pod("kube-state-metrics", "kube-state-metrics", resources=KUBE_STATE_METRICS_RESOURCES),
        *(
            SystemPod(addon.name, addon.requests, addon.replicas, f"EKS add-on (estimate): {addon.source}", addon.per_node)
            for addon in ADDON_ESTIMATES
        ),
        SystemPod(
            "prometheus-node-exporter", requests_of(NODE_EXPORTER_RESOURCES), 1,
            f"the program, after {kps.label} charts/prometheus-node-exporter values resources (commented)",
            per_node=True,
        ),
    ]
    if kyverno_replicas is not None:
        kyverno = rows["kyverno"]
        pods += [
            kyverno.pod("admission-controller", "kyverno-admission-controller", ControllerSizing(kyverno_replicas)),
            kyverno.pod("reports-controller", "kyverno-reports-controller"),
        ]
    if external_secrets:
        eso = rows["external-secrets"]
        pods += [
            eso.pod("controller", "external-secrets", resources=EXTERNAL_SECRETS_RESOURCES),
            eso.pod("webhook", "external-secrets-webhook", EXTERNAL_SECRETS_WEBHOOK),
            eso.pod("cert-controller", "external-secrets-cert-controller", resources=EXTERNAL_SECRETS_RESOURCES),
        ]
    if kai:
        pods += kai_system_pods(charts["kai-scheduler"].version)
    notes = tuple(row.note for row in rows.values() if row.note)
    return SystemCapacityPlan(tuple(instance_types), min_size, smallest, tuple(pods), max_pods, notes)


# The KAI chart's operator (values `operator.replicaCount`, which the operator's controllers take too; the program
# leaves it at 1) and the version whose operator defaults models/kai/operator.py holds.
KAI_REPLICAS = 1
KAI_SIZED_AT = "v0.17.0"


def kai_system_pods(version: str) -> list[SystemPod]:
    """KAI's pods on the system nodes (components/kai.py sets `global.nodeSelector` to them): the chart's operator,
    unsized, and the controllers it runs at their defaults (models/kai/operator.py)."""
    at = f"kai-scheduler {KAI_SIZED_AT}" + ("" if version == KAI_SIZED_AT else f" (stack installs {version})")
    pods = [SystemPod("kai-operator", Requests(), KAI_REPLICAS, f"{at} templates/services/operator.yaml: unsized")]
    for name, (cpu, memory) in OPERATED_POD_REQUESTS.items():
        replicas = 1 if name in SINGLE_REPLICA else KAI_REPLICAS
        pods.append(SystemPod(
            f"kai-{name}", requests_of({"requests": {"cpu": cpu, "memory": memory}}), replicas,
            f"{at} operator defaults, models/kai/operator.py",
        ))
    return pods


@dataclass(frozen=True)
class _ChartRows:
    """A chart's CHART_DEFAULTS row at the version a stack installs (or the pinned one, noted, when it has none)."""

    chart: str
    label: str
    pods: Mapping[str, ChartPod]
    note: str = ""

    def pod(
        self, key: str, name: str, sizing: ControllerSizing | None = None, *, resources: Resources | None = None,
        sidecar: Requests | None = None, sidecar_name: str = "", one_per_node: bool = False,
    ) -> SystemPod:
        """The pod as the chart sizes it, with what the program sets (`sizing`, or `resources` for a pod
        whose replicas stay the chart's) taking precedence; `sidecar` adds containers the row does not size."""
        row = self.pods[key]
        where = f"{self.label} {f'charts/{row.subchart} ' if row.subchart else ''}values {'.'.join(row.resources)}"
        if sizing is not None and sizing.resources is not None:
            resources = sizing.resources
        if resources is not None:
            requests, source = requests_of(resources), f"the program, over {where}"
        else:
            requests, source = requests_of({"requests": row.requests}), where
        if sidecar is not None:
            requests, source = requests + sidecar, f"{source} + {sidecar_name}"
        replicas = sizing.replicas if sizing is not None else row.default_replicas
        return SystemPod(
            name, requests, replicas, source, one_per_node=one_per_node,
            chart=self.chart, chart_pod=key, sidecar=sidecar or Requests(),
        )


def _chart_rows(chart: str, version: str) -> _ChartRows:
    rows = CHART_DEFAULTS[chart]
    if version in rows:
        return _ChartRows(chart, f"{chart} {version}", rows[version])
    pinned = CHARTS[chart].version
    note = f"{chart} {version} has no row in config/system_capacity.py CHART_DEFAULTS: sized with {pinned}'s defaults"
    return _ChartRows(chart, f"{chart} {pinned}", rows[pinned], note)


def _min_size_fix(plan: SystemCapacityPlan) -> str:
    """The fix for system nodes too few to hold the system pods: the minSize that holds them, when one does."""
    needed = plan.nodes_needed()
    return f"raise minSize to {needed} or choose larger instanceTypes" if needed else "choose larger instanceTypes"


def capacity_problems(plan: SystemCapacityPlan, root: str) -> list[tuple[str, str]]:
    """(key path, message) for each way the system pods do not fit; `root` is the systemNodes key path."""
    problems: list[tuple[str, str]] = []
    types = ", ".join(plan.instance_types)
    node = plan.node_allocatable
    requested, allocatable = plan.requested, plan.allocatable
    short = [
        f"{name} is {need - have}{unit} short"
        for name, need, have, unit in (
            ("CPU", requested.cpu_m, allocatable.cpu_m, "m"), ("memory", requested.memory_mib, allocatable.memory_mib, "Mi")
        )
        if need > have
    ]
    if short:
        problems.append((
            f"{root}.minSize",
            f"{plan.min_size} nodes of {types} allocate {allocatable.cpu_m}m CPU and {allocatable.memory_mib}Mi memory "
            f"({node.cpu_m}m and {node.memory_mib}Mi each on the smallest type); the system pods request "
            f"{requested.cpu_m}m CPU and {requested.memory_mib}Mi memory: {' and '.join(short)}; {_min_size_fix(plan)}",
        ))
    if plan.pod_count > plan.node_max_pods * plan.min_size:
        problems.append((
            f"{root}.minSize",
            f"{plan.min_size} nodes of {types} take {plan.node_max_pods * plan.min_size} pods ({plan.node_max_pods} "
            f"each on the smallest type: ENIs x (IPv4 addresses per ENI - 1) + 2); the system pods number "
            f"{plan.pod_count}: {_min_size_fix(plan)}",
        ))
    largest_cpu = max(plan.deployments, key=lambda pod: pod.requests.cpu_m)
    largest_memory = max(plan.deployments, key=lambda pod: pod.requests.memory_mib)
    one_node = Requests(largest_cpu.requests.cpu_m, largest_memory.requests.memory_mib) + plan.per_node
    if not one_node.fits_in(node):
        problems.append((
            f"{root}.instanceTypes",
            f"{types}: the smallest allocates {node.show()} per node, but the largest system pods "
            f"({largest_cpu.name} {largest_cpu.requests.cpu_m}m CPU, {largest_memory.name} "
            f"{largest_memory.requests.memory_mib}Mi memory) with every node's DaemonSets ({plan.per_node.show()}) "
            f"need {one_node.show()}: choose larger instanceTypes",
        ))
    for pod in plan.deployments:
        if pod.one_per_node and pod.replicas > plan.min_size:
            problems.append((
                f"{root}.minSize",
                f"{plan.min_size} is fewer than the {pod.replicas} replicas of {pod.name}, which run one per node "
                f"(required pod anti-affinity on the hostname): raise minSize to {pod.replicas}",
            ))
    return problems
