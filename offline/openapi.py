"""A custom resource against its CRD's structural OpenAPI v3 schema, the way the API server sees it.

The API server drops non-nullable nulls, applies the schema's `default`s, and validates what is
left (k8s.io/apiextensions-apiserver: pkg/apiserver/schema/{pruning,defaulting} and
pkg/apiserver/validation). Where it would prune a field silently, this module reports it: a field
the schema does not know is a field the user believes is set and is not. CEL rules
(`x-kubernetes-validations`) are evaluated in `models/kubernetes/cel.py`.

Paths are tuples of keys and list indexes; `dotted` writes them as `spec.template.requirements[0]`.
"""

from __future__ import annotations

import base64
import binascii
import copy
import ipaddress
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from models.kubernetes.cel import FieldPath, Finding, Schema, field_schema
from models.kubernetes.quantity import QuantityTooLarge, is_quantity, parse_quantity

try:
    # The API server compiles `pattern` with Go's RE2; google-re2 (a cel-python dependency) matches it.
    import re2 as _regex
except ImportError:  # pragma: no cover - cel-python brings it
    _regex = re


# The fields every object and every embedded resource has without its schema naming them.
OBJECT_FIELDS = frozenset({"apiVersion", "kind", "metadata"})
# apimachinery's ObjectMeta, for embedded resources (a top-level object's metadata is checked in full).
OBJECT_META_FIELDS = frozenset({
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
    "ownerReferences", "finalizers", "managedFields",
})

_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
# The API server prunes a field its schema does not name, silently: the user believes it set, and it is not.
UNKNOWN_FIELD = "unknown field (the API server would drop it)"
_JSON_TYPES = {dict: "a map", list: "a list", str: "a string", bool: "a boolean", int: "an integer", float: "a number"}
# The Go integer a field of the format decodes into; a JSON number outside it is refused at decoding
# ("cannot unmarshal number ... of type int32").
INTEGER_FORMATS = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


def quantity_problem(value: Any) -> str | None:
    """Why the API server refuses a quantity field's value (a string or a number), or None; other types
    are the type check's to report."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    try:
        parse_quantity(value)
    except QuantityTooLarge as err:
        return str(err)
    except ValueError:
        return f"{describe(value)} is not a valid quantity"
    return None


def integer_range_reason(value: Any, format_name: Any) -> str | None:
    """Why an integer does not fit its OpenAPI format (int32, int64), or None."""
    if format_name not in INTEGER_FORMATS or isinstance(value, bool) or not isinstance(value, int):
        return None
    low, high = INTEGER_FORMATS[format_name]
    return None if low <= value <= high else f"{value} does not fit {format_name} ({low} to {high})"


def dotted(path: FieldPath) -> str:
    """`("spec", "limits", "nvidia.com/gpu")` -> `spec.limits["nvidia.com/gpu"]`; the empty path is `(root)`."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_$][A-Za-z0-9_$-]*", part):
            text += f".{part}" if text else part
        else:
            text += f"[{json.dumps(part)}]"
    return text or "(root)"


def describe(value: Any) -> str:
    """A value as a problem line shows it: short, on one line."""
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def type_name(value: Any) -> str:
    return "null" if value is None else _JSON_TYPES.get(type(value), type(value).__name__)


# --- defaulting --------------------------------------------------------------------------------

def with_defaults(value: Any, schema: Schema | None) -> Any:
    """A copy of `value` as the API server stores it: non-nullable nulls dropped, then `default`s applied.

    Defaults land in missing fields at every level, including inside a default just applied.
    """
    if not schema:
        return copy.deepcopy(value)
    if isinstance(value, dict):
        result = {}
        for key, item in value.items():
            item_schema = field_schema(schema, key)
            if item is None and item_schema is not None and not item_schema.get("nullable"):
                continue
            result[key] = with_defaults(item, item_schema)
        for key, property_schema in (schema.get("properties") or {}).items():
            if key not in result and "default" in property_schema:
                result[key] = with_defaults(property_schema["default"], property_schema)
        return result
    if isinstance(value, list):
        return [with_defaults(item, schema.get("items")) for item in value]
    return value


# --- structural validation ---------------------------------------------------------------------

