"""Pools scheduled by the KAI Scheduler: its queue rules, the Queues derived from tenants, the guards, one pod's chain.

The render is tests/fixtures/kai/kai-fractional.yaml (multi-pool's cluster and attack-table tenants, a whole-GPU L40S
pool and `gpu-l4-kai`, eight L4s scheduled by KAI, data-science's alone), rendered once for this module and the
attack table (tests/test_attacks.py `kai_recording`), which holds the attempts against KAI's guards. It lives
outside tests/fixtures/stacks/ so the tests that render every fixture stack do not render it too.
"""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from config.kai import ROOT_QUEUE, plan_kai_queues
from config.labels import POOL_LABEL
from models.kai import queues as kai
from models.kai.constants import CHART_PRIORITY_CLASSES, RESERVATION_NAMESPACE, SCALING_POD_NAMESPACE
from models.kai.queues import Queue, ResourceQuota
from models.kai.sharing import device_holder_namespace, generated_prefix, mutated
from models.kubernetes.admission import Request, admission_denials
from models.kubernetes.user import service_account
from models.kueue.flavorassigner import best_case_admission
from models.kueue.workload import Tenancy, pod_sets
from models.nvidia import container_toolkit as toolkit
from models.nvidia import dcgm_exporter as dcgm
from models.nvidia import device_plugin
from offline.check_manifest import Cluster, check
from offline.helm_values import release_problems
from offline.manifest_kai import kai_findings
from offline.summary import render_summary
from offline.validate import CustomResourceDefinitions

from .conftest import load, problems_of
from .recorded import kubernetes_objects, releases
from .test_attacks import IDENTITIES, KAI_FIXTURE, TENANT, kai_recording
from .test_attacks import kai_pod as pod

FIXTURE = KAI_FIXTURE
KAI_POOL, OTHER_POOL = "gpu-l4-kai", "gpu-l40s"
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
P = "gpu-platform:nodePools"
QUEUE_TYPE = "kubernetes:scheduling.run.ai/v2:Queue"


def document() -> dict[str, Any]:
    return copy.deepcopy(_document())


@functools.cache
def _document() -> dict[str, Any]:
    return yaml.safe_load(FIXTURE.read_text())["config"]


@functools.cache
def _rendered() -> tuple[str, str, tuple[str, ...], str, str]:
    """The KAI release, the Kueue release and every Kubernetes object, as JSON (tests get fresh copies), and the summary."""
    recording = kai_recording()
    found = releases(recording)
    manifests = tuple(json.dumps(r.inputs) for r in kubernetes_objects(recording))
    summary = render_summary(recording, load(document()))
    # Each Queue's name -> the names of the Queues it waits for (its URN dependencies of the Queue type).
    queue_urns = {r.urn: r.inputs["metadata"]["name"] for r in recording.resources if r.type == QUEUE_TYPE}
    waits = {
        queue_urns[r.urn]: sorted(queue_urns[d] for d in r.dependencies if d in queue_urns)
        for r in recording.resources if r.type == QUEUE_TYPE
    }
    return (
        json.dumps(found["kai-scheduler"].inputs), json.dumps(found["kueue"].inputs), manifests, summary, json.dumps(waits)
    )


@functools.cache
def _objects() -> tuple[dict[str, Any], ...]:
    return tuple(json.loads(text) for text in _rendered()[2])


def objects() -> list[dict[str, Any]]:
    """The rendered objects; a new list of the same (read-only) objects: tests drop or add objects, never edit one."""
    return list(_objects())


def of_kind(kind: str) -> list[dict[str, Any]]:
    return [o for o in objects() if o["kind"] == kind]


# --- models/kai/queues.py: KAI's rules, each case against a hand-worked answer -------------------------------

def _gpu(quota: float, limit: float, weight: float = 1) -> dict[str, ResourceQuota]:
    return {"gpu": ResourceQuota(quota, limit, weight)}


TREE = {
    "root": Queue("root", None, _gpu(8, 8)),
    "a": Queue("a", "root", _gpu(6, 6)),
    "b": Queue("b", "root", _gpu(0, -1)),
    # cpu left out: read as quota 0 and limit 0 (proportion.go takes the spec's numbers as written).
    "c": Queue("c", "root", {"gpu": ResourceQuota(2, 4)}),
}


@pytest.mark.parametrize(
    "queue, allocated, requested, refused_at",
    [
        ("a", {"a": {"gpu": 5.5}, "root": {"gpu": 5.5}}, {"gpu": 0.5}, None),  # exactly at a's limit
        ("a", {"a": {"gpu": 5.75}, "root": {"gpu": 5.75}}, {"gpu": 0.5}, "a/gpu"),
        ("b", {"b": {"gpu": 3}, "root": {"gpu": 7.75}}, {"gpu": 0.25}, None),  # b unlimited, root at 8
        ("b", {"b": {"gpu": 3}, "root": {"gpu": 7.75}}, {"gpu": 0.5}, "root/gpu"),  # the parent's limit holds
        ("c", {}, {"gpu": 0.5, "cpu": 1}, "c/cpu"),  # a resource left out is a limit of 0
        ("c", {}, {"gpu": 0.5}, None),  # nothing requested of it: no check
    ],
)
def test_a_limit_holds_for_the_queue_and_every_queue_above_it(queue, allocated, requested, refused_at):
    assert kai.over_limit(TREE, queue, allocated, requested) == refused_at


