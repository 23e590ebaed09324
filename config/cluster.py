"""`gpu-platform:cluster`: the network, the EKS control plane, who administers it, and the system nodes."""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, field_validator

from models.kubernetes.features import DRA_EXTENDED_RESOURCE, enabled_by_default, first_enabled

from .base import ConfigModel
from .errors import ConfigError, duplicates, show
from .keys import CONFIG_NAMESPACE
from .versions import DRA_EXTENDED_RESOURCE_REASON, KUBERNETES_VERSIONS, ami_release_problems, node_group_release_version

# An IAM role or user ARN in any partition. Access entries take roles and users, not groups.
_PRINCIPAL_ARN = re.compile(r"^arn:aws(-[a-z]+)*:iam::\d{12}:(role|user)/[\w+=,.@/-]{1,512}$")
_CLUSTER_NAME = re.compile(r"^[a-z][a-z0-9-]{0,30}[a-z0-9]$")
_INSTANCE_TYPE = re.compile(r"^[a-z][a-z0-9-]*\.[a-z0-9-]+$")
# A Bottlerocket managed node group release: `<bottlerocket version>-<first 8 hex digits of its commit>`.
_BOTTLEROCKET_RELEASE = re.compile(r"^\d+\.\d+\.\d+-[0-9a-f]{8}$")
# Where the cluster section sits in `Pulumi.<stack>.yaml`, for errors raised after loading.
CONFIG_ROOT = f"{CONFIG_NAMESPACE}:cluster"
# AWS allows 50 user tags per resource (Tagging AWS resources, "Tag naming limits and requirements").
# A Karpenter GPU node carries the most of anything the stack creates: the stack's tags, three of the
# platform's (`gpu-platform/cluster`, `managed-by`, the pool label), four Karpenter adds when it
# launches the instance (karpenter-provider-aws v1.14.1 pkg/utils/utils.go GetTags:
# `kubernetes.io/cluster/<name>`, `karpenter.sh/nodepool`, `eks:eks-cluster-name`,
# `karpenter.k8s.aws/ec2nodeclass`) and two its tagging controller adds afterwards
# (pkg/controllers/nodeclaim/tagging/controller.go: `Name`, `karpenter.sh/nodeclaim`).
AWS_TAGS_PER_RESOURCE = 50
TAGS_ADDED_TO_NODES = 9
MAX_STACK_TAGS = AWS_TAGS_PER_RESOURCE - TAGS_ADDED_TO_NODES
# Tag keys others own, with who owns them. Karpenter refuses a node class whose tags match its
# RestrictedTagPatterns (pkg/apis/v1/labels.go) and manages every `karpenter.sh/` and
# `karpenter.k8s.aws/` tag; EKS owns `eks:` and `kubernetes.io/cluster/`, AWS `aws:`; `gpu-platform/`
# keys are the platform's own (config/labels.py).
RESERVED_TAG_PREFIXES = {
    "aws:": "AWS",
    "eks:": "EKS",
    "kubernetes.io/cluster/": "EKS and Karpenter",
    "karpenter.sh/": "Karpenter",
    "karpenter.k8s.aws/": "Karpenter",
    "gpu-platform/": "the platform",
}
RESERVED_TAG_KEYS = {"Name": "Karpenter", "managed-by": "the platform"}
_LOG_RETENTION_DAYS = (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653)


def _principal_arn(arn: str) -> str:
    if not _PRINCIPAL_ARN.match(arn):
        raise ValueError("is not an IAM role or user ARN such as 'arn:aws:iam::111122223333:role/PlatformAdmin'")
    return arn


# The widest CIDR the public API endpoint may take: a /16 already spans a whole provider's block, and
# an office or VPN egress range is a /24 or narrower.
MIN_PUBLIC_CIDR_PREFIX = 16


def _public_cidr(cidr: str) -> str:
    try:
        network = ipaddress.IPv4Network(cidr, strict=True)
    except ValueError as err:
        raise ValueError(f"is not an IPv4 network CIDR such as 203.0.113.0/24 ({err})") from None
    if network.prefixlen == 0:
        raise ValueError("opens the API to the internet; list your office or VPN CIDRs instead")
    if network.prefixlen < MIN_PUBLIC_CIDR_PREFIX:
        raise ValueError(
            f"opens the API to {network.num_addresses:,} addresses; list your office or VPN CIDRs, "
            f"each /{MIN_PUBLIC_CIDR_PREFIX} or narrower"
        )
    return cidr


def _instance_type(name: str) -> str:
    if not _INSTANCE_TYPE.match(name):
        raise ValueError("is not an EC2 instance type such as 'm7i.xlarge'")
    return name