def schema_findings(value: Any, schema: Schema, path: FieldPath = (), *, structural: bool = True) -> list[Finding]:
    """What the API server rejects or drops in `value`; apply `with_defaults` first.

    `structural=False` is for the branches of allOf/anyOf/oneOf/not, which only add value
    validations: there a field the branch does not name is not unknown.
    """
    if value is None:
        if schema.get("nullable") or not (schema.get("type") or schema.get("x-kubernetes-int-or-string")):
            return []
        return [Finding(path, "must not be null")]
    wrong_type = _type_finding(value, schema, path)
    if wrong_type:
        return [wrong_type]
    findings = list(_value_findings(value, schema, path))
    findings += _junctor_findings(value, schema, path)
    if isinstance(value, dict):
        findings += _map_findings(value, schema, path, structural)
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            findings += schema_findings(item, schema["items"], (*path, index), structural=structural)
    return findings


def _type_finding(value: Any, schema: Schema, path: FieldPath) -> Finding | None:
    if schema.get("x-kubernetes-int-or-string") or schema.get("format") == "int-or-string":
        if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
            return None
        return Finding(path, f"must be an integer or a string, not {type_name(value)}")
    expected = schema.get("type")
    if expected is None or _has_type(value, expected):
        return None
    return Finding(path, f"must be {type_phrase(expected)}, not {type_name(value)}")


def type_phrase(openapi_type: str) -> str:
    """An OpenAPI type as a problem line says it: "object" -> "a map"."""
    return _TYPE_PHRASES.get(openapi_type, openapi_type)


_TYPE_PHRASES = {
    "object": "a map", "array": "a list", "string": "a string", "boolean": "a boolean",
    "integer": "an integer", "number": "a number",
}


def _has_type(value: Any, expected: str) -> bool:
    if isinstance(value, bool):
        return expected == "boolean"
    if expected == "integer":
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if expected == "number":
        return isinstance(value, (int, float))
    python_type = {"object": dict, "array": list, "string": str, "boolean": bool}.get(expected)
    return python_type is None or isinstance(value, python_type)


def _value_findings(value: Any, schema: Schema, path: FieldPath) -> Iterator[Finding]:
    """enum, format, pattern, lengths, bounds, counts: the validations that do not descend."""
    if "enum" in schema and value not in schema["enum"]:
        yield Finding(path, f"{describe(value)} is not one of {', '.join(describe(v) for v in schema['enum'])}")
    if isinstance(value, str):
        yield from _string_findings(value, schema, path)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield from _number_findings(value, schema, path)
    elif isinstance(value, list):
        yield from _count_findings(len(value), schema, path, "minItems", "maxItems", "items")
        yield from _list_type_findings(value, schema, path)
    elif isinstance(value, dict):
        yield from _count_findings(len(value), schema, path, "minProperties", "maxProperties", "fields")
        for key in schema.get("required") or ():
            if key not in value:
                yield Finding((*path, key), "required field is missing")


def _string_findings(value: str, schema: Schema, path: FieldPath) -> Iterator[Finding]:
    yield from _count_findings(len(value), schema, path, "minLength", "maxLength", "characters")
    pattern = schema.get("pattern")
    if pattern and not _compiled(pattern).search(value):
        yield Finding(path, f"{describe(value)} does not match the pattern {pattern}")
    format_name = schema.get("format")
    if format_name in _FORMATS and not _FORMATS[format_name](value):
        yield Finding(path, f"{describe(value)} is not a valid {format_name}")


def _number_findings(value: float, schema: Schema, path: FieldPath) -> Iterator[Finding]:
    out_of_range = integer_range_reason(value, schema.get("format"))
    if out_of_range:
        yield Finding(path, out_of_range)
    if "minimum" in schema:
        low = schema["minimum"]
        if value < low or (schema.get("exclusiveMinimum") is True and value == low):
            yield Finding(path, f"{value} is below the minimum {low}{' (exclusive)' if schema.get('exclusiveMinimum') else ''}")
    if "maximum" in schema:
        high = schema["maximum"]
        if value > high or (schema.get("exclusiveMaximum") is True and value == high):
            yield Finding(path, f"{value} is above the maximum {high}{' (exclusive)' if schema.get('exclusiveMaximum') else ''}")
    step = schema.get("multipleOf")
    if step and (value / step) != int(value / step):
        yield Finding(path, f"{value} is not a multiple of {step}")


def _count_findings(count: int, schema: Schema, path: FieldPath, low: str, high: str, unit: str) -> Iterator[Finding]:
    if low in schema and count < schema[low]:
        yield Finding(path, f"has {count} {unit}, fewer than the minimum {schema[low]}")
    if high in schema and count > schema[high]:
        yield Finding(path, f"has {count} {unit}, more than the maximum {schema[high]}")


