"""The numbers derived from the fixture stacks, worked out by hand from the catalog, not by the code.

Every expected value here is written out, so a bug in a derivation cannot move both sides of an
assertion. How each was worked out is in the comment beside it. Instance specs are Karpenter's
instance-type reference as config/catalog.py lists it:
  g6e.xlarge 1 GPU 4 vCPU 32 GiB, .2xlarge 1/8/64, .4xlarge 1/16/128, .8xlarge 1/32/256,
  .12xlarge 4/48/384, .16xlarge 1/64/512, .24xlarge 4/96/768, .48xlarge 8/192/1536;
  p5.48xlarge 8 H100 192 vCPU 2048 GiB; p4d.24xlarge 8 A100-40GB 96 vCPU 1152 GiB.
"""

from __future__ import annotations

import pytest

from config import PlatformConfig

from .builders import tenant_plan
from .conftest import fixture_document, load

MIG_1G = "nvidia.com/mig-1g.10gb"
MIG_2G = "nvidia.com/mig-2g.20gb"
MIG_3G = "nvidia.com/mig-3g.40gb"
GPU = "nvidia.com/gpu"
# Whole GPUs claimed through DRA: devices of the driver's gpu.nvidia.com DeviceClass.
DRA_GPU = "gpu.nvidia.com.deviceclass.resource.k8s.io/devices"


def plan(fixture: str) -> PlatformConfig:
    # Not cached: loading takes milliseconds, and a test that loads its own config is one mutation
    # testing (`make mutate`) knows reaches every derivation it checks.
    return load(fixture_document(fixture))


def flavor(fixture: str, name: str):
    return next(f for f in plan(fixture).flavors if f.name == name)


def tenant(fixture: str, name: str):
    return tenant_plan(plan(fixture), name)


def pool(fixture: str, name: str):
    return next(p for p in plan(fixture).gpu_pools if p.name == name)


# --- flavors: one unit of quota in Kubernetes resources -------------------------------------------

FLAVOR_UNITS = [
    # g6e, time-sliced 4 ways: the most generous type per GPU is g6e.16xlarge (64 vCPU, 512 GiB on
    # one GPU), so a slice is 64 / 4 = 16 vCPU and 512 / 4 = 128 GiB. 8 GPUs x 4 slices = 32 units.
    ("single-pool", "l40s-on-demand", {GPU: 1}, 16, 128, 32, "GPU slices"),
    ("single-pool", "l40s-spot", {GPU: 1}, 16, 128, 32, "GPU slices"),
    # p5.48xlarge: 192 / 8 = 24 vCPU and 2048 / 8 = 256 GiB per GPU; each GPU cut into 3g + 2g + 2x 1g.
    ("multi-pool", "h100-on-demand", {MIG_1G: 2, MIG_2G: 1, MIG_3G: 1}, 24, 256, 32, "GPUs"),
    # p4d.24xlarge: 96 / 8 = 12 vCPU and 1152 / 8 = 144 GiB per GPU.
    ("multi-pool", "a100-spot", {GPU: 1}, 12, 144, 16, "GPUs"),
    # g6e.12xlarge gives 12 vCPU / 96 GiB per GPU, .24xlarge and .48xlarge 24 / 192: the most is 24 / 192.
    ("multi-pool", "l40s-on-demand", {GPU: 1}, 24, 192, 16, "GPUs"),
    # g6.xlarge 4 vCPU 16 GiB, g6.2xlarge 8 / 32, one L4 each: the most is 8 / 32. A unit is one device
    # of the DRA driver's whole-GPU class, never nvidia.com/gpu (DRA nodes do not advertise it).
    ("single-pool-dra", "l4-dra-on-demand", {DRA_GPU: 1}, 8, 32, 2, "GPUs"),
]


@pytest.mark.parametrize("fixture, name, per_unit, cpu, memory, capacity, unit", FLAVOR_UNITS)
def test_a_flavors_unit_is_its_devices_and_the_most_generous_instance_types_share_of_cpu_and_memory(
    fixture, name, per_unit, cpu, memory, capacity, unit
):
    found = flavor(fixture, name)
    assert found.resources_per_unit == per_unit
    assert (found.cpu_per_unit, found.memory_gib_per_unit) == (cpu, memory)
    assert (found.capacity_units, found.unit) == (capacity, unit)


