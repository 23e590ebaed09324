"""Karpenter: its controller's AWS identity, the node role, interruption handling and the Helm releases.

Everything here follows Karpenter v1.14's reference setup in aws/karpenter-provider-aws:
website/content/en/v1.14/getting-started/getting-started-with-karpenter/cloudformation.yaml (the
same file as the v1.14.1 tag's docs/ and preview/ copies) for IAM, SQS and EventBridge, and
scripts/step08-apply-helm-chart.sh beside it for the chart values. When bumping Karpenter, diff that
file between the two tags and mirror every change here. The controller's own permissions, the largest
part of that file, are in `policy.py`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
from pulumi_aws import cloudwatch, iam, sqs
from pulumi_aws import eks as aws_eks

from config import namespaces
from config.system_capacity import KARPENTER
from config.versions import ChartPin

from ..lib import iam as policies
from ..lib.helm import helm_release
from ..lib.iam import NODE_ROLE_POLICIES
from ..lib.placement import on_system_nodes
from ..lib.prometheus import CHART_SCRAPE_VALUES
from ..lib.resources import Children
from .policy import CONTROLLER_POLICY_NAMES, controller_policy_documents, snapshot_key_policy

NAMESPACE = namespaces.KARPENTER
SERVICE_ACCOUNT = "karpenter"
SPOT_SERVICE = "spot.amazonaws.com"
SPOT_ROLE_NAME = "AWSServiceRoleForEC2Spot"

@dataclass(frozen=True)
class InterruptionEvent:
    """One kind of EventBridge event Karpenter acts on: it cordons and drains the node ahead of the loss."""

    name: str  # short, for logical and physical names: <= 21 characters keeps rule names within 64
    source: str
    detail_type: str
    description: str


# Upstream's v1.14 template routes exactly these to the queue; the controller's parsers
# (pkg/controllers/interruption/messages/*) match on the same detail-types.
INTERRUPTION_EVENTS: tuple[InterruptionEvent, ...] = (
    InterruptionEvent(
        "scheduled-change", "aws.health", "AWS Health Event", "AWS Health scheduled changes (e.g. instance retirement)"
    ),
    InterruptionEvent(
        "spot-interruption", "aws.ec2", "EC2 Spot Instance Interruption Warning", "Spot two-minute interruption warnings"
    ),
    InterruptionEvent(
        "rebalance", "aws.ec2", "EC2 Instance Rebalance Recommendation", "Spot rebalance recommendations"
    ),
    InterruptionEvent(
        "instance-state-change",
        "aws.ec2",
        "EC2 Instance State-change Notification",
        "Instances stopping or terminating outside Karpenter",
    ),
    InterruptionEvent(
        "capacity-interruption",
        "aws.ec2",
        "EC2 Capacity Reservation Instance Interruption Warning",
        "Interruptible capacity reservations being reclaimed",
    ),
)


class Karpenter(pulumi.ComponentResource):
    """The Karpenter controller (CRDs, then controller, in kube-system) with everything it needs from AWS.

    NodePools and EC2NodeClasses are declared elsewhere; they name `node_role_name` as their `role`
    (Karpenter 1.x creates and owns the instance profiles itself) and depend on `destroy_after`, so
    `pulumi destroy` removes them while Karpenter can still drain and terminate its nodes.
    """

    node_role: iam.Role
    node_role_name: pulumi.Output[str]
    node_access_entry: aws_eks.AccessEntry
    controller_role: iam.Role
    interruption_queue: sqs.Queue
    crd_release: k8s.helm.v3.Release
    controller_release: k8s.helm.v3.Release
    spot_service_linked_role: iam.ServiceLinkedRole | None
    destroy_after: list[pulumi.Resource]

    def __init__(
        self,
        name: str,
        *,
        cluster_name: str,
        region: str,
        account_id: pulumi.Input[str],
        partition: pulumi.Input[str],
        node_repositories: Sequence[str],
        chart_versions: Mapping[str, ChartPin],
        k8s_provider: k8s.Provider,
        tags: Mapping[str, str],
        create_spot_service_linked_role: bool = False,
        snapshot_kms_keys: Sequence[str] = (),
        depends_on: Sequence[pulumi.Resource] = (),
        service_monitor_crd: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ):
        """
        :param cluster_name: the EKS cluster's name; scopes every IAM condition and names the queue.
        :param region: the cluster's region; IAM conditions are scoped to it.
        :param account_id: the cluster's account (`aws.get_caller_identity_output().account_id`).
        :param partition: `aws`, `aws-cn`, ... (`aws.get_partition_output().partition`).
        :param node_repositories: `SupplyChainConfig.node_repositories`: the only repositories of the account's
            ECR the nodes may pull from (`policies.node_image_pull_policy`).
        :param chart_versions: `config.versions.CHARTS`; needs `karpenter-crd` and `karpenter`.
        :param k8s_provider: the cluster's Kubernetes provider, for the Helm releases.
        :param tags: tags on every AWS resource.
        :param create_spot_service_linked_role: a pool allows spot (`PlatformConfig.uses_spot`) and the
            account has no such role yet (`lib.account.account_has_service_linked_role`).
        :param snapshot_kms_keys: `PlatformConfig.snapshot_kms_keys`: the controller launches the nodes that
            restore the pools' encrypted image snapshots, so it gets those keys' use through EC2 (policy.py
            `snapshot_key_policy`).
        :param depends_on: what must exist before the controller is installed (system nodes, add-ons).
        :param service_monitor_crd: what installs the ServiceMonitor CRD (`Monitoring.crd_release`): the
            controller chart renders its ServiceMonitor only when the cluster serves that kind at install
            (charts/karpenter/templates/servicemonitor.yaml, `.Capabilities.APIVersions.Has`), so the
            controller release waits for it; nothing else here does.
        """
        super().__init__("gpu-platform:karpenter:Karpenter", name, None, opts)
        self._name, self._cluster_name, self._tags = name, cluster_name, dict(tags)
        # Only what talks to the cluster waits for it: IAM, SQS and EventBridge need nothing from it.
        self._after_cluster = Children(self, depends_on=depends_on)
        in_cluster = Children(self, k8s_provider, depends_on)

        node_attachments = self._node_role(partition, account_id, node_repositories)
        interruption = self._interruption_handling()
        self.spot_service_linked_role = self._spot_role(create_spot_service_linked_role)
        pod_identity, controller_policies, controller_attachments = self._controller_identity(region, account_id, partition)
        snapshot_keys = self._snapshot_keys(region, account_id, partition, tuple(snapshot_kms_keys))
        self._helm_releases(
            region, chart_versions, in_cluster, [pod_identity, *controller_attachments, *snapshot_keys], service_monitor_crd
        )

        # All of it, so that a dependent (the NodePools) is destroyed while Karpenter can still drain
        # and terminate the nodes it launched and delete their instance profiles.
        self.destroy_after = [
            self.crd_release,
            self.controller_release,
            pod_identity,
            self.controller_role,
            *controller_policies,
            *controller_attachments,
            *snapshot_keys,
            self.node_role,
            *node_attachments,
            self.node_access_entry,
            self.interruption_queue,
            *interruption,
        ]

        self.register_outputs(
            {
                "nodeRoleName": self.node_role_name,
                "controllerRoleArn": self.controller_role.arn,
                "interruptionQueue": self.interruption_queue.name,
                "chartVersion": self.controller_release.version,
            }
        )

    def _node_role(
        self, partition: pulumi.Input[str], account_id: pulumi.Input[str], repositories: Sequence[str]
    ) -> list[pulumi.Resource]:
        """The role Karpenter's nodes run as, and the access entry that lets them join; returns its attachments."""
        name, tags = self._name, self._tags
        self.node_role = iam.Role(
            f"{name}-node-role",
            name=f"{self._cluster_name}-karpenter-node",
            assume_role_policy=policies.to_json(policies.service_trust_policy(policies.EC2_SERVICE)),
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self),
        )
        node_attachments: list[pulumi.Resource] = [
            iam.RolePolicyAttachment(
                f"{name}-node-role-{policy}",
                role=self.node_role.name,
                policy_arn=pulumi.Output.concat("arn:", partition, ":iam::aws:policy/", policy),
                opts=pulumi.ResourceOptions(parent=self.node_role),
            )
            for policy in NODE_ROLE_POLICIES
        ]
        node_attachments.append(
            iam.RolePolicy(
                f"{name}-node-role-image-pull",
                role=self.node_role.id,
                policy=pulumi.Output.all(partition, account_id).apply(
                    lambda args: policies.to_json(policies.node_image_pull_policy(args[0], args[1], repositories))
                ),
                opts=pulumi.ResourceOptions(parent=self.node_role),
            )
        )
        # With API authentication mode, this entry is what lets Karpenter's nodes join the cluster.
        self.node_access_entry = aws_eks.AccessEntry(
            f"{name}-node-access",
            cluster_name=self._cluster_name,
            principal_arn=self.node_role.arn,
            type="EC2_LINUX",
            tags=tags,
            # The cluster must exist first: `depends_on` (the system nodes) comes after it.
            opts=self._after_cluster.opts(*node_attachments),
        )
        self.node_role_name = self.node_role.name
        return node_attachments

    def _interruption_handling(self) -> list[pulumi.Resource]:
        """The SQS queue and the EventBridge rules that feed it; returns the queue's policy, rules and targets."""
        name, cluster_name, tags = self._name, self._cluster_name, self._tags
        child = pulumi.ResourceOptions(parent=self)
        self.interruption_queue = sqs.Queue(
            f"{name}-interruption",
            name=cluster_name,
            # Interruption warnings are stale after minutes; older messages only mislead.
            message_retention_seconds=300,
            sqs_managed_sse_enabled=True,
            tags=tags,
            opts=child,
        )
        queue_policy = sqs.QueuePolicy(
            f"{name}-interruption-policy",
            queue_url=self.interruption_queue.url,
            policy=self.interruption_queue.arn.apply(lambda arn: policies.to_json(interruption_queue_policy(arn))),
            opts=child,
        )
        rules, event_targets = [], []
        for event in INTERRUPTION_EVENTS:
            rule = cloudwatch.EventRule(
                f"{name}-{event.name}",
                name=f"{event_rule_prefix(cluster_name)}{event.name}",
                description=f"Karpenter interruption handling: {event.description}",
                event_pattern=policies.to_json(event_pattern(event)),
                tags=tags,
                opts=child,
            )
            rules.append(rule)
            event_targets.append(
                cloudwatch.EventTarget(
                    f"{name}-{event.name}-target",
                    rule=rule.name,
                    arn=self.interruption_queue.arn,
                    target_id="KarpenterInterruptionQueueTarget",
                    opts=child,
                )
            )
        return [queue_policy, *rules, *event_targets]

    def _spot_role(self, create: bool) -> iam.ServiceLinkedRole | None:
        """The account's spot service-linked role, when the stack creates it.

        EC2 refuses spot launches with AuthFailure.ServiceLinkedRoleCreationNotPermitted until the
        account has this role, and the controller policy (like upstream's) may not create it: Karpenter
        then marks spot unavailable (v1.14.1 pkg/errors/errors.go, pkg/providers/instance/instance.go),
        so a spot-only pool never launches and a mixed one runs on on-demand. Upstream's getting-started
        creates it by hand (scripts/step06-add-spot-role.sh). The role is account-wide: other stacks
        and tools may use it, so `pulumi destroy` leaves it.
        """
        if not create:
            return None
        return iam.ServiceLinkedRole(
            f"{self._name}-spot",
            aws_service_name=SPOT_SERVICE,
            opts=pulumi.ResourceOptions(parent=self, retain_on_delete=True),
        )

    def _controller_identity(
        self, region: str, account_id: pulumi.Input[str], partition: pulumi.Input[str]
    ) -> tuple[aws_eks.PodIdentityAssociation, list[iam.Policy], list[iam.RolePolicyAttachment]]:
        """The controller's role, its policies and attachments, and the Pod Identity association that hands it out."""
        name, cluster_name, tags = self._name, self._cluster_name, self._tags
        child = pulumi.ResourceOptions(parent=self)
        self.controller_role = iam.Role(
            f"{name}-controller-role",
            name=f"{cluster_name}-karpenter-controller",
            assume_role_policy=pulumi.Output.from_input(account_id).apply(
                lambda account: policies.to_json(
                    policies.pod_identity_trust_policy(account, cluster_name, NAMESPACE, SERVICE_ACCOUNT)
                )
            ),
            tags=tags,
            opts=child,
        )
        documents = pulumi.Output.all(account_id, partition, self.interruption_queue.arn, self.node_role.arn).apply(
            lambda resolved: controller_policy_documents(cluster_name, region, *resolved)
        )
        controller_policies, controller_attachments = [], []
        for policy_name in CONTROLLER_POLICY_NAMES:
            policy = iam.Policy(
                f"{name}-controller-{policy_name}",
                name=f"{cluster_name}-karpenter-{policy_name}",
                description=f"Karpenter controller of cluster {cluster_name}: {policy_name}",
                policy=_policy_json(documents, policy_name),
                tags=tags,
                opts=child,
            )
            controller_policies.append(policy)
            controller_attachments.append(
                iam.RolePolicyAttachment(
                    f"{name}-controller-role-{policy_name}",
                    role=self.controller_role.name,
                    policy_arn=policy.arn,
                    opts=pulumi.ResourceOptions(parent=self.controller_role),
                )
            )
        pod_identity = aws_eks.PodIdentityAssociation(
            f"{name}-controller-identity",
            cluster_name=cluster_name,
            namespace=NAMESPACE,
            service_account=SERVICE_ACCOUNT,
            role_arn=self.controller_role.arn,
            tags=tags,
            opts=self._after_cluster.opts(),
        )
        return pod_identity, controller_policies, controller_attachments

    def _snapshot_keys(
        self, region: str, account_id: pulumi.Input[str], partition: pulumi.Input[str], keys: tuple[str, ...]
    ) -> list[iam.RolePolicy]:
        """An inline policy on the controller's role for the image snapshots' KMS keys; none without keys."""
        if not keys:
            return []
        document = pulumi.Output.all(account_id, partition).apply(
            lambda resolved: policies.to_json(snapshot_key_policy(region, resolved[0], resolved[1], keys))
        )
        return [
            iam.RolePolicy(
                f"{self._name}-controller-snapshot-keys",
                name="snapshot-keys",
                role=self.controller_role.id,
                policy=document,
                opts=pulumi.ResourceOptions(parent=self.controller_role),
            )
        ]

    def _helm_releases(
        self,
        region: str,
        chart_versions: Mapping[str, ChartPin],
        in_cluster: Children,
        identity: Sequence[pulumi.Resource],
        service_monitor_crd: Sequence[pulumi.Resource],
    ) -> None:
        """The CRD release, then the controller's, once `identity` (its Pod Identity association and policy
        attachments) and the nodes' access entry exist."""
        name = self._name
        self.crd_release = helm_release(
            f"{name}-crd",
            release_name="karpenter-crd",
            pin=chart_versions["karpenter-crd"],
            namespace=NAMESPACE,
            values={},
            opts=in_cluster.opts(),
        )
        self.controller_release = helm_release(
            f"{name}-controller",
            release_name="karpenter",
            pin=chart_versions["karpenter"],
            namespace=NAMESPACE,
            values=controller_values(self._cluster_name, region, self.interruption_queue.name),
            # The CRDs come from the karpenter-crd release, which Helm upgrades (see config/versions.py).
            skip_crds=True,
            # The controller calls AWS at start-up and launches nodes that must be able to join.
            opts=in_cluster.opts(
                self.crd_release, *identity, self.node_access_entry, *service_monitor_crd
            ),
        )


