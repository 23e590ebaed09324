"""Built-in kinds against the Kubernetes OpenAPI schemas kubernetes-validate ships, one Kubernetes minor at a time.

kubernetes-validate's own `validate()` re-reads the multi-megabyte definitions file on every call;
here each version's definitions load once and each kind's validator is built once. The strict
schemas forbid fields the API would drop (`additionalProperties: false` throughout).
Its Quantity accepts any string; here a quantity must parse, as the API server requires, and an
int32 or int64 field must hold a number that fits.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
from jsonschema.exceptions import best_match
from referencing import Registry, Resource

from .openapi import UNKNOWN_FIELD, Finding, describe, integer_range_reason, quantity_problem, type_name, type_phrase

SCHEMA_ROOT = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"
_DEFINITIONS_ID = "https://kubernetes.io/api/_definitions.json"
_DEFINITION = _DEFINITIONS_ID + "#/$defs/"
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_FORMATS = jsonschema.FormatChecker(formats=())
_FORMATS.checks("quantity")(lambda value: quantity_problem(value) is None)
for _bits in ("int32", "int64"):
    _FORMATS.checks(_bits)(lambda value, bits=_bits: integer_range_reason(value, bits) is None)


class UnsupportedVersion(Exception):
    pass


def is_built_in_group(group: str) -> bool:
    """The core group, the unqualified groups (apps, batch, ...) and *.k8s.io: the API server's own."""
    return "." not in group or group.endswith(".k8s.io")


def supported_versions() -> list[str]:
    """The Kubernetes minors kubernetes-validate has strict schemas for, oldest first."""
    found = (re.fullmatch(r"v(\d+)\.(\d+)\.0-local-strict", p.name) for p in SCHEMA_ROOT.iterdir())
    return [f"{m[1]}.{m[2]}" for m in sorted(filter(None, found), key=lambda m: (int(m[1]), int(m[2])))]


def built_in_findings(obj: Mapping[str, Any], kubernetes_version: str) -> list[Finding]:
    """A built-in object against Kubernetes `kubernetes_version` (a minor, "1.35"): served, and valid strictly."""
    api_version, kind = obj["apiVersion"], obj["kind"]
    validator = _validator(kubernetes_version, api_version, kind)
    if validator is None:
        return [Finding(("apiVersion",), not_served(api_version, kind, kubernetes_version))]
    return sorted({finding for error in validator.iter_errors(obj) for finding in _findings(error)})


def object_meta_findings(metadata: Any, kubernetes_version: str) -> list[Finding]:
    """A custom resource's metadata against ObjectMeta, the schema the API server applies to it."""
    validator = _object_meta_validator(kubernetes_version)
    return sorted({f for error in validator.iter_errors(metadata) for f in _findings(error, ("metadata",))})


def not_served(api_version: str, kind: str, kubernetes_version: str) -> str:
    """Why Kubernetes `kubernetes_version` has no `api_version` `kind`: the versions it serves, or when it stopped."""
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    directory = _directory(kubernetes_version)
    served = sorted(v for v in _served_versions(directory, group, kind))
    text = f"Kubernetes {kubernetes_version} does not serve {api_version} {kind}"
    if served:
        return f"{text}; it serves {kind} as {', '.join(served)}"
    older = [v for v in supported_versions() if _minor(v) < _minor(kubernetes_version)]
    last = next((v for v in reversed(older) if _schema_file(_directory(v), api_version, kind).is_file()), None)
    return f"{text} (last served in {last})" if last else f"{text}, nor any version of {kind} in that group"


def _served_versions(directory: Path, group: str, kind: str) -> Iterator[str]:
    prefix = f"{kind.lower()}-{group.split('.')[0]}-" if group else f"{kind.lower()}-"
    for path in directory.glob(f"{prefix}v*.json"):
        for gvk in json.loads(path.read_text()).get("x-kubernetes-group-version-kind", ()):
            if gvk["group"] == group and gvk["kind"] == kind:
                yield f"{group}/{gvk['version']}" if group else gvk["version"]


def _findings(error: jsonschema.ValidationError, prefix: tuple[str, ...] = ()) -> list[Finding]:
    path = (*prefix, *error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = error.schema.get("properties", {})
        return [Finding((*path, key), UNKNOWN_FIELD) for key in error.instance if key not in known]
    if error.validator == "required":
        missing = re.match(r"'(.+)' is a required property", error.message)
        return [Finding((*path, missing[1]) if missing else path, "required field is missing")]
    if error.validator == "format" and error.validator_value == "quantity":
        return [Finding(path, str(quantity_problem(error.instance)))]
    if error.validator == "format" and integer_range_reason(error.instance, error.validator_value):
        return [Finding(path, str(integer_range_reason(error.instance, error.validator_value)))]
    if error.validator in ("oneOf", "anyOf") and error.context:
        closest = best_match(error.context)
        return [Finding((*path, *closest.relative_path), closest.message)]
    if error.validator == "type":
        types = [error.validator_value] if isinstance(error.validator_value, str) else error.validator_value
        expected = [t for t in types if t != "null"]
        return [Finding(path, f"must be {' or '.join(type_phrase(t) for t in expected)}, not {type_name(error.instance)}")]
    if error.validator == "enum":
        return [Finding(path, f"{describe(error.instance)} is not one of {', '.join(map(describe, error.validator_value))}")]
    return [Finding(path, error.message if len(error.message) < 200 else error.message[:197] + "...")]


def _minor(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def _directory(kubernetes_version: str) -> Path:
    directory = SCHEMA_ROOT / f"v{kubernetes_version}.0-local-strict"
    if not directory.is_dir():
        raise UnsupportedVersion(
            f"kubernetes-validate {kubernetes_validate.__version__} has no schemas for Kubernetes {kubernetes_version}; "
            f"it has {', '.join(supported_versions())}"
        )
    return directory


def _schema_file(directory: Path, api_version: str, kind: str) -> Path:
    # kubernetes-validate's naming: the group's first label, then the version (core: the version alone).
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    return directory / f"{kind.lower()}-{group_version}.json"


@functools.cache
def _registry(kubernetes_version: str) -> Registry:
    definitions = json.loads((_directory(kubernetes_version) / "_definitions.json").read_text())
    definitions["$defs"][_QUANTITY] = {"type": ["string", "number", "null"], "format": "quantity"}
    return Registry().with_resource(_DEFINITIONS_ID, Resource.from_contents(definitions))


@functools.cache
def _validator(kubernetes_version: str, api_version: str, kind: str) -> jsonschema.Validator | None:
    path = _schema_file(_directory(kubernetes_version), api_version, kind)
    if not path.is_file():
        return None
    schema = json.loads(path.read_text())
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    if not any(gvk["group"] == group for gvk in schema.get("x-kubernetes-group-version-kind", ())):
        return None  # a file of another group that shares the first label
    return jsonschema.Draft202012Validator(schema, registry=_registry(kubernetes_version), format_checker=_FORMATS)


@functools.cache
def _object_meta_validator(kubernetes_version: str) -> jsonschema.Validator:
    schema = {"$ref": _DEFINITION + "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
    return jsonschema.Draft202012Validator(schema, registry=_registry(kubernetes_version), format_checker=_FORMATS)
