"""Admission guards in tenant namespaces: ValidatingAdmissionPolicies the API server evaluates itself.

Tenant admins hold the built-in `admin` ClusterRole in their namespace (components/tenants.py). RBAC
cannot subtract from it: `admin` aggregates `edit`, whose rules (system:aggregate-to-edit) include
writing NetworkPolicies, and a custom copy of its rules would lose what CRD owners aggregate into it.
So the limits live here, as CEL the API server evaluates on every request in a namespace carrying the
tenant label, whoever sends it (admissionregistration.k8s.io/v1, GA since Kubernetes 1.30):

- NetworkPolicies are the platform's: only the principals `pulumi up` runs as (and the namespace
  controller emptying a namespace being deleted) create, change or delete one.
- A controller ownerReference is set by controllers only. Kueue's pod webhook leaves a pod ungated when
  its controller ownerReference leads, in the same namespace, to a job of an enabled integration
  (kueue v0.19.2 pkg/controller/jobs/pod/pod_webhook.go `Default` -> jobframework/reconciler.go
  `FindAncestorJobManagedByKueue`: each hop follows `metav1.GetControllerOf`, the owner's kind must be an
  integration or apps/v1 ReplicaSet (integrationmanager.go `isKnownOwner`), the owner must exist with the
  referenced UID, and with `manageJobsWithoutQueueName` any enabled-integration owner counts). A job whose
  ancestor is admitted runs without a Workload of its own (reconciler.go, non-top-level jobs). A pod,
  ReplicaSet or Job "owned" by a tenant's small admitted Job would run outside the quota. The
  controllers that create owned objects here are an allowlist: kube-controller-manager's (models/
  kubernetes/controllers.py) and the service accounts of the platform's controller namespaces that
  serve tenants' objects (config/namespaces.py `TENANT_WORKLOAD_CONTROLLERS`).
- Kueue's scheduling gate is lifted by Kueue only: removing it by hand starts a pod Kueue never admitted.
- Every pod is created carrying that gate, or owned by a Job and created by the Job controller. Kueue's
  pod webhook gates a pod only when no Kueue-managed job is above it or its template carries the
  `pod-suspending-parent` annotation Kueue's Deployment webhook writes; no Kueue webhook sees a
  ReplicaSet, so a Deployment's ReplicaSet edited without the annotation makes ungated pods
  (models/kueue/webhooks.py).
- Jobs (Job, JobSet, TrainJob) start suspended, only Kueue, the trainer and JobSet resume them, and a
  running Job keeps its size: Kueue charges a job when it admits it and releases the charge when it
  suspends it or finds it resized, whatever its pods' grace period still holds.
- Pods take DRA devices through claim templates, which Kueue charges; a named ResourceClaim it skips.
- Pods stop promptly: their grace period (in the spec, a delete or an eviction) is bounded, since a
  stopping pod keeps its GPUs after Kueue has released its quota.
- No `NVIDIA_*` variable in a container's env or envFrom prefix: the NVIDIA container toolkit reads them to choose the
  GPUs a container sees. The nodes' toolkit ignores them from unprivileged containers too (node_pools.py);
  this refuses the ones a pod spec carries, with a message, before a node is involved. An unprefixed
  envFrom of a ConfigMap with NVIDIA_* keys is left to the toolkit: admission of the pod cannot read it.
  On KAI pools the toolkit honours NVIDIA_VISIBLE_DEVICES (KAI hands fractions their GPU through it): there every
  container carries `NVIDIA_VISIBLE_DEVICES=void` but the fraction's, which reads KAI's ConfigMap, and only KAI's
  binder writes those ConfigMaps (`_kai_nvidia_env`, `tenant-kai-sharing-config-maps-are-kais`).
- Image registries written in lower case and without a port: Kyverno's image policies match the
  reference as written, so `GHCR.IO/acme-ai/x` or `ghcr.io:443/acme-ai/x` would escape `ghcr.io/acme-ai/*`.
- Pods name no PriorityClass. kube-scheduler lets a pending pod evict lower-priority pods from a node,
  whoever's they are (models/kubernetes/preemption.py), so a tenant pod naming any class above 0 (KAI's
  chart creates four, none `preemptionPolicy: Never`, models/kai/constants.py `CHART_PRIORITY_CLASSES`)
  evicts other tenants' admitted pods on a shared pool, outside Kueue's quota. Without the
  `kueue.x-k8s.io/priority-class` label Kueue also takes a Workload's priority from its pods' PriorityClass
  (models/kueue/workload.py `workload_priority`). Tenant tiers are WorkloadPriorityClasses, which set a
  Workload's priority and leave the pod at 0. The platform declares no `globalDefault` PriorityClass, which
  the Priority admission plugin would write into every pod. The system classes are also closed by quota
  (components/tenants.py).
- No Service `externalIPs` (CVE-2020-8554: a Service claiming another's address intercepts its traffic).
- ExternalSecrets read only their own namespace's stores and generators: no ClusterSecretStore, no
  ClusterGenerator (external-secrets v2.9.0 resolves either cluster-wide, runtime/esutils/resolvers/
  generator.go `getGenerator`). None exist and ESO's role cannot read them while their processing is off
  (components/secrets.py); this keeps one a later install adds, with a role of its own, out of tenants' reach.
- While the cluster may run kubelets on which KubeletEnsureSecretPulledImages is off by default
  (models/kubernetes/features.py: before 1.35; a cluster runs its own minor's and the one before,
  config/versions.py `oldest_kubelet_minor`), a container whose image is in a private ECR registry is
  pulled with `imagePullPolicy: Always`: the kubelet then asks the registry with the pod's own
  credentials on every start, instead of handing the pod a copy another tenant's pod pulled onto the node.
- Where a pool is scheduled by the KAI Scheduler: `kai.scheduler/queue` names the namespace's own Queue on every
  object, KAI pods stay on KAI pools and pods there are KAI's, and a fraction is one GPU's at most (`_kai`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from config.labels import POOL_LABEL
from config.namespaces import JOB_RESUMERS, KUEUE, TENANT_WORKLOAD_CONTROLLERS
from config.timing import TENANT_POD_MAX_GRACE_SECONDS
from config.versions import oldest_kubelet_minor
from models.aws_ecr import PRIVATE_REGISTRY_HOST
from models.aws_eks import SESSION_NAME, access_entry_username
from models.kai.constants import (
    GPU_FRACTION_ANNOTATION,
    GPU_FRACTION_CONTAINER_ANNOTATION,
    GPU_FRACTION_NUM_DEVICES_ANNOTATION,
    GPU_MEMORY_ANNOTATION,
    SHARING_ANNOTATIONS,
)
from models.kai.constants import QUEUE_LABEL as KAI_QUEUE_LABEL
from models.kai.constants import SCHEDULER_NAME as KAI_SCHEDULER_NAME
from models.kai.sharing import BINDER_NAMESPACE as KAI_BINDER_NAMESPACE
from models.kai.sharing import BINDER_SERVICE_ACCOUNT as KAI_BINDER_SERVICE_ACCOUNT
from models.kai.sharing import CONFIG_MAP_ANNOTATION as KAI_CONFIG_MAP_ANNOTATION
from models.kai.sharing import CONFIG_MAP_NAME_PATTERN as KAI_CONFIG_MAP_NAME_PATTERN
from models.kai.sharing import CONFIG_MAP_PREFIX_END as KAI_CONFIG_MAP_PREFIX_END
from models.kai.sharing import CONFIG_MAP_PREFIX_PATTERN as KAI_CONFIG_MAP_PREFIX_PATTERN
from models.kai.sharing import VISIBLE_DEVICES_ENV as KAI_VISIBLE_DEVICES_ENV
from models.kai.sharing import VOID as KAI_VOID
from models.kubernetes.controllers import (
    GARBAGE_COLLECTOR,
    JOB_CONTROLLER,
    KUBE_CONTROLLER_MANAGER,
    NAMESPACE_CONTROLLER,
    OWNING_CONTROLLERS,
    controller_username,
)
from models.kubernetes.features import KUBELET_ENSURE_SECRET_PULLED_IMAGES, enabled_by_default, first_enabled
from models.kubernetes.user import SERVICE_ACCOUNT_GROUP_PREFIX, SERVICE_ACCOUNT_USERNAME_PREFIX
from models.kueue.constants import ADMISSION_SCHEDULING_GATE as KUEUE_SCHEDULING_GATE
from models.kueue.constants import PRIORITY_CLASS_LABEL as KUEUE_PRIORITY_CLASS_LABEL
from models.kueue.constants import SUSPENDED_BY_PARENT_ANNOTATION
from models.kueue.integrations import INTEGRATIONS
from models.kueue.webhooks import SPEC_SUSPEND_FRAMEWORKS

from .lib.namespaces import every_tenant_namespace
from .lib.resources import Children, declare

API_VERSION = "admissionregistration.k8s.io/v1"
# The environment variable prefix the NVIDIA container toolkit reads (NVIDIA_VISIBLE_DEVICES,
# NVIDIA_MIG_CONFIG_DEVICES, NVIDIA_IMEX_CHANNELS, ...).
NVIDIA_ENV_PREFIX = "NVIDIA_"

# Each guard names the identities it lets through; every other identity, whatever its namespace or
# group, is a tenant. A tenant admin can bind a role to any service account in its namespace, mint
# tokens for its own namespace's service accounts and may be admin of more than one tenant, so no
# "service account of another namespace" test can tell a controller from a tenant.


def _username_in(usernames: Sequence[str]) -> str:
    return f"request.userInfo.username in {_cel_list(usernames)}"


def _in_group(groups: Sequence[str]) -> str:
    return f"request.userInfo.groups.exists(g, g in {_cel_list(groups)})"


def _cel_list(values: Sequence[str]) -> str:
    return "[" + ", ".join(f"'{v}'" for v in values) + "]"


# kube-controller-manager's controllers that create owned objects (either identity form), and the
# service accounts of the platform's controllers that do (config/namespaces.py).
CONTROLLER_REQUEST = (
    _username_in([KUBE_CONTROLLER_MANAGER, *(controller_username(c) for c in OWNING_CONTROLLERS)])
    + " || "
    + _in_group([f"{SERVICE_ACCOUNT_GROUP_PREFIX}{n}" for n in TENANT_WORKLOAD_CONTROLLERS])
)
# Kueue's controller, in its own namespace, removes its gate when it admits the pod's workload.
KUEUE_REQUEST = _in_group([f"{SERVICE_ACCOUNT_GROUP_PREFIX}{KUEUE}"])
# The Job controller (either identity form): the one creator of pods a Job owns.
JOB_CONTROLLER_REQUEST = _username_in([KUBE_CONTROLLER_MANAGER, controller_username(JOB_CONTROLLER)])
# Kueue, the trainer and JobSet (config/namespaces.py JOB_RESUMERS): the ones that resume a suspended job.
RESUMER_REQUEST = _in_group([f"{SERVICE_ACCOUNT_GROUP_PREFIX}{n}" for n in JOB_RESUMERS])
# The kinds Kueue suspends through `spec.suspend`, as admission rules name them (group, plural).
SUSPENDED_JOB_RESOURCES: tuple[tuple[str, str], ...] = tuple(
    (INTEGRATIONS[f].group, f"{INTEGRATIONS[f].kind.lower()}s") for f in SPEC_SUSPEND_FRAMEWORKS
)


def deployer_request(deployers: Sequence[str]) -> str:
    """The platform's own writers of tenant NetworkPolicies: the cluster admins' sessions (the identities
    `pulumi up` runs as), and the namespace controller emptying a tenant namespace being deleted."""
    usernames = {access_entry_username(arn) for arn in deployers}
    sessions = sorted(u.removesuffix(SESSION_NAME) for u in usernames if u.endswith(SESSION_NAME))
    exact = sorted(u for u in usernames if not u.endswith(SESSION_NAME))
    return (
        _username_in([KUBE_CONTROLLER_MANAGER, controller_username(NAMESPACE_CONTROLLER), *exact])
        + f" || {_cel_list(sessions)}.exists(p, request.userInfo.username.startsWith(p))"
    )


_ALL_CONTAINERS = (
    "(has(object.spec.containers) ? object.spec.containers : []) + "
    "(has(object.spec.initContainers) ? object.spec.initContainers : []) + "
    "(has(object.spec.ephemeralContainers) ? object.spec.ephemeralContainers : [])"
)
_CONTROLLER_OWNERS = (
    "has({o}.metadata.ownerReferences) ? {o}.metadata.ownerReferences.filter(r, has(r.controller) && r.controller) : []"
)
_GATES = "has({o}.spec.schedulingGates) ? {o}.spec.schedulingGates.map(g, g.name) : []"
_SUSPENDED = "(has({o}.spec.suspend) && {o}.spec.suspend)"
# A field of a job's spec unchanged by an update, set or unset alike.
_SAME = (
    "(has(object.spec.{f}) == has(oldObject.spec.{f}) && "
    "(!has(object.spec.{f}) || object.spec.{f} == oldObject.spec.{f}))"
)


def _rule(groups: Sequence[str], resources: Sequence[str], operations: Sequence[str]) -> dict[str, Any]:
    return {"apiGroups": list(groups), "apiVersions": ["*"], "resources": list(resources), "operations": list(operations)}


# A variable name `prefix + key` starts with NVIDIA_ when the prefix does, or when the prefix is a
# non-empty start of NVIDIA_ that a ConfigMap or Secret key completes (keys may start with `_`).
_NVIDIA_ENV_FROM = (
    f"c.envFrom.all(f, !has(f.prefix) || !(f.prefix.startsWith('{NVIDIA_ENV_PREFIX}') || "
    f"(size(f.prefix) > 0 && '{NVIDIA_ENV_PREFIX}'.startsWith(f.prefix))))"
)
# An image's first path component is its registry when it has a `.` or `:` or is `localhost` (the
# distribution/reference grammar the container runtimes use). The ImageValidatingPolicy globs of
# components/supply_chain.py (`matchImageReferences`) compare the reference as the pod spec writes it,
# so a registry host in capitals or with its default port names the same registry and escapes the glob.
_CANONICAL_REGISTRY = (
    "!{i}.contains('/') || !{i}.split('/')[0].matches('[.:]|^localhost$') || !{i}.split('/')[0].matches('[:A-Z]')"
)
# admissionregistration/v1 MatchResources: a namespaceSelector never excludes a cluster-scoped request
# (kubernetes v1.35.0 staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/namespace/
# matcher.go `MatchNamespaceSelector`), so a policy whose rules reach cluster-scoped kinds skips them here.
NAMESPACED_ONLY = {"name": "namespaced-requests-only", "expression": "request.namespace != ''"}


def policies(
    deployers: Sequence[str], kubernetes_version: str, kai_pools: Mapping[str, int] | None = None
) -> dict[str, dict[str, Any]]:
    """name -> (what it matches, variables, validations). Each validation's message is what the tenant reads.

    `deployers`: the IAM principals the platform deploys with (ClusterConfig.admins and the creator).
    `kubernetes_version`: the cluster's minor ("1.34"); its oldest kubelet decides whether cached images are re-checked.
    `kai_pools`: the pools KAI schedules, each with its GPUs' memory in MiB; their policies exist only with them.
    """
    return {
        **_platform_owned(deployers),
        **_kueue_holds(),
        **_pod_contents(kai=bool(kai_pools)),
        **_pod_priority(),
        **_cached_private_images(kubernetes_version),
        **_services(),
        **_external_secrets(),
        **(_kai(kai_pools) if kai_pools else {}),
    }


def _platform_owned(deployers: Sequence[str]) -> dict[str, dict[str, Any]]:
    """What only the platform writes in a tenant namespace."""
    return {
        "tenant-network-policies-are-platform-owned": {
            "rules": [_rule(["networking.k8s.io"], ["networkpolicies"], ["CREATE", "UPDATE", "DELETE"])],
            "validations": [
                {
                    "expression": deployer_request(deployers),
                    "message": "NetworkPolicies in tenant namespaces belong to the platform: ask for an allowance "
                    "in the tenant's config (network.ingressFromNamespaces, network.internetEgress)",
                }
            ],
        },
    }


def _kueue_holds() -> dict[str, dict[str, Any]]:
    """Every pod waits for Kueue and stops when Kueue stops its job: owners, gates, suspension, claims, grace."""
    return {
        "tenant-controller-owners-from-controllers": {
            # Every kind: a ReplicaSet or Job owned by a Kueue-managed Job escapes Kueue as a pod would.
            "rules": [_rule(["*"], ["*"], ["CREATE", "UPDATE"])],
            "matchConditions": [NAMESPACED_ONLY],
            "variables": [
                {"name": "owners", "expression": _CONTROLLER_OWNERS.format(o="object")},
                {
                    "name": "previousOwners",
                    "expression": f"oldObject == null ? [] : ({_CONTROLLER_OWNERS.format(o='oldObject')})",
                },
            ],
            "validations": [
                {
                    "expression": f"({CONTROLLER_REQUEST}) || "
                    "variables.owners.all(r, variables.previousOwners.exists(p, p.uid == r.uid))",
                    "message": "only controllers set a controller ownerReference in tenant namespaces; create the "
                    "owning object (Job, Deployment, ...) and let its controller create what it owns",
                }
            ],
        },
        "tenant-pods-keep-the-kueue-gate": {
            "rules": [_rule([""], ["pods"], ["UPDATE"])],
            "validations": [
                {
                    "expression": f"({KUEUE_REQUEST}) || !('{KUEUE_SCHEDULING_GATE}' in ({_GATES.format(o='oldObject')})) "
                    f"|| '{KUEUE_SCHEDULING_GATE}' in ({_GATES.format(o='object')})",
                    "message": f"only Kueue lifts the {KUEUE_SCHEDULING_GATE} scheduling gate, when it admits the pod",
                }
            ],
        },
        "tenant-pods-gated-or-owned-by-a-job": {
            # Kueue's pod webhook leaves ungated a pod whose owners lead to a managed job: right for a Job's
            # pods (the Job stays suspended until Kueue admits it), wrong for a pod a tenant's ReplicaSet makes
            # from a template without the suspending-parent annotation (its Deployment is managed).
            "rules": [_rule([""], ["pods"], ["CREATE"])],
            "variables": [{"name": "owners", "expression": _CONTROLLER_OWNERS.format(o="object")}],
            "validations": [
                {
                    "expression": f"'{KUEUE_SCHEDULING_GATE}' in ({_GATES.format(o='object')}) || (({JOB_CONTROLLER_REQUEST}) "
                    "&& variables.owners.exists(r, r.apiVersion == 'batch/v1' && r.kind == 'Job'))",
                    "message": f"pods in tenant namespaces wait for Kueue: each carries its {KUEUE_SCHEDULING_GATE} "
                    "scheduling gate or belongs to a Job, created by the Job controller. A ReplicaSet or StatefulSet "
                    f"template without the {SUSPENDED_BY_PARENT_ANNOTATION} annotation Kueue's webhooks give a "
                    "Deployment's or StatefulSet's makes pods Kueue never admits: edit the Deployment, not its ReplicaSet",
                }
            ],
        },
        "tenant-jobs-run-as-kueue-admits-them": {
            # Kueue creates every job of a tenant namespace suspended and resumes it when it admits it; a job
            # resumed by anyone else runs its pods until Kueue suspends it again, and a pod's grace period
            # can stretch that stop to days. A running Job resized no longer matches its Workload: the Job
            # controller starts the extra pods at once, and Kueue stops the Job and deletes the Workload, its
            # quota freed while the pods terminate (kueue v0.19.2 jobframework/reconciler.go ensureOneWorkload).
            "rules": [_rule([g], [r], ["CREATE", "UPDATE"]) for g, r in SUSPENDED_JOB_RESOURCES],
            "validations": [
                {
                    "expression": f"({RESUMER_REQUEST}) || {_SUSPENDED.format(o='object')} || "
                    f"(request.operation == 'UPDATE' && !{_SUSPENDED.format(o='oldObject')})",
                    "message": "jobs in tenant namespaces start suspended and only Kueue resumes them, when it "
                    "admits them: leave spec.suspend to Kueue",
                },
                {
                    # Only a Job has these fields; a JobSet or TrainJob never reaches them.
                    "expression": f"request.resource.resource != 'jobs' || request.operation != 'UPDATE' || "
                    f"({RESUMER_REQUEST}) || {_SUSPENDED.format(o='oldObject')} || "
                    f"({_SAME.format(f='parallelism')} && {_SAME.format(f='completions')})",
                    "message": "a running Job in a tenant namespace keeps its parallelism and completions: suspend it "
                    "(spec.suspend: true), resize it, and Kueue admits it again at its new size",
                },
            ],
        },
        "tenant-pods-claims-from-templates": {
            # Kueue charges the devices of a pod's ResourceClaimTemplates to its quota and skips claims a pod
            # names (kueue v0.19.2 pkg/dra/claims.go GetResourceRequestsForResourceClaimTemplates); a workload
            # whose pods name one it leaves inadmissible (models/kueue/workload.py NAMED_CLAIM_REASON). A named
            # claim is the only way pods share one, so no claim is shared between pods, nor between tenants: a
            # pod can name only a claim of its own namespace (core/v1 PodResourceClaim.resourceClaimName).
            "rules": [_rule([""], ["pods"], ["CREATE"])],
            "validations": [
                {
                    "expression": "!has(object.spec.resourceClaims) || "
                    "object.spec.resourceClaims.all(c, !has(c.resourceClaimName))",
                    "message": "pods in tenant namespaces take DRA devices through resourceClaims[].resourceClaimTemplateName, "
                    "which Kueue charges to the tenant's quota; a named ResourceClaim (resourceClaimName) is not charged, "
                    "and Kueue never admits a workload whose pods name one",
                }
            ],
        },
        "tenant-pods-stop-promptly": {
            # A terminating pod is no longer a job's active pod: Kueue frees its quota and the Job
            # controller replaces it while it still runs (config/timing.py TENANT_POD_MAX_GRACE_SECONDS).
            "rules": [
                _rule([""], ["pods"], ["CREATE", "DELETE"]),
                _rule([""], ["pods/eviction"], ["CREATE"]),
            ],
            "validations": [
                {
                    "expression": "request.operation != 'CREATE' || request.subResource != '' || "
                    "!has(object.spec.terminationGracePeriodSeconds) || "
                    f"object.spec.terminationGracePeriodSeconds <= {TENANT_POD_MAX_GRACE_SECONDS}",
                    "message": f"pods in tenant namespaces stop within {TENANT_POD_MAX_GRACE_SECONDS} s "
                    "(terminationGracePeriodSeconds): a stopping pod keeps its GPUs after Kueue has released its quota",
                },
                {
                    "expression": "request.operation != 'DELETE' || !has(request.options) || request.options == null || "
                    "!has(request.options.gracePeriodSeconds) || "
                    f"request.options.gracePeriodSeconds <= {TENANT_POD_MAX_GRACE_SECONDS}",
                    "message": f"a pod in a tenant namespace is deleted with a grace period of at most "
                    f"{TENANT_POD_MAX_GRACE_SECONDS} s",
                },
                {
                    "expression": "request.subResource != 'eviction' || !has(object.deleteOptions) || "
                    "!has(object.deleteOptions.gracePeriodSeconds) || "
                    f"object.deleteOptions.gracePeriodSeconds <= {TENANT_POD_MAX_GRACE_SECONDS}",
                    "message": f"a pod in a tenant namespace is evicted with a grace period of at most "
                    f"{TENANT_POD_MAX_GRACE_SECONDS} s",
                },
            ],
        },
    }


_NO_NVIDIA_ENV_MESSAGE = (
    f"containers in tenant namespaces may not set {NVIDIA_ENV_PREFIX}* variables (env, or an envFrom prefix): request "
    "GPUs as resources (nvidia.com/gpu) and the device plugin gives the container exactly those"
)
# A container `{c}` whose every NVIDIA_* entry is NVIDIA_VISIBLE_DEVICES as `{form}`, with at least one such entry
# (the kubelet takes the last of duplicates, so every one must be of the form).
_ONLY_VISIBLE_DEVICES_AS = (
    f"(has({{c}}.env) && {{c}}.env.exists(e, e.name == '{KAI_VISIBLE_DEVICES_ENV}') && {{c}}.env.all(e, "
    f"!e.name.startsWith('{NVIDIA_ENV_PREFIX}') || (e.name == '{KAI_VISIBLE_DEVICES_ENV}' && {{form}})))"
)
_VOID = f"has(e.value) && e.value == '{KAI_VOID}'"
# KAI's reference: the required key NVIDIA_VISIBLE_DEVICES of the pod's own sharing ConfigMap.
_KAIS_REFERENCE = (
    "has(e.valueFrom) && has(e.valueFrom.configMapKeyRef) && "
    "e.valueFrom.configMapKeyRef.name == variables.sharingConfigMap && "
    f"e.valueFrom.configMapKeyRef.key == '{KAI_VISIBLE_DEVICES_ENV}' && "
    "!(has(e.valueFrom.configMapKeyRef.optional) && e.valueFrom.configMapKeyRef.optional)"
)


def _kai_nvidia_env() -> dict[str, Any]:
    """`tenant-pods-no-nvidia-env` on a stack with KAI pools, whose nodes' toolkit honours NVIDIA_VISIBLE_DEVICES
    from unprivileged containers (components/lib/gpu_nodes.py): pods not scheduled by KAI carry no NVIDIA_*
    variable, as on every stack; in a KAI pod every container sets NVIDIA_VISIBLE_DEVICES to `void`
    (models/nvidia/container_toolkit.py: no GPU from the variable, while a whole GPU still comes through CDI),
    which KAI's deviceaccess plugin writes into containers requesting no GPU (models/kai/sharing.py), except the
    fraction's container (the first: `gpu-fraction-container-name` is refused), which reads it exactly as KAI's
    webhook writes it: from the ConfigMap `<runai/shared-gpu-configmap>-0`, a prefix of KAI's form, which only KAI's
    binder writes (`tenant-kai-sharing-config-maps-are-kais`). No other NVIDIA_* entry, no NVIDIA_* envFrom prefix."""
    reference_form = (
        f"'{KAI_CONFIG_MAP_ANNOTATION}' in variables.annotations && "
        f"variables.annotations['{KAI_CONFIG_MAP_ANNOTATION}'].matches('{KAI_CONFIG_MAP_PREFIX_PATTERN}')"
    )
    first = "object.spec.containers[0]"
    return {
        "rules": [_rule([""], ["pods", "pods/ephemeralcontainers"], ["CREATE", "UPDATE"])],
        "variables": [
            {"name": "containers", "expression": _ALL_CONTAINERS},
            {
                "name": "kai",
                "expression": f"has(object.spec.schedulerName) && object.spec.schedulerName == '{KAI_SCHEDULER_NAME}'",
            },
            {"name": "annotations", "expression": _ANNOTATIONS},
            {
                "name": "fractionContainer",
                "expression": f"(variables.kai && ('{GPU_FRACTION_ANNOTATION}' in variables.annotations || "
                f"'{GPU_MEMORY_ANNOTATION}' in variables.annotations)) ? {first}.name : ''",
            },
            {
                "name": "sharingConfigMap",
                "expression": f"({reference_form}) ? variables.annotations['{KAI_CONFIG_MAP_ANNOTATION}'] + '-0' : ''",
            },
        ],
        "validations": [
            {
                "expression": "variables.containers.all(c, !has(c.envFrom) || " + _NVIDIA_ENV_FROM + ")",
                "message": _NO_NVIDIA_ENV_MESSAGE,
            },
            {
                "expression": "variables.kai || variables.containers.all(c, !has(c.env) || "
                f"c.env.all(e, !e.name.startsWith('{NVIDIA_ENV_PREFIX}')))",
                "message": _NO_NVIDIA_ENV_MESSAGE,
            },
            {
                "expression": "!variables.kai || variables.containers.all(c, c.name == variables.fractionContainer || "
                + _ONLY_VISIBLE_DEVICES_AS.format(c="c", form=_VOID) + ")",
                "message": f"every container of a pod scheduled by {KAI_SCHEDULER_NAME} sets {KAI_VISIBLE_DEVICES_ENV}: "
                f"{KAI_VOID} and no other {NVIDIA_ENV_PREFIX}* variable (KAI writes it into containers requesting no GPU; "
                "write it into a container requesting nvidia.com/gpu, which still gets its GPUs from the device plugin): "
                f"KAI pools' nodes honour the variable, and an image's {KAI_VISIBLE_DEVICES_ENV}=all would show every GPU "
                "of the node",
            },
            {
                "expression": "variables.fractionContainer == '' || (variables.sharingConfigMap != '' && "
                + _ONLY_VISIBLE_DEVICES_AS.format(c=first, form=_KAIS_REFERENCE) + ")",
                "message": f"the fraction's container (the first) reads {KAI_VISIBLE_DEVICES_ENV} only as KAI's webhook "
                f"writes it: from that key of the required ConfigMap <{KAI_CONFIG_MAP_ANNOTATION}>-0, the annotation of "
                f"KAI's form <name>-<7 random>-{KAI_CONFIG_MAP_PREFIX_END}; leave both to KAI",
            },
        ],
    }


def _pod_contents(kai: bool) -> dict[str, dict[str, Any]]:
    """What a pod's containers may carry: no GPU selection by variable (KAI's own form on KAI pods, `kai`: the stack
    has KAI pools), registries as the supply-chain globs read them."""
    return {
        "tenant-pods-no-nvidia-env": _kai_nvidia_env() if kai else {
            "rules": [_rule([""], ["pods", "pods/ephemeralcontainers"], ["CREATE", "UPDATE"])],
            "variables": [{"name": "containers", "expression": _ALL_CONTAINERS}],
            "validations": [
                {
                    "expression": "variables.containers.all(c, (!has(c.env) || "
                    f"c.env.all(e, !e.name.startsWith('{NVIDIA_ENV_PREFIX}'))) && (!has(c.envFrom) || {_NVIDIA_ENV_FROM}))",
                    "message": _NO_NVIDIA_ENV_MESSAGE,
                }
            ],
        },
        "tenant-pods-canonical-image-registries": {
            "rules": [_rule([""], ["pods", "pods/ephemeralcontainers"], ["CREATE", "UPDATE"])],
            "variables": [{"name": "containers", "expression": _ALL_CONTAINERS}],
            "validations": [
                {
                    "expression": f"variables.containers.all(c, {_CANONICAL_REGISTRY.format(i='c.image')})",
                    "message": "container images in tenant namespaces name their registry in lower case and without a "
                    "port (ghcr.io/team/image, not GHCR.IO/team/image or ghcr.io:443/team/image): the supply-chain "
                    "policies match image references as written",
                }
            ],
        },
    }


def _pod_priority() -> dict[str, dict[str, Any]]:
    """A tenant pod runs at priority 0: it names no PriorityClass, whose priority would let it evict other tenants'
    pods from a shared node. Only CREATE: a pod's priorityClassName is immutable."""
    return {
        "tenant-pods-name-no-priority-class": {
            "rules": [_rule([""], ["pods"], ["CREATE"])],
            "validations": [
                {
                    "expression": "!has(object.spec.priorityClassName) || object.spec.priorityClassName == ''",
                    "message": "pods in tenant namespaces name no priorityClassName: a PriorityClass lets a pod evict "
                    f"other tenants' pods from a shared node; set a job's tier with the {KUEUE_PRIORITY_CLASS_LABEL} "
                    "label (the stack's queueing.priorities), which orders it within the tenant's own queue",
                }
            ],
        },
    }