def _unique(kind: str):
    def check(values: list[str]) -> list[str]:
        repeated = duplicates(values)
        if repeated:
            raise ValueError(f"lists {kind} {show(repeated[0])} twice")
        return values

    return AfterValidator(check)


PrincipalArn = Annotated[str, AfterValidator(_principal_arn)]


def _tag_key(key: str) -> str:
    owner = RESERVED_TAG_KEYS.get(key) or next(
        (who for prefix, who in RESERVED_TAG_PREFIXES.items() if key.lower().startswith(prefix)), None
    )
    if owner is not None:
        raise ValueError(f"is a tag key {owner} sets and owns: remove it or rename it")
    if not 1 <= len(key) <= 128:
        raise ValueError("is not a tag key of 1-128 characters")
    return key


TagKey = Annotated[str, AfterValidator(_tag_key)]
TagValue = Annotated[str, Field(max_length=256)]


def principal_slug(principal_arn: str) -> str:
    """`arn:aws:iam::111122223333:role/team/PlatformAdmin` -> `111122223333-role-team-platformadmin`.

    A stable, readable part of a logical name: the account keeps two accounts' same-named roles apart.
    It folds case and punctuation, so two principals can share one (`role/ml_admin`, `role/ml-admin`);
    `config/platform.py` refuses that before anything is declared.
    """
    account, resource = principal_arn.split(":")[4], principal_arn.split(":", 5)[5]
    return re.sub(r"[^a-z0-9]+", "-", f"{account}-{resource}".lower()).strip("-")
PublicCidr = Annotated[str, AfterValidator(_public_cidr)]
InstanceType = Annotated[str, AfterValidator(_instance_type)]


class FlowLogsConfig(ConfigModel):
    """VPC flow logs to CloudWatch."""

    enabled: bool = Field(False, description="Send VPC flow logs (all traffic) to a CloudWatch log group.")
    retention_days: int = Field(30, description="Days CloudWatch keeps the flow logs.")

    @field_validator("retention_days")
    @classmethod
    def _known_retention(cls, days: int) -> int:
        return _check_retention(days)


class NetworkConfig(ConfigModel):
    """The VPC: its CIDR, how many zones, how NAT is laid out."""

    vpc_cidr: str = Field(
        "10.0.0.0/16",
        description="IPv4 CIDR of the VPC, /16 to /20. Private subnets take /19-sized blocks of a /16 "
        "(pods get VPC addresses, so they are large); public subnets share one block.",
    )
    az_count: int = Field(
        3, ge=2, le=6,
        description="Availability zones to spread subnets and NAT across, taken in order from the region's "
        "row in config/regions.py. EKS needs at least 2.",
    )
    availability_zones: Annotated[list[str], _unique("zone")] = Field(
        default_factory=list,
        description="Zone names to take the azCount zones from, in order, instead of the region's row in "
        "config/regions.py: to leave out a zone EKS refuses in this account (zone names map to zone IDs per "
        "account; `pulumi up` checks the IDs and names the zone), list the others. Empty: the row's order.",
    )
    nat_gateways: Literal["single", "perAz"] = Field(
        "perAz",
        description="`single`: one NAT gateway for the VPC (cheap, one zone's outage cuts egress everywhere). "
        "`perAz`: one per zone, each zone's private subnet routes through its own.",
    )
    flow_logs: FlowLogsConfig = Field(default_factory=FlowLogsConfig, description="VPC flow logs.")
    ecr_endpoints: bool = Field(
        False,
        description="Interface endpoints for ECR (`ecr.api`, `ecr.dkr`) in every private subnet, so image pulls from "
        "ECR skip the NAT gateways; each costs an hourly fee per zone. Layers come from S3, whose gateway "
        "endpoint on the private route tables is always there.",
    )

    @field_validator("vpc_cidr")
    @classmethod
    def _valid_cidr(cls, cidr: str) -> str:
        try:
            network = ipaddress.IPv4Network(cidr, strict=True)
        except ValueError as err:
            raise ValueError(f"is not an IPv4 network CIDR such as 10.0.0.0/16 ({err})") from None
        if not 16 <= network.prefixlen <= 20:
            raise ValueError("must be a /16 to /20: smaller VPCs run out of pod addresses")
        return cidr


class EndpointConfig(ConfigModel):
    """Who reaches the Kubernetes API endpoint."""

    public_access_cidrs: Annotated[list[PublicCidr], _unique("CIDR")] = Field(
        default_factory=list,
        description="CIDRs allowed to reach the public API endpoint, each /16 or narrower. Empty: the public "
        "endpoint is off and the API is reachable only from inside the VPC. The private endpoint is always on.",
    )



