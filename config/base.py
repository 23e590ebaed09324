"""The base every config model shares: camelCase keys, unknown keys rejected, immutable."""

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class ConfigModel(BaseModel):
    """A section of the stack config.

    Keys are camelCase in `Pulumi.<stack>.yaml` and snake_case in Python. A key the model does not
    know is an error (a typo must never silently fall back to a default), and a parsed config is
    frozen: components read it, nothing writes it. Types are strict: `gpus: true` is not 1 and
    `cpu: "8"` is not 8; a value of the wrong type is a mistake, not something to convert.
    """

    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=False,
        frozen=True,
        validate_default=True,
        strict=True,
    )