def _cached_private_images(kubernetes_version: str) -> dict[str, dict[str, Any]]:
    """While some node's kubelet may hand any pod a private image already on the node, a private ECR image is
    pulled every time. The cluster's oldest kubelet decides (config/versions.py `oldest_kubelet_minor`): a
    cluster just upgraded to 1.35 still runs 1.34 kubelets until its old nodes are gone."""
    if enabled_by_default(KUBELET_ENSURE_SECRET_PULLED_IMAGES, oldest_kubelet_minor(kubernetes_version)):
        return {}
    return {
        "tenant-pods-pull-private-images-always": {
            # The API server defaults imagePullPolicy (IfNotPresent for a tagged image) before validation,
            # so an unset policy arrives as IfNotPresent; an absent one is refused all the same.
            "rules": [_rule([""], ["pods", "pods/ephemeralcontainers"], ["CREATE", "UPDATE"])],
            "variables": [{"name": "containers", "expression": _ALL_CONTAINERS}],
            "validations": [
                {
                    "expression": f"variables.containers.all(c, {_PULLED_EVERY_TIME})",
                    "message": f"kubelets before {first_enabled(KUBELET_ENSURE_SECRET_PULLED_IMAGES)} give any pod an "
                    "image already on their node, whoever pulled it: containers in tenant namespaces whose image is in a "
                    "private ECR registry set imagePullPolicy: Always, so the registry checks this pod's own credentials",
                }
            ],
        },
    }


