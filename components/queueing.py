"""Kueue: the controller (Helm), and the queues, flavors, cohorts and priority tiers it admits work by.

Everything here follows kubernetes-sigs/kueue at tag v0.19.2: the chart (charts/kueue: values.yaml,
templates/manager/manager-config.yaml, templates/webhook/manifests.yaml), the controller's config API
(apis/config/v1beta2/configuration_types.go, defaults.go; pkg/config/validation.go) and the
kueue.x-k8s.io/v1beta2 CRDs (config/components/crd/bases). When bumping Kueue, diff those between the
two tags and mirror every change here; `CHART_DEFAULT_MANAGER_CONFIG` must equal the new chart's
`managerConfig.controllerManagerConfigYaml` (a test checks it against the stored chart).

How a tenant's work is admitted:

    LocalQueue `default` (tenant namespace) -> ClusterQueue <tenant> -> Cohort <business unit> -> Cohort <root>
    ClusterQueue flavors, tried in order: `cpu` (CPU pool), then the tenant's GPU flavors

Quotas come from `config/fair_share.py` (`TenantQuota.resources()`), the same numbers the tenant's
ResourceQuota is derived from, so what Kueue admits always fits the namespace's quota.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

from config import namespaces
from config.fair_share import CPU_FLAVOR, FlavorPlan, TenantPlan, cpu_flavor_labels
from config.fleet import ADMISSION_CHECK
from config.kueue_objects import API_VERSION, cluster_queue, cohorts
from config.kueue_objects import manifest as kueue_manifest
from config.labels import (
    APP_NAME_LABEL,
    DRA_DEVICE_CLASSES,
    LOCAL_QUEUE,
    device_class_resource,
)
from config.system_capacity import KUEUE
from config.tenants import QueueingConfig
from config.timing import PODS_READY_TIMEOUT_SECONDS, REQUEUE_BACKOFF_BASE_SECONDS, REQUEUE_BACKOFF_MAX_SECONDS
from config.versions import ChartPin

from .lib.helm import helm_release
from .lib.namespaces import controller_namespace, every_tenant_namespace
from .lib.placement import gpu_toleration, on_system_nodes
from .lib.prometheus import CHART_SCRAPE_VALUES
from .lib.resources import Children, declare

CHART_KEY = "kueue"
NAMESPACE = namespaces.KUEUE
RELEASE_NAME = "kueue"

# The training operator's (kubeflow/training-operator v1) kinds, which the chart's default config
# leaves commented out. Kueue defers an integration whose CRD is not installed until it appears
# (jobframework.WaitForAPI), so listing them is harmless where the operator is absent.
TRAINING_OPERATOR_FRAMEWORKS: tuple[str, ...] = (
    "kubeflow.org/pytorchjob",
    "kubeflow.org/tfjob",
    "kubeflow.org/xgboostjob",
    "kubeflow.org/paddlejob",
    "kubeflow.org/jaxjob",
)
# Fair sharing is on when the config has a `fairSharing` section: the v1beta2 Configuration dropped
# v1beta1's `enable` (fairsharing.Enabled is `cfg.FairSharing != nil`) and has no default for the
# strategies, which validation requires. These are v1beta1's defaults and the docs' example.
FAIR_SHARING_PREEMPTION_STRATEGIES: tuple[str, ...] = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")

# Resources Kueue leaves out of its accounting (pkg/workload/workload.go, dropExcludedResources: a
# prefix match on the resource name). With the default quotaCheckStrategy BlockUndeclared a workload
# requesting any resource its ClusterQueue does not cover is never admitted
# (pkg/scheduler/flavorassigner/flavorassigner.go); IgnoreUndeclared would be no better, since it would
# also let a GPU resource a tenant has no quota for (another pool's MIG profile) through. These are
# node-local and come with every node the pod's flavor selects, so no tenant can take them from another:
# scratch disk, huge pages, and the VPC CNI's devices (`vpc.amazonaws.com/efa` on EFA instances,
# `vpc.amazonaws.com/pod-eni` for security groups per pod).
EXCLUDED_RESOURCE_PREFIXES: tuple[str, ...] = ("ephemeral-storage", "hugepages-", "vpc.amazonaws.com/")

# The chart's own `managerConfig.controllerManagerConfigYaml` at v0.19.2 (comments dropped). Our
# YAML replaces it whole, so we start from it and change only what `manager_config` says.
CHART_DEFAULT_MANAGER_CONFIG: dict[str, Any] = {
    "apiVersion": "config.kueue.x-k8s.io/v1beta2",
    "kind": "Configuration",
    "health": {"healthProbeBindAddress": ":8081"},
    "metrics": {"bindAddress": ":8443"},
    "webhook": {"port": 9443},
    "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
    "controller": {
        "groupKindConcurrency": {
            "Job.batch": 5,
            "Pod": 5,
            "Workload.kueue.x-k8s.io": 10,
            "LocalQueue.kueue.x-k8s.io": 5,
            "ClusterQueue.kueue.x-k8s.io": 5,
            "ResourceFlavor.kueue.x-k8s.io": 1,
        }
    },
    "clientConnection": {"qps": 300, "burst": 500},
    "integrations": {
        "frameworks": [
            "batch/job",
            "kubeflow.org/mpijob",
            "ray.io/rayjob",
            "ray.io/rayservice",
            "ray.io/raycluster",
            "jobset.x-k8s.io/jobset",
            "workload.codeflare.dev/appwrapper",
            "trainer.kubeflow.org/trainjob",
            "pod",
            "deployment",
            "statefulset",
            "leaderworkerset.x-k8s.io/leaderworkerset",
        ]
    },
}


class Queueing(pulumi.ComponentResource):
    """Kueue in `kueue-system` on the system nodes, and one ClusterQueue and LocalQueue per tenant.

    Every Kueue object waits for the Helm release: its CRDs are chart templates and are served
    through the controller's conversion webhook, and its validating webhooks check every object.
    That also makes `pulumi destroy` remove the objects while the controller can still clear its
    finalizers. ClusterQueues wait for their flavors and cohorts (a flavor in use cannot be deleted),
    LocalQueues for their tenant's namespace and ClusterQueue.
    """

    namespace: pulumi.CustomResource
    release: k8s.helm.v3.Release
    flavors: dict[str, pulumi.CustomResource]
    cohorts: dict[str, pulumi.CustomResource]
    cluster_queues: dict[str, pulumi.CustomResource]
    local_queues: dict[str, pulumi.CustomResource]
    priority_classes: dict[str, pulumi.CustomResource]

    def __init__(
        self,
        name: str,
        queueing: QueueingConfig,
        flavors: Sequence[FlavorPlan],
        tenants: Sequence[TenantPlan],
        *,
        chart: ChartPin,
        provider: k8s.Provider,
        namespaces: Mapping[str, pulumi.Resource],
        depends_on: Sequence[pulumi.Resource] = (),
        device_classes: Sequence[str] = (),
        multikueue: Mapping[str, Any] | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ):
        """
        :param queueing: `PlatformConfig.queueing`: the cohort tree and the priority tiers.
        :param flavors: `PlatformConfig.flavors`: one ResourceFlavor each, beside the `cpu` flavor.
        :param tenants: `PlatformConfig.tenants`: one ClusterQueue and LocalQueue each.
        :param chart: the Kueue chart pin (`PlatformConfig.charts["kueue"]`).
        :param provider: the cluster's Kubernetes provider.
        :param namespaces: tenant name -> its Namespace resource; each LocalQueue waits for its namespace.
        :param depends_on: what must exist before the controller is installed (system nodes, add-ons).
        :param device_classes: the administrator's DeviceClasses (`PlatformConfig.gpu.dra.device_classes`,
            by name), each mapped to its own quota resource.
        :param multikueue: a fleet manager's `multiKueue` controller settings (`manager_multikueue`); every
            ClusterQueue then names the MultiKueue AdmissionCheck, declared by components/fleet.py.
        """
        super().__init__("gpu-platform:queueing:Queueing", name, None, opts)
        children = Children(self, provider, depends_on)
        missing = [tenant.name for tenant in tenants if tenant.name not in namespaces]
        if missing:
            raise ValueError(f"Queueing needs the namespace resource of every tenant; missing: {', '.join(missing)}")

        objects = queueing_objects(queueing, flavors, tenants, dispatched=multikueue is not None)
        self.namespace = declare(f"{name}-namespace", objects.pop("namespace"), children.opts())
        self.release = helm_release(
            f"{name}-release",
            release_name=RELEASE_NAME,
            pin=chart,
            namespace=NAMESPACE,
            values=kueue_values(flavors, device_classes, multikueue),
            opts=children.opts(self.namespace),
        )
        # Builders return what an object names before the object (flavors and the root Cohort first, a
        # ClusterQueue before its LocalQueue), so whatever it waits for is declared by the time it is.
        declared: dict[str, dict[str, pulumi.CustomResource]] = {kind: {} for kind in _DECLARED_KINDS}
        for suffix, manifest in objects.items():
            after = [self.release, *_named_by(manifest, declared, namespaces)]
            declared[manifest["kind"]][_key(manifest)] = declare(f"{name}-{suffix}", manifest, children.opts(*after))
        self.flavors, self.cohorts = declared["ResourceFlavor"], declared["Cohort"]
        self.priority_classes = declared["WorkloadPriorityClass"]
        self.cluster_queues, self.local_queues = declared["ClusterQueue"], declared["LocalQueue"]

        self.register_outputs(
            {
                "namespace": NAMESPACE,
                "chartVersion": self.release.version,
                "clusterQueues": sorted(self.cluster_queues),
            }
        )


_DECLARED_KINDS = ("ResourceFlavor", "Cohort", "WorkloadPriorityClass", "ClusterQueue", "LocalQueue")


def _key(manifest: Mapping[str, Any]) -> str:
    """How `Queueing` keys a declared object: by name; a LocalQueue (always `default`) by its tenant's ClusterQueue."""
    return manifest["spec"]["clusterQueue"] if manifest["kind"] == "LocalQueue" else manifest["metadata"]["name"]


