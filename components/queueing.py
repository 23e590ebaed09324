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
from config.autoscaling import SERVER_STARTUP_SECONDS
from config.fair_share import CPU_FLAVOR, FlavorPlan, TenantPlan, cpu_flavor_labels
from config.labels import (
    APP_NAME_LABEL,
    DRA_DEVICE_CLASSES,
    LOCAL_QUEUE,
    NAMESPACE_NAME_LABEL,
    device_class_resource,
)
from config.system_capacity import KUEUE
from config.tenants import QueueingConfig
from config.versions import ChartPin
from models.kubernetes.quantity import gibibytes, plain_decimal

from .lib.helm import helm_release
from .lib.namespaces import controller_namespace, every_tenant_namespace
from .lib.placement import gpu_toleration, on_system_nodes
from .lib.prometheus import CHART_SCRAPE_VALUES
from .lib.resources import Children, declare

API_VERSION = "kueue.x-k8s.io/v1beta2"
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

# waitForPodsReady: an admitted workload whose pods are not all ready by `timeout` is evicted, its
# quota released, and requeued after a backoff (v1beta2 defaults.go turns it on with a 30-minute
# timeout; we size it). The timeout covers the slowest normal start of the platform's model server:
# Karpenter gives a NodeClaim 5 minutes to launch and 15 to register its node before replacing it
# (kubernetes-sigs/karpenter v1.14.1 pkg/controllers/nodeclaim/lifecycle/liveness.go, LaunchTimeout and
# registrationTimeout); the GPU Operator readies the node and the server's image (vLLM's is ~10 GB) is
# pulled; then the server's startup probe allows SERVER_STARTUP_SECONDS to load the model.
NODE_LAUNCH_SECONDS = (5 + 15) * 60
NODE_SETUP_SECONDS = 10 * 60
PODS_READY_TIMEOUT_SECONDS = NODE_LAUNCH_SECONDS + NODE_SETUP_SECONDS + SERVER_STARTUP_SECONDS
# Requeue backoff after an eviction: base x 2^(n-1) plus jitter, capped (pkg/controller/core/
# workload_controller.go via workload.UpdateRequeueState); these are v1beta2's defaults, written out.
# No backoffLimitCount: a model server's pod is requeued for as long as it exists, never deactivated.
REQUEUE_BACKOFF_BASE_SECONDS = 60
REQUEUE_BACKOFF_MAX_SECONDS = 3600

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
        """
        super().__init__("gpu-platform:queueing:Queueing", name, None, opts)
        children = Children(self, provider, depends_on)
        missing = [tenant.name for tenant in tenants if tenant.name not in namespaces]
        if missing:
            raise ValueError(f"Queueing needs the namespace resource of every tenant; missing: {', '.join(missing)}")

        # --- controller -------------------------------------------------------------------------
        self.namespace = declare(f"{name}-namespace", controller_namespace(NAMESPACE), children.opts())
        self.release = helm_release(
            f"{name}-release",
            release_name=RELEASE_NAME,
            pin=chart,
            namespace=NAMESPACE,
            values=kueue_values(flavors),
            opts=children.opts(self.namespace),
        )
        installed = [self.release]

        # --- flavors, cohorts, priority tiers ---------------------------------------------------
        self.flavors = {
            CPU_FLAVOR: declare(f"{name}-flavor-{CPU_FLAVOR}", cpu_resource_flavor(), children.opts(*installed))
        }
        for flavor in flavors:
            self.flavors[flavor.name] = declare(
                f"{name}-flavor-{flavor.name}", resource_flavor(flavor), children.opts(*installed)
            )

        self.cohorts = {}
        for cohort in cohorts(queueing):
            parent = cohort["spec"].get("parentName")
            after = [*installed, self.cohorts[parent]] if parent else installed
            cohort_name = cohort["metadata"]["name"]
            self.cohorts[cohort_name] = declare(f"{name}-cohort-{cohort_name}", cohort, children.opts(*after))

        self.priority_classes = {
            manifest["metadata"]["name"]: declare(
                f"{name}-priority-{manifest['metadata']['name']}", manifest, children.opts(*installed)
            )
            for manifest in workload_priority_classes(queueing)
        }

        # --- per tenant -------------------------------------------------------------------------
        self.cluster_queues, self.local_queues = {}, {}
        for tenant in tenants:
            queue = cluster_queue(tenant)
            flavor_names = [f["name"] for f in queue["spec"]["resourceGroups"][0]["flavors"]]
            self.cluster_queues[tenant.name] = declare(
                f"{name}-cq-{tenant.name}",
                queue,
                children.opts(*installed, *(self.flavors[f] for f in flavor_names), self.cohorts[tenant.cohort]),
            )
            self.local_queues[tenant.name] = declare(
                f"{name}-lq-{tenant.name}",
                local_queue(tenant),
                children.opts(*installed, self.cluster_queues[tenant.name], namespaces[tenant.name]),
            )

        self.register_outputs(
            {
                "namespace": NAMESPACE,
                "chartVersion": self.release.version,
                "clusterQueues": sorted(self.cluster_queues),
            }
        )


# --- controller builders -------------------------------------------------------------------------

def kueue_values(flavors: Sequence[FlavorPlan]) -> dict[str, Any]:
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
        "managerConfig": {"controllerManagerConfigYaml": manager_config_yaml(flavors)},
        # The chart's ServiceMonitor; Prometheus selects ServiceMonitors in every namespace.
        **CHART_SCRAPE_VALUES["kueue"],
    }


def manager_config(flavors: Sequence[FlavorPlan]) -> dict[str, Any]:
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
    5. `waitForPodsReady`: admitted work that never starts gives its quota back (PODS_READY_TIMEOUT_SECONDS).
    6. `resources`: node-local resources left out of quota (EXCLUDED_RESOURCE_PREFIXES), and, where a
       pool allocates GPUs through DRA, the driver's DeviceClasses mapped to quota resources
       (`device_class_mappings`).
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
    mappings = device_class_mappings(flavors)
    if mappings:
        resources["deviceClassMappings"] = mappings
    config["resources"] = resources
    return config


def device_class_mappings(flavors: Sequence[FlavorPlan]) -> list[dict[str, Any]]:
    """Each DRA device class to the quota resource a DRA flavor carries, when any pool allocates through DRA.

    Kueue charges a pod's ResourceClaimTemplate devices to the resource its class maps to; a class
    with no mapping makes the workload inadmissible (pkg/dra/claims.go,
    GetResourceRequestsForResourceClaimTemplates). The driver's two GPU classes are mapped together,
    so a pool changing between whole GPUs and MIG does not change (and restart) Kueue.
    """
    if not any(flavor.pool.dra_device_class for flavor in flavors):
        return []
    return [
        {"name": device_class_resource(device_class), "deviceClassNames": [device_class]}
        for device_class in DRA_DEVICE_CLASSES
    ]


def manager_config_yaml(flavors: Sequence[FlavorPlan]) -> str:
    return yaml.safe_dump(manager_config(flavors), sort_keys=False, default_flow_style=False)


def duration(seconds: int) -> str:
    """A Go duration (metav1.Duration): 2700 -> "45m", 90 -> "90s"."""
    return f"{seconds // 60}m" if seconds % 60 == 0 else f"{seconds}s"


# --- queue builders ------------------------------------------------------------------------------

def resource_flavor(flavor: FlavorPlan) -> dict[str, Any]:
    """A GPU flavor: its pool's nodes (and capacity type, when split); admitted pods tolerate the GPU taint."""
    return _manifest(
        "ResourceFlavor",
        flavor.name,
        {"nodeLabels": dict(flavor.node_labels), "tolerations": [gpu_toleration()]},
    )


