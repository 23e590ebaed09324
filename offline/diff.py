"""`python -m offline diff --stack dev [--base REF]`: what a change to the working tree does to a stack.

The stack is rendered twice: at a git ref (default `HEAD`), from that ref's own code and stack
file exported into a temporary directory, and from the working tree. The two plan.json files are
compared by URN and the two summary.md files by section, and the review is printed as markdown:

- resources added and removed, by URN;
- resources changed, by URN, with every changed field (`inputs.spec.limits.nvidia.com/gpu: 8 -> 16`);
- the summary tables that changed, as a diff of each.

Exit codes, as `diff` and `git diff --exit-code` use them: 0 the two renders are the same, 1 they
differ, 2 a render failed (invalid config at either side, or a ref git does not know). Exit 1 comes
after a last line on stderr, `changes found: ...`, so that a change never reads as a failure;
`make diff` turns it into exit 0 (Makefile, docs/rendering.md).
"""

from __future__ import annotations

import difflib
import io
import json
import re
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .engine import PROJECT_DIR
from .versions_check import chart_override_problems, kubernetes_change_warnings

EXIT_SAME = 0
EXIT_CHANGED = 1
EXIT_FAILED = 2
_MAX_VALUE = 100
EKS_CLUSTER = "eks:index:Cluster"


class RenderFailed(Exception):
    """One side could not be rendered; the message says which and why."""


@dataclass(frozen=True)
class Render:
    """What the review compares: plan.json's entries by URN, and summary.md's sections by heading."""

    resources: dict[str, dict[str, Any]]
    sections: dict[str, str]


def main(stack: str, base: str) -> int:
    try:
        with tempfile.TemporaryDirectory(prefix="gpu-platform-diff-") as scratch:
            before = render_at_ref(stack, base, Path(scratch))
            after = render_directory(PROJECT_DIR, stack, Path(scratch) / "after")
    except RenderFailed as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_FAILED
    review = review_markdown(stack, base, before, after, warnings(stack, before, after))
    print(review, end="")
    if before == after:
        return EXIT_SAME
    print(changes_found(stack, base, before, after), file=sys.stderr)
    return EXIT_CHANGED


def changes_found(stack: str, base: str, before: Render, after: Render) -> str:
    """The outcome of a diff that found changes, in one line: what changed, and that it is not an error."""
    added = len(after.resources.keys() - before.resources.keys())
    removed = len(before.resources.keys() - after.resources.keys())
    changed = sum(1 for urn in before.resources.keys() & after.resources.keys() if before.resources[urn] != after.resources[urn])
    return (
        f"changes found: stack {stack} renders {added} added, {removed} removed, {changed} changed against {base} "
        f"(exit {EXIT_CHANGED}: the review above, not an error)"
    )


def render_at_ref(stack: str, ref: str, scratch: Path) -> Render:
    """Export `ref` of the project's repository into `scratch` and render the stack with that code.

    A stack file the ref does not have renders as an empty stack: every resource is then added.
    """
    tree = scratch / "base"
    tree.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(PROJECT_DIR), "archive", "--format=tar", ref], capture_output=True, check=False
    )
    if archive.returncode != 0:
        raise RenderFailed(f"git cannot export {ref!r}: {archive.stderr.decode(errors='replace').strip()}")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(tree, filter="data")
    if not (tree / f"Pulumi.{stack}.yaml").is_file():
        return Render(resources={}, sections={})
    return render_directory(tree, stack, scratch / "before", label=ref)


