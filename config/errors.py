"""Config mistakes as lines a platform engineer can act on.

Every problem is one line: the full key path as it is written in `Pulumi.<stack>.yaml`
(`gpu-platform:cluster.systemNodes.minSize`), the value found, and what is allowed. All problems
of a config are collected and reported together, so one run shows everything to fix.
"""

from __future__ import annotations

import difflib
import json
import re
import types
import typing
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml
from pydantic import BaseModel, RootModel, ValidationError
from pydantic_core import ErrorDetails

Loc = Sequence[str | int]


def key_path(root: str, loc: Loc, raw: Any = None) -> str:
    """`gpu-platform:cluster` + ("admins", 2, "arn") -> `gpu-platform:cluster.admins[2].arn`.

    With the raw section, an entry of a list of named things is named, not numbered:
    `gpu-platform:tenants[ml-research].gpu` rather than `gpu-platform:tenants[2].gpu`.
    """
    path = root
    for part in loc:
        if part == "[key]":
            continue  # pydantic's marker for "the key itself" of a mapping entry: the path already names it
        if isinstance(part, int):
            label = item_labels(raw)[part] if isinstance(raw, list) and 0 <= part < len(raw) else str(part)
            path += f"[{label}]"
        else:
            path += f".{part}"
        raw = _child(raw, part)
    return path


def item_labels(items: Sequence[Any]) -> list[str]:
    """How each entry of a list is written in a key path: its `name` when that names it alone, else its index."""
    names = [item.get("name") if isinstance(item, dict) else getattr(item, "name", None) for item in items]
    return [
        name if isinstance(name, str) and _PLAIN_NAME.match(name) and names.count(name) == 1 else str(index)
        for index, name in enumerate(names)
    ]


_PLAIN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$")


def _child(raw: Any, part: str | int) -> Any:
    if isinstance(part, int):
        return raw[part] if isinstance(raw, list) and 0 <= part < len(raw) else None
    return raw.get(part) if isinstance(raw, dict) else None


