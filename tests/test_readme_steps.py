"""The README's steps, followed in a copy of the project, leave every test that reads a stack file green.

A user onboards a tenant into `Pulumi.dev.yaml` (README: "Onboard a tenant"), adds an environment
(README: "Add an environment"), keeps warm GPUs on one of its pools (docs/time-to-gpu.md, "Warm
headroom") and offboards a team from it (docs/tenants.md, "Onboarding and offboarding"), then runs the
tests. The edits land in a copy, so the user's own stack files are read
but never changed.

The copy does not run the whole suite again, which would double its CPU time: an edit to a root stack
file can reach only the tests that read one, and those carry the `stack_files` marker
(tests/stack_file_readers.py finds them by reading the source, and a test here keeps the marks equal to
what it finds). The copy runs `pytest -m stack_files` over the files that hold them: the generic
checks of tests/test_stacks.py on the edited and the new stack, and every other test that reads a root
stack file. Every other test reads fixtures and frozen copies (tests/fixtures/), which the steps do not
touch, so it passes in the copy exactly as it passes here.
"""

from __future__ import annotations

import copy
import io
import json
import math
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Collection
from dataclasses import dataclass
from ipaddress import ip_network
from pathlib import Path
from typing import Any

import ruamel.yaml
import yaml

from config.regions import AVAILABILITY_ZONES
from config.versions import CHARTS
from offline.stack import stack_names
from offline.upstream import chart_values, crd_documents, subchart_values

from . import test_stacks
from .conftest import WALKTHROUGH, load, project_path, shipped_document
from .stack_file_readers import MARKER, marked_tests, reading_tests

# The stack the README's steps start from and edit; another one if the user has removed it.
SOURCE_STACK = "dev"
NEW_STACK = "staging"
# Everything in the project but what a checkout does not carry: virtualenvs, renders, git, tool caches,
# mutmut's working copy. The project's compiled modules come along (copytree keeps the sources' times, so
# Python finds them current and the copy's process does not compile the project again); the tests' do not,
# since pytest's rewritten modules keep the path they were compiled from, which tracebacks would show.
_NOT_COPIED = shutil.ignore_patterns(".venv*", "build", ".git", ".*_cache", "mutants")


def not_copied(directory: str, names: list[str]) -> set[str]:
    ignored = set(_NOT_COPIED(directory, names))
    if Path(directory).resolve() == project_path("tests") or project_path("tests") in Path(directory).resolve().parents:
        ignored |= {name for name in names if name == "__pycache__" or name.endswith(".pyc")}
    return ignored
T = "gpu-platform:tenants"
# A tenant's CPU-pool quota keys, the model's field for each, and what a tenant without them asks for.
CPU_FIELDS = {"cpu": "cpu", "memoryGiB": "memory_gib"}
TENANT_DEFAULTS = {"cpu": 32, "memoryGiB": 128}


# The checks tests/test_stacks.py gives every stack.
STACK_CHECKS = frozenset(name for name in vars(test_stacks) if name.startswith("test_"))


def _editor() -> ruamel.yaml.YAML:
    editor = ruamel.yaml.YAML()
    editor.indent(mapping=2, sequence=4, offset=2)  # the shipped stack files' list style
    editor.preserve_quotes = True
    editor.width = 4096  # long strings (a signer's subject pattern) stay on one line
    return editor


def read_stack_file(path: Path) -> Any:
    """A stack file as an editor holds it: comments, the schema line and key order survive a write."""
    return _editor().load(path.read_text())


def write_stack_file(path: Path, document: Any) -> None:
    stream = io.StringIO()
    _editor().dump(document, stream)
    path.write_text(stream.getvalue())


def readme_section(heading: str) -> str:
    readme = project_path("README.md").read_text()
    start = readme.index(f"\n## {heading}\n")
    end = readme.find("\n## ", start + 1)
    return readme[start:end]


def readme_tenant() -> dict[str, Any]:
    """The example entry the onboarding section shows, as the user pastes it."""
    section = readme_section("Onboard a tenant")
    [block] = re.findall(r"```yaml\n(.*?)```", section, re.DOTALL)
    [tenant] = yaml.safe_load(block)
    return tenant


def unused(name: str, taken: Collection[str]) -> str:
    """`name`, or `name-2`, `name-3`... when the user's own stacks already use it."""
    return next(n for n in (name, *(f"{name}-{i}" for i in range(2, 100))) if n not in taken)


