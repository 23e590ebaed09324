"""A fake AWS account for the mock engine: realistic, deterministic outputs for what the program reads.

IDs and ARNs are derived from the resource's type and name, so the same program gives the same
render. An invoke the program makes that is not handled here fails the run: a new lookup must be
given a realistic answer on purpose, never a silent empty one.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi

ACCOUNT_ID = "111122223333"
# Who runs `pulumi up` in the fake account: a role assumed through STS, as from CI or SSO. Its ARN
# here is the role's, path included; the caller identity is the STS session of it.
DEPLOYER_ARN = f"arn:aws:iam::{ACCOUNT_ID}:role/PlatformDeploy"
# Service-linked roles by the service that assumes them: IAM names each role for its service
# (IAM User Guide, "AWS services that work with IAM"), and an account has at most one of each.
STACK_REFERENCE = "pulumi:pulumi:StackReference"
SERVICE_LINKED_ROLE_NAMES = {"spot.amazonaws.com": "AWSServiceRoleForEC2Spot"}
SERVICE_LINKED_ROLE = "aws:iam/serviceLinkedRole:ServiceLinkedRole"
EKS_CLUSTER = "eks:index:Cluster"


@dataclass
class Account:
    """What the fake AWS account holds between runs: EKS clusters, and account-wide service-linked roles.

    A fresh `Account()` is the first `pulumi up` in a new account. `deployed` and `destroyed` apply what
    a run declared, as `pulumi up` and `pulumi destroy` would leave the account, so that several stacks
    and runs can follow one another into the same account.
    """

    clusters: set[str] = field(default_factory=set)
    service_linked_roles: set[str] = field(default_factory=set)  # by service, e.g. spot.amazonaws.com
    # The account's zone name -> zone ID mapping, by region; None: `fake_zone_ids`.
    zone_ids: dict[str, dict[str, str]] | None = None

    def deployed(self, recording: Any) -> None:
        """After `pulumi up` of `recording`: its clusters and service-linked roles exist."""
        for resource in recording.resources:
            if resource.type == EKS_CLUSTER:
                self.clusters.add(resource.inputs["name"])
            if resource.type == SERVICE_LINKED_ROLE:
                self.service_linked_roles.add(resource.inputs["awsServiceName"])

    def destroyed(self, recording: Any) -> None:
        """After `pulumi destroy` of `recording`: what it declared is gone, except what it retains on delete."""
        for resource in recording.resources:
            if resource.retain_on_delete:
                continue
            if resource.type == EKS_CLUSTER:
                self.clusters.discard(resource.inputs["name"])
            if resource.type == SERVICE_LINKED_ROLE:
                self.service_linked_roles.discard(resource.inputs["awsServiceName"])


class ServiceRoleTaken(Exception):
    """IAM's answer to CreateServiceLinkedRole for a role the account already has."""
# Partitions other than `aws`, by region prefix, with their DNS suffix.
_PARTITIONS = {"cn-": ("aws-cn", "amazonaws.com.cn"), "us-gov-": ("aws-us-gov", "amazonaws.com")}

# Resource type -> (id prefix, ARN template or None). `{region}`, `{account}`, `{name}`, `{id}` are filled in.
_AWS_RESOURCES: dict[str, tuple[str, str | None]] = {
    "aws:ec2/vpc:Vpc": ("vpc", "arn:aws:ec2:{region}:{account}:vpc/{id}"),
    "aws:ec2/subnet:Subnet": ("subnet", "arn:aws:ec2:{region}:{account}:subnet/{id}"),
    "aws:ec2/internetGateway:InternetGateway": ("igw", "arn:aws:ec2:{region}:{account}:internet-gateway/{id}"),
    "aws:ec2/routeTable:RouteTable": ("rtb", "arn:aws:ec2:{region}:{account}:route-table/{id}"),
    "aws:ec2/routeTableAssociation:RouteTableAssociation": ("rtbassoc", None),
    "aws:ec2/eip:Eip": ("eipalloc", "arn:aws:ec2:{region}:{account}:elastic-ip/{id}"),
    "aws:ec2/natGateway:NatGateway": ("nat", None),
    "aws:ec2/launchTemplate:LaunchTemplate": ("lt", "arn:aws:ec2:{region}:{account}:launch-template/{id}"),
    "aws:ec2/flowLog:FlowLog": ("fl", "arn:aws:ec2:{region}:{account}:vpc-flow-log/{id}"),
    "aws:ec2/tag:Tag": ("tag", None),
    "aws:kms/key:Key": ("key", "arn:aws:kms:{region}:{account}:key/{id}"),
    "aws:kms/alias:Alias": ("alias", "arn:aws:kms:{region}:{account}:{name}"),
    "aws:cloudwatch/logGroup:LogGroup": ("lg", "arn:aws:logs:{region}:{account}:log-group:{name}"),
    "aws:iam/role:Role": ("role", "arn:aws:iam::{account}:role/{name}"),
    "aws:iam/policy:Policy": ("policy", "arn:aws:iam::{account}:policy/{name}"),
    "aws:iam/rolePolicy:RolePolicy": ("rp", None),
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": ("rpa", None),
    "aws:eks/addon:Addon": ("addon", "arn:aws:eks:{region}:{account}:addon/{name}"),
    "aws:eks/nodeGroup:NodeGroup": ("ng", "arn:aws:eks:{region}:{account}:nodegroup/{name}"),
    "aws:eks/accessEntry:AccessEntry": ("ae", "arn:aws:eks:{region}:{account}:access-entry/{name}"),
    "aws:eks/accessPolicyAssociation:AccessPolicyAssociation": ("apa", None),
    "aws:sqs/queue:Queue": ("queue", "arn:aws:sqs:{region}:{account}:{name}"),
    "aws:sqs/queuePolicy:QueuePolicy": ("qp", None),
    "aws:cloudwatch/eventRule:EventRule": ("rule", "arn:aws:events:{region}:{account}:rule/{name}"),
    "aws:cloudwatch/eventTarget:EventTarget": ("target", None),
    "aws:eks/podIdentityAssociation:PodIdentityAssociation": (
        "pia",
        "arn:aws:eks:{region}:{account}:podidentityassociation/{id}",
    ),
}


