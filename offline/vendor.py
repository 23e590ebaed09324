"""`python -m offline vendor [CHART ...] [--from-git DIR ...]`: copy the pinned charts' upstream files into upstream/.

For each chart (default: all of `config.versions.CHARTS`) it replaces `upstream/<chart>/<pinned version>/`
with the files `offline.upstream.CHART_SOURCES` names, byte for byte from the tag, and rewrites their rows
of upstream/SOURCES. A repository is read from a `--from-git` git dir when one is given for it, otherwise
from a shallow, blob-less clone of github.com/<owner>/<name> at the tag.
"""

from __future__ import annotations

import csv
import fnmatch
import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath

import yaml

from config.versions import CHARTS

from .upstream import (
    CHART_SOURCES,
    SOURCES_FILE,
    SOURCES_HEADER,
    UPSTREAM_DIR,
    ChartSource,
    Source,
    sources,
)

_LICENSE_FILES = ("LICENSE", "LICENSE.md", "LICENSE.txt", "COPYING")
_LICENSE_TEXTS = {
    "Apache-2.0": re.compile(r"Apache License\s+Version 2\.0"),
    "MIT": re.compile(r"Permission is hereby granted, free of charge"),
}
_GITHUB_REMOTE = re.compile(r"github\.com[/:]([\w.-]+/[\w.-]+?)(?:\.git)?/?$")


class VendorError(Exception):
    pass


class Repositories:
    """Git objects of upstream repositories, from given git dirs or from clones made on demand."""

    def __init__(self, git_dirs: Mapping[str, Path], scratch: Path):
        self._git_dirs = dict(git_dirs)
        self._scratch = scratch
        self._licenses: dict[tuple[str, str], str] = {}

    def show(self, repository: str, tag: str, path: str) -> bytes:
        return self._git(repository, tag, "show", f"{tag}:{path}")

    def commit(self, repository: str, tag: str) -> str:
        return self._git(repository, tag, "rev-parse", "--verify", f"{tag}^{{commit}}").decode().strip()

    def glob(self, repository: str, tag: str, pattern: str) -> list[str]:
        folder = str(PurePosixPath(pattern).parent)
        listing = self._git(repository, tag, "ls-tree", "--name-only", tag, f"{folder}/").decode().split("\n")
        matches = sorted(path for path in listing if path and fnmatch.fnmatchcase(path, pattern))
        if not matches:
            raise VendorError(f"{repository} {tag}: no file matches {pattern}")
        return matches

    def license(self, repository: str, tag: str) -> str:
        """The SPDX id of the repository's license file at the tag."""
        if (repository, tag) not in self._licenses:
            self._licenses[repository, tag] = self._read_license(repository, tag)
        return self._licenses[repository, tag]

    def _read_license(self, repository: str, tag: str) -> str:
        names = set(self._git(repository, tag, "ls-tree", "--name-only", tag).decode().split("\n"))
        name = next((n for n in _LICENSE_FILES if n in names), None)
        if name is None:
            raise VendorError(f"{repository} {tag}: no license file ({', '.join(_LICENSE_FILES)})")
        text = self.show(repository, tag, name).decode(errors="replace")
        found = [spdx for spdx, pattern in _LICENSE_TEXTS.items() if pattern.search(text)]
        if len(found) != 1:
            raise VendorError(f"{repository} {tag}: {name} is none of {', '.join(_LICENSE_TEXTS)}; identify it by hand")
        return found[0]

    def _git(self, repository: str, tag: str, *args: str) -> bytes:
        result = subprocess.run(["git", "-C", str(self._dir(repository, tag)), *args], check=False, capture_output=True)
        if result.returncode != 0:
            raise VendorError(f"{repository} {tag}: git {' '.join(args)}: {result.stderr.decode().strip()}")
        return result.stdout

    def _dir(self, repository: str, tag: str) -> Path:
        if repository in self._git_dirs:
            return self._git_dirs[repository]
        clone = self._scratch / f"{repository.replace('/', '+')}@{tag}"
        if not clone.exists():
            url = f"https://github.com/{repository}"
            command = ["git", "clone", "--quiet", "--depth", "1", "--branch", tag, "--filter=blob:none", "--no-checkout"]
            result = subprocess.run([*command, url, str(clone)], check=False, capture_output=True)
            if result.returncode != 0:
                raise VendorError(f"cloning {url} at {tag}: {result.stderr.decode().strip()}")
        return clone