# A container `c` whose image is not in a private ECR registry (models/aws_ecr.py; the registry is the image's
# first path component), or is pulled every time.
_PULLED_EVERY_TIME = (
    f"!c.image.contains('/') || !c.image.split('/')[0].matches('{PRIVATE_REGISTRY_HOST}') || "
    "(has(c.imagePullPolicy) && c.imagePullPolicy == 'Always')"
)


def _external_secrets() -> dict[str, dict[str, Any]]:
    """ExternalSecrets read their own namespace's stores and generators, never cluster-wide ones."""
    own_store = "(!has({r}.storeRef) || !has({r}.storeRef.kind) || {r}.storeRef.kind == 'SecretStore')"
    own_generator = "(!has({r}.generatorRef) || {r}.generatorRef.kind != 'ClusterGenerator')"
    source = f"(!has(d.sourceRef) || ({own_store} && {own_generator}))".format(r="d.sourceRef")
    return {
        "tenant-external-secrets-name-their-own-sources": {
            "rules": [_rule(["external-secrets.io"], ["externalsecrets"], ["CREATE", "UPDATE"])],
            "validations": [
                {
                    "expression": "(!has(object.spec.secretStoreRef) || !has(object.spec.secretStoreRef.kind) || "
                    "object.spec.secretStoreRef.kind == 'SecretStore') && "
                    f"(!has(object.spec.data) || object.spec.data.all(d, {source})) && "
                    f"(!has(object.spec.dataFrom) || object.spec.dataFrom.all(d, {source}))",
                    "message": "ExternalSecrets in tenant namespaces read their own namespace's SecretStore and generators: "
                    "a ClusterSecretStore or ClusterGenerator is shared by every namespace and reads as its own role",
                }
            ],
        },
    }


