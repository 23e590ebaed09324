"""Every IAM document the platform declares, compared with the upstream text it restates.

The expected documents are written out here (upstream's, with its `${...}` placeholders filled in
for the multi-pool fixture), never produced by the code under test, so a change to a builder cannot
move both sides. The fixture's cluster is `gpu-prod` in us-east-1; the offline engine's account is
111122223333 and its partition `aws`.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest

from models.aws_iam import trust_allows
from offline.engine import Recording

from .conftest import render_fixture

CLUSTER, REGION, ACCOUNT, PARTITION = "gpu-prod", "us-east-1", "111122223333", "aws"
QUEUE_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{CLUSTER}"
NODE_ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/{CLUSTER}-karpenter-node"

# aws/karpenter-provider-aws v1.14.1,
# website/content/en/v1.14/getting-started/getting-started-with-karpenter/cloudformation.yaml:
# the PolicyDocument of each AWS::IAM::ManagedPolicy, verbatim but for whitespace, keyed by the
# platform's name for it (upstream's `KarpenterController<Name>Policy`).
UPSTREAM_CONTROLLER_POLICIES = {
    "node-lifecycle": """{"Version": "2012-10-17", "Statement": [
      {"Sid": "AllowScopedEC2InstanceAccessActions", "Effect": "Allow",
       "Resource": ["arn:${AWS::Partition}:ec2:${AWS::Region}::image/*", "arn:${AWS::Partition}:ec2:${AWS::Region}::snapshot/*",
                    "arn:${AWS::Partition}:ec2:${AWS::Region}:*:security-group/*",
                    "arn:${AWS::Partition}:ec2:${AWS::Region}:*:subnet/*",
                    "arn:${AWS::Partition}:ec2:${AWS::Region}:*:capacity-reservation/*",
                    "arn:${AWS::Partition}:ec2:${AWS::Region}:*:placement-group/*"],
       "Action": ["ec2:RunInstances", "ec2:CreateFleet"]},
      {"Sid": "AllowScopedEC2LaunchTemplateAccessActions", "Effect": "Allow",
       "Resource": "arn:${AWS::Partition}:ec2:${AWS::Region}:*:launch-template/*",
       "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
       "Condition": {"StringEquals": {"aws:ResourceTag/kubernetes.io/cluster/${ClusterName}": "owned"},
                     "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"}}},
      {"Sid": "AllowScopedEC2InstanceActionsWithTags", "Effect": "Allow",
       "Resource": ["arn:${AWS::Partition}:ec2:${AWS::Region}:*:fleet/*", "arn:${AWS::Partition}:ec2:${AWS::Region}:*:instance/*",
                    "arn:${AWS::Partition}:ec2:${AWS::Region}:*:volume/*",
                    "arn:${AWS::Partition}:ec2:${AWS::Region}:*:network-interface/*",
                    "arn:${AWS::Partition}:ec2:${AWS::Region}:*:launch-template/*",
                    "arn:${AWS::Partition}:ec2:${AWS::Region}:*:spot-instances-request/*"],
       "Action": ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"],
       "Condition": {"StringEquals": {"aws:RequestTag/kubernetes.io/cluster/${ClusterName}": "owned",
                                      "aws:RequestTag/eks:eks-cluster-name": "${ClusterName}"},
                     "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"}}},
      {"Sid": "AllowScopedResourceCreationTagging", "Effect": "Allow",
       "Resource": ["arn:${AWS::Partition}:ec2:${AWS::Region}:*:fleet/*", "arn:${AWS::Partition}:ec2:${AWS::Region}:*:instance/*",
                    "arn:${AWS::Partition}:ec2:${AWS::Region}:*:volume/*",
                    "arn:${AWS::Partition}:ec2:${AWS::Region}:*:network-interface/*",
                    "arn:${AWS::Partition}:ec2:${AWS::Region}:*:launch-template/*",
                    "arn:${AWS::Partition}:ec2:${AWS::Region}:*:spot-instances-request/*"],
       "Action": "ec2:CreateTags",
       "Condition": {"StringEquals": {"aws:RequestTag/kubernetes.io/cluster/${ClusterName}": "owned",
                                      "aws:RequestTag/eks:eks-cluster-name": "${ClusterName}",
                                      "ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"]},
                     "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"}}},
      {"Sid": "AllowScopedResourceTagging", "Effect": "Allow",
       "Resource": "arn:${AWS::Partition}:ec2:${AWS::Region}:*:instance/*",
       "Action": "ec2:CreateTags",
       "Condition": {"StringEquals": {"aws:ResourceTag/kubernetes.io/cluster/${ClusterName}": "owned"},
                     "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"},
                     "StringEqualsIfExists": {"aws:RequestTag/eks:eks-cluster-name": "${ClusterName}"},
                     "ForAllValues:StringEquals": {"aws:TagKeys": ["eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"]}}},
      {"Sid": "AllowScopedDeletion", "Effect": "Allow",
       "Resource": ["arn:${AWS::Partition}:ec2:${AWS::Region}:*:instance/*",
                    "arn:${AWS::Partition}:ec2:${AWS::Region}:*:launch-template/*"],
       "Action": ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
       "Condition": {"StringEquals": {"aws:ResourceTag/kubernetes.io/cluster/${ClusterName}": "owned"},
                     "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"}}}]}""",
    "iam-integration": """{"Version": "2012-10-17", "Statement": [
      {"Sid": "AllowPassingInstanceRole", "Effect": "Allow", "Resource": "${KarpenterNodeRole.Arn}", "Action": "iam:PassRole",
       "Condition": {"StringEquals": {"iam:PassedToService": ["ec2.amazonaws.com", "ec2.amazonaws.com.cn"]}}},
      {"Sid": "AllowScopedInstanceProfileCreationActions", "Effect": "Allow",
       "Resource": "arn:${AWS::Partition}:iam::${AWS::AccountId}:instance-profile/*",
       "Action": ["iam:CreateInstanceProfile"],
       "Condition": {"StringEquals": {"aws:RequestTag/kubernetes.io/cluster/${ClusterName}": "owned",
                                      "aws:RequestTag/eks:eks-cluster-name": "${ClusterName}",
                                      "aws:RequestTag/topology.kubernetes.io/region": "${AWS::Region}"},
                     "StringLike": {"aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*"}}},
      {"Sid": "AllowScopedInstanceProfileTagActions", "Effect": "Allow",
       "Resource": "arn:${AWS::Partition}:iam::${AWS::AccountId}:instance-profile/*",
       "Action": ["iam:TagInstanceProfile"],
       "Condition": {"StringEquals": {"aws:ResourceTag/kubernetes.io/cluster/${ClusterName}": "owned",
                                      "aws:ResourceTag/topology.kubernetes.io/region": "${AWS::Region}",
                                      "aws:RequestTag/kubernetes.io/cluster/${ClusterName}": "owned",
                                      "aws:RequestTag/eks:eks-cluster-name": "${ClusterName}",
                                      "aws:RequestTag/topology.kubernetes.io/region": "${AWS::Region}"},
                     "StringLike": {"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*",
                                    "aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*"}}},
      {"Sid": "AllowScopedInstanceProfileActions", "Effect": "Allow",
       "Resource": "arn:${AWS::Partition}:iam::${AWS::AccountId}:instance-profile/*",
       "Action": ["iam:AddRoleToInstanceProfile", "iam:RemoveRoleFromInstanceProfile", "iam:DeleteInstanceProfile"],
       "Condition": {"StringEquals": {"aws:ResourceTag/kubernetes.io/cluster/${ClusterName}": "owned",
                                      "aws:ResourceTag/topology.kubernetes.io/region": "${AWS::Region}"},
                     "StringLike": {"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*"}}}]}""",
    "eks-integration": """{"Version": "2012-10-17", "Statement": [
      {"Sid": "AllowAPIServerEndpointDiscovery", "Effect": "Allow",
       "Resource": "arn:${AWS::Partition}:eks:${AWS::Region}:${AWS::AccountId}:cluster/${ClusterName}",
       "Action": "eks:DescribeCluster"}]}""",
    "interruption": """{"Version": "2012-10-17", "Statement": [
      {"Sid": "AllowInterruptionQueueActions", "Effect": "Allow", "Resource": "${KarpenterInterruptionQueue.Arn}",
       "Action": ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"]}]}""",
    "resource-discovery": """{"Version": "2012-10-17", "Statement": [
      {"Sid": "AllowRegionalReadActions", "Effect": "Allow", "Resource": "*",
       "Action": ["ec2:DescribeCapacityReservations", "ec2:DescribeImages", "ec2:DescribeInstances",
                  "ec2:DescribeInstanceStatus", "ec2:DescribeInstanceTypeOfferings", "ec2:DescribeInstanceTypes",
                  "ec2:DescribeLaunchTemplates", "ec2:DescribePlacementGroups", "ec2:DescribeSecurityGroups",
                  "ec2:DescribeSpotPriceHistory", "ec2:DescribeSubnets"],
       "Condition": {"StringEquals": {"aws:RequestedRegion": "${AWS::Region}"}}},
      {"Sid": "AllowSSMReadActions", "Effect": "Allow",
       "Resource": "arn:${AWS::Partition}:ssm:${AWS::Region}::parameter/aws/service/*", "Action": "ssm:GetParameter"},
      {"Sid": "AllowPricingReadActions", "Effect": "Allow", "Resource": "*", "Action": "pricing:GetProducts"},
      {"Sid": "AllowUnscopedInstanceProfileListAction", "Effect": "Allow", "Resource": "*",
       "Action": "iam:ListInstanceProfiles"},
      {"Sid": "AllowInstanceProfileReadActions", "Effect": "Allow",
       "Resource": "arn:${AWS::Partition}:iam::${AWS::AccountId}:instance-profile/*", "Action": "iam:GetInstanceProfile"}]}""",
    "zonal-shift": """{"Version": "2012-10-17", "Statement": [
      {"Sid": "AllowZonalShiftStatusReadOnly", "Effect": "Allow", "Resource": "*",
       "Action": ["arc-zonal-shift:GetManagedResource"],
       "Condition": {"StringEquals": {"arc-zonal-shift:ResourceIdentifier":
                                      "arn:${AWS::Partition}:eks:${AWS::Region}:${AWS::AccountId}:cluster/${ClusterName}"}}}]}""",
}

# Upstream's node role policies (the same template's KarpenterNodeRole.ManagedPolicyArns), which the
# system nodes need as well, but for AmazonEC2ContainerRegistryPullOnly: it pulls from every repository
# of the account, and an inline policy (components/lib/iam.py node_image_pull_policy) grants the pulls.
NODE_POLICIES = [
    "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
    "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
    "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore",
]


def trust(service: str, *actions: str, condition: dict[str, Any] | None = None) -> dict[str, Any]:
    action: Any = list(actions) if len(actions) > 1 else actions[0]
    statement: dict[str, Any] = {"Effect": "Allow", "Principal": {"Service": service}, "Action": action}
    if condition:
        statement["Condition"] = condition
    return {"Version": "2012-10-17", "Statement": [statement]}


def pod_identity(namespace: str, service_account: str) -> dict[str, Any]:
    """EKS Pod Identity for one service account of this cluster in this account. It needs sts:TagSession
    besides sts:AssumeRole and tags the session with the cluster, namespace and service account, which
    the condition matches (EKS user guide, pod-id-role.html "Setting Conditions"; tag keys from
    pod-id-abac.html "List of session tags added by EKS Pod Identity")."""
    return trust(
        "pods.eks.amazonaws.com",
        "sts:AssumeRole",
        "sts:TagSession",
        condition={
            "StringEquals": {
                "aws:SourceAccount": ACCOUNT,
                "aws:RequestTag/eks-cluster-name": CLUSTER,
                "aws:RequestTag/kubernetes-namespace": namespace,
                "aws:RequestTag/kubernetes-service-account": service_account,
            }
        },
    )


ESO_CONTROLLER_ARN = f"arn:aws:iam::{ACCOUNT}:role/{CLUSTER}-external-secrets"
# The multi-pool fixture's tenants, each with a secrets role.
TENANTS = ("data-science", "experiments", "inference", "llm-training")


def external_secrets_tenant(tenant: str) -> dict[str, Any]:
    """Only External Secrets Operator's controller, in its own namespace on this cluster (the Pod Identity
    session's principal tags), for ExternalSecrets of the tenant's namespace (the `esoNamespace` session tag
    ESO sets, external-secrets v2.9.0 providers/v1/aws/provider.go buildSessionTags)."""
    return {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow",
        "Principal": {"AWS": ESO_CONTROLLER_ARN},
        "Action": ["sts:AssumeRole", "sts:TagSession"],
        "Condition": {"StringEquals": {
            "aws:PrincipalAccount": ACCOUNT,
            "aws:PrincipalTag/eks-cluster-name": CLUSTER,
            "aws:PrincipalTag/kubernetes-namespace": "external-secrets",
            "aws:PrincipalTag/kubernetes-service-account": "external-secrets",
            "aws:RequestTag/esoNamespace": tenant,
        }},
    }]}