# --- builders ----------------------------------------------------------------------------------

def _policy_json(documents: pulumi.Output[dict[str, dict[str, Any]]], policy_name: str) -> pulumi.Output[str]:
    """The JSON of one of the controller's policy documents, once they resolve."""
    return documents.apply(lambda docs: policies.to_json(docs[policy_name]))


def event_rule_prefix(cluster_name: str) -> str:
    """What the names of the cluster's interruption EventBridge rules start with."""
    return f"{cluster_name}-karpenter-"


def interruption_queue_policy(queue_arn: str) -> dict[str, Any]:
    """The cluster's own EventBridge rules (and SQS itself, for this account) may send to the queue; nobody
    may use it without TLS.

    A message in the queue makes Karpenter cordon and drain a node, so each service principal carries the
    source condition it sends: EventBridge names the rule delivering the event in `aws:SourceArn` (Amazon
    EventBridge User Guide, "Amazon SQS permissions"), a service acting for a resource its account in
    `aws:SourceAccount` (IAM User Guide, "AWS global condition context keys"). The queue is named after
    the cluster (the rules' prefix), in the rules' account and region.
    """
    _, partition, _, region, account, cluster_name = queue_arn.split(":")
    return {
        "Version": policies.POLICY_VERSION,
        "Id": "EC2InterruptionPolicy",
        "Statement": [
            {
                "Sid": "ClusterEventRules",
                "Effect": "Allow",
                "Principal": {"Service": "events.amazonaws.com"},
                "Action": "sqs:SendMessage",
                "Resource": queue_arn,
                "Condition": {
                    "ArnLike": {
                        "aws:SourceArn": f"arn:{partition}:events:{region}:{account}:rule/{event_rule_prefix(cluster_name)}*"
                    }
                },
            },
            {
                "Sid": "SqsInThisAccount",
                "Effect": "Allow",
                "Principal": {"Service": "sqs.amazonaws.com"},
                "Action": "sqs:SendMessage",
                "Resource": queue_arn,
                "Condition": {"StringEquals": {"aws:SourceAccount": account}},
            },
            {
                "Sid": "DenyHTTP",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "sqs:*",
                "Resource": queue_arn,
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            },
        ],
    }


