"""MultiKueue on the manager: its API, its controller's settings, and what it does to a dispatched workload.

Everything here follows kubernetes-sigs/kueue at tag v0.19.2:
- apis/kueue/v1beta2/multikueue_types.go: MultiKueueCluster (`spec.clusterSource`: exactly one of
  `kubeConfig` {location, locationType Secret|Path} or `clusterProfileRef`), MultiKueueConfig
  (`spec.clusters`, 1-20, unique), the `Active` condition, the controller name and the origin label;
- apis/config/v1beta2/configuration_types.go and defaults.go: `multiKueue.gcInterval` (1m), `origin`
  ("multikueue"), `workerLostTimeout` (15m), `dispatcherName` (AllAtOnce);
- pkg/features/kube_features.go: the MultiKueue gates and their defaults at 0.19;
- pkg/controller/admissionchecks/multikueue/multikueuecluster.go: `loadClientConfig`,
  `validateKubeconfig`, `validateRestConfig` (what a worker's kubeconfig may hold), `retryAfter`;
- pkg/controller/admissionchecks/multikueue/workload.go: the admission check's states as the
  workload's remotes change (steps 6, 6a, 6b and the eviction step);
- pkg/controller/jobs/*/*_multikueue_adapter.go: the kinds MultiKueue can dispatch;
- site/static/examples/multikueue/create-multikueue-kubeconfig.sh: the worker-side ClusterRole upstream
  documents for the manager's identity.

Which worker a workload goes to (the dispatchers) is `models/kueue/multikueue_dispatch.py`; this module
takes the worker that admitted it as given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

API_VERSION = "kueue.x-k8s.io/v1beta2"
# MultiKueueControllerName: the AdmissionCheck `spec.controllerName` MultiKueue's controller owns.
CONTROLLER_NAME = "kueue.x-k8s.io/multikueue"
# MultiKueueConfigSecretKey: the Secret key a `locationType: Secret` kubeconfig is read from, in the
# namespace the Kueue controller runs in.
KUBECONFIG_SECRET_KEY = "kubeconfig"
SECRET_LOCATION = "Secret"
# MultiKueueClusterActive: the condition type a MultiKueueCluster is connected by.
CLUSTER_ACTIVE = "Active"
# MultiKueueOriginLabel: on every remote object, valued with the manager's `origin`; the garbage
# collector deletes remote objects of its own origin whose local workload no longer exists.
ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"

# apis/config/v1beta2/defaults.go.
DEFAULT_GC_INTERVAL_SECONDS = 60
DEFAULT_ORIGIN = "multikueue"
DEFAULT_WORKER_LOST_TIMEOUT_SECONDS = 15 * 60
DISPATCHER_ALL_AT_ONCE = "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"
DISPATCHER_INCREMENTAL = "kueue.x-k8s.io/multikueue-dispatcher-incremental"


@dataclass(frozen=True)
class FeatureGate:
    """A gate's default and stage at v0.19 (the last row of its versioned spec)."""

    default: bool
    stage: str


FEATURE_GATES: dict[str, FeatureGate] = {
    "MultiKueue": FeatureGate(True, "Beta"),
    "MultiKueueAdaptersForCustomJobs": FeatureGate(True, "Beta"),
    # Locked to false: a kubeconfig skipping TLS verification is refused whatever the gate says.
    "MultiKueueAllowInsecureKubeconfigs": FeatureGate(False, "Deprecated"),
    "MultiKueueKubeConfigPathValidation": FeatureGate(False, "Alpha"),
    # A clusterProfileRef (and with it exec credential plugins) is refused while this is off.
    "MultiKueueClusterProfile": FeatureGate(False, "Alpha"),
    "MultiKueueWaitForWorkloadAdmitted": FeatureGate(True, "GA"),
    "MultiKueueRedoAdmissionOnEvictionInWorker": FeatureGate(True, "GA"),
    "MultiKueueOrchestratedPreemption": FeatureGate(False, "Alpha"),
    "MultiKueueIncrementalDispatcherConfig": FeatureGate(True, "Beta"),
    "MultiKueueIncrementalDispatcherRespectConfigOrder": FeatureGate(True, "Beta"),
    "MultiKueueManagerQuotaAutomation": FeatureGate(False, "Alpha"),
    "MultiKueueRemoteSpecSync": FeatureGate(True, "Beta"),
}

# The Configuration frameworks (models/kueue/integrations.py names) whose controller registers a
# MultiKueue adapter at v0.19.2 (pkg/controller/jobs/<kind>/<kind>_multikueue_adapter.go). A workload
# of any other kind in a MultiKueue ClusterQueue is Rejected: "No multikueue adapter found".
DISPATCHABLE_FRAMEWORKS: tuple[str, ...] = (
    "batch/job",
    "jobset.x-k8s.io/jobset",
    "trainer.kubeflow.org/trainjob",
    "kubeflow.org/mpijob",
    "kubeflow.org/pytorchjob",
    "kubeflow.org/tfjob",
    "kubeflow.org/xgboostjob",
    "kubeflow.org/paddlejob",
    "kubeflow.org/jaxjob",
    "ray.io/rayjob",
    "ray.io/raycluster",
    "ray.io/rayservice",
    "workload.codeflare.dev/appwrapper",
    "leaderworkerset.x-k8s.io/leaderworkerset",
    "pod",
    "statefulset",
)

