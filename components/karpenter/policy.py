"""The Karpenter controller's IAM permissions, one document per managed policy, as upstream splits them.

Upstream: aws/karpenter-provider-aws at v1.14.1,
website/content/en/v1.14/getting-started/getting-started-with-karpenter/cloudformation.yaml, the
`KarpenterController*Policy` resources (terraform-aws-eks keeps the same documents apart in
modules/karpenter/policy.tf). When bumping Karpenter, diff their statements between the two tags and
mirror every change here.
"""

from __future__ import annotations

from typing import Any

from models.karpenter.labels import EKS_CLUSTER_NAME_TAG, NAME_TAG, NODECLAIM_TAG, NODECLASS_TAG, NODEPOOL_LABEL

from ..lib.iam import EC2_SERVICE, POLICY_VERSION, service_endpoint

# Upstream's managed policies, in its order (names without its `KarpenterController...Policy` wrapping).
# IAM caps a managed policy at 6,144 characters, hence several.
CONTROLLER_POLICY_NAMES: tuple[str, ...] = (
    "node-lifecycle",
    "iam-integration",
    "eks-integration",
    "interruption",
    "resource-discovery",
    "zonal-shift",
)


def controller_policy_documents(
    cluster_name: str,
    region: str,
    account_id: str,
    partition: str,
    queue_arn: str,
    node_role_arn: str,
) -> dict[str, dict[str, Any]]:
    """The controller's least-privilege permissions, one document per managed policy, as upstream splits them.

    Launches and deletions are scoped by the tags Karpenter puts on what it creates
    (`kubernetes.io/cluster/<cluster>`, `karpenter.sh/nodepool`, `eks:eks-cluster-name`), so the
    controller can touch no instance, template or instance profile that is not its own cluster's.
    """
    ec2 = f"arn:{partition}:ec2:{region}"
    instance_profiles = f"arn:{partition}:iam::{account_id}:instance-profile/*"
    cluster_arn = f"arn:{partition}:eks:{region}:{account_id}:cluster/{cluster_name}"
    owned = f"kubernetes.io/cluster/{cluster_name}"
    tagged_resources = [
        f"{ec2}:*:fleet/*",
        f"{ec2}:*:instance/*",
        f"{ec2}:*:volume/*",
        f"{ec2}:*:network-interface/*",
        f"{ec2}:*:launch-template/*",
        f"{ec2}:*:spot-instances-request/*",
    ]
    owned_by_nodepool = {
        "StringEquals": {f"aws:ResourceTag/{owned}": "owned"},
        "StringLike": {f"aws:ResourceTag/{NODEPOOL_LABEL}": "*"},
    }

    node_lifecycle = [
        {
            "Sid": "AllowScopedEC2InstanceAccessActions",
            "Effect": "Allow",
            "Resource": [
                f"{ec2}::image/*",
                f"{ec2}::snapshot/*",
                f"{ec2}:*:security-group/*",
                f"{ec2}:*:subnet/*",
                f"{ec2}:*:capacity-reservation/*",
                f"{ec2}:*:placement-group/*",
            ],
            "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
        },
        {
            "Sid": "AllowScopedEC2LaunchTemplateAccessActions",
            "Effect": "Allow",
            "Resource": f"{ec2}:*:launch-template/*",
            "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
            "Condition": owned_by_nodepool,
        },
        {
            "Sid": "AllowScopedEC2InstanceActionsWithTags",
            "Effect": "Allow",
            "Resource": tagged_resources,
            "Action": ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"],
            "Condition": {
                "StringEquals": {
                    f"aws:RequestTag/{owned}": "owned",
                    f"aws:RequestTag/{EKS_CLUSTER_NAME_TAG}": cluster_name,
                },
                "StringLike": {f"aws:RequestTag/{NODEPOOL_LABEL}": "*"},
            },
        },
        {
            "Sid": "AllowScopedResourceCreationTagging",
            "Effect": "Allow",
            "Resource": tagged_resources,
            "Action": "ec2:CreateTags",
            "Condition": {
                "StringEquals": {
                    f"aws:RequestTag/{owned}": "owned",
                    f"aws:RequestTag/{EKS_CLUSTER_NAME_TAG}": cluster_name,
                    "ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"],
                },
                "StringLike": {f"aws:RequestTag/{NODEPOOL_LABEL}": "*"},
            },
        },
        {
            "Sid": "AllowScopedResourceTagging",
            "Effect": "Allow",
            "Resource": f"{ec2}:*:instance/*",
            "Action": "ec2:CreateTags",
            "Condition": {
                **owned_by_nodepool,
                "StringEqualsIfExists": {f"aws:RequestTag/{EKS_CLUSTER_NAME_TAG}": cluster_name},
                "ForAllValues:StringEquals": {"aws:TagKeys": [EKS_CLUSTER_NAME_TAG, NODECLAIM_TAG, NAME_TAG]},
            },
        },
        {
            "Sid": "AllowScopedDeletion",
            "Effect": "Allow",
            "Resource": [f"{ec2}:*:instance/*", f"{ec2}:*:launch-template/*"],
            "Action": ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
            "Condition": owned_by_nodepool,
        },
    ]

    profile_request_tags = {
        f"aws:RequestTag/{owned}": "owned",
        f"aws:RequestTag/{EKS_CLUSTER_NAME_TAG}": cluster_name,
        "aws:RequestTag/topology.kubernetes.io/region": region,
    }
    profile_resource_tags = {
        f"aws:ResourceTag/{owned}": "owned",
        "aws:ResourceTag/topology.kubernetes.io/region": region,
    }
    iam_integration = [
        {
            "Sid": "AllowPassingInstanceRole",
            "Effect": "Allow",
            "Resource": node_role_arn,
            "Action": "iam:PassRole",
            "Condition": {"StringEquals": {"iam:PassedToService": [EC2_SERVICE, f"{EC2_SERVICE}.cn"]}},
        },
        {
            "Sid": "AllowScopedInstanceProfileCreationActions",
            "Effect": "Allow",
            "Resource": instance_profiles,
            "Action": ["iam:CreateInstanceProfile"],
            "Condition": {
                "StringEquals": profile_request_tags,
                "StringLike": {f"aws:RequestTag/{NODECLASS_TAG}": "*"},
            },
        },
        {
            "Sid": "AllowScopedInstanceProfileTagActions",
            "Effect": "Allow",
            "Resource": instance_profiles,
            "Action": ["iam:TagInstanceProfile"],
            "Condition": {
                "StringEquals": {**profile_resource_tags, **profile_request_tags},
                "StringLike": {
                    f"aws:ResourceTag/{NODECLASS_TAG}": "*",
                    f"aws:RequestTag/{NODECLASS_TAG}": "*",
                },
            },
        },
        {
            "Sid": "AllowScopedInstanceProfileActions",
            "Effect": "Allow",
            "Resource": instance_profiles,
            "Action": ["iam:AddRoleToInstanceProfile", "iam:RemoveRoleFromInstanceProfile", "iam:DeleteInstanceProfile"],
            "Condition": {
                "StringEquals": profile_resource_tags,
                "StringLike": {f"aws:ResourceTag/{NODECLASS_TAG}": "*"},
            },
        },
    ]

    eks_integration = [
        {
            "Sid": "AllowAPIServerEndpointDiscovery",
            "Effect": "Allow",
            "Resource": cluster_arn,
            "Action": "eks:DescribeCluster",
        }
    ]

    interruption = [
        {
            "Sid": "AllowInterruptionQueueActions",
            "Effect": "Allow",
            "Resource": queue_arn,
            "Action": ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"],
        }
    ]

    resource_discovery = [
        {
            "Sid": "AllowRegionalReadActions",
            "Effect": "Allow",
            "Resource": "*",
            "Action": [
                "ec2:DescribeCapacityReservations",
                "ec2:DescribeImages",
                "ec2:DescribeInstances",
                "ec2:DescribeInstanceStatus",
                "ec2:DescribeInstanceTypeOfferings",
                "ec2:DescribeInstanceTypes",
                "ec2:DescribeLaunchTemplates",
                "ec2:DescribePlacementGroups",
                "ec2:DescribeSecurityGroups",
                "ec2:DescribeSpotPriceHistory",
                "ec2:DescribeSubnets",
            ],
            "Condition": {"StringEquals": {"aws:RequestedRegion": region}},
        },
        {
            "Sid": "AllowSSMReadActions",
            "Effect": "Allow",
            "Resource": f"arn:{partition}:ssm:{region}::parameter/aws/service/*",
            "Action": "ssm:GetParameter",
        },
        {"Sid": "AllowPricingReadActions", "Effect": "Allow", "Resource": "*", "Action": "pricing:GetProducts"},
        {
            "Sid": "AllowUnscopedInstanceProfileListAction",
            "Effect": "Allow",
            "Resource": "*",
            "Action": "iam:ListInstanceProfiles",
        },
        {
            "Sid": "AllowInstanceProfileReadActions",
            "Effect": "Allow",
            "Resource": instance_profiles,
            "Action": "iam:GetInstanceProfile",
        },
    ]

    # Read-only and scoped to this cluster; only used with `settings.enableZonalShift`, granted anyway
    # (as upstream does) so turning zonal shift on needs no IAM change.
    zonal_shift = [
        {
            "Sid": "AllowZonalShiftStatusReadOnly",
            "Effect": "Allow",
            "Resource": "*",
            "Action": ["arc-zonal-shift:GetManagedResource"],
            "Condition": {"StringEquals": {"arc-zonal-shift:ResourceIdentifier": cluster_arn}},
        }
    ]

    statements = {
        "node-lifecycle": node_lifecycle,
        "iam-integration": iam_integration,
        "eks-integration": eks_integration,
        "interruption": interruption,
        "resource-discovery": resource_discovery,
        "zonal-shift": zonal_shift,
    }
    return {name: {"Version": POLICY_VERSION, "Statement": statements[name]} for name in CONTROLLER_POLICY_NAMES}