def event_pattern(event: InterruptionEvent) -> dict[str, Any]:
    return {"source": [event.source], "detail-type": [event.detail_type]}


def controller_values(cluster_name: str, region: str, interruption_queue: pulumi.Input[str]) -> dict[str, Any]:
    """Helm values of the controller chart: two replicas on the system nodes, interruption handling on.

    Only what differs from the chart's defaults: its anti-affinity, topology spread and PDB stay.
    """
    return {
        "replicas": KARPENTER.replicas,
        "serviceAccount": {"name": SERVICE_ACCOUNT},
        # Karpenter must not run on nodes it manages (it could remove its own node); the system node
        # group is the on-demand capacity set aside for controllers.
        **on_system_nodes(),
        "settings": {
            "clusterName": cluster_name,
            "interruptionQueue": interruption_queue,
            # The GPU pools' NodeOverlays (components/node_pools.py) act only with this gate on: without it
            # Karpenter sizes time-sliced and MIG nodes by physical GPUs and finds no type for nvidia.com/mig-*
            # (kubernetes-sigs/karpenter pkg/cloudprovider/overlay/cloudprovider.go; chart key
            # settings.featureGates.nodeOverlay, off by default in the 1.14.1 chart's values.yaml).
            "featureGates": {"nodeOverlay": True},
        },
        # The chart's ServiceMonitor; Prometheus selects ServiceMonitors in every namespace.
        **CHART_SCRAPE_VALUES["karpenter"],
        "controller": {
            # Without it the controller asks IMDS for its region and crashes at start-up: the system
            # nodes' hop limit of 1 keeps pods away from IMDS (aws/karpenter-provider-aws#8219).
            "env": [{"name": "AWS_REGION", "value": region}],
            # Sized in config/system_capacity.py, whose check makes sure the system nodes hold it.
            "resources": {kind: dict(amounts) for kind, amounts in (KARPENTER.resources or {}).items()},
        },
    }



