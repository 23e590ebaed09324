"""Kueue's job integrations: each framework name and the kind it queues (kubernetes-sigs/kueue v0.19.2
pkg/controller/jobs/<integration>/*_controller.go, `FrameworkName` and the GVK it registers with
jobframework.RegisterIntegration). A kind is queued only when its framework is listed in the
Configuration's `integrations.frameworks`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple


class Integration(NamedTuple):
    """The group, version and kind an integration's controller registers (its `gvk`)."""

    group: str
    version: str
    kind: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def built_in(self) -> bool:
        """Served by Kubernetes itself, not by a CRD: a CustomResourceDefinition's group must contain a dot
        (kubernetes/kubernetes staging/src/k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation/
        validation.go, ValidateCustomResourceDefinitionSpec), and the built-in groups (core, `batch`,
        `apps`) have none."""
        return "." not in self.group


# framework name -> the GVK its controller registers. The versions are those of the API packages Kueue
# imports: k8s.io/api batch/v1, core/v1, apps/v1; jobset api/jobset/v1alpha2; trainer v1alpha1;
# mpi-operator v2beta1; training-operator kubeflow.org/v1; kuberay ray/v1; appwrapper v1beta2;
# lws leaderworkerset/v1; spark-operator v1beta2.
INTEGRATIONS: dict[str, Integration] = {
    "batch/job": Integration("batch", "v1", "Job"),
    "pod": Integration("", "v1", "Pod"),
    "deployment": Integration("apps", "v1", "Deployment"),
    "statefulset": Integration("apps", "v1", "StatefulSet"),
    "jobset.x-k8s.io/jobset": Integration("jobset.x-k8s.io", "v1alpha2", "JobSet"),
    "trainer.kubeflow.org/trainjob": Integration("trainer.kubeflow.org", "v1alpha1", "TrainJob"),
    "kubeflow.org/mpijob": Integration("kubeflow.org", "v2beta1", "MPIJob"),
    "kubeflow.org/pytorchjob": Integration("kubeflow.org", "v1", "PyTorchJob"),
    "kubeflow.org/tfjob": Integration("kubeflow.org", "v1", "TFJob"),
    "kubeflow.org/xgboostjob": Integration("kubeflow.org", "v1", "XGBoostJob"),
    "kubeflow.org/paddlejob": Integration("kubeflow.org", "v1", "PaddleJob"),
    "kubeflow.org/jaxjob": Integration("kubeflow.org", "v1", "JAXJob"),
    "ray.io/rayjob": Integration("ray.io", "v1", "RayJob"),
    "ray.io/raycluster": Integration("ray.io", "v1", "RayCluster"),
    "ray.io/rayservice": Integration("ray.io", "v1", "RayService"),
    "workload.codeflare.dev/appwrapper": Integration("workload.codeflare.dev", "v1beta2", "AppWrapper"),
    "leaderworkerset.x-k8s.io/leaderworkerset": Integration("leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet"),
    "sparkoperator.k8s.io/sparkapplication": Integration("sparkoperator.k8s.io", "v1beta2", "SparkApplication"),
}


def framework_of(api_version: str, kind: str) -> str | None:
    """The framework that queues objects of this apiVersion and kind, or None when no integration does."""
    group = api_version.rpartition("/")[0]
    for framework, integration in INTEGRATIONS.items():
        if (integration.group, integration.kind) == (group, kind):
            return framework
    return None


def is_queued(api_version: str, kind: str, frameworks: Iterable[str]) -> bool:
    """Kueue manages objects of this kind under a Configuration enabling `frameworks`."""
    framework = framework_of(api_version, kind)
    return framework is not None and framework in set(frameworks)