def render_directory(project: Path, stack: str, out: Path, label: str = "the working tree") -> Render:
    """Render `stack` with the code in `project` (a separate interpreter, so each side runs its own code)."""
    result = subprocess.run(
        [sys.executable, "-m", "offline", "render", "--stack", stack, "--out", str(out)],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise RenderFailed(f"stack {stack} does not render at {label}:\n{result.stderr.strip()}")
    return read_render(out)


def read_render(out: Path) -> Render:
    plan = json.loads((out / "plan.json").read_text())
    return Render(resources={entry["urn"]: entry for entry in plan}, sections=summary_sections((out / "summary.md").read_text()))


def summary_sections(summary: str) -> dict[str, str]:
    """summary.md by `## ` heading; the text before the first heading is the title.

    A count in a heading (`Resources (191)`) is left out of its key, so the section compares with
    itself when the count changes.
    """
    sections: dict[str, str] = {}
    heading = ""
    for line in summary.splitlines(keepends=True):
        if line.startswith("## "):
            heading = re.sub(r"\s*\(\d+\)$", "", line[3:].strip())
        sections[heading] = sections.get(heading, "") + line
    return sections


def kubernetes_version(render: Render) -> str | None:
    """The control plane's minor in a render: the EKS cluster's `version` input."""
    return next(
        (entry["inputs"].get("version") for entry in render.resources.values() if entry.get("type") == EKS_CLUSTER), None
    )


def warnings(stack: str, before: Render, after: Render) -> list[str]:
    """A Kubernetes version change EKS refuses, and the working tree's chart overrides `check` refuses."""
    from .stack import load_config, load_stack

    found = kubernetes_change_warnings(kubernetes_version(before), kubernetes_version(after))
    config = load_config(load_stack(stack))
    return found + chart_override_problems(config.versions.charts, config.charts)


def review_markdown(stack: str, base: str, before: Render, after: Render, warned: Sequence[str] = ()) -> str:
    added = sorted(after.resources.keys() - before.resources.keys())
    removed = sorted(before.resources.keys() - after.resources.keys())
    changed = {
        urn: field_changes(before.resources[urn], after.resources[urn])
        for urn in sorted(before.resources.keys() & after.resources.keys())
        if before.resources[urn] != after.resources[urn]
    }
    tables = [
        heading
        for heading in [*after.sections, *(h for h in before.sections if h not in after.sections)]
        if heading and before.sections.get(heading) != after.sections.get(heading)
    ]
    lines = [f"# Stack `{stack}`: {base} -> working tree", ""]
    if warned:
        lines += ["## Warnings", "", *(f"- {line}" for line in warned), ""]
    if not (added or removed or changed or tables):
        lines.append(f"No changes: the working tree renders stack `{stack}` exactly as {base} does.")
        return "\n".join(lines) + "\n"
    lines.append(
        f"{len(added)} added, {len(removed)} removed, {len(changed)} changed "
        f"({len(after.resources)} resources in the working tree's render)."
    )
    for title, urns in (("Added", added), ("Removed", removed)):
        if urns:
            lines += ["", f"## {title}", "", *(f"- `{urn}`" for urn in urns)]
    if changed:
        lines += ["", "## Changed"]
        for urn, fields in changed.items():
            lines += ["", f"### `{urn}`", ""]
            for path, old, new in fields:
                if isinstance(old, str) and isinstance(new, str) and "\n" in old + new:
                    # Embedded documents (a ConfigMap's file, Helm values as text) read best as a diff.
                    lines += [f"- `{path}`:", "", "  ```diff", *(f"  {line}" for line in _section_diff(old, new)), "  ```"]
                else:
                    lines.append(f"- `{path}`: {_value(old)} -> {_value(new)}")
    if tables:
        lines += ["", "## Summary tables that changed"]
        for heading in tables:
            diff = _section_diff(before.sections.get(heading, ""), after.sections.get(heading, ""))
            lines += ["", f"### {heading}", "", "```diff", *diff, "```"]
    return "\n".join(lines) + "\n"


# A field one side does not have; the review shows it as `(unset)`.
UNSET = object()


def field_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """Every leaf that differs, as (dotted path, old, new); a missing side is shown as `(unset)`."""
    old, new = dict(_leaves(before)), dict(_leaves(after))
    return [
        (path, old.get(path, UNSET), new.get(path, UNSET))
        for path in sorted(old.keys() | new.keys())
        if old.get(path, UNSET) != new.get(path, UNSET)
    ]


def _leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from _leaves(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            yield from _leaves(item, f"{path}[{index}]")
    else:
        yield path, value


def _value(value: Any) -> str:
    if value is UNSET:
        return "(unset)"
    text = json.dumps(value, sort_keys=True)
    return f"`{text if len(text) <= _MAX_VALUE else text[: _MAX_VALUE - 3] + '...'}`"


def _section_diff(before: str, after: str) -> list[str]:
    return [
        line.rstrip("\n")
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=1)
        if not line.startswith(("---", "+++"))
    ]