def _named_by(
    manifest: Mapping[str, Any],
    declared: Mapping[str, Mapping[str, pulumi.CustomResource]],
    namespaces: Mapping[str, pulumi.Resource],
) -> list[pulumi.Resource]:
    """What a Kueue object names and so waits for: a Cohort its parent, a ClusterQueue its flavors and
    Cohort, a LocalQueue its ClusterQueue and its tenant's namespace (a ClusterQueue is named for its tenant)."""
    spec = manifest.get("spec", {})
    if manifest["kind"] == "Cohort" and spec.get("parentName"):
        return [declared["Cohort"][spec["parentName"]]]
    if manifest["kind"] == "ClusterQueue":
        flavors = [declared["ResourceFlavor"][flavor["name"]] for flavor in spec["resourceGroups"][0]["flavors"]]
        return [*flavors, declared["Cohort"][spec["cohortName"]]]
    if manifest["kind"] == "LocalQueue":
        return [declared["ClusterQueue"][spec["clusterQueue"]], namespaces[spec["clusterQueue"]]]
    return []


# --- controller builders -------------------------------------------------------------------------

def kueue_values(
    flavors: Sequence[FlavorPlan], device_classes: Sequence[str] = (), multikueue: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Helm values: two replicas on the system nodes, our controller config; the chart's defaults otherwise."""
    return {
        "controllerManager": {
            # Two replicas (leader election is on in the config): the job and pod webhooks fail
            # closed (failurePolicy: Fail), so with Kueue down no job could be created.
            "replicas": KUEUE.replicas,
            "podDisruptionBudget": {"enabled": True, "minAvailable": 1},
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "kubernetes.io/hostname",
                    "whenUnsatisfiable": "ScheduleAnyway",
                    # The chart's selector labels (templates/_helpers.tpl) for release `kueue`.
                    "labelSelector": {
                        "matchLabels": {
                            APP_NAME_LABEL: "kueue",
                            "app.kubernetes.io/instance": RELEASE_NAME,
                            "control-plane": "controller-manager",
                        }
                    },
                }
            ],
            **on_system_nodes(),
        },
        "managerConfig": {"controllerManagerConfigYaml": manager_config_yaml(flavors, device_classes, multikueue)},
        # The chart's ServiceMonitor; Prometheus selects ServiceMonitors in every namespace.
        **CHART_SCRAPE_VALUES["kueue"],
    }


