"""CEL as the API server evaluates it: CRD validation rules (`x-kubernetes-validations`), and the
expressions of admission policies (variables, validations, matchConditions), with cel-python.

CRD rules (kubernetes/kubernetes v1.35.0 staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/
schema/cel/validation.go `Validate`): each rule runs with `self` bound to the value at the rule's schema
node, for every such value present; the walk descends `properties`, `additionalProperties` and `items`.
cel-python implements standard CEL; of the Kubernetes CEL libraries (staging/src/k8s.io/apiserver/
pkg/cel/library: regex.go, and cel-go ext/strings.go) this module adds the functions the vendored CRDs
call: `find`, `findAll` and `split`. A rule that calls any other library function (quantity(),
isQuantity(), url, ip, ...) is not evaluated and is counted as such, never passed or failed.
Transition rules (those that read `oldSelf`) only run on update and are skipped.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from enum import Enum
from typing import Any, NamedTuple

import celpy
from celpy import celtypes
from celpy.evaluation import CELEvalError, CELFunction

FieldPath = tuple[str | int, ...]
Schema = Mapping[str, Any]


class Finding(NamedTuple):
    """A problem with the value at `path` (keys and list indexes)."""

    path: FieldPath
    reason: str


def field_schema(schema: Schema | None, key: str) -> Schema | None:
    """The schema of a map's value at `key`: a named property, else `additionalProperties`."""
    if not schema:
        return None
    properties = schema.get("properties") or {}
    if key in properties:
        return properties[key]
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, Mapping) else None


_TRANSITION = re.compile(r"\boldSelf\b")
# A CEL runtime error the API server also raises: the rule read a field the object does not set.
_MISSING_FIELD = re.compile(r"no such (member|key)")
_ENVIRONMENT = celpy.Environment()


def _find(text: Any, pattern: Any) -> celtypes.StringType:
    """`<string>.find(<regex>)`: the first match, or "" (kubernetes/apiserver pkg/cel/library/regex.go)."""
    match = re.search(str(pattern), str(text))
    return celtypes.StringType(match.group(0) if match else "")


def _find_all(text: Any, pattern: Any, limit: Any = None) -> celtypes.ListType:
    """`<string>.findAll(<regex>[, <limit>])`: every match, at most `limit` when it is not negative."""
    matches = [m.group(0) for m in re.finditer(str(pattern), str(text))]
    if limit is not None and int(limit) >= 0:
        matches = matches[: int(limit)]
    return celtypes.ListType([celtypes.StringType(m) for m in matches])


def _split(text: Any, separator: Any, limit: Any = None) -> celtypes.ListType:
    """`<string>.split(<sep>[, <n>])` of cel-go's strings extension: n < 0 all parts, 0 none, n at most n."""
    if limit is None or int(limit) < 0:
        parts = str(text).split(str(separator))
    elif int(limit) == 0:
        parts = []
    else:
        parts = str(text).split(str(separator), int(limit) - 1)
    return celtypes.ListType([celtypes.StringType(p) for p in parts])


_LIBRARY: dict[str, CELFunction] = {"find": _find, "findAll": _find_all, "split": _split}


class Verdict(Enum):
    PASSED = "passed"
    FAILED = "failed"
    ERRORED = "errored"  # the API server rejects the object with the evaluation error
    NOT_EVALUATED = "not evaluated"


class Outcome(NamedTuple):
    verdict: Verdict
    detail: str = ""


class CelResult(NamedTuple):
    findings: list[Finding]
    not_evaluated: list[str]  # rule texts, once per value they apply to


def cel_findings(value: Any, schema: Schema | None, path: FieldPath = ()) -> CelResult:
    """Every rule of `schema` and its fields against `value` (defaults applied); transition rules skipped."""
    result = CelResult([], [])
    _walk(value, schema, path, result)
    return result


def _walk(value: Any, schema: Schema | None, path: FieldPath, result: CelResult) -> None:
    if value is None or not schema:
        return
    rules = [r for r in schema.get("x-kubernetes-validations") or () if not _TRANSITION.search(r.get("rule", ""))]
    if rules:
        # Objects repeat values (the same requirements in every pool): evaluate each rule once per value.
        value_key = json.dumps(value, sort_keys=True)
        for rule in rules:
            _record(rule, _evaluate_once(rule["rule"], value_key), path, result)
    if isinstance(value, dict):
        for key, item in value.items():
            _walk(item, field_schema(schema, key), (*path, key), result)
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(value):
            _walk(item, schema["items"], (*path, index), result)


