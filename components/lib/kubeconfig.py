"""The kubeconfig the stack's Kubernetes provider authenticates with, and the AWS credentials it carries.

The token comes from `aws eks get-token` (the AWS CLI must be on PATH). It has to run with the same
identity as the stack's AWS provider: the one EKS made an admin, or one of `cluster.admins`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_eks as eks


@dataclass(frozen=True)
class KubeconfigCredentials:
    """What the AWS provider authenticates with, beyond the ambient credential chain.

    `profile`: `aws:profile`. `role_arn`: the last role of `aws:assumeRoles`, the identity the AWS
    provider ends up with. Both unset: the ambient chain (AWS_PROFILE and the rest), as for the AWS
    provider, which `aws eks get-token` inherits from the environment.
    """

    profile: str | None = None
    role_arn: str | None = None

    @classmethod
    def from_stack_config(cls) -> KubeconfigCredentials:
        aws_config = pulumi.Config("aws")
        roles = aws_config.get_object("assumeRoles") or []
        last = roles[-1] if isinstance(roles, list) and roles else {}
        return cls(profile=aws_config.get("profile"), role_arn=last.get("roleArn") if isinstance(last, dict) else None)

    def provider_credential_opts(self) -> eks.KubeconfigOptionsArgs | None:
        """pulumi-eks's `providerCredentialOpts`, for its own provider and its `kubeconfig` output.

        Once set, pulumi-eks stops filling the profile in from `aws:profile` (`createCluster` in
        `nodejs/eks/cluster/cluster.ts`), so the profile goes in beside the role.
        """
        if self.profile is None and self.role_arn is None:
            return None
        return eks.KubeconfigOptionsArgs(profile_name=self.profile, role_arn=self.role_arn)

    def get_token_args(self) -> list[str]:
        """Arguments after `aws eks get-token ...`: the role to assume, then the profile to start from."""
        args = []
        if self.role_arn:
            args += ["--role-arn", self.role_arn]
        if self.profile:
            # An argument rather than AWS_PROFILE, which ambient AWS_ACCESS_KEY_ID would override.
            args += ["--profile", self.profile]
        return args


def kubeconfig(
    cluster_name: str, endpoint: str, certificate_authority: str, region: str, credentials: KubeconfigCredentials
) -> dict[str, Any]:
    """A kubeconfig whose token comes from `aws eks get-token` with the stack's AWS credentials.

    pulumi-eks builds the same shape (`generateKubeconfig`, `nodejs/eks/cluster/cluster.ts`), but the
    `kubeconfigJson` it outputs is its variant without `--profile` (`kubeconfigWithoutProfile`), meant
    for other users' own credentials; the stack's provider needs the profile too.
    """
    cluster = {"server": endpoint, "certificate-authority-data": certificate_authority}
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster_name, "cluster": cluster}],
        "contexts": [{"name": "aws", "context": {"cluster": cluster_name, "user": "aws"}}],
        "current-context": "aws",
        "users": [
            {
                "name": "aws",
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "aws",
                        "args": [
                            "--region", region, "eks", "get-token", "--cluster-name", cluster_name, "--output", "json",
                            *credentials.get_token_args(),
                        ],
                    }
                },
            }
        ],
    }