def image_pull_tenant() -> dict[str, Any]:
    """Only External Secrets Operator's controller, in its own namespace on this cluster; its ECR generator
    assumes the role without session tags (external-secrets v2.9.0 providers/v1/aws/auth/auth.go
    NewGeneratorSession), so nothing names the tenant."""
    return {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow",
        "Principal": {"AWS": ESO_CONTROLLER_ARN},
        "Action": "sts:AssumeRole",
        "Condition": {"StringEquals": {
            "aws:PrincipalAccount": ACCOUNT,
            "aws:PrincipalTag/eks-cluster-name": CLUSTER,
            "aws:PrincipalTag/kubernetes-namespace": "external-secrets",
            "aws:PrincipalTag/kubernetes-service-account": "external-secrets",
        }},
    }]}


# Who may assume each role; EC2 and VPC flow logs need sts:AssumeRole only.
ROLE_TRUST = {
    f"{CLUSTER}-external-secrets": pod_identity("external-secrets", "external-secrets"),
    **{f"{CLUSTER}-secrets-{tenant}": external_secrets_tenant(tenant) for tenant in TENANTS},
    **{f"{CLUSTER}-image-pull-{tenant}": image_pull_tenant() for tenant in TENANTS},
    f"{CLUSTER}-karpenter-controller": pod_identity("kube-system", "karpenter"),
    f"{CLUSTER}-aws-ebs-csi-driver": pod_identity("kube-system", "ebs-csi-controller-sa"),
    # The node roles are for EC2 only (upstream's node role also trusts Pod Identity, which nothing here uses).
    f"{CLUSTER}-karpenter-node": trust("ec2.amazonaws.com", "sts:AssumeRole"),
    f"{CLUSTER}-system-node": trust("ec2.amazonaws.com", "sts:AssumeRole"),
    # The VPC user guide's confused-deputy conditions ("IAM role for publishing flow logs to CloudWatch Logs").
    f"{CLUSTER}-vpc-flow-logs": trust(
        "vpc-flow-logs.amazonaws.com",
        "sts:AssumeRole",
        condition={
            "StringEquals": {"aws:SourceAccount": ACCOUNT},
            "ArnLike": {"aws:SourceArn": f"arn:{PARTITION}:ec2:{REGION}:{ACCOUNT}:vpc-flow-log/*"},
        },
    ),
}

