"""What EKS does: who an IAM principal is inside the cluster, and how a managed node group rolls an update.

Access entries: who an IAM principal is inside the cluster, through an entry with no username of its own.

EKS API reference, CreateAccessEntry (`username`) and the user guide's "Create access entries": EKS
generates the Kubernetes username from the principal's type. An IAM user authenticates as its ARN; an
IAM role as its STS session, `arn:<partition>:sts::<account>:assumed-role/<role name>/{{SessionName}}`,
the role's path dropped (as STS writes an assumed-role ARN). So every session of a role shares the
prefix up to and including the role name's `/`, and no other principal's username starts with it.
"""

from __future__ import annotations

SESSION_NAME = "{{SessionName}}"


def access_entry_username(principal_arn: str) -> str:
    """The username EKS generates for `principal_arn`'s access entry; a role's ends in `{{SessionName}}`,
    which each session's name replaces."""
    _, partition, _, _, account, resource = principal_arn.split(":", 5)
    kind, _, path_and_name = resource.partition("/")
    if kind == "role":
        return f"arn:{partition}:sts::{account}:assumed-role/{path_and_name.rsplit('/', 1)[-1]}/{SESSION_NAME}"
    if kind == "user":
        return principal_arn
    raise ValueError(f"{principal_arn} is neither an IAM role nor an IAM user")


# --- Managed node group version updates --------------------------------------------------------------
#
# What EKS does when a managed node group's version, release or launch template changes
# (UpdateNodegroupVersion). Sources:
# - Amazon EKS User Guide, "Understand each phase of node updates"
#   (awsdocs/amazon-eks-user-guide latest/ug/nodes/managed-node-update-behavior.adoc, commit 0bfeeaf2):
#   the scale-up phase "increments the Auto Scaling Group's maximum size and desired size by the larger
#   of either: up to twice the number of Availability Zones that the Auto Scaling group is deployed in;
#   the maximum unavailable of upgrade", and succeeds only when a new node is Ready "in every
#   Availability Zone where the node exists"; "the minimal strategy ... terminat[es] the old nodes
#   before creating the new ones, so that total capacity never increases beyond your configured quantity".
# - EKS API, NodegroupUpdateConfig (botocore data/eks/2017-11-01/service-2.json, `NodegroupUpdateConfig`
#   and `NodegroupUpdateStrategies`: DEFAULT, MINIMAL): `maxUnavailable` 1-100, default one node; "The
#   default strategy ... launches the new instances first, before terminating the old instances. The
#   minimal strategy ... terminates the old instances before launching the new instances ... useful in
#   scenarios where you are constrained to resources or costs (for example, with hardware accelerators
#   such as GPUs)."
DEFAULT_UPDATE = "DEFAULT"
MINIMAL_UPDATE = "MINIMAL"
UPDATE_STRATEGIES = (DEFAULT_UPDATE, MINIMAL_UPDATE)
MAX_UNAVAILABLE_RANGE = (1, 100)


def update_surge(strategy: str, max_unavailable: int, zones: int) -> int:
    """Nodes EKS may launch beyond the group's desired size while it rolls a version update.

    DEFAULT raises the Auto Scaling group by the larger of twice its zones and `maxUnavailable`
    before draining anything; MINIMAL launches a replacement only after an old node is gone.
    """
    if strategy not in UPDATE_STRATEGIES:
        raise ValueError(f"{strategy!r} is not an EKS node group update strategy; one of {', '.join(UPDATE_STRATEGIES)}")
    low, high = MAX_UNAVAILABLE_RANGE
    if not low <= max_unavailable <= high:
        raise ValueError(f"maxUnavailable {max_unavailable} is outside EKS's {low}-{high}")
    if strategy == MINIMAL_UPDATE:
        return 0
    return max(2 * zones, max_unavailable)


def update_unavailable(strategy: str, max_unavailable: int, size: int) -> int:
    """Nodes of the group's desired size out of service at once during the update.

    DEFAULT drains old nodes only once their replacements are Ready, so none; MINIMAL terminates up to
    `maxUnavailable` nodes (never more than the group has) before their replacements exist.
    """
    update_surge(strategy, max_unavailable, 1)  # the same checks of its arguments
    return min(max_unavailable, size) if strategy == MINIMAL_UPDATE else 0


# --- Zones EKS refuses ---------------------------------------------------------------------------------
#
# Amazon EKS User Guide, "View Amazon EKS networking requirements for VPC and subnets", subnet requirements
# for clusters (awsdocs/amazon-eks-user-guide latest/ug/networking/network-reqs.adoc, commit 101184ec): "The
# subnets can't reside in the following Availability Zones", by zone ID. Zone IDs name the same physical
# zone in every account; zone names (`us-east-1e`) are mapped to them per account in older regions, so a
# name says nothing about whether EKS takes it. CreateCluster answers UnsupportedAvailabilityZoneException.
EKS_UNSUPPORTED_ZONE_IDS: dict[str, tuple[str, ...]] = {
    "us-east-1": ("use1-az3",),
    "us-west-1": ("usw1-az2",),
    "ca-central-1": ("cac1-az3",),
}
