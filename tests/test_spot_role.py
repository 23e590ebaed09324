"""The EC2 Spot service-linked role: created when a pool allows spot and the account lacks it, kept on destroy.

Upstream (aws/karpenter-provider-aws v1.14.1): without the role EC2 answers spot launches with
AuthFailure.ServiceLinkedRoleCreationNotPermitted (pkg/errors/errors.go), Karpenter marks spot
unavailable (pkg/providers/instance/instance.go), and its controller policy may not create the role;
the getting-started creates it by hand (scripts/step06-add-spot-role.sh).

The role is account-wide: IAM refuses a second one ("Service role name AWSServiceRoleForEC2Spot has
been taken in this account"), so a stack asks IAM (`aws.iam.get_roles`) before it declares one.
"""

from __future__ import annotations

import pulumi
import pytest

from offline.cloud import Account, CloudMocks, ServiceRoleTaken

from .conftest import fixture_document, load, render, render_fixture

SERVICE_LINKED_ROLE = "aws:iam/serviceLinkedRole:ServiceLinkedRole"
NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"
SPOT = "spot.amazonaws.com"
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


def test_the_fake_account_refuses_a_second_spot_role_as_iam_does():
    mocks = CloudMocks(stack="dev", region="us-west-2", account=Account(service_linked_roles={SPOT}))
    args = pulumi.runtime.MockResourceArgs(SERVICE_LINKED_ROLE, "spot", {"awsServiceName": SPOT}, "", "", False)
    with pytest.raises(ServiceRoleTaken) as raised:
        mocks.new_resource(args)
    assert "Service role name AWSServiceRoleForEC2Spot has been taken in this account" in str(raised.value)
    fresh = CloudMocks(stack="dev", region="us-west-2", account=Account())
    assert fresh.new_resource(args)[1]["name"] == "AWSServiceRoleForEC2Spot"


def allows_spot(pool) -> bool:
    return any(
        term["key"] == "karpenter.sh/capacity-type" and "spot" in term["values"]
        for term in pool.inputs["spec"]["template"]["spec"]["requirements"]
    )


def test_dev_then_prod_into_one_account_then_destroy_and_redeploy_each_succeed():
    """Two stacks in one account, a destroy of both and a re-deploy: each `up` declares the role only while none exists."""
    account = Account()
    # dev's first `up` in a fresh account creates the role.
    dev = render_fixture("single-pool")
    assert [role.inputs["awsServiceName"] for role in dev.by_type(SERVICE_LINKED_ROLE)] == [SPOT]
    account.deployed(dev)
    assert account.service_linked_roles == {SPOT}

    # prod's first `up` finds it (the mock answers the lookup from what dev created) and creates none.
    prod = render(fixture_document("multi-pool"), "multi-pool", account=account)
    assert prod.by_type(SERVICE_LINKED_ROLE) == []
    assert any(allows_spot(pool) for pool in prod.by_type(NODEPOOL)), "prod's spot pool launches with dev's role"
    account.deployed(prod)
    assert account.clusters == {"gpu-dev", "gpu-prod"}

    # Both destroyed: the clusters go, the role stays (retain_on_delete), as other stacks may use it.
    account.destroyed(prod)
    account.destroyed(dev)
    assert (account.clusters, account.service_linked_roles) == (set(), {SPOT})

    # dev again: a fresh cluster, and no second role.
    again = render(fixture_document("single-pool"), "single-pool", account=account)
    assert again.by_type(SERVICE_LINKED_ROLE) == []
    assert [c.inputs["name"] for c in again.by_type("eks:index:Cluster")] == ["gpu-dev"]


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
    assert load(doc).uses_spot is creates