def _services() -> dict[str, dict[str, Any]]:
    return {
        "tenant-services-no-external-ips": {
            "rules": [_rule([""], ["services"], ["CREATE", "UPDATE"])],
            "validations": [
                {
                    "expression": "!has(object.spec.externalIPs) || size(object.spec.externalIPs) == 0",
                    "message": "Services in tenant namespaces may not set externalIPs (CVE-2020-8554)",
                }
            ],
        },
    }



# The sharing annotations as a pod's metadata carries them (none: an empty map).
_ANNOTATIONS = "has(object.metadata.annotations) ? object.metadata.annotations : {}"
# A decimal strictly between 0 and 1 ("0.5", ".25"): the gpu-fraction KAI accepts, written one way.
_FRACTION = r"^0?\.[0-9]*[1-9][0-9]*$"
_HAS_QUEUE_LABEL = f"has(object.metadata.labels) && '{KAI_QUEUE_LABEL}' in object.metadata.labels"
# KAI's binder, the one writer of the sharing ConfigMaps in tenant namespaces.
KAI_BINDER = f"{SERVICE_ACCOUNT_USERNAME_PREFIX}{KAI_BINDER_NAMESPACE}:{KAI_BINDER_SERVICE_ACCOUNT}"
# Who deletes a sharing ConfigMap besides the binder: the garbage collector once its pod is gone, the namespace
# controller emptying a deleted namespace (either identity form).
_OWNERLESS_DELETERS = [KUBE_CONTROLLER_MANAGER, *(controller_username(c) for c in (GARBAGE_COLLECTOR, NAMESPACE_CONTROLLER))]
# A positive whole number of MiB, at most seven digits (KAI's ParseUint takes more; no GPU has that much memory).
_MEBIBYTES = r"^[1-9][0-9]{0,6}$"


