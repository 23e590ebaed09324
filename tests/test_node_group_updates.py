"""How a managed node group rolls a version update, and what that asks of EC2.

EKS's rule (models/aws_eks.py, from the EKS user guide's "Understand each phase of node updates" and the
API's NodegroupUpdateConfig): with the DEFAULT strategy the Auto Scaling group first grows by the larger
of twice its zones and `maxUnavailable`; with MINIMAL it grows by nothing, a node being drained and
terminated before its replacement launches. A DRA pool's GPUs are the scarce part: its version bump must
need no instance beyond the group's own size, or a bump the region cannot serve fails the `up` with the
control plane already on the new minor.
"""

from __future__ import annotations

import pytest

from models.aws_eks import update_surge, update_unavailable

from .conftest import render_fixture

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
SUBNET = "aws:ec2/subnet:Subnet"

# (strategy, maxUnavailable, zones) -> extra nodes. The user guide's own examples: five zones and
# maxUnavailable 1 "can launch a maximum of 10 nodes"; maxUnavailable 20 "would launch 20 new nodes".
SURGE = [
    ("DEFAULT", 1, 5, 10),
    ("DEFAULT", 20, 5, 20),
    ("DEFAULT", 1, 3, 6),
    ("DEFAULT", 7, 3, 7),
    ("DEFAULT", 6, 3, 6),
    ("DEFAULT", 1, 1, 2),
    ("MINIMAL", 1, 3, 0),
    ("MINIMAL", 20, 5, 0),
]
# (strategy, maxUnavailable, group size) -> nodes out of service at once.
UNAVAILABLE = [
    ("DEFAULT", 1, 8, 0),
    ("DEFAULT", 4, 2, 0),
    ("MINIMAL", 1, 8, 1),
    ("MINIMAL", 3, 8, 3),
    ("MINIMAL", 3, 2, 2),
]


@pytest.mark.parametrize("strategy, max_unavailable, zones, expected", SURGE)
def test_default_surges_by_twice_the_zones_or_max_unavailable_and_minimal_by_nothing(strategy, max_unavailable, zones, expected):
    assert update_surge(strategy, max_unavailable, zones) == expected


@pytest.mark.parametrize("strategy, max_unavailable, size, expected", UNAVAILABLE)
def test_minimal_takes_max_unavailable_nodes_out_and_default_none(strategy, max_unavailable, size, expected):
    assert update_unavailable(strategy, max_unavailable, size) == expected


@pytest.mark.parametrize("strategy, max_unavailable", [("ROLLING", 1), ("minimal", 1), ("MINIMAL", 0), ("DEFAULT", 101)])
def test_what_eks_does_not_take_is_refused(strategy, max_unavailable):
    with pytest.raises(ValueError):
        update_surge(strategy, max_unavailable, 3)


def group_update(recording, name: str) -> tuple[str, int, int, int]:
    """A recorded node group's (strategy, maxUnavailable, zones, desired size); its subnets are one per zone."""
    group = recording.named(NODE_GROUP, name).inputs
    zones = {s.inputs["availabilityZone"] for s in recording.by_type(SUBNET) if "private" in s.name}
    assert len(group["subnetIds"]) == len(zones)
    settings = group["updateConfig"]
    return settings["updateStrategy"], settings["maxUnavailable"], len(zones), group["scalingConfig"]["desiredSize"]


def test_a_dra_pools_version_bump_needs_no_instance_beyond_the_groups_size():
    strategy, max_unavailable, zones, size = group_update(render_fixture("single-pool-dra"), "gpu-dev-dra-nodes-gpu-l4-dra")
    assert update_surge(strategy, max_unavailable, zones) == 0
    # One of its two L4 nodes at a time is drained and replaced; the other keeps serving claims.
    assert update_unavailable(strategy, max_unavailable, size) == 1
    # The same group under EKS's default strategy would first ask for two more nodes in each of its two zones.
    assert update_surge("DEFAULT", max_unavailable, zones) == 4


def test_the_system_nodes_keep_their_capacity_through_a_bump_and_surge_by_twice_their_zones():
    strategy, max_unavailable, zones, size = group_update(render_fixture("single-pool-dra"), "gpu-dev-system-nodes")
    assert (strategy, max_unavailable, zones) == ("DEFAULT", 1, 2)
    assert update_unavailable(strategy, max_unavailable, size) == 0
    assert update_surge(strategy, max_unavailable, zones) == 4
