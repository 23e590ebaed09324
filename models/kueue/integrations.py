"""Kueue's job integrations: each framework name and the kind it queues (kubernetes-sigs/kueue v0.19.2
pkg/controller/jobs/<integration>/*_controller.go, `FrameworkName` and the GVK it registers with
jobframework.RegisterIntegration). A kind is queued only when its framework is listed in the
Configuration's `integrations.frameworks`."""

from __future__ import annotations

from collections.abc import Iterable

# framework name -> (API group, kind)
INTEGRATIONS: dict[str, tuple[str, str]] = {
    "batch/job": ("batch", "Job"),
    "pod": ("", "Pod"),
    "deployment": ("apps", "Deployment"),
    "statefulset": ("apps", "StatefulSet"),
    "jobset.x-k8s.io/jobset": ("jobset.x-k8s.io", "JobSet"),
    "trainer.kubeflow.org/trainjob": ("trainer.kubeflow.org", "TrainJob"),
    "kubeflow.org/mpijob": ("kubeflow.org", "MPIJob"),
    "kubeflow.org/pytorchjob": ("kubeflow.org", "PyTorchJob"),
    "kubeflow.org/tfjob": ("kubeflow.org", "TFJob"),
    "kubeflow.org/xgboostjob": ("kubeflow.org", "XGBoostJob"),
    "kubeflow.org/paddlejob": ("kubeflow.org", "PaddleJob"),
    "kubeflow.org/jaxjob": ("kubeflow.org", "JAXJob"),
    "ray.io/rayjob": ("ray.io", "RayJob"),
    "ray.io/raycluster": ("ray.io", "RayCluster"),
    "ray.io/rayservice": ("ray.io", "RayService"),
    "workload.codeflare.dev/appwrapper": ("workload.codeflare.dev", "AppWrapper"),
    "leaderworkerset.x-k8s.io/leaderworkerset": ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"),
    "sparkoperator.k8s.io/sparkapplication": ("sparkoperator.k8s.io", "SparkApplication"),
}


def framework_of(api_version: str, kind: str) -> str | None:
    """The framework that queues objects of this apiVersion and kind, or None when no integration does."""
    group = api_version.rpartition("/")[0]
    for framework, (framework_group, framework_kind) in INTEGRATIONS.items():
        if (framework_group, framework_kind) == (group, kind):
            return framework
    return None


def is_queued(api_version: str, kind: str, frameworks: Iterable[str]) -> bool:
    """Kueue manages objects of this kind under a Configuration enabling `frameworks`."""
    framework = framework_of(api_version, kind)
    return framework is not None and framework in set(frameworks)