class SystemNodesConfig(ConfigModel):
    """The managed node group for the platform's controllers."""

    instance_types: Annotated[list[InstanceType], _unique("instance type")] = Field(
        default_factory=lambda: ["m7i.xlarge"], min_length=1,
        description="Instance types of the managed system node group that runs the platform's controllers "
        "(Karpenter, the GPU Operator, Prometheus, KEDA, Kueue). On-demand only.",
    )
    ami_type: Literal["AL2023_x86_64_STANDARD", "AL2023_ARM_64_STANDARD", "BOTTLEROCKET_x86_64", "BOTTLEROCKET_ARM_64"] = Field(
        "AL2023_x86_64_STANDARD",
        description="EKS-optimised AMI type of the system nodes; must match the instance types' architecture.",
    )
    release_version: str | None = Field(
        None,
        description="Bottlerocket system nodes: the Bottlerocket release EKS runs them on, `<version>-<commit>` as "
        "`aws ssm get-parameter --name /aws/service/bottlerocket/aws-k8s-<minor>/<arch>/latest/image_version` prints it "
        "(e.g. `1.57.0-0123abcd`); a new one rolls the nodes in place. Unset: EKS takes the newest release for the minor "
        "at creation and at each version update; production stacks (protect: true) pin it. AL2023 system nodes run the "
        "release config/versions.py pins per minor and take no releaseVersion.",
    )
    min_size: int = Field(
        2, ge=1, le=100, description="Minimum system nodes; 2 or more keeps controllers up through a node loss."
    )
    desired_size: int = Field(2, ge=1, le=100, description="System nodes at creation; between minSize and maxSize.")
    max_size: int = Field(4, ge=1, le=100, description="Maximum system nodes.")
    disk_size_gib: int = Field(
        50,
        alias="diskSizeGiB",
        ge=20,
        le=1000,
        description="Size in GiB of each system node's encrypted gp3 volume "
        "(the root volume on AL2023, the data volume on Bottlerocket).",
    )


    @field_validator("release_version")
    @classmethod
    def _bottlerocket_release(cls, release: str | None) -> str | None:
        if release is not None and not _BOTTLEROCKET_RELEASE.match(release):
            raise ValueError("is not a Bottlerocket release version such as '1.57.0-0123abcd' (version, '-', 8 hex digits)")
        return release

    def node_group_release(self, kubernetes_version: str) -> str | None:
        """The group's `releaseVersion`: the pin of config/versions.py for AL2023, `releaseVersion` for Bottlerocket."""
        return self.release_version or node_group_release_version(kubernetes_version, self.ami_type)


LogType = Literal["api", "audit", "authenticator", "controllerManager", "scheduler"]


def _api_audit_authenticator() -> list[LogType]:
    return ["api", "audit", "authenticator"]


class LoggingConfig(ConfigModel):
    """EKS control-plane logging."""

    types: list[LogType] = Field(
        default_factory=_api_audit_authenticator,
        description="EKS control-plane log types sent to CloudWatch.",
    )
    retention_days: int = Field(90, description="Days CloudWatch keeps control-plane logs.")

    @field_validator("retention_days")
    @classmethod
    def _known_retention(cls, days: int) -> int:
        return _check_retention(days)


