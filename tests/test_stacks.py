"""Every `Pulumi.<stack>.yaml` at the project root gets the checks any stack must pass.

The stack files are examples that operators edit and add to, so they are found by glob and nothing
here depends on what they contain: each one validates, renders, conforms to the upstream schemas of
its Kubernetes version, renders the same bytes twice and keeps every secret out of what it writes.
Tests about particular numbers read `tests/fixtures/stacks/` instead.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from config import PlatformConfig, load_platform_config
from offline.__main__ import main
from offline.engine import PROJECT_DIR
from offline.fleet import referenced_outputs
from offline.render import write_render
from offline.stack import SECURE_PLACEHOLDER, StackConfig, load_stack, stack_names
from offline.validate import validate_render

from .conftest import shared_render

# Every test here reads the root stack files; the README walk-through runs them in its copy.
pytestmark = pytest.mark.stack_files
ROOT_STACKS = stack_names()
# A kubeconfig's credentials (the EKS token command, a client key); the plan holds the stack's kubeconfig only as a
# secret output, never as an input. Its `certificate-authority-data` is no marker here: a cluster's CA is public
# (`aws eks describe-cluster` shows it), and a fleet manager's kubeconfig templates (components/fleet.py) carry
# each worker's, with External Secrets' token placeholder as the only credential.
KUBECONFIG_MARKERS = ("get-token", "client-key-data")


@pytest.fixture(scope="module", params=ROOT_STACKS)
def stack(request) -> str:
    return request.param


@pytest.fixture(scope="module")
def stack_config(stack: str) -> StackConfig:
    return load_stack(stack)


@pytest.fixture(scope="module")
def config(stack_config: StackConfig) -> PlatformConfig:
    return load_platform_config(stack_config.values)


@pytest.fixture(scope="module")
def rendered(stack: str, tmp_path_factory) -> Path:
    """The stack rendered the way a user renders it, by the CLI."""
    out = tmp_path_factory.mktemp(stack) / "render"
    assert main(["render", "--stack", stack, "--out", str(out)]) == 0
    return out


def test_its_config_validates(stack, capsys):
    code = main(["check", "--stack", stack])
    out, err = capsys.readouterr()
    assert (code, out.strip()) == (0, "ok"), err


def test_it_renders_manifests_helm_releases_plan_and_summary(rendered):
    assert sorted(p.name for p in rendered.iterdir()) == ["helm", "manifests.yaml", "plan.json", "summary.md"]
    assert {"karpenter-crd.yaml", "karpenter.yaml"} <= {p.name for p in (rendered / "helm").iterdir()}
    documents = list(yaml.load_all((rendered / "manifests.yaml").read_text(), Loader=yaml.CSafeLoader))
    assert documents and all(doc["apiVersion"] and doc["kind"] and doc["metadata"]["name"] for doc in documents)
    plan = json.loads((rendered / "plan.json").read_text())
    assert {"urn", "type", "name", "parent", "provider", "dependencies", "propertyDependencies", "inputs"} <= set(plan[0])
    assert any(entry["type"] == "eks:index:Cluster" for entry in plan)
    summary = (rendered / "summary.md").read_text()
    for heading in ("## Cluster", "## Network", "## Node groups", "## EKS add-ons", "## Cluster admins"):
        assert heading in summary


def test_it_conforms_to_the_upstream_schemas_of_its_kubernetes_version(rendered, config):
    report = validate_render(rendered, config.cluster.kubernetes_version)
    assert report.problems == []


def test_a_second_render_is_byte_identical(rendered, stack_config, config, tmp_path):
    again = tmp_path / "again"
    # A run of its own, not the CLI's; tests/test_fleet.py reads the same run of a fleet stack whose content its frozen
    # copy shares, so the suite renders it no third time.
    outputs = referenced_outputs(stack_config.values)
    write_render(shared_render(stack_config.stack, stack_config.values, stack_config.secret_keys, outputs), config, again)
    assert _files(again) == _files(rendered)
    for name in _files(rendered):
        assert (again / name).read_bytes() == (rendered / name).read_bytes(), name


def test_no_secret_value_reaches_the_render(rendered, stack):
    """Neither a `secure:` value, nor its offline placeholder, nor the kubeconfig is written anywhere.

    The placeholder stands in for the decrypted value: where it shows, `pulumi up` would show the secret.
    """
    document = yaml.safe_load((PROJECT_DIR / f"Pulumi.{stack}.yaml").read_text())
    ciphertexts = _secure_values(document)
    leaks = {
        (name, needle)
        for name in _files(rendered)
        for needle in (*ciphertexts, SECURE_PLACEHOLDER, *KUBECONFIG_MARKERS)
        if needle in (rendered / name).read_text()
    }
    assert not leaks


def _secure_values(value: Any) -> list[str]:
    if isinstance(value, dict):
        if set(value) == {"secure"}:
            return [str(value["secure"])]
        return [found for item in value.values() for found in _secure_values(item)]
    if isinstance(value, list):
        return [found for item in value for found in _secure_values(item)]
    return []


def _files(directory: Path) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*") if p.is_file())
