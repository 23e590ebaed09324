"""Kubeflow Trainer: the controller (Helm, with JobSet), the platform's torch runtime, and tenants' rights to train.

Everything here follows kubeflow/trainer at tag v2.3.0 (charts/kubeflow-trainer: Chart.yaml,
values.yaml, templates/manager/deployment.yaml, templates/runtimes/; files/runtimes/torch-distributed.yaml;
manifests/overlays/kubeflow-platform/kubeflow-trainer-roles.yaml) and the JobSet chart it depends on,
kubernetes-sigs/jobset tag v0.12.0 (charts/jobset: values.yaml, templates/controller/deployment.yaml,
crds/). When bumping, diff those between the two tags and mirror every change here.

The training API is Trainer v2's `trainer.kubeflow.org/v1alpha1` TrainJob, which runs a (Cluster)TrainingRuntime
as one JobSet. Trainer v2 does not serve the v1 training operator's `kubeflow.org/v1` PyTorchJob: its chart
installs only the trainer.kubeflow.org CRDs and its code has no v1 API (pkg/apis/ holds `trainer` and
`config` only). A PyTorchJob of 1 master + 7 workers with one GPU each is a TrainJob of
`numNodes: 8` with one GPU per node on the `torch-distributed` runtime (docs/tenants.md, "Training jobs").

How a TrainJob is admitted (kubernetes-sigs/kueue v0.19.2 pkg/controller/jobs/trainjob/): Kueue's
webhook labels a TrainJob without a queue name with the namespace's `default` LocalQueue and suspends
it (trainjob_webhook.go `Default`); Kueue admits the whole TrainJob as one Workload, its pod count
taken from the runtime and `numNodes`, and unsuspends it only when the quota holds every pod. The
JobSet the trainer then creates has the TrainJob as owner, so Kueue does not queue it a second time
(jobframework.FindAncestorJobManagedByKueue).

Tenant access. Tenants are bound to the built-in `admin` and `view` ClusterRoles in their namespace
(components/tenants.py); the roles here carry the aggregation labels those roles select, so tenants get
the training kinds in their own namespace only. Neither chart ships such roles: the trainer's
aggregate to Kubeflow's own `kubeflow-edit`/`kubeflow-view` (kubeflow-platform overlay, not the chart),
JobSet's editor and viewer roles carry no aggregation label. ClusterTrainingRuntimes are
cluster-scoped, so a RoleBinding cannot grant reading them; like upstream's overlay, every
authenticated user may read them (they hold no secrets, only pod templates).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from config import namespaces
from config.system_capacity import TRAINER
from config.versions import ChartPin
from models.kubeflow_trainer import ANCESTOR_STEP_LABEL, TRAINER_ANCESTOR, TRAINER_CONTAINER

from .lib.helm import helm_release
from .lib.namespaces import controller_namespace
from .lib.placement import on_system_nodes
from .lib.resources import Children, declare

API_VERSION = "trainer.kubeflow.org/v1alpha1"
CHART_KEY = "kubeflow-trainer"
NAMESPACE = namespaces.TRAINER
RELEASE_NAME = "kubeflow-trainer"
RBAC_API_VERSION = "rbac.authorization.k8s.io/v1"

TRAINER_GROUP = "trainer.kubeflow.org"
JOBSET_GROUP = "jobset.x-k8s.io"

# The Kueue frameworks (kubernetes-sigs/kueue v0.19.2 pkg/controller/jobs/trainjob, jobset: `FrameworkName`)
# of the kinds this release installs the CRDs of, with each kind's served version.
QUEUED_KINDS = {
    "trainer.kubeflow.org/trainjob": "trainer.kubeflow.org/v1alpha1 TrainJob",
    "jobset.x-k8s.io/jobset": "jobset.x-k8s.io/v1alpha2 JobSet",
}

# The runtime the platform provides, named as upstream's (files/runtimes/torch-distributed.yaml).
TORCH_RUNTIME = "torch-distributed"
# Upstream's torch-distributed image at v2.3.0. The container must be called `node`: the trainer's
# runtime webhook requires that name in the replicated job labelled as the trainer ancestor
# (pkg/webhooks/trainingruntime_webhook.go, validateReplicatedJobs), and its plugins address it by it.
TORCH_IMAGE = "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime"
# A non-root user for the runtime's pods: tenant namespaces enforce Pod Security `restricted`, which
# refuses a pod that may run as root, and the PyTorch image's default user is root.
RUNTIME_USER = 1000

# The built-in roles' aggregation labels (kubernetes/kubernetes plugin/pkg/auth/authorizer/rbac/
# bootstrappolicy/policy.go: `admin` aggregates `aggregate-to-admin`, `edit` carries that label and
# aggregates `aggregate-to-edit`, `view` carries `aggregate-to-edit` and aggregates `aggregate-to-view`).
AGGREGATE_TO = {role: f"rbac.authorization.k8s.io/aggregate-to-{role}" for role in ("admin", "edit", "view")}
READ = ("get", "list", "watch")
WRITE = ("create", "delete", "deletecollection", "patch", "update")
# Every authenticated user (EKS maps each access entry's principal into it).
AUTHENTICATED = "system:authenticated"
RUNTIME_READER = "gpu-platform:training:cluster-runtime-reader"


class Training(pulumi.ComponentResource):
    """The trainer and JobSet controllers in `kubeflow-system` on the system nodes, the torch runtime, tenant roles.

    The release waits for Kueue's, so no TrainJob can ever start outside a queue: Kueue's TrainJob
    webhook and controller must be there when the first TrainJob is created. The runtime waits for
    the release (its CRD is a chart template, and the trainer's webhook validates it).
    """

    namespace: pulumi.CustomResource
    release: k8s.helm.v3.Release
    runtime: pulumi.CustomResource
    access: dict[tuple[str, str], pulumi.CustomResource]  # (kind, name) of each ClusterRole and ClusterRoleBinding

    def __init__(
        self,
        name: str,
        *,
        chart: ChartPin,
        provider: k8s.Provider,
        depends_on: Sequence[pulumi.Resource] = (),
        queueing: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ):
        """
        :param chart: the Kubeflow Trainer chart pin (`PlatformConfig.charts["kubeflow-trainer"]`).
        :param provider: the cluster's Kubernetes provider.
        :param depends_on: what must exist before the controllers are installed (system nodes, add-ons).
        :param queueing: the Kueue release, whose TrainJob and JobSet integrations must run first.
        """
        super().__init__("gpu-platform:training:Training", name, None, opts)
        children = Children(self, provider, depends_on)
        self.namespace = declare(f"{name}-namespace", controller_namespace(NAMESPACE), children.opts())
        self.release = helm_release(
            f"{name}-release",
            release_name=RELEASE_NAME,
            pin=chart,
            namespace=NAMESPACE,
            values=trainer_values(),
            opts=children.opts(self.namespace, *queueing),
        )
        self.runtime = declare(f"{name}-runtime-{TORCH_RUNTIME}", torch_runtime(), children.opts(self.release))
        self.access = {
            (manifest["kind"], manifest["metadata"]["name"]): declare(
                f"{name}-{manifest['kind'].lower()}-{_slug(manifest)}", manifest, children.opts()
            )
            for manifest in access_manifests()
        }
        self.register_outputs({"namespace": NAMESPACE, "chartVersion": self.release.version, "runtime": TORCH_RUNTIME})


def trainer_values() -> dict[str, Any]:
    """Helm values: both controllers on the system nodes, the manager sized; no built-in runtimes.

    The chart's runtimes (values `runtimes.*`, all off by default) are applied by a post-install hook
    Job that installs kubectl from the internet at run time (templates/runtimes/installer-job.yaml);
    the platform declares its runtime itself instead (`torch_runtime`).
    """
    return {
        "manager": {"replicas": TRAINER.replicas, "resources": dict(TRAINER.resources or {}), **on_system_nodes()},
        # The JobSet subchart (Chart.yaml dependency `jobset`, condition `jobset.install`): the trainer
        # creates a JobSet per TrainJob, and no other JobSet controller runs on the cluster.
        "jobset": {"install": True, "controller": on_system_nodes()},
    }


def torch_runtime() -> dict[str, Any]:
    """upstream's torch-distributed ClusterTrainingRuntime, with a pod that Pod Security `restricted` admits.

    kubeflow/trainer v2.3.0 charts/kubeflow-trainer/files/runtimes/torch-distributed.yaml, less the
    chart's labels (and its `trainer.kubeflow.org/webhook-validation: disabled`: this one is validated),
    plus a non-root user, RuntimeDefault seccomp, no privilege escalation and no capabilities.
    """
    pod = {
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": RUNTIME_USER,
            "runAsGroup": RUNTIME_USER,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [
            {
                "name": TRAINER_CONTAINER,
                "image": TORCH_IMAGE,
                "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
            }
        ],
    }
    node = {
        "name": "node",
        "template": {"metadata": {"labels": {ANCESTOR_STEP_LABEL: TRAINER_ANCESTOR}}, "spec": {"template": {"spec": pod}}},
    }
    return {
        "apiVersion": API_VERSION,
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": TORCH_RUNTIME, "labels": {"trainer.kubeflow.org/framework": "torch"}},
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {}},
            "template": {"spec": {"replicatedJobs": [node]}},
        },
    }


def access_manifests() -> list[dict[str, Any]]:
    """The aggregated roles tenants get the training kinds through, and the cluster-wide runtime reader.

    - `edit` (and so `admin`): TrainJobs and JobSets, read and write.
    - `admin` only: TrainingRuntimes, their own pod templates in their own namespace.
    - `view`: every training kind, read only, with the status subresources.
    """
    jobs = ("trainjobs", "jobsets")
    statuses = [_rule(TRAINER_GROUP, ("trainjobs/status",), READ), _rule(JOBSET_GROUP, ("jobsets/status",), READ)]
    return [
        _aggregated("view", [
            _rule(TRAINER_GROUP, ("trainjobs", "trainingruntimes"), READ), _rule(JOBSET_GROUP, ("jobsets",), READ), *statuses,
        ]),
        _aggregated("edit", [
            _rule(TRAINER_GROUP, jobs[:1], (*READ, *WRITE)), _rule(JOBSET_GROUP, jobs[1:], (*READ, *WRITE)),
        ]),
        _aggregated("admin", [_rule(TRAINER_GROUP, ("trainingruntimes",), (*READ, *WRITE))]),
        {
            "apiVersion": RBAC_API_VERSION,
            "kind": "ClusterRole",
            "metadata": {"name": RUNTIME_READER},
            "rules": [_rule(TRAINER_GROUP, ("clustertrainingruntimes",), READ)],
        },
        {
            "apiVersion": RBAC_API_VERSION,
            "kind": "ClusterRoleBinding",
            "metadata": {"name": RUNTIME_READER},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": RUNTIME_READER},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": AUTHENTICATED}],
        },
    ]


def _aggregated(role: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": RBAC_API_VERSION,
        "kind": "ClusterRole",
        "metadata": {"name": f"gpu-platform:training:{role}", "labels": {AGGREGATE_TO[role]: "true"}},
        "rules": rules,
    }


def _rule(group: str, resources: Sequence[str], verbs: Sequence[str]) -> dict[str, Any]:
    return {"apiGroups": [group], "resources": list(resources), "verbs": list(verbs)}


def _slug(manifest: dict[str, Any]) -> str:
    return manifest["metadata"]["name"].replace("gpu-platform:training:", "").replace(":", "-")
