"""The VPC as the engine records it: subnets, their tags, NAT per mode, routes, flow logs."""

from __future__ import annotations

import json

import pytest

from .conftest import fixture_document, render, render_fixture, short

SUBNET = "aws:ec2/subnet:Subnet"
NAT = "aws:ec2/natGateway:NatGateway"
ROUTE_TABLE = "aws:ec2/routeTable:RouteTable"


def subnets(recording, kind):
    return sorted((r for r in recording.by_type(SUBNET) if f"-{kind}-" in r.name), key=lambda r: r.name)


def test_private_subnets_are_tagged_for_internal_load_balancers_and_karpenter_discovery(recording):
    cluster_name = recording.outputs["clusterName"]
    private = subnets(recording, "private")
    assert private
    for subnet in private:
        tags = subnet.inputs["tags"]
        assert tags["kubernetes.io/role/internal-elb"] == "1"
        assert tags["karpenter.sh/discovery"] == cluster_name
        assert "kubernetes.io/role/elb" not in tags


def test_public_subnets_are_tagged_for_internet_facing_load_balancers_only(recording):
    for subnet in subnets(recording, "public"):
        tags = subnet.inputs["tags"]
        assert tags["kubernetes.io/role/elb"] == "1"
        assert "karpenter.sh/discovery" not in tags, "Karpenter must never launch nodes into public subnets"
        assert subnet.inputs["mapPublicIpOnLaunch"] is False


@pytest.mark.parametrize("fixture, zones, nat_gateways", [("single-pool", 2, 1), ("multi-pool", 3, 3)])
def test_one_public_and_one_private_subnet_per_zone_and_nat_per_mode(fixture, zones, nat_gateways):
    recording = render_fixture(fixture)
    assert len(subnets(recording, "public")) == zones
    assert len(subnets(recording, "private")) == zones
    assert len({s.inputs["availabilityZone"] for s in recording.by_type(SUBNET)}) == zones
    assert len(recording.by_type(NAT)) == nat_gateways


def test_with_nat_per_zone_each_private_subnet_routes_through_its_own_zones_gateway():
    recording = render_fixture("multi-pool")
    for table in recording.by_type(ROUTE_TABLE):
        if "-private-" not in table.name:
            continue
        zone = table.name.rsplit("-private-", 1)[1]
        [nat_dependency] = table.property_dependencies["routes"]
        assert short(nat_dependency).endswith(f"-nat-{zone}")


def test_with_a_single_nat_every_private_subnet_routes_through_the_one_gateway():
    recording = render_fixture("single-pool")
    [nat] = recording.by_type(NAT)
    private_tables = [t for t in recording.by_type(ROUTE_TABLE) if "-private-" in t.name]
    assert len(private_tables) == 2
    assert {t.property_dependencies["routes"] for t in private_tables} == {(nat.urn,)}


def test_the_public_route_table_sends_default_traffic_to_the_internet_gateway():
    recording = render_fixture("single-pool")
    [public] = [t for t in recording.by_type(ROUTE_TABLE) if t.name.endswith("-public")]
    [route] = public.inputs["routes"]
    assert route["cidrBlock"] == "0.0.0.0/0"
    assert short(public.property_dependencies["routes"][0]).endswith("-igw")


def test_flow_logs_follow_config():
    assert recording_types(render_fixture("single-pool")).isdisjoint({"aws:ec2/flowLog:FlowLog"})
    multi_pool = render_fixture("multi-pool")
    [flow_log] = multi_pool.by_type("aws:ec2/flowLog:FlowLog")
    assert flow_log.inputs["trafficType"] == "ALL"
    [group] = [g for g in multi_pool.by_type("aws:cloudwatch/logGroup:LogGroup") if "flow-logs" in g.inputs["name"]]
    assert group.inputs["retentionInDays"] == 90


def test_flow_log_role_writes_only_to_its_log_group():
    multi_pool = render_fixture("multi-pool")
    [policy] = [p for p in multi_pool.by_type("aws:iam/rolePolicy:RolePolicy") if p.inputs["role"] == "gpu-prod-vpc-flow-logs"]
    [statement] = json.loads(policy.inputs["policy"])["Statement"]
    assert all(resource.startswith("arn:aws:logs:us-east-1:111122223333:log-group:/aws/vpc/gpu-prod/flow-logs")
               for resource in statement["Resource"])
    assert "logs:*" not in statement["Action"]


def test_logical_names_derive_from_the_cluster_name_and_zone():
    doc = fixture_document("single-pool")
    doc["gpu-platform:cluster"]["name"] = "research"
    names = {r.name for r in render(doc).by_type(SUBNET)}
    assert names == {
        "research-network-public-us-west-2a",
        "research-network-public-us-west-2b",
        "research-network-private-us-west-2a",
        "research-network-private-us-west-2b",
    }


def recording_types(recording):
    return {r.type for r in recording.resources}
