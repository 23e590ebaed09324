"""The one mock engine: runs the real program in-process and records what it declares.

Tests and the offline render both go through `run_program`. It resets the SDK's per-run state by
running in a fresh `contextvars.Context`, installs a recording monitor, feeds the stack config, runs
`__main__.py` and waits for every registration to finish.
"""

from __future__ import annotations

import contextvars
import gc
import runpy
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
from pulumi.runtime import known_types, rpc
from pulumi.runtime import mocks as sdk_mocks
from pulumi.runtime import resource as sdk_resource
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from .cloud import Account, CloudMocks
from .project import PROJECT, PROJECT_DIR

ROOT_STACK_TYPE = "pulumi:pulumi:Stack"
SECRET = "[secret]"


@dataclass(frozen=True)
class RecordedResource:
    """One registration as the engine saw it: identity, wiring and inputs (secrets redacted)."""

    urn: str
    type: str
    name: str
    custom: bool
    parent: str
    provider: str
    dependencies: tuple[str, ...]
    property_dependencies: dict[str, tuple[str, ...]]
    inputs: dict[str, Any]
    protect: bool
    # The other options that change how the engine deploys or destroys the resource, as registered.
    custom_timeouts: dict[str, str] = field(default_factory=dict)  # "create"/"update"/"delete" -> "15m"; unset ones left out
    delete_before_replace: bool | None = None  # None: not set, the provider's diff decides
    ignore_changes: tuple[str, ...] = ()
    retain_on_delete: bool = False
    replace_on_changes: tuple[str, ...] = ()

    def as_plan_entry(self) -> dict[str, Any]:
        """The resource as plan.json shows it.

        `protect` is always written; the other deploy options only where they differ from the
        engine's default, so that a key's presence is what marks a resource whose deploy or destroy
        behaves differently (`jq 'map(select(.customTimeouts))'` lists exactly those).
        """
        entry: dict[str, Any] = {
            "urn": self.urn,
            "type": self.type,
            "name": self.name,
            "parent": self.parent,
            "provider": self.provider,
            "protect": self.protect,
            "dependencies": list(self.dependencies),
            "propertyDependencies": {key: list(urns) for key, urns in sorted(self.property_dependencies.items())},
            "inputs": self.inputs,
        }
        options: dict[str, Any] = {
            "customTimeouts": dict(self.custom_timeouts),
            "deleteBeforeReplace": self.delete_before_replace,
            "ignoreChanges": list(self.ignore_changes),
            "retainOnDelete": self.retain_on_delete or None,
            "replaceOnChanges": list(self.replace_on_changes),
        }
        entry.update({key: value for key, value in options.items() if value not in (None, {}, [])})
        return entry


@dataclass
class Recording:
    """Everything one run of the program declared, and its stack outputs."""

    stack: str
    resources: list[RecordedResource] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    secret_outputs: set[str] = field(default_factory=set)

    def by_type(self, type_: str) -> list[RecordedResource]:
        return [r for r in self.resources if r.type == type_]

    def named(self, type_: str, name: str) -> RecordedResource:
        matches = [r for r in self.resources if r.type == type_ and r.name == name]
        if len(matches) != 1:
            raise KeyError(f"{len(matches)} resources of type {type_} named {name}")
        return matches[0]

    def by_urn(self, urn: str) -> RecordedResource:
        return next(r for r in self.resources if r.urn == urn)


class DuplicateUrnError(Exception):
    """The program declared two resources with one URN, which the Pulumi engine refuses."""

    def __init__(self, urns: list[str]):
        self.urns = urns
        # The engine's own words: pulumi/pulumi pkg/diag/errors.go GetDuplicateResourceURNError (code 2001).
        super().__init__("\n".join(f"Duplicate resource URN '{urn}'; try giving it a unique name" for urn in urns))


