"""IAM policies as AWS evaluates them: a role's trust policy for a service principal, and an identity
policy for one request.

AWS IAM User Guide, "Policy evaluation logic" and "IAM JSON policy elements: Condition operators": an
Allow statement applies when its principal names the caller and every condition block holds; within a
block every key must match (`StringEquals`: exact, `ArnLike`: `*` and `?` wildcards); a key the request
does not carry fails the condition. Only the operators the platform writes are modelled: a statement
with any other operator never allows, so an unmodelled condition cannot pass by accident.

Identity policies ("Policy evaluation logic"): an explicit Deny wins, then any Allow, else the implicit
deny. "IAM JSON policy elements: Resource" and "Condition operators": `*` matches any run of characters
and `?` one, `/` included, and nothing else is special; ARNs and S3 object keys compare case-sensitively.
`NotResource` names every resource but those it lists. `StringLike` with a list of values holds when
any value matches (a condition key with several values is ORed); a key the request does not carry
fails it. S3 (Amazon S3 User Guide, "Condition keys for Amazon
S3", `s3:prefix`): ListBucket carries `s3:prefix` only when the request names a prefix, exactly as sent;
S3 then returns every key that starts with it, so a prefix without the tenant's trailing slash (`ml`)
lists another tenant's keys (`mlops/...`) too.
"""

from __future__ import annotations

import fnmatch
import re
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
# (IAM User Guide, "Policy evaluation logic"; "IAM JSON policy elements: Action, Resource, NotResource,
# Condition"; "Condition operators"): an explicit Deny wins, else any Allow, else the implicit deny. A
# statement matches when one of its actions matches the request's (case-insensitive), its resources name
# the request's (`NotResource`: every resource but those it lists) and every condition block holds:
# within a block every key holds, a key holds when the request's value matches any of the listed values,
# and a key the request does not carry fails. Modelled operators: StringEquals, StringLike, ArnEquals,
# ArnLike; a statement with any other operator is refused, so an unmodelled condition cannot allow by
# accident.
def wildcard_match(pattern: str, value: str) -> bool:
    """IAM's `*` and `?` wildcards, case-sensitive; every other character stands for itself."""
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, value, flags=re.DOTALL) is not None


_OPERATORS = {
    "StringEquals": lambda value, pattern: value == pattern,
    "StringLike": lambda value, pattern: wildcard_match(pattern, value),
    "ArnEquals": lambda value, pattern: value == pattern,
    "ArnLike": lambda value, pattern: wildcard_match(pattern, value),
}


def _listed(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def _conditions_hold(conditions: Mapping[str, Mapping[str, Any]], context: Mapping[str, str]) -> bool:
    for operator, keys in conditions.items():
        test = _OPERATORS.get(operator)
        if test is None:
            raise ValueError(f"condition operator {operator} is not modelled")
        for key, wanted in keys.items():
            if key not in context or not any(test(context[key], pattern) for pattern in _listed(wanted)):
                return False
    return True


def _applies(statement: Mapping[str, Any], action: str, resource: str, context: Mapping[str, str]) -> bool:
    """An action matches case-insensitively; `NotResource` matches every resource it does not list."""
    if "Resource" in statement:
        named = any(wildcard_match(r, resource) for r in _listed(statement["Resource"]))
    else:
        named = not any(wildcard_match(r, resource) for r in _listed(statement["NotResource"]))
    return (
        any(wildcard_match(a.lower(), action.lower()) for a in _listed(statement["Action"]))
        and named
        and _conditions_hold(statement.get("Condition", {}), context)
    )


def identity_allows(
    policy: Mapping[str, Any], action: str, resource: str, context: Mapping[str, str] | None = None
) -> bool:
    """Whether an identity policy allows `action` on `resource` for a request carrying `context`."""
    request = context or {}
    statements = policy["Statement"]
    if any(s["Effect"] == "Deny" and _applies(s, action, resource, request) for s in statements):
        return False
    return any(s["Effect"] == "Allow" and _applies(s, action, resource, request) for s in statements)
