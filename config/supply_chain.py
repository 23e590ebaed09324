"""`gpu-platform:supplyChain`: which images tenants may run, and how pinned the platform's own servers are.

Image verification is Kyverno's (kyverno 3.9.0, v1.19.0): one ImageValidatingPolicy per entry of
`imageVerification.policies`, each verifying the cosign keyless signatures of the images its globs
match, in tenant namespaces. Pinning is checked here, at config time: a platform-served model server
(`tenants[].inference[].serving`) must then name its image by digest and its model by revision.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from .base import ConfigModel
from .errors import duplicates, show

VerificationMode = Literal["Audit", "Enforce"]

_POLICY_NAME = re.compile(r"^[a-z]([a-z0-9-]{0,38}[a-z0-9])?$")
# What Kyverno matches with gobwas/glob: an image reference as the pod spec writes it, `*` for any run.
_IMAGE_GLOB = re.compile(r"^[a-z0-9*][a-z0-9._/:@*?-]*$")
_OIDC_ISSUER = re.compile(r"^https://[^\s/]+(/[^\s]*)?$")
# ECR repository names: lowercase path components of letters and digits joined by `.`, `_` or `-`
# (ECR API Reference, CreateRepository `repositoryName`); a prefix is one or more whole components.
_REPOSITORY_PREFIX = re.compile(r"^([a-z0-9]+([._-][a-z0-9]+)*/)+$")


class KeylessIdentity(ConfigModel):
    """Who may have signed an image: the OIDC issuer and the subject of the Fulcio certificate cosign signed with.

    For GitHub Actions the issuer is `https://token.actions.githubusercontent.com` and the subject the
    workflow's URL at a ref, e.g. `https://github.com/acme-ai/images/.github/workflows/release.yml@refs/tags/v1.2.0`.
    """

    issuer: str = Field(description="OIDC issuer URL the signing certificate names, matched exactly.")
    subject: str | None = Field(None, description="Certificate subject (SAN) matched exactly. Set this or `subjectRegExp`.")
    subject_reg_exp: str | None = Field(
        None,
        description="Regular expression (Go RE2) the certificate subject must match, e.g. "
        "`^https://github\\.com/acme-ai/.+/\\.github/workflows/release\\.yml@refs/tags/v.+$`. Set this or `subject`.",
    )

    @field_validator("issuer")
    @classmethod
    def _https_issuer(cls, issuer: str) -> str:
        if not _OIDC_ISSUER.match(issuer):
            raise ValueError("is not an https:// OIDC issuer URL, e.g. 'https://token.actions.githubusercontent.com'")
        return issuer

    @field_validator("subject_reg_exp")
    @classmethod
    def _anchored(cls, pattern: str | None) -> str | None:
        if pattern is None:
            return None
        try:
            re.compile(pattern)
        except re.error as err:
            raise ValueError(f"is not a regular expression: {err}") from err
        if not (pattern.startswith("^") and pattern.endswith("$")):
            raise ValueError("must be anchored with ^ and $: an unanchored pattern accepts any subject containing it")
        return pattern

    @model_validator(mode="after")
    def _one_subject(self) -> KeylessIdentity:
        if (self.subject is None) == (self.subject_reg_exp is None):
            raise ValueError("set exactly one of subject and subjectRegExp")
        return self


class ImagePolicyConfig(ConfigModel):
    """Images whose signatures one policy verifies, and the identities that may have signed them."""

    name: str = Field(description="Policy name (a DNS label); the ImageValidatingPolicy is `gpu-platform-<name>`.")
    images: list[str] = Field(
        min_length=1,
        description="Image reference globs as pod specs write them, `*` matching any characters, e.g. "
        "`ghcr.io/acme-ai/*`. Kyverno does not add `docker.io/`: list `vllm/vllm-openai*` as written. Images no "
        "policy matches are not verified.",
    )
    identities: list[KeylessIdentity] = Field(
        min_length=1, description="Keyless (Fulcio) signers; an image passes when any one of them signed it."
    )

    @field_validator("name")
    @classmethod
    def _dns_label(cls, name: str) -> str:
        if not _POLICY_NAME.match(name):
            raise ValueError("is not a DNS label: lowercase letters, digits and '-', starting with a letter")
        return name

    @field_validator("images")
    @classmethod
    def _globs(cls, images: list[str]) -> list[str]:
        for image in images:
            if not _IMAGE_GLOB.match(image):
                raise ValueError(f"{show(image)} is not an image reference glob such as ghcr.io/acme-ai/*")
        return images


class ImageVerificationConfig(ConfigModel):
    """Kyverno, and the signature policies it enforces in tenant namespaces."""

    mode: VerificationMode = Field(
        "Audit",
        description="`Enforce` refuses a tenant pod whose matched images are not signed by a listed identity, and "
        "refuses pods while Kyverno cannot answer (fail closed); `Audit` admits them and records the failure in "
        "PolicyReports, and admits pods while Kyverno is down.",
    )
    policies: list[ImagePolicyConfig] = Field(min_length=1, description="One ImageValidatingPolicy each.")
    admission_replicas: int = Field(
        3,
        ge=1,
        le=10,
        description="Kyverno admission controller replicas, spread over the system nodes, with a "
        "PodDisruptionBudget keeping all but one up. Three keep verifying through a node's loss and a rollout.",
    )

    @field_validator("policies")
    @classmethod
    def _unique_names(cls, policies: list[ImagePolicyConfig]) -> list[ImagePolicyConfig]:
        if names := duplicates([policy.name for policy in policies]):
            raise ValueError(f"policy names {', '.join(names)} are listed twice; each is one ImageValidatingPolicy")
        return policies


class SupplyChainConfig(ConfigModel):
    """Image signature verification (Kyverno), and pinning of the model servers the platform declares."""

    image_verification: ImageVerificationConfig | None = Field(
        None, description="Install Kyverno and verify image signatures in tenant namespaces; nothing when unset."
    )
    require_digests: bool = Field(
        False,
        description="Platform-served model servers (`serving.image`) must name their image by digest "
        "(`...@sha256:<64 hex>`), so every replica runs the same bytes whatever the tag points at later.",
    )
    require_model_revisions: bool = Field(
        False,
        description="Platform-served model servers must name `serving.revision` (vLLM `--revision`): a commit "
        "hash pins the weights a new replica downloads.",
    )
    node_repositories: list[str] = Field(
        default_factory=list,
        description="Repository name prefixes, each ending in `/`, of this account's ECR that every node may pull "
        "from with its own role: the platform's own images and pull-through caches (e.g. `platform/`, "
        "`ecr-public/`). No other repository of the account is within the nodes' reach, so one tenant cannot run "
        "another's private images: tenants pull theirs with their own credentials (`imagePullSecrets`, the "
        "platform's `ecr-pull` where secrets are enabled; docs/security.md), so a prefix reaching a tenant's own "
        "repositories (`<tenant>/...`) is refused. Other accounts' repositories (the EKS add-ons' images) stay pullable.",
    )

    @field_validator("node_repositories")
    @classmethod
    def _repository_prefixes(cls, prefixes: list[str]) -> list[str]:
        for prefix in prefixes:
            if not _REPOSITORY_PREFIX.match(prefix):
                raise ValueError(
                    f"has {prefix!r}, which is not an ECR repository name prefix ending in '/' (e.g. 'platform/'): "
                    "without the slash, 'ml' would also take in another tenant's 'mlops/...'"
                )
        repeated = duplicates(prefixes)
        if repeated:
            raise ValueError(f"lists {repeated[0]!r} twice")
        return prefixes