def engine_urn(stack: str, project: str, parent: str, type_: str, name: str) -> str:
    """The URN the Pulumi engine gives a resource: its parent's whole type chain, then its own type.

    pulumi/pulumi `pkg/resource/deploy/deployment.go` `generateURN` takes the parent URN's
    `QualifiedType()` (every ancestor's type, `$`-joined) unless the parent is the root stack, and
    `sdk/go/common/resource/urn.go` `NewURN` writes `urn:pulumi:<stack>::<project>::<parent
    types>$<type>::<name>`. A component under `GpuPlatform` under the stack is therefore
    `gpu-platform:index:GpuPlatform$<its type>`, never `pulumi:pulumi:Stack$...`.
    """
    qualified = type_
    if parent:
        parent_type = parent.split("::")[2]
        if parent_type != ROOT_STACK_TYPE:
            qualified = f"{parent_type}${type_}"
    return f"urn:pulumi:{stack}::{project}::{qualified}::{name}"


class RecordingMonitor(sdk_mocks.MockMonitor):
    """The SDK's mock monitor, plus a record of parent, provider and dependencies per registration.

    The SDK's mocks accept a URN twice; the engine does not, so the second registration of a URN is
    noted here and `run_program` fails as `pulumi preview` would. The SDK's mocks also build a URN
    from the immediate parent's type alone and keep the root stack's type; URNs here are the
    engine's (`engine_urn`).
    """

    def __init__(self, mocks: CloudMocks):
        super().__init__(mocks)
        self.records: list[RecordedResource] = []
        self.duplicate_urns: list[str] = []
        self._urns: set[str] = set()
        self._lock = threading.Lock()

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        return engine_urn(pulumi.get_stack(), pulumi.get_project(), parent, type_, name)

    def RegisterResource(self, request):  # gRPC's method name, hence not snake_case
        response = super().RegisterResource(request)
        with self._lock:
            if response.urn in self._urns:
                self.duplicate_urns.append(response.urn)
            self._urns.add(response.urn)
        if request.type != "pulumi:pulumi:Stack":
            record = RecordedResource(
                urn=response.urn,
                type=request.type,
                name=request.name,
                custom=bool(request.custom),
                parent=request.parent,
                provider=request.provider.rsplit("::", 1)[0] if request.provider else "",
                dependencies=tuple(sorted(set(request.dependencies))),
                property_dependencies={
                    key: tuple(sorted(set(deps.urns))) for key, deps in request.propertyDependencies.items() if deps.urns
                },
                inputs=normalise(rpc.deserialize_properties(request.object)),
                protect=bool(request.protect),
                custom_timeouts={
                    operation: getattr(request.customTimeouts, operation)
                    for operation in ("create", "update", "delete")
                    if getattr(request.customTimeouts, operation)
                },
                delete_before_replace=bool(request.deleteBeforeReplace) if request.deleteBeforeReplaceDefined else None,
                ignore_changes=tuple(request.ignoreChanges),
                retain_on_delete=bool(request.retainOnDelete),
                replace_on_changes=tuple(request.replaceOnChanges),
            )
            with self._lock:
                self.records.append(record)
        return response


def run_program(
    stack: str,
    config: Mapping[str, str],
    secret_keys: list[str] | None = None,
    program: Callable[[], None] | None = None,
    account: Account | None = None,
    stack_outputs: Mapping[str, Mapping[str, Any]] | None = None,
) -> Recording:
    """Run `__main__.py` (or `program`) for `stack` with `config` (Pulumi's flat key -> string map) under mocks.

    `account` is what the fake AWS account holds before the run (a fresh one when None); `stack_outputs`
    answers the program's StackReferences (reference name -> outputs); when None, a fleet manager's are
    its workers' renders (offline/fleet.py `referenced_outputs`).
    Raises `DuplicateUrnError` when two registrations share a URN.
    """
    if stack_outputs is None:
        from .fleet import referenced_outputs

        stack_outputs = referenced_outputs(config)
    return contextvars.Context().run(
        _run, stack, dict(config), list(secret_keys or []), program or _main_program, account, stack_outputs
    )


_RENDER_GC_THRESHOLD = 200_000


def _no_stack_trace() -> Any:
    return sdk_resource.source_pb2.StackTrace()


def _main_program() -> None:
    runpy.run_path(str(PROJECT_DIR / "__main__.py"), run_name="__main__")


