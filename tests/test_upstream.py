"""upstream/ holds, for every pinned chart, the upstream files the tests check against, each traceable to its source."""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import re
import subprocess

import pytest

import offline.upstream
from config.versions import CHARTS, ChartPin
from offline import vendor
from offline.engine import Recording
from offline.render import helm_releases, kubernetes_objects
from offline.upstream import (
    CHART_SOURCES,
    UPSTREAM_DIR,
    ChartSource,
    MissingUpstream,
    chart_metadata,
    chart_values,
    crd_documents,
    sources,
    subchart_values,
)

from .conftest import FIXTURES, fixture_document, load, render_fixture

# Every fixture stack; single-pool-dra installs the DRA driver's chart.
DRA_CASE = "single-pool-dra"


def _chart_yaml(chart: str, version: str) -> dict:
    return chart_metadata(chart, version)


@pytest.mark.parametrize("chart", CHARTS)
def test_every_pinned_chart_is_vendored_from_the_tag_of_its_pin(chart):
    version = CHARTS[chart].version
    source = CHART_SOURCES[chart]
    chart_yaml = f"{chart}/{version}/Chart.yaml"
    row = next(row for row in sources() if row.file == chart_yaml)
    assert (row.repository, row.tag) == (source.repository, source.tag.format(version=version))
    if source.release_stamps_version:
        assert _chart_yaml(chart, version)["version"] != version, (
            f"{chart_yaml} at {row.tag} now carries its version: drop release_stamps_version in CHART_SOURCES"
        )
    else:
        assert _chart_yaml(chart, version)["version"] == version


def test_every_vendored_file_is_in_sources_with_its_sha256():
    on_disk = {
        path.relative_to(UPSTREAM_DIR).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in UPSTREAM_DIR.rglob("*")
        if path.is_file() and path.parent != UPSTREAM_DIR
    }
    assert {row.file: row.sha256 for row in sources()} == on_disk


def test_every_sources_row_names_a_commit_and_a_license():
    for row in sources():
        # A file taken from a released wheel (`pypi/<name>`, offline/metrics_inventory.py) names the
        # commit its vllm/_version.py records, abbreviated as setuptools-scm writes it.
        commit = r"[0-9a-f]{7,40}" if row.repository.startswith("pypi/") else r"[0-9a-f]{40}"
        assert re.fullmatch(commit, row.commit) and row.license, row


@pytest.mark.parametrize("chart", CHARTS)
def test_a_bumped_pin_without_vendored_files_names_the_folder_and_the_command(chart, monkeypatch):
    monkeypatch.setitem(CHARTS, chart, ChartPin(CHARTS[chart].chart, "99.0.0", CHARTS[chart].repository))
    for read in (chart_values, lambda name, version: crd_documents({name: version})):
        with pytest.raises(MissingUpstream) as caught:
            read(chart, CHARTS[chart].version)
        assert f"upstream/{chart}/99.0.0/ is missing" in str(caught.value)
        assert f"`python -m offline vendor {chart}`" in str(caught.value)


def built_in_kinds(kubernetes_version: str) -> set[tuple[str, str]]:
    """(apiVersion, kind) of every type the Kubernetes version serves itself (its OpenAPI definitions)."""
    folder = importlib.resources.files("kubernetes_validate") / "kubernetes-json-schema" / f"v{kubernetes_version}.0-local"
    definitions = json.loads((folder / "_definitions.json").read_text())["$defs"]
    return {
        (f"{gvk['group']}/{gvk['version']}" if gvk["group"] else gvk["version"], gvk["kind"])
        for definition in definitions.values()
        for gvk in definition.get("x-kubernetes-group-version-kind", [])
    }


def installed_charts(recording: Recording) -> dict[str, str]:
    """{chart: version} of the Helm releases the render installs."""
    names = {pin.chart: name for name, pin in CHARTS.items()}
    return {names[release["chart"]]: release["version"] for release in helm_releases(recording)}


