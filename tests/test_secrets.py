"""Tenants' secrets: each tenant reads its own Secrets Manager path through its own store, and no other.

IAM is evaluated from the documents the component builds (Allow only, StringEquals conditions, ARN
globs), against the requests External Secrets Operator v2.9.0 makes: the controller's Pod Identity
session assumes the store's `role` with the `esoNamespace` tag set to the ExternalSecret's namespace
(providers/v1/aws/provider.go `buildSessionTags`), then calls GetSecretValue on the key.
"""

from __future__ import annotations

import fnmatch
from typing import Any

import pytest

from components import secrets
from components.autoscaling import vllm
from config.errors import ConfigError
from config.secrets import HF_TOKEN_ENV
from offline.upstream import chart_values

from .conftest import fixture_document, load, render_fixture
from .recorded import RELEASE, declared, waits_for

CLUSTER, REGION, ACCOUNT, PARTITION = "gpu-prod", "us-east-1", "111122223333", "aws"
CONTROLLER = f"arn:aws:iam::{ACCOUNT}:role/{CLUSTER}-external-secrets"
# The controller pod's Pod Identity session (EKS sets these principal tags).
CONTROLLER_SESSION = {
    "aws:PrincipalAccount": ACCOUNT,
    "aws:PrincipalTag/eks-cluster-name": CLUSTER,
    "aws:PrincipalTag/kubernetes-namespace": "external-secrets",
    "aws:PrincipalTag/kubernetes-service-account": "external-secrets",
}


def role_arn(tenant: str) -> str:
    return f"arn:aws:iam::{ACCOUNT}:role/{CLUSTER}-secrets-{tenant}"


def allows(document: dict[str, Any], principal: str | None, action: str, resource: str | None, context: dict[str, str]) -> bool:
    """Whether an Allow statement of `document` matches (the documents here have no Deny)."""
    for statement in document["Statement"]:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        if action not in actions:
            continue
        if principal is not None and statement.get("Principal", {}).get("AWS") != principal:
            continue
        if resource is not None:
            resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            if not any(fnmatch.fnmatchcase(resource, pattern) for pattern in resources):
                continue
        conditions = statement.get("Condition", {}).get("StringEquals", {})
        if all(context.get(key) == value for key, value in conditions.items()):
            return True
    return False


def reads(store_namespace: str, store_role_tenant: str, key: str, *, tags: dict[str, str] | None = None) -> bool:
    """A store in `store_namespace` naming `store_role_tenant`'s role fetches the secret named `key`.

    `tags` are the session tags the store sends; by default ESO's `sessionTagsPolicy: Simple`.
    """
    session_tags = {"esoNamespace": store_namespace} if tags is None else tags
    context = {**CONTROLLER_SESSION, **{f"aws:RequestTag/{k}": v for k, v in session_tags.items()}}
    target = role_arn(store_role_tenant)
    may_assume = allows(secrets.controller_policy(PARTITION, ACCOUNT, CLUSTER), None, "sts:AssumeRole", target, context)
    trusted = allows(
        secrets.tenant_trust_policy(ACCOUNT, CONTROLLER, CLUSTER, store_role_tenant), CONTROLLER, "sts:AssumeRole", None, context
    )
    secret_arn = f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:{key}-AbCdEf"
    permitted = allows(
        secrets.tenant_read_policy(PARTITION, REGION, ACCOUNT, CLUSTER, store_role_tenant),
        None, "secretsmanager:GetSecretValue", secret_arn, {},
    )
    return may_assume and trusted and permitted


TENANTS = ("data-science", "experiments", "inference", "llm-training")

READS = [
    # (store's namespace, role named, key, session tags, read?)
    ("llm-training", "llm-training", "/gpu-prod/llm-training/hf-token", None, True),
    ("llm-training", "llm-training", "/gpu-prod/llm-training/team/wandb", None, True),
    ("llm-training", "llm-training", "/gpu-prod/inference/hf-token", None, False),
    ("llm-training", "inference", "/gpu-prod/inference/hf-token", None, False),
    ("llm-training", "llm-training", "/gpu-dev/llm-training/hf-token", None, False),
    ("inference", "inference", "/gpu-prod/inference-canary/key", None, False),
]


