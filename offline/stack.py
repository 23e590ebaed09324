"""A stack's config from `Pulumi.<stack>.yaml`, in the shape the Pulumi runtime hands a program.

The runtime gives the program a flat map of `namespace:key` to strings, structured values as JSON.
`secure:` values cannot be decrypted without the Pulumi CLI; offline they become a visible
placeholder, and their keys are marked secret as `pulumi up` would.

Reading the file is strict where YAML is lenient, because each leniency silently changes a config:
a key written twice keeps only its last block, `on:` is the boolean true, `2026-01-01` is a date.
Every such mistake is one line of a `ConfigError` (exit 2), never a traceback, and the lines of
the file are reported together with the config's own problems.

No Pulumi here: `python -m offline check` reads a stack through this module alone
(tests/test_stack_file.py runs it and looks).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from config import ConfigError, PlatformConfig, load_platform_config
from config.errors import item_labels, show
from config.schema import STACK_FILE_KEYS

from .project import PROJECT, PROJECT_DIR

SECURE_PLACEHOLDER = "[secure value: decrypted by pulumi up]"
# What `pulumi config set --secret` writes: base64 ciphertext, `v1:<nonce>:<ciphertext>` for the
# passphrase provider (pulumi/pulumi sdk/go/common/resource/config/crypt.go).
_CIPHERTEXT = re.compile(r"^[A-Za-z0-9+/=:_-]+$")


@dataclass(frozen=True)
class StackConfig:
    stack: str
    values: dict[str, str]
    secret_keys: list[str]
    # Mistakes in the file itself (keys that are not strings, malformed secure values), one line each.
    problems: tuple[str, ...] = field(default=())


class StackNotFound(Exception):
    pass


def stack_names(project_dir: Path = PROJECT_DIR) -> list[str]:
    return sorted(path.name[len("Pulumi.") : -len(".yaml")] for path in project_dir.glob("Pulumi.*.yaml"))


def load_stack(stack: str, project_dir: Path = PROJECT_DIR) -> StackConfig:
    """Read `Pulumi.<stack>.yaml`; raise `ConfigError` when it is not a YAML mapping with a `config:` mapping."""
    path = project_dir / f"Pulumi.{stack}.yaml"
    if not path.is_file():
        raise StackNotFound(f"no stack {show(stack)}: {path.name} does not exist (stacks: {', '.join(stack_names(project_dir))})")
    return stack_config_from_text(stack, path.read_bytes(), path.name)


def stack_config_from_text(stack: str, data: bytes, filename: str) -> StackConfig:
    """A stack file's bytes -> its config; every mistake that stops the file being read is one line."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise ConfigError([
            f"{filename}:{line}: byte 0x{data[err.start]:02x} is not UTF-8; save the file as UTF-8"
        ]) from None
    try:
        document = yaml.load(text, Loader=StrictLoader)
    except yaml.YAMLError as err:
        raise ConfigError([_yaml_problem(filename, err)]) from None
    if document is None:
        document = {}
    if not isinstance(document, dict):
        raise ConfigError([
            f"{filename}: the file is {_kind(document)}; a stack file is a mapping with a `config:` key "
            "(see Pulumi.dev.yaml)"
        ])
    unknown = [key for key in document if key != "config" and key not in STACK_FILE_KEYS]
    if unknown:
        # A misspelt `config:` would otherwise read as a stack with no config at all.
        raise ConfigError([
            f"{filename}: {key}: unknown top-level key; "
            f"{_did_you_mean(str(key))}a stack file holds `config:` and Pulumi's own {', '.join(STACK_FILE_KEYS)}"
            for key in unknown
        ])
    config = document.get("config")
    if config is None:
        config = {}
    if not isinstance(config, dict):
        raise ConfigError([
            f"{filename}: config: is {_kind(config)}; it is a mapping of `namespace:key` to values, "
            "e.g. `gpu-platform:cluster: {...}`"
        ])
    return stack_config_from_mapping(stack, config)


def _did_you_mean(key: str) -> str:
    guess = difflib.get_close_matches(key, ["config", *STACK_FILE_KEYS], n=1)
    return f"did you mean {guess[0]}? " if guess else ""


