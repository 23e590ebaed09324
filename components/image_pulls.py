"""Each tenant's login to this account's ECR, pulling only the tenant's own repositories (`<tenant>/...`).

The nodes' roles cannot pull a tenant's private repositories (components/lib/iam.py
`node_image_pull_policy`), so a private image needs the pod's own credentials. Per tenant, with External
Secrets Operator (external-secrets/external-secrets tag helm-chart-2.9.0, v2.9.0):

- an IAM role `<cluster>-image-pull-<tenant>` that may log in to ECR and pull the repositories named
  `<tenant>/...` in the stack's region, and nothing else. An ECR token carries its caller's identity
  (models/aws_ecr.py), so the tenant's token pulls only what this role may pull;
- an `ECRAuthorizationToken` generator (generators.external-secrets.io/v1alpha1) in the tenant namespace
  naming that role. generators/v1/ecr/ecr.go `generate` -> providers/v1/aws/auth/auth.go
  `NewGeneratorSession`: with no `auth` the controller's own credentials (its Pod Identity session)
  assume `role`, and GetAuthorizationToken returns `username`, `password`, `proxy_endpoint`, `expires_at`;
- an ExternalSecret `ecr-pull` turning those into a `kubernetes.io/dockerconfigjson` Secret `ecr-pull`
  (the template of docs/snippets/generator-ecr-example.yaml at that tag), regenerated every hour, well
  inside the token's 12 hours;
- the namespace's `default` ServiceAccount naming that Secret in `imagePullSecrets`: the ServiceAccount
  admission plugin copies them into every pod that runs as it and names none of its own.

Why a tenant cannot pull another tenant's images through this:
- the role's pull permission names `<tenant>/*` with the slash: `ml/*` never matches `mlops/x`;
- the generator session carries no session tags (`NewGeneratorSession` sets none), so the role's trust
  cannot tell one namespace's generator from another's; instead tenants write no generator (the chart's
  aggregation of generator writes into `admin`/`edit` is off, components/secrets.py), and an
  ExternalSecret's `generatorRef` has no namespace: ESO reads a namespaced generator from the
  ExternalSecret's own namespace (runtime/esutils/resolvers/generator.go `getGenerator`), and a
  `ClusterGenerator` it cannot read (its role lists clustergenerators only with `processClusterGenerator`,
  off), which `tenant-external-secrets-name-their-own-sources` refuses besides (components/admission.py);
- the Secret lives in the tenant's namespace, which no other tenant's role reaches.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
from pulumi_aws import iam

from config.fair_share import TenantPlan
from config.secrets import IMAGE_PULL_SECRET, tenant_image_pull_role_name, tenant_repository_prefix

from .lib import iam as policies
from .lib.resources import Children, declare

GENERATOR_API_VERSION = "generators.external-secrets.io/v1alpha1"
GENERATOR_KIND = "ECRAuthorizationToken"
EXTERNAL_SECRET_API_VERSION = "external-secrets.io/v1"
# ESO's controller: its namespace and service account (components/secrets.py's release).
CONTROLLER_NAMESPACE, CONTROLLER_SERVICE_ACCOUNT = "external-secrets", "external-secrets"
# How often the generator runs again: an ECR token lasts 12 hours (models/aws_ecr.py), so a pod starting
# at any time finds one with 11 hours left, and a failed refresh has 11 more tries before pulls fail.
REFRESH_INTERVAL = "1h"
DOCKER_CONFIG_JSON = "kubernetes.io/dockerconfigjson"
# external-secrets v2.9.0 docs/snippets/generator-ecr-example.yaml, on one line: the registry host without
# its scheme, the token's user and password, and their `auth` form, which the kubelet reads first.
DOCKER_CONFIG_TEMPLATE = (
    '{"auths":{"{{ .proxy_endpoint | replace "https://" "" }}":{"username":"{{ .username }}",'
    '"password":"{{ .password }}","auth":"{{ printf "%s:%s" .username .password | b64enc }}"}}}'
)
# ECR API Reference: GetAuthorizationToken for the login (no resource-level permissions: `*`), then
# BatchGetImage for the manifest and GetDownloadUrlForLayer for each layer.
LOGIN_ACTION = "ecr:GetAuthorizationToken"
PULL_ACTIONS = ("ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer")
MANAGED_BY = {"app.kubernetes.io/managed-by": "gpu-platform"}
# checkov's CKV_K8S_41 wants `automountServiceAccountToken: false` on every `default` ServiceAccount. The patch
# owns the pull Secret only: whether the namespace's pods get a token stays as Kubernetes makes it, the
# tenant's to change, as before the platform named the Secret (`checkov.io/skip<n>`, components/autoscaling/vllm.py).
CHECKOV_ACCEPTED = {
    "checkov.io/skip1": "CKV_K8S_41=the platform sets only imagePullSecrets; token mounting stays the tenant's choice"
}


class TenantImagePulls(pulumi.ComponentResource):
    """Per tenant an image-pull IAM role, its ECR token generator, the pull Secret's ExternalSecret, and the
    `default` ServiceAccount naming that Secret."""

    def __init__(
        self,
        name: str,
        tenants: Sequence[TenantPlan],
        *,
        cluster_name: str,
        region: str,
        account_id: pulumi.Input[str],
        partition: pulumi.Input[str],
        controller_role_arn: pulumi.Input[str],
        provider: k8s.Provider,
        namespaces: Mapping[str, pulumi.Resource],
        tags: Mapping[str, str],
        depends_on: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ):
        """
        :param tenants: `PlatformConfig.tenants`: one of each per tenant.
        :param cluster_name: names the roles and scopes their trust to this cluster's ESO controller.
        :param region: the stack's region: the registry the token logs in to and the repositories it pulls.
        :param account_id: the caller's account (`aws.get_caller_identity`), owner of the roles and repositories.
        :param partition: the AWS partition every ARN is written in.
        :param controller_role_arn: ESO's controller role (`TenantSecrets.controller_role`), the only principal
            each role trusts; that role's own policy lets it assume `<cluster>-image-pull-*`.
        :param namespaces: tenant name -> its Namespace resource (the tenants component's).
        :param depends_on: ESO's release (its CRDs and controller), which every generator and ExternalSecret needs.
        """
        super().__init__("gpu-platform:image-pulls:TenantImagePulls", name, None, opts)
        in_cluster = Children(self, provider, depends_on)
        for plan in tenants:
            role = iam.Role(
                f"{name}-{plan.name}-role",
                name=tenant_image_pull_role_name(cluster_name, plan.name),
                assume_role_policy=pulumi.Output.all(account_id, controller_role_arn).apply(_trust_json(cluster_name)),
                tags=dict(tags),
                opts=pulumi.ResourceOptions(parent=self),
            )
            pull = iam.RolePolicy(
                f"{name}-{plan.name}-pull",
                role=role.id,
                policy=pulumi.Output.all(partition, account_id).apply(_pull_json(region, plan.name)),
                opts=pulumi.ResourceOptions(parent=role),
            )
            # A generator is run as soon as an ExternalSecret names it: the role's permissions come first.
            generator = declare(
                f"{name}-{plan.name}-generator", ecr_token_generator(plan, region, role.arn),
                in_cluster.opts(namespaces[plan.name], pull),
            )
            declare(f"{name}-{plan.name}-external-secret", image_pull_external_secret(plan), in_cluster.opts(generator))
            # The service account controller creates `default` with the namespace, and the provider refuses to
            # create an object that exists (pulumi-kubernetes 4.29+, without upsertExistingObjects). A patch applies
            # its imagePullSecrets alone by server-side apply, which creates the object if the controller has not
            # yet (pulumi/pulumi-kubernetes RFC #2011, issue #2194), and gives the field back when removed.
            manifest = default_service_account(plan)
            k8s.core.v1.ServiceAccountPatch(
                f"{name}-{plan.name}-default-service-account",
                metadata=manifest["metadata"],
                image_pull_secrets=manifest["imagePullSecrets"],
                opts=in_cluster.opts(namespaces[plan.name]),
            )
        self.register_outputs({})


def _trust_json(cluster_name: str) -> Callable[[list[Any]], str]:
    """[account, controller role ARN] -> the image-pull role's trust policy as JSON."""
    return lambda resolved: policies.to_json(image_pull_trust_policy(resolved[0], resolved[1], cluster_name))


def _pull_json(region: str, tenant: str) -> Callable[[list[Any]], str]:
    """[partition, account] -> the image-pull role's permissions as JSON."""
    return lambda resolved: policies.to_json(image_pull_policy(resolved[0], region, resolved[1], tenant))


def image_pull_trust_policy(account_id: str, controller_role_arn: str, cluster_name: str) -> dict[str, Any]:
    """The role may be assumed by ESO's controller, as its Pod Identity session on this cluster, and by nothing else.

    A Pod Identity session carries the pod's cluster, namespace and service account as principal tags (EKS
    user guide, pod-id-abac.html). The generator's AssumeRole sets no session tag, so no `sts:TagSession`.
    """
    return {
        "Version": policies.POLICY_VERSION,
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"AWS": controller_role_arn},
                "Action": "sts:AssumeRole",
                "Condition": {
                    "StringEquals": {
                        "aws:PrincipalAccount": account_id,
                        f"aws:PrincipalTag/{policies.POD_IDENTITY_CLUSTER_TAG}": cluster_name,
                        f"aws:PrincipalTag/{policies.POD_IDENTITY_NAMESPACE_TAG}": CONTROLLER_NAMESPACE,
                        f"aws:PrincipalTag/{policies.POD_IDENTITY_SERVICE_ACCOUNT_TAG}": CONTROLLER_SERVICE_ACCOUNT,
                    }
                },
            }
        ],
    }


