"""A JSON Schema for `Pulumi.<stack>.yaml`, generated from the config models.

Editors that speak the YAML language server complete and check keys with it: each stack file names
it in its first line (`# yaml-language-server: $schema=schema/pulumi-stack.schema.json`).
`python -m config.schema` prints it, `python -m config.schema --write PATH` writes it (`make
schema`); a test keeps the committed file equal to what the models generate.

The schema is the editor's first check, not the only one: rules across keys (quotas against pools,
names two objects would share) are `make check`'s. A value may always be a Pulumi secret
(`{secure: <ciphertext>}`) in place of text.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from pydantic.json_schema import models_json_schema

from .platform import CONFIG_NAMESPACE, OPTIONAL_SECTIONS, PROVIDER_NAMESPACES, REGION_KEY, SECTIONS
from .regions import AVAILABILITY_ZONES
from .schema_rules import STRING_RULES

SCHEMA_PATH = "schema/pulumi-stack.schema.json"
# Pulumi's own stack-file keys beside `config:` (pulumi/pulumi sdk/go/common/workspace/project.go ProjectStack).
STACK_FILE_KEYS = {
    "secretsprovider": {"type": "string", "description": "How this stack's secrets are encrypted (set by Pulumi)."},
    "encryptedkey": {"type": "string", "description": "The stack's data key, encrypted (set by Pulumi)."},
    "encryptionsalt": {"type": "string", "description": "Salt of the passphrase secrets provider (set by Pulumi)."},
    "environment": {"description": "Pulumi ESC environments this stack imports."},
}
SECURE = {
    "type": "object",
    "description": "A Pulumi secret: ciphertext written by `pulumi config set --secret --path <key> <value>`.",
    "properties": {"secure": {"type": "string", "pattern": "^[A-Za-z0-9+/=:_-]+$"}},
    "required": ["secure"],
    "additionalProperties": False,
}


def stack_schema() -> dict[str, Any]:
    _, top = models_json_schema(
        [(model, "validation") for model in SECTIONS.values()], by_alias=True, ref_template="#/$defs/{model}"
    )
    defs = top["$defs"]
    for rule in STRING_RULES:
        rule.apply(defs)
    defs = {name: _allow_secrets(_nullable_in_place(schema, defs)) for name, schema in defs.items()}
    defs["Secure"] = SECURE
    sections: dict[str, Any] = {
        REGION_KEY: {
            "type": "string",
            "enum": sorted(AVAILABILITY_ZONES),
            "description": "AWS region; one of the rows in config/regions.py.",
        }
    }
    for name, model in SECTIONS.items():
        section: dict[str, Any] = {"$ref": f"#/$defs/{model.__name__}"}
        if name in OPTIONAL_SECTIONS:
            # An optional section may be left empty (every entry commented out): YAML reads it as null. Its
            # definition takes null beside its own type (no anyOf), so an error inside it keeps its position.
            defs[model.__name__] = _or_null(defs[model.__name__])
            section["default"] = OPTIONAL_SECTIONS[name]
        sections[f"{CONFIG_NAMESPACE}:{name}"] = section
    providers = "|".join(PROVIDER_NAMESPACES)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"Pulumi.<stack>.yaml of {CONFIG_NAMESPACE}",
        "description": "Generated from the config models by `make schema`; do not edit.",
        "type": "object",
        "properties": {
            "config": {
                "type": "object",
                "properties": sections,
                "required": [f"{CONFIG_NAMESPACE}:cluster", REGION_KEY],
                # Provider settings are the providers' to check; any other namespace is a typo.
                "patternProperties": {f"^({providers}):": {}},
                "additionalProperties": False,
            },
            **STACK_FILE_KEYS,
        },
        "required": ["config"],
        "additionalProperties": False,
        "$defs": dict(sorted(defs.items())),
    }


def _or_null(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    result = {**schema, "type": [*kinds, "null"] if "null" not in kinds else kinds}
    if "enum" in result and None not in result["enum"]:
        result["enum"] = [*result["enum"], None]
    return result


def _nullable_in_place(schema: Any, defs: dict[str, Any]) -> Any:
    """`anyOf: [X, {type: null}]` (pydantic's `X | None`) -> X with `null` among its types.

    A validator reports a mistake inside an anyOf as "not valid under any of the given schemas" at the
    anyOf's position; with the types merged it reports the mistake itself, where it is. A `$ref` is
    inlined, since a reference cannot take a second type.
    """
    if isinstance(schema, list):
        return [_nullable_in_place(item, defs) for item in schema]
    if not isinstance(schema, dict):
        return schema
    walked = {key: _nullable_in_place(value, defs) for key, value in schema.items()}
    options = walked.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
        [other] = [option for option in options if option != {"type": "null"}]
        if "$ref" in other:
            other = {**_nullable_in_place(defs[other["$ref"].rsplit("/", 1)[-1]], defs)}
        if "type" in other:
            rest = {key: value for key, value in walked.items() if key != "anyOf"}
            return {**rest, **_or_null(other), **{k: v for k, v in rest.items() if k in ("title", "description", "default")}}
    return walked


def _allow_secrets(schema: Any) -> Any:
    """Wherever free text is expected, a `{secure: ...}` value is allowed too.

    The string's own keywords (`pattern`, `minLength`) apply only to strings and the secret's (`properties`,
    `required`) only to objects, so one schema takes both without an anyOf. A string with an `enum` takes no
    secret: the offline check sees a secret as text that is in no enum.
    """
    if isinstance(schema, dict):
        walked = {key: _allow_secrets(value) for key, value in schema.items()}
        kind = walked.get("type")
        kinds = kind if isinstance(kind, list) else [kind]
        if "string" in kinds and "enum" not in walked:
            secure = {key: SECURE[key] for key in ("properties", "required", "additionalProperties")}
            return {**walked, "type": [*kinds, "object"], **secure}
        return walked
    if isinstance(schema, list):
        return [_allow_secrets(item) for item in schema]
    return schema


def schema_json() -> str:
    return json.dumps(stack_schema(), indent=2, sort_keys=False) + "\n"


if __name__ == "__main__":
    if sys.argv[1:2] == ["--write"]:
        with open(sys.argv[2], "w", encoding="utf-8") as handle:
            handle.write(schema_json())
    else:
        sys.stdout.write(schema_json())
