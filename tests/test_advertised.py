"""What a GPU node advertises per sharing mode, and the NodePool limits in the units Karpenter counts.

The rules mirror kubernetes-sigs/karpenter at the commit karpenter-provider-aws v1.14.1 pins
(v1.14.1-0.20260819221709-6e7eab7a0f48) and karpenter-provider-aws v1.14.1; each test names its file.
"""

from __future__ import annotations

import pytest

from config.advertised import (
    advertised,
    dra_devices,
    guaranteed_units,
    limit_units,
    native_capacity,
    nodepool_limits,
    overlay_capacity,
)
from config.catalog import INSTANCE_TYPES
from config.labels import GPU_RESOURCE
from models.karpenter.capacity import apply_overlay
from tests.conftest import fixture_document, load, problems_of

P5 = INSTANCE_TYPES["p5.48xlarge"]
G6E_12 = INSTANCE_TYPES["g6e.12xlarge"]
G6E_48 = INSTANCE_TYPES["g6e.48xlarge"]


def pool_of(document, name):
    return next(p for p in load(document).gpu_pools if p.name == name)


def multi_pool(**changes):
    """multi-pool's gpu-h100 pool with its sharing (and the cluster's MIG strategy) replaced."""
    doc = fixture_document("multi-pool")
    h100 = doc["gpu-platform:nodePools"][0]
    h100.update(changes.get("pool", {}))
    if "strategy" in changes:
        doc["gpu-platform:gpu"]["migStrategy"] = changes["strategy"]
    return pool_of(doc, "gpu-h100")


def test_the_provider_knows_only_physical_gpus_of_an_instance_type():
    # karpenter-provider-aws v1.14.1 pkg/providers/instancetype/types.go, computeCapacity: nvidia.com/gpu
    # is the type's NVIDIA GPU count; no MIG or time-sliced resource exists until an overlay adds it.
    assert native_capacity(P5) == {GPU_RESOURCE: 8}


def test_whole_gpus_are_advertised_as_they_are_and_need_no_overlay():
    pool = pool_of(fixture_document("multi-pool"), "gpu-l40s")
    assert advertised(pool, G6E_48) == {GPU_RESOURCE: 8}
    assert overlay_capacity(pool, G6E_48) is None
    assert nodepool_limits(pool) == {GPU_RESOURCE: "16"}


def test_time_slicing_advertises_replicas_per_gpu_and_limits_in_shares():
    # The device plugin reports replicas x GPUs as nvidia.com/gpu in Node.status.capacity, which is what
    # an initialised node counts against the limit (pkg/controllers/state/statenode.go, Capacity;
    # pkg/controllers/provisioning/scheduling/scheduler.go, updateRemainingResources). A limit in
    # physical GPUs would stop the pool at 1/replicas of its size.
    pool = multi_pool(pool={"sharing": {"mode": "timeSlicing", "replicas": 4, "shareBetweenTenants": True}})
    assert advertised(pool, P5) == {GPU_RESOURCE: 32}
    # The overlay's value replaces the provider's for the same resource
    # (pkg/cloudprovider/types.go, ApplyCapacityOverlay: lo.Assign).
    assert overlay_capacity(pool, P5) == {GPU_RESOURCE: 32}
    assert nodepool_limits(pool) == {GPU_RESOURCE: str(32 * 4)}


def test_mixed_mig_advertises_each_profile_per_gpu_and_no_whole_gpu():
    # The mixed strategy advertises MIG devices as nvidia.com/mig-<profile> and whole GPUs only for GPUs
    # left un-partitioned; the layout partitions them all, so nvidia.com/gpu is 0 on the node.
    pool = pool_of(fixture_document("multi-pool"), "gpu-h100")
    assert advertised(pool, P5) == {"nvidia.com/mig-1g.10gb": 16, "nvidia.com/mig-2g.20gb": 8, "nvidia.com/mig-3g.40gb": 8}
    assert overlay_capacity(pool, P5) == {
        GPU_RESOURCE: 0,
        "nvidia.com/mig-1g.10gb": 16,
        "nvidia.com/mig-2g.20gb": 8,
        "nvidia.com/mig-3g.40gb": 8,
    }
    # A limit on nvidia.com/gpu would never bite once nodes report 0, so each profile is limited instead.
    assert nodepool_limits(pool) == {
        "nvidia.com/mig-1g.10gb": "64",
        "nvidia.com/mig-2g.20gb": "32",
        "nvidia.com/mig-3g.40gb": "32",
    }


def test_single_mig_advertises_mig_devices_as_gpus():
    pool = multi_pool(pool={"sharing": {"mode": "mig", "migLayout": {"1g.10gb": 7}}}, strategy="single")
    assert advertised(pool, P5) == {GPU_RESOURCE: 56}
    assert overlay_capacity(pool, P5) == {GPU_RESOURCE: 56}
    assert limit_units(pool) == {GPU_RESOURCE: 32 * 7}


def test_dra_nodes_advertise_no_gpu_and_are_a_node_group_of_gpus_over_their_types_gpus():
    # The device plugin is off on DRA nodes; Karpenter v1.14.1 launches nothing for pods with resource
    # claims (scheduler.go, DRAError), so the pool is a managed node group: 2 GPUs in 1-GPU nodes.
    pool = pool_of(fixture_document("single-pool-dra"), "gpu-l4-dra")
    g6 = INSTANCE_TYPES["g6.xlarge"]
    assert advertised(pool, g6) == {}
    assert pool.node_group_size == 2
    assert dra_devices(pool, g6) == 1
    with pytest.raises(AssertionError, match="has no NodePool"):
        nodepool_limits(pool)
    doc = fixture_document("single-pool-dra")
    doc["gpu-platform:nodePools"][1].update(instanceTypes=["g6.12xlarge", "g6.24xlarge"], gpus=9)
    assert pool_of(doc, "gpu-l4-dra").node_group_size == 2  # 9 // 4: two 4-GPU nodes, whichever type EKS gets