def test_only_non_preemptible_jobs_are_held_to_the_deserved_quota():
    allocated = {"a": {"gpu": 5.0}, "root": {"gpu": 5.0}}
    non_preemptible = {"a": {"gpu": 5.75}, "root": {"gpu": 5.75}}
    assert kai.non_preemptible_over_quota(TREE, "a", non_preemptible, {"gpu": 0.5}) == "a/gpu"
    assert kai.non_preemptible_over_quota(TREE, "a", non_preemptible, {"gpu": 0.25}) is None
    assert not kai.allocatable(TREE, "a", {"gpu": 0.5}, allocated, non_preemptible, preemptible=False)
    assert kai.allocatable(TREE, "a", {"gpu": 0.5}, allocated, non_preemptible, preemptible=True)
    assert not kai.allocatable(TREE, "missing", {"gpu": 0.5}, {}, {}, preemptible=True)


@pytest.mark.parametrize(
    "annotations, whole, memory, share",
    [
        ({"gpu-fraction": "0.5"}, 0, None, 0.5),
        ({"gpu-fraction": "0.125"}, 0, None, 0.13),  # hundredths, halves away from zero (Go math.Round)
        ({"gpu-fraction": "0.25", "gpu-fraction-num-devices": "3"}, 0, None, 0.75),
        ({"gpu-memory": "6144"}, 0, 24576, 0.25),
        ({}, 2, None, 2.0),
    ],
)
def test_what_a_request_counts_in_its_queue(annotations, whole, memory, share):
    assert kai.gpu_share(annotations, whole, memory) == pytest.approx(share)


@pytest.mark.parametrize(
    "annotations, whole, refused",
    [
        ({"gpu-fraction": "0.5"}, False, None),
        ({"gpu-fraction": "5e-1"}, False, None),
        ({"gpu-fraction": "1"}, False, "gpu-fraction annotation value must be a positive number smaller than 1.0"),
        ({"gpu-fraction": "1.5"}, False, "gpu-fraction annotation value must be a positive number smaller than 1.0"),
        ({"gpu-fraction": "NaN"}, False, "gpu-fraction annotation value must be a positive number smaller than 1.0"),
        ({"gpu-fraction": "0.5"}, True, "cannot have both GPU fraction request and whole GPU resource request/limit"),
        ({"gpu-memory": "0"}, False, "gpu-memory annotation value must be a positive integer greater than 0"),
        ({"gpu-memory": "100", "gpu-fraction": "0.5"}, False, "cannot request both GPU and GPU memory"),
        ({"gpu-fraction-num-devices": "2"}, False,
         "cannot request multiple fractional devices without specifying fraction portion or gpu-memory"),
    ],
)
def test_kais_admission_accepts_what_its_validator_accepts(annotations, whole, refused):
    assert kai.gpu_request_error(annotations, whole) == refused


# --- config: the pool option, one tenant per pool, the Queues -------------------------------------------------

@pytest.mark.parametrize(
    "change, line",
    [
        ({"sharing": {"mode": "timeSlicing", "replicas": 4}},
         f"{P}[gpu-l4-kai]: scheduler: kai shares whole GPUs in fractions itself; sharing.mode timeSlicing cuts them "
         "first: set sharing.mode: none"),
        ({"warmStart": {"headroom": {"gpus": 4, "gpusPerPod": 4}}},
         f"{P}[gpu-l4-kai]: scheduler: kai cannot take back warm-start headroom (placeholders only the default "
         "scheduler preempts): set warmStart.headroom.gpus: 0"),
        ({"amiFamily": "bottlerocket"},
         f"{P}[gpu-l4-kai]: scheduler: kai hands fractions their GPU through NVIDIA_VISIBLE_DEVICES, which bottlerocket's "
         "container toolkit ignores from tenant containers: set amiFamily: al2023"),
        ({"scheduler": "default", "sharing": {"shareBetweenTenants": True}},
         f"{P}[gpu-l4-kai]: sharing.shareBetweenTenants applies to time-sliced pools and pools with scheduler: kai; "
         "this pool hands out whole GPUs: remove it"),
    ],
)
def test_a_kai_pool_that_cannot_work_is_one_line(change, line):
    doc = document()
    [pool] = [p for p in doc[P] if p["name"] == KAI_POOL]
    pool.update(change)
    assert problems_of(doc) == [line]


def test_a_second_tenant_on_a_kai_pool_needs_share_between_tenants():
    doc = document()
    [experiments] = [t for t in doc["gpu-platform:tenants"] if t["name"] == "experiments"]
    [data_science] = [t for t in doc["gpu-platform:tenants"] if t["name"] == "data-science"]
    data_science["gpu"]["l4-kai-on-demand"] = {"nominal": 6, "lendingLimit": 2}
    experiments["gpu"]["l4-kai-on-demand"] = {"nominal": 2, "borrowingLimit": 2}
    assert problems_of(doc) == [
        "gpu-platform:tenants[experiments].gpu.l4-kai-on-demand: gives experiments KAI's fractions of pool gpu-l4-kai, "
        "which data-science holds quota on too; KAI's fractions share a GPU's memory and faults between tenants: give "
        "the pool to one tenant or set gpu-platform:nodePools[gpu-l4-kai].sharing.shareBetweenTenants: true"
    ]
    [pool] = [p for p in doc[P] if p["name"] == KAI_POOL]
    pool["sharing"] = {"shareBetweenTenants": True}
    config = load(doc)
    queues = {q.name: q for q in plan_kai_queues(config.gpu_pools, config.tenants)}
    # Root: the pool's 8 GPUs. data-science: 6 deserved, no borrowing. experiments: 2 + 2, priority best-effort (100).
    assert [(q.name, q.parent, q.gpu_quota, q.gpu_limit, q.over_quota_weight, q.priority) for q in queues.values()] == [
        ("gpu-platform.tenants", None, 8, 8, 1, None),
        ("data-science", "gpu-platform.tenants", 6, 6, 6, 500),
        ("experiments", "gpu-platform.tenants", 2, 4, 2, 100),
    ]


