"""IAM role trust policies as STS evaluates an AssumeRole for a service principal.

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
