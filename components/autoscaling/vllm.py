"""The vLLM model server the platform runs for an inference deployment that sets `serving`.

Deployment, Service and PodDisruptionBudget in the tenant's namespace; KEDA (the package's `__init__.py`)
scales the Deployment, and the tenant's serving PodMonitor (declared there) scrapes its pods, which
follow the SERVING_METRICS_LABEL convention of config/labels.py. Against vLLM's OpenAI-compatible
server: `/health` answers once the engine is up, `/metrics` exports `vllm:num_requests_waiting` (the
queue-depth trigger's metric).
"""

from __future__ import annotations

import copy
from typing import Any

from config.autoscaling import (
    MODEL_READER_SERVICE_ACCOUNT,
    SERVER_PROBE_PERIOD_SECONDS,
    SERVER_STARTUP_PROBE_FAILURES,
    InferenceDeploymentConfig,
    ModelStoreConfig,
    s3_model_location,
)
from config.fair_share import FlavorPlan, TenantPlan
from config.labels import (
    APP_NAME_LABEL,
    EPHEMERAL_STORAGE,
    GPU_RESOURCE,
    LOCAL_QUEUE,
    SERVING_METRICS_LABEL,
    SERVING_METRICS_PORT,
)
from config.secrets import HF_TOKEN_ENV, hf_token_secret_name
from config.tenants import SERVER_SCRATCH_GIB
from models.aws_ecr import in_private_registry
from models.kueue.constants import PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL

from ..lib.placement import gpu_toleration

SERVER_CONTAINER = "vllm"
HTTP_PORT_NAME = SERVING_METRICS_PORT  # vLLM serves the API and /metrics on one port
HEALTH_PATH = "/health"  # vLLM's OpenAI server answers 200 once the engine is up
# A spot instance gets a two-minute warning, on which Karpenter cordons and drains the node. The pod
# keeps serving in-flight requests for PRESTOP_DRAIN_SECONDS after it is taken out of the Service's
# endpoints, then vLLM gets SIGTERM; drain plus shutdown fit inside the warning.
PRESTOP_DRAIN_SECONDS = 90
# Longer than the whole warning (120 s + 30 s margin) so the kubelet never SIGKILLs a draining server
# first; on on-demand nodes (consolidation, rollouts) it bounds drain + shutdown the same way.
TERMINATION_GRACE_SECONDS = 150
# vLLM's load format for the Run:ai model streamer, which takes an `s3://` model (vLLM docs/models/extensions/
# runai_model_streamer.md: `vllm serve s3://<bucket>/<path> --load-format runai_streamer`).
RUNAI_STREAMER = "runai_streamer"
CACHE_DIR = "/cache"  # HOME and the Hugging Face cache: the image's /root is not writable as non-root

# `pulumi up` does not wait for the server to serve. A replica becomes ready only after Kueue admits
# it, Karpenter launches a (spot) GPU node, the GPU Operator readies the node, the image is pulled and
# the model downloaded (the startup probe alone allows 15 minutes); spot capacity can take hours. By
# default pulumi-kubernetes waits 10 minutes for a Deployment to become Available and for a Service
# with a selector to have ready endpoints (provider/pkg/await/deployment.go
# DefaultDeploymentTimeoutMins, await/service.go shouldWaitForPods, v4.32.0), then fails the update.
# With the annotation (metadata/annotations.go AnnotationSkipAwait) both are applied and left to the
# controllers. A server that never becomes ready shows as a Kueue workload left pending, or as its
# ScaledObject's triggers reading no data (alert KedaTriggerWithoutData): with no replica running its
# queries find no series. For a
# Deployment it also skips the wait on delete (metadata/overrides.go allowsSkipAwaitWithDelete): the
# NodePools it depends on are deleted after it and drain whatever is still terminating.
SKIP_AWAIT = {"pulumi.com/skipAwait": "true"}
# checkov checks the model server fails on purpose, with the reason, as the `checkov.io/skip<n>:
# <check>=<reason>` annotations checkov reads from the object it scans: the acceptance stays with this
# Deployment instead of covering every resource of the render (.checkov.yaml).
CHECKOV_ACCEPTED = {
    # CPU limits only throttle (CFS quota), and a throttled tokenizer starves its GPU; the namespace's
    # ResourceQuota bounds CPU requests instead.
    "CKV_K8S_11": "no CPU limit: CFS throttling starves the GPU; the quota bounds CPU requests",
    # vLLM and torch write compile and kernel caches under /tmp and the home directory at start-up.
    "CKV_K8S_22": "vLLM and torch write caches under /tmp and HOME at start-up",
    # The UID is the tenant's config (serving.runAsUser, default 1000, the image's user); Pod Security
    # keeps it non-root.
    "CKV_K8S_40": "UID from serving.runAsUser (the image's own user); Pod Security keeps it non-root",
}
# Only with a model-hub token: huggingface_hub reads HF_TOKEN (a file, HF_TOKEN_PATH, would retire it).
CHECKOV_ACCEPTED_WITH_TOKEN = {"CKV_K8S_35": "huggingface_hub reads the model-hub token from HF_TOKEN"}