def test_a_dra_pool_whose_types_differ_in_gpu_count_is_refused():
    # EKS launches on-demand nodes first listed type first: 9 // 4 = 2 nodes would be two 1-GPU g6.xlarge.
    doc = fixture_document("single-pool-dra")
    doc["gpu-platform:nodePools"][1].update(instanceTypes=["g6.xlarge", "g6.12xlarge"], gpus=9)
    assert problems_of(doc) == [
        "gpu-platform:nodePools[gpu-l4-dra].instanceTypes: g6.xlarge (1 GPUs), g6.12xlarge (4 GPUs) on DRA pool "
        "gpu-l4-dra differ in GPU count: its EKS managed node group has a fixed node count but launches the first "
        "listed type it can get, so the node count cannot hold gpus 9; list types of one GPU count (e.g. only those "
        "with 4)"
    ]
    # A family expands to every size, 1 to 8 GPUs: refused on the key the user wrote.
    del doc["gpu-platform:nodePools"][1]["instanceTypes"]
    doc["gpu-platform:nodePools"][1]["instanceFamilies"] = ["g6"]
    [line] = problems_of(doc)
    assert line.startswith("gpu-platform:nodePools[gpu-l4-dra].instanceFamilies: g6.xlarge (1 GPUs), ")


def test_a_karpenter_pool_may_mix_gpu_counts():
    # Karpenter picks a type per pending pod, so gpu-l40s's g6e family (1, 4 and 8 GPUs) is fine.
    doc = fixture_document("single-pool-dra")
    assert sorted({t.gpus for t in pool_of(doc, "gpu-l40s").instance_types}) == [1, 4, 8]


def test_cpu_and_memory_limits_follow_the_gpu_limits():
    doc = fixture_document("multi-pool")
    doc["gpu-platform:nodePools"][2].update(cpuLimit=400, memoryLimitGiB=3000)
    assert nodepool_limits(pool_of(doc, "gpu-l40s")) == {GPU_RESOURCE: "16", "cpu": "400", "memory": "3000Gi"}


@pytest.mark.parametrize(
    ("types", "gpus", "replicas", "reached"),
    [
        # Sizes 16 and 32 shares: every amount is a multiple of 16, so a limit of 64 is reached exactly.
        (["g6e.12xlarge", "g6e.48xlarge"], 16, 4, 64),
        # One 8-GPU type and a limit of 20 GPUs: after two nodes 4 are left, too few for a third.
        (["g6e.48xlarge"], 20, None, 16),
        # 4- and 8-GPU types under a limit of 20: whatever the mix, a 4-GPU node fits the last 4.
        (["g6e.12xlarge", "g6e.48xlarge"], 20, None, 20),
    ],
)
def test_a_pool_reaches_its_limit_less_what_no_type_fits_into(types, gpus, replicas, reached):
    # scheduler.go, filterByRemainingResources: a type is launched only while its capacity fits in what
    # is left of the limit, so launching stops with less left than the smallest type's capacity.
    doc = fixture_document("multi-pool")
    pool = doc["gpu-platform:nodePools"][2]
    pool.update(instanceTypes=types, gpus=gpus)
    if replicas:
        pool["sharing"] = {"mode": "timeSlicing", "replicas": replicas, "shareBetweenTenants": True}
    assert guaranteed_units(pool_of(doc, "gpu-l40s")) == {GPU_RESOURCE: reached}


def test_a_dra_pool_smaller_than_one_node_is_refused():
    # Its node group holds gpus / 4 = 0 nodes.
    doc = fixture_document("single-pool-dra")
    doc["gpu-platform:nodePools"][1].update(instanceTypes=["g6.12xlarge"], gpus=3)
    assert problems_of(doc) == [
        "gpu-platform:nodePools[gpu-l4-dra].gpus: 3 is less than the 4 GPUs of each of the DRA pool's instance types; "
        "its node group holds gpus / 4 nodes, which would be 0: declare at least 4"
    ]


def test_an_overlay_wins_over_the_instance_types_capacity_per_resource():
    # kubernetes-sigs/karpenter pkg/cloudprovider/types.go ApplyCapacityOverlay (`lo.Assign`): the overlay's
    # value replaces the provider's for each resource it names, a zero included, and adds the ones it
    # alone knows; resources it does not name keep the provider's value.
    native = {GPU_RESOURCE: 8, "vpc.amazonaws.com/efa": 32}
    overlay = {GPU_RESOURCE: 0, "nvidia.com/mig-1g.10gb": 56}
    assert apply_overlay(native, overlay) == {GPU_RESOURCE: 0, "vpc.amazonaws.com/efa": 32, "nvidia.com/mig-1g.10gb": 56}
    assert apply_overlay({GPU_RESOURCE: 4}, {GPU_RESOURCE: 12}) == {GPU_RESOURCE: 12}
    assert apply_overlay({GPU_RESOURCE: 4}, None) == {GPU_RESOURCE: 4}
