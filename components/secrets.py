"""External Secrets Operator: each tenant reads its own AWS Secrets Manager path, and nothing else.

Everything here follows external-secrets/external-secrets at tag helm-chart-2.9.0 (v2.9.0): the chart
(deploy/charts/external-secrets/values.yaml, templates/rbac.yaml), the AWS provider
(providers/v1/aws/provider.go `newClient`, `buildSessionTags`; providers/v1/aws/auth/auth.go `New`,
`createConfiguration`; providers/v1/aws/secretsmanager/secretsmanager.go) and the external-secrets.io/v1
CRDs (config/crds/bases/). When bumping, diff those between the two tags.

Identity. The controller's service account gets an IAM role through EKS Pod Identity; that role may
only assume the tenants' roles. A SecretStore with no `auth` takes the SDK's default credentials (the
pod's Pod Identity ones, auth.go `constructCredsProvider` returns none), then assumes the store's `role`
(`createConfiguration`). Each tenant namespace gets one SecretStore, `aws-secrets-manager`, naming
its tenant's role, which may read `/<cluster>/<tenant>/*` and nothing else.

Why a tenant cannot read another's secrets:
- the tenant role's permissions name only its own path;
- tenants cannot write SecretStores (nor generators, PushSecrets, cluster-scoped stores): the chart's
  aggregation of write access into `admin`/`edit` is off (templates/rbac.yaml), and the one role
  aggregated here grants ExternalSecrets only. An ExternalSecret can only name a store of its own
  namespace (a ClusterSecretStore would need `processClusterStore`, which is off, and none exists);
- each tenant role trusts only the controller role's sessions from this cluster's Pod Identity, and
  only when ESO tags the session with the tenant's namespace (`sessionTagsPolicy: Simple` sets
  `esoNamespace` to the ExternalSecret's namespace, overriding any tag of that name). The tag alone
  would not do: a store's author may set plain `sessionTags`, which is why tenants author no store.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
from pulumi_aws import eks as aws_eks
from pulumi_aws import iam

from config import namespaces
from config.fair_share import TenantPlan
from config.secrets import (
    HF_TOKEN_ENV,
    hf_token_secret_name,
    tenant_image_pull_role_name,
    tenant_secret_prefix,
    tenant_secrets_role_name,
)
from config.system_capacity import EXTERNAL_SECRETS_RESOURCES
from config.versions import ChartPin

from .lib import iam as policies
from .lib.helm import helm_release
from .lib.namespaces import controller_namespace
from .lib.placement import on_system_nodes
from .lib.resources import Children, declare

CHART_KEY = "external-secrets"
NAMESPACE = namespaces.EXTERNAL_SECRETS
RELEASE_NAME = "external-secrets"
SERVICE_ACCOUNT = "external-secrets"
API_VERSION = "external-secrets.io/v1"
STORE_NAME = "aws-secrets-manager"
# providers/v1/aws/provider.go buildSessionTags: the tag ESO sets to the ExternalSecret's namespace.
NAMESPACE_SESSION_TAG = "esoNamespace"
# secretsmanager.go: GetSecretValue for every read, DescribeSecret for `metadataPolicy: Fetch`.
# `dataFrom.find` needs ListSecrets, which IAM cannot scope to a path, so it is not granted.
READ_ACTIONS = ("secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret")
# How often a synced Secret is re-read: a rotated token reaches new pods within the hour.
REFRESH_INTERVAL = "1h"
AGGREGATE_TO = {role: f"rbac.authorization.k8s.io/aggregate-to-{role}" for role in ("admin", "edit")}


class TenantSecrets(pulumi.ComponentResource):
    """External Secrets Operator on the system nodes, its Pod Identity, and per tenant an IAM role and a SecretStore."""

    namespace: pulumi.CustomResource
    release: k8s.helm.v3.Release
    controller_role: iam.Role
    stores: dict[str, pulumi.CustomResource]
    external_secrets: dict[tuple[str, str], pulumi.CustomResource]

    def __init__(
        self,
        name: str,
        tenants: Sequence[TenantPlan],
        *,
        cluster_name: str,
        region: str,
        account_id: pulumi.Input[str],
        partition: pulumi.Input[str],
        chart: ChartPin,
        provider: k8s.Provider,
        namespaces: Mapping[str, pulumi.Resource],
        tags: Mapping[str, str],
        depends_on: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ):
        """
        :param tenants: `PlatformConfig.tenants`: a role and a SecretStore each, and an ExternalSecret per served
            model that names `serving.hfTokenSecret`.
        :param cluster_name: names the roles and the Secrets Manager paths, and scopes the trust policies.
        :param region: where the SecretStores read Secrets Manager (the stack's region).
        :param account_id: the caller's account (`aws.get_caller_identity`), owner of the roles and secrets.
        :param partition: the AWS partition every ARN is written in.
        :param chart: the pinned `external-secrets` chart (`PlatformConfig.charts["external-secrets"]`).
        :param provider: the cluster's Kubernetes provider.
        :param namespaces: tenant name -> its Namespace resource (the tenants component's).
        :param tags: tags for every AWS resource.
        :param depends_on: what the release waits for: the system nodes and the Pod Identity agent.
        """
        super().__init__("gpu-platform:secrets:TenantSecrets", name, None, opts)
        installs = Children(self, provider, depends_on)
        in_cluster = Children(self, provider)
        child = pulumi.ResourceOptions(parent=self)

        controller_role = iam.Role(
            f"{name}-controller-role",
            name=f"{cluster_name}-external-secrets",
            assume_role_policy=pulumi.Output.from_input(account_id).apply(
                lambda account: policies.to_json(
                    policies.pod_identity_trust_policy(account, cluster_name, NAMESPACE, SERVICE_ACCOUNT)
                )
            ),
            tags=dict(tags),
            opts=child,
        )
        self.controller_role = controller_role
        tenant_roles: dict[str, iam.Role] = {}
        tenant_reads: dict[str, iam.RolePolicy] = {}
        for plan in tenants:
            role = iam.Role(
                f"{name}-{plan.name}-role",
                name=tenant_secrets_role_name(cluster_name, plan.name),
                assume_role_policy=pulumi.Output.all(account_id, controller_role.arn).apply(
                    _trust_json(cluster_name, plan.namespace)
                ),
                tags=dict(tags),
                opts=child,
            )
            tenant_reads[plan.name] = iam.RolePolicy(
                f"{name}-{plan.name}-read",
                role=role.id,
                policy=pulumi.Output.all(partition, account_id).apply(_read_json(region, cluster_name, plan.name)),
                opts=pulumi.ResourceOptions(parent=role),
            )
            tenant_roles[plan.name] = role
        assume = iam.RolePolicy(
            f"{name}-controller-assume",
            role=controller_role.id,
            policy=pulumi.Output.all(partition, account_id).apply(
                lambda resolved: policies.to_json(controller_policy(resolved[0], resolved[1], cluster_name))
            ),
            opts=pulumi.ResourceOptions(parent=controller_role),
        )
        identity = aws_eks.PodIdentityAssociation(
            f"{name}-controller-identity",
            cluster_name=cluster_name,
            namespace=NAMESPACE,
            service_account=SERVICE_ACCOUNT,
            role_arn=controller_role.arn,
            tags=dict(tags),
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(depends_on)),
        )

        self.namespace = declare(f"{name}-namespace", controller_namespace(NAMESPACE), installs.opts())
        # The controller reads its credentials when its pod starts, from the association's injection.
        self.release = helm_release(
            f"{name}-release",
            release_name=RELEASE_NAME,
            pin=chart,
            namespace=NAMESPACE,
            values=external_secrets_values(),
            opts=installs.opts(self.namespace, identity, assume),
        )
        declare(f"{name}-author-role", external_secret_author_role(), installs.opts(self.release))

        # A tenant's store waits for its role's permissions (a store is checked as soon as it exists); the
        # release waits for no tenant's, so adding a tenant leaves everything else as it is.
        self.stores, self.external_secrets = {}, {}
        for plan in tenants:
            store = secret_store(plan, region, tenant_roles[plan.name].arn)
            self.stores[plan.name] = declare(
                f"{name}-{plan.name}-store", store, in_cluster.opts(self.release, namespaces[plan.name], tenant_reads[plan.name])
            )
            for deployment in plan.config.inference:
                if deployment.serving is None or deployment.serving.hf_token_secret is None:
                    continue
                manifest = hf_token_external_secret(plan, deployment.name, deployment.serving.hf_token_secret, cluster_name)
                self.external_secrets[plan.name, deployment.name] = declare(
                    f"{name}-{plan.name}-{deployment.name}-hf-token", manifest, in_cluster.opts(self.stores[plan.name])
                )
        self.register_outputs({})


def _trust_json(cluster_name: str, namespace: str) -> Callable[[list[Any]], str]:
    """[account, controller role ARN] -> the tenant role's trust policy as JSON."""
    return lambda resolved: policies.to_json(tenant_trust_policy(resolved[0], resolved[1], cluster_name, namespace))


def _read_json(region: str, cluster_name: str, tenant: str) -> Callable[[list[Any]], str]:
    """[partition, account] -> the tenant role's read policy as JSON."""
    return lambda resolved: policies.to_json(tenant_read_policy(resolved[0], region, resolved[1], cluster_name, tenant))


def external_secrets_values() -> dict[str, Any]:
    """The chart's values: placement, the service account Pod Identity names, and what is processed at all."""
    return {
        # values.yaml `global.nodeSelector`/`tolerations` reach the controller, webhook and cert controller.
        "global": on_system_nodes(),
        "serviceAccount": {"name": SERVICE_ACCOUNT},
        "rbac": {
            # templates/rbac.yaml aggregates create/update/delete of SecretStores, generators and
            # PushSecrets into `admin` and `edit`, which tenant admins hold: a store of their own could name
            # another tenant's role. Reading stays (`view`).
            "aggregateToEdit": False,
            "aggregateToAdmin": False,
            "aggregateToView": True,
            # Only for `auth.jwt` stores, which the platform does not write.
            "serviceAccountTokenCreate": False,
        },
        # Nothing cluster-scoped and nothing that writes back to AWS: a store is a tenant's own or none.
        "processClusterStore": False,
        "processClusterExternalSecret": False,
        "processClusterGenerator": False,
        "processClusterPushSecret": False,
        "processPushSecret": False,
        # Requests and limits: config/system_capacity.py, where the system-node check counts them.
        "resources": _resources(),
        "webhook": {"replicaCount": 2, "podDisruptionBudget": {"enabled": True, "minAvailable": 1}, "resources": _resources()},
        "certController": {"resources": _resources()},
    }


def _resources() -> dict[str, dict[str, str]]:
    return {kind: dict(amounts) for kind, amounts in EXTERNAL_SECRETS_RESOURCES.items()}


def tenant_trust_policy(account_id: str, controller_role_arn: str, cluster_name: str, namespace: str) -> dict[str, Any]:
    """The tenant role may be assumed by the ESO controller's Pod Identity session on this cluster, for
    ExternalSecrets of the tenant's namespace (ESO's `esoNamespace` session tag), and by nothing else.

    A Pod Identity session carries the pod's cluster, namespace and service account as principal tags
    (EKS user guide, pod-id-abac.html); ESO passes `esoNamespace` as a session tag, so the role needs
    `sts:TagSession` too (secretstores CRD, `sessionTagsPolicy`).
    """
    return {
        "Version": policies.POLICY_VERSION,
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"AWS": controller_role_arn},
                "Action": ["sts:AssumeRole", "sts:TagSession"],
                "Condition": {
                    "StringEquals": {
                        "aws:PrincipalAccount": account_id,
                        f"aws:PrincipalTag/{policies.POD_IDENTITY_CLUSTER_TAG}": cluster_name,
                        f"aws:PrincipalTag/{policies.POD_IDENTITY_NAMESPACE_TAG}": NAMESPACE,
                        f"aws:PrincipalTag/{policies.POD_IDENTITY_SERVICE_ACCOUNT_TAG}": SERVICE_ACCOUNT,
                        f"aws:RequestTag/{NAMESPACE_SESSION_TAG}": namespace,
                    }
                },
            }
        ],
    }


