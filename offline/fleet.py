"""A fleet offline: a manager's check reads its workers' stack files, its render renders them first.

`python -m offline check --stack <manager>` refuses a fleet whose stacks disagree (config/fleet.py
`fleet_problems`); a worker's check refuses a manager that does not list it. `python -m offline render`
of a manager renders each worker with the same mock engine and answers the manager's StackReferences
with their outputs, so the render needs no cloud and is the same bytes every time.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from config import ConfigError, PlatformConfig
from config.fleet import KEY, FleetConfig, Quotas, fleet_problems, stack_reference_name, tenant_quotas
from config.regions import partition_of

from .project import PROJECT_DIR
from .stack import StackNotFound, load_config, load_stack, stack_config_from_text


def fleet_check(stack: str, config: PlatformConfig, project_dir: Path = PROJECT_DIR) -> list[str]:
    """One line per way this stack's fleet is unsound; [] outside a fleet or for a sound one."""
    fleet = config.fleet
    if fleet.role == "worker":
        assert fleet.manager is not None
        where = f"Pulumi.{stack}.yaml: {KEY}.manager"
        try:
            manager = load_config(load_stack(fleet.manager, project_dir))
        except StackNotFound:
            return [f"{where}: no stack {fleet.manager!r} (Pulumi.{fleet.manager}.yaml does not exist)"]
        except ConfigError:
            return [f"{where}: Pulumi.{fleet.manager}.yaml is invalid (`python -m offline check --stack {fleet.manager}` "
                    "says why)"]
        if stack not in manager.fleet.workers:
            return [f"Pulumi.{stack}.yaml: {KEY}.manager: {fleet.manager} does not list {stack} in its {KEY}.workers"]
        return []
    if fleet.role != "manager":
        return []
    workers: dict[str, tuple[FleetConfig, str, Quotas]] = {}
    unloadable = []
    for name in fleet.workers:
        try:
            worker = load_config(load_stack(name, project_dir))
        except StackNotFound:
            continue
        except ConfigError:
            unloadable.append(f"Pulumi.{stack}.yaml: {KEY}.workers[{name}]: Pulumi.{name}.yaml is invalid "
                              f"(`python -m offline check --stack {name}` says why)")
            continue
        workers[name] = (worker.fleet, partition_of(worker.region), tenant_quotas(worker.tenants))
    return unloadable + fleet_problems(
        stack, fleet, partition_of(config.region), tenant_quotas(config.tenants), workers
    )


def referenced_outputs(values: Mapping[str, str], project_dir: Path = PROJECT_DIR) -> dict[str, dict[str, Any]]:
    """A manager's workers rendered, in its order: StackReference name -> outputs; {} for any other stack.

    Read from the flat config map the engine gets, so every render of a manager (the CLI's, a test's, the
    diff's) resolves its references the same way. A worker's outputs are kept for the process, keyed by
    its stack file's bytes: a second render of the manager renders no worker again.
    """
    try:
        fleet = json.loads(values.get(KEY, "{}"))
    except json.JSONDecodeError:
        return {}
    if not isinstance(fleet, dict) or fleet.get("role") != "manager":
        return {}
    outputs = {}
    for name in fleet.get("workers") or []:
        path = project_dir / f"Pulumi.{name}.yaml"
        outputs[stack_reference_name(name)] = dict(_worker_outputs(name, path.read_bytes(), path.name))
    return outputs


@functools.cache
def _worker_outputs(stack: str, data: bytes, filename: str) -> Mapping[str, Any]:
    from .engine import run_program

    worker = stack_config_from_text(stack, data, filename)
    return MappingProxyType(run_program(stack, worker.values, worker.secret_keys, stack_outputs={}).outputs)
