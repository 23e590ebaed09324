"""The quota numbers as the cluster receives them: the declared ResourceQuota, ClusterQueue and LimitRange.

tests/test_quota_derivation.py works the numbers out by hand from the fixtures; this checks that the
objects the program declares carry exactly those numbers (a render, so it stays out of the mutation
run's test selection).
"""

from __future__ import annotations

import pytest

from .conftest import render_fixture
from .test_quota_derivation import GPU, MIG_1G, MIG_2G, MIG_3G, RESOURCE_QUOTAS


@pytest.mark.parametrize("fixture, name, hard", RESOURCE_QUOTAS, ids=[f"{c[0]}-{c[1]}" for c in RESOURCE_QUOTAS])
def test_the_declared_resource_quota_is_the_derived_one(fixture, name, hard):
    [quota] = [
        r.inputs for r in render_fixture(fixture).resources
        if r.inputs.get("kind") == "ResourceQuota"
        and r.inputs["metadata"]["namespace"] == name
        and r.inputs["metadata"]["name"] == "tenant-quota"
    ]
    assert quota["spec"]["hard"] == hard


# --- the ClusterQueue: the same numbers, per flavor -------------------------------------------------


def cluster_queue(fixture: str, name: str) -> dict:
    [queue] = [
        r.inputs for r in render_fixture(fixture).resources
        if r.inputs.get("kind") == "ClusterQueue" and r.inputs["metadata"]["name"] == name
    ]
    return queue["spec"]


def quotas(*rows):
    return [
        {"name": name, "nominalQuota": nominal, "borrowingLimit": borrowing, **({"lendingLimit": lending} if lending else {})}
        for name, nominal, borrowing, lending in rows
    ]


def test_inference_cluster_queue_quotas_are_its_units_times_each_resource_per_unit():
    spec = cluster_queue("multi-pool", "inference")
    [group] = spec["resourceGroups"]
    assert group["coveredResources"] == ["cpu", "memory", GPU, MIG_1G, MIG_2G, MIG_3G]
    assert group["flavors"] == [
        # The CPU flavor: the tenant's own cpu and memory, nothing to borrow.
        {"name": "cpu", "resources": quotas(
            ("cpu", "64", "0", None), ("memory", "256Gi", "0Gi", None), (GPU, "0", "0", None),
            (MIG_1G, "0", "0", None), (MIG_2G, "0", "0", None), (MIG_3G, "0", "0", None),
        )},
        # 8 H100s, lending 4: cpu 8 x 24 = 192 (lends 96), memory 8 x 256 = 2048 GiB (lends 1024).
        {"name": "h100-on-demand", "resources": quotas(
            ("cpu", "192", "0", "96"), ("memory", "2048Gi", "0Gi", "1024Gi"), (GPU, "0", "0", None),
            (MIG_1G, "16", "0", "8"), (MIG_2G, "8", "0", "4"), (MIG_3G, "8", "0", "4"),
        )},
        # 12 L40S + 4 borrowed: cpu 12 x 24 = 288 (+96), memory 12 x 192 = 2304 GiB (+768).
        {"name": "l40s-on-demand", "resources": quotas(
            ("cpu", "288", "96", None), ("memory", "2304Gi", "768Gi", None), (GPU, "12", "4", None),
            (MIG_1G, "0", "0", None), (MIG_2G, "0", "0", None), (MIG_3G, "0", "0", None),
        )},
    ]
    assert spec["cohortName"] == "product"
    assert spec["fairSharing"] == {"weight": "1"}


def test_split_flavors_get_a_cluster_queue_entry_each_in_slices():
    [group] = cluster_queue("single-pool", "ml-research")["resourceGroups"]
    assert group["flavors"] == [
        {"name": "cpu", "resources": quotas(("cpu", "32", "0", None), ("memory", "128Gi", "0Gi", None), (GPU, "0", "0", None))},
        # 12 slices + 4 borrowed, 16 vCPU and 128 GiB a slice.
        {"name": "l40s-on-demand", "resources": quotas(
            ("cpu", "192", "64", None), ("memory", "1536Gi", "512Gi", None), (GPU, "12", "4", None),
        )},
        {"name": "l40s-spot", "resources": quotas(
            ("cpu", "64", "0", None), ("memory", "512Gi", "0Gi", None), (GPU, "4", "0", None),
        )},
    ]


def test_every_container_gets_defaults_for_what_the_quota_limits_and_no_cpu_limit():
    # The quota limits requests.cpu, requests.memory, limits.memory and ephemeral storage: a container that declares
    # none of them would be refused, so the LimitRange supplies each. No CPU limit: it only throttles.
    for fixture, tenants in (("single-pool", ["ml-research", "inference"]), ("multi-pool", ["llm-training", "experiments"])):
        for name in tenants:
            [limits] = [
                r.inputs for r in render_fixture(fixture).resources
                if r.inputs.get("kind") == "LimitRange" and r.inputs["metadata"]["namespace"] == name
            ]
            assert limits["metadata"]["name"] == "container-defaults"
            assert limits["spec"]["limits"] == [
                {
                    "type": "Container",
                    "defaultRequest": {"cpu": "100m", "memory": "256Mi", "ephemeral-storage": "1Gi"},
                    "default": {"memory": "1Gi", "ephemeral-storage": "10Gi"},
                }
            ]
