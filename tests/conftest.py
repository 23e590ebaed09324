"""Shared fixtures: stack configs as the user writes them, and renders through the one mock engine.

Tests that assert something about a particular config (numbers, names, counts) read a fixture stack
from `tests/fixtures/stacks/`, named for its case. The example `Pulumi.<stack>.yaml` files at the
project root are the operators' to edit; `tests/test_stacks.py` gives each of them the generic checks.
"""

from __future__ import annotations

import copy
import functools
import gc
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from config import ConfigError, PlatformConfig
from config.versions import CHARTS
from offline.cloud import Account
from offline.engine import PROJECT_DIR, Recording, run_program
from offline.helm_values import release_problems
from offline.stack import load_config, stack_config_from_mapping

FIXTURE_STACKS_DIR = Path(__file__).resolve().parent / "fixtures" / "stacks"
# Frozen copies of the root stacks as the docs describe them (`dev`, `prod`): a test about what a shipped
# stack holds reads these, never the `Pulumi.<stack>.yaml` an operator edits.
SHIPPED_STACKS_DIR = Path(__file__).resolve().parent / "fixtures" / "shipped"
# Every fixture stack, so a generic property a test states holds for each shape the fixtures cover.
FIXTURES = tuple(sorted(path.stem for path in FIXTURE_STACKS_DIR.glob("*.yaml")))


def fixture_document(name: str) -> dict[str, Any]:
    """The `config:` mapping of `tests/fixtures/stacks/<name>.yaml`, as a fresh copy a test may change."""
    return copy.deepcopy(_fixture_document(name))


@functools.cache
def _fixture_document(name: str) -> dict[str, Any]:
    return yaml.safe_load((FIXTURE_STACKS_DIR / f"{name}.yaml").read_text())["config"]


def shipped_document(stack: str) -> dict[str, Any]:
    """The `config:` mapping of `tests/fixtures/shipped/<stack>.yaml`, as a fresh copy a test may change."""
    return copy.deepcopy(_shipped_document(stack))


@functools.cache
def _shipped_document(stack: str) -> dict[str, Any]:
    return yaml.safe_load((SHIPPED_STACKS_DIR / f"{stack}.yaml").read_text())["config"]


def load(document: dict[str, Any]) -> PlatformConfig:
    return load_config(stack_config_from_mapping("test", document))


def problems_of(document: dict[str, Any]) -> list[str]:
    """The lines `load` refuses `document` with; fails the test when the config loads."""
    with pytest.raises(ConfigError) as caught:
        load(document)
    return caught.value.problems


@functools.cache
def fixture_config(name: str) -> PlatformConfig:
    """The fixture's config, loaded once for every test that reads it; so never change it."""
    return load(fixture_document(name))


def render(document: dict[str, Any], stack: str = "test", account: Account | None = None) -> Recording:
    """`document` rendered as `stack`, into `account` (a fresh fake AWS account when None)."""
    config = stack_config_from_mapping(stack, document)
    return run_program(stack, config.values, config.secret_keys, account=account)


@functools.cache
def render_fixture(name: str) -> Recording:
    """The fixture rendered as a stack of its own name; shared by every test, so never change it."""
    return render(fixture_document(name), name)


def shared_render(
    stack: str, values: Mapping[str, str], secret_keys: Sequence[str], stack_outputs: Mapping[str, Mapping[str, Any]]
) -> Recording:
    """`stack` rendered from `values` with its StackReferences answered by `stack_outputs`, once per session
    for every test that renders the same content (a root stack file and its frozen copy hold the same config);
    shared, so never change it."""
    return _shared_render(
        stack, json.dumps(dict(values), sort_keys=True), tuple(secret_keys), json.dumps(stack_outputs, sort_keys=True)
    )


@functools.cache
def _shared_render(stack: str, values: str, secret_keys: tuple[str, ...], stack_outputs: str) -> Recording:
    return run_program(stack, json.loads(values), list(secret_keys), stack_outputs=json.loads(stack_outputs))


@pytest.fixture(params=FIXTURES)
def fixture_stack(request) -> str:
    return request.param


@pytest.fixture
def recording(fixture_stack: str) -> Recording:
    return render_fixture(fixture_stack)


# The fixtures whose recordings the deploy-order tests read (tests/recorded.py);
# single-pool-dra covers single-pool's shape too.
@pytest.fixture(params=("multi-pool", "single-pool-dra"))
def recorded(request) -> Recording:
    return render_fixture(request.param)


