"""VPC endpoints: S3 through a gateway on every private route table; ECR's interface endpoints when asked for.

Image layers in ECR are served from S3, so the gateway endpoint keeps them (and model downloads from
S3) off the NAT gateways, which charge per GB.
"""

from __future__ import annotations

import pytest

from offline.summary import idle_inputs

from .conftest import fixture_document, load, render, render_fixture

ENDPOINT = "aws:ec2/vpcEndpoint:VpcEndpoint"
ROUTE_TABLE = "aws:ec2/routeTable:RouteTable"
SUBNET = "aws:ec2/subnet:Subnet"
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"


def endpoints(recording, kind: str):
    return [r for r in recording.by_type(ENDPOINT) if r.inputs["vpcEndpointType"] == kind]


@pytest.mark.parametrize("fixture, zones", [("single-pool", 2), ("multi-pool", 3)])
def test_the_s3_gateway_endpoint_is_on_every_private_route_table(fixture, zones):
    recording = render_fixture(fixture)
    [s3] = endpoints(recording, "Gateway")
    assert s3.inputs["serviceName"] == f"com.amazonaws.{fixture_document(fixture)['aws:region']}.s3"
    private_tables = {r.urn for r in recording.by_type(ROUTE_TABLE) if "-private-" in r.name}
    assert len(private_tables) == zones
    assert set(s3.property_dependencies["routeTableIds"]) == private_tables


def test_ecr_interface_endpoints_are_off_by_default(recording):
    assert endpoints(recording, "Interface") == []
    assert recording.by_type(SECURITY_GROUP) == []


def test_ecr_endpoints_serve_the_api_and_registry_in_every_private_subnet_over_https_from_the_vpc():
    doc = fixture_document("multi-pool")
    doc["gpu-platform:cluster"]["network"]["ecrEndpoints"] = True
    recording = render(doc)
    interface = endpoints(recording, "Interface")
    assert sorted(e.inputs["serviceName"] for e in interface) == [
        "com.amazonaws.us-east-1.ecr.api",
        "com.amazonaws.us-east-1.ecr.dkr",
    ]
    private_subnets = {r.urn for r in recording.by_type(SUBNET) if "-private-" in r.name}
    [group] = recording.by_type(SECURITY_GROUP)
    for endpoint in interface:
        assert endpoint.inputs["privateDnsEnabled"] is True
        assert set(endpoint.property_dependencies["subnetIds"]) == private_subnets
        assert endpoint.property_dependencies["securityGroupIds"] == (group.urn,)
    [rule] = group.inputs["ingress"]
    vpc_cidr = doc["gpu-platform:cluster"]["network"]["vpcCidr"]
    assert (rule["protocol"], rule["fromPort"], rule["toPort"], rule["cidrBlocks"]) == ("tcp", 443, 443, [vpc_cidr])
    # The summary's idle cost bills each interface endpoint in each of the three zones.
    assert idle_inputs(recording, load(doc)).interface_endpoint_zones == 6