def test_single_mig_strategy_counts_every_mig_device_of_a_gpu_as_one_nvidia_gpu():
    document = fixture_document("multi-pool")
    document["gpu-platform:gpu"]["migStrategy"] = "single"
    document["gpu-platform:nodePools"][0]["sharing"]["migLayout"] = {"1g.10gb": 7}
    found = next(f for f in load(document).flavors if f.name == "h100-on-demand")
    assert found.resources_per_unit == {GPU: 7}
    assert next(p for p in load(document).gpu_pools if p.name == "gpu-h100").schedulable_units == {GPU: 32 * 7}


def test_a_pool_on_both_capacity_types_is_one_flavor_unless_split():
    document = fixture_document("single-pool")
    document["gpu-platform:queueing"]["flavorPerCapacityType"] = []
    for entry in document["gpu-platform:tenants"]:
        entry["gpu"] = {"l40s": {"nominal": 4}}
        entry["inference"] = []
    [only] = load(document).flavors
    assert (only.name, only.capacity_type) == ("l40s", None)
    assert only.node_labels == {"gpu-platform/node-pool": "gpu-l40s"}


# --- pools: what Karpenter may launch and what it yields --------------------------------------------

POOLS = [
    # 8 GPUs x 4 slices; cheapest per GPU is g6e.xlarge at 1.861 USD/h: 8 x 1.861 = 14.888; on Bottlerocket.
    ("single-pool", "gpu-l40s", 8, {GPU: 32}, 14.89, "v1.57.0", True),
    # 32 GPUs, each 2x 1g + 1x 2g + 1x 3g; 55.04 / 8 = 6.88 USD per GPU-hour x 32 = 220.16.
    ("multi-pool", "gpu-h100", 32, {MIG_1G: 64, MIG_2G: 32, MIG_3G: 32}, 220.16, "v20260903", True),
    # 21.957642 / 8 x 16 = 43.915284.
    ("multi-pool", "gpu-a100", 16, {GPU: 16}, 43.92, "v20260903", True),
    # g6e.12xlarge is cheapest per GPU: 10.49264 / 4 x 16 = 41.97056; Bottlerocket's pinned release.
    ("multi-pool", "gpu-l40s", 16, {GPU: 16}, 41.97, "v1.57.0", True),
    # 2 L4s through DRA, as devices of gpu.nvidia.com; g6.xlarge at 0.8048 USD/h x 2 = 1.6096.
    ("single-pool-dra", "gpu-l4-dra", 2, {DRA_GPU: 2}, 1.61, "v20260903", True),
]


@pytest.mark.parametrize("fixture, name, limit, units, cost, ami, instance_store", POOLS)
def test_a_pool_yields_its_declared_gpus_at_the_cheapest_price_per_gpu(fixture, name, limit, units, cost, ami, instance_store):
    found = pool(fixture, name)
    assert found.gpu_limit == limit
    assert found.schedulable_units == units
    assert found.hourly_cost_at_limit == cost
    assert found.ami_release == ami
    assert found.has_instance_store is instance_store


POOL_LABELS = [
    # Time-sliced on Bottlerocket: by Bottlerocket's device plugin, not the operator's; no operand of the operator runs.
    ("single-pool", "gpu-l40s", {
        "gpu-platform/node-pool": "gpu-l40s", "gpu-platform/gpu-model": "l40s", "nvidia.com/gpu.deploy.device-plugin": "false",
        "nvidia.com/gpu.deploy.operands": "false",
    }),
    ("single-pool-dra", "gpu-l40s", {
        "gpu-platform/node-pool": "gpu-l40s", "gpu-platform/gpu-model": "l40s", "nvidia.com/device-plugin.config": "gpu-l40s",
    }),
    ("multi-pool", "gpu-h100", {
        "gpu-platform/node-pool": "gpu-h100", "gpu-platform/gpu-model": "h100-80gb", "nvidia.com/mig.config": "gpu-h100",
    }),
    ("multi-pool", "gpu-a100", {"gpu-platform/node-pool": "gpu-a100", "gpu-platform/gpu-model": "a100-40gb"}),
    # Bottlerocket runs its own device plugin: the operator's stays off, with every other operand of the operator.
    ("multi-pool", "gpu-l40s", {
        "gpu-platform/node-pool": "gpu-l40s", "gpu-platform/gpu-model": "l40s", "nvidia.com/gpu.deploy.device-plugin": "false",
        "nvidia.com/gpu.deploy.operands": "false",
    }),
]


