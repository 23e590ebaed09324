"""`python -m offline diff`: a review of what a change does to a stack's render, by URN and by summary table."""

from __future__ import annotations

from pathlib import Path

from offline.diff import (
    EXIT_CHANGED,
    EXIT_SAME,
    UNSET,
    Render,
    field_changes,
    render_at_ref,
    review_markdown,
    summary_sections,
)

SUMMARY = "# gpu-platform: stack `dev`\n\n## Tenants\n\n| tenant |\n|---|\n| `a` |\n\n## Alerts\n\nnone\n"


def entry(urn: str, **inputs) -> dict:
    return {"urn": urn, "protect": False, "inputs": inputs}


BEFORE = Render(
    resources={
        "urn:a": entry("urn:a", spec={"limits": {"nvidia.com/gpu": "8"}, "weight": 10}),
        "urn:gone": entry("urn:gone"),
        "urn:same": entry("urn:same", x=1),
    },
    sections=summary_sections(SUMMARY),
)
AFTER = Render(
    resources={
        "urn:a": entry("urn:a", spec={"limits": {"nvidia.com/gpu": "16"}}),
        "urn:new": entry("urn:new"),
        "urn:same": entry("urn:same", x=1),
    },
    sections=summary_sections(SUMMARY.replace("| `a` |", "| `a` |\n| `b` |")),
)


def test_a_changed_resource_lists_each_changed_field_with_old_and_new() -> None:
    assert field_changes(BEFORE.resources["urn:a"], AFTER.resources["urn:a"]) == [
        ("inputs.spec.limits.nvidia.com/gpu", "8", "16"),
        ("inputs.spec.weight", 10, UNSET),
    ]


def test_the_review_lists_added_removed_and_changed_urns_and_the_tables_that_changed() -> None:
    review = review_markdown("dev", "HEAD", BEFORE, AFTER)
    assert "1 added, 1 removed, 1 changed (3 resources in the working tree's render)." in review
    assert "## Added\n\n- `urn:new`" in review
    assert "## Removed\n\n- `urn:gone`" in review
    assert "### `urn:a`\n\n- `inputs.spec.limits.nvidia.com/gpu`: `\"8\"` -> `\"16\"`\n" in review
    assert "- `inputs.spec.weight`: `10` -> (unset)" in review
    assert "urn:same" not in review
    assert "### Tenants\n\n```diff\n" in review and "+| `b` |" in review
    assert "### Alerts" not in review


def test_a_section_whose_heading_counts_something_is_compared_with_itself() -> None:
    before = summary_sections("# t\n\n## Resources (178)\n\n| a |\n")
    after = summary_sections("# t\n\n## Resources (191)\n\n| a |\n| b |\n")
    assert before.keys() == after.keys() == {"", "Resources"}


def test_no_change_says_so_and_the_exit_code_tells_the_two_apart() -> None:
    assert review_markdown("dev", "HEAD", BEFORE, BEFORE).endswith(
        "No changes: the working tree renders stack `dev` exactly as HEAD does.\n"
    )
    assert (EXIT_SAME, EXIT_CHANGED) == (0, 1)


def test_a_stack_the_ref_does_not_have_renders_as_empty(tmp_path: Path) -> None:
    assert render_at_ref("no-such-stack", "HEAD", tmp_path) == Render(resources={}, sections={})


def test_an_embedded_document_that_changed_is_shown_as_a_diff() -> None:
    before = Render({"urn:cm": entry("urn:cm", data={"config.yaml": "a: 1\nb: 2\n"})}, {})
    after = Render({"urn:cm": entry("urn:cm", data={"config.yaml": "a: 1\nb: 3\n"})}, {})
    review = review_markdown("dev", "HEAD", before, after)
    assert "- `inputs.data.config.yaml`:\n\n  ```diff\n" in review
    assert "  -b: 2\n  +b: 3\n" in review


# --- version warnings ----------------------------------------------------------------------------

import functools  # noqa: E402
import subprocess  # noqa: E402

import pytest  # noqa: E402
import yaml  # noqa: E402

from config.versions import CHARTS, ChartPin  # noqa: E402
from offline.__main__ import main as cli  # noqa: E402
from offline.diff import EXIT_FAILED, changes_found, kubernetes_version, warnings  # noqa: E402
from offline.stack import load_stack  # noqa: E402
from offline.versions_check import chart_override_problems, kubernetes_change_warnings  # noqa: E402

from .conftest import fixture_document, project_path  # noqa: E402


@pytest.mark.parametrize(
    "before, after, warning",
    [
        ("1.35", "1.34", "Kubernetes 1.35 -> 1.34 is a downgrade: EKS never moves a control plane back a minor"),
        (
            "1.33",
            "1.35",
            "Kubernetes 1.33 -> 1.35 skips a minor: EKS upgrades the control plane one minor at a time; deploy 1.34 first",
        ),
        ("1.34", "1.35", None),
        ("1.35", "1.35", None),
        (None, "1.35", None),  # a new stack
    ],
)
def test_a_kubernetes_change_eks_refuses_is_a_warning(before, after, warning):
    found = kubernetes_change_warnings(before, after)
    assert [line.split(" (docs")[0].split("; restore")[0] for line in found] == ([warning] if warning else [])