def fake_hex(*parts: str, length: int = 17) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:length]


class CloudMocks(pulumi.runtime.Mocks):
    """Outputs of cloud resources and answers to invokes, for one stack in one region."""

    def __init__(
        self,
        stack: str,
        region: str,
        account: Account | None = None,
        stack_outputs: Mapping[str, Mapping[str, Any]] | None = None,
    ):
        self.stack = stack
        # StackReference name -> the referenced stack's outputs, rendered by the same engine (offline/fleet.py).
        self.stack_outputs = dict(stack_outputs or {})
        self.region = region
        self.account = account if account is not None else Account()
        self._invokes: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "aws:eks/getCluster:getCluster": self._get_cluster,
            "aws:index/getCallerIdentity:getCallerIdentity": self._get_caller_identity,
            "aws:iam/getSessionContext:getSessionContext": self._get_session_context,
            "aws:eks/getClusters:getClusters": lambda _: {"id": self.region, "names": sorted(self.account.clusters)},
            "aws:iam/getRoles:getRoles": self._get_roles,
            "aws:index/getRegion:getRegion": lambda _: {"name": self.region, "region": self.region, "id": self.region},
            "aws:index/getAvailabilityZones:getAvailabilityZones": self._get_availability_zones,
            "aws:index/getPartition:getPartition": lambda _: {
                "partition": self.partition, "dnsSuffix": self.dns_suffix, "id": self.partition
            },
        }

    @property
    def partition(self) -> str:
        """`aws`, or `aws-cn` / `aws-us-gov` for their regions, as the real getPartition answers."""
        return next((p for prefix, (p, _) in _PARTITIONS.items() if self.region.startswith(prefix)), "aws")

    @property
    def dns_suffix(self) -> str:
        return next((d for prefix, (_, d) in _PARTITIONS.items() if self.region.startswith(prefix)), "amazonaws.com")

    # --- resources --------------------------------------------------------------------------

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        if args.typ == "eks:index:Cluster":
            return f"{args.name}-id", self._eks_cluster(args.inputs)
        if args.typ == STACK_REFERENCE:
            return self._stack_reference(args)
        if args.typ.startswith("pulumi:providers:"):
            return f"{args.name}-provider-id", dict(args.inputs)
        if args.typ.startswith("aws:"):
            return self._aws_resource(args)
        # Kubernetes objects and Helm releases: the engine echoes what was sent.
        return f"{args.name}-id", dict(args.inputs)

    def _stack_reference(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        """Another stack's outputs, as the service answers a StackReference; an unknown stack fails the run."""
        name = args.inputs["name"]
        if name not in self.stack_outputs:
            raise KeyError(f"stack reference {name}: no rendered stack of that name (offline/fleet.py renders a "
                           "manager's workers first)")
        return name, {"name": name, "outputs": dict(self.stack_outputs[name]), "secretOutputNames": []}

    def _aws_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        if args.typ == SERVICE_LINKED_ROLE:
            return self._service_linked_role(args)
        prefix, arn_template = _AWS_RESOURCES.get(args.typ, ("res", None))
        physical = args.inputs.get("name") or args.name
        resource_id = physical if args.typ == "aws:iam/role:Role" else f"{prefix}-{fake_hex(args.typ, args.name)}"
        outputs = dict(args.inputs)
        outputs.setdefault("id", resource_id)
        if arn_template:
            # ARNs are in the region's partition (`arn:aws-us-gov:...` in GovCloud), as AWS writes them.
            arn = arn_template.format(region=self.region, account=ACCOUNT_ID, name=physical, id=resource_id)
            outputs["arn"] = arn.replace("arn:aws:", f"arn:{self.partition}:", 1)
        if args.typ == "aws:sqs/queue:Queue":
            # The provider's id of a queue is its URL.
            resource_id = f"https://sqs.{self.region}.amazonaws.com/{ACCOUNT_ID}/{physical}"
            outputs.update(id=resource_id, url=resource_id)
        if args.typ == "aws:kms/key:Key":
            outputs["keyId"] = resource_id.removeprefix("key-")
        if args.typ == "aws:ec2/launchTemplate:LaunchTemplate":
            outputs["latestVersion"] = 1
        if args.typ == "aws:ec2/eip:Eip":
            outputs["publicIp"] = "198.51.100." + str(int(fake_hex(args.name, length=4), 16) % 250 + 1)
        if args.typ == "aws:eks/nodeGroup:NodeGroup":
            outputs["status"] = "ACTIVE"
            if "nodeGroupNamePrefix" in args.inputs:
                # The provider's unique suffix: a UTC timestamp to the 1/100 µs, then a counter (26 characters).
                outputs["nodeGroupName"] = args.inputs["nodeGroupNamePrefix"] + "20261201000000000000000001"
        return resource_id, outputs

    def _service_linked_role(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        """A new service-linked role, or IAM's refusal when the account has that service's role already."""
        service = args.inputs["awsServiceName"]
        name = SERVICE_LINKED_ROLE_NAMES[service]
        if service in self.account.service_linked_roles:
            raise ServiceRoleTaken(
                f"InvalidInput: Service role name {name} has been taken in this account, please try a different suffix."
            )
        path = f"/aws-service-role/{service}/"
        arn = f"arn:{self.partition}:iam::{ACCOUNT_ID}:role{path}{name}"
        return arn, {**args.inputs, "id": arn, "arn": arn, "name": name, "path": path}

    def _eks_cluster(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """pulumi-eks's Cluster is a remote component: one opaque resource whose outputs we supply."""
        name = inputs.get("name", "cluster")
        endpoint = self._endpoint(name)
        kubeconfig = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": name, "cluster": {"server": endpoint, "certificate-authority-data": _fake_ca(name)}}],
            "contexts": [{"name": "aws", "context": {"cluster": name, "user": "aws"}}],
            "current-context": "aws",
            "users": [
                {
                    "name": "aws",
                    "user": {
                        "exec": {
                            "apiVersion": "client.authentication.k8s.io/v1beta1",
                            "command": "aws",
                            "args": ["eks", "get-token", "--cluster-name", name, "--output", "json"],
                        }
                    },
                }
            ],
        }
        return {
            **inputs,
            "kubeconfig": kubeconfig,
            "kubeconfigJson": json.dumps(kubeconfig, sort_keys=True),
            "oidcIssuer": self._issuer(name),
            "clusterSecurityGroupId": self._cluster_security_group(name),
            "nodeSecurityGroupId": self._cluster_security_group(name),
        }

    # --- invokes ----------------------------------------------------------------------------

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        """The invoke's result and its check failures (property, reason): none, the mock cloud accepts every call."""
        handler = self._invokes.get(args.token)
        if handler is None:
            raise NotImplementedError(f"offline/cloud.py has no answer for invoke {args.token}; add a realistic one")
        return handler(args.args), []

    def _get_availability_zones(self, _: dict[str, Any]) -> dict[str, Any]:
        """The region's zones in this account, in name order, with their zone IDs."""
        mapping = (self.account.zone_ids or {}).get(self.region) or fake_zone_ids(self.region)
        names = sorted(mapping)
        return {"id": self.region, "names": names, "zoneIds": [mapping[n] for n in names], "groupNames": [self.region]}

    def _get_caller_identity(self, _: dict[str, Any]) -> dict[str, Any]:
        """The deployer's STS session: `assumed-role/<name>/<session>`, the role's path dropped, as STS writes it.

        An IAM user deployer is its own ARN.
        """
        partition, account, resource = _arn_parts(DEPLOYER_ARN)
        if resource.startswith("user/"):
            return {"accountId": account, "arn": DEPLOYER_ARN, "userId": "AIDAEXAMPLEDEPLOY", "id": account}
        role_name = resource.rsplit("/", 1)[1]
        arn = f"arn:{partition}:sts::{account}:assumed-role/{role_name}/pulumi-up"
        return {"accountId": account, "arn": arn, "userId": "AROAEXAMPLEDEPLOY:pulumi-up", "id": account}

    def _get_session_context(self, args: dict[str, Any]) -> dict[str, Any]:
        """The role behind an STS session, path included; any other ARN passes through, as the real data source does."""
        arn = args["arn"]
        if ":assumed-role/" not in arn:
            return {"arn": arn, "id": arn, "issuerArn": arn, "issuerId": "", "issuerName": "", "sessionName": ""}
        role_name, session = arn.split(":assumed-role/", 1)[1].split("/", 1)
        if _arn_parts(DEPLOYER_ARN)[2].rsplit("/", 1)[-1] != role_name:
            raise ValueError(f"getSessionContext: the fake account has no role {role_name}")
        return {
            "arn": arn, "id": arn, "issuerArn": DEPLOYER_ARN, "issuerId": "AROAEXAMPLEDEPLOY",
            "issuerName": role_name, "sessionName": session,
        }

    def _get_roles(self, args: dict[str, Any]) -> dict[str, Any]:
        """The account's roles under `pathPrefix` matching `nameRegex`; empty lists when none, as the data source says."""
        roles = [
            (f"/aws-service-role/{service}/", SERVICE_LINKED_ROLE_NAMES[service])
            for service in sorted(self.account.service_linked_roles)
        ]
        matched = [
            (path, name)
            for path, name in roles
            if path.startswith(args.get("pathPrefix") or "/") and re.search(args.get("nameRegex") or "", name)
        ]
        return {
            "id": self.region,
            "names": [name for _, name in matched],
            "arns": [f"arn:{self.partition}:iam::{ACCOUNT_ID}:role{path}{name}" for path, name in matched],
        }

    def _get_cluster(self, args: dict[str, Any]) -> dict[str, Any]:
        name = args["name"]
        return {
            "id": name,
            "name": name,
            "arn": f"arn:{self.partition}:eks:{self.region}:{ACCOUNT_ID}:cluster/{name}",
            "endpoint": self._endpoint(name),
            "status": "ACTIVE",
            "certificateAuthorities": [{"data": _fake_ca(name)}],
            "identities": [{"oidcs": [{"issuer": self._issuer(name)}]}],
            "vpcConfig": {"clusterSecurityGroupId": self._cluster_security_group(name)},
        }

    def _endpoint(self, cluster: str) -> str:
        return f"https://{fake_hex('endpoint', cluster, length=32).upper()}.gr7.{self.region}.eks.amazonaws.com"

    def _issuer(self, cluster: str) -> str:
        return f"https://oidc.eks.{self.region}.amazonaws.com/id/{fake_hex('oidc', cluster, length=32).upper()}"

    @staticmethod
    def _cluster_security_group(cluster: str) -> str:
        return f"sg-{fake_hex('cluster-sg', cluster)}"


def _arn_parts(arn: str) -> tuple[str, str, str]:
    """`arn:aws:iam::111122223333:role/x` -> ("aws", "111122223333", "role/x")."""
    parts = arn.split(":", 5)
    return parts[1], parts[4], parts[5]


def _fake_ca(cluster: str) -> str:
    return base64.b64encode(f"fake certificate authority of {cluster}".encode()).decode()


_DIRECTIONS = {"north": "n", "south": "s", "east": "e", "west": "w", "central": "c", "gov": "g"}


def fake_zone_ids(region: str) -> dict[str, str]:
    """A fake account's zone mapping: the row of config/regions.py gets the IDs EKS takes, in order; any
    zone EKS refuses (models/aws_eks.py) is a name the row leaves out (`us-east-1e` -> `use1-az3`), as in
    the accounts the row follows. IDs are spelled as AWS does: `use1-az1`, `apne2-az3`, `usgw1-az1`."""
    from config.regions import AVAILABILITY_ZONES
    from models.aws_eks import EKS_UNSUPPORTED_ZONE_IDS

    parts = region.split("-")
    prefix = parts[0] + "".join(
        "".join(_DIRECTIONS.get(w, w[0]) for w in re.findall(r"north|south|east|west|central|gov|[a-z]+", part))
        for part in parts[1:-1]
    ) + parts[-1]
    refused = EKS_UNSUPPORTED_ZONE_IDS.get(region, ())
    supported = (f"{prefix}-az{n}" for n in range(1, 20) if f"{prefix}-az{n}" not in refused)
    mapping = {name: next(supported) for name in AVAILABILITY_ZONES[region]}
    left_out = (chr(c) for c in range(ord("a"), ord("z")) if f"{region}{chr(c)}" not in mapping)
    mapping |= {f"{region}{next(left_out)}": zone_id for zone_id in refused}
    return mapping
