"""The docs point at things that exist: every relative link, every repository path, every guide indexed.

- Every relative link in README.md and docs/*.md (`[text](target)`, images too) names a file or folder
  of the project, and its `#anchor`, when it has one, a heading of that file.
- Every repository path the prose names (`components/karpenter/`, `docs/tenants.md`, `Pulumi.dev.yaml`)
  exists, so a module that moves or becomes a package cannot leave a guide pointing at nothing.
- The README's "Documentation" index links every guide in docs/, so a new guide is found by skimming.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .conftest import project_path

DOCUMENTS = ("README.md", *sorted(f"docs/{path.name}" for path in project_path("docs").glob("*.md")))
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
# The project's top-level folders and files a doc may name; `build/` is generated, so left out.
_TOP = r"(?:config|components|models|offline|sim|tests|docs|upstream|workloads|schema|scripts)/[\w./-]*"
_ROOT_FILES = (
    r"Makefile|Pulumi\.yaml|Pulumi\.(?:dev|prod)\.yaml|requirements[\w-]*\.txt|pyproject\.toml|pytest\.ini|__main__\.py|\.ci/run"
)
# A path starts a token: not after a letter, a slash (an upstream or URL path) or a dot.
_PATH = re.compile(rf"(?<![\w/.<-])(?:{_TOP}|(?:{_ROOT_FILES})(?![\w.-]))")


def text_of(name: str) -> str:
    return project_path(name).read_text()


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lowercase, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = _FENCE.sub("", path.read_text())
    return {slug(line.lstrip("#")) for line in text.splitlines() if line.startswith("#")}


def relative_links(name: str) -> list[str]:
    return [t for t in _LINK.findall(_FENCE.sub("", text_of(name))) if not re.match(r"^[a-z]+:", t)]


def broken_link(name: str, target: str) -> str | None:
    """Why `target`, linked from document `name`, does not resolve; None when it does."""
    file_part, _, anchor = target.partition("#")
    path = (project_path(name).parent / file_part).resolve() if file_part else project_path(name)
    if not path.exists():
        return f"{file_part} does not exist"
    if anchor and path.suffix == ".md" and anchor not in anchors(path):
        return f"{path.name} has no heading #{anchor}"
    return None


@pytest.mark.parametrize("name", DOCUMENTS)
def test_every_relative_link_resolves(name):
    broken = {target: why for target in relative_links(name) if (why := broken_link(name, target))}
    assert broken == {}, f"{name}: fix or remove these links"


def repository_paths(name: str) -> set[str]:
    return {match.rstrip(".,:;") for match in _PATH.findall(text_of(name))}


@pytest.mark.parametrize("name", DOCUMENTS)
def test_every_repository_path_a_doc_names_exists(name):
    missing = sorted(path for path in repository_paths(name) if not project_path(path).exists())
    assert missing == [], f"{name} names paths the repository does not have"


def test_the_readme_indexes_every_guide_in_docs():
    readme = text_of("README.md")
    index = readme[readme.index("\n## Documentation\n") :]
    index = index[: index.find("\n## ", 1)]
    linked = {target.partition("#")[0] for target in _LINK.findall(index)}
    guides = {f"docs/{path.name}" for path in project_path("docs").glob("*.md")}
    assert guides - linked == set(), "add a row for each to the README's Documentation table"


def test_the_checks_see_what_they_check():
    """The patterns find links and paths at all: the README's index, and the paths the guides name."""
    assert "docs/tenants.md" in relative_links("README.md")
    assert {"components/karpenter/", "config/versions.py"} <= repository_paths("docs/upgrading.md")
    assert broken_link("README.md", "docs/tenants.md#onboarding-and-offboarding") is None
    assert broken_link("README.md", "docs/tenants.md#no-such-heading") == "tenants.md has no heading #no-such-heading"
    assert broken_link("docs/tenants.md", "karpenter.md") == "karpenter.md does not exist"
    assert repository_paths("README.md") >= {"Pulumi.dev.yaml", "Makefile"}
    assert "pkg/scheduler/framework" not in " ".join(repository_paths("docs/time-to-gpu.md"))