def served_kinds(crds: list[dict]) -> set[tuple[str, str]]:
    return {
        (f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"])
        for crd in crds
        for version in crd["spec"]["versions"]
        if version.get("served")
    }


@pytest.mark.parametrize("case", FIXTURES)
def test_every_custom_kind_a_render_declares_is_served_by_a_crd_its_charts_install(case):
    recording = render_fixture(case)
    built_in = built_in_kinds(load(fixture_document(case)).cluster.kubernetes_version)
    declared = {(obj["apiVersion"], obj["kind"]) for obj in kubernetes_objects(recording)}
    custom = declared - built_in
    assert custom, "the render declares no custom resources: is the built-in list wrong?"
    assert custom - served_kinds(crd_documents(installed_charts(recording))) == set()


def test_the_dra_render_installs_the_dra_driver_chart():
    assert "dra-driver-nvidia-gpu" in installed_charts(render_fixture(DRA_CASE))


@pytest.mark.parametrize("case", FIXTURES)
def test_every_subchart_a_render_sets_values_for_has_vendored_defaults(case):
    for release in helm_releases(render_fixture(case)):
        chart = next(name for name, pin in CHARTS.items() if pin.chart == release["chart"])
        dependencies = {d["name"] for d in _chart_yaml(chart, release["version"]).get("dependencies") or []}
        configured = dependencies & set(release["values"])
        assert configured <= set(subchart_values(chart, release["version"])), chart


# --- the vendor command --------------------------------------------------------------------------

APACHE = "                                 Apache License\n                           Version 2.0, January 2004\n"


def _git(repo, *args: str) -> str:
    command = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *args]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def demo(tmp_path, monkeypatch):
    """A one-chart upstream repository tagged v1.2.3, and an empty upstream/ that vendors it."""
    repo = tmp_path / "demo"
    files = {
        "LICENSE": APACHE,
        "chart/Chart.yaml": "name: demo\nversion: 1.2.3\n",
        "chart/values.yaml": "replicas: 1  # kept verbatim, comments too\n",
        "crds/demo.example.com_widgets.yaml": "kind: CustomResourceDefinition\n",
        "crds/README.md": "not a CRD\n",
    }
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    _git(tmp_path, "init", "-q", str(repo))
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "demo")
    _git(repo, "tag", "v1.2.3")
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    monkeypatch.setattr(vendor, "UPSTREAM_DIR", upstream)
    monkeypatch.setattr(vendor, "SOURCES_FILE", upstream / "SOURCES")
    monkeypatch.setattr(offline.upstream, "SOURCES_FILE", upstream / "SOURCES")
    monkeypatch.setattr(vendor, "CHARTS", {"demo": ChartPin("demo", "1.2.3")})
    monkeypatch.setattr(
        vendor, "CHART_SOURCES", {"demo": ChartSource("example/demo", "v{version}", "chart", crds=("crds/*.yaml",))}
    )
    return repo, upstream, files


def test_vendor_copies_the_tagged_files_verbatim_and_records_them(demo):
    repo, upstream, files = demo
    assert vendor.main(["demo"], [f"example/demo={repo}"]) == 0
    copied = {
        "demo/1.2.3/Chart.yaml": "chart/Chart.yaml",
        "demo/1.2.3/values.yaml": "chart/values.yaml",
        "demo/1.2.3/crds/demo.example.com_widgets.yaml": "crds/demo.example.com_widgets.yaml",
    }
    for file, path in copied.items():
        assert (upstream / file).read_text() == files[path]
    commit = _git(repo, "rev-parse", "HEAD")
    assert {(r.file, r.repository, r.tag, r.commit, r.path, r.license) for r in offline.upstream.sources()} == {
        (file, "example/demo", "v1.2.3", commit, path, "Apache-2.0") for file, path in copied.items()
    }


def test_vendor_refuses_a_changed_license_and_leaves_upstream_as_it_was(demo, monkeypatch):
    repo, upstream, _ = demo
    assert vendor.main(["demo"], [f"example/demo={repo}"]) == 0
    before = {p: p.read_bytes() for p in upstream.rglob("*") if p.is_file()}
    monkeypatch.setattr(vendor, "CHART_SOURCES", {"demo": ChartSource("example/demo", "v{version}", "chart", license="MIT")})
    assert vendor.main(["demo"], [f"example/demo={repo}"]) == 1
    assert {p: p.read_bytes() for p in upstream.rglob("*") if p.is_file()} == before


def test_a_parsed_file_is_read_back_from_its_cache_as_parsed_and_a_changed_file_is_parsed_again(tmp_path, monkeypatch):
    monkeypatch.setattr(offline.upstream, "_PARSED_DIR", tmp_path)
    monkeypatch.setattr(offline.upstream.sys, "dont_write_bytecode", False)
    text = "kind: A\nspec:\n  items: [1, 2.5, '3']\n  anchor: &shared {x: y}\n  again: *shared\nop: =\n---\nkind: B\n"
    first = offline.upstream._parsed(text, every_document=True)
    assert first == [{"kind": "A", "spec": {"items": [1, 2.5, "3"], "anchor": {"x": "y"}, "again": {"x": "y"}}, "op": "="},
                     {"kind": "B"}]
    assert len(list(tmp_path.glob("*.pickle"))) == 1
    assert offline.upstream._parsed(text, every_document=True) == first
    # A cache entry is only ever the parse of the very text it is named for.
    assert offline.upstream._parsed(text.replace("kind: B", "kind: C"), every_document=True)[1] == {"kind": "C"}
    assert offline.upstream._parsed("kind: A\n", every_document=False) == {"kind": "A"}
    assert len(list(tmp_path.glob("*.pickle"))) == 3
    assert not list(tmp_path.glob("*.tmp"))