def cpu_resource_flavor() -> dict[str, Any]:
    """The CPU pool's nodes; no GPU toleration, so nothing admitted here can land on a GPU node."""
    return _manifest("ResourceFlavor", CPU_FLAVOR, {"nodeLabels": cpu_flavor_labels()})


def cohorts(queueing: QueueingConfig) -> list[dict[str, Any]]:
    """The root Cohort, then one per business unit nested under it (`spec.parentName`)."""
    root = _manifest("Cohort", queueing.cohort, {})
    return [root, *(_manifest("Cohort", unit, {"parentName": queueing.cohort}) for unit in queueing.business_units)]


def cluster_queue(tenant: TenantPlan) -> dict[str, Any]:
    """The tenant's ClusterQueue: one resource group over every resource its pods can request.

    Flavors are tried in order: `cpu` first with no GPUs, so CPU-only pods get the CPU pool (a GPU
    flavor would put them on GPU nodes); then the tenant's GPU flavors in the order its config lists
    them. One group means a GPU pod's cpu and memory come from the same flavor as its GPUs.
    """
    covered = tenant.covered_resources
    cpu_quota = {"cpu": (tenant.config.cpu, 0, None), "memory": (tenant.config.memory_gib, 0, None)}
    flavors = [_flavor_quotas(CPU_FLAVOR, covered, cpu_quota)]
    flavors += [_flavor_quotas(quota.flavor.name, covered, quota.resources()) for quota in tenant.quotas]
    spec = {
        "cohortName": tenant.cohort,
        "namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: tenant.namespace}},
        "resourceGroups": [{"coveredResources": list(covered), "flavors": flavors}],
        # Reclaim: a tenant gets its nominal quota back from borrowers whatever their priority.
        # Within its own queue, higher tiers preempt lower ones. borrowWithinCohort stays Never:
        # with fair sharing on, Kueue ignores it and preempts borrowers by share instead.
        "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
        "fairSharing": {"weight": plain_decimal(tenant.config.fair_share_weight)},
    }
    return _manifest("ClusterQueue", tenant.name, spec)