def onboard(document: dict[str, Any], example: dict[str, Any]) -> dict[str, Any]:
    """Add the README's example tenant to a stack, adapted as the README and the config errors say.

    The README's example is written for a stack with business units and an H100 pool. On another
    stack the user takes a flavor from the summary's table (the first), leaves out a business unit
    the stack does not declare, and follows the config errors: a pool too small for the nominal
    quota gets more `gpus`, and a borrowing limit is lowered to what the rest of the cohort can lend.
    """
    tenant = dict(example)
    config = load(json.loads(json.dumps(document)))
    taken = {t.name for t in config.tenants}
    tenant["name"] = unused(example["name"], taken)
    if tenant.get("businessUnit") not in config.queueing.business_units:
        tenant.pop("businessUnit", None)
    if tenant.get("priority") not in config.queueing.priorities:
        tenant.pop("priority", None)

    [(wanted, quota)] = example["gpu"].items()
    flavors = {f.name: f for f in config.flavors}
    flavor = flavors.get(wanted) or config.flavors[0]
    quotas = [q for t in config.tenants for q in t.quotas]
    promised = sum(q.quota.nominal for q in quotas if q.flavor.pool.name == flavor.pool.name)
    missing = promised + quota["nominal"] - flavor.capacity_units
    if missing > 0:
        pool = next(p for p in document["gpu-platform:nodePools"] if p["name"] == flavor.pool.name)
        pool["gpus"] += math.ceil(missing * flavor.pool.gpu_limit / flavor.capacity_units)
    lending = [q.quota for q in quotas if q.flavor.name == flavor.name]
    lendable = sum(q.nominal if q.lending_limit is None else q.lending_limit for q in lending)
    tenant["gpu"] = {flavor.name: {**quota, "borrowingLimit": min(quota.get("borrowingLimit", 0), lendable)}}
    cpu_pool = document.setdefault("gpu-platform:cpuPool", {})
    for key, limit_key, default_limit in (("cpu", "cpuLimit", 1000), ("memoryGiB", "memoryLimitGiB", 4000)):
        wanted_total = sum(getattr(t.config, CPU_FIELDS[key]) for t in config.tenants) + tenant.get(key, TENANT_DEFAULTS[key])
        if wanted_total > cpu_pool.get(limit_key, default_limit):
            cpu_pool[limit_key] = wanted_total
    # At the head of the list: every index-based reading of the shipped tenants shifts, as it would for a team
    # that lists the newcomer first.
    document[T].insert(0, tenant)
    return tenant


def add_environment(project: Path, source: str, name: str) -> None:
    """README "Add an environment": copy dev, then change name, region, VPC range, admins, endpoint, the
    `environment` tag and the cohort."""
    stacks = {path: read_stack_file(path) for path in sorted(project.glob("Pulumi.*.yaml"))}
    copied = stacks[project / f"Pulumi.{source}.yaml"]
    document = copied["config"]
    cluster = document["gpu-platform:cluster"]
    cluster["name"] = f"gpu-{name}"
    zones_needed = cluster["network"].get("azCount", 2)
    document["aws:region"] = next(
        region for region, zones in AVAILABILITY_ZONES.items() if region != document["aws:region"] and len(zones) >= zones_needed
    )
    in_use = [ip_network(s["config"]["gpu-platform:cluster"]["network"]["vpcCidr"]) for s in stacks.values()]
    cluster["network"]["vpcCidr"] = str(
        next(n for n in ip_network("10.0.0.0/8").subnets(new_prefix=16) if not any(n.overlaps(used) for used in in_use))
    )
    cluster["admins"] = [f"arn:aws:iam::111122223333:role/{name.capitalize()}PlatformAdmin"]
    cluster["endpoint"]["publicAccessCidrs"] = ["198.51.100.0/24"]
    cluster.setdefault("tags", {})["environment"] = name
    if "gpu-platform:queueing" in document and "cohort" in document["gpu-platform:queueing"]:
        document["gpu-platform:queueing"]["cohort"] = f"gpu-{name}"
    write_stack_file(project / f"Pulumi.{name}.yaml", copied)


def keep_warm_headroom(document: dict[str, Any]) -> str | None:
    """docs/time-to-gpu.md, "Warm headroom": 4 idle GPUs on the first pool that may have them (not MIG or DRA)."""
    for pool in document["gpu-platform:nodePools"]:
        sharing = (pool.get("sharing") or {}).get("mode", "none")
        if sharing != "mig" and pool.get("allocation") != "dra" and "warmStart" not in pool:
            pool["warmStart"] = {"headroom": {"gpus": 4, "gpusPerPod": 1}}
            return str(pool["name"])
    return None


