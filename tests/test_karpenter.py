"""Karpenter: the controller's AWS identity, its node role, interruption handling and its Helm releases.

The expectations marked "upstream" restate aws/karpenter-provider-aws v1.14.1's reference setup
(website/content/en/v1.14/getting-started/getting-started-with-karpenter/cloudformation.yaml).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s
import pytest
from pulumi_aws import iam

from components.karpenter import (
    INTERRUPTION_EVENTS,
    Karpenter,
    controller_values,
    event_pattern,
    interruption_queue_policy,
)
from components.karpenter.policy import (
    CONTROLLER_POLICY_NAMES,
    controller_policy_documents,
)
from components.lib import iam as policies
from components.lib.iam import NODE_ROLE_POLICIES
from config.labels import SYSTEM_NODE_LABELS, SYSTEM_NODE_TAINT
from config.versions import CHARTS
from offline.cloud import ACCOUNT_ID
from offline.engine import Recording, run_program

from .conftest import chart_values_problems, short

CLUSTER = "gpu-test"
REGION = "us-west-2"
COMPONENT = f"{CLUSTER}-karpenter"
TAGS = {"team": "platform"}
QUEUE_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT_ID}:{CLUSTER}"
NODE_ROLE_ARN = f"arn:aws:iam::{ACCOUNT_ID}:role/{CLUSTER}-karpenter-node"

ROLE = "aws:iam/role:Role"
POLICY = "aws:iam/policy:Policy"
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
RELEASE = "kubernetes:helm.sh/v3:Release"

# IAM refuses a managed policy document longer than this (whitespace excluded).
MANAGED_POLICY_MAX_CHARS = 6144

# Upstream: every Sid of every managed policy, in order.
UPSTREAM_SIDS = {
    "node-lifecycle": [
        "AllowScopedEC2InstanceAccessActions",
        "AllowScopedEC2LaunchTemplateAccessActions",
        "AllowScopedEC2InstanceActionsWithTags",
        "AllowScopedResourceCreationTagging",
        "AllowScopedResourceTagging",
        "AllowScopedDeletion",
    ],
    "iam-integration": [
        "AllowPassingInstanceRole",
        "AllowScopedInstanceProfileCreationActions",
        "AllowScopedInstanceProfileTagActions",
        "AllowScopedInstanceProfileActions",
    ],
    "eks-integration": ["AllowAPIServerEndpointDiscovery"],
    "interruption": ["AllowInterruptionQueueActions"],
    "resource-discovery": [
        "AllowRegionalReadActions",
        "AllowSSMReadActions",
        "AllowPricingReadActions",
        "AllowUnscopedInstanceProfileListAction",
        "AllowInstanceProfileReadActions",
    ],
    "zonal-shift": ["AllowZonalShiftStatusReadOnly"],
}

# Upstream: the (source, detail-type) of every EventBridge rule that targets the interruption queue.
UPSTREAM_EVENTS = {
    ("aws.health", "AWS Health Event"),
    ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
    ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
    ("aws.ec2", "EC2 Instance State-change Notification"),
    ("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning"),
}

# --- harness ----------------------------------------------------------------------------------


def run_component(build: Callable[[], None]) -> Recording:
    """Run `build` as a whole program under the offline engine's mocks, in a fresh SDK context."""
    return run_program("test", {"aws:region": REGION}, program=build)


def _declare_karpenter() -> None:
    provider = k8s.Provider("cluster", kubeconfig="{}")
    system_nodes = iam.Role("system-nodes", assume_role_policy="{}")  # stands in for the node group
    karpenter = Karpenter(
        COMPONENT,
        cluster_name=CLUSTER,
        region=REGION,
        account_id=aws.get_caller_identity_output().account_id,
        partition=aws.get_partition_output().partition,
        node_repositories=("platform/",),
        chart_versions=CHARTS,
        k8s_provider=provider,
        tags=TAGS,
        depends_on=[system_nodes],
    )
    # stands in for the NodePools
    iam.Role("node-pools", assume_role_policy="{}", opts=pulumi.ResourceOptions(depends_on=karpenter.destroy_after))


@functools.cache
def karpenter() -> Recording:
    return run_component(_declare_karpenter)


def release(name: str):
    return karpenter().named(RELEASE, f"{COMPONENT}-{name}")


def documents() -> dict[str, dict[str, Any]]:
    return controller_policy_documents(CLUSTER, REGION, ACCOUNT_ID, "aws", QUEUE_ARN, NODE_ROLE_ARN)


