"""`gpu-platform:secrets`: tenants' secrets from AWS Secrets Manager, each tenant confined to its own path.

External Secrets Operator (external-secrets 2.9.0) copies a secret named under a tenant's path,
`/<cluster>/<tenant>/...`, into a Kubernetes Secret in the tenant's namespace. The names both sides
of that agreement use (the path, the IAM role, the Secret a model server reads its token from) are
derived here once.
"""

from __future__ import annotations

from pydantic import Field

from .base import ConfigModel

# IAM role names are at most 64 characters (IAM CreateRole `RoleName`).
IAM_ROLE_NAME_LIMIT = 64
# The environment variable huggingface_hub reads a Hub token from, and so the key of the Secret it comes from.
HF_TOKEN_ENV = "HF_TOKEN"


class SecretsConfig(ConfigModel):
    """External Secrets Operator, and one SecretStore per tenant reading only the tenant's Secrets Manager path."""

    enabled: bool = Field(
        False,
        description="Install External Secrets Operator and give each tenant namespace a SecretStore named "
        "`aws-secrets-manager` that reads AWS Secrets Manager secrets named `/<cluster>/<tenant>/*`, and nothing "
        "else, through an IAM role of its own. Tenant admins write ExternalSecrets against it; they cannot "
        "create or change SecretStores. Each tenant namespace also gets the Secret `ecr-pull`, a login to this "
        "account's ECR in the stack's region that pulls only the tenant's own repositories (`<tenant>/...`), "
        "refreshed hourly and named in the namespace's `default` ServiceAccount's imagePullSecrets.",
    )


def tenant_secret_prefix(cluster: str, tenant: str) -> str:
    """`/gpu-prod/inference/`: the Secrets Manager name prefix a tenant's secrets live under."""
    return f"/{cluster}/{tenant}/"


def tenant_secrets_role_name(cluster: str, tenant: str) -> str:
    """The IAM role a tenant's SecretStore assumes: it reads `tenant_secret_prefix` and nothing else."""
    return f"{cluster}-secrets-{tenant}"


def tenant_image_pull_role_name(cluster: str, tenant: str) -> str:
    """The IAM role a tenant's ECR token generator assumes: it pulls `tenant_repository_prefix` and nothing else."""
    return f"{cluster}-image-pull-{tenant}"


def tenant_repository_prefix(tenant: str) -> str:
    """`ml/`: the ECR repository names a tenant's pull secret reaches. With its slash, `ml/` is never the start
    of another tenant's `mlops/...` (a tenant name is a DNS label, so it holds no `/`)."""
    return f"{tenant}/"


# The Secret (type kubernetes.io/dockerconfigjson) in every tenant namespace holding a login to this account's
# ECR in the stack's region, as the tenant's own image-pull role; its ExternalSecret and generator share the name.
IMAGE_PULL_SECRET = "ecr-pull"


def hf_token_secret_name(deployment: str) -> str:
    """The Kubernetes Secret a platform-served model server reads `HF_TOKEN` from."""
    return f"{deployment}-hf-token"
