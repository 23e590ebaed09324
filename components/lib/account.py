"""What the AWS account already has: account-wide resources a stack looks up before it creates them.

A service-linked role exists once per account, whichever stack or tool made it. A stack that creates
one the account already has fails (`InvalidInput: Service role name ... has been taken in this
account`), so the stack asks IAM first and creates the role only when the answer is none.
"""

from __future__ import annotations

import re

import pulumi
import pulumi_aws as aws


def service_linked_role_path(service: str) -> str:
    """IAM's path of every service-linked role of `service` (IAM User Guide, "Using service-linked roles")."""
    return f"/aws-service-role/{service}/"


def account_has_service_linked_role(service: str, role_name: str, parent: pulumi.Resource) -> bool:
    """Whether the account has `role_name`, `service`'s service-linked role.

    A plain invoke: the answer decides whether the role is declared at all. `aws.iam.get_roles`
    answers with empty lists when nothing matches, where `get_role` fails the run.
    """
    found = aws.iam.get_roles(
        path_prefix=service_linked_role_path(service),
        name_regex=f"^{re.escape(role_name)}$",
        opts=pulumi.InvokeOptions(parent=parent),
    )
    return role_name in found.names


def account_zone_ids() -> dict[str, str]:
    """The account's zones of the stack's region, name -> zone ID (`aws ec2 describe-availability-zones`):
    names map to IDs per account, and EKS refuses zones by ID (config/regions.py `eks_zone_problems`)."""
    zones = aws.get_availability_zones(state="available")
    return dict(zip(zones.names, zones.zone_ids, strict=True))
