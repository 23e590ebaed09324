"""Who an IAM principal is inside the cluster, through an EKS access entry with no username of its own.

EKS API reference, CreateAccessEntry (`username`) and the user guide's "Create access entries": EKS
generates the Kubernetes username from the principal's type. An IAM user authenticates as its ARN; an
IAM role as its STS session, `arn:<partition>:sts::<account>:assumed-role/<role name>/{{SessionName}}`,
the role's path dropped (as STS writes an assumed-role ARN). So every session of a role shares the
prefix up to and including the role name's `/`, and no other principal's username starts with it.
"""

from __future__ import annotations

SESSION_NAME = "{{SessionName}}"


def access_entry_username(principal_arn: str) -> str:
    """The username EKS generates for `principal_arn`'s access entry; a role's ends in `{{SessionName}}`,
    which each session's name replaces."""
    _, partition, _, _, account, resource = principal_arn.split(":", 5)
    kind, _, path_and_name = resource.partition("/")
    if kind == "role":
        return f"arn:{partition}:sts::{account}:assumed-role/{path_and_name.rsplit('/', 1)[-1]}/{SESSION_NAME}"
    if kind == "user":
        return principal_arn
    raise ValueError(f"{principal_arn} is neither an IAM role nor an IAM user")
