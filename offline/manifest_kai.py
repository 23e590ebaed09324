"""check-manifest's `kai` findings: what the KAI Scheduler does with a workload on a pool it schedules.

For a Pod, a Job or a Deployment whose pods name `schedulerName: kai-scheduler` or carry KAI's sharing
annotations: whether KAI's own admission accepts the request (models/kai/queues.py `gpu_request_error`), what it
counts against the tenant's KAI Queue (`gpu_share` per pod, times the pods the workload runs at once) beside the
Queue's deserved quota and limit (config/kai.py), and, for a fraction, whether the platform's guards admit the pod
as KAI's webhook hands it on (models/kai/sharing.py `mutated`: NVIDIA_VISIBLE_DEVICES from a ConfigMap).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from config.kai import tenant_queue
from models.kai.constants import GPU_FRACTION_ANNOTATION, GPU_MEMORY_ANNOTATION, SCHEDULER_NAME, SHARING_ANNOTATIONS
from models.kai.queues import gpu_request_error, gpu_share
from models.kai.sharing import mutated
from models.kubernetes.admission import Request, admission_denials

from .manifest_cluster import Cluster, Finding

# A sharing ConfigMap prefix as KAI's webhook writes one (`<name>-<7 random>-shared-gpu`); the guards read any alike.
_PREFIX_FOR_CHECK = "check-manifest-x7k2p9q-shared-gpu"


def as_kais_webhook_hands_it_on(pod: Mapping[str, Any]) -> dict[str, Any]:
    """A pod naming KAI's scheduler as KAI's mutating webhook hands it on to validation (models/kai/sharing.py
    `mutated`: the fraction's variables, NVIDIA_VISIBLE_DEVICES=void in containers requesting no GPU); any other
    pod unchanged (KAI's webhook matches its scheduler's pods only)."""
    if (pod.get("spec") or {}).get("schedulerName") != SCHEDULER_NAME:
        return dict(pod)
    return mutated(dict(pod), _PREFIX_FOR_CHECK)


def _pod_metadata_and_spec(obj: Mapping[str, Any]) -> tuple[Mapping[str, Any], Mapping[str, Any], int] | None:
    """The pods' metadata, spec and how many run at once, for the kinds read here."""
    spec = obj.get("spec") or {}
    if obj["kind"] == "Pod":
        return obj.get("metadata") or {}, spec, 1
    if obj["kind"] == "Job":
        return (spec.get("template") or {}).get("metadata") or {}, spec["template"]["spec"], int(spec.get("parallelism", 1))
    if obj["kind"] == "Deployment":
        return (spec.get("template") or {}).get("metadata") or {}, spec["template"]["spec"], int(spec.get("replicas", 1))
    return None


def _whole_gpus(pod: Mapping[str, Any]) -> int:
    containers = [*pod.get("containers", []), *pod.get("initContainers", [])]
    return max((int(c.get("resources", {}).get("limits", {}).get("nvidia.com/gpu", 0)) for c in containers), default=0)


def kai_findings(cluster: Cluster, where: str, obj: Mapping[str, Any]) -> list[Finding]:
    found = _pod_metadata_and_spec(obj)
    if found is None:
        return []
    metadata, pod, replicas = found
    annotations = dict(metadata.get("annotations") or {})
    sharing = {key: value for key, value in annotations.items() if key in SHARING_ANNOTATIONS}
    if pod.get("schedulerName") != SCHEDULER_NAME and not sharing:
        return []
    whole = _whole_gpus(pod)
    refused = gpu_request_error(sharing, whole > 0)
    if refused is not None:
        return [Finding(where, "kai", f"KAI's admission refuses it: {refused}", True)]
    queue = next((q for q in cluster.config.kai_queues if q.name == tenant_queue(cluster.tenant)), None)
    if queue is None:
        return [Finding(where, "kai", f"tenant {cluster.tenant.name} has no KAI Queue (no quota on a KAI pool): KAI never "
                        "schedules it", True)]
    memory = {q.flavor.pool.name: q.flavor.pool.gpu.memory_gib * 1024 for q in cluster.tenant.quotas}
    pool = (pod.get("nodeSelector") or {}).get("gpu-platform/node-pool", "")
    if GPU_MEMORY_ANNOTATION in sharing and pool not in memory:
        return [Finding(where, "kai", "gpu-memory is counted against the GPU it lands on: select a KAI pool", True)]
    share = gpu_share(sharing, whole, memory.get(pool))
    total = share * replicas
    findings = [
        Finding(
            where, "kai",
            f"KAI counts {replicas} x {share:g} = {total:g} GPUs against Queue {queue.name} (deserved {queue.gpu_quota}, "
            f"limit {queue.gpu_limit})" + ("" if total <= queue.gpu_limit else ": more than its limit, never all at once"),
            total > queue.gpu_limit,
        )
    ]
    if GPU_FRACTION_ANNOTATION in sharing or GPU_MEMORY_ANNOTATION in sharing:
        # The refusals KAI's mutation brings: those of the pod as KAI hands it on that the pod as written does not
        # meet (the policies findings judge the pod as written, its owners and gates included).
        written = {"apiVersion": "v1", "kind": "Pod", "metadata": {**metadata, "namespace": cluster.namespace}, "spec": dict(pod)}
        labels = cluster.namespace_labels()

        def refusals(candidate: Mapping[str, Any]) -> list[str]:
            request = Request("CREATE", "", "pods", cluster.namespace, cluster.tenant_admin(), candidate, None, labels)
            return admission_denials(cluster.objects, request)

        before = set(refusals(written))
        for denial in dict.fromkeys(refusals(mutated(written, _PREFIX_FOR_CHECK))):
            if denial not in before:
                findings.append(Finding(where, "kai", f"as KAI's webhook hands the pod on, an admission guard refuses it: "
                                        f"{denial} (docs/fractional-gpus.md)", True))
    return findings
