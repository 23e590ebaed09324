"""Which API groups the API server still serves.

kubernetes/website content/en/docs/reference/using-api/deprecation-guide.md: v1.16 stops serving
DaemonSet, Deployment, ReplicaSet and NetworkPolicy in extensions/v1beta1, v1.22 its Ingress, the last
of the group. The built-in `edit` role still names `extensions` (bootstrappolicy/policy.go keeps the
rules for old clusters), so a rule there grants nothing on the versions the platform runs (1.33+).
"""

from __future__ import annotations

# Group -> the first Kubernetes minor that serves nothing in it.
REMOVED_GROUPS: dict[str, tuple[int, int]] = {"extensions": (1, 22)}


def served(api_group: str, kubernetes_version: str) -> bool:
    """Whether a cluster of `kubernetes_version` ("1.35") serves any resource of `api_group`."""
    minor = tuple(int(part) for part in kubernetes_version.split("."))
    removed = REMOVED_GROUPS.get(api_group)
    return removed is None or minor < removed