# Managed policies attached to each role.
ROLE_POLICIES = {
    f"{CLUSTER}-karpenter-node": NODE_POLICIES,
    f"{CLUSTER}-system-node": NODE_POLICIES,
    # aws-ebs-csi-driver's documented policy (EKS user guide, "ebs-csi").
    f"{CLUSTER}-aws-ebs-csi-driver": ["arn:aws:iam::aws:policy/service-role/AmazonEBSCSIDriverPolicy"],
    f"{CLUSTER}-karpenter-controller": sorted(
        f"arn:aws:iam::{ACCOUNT}:policy/{CLUSTER}-karpenter-{name}" for name in UPSTREAM_CONTROLLER_POLICIES
    ),
}


def upstream(document: str) -> dict[str, Any]:
    for placeholder, value in {
        "${AWS::Partition}": PARTITION,
        "${AWS::Region}": REGION,
        "${AWS::AccountId}": ACCOUNT,
        "${ClusterName}": CLUSTER,
        "${KarpenterNodeRole.Arn}": NODE_ROLE_ARN,
        "${KarpenterInterruptionQueue.Arn}": QUEUE_ARN,
    }.items():
        document = document.replace(placeholder, value)
    return json.loads(document)


@functools.cache
def recording() -> Recording:
    return render_fixture("multi-pool")