def offboard(document: dict[str, Any]) -> str:
    """docs/tenants.md "Offboarding removes the entry": the stack's last team goes. What it lent leaves the
    cohort with it, so, as `make check` then says, a borrowing limit above what the rest can lend is lowered."""
    gone = document[T].pop()["name"]
    for entry in document[T]:
        for flavor, quota in (entry.get("gpu") or {}).items():
            others = [o["gpu"][flavor] for o in document[T] if o is not entry and flavor in (o.get("gpu") or {})]
            lendable = sum(o["nominal"] if o.get("lendingLimit") is None else o["lendingLimit"] for o in others)
            if quota.get("borrowingLimit", 0) > lendable:
                quota["borrowingLimit"] = lendable
    return gone


@dataclass
class Walkthrough:
    """The copy's stack checks, running in a process of their own; output goes to a file, not a pipe."""

    workdir: Path
    process: subprocess.Popen[bytes]
    source: str
    new_stack: str

    def result(self) -> tuple[int, str]:
        code = self.process.wait(timeout=600)
        return code, (self.workdir / "pytest.log").read_text()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.workdir, ignore_errors=True)


def start_walkthrough() -> Walkthrough:
    """Copy the project, follow both README sections in the copy, and start its stack checks."""
    # The pinned charts' vendored files parsed first, here (or read back): the copy then carries their cache
    # (offline/upstream.py) and its process, which validates two renders, need not parse them again.
    pins = {chart: pin.version for chart, pin in CHARTS.items()}
    crd_documents(pins)
    for chart, version in pins.items():
        chart_values(chart, version)
        subchart_values(chart, version)
    workdir = Path(tempfile.mkdtemp(prefix="readme-steps-"))
    project = workdir / "project"
    shutil.copytree(project_path(), project, ignore=not_copied)

    stacks = stack_names(project)
    source = SOURCE_STACK if SOURCE_STACK in stacks else stacks[0]
    new_stack = unused(NEW_STACK, stacks)
    add_environment(project, source, new_stack)
    new_file = project / f"Pulumi.{new_stack}.yaml"
    added = read_stack_file(new_file)
    keep_warm_headroom(added["config"])
    if len(added["config"].get(T) or []) > 1:
        offboard(added["config"])
    write_stack_file(new_file, added)
    source_file = project / f"Pulumi.{source}.yaml"
    edited = read_stack_file(source_file)
    onboard(edited["config"], readme_tenant())
    write_stack_file(source_file, edited)

    # The stacks the steps leave alone are the project's own files, byte for byte, which this
    # session's tests/test_stacks.py checks; the copy checks the two the steps write (its cheap marked
    # tests run for every stack).
    untouched = [
        f"--deselect=tests/test_stacks.py::{check}[{stack}]" for stack in stacks if stack != source for check in STACK_CHECKS
    ]
    # Only the files that hold marked tests: collecting the rest would import every test module for nothing.
    files = sorted({test.split("::")[0] for test in marked_tests()})
    with (workdir / "pytest.log").open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA", "-m", MARKER, *files, *untouched],
            cwd=project,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    return Walkthrough(workdir, process, source, new_stack)


def test_onboarding_a_tenant_and_adding_an_environment_as_the_readme_says_keeps_the_stack_checks_green(request):
    # conftest.py starts the walk-through once collection selects this test; see pytest_collection_finish.
    walkthrough = request.config.stash[WALKTHROUGH]
    code, output = walkthrough.result()
    assert code == 0, output[-8000:]
    passed = re.findall(r"^PASSED tests/test_stacks\.py::(\w+)\[([\w-]+)\]", output, re.MULTILINE)
    checks_of = {stack: {test for test, s in passed if s == stack} for _, stack in passed}
    new, edited = checks_of.get(walkthrough.new_stack), checks_of.get(walkthrough.source)
    assert new == edited == STACK_CHECKS, output[-8000:]


def test_the_copy_runs_every_test_that_reads_a_root_stack_file():
    """The walk-through's `-m stack_files` selects exactly the tests that read `Pulumi.<stack>.yaml` at the root."""
    reading, marked = reading_tests(), marked_tests()
    assert reading - marked == set(), f"read a root stack file: mark them @pytest.mark.{MARKER}"
    assert marked - reading == set(), f"marked @pytest.mark.{MARKER} but read no root stack file: unmark them"
    assert "tests/test_stacks.py::test_its_config_validates" in reading


def test_the_readme_entry_goes_into_dev_as_shipped_literally():
    """No adaptation: the README's `vision` entry fits the shipped dev's pools, CPU pool and cohort as written."""
    document = shipped_document("dev")
    before = copy.deepcopy(document)
    example = readme_tenant()
    added = onboard(document, example)
    assert added == example
    assert {k: v for k, v in document.items() if k != T} == {k: v for k, v in before.items() if k != T}
    load(document)