def _record(rule: Mapping[str, Any], outcome: Outcome, path: FieldPath, result: CelResult) -> None:
    text = rule["rule"]
    where = (*path, *_field_path(rule.get("fieldPath", "")))
    if outcome.verdict is Verdict.FAILED:
        message = rule.get("message")
        reason = f"{message} (rule: {text})" if message else f"failed rule: {text}"
        result.findings.append(Finding(where, reason))
    elif outcome.verdict is Verdict.ERRORED:
        reason = f"rule fails to evaluate ({outcome.detail}), so the API server rejects the object (rule: {text})"
        result.findings.append(Finding(where, reason))
    elif outcome.verdict is Verdict.NOT_EVALUATED:
        result.not_evaluated.append(text)


def _field_path(field_path: str) -> tuple[str, ...]:
    """`fieldPath: .spec.limits` -> ("spec", "limits"); bracketed forms are left to the rule's own path."""
    if not field_path.startswith(".") or "[" in field_path:
        return ()
    return tuple(part for part in field_path.split(".") if part)


def evaluate(rule: str, bound_self: Any) -> Outcome:
    """One rule with `self` bound (a cel-python value, from `celpy.json_to_cel`)."""
    program = _program(rule)
    if program is None:
        return Outcome(Verdict.NOT_EVALUATED, "cel-python cannot compile it")
    try:
        value = program.evaluate({"self": bound_self})
    except Exception as err:  # cel-python raises its evaluation errors as often as it returns them
        value = err
    if isinstance(value, bool):  # celpy's BoolType subclasses int, not bool: compare through int
        return Outcome(Verdict.PASSED if value else Verdict.FAILED)
    if isinstance(value, celpy.celtypes.BoolType):
        return Outcome(Verdict.PASSED if int(value) else Verdict.FAILED)
    if isinstance(value, (CELEvalError, Exception)):
        # celpy appends its whole activation to "undeclared reference"; the first clause names the function.
        detail = str(value.args[0] if value.args else value).split(" (in activation")[0]
        if _MISSING_FIELD.search(detail):
            return Outcome(Verdict.ERRORED, detail)
        return Outcome(Verdict.NOT_EVALUATED, detail)
    return Outcome(Verdict.NOT_EVALUATED, f"evaluates to {type(value).__name__}, not a boolean")


_CEL_VALUES = (celtypes.MapType, celtypes.ListType, celtypes.BoolType, celtypes.StringType, celtypes.IntType)


def bind(activation: Mapping[str, Any]) -> dict[str, Any]:
    """Named values as CEL values; converting a request's once spares every expression of its policies the work.

    A map of values that are CEL values already (a policy's `variables`) keeps them as they are: converting it as
    JSON would read a BoolType (an int subclass in celpy) as an int, which a condition `?:` then refuses."""
    return {name: _bound(value) for name, value in activation.items()}


def _bound(value: Any) -> Any:
    if isinstance(value, _CEL_VALUES):
        return value
    if isinstance(value, dict) and any(isinstance(v, _CEL_VALUES) for v in value.values()):
        return celtypes.MapType({celtypes.StringType(k): _bound(v) for k, v in value.items()})
    return celpy.json_to_cel(value)


def evaluate_in(expression: str, activation: Mapping[str, Any]) -> Any:
    """One expression against named values (JSON-like Python values, or results of earlier calls), as an
    admission policy's `variables` and `validations` are evaluated: the raw CEL result, or the error raised.

    Raises ValueError when cel-python cannot compile the expression, so a caller never mistakes that for a verdict.
    """
    program = _program(expression)
    if program is None:
        raise ValueError(f"cel-python cannot compile: {expression}")
    bound = bind(activation)
    try:
        return program.evaluate(bound)
    except Exception as err:  # cel-python raises its evaluation errors as often as it returns them
        return err


@functools.lru_cache(maxsize=4096)
def _evaluate_once(rule: str, value_json: str) -> Outcome:
    return evaluate(rule, celpy.json_to_cel(json.loads(value_json)))


@functools.cache
def _program(rule: str) -> Any:
    try:
        return _ENVIRONMENT.program(_ENVIRONMENT.compile(rule), functions=_LIBRARY)
    except Exception:  # a grammar cel-python lacks; the rule counts as not evaluated
        return None