@pytest.mark.parametrize("fixture, name, labels", POOL_LABELS)
def test_pool_nodes_are_labelled_for_kueue_and_for_their_sharing_mode(fixture, name, labels):
    assert pool(fixture, name).labels == labels


def test_a_pool_without_a_price_has_no_cost():
    document = fixture_document("multi-pool")
    # p5e.48xlarge is sold through Capacity Blocks and reservations only: no on-demand price in the
    # catalog, and the pool must launch into reservations.
    pool = document["gpu-platform:nodePools"][0]
    pool["instanceTypes"] = ["p5e.48xlarge"]
    pool["sharing"]["migLayout"] = {"1g.18gb": 7}
    pool["capacityTypes"] = ["reserved"]
    pool["capacityReservations"] = [{"id": "cr-0123456789abcdef0"}]
    for tenant in document["gpu-platform:tenants"]:
        if "h100-on-demand" in tenant["gpu"]:
            tenant["gpu"]["h100-reserved"] = tenant["gpu"].pop("h100-on-demand")
    assert next(p for p in load(document).gpu_pools if p.name == "gpu-h100").hourly_cost_at_limit is None


# --- tenants: the ResourceQuota is what Kueue can admit, in full --------------------------------

# Every fixture tenant keeps the defaults: 500 pods, 50 claims, 1000 GiB of node-local storage, 5000 GiB
# of volumes, 1000 of each declared kind, 11000 ReplicaSets, 10000 of each kind made in bulk, and
# 500 + 10000 pods in storage.
DECLARED = (
    "configmaps", "secrets", "services", "replicationcontrollers", "count/serviceaccounts", "count/deployments.apps",
    "count/statefulsets.apps", "count/daemonsets.apps", "count/cronjobs.batch",
    "count/horizontalpodautoscalers.autoscaling", "count/poddisruptionbudgets.policy",
    "count/ingresses.networking.k8s.io", "count/networkpolicies.networking.k8s.io",
    "count/roles.rbac.authorization.k8s.io", "count/rolebindings.rbac.authorization.k8s.io",
    "count/leases.coordination.k8s.io", "count/trainingruntimes.trainer.kubeflow.org",
)
IN_BULK = ("count/jobs.batch", "count/jobsets.jobset.x-k8s.io", "count/trainjobs.trainer.kubeflow.org")
# Counted only where the stack serves the kind: ExternalSecrets with secrets.enabled (multi-pool),
# ResourceClaims and their templates on 1.34+ (every fixture runs 1.35).
SECRETS = {"count/externalsecrets.external-secrets.io": "1000"}
CLAIMS = {"count/resourceclaimtemplates.resource.k8s.io": "1000", "count/resourceclaims.resource.k8s.io": "10000"}
BASE = {
    **CLAIMS,
    "persistentvolumeclaims": "50",
    "requests.storage": "5000Gi",
    **dict.fromkeys(DECLARED, "1000"),
    **dict.fromkeys(IN_BULK, "10000"),
    "count/replicasets.apps": "11000",
    "count/pods": "10500",
    "pods": "500",
    "services.nodeports": "0",
    "requests.ephemeral-storage": "1000Gi",
    "limits.ephemeral-storage": "1000Gi",
}