def manager_config(
    flavors: Sequence[FlavorPlan], device_classes: Sequence[str] = (), multikueue: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The controller's Configuration: the chart's default plus exactly these changes.

    1. Integrations: the training operator's kinds besides the chart's list (`batch/job`, `pod`, ...).
    2. Jobs without a queue name in tenant namespaces are managed (`manageJobsWithoutQueueName`)
       and the managed namespaces are the tenants' only (`managedJobsNamespaceSelector`). At v0.19
       the selector is a strong exemption for pod-based integrations (pods, deployments,
       statefulsets outside it are never touched, even with a queue name; the chart also scopes the
       fail-closed pod webhooks by it) and, for other kinds, limits where queue-less jobs are
       managed. With the tenant's LocalQueue named `default`, such jobs run under its quota.
    3. Fair sharing on: a `fairSharing` section (see FAIR_SHARING_PREEMPTION_STRATEGIES).
    4. ClusterQueue resource metrics on (`metrics.enableClusterQueueResources`), for quota alerts.
    5. `waitForPodsReady`: admitted work that never starts gives its quota back (config/timing.py).
    6. `resources`: node-local resources left out of quota (EXCLUDED_RESOURCE_PREFIXES), and, where a
       pool allocates GPUs through DRA, the driver's DeviceClasses mapped to quota resources
       (`device_class_mappings`).
    7. On a fleet manager, `multiKueue`: garbage collection, origin and the lost-worker timeout
       (config/fleet.py `manager_multikueue`).
    """
    config = copy.deepcopy(CHART_DEFAULT_MANAGER_CONFIG)
    frameworks = config["integrations"]["frameworks"]
    frameworks += [kind for kind in TRAINING_OPERATOR_FRAMEWORKS if kind not in frameworks]
    config["manageJobsWithoutQueueName"] = True
    config["managedJobsNamespaceSelector"] = every_tenant_namespace()
    config["fairSharing"] = {"preemptionStrategies": list(FAIR_SHARING_PREEMPTION_STRATEGIES)}
    # Per-ClusterQueue usage and quota gauges, which the quota alert and the tenant dashboard read.
    config["metrics"] = {**config["metrics"], "enableClusterQueueResources": True}
    config["waitForPodsReady"] = {
        "timeout": duration(PODS_READY_TIMEOUT_SECONDS),
        "requeuingStrategy": {
            "timestamp": "Eviction",
            "backoffBaseSeconds": REQUEUE_BACKOFF_BASE_SECONDS,
            "backoffMaxSeconds": REQUEUE_BACKOFF_MAX_SECONDS,
        },
    }
    resources: dict[str, Any] = {"excludeResourcePrefixes": list(EXCLUDED_RESOURCE_PREFIXES)}
    mappings = device_class_mappings(flavors, device_classes)
    if mappings:
        resources["deviceClassMappings"] = mappings
    config["resources"] = resources
    if multikueue is not None:
        config["multiKueue"] = dict(multikueue)
    return config


def device_class_mappings(flavors: Sequence[FlavorPlan], device_classes: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Each DRA device class to its own quota resource, when any pool allocates through DRA.

    Kueue charges a pod's ResourceClaimTemplate devices to the resource its class maps to; a class
    with no mapping makes the workload inadmissible (pkg/dra/claims.go,
    GetResourceRequestsForResourceClaimTemplates). The driver's two GPU classes are mapped together,
    so a pool changing between whole GPUs and MIG does not change (and restart) Kueue; each of the
    administrator's classes gets its own resource, so tenants hold quota per class.
    """
    if not any(flavor.pool.dra_device_class for flavor in flavors):
        return []
    return [
        {"name": device_class_resource(device_class), "deviceClassNames": [device_class]}
        for device_class in (*DRA_DEVICE_CLASSES, *device_classes)
    ]


def manager_config_yaml(
    flavors: Sequence[FlavorPlan], device_classes: Sequence[str] = (), multikueue: Mapping[str, Any] | None = None
) -> str:
    return yaml.safe_dump(manager_config(flavors, device_classes, multikueue), sort_keys=False, default_flow_style=False)


def duration(seconds: int) -> str:
    """A Go duration (metav1.Duration): 2700 -> "45m", 90 -> "90s"."""
    return f"{seconds // 60}m" if seconds % 60 == 0 else f"{seconds}s"


# --- queue builders ------------------------------------------------------------------------------

def resource_flavor(flavor: FlavorPlan) -> dict[str, Any]:
    """A GPU flavor: its pool's nodes (and capacity type, when split); admitted pods tolerate the GPU taint."""
    return kueue_manifest(
        "ResourceFlavor",
        flavor.name,
        {"nodeLabels": dict(flavor.node_labels), "tolerations": [gpu_toleration()]},
    )


def cpu_resource_flavor() -> dict[str, Any]:
    """The CPU pool's nodes; no GPU toleration, so nothing admitted here can land on a GPU node."""
    return kueue_manifest("ResourceFlavor", CPU_FLAVOR, {"nodeLabels": cpu_flavor_labels()})


def local_queue(tenant: TenantPlan) -> dict[str, Any]:
    return kueue_manifest("LocalQueue", LOCAL_QUEUE, {"clusterQueue": tenant.name}, namespace=tenant.namespace)


def workload_priority_classes(queueing: QueueingConfig) -> list[dict[str, Any]]:
    """One WorkloadPriorityClass per tier; `value` and `description` are top-level fields, not spec."""
    return [
        {
            "apiVersion": API_VERSION,
            "kind": "WorkloadPriorityClass",
            "metadata": {"name": tier},
            "value": value,
            "description": f"gpu-platform priority tier {tier}: within a ClusterQueue, workloads of a higher tier "
            "preempt those of a lower one",
        }
        for tier, value in queueing.priorities.items()
    ]


def dispatched_cluster_queue(tenant: TenantPlan) -> dict[str, Any]:
    """A fleet manager's ClusterQueue: the tenant's, and every workload it admits waits for MultiKueue to
    dispatch it (v1beta2 has `admissionChecksStrategy` only; no `onFlavors`: every flavor is dispatched)."""
    queue = cluster_queue(tenant)
    queue["spec"]["admissionChecksStrategy"] = {"admissionChecks": [{"name": ADMISSION_CHECK}]}
    return queue


def queueing_objects(
    queueing: QueueingConfig, flavors: Sequence[FlavorPlan], tenants: Sequence[TenantPlan], dispatched: bool = False
) -> dict[str, dict[str, Any]]:
    """Logical-name suffix -> manifest: every object `Queueing` declares, the controller's namespace first.

    Parents come before what refers to them: flavors and cohorts (the root first) before the
    ClusterQueues that name them, each ClusterQueue before its tenant's LocalQueue.
    """
    objects = {"namespace": controller_namespace(NAMESPACE), f"flavor-{CPU_FLAVOR}": cpu_resource_flavor()}
    objects.update({f"flavor-{flavor.name}": resource_flavor(flavor) for flavor in flavors})
    objects.update({f"cohort-{cohort['metadata']['name']}": cohort for cohort in cohorts(queueing)})
    objects.update({f"priority-{tier['metadata']['name']}": tier for tier in workload_priority_classes(queueing)})
    for tenant in tenants:
        objects[f"cq-{tenant.name}"] = dispatched_cluster_queue(tenant) if dispatched else cluster_queue(tenant)
        objects[f"lq-{tenant.name}"] = local_queue(tenant)
    return objects