def declared_of_type(type_: str) -> list:
    return recording().by_type(type_)


@pytest.mark.parametrize("name", sorted(UPSTREAM_CONTROLLER_POLICIES))
def test_each_controller_policy_is_upstreams_document_for_this_cluster(name):
    [policy] = [p for p in declared_of_type("aws:iam/policy:Policy") if p.inputs["name"] == f"{CLUSTER}-karpenter-{name}"]
    assert json.loads(policy.inputs["policy"]) == upstream(UPSTREAM_CONTROLLER_POLICIES[name])


def test_no_other_managed_policy_is_declared():
    assert sorted(p.inputs["name"] for p in declared_of_type("aws:iam/policy:Policy")) == sorted(
        f"{CLUSTER}-karpenter-{name}" for name in UPSTREAM_CONTROLLER_POLICIES
    )


@pytest.mark.parametrize("role", sorted(ROLE_TRUST))
def test_each_role_is_assumable_only_by_its_one_service_on_behalf_of_this_stack(role):
    [found] = [r for r in declared_of_type("aws:iam/role:Role") if r.inputs["name"] == role]
    assert json.loads(found.inputs["assumeRolePolicy"]) == ROLE_TRUST[role]


def test_every_role_is_one_of_the_known_ones():
    assert sorted(r.inputs["name"] for r in declared_of_type("aws:iam/role:Role")) == sorted(ROLE_TRUST)