def tenant_read_policy(partition: str, region: str, account_id: str, cluster_name: str, tenant: str) -> dict[str, Any]:
    """Read the secrets named under `/<cluster>/<tenant>/`: the ARN of `/<cluster>/<tenant>/x` is
    `...:secret:/<cluster>/<tenant>/x-AbCdEf`, and another tenant's path never starts with this one's."""
    prefix = tenant_secret_prefix(cluster_name, tenant)
    return {
        "Version": policies.POLICY_VERSION,
        "Statement": [
            {
                "Effect": "Allow",
                "Action": list(READ_ACTIONS),
                "Resource": f"arn:{partition}:secretsmanager:{region}:{account_id}:secret:{prefix}*",
            }
        ],
    }


def controller_policy(partition: str, account_id: str, cluster_name: str) -> dict[str, Any]:
    """The controller itself reads no secret and pulls no image: it may only assume this cluster's tenant
    secrets roles (tagging the session) and tenant image-pull roles (components/image_pulls.py). By their
    name patterns rather than a list, so adding a tenant changes nothing here; each role still admits the
    controller only as its trust policy says."""
    roles = [
        f"arn:{partition}:iam::{account_id}:role/{tenant_secrets_role_name(cluster_name, '*')}",
        f"arn:{partition}:iam::{account_id}:role/{tenant_image_pull_role_name(cluster_name, '*')}",
    ]
    return {
        "Version": policies.POLICY_VERSION,
        "Statement": [{"Effect": "Allow", "Action": ["sts:AssumeRole", "sts:TagSession"], "Resource": roles}],
    }


