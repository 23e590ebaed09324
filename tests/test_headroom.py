"""Warm headroom: placeholders give way to any tenant pod, never to each other, and sit outside every quota."""

from __future__ import annotations

import copy

import pytest

from components.headroom import placeholders
from components.lib.namespaces import every_tenant_namespace
from components.node_pools import gpu_node_pool
from config import ConfigError
from config.labels import CAPACITY_TYPE_LABEL, GPU_TAINT, POOL_LABEL
from config.versions import CHARTS
from models.kubernetes.preemption import NEVER, Node, Pod, preempt, victims_on_node
from models.kueue.constants import QUEUE_NAME_LABEL
from offline.validate import CustomResourceDefinitions, object_findings

from .conftest import fixture_document, load, render_fixture
from .recorded import kubernetes_objects

GPU = "nvidia.com/gpu"
P = "gpu-platform:nodePools"


def objects() -> list[dict]:
    return [r.inputs for r in kubernetes_objects(render_fixture("multi-pool"))]


def one(kind: str, name: str) -> dict:
    [found] = [o for o in objects() if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def placeholder_pod(name: str) -> Pod:
    """A placeholder as the scheduler sees it: priority and policy from the rendered PriorityClass."""
    template = one("Deployment", "gpu-a100-headroom")["spec"]["template"]["spec"]
    priority_class = one("PriorityClass", template["priorityClassName"])
    requests = {GPU: int(template["containers"][0]["resources"]["requests"][GPU])}
    return Pod(name, priority_class["value"], requests, priority_class["preemptionPolicy"])


def tenant_pod(name: str, gpus: int) -> Pod:
    # Tenant pods name no PriorityClass and none is globalDefault: priority 0.
    return Pod(name, 0, {GPU: gpus})


# --- kube-scheduler's preemption, with the rendered placeholders ----------------------------------------


def test_a_surge_replica_evicts_placeholders_and_never_a_running_tenant_pod():
    # p4d: 8 GPUs. Node a: 4 GPUs of tenant pods and two placeholders of 2 GPUs; the surge needs 2.
    # Pods are listed in start order; of equals, the later-started one goes (upstream reprieves the
    # more important first, util.MoreImportantPod: higher priority, then earlier start).
    node = Node("a", {GPU: 8}, (tenant_pod("train", 4), placeholder_pod("h1"), placeholder_pod("h2")))
    assert preempt(tenant_pod("surge", 2), [node]) == ("a", [placeholder_pod("h2")])


def test_preemption_evicts_only_as_many_placeholders_as_the_surge_needs():
    # 8 GPUs: three placeholders of 2 and 2 free. A 4-GPU replica needs one placeholder gone, not three.
    node = Node("a", {GPU: 8}, (placeholder_pod("h1"), placeholder_pod("h2"), placeholder_pod("h3")))
    assert victims_on_node(tenant_pod("surge", 4), node) == [placeholder_pod("h3")]


def test_a_surge_that_only_tenant_pods_block_waits_for_a_node():
    node = Node("a", {GPU: 8}, (tenant_pod("train", 6), placeholder_pod("h1")))
    assert preempt(tenant_pod("surge", 4), [node]) is None


def test_the_node_with_placeholders_is_chosen_over_one_with_lower_priority_tenant_pods():
    # A tenant pod of negative priority (were one allowed) loses to placeholders' even lower one.
    low_tenant = Node("tenant", {GPU: 8}, (Pod("batch", -1, {GPU: 8}),))
    warm = Node("warm", {GPU: 8}, (tenant_pod("serve", 6), placeholder_pod("h1")))
    assert preempt(tenant_pod("surge", 2), [low_tenant, warm]) == ("warm", [placeholder_pod("h1")])


def test_a_pending_placeholder_never_evicts_anything():
    pending = placeholder_pod("h4")
    assert pending.preemption_policy == NEVER
    # Not even a pod of lower priority than its own: the policy alone stops it.
    assert preempt(pending, [Node("a", {GPU: 8}, (Pod("lower", pending.priority - 1, {GPU: 8}),))]) is None


def test_placeholders_never_evict_each_other_even_were_they_allowed_to_preempt():
    # Same priority: none is strictly lower, so there is no victim whatever the policy.
    eager = Pod("h4", placeholder_pod("h1").priority, {GPU: 2})
    full = Node("a", {GPU: 8}, tuple(placeholder_pod(f"h{i}") for i in range(4)))
    assert preempt(eager, [full]) is None


def test_placeholders_run_below_every_tenant_pod():
    priority_class = one("PriorityClass", "gpu-headroom")
    assert priority_class["value"] < 0
    assert priority_class["globalDefault"] is False
    # No rendered pod template anywhere else names a PriorityClass that would sit below it.
    named = {
        o["spec"]["template"]["spec"].get("priorityClassName")
        for o in objects()
        if o["kind"] == "Deployment" and o["metadata"]["namespace"] != "gpu-headroom"
    }
    assert "gpu-headroom" not in named


# --- the placeholders as rendered ------------------------------------------------------------------------


def test_placeholders_hold_the_headroom_on_the_pools_nodes_in_its_units():
    deployment = one("Deployment", "gpu-a100-headroom")
    template = deployment["spec"]["template"]["spec"]
    assert deployment["metadata"]["namespace"] == "gpu-headroom"
    assert deployment["spec"]["replicas"] == 3  # 6 GPUs, 2 per pod
    resources = template["containers"][0]["resources"]
    assert (resources["requests"][GPU], resources["limits"][GPU]) == ("2", "2")
    # Guaranteed: the pause container is limited to what it asks, so it never takes a surge replica's CPU.
    assert resources["limits"] == resources["requests"] == {"cpu": "10m", "memory": "16Mi", GPU: "2"}
    assert template["nodeSelector"] == {POOL_LABEL: "gpu-a100", CAPACITY_TYPE_LABEL: "spot"}
    taints = one("NodePool", "gpu-a100")["spec"]["template"]["spec"]["taints"]
    assert taints == [GPU_TAINT]
    assert {"key": GPU, "operator": "Equal", "value": "true", "effect": "NoSchedule"} in template["tolerations"]


def test_only_pools_with_headroom_get_placeholders():
    names = {o["metadata"]["name"] for o in objects() if o["metadata"].get("namespace") == "gpu-headroom"}
    assert names == {"gpu-a100-headroom", "platform-ingress"}


def test_placeholders_are_outside_kueue_and_every_tenant_quota():
    namespace = one("Namespace", "gpu-headroom")
    labels = namespace["metadata"]["labels"]
    # Kueue's pod webhook leaves pods alone in namespaces its managedJobsNamespaceSelector misses
    # (kueue v0.19.2 pkg/controller/jobs/pod/pod_webhook.go Default).
    [expression] = every_tenant_namespace()["matchExpressions"]
    assert expression["operator"] == "Exists" and expression["key"] not in labels
    pod_labels = one("Deployment", "gpu-a100-headroom")["spec"]["template"]["metadata"]["labels"]
    assert QUEUE_NAME_LABEL not in pod_labels
    quotas = [o for o in objects() if o["kind"] == "ResourceQuota" and o["metadata"]["namespace"] == "gpu-headroom"]
    assert quotas == []


# --- the NodePool limit --------------------------------------------------------------------------------


def test_the_nodepool_limit_adds_the_headroom_and_quotas_do_not_see_it():
    assert one("NodePool", "gpu-a100")["spec"]["limits"] == {GPU: "22"}  # 16 declared + 6 warm
    assert one("NodePool", "gpu-l40s")["spec"]["limits"] == {GPU: "16"}  # no headroom
    doc = fixture_document("multi-pool")
    # a100-spot quotas already promise the pool's 16 GPUs; one more is refused though the limit is 22.
    doc["gpu-platform:tenants"][0]["gpu"]["a100-spot"]["nominal"] += 1
    with pytest.raises(ConfigError) as caught:
        load(doc)
    assert any("on pool gpu-a100, which declares 16 GPUs" in line for line in caught.value.problems)


def test_time_sliced_headroom_is_counted_in_slices():
    doc = fixture_document("single-pool")
    doc[P][0]["warmStart"] = {"headroom": {"gpus": 2}}
    [pool] = load(doc).gpu_pools
    slices = pool.config.sharing.replicas
    assert slices is not None
    assert gpu_node_pool(pool)["spec"]["limits"] == {GPU: str((pool.config.gpus + 2) * slices)}
    deployment = placeholders(pool)
    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"][GPU] == str(slices)


# --- config mistakes ------------------------------------------------------------------------------------


def _pool(doc: dict, name: str) -> dict:
    [pool] = [p for p in doc[P] if p["name"] == name]
    return pool


MISTAKES = [
    pytest.param(
        "gpu-a100", {"headroom": {"gpus": 5, "gpusPerPod": 2}},
        f"{P}[gpu-a100].warmStart.headroom: gpus 5 is not a multiple of gpusPerPod 2: set gpus to 4 or 6",
        id="partial-pod",
    ),
    pytest.param(
        "gpu-a100", {"headroom": {"gpus": 16, "gpusPerPod": 16}},
        f"{P}[gpu-a100].warmStart.headroom.gpusPerPod: 16 is more than the pool's largest instance type has (8 GPUs): "
        "the placeholders would never schedule; set gpusPerPod to at most 8",
        id="pod-larger-than-a-node",
    ),
    pytest.param(
        "gpu-a100", {"headroom": {"gpus": 2, "capacityType": "on-demand"}},
        f"{P}[gpu-a100].warmStart.headroom.capacityType: 'on-demand' is not one of the pool's capacityTypes ['spot']: "
        "placeholders could never get a node",
        id="capacity-type-not-in-pool",
    ),
    pytest.param(
        "gpu-h100", {"headroom": {"gpus": 8}},
        f"{P}[gpu-h100].warmStart.headroom.gpus: 8 on pool gpu-h100, which is cut into MIG devices: headroom holds "
        "whole GPUs or time slices, what inference replicas request; remove it or move it to a whole-GPU or "
        "time-sliced pool",
        id="mig-pool",
    ),
    pytest.param(
        "gpu-a100", {"imageSnapshot": "snap-0123456789abcdef0"},
        f"{P}[gpu-a100].warmStart.imageSnapshot: 'snap-0123456789abcdef0' on an al2023 pool: only Bottlerocket keeps "
        "images on a separate data volume a snapshot can fill (AL2023 keeps them on the AMI's root volume); use "
        "amiFamily bottlerocket or remove imageSnapshot",
        id="snapshot-on-al2023",
    ),
    pytest.param(
        "gpu-l40s", {"imageSnapshot": "snap-12345"},
        f"{P}[gpu-l40s].warmStart.imageSnapshot: 'snap-12345' is not an EBS snapshot id such as 'snap-0123456789abcdef0'",
        id="snapshot-id",
    ),
    pytest.param(
        "gpu-l40s", {"imageSnapshot": "snap-0123456789abcdef0", "volumeInitializationRate": 99},
        f"{P}[gpu-l40s].warmStart.volumeInitializationRate: 99 is outside EBS's 100-300 MiB/s for volume initialization",
        id="rate-below-ebs-minimum",
    ),
    pytest.param(
        "gpu-l40s", {"volumeInitializationRate": 300},
        f"{P}[gpu-l40s].warmStart: volumeInitializationRate applies to a volume restored from "
        "imageSnapshot: set imageSnapshot",
        id="rate-without-snapshot",
    ),
]


@pytest.mark.parametrize(("pool", "warm_start", "line"), MISTAKES)
def test_each_warm_start_mistake_is_one_line(pool, warm_start, line):
    doc = fixture_document("multi-pool")
    _pool(doc, pool)["warmStart"] = copy.deepcopy(warm_start)
    with pytest.raises(ConfigError) as caught:
        load(doc)
    assert [p for p in caught.value.problems if ".warmStart" in p] == [line]


# --- images on the node: the Bottlerocket data volume from a snapshot ------------------------------------


def test_the_data_volume_is_restored_from_the_image_snapshot_and_passes_the_node_class_crd():
    pin = CHARTS["karpenter-crd"]
    crds = CustomResourceDefinitions.installed_by([{"chart": pin.chart, "version": pin.version}])
    node_class = one("EC2NodeClass", "gpu-l40s")
    result = object_findings(node_class, crds, "1.35")
    assert (result.findings, result.not_evaluated) == ([], [])
    # Bottlerocket's data volume is /dev/xvdb (karpenter-provider-aws v1.14.1 amifamily/bottlerocket.go
    # EphemeralBlockDevice); the OS volume stays the AMI's.
    by_device = {m["deviceName"]: m["ebs"] for m in node_class["spec"]["blockDeviceMappings"]}
    assert by_device["/dev/xvdb"]["snapshotID"] == "snap-0fedcba9876543210"
    assert "snapshotID" not in by_device["/dev/xvda"]
    assert "volumeInitializationRate" not in by_device["/dev/xvdb"]
    # RAID0 would bind containerd's directory onto the instance store and hide the restored images.
    assert "instanceStorePolicy" not in node_class["spec"]
    assert "snapshotID" not in str(one("EC2NodeClass", "gpu-a100")["spec"]["blockDeviceMappings"])


def test_the_node_class_crd_refuses_an_initialization_rate_without_a_snapshot():
    # What warmStart's own check mirrors (CEL: "snapshotID must be set when volumeInitializationRate is set").
    pin = CHARTS["karpenter-crd"]
    crds = CustomResourceDefinitions.installed_by([{"chart": pin.chart, "version": pin.version}])
    node_class = copy.deepcopy(one("EC2NodeClass", "gpu-l40s"))
    data = node_class["spec"]["blockDeviceMappings"][1]["ebs"]
    del data["snapshotID"]
    data["volumeInitializationRate"] = 300
    assert object_findings(node_class, crds, "1.35").findings != []