def _run(
    stack: str,
    config: dict[str, str],
    secret_keys: list[str],
    program: Callable[[], None],
    account: Account | None,
    stack_outputs: Mapping[str, Mapping[str, Any]] | None = None,
) -> Recording:
    region = config.get("aws:region", "us-west-2")
    mocks = CloudMocks(stack=stack, region=region, account=account, stack_outputs=stack_outputs)
    monitor = RecordingMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project=PROJECT, stack=stack, preview=False, monitor=monitor)
    pulumi.runtime.set_all_config(config, secret_keys)

    if str(PROJECT_DIR) not in sys.path:
        sys.path.insert(0, str(PROJECT_DIR))
    # The SDK walks the Python stack for every registration to send the engine a source position
    # (pulumi/runtime/resource.py `_get_stack_trace`, about a fifth of a render's time); a mock
    # monitor never reads it, so the walk is skipped while the program runs here.
    capture = sdk_resource._get_stack_trace
    sdk_resource._get_stack_trace = _no_stack_trace
    # The SDK asks whether a value holds an unknown some ten thousand times a render; its
    # `rpc.contains_unknowns` defines a recursive closure on each call, a reference cycle (function,
    # cell, annotations) that only the cyclic collector frees: most of a render's cyclic garbage. The
    # same walk as module-level functions leaves none; output.py and rpc.py look it up on rpc each call.
    sdk_contains_unknowns = rpc.contains_unknowns
    rpc.contains_unknowns = _contains_unknowns
    # A render allocates several hundred thousand short-lived objects (outputs, futures, tasks) that
    # reference counting frees; at CPython's default thresholds the cyclic collector still runs a full
    # collection every few thousand allocations, a third to a half of a render's time, longer as a test
    # session holds more recordings. The collector runs rarely while the program runs, as before after.
    thresholds = gc.get_threshold()
    gc.set_threshold(_RENDER_GC_THRESHOLD, *thresholds[1:])
    try:
        _sync_await(run_pulumi_func(program))
    finally:
        gc.set_threshold(*thresholds)
        sdk_resource._get_stack_trace = capture
        rpc.contains_unknowns = sdk_contains_unknowns

    if monitor.duplicate_urns:
        raise DuplicateUrnError(sorted(set(monitor.duplicate_urns)))
    recording = Recording(stack=stack, resources=sorted(monitor.records, key=lambda r: r.urn))
    root = pulumi.runtime.settings.get_root_resource()
    for name, value in sorted(getattr(root, "outputs", {}).items()):
        resolved, is_secret = _sync_await(_resolve(value))
        recording.outputs[name] = SECRET if is_secret else normalise(resolved)
        if is_secret:
            recording.secret_outputs.add(name)
    return recording


def _contains_unknowns(val: Any) -> bool:
    """pulumi/pulumi v3.272.0 sdk/python/lib/pulumi/runtime/rpc.py `contains_unknowns`, without its closure."""
    return _holds_unknown(val, set())


def _holds_unknown(value: Any, seen_ids: set[int]) -> bool:
    if known_types.is_unknown(value):
        return True
    value_id = id(value)
    if value_id in seen_ids:
        return False
    seen_ids.add(value_id)
    if isinstance(value, dict):
        return any(_holds_unknown(value[key], seen_ids) for key in value)
    if isinstance(value, list):
        return any(_holds_unknown(item, seen_ids) for item in value)
    return False


async def _resolve(value: Any) -> tuple[Any, bool]:
    output = pulumi.Output.from_input(value)
    return await output.future(), await output.is_secret()


def normalise(value: Any) -> Any:
    """Make recorded values stable and readable: redact secrets, whole floats back to ints, sorted keys."""
    if isinstance(value, dict):
        # The SDK's private signature key marks a wrapped secret or resource reference.
        if rpc._special_sig_key in value:
            if value[rpc._special_sig_key] == rpc._special_secret_sig:
                # A secret map (a Secret's stringData) keeps its keys, so the render still has its shape.
                inner = value.get("value")
                if isinstance(inner, dict):
                    return {key: SECRET for key in sorted(inner)}
                return SECRET
            return {k: normalise(v) for k, v in sorted(value.items()) if k != rpc._special_sig_key}
        return {key: normalise(item) for key, item in sorted(value.items())}
    if isinstance(value, list | tuple):
        return [normalise(item) for item in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value