def statements() -> Iterator[dict[str, Any]]:
    for document in documents().values():
        yield from document["Statement"]


def actions(statement: dict[str, Any]) -> list[str]:
    action = statement["Action"]
    return [action] if isinstance(action, str) else list(action)


def ancestors(recording: Recording, resource) -> list[str]:
    chain = []
    while resource.parent and not resource.parent.endswith("pulumi:pulumi:Stack::gpu-platform-test"):
        chain.append(resource.parent)
        resource = recording.by_urn(resource.parent)
    return chain


# --- controller identity ----------------------------------------------------------------------


def test_controller_role_is_assumable_only_through_eks_pod_identity():
    role = karpenter().named(ROLE, f"{COMPONENT}-controller-role")
    trust = json.loads(role.inputs["assumeRolePolicy"])
    [statement] = trust["Statement"]
    assert statement["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert sorted(statement["Action"]) == ["sts:AssumeRole", "sts:TagSession"]
    # Only for Karpenter's own service account on this cluster, in this account.
    assert statement["Condition"] == {
        "StringEquals": {
            "aws:SourceAccount": ACCOUNT_ID,
            "aws:RequestTag/eks-cluster-name": CLUSTER,
            "aws:RequestTag/kubernetes-namespace": "kube-system",
            "aws:RequestTag/kubernetes-service-account": "karpenter",
        }
    }
    assert role.inputs["name"] == f"{CLUSTER}-karpenter-controller"


def test_controller_policy_has_every_upstream_statement_split_as_upstream_splits_it():
    assert {name: [s["Sid"] for s in doc["Statement"]] for name, doc in documents().items()} == UPSTREAM_SIDS


def test_each_controller_policy_fits_iam_size_limit_even_for_the_longest_cluster_name():
    longest = controller_policy_documents("c" * 32, "ap-southeast-5", ACCOUNT_ID, "aws-us-gov", QUEUE_ARN, NODE_ROLE_ARN)
    for name, document in longest.items():
        assert len(json.dumps(document, separators=(",", ":"))) < MANAGED_POLICY_MAX_CHARS, name


def test_every_controller_policy_is_declared_and_attached_to_the_controller_role():
    recording = karpenter()
    role = recording.named(ROLE, f"{COMPONENT}-controller-role")
    for name in CONTROLLER_POLICY_NAMES:
        policy = recording.named(POLICY, f"{COMPONENT}-controller-{name}")
        assert json.loads(policy.inputs["policy"]) == documents()[name]
        attachment = recording.named(ATTACHMENT, f"{COMPONENT}-controller-role-{name}")
        assert attachment.inputs["role"] == role.inputs["name"]
        assert attachment.property_dependencies["policyArn"] == (policy.urn,)
    assert len(recording.by_type(POLICY)) == len(CONTROLLER_POLICY_NAMES)


def test_controller_may_pass_only_the_node_role_and_only_to_ec2():
    passing = [s for s in statements() if any(a.startswith("iam:PassRole") for a in actions(s))]
    assert [s["Resource"] for s in passing] == [NODE_ROLE_ARN]
    assert passing[0]["Condition"] == {"StringEquals": {"iam:PassedToService": ["ec2.amazonaws.com", "ec2.amazonaws.com.cn"]}}
    # The declared policy carries the node role's real ARN, not a placeholder.
    declared = json.loads(karpenter().named(POLICY, f"{COMPONENT}-controller-iam-integration").inputs["policy"])
    assert declared["Statement"][0]["Resource"] == NODE_ROLE_ARN


def test_controller_may_use_only_the_interruption_queue():
    queue_statements = [s for s in statements() if any(a.startswith("sqs:") for a in actions(s))]
    assert [(s["Resource"], sorted(actions(s))) for s in queue_statements] == [
        (QUEUE_ARN, ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"])
    ]


def test_controller_may_describe_only_its_own_cluster():
    [describe] = [s for s in statements() if "eks:DescribeCluster" in actions(s)]
    assert describe["Resource"] == f"arn:aws:eks:{REGION}:{ACCOUNT_ID}:cluster/{CLUSTER}"


@pytest.mark.parametrize("action", ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate", "iam:DeleteInstanceProfile"])
def test_controller_deletes_only_what_its_cluster_owns(action):
    [statement] = [s for s in statements() if action in actions(s)]
    assert statement["Condition"]["StringEquals"][f"aws:ResourceTag/kubernetes.io/cluster/{CLUSTER}"] == "owned"


def test_controller_launches_only_instances_tagged_for_its_cluster_and_a_nodepool():
    [launch] = [s for s in statements() if s["Sid"] == "AllowScopedEC2InstanceActionsWithTags"]
    assert launch["Condition"] == {
        "StringEquals": {
            f"aws:RequestTag/kubernetes.io/cluster/{CLUSTER}": "owned",
            "aws:RequestTag/eks:eks-cluster-name": CLUSTER,
        },
        "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"},
    }


def test_controller_reads_are_scoped_to_the_region_and_public_ssm_parameters():
    by_sid = {s["Sid"]: s for s in statements()}
    assert by_sid["AllowRegionalReadActions"]["Condition"] == {"StringEquals": {"aws:RequestedRegion": REGION}}
    assert by_sid["AllowSSMReadActions"]["Resource"] == f"arn:aws:ssm:{REGION}::parameter/aws/service/*"
    assert actions(by_sid["AllowPricingReadActions"]) == ["pricing:GetProducts"]


def test_controller_service_account_gets_the_role_through_pod_identity():
    recording = karpenter()
    association = recording.named("aws:eks/podIdentityAssociation:PodIdentityAssociation", f"{COMPONENT}-controller-identity")
    assert association.inputs["clusterName"] == CLUSTER
    assert (association.inputs["namespace"], association.inputs["serviceAccount"]) == ("kube-system", "karpenter")
    assert association.inputs["roleArn"] == f"arn:aws:iam::{ACCOUNT_ID}:role/{CLUSTER}-karpenter-controller"
    assert controller_values(CLUSTER, REGION, CLUSTER)["serviceAccount"]["name"] == association.inputs["serviceAccount"]


# --- node role --------------------------------------------------------------------------------


def test_node_role_pulls_this_accounts_images_only_under_the_given_prefixes():
    recording = karpenter()
    [inline] = [p for p in recording.by_type("aws:iam/rolePolicy:RolePolicy") if short(p.parent) == f"{COMPONENT}-node-role"]
    assert json.loads(inline.inputs["policy"]) == policies.node_image_pull_policy("aws", ACCOUNT_ID, ["platform/"])


def test_node_role_is_for_ec2_with_the_three_node_policies():
    recording = karpenter()
    role = recording.named(ROLE, f"{COMPONENT}-node-role")
    assert json.loads(role.inputs["assumeRolePolicy"]) == policies.service_trust_policy("ec2.amazonaws.com")
    attached = {
        a.inputs["policyArn"] for a in recording.by_type(ATTACHMENT) if short(a.parent) == f"{COMPONENT}-node-role"
    }
    assert attached == {f"arn:aws:iam::aws:policy/{p}" for p in NODE_ROLE_POLICIES}
    assert {p.rsplit("/", 1)[-1] for p in attached} == {
        "AmazonEKSWorkerNodePolicy",
        "AmazonEKS_CNI_Policy",
        "AmazonSSMManagedInstanceCore",
    }


def test_karpenter_nodes_can_join_through_an_ec2_linux_access_entry():
    entry = karpenter().named("aws:eks/accessEntry:AccessEntry", f"{COMPONENT}-node-access")
    assert entry.inputs["type"] == "EC2_LINUX"
    assert entry.inputs["principalArn"] == NODE_ROLE_ARN
    assert entry.inputs["clusterName"] == CLUSTER


# --- interruption handling --------------------------------------------------------------------


def test_interruption_queue_is_named_for_the_cluster_encrypted_and_keeps_messages_five_minutes():
    queue = karpenter().named("aws:sqs/queue:Queue", f"{COMPONENT}-interruption")
    assert queue.inputs["name"] == CLUSTER
    assert queue.inputs["messageRetentionSeconds"] == 300
    assert queue.inputs["sqsManagedSseEnabled"] is True
    assert queue.inputs["tags"] == TAGS


def test_interruption_queue_accepts_eventbridge_and_denies_non_tls_access():
    declared = karpenter().named("aws:sqs/queuePolicy:QueuePolicy", f"{COMPONENT}-interruption-policy")
    policy = json.loads(declared.inputs["policy"])
    assert policy == interruption_queue_policy(QUEUE_ARN)
    events, sqs_itself, deny = policy["Statement"]
    assert events["Principal"] == {"Service": "events.amazonaws.com"}
    rules = f"arn:aws:events:{REGION}:{ACCOUNT_ID}:rule/{CLUSTER}-karpenter-*"
    assert events["Condition"] == {"ArnLike": {"aws:SourceArn": rules}}
    assert sqs_itself["Principal"] == {"Service": "sqs.amazonaws.com"}
    assert sqs_itself["Condition"] == {"StringEquals": {"aws:SourceAccount": ACCOUNT_ID}}
    for allow in (events, sqs_itself):
        assert (allow["Effect"], allow["Action"], allow["Resource"]) == ("Allow", "sqs:SendMessage", QUEUE_ARN)
    assert (deny["Effect"], deny["Principal"], deny["Action"], deny["Resource"]) == ("Deny", "*", "sqs:*", QUEUE_ARN)
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert declared.inputs["queueUrl"] == f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT_ID}/{CLUSTER}"


def test_the_event_table_is_exactly_what_upstream_routes_to_karpenter():
    assert {(e.source, e.detail_type) for e in INTERRUPTION_EVENTS} == UPSTREAM_EVENTS
    assert len(INTERRUPTION_EVENTS) == len(UPSTREAM_EVENTS)


def test_every_interruption_event_has_a_rule_whose_target_is_the_queue():
    recording = karpenter()
    rules = recording.by_type("aws:cloudwatch/eventRule:EventRule")
    assert len(rules) == len(INTERRUPTION_EVENTS)
    for event in INTERRUPTION_EVENTS:
        rule = recording.named("aws:cloudwatch/eventRule:EventRule", f"{COMPONENT}-{event.name}")
        assert json.loads(rule.inputs["eventPattern"]) == event_pattern(event)
        assert event_pattern(event) == {"source": [event.source], "detail-type": [event.detail_type]}
        target = recording.named("aws:cloudwatch/eventTarget:EventTarget", f"{COMPONENT}-{event.name}-target")
        assert target.inputs["rule"] == rule.inputs["name"]
        assert target.inputs["arn"] == QUEUE_ARN


def test_physical_names_fit_aws_limits_for_the_longest_cluster_name():
    longest = "c" * 32
    for event in INTERRUPTION_EVENTS:
        assert len(f"{longest}-karpenter-{event.name}") <= 64, event.name  # EventBridge rule names
    for role in ("controller", "node"):
        assert len(f"{longest}-karpenter-{role}") <= 64  # IAM role names


# --- Helm releases ----------------------------------------------------------------------------


def test_controller_values_set_only_keys_the_pinned_chart_has():
    assert chart_values_problems("karpenter", controller_values(CLUSTER, REGION, CLUSTER)) == []
    assert chart_values_problems("karpenter", release("controller").inputs["values"]) == []


def test_the_values_check_catches_a_misspelt_key():
    problems = chart_values_problems("karpenter", {"settings": {"interruptionQueueName": "q"}, "replica": 2})
    assert [line.split(": ")[1] for line in problems] == ["values.settings.interruptionQueueName", "values.replica"]


def test_the_node_overlay_gate_is_on_so_gpu_overlays_apply():
    # NodeOverlays change instance types only when the controller's NodeOverlay gate is on
    # (kubernetes-sigs/karpenter pkg/cloudprovider/overlay/cloudprovider.go, GetInstanceTypes); the
    # karpenter chart v1.14.1 turns settings.featureGates.nodeOverlay into FEATURE_GATES
    # (charts/karpenter/templates/deployment.yaml) and leaves it false by default.
    assert release("controller").inputs["values"]["settings"]["featureGates"] == {"nodeOverlay": True}


def test_controller_runs_two_replicas_on_the_system_nodes():
    values = release("controller").inputs["values"]
    assert values["replicas"] == 2
    assert values["nodeSelector"] == {"CriticalAddonsOnly": SYSTEM_NODE_LABELS["CriticalAddonsOnly"]}
    [toleration] = values["tolerations"]
    assert (toleration["key"], toleration["value"]) == (SYSTEM_NODE_TAINT["key"], SYSTEM_NODE_TAINT["value"])
    assert toleration["operator"] == "Equal"
    assert toleration["effect"] == "NoSchedule"  # the node group's NO_SCHEDULE, as Kubernetes spells it
    # The chart's anti-affinity, topology spread and PDB stay as they are.
    assert not {"affinity", "topologySpreadConstraints", "podDisruptionBudget"} & set(values)


def test_controller_knows_its_cluster_and_interruption_queue_by_name():
    controller = release("controller")
    settings = controller.inputs["values"]["settings"]
    assert (settings["clusterName"], settings["interruptionQueue"]) == (CLUSTER, CLUSTER)
    queue = karpenter().named("aws:sqs/queue:Queue", f"{COMPONENT}-interruption")
    assert queue.urn in controller.dependencies


def test_controller_is_told_its_region_because_system_node_pods_cannot_reach_imds():
    env = release("controller").inputs["values"]["controller"]["env"]
    assert {"name": "AWS_REGION", "value": REGION} in env


@pytest.mark.parametrize("release_name, chart", [("crd", "karpenter-crd"), ("controller", "karpenter")])
def test_releases_are_pinned_oci_charts_in_kube_system(release_name, chart):
    inputs = release(release_name).inputs
    assert inputs["name"] == chart
    assert inputs["chart"] == f"oci://public.ecr.aws/karpenter/{chart}"
    assert inputs["version"] == CHARTS[chart].version == "1.14.1"
    assert inputs["namespace"] == "kube-system"
    assert "repositoryOpts" not in inputs


def test_crds_come_only_from_the_crd_release():
    assert release("crd").inputs.get("skipCrds", False) is False  # unset: Helm installs the chart's CRDs
    assert release("controller").inputs["skipCrds"] is True
    assert release("crd").urn in release("controller").dependencies


def test_releases_wait_for_the_callers_dependencies():
    [system_nodes] = [r for r in karpenter().by_type(ROLE) if r.name == "system-nodes"]
    for name in ("crd", "controller"):
        assert system_nodes.urn in release(name).dependencies, name


def test_controller_starts_only_once_its_aws_identity_and_node_access_exist():
    recording = karpenter()
    needed = [
        recording.named("aws:eks/podIdentityAssociation:PodIdentityAssociation", f"{COMPONENT}-controller-identity"),
        recording.named("aws:eks/accessEntry:AccessEntry", f"{COMPONENT}-node-access"),
        *(recording.named(ATTACHMENT, f"{COMPONENT}-controller-role-{name}") for name in CONTROLLER_POLICY_NAMES),
    ]
    dependencies = release("controller").dependencies
    assert [r.name for r in needed if r.urn not in dependencies] == []


def test_releases_use_the_cluster_provider_and_everything_is_inside_the_component():
    recording = karpenter()
    component = recording.named("gpu-platform:karpenter:Karpenter", COMPONENT)
    for name in ("crd", "controller"):
        assert short(release(name).provider) == "cluster"
    stand_ins = {"cluster", "system-nodes", "node-pools", COMPONENT}
    outside = [r.name for r in recording.resources if r.name not in stand_ins and component.urn not in ancestors(recording, r)]
    assert outside == []


def test_aws_resources_carry_the_callers_tags():
    taggable = (ROLE, POLICY, "aws:sqs/queue:Queue", "aws:cloudwatch/eventRule:EventRule",
                "aws:eks/accessEntry:AccessEntry", "aws:eks/podIdentityAssociation:PodIdentityAssociation")
    declared = [r for r in karpenter().resources if r.type in taggable and r.name not in ("system-nodes", "node-pools")]
    assert len(declared) == 2 + len(CONTROLLER_POLICY_NAMES) + 1 + len(INTERRUPTION_EVENTS) + 2
    assert [r.name for r in declared if r.inputs.get("tags") != TAGS] == []


def test_what_depends_on_karpenter_is_destroyed_while_every_part_of_karpenter_still_exists():
    recording = karpenter()
    [node_pools] = [r for r in recording.by_type(ROLE) if r.name == "node-pools"]
    stand_ins = {"cluster", "system-nodes", "node-pools", COMPONENT}
    karpenter_parts = [r for r in recording.resources if r.custom and r.name not in stand_ins]
    assert [r.name for r in karpenter_parts if r.urn not in node_pools.dependencies] == []


def test_logical_names_are_unique_across_types():
    names = [r.name for r in karpenter().resources]
    assert sorted({n for n in names if names.count(n) > 1}) == []


def test_cluster_scoped_aws_resources_wait_for_the_cluster():
    """Access entries and Pod Identity associations fail on a cluster that does not exist yet."""
    from .conftest import render_fixture

    recording = render_fixture("multi-pool")
    by_urn = {r.urn: r for r in recording.resources}
    [cluster] = recording.by_type("eks:index:Cluster")

    def waits_for_cluster(resource, seen=frozenset()):
        if cluster.urn in resource.dependencies:
            return True
        return any(
            waits_for_cluster(by_urn[d], seen | {resource.urn}) for d in resource.dependencies if d in by_urn and d not in seen
        )

    for type_ in (
        "aws:eks/accessEntry:AccessEntry",
        "aws:eks/podIdentityAssociation:PodIdentityAssociation",
        "aws:eks/addon:Addon",
    ):
        for resource in recording.by_type(type_):
            assert waits_for_cluster(resource), resource.name
