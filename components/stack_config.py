"""The stack's raw config map, as the Pulumi runtime hands it to the program.

`pulumi.Config` reads one key at a time; validation needs them all, unknown keys included, so this
reads the whole map: what the language host set, over the `PULUMI_CONFIG` environment the CLI passes.
"""

from __future__ import annotations

from typing import Any

from pulumi.runtime import config as runtime_config
from pulumi.runtime import settings
from pulumi.runtime.mocks import MockMonitor


def read_stack_config() -> dict[str, Any]:
    return {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}


def runs_under_mocks() -> bool:
    """Whether the program runs in the offline mock engine (offline/engine.py installs the SDK's
    MockMonitor through `pulumi.runtime.set_mocks`) rather than under a Pulumi CLI's resource monitor."""
    return isinstance(settings.get_monitor(), MockMonitor)