RESOURCE_QUOTAS = [
    # cpu 32 + (12 + 4) x 16 on-demand + 4 x 16 spot = 352; memory 128 + 16 x 128 + 4 x 128 = 2688 GiB;
    # GPU slices 12 + 4 + 4 = 20.
    ("single-pool", "ml-research", {
        **BASE, "requests.cpu": "352", "requests.memory": "2688Gi", "limits.memory": "2688Gi",
        "requests.nvidia.com/gpu": "20", "services.loadbalancers": "0",
    }),
    # single-pool's numbers plus the DRA flavor: cpu 352 + 2 x 8 = 368; memory 2688 + 2 x 32 = 2752 GiB;
    # the two L4s counted under the DeviceClass's quota name, as a claim charges them.
    ("single-pool-dra", "ml-research", {
        **BASE, "requests.cpu": "368", "requests.memory": "2752Gi", "limits.memory": "2752Gi",
        "requests.nvidia.com/gpu": "20", DRA_GPU: "2", "services.loadbalancers": "0",
    }),
    # cpu 16 + (12 + 4) x 16 = 272; memory 64 + 16 x 128 = 2112 GiB; lending changes nothing here.
    ("single-pool", "inference", {
        **BASE, "requests.cpu": "272", "requests.memory": "2112Gi", "limits.memory": "2112Gi",
        "requests.nvidia.com/gpu": "16", "services.loadbalancers": "1",
    }),
    # H100 16 + 12 = 28 GPUs, A100 8 + 8 = 16: cpu 64 + 28 x 24 + 16 x 12 = 928;
    # memory 256 + 28 x 256 + 16 x 144 = 9728 GiB; MIG 28 x (2, 1, 1).
    ("multi-pool", "llm-training", {
        **BASE, **SECRETS, "requests.cpu": "928", "requests.memory": "9728Gi", "limits.memory": "9728Gi",
        "requests.nvidia.com/gpu": "16", f"requests.{MIG_1G}": "56", f"requests.{MIG_2G}": "28",
        f"requests.{MIG_3G}": "28", "services.loadbalancers": "0",
    }),
    # H100 8, L40S 12 + 4 = 16: cpu 64 + 8 x 24 + 16 x 24 = 640; memory 256 + 8 x 256 + 16 x 192 = 5376 GiB.
    ("multi-pool", "inference", {
        **BASE, **SECRETS, "requests.cpu": "640", "requests.memory": "5376Gi", "limits.memory": "5376Gi",
        "requests.nvidia.com/gpu": "16", f"requests.{MIG_1G}": "16", f"requests.{MIG_2G}": "8",
        f"requests.{MIG_3G}": "8", "services.loadbalancers": "2",
    }),
    # H100 16, A100 8, L40S 4 + 8 = 12: cpu 128 + 16 x 24 + 8 x 12 + 12 x 24 = 896;
    # memory 512 + 16 x 256 + 8 x 144 + 12 x 192 = 8064 GiB; whole GPUs 8 + 12 = 20.
    ("multi-pool", "data-science", {
        **BASE, **SECRETS, "requests.cpu": "896", "requests.memory": "8064Gi", "limits.memory": "8064Gi",
        "requests.nvidia.com/gpu": "20", f"requests.{MIG_1G}": "32", f"requests.{MIG_2G}": "16",
        f"requests.{MIG_3G}": "16", "services.loadbalancers": "0",
    }),
    # Borrowing only: H100 8, A100 8: cpu 16 + 8 x 24 + 8 x 12 = 304; memory 64 + 8 x 256 + 8 x 144 = 3264 GiB.
    ("multi-pool", "experiments", {
        **BASE, **SECRETS, "requests.cpu": "304", "requests.memory": "3264Gi", "limits.memory": "3264Gi",
        "requests.nvidia.com/gpu": "8", f"requests.{MIG_1G}": "16", f"requests.{MIG_2G}": "8",
        f"requests.{MIG_3G}": "8", "services.loadbalancers": "0",
    }),
]


@pytest.mark.parametrize("fixture, name, hard", RESOURCE_QUOTAS, ids=[f"{c[0]}-{c[1]}" for c in RESOURCE_QUOTAS])
def test_each_tenants_resource_quota_is_exactly_what_kueue_can_admit(fixture, name, hard):
    assert tenant(fixture, name).resource_quota == hard


def test_a_tenant_may_change_its_pod_claim_storage_and_load_balancer_limits():
    document = fixture_document("single-pool")
    document["gpu-platform:tenants"][0].update(
        maxPods=40, maxVolumeClaims=3, ephemeralStorageGiB=200, volumeStorageGiB=300, maxObjects=60, network={"loadBalancers": 5}
    )
    hard = next(t for t in load(document).tenants if t.name == "ml-research").resource_quota
    assert (hard["pods"], hard["persistentvolumeclaims"], hard["services.loadbalancers"]) == ("40", "3", "5")
    assert (hard["requests.ephemeral-storage"], hard["limits.ephemeral-storage"]) == ("200Gi", "200Gi")
    assert hard["services.nodeports"] == "0"
    assert hard["requests.storage"] == "300Gi"
    assert {kind: hard[kind] for kind in DECLARED} == dict.fromkeys(DECLARED, "60")
    assert {kind: hard[kind] for kind in IN_BULK} == dict.fromkeys(IN_BULK, "600")
    assert (hard["count/replicasets.apps"], hard["count/pods"]) == ("660", "640")


def test_covered_resources_list_cpu_memory_then_every_gpu_resource_sorted():
    assert tenant("multi-pool", "inference").covered_resources == ["cpu", "memory", GPU, MIG_1G, MIG_2G, MIG_3G]
    # A tenant without GPU quota still covers nvidia.com/gpu, so its ClusterQueue admits none.
    assert tenant("single-pool", "ml-research").covered_resources == ["cpu", "memory", GPU]


