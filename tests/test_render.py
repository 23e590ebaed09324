"""The offline render: its files, its determinism, and what it does with a bad config."""

from __future__ import annotations

import json
import subprocess
import sys

import kubernetes_validate
import pytest
import yaml

from offline.__main__ import main
from offline.render import kubernetes_objects
from offline.stack import SECURE_PLACEHOLDER, stack_config_from_mapping, stack_names

from .conftest import STACKS, load, project_path, render_stack, stack_document


def render_to(tmp_path, stack):
    out = tmp_path / stack
    assert main(["render", "--stack", stack, "--out", str(out)]) == 0
    return out


def test_every_stack_file_in_the_project_is_tested():
    assert stack_names() == sorted(STACKS)


@pytest.mark.parametrize("stack", STACKS)
def test_render_writes_manifests_plan_and_summary(tmp_path, stack):
    out = render_to(tmp_path, stack)
    assert sorted(p.name for p in out.iterdir()) == ["helm", "manifests.yaml", "plan.json", "summary.md"]
    assert {"karpenter-crd.yaml", "karpenter.yaml"} <= {p.name for p in (out / "helm").iterdir()}
    documents = list(yaml.safe_load_all((out / "manifests.yaml").read_text()))
    assert documents and all(doc["apiVersion"] and doc["kind"] and doc["metadata"]["name"] for doc in documents)
    plan = json.loads((out / "plan.json").read_text())
    assert {"urn", "type", "name", "parent", "provider", "dependencies", "propertyDependencies", "inputs"} <= set(plan[0])
    assert any(entry["type"] == "eks:index:Cluster" for entry in plan)
    summary = (out / "summary.md").read_text()
    for heading in ("## Cluster", "## Network", "## Node groups", "## EKS add-ons", "## Cluster admins"):
        assert heading in summary


def test_same_config_renders_byte_identical_files(tmp_path):
    first = render_to(tmp_path / "a", "prod")
    second = render_to(tmp_path / "b", "prod")
    for name in ("manifests.yaml", "plan.json", "summary.md"):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


def test_the_plan_never_contains_the_kubeconfig_or_a_secure_value(tmp_path):
    plan = (render_to(tmp_path, "dev") / "plan.json").read_text()
    assert "certificate-authority-data" not in plan
    assert "get-token" not in plan


def test_an_invalid_config_exits_2_names_the_problem_and_writes_nothing(tmp_path):
    stack_file = project_path("Pulumi.broken.yaml")
    doc = stack_document("dev")
    doc["gpu-platform:cluster"]["systemNodes"]["minSize"] = 0
    stack_file.write_text(yaml.safe_dump({"config": doc}))
    try:
        result = subprocess.run(
            [sys.executable, "-m", "offline", "render", "--stack", "broken", "--out", str(tmp_path / "out")],
            cwd=project_path(),
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        stack_file.unlink()
    assert result.returncode == 2
    assert "gpu-platform:cluster.systemNodes.minSize: 0 is out of range; must be >= 1" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()


def test_check_prints_ok_for_a_valid_stack(capsys):
    assert main(["check", "--stack", "prod"]) == 0
    assert capsys.readouterr().out.strip() == "ok"


def test_an_unknown_stack_is_a_clear_error(capsys):
    assert main(["check", "--stack", "staging"]) == 2
    assert "no stack 'staging': Pulumi.staging.yaml does not exist (stacks: dev, prod)" in capsys.readouterr().err


def test_secure_values_become_a_visible_placeholder_and_are_marked_secret():
    stack = stack_config_from_mapping("dev", {"aws:region": "us-west-2", "gpu-platform:token": {"secure": "AAAB..."}})
    assert stack.values["gpu-platform:token"] == SECURE_PLACEHOLDER
    assert stack.secret_keys == ["gpu-platform:token"]


@pytest.mark.parametrize("stack", STACKS)
def test_built_in_kinds_validate_against_the_stacks_kubernetes_version(stack):
    version = load(stack_document(stack)).cluster.kubernetes_version
    built_in = [m for m in kubernetes_objects(render_stack(stack)) if _is_built_in(m["apiVersion"])]
    assert built_in
    for manifest in built_in:
        # Raises on the first schema violation; custom resources are left to ../shared/conformance in CI.
        kubernetes_validate.validate(manifest, f"{version}.0", strict=True)


def _is_built_in(api_version: str) -> bool:
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    return "." not in group or group.endswith(".k8s.io")


def test_pulumi_up_reports_the_same_config_lines_without_a_traceback():
    """The program itself refuses a bad config with a RunError, which the CLI prints as-is."""
    import pulumi

    from offline.engine import run_program

    doc = stack_document("dev")
    doc["gpu-platform:cluster"]["network"]["azCount"] = 9
    stack = stack_config_from_mapping("dev", doc)
    with pytest.raises(pulumi.RunError) as caught:
        run_program("dev", stack.values)
    assert "gpu-platform:cluster.network.azCount: 9 is out of range; must be <= 6" in str(caught.value)
