"""IAM as plain data: policy documents for the platform's roles, the node roles' managed policies, principals' names.

Kept apart from the components so tests can read them without Pulumi, and so every role trusts
exactly one service principal.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

# The policy language version every document declares.
POLICY_VERSION = "2012-10-17"
# The service principal a node role trusts: EC2 assumes it for the instances.
EC2_SERVICE = "ec2.amazonaws.com"

# What every node role carries: the system node group's and Karpenter's. Image pulls from ECR are
# not among them: AmazonEC2ContainerRegistryPullOnly grants them on every repository (`Resource: *`),
# this account's private ones included; `node_image_pull_policy` grants them instead.
NODE_ROLE_POLICIES = (
    "AmazonEKSWorkerNodePolicy",
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


def service_trust_policy(
    service: str, *, tag_session: bool = False, conditions: dict[str, dict[str, str]] | None = None
) -> dict[str, Any]:
    """A role that only `service` may assume (`ec2.amazonaws.com`, `pods.eks.amazonaws.com`, ...),
    and, with `conditions`, only on behalf of what they name (operator -> key -> value)."""
    actions = ["sts:AssumeRole", "sts:TagSession"] if tag_session else "sts:AssumeRole"
    statement: dict[str, Any] = {"Effect": "Allow", "Principal": {"Service": service}, "Action": actions}
    if conditions:
        statement["Condition"] = conditions
    return {"Version": POLICY_VERSION, "Statement": [statement]}


POD_IDENTITY_SERVICE = "pods.eks.amazonaws.com"
# Session tags EKS Pod Identity puts on every AssumeRole it makes for a pod (EKS user guide,
# pod-id-abac.html, "List of session tags added by EKS Pod Identity": eks-cluster-arn,
# eks-cluster-name, kubernetes-namespace, kubernetes-service-account, kubernetes-pod-name,
# kubernetes-pod-uid). The trust policy matches the three that name one service account of one cluster.
POD_IDENTITY_CLUSTER_TAG = "eks-cluster-name"
POD_IDENTITY_NAMESPACE_TAG = "kubernetes-namespace"
POD_IDENTITY_SERVICE_ACCOUNT_TAG = "kubernetes-service-account"


def pod_identity_trust_policy(account_id: str, cluster_name: str, namespace: str, service_account: str) -> dict[str, Any]:
    """A role EKS Pod Identity assumes for one service account of one cluster in this account, and nothing else.

    EKS Pod Identity needs `sts:TagSession` besides `sts:AssumeRole`: it tags the session with the
    cluster, namespace and service account, and those tags are what the condition matches (EKS user
    guide, pod-id-role.html, "Setting Conditions"). Without them, any Pod Identity association in the
    account, on any cluster, could name this role. `aws:SourceAccount` keeps another account's EKS
    from assuming it on its clusters' behalf (the confused deputy).
    """
    return service_trust_policy(
        POD_IDENTITY_SERVICE,
        tag_session=True,
        conditions={
            "StringEquals": {
                "aws:SourceAccount": account_id,
                f"aws:RequestTag/{POD_IDENTITY_CLUSTER_TAG}": cluster_name,
                f"aws:RequestTag/{POD_IDENTITY_NAMESPACE_TAG}": namespace,
                f"aws:RequestTag/{POD_IDENTITY_SERVICE_ACCOUNT_TAG}": service_account,
            }
        },
    )


FLOW_LOGS_SERVICE = "vpc-flow-logs.amazonaws.com"


def flow_logs_trust_policy(partition: str, region: str, account_id: str) -> dict[str, Any]:
    """A role only the VPC flow logs of this account and region may assume: the confused-deputy
    conditions of the VPC user guide ("IAM role for publishing flow logs to CloudWatch Logs"),
    `aws:SourceAccount` and an `aws:SourceArn` among the account's flow logs."""
    return service_trust_policy(
        FLOW_LOGS_SERVICE,
        conditions={
            "StringEquals": {"aws:SourceAccount": account_id},
            "ArnLike": {"aws:SourceArn": f"arn:{partition}:ec2:{region}:{account_id}:vpc-flow-log/*"},
        },
    )


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


def service_endpoint(service: str, region: str, partition: str) -> str:
    """A service's regional endpoint as `kms:ViaService` names it: `s3.us-east-1.amazonaws.com`; China's
    partition ends in `amazonaws.com.cn` (AWS KMS Developer Guide, "kms:ViaService")."""
    return f"{service}.{region}.{'amazonaws.com.cn' if partition == 'aws-cn' else 'amazonaws.com'}"


# What the kubelet's ECR credential provider and containerd call to pull an image (ECR API Reference:
# GetAuthorizationToken for the registry login, BatchGetImage for the manifest, GetDownloadUrlForLayer
# for each layer); AmazonEC2ContainerRegistryPullOnly grants these three.
ECR_PULL_ACTIONS = ("ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer")


def node_image_pull_policy(partition: str, account_id: str, repository_prefixes: Sequence[str]) -> dict[str, Any]:
    """Pulls from ECR for a node role: any other account's repositories (the EKS add-ons' images live in
    AWS's registries, whose repository policies let every account pull), and of this account's only the
    repositories under `repository_prefixes` (`SupplyChainConfig.node_repositories`). A tenant's private
    images elsewhere in the account are out of every node's reach: their pulls need the tenant's own
    credentials. `NotResource` with Allow grants everything but the ARNs it lists ("IAM JSON policy
    elements: NotResource")."""
    own = f"arn:{partition}:ecr:*:{account_id}:repository/"
    statements: list[dict[str, Any]] = [
        {"Sid": "RegistryLogin", "Effect": "Allow", "Action": "ecr:GetAuthorizationToken", "Resource": "*"},
        {"Sid": "OtherAccountsImages", "Effect": "Allow", "Action": list(ECR_PULL_ACTIONS), "NotResource": f"{own}*"},
    ]
    if repository_prefixes:
        statements.append({
            "Sid": "PlatformImages",
            "Effect": "Allow",
            "Action": list(ECR_PULL_ACTIONS),
            "Resource": [f"{own}{prefix}*" for prefix in repository_prefixes],
        })
    return {"Version": POLICY_VERSION, "Statement": statements}


def to_json(document: dict[str, Any]) -> str:
    """Policy JSON with stable key order, so a render is byte-identical run to run."""
    return json.dumps(document, sort_keys=True)