_OBJECT_VERBS = ("create", "delete", "get", "list", "watch")


def _objects(group: str, *resources: str) -> list[dict[str, Any]]:
    """The manager's rights on a dispatched kind: create, delete and watch it, read its status."""
    return [
        rule
        for resource in resources
        for rule in (
            {"apiGroups": [group], "resources": [resource], "verbs": list(_OBJECT_VERBS)},
            {"apiGroups": [group], "resources": [f"{resource}/status"], "verbs": ["get"]},
        )
    ]


# The worker-side ClusterRole upstream documents for the manager's identity
# (create-multikueue-kubeconfig.sh at v0.19.2), with TrainJob added: the script predates its adapter,
# which creates, reads and deletes TrainJobs on the worker (trainjob_multikueue_adapter.go).
WORKER_RBAC_RULES: tuple[dict[str, Any], ...] = (
    *_objects("batch", "jobs"),
    {"apiGroups": [""], "resources": ["pods"], "verbs": list(_OBJECT_VERBS)},
    *_objects("apps", "statefulsets"),
    *_objects("leaderworkerset.x-k8s.io", "leaderworkersets"),
    *_objects("jobset.x-k8s.io", "jobsets"),
    *_objects("trainer.kubeflow.org", "trainjobs"),
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": [*_OBJECT_VERBS, "update", "patch"]},
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues", "localqueues"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads/status"], "verbs": ["get", "patch", "update"]},
    *_objects("kubeflow.org", "tfjobs", "paddlejobs", "pytorchjobs", "xgboostjobs", "mpijobs"),
    *_objects("ray.io", "rayjobs"),
    {"apiGroups": ["ray.io"], "resources": ["rayclusters"], "verbs": [*_OBJECT_VERBS, "update", "patch"]},
    {"apiGroups": ["ray.io"], "resources": ["rayclusters/status"], "verbs": ["get"]},
    *_objects("ray.io", "rayservices"),
    *_objects("workload.codeflare.dev", "appwrappers"),
)


def admission_check_condition(clusters: Sequence[str], active: Mapping[str, bool]) -> tuple[bool, str, str]:
    """The MultiKueue AdmissionCheck's `Active` condition (status, reason, message) from its MultiKueueConfig's
    `clusters` and each existing MultiKueueCluster's `Active` condition (admissioncheck.go `Reconcile`).

    Any worker usable keeps the check Active (`SomeActiveClusters` when some are not); none usable makes it
    inactive, `NoUsableClusters`, and every ClusterQueue naming it inactive with it.
    """
    missing = [name for name in clusters if name not in active]
    inactive = [name for name in clusters if name in active and not active[name]]
    if not missing and not inactive:
        return True, "Active", "The admission check is active"
    parts = [f"Missing clusters: [{' '.join(missing)}]"] if missing else []
    if inactive:
        parts.append(f"Inactive clusters: [{' '.join(inactive)}]")
    usable = len(missing) + len(inactive) < len(clusters)
    return usable, "SomeActiveClusters" if usable else "NoUsableClusters", ", ".join(parts)


READ_VERBS = ("get", "list", "watch")


