"""The VPC: public and private subnets per zone, NAT per the configured mode, endpoints, optional flow logs."""

from __future__ import annotations

from collections.abc import Mapping

import pulumi
from pulumi_aws import cloudwatch, ec2, iam

from config.labels import DISCOVERY_TAG
from config.platform import NetworkPlan

from .lib import iam as policies


class Network(pulumi.ComponentResource):
    """A VPC laid out for EKS and Karpenter.

    Private subnets hold every node and pod and carry the `karpenter.sh/discovery` tag Karpenter's
    node classes select on; public subnets hold only NAT gateways and internet-facing load balancers.
    """

    vpc_id: pulumi.Output[str]
    public_subnet_ids: list[pulumi.Output[str]]
    private_subnet_ids: list[pulumi.Output[str]]

    def __init__(
        self,
        name: str,
        plan: NetworkPlan,
        *,
        cluster_name: str,
        region: str,
        account_id: pulumi.Input[str],
        partition: pulumi.Input[str],
        tags: Mapping[str, str],
        protect: bool,
        flow_log_retention_days: int | None,
        ecr_endpoints: bool = False,
        opts: pulumi.ResourceOptions | None = None,
    ):
        """
        :param plan: `PlatformConfig.network`: zones, CIDRs, NAT layout.
        :param region: `PlatformConfig.region`; names the endpoints' services.
        :param account_id: the stack's account; the flow-logs role trusts only its flow logs.
        :param partition: `aws`, `aws-cn`, ...: the partition of the flow logs' ARNs.
        :param flow_log_retention_days: days to keep flow logs, or None for no flow logs
            (`cluster.network.flowLogs`).
        :param ecr_endpoints: `cluster.network.ecrEndpoints`: add ECR's interface endpoints.
        """
        super().__init__("gpu-platform:network:Network", name, None, opts)

        vpc = ec2.Vpc(
            f"{name}-vpc",
            cidr_block=plan.vpc_cidr,
            enable_dns_hostnames=True,
            enable_dns_support=True,
            tags={**tags, "Name": f"{cluster_name}-vpc"},
            opts=pulumi.ResourceOptions(parent=self, protect=protect),
        )
        vpc_child = pulumi.ResourceOptions(parent=vpc)
        gateway = ec2.InternetGateway(
            f"{name}-igw", vpc_id=vpc.id, tags={**tags, "Name": f"{cluster_name}-igw"}, opts=vpc_child
        )

        public_routes = ec2.RouteTable(
            f"{name}-public",
            vpc_id=vpc.id,
            routes=[ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=gateway.id)],
            tags={**tags, "Name": f"{cluster_name}-public"},
            opts=vpc_child,
        )

        public_subnets: list[ec2.Subnet] = []
        private_subnets: list[ec2.Subnet] = []
        private_route_tables: list[ec2.RouteTable] = []
        nat_gateways: list[ec2.NatGateway] = []
        for subnet in plan.subnets:
            zone = subnet.availability_zone
            public = ec2.Subnet(
                f"{name}-public-{zone}",
                vpc_id=vpc.id,
                cidr_block=subnet.public_cidr,
                availability_zone=zone,
                # Nodes live in private subnets; nothing launched here needs a public address by default.
                map_public_ip_on_launch=False,
                tags={**tags, **subnet_tags("public", cluster_name), "Name": f"{cluster_name}-public-{zone}"},
                opts=vpc_child,
            )
            ec2.RouteTableAssociation(
                f"{name}-public-{zone}", subnet_id=public.id, route_table_id=public_routes.id, opts=vpc_child
            )
            public_subnets.append(public)

            if plan.nat_per_az or not nat_gateways:
                address = ec2.Eip(
                    f"{name}-nat-{zone}", domain="vpc", tags={**tags, "Name": f"{cluster_name}-nat-{zone}"}, opts=vpc_child
                )
                nat_gateways.append(
                    ec2.NatGateway(
                        f"{name}-nat-{zone}",
                        allocation_id=address.id,
                        subnet_id=public.id,
                        tags={**tags, "Name": f"{cluster_name}-nat-{zone}"},
                        # A NAT gateway needs the internet gateway attached before it can route.
                        opts=pulumi.ResourceOptions(parent=vpc, depends_on=[gateway]),
                    )
                )

            private = ec2.Subnet(
                f"{name}-private-{zone}",
                vpc_id=vpc.id,
                cidr_block=subnet.private_cidr,
                availability_zone=zone,
                tags={**tags, **subnet_tags("private", cluster_name), "Name": f"{cluster_name}-private-{zone}"},
                opts=vpc_child,
            )
            private_routes = ec2.RouteTable(
                f"{name}-private-{zone}",
                vpc_id=vpc.id,
                # Single-NAT mode sends every zone through the first zone's gateway.
                routes=[ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", nat_gateway_id=nat_gateways[-1].id)],
                tags={**tags, "Name": f"{cluster_name}-private-{zone}"},
                opts=vpc_child,
            )
            ec2.RouteTableAssociation(
                f"{name}-private-{zone}", subnet_id=private.id, route_table_id=private_routes.id, opts=vpc_child
            )
            private_subnets.append(private)
            private_route_tables.append(private_routes)

        ec2.VpcEndpoint(
            f"{name}-s3",
            vpc_id=vpc.id,
            service_name=endpoint_service(region, "s3"),
            vpc_endpoint_type="Gateway",
            route_table_ids=[table.id for table in private_route_tables],
            tags={**tags, "Name": f"{cluster_name}-s3"},
            opts=vpc_child,
        )
        if ecr_endpoints:
            self._ecr_endpoints(name, cluster_name, region, vpc, private_subnets, tags)

        if flow_log_retention_days is not None:
            trust = pulumi.Output.all(partition, account_id).apply(
                lambda resolved: policies.to_json(policies.flow_logs_trust_policy(resolved[0], region, resolved[1]))
            )
            self._flow_logs(name, cluster_name, vpc, trust, tags, flow_log_retention_days)

        self.vpc_id = vpc.id
        self.public_subnet_ids = [subnet.id for subnet in public_subnets]
        self.private_subnet_ids = [subnet.id for subnet in private_subnets]
        self.register_outputs(
            {"vpcId": self.vpc_id, "publicSubnetIds": self.public_subnet_ids, "privateSubnetIds": self.private_subnet_ids}
        )

    def _ecr_endpoints(
        self,
        name: str,
        cluster_name: str,
        region: str,
        vpc: ec2.Vpc,
        subnets: list[ec2.Subnet],
        tags: Mapping[str, str],
    ) -> None:
        """ECR's API and registry endpoints in every private subnet, reachable on 443 from the whole VPC.

        With private DNS on, the regional ECR names resolve to the endpoints inside the VPC, so nodes
        pull without any configuration of their own.
        """
        group = ec2.SecurityGroup(
            f"{name}-ecr-endpoints",
            name=f"{cluster_name}-ecr-endpoints",
            description=f"HTTPS from the VPC of {cluster_name} to its ECR endpoints",
            vpc_id=vpc.id,
            ingress=[
                ec2.SecurityGroupIngressArgs(
                    protocol="tcp", from_port=443, to_port=443, cidr_blocks=[vpc.cidr_block], description="HTTPS from the VPC"
                )
            ],
            tags={**tags, "Name": f"{cluster_name}-ecr-endpoints"},
            opts=pulumi.ResourceOptions(parent=vpc),
        )
        for service in ECR_SERVICES:
            ec2.VpcEndpoint(
                f"{name}-{service.replace('.', '-')}",
                vpc_id=vpc.id,
                service_name=endpoint_service(region, service),
                vpc_endpoint_type="Interface",
                subnet_ids=[subnet.id for subnet in subnets],
                security_group_ids=[group.id],
                private_dns_enabled=True,
                tags={**tags, "Name": f"{cluster_name}-{service}"},
                opts=pulumi.ResourceOptions(parent=vpc),
            )

    def _flow_logs(
        self, name: str, cluster_name: str, vpc: ec2.Vpc, trust: pulumi.Input[str], tags: Mapping[str, str], retention_days: int
    ) -> None:
        log_group = cloudwatch.LogGroup(
            f"{name}-flow-logs",
            name=f"/aws/vpc/{cluster_name}/flow-logs",
            retention_in_days=retention_days,
            tags=dict(tags),
            opts=pulumi.ResourceOptions(parent=vpc),
        )
        role = iam.Role(
            f"{name}-flow-logs",
            name=f"{cluster_name}-vpc-flow-logs",
            assume_role_policy=trust,
            tags=dict(tags),
            opts=pulumi.ResourceOptions(parent=vpc),
        )
        iam.RolePolicy(
            f"{name}-flow-logs",
            role=role.id,
            policy=log_group.arn.apply(lambda arn: policies.to_json(policies.flow_logs_delivery_policy(arn))),
            opts=pulumi.ResourceOptions(parent=role),
        )
        ec2.FlowLog(
            f"{name}-flow-logs",
            vpc_id=vpc.id,
            traffic_type="ALL",
            log_destination_type="cloud-watch-logs",
            log_destination=log_group.arn,
            iam_role_arn=role.arn,
            tags=dict(tags),
            opts=pulumi.ResourceOptions(parent=vpc),
        )


# ECR's two interface endpoints: the registry API (auth tokens, image metadata) and the Docker registry
# (manifests); layers come from S3, through the gateway endpoint.
ECR_SERVICES = ("ecr.api", "ecr.dkr")


def endpoint_service(region: str, service: str) -> str:
    """`com.amazonaws.us-west-2.s3`: the VPC endpoint service name of an AWS service in `region`."""
    return f"com.amazonaws.{region}.{service}"


def subnet_tags(role: str, cluster_name: str) -> dict[str, str]:
    """Tags that tell load balancers and Karpenter which subnets to use.

    Public subnets take internet-facing load balancers; private ones internal load balancers, and
    they are the only subnets Karpenter launches nodes into.
    """
    if role == "public":
        return {"kubernetes.io/role/elb": "1"}
    return {"kubernetes.io/role/internal-elb": "1", DISCOVERY_TAG: cluster_name}