def checkov_skips(with_token: bool) -> dict[str, str]:
    accepted = {**CHECKOV_ACCEPTED, **(CHECKOV_ACCEPTED_WITH_TOKEN if with_token else {})}
    return {f"checkov.io/skip{n}": f"{check}={reason}" for n, (check, reason) in enumerate(accepted.items(), start=1)}


def server_manifests(
    tenant: TenantPlan, deployment: InferenceDeploymentConfig, model_store: ModelStoreConfig | None = None
) -> dict[str, dict[str, Any]]:
    """Logical-name suffix -> manifest: the server's objects, in apply order."""
    flavor = tenant_flavor(tenant, deployment.flavor)
    return {
        "server": server_deployment(tenant, deployment, flavor, model_store),
        "service": server_service(tenant, deployment),
        "pdb": server_disruption_budget(tenant, deployment),
    }


def tenant_flavor(tenant: TenantPlan, flavor_name: str) -> FlavorPlan:
    """The flavor a deployment runs on; config checked it is one of the tenant's quotas."""
    return next(quota.flavor for quota in tenant.quotas if quota.flavor.name == flavor_name)


def server_deployment(
    tenant: TenantPlan, deployment: InferenceDeploymentConfig, flavor: FlavorPlan, model_store: ModelStoreConfig | None = None
) -> dict[str, Any]:
    """The vLLM Deployment. No `replicas`: KEDA's HPA owns the scale subresource, and a declared count
    would be re-applied by every `pulumi up`, fighting it (server-side apply leaves unowned fields alone)."""
    serving = deployment.serving
    assert serving is not None
    gpus = deployment.gpus_per_replica
    cpu, memory = server_cpu_memory(flavor, gpus)
    from_s3 = s3_model_location(serving.model_source) is not None
    args = ["--model", serving.model_source if from_s3 else serving.model, "--port", str(serving.port)]
    if from_s3:
        # vLLM v0.11.0 streams safetensors from an s3:// model with the Run:ai model streamer; clients keep
        # calling the model by its name.
        args += ["--load-format", RUNAI_STREAMER, "--served-model-name", serving.model]
    if serving.revision is not None:
        args += ["--revision", serving.revision]  # the Hub commit, branch or tag the weights come from
    if gpus > 1:
        args += ["--tensor-parallel-size", str(gpus)]  # otherwise vLLM uses one of the GPUs it holds
    pod_security: dict[str, Any] = {"seccompProfile": {"type": "RuntimeDefault"}}
    pod_security.update(
        runAsNonRoot=True, runAsUser=serving.run_as_user, runAsGroup=serving.run_as_user, fsGroup=serving.run_as_user
    )
    # The model cache is bounded, and requested as ephemeral storage, so the scheduler places the replica on a
    # node with room and the kubelet evicts this pod, never its neighbours, when the download outgrows it.
    cache = f"{serving.cache_gib}Gi"
    volumes: list[tuple[str, dict[str, Any]]] = [(CACHE_DIR, {"name": "cache", "emptyDir": {"sizeLimit": cache}})]
    if gpus > 1:
        # Tensor-parallel workers exchange tensors through /dev/shm (64 MiB by default); it counts as memory.
        volumes.append(("/dev/shm", {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": f"{2 * gpus}Gi"}}))
    env: list[dict[str, Any]] = [{"name": "HOME", "value": CACHE_DIR}, {"name": "HF_HOME", "value": f"{CACHE_DIR}/huggingface"}]
    if serving.hf_token_secret is not None:
        # huggingface_hub reads the Hub token from HF_TOKEN; the Secret is External Secrets Operator's copy.
        secret = {"name": hf_token_secret_name(deployment.name), "key": HF_TOKEN_ENV}
        env.append({"name": HF_TOKEN_ENV, "valueFrom": {"secretKeyRef": secret}})
    if from_s3:
        assert model_store is not None  # config refuses an s3 source without a model store
        # The streamer's S3 client (AWS SDK) takes the bucket's region from the environment; its credentials
        # come from the service account's Pod Identity association (the SDK's container credentials provider).
        env.append({"name": "AWS_REGION", "value": model_store.region})
    probe = {"httpGet": {"path": HEALTH_PATH, "port": HTTP_PORT_NAME}, "periodSeconds": SERVER_PROBE_PERIOD_SECONDS}
    labels = deployment_labels(deployment)
    # Kueue admits each replica as its own workload, at the priority of the WorkloadPriorityClass this label
    # names (the Deployment webhook copies it to the pod template; kubernetes-sigs/kueue v0.19.2
    # pkg/controller/jobs/deployment/deployment_webhook.go). Without it a replica gets priority 0
    # (pkg/util/priority, DefaultPriority; WorkloadPriorityClassDefaulting is alpha and off), so any job of the
    # tenant's tier preempts it under withinClusterQueue: LowerPriority. At the tenant's tier, work of that
    # tier and lower cannot preempt it (LowerPriority needs a strictly higher priority), and a surge
    # replica can preempt only lower tiers.
    queued = {QUEUE_NAME_LABEL: LOCAL_QUEUE, PRIORITY_CLASS_LABEL: tenant.config.priority}
    # Deep-copied: the manifest shares no dict between its fields (or with module-level constants).
    return copy.deepcopy({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": deployment.name,
            "namespace": tenant.namespace,
            # Kueue's deployment integration admits the pods against the tenant's quota.
            "labels": {**labels, **queued},
            "annotations": {**SKIP_AWAIT, **checkov_skips(serving.hf_token_secret is not None)},
        },
        "spec": {
            "selector": {"matchLabels": labels},
            # Add the new replica before removing an old one: a rollout never lowers serving capacity
            # (at maxReplicas the surge pod waits for quota, which stalls the rollout instead).
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
            "template": {
                # The serving label: the tenant's serving PodMonitor scrapes the pod.
                "metadata": {"labels": {**labels, **queued, SERVING_METRICS_LABEL: "true"}},
                "spec": {
                    "automountServiceAccountToken": False,
                    # EKS Pod Identity projects its own token (audience pods.eks.amazonaws.com) for a service
                    # account with an association; the API token stays unmounted.
                    **({"serviceAccountName": MODEL_READER_SERVICE_ACCOUNT} if from_s3 else {}),
                    "nodeSelector": dict(flavor.node_labels),
                    "tolerations": [gpu_toleration()],
                    # Spread over zones so topology-aware routing has a local replica in each.
                    "topologySpreadConstraints": [
                        {
                            "maxSkew": 1,
                            "topologyKey": "topology.kubernetes.io/zone",
                            "whenUnsatisfiable": "ScheduleAnyway",
                            "labelSelector": {"matchLabels": labels},
                        }
                    ],
                    "terminationGracePeriodSeconds": TERMINATION_GRACE_SECONDS,
                    "securityContext": pod_security,
                    "containers": [
                        {
                            "name": SERVER_CONTAINER,
                            "image": serving.image,
                            **_pull_policy(serving.image),
                            "args": args,
                            "ports": [{"name": HTTP_PORT_NAME, "containerPort": serving.port, "protocol": "TCP"}],
                            "env": env,
                            "resources": {
                                "requests": {"cpu": cpu, "memory": memory, EPHEMERAL_STORAGE: cache, GPU_RESOURCE: str(gpus)},
                                "limits": {
                                    "memory": memory,
                                    EPHEMERAL_STORAGE: f"{serving.cache_gib + SERVER_SCRATCH_GIB}Gi",
                                    GPU_RESOURCE: str(gpus),
                                },
                            },
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "capabilities": {"drop": ["ALL"]},
                            },
                            # Model download and load can take minutes: liveness waits for the startup probe.
                            "startupProbe": {**probe, "failureThreshold": SERVER_STARTUP_PROBE_FAILURES},
                            "readinessProbe": {**probe, "failureThreshold": 3},
                            "livenessProbe": {**probe, "failureThreshold": 6, "timeoutSeconds": 5},
                            # Keep serving in-flight requests while the endpoint removal propagates.
                            "lifecycle": {"preStop": {"sleep": {"seconds": PRESTOP_DRAIN_SECONDS}}},
                            "volumeMounts": [{"name": volume["name"], "mountPath": path} for path, volume in volumes],
                        }
                    ],
                    "volumes": [volume for _, volume in volumes],
                },
            },
        },
    })


def server_cpu_memory(flavor: FlavorPlan, gpus: int) -> tuple[str, str]:
    """cpu and memory quantities for a replica of `gpus` flavor units (`FlavorPlan.server_*_per_unit`)."""
    cpu = flavor.server_cpu_millis_per_unit * gpus
    memory = flavor.server_memory_mib_per_unit * gpus
    return (str(cpu // 1000) if cpu % 1000 == 0 else f"{cpu}m"), (f"{memory // 1024}Gi" if memory % 1024 == 0 else f"{memory}Mi")


def server_service(tenant: TenantPlan, deployment: InferenceDeploymentConfig) -> dict[str, Any]:
    """ClusterIP Service; `PreferClose` keeps requests in the caller's zone when it has a ready replica."""
    serving = deployment.serving
    assert serving is not None
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": deployment.name,
            "namespace": tenant.namespace,
            "labels": deployment_labels(deployment),
            "annotations": dict(SKIP_AWAIT),  # its endpoints are the server's ready pods
        },
        "spec": {
            "type": "ClusterIP",
            "selector": deployment_labels(deployment),
            "ports": [{"name": HTTP_PORT_NAME, "port": serving.port, "targetPort": HTTP_PORT_NAME, "protocol": "TCP"}],
            "trafficDistribution": "PreferClose",
        },
    }


def server_disruption_budget(tenant: TenantPlan, deployment: InferenceDeploymentConfig) -> dict[str, Any]:
    """One replica at a time may be evicted.

    Not `minAvailable: minReplicas`: at minReplicas (most of the day for most services) that budget
    allows no eviction, so Karpenter could never consolidate or expire the node. `maxUnavailable: 1`
    lets drains progress at any scale, one replica at a time.
    Unhealthy pods may always be evicted, so a crash-looping replica never blocks a drain.
    """
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": deployment.name, "namespace": tenant.namespace, "labels": deployment_labels(deployment)},
        "spec": {
            "maxUnavailable": 1,
            "selector": {"matchLabels": deployment_labels(deployment)},
            "unhealthyPodEvictionPolicy": "AlwaysAllow",
        },
    }


def deployment_labels(deployment: InferenceDeploymentConfig) -> dict[str, str]:
    """Labels of everything declared for one inference deployment; the Service and PodDisruptionBudget
    select the server's pods by them."""
    return {APP_NAME_LABEL: deployment.name, "app.kubernetes.io/managed-by": "gpu-platform"}


def _pull_policy(image: str) -> dict[str, str]:
    """A private ECR image is pulled on every start: on Kubernetes before 1.35 the admission policy
    `tenant-pods-pull-private-images-always` (components/admission.py) refuses its pods otherwise, and from
    1.35 the kubelet asks for credentials anyway. Any other image keeps the API server's default."""
    return {"imagePullPolicy": "Always"} if in_private_registry(image) else {}