def show(value: Any) -> str:
    """A value as YAML writes it on one line (a string quoted, a list or mapping in flow style), short enough."""
    text = _yamlish(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _yamlish(value: Any, quoted: bool = True) -> str:
    """YAML flow style; `quoted` False: a string that reads the same unquoted is left plain (inside a list or map)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        if not quoted and _PLAIN.match(value) and yaml.safe_load(value) == value:
            return value
        if value.isprintable():
            return "'" + value.replace("'", "''") + "'"
        return json.dumps(value)  # YAML's double-quoted style, escapes and all
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_yamlish(item, quoted=False) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_yamlish(k, quoted=False)}: {_yamlish(v, quoted=False)}" for k, v in value.items()) + "}"
    return str(value)


_PLAIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/@+-]*$")


def counted(count: int, noun: str) -> str:
    """`1 problem`, `2 problems`: a count and its noun in the number it takes (plural by `s`)."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`; did you mean h100-on-demand?` for the closest of `known` names (difflib), or nothing."""
    guess = difflib.get_close_matches(name, sorted(known), n=1)
    return f"; did you mean {guess[0]}?" if guess else ""


def duplicates(values: Sequence[str]) -> list[str]:
    """The values that appear more than once, sorted: the names a "listed twice" error names."""
    return sorted({value for value in values if values.count(value) > 1})


class ConfigError(Exception):
    """The stack config is invalid; `problems` holds one line per mistake."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


@dataclass
class Problems:
    """Collects problems across the whole config before anything is declared."""

    lines: list[str] = field(default_factory=list)

    def add(self, path: str, message: str) -> None:
        self.lines.append(f"{path}: {message}")

    def add_validation_error(self, root: str, model: type[BaseModel], error: ValidationError, raw: Any = None) -> None:
        """One line per pydantic error; `raw`, the section as written, lets list entries be named."""
        for detail in error.errors(include_url=False):
            loc = tuple(detail["loc"])
            self.add(key_path(root, loc, raw), describe(model, detail))

    def raise_if_any(self) -> None:
        if self.lines:
            raise ConfigError(self.lines)

    def __bool__(self) -> bool:
        return bool(self.lines)


def describe(model: type[BaseModel], detail: ErrorDetails) -> str:
    """Turn one pydantic error into `value: what is wrong; what is allowed`."""
    kind = detail["type"]
    loc = tuple(detail["loc"])
    value = detail.get("input")
    ctx = detail.get("ctx") or {}
    if kind == "missing":
        field_info = _field_at(model, loc)
        hint = f" ({field_info.description})" if field_info is not None and field_info.description else ""
        return f"required but not set{hint}"
    if kind == "extra_forbidden":
        allowed = _allowed_keys(model, loc[:-1])
        return f"unknown key; allowed here: {', '.join(allowed)}" if allowed else "unknown key"
    if kind == "value_error":
        message = str(ctx.get("error", detail["msg"]))
        # A rule over a whole section (a model validator) names the rule, not the section's contents.
        return message if _model_at(model, loc) is not None else f"{show(value)} {message}"
    if kind in _BOUNDS:
        return f"{show(value)} is out of range; must be {_BOUNDS[kind]} {ctx.get(_BOUND_KEY[kind])}"
    if kind in ("too_short", "too_long"):
        bound = ctx.get("min_length") if kind == "too_short" else ctx.get("max_length")
        relation = "at least" if kind == "too_short" else "at most"
        return f"{show(value)} has {ctx.get('actual_length')} entries; must have {relation} {bound}"
    if kind == "string_too_short":
        if ctx.get("min_length") == 1:
            return f"{show(value)} is empty; give a value or leave the key out"
        return f"{show(value)} is too short; must have at least {ctx.get('min_length')} characters"
    if kind == "string_too_long":
        return f"{show(value)} is too long; must have at most {ctx.get('max_length')} characters"
    if kind == "literal_error":
        return f"{show(value)} is not allowed; expected one of {ctx.get('expected')}"
    if kind in _TYPES:
        return f"{show(value)} is not {_TYPES[kind]}"
    return f"{show(value)}: {detail['msg']}"


_BOUNDS = {
    "greater_than_equal": ">=",
    "greater_than": ">",
    "less_than_equal": "<=",
    "less_than": "<",
}
_BOUND_KEY = {"greater_than_equal": "ge", "greater_than": "gt", "less_than_equal": "le", "less_than": "lt"}
_TYPES = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "string_type": "a string",
    "list_type": "a list",
    "dict_type": "a mapping of keys to values",
    "model_type": "a mapping of keys to values",
    "model_attributes_type": "a mapping of keys to values",
}


# --- where in the models a location points --------------------------------------------------


def _field_at(model: type[BaseModel], loc: Loc):
    parent = _model_at(model, loc[:-1])
    if parent is None or not loc or not isinstance(loc[-1], str):
        return None
    for name, info in parent.model_fields.items():
        if (info.alias or name) == loc[-1]:
            return info
    return None


def _allowed_keys(model: type[BaseModel], loc: Loc) -> list[str]:
    parent = _model_at(model, loc)
    if parent is None:
        return []
    return [info.alias or name for name, info in parent.model_fields.items()]


def _model_at(model: type[BaseModel], loc: Loc) -> type[BaseModel] | None:
    """Follow a location through nested models, lists and mappings to the model it lands in."""
    current: Any = model
    for part in loc:
        current = _unwrap(current)
        if _is_model(current) and issubclass(current, RootModel):
            current = _unwrap(current.model_fields["root"].annotation)
        if isinstance(part, int) or not _is_model(current):
            args = typing.get_args(current)
            if not args:
                return None
            current = args[-1]  # list[X] -> X, dict[K, X] -> X
            continue
        match = [info for name, info in current.model_fields.items() if (info.alias or name) == part]
        if not match:
            # A mapping keyed by user names (dict[str, Model]) sits between two model levels.
            return None
        current = match[0].annotation
    current = _unwrap(current)
    if _is_model(current) and issubclass(current, RootModel):
        return None
    return current if _is_model(current) else None


def _unwrap(annotation: Any) -> Any:
    """Optional[X] / Annotated[X, ...] -> X."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            members = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
            if len(members) != 1:
                return annotation
            annotation = members[0]
        else:
            return annotation


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