def stack_config_from_mapping(stack: str, config: dict[Any, Any]) -> StackConfig:
    """Flatten `config:` of a stack file: bare keys take the project's namespace, objects become JSON."""
    values: dict[str, str] = {}
    secret_keys: list[str] = []
    problems: list[str] = []
    for key, value in config.items():
        if not isinstance(key, str):
            problems.append(_key_problem("config", key))
            continue
        full_key = key if ":" in key else f"{PROJECT}:{key}"
        value, has_secret = _clean(value, full_key, full_key, problems)
        if has_secret:
            secret_keys.append(full_key)
        values[full_key] = value if isinstance(value, str) else json.dumps(value)
    return StackConfig(stack=stack, values=values, secret_keys=sorted(secret_keys), problems=tuple(problems))


def load_config(stack: StackConfig) -> PlatformConfig:
    """The stack's validated config; raise `ConfigError` with the file's problems and the config's together."""
    try:
        config = load_platform_config(stack.values)
    except ConfigError as err:
        raise ConfigError([*stack.problems, *err.problems]) from None
    if stack.problems:
        raise ConfigError(stack.problems)
    return config


def _clean(value: Any, path: str, set_path: str, problems: list[str]) -> tuple[Any, bool]:
    """Replace secure values by the placeholder, drop (and report) keys that are not strings.

    `path` names list entries by their names, as every problem does; `set_path` is the same key in the
    indexed form `pulumi config set --path` takes.
    """
    if isinstance(value, dict):
        if "secure" in value:
            return _secure(value, path, set_path, problems), True
        cleaned: dict[str, Any] = {}
        secret = False
        for key, item in value.items():
            if not isinstance(key, str):
                problems.append(_key_problem(path, key))
                continue
            cleaned[key], has_secret = _clean(item, f"{path}.{key}", f"{set_path}.{key}", problems)
            secret = secret or has_secret
        return cleaned, secret
    if isinstance(value, list):
        labels = item_labels(value)
        items = [
            _clean(item, f"{path}[{labels[index]}]", f"{set_path}[{index}]", problems) for index, item in enumerate(value)
        ]
        return [item for item, _ in items], any(secret for _, secret in items)
    return value, False


def _secure(value: dict[Any, Any], path: str, set_path: str, problems: list[str]) -> str:
    ciphertext = value["secure"]
    if set(value) != {"secure"}:
        others = ", ".join(sorted(str(key) for key in value if key != "secure"))
        problems.append(f"{path}: a secure value is a mapping with the one key `secure`, found also {others}; "
                        f"set it with `pulumi config set --secret --path {set_path} <value>`")
    elif not isinstance(ciphertext, str) or not ciphertext or not _CIPHERTEXT.match(ciphertext):
        problems.append(f"{path}.secure: {show(ciphertext)} is not ciphertext from `pulumi config set --secret`; "
                        f"set it again with `pulumi config set --secret --path {set_path} <value>`")
    return SECURE_PLACEHOLDER


def _key_problem(path: str, key: Any) -> str:
    if isinstance(key, bool):
        why = (f"key {show(key)} is a YAML boolean (YAML reads on, off, yes and no as booleans); keys are strings: "
               f"quote it: \"{'on' if key else 'off'}\":")
    elif isinstance(key, Hashable) and not isinstance(key, tuple):
        why = f"key {show(key)} is {_kind(key)}; keys are strings: quote it"
    else:
        why = "a key is not a string; keys are strings"
    return f"{path}: {why}"


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "plain text"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"a {type(value).__name__}"


def _yaml_problem(filename: str, err: yaml.YAMLError) -> str:
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    where = f"{filename}:{mark.line + 1}:{mark.column + 1}" if mark is not None else filename
    problem = getattr(err, "problem", None) or str(err)
    context = getattr(err, "context", None)
    message = f"{context}, {problem}" if context else str(problem)
    if "'\\t'" in message:
        message += " (YAML indents with spaces, never tabs)"
    if "could not determine a constructor" in message:
        message += " (a stack file holds plain values: remove the tag)"
    return f"{where}: not valid YAML: {message}"


class StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader without its two silent rewrites: a repeated key and a date."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, Hashable) and key in seen:
                first = seen[key].start_mark.line + 1
                raise yaml.constructor.ConstructorError(
                    None, None,
                    f"key {show(key)} appears twice in one mapping (first on line {first}); YAML would keep only "
                    "the last one: merge the two",
                    key_node.start_mark,
                )
            if isinstance(key, Hashable):
                seen[key] = key_node
        return super().construct_mapping(node, deep=deep)


# Dates stay text, as they were written; the key's own check then says what it expects.
StrictLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