class ClusterConfig(ConfigModel):
    """The network, the EKS cluster, its admins and its system nodes."""

    name: str = Field(
        description="EKS cluster name (2-32 characters, lowercase letters, digits and '-'). It prefixes every "
        "AWS resource name and is the value of the `karpenter.sh/discovery` tag."
    )
    kubernetes_version: str = Field(
        "1.35", description=f"Kubernetes minor version of the control plane; one of {', '.join(KUBERNETES_VERSIONS)}."
    )
    protect: bool = Field(
        True, description="Protect the cluster, its secrets KMS key and the VPC from `pulumi destroy` and replacement."
    )
    tags: dict[TagKey, TagValue] = Field(
        default_factory=dict, description="Tags on every AWS resource, e.g. cost allocation."
    )
    network: NetworkConfig = Field(default_factory=NetworkConfig, description="The VPC.")
    endpoint: EndpointConfig = Field(default_factory=EndpointConfig, description="Kubernetes API endpoint access.")
    admins: Annotated[list[PrincipalArn], _unique("principal")] = Field(
        min_length=1,
        description="IAM role or user ARNs granted cluster-admin through EKS access entries (role ARNs with their "
        "path, as `aws iam get-role` prints them). The cluster's creator may be listed or not: EKS already made it "
        "an admin, so the stack declares no entry for it. Anyone else who runs `pulumi up` must be listed.",
    )
    creator: PrincipalArn | None = Field(
        None,
        description="The IAM role or user whose first `pulumi up` created the cluster. EKS gives it cluster-admin "
        "through an access entry of its own (pulumi-eks sets bootstrapClusterCreatorAdminPermissions), which the "
        "stack neither declares nor removes. Unset: whoever runs `pulumi up`, allowed only while the cluster does "
        "not exist yet; set it after the first deploy (`pulumi stack output clusterCreator`) so that another admin "
        "can deploy.",
    )
    system_nodes: SystemNodesConfig = Field(default_factory=SystemNodesConfig, description="The system node group.")
    logging: LoggingConfig = Field(default_factory=LoggingConfig, description="Control-plane logging.")

    def bootstrap_admin(self, caller: str, *, cluster_exists: bool) -> str:
        """Who holds EKS's own admin entry: `creator`, or the caller when it is about to create the cluster.

        `caller` is the IAM role or user running `pulumi up` (its role ARN with path, not the STS
        session). Raises `ConfigError` with one line when the answer would be a guess: the skipped
        principal must stay the same from one `up` to the next, whoever runs it, or the stack would
        declare the creator's entry (EKS refuses it: ResourceInUseException) and delete the caller's.
        """
        key = f"{CONFIG_ROOT}.creator"
        if self.creator is None and cluster_exists:
            raise ConfigError([
                f"{key}: not set, and cluster {self.name} exists already: set it to the IAM role or user whose "
                f"`pulumi up` created the cluster (if that was you: `pulumi config set --path {key} {caller}`)"
            ])
        if self.creator is not None and not cluster_exists and self.creator != caller:
            raise ConfigError([
                f"{key}: {show(self.creator)} is not who creates cluster {self.name}: `pulumi up` runs as {show(caller)}, "
                f"and EKS makes that principal the bootstrap admin; run the first `pulumi up` as the creator or set "
                "creator to the caller"
            ])
        return self.creator or caller

    def managed_admins(self, bootstrap_admin: str) -> list[str]:
        """The admins whose access entries the stack declares: all but the one EKS made at creation.

        Compared exactly, path included: EKS keys the bootstrap entry by the role's ARN with its path.
        """
        return [admin for admin in self.admins if admin != bootstrap_admin]

    @field_validator("admins")
    @classmethod
    def _distinct_access_entry_names(cls, admins: list[str]) -> list[str]:
        seen: dict[str, str] = {}
        for arn in admins:
            same = seen.setdefault(principal_slug(arn), arn)
            if same != arn:
                raise ValueError(
                    f"lists {show(arn)} and {show(same)}, which differ only in case or punctuation and would both name their "
                    f"EKS access entry {principal_slug(arn)}: list one of them"
                )
        return admins

    @field_validator("name")
    @classmethod
    def _valid_name(cls, name: str) -> str:
        if not _CLUSTER_NAME.match(name):
            raise ValueError(
                "is not a valid cluster name: 2-32 characters, lowercase letters, digits and '-', starting with a letter"
            )
        return name

    @field_validator("kubernetes_version", mode="before")
    @classmethod
    def _supported_version(cls, version: object) -> object:
        if str(version) not in KUBERNETES_VERSIONS:
            raise ValueError(
                f"is not supported by the pinned components; use one of {', '.join(KUBERNETES_VERSIONS)} "
                "(quote it in YAML: \"1.30\" is not 1.3)" + _newer_minor_reason(str(version))
            )
        # Every node image must exist for the minor before the control plane moves to it.
        problems = ami_release_problems(str(version))
        if problems:
            raise ValueError("; ".join(problems))
        return str(version)

    @field_validator("tags")
    @classmethod
    def _valid_tags(cls, tags: dict[str, str]) -> dict[str, str]:
        if len(tags) > MAX_STACK_TAGS:
            raise ValueError(
                f"has {len(tags)} tags; at most {MAX_STACK_TAGS}: AWS allows {AWS_TAGS_PER_RESOURCE} per resource and "
                f"Karpenter's nodes carry {TAGS_ADDED_TO_NODES} more (the platform's and Karpenter's own): drop "
                f"{len(tags) - MAX_STACK_TAGS}"
            )
        return tags


def _newer_minor_reason(version: str) -> str:
    """What else stands in the way of `version`, beyond the pins: a default-on feature gate the platform does not handle."""
    if not re.fullmatch(r"\d+\.\d+", version) or not enabled_by_default(DRA_EXTENDED_RESOURCE, version):
        return ""
    return "; " + dra_extended_resource_reason()


def dra_extended_resource_reason() -> str:
    """Why a cluster with DRAExtendedResource on by default is refused, in one clause."""
    return DRA_EXTENDED_RESOURCE_REASON.format(
        first=first_enabled(DRA_EXTENDED_RESOURCE), latest=KUBERNETES_VERSIONS[-1]
    )


def _check_retention(days: int) -> int:
    if days not in _LOG_RETENTION_DAYS:
        raise ValueError(f"is not a CloudWatch retention period; use one of {', '.join(map(str, _LOG_RETENTION_DAYS))}")
    return days
