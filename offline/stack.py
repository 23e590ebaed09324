"""A stack's config from `Pulumi.<stack>.yaml`, in the shape the Pulumi runtime hands a program.

The runtime gives the program a flat map of `namespace:key` to strings, structured values as JSON.
`secure:` values cannot be decrypted without the Pulumi CLI; offline they become a visible
placeholder, and their keys are marked secret as `pulumi up` would.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .engine import PROJECT, PROJECT_DIR

SECURE_PLACEHOLDER = "[secure value: decrypted by pulumi up]"


@dataclass(frozen=True)
class StackConfig:
    stack: str
    values: dict[str, str]
    secret_keys: list[str]


class StackNotFound(Exception):
    pass


def stack_names(project_dir: Path = PROJECT_DIR) -> list[str]:
    return sorted(path.name[len("Pulumi.") : -len(".yaml")] for path in project_dir.glob("Pulumi.*.yaml"))


def load_stack(stack: str, project_dir: Path = PROJECT_DIR) -> StackConfig:
    path = project_dir / f"Pulumi.{stack}.yaml"
    if not path.is_file():
        raise StackNotFound(f"no stack {stack!r}: {path.name} does not exist (stacks: {', '.join(stack_names(project_dir))})")
    document = yaml.safe_load(path.read_text()) or {}
    return stack_config_from_mapping(stack, document.get("config") or {})


def stack_config_from_mapping(stack: str, config: dict[str, Any]) -> StackConfig:
    """Flatten `config:` of a stack file: bare keys take the project's namespace, objects become JSON."""
    values: dict[str, str] = {}
    secret_keys: list[str] = []
    for key, value in config.items():
        full_key = key if ":" in key else f"{PROJECT}:{key}"
        value, has_secret = _replace_secure(value)
        if has_secret:
            secret_keys.append(full_key)
        values[full_key] = value if isinstance(value, str) else json.dumps(value)
    return StackConfig(stack=stack, values=values, secret_keys=sorted(secret_keys))


def _replace_secure(value: Any) -> tuple[Any, bool]:
    if isinstance(value, dict):
        if set(value) == {"secure"}:
            return SECURE_PLACEHOLDER, True
        items = {k: _replace_secure(v) for k, v in value.items()}
        return {k: v for k, (v, _) in items.items()}, any(secret for _, secret in items.values())
    if isinstance(value, list):
        replaced = [_replace_secure(v) for v in value]
        return [v for v, _ in replaced], any(secret for _, secret in replaced)
    return value, False
