"""Who sends a request, as authentication hands it to RBAC and admission.

kubernetes/kubernetes v1.35.0:
- staging/src/k8s.io/apiserver/pkg/authentication/user/user.go: every authenticated request also
  carries the group `system:authenticated` (`AllAuthenticated`).
- staging/src/k8s.io/apiserver/pkg/authentication/serviceaccount/util.go: a service account's token
  authenticates as `system:serviceaccount:<namespace>:<name>` (`MakeUsername`) in the groups
  `system:serviceaccounts` and `system:serviceaccounts:<namespace>` (`MakeGroupNames`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

ALL_AUTHENTICATED = "system:authenticated"
SERVICE_ACCOUNT_USERNAME_PREFIX = "system:serviceaccount:"
ALL_SERVICE_ACCOUNTS = "system:serviceaccounts"
SERVICE_ACCOUNT_GROUP_PREFIX = "system:serviceaccounts:"


@dataclass(frozen=True)
class User:
    username: str
    groups: tuple[str, ...]

    def all_groups(self) -> tuple[str, ...]:
        return (*self.groups, ALL_AUTHENTICATED)

    def info(self) -> dict[str, Any]:
        """`request.userInfo` as admission policies read it."""
        return {"username": self.username, "groups": list(self.all_groups())}


def service_account(namespace: str, name: str) -> User:
    """The identity a service account's token authenticates as."""
    return User(
        f"{SERVICE_ACCOUNT_USERNAME_PREFIX}{namespace}:{name}",
        (ALL_SERVICE_ACCOUNTS, f"{SERVICE_ACCOUNT_GROUP_PREFIX}{namespace}"),
    )
