"""The EC2 Spot service-linked role: created when a pool allows spot, kept on destroy, waited for by spot pools.

Upstream (aws/karpenter-provider-aws v1.14.1): without the role EC2 answers spot launches with
AuthFailure.ServiceLinkedRoleCreationNotPermitted (pkg/errors/errors.go), Karpenter marks spot
unavailable (pkg/providers/instance/instance.go), and its controller policy may not create the role;
the getting-started creates it by hand (scripts/step06-add-spot-role.sh).
"""

from __future__ import annotations

import pytest

from .conftest import fixture_document, load, render, render_fixture

SERVICE_LINKED_ROLE = "aws:iam/serviceLinkedRole:ServiceLinkedRole"
NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"
CLUSTER = "gpu-platform:cluster"


def test_a_stack_whose_pools_allow_spot_creates_the_spot_role_and_keeps_it_on_destroy():
    [role] = render_fixture("multi-pool").by_type(SERVICE_LINKED_ROLE)
    assert role.inputs["awsServiceName"] == "spot.amazonaws.com"
    assert role.retain_on_delete, "the role is account-wide: other stacks may launch spot with it"


@pytest.mark.parametrize(
    "fixture, waiting",
    [
        # Only gpu-a100 allows spot; gpu-h100, gpu-l40s and the CPU pool are on-demand.
        ("multi-pool", {"gpu-prod-pools-gpu-a100"}),
        # The GPU pool mixes on-demand and spot, and so does the CPU pool.
        ("single-pool", {"gpu-dev-pools-gpu-l40s", "gpu-dev-pools-cpu"}),
    ],
)
def test_exactly_the_node_pools_that_allow_spot_wait_for_the_spot_role(fixture, waiting):
    recording = render_fixture(fixture)
    [role] = recording.by_type(SERVICE_LINKED_ROLE)
    assert {pool.name for pool in recording.by_type(NODEPOOL) if role.urn in pool.dependencies} == waiting


def test_an_account_that_already_has_the_role_says_so_and_the_stack_creates_none():
    doc = fixture_document("single-pool")
    doc[CLUSTER]["createSpotServiceLinkedRole"] = False
    recording = render(doc)
    assert recording.by_type(SERVICE_LINKED_ROLE) == []
    assert len(recording.by_type(NODEPOOL)) == 2


def on_demand_only(doc):
    for pool in doc["gpu-platform:nodePools"]:
        pool["capacityTypes"] = ["on-demand"]
    doc["gpu-platform:cpuPool"]["capacityTypes"] = ["on-demand"]
    return doc


def spot_only_in_cpu_pool(doc):
    doc = on_demand_only(doc)
    doc["gpu-platform:cpuPool"]["capacityTypes"] = ["spot"]
    return doc


@pytest.mark.parametrize(
    "change, creates",
    [
        pytest.param(lambda doc: doc, True, id="gpu-and-cpu-pools-allow-spot"),
        pytest.param(spot_only_in_cpu_pool, True, id="only-the-cpu-pool-allows-spot"),
        pytest.param(on_demand_only, False, id="no-pool-allows-spot"),
    ],
)
def test_the_role_is_created_when_any_pool_gpu_or_cpu_allows_spot(change, creates):
    doc = change(fixture_document("single-pool"))
    # Kueue's per-capacity-type flavors and the tenants' quotas on them need both types; they are not the point here.
    doc["gpu-platform:queueing"]["flavorPerCapacityType"] = []
    doc["gpu-platform:tenants"] = []
    assert load(doc).creates_spot_service_linked_role is creates