def _kai(pools: Mapping[str, int]) -> dict[str, dict[str, Any]]:
    """KAI's queue label and sharing annotations (models/kai): fractions on KAI pools only, within one GPU each,
    charged to the tenant's own Queue.

    KAI's pod grouper charges a workload to the Queue its top owner's `kai.scheduler/queue` label names, else the
    pod's (models/kai/constants.py QUEUE_LABEL), so the label is checked on every object of a tenant namespace, and
    a tenant's Queue is named as its namespace (config/kai.py). A pod on a KAI pool is scheduled by KAI, which alone
    counts fractions (the reservation pods' whole GPUs sit in KAI's namespace, outside every tenant's Kueue quota);
    a KAI pod elsewhere would take a GPU that pool's Kueue quotas do not count.
    """
    names = sorted(pools)
    memory = "{" + ", ".join(f"'{name}': {pools[name]}" for name in names) + "}"
    sharing = _cel_list(SHARING_ANNOTATIONS)
    return {
        "tenant-kai-queue-is-the-namespaces": {
            "rules": [_rule(["*"], ["*"], ["CREATE", "UPDATE"])],
            "matchConditions": [
                NAMESPACED_ONLY,
                {"name": "labels-a-kai-queue", "expression": _HAS_QUEUE_LABEL},
            ],
            "validations": [
                {
                    "expression": f"object.metadata.labels['{KAI_QUEUE_LABEL}'] == request.namespace",
                    "message": f"{KAI_QUEUE_LABEL} in a tenant namespace names the tenant's own KAI Queue, the "
                    "namespace's name: another Queue would charge another tenant's quota",
                }
            ],
        },
        "tenant-kai-sharing-config-maps-are-kais": {
            # The binder sets no label and a non-controller ownerReference, and takes over a ConfigMap it finds
            # (models/kai/sharing.py): a tenant's ConfigMap of the name would hand a fraction any GPU list. Deleting is
            # the binder's on a failed bind, the garbage collector's when the pod goes, the namespace controller's.
            "rules": [_rule([""], ["configmaps"], ["CREATE", "UPDATE", "DELETE"])],
            "matchConditions": [
                {
                    "name": "names-a-kai-sharing-config-map",
                    "expression": "(request.operation == 'DELETE' ? oldObject : object).metadata.name"
                    f".matches('{KAI_CONFIG_MAP_NAME_PATTERN}')",
                }
            ],
            "validations": [
                {
                    "expression": f"request.userInfo.username == '{KAI_BINDER}' || "
                    f"(request.operation == 'DELETE' && {_username_in(_OWNERLESS_DELETERS)})",
                    "message": f"ConfigMaps named <prefix>-<n>[-evar] with a prefix ending -{KAI_CONFIG_MAP_PREFIX_END} are "
                    "KAI's GPU-sharing ConfigMaps, written by its binder only: they tell a fractional pod's container which "
                    "GPU it sees; name yours otherwise",
                }
            ],
        },
        "tenant-pods-kai-fractions-on-kai-pools": {
            "rules": [_rule([""], ["pods"], ["CREATE", "UPDATE"])],
            "variables": [
                {
                    "name": "kai",
                    "expression": f"has(object.spec.schedulerName) && object.spec.schedulerName == '{KAI_SCHEDULER_NAME}'",
                },
                {
                    "name": "pool",
                    "expression": f"has(object.spec.nodeSelector) && '{POOL_LABEL}' in object.spec.nodeSelector ? "
                    f"object.spec.nodeSelector['{POOL_LABEL}'] : ''",
                },
                {"name": "annotations", "expression": _ANNOTATIONS},
            ],
            "validations": [
                {
                    "expression": f"!variables.kai || variables.pool in {_cel_list(names)}",
                    "message": f"pods scheduled by {KAI_SCHEDULER_NAME} select a KAI pool in nodeSelector "
                    f"{POOL_LABEL} ({', '.join(names)}): elsewhere KAI would take GPUs that pool's Kueue quotas do not count",
                },
                {
                    "expression": f"variables.kai || !(variables.pool in {_cel_list(names)})",
                    "message": f"pods on a KAI pool ({', '.join(names)}) set schedulerName: {KAI_SCHEDULER_NAME}: its "
                    "Queues count the pool's GPUs",
                },
                {
                    "expression": f"variables.kai || !{sharing}.exists(a, a in variables.annotations)",
                    "message": f"{', '.join(SHARING_ANNOTATIONS)} are read by {KAI_SCHEDULER_NAME} only: set "
                    f"schedulerName: {KAI_SCHEDULER_NAME} and select a KAI pool, or request nvidia.com/gpu",
                },
                {
                    "expression": f"!variables.kai || ({_HAS_QUEUE_LABEL})",
                    "message": f"pods scheduled by {KAI_SCHEDULER_NAME} carry the label {KAI_QUEUE_LABEL}: <namespace>, "
                    "the tenant's KAI Queue",
                },
                {
                    "expression": f"!('{GPU_FRACTION_ANNOTATION}' in variables.annotations) || "
                    f"variables.annotations['{GPU_FRACTION_ANNOTATION}'].matches('{_FRACTION}')",
                    "message": f"{GPU_FRACTION_ANNOTATION} is a share of one GPU, a decimal above 0 and below 1 such "
                    "as '0.5'; request whole GPUs as nvidia.com/gpu",
                },
                {
                    "expression": f"!('{GPU_MEMORY_ANNOTATION}' in variables.annotations) || "
                    f"(variables.annotations['{GPU_MEMORY_ANNOTATION}'].matches('{_MEBIBYTES}') && "
                    f"variables.pool in {memory} && "
                    f"int(variables.annotations['{GPU_MEMORY_ANNOTATION}']) <= {memory}[variables.pool])",
                    "message": f"{GPU_MEMORY_ANNOTATION} is MiB of one GPU, a whole number above 0 and at most the "
                    f"pool's GPU memory ({', '.join(f'{name}: {pools[name]}' for name in names)})",
                },
                {
                    "expression": f"!('{GPU_FRACTION_CONTAINER_ANNOTATION}' in variables.annotations)",
                    "message": f"{GPU_FRACTION_CONTAINER_ANNOTATION} is not offered: the fraction goes to the pod's "
                    "first container, the one tenant-pods-no-nvidia-env lets read KAI's ConfigMap; put it first",
                },
                {
                    "expression": f"!('{GPU_FRACTION_NUM_DEVICES_ANNOTATION}' in variables.annotations)",
                    "message": f"{GPU_FRACTION_NUM_DEVICES_ANNOTATION} is not offered: a fractional pod shares one GPU; "
                    "request whole GPUs as nvidia.com/gpu",
                },
            ],
        },
    }