def test_each_role_gets_exactly_its_managed_policies():
    attached: dict[str, list[str]] = {}
    for attachment in declared_of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment"):
        attached.setdefault(attachment.inputs["role"], []).append(attachment.inputs["policyArn"])
    assert {role: sorted(arns) for role, arns in attached.items()} == ROLE_POLICIES


def test_flow_logs_may_write_only_to_their_own_log_group():
    # The actions VPC flow logs need to publish to CloudWatch Logs (VPC user guide, "flow-logs-iam-role").
    log_group = f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:/aws/vpc/{CLUSTER}/flow-logs"
    [policy] = [p for p in declared_of_type("aws:iam/rolePolicy:RolePolicy") if p.inputs["role"] == f"{CLUSTER}-vpc-flow-logs"]
    assert json.loads(policy.inputs["policy"]) == {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": ["logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"],
                "Resource": [log_group, f"{log_group}:*"],
            }
        ],
    }


def test_the_interruption_queue_takes_eventbridge_and_sqs_messages_over_tls_only():
    # Upstream's KarpenterInterruptionQueuePolicy, plus the policy language's Version, the Deny's
    # Principal "*" that SQS requires of a statement, and a source condition on each service principal.
    [policy] = declared_of_type("aws:sqs/queuePolicy:QueuePolicy")
    assert json.loads(policy.inputs["policy"]) == {
        "Version": "2012-10-17",
        "Id": "EC2InterruptionPolicy",
        "Statement": [
            {
                "Sid": "ClusterEventRules",
                "Effect": "Allow",
                "Principal": {"Service": "events.amazonaws.com"},
                "Action": "sqs:SendMessage",
                "Resource": QUEUE_ARN,
                "Condition": {"ArnLike": {"aws:SourceArn": f"arn:aws:events:{REGION}:{ACCOUNT}:rule/{CLUSTER}-karpenter-*"}},
            },
            {
                "Sid": "SqsInThisAccount",
                "Effect": "Allow",
                "Principal": {"Service": "sqs.amazonaws.com"},
                "Action": "sqs:SendMessage",
                "Resource": QUEUE_ARN,
                "Condition": {"StringEquals": {"aws:SourceAccount": ACCOUNT}},
            },
            {
                "Sid": "DenyHTTP",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "sqs:*",
                "Resource": QUEUE_ARN,
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            },
        ],
    }
    [queue] = declared_of_type("aws:sqs/queue:Queue")
    # Upstream: QueueName ${ClusterName}, MessageRetentionPeriod 300, SqsManagedSseEnabled true.
    assert {k: queue.inputs[k] for k in ("name", "messageRetentionSeconds", "sqsManagedSseEnabled")} == {
        "name": CLUSTER,
        "messageRetentionSeconds": 300,
        "sqsManagedSseEnabled": True,
    }