# What the principal that launches a node needs of the KMS key of an encrypted volume it asks EC2 for,
# a volume restored from an encrypted snapshot among them: karpenter-provider-aws v1.14.1
# website/content/en/v1.14/troubleshooting.md, "Node terminates before ready on failed encrypted EBS
# volume" (the key policy it shows for "all principals in the account that are authorized to use EBS",
# through EC2 only). Without it the instance terminates right after launch. Karpenter's controller is
# that principal (it calls CreateFleet); the key's own policy must let the account's IAM policies grant it.
SNAPSHOT_KEY_ACTIONS = (
    "kms:Encrypt",
    "kms:Decrypt",
    "kms:ReEncrypt*",
    "kms:GenerateDataKey*",
    "kms:CreateGrant",
    "kms:DescribeKey",
)


def snapshot_key_policy(region: str, account_id: str, partition: str, key_arns: tuple[str, ...]) -> dict[str, Any]:
    """The controller's use of the image snapshots' keys (`PlatformConfig.snapshot_kms_keys`), through EC2 in
    the cluster's region and for this account only, as Karpenter's troubleshooting guide scopes it."""
    return {
        "Version": POLICY_VERSION,
        "Statement": [
            {
                "Sid": "AllowSnapshotKeysThroughEC2",
                "Effect": "Allow",
                "Action": list(SNAPSHOT_KEY_ACTIONS),
                "Resource": list(key_arns),
                "Condition": {
                    "StringEquals": {
                        "kms:ViaService": service_endpoint("ec2", region, partition),
                        "kms:CallerAccount": account_id,
                    }
                },
            }
        ],
    }