def test_a_platform_served_model_on_a_kai_flavor_is_one_line():
    doc = document()
    [data_science] = [t for t in doc["gpu-platform:tenants"] if t["name"] == "data-science"]
    data_science["inference"] = [
        {"name": "notebook-assist", "flavor": "l4-kai-on-demand", "class": "interactive", "gpusPerReplica": 1,
         "minReplicas": 1, "maxReplicas": 4}
    ]
    assert problems_of(doc) == [
        "gpu-platform:tenants[data-science].inference[notebook-assist].flavor: 'l4-kai-on-demand' is on pool "
        "gpu-l4-kai, scheduled by the KAI Scheduler, which takes only pods naming it; the platform's model servers use "
        "the default scheduler: run them on another flavor"
    ]


def test_a_stack_without_kai_pools_has_no_queues_and_no_kai_release():
    doc = document()
    doc[P] = [p for p in doc[P] if p["name"] != KAI_POOL]
    for tenant in doc["gpu-platform:tenants"]:
        tenant["gpu"].pop("l4-kai-on-demand", None)
    config = load(doc)
    assert not config.uses_kai and config.kai_queues == ()


# --- the render ------------------------------------------------------------------------------------------------

def test_the_release_shares_gpus_scales_nodes_and_creates_no_unlimited_default_queue():
    release = json.loads(_rendered()[0])
    values = release["values"]
    assert (release["chart"], release["version"]) == ("oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler", "v0.17.0")
    assert values["global"]["gpuSharing"] is True and values["global"]["clusterAutoscaling"] is True
    assert (values["global"]["registry"], values["global"]["tag"]) == ("ghcr.io/kai-scheduler/kai-scheduler", "v0.17.0")
    assert values["defaultQueue"] == {"createDefaultQueue": False}
    assert values["global"]["resourceReservation"] == {"createNamespace": False}
    assert release_problems("helm/kai-scheduler.yaml", release) == []


def test_kais_namespaces_enforce_baseline():
    levels = {
        o["metadata"]["name"]: o["metadata"]["labels"].get("pod-security.kubernetes.io/enforce")
        for o in of_kind("Namespace")
    }
    assert {ns: levels.get(ns) for ns in ("kai-scheduler", RESERVATION_NAMESPACE, SCALING_POD_NAMESPACE)} == {
        "kai-scheduler": "baseline", RESERVATION_NAMESPACE: "baseline", SCALING_POD_NAMESPACE: "baseline",
    }


def test_the_rendered_queues_are_the_tenants_quota_on_the_kai_pool():
    unbounded = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    assert sorted(of_kind("Queue"), key=lambda q: q["metadata"]["name"]) == [
        {
            "apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": "data-science"},
            "spec": {
                "parentQueue": ROOT_QUEUE, "priority": 500,
                "resources": {"cpu": unbounded, "gpu": {"quota": 6, "limit": 6, "overQuotaWeight": 6}, "memory": unbounded},
            },
        },
        {
            "apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": ROOT_QUEUE},
            "spec": {"resources": {"cpu": unbounded, "gpu": {"quota": 8, "limit": 8, "overQuotaWeight": 1}, "memory": unbounded}},
        },
    ]


def test_each_queue_waits_for_its_parent():
    """KAI's queue webhook reads the parent when a child is created and refuses to delete a parent with children."""
    assert json.loads(_rendered()[4]) == {ROOT_QUEUE: [], "data-science": [ROOT_QUEUE]}


# --- the guards: every attempt as every identity -----------------------------------------------------------------

def tenant_labels() -> dict[str, str]:
    [namespace] = [o for o in of_kind("Namespace") if o["metadata"]["name"] == TENANT]
    return namespace["metadata"]["labels"]


FRACTION = {"gpu-fraction": "0.5"}
# The prefix KAI's webhook generates for pod `p` (no owner), its random part written out: `p-<7 random>-shared-gpu`.
RANDOM = "x7k2p9q"
PREFIX = f"p-{RANDOM}-shared-gpu"
# The binder's patch with CDI on (pkg/binder/plugins/gpusharing/gpu_sharing.go `CdiDeviceNameBase`): GPU index 3.
BOUND_DEVICE = "k8s.device-plugin.nvidia.com/gpu=3"
WHOLE_GPU = {"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}
VOIDED = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}]


def handed_on(obj: dict[str, Any]) -> dict[str, Any]:
    """`obj` as KAI's mutating webhook hands it to validation (models/kai/sharing.py `mutated`)."""
    return mutated(obj, PREFIX)