def validating_admission_policy(name: str, policy: dict[str, Any]) -> dict[str, Any]:
    """One policy: fails closed (an evaluation error refuses the request), like an RBAC denial."""
    spec: dict[str, Any] = {
        "failurePolicy": "Fail",
        "matchConstraints": {"namespaceSelector": every_tenant_namespace(), "resourceRules": policy["rules"]},
    }
    if policy.get("matchConditions"):
        spec["matchConditions"] = policy["matchConditions"]
    if policy.get("variables"):
        spec["variables"] = policy["variables"]
    spec["validations"] = [dict(v, reason="Forbidden") for v in policy["validations"]]
    return {"apiVersion": API_VERSION, "kind": "ValidatingAdmissionPolicy", "metadata": {"name": name}, "spec": spec}


def validating_admission_policy_binding(name: str) -> dict[str, Any]:
    """The policy's binding: every tenant namespace, by label, so onboarding a tenant changes neither."""
    return {
        "apiVersion": API_VERSION,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {
            "policyName": name,
            "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": every_tenant_namespace()},
        },
    }


def admission_objects(
    deployers: Sequence[str], kubernetes_version: str, kai_pools: Mapping[str, int] | None = None
) -> dict[str, dict[str, Any]]:
    """Logical-name suffix -> manifest: each policy, then its binding."""
    objects = {}
    for name, policy in policies(deployers, kubernetes_version, kai_pools).items():
        objects[f"{name}-policy"] = validating_admission_policy(name, policy)
        objects[f"{name}-binding"] = validating_admission_policy_binding(name)
    return objects


