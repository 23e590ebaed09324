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