def test_a_tenants_cohort_is_its_business_unit_else_the_root_and_its_priority_the_tiers_value():
    assert [(t.name, t.cohort, t.priority_value) for t in plan("multi-pool").tenants] == [
        ("llm-training", "research", 1000),
        ("inference", "product", 1000),
        ("data-science", "research", 500),
        ("experiments", "product", 100),
    ]
    assert [(t.name, t.cohort, t.priority_value) for t in plan("single-pool").tenants] == [
        ("ml-research", "gpu-dev", 500),
        ("inference", "gpu-dev", 1000),
    ]


# --- per flavor: what the tenant's ClusterQueue gets ------------------------------------------------


def resources(fixture: str, tenant_name: str, flavor_name: str) -> dict:
    return next(q for q in tenant(fixture, tenant_name).quotas if q.flavor.name == flavor_name).resources()


def test_a_quota_is_nominal_borrowing_and_lending_units_times_each_resource_per_unit():
    # inference on h100-on-demand: 8 GPUs, lending 4; 24 vCPU and 256 GiB per GPU, MIG 2 + 1 + 1.
    assert resources("multi-pool", "inference", "h100-on-demand") == {
        MIG_1G: (16, 0, 8), MIG_2G: (8, 0, 4), MIG_3G: (8, 0, 4), "cpu": (192, 0, 96), "memory": (2048, 0, 1024),
    }
    # inference on l40s-on-demand: 12 GPUs + 4 borrowed, no lending limit; 24 vCPU and 192 GiB per GPU.
    assert resources("multi-pool", "inference", "l40s-on-demand") == {
        GPU: (12, 4, None), "cpu": (288, 96, None), "memory": (2304, 768, None),
    }
    # ml-research on l40s-spot: 4 slices of 16 vCPU and 128 GiB.
    assert resources("single-pool", "ml-research", "l40s-spot") == {
        GPU: (4, 0, None), "cpu": (64, 0, None), "memory": (512, 0, None),
    }


def test_what_kueue_can_admit_is_the_tenants_own_cpu_and_memory_plus_nominal_and_borrowing_everywhere():
    # Worked out beside RESOURCE_QUOTAS; in cores, GiB and devices.
    assert tenant("multi-pool", "data-science").admissible() == {
        "cpu": 896, "memory": 8064, GPU: 20, MIG_1G: 32, MIG_2G: 16, MIG_3G: 16,
    }
    assert tenant("single-pool", "inference").admissible() == {"cpu": 272, "memory": 2112, GPU: 16}


# --- platform-served model servers: sized per unit, so Kueue admits one per unit ----------------------

SERVER_SIZES = [
    # g6e.xlarge is the smallest per GPU (4 vCPU, 32 GiB); half of it, split among 4 slices: 500m, 4 GiB.
    ("single-pool", "l40s-on-demand", "500m", "4Gi"),
    # p4d.24xlarge: half of 12 vCPU and 144 GiB per GPU.
    ("multi-pool", "a100-spot", "6", "72Gi"),
    # g6e.12xlarge is the smallest per GPU (12 vCPU, 96 GiB): half of it.
    ("multi-pool", "l40s-on-demand", "6", "48Gi"),
]


@pytest.mark.parametrize("fixture, name, cpu, memory", SERVER_SIZES)
def test_a_model_server_replica_gets_half_the_smallest_nodes_share_per_gpu_split_among_its_slices(fixture, name, cpu, memory):
    from components.autoscaling.vllm import server_cpu_memory

    assert server_cpu_memory(flavor(fixture, name), 1) == (cpu, memory)


@pytest.mark.parametrize("fixture", ["single-pool", "multi-pool", "single-pool-dra"])
def test_kueue_admits_as_many_model_server_replicas_as_the_flavors_units(fixture):
    # A replica of n units requests n x the per-unit server share; Kueue admits n x cpu_per_unit and
    # memory_gib_per_unit with each unit, so cpu and memory never admit fewer replicas than the GPU
    # units the config check counts (config/fair_share.py, _check_inference).
    for found in plan(fixture).flavors:
        assert found.server_cpu_millis_per_unit <= found.cpu_per_unit * 1000, found.name
        assert found.server_memory_mib_per_unit <= found.memory_gib_per_unit * 1024, found.name
        assert found.server_cpu_millis_per_unit > 0 and found.server_memory_mib_per_unit > 0, found.name
