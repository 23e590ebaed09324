"""What a tenant's workload meets in a stack's render, for `check-manifest` (offline/check_manifest.py):
the objects the render declares, the config they come from, and the pod specs a workload's pods are made of."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from components.queueing import manager_config
from config import PlatformConfig
from config.dra_devices import device_class_selectors, published_devices
from config.fair_share import TenantPlan
from config.labels import TENANT_GROUP_PREFIX
from models import kubeflow_trainer
from models.kubernetes.user import User
from models.kueue.workload import Tenancy

from .validate import CustomResourceDefinitions

RELEASE = "kubernetes:helm.sh/v3:Release"


@dataclass(frozen=True)
class Finding:
    workload: str  # `FILE: Kind/name`
    aspect: str  # schema, namespace, policies, kueue, quota, capacity
    text: str
    problem: bool = False

    def __str__(self) -> str:
        return f"{self.workload}: {self.aspect}: {self.text}"


@dataclass(frozen=True)
class Cluster:
    """What the stack declares that a tenant's workload meets: the render's objects and the config they come from."""

    config: PlatformConfig
    tenant: TenantPlan
    objects: tuple[Mapping[str, Any], ...]
    crds: CustomResourceDefinitions

    @classmethod
    def of(
        cls, config: PlatformConfig, tenant: str, objects: Iterable[Mapping[str, Any]],
        crds: CustomResourceDefinitions | None = None,
    ) -> Cluster:
        """The cluster a tenant's workloads meet; `crds`: the stack's charts' CRDs, when already read."""
        [plan] = [t for t in config.tenants if t.name == tenant]
        if crds is None:
            charts = ({"chart": pin.chart, "version": pin.version} for pin in config.charts.values())
            crds = CustomResourceDefinitions.installed_by(charts)
        return cls(config, plan, tuple(objects), crds)

    @property
    def namespace(self) -> str:
        return self.tenant.namespace

    def one(self, kind: str, name: str | None = None, namespace: str | None = None) -> Mapping[str, Any] | None:
        found = [
            o for o in self.objects
            if o["kind"] == kind
            and (name is None or o["metadata"]["name"] == name)
            and (namespace is None or o["metadata"].get("namespace") == namespace)
        ]
        return found[0] if found else None

    def namespace_labels(self) -> dict[str, str]:
        namespace = self.one("Namespace", self.namespace)
        return dict((namespace or {}).get("metadata", {}).get("labels") or {})

    def tenant_admin(self) -> User:
        return User(f"{self.tenant.name}-admin", (f"{TENANT_GROUP_PREFIX}{self.tenant.name}:admins",))

    def tenancy(self, own_templates: Sequence[Mapping[str, Any]]) -> Tenancy:
        limit_range = self.one("LimitRange", namespace=self.namespace)
        defaults = {}
        for item in (limit_range or {}).get("spec", {}).get("limits", []):
            if item["type"] == "Container":
                defaults = dict(item.get("defaultRequest") or {})
        templates = {
            o["metadata"]["name"]: o
            for o in (*self.objects, *own_templates)
            if o["kind"] == "ResourceClaimTemplate" and o["metadata"].get("namespace", self.namespace) == self.namespace
        }
        runtimes = {o["metadata"]["name"]: o for o in self.objects if o["kind"] == "ClusterTrainingRuntime"}
        return Tenancy(
            defaults,
            templates,
            manager_config(self.config.flavors, [c.name for c in self.config.gpu.dra.device_classes]),
            runtimes,
            published_devices(self.config.gpu_pools),
            device_class_selectors(self.config.gpu.dra),
        )


def rendered_objects(recording: Any) -> list[dict[str, Any]]:
    """The Kubernetes objects a recording declares (Helm releases aside), as plain dicts."""
    return [
        json.loads(json.dumps(r.inputs)) for r in recording.resources
        if r.custom and r.type.startswith("kubernetes:") and r.type != RELEASE
    ]


def pod_templates(obj: Mapping[str, Any], tenancy: Tenancy) -> list[Mapping[str, Any]]:
    """The pod specs the workload's pods are made from (a TrainJob's through its runtime)."""
    spec = obj.get("spec") or {}
    kind = obj["kind"]
    if kind == "Pod":
        return [spec]
    if kind in ("Job", "Deployment"):
        return [spec["template"]["spec"]]
    if kind == "JobSet":
        return [r["template"]["spec"]["template"]["spec"] for r in spec.get("replicatedJobs", [])]
    runtime = tenancy.runtimes.get((spec.get("runtimeRef") or {}).get("name", ""))
    if runtime is None:
        return []
    pods = []
    for replicated in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        pod = replicated["template"]["spec"]["template"]["spec"]
        pods.append(kubeflow_trainer.trainer_pod(pod, obj) if kubeflow_trainer.is_trainer_step(replicated) else pod)
    return pods