@pytest.mark.parametrize("namespace, role, key, tags, read", READS)
def test_a_store_reads_only_its_own_tenants_path_through_its_own_tenants_role(namespace, role, key, tags, read):
    assert reads(namespace, role, key, tags=tags) is read


def test_a_forged_namespace_tag_gets_through_iam_so_tenants_may_not_write_stores():
    # A store's author could send `sessionTags: [{key: esoNamespace, value: inference}]` with
    # `sessionTagsPolicy: None`; IAM cannot tell. The guard is RBAC, checked below.
    assert reads("llm-training", "inference", "/gpu-prod/inference/hf-token", tags={"esoNamespace": "inference"})


def test_tenant_admins_may_write_external_secrets_but_no_store_generator_or_push_secret():
    # external-secrets 2.9.0 templates/rbac.yaml: write access to stores, generators and PushSecrets is
    # aggregated into `edit` and `admin` unless turned off.
    upstream = chart_values("external-secrets", "2.9.0")["rbac"]
    assert upstream["aggregateToEdit"] is True and upstream["aggregateToAdmin"] is True
    values = secrets.external_secrets_values()
    assert values["rbac"]["aggregateToEdit"] is False and values["rbac"]["aggregateToAdmin"] is False
    role = secrets.external_secret_author_role()
    assert role["metadata"]["labels"] == {
        "rbac.authorization.k8s.io/aggregate-to-admin": "true", "rbac.authorization.k8s.io/aggregate-to-edit": "true"
    }
    assert [(rule["apiGroups"], rule["resources"]) for rule in role["rules"]] == [(["external-secrets.io"], ["externalsecrets"])]


def test_nothing_cluster_scoped_or_writing_back_to_aws_is_processed():
    values = secrets.external_secrets_values()
    assert [key for key, on in values.items() if key.startswith("process") and on is not False] == []
    assert values["rbac"]["serviceAccountTokenCreate"] is False


def test_each_tenant_namespace_gets_one_store_naming_its_own_role():
    recording = render_fixture("multi-pool")
    for tenant in TENANTS:
        store = declared(recording, "SecretStore", secrets.STORE_NAME, tenant).inputs
        assert store["spec"]["provider"]["aws"] == {
            "service": "SecretsManager", "region": REGION, "role": role_arn(tenant), "sessionTagsPolicy": "Simple"
        }


def test_the_served_model_reads_its_hub_token_from_the_secret_its_external_secret_writes():
    recording = render_fixture("multi-pool")
    external = declared(recording, "ExternalSecret", "embeddings-hf-token", "llm-training")
    remote = {"key": "/gpu-prod/llm-training/hf-token"}
    assert external.inputs["spec"]["data"] == [{"secretKey": HF_TOKEN_ENV, "remoteRef": remote}]
    assert external.inputs["spec"]["secretStoreRef"] == {"kind": "SecretStore", "name": secrets.STORE_NAME}
    server = declared(recording, "Deployment", "embeddings", "llm-training")
    [container] = server.inputs["spec"]["template"]["spec"]["containers"]
    [token] = [env for env in container["env"] if env["name"] == HF_TOKEN_ENV]
    assert token["valueFrom"]["secretKeyRef"] == {"name": external.inputs["spec"]["target"]["name"], "key": HF_TOKEN_ENV}
    assert external.urn in waits_for(recording, server)


def test_a_server_without_a_token_secret_gets_no_hf_token():
    config = load(fixture_document("multi-pool"))
    tenant = next(t for t in config.tenants if t.name == "llm-training")
    deployment = tenant.config.inference[0].model_copy(
        update={"serving": tenant.config.inference[0].serving.model_copy(update={"hf_token_secret": None})}  # type: ignore[union-attr]
    )
    manifest = vllm.server_deployment(tenant, deployment, vllm.tenant_flavor(tenant, deployment.flavor))
    assert HF_TOKEN_ENV not in {env["name"] for env in manifest["spec"]["template"]["spec"]["containers"][0]["env"]}