def denials(objs: list[dict[str, Any]], api_group: str, resource: str, obj: dict[str, Any] | None, who: str,
            operation: str = "CREATE", old: dict[str, Any] | None = None) -> list[str]:
    user = IDENTITIES[who] if who in IDENTITIES else service_account(*who.split(":"))
    request = Request(operation, api_group, resource, TENANT, user, obj, old, tenant_labels())
    return admission_denials(objs, request)


@pytest.mark.parametrize("annotations", [FRACTION, {"gpu-fraction": ".25"}, {"gpu-memory": "24576"}, {}])
def test_a_tenant_asks_for_a_fraction_or_memory_of_one_gpu_on_its_kai_pool(annotations):
    assert denials(objects(), "", "pods", handed_on(pod(annotations=annotations)), "tenant-admin") == []


NVIDIA_ENV = "tenant-pods-no-nvidia-env"
FRACTION_FORM = "the fraction's container (the first) reads NVIDIA_VISIBLE_DEVICES only as KAI's webhook writes it"
VOID_FORM = "every container of a pod scheduled by kai-scheduler sets NVIDIA_VISIBLE_DEVICES: void"
SIDECAR = {"name": "sidecar", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"}


def _reference(name: str, key: str = "NVIDIA_VISIBLE_DEVICES", **extra: Any) -> dict[str, Any]:
    return {"name": "NVIDIA_VISIBLE_DEVICES", "valueFrom": {"configMapKeyRef": {"name": name, "key": key, **extra}}}


def _with_first_env(obj: dict[str, Any], env: list[dict[str, Any]]) -> dict[str, Any]:
    changed = copy.deepcopy(obj)
    changed["spec"]["containers"][0]["env"] = env
    return changed


def _refusals(obj: dict[str, Any]) -> list[str]:
    return [line.split(":")[0] for line in denials(objects(), "", "pods", obj, "tenant-admin")]


# Each pod as validation receives it, and the guard message (its start) that refuses it; None: admitted.
FRACTIONAL = handed_on(pod(annotations=FRACTION))
NVIDIA_CASES = [
    ("kais-fraction", FRACTIONAL, None),
    ("whole-gpu-written-void", handed_on(pod(resources=WHOLE_GPU, env=VOIDED)), None),
    ("cpu-only-kai-pod", handed_on(pod()), None),
    ("fraction-as-the-tenant-writes-it-unmutated", pod(annotations=FRACTION), FRACTION_FORM),
    ("whole-gpu-without-void", handed_on(pod(resources=WHOLE_GPU)), VOID_FORM),
    ("whole-gpu-void-then-all", handed_on(pod(resources=WHOLE_GPU, env=[*VOIDED, {"name": "NVIDIA_VISIBLE_DEVICES",
                                                                                   "value": "all"}])), VOID_FORM),
    ("whole-gpu-none", handed_on(pod(resources=WHOLE_GPU, env=[{"name": "NVIDIA_VISIBLE_DEVICES", "value": "none"}])),
     VOID_FORM),
    ("void-and-imex-channels", handed_on(pod(resources=WHOLE_GPU, env=[*VOIDED, {"name": "NVIDIA_IMEX_CHANNELS",
                                                                                   "value": "0"}])), VOID_FORM),
    ("fraction-literal-all", _with_first_env(FRACTIONAL, [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]),
     FRACTION_FORM),
    ("fraction-ref-to-another-config-map", _with_first_env(FRACTIONAL, [_reference("gpus")]), FRACTION_FORM),
    ("fraction-ref-to-the-evar-config-map", _with_first_env(FRACTIONAL, [_reference(f"{PREFIX}-0-evar")]),
     FRACTION_FORM),
    ("fraction-ref-to-index-one", _with_first_env(FRACTIONAL, [_reference(f"{PREFIX}-1")]), FRACTION_FORM),
    ("fraction-ref-to-another-key", _with_first_env(FRACTIONAL, [_reference(f"{PREFIX}-0", "GPU_PORTION")]),
     FRACTION_FORM),
    ("fraction-ref-optional", _with_first_env(FRACTIONAL, [_reference(f"{PREFIX}-0", optional=True)]), FRACTION_FORM),
    ("fraction-ref-then-all", _with_first_env(FRACTIONAL, [_reference(f"{PREFIX}-0"),
                                                           {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]),
     FRACTION_FORM),
    ("fraction-prefix-not-kais-form", mutated(pod(annotations={**FRACTION, "runai/shared-gpu-configmap": "gpus"}), PREFIX),
     FRACTION_FORM),
    # KAI's form with more after it: `<prefix>-mine-0` is no name the ConfigMap guard keeps from tenants.
    ("fraction-prefix-past-kais-form",
     mutated(pod(annotations={**FRACTION, "runai/shared-gpu-configmap": f"{PREFIX}-mine"}), PREFIX), FRACTION_FORM),
    ("fraction-prefix-with-a-short-random-part",
     mutated(pod(annotations={**FRACTION, "runai/shared-gpu-configmap": "p-x7k2p9-shared-gpu"}), PREFIX), FRACTION_FORM),
]


@pytest.mark.parametrize("case, obj, refused_by", NVIDIA_CASES, ids=[c[0] for c in NVIDIA_CASES])
def test_the_nvidia_variable_guard_admits_kais_form_and_nothing_else_on_kai_pods(case, obj, refused_by):
    found = denials(objects(), "", "pods", obj, "tenant-admin")
    if refused_by is None:
        assert found == []
    else:
        assert [line for line in found if line.startswith(refused_by)], found
        assert denials(without_named(objects(), NVIDIA_ENV), "", "pods", obj, "tenant-admin") == []


def test_a_sidecar_beside_the_fraction_is_voided_by_kai_and_refused_without():
    written = pod(annotations=FRACTION)
    written["spec"]["containers"].append(dict(SIDECAR))
    assert denials(objects(), "", "pods", handed_on(written), "tenant-admin") == []
    [sidecar] = [c for c in handed_on(written)["spec"]["containers"] if c["name"] == "sidecar"]
    assert sidecar["env"] == VOIDED
    unvoided = mutated(written, PREFIX, block_visible_devices=False)
    assert [line for line in denials(objects(), "", "pods", unvoided, "tenant-admin") if line.startswith(VOID_FORM)]


def test_the_kai_configmap_reference_on_a_pod_kai_does_not_schedule_is_refused():
    """KAI's form, exactly, on a default-scheduler pod of the whole-GPU pool: the variable is refused outright."""
    obj = mutated(pod(pool=OTHER_POOL, scheduler=None, queue=None), PREFIX, block_visible_devices=False)
    obj["spec"]["containers"][0]["env"] = [_reference(f"{PREFIX}-0")]
    obj["metadata"]["annotations"]["runai/shared-gpu-configmap"] = PREFIX
    found = denials(objects(), "", "pods", obj, "tenant-admin")
    assert found and all(line.startswith("containers in tenant namespaces may not set NVIDIA_*") for line in found)


def without_named(objs: list[dict[str, Any]], policy: str) -> list[dict[str, Any]]:
    return [o for o in objs if o["metadata"]["name"] != policy and o.get("spec", {}).get("policyName") != policy]


# --- KAI's sharing ConfigMaps: written by its binder only ----------------------------------------------------------

SHARING_CONFIG_MAPS = "tenant-kai-sharing-config-maps-are-kais"
BINDER = "kai-scheduler:binder"


def config_map(name: str, data: dict[str, str] | None = None) -> dict[str, Any]:
    owner = {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "0a1b"}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": TENANT, "ownerReferences": [owner]},
            "data": dict(data or {})}


@pytest.mark.parametrize(
    "name, kais",
    [
        (f"{PREFIX}-0", True), (f"{PREFIX}-0-evar", True), (f"{PREFIX}-i2", True), (f"{PREFIX}-i2-evar", True),
        (f"{PREFIX}-12", True), ("-bbbbbbb-shared-gpu-0", True),
        (f"{PREFIX}", False), (f"{PREFIX}-0-evars", False), (f"{PREFIX}-x", False), ("shared-gpu-0", False),
        ("gpus", False),
    ],
)
def test_only_the_binder_writes_configmaps_named_as_kais(name, kais):
    """Names: the tenant's create is refused exactly for KAI's; the binder's never. Every identity and verb is the
    attack table's (tests/test_attacks.py `tenant-*-kais-sharing-configmap`)."""
    written = config_map(name, {"NVIDIA_VISIBLE_DEVICES": "all"})
    assert bool(denials(objects(), "", "configmaps", written, "tenant-admin")) == kais
    assert denials(objects(), "", "configmaps", written, BINDER) == []


def test_the_binder_the_garbage_collector_and_the_namespace_controller_delete_kais_configmaps():
    objs = objects()
    cm = config_map(f"{PREFIX}-0", {"NVIDIA_VISIBLE_DEVICES": BOUND_DEVICE})
    edited = config_map(f"{PREFIX}-0", {"NVIDIA_VISIBLE_DEVICES": "all"})
    assert denials(objs, "", "configmaps", edited, BINDER, "UPDATE", cm) == []
    for deleter in (BINDER, "kube-system:generic-garbage-collector", "kube-system:namespace-controller"):
        assert denials(objs, "", "configmaps", None, deleter, "DELETE", cm) == []
    # The garbage collector deletes; it never writes one.
    assert denials(objs, "", "configmaps", edited, "kube-system:generic-garbage-collector", "UPDATE", cm)


@pytest.mark.parametrize("prefix", [PREFIX, "my.job-bcdfghj-shared-gpu", "-2456789-shared-gpu"])
def test_every_prefix_the_guard_lets_a_fraction_read_names_a_binder_only_configmap(prefix):
    """The reference guard and the ConfigMap guard agree: what one admits as KAI's name the other protects."""
    obj = mutated(pod(annotations={**FRACTION, "runai/shared-gpu-configmap": prefix}), "unused")
    assert denials(objects(), "", "pods", obj, "tenant-admin") == []
    [ref] = [e for e in obj["spec"]["containers"][0]["env"] if e["name"] == "NVIDIA_VISIBLE_DEVICES"]
    assert denials(objects(), "", "configmaps", config_map(ref["valueFrom"]["configMapKeyRef"]["name"]), "tenant-admin")


# --- one fractional pod, from admission to placement, metrics and cost ---------------------------------------------

def tenancy() -> Tenancy:
    kueue = yaml.safe_load(json.loads(_rendered()[1])["values"]["managerConfig"]["controllerManagerConfigYaml"])
    [limit_range] = [
        o for o in of_kind("LimitRange") if o["metadata"]["namespace"] == TENANT and o["metadata"]["name"] == "container-defaults"
    ]
    return Tenancy(limit_range["spec"]["limits"][0]["defaultRequest"], {}, kueue, {})


def admitted_flavor(pool: str) -> tuple[str, bool]:
    spec = {"containers": [{"name": "main", "image": "busybox:1.36", "resources": {"requests": {"cpu": "2", "memory": "8Gi"}}}],
            "nodeSelector": {POOL_LABEL: pool}}
    job = {"kind": "Job", "spec": {"parallelism": 1, "template": {"spec": spec}}}
    labels = {f["metadata"]["name"]: f["spec"].get("nodeLabels", {}) for f in of_kind("ResourceFlavor")}
    [queue] = [q for q in of_kind("ClusterQueue") if q["metadata"]["name"] == TENANT]
    admission = best_case_admission(pod_sets(job, tenancy()), queue, labels)
    return (admission.flavors[0] if admission.flavors else ""), admission.borrowing


def node_class_toolkit(pool: str) -> dict[str, str]:
    """The toolkit settings the pool's EC2NodeClass user data sets (its `nvidia-ctk config --set` line)."""
    [node_class] = [o for o in of_kind("EC2NodeClass") if o["metadata"]["name"] == pool]
    [line] = [line for line in node_class["spec"]["userData"].splitlines() if line.startswith("nvidia-ctk config")]
    return dict(flag.split("=", 1) for flag in line.split("--set ")[1:] for flag in [flag.strip()])


CUDA_IMAGE_ENV = {"NVIDIA_VISIBLE_DEVICES": "all", "CUDA_VERSION": "12.4.1", "NVIDIA_REQUIRE_CUDA": "cuda>=12.4"}


def test_a_fractional_pod_from_admission_to_placement_metrics_and_cost():
    # 1. The tenant writes annotations only, on a Job-less pod with a CUDA sidecar; KAI's webhook names its
    #    ConfigMap from the pod (`p-<7 random>-shared-gpu`), adds the reference and voids the sidecar.
    written = pod(annotations=FRACTION)
    written["spec"]["containers"].append(dict(SIDECAR))
    prefix = generated_prefix(written, RANDOM)
    assert prefix == PREFIX
    admitted = mutated(written, prefix)
    fraction_container, sidecar = admitted["spec"]["containers"]
    assert fraction_container["env"] == [
        {"name": key, "valueFrom": {"configMapKeyRef": {"key": key, "name": "p-x7k2p9q-shared-gpu-0"}}}
        for key in ("NVIDIA_VISIBLE_DEVICES", "RUNAI_NUM_OF_GPUS", "GPU_PORTION")
    ]
    assert fraction_container["envFrom"] == [{"configMapRef": {"name": "p-x7k2p9q-shared-gpu-0-evar", "optional": False}}]
    assert sidecar["env"] == VOIDED
    assert admitted["spec"]["volumes"] == [{"name": "p-x7k2p9q-shared-gpu-0-vol",
                                           "configMap": {"name": "p-x7k2p9q-shared-gpu-0"}}]
    assert denials(objects(), "", "pods", admitted, "tenant-admin") == []
    # 2. Kueue: the pod's nodeSelector rules out the CPU flavor; its cpu and memory are charged to the KAI pool's
    #    flavor, its fraction to nothing Kueue reads.
    assert admitted_flavor(KAI_POOL) == ("l4-kai-on-demand", False)
    # 3. KAI: the tenant's Queue holds 6 of the root's 8; twelve halves fit, the thirteenth is over the limit.
    rendered_queues = {q["metadata"]["name"]: q["spec"] for q in of_kind("Queue")}
    tree = {
        name: Queue(name, spec.get("parentQueue"), {
            r: ResourceQuota(v["quota"], v["limit"], v["overQuotaWeight"]) for r, v in spec["resources"].items()
        })
        for name, spec in rendered_queues.items()
    }
    half = {"gpu": kai.gpu_share(FRACTION)}
    held = {TENANT: {"gpu": 0.0}, ROOT_QUEUE: {"gpu": 0.0}}
    placed = 0
    while kai.allocatable(tree, TENANT, half, held, {}, preemptible=True):
        for queue in held:
            held[queue]["gpu"] += half["gpu"]
        placed += 1
    assert placed == 12
    # 4. Binding: the binder creates the ConfigMap the reference names and writes the GPU into it; the tenant could
    #    neither have made it first nor edit it now.
    [reference] = [e["valueFrom"]["configMapKeyRef"] for e in admitted["spec"]["containers"][0]["env"]
                   if e["name"] == "NVIDIA_VISIBLE_DEVICES"]
    bound = config_map(reference["name"], {"NVIDIA_VISIBLE_DEVICES": BOUND_DEVICE, "GPU_PORTION": "0.5"})
    assert denials(objects(), "", "configmaps", bound, BINDER) == []
    assert denials(objects(), "", "configmaps", bound, "tenant-admin")
    # 5. The node: the KAI pool's toolkit honours the variable from unprivileged containers, the other pool's does not.
    kai_node, other_node = node_class_toolkit(KAI_POOL), node_class_toolkit(OTHER_POOL)
    assert kai_node == {"accept-nvidia-visible-devices-envvar-when-unprivileged": "true",
                        "accept-nvidia-visible-devices-as-volume-mounts": "true"}
    assert other_node == {"accept-nvidia-visible-devices-envvar-when-unprivileged": "false",
                          "accept-nvidia-visible-devices-as-volume-mounts": "true"}
    fraction_env, sidecar_env = (
        toolkit.container_env(CUDA_IMAGE_ENV, {}, {
            e["name"]: bound["data"][e["valueFrom"]["configMapKeyRef"]["key"]] if "valueFrom" in e else e["value"]
            for e in container.get("env", []) if e["name"] == "NVIDIA_VISIBLE_DEVICES"
        })
        for container in admitted["spec"]["containers"]
    )
    accepts = kai_node["accept-nvidia-visible-devices-envvar-when-unprivileged"] == "true"
    assert toolkit.visible_devices(fraction_env, privileged=False, accept_envvar_unprivileged=accepts) == [BOUND_DEVICE]
    assert toolkit.visible_devices(sidecar_env, privileged=False, accept_envvar_unprivileged=accepts) == []
    # Without the KAI pool's setting the fraction would get no GPU at all.
    assert toolkit.visible_devices(fraction_env, privileged=False, accept_envvar_unprivileged=False) == []
    # 6. Metrics: the kubelet lists the shared GPU under KAI's reservation pod, so dcgm-exporter's series of that
    #    GPU name the reservation pod (its namespace), never a tenant's fractional pod.
    assert device_holder_namespace() == RESERVATION_NAMESPACE
    assert dcgm.names_pod("GPU-0a1b", dcgm.DEFAULT_GPU_ID_TYPE, 0, "GPU-0a1b")
    # 7. Cost: the tenant's guaranteed share of the pool is 6 of its 8 L4s at g6.12xlarge's price per GPU.
    config = load(document())
    [plan] = [t for t in config.tenants if t.name == TENANT]
    [quota] = [q for q in plan.quotas if q.flavor.name == "l4-kai-on-demand"]
    per_gpu = quota.flavor.pool.cheapest_on_demand_per_gpu
    assert per_gpu is not None and per_gpu == pytest.approx(4.6016 / 4)
    assert per_gpu * quota.quota.nominal == pytest.approx(6 * 1.1504)


def test_a_whole_gpu_on_a_kai_node_comes_from_cdi_and_the_image_variable_adds_none():
    """The GPU Operator's device plugin allocates by CDI names only (no variable), so a whole-GPU container keeps its
    GPU with NVIDIA_VISIBLE_DEVICES=void; without void, a CUDA image's `all` shows every GPU on a KAI node."""
    assert device_plugin.allocate_env(device_plugin.GPU_OPERATOR_DEVICE_LIST_STRATEGIES, ("GPU-0a1b",)) == {}
    assert device_plugin.allocate_env(("envvar",), ("GPU-0a1b", "GPU-2c3d")) == {"NVIDIA_VISIBLE_DEVICES": "GPU-0a1b,GPU-2c3d"}
    voided = toolkit.container_env(CUDA_IMAGE_ENV, {}, {"NVIDIA_VISIBLE_DEVICES": "void"})
    assert toolkit.visible_devices(voided, privileged=False, accept_envvar_unprivileged=True) == []
    assert toolkit.visible_devices(CUDA_IMAGE_ENV, privileged=False, accept_envvar_unprivileged=True) == ["all"]
    # An envFrom ConfigMap cannot undo the void: env wins over envFrom.
    from_env_from = toolkit.container_env(CUDA_IMAGE_ENV, {"NVIDIA_VISIBLE_DEVICES": "all"}, {"NVIDIA_VISIBLE_DEVICES": "void"})
    assert toolkit.visible_devices(from_env_from, privileged=False, accept_envvar_unprivileged=True) == []


@pytest.mark.parametrize(
    "env, privileged, accept, devices",
    [
        ({"NVIDIA_VISIBLE_DEVICES": "all"}, False, False, []),  # ignored from an unprivileged container
        ({"NVIDIA_VISIBLE_DEVICES": "all"}, True, False, ["all"]),
        ({"NVIDIA_VISIBLE_DEVICES": "0,1"}, False, True, ["0", "1"]),
        ({"NVIDIA_VISIBLE_DEVICES": "0,void"}, False, True, []),  # any void entry
        ({"NVIDIA_VISIBLE_DEVICES": "none,all"}, False, True, [""]),  # the first of all/none decides
        ({"NVIDIA_VISIBLE_DEVICES": "1,all"}, False, True, ["all"]),
        ({"NVIDIA_VISIBLE_DEVICES": ""}, False, True, []),
        ({"CUDA_VERSION": "11.0"}, False, True, ["all"]),  # legacy image, variable unset
        ({"CUDA_VERSION": "11.0", "NVIDIA_REQUIRE_CUDA": "cuda>=11.0"}, False, True, []),
        ({"CUDA_VERSION": "11.0", "NVIDIA_VISIBLE_DEVICES": ""}, False, True, []),  # set empty: void, legacy or not
    ],
)
def test_the_toolkit_reads_the_variable_as_v1_20_does(env, privileged, accept, devices):
    assert toolkit.visible_devices(env, privileged=privileged, accept_envvar_unprivileged=accept) == devices


def test_the_summary_counts_each_queue_in_gpus_in_fractional_pods_and_in_dollars():
    """g6.12xlarge: $4.6016/h for 4 L4s, so half an L4 is $0.5752/h; 6 GPUs hold 12 halves or 24 quarters."""
    summary = _rendered()[3]
    section = summary.split("## KAI Queues (fractions of a GPU)\n")[1].split("\n## ")[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    assert rows == [
        "| `gpu-platform.tenants` | - | 8 | 8 | 1 | - | 16 | 32 | $0.58 |",
        "| `data-science` | `gpu-platform.tenants` | 6 | 6 | 6 | 500 | 12 | 24 | $0.58 |",
    ]


# --- check-manifest -------------------------------------------------------------------------------------------

def kai_lines(*documents: dict[str, Any]) -> list[str]:
    """check-manifest's `kai` findings (offline/manifest_kai.py, which reads no CRD: none are loaded)."""
    cluster = Cluster.of(load(document()), TENANT, objects(), CustomResourceDefinitions())
    findings = [f for d in documents for f in kai_findings(cluster, "w.yaml", d)]
    return [f"{f.text}{' [problem]' if f.problem else ''}" for f in findings]


def test_check_manifest_says_what_kai_counts():
    fractional = pod(annotations=FRACTION)
    job: dict[str, Any] = {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "sixteen-halves", "namespace": TENANT},
        "spec": {"parallelism": 16, "template": {
            "metadata": {"labels": {"kai.scheduler/queue": TENANT}, "annotations": FRACTION},
            "spec": {**fractional["spec"], "restartPolicy": "Never", "schedulingGates": []},
        }},
    }
    at_the_limit = copy.deepcopy(job)
    at_the_limit["spec"]["parallelism"] = 12
    whole = pod(resources={"limits": {"nvidia.com/gpu": "2"}})
    oversized = pod(annotations={"gpu-fraction": "1.5"})
    assert kai_lines(fractional, job, at_the_limit, whole, oversized) == [
        "KAI counts 1 x 0.5 = 0.5 GPUs against Queue data-science (deserved 6, limit 6)",
        "KAI counts 16 x 0.5 = 8 GPUs against Queue data-science (deserved 6, limit 6): more than its limit, never all "
        "at once [problem]",
        "KAI counts 12 x 0.5 = 6 GPUs against Queue data-science (deserved 6, limit 6)",
        "KAI counts 1 x 2 = 2 GPUs against Queue data-science (deserved 6, limit 6)",
        "KAI's admission refuses it: gpu-fraction annotation value must be a positive number smaller than 1.0 [problem]",
    ]


def policy_lines(document_: dict[str, Any]) -> list[str]:
    """check-manifest's `policies` findings: the pod as KAI's webhook hands it to the guards."""
    cluster = Cluster.of(load(document()), TENANT, objects(), CustomResourceDefinitions())
    return [f.text for f in check(cluster, [("w.yaml", document_)]) if f.aspect == "policies"]


def test_check_manifest_judges_a_kai_pod_as_kais_webhook_hands_it_on():
    """A fraction and a CPU-only KAI pod need nothing written; a whole GPU on a KAI pool needs the void written."""
    admitted = ["admitted by Pod Security baseline and the admission guards"]
    assert policy_lines(pod(annotations=FRACTION)) == admitted
    assert policy_lines(pod()) == admitted
    assert policy_lines(pod(resources={"limits": {"nvidia.com/gpu": "1"}}, env=VOIDED)) == admitted
    [refused] = policy_lines(pod(resources={"limits": {"nvidia.com/gpu": "1"}}))
    assert refused.startswith(f"an admission guard refuses it: {VOID_FORM}")


def test_the_charts_priority_classes_are_as_vendored_and_none_is_a_default_or_never_preempts():
    """Tenant pods name none of them (components/admission.py `tenant-pods-name-no-priority-class`): each preempts."""
    folder = Path(__file__).resolve().parent.parent / "upstream" / "kai-scheduler" / "v0.17.0" / "templates" / "priorityclasses"
    found = {}
    for path in sorted(folder.glob("*.yaml")):
        body = yaml.safe_load("\n".join(line for line in path.read_text().splitlines() if not line.startswith("{{")))
        assert body["kind"] == "PriorityClass" and "globalDefault" not in body and "preemptionPolicy" not in body
        found[body["metadata"]["name"]] = body["value"]
    assert found == {"build": 100, "build-preemptible": 75, "inference": 125, "train": 50}
    assert found == CHART_PRIORITY_CLASSES


def test_kais_operator_and_its_controllers_are_counted_on_the_system_nodes():
    """models/kai/operator.py at v0.17.0: scheduler 250m/512Mi, binder 50m/200Mi, five more at 50m/256Mi, operator unsized."""
    plan = load(document()).system_capacity
    kai_pods = {pod.name: (pod.requests.cpu_m, pod.requests.memory_mib, pod.replicas) for pod in plan.pods
                if pod.name.startswith("kai-")}
    assert kai_pods == {
        "kai-operator": (0, 0, 1), "kai-scheduler": (250, 512, 1), "kai-binder": (50, 200, 1),
        "kai-pod-grouper": (50, 256, 1), "kai-podgroup-controller": (50, 256, 1), "kai-queue-controller": (50, 256, 1),
        "kai-admission": (50, 256, 1), "kai-node-scale-adjuster": (50, 256, 1),
    }
    without = document()
    for pool in without["gpu-platform:nodePools"]:
        pool.pop("scheduler", None)
        pool.get("sharing", {}).pop("shareBetweenTenants", None)
    assert not [pod.name for pod in load(without).system_capacity.pods if pod.name.startswith("kai-")]
