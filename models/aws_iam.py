"""IAM policies as AWS evaluates them: role trust policies for an AssumeRole, and identity policies (below).

AWS IAM User Guide, "Policy evaluation logic" and "IAM JSON policy elements: Condition operators": an
Allow statement applies when its principal names the caller and every condition block holds; within a
block every key must match (`StringEquals`: exact, `ArnLike`: `*` and `?` wildcards); a key the request
does not carry fails the condition. Only the operators the platform writes are modelled: a statement
with any other operator never allows, so an unmodelled condition cannot pass by accident.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from typing import Any


def trust_allows(policy: Mapping[str, Any], service: str, context: Mapping[str, str]) -> bool:
    """Whether `service` may assume the role for a request carrying `context` (condition key -> value)."""
    for statement in policy["Statement"]:
        if statement["Effect"] != "Allow" or statement["Principal"].get("Service") != service:
            continue
        conditions = statement.get("Condition", {})
        equal = all(context.get(k) == v for k, v in conditions.get("StringEquals", {}).items())
        like = all(fnmatch.fnmatchcase(context.get(k, ""), v) for k, v in conditions.get("ArnLike", {}).items())
        if equal and like and set(conditions) <= {"StringEquals", "ArnLike"}:
            return True
    return False


# Identity policies (a role's inline or managed policies), as IAM evaluates one request against them
# (IAM User Guide, "Policy evaluation logic"; "IAM JSON policy elements: Action, Resource, Condition";
# "Condition operators"): an explicit Deny wins, else any Allow, else the implicit deny. A statement
# matches when one of its actions matches the request's (case-insensitive, `*` and `?` wildcards), one
# of its resources matches (wildcards, case-sensitive) and every condition block holds: within a block
# every key holds, a key holds when the request's value matches any of the listed values, and a key the
# request does not carry fails. Modelled operators: StringEquals, StringLike, ArnEquals, ArnLike; a
# statement with any other operator never matches, so an unmodelled condition cannot allow by accident.
_STRING_OPERATORS = {
    "StringEquals": lambda value, pattern: value == pattern,
    "StringLike": fnmatch.fnmatchcase,
    "ArnEquals": lambda value, pattern: value == pattern,
    "ArnLike": fnmatch.fnmatchcase,
}


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _statement_matches(statement: Mapping[str, Any], action: str, resource: str, context: Mapping[str, str]) -> bool:
    if not any(fnmatch.fnmatchcase(action.lower(), a.lower()) for a in _listed(statement["Action"])):
        return False
    if not any(fnmatch.fnmatchcase(resource, r) for r in _listed(statement["Resource"])):
        return False
    for operator, block in statement.get("Condition", {}).items():
        test = _STRING_OPERATORS.get(operator)
        if test is None:
            return False
        for key, patterns in block.items():
            if key not in context or not any(test(context[key], p) for p in _listed(patterns)):
                return False
    return True


def identity_allows(policy: Mapping[str, Any], action: str, resource: str, context: Mapping[str, str]) -> bool:
    """Whether `policy` lets its principal do `action` on `resource` for a request carrying `context`."""
    matching = [s for s in policy["Statement"] if _statement_matches(s, action, resource, context)]
    return not any(s["Effect"] == "Deny" for s in matching) and any(s["Effect"] == "Allow" for s in matching)