def test_each_interruption_rule_matches_one_upstream_event_and_targets_the_queue():
    # Upstream's ScheduledChangeRule, SpotInterruptionRule, RebalanceRule, InstanceStateChangeRule and
    # CapacityReservationInterruptionRule event patterns.
    rules = declared_of_type("aws:cloudwatch/eventRule:EventRule")
    patterns = {json.dumps(json.loads(r.inputs["eventPattern"]), sort_keys=True) for r in rules}
    assert patterns == {
        json.dumps({"source": [source], "detail-type": [detail]}, sort_keys=True)
        for source, detail in [
            ("aws.health", "AWS Health Event"),
            ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
            ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
            ("aws.ec2", "EC2 Instance State-change Notification"),
            ("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning"),
        ]
    }
    targets = declared_of_type("aws:cloudwatch/eventTarget:EventTarget")
    assert len(targets) == 5
    assert {t.inputs["arn"] for t in targets} == {QUEUE_ARN}


@pytest.mark.parametrize("tenant", TENANTS)
def test_a_tenants_secrets_role_reads_only_its_own_path(tenant):
    [policy] = [p for p in declared_of_type("aws:iam/rolePolicy:RolePolicy") if p.inputs["role"] == f"{CLUSTER}-secrets-{tenant}"]
    assert json.loads(policy.inputs["policy"]) == {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow",
        "Action": ["secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"],
        "Resource": f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:/{CLUSTER}/{tenant}/*",
    }]}


@pytest.mark.parametrize("tenant", TENANTS)
def test_a_tenants_image_pull_role_logs_in_and_pulls_only_its_own_repositories(tenant):
    role = f"{CLUSTER}-image-pull-{tenant}"
    [policy] = [p for p in declared_of_type("aws:iam/rolePolicy:RolePolicy") if p.inputs["role"] == role]
    assert json.loads(policy.inputs["policy"]) == {"Version": "2012-10-17", "Statement": [
        {"Sid": "RegistryLogin", "Effect": "Allow", "Action": "ecr:GetAuthorizationToken", "Resource": "*"},
        {
            "Sid": "OwnRepositories",
            "Effect": "Allow",
            "Action": ["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
            "Resource": f"arn:aws:ecr:{REGION}:{ACCOUNT}:repository/{tenant}/*",
        },
    ]}


def test_external_secrets_controller_may_only_assume_the_tenants_secrets_and_image_pull_roles():
    [policy] = [p for p in declared_of_type("aws:iam/rolePolicy:RolePolicy") if p.inputs["role"] == f"{CLUSTER}-external-secrets"]
    assert json.loads(policy.inputs["policy"]) == {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow",
        "Action": ["sts:AssumeRole", "sts:TagSession"],
        "Resource": [f"arn:aws:iam::{ACCOUNT}:role/{CLUSTER}-secrets-*", f"arn:aws:iam::{ACCOUNT}:role/{CLUSTER}-image-pull-*"],
    }]}


def test_the_controller_and_the_ebs_driver_get_their_roles_through_pod_identity():
    associations = {
        (a.inputs["namespace"], a.inputs["serviceAccount"]): a.inputs["roleArn"]
        for a in declared_of_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
    }
    assert associations == {
        ("kube-system", "karpenter"): f"arn:aws:iam::{ACCOUNT}:role/{CLUSTER}-karpenter-controller",
        ("external-secrets", "external-secrets"): ESO_CONTROLLER_ARN,
    }
    # The EBS CSI driver's association is part of its add-on (service account ebs-csi-controller-sa).
    [ebs] = [a for a in declared_of_type("aws:eks/addon:Addon") if a.inputs["addonName"] == "aws-ebs-csi-driver"]
    assert ebs.inputs["podIdentityAssociations"] == [
        {"roleArn": f"arn:aws:iam::{ACCOUNT}:role/{CLUSTER}-aws-ebs-csi-driver", "serviceAccount": "ebs-csi-controller-sa"}
    ]


def test_each_pod_identity_role_trusts_only_the_service_account_its_association_names():
    roles = {r.inputs["name"]: json.loads(r.inputs["assumeRolePolicy"]) for r in declared_of_type("aws:iam/role:Role")}
    associations = [
        (a.inputs["namespace"], a.inputs["serviceAccount"], a.inputs["roleArn"])
        for a in declared_of_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
    ] + [
        ("kube-system", association["serviceAccount"], association["roleArn"])
        for addon in declared_of_type("aws:eks/addon:Addon")
        for association in addon.inputs.get("podIdentityAssociations") or ()
    ]
    pod_identity_roles = {
        name for name, doc in roles.items() if doc["Statement"][0]["Principal"].get("Service") == "pods.eks.amazonaws.com"
    }
    assert {arn.rsplit("/", 1)[1] for _, _, arn in associations} == pod_identity_roles
    for namespace, service_account, arn in associations:
        [statement] = roles[arn.rsplit("/", 1)[1]]["Statement"]
        tags = statement["Condition"]["StringEquals"]
        assert (tags["aws:RequestTag/kubernetes-namespace"], tags["aws:RequestTag/kubernetes-service-account"]) == (
            namespace,
            service_account,
        )


def test_sts_allows_a_service_only_when_every_condition_of_its_statement_holds():
    """AWS IAM User Guide, "Policy evaluation logic" and "Condition operators": within a statement every
    key of every block must match, and a key the request lacks fails. An operator the model does not
    know (here StringLike) must never allow, so an unmodelled condition cannot pass a policy by accident."""
    trust = {
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "pods.eks.amazonaws.com"},
                "Action": ["sts:AssumeRole", "sts:TagSession"],
                "Condition": {
                    "StringEquals": {"aws:SourceAccount": "210987654321", "aws:RequestTag/kubernetes-namespace": "kueue-system"},
                    "ArnLike": {"aws:SourceArn": "arn:aws:eks:us-west-2:210987654321:cluster/gpu-*"},
                },
            }
        ]
    }
    context = {
        "aws:SourceAccount": "210987654321",
        "aws:RequestTag/kubernetes-namespace": "kueue-system",
        "aws:SourceArn": "arn:aws:eks:us-west-2:210987654321:cluster/gpu-prod",
    }
    assert trust_allows(trust, "pods.eks.amazonaws.com", context)
    assert not trust_allows(trust, "ec2.amazonaws.com", context)
    # One key of a block wrong, or absent, is enough to refuse.
    assert not trust_allows(trust, "pods.eks.amazonaws.com", {**context, "aws:RequestTag/kubernetes-namespace": "team-a"})
    assert not trust_allows(trust, "pods.eks.amazonaws.com", {k: v for k, v in context.items() if k != "aws:SourceAccount"})
    other_cluster = "arn:aws:eks:us-west-2:210987654321:cluster/cpu-prod"
    assert not trust_allows(trust, "pods.eks.amazonaws.com", {**context, "aws:SourceArn": other_cluster})
    # A statement with an operator outside the model never allows, even when the modelled blocks hold.
    unmodelled = json.loads(json.dumps(trust))
    unmodelled["Statement"][0]["Condition"]["StringLike"] = {"aws:PrincipalTag/team": "*"}
    assert not trust_allows(unmodelled, "pods.eks.amazonaws.com", context)
    # A Deny statement never allows.
    denied = json.loads(json.dumps(trust))
    denied["Statement"][0]["Effect"] = "Deny"
    assert not trust_allows(denied, "pods.eks.amazonaws.com", context)
