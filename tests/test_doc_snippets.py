"""Every YAML example in README.md and docs/*.md is valid against the stack it names.

An example is a fenced `yaml` block preceded by an HTML comment saying what it is (docs/tenants.md,
"How the examples are checked"):

    <!-- snippet: tenants stack=dev -->               tenant entries, added to the stack's tenants
    <!-- snippet: config stack=dev -->                `gpu-platform:<section>` keys, replacing the stack's
    <!-- snippet: manifest stack=dev tenant=NAME -->  Kubernetes objects the tenant applies
    <!-- snippet: fragment -->                        part of an object (a pod spec's fields): it must parse

`stack=` is a root stack as shipped (`dev`: tests/fixtures/shipped/dev.yaml, a frozen copy of
Pulumi.dev.yaml), `fixture:<name>` (tests/fixtures/stacks/) or `held_out:<name>` (tests/fixtures/held_out/).
The live stack files are never read:
onboarding the README's own example into Pulumi.dev.yaml must leave these tests green.
A block without the comment fails the test, so no example goes unchecked.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from config import PlatformConfig
from config.labels import LOCAL_QUEUE
from models.kueue.constants import PRIORITY_CLASS_LABEL, QUEUE_NAME_LABEL
from offline.engine import Recording
from offline.validate import CustomResourceDefinitions, object_findings

from .conftest import fixture_document, load, project_path, render, shipped_document

DOCUMENTS = ("README.md", *sorted(f"docs/{path.name}" for path in project_path("docs").glob("*.md")))
_BLOCK = re.compile(r"(?:^|\n)(?P<before>[^\n]*)\n```yaml\n(?P<body>.*?)```", re.DOTALL)
_MARKER = re.compile(r"^<!-- snippet: (?P<kind>tenants|config|manifest|fragment)(?P<options>(?: [\w-]+=[\w:.-]+)*) -->$")


@dataclass(frozen=True)
class Snippet:
    where: str
    kind: str
    options: dict[str, str]
    body: str

    def __str__(self) -> str:
        return self.where


def snippets() -> list[Snippet]:
    found = []
    for name in DOCUMENTS:
        text = project_path(name).read_text()
        for match in _BLOCK.finditer(text):
            line = text[: match.start("body")].count("\n")
            marker = _MARKER.match(match["before"].strip())
            options = dict(o.split("=", 1) for o in marker["options"].split()) if marker else {}
            found.append(Snippet(f"{name}:{line}", marker["kind"] if marker else "", options, match["body"]))
    return found


SNIPPETS = snippets()


def stack_document(stack: str) -> dict[str, Any]:
    if stack.startswith("fixture:"):
        return fixture_document(stack.removeprefix("fixture:"))
    if stack.startswith("held_out:"):
        path = project_path("tests", "fixtures", "held_out", f"{stack.removeprefix('held_out:')}.yaml")
        return yaml.safe_load(path.read_text())["config"]
    return shipped_document(stack)


def with_snippet(snippet: Snippet) -> dict[str, Any]:
    document = stack_document(snippet.options["stack"])
    body = yaml.safe_load(snippet.body)
    if snippet.kind == "tenants":
        assert isinstance(body, list), f"{snippet}: a tenants snippet is a list of tenant entries"
        document["gpu-platform:tenants"] = [*(document.get("gpu-platform:tenants") or []), *body]
    else:
        assert isinstance(body, dict), f"{snippet}: a config snippet is a mapping of gpu-platform:<section> keys"
        document.update(body)
    return document


@functools.cache
def rendered(document_json: str) -> Recording:
    """Render once per distinct document (a README example and a guide's may be the same entry); shared with
    the tests of the docs' numbers and of check-manifest's answers to the docs' examples."""
    return render(json.loads(document_json), "snippet")


def _render_urns(document_json: str) -> int:
    return len(rendered(document_json).resources)


def test_every_yaml_block_says_what_it_is_and_which_stack_it_belongs_to() -> None:
    unmarked = [str(s) for s in SNIPPETS if not s.kind or (s.kind != "fragment" and "stack" not in s.options)]
    assert unmarked == [], "precede each ```yaml block with <!-- snippet: KIND stack=S --> (see this module)"
    assert all("tenant" in s.options for s in SNIPPETS if s.kind == "manifest")


@pytest.mark.parametrize("snippet", [s for s in SNIPPETS if s.kind in ("tenants", "config")], ids=str)
def test_a_stack_snippet_validates_and_renders_against_its_stack(snippet: Snippet) -> None:
    document = with_snippet(snippet)
    load(document)
    assert _render_urns(json.dumps(document, sort_keys=True)) > 0


@pytest.mark.parametrize("snippet", [s for s in SNIPPETS if s.kind == "fragment"], ids=str)
def test_a_fragment_is_yaml_of_one_mapping(snippet: Snippet) -> None:
    assert isinstance(yaml.safe_load(snippet.body), dict)


@functools.cache
def stack_config(stack: str) -> PlatformConfig:
    return load(stack_document(stack))


@functools.cache
def stack_crds(stack: str) -> CustomResourceDefinitions:
    """The CRDs the stack's charts install, at their pinned versions (no render needed)."""
    charts = stack_config(stack).charts.values()
    return CustomResourceDefinitions.installed_by({"chart": pin.chart, "version": pin.version} for pin in charts)


def requested_gpu_resources(obj: Any) -> set[str]:
    """Every `nvidia.com/...` resource a container of the object requests or limits, wherever its pod template sits."""
    found: set[str] = set()
    if isinstance(obj, dict):
        for key in ("requests", "limits"):
            if isinstance(obj.get(key), dict):
                found |= {name for name in obj[key] if name.startswith("nvidia.com/")}
        for value in obj.values():
            found |= requested_gpu_resources(value)
    elif isinstance(obj, list):
        for value in obj:
            found |= requested_gpu_resources(value)
    return found


@pytest.mark.parametrize("snippet", [s for s in SNIPPETS if s.kind == "manifest"], ids=str)
def test_a_tenant_manifest_is_valid_in_the_tenants_namespace_and_asks_for_what_its_flavors_hand_out(
    snippet: Snippet,
) -> None:
    stack, tenant_name = snippet.options["stack"], snippet.options["tenant"]
    config = stack_config(stack)
    [tenant] = [t for t in config.tenants if t.name == tenant_name]
    offered = {resource for quota in tenant.quotas for resource in quota.flavor.resources_per_unit}
    objects = [obj for obj in yaml.safe_load_all(snippet.body) if obj is not None]
    assert objects
    for obj in objects:
        findings = object_findings(obj, stack_crds(stack), config.cluster.kubernetes_version).findings
        assert findings == [], f"{snippet}: {findings}"
        metadata = obj["metadata"]
        assert metadata.get("namespace") == tenant.namespace
        labels = metadata.get("labels") or {}
        assert labels.get(QUEUE_NAME_LABEL, LOCAL_QUEUE) == LOCAL_QUEUE
        if PRIORITY_CLASS_LABEL in labels:
            assert labels[PRIORITY_CLASS_LABEL] in config.queueing.priorities
        assert requested_gpu_resources(obj) <= offered, f"{snippet}: tenant {tenant_name} has quota on {sorted(offered)}"


def test_the_snippets_cover_every_kind_and_the_guide() -> None:
    """The checker finds blocks at all: the README's onboarding entry and the tenants guide's job."""
    kinds = {(s.where.split(":")[0], s.kind) for s in SNIPPETS}
    assert ("README.md", "tenants") in kinds
    assert ("docs/tenants.md", "manifest") in kinds
    assert Path(project_path("docs/tenants.md")).is_file()
