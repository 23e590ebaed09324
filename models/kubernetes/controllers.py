"""The identities kube-controller-manager's controllers send their requests as.

kubernetes/kubernetes v1.35.0 cmd/kube-controller-manager/app/controllermanager.go: with
`--use-service-account-credentials` each controller's client is `ClientBuilder.ClientOrDie(<name>)`, a token of
the service account `<name>` in kube-system (staging/src/k8s.io/controller-manager/pkg/clientbuilder);
without it every controller uses the manager's own credential, `system:kube-controller-manager`. EKS
does not publish the flags of its control plane, so callers accept both forms.
The names are the `ClientOrDie` arguments in cmd/kube-controller-manager/app/{apps,batch,core,discovery}.go.
"""

from __future__ import annotations

from .user import SERVICE_ACCOUNT_USERNAME_PREFIX

KUBE_SYSTEM = "kube-system"
KUBE_CONTROLLER_MANAGER = "system:kube-controller-manager"
# Creates a Job's pods (cmd/kube-controller-manager/app/batch.go), each owned by the Job.
JOB_CONTROLLER = "job-controller"

# Controllers that create namespaced objects carrying a controller ownerReference to their owner.
OWNING_CONTROLLERS: tuple[str, ...] = (
    "cronjob-controller",  # Jobs of a CronJob
    "daemon-set-controller",  # Pods of a DaemonSet
    "deployment-controller",  # ReplicaSets of a Deployment
    "endpointslice-controller",  # EndpointSlices of a Service
    "endpointslicemirroring-controller",  # EndpointSlices mirroring a selector-less Service's Endpoints
    "ephemeral-volume-controller",  # PVCs of a pod's generic ephemeral volumes
    JOB_CONTROLLER,  # Pods of a Job
    "replicaset-controller",  # Pods of a ReplicaSet
    "replication-controller",  # Pods of a ReplicationController
    "resource-claim-controller",  # ResourceClaims of a pod's claim templates
    "statefulset-controller",  # Pods and PVCs of a StatefulSet
)
# Empties a terminating namespace: deletes every object left in it (pkg/controller/namespace).
NAMESPACE_CONTROLLER = "namespace-controller"
# Deletes an object whose owners are all gone (cmd/kube-controller-manager/app/core.go
# `startGarbageCollectorController`: `ClientOrDie("generic-garbage-collector")`).
GARBAGE_COLLECTOR = "generic-garbage-collector"


def controller_username(controller: str) -> str:
    """The username of a controller's requests under `--use-service-account-credentials`."""
    return f"{SERVICE_ACCOUNT_USERNAME_PREFIX}{KUBE_SYSTEM}:{controller}"