# The README walk-through (tests/test_readme_steps.py) runs the tests that read root stack files
# (marker `stack_files`) in a copy of the project, in a process of its own. Started as soon as
# collection selects it, that process uses the second core while this one runs the rest of the suite;
# the test then only collects its result.
WALKTHROUGH = pytest.StashKey[Any]()


# The session keeps every module, cached config and cached render alive to its end, and the cyclic
# collector's full passes walk all of them again and again: at CPython's default thresholds, a quarter
# of the CPU time of the render-heavy test files. What collection has loaded moves out of the
# collector's sight (gc.freeze), and collections run less often; a render sets its own threshold
# (offline/engine.py).
SESSION_GC_THRESHOLDS = (10_000, 10, 100)


def pytest_configure(config: pytest.Config) -> None:
    gc.set_threshold(*SESSION_GC_THRESHOLDS)  # before collection imports the test modules and all they load


def pytest_collection_finish(session: pytest.Session) -> None:
    if session.config.option.collectonly:
        return
    gc.collect()
    gc.freeze()
    for item in session.items:
        if isinstance(item, pytest.Function) and item.path.name == "test_readme_steps.py":
            session.config.stash[WALKTHROUGH] = item.module.start_walkthrough()
            return


def pytest_sessionfinish(session: pytest.Session) -> None:
    walkthrough = session.config.stash.get(WALKTHROUGH, None)
    if walkthrough is not None:
        walkthrough.close()
    # pytest's unraisable-exception check collects twice after the session (at unconfigure and at cleanup), each a
    # full pass over everything the session still holds (its renders and simulations: some 1.3 s of CPU a pass).
    # One pass here, while pytest's hook still records what a finaliser raises, frees the cyclic garbage and reports
    # it the same way; what survives it is alive, and moves out of the later passes' sight.
    gc.collect()
    gc.freeze()


# A project of the frozen copies (tests/fixtures/shipped/), for command-line tests that need *a* stack named dev
# or prod, not the operator's: the in-process CLI reads it through `load_stack`, and a subprocess through
# STAND_IN_CLI with the directory as its first argument. Such a test does not read the root stack files, so it
# carries no `stack_files` mark and the README walk-through does not run it again.
@pytest.fixture
def shipped_project(tmp_path_factory, monkeypatch) -> Path:
    from offline.stack import load_stack

    directory = tmp_path_factory.mktemp("shipped-project")
    for path in sorted(SHIPPED_STACKS_DIR.glob("*.yaml")):
        (directory / f"Pulumi.{path.stem}.yaml").write_text(path.read_text())
    stand_in = functools.partial(load_stack, project_dir=directory)
    monkeypatch.setattr("offline.stack.load_stack", stand_in)
    monkeypatch.setattr("offline.__main__.load_stack", stand_in)
    return directory


# `python -c STAND_IN_CLI <project dir> <command> [args]` is `python -m offline <command> [args]` reading its stacks
# from <project dir>; STAND_IN_PATCH is its first part, for a script that runs the CLI its own way.
STAND_IN_PATCH = """
import functools, runpy, sys
from pathlib import Path
import offline.stack
offline.stack.load_stack = functools.partial(offline.stack.load_stack, project_dir=Path(sys.argv.pop(1)))
"""
STAND_IN_CLI = STAND_IN_PATCH + """
sys.argv = ["python -m offline", *sys.argv[1:]]
runpy.run_module("offline", run_name="__main__", alter_sys=True)
"""


def short(urn: str) -> str:
    """The logical name at the end of a URN."""
    return urn.rsplit("::", 1)[-1]


def project_path(*parts: str) -> Path:
    return PROJECT_DIR.joinpath(*parts)


def stand_in_namespaces(provider, tenants) -> dict:
    """Tenant namespaces for running one component alone (the tenants component makes the real ones)."""
    import pulumi
    import pulumi_kubernetes as k8s

    return {
        t.name: k8s.core.v1.Namespace(f"ns-{t.name}", metadata={"name": t.name}, opts=pulumi.ResourceOptions(provider=provider))
        for t in tenants
    }


def chart_values_problems(chart: str, values: dict[str, Any]) -> list[str]:
    """What `python -m offline validate` says of a release of the pinned `chart` that sets `values`."""
    pin = CHARTS[chart]
    return release_problems(f"helm/{chart}.yaml", {"chart": pin.chart, "version": pin.version, "values": values})