class TenantAdmission(pulumi.ComponentResource):
    """The admission policies of every tenant namespace; each binding waits for its policy."""

    def __init__(
        self,
        name: str,
        *,
        deployers: Sequence[str],
        kubernetes_version: str,
        provider: k8s.Provider,
        kai_pools: Mapping[str, int] | None = None,
        depends_on: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ):
        """`deployers`: the IAM principals `pulumi up` runs as (`ClusterConfig.admins` and the cluster's
        creator), the only ones that may write tenant NetworkPolicies. `kubernetes_version`:
        `ClusterConfig.kubernetes_version`, whose kubelet defaults decide the private-image policy. `kai_pools`:
        `config.kai.kai_gpu_memory_mib`, the KAI pools and their GPUs' memory. `depends_on`: the cluster.
        Tenants' namespaces need not exist: bindings select them by label."""
        super().__init__("gpu-platform:admission:TenantAdmission", name, None, opts)
        children = Children(self, provider, depends_on)
        policies: dict[str, pulumi.Resource] = {}
        for suffix, manifest in admission_objects(deployers, kubernetes_version, kai_pools).items():
            if manifest["kind"] == "ValidatingAdmissionPolicy":
                policies[manifest["metadata"]["name"]] = declare(f"{name}-{suffix}", manifest, children.opts())
            else:
                policy = policies[manifest["spec"]["policyName"]]
                declare(f"{name}-{suffix}", manifest, children.opts(policy))
        self.register_outputs({"policies": sorted(policies)})
