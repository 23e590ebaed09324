"""IAM as plain data: policy documents for the platform's roles, the node roles' managed policies, principals' names.

Kept apart from the components so tests can read them without Pulumi, and so every role trusts
exactly one service principal.
"""

from __future__ import annotations

import json
import re
from typing import Any

# The policy language version every document declares.
POLICY_VERSION = "2012-10-17"
# The service principal a node role trusts: EC2 assumes it for the instances.
EC2_SERVICE = "ec2.amazonaws.com"

# What every node role carries: the system node group's and Karpenter's.
NODE_ROLE_POLICIES = (
    "AmazonEKSWorkerNodePolicy",
    "AmazonEC2ContainerRegistryPullOnly",
    # The VPC CNI reads its credentials from the node, before any pod (Pod Identity's agent included) runs.
    "AmazonEKS_CNI_Policy",
    # Shell access through Session Manager instead of SSH keys and open ports.
    "AmazonSSMManagedInstanceCore",
)


def managed_policy(partition: str, name: str) -> str:
    """An AWS-managed IAM policy's ARN: `aws`, `aws-cn` and `aws-us-gov` each keep their own copy."""
    return f"arn:{partition}:iam::aws:policy/{name}"


def cluster_access_policy(partition: str, name: str) -> str:
    """An EKS access policy's ARN (`AmazonEKSClusterAdminPolicy`, ...), in the cluster's partition."""
    return f"arn:{partition}:eks::aws:cluster-access-policy/{name}"


def service_trust_policy(service: str, *, tag_session: bool = False) -> dict[str, Any]:
    """A role that only `service` may assume (`ec2.amazonaws.com`, `pods.eks.amazonaws.com`, ...).

    EKS Pod Identity also needs `sts:TagSession`: it tags the session with the cluster, namespace and
    service account, which is what lets policies scope by them.
    """
    actions = ["sts:AssumeRole", "sts:TagSession"] if tag_session else "sts:AssumeRole"
    return {
        "Version": POLICY_VERSION,
        "Statement": [{"Effect": "Allow", "Principal": {"Service": service}, "Action": actions}],
    }


def pod_identity_trust_policy() -> dict[str, Any]:
    return service_trust_policy("pods.eks.amazonaws.com", tag_session=True)


def flow_logs_delivery_policy(log_group_arn: str) -> dict[str, Any]:
    """What VPC flow logs need to write into one log group, and nothing else."""
    return {
        "Version": POLICY_VERSION,
        "Statement": [
            {
                "Effect": "Allow",
                "Action": ["logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"],
                "Resource": [log_group_arn, f"{log_group_arn}:*"],
            }
        ],
    }


def to_json(document: dict[str, Any]) -> str:
    """Policy JSON with stable key order, so a render is byte-identical run to run."""
    return json.dumps(document, sort_keys=True)


def principal_slug(principal_arn: str) -> str:
    """`arn:aws:iam::111122223333:role/team/PlatformAdmin` -> `111122223333-role-team-platformadmin`.

    A stable, readable part of a logical name: the account keeps two accounts' same-named roles apart.
    """
    account, resource = principal_arn.split(":")[4], principal_arn.split(":", 5)[5]
    return re.sub(r"[^a-z0-9]+", "-", f"{account}-{resource}".lower()).strip("-")