def vendor_chart(chart: str, version: str, repos: Repositories, root: Path) -> list[Source]:
    """Write the chart's upstream files to <root>/<chart>/<version>/; return their SOURCES rows."""
    source = CHART_SOURCES[chart]
    tag = source.tag.format(version=version)
    out = root / chart / version
    rows = [_copy(repos, source.repository, tag, f"{source.chart}/{name}", root, out / name, source.license)
            for name in ("Chart.yaml", "values.yaml")]
    crd_repository = source.crd_repository or source.repository
    for pattern in source.crds:
        for path in repos.glob(crd_repository, tag, pattern):
            target = out / "crds" / PurePosixPath(path).name
            rows.append(_copy(repos, crd_repository, tag, path, root, target, source.license))
    for pattern in source.templates:
        for path in repos.glob(source.repository, tag, pattern):
            target = out / "templates" / PurePosixPath(path).name
            rows.append(_copy(repos, source.repository, tag, path, root, target, source.license))
    dependencies = _dependency_versions(chart, version, out / "Chart.yaml", source)
    for sub in source.subcharts:
        sub_tag = sub.tag.format(version=dependencies[sub.name], parent_tag=tag)
        for name in ("Chart.yaml", "values.yaml"):
            target = out / "charts" / sub.name / name
            rows.append(_copy(repos, sub.repository, sub_tag, f"{sub.chart}/{name}", root, target, sub.license))
        for pattern in sub.crds:
            for path in repos.glob(sub.repository, sub_tag, pattern):
                target = out / "charts" / sub.name / "crds" / PurePosixPath(path).name
                rows.append(_copy(repos, sub.repository, sub_tag, path, root, target, sub.license))
    return rows


def _dependency_versions(chart: str, version: str, chart_yaml: Path, source: ChartSource) -> dict[str, str]:
    declared = {d["name"]: str(d["version"]) for d in yaml.safe_load(chart_yaml.read_text()).get("dependencies") or []}
    for sub in source.subcharts:
        if sub.name not in declared:
            raise VendorError(f"{chart} {version} no longer depends on {sub.name}: remove it from CHART_SOURCES")
        if not re.fullmatch(r"\d+\.\d+\.\d+", declared[sub.name]):
            raise VendorError(f"{chart} {version} depends on {sub.name} {declared[sub.name]!r}, not one release")
    return declared


def _copy(repos: Repositories, repository: str, tag: str, path: str, root: Path, target: Path, license: str) -> Source:
    found = repos.license(repository, tag)
    if found != license:
        raise VendorError(f"{repository} {tag} is licensed {found}, CHART_SOURCES says {license}: review, then update it")
    data = repos.show(repository, tag, path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return Source(
        file=target.relative_to(root).as_posix(),
        repository=repository,
        tag=tag,
        commit=repos.commit(repository, tag),
        path=path,
        sha256=hashlib.sha256(data).hexdigest(),
        license=found,
    )


def write_sources(rows: Iterable[Source], replaced: Iterable[str]) -> None:
    """Rewrite SOURCES: rows under the `replaced` folders give way to `rows`; rows of removed files go."""
    prefixes = tuple(f"{folder}/" for folder in replaced)
    kept = [
        row
        for row in (sources() if SOURCES_FILE.exists() else [])
        if not row.file.startswith(prefixes) and (UPSTREAM_DIR / row.file).is_file()
    ]
    with SOURCES_FILE.open("w", newline="") as handle:
        writer = csv.writer(handle, delimiter="\t", lineterminator="\n")
        writer.writerow(SOURCES_HEADER)
        for row in sorted([*kept, *rows], key=lambda r: r.file):
            writer.writerow([getattr(row, name) for name in SOURCES_HEADER])


def git_dir_repository(value: str) -> tuple[str, Path]:
    """`owner/name=DIR`, or a DIR whose origin remote or `<owner>+<name>` folder names the repository."""
    if "=" in value:
        repository, _, given = value.partition("=")
        return repository, Path(given)
    folder = Path(value)
    command = ["git", "-C", value, "config", "--get", "remote.origin.url"]
    match = _GITHUB_REMOTE.search(subprocess.run(command, check=False, capture_output=True, text=True).stdout.strip())
    if match:
        return match.group(1), folder
    named = next((part for part in reversed(folder.resolve().parts) if part.count("+") == 1), None)
    if named is None:
        raise VendorError(f"--from-git {value}: name its repository as owner/name={value}")
    return named.replace("+", "/"), folder


def main(charts: list[str], from_git: list[str]) -> int:
    unknown = [chart for chart in charts if chart not in CHARTS]
    if unknown:
        print(f"error: unknown chart {', '.join(unknown)}; known: {', '.join(CHARTS)}", file=sys.stderr)
        return 2
    folders, rows = [], []
    with tempfile.TemporaryDirectory(prefix="vendor-") as scratch:
        # Files land in `staged` first, so a failure leaves upstream/ as it was.
        staged = Path(scratch) / "upstream"
        try:
            repos = Repositories(dict(git_dir_repository(value) for value in from_git), Path(scratch))
            for chart in charts or list(CHARTS):
                version = CHARTS[chart].version
                rows += vendor_chart(chart, version, repos, staged)
                folders.append(f"{chart}/{version}")
        except VendorError as err:
            print(f"error: {err}", file=sys.stderr)
            return 1
        for folder in folders:
            shutil.rmtree(UPSTREAM_DIR / folder, ignore_errors=True)
            (UPSTREAM_DIR / folder).parent.mkdir(parents=True, exist_ok=True)
            shutil.move(staged / folder, UPSTREAM_DIR / folder)
            print(f"vendored upstream/{folder}/")
    write_sources(rows, folders)
    print(f"wrote {len(rows)} files and their rows in {SOURCES_FILE.relative_to(UPSTREAM_DIR.parent)}")
    return 0