def _list_type_findings(value: list, schema: Schema, path: FieldPath) -> Iterator[Finding]:
    """`x-kubernetes-list-type: set` items and `map` keys are unique (uniqueItems is the non-Kubernetes spelling)."""
    list_type = schema.get("x-kubernetes-list-type")
    keys = schema.get("x-kubernetes-list-map-keys") or []
    if list_type == "map" and keys:
        identity = [json.dumps([item.get(k) for k in keys] if isinstance(item, dict) else item) for item in value]
        what = "key " + ", ".join(keys)
    elif list_type == "set" or schema.get("uniqueItems"):
        identity = [json.dumps(item, sort_keys=True) for item in value]
        what = "value"
    else:
        return
    first: dict[str, int] = {}
    for index, key in enumerate(identity):
        if key in first:
            yield Finding((*path, index), f"duplicate {what} of item [{first[key]}]")
        first.setdefault(key, index)


def _map_findings(value: dict, schema: Schema, path: FieldPath, structural: bool) -> list[Finding]:
    properties = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    free = bool(schema.get("x-kubernetes-preserve-unknown-fields")) or extra is True or not structural
    embedded = bool(schema.get("x-kubernetes-embedded-resource"))
    findings: list[Finding] = []
    for key, item in value.items():
        item_path = (*path, key)
        if key in properties:
            findings += schema_findings(item, properties[key], item_path, structural=structural)
        elif isinstance(extra, Mapping):
            findings += schema_findings(item, extra, item_path, structural=structural)
        elif embedded and key in OBJECT_FIELDS:
            findings += _embedded_field_findings(key, item, item_path)
        elif not free:
            findings.append(Finding(item_path, UNKNOWN_FIELD))
    if embedded and structural:
        findings += [Finding((*path, key), "required field is missing") for key in ("apiVersion", "kind") if not value.get(key)]
    return findings


def _embedded_field_findings(key: str, value: Any, path: FieldPath) -> list[Finding]:
    if key != "metadata":
        return [] if isinstance(value, str) else [Finding(path, f"must be a string, not {type_name(value)}")]
    if not isinstance(value, dict):
        return [Finding(path, f"must be a map, not {type_name(value)}")]
    findings = [Finding((*path, k), UNKNOWN_FIELD) for k in value if k not in OBJECT_META_FIELDS]
    for field in ("labels", "annotations"):
        entries = value.get(field) or {}
        findings += [Finding((*path, field, k), "must be a string") for k, v in entries.items() if not isinstance(v, str)]
    return findings


def _junctor_findings(value: Any, schema: Schema, path: FieldPath) -> list[Finding]:
    findings: list[Finding] = []
    for branch in schema.get("allOf") or ():
        findings += schema_findings(value, branch, path, structural=False)
    branches = schema.get("anyOf")
    if branches:
        failures = [schema_findings(value, branch, path, structural=False) for branch in branches]
        if all(failures):
            closest = min(failures, key=len)[0]
            reason = f"matches none of anyOf's {len(branches)} schemas ({dotted(closest.path)}: {closest.reason})"
            findings.append(Finding(path, reason))
    branches = schema.get("oneOf")
    if branches:
        matched = sum(not schema_findings(value, branch, path, structural=False) for branch in branches)
        if matched != 1:
            findings.append(Finding(path, f"matches {matched} of oneOf's {len(branches)} schemas, must match exactly one"))
    if "not" in schema and not schema_findings(value, schema["not"], path, structural=False):
        findings.append(Finding(path, f"matches a schema it must not: {describe(schema['not'])}"))
    return findings


# --- formats and patterns -----------------------------------------------------------------------

def _is_base64(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _parses(parse: Any) -> Any:
    def check(text: str) -> bool:
        try:
            parse(text)
        except ValueError:
            return False
        return True

    return check


# The string formats the API server checks (kube-openapi's strfmt registry) that a render can get wrong,
# plus `quantity`, which controller-gen expresses as a pattern and some CRDs as a format.
_FORMATS = {
    "quantity": is_quantity,
    "byte": _is_base64,
    "date-time": lambda text: bool(_DATE_TIME.match(text)),
    "datetime": lambda text: bool(_DATE_TIME.match(text)),
    "uuid": lambda text: bool(_UUID.match(text)),
    "ipv4": _parses(ipaddress.IPv4Address),
    "ipv6": _parses(ipaddress.IPv6Address),
    "cidr": _parses(lambda text: ipaddress.ip_network(text, strict=False)),
}

_PATTERNS: dict[str, Any] = {}


def _compiled(pattern: str) -> Any:
    if pattern not in _PATTERNS:
        try:
            _PATTERNS[pattern] = _regex.compile(pattern)
        except Exception:  # re2 refuses what Go accepts only in rare corners; Python's re then decides
            _PATTERNS[pattern] = re.compile(pattern)
    return _PATTERNS[pattern]
