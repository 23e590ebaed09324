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
        "create or change SecretStores.",
    )


def tenant_secret_prefix(cluster: str, tenant: str) -> str:
    """`/gpu-prod/inference/`: the Secrets Manager name prefix a tenant's secrets live under."""
    return f"/{cluster}/{tenant}/"


def tenant_secrets_role_name(cluster: str, tenant: str) -> str:
    """The IAM role a tenant's SecretStore assumes: it reads `tenant_secret_prefix` and nothing else."""
    return f"{cluster}-secrets-{tenant}"


def hf_token_secret_name(deployment: str) -> str:
    """The Kubernetes Secret a platform-served model server reads `HF_TOKEN` from."""
    return f"{deployment}-hf-token"