def test_the_review_puts_warnings_first_and_reads_the_clusters_version():
    cluster = {"urn": "urn:c", "type": "eks:index:Cluster", "inputs": {"version": "1.34"}}
    assert kubernetes_version(Render(resources={"urn:c": cluster}, sections={})) == "1.34"
    review = review_markdown("dev", "HEAD", BEFORE, AFTER, ["Kubernetes 1.35 -> 1.34 is a downgrade"])
    assert review.startswith("# Stack `dev`: HEAD -> working tree\n\n## Warnings\n\n- Kubernetes 1.35 -> 1.34 is a downgrade\n")


def pins(**versions: str) -> dict[str, ChartPin]:
    return {name: ChartPin(pin.chart, versions.get(name, pin.version), pin.repository) for name, pin in CHARTS.items()}


def test_a_chart_override_without_vendored_files_or_its_pair_is_one_line_each():
    problems = chart_override_problems({"karpenter": "1.14.2"}, pins(karpenter="1.14.2"))
    assert problems == [
        "gpu-platform:versions.charts.karpenter: '1.14.2' has no vendored files in upstream/karpenter/1.14.2/, so "
        "`validate` and the tests cannot check what it renders: pin it in config/versions.py and run "
        "`python -m offline vendor karpenter`, or drop the override",
        "gpu-platform:versions.charts: karpenter '1.14.2' and karpenter-crd '1.14.1' differ; karpenter-crd installs "
        "karpenter's CRDs and must move with it: set both to one version",
    ]
    # Both moved together: only the missing files remain; the pins as vendored: nothing.
    overrides = {"karpenter": "1.14.2", "karpenter-crd": "1.14.2"}
    both = chart_override_problems(overrides, pins(**overrides))
    assert [line.split(" has no vendored files")[0] for line in both] == [
        "gpu-platform:versions.charts.karpenter: '1.14.2'",
        "gpu-platform:versions.charts.karpenter-crd: '1.14.2'",
    ]
    assert chart_override_problems({"karpenter": "1.14.1"}, pins()) == []


def test_check_refuses_an_unvendored_chart_override_with_exit_2(tmp_path, monkeypatch, capsys):
    document = fixture_document("single-pool")
    document["gpu-platform:versions"] = {"charts": {"karpenter": "1.14.2"}}
    (tmp_path / "Pulumi.bumped.yaml").write_text(yaml.safe_dump({"config": document}))
    monkeypatch.setattr("offline.__main__.load_stack", functools.partial(load_stack, project_dir=tmp_path))
    assert cli(["check", "--stack", "bumped"]) == 2
    # The fixture's documentation CIDR is warned about on a line of its own (config/placeholders.py).
    err = [line for line in capsys.readouterr().err.splitlines() if ": warning: " not in line]
    assert len(err) == 2 and all(line.startswith("Pulumi.bumped.yaml: gpu-platform:versions.charts") for line in err)


@pytest.mark.stack_files
def test_the_review_warns_of_a_downgrade_in_the_direction_of_the_change():
    """`diff` reads the base render's cluster version as before and the working tree's as after: 1.35 in
    the base and 1.34 now is a downgrade EKS refuses; 1.34 -> 1.35 is an ordinary upgrade."""
    def cluster_at(version: str) -> Render:
        cluster = {"urn": "urn:c", "type": "eks:index:Cluster", "inputs": {"version": version}}
        return Render(resources={"urn:c": cluster}, sections={})

    found = warnings("dev", cluster_at("1.35"), cluster_at("1.34"))
    assert [line.split(" (docs")[0] for line in found] == [
        "Kubernetes 1.35 -> 1.34 is a downgrade: EKS never moves a control plane back a minor"
    ]
    assert warnings("dev", cluster_at("1.34"), cluster_at("1.35")) == []


# --- exit statuses: the module's for CI, make's for a person ----------------------------------------------


def test_a_change_ends_with_a_line_saying_so_and_what_changed() -> None:
    line = changes_found("dev", "HEAD", BEFORE, AFTER)
    assert line == (
        "changes found: stack dev renders 1 added, 1 removed, 1 changed against HEAD (exit 1: the review above, not an error)"
    )


@pytest.mark.parametrize(
    ("module_exit", "make_exit", "says_changes_found"),
    [(EXIT_SAME, 0, False), (EXIT_CHANGED, 0, True), (EXIT_FAILED, 2, False)],
)
def test_make_diff_succeeds_with_or_without_changes_and_fails_only_when_a_render_fails(
    tmp_path: Path, module_exit: int, make_exit: int, says_changes_found: bool
) -> None:
    # The recipe as written in the Makefile, with a stand-in interpreter exiting as `python -m offline diff` would.
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\necho '# the review'\nexit {module_exit}\n")
    python.chmod(0o755)
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / ".installed").touch()
    result = subprocess.run(
        ["make", "-s", "-C", str(project_path()), "diff", f"PY={python}", f"VENV={venv}", "STACK=dev", "BASE=main"],
        capture_output=True, text=True, check=False,
    )
    assert result.returncode == make_exit, result.stdout + result.stderr
    assert result.stdout.startswith("# the review\n")
    changes_line = "make diff: changes found in stack dev against main, listed above\n"
    assert (changes_line in result.stdout) is says_changes_found
    assert ("Error" in result.stderr) is (make_exit != 0)