def local_queue(tenant: TenantPlan) -> dict[str, Any]:
    return _manifest("LocalQueue", LOCAL_QUEUE, {"clusterQueue": tenant.name}, namespace=tenant.namespace)


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


def queueing_manifests(
    queueing: QueueingConfig, flavors: Sequence[FlavorPlan], tenants: Sequence[TenantPlan]
) -> list[dict[str, Any]]:
    """Every Kueue object the component declares, as plain manifests."""
    return [
        cpu_resource_flavor(),
        *(resource_flavor(flavor) for flavor in flavors),
        *cohorts(queueing),
        *workload_priority_classes(queueing),
        *(cluster_queue(tenant) for tenant in tenants),
        *(local_queue(tenant) for tenant in tenants),
    ]


def _flavor_quotas(
    flavor: str, covered: Sequence[str], quotas: Mapping[str, tuple[int, int, int | None]]
) -> dict[str, Any]:
    """Every covered resource, in coveredResources' order (the webhook checks names by position), 0 where none.

    borrowingLimit is always written: Kueue reads a missing one as unlimited, which would admit more
    than the namespace's ResourceQuota (derived from nominal + borrowing) lets pods use.
    lendingLimit only where the tenant set one: missing means it lends all its idle nominal.
    """
    resources = []
    for resource in covered:
        nominal, borrowing, lending = quotas.get(resource, (0, 0, None))
        entry = {"name": resource, "nominalQuota": _amount(resource, nominal), "borrowingLimit": _amount(resource, borrowing)}
        if lending is not None:
            entry["lendingLimit"] = _amount(resource, lending)
        resources.append(entry)
    return {"name": flavor, "resources": resources}


def _amount(resource: str, value: int) -> str:
    """cpu in cores, memory in GiB, devices in units, as Quantity strings."""
    return gibibytes(value) if resource == "memory" else plain_decimal(value)


def _manifest(kind: str, name: str, spec: dict[str, Any], namespace: str | None = None) -> dict[str, Any]:
    metadata = {"name": name} if namespace is None else {"name": name, "namespace": namespace}
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": metadata, "spec": spec}