def image_pull_policy(partition: str, region: str, account_id: str, tenant: str) -> dict[str, Any]:
    """Log in to ECR, and pull the repositories named `<tenant>/...` of this account in `region`: nothing else."""
    prefix = tenant_repository_prefix(tenant)
    return {
        "Version": policies.POLICY_VERSION,
        "Statement": [
            {"Sid": "RegistryLogin", "Effect": "Allow", "Action": LOGIN_ACTION, "Resource": "*"},
            {
                "Sid": "OwnRepositories",
                "Effect": "Allow",
                "Action": list(PULL_ACTIONS),
                "Resource": f"arn:{partition}:ecr:{region}:{account_id}:repository/{prefix}*",
            },
        ],
    }


def ecr_token_generator(plan: TenantPlan, region: str, role_arn: pulumi.Input[str]) -> dict[str, Any]:
    """The tenant's ECR token generator: this account's private registry in `region`, as the tenant's role."""
    return {
        "apiVersion": GENERATOR_API_VERSION,
        "kind": GENERATOR_KIND,
        "metadata": {"name": IMAGE_PULL_SECRET, "namespace": plan.namespace, "labels": dict(MANAGED_BY)},
        "spec": {"region": region, "role": role_arn},
    }


def image_pull_external_secret(plan: TenantPlan) -> dict[str, Any]:
    """The generator's token as the tenant namespace's `kubernetes.io/dockerconfigjson` Secret `ecr-pull`."""
    return {
        "apiVersion": EXTERNAL_SECRET_API_VERSION,
        "kind": "ExternalSecret",
        "metadata": {"name": IMAGE_PULL_SECRET, "namespace": plan.namespace, "labels": dict(MANAGED_BY)},
        "spec": {
            "refreshInterval": REFRESH_INTERVAL,
            "target": {
                "name": IMAGE_PULL_SECRET,
                "creationPolicy": "Owner",
                "template": {"type": DOCKER_CONFIG_JSON, "data": {".dockerconfigjson": DOCKER_CONFIG_TEMPLATE}},
            },
            "dataFrom": [
                {
                    "sourceRef": {
                        "generatorRef": {"apiVersion": GENERATOR_API_VERSION, "kind": GENERATOR_KIND, "name": IMAGE_PULL_SECRET}
                    }
                }
            ],
        },
    }


def default_service_account(plan: TenantPlan) -> dict[str, Any]:
    """The fields of the namespace's `default` ServiceAccount the platform owns: its pull Secret."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "default", "namespace": plan.namespace, "annotations": dict(CHECKOV_ACCEPTED)},
        "imagePullSecrets": [{"name": IMAGE_PULL_SECRET}],
    }
