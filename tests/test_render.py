"""The offline render: what it makes of a fixture, and what it does with a bad config or stack name.

What every stack file renders (its files, their determinism, no secrets) is checked in test_stacks.py.
"""

from __future__ import annotations

import functools
import subprocess
import sys

import pytest
import yaml

from offline.__main__ import main
from offline.builtin_kinds import built_in_findings
from offline.render import kubernetes_objects
from offline.stack import SECURE_PLACEHOLDER, load_stack, stack_config_from_mapping

from .conftest import STAND_IN_CLI, STAND_IN_PATCH, fixture_document, load, project_path, render_fixture


@pytest.fixture
def project_of(tmp_path, monkeypatch):
    """Point the CLI at a project directory holding only the given stack files, never at the real one."""

    def project_of(**stacks) -> None:
        for name, document in stacks.items():
            (tmp_path / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump({"config": document}))
        monkeypatch.setattr("offline.__main__.load_stack", functools.partial(load_stack, project_dir=tmp_path))

    return project_of


def test_an_invalid_config_exits_2_names_the_problem_and_writes_nothing(project_of, tmp_path, capsys):
    doc = fixture_document("single-pool")
    doc["gpu-platform:cluster"]["systemNodes"]["minSize"] = 0
    project_of(broken=doc)
    assert main(["render", "--stack", "broken", "--out", str(tmp_path / "out")]) == 2
    assert "gpu-platform:cluster.systemNodes.minSize: 0 is out of range; must be >= 1" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_an_unknown_stack_is_a_clear_error(project_of, capsys):
    project_of(dev=fixture_document("single-pool"), prod=fixture_document("multi-pool"))
    assert main(["check", "--stack", "staging"]) == 2
    assert "no stack 'staging': Pulumi.staging.yaml does not exist (stacks: dev, prod)" in capsys.readouterr().err


def test_python_m_offline_exits_2_with_the_error_and_no_traceback(shipped_project):
    result = subprocess.run(
        [sys.executable, "-c", STAND_IN_CLI, str(shipped_project), "check", "--stack", "no-such-stack"],
        cwd=project_path(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.startswith(
        "error: no stack 'no-such-stack': Pulumi.no-such-stack.yaml does not exist "
        "(stacks: dev, fleet-manager, fleet-worker-usw2, prod)"
    )
    assert "Traceback" not in result.stderr


# Runs the CLI in this process's place and reports which Pulumi packages it loaded.
_LOADED_PULUMI = STAND_IN_PATCH + """
sys.argv = ["python -m offline", *sys.argv[1:]]
try:
    runpy.run_module("offline", run_name="__main__", alter_sys=True)
except SystemExit as exit:
    print("exit", exit.code)
print("loaded", *sorted(m for m in sys.modules if m.split(".")[0] in ("pulumi", "pulumi_aws", "pulumi_kubernetes")))
"""


@pytest.mark.parametrize("command", ["check", "kubernetes-version"])
def test_checking_a_stack_never_loads_pulumi(command, shipped_project):
    # `check` runs where no Pulumi SDK or provider may be installed (a pre-commit hook, a tenant's laptop).
    result = subprocess.run(
        [sys.executable, "-c", _LOADED_PULUMI, str(shipped_project), command, "--stack", "dev"],
        cwd=project_path(), capture_output=True, text=True, check=False,
    )
    assert result.stdout.splitlines()[-2:] == ["exit 0", "loaded"], result.stdout + result.stderr


def test_secure_values_become_a_visible_placeholder_and_are_marked_secret():
    stack = stack_config_from_mapping("dev", {"aws:region": "us-west-2", "gpu-platform:token": {"secure": "AAAB..."}})
    assert stack.values["gpu-platform:token"] == SECURE_PLACEHOLDER
    assert stack.secret_keys == ["gpu-platform:token"]


def test_built_in_kinds_validate_against_the_stacks_kubernetes_version(fixture_stack):
    version = load(fixture_document(fixture_stack)).cluster.kubernetes_version
    built_in = [m for m in kubernetes_objects(render_fixture(fixture_stack)) if _is_built_in(m["apiVersion"])]
    assert built_in
    for manifest in built_in:
        # Raises on the first schema violation; test_stacks.py checks custom resources with offline.validate.
        assert built_in_findings(manifest, version) == [], manifest["kind"]


def _is_built_in(api_version: str) -> bool:
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    return "." not in group or group.endswith(".k8s.io")


def test_pulumi_up_reports_the_same_config_lines_without_a_traceback():
    """The program itself refuses a bad config with a RunError, which the CLI prints as-is."""
    import pulumi

    from offline.engine import run_program

    doc = fixture_document("single-pool")
    doc["gpu-platform:cluster"]["network"]["azCount"] = 9
    stack = stack_config_from_mapping("dev", doc)
    with pytest.raises(pulumi.RunError) as caught:
        run_program("dev", stack.values)
    assert "gpu-platform:cluster.network.azCount: 9 is out of range; must be <= 6" in str(caught.value)


def test_a_failed_render_removes_the_previous_render_and_says_why(project_of, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    for stale in ("manifests.yaml", "plan.json", "summary.md"):
        (out / stale).write_text("from an earlier render\n")
    (out / "helm").mkdir()
    (out / "notes.txt").write_text("the user's own file\n")
    doc = fixture_document("single-pool")
    doc["gpu-platform:cluster"]["systemNodes"]["minSize"] = 0
    project_of(broken=doc)
    assert main(["render", "--stack", "broken", "--out", str(out)]) == 2
    assert sorted(path.name for path in out.iterdir()) == ["RENDER_FAILED.txt", "notes.txt"]
    assert "gpu-platform:cluster.systemNodes.minSize" in (out / "RENDER_FAILED.txt").read_text()
    capsys.readouterr()


def test_the_engine_refuses_two_resources_with_one_urn_as_pulumi_does():
    import pulumi

    from offline.engine import DuplicateUrnError, run_program

    def program() -> None:
        pulumi.CustomResource("test:index:Thing", "twin", {})
        pulumi.CustomResource("test:index:Thing", "twin", {})
        pulumi.CustomResource("test:index:Other", "twin", {})

    with pytest.raises(DuplicateUrnError) as caught:
        run_program("dev", {}, program=program)
    assert str(caught.value) == (
        "Duplicate resource URN 'urn:pulumi:dev::gpu-platform::test:index:Thing::twin'; "
        "try giving it a unique name"
    )


@pytest.mark.parametrize("fixture", ["single-pool-dra", "multi-pool"])
def test_every_namespace_the_platform_declares_is_one_no_tenant_may_take(fixture):
    """By construction: a tenant named like a controller's namespace (the DRA driver's) is refused before it collides."""
    from config.namespaces import RESERVED_NAMESPACES

    recording = render_fixture(fixture)
    declared = {r.inputs["metadata"]["name"] for r in recording.by_type("kubernetes:core/v1:Namespace")}
    declared |= {r.inputs["namespace"] for r in recording.by_type("kubernetes:helm.sh/v3:Release")}
    tenants = {tenant["name"] for tenant in fixture_document(fixture)["gpu-platform:tenants"]}
    assert declared - tenants <= RESERVED_NAMESPACES
