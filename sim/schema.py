"""The JSON Schema of workload files (`schema/workload.schema.json`), generated from sim/workload.py's models.

`python -m sim.schema` prints it, `python -m sim.schema --write PATH` writes it (`make schema`); a test
keeps the committed file equal to what the models generate. Each workload file names it in its first
line (`# yaml-language-server: $schema=../schema/workload.schema.json`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from .workload import Workload


def workload_schema() -> dict[str, Any]:
    schema = Workload.model_json_schema(by_alias=True, mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "gpu-platform workload file",
        "description": "Generated from sim/workload.py by `make schema`; do not edit.",
        **{key: value for key, value in schema.items() if key not in ("title", "description")},
    }


def schema_json() -> str:
    return json.dumps(workload_schema(), indent=2) + "\n"


if __name__ == "__main__":
    if sys.argv[1:2] == ["--write"]:
        Path(sys.argv[2]).write_text(schema_json())
    else:
        sys.stdout.write(schema_json())
