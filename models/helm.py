"""Helm's ownership rule: an object belongs to one release, and no other release may install it.

helm.sh/helm/v3 pkg/action/validate.go (the Helm library pulumi-kubernetes' Release resource runs):
`existingResourceConflict` gets every object a release is about to create by kind, namespace and name;
one that exists is adopted only when `checkOwnership` finds the object's `meta.helm.sh/release-name` and
`meta.helm.sh/release-namespace` annotations naming this very release, and the install fails with "<kind>
<name> exists and cannot be imported into the current release" otherwise. An object made outside Helm
carries neither annotation, so it is refused too. Which release of a render is installed first is
Pulumi's to choose, so any object two owners would create breaks one of them on every `up`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class ObjectKey:
    """What the API server names an object by (the group is left out: no chart here reuses a kind name)."""

    kind: str
    namespace: str  # "" for a cluster-scoped object
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"


def ownership_conflicts(created: Mapping[str, Iterable[ObjectKey]]) -> dict[ObjectKey, list[str]]:
    """Of the objects each owner (a release, or the objects declared outside Helm) creates, those more than
    one owner creates, each with its owners in order."""
    owners: dict[ObjectKey, list[str]] = {}
    for owner, keys in created.items():
        for key in set(keys):
            owners.setdefault(key, []).append(owner)
    return {key: sorted(found) for key, found in sorted(owners.items()) if len(found) > 1}