def split_rules(rules: Sequence[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """`rules` as (reads, writes): each rule's get/list/watch, and its other verbs, as rules of their own.

    The manager's remote client watches every namespace for its origin's objects, so reads are cluster-wide;
    it creates, changes and deletes objects only in the namespace of the workload it dispatches, so writes
    can be granted namespace by namespace.
    """
    reads: list[dict[str, Any]] = []
    writes: list[dict[str, Any]] = []
    for rule in rules:
        for verbs, found in ((tuple(v for v in rule["verbs"] if v in READ_VERBS), reads),
                             (tuple(v for v in rule["verbs"] if v not in READ_VERBS), writes)):
            if verbs:
                found.append({**rule, "verbs": list(verbs)})
    return reads, writes


def kubeconfig_problems(kubeconfig: Mapping[str, Any]) -> list[str]:
    """Why the controller refuses a `locationType: Secret` kubeconfig (reason InsecureKubeConfig), or [].

    validateKubeconfig and validateRestConfig (no exec allowed) at v0.19.2: no tokenFile, TLS verified
    with inline CA data, a server on every cluster, no basic auth, no exec plugin, no auth provider.
    A token or client certificate in the file is what remains.
    """
    problems = []
    for entry in kubeconfig.get("clusters") or []:
        cluster, name = entry.get("cluster") or {}, entry.get("name", "")
        if cluster.get("insecure-skip-tls-verify"):
            problems.append(f"cluster {name}: insecure TLS verification is not allowed")
        if cluster.get("certificate-authority"):
            problems.append(f"cluster {name}: certificate-authority file paths are not allowed")
        if not cluster.get("server"):
            problems.append(f"cluster {name}: server URL is required")
    for entry in kubeconfig.get("users") or []:
        user, name = entry.get("user") or {}, entry.get("name", "")
        for key, why in (
            ("tokenFile", "tokenFile is not allowed"),
            ("username", "basic auth is not allowed"),
            ("password", "basic auth is not allowed"),
            ("exec", "exec plugins are not allowed"),
            ("auth-provider", "auth providers are not allowed"),
        ):
            if user.get(key):
                problems.append(f"user {name}: {why}")
    return problems


def retry_after_seconds(failed_attempts: int) -> int:
    """How long the controller waits before reconnecting to a worker after `failed_attempts` failures:
    5 s doubling to at most 320 s (`retryAfter`: retryIncrement 5 s, retryMaxSteps 7)."""
    if failed_attempts <= 0:
        return 0
    return (1 << (min(failed_attempts, 7) - 1)) * 5


# --- the MultiKueue admission check of one workload on the manager --------------------------------

PENDING, READY, RETRY, REJECTED = "Pending", "Ready", "Retry", "Rejected"


@dataclass(frozen=True)
class Check:
    """The workload's MultiKueue AdmissionCheckState on the manager, and `status.clusterName`."""

    state: str
    cluster: str | None = None
    message: str = ""
    finished: bool = False


def defaulted_managed_by(managed_by: str | None, own_controller: str, check_controllers: Sequence[str]) -> str | None:
    """A job's `spec.managedBy` after Kueue's webhook (jobframework/defaults.go ApplyDefaultForManagedBy, run
    after the default LocalQueue's label is set): MultiKueue's, when the job's ClusterQueue has a
    MultiKueue check and the job names no other manager than its own kind's controller (`CanDefaultManagedBy`)."""
    if CONTROLLER_NAME in check_controllers and managed_by in (None, own_controller):
        return CONTROLLER_NAME
    return managed_by


def reserved(framework: str, managed_by: str | None) -> Check:
    """Quota reserved on the manager: the check is Pending and the dispatcher copies the workload to
    workers. Rejected at once for a kind without an adapter, or a job MultiKueue does not manage
    (workload.go: "No multikueue adapter found"; "The owner is not managed by Kueue: ...")."""
    if framework not in DISPATCHABLE_FRAMEWORKS:
        return Check(REJECTED, message="No multikueue adapter found")
    if managed_by != CONTROLLER_NAME:
        reason = f'Expecting spec.managedBy to be "{CONTROLLER_NAME}" not "{managed_by or ""}"'
        return Check(REJECTED, message=f"The owner is not managed by Kueue: {reason}")
    return Check(PENDING)


def admitted_on(check: Check, worker: str) -> Check:
    """A worker admitted its copy: the check turns Ready, `clusterName` is set once (immutable after),
    the copies on other workers are deleted and the job is created on that worker
    (syncAdmittingRemoteState). A check in Retry or Rejected is not moved."""
    if check.state in (RETRY, REJECTED):
        return check
    return Check(READY, check.cluster or worker, f'The workload was admitted on "{check.cluster or worker}"')


def admitting_worker_unreachable(check: Check, lost_for_seconds: int, worker_lost_timeout_seconds: int) -> Check:
    """The worker running the workload is unreachable, or its MultiKueueCluster is gone (both leave it
    out of the available clients): the check stays Ready until the loss lasts `workerLostTimeout`, then
    turns Retry, and Kueue evicts the workload on the manager and queues it again (step 6a)."""
    if check.state != READY:
        return check
    if lost_for_seconds < worker_lost_timeout_seconds:
        return check
    return Check(RETRY, check.cluster, "Admitting remote lost")


def admitting_remote_gone(check: Check) -> Check:
    """The worker answers but its copy of the workload is gone (deleted there): Retry at once (step 6a)."""
    if check.state != READY:
        return check
    return Check(RETRY, check.cluster, "Admitting remote no longer exists")


def evicted_on_worker(check: Check) -> Check:
    """The worker evicted its copy (preempted, pods not ready): the check goes Retry for re-admission."""
    if check.state != READY:
        return check
    message = (
        f'Workload evicted on worker cluster: "{check.cluster}", resetting for re-admission. Previously: "{READY}"'
    )
    return Check(RETRY, check.cluster, message)


def finished_on_worker(check: Check) -> Check:
    """The worker's copy finished: the manager copies the final status, marks its own workload
    Finished, and deletes the worker's objects."""
    if check.state != READY:
        return check
    return Check(READY, check.cluster, check.message, finished=True)