def secret_store(plan: TenantPlan, region: str, role_arn: pulumi.Input[str]) -> dict[str, Any]:
    """The tenant's one SecretStore: Secrets Manager in the stack's region, through the tenant's role."""
    return {
        "apiVersion": API_VERSION,
        "kind": "SecretStore",
        "metadata": {"name": STORE_NAME, "namespace": plan.namespace, "labels": {"app.kubernetes.io/managed-by": "gpu-platform"}},
        "spec": {
            "provider": {
                "aws": {
                    "service": "SecretsManager",
                    "region": region,
                    "role": role_arn,
                    "sessionTagsPolicy": "Simple",
                }
            }
        },
    }


def hf_token_external_secret(plan: TenantPlan, deployment: str, secret: str, cluster_name: str) -> dict[str, Any]:
    """`/<cluster>/<tenant>/<secret>` (its whole value) as key HF_TOKEN of Secret `<deployment>-hf-token`."""
    name = hf_token_secret_name(deployment)
    return {
        "apiVersion": API_VERSION,
        "kind": "ExternalSecret",
        "metadata": {"name": name, "namespace": plan.namespace, "labels": {"app.kubernetes.io/managed-by": "gpu-platform"}},
        "spec": {
            "refreshInterval": REFRESH_INTERVAL,
            "secretStoreRef": {"kind": "SecretStore", "name": STORE_NAME},
            "target": {"name": name, "creationPolicy": "Owner"},
            "data": [
                {
                    "secretKey": HF_TOKEN_ENV,
                    "remoteRef": {"key": f"{tenant_secret_prefix(cluster_name, plan.name)}{secret}"},
                }
            ],
        },
    }


def external_secret_author_role() -> dict[str, Any]:
    """Writing ExternalSecrets, aggregated into `edit` and `admin`: tenant admins sync their own secrets
    through their namespace's store. Reading them (and the store) comes from the chart's `view` role."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {
            "name": "gpu-platform:external-secrets:author",
            "labels": {label: "true" for label in AGGREGATE_TO.values()},
        },
        "rules": [
            {
                "apiGroups": ["external-secrets.io"],
                "resources": ["externalsecrets"],
                "verbs": ["create", "delete", "deletecollection", "patch", "update"],
            }
        ],
    }
