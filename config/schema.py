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
    defs = {name: _allow_secrets(schema) for name, schema in top["$defs"].items()}
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
            # An optional section may be left empty (every entry commented out): YAML reads it as null.
            section = {"anyOf": [section, {"type": "null"}], "default": OPTIONAL_SECTIONS[name]}
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


def _allow_secrets(schema: Any) -> Any:
    """Wherever text is expected, a `{secure: ...}` value is allowed too."""
    if isinstance(schema, dict):
        walked = {key: _allow_secrets(value) for key, value in schema.items()}
        if walked.get("type") == "string":
            text = {key: value for key, value in walked.items() if key not in ("title", "description", "default")}
            kept = {key: value for key, value in walked.items() if key in ("title", "description", "default")}
            return {**kept, "anyOf": [text, {"$ref": "#/$defs/Secure"}]}
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