def test_the_controller_starts_after_its_pod_identity_and_permissions_exist():
    recording = render_fixture("multi-pool")
    [release] = [r for r in recording.by_type(RELEASE) if r.inputs["name"] == secrets.RELEASE_NAME]
    waited = waits_for(recording, release)
    [identity] = [r for r in recording.by_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
                  if r.inputs["namespace"] == secrets.NAMESPACE]
    policies = recording.by_type("aws:iam/rolePolicy:RolePolicy")
    [assume] = [r for r in policies if r.inputs["role"] == f"{CLUSTER}-external-secrets"]
    assert {identity.urn, assume.urn} <= waited
    assert (identity.inputs["serviceAccount"], identity.inputs["roleArn"]) == (secrets.SERVICE_ACCOUNT, CONTROLLER)


def test_the_webhook_keeps_a_replica_through_a_drain():
    webhook = secrets.external_secrets_values()["webhook"]
    assert (webhook["replicaCount"], webhook["podDisruptionBudget"]) == (2, {"enabled": True, "minAvailable": 1})


def test_a_token_secret_without_secrets_enabled_is_refused_in_one_line():
    document = fixture_document("multi-pool")
    document["gpu-platform:secrets"] = {"enabled": False}
    with pytest.raises(ConfigError) as error:
        load(document)
    assert error.value.problems == [
        "gpu-platform:tenants[llm-training].inference[embeddings].serving.hfTokenSecret: "
        "'hf-token' needs gpu-platform:secrets.enabled: true, "
        "which reads it from AWS Secrets Manager"
    ]


@pytest.mark.parametrize(
    ("cluster", "tenant", "line"),
    [
        (
            "gpu-production-us-east-1-blue",
            "experiments-of-the-applied-research-team",
            "makes its image-pull role 'gpu-production-us-east-1-blue-image-pull-experiments-of-the-applied-research-team', "
            "81 characters; IAM allows 64: shorten the tenant or cluster name by 17",
        ),
        # Its secrets role, gpu-prod-east1-secrets-<tenant>, has 63 characters: only the image-pull role is too long.
        (
            "gpu-prod-east1",
            "experiments-of-the-applied-research-team",
            "makes its image-pull role 'gpu-prod-east1-image-pull-experiments-of-the-applied-research-team', "
            "66 characters; IAM allows 64: shorten the tenant or cluster name by 2",
        ),
    ],
)
def test_a_tenant_whose_role_names_would_pass_64_characters_is_refused(cluster, tenant, line):
    document = fixture_document("multi-pool")
    document["gpu-platform:cluster"]["name"] = cluster
    document["gpu-platform:tenants"][3]["name"] = tenant
    with pytest.raises(ConfigError) as error:
        load(document)
    assert error.value.problems == [f"gpu-platform:tenants[{tenant}].name: {tenant!r} {line}"]


def test_a_tenant_name_that_fits_both_roles_is_accepted():
    """gpu-prod-eu1-image-pull-<tenant> at exactly 64 characters."""
    document = fixture_document("multi-pool")
    document["gpu-platform:cluster"]["name"] = "gpu-prod-eu1"
    document["gpu-platform:tenants"][3]["name"] = "experiments-of-the-applied-research-team"
    assert len("gpu-prod-eu1-image-pull-experiments-of-the-applied-research-team") == 64
    load(document)


def test_a_stack_without_secrets_installs_no_operator():
    recording = render_fixture("single-pool")
    assert secrets.RELEASE_NAME not in {r.inputs["name"] for r in recording.by_type(RELEASE)}


def test_the_summary_says_which_path_each_tenant_reads():
    from offline.summary import render_summary

    summary = render_summary(render_fixture("multi-pool"), load(fixture_document("multi-pool")))
    assert "secrets named `/gpu-prod/<tenant>/*` through role `gpu-prod-secrets-<tenant>`" in summary
