"""The whole program's recording read as a graph: what each resource waits for, its releases and objects.

Shared by the tests of deploy order (test_dependencies.py, test_deploy_order.py, test_helm_options.py),
which read the recordings of conftest.py's `recorded` fixture.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from offline.engine import RecordedResource, Recording

from .conftest import short

RELEASE = "kubernetes:helm.sh/v3:Release"

# id(recording) -> (the recording, kept alive so the id stays its own; urn -> everything it waits for)
_CLOSURES: dict[int, tuple[Recording, dict[str, frozenset[str]]]] = {}


def waits_for(recording: Recording, resource: RecordedResource) -> frozenset[str]:
    if id(recording) not in _CLOSURES:
        _CLOSURES[id(recording)] = (recording, _closure(recording))
    return _CLOSURES[id(recording)][1][resource.urn]


def _closure(recording: Recording) -> dict[str, frozenset[str]]:
    direct = {r.urn: {*r.dependencies, *([r.provider] if r.provider else [])} for r in recording.resources}
    closure: dict[str, frozenset[str]] = {}

    def visit(urn: str, path: tuple[str, ...]) -> frozenset[str]:
        if urn not in closure:
            assert urn not in path, f"dependency cycle through {short(urn)}"
            found: set[str] = set()
            for dependency in direct.get(urn, ()):
                found |= {dependency, *visit(dependency, (*path, urn))}
            closure[urn] = frozenset(found)
        return closure[urn]

    for urn in direct:
        visit(urn, ())
    return closure


def kubernetes_objects(recording: Recording) -> Iterator[RecordedResource]:
    for r in recording.resources:
        if r.custom and r.type.startswith("kubernetes:") and r.type != RELEASE:
            yield r


def releases(recording: Recording) -> dict[str, RecordedResource]:
    return {r.inputs["name"]: r for r in recording.by_type(RELEASE)}


def declared(recording: Recording, kind: str, name: str, namespace: str | None = None) -> RecordedResource:
    [found] = [
        r for r in kubernetes_objects(recording)
        if (r.inputs["kind"], r.inputs["metadata"]["name"], r.inputs["metadata"].get("namespace")) == (kind, name, namespace)
    ]
    return found


def group_of(api_version: str) -> str:
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


def value_at(values: dict[str, Any], path: str) -> Any:
    for key in path.split("."):
        if not isinstance(values, dict) or key not in values:
            return None
        values = values[key]
    return values


def describe(resource: RecordedResource) -> str:
    return f"{resource.type.rsplit(':', 1)[-1]} {short(resource.urn)}"
