"""`python -m offline validate <render dir> [--k8s-version 1.35]`: a render against what the cluster will accept.

- Built-in kinds: against the Kubernetes version the render deploys (kubernetes-validate's strict
  schemas, `offline/builtin_kinds.py`); an apiVersion that version does not serve is a problem.
- Custom resources: against the CRDs the render's Helm releases install, at the chart versions they
  pin (`upstream/<chart>/<version>/crds/`), and any CRD the manifests declare themselves: served and
  not deprecated, the version's schema with defaults applied (`offline/openapi.py`), CEL rules where
  cel-python can evaluate them (`models/kubernetes/cel.py`).
- Every object: the API server's name, namespace and label syntax.
- Helm values: every key path a release sets exists in the chart's default values.yaml (subchart
  keys in the vendored subchart's), except beneath a default the chart leaves free-form: an empty
  map, null, or a map keyed by label keys (`nodeSelector: {kubernetes.io/os: linux}`). Lists are
  not descended into.
- Ownership: no object (kind, namespace, name) is created by two releases, or by a release and the
  manifests, for the charts whose templates are vendored (offline/chart_objects.py): Helm refuses to
  install an object another release owns (models/helm.py).

Output: one line per problem, `<file>#<document> <apiVersion> <kind> <namespace/name>: <path>: <reason>`
(documents count from 1) or `helm/<release>.yaml <chart> <version>: values.<path>: <reason>`, then
`N objects checked, M problems, K CEL rules not evaluated` (N counts Helm releases too; K counts
distinct rules). Exit codes: 0 no problems, 1 problems, 2 usage errors.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from config.errors import counted
from models.helm import ObjectKey
from models.kubernetes.cel import CelResult, cel_findings

from . import chart_objects, upstream
from .builtin_kinds import built_in_findings, is_built_in_group, object_meta_findings, supported_versions
from .helm_values import chart_key, release_problems
from .object_meta import metadata_findings
from .openapi import OBJECT_FIELDS, Finding, dotted, schema_findings, with_defaults

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# The engine records the EKS cluster's inputs in plan.json; `version` is the Kubernetes minor it deploys.
_CLUSTER_TYPE = "eks:index:Cluster"


class UsageError(Exception):
    """The check cannot run: no render there, or no Kubernetes version to check against."""


@dataclass
class Report:
    problems: list[str] = field(default_factory=list)
    objects: int = 0
    cel_not_evaluated: int = 0

    def summary(self) -> str:
        problems, rules = len(self.problems), self.cel_not_evaluated
        return (f"{counted(self.objects, 'object')} checked, {counted(problems, 'problem')}, "
                f"{counted(rules, 'CEL rule')} not evaluated")


def main(render_dir: Path, kubernetes_version: str | None) -> int:
    try:
        report = validate_render(render_dir, kubernetes_version)
    except UsageError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for line in report.problems:
        print(line)
    print(report.summary())
    return 1 if report.problems else 0


def validate_render(render_dir: Path, kubernetes_version: str | None = None) -> Report:
    """Every object of `manifests.yaml` and every release of `helm/`; the version defaults to the render's."""
    render_dir = Path(render_dir)
    if not (render_dir / "manifests.yaml").is_file():
        raise UsageError(f"{render_dir} is not a render directory (no manifests.yaml): `python -m offline render` writes one")
    version = _minor(kubernetes_version) if kubernetes_version else recorded_kubernetes_version(render_dir)
    if version not in supported_versions():
        raise UsageError(f"no schemas for Kubernetes {version}; kubernetes-validate has {', '.join(supported_versions())}")
    documents = _documents(render_dir / "manifests.yaml")
    releases = {path.name: _release(path) for path in sorted((render_dir / "helm").glob("*.yaml"))}
    crds = CustomResourceDefinitions.installed_by(releases.values())
    for index, document in documents:
        if isinstance(document, dict) and document.get("kind") == "CustomResourceDefinition":
            crds.add(document, f"manifests.yaml#{index}")  # a malformed one adds nothing; its own check says why

    report = Report(objects=len(documents) + len(releases))
    not_evaluated: set[tuple[str, str, str]] = set()
    for index, document in documents:
        result = object_findings(document, crds, version)
        label = object_label(f"manifests.yaml#{index}", document)
        report.problems += [f"{label}: {dotted(f.path)}: {f.reason}" for f in result.findings]
        not_evaluated |= {(document["apiVersion"], document["kind"], rule) for rule in result.not_evaluated}
    for name, release in releases.items():
        report.problems += release_problems(f"helm/{name}", release)
    report.problems += ownership_problems(releases, documents)
    report.cel_not_evaluated = len(not_evaluated)
    return report


def ownership_problems(releases: Mapping[str, Mapping[str, Any]], documents: Iterable[tuple[int, Any]]) -> list[str]:
    """Objects two releases, or a release and the manifests, would both create (offline/chart_objects.py)."""
    parsed = {
        f"helm/{name}": chart_objects.Release(
            str(r.get("chart")), str(r.get("version")), str(r.get("name")), str(r.get("namespace")), r.get("values") or {}
        )
        for name, r in releases.items()
        if isinstance(r.get("values") or {}, dict)
    }
    declared = {}
    for index, document in documents:
        metadata = document.get("metadata") if isinstance(document, dict) else None
        if isinstance(metadata, dict) and isinstance(metadata.get("name"), str):
            key = ObjectKey(str(document.get("kind")), str(metadata.get("namespace") or ""), metadata["name"])
            declared[f"manifests.yaml#{index}"] = [key]
    try:
        return chart_objects.conflicts(parsed, declared)
    except chart_objects.ChartTemplateError as err:
        return [f"helm/: {err}"]


def recorded_kubernetes_version(render_dir: Path) -> str:
    plan = render_dir / "plan.json"
    entries = json.loads(plan.read_text()) if plan.is_file() else []
    versions = {e["inputs"].get("version") for e in entries if e.get("type") == _CLUSTER_TYPE}
    if len(versions) != 1 or None in versions:
        raise UsageError(
            f"{plan} records no single EKS cluster version: pass --k8s-version "
            "(`python -m offline kubernetes-version --stack <stack>` prints a stack's)"
        )
    return _minor(str(versions.pop()))


def _minor(version: str) -> str:
    found = re.fullmatch(r"v?(\d+)\.(\d+)(\.\d+)?", version.strip())
    if not found:
        raise UsageError(f"Kubernetes version {version!r} is not a version such as 1.35")
    return f"{found[1]}.{found[2]}"


def _documents(path: Path) -> list[tuple[int, Any]]:
    try:
        documents = list(yaml.load_all(path.read_text(), Loader=_Loader))
    except yaml.YAMLError as err:
        raise UsageError(f"{path} is not YAML: {err}") from None
    return [(index, doc) for index, doc in enumerate(documents, start=1) if doc is not None]


def _release(path: Path) -> Mapping[str, Any]:
    try:
        release = yaml.load(path.read_text(), Loader=_Loader)
    except yaml.YAMLError as err:
        raise UsageError(f"{path} is not YAML: {err}") from None
    if not isinstance(release, dict):
        raise UsageError(f"{path} is not a Helm release (chart, name, namespace, repository, values, version)")
    return release


def object_label(where: str, obj: Any) -> str:
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    metadata = metadata if isinstance(metadata, dict) else {}
    namespace = f"{metadata['namespace']}/" if metadata.get("namespace") else ""
    name = metadata.get("name") or metadata.get("generateName") or "?"
    api_version, kind = (obj.get("apiVersion"), obj.get("kind")) if isinstance(obj, dict) else (None, None)
    return f"{where} {api_version} {kind} {namespace}{name}"


# --- Kubernetes objects ------------------------------------------------------------------------

class CustomResourceDefinitions:
    """The CRDs in scope, by (group, kind), each with where it comes from (`kueue 0.19.2`, `manifests.yaml#3`)."""

    def __init__(self) -> None:
        self._by_kind: dict[tuple[str, str], tuple[Mapping[str, Any], str]] = {}

    @classmethod
    def installed_by(cls, releases: Iterable[Mapping[str, Any]]) -> CustomResourceDefinitions:
        """The CRDs of the vendored charts these Helm releases install (a chart not vendored adds none)."""
        crds = cls()
        for release in releases:
            key, version = chart_key(release.get("chart")), str(release.get("version"))
            if key is None:
                continue
            try:
                documents = upstream.crd_documents({key: version})
            except upstream.MissingUpstream:
                continue  # release_problems reports the missing chart
            for document in documents:
                crds.add(document, f"{key} {version}")
        return crds

    def add(self, crd: Mapping[str, Any], source: str) -> None:
        spec = crd.get("spec")
        if not (isinstance(spec, dict) and isinstance(spec.get("names"), dict) and isinstance(spec.get("versions"), list)):
            return
        self._by_kind.setdefault((spec.get("group", ""), spec["names"].get("kind", "")), (crd, source))

    def get(self, group: str, kind: str) -> tuple[Mapping[str, Any], str] | None:
        return self._by_kind.get((group, kind))

    def groups_of(self, kind: str) -> list[str]:
        return sorted(group for group, k in self._by_kind if k == kind)


def object_findings(obj: Any, crds: CustomResourceDefinitions, kubernetes_version: str) -> CelResult:
    """One manifest: a custom resource against its CRD, a built-in kind against Kubernetes, and its metadata."""
    if not (isinstance(obj, dict) and isinstance(obj.get("apiVersion"), str) and isinstance(obj.get("kind"), str)):
        return CelResult([Finding((), "not a Kubernetes object: apiVersion and kind must be strings")], [])
    group = obj["apiVersion"].rsplit("/", 1)[0] if "/" in obj["apiVersion"] else ""
    if crds.get(group, obj["kind"]):
        result = custom_resource_findings(obj, crds, kubernetes_version)
    elif is_built_in_group(group):
        result = CelResult(built_in_findings(obj, kubernetes_version), [])
    else:
        elsewhere = crds.groups_of(obj["kind"])
        hint = f" (the CRDs in scope define {obj['kind']} in {', '.join(elsewhere)})" if elsewhere else ""
        reason = f"no CRD of the render's charts or manifests defines {obj['kind']} in group {group}{hint}"
        result = CelResult([Finding(("kind",), reason)], [])
    return CelResult(metadata_findings(obj) + result.findings, result.not_evaluated)


def custom_resource_findings(obj: Mapping[str, Any], crds: CustomResourceDefinitions, kubernetes_version: str) -> CelResult:
    """A custom resource as the API server would admit it: served version, schema with defaults, scope, CEL."""
    api_version, kind = obj["apiVersion"], obj["kind"]
    group, version = api_version.rsplit("/", 1)
    crd, source = crds.get(group, kind) or ({}, "")
    versions = {v["name"]: v for v in crd["spec"]["versions"]}
    served = versions.get(version)
    if not served or not served.get("served"):
        offered = ", ".join(f"{group}/{name}" for name, v in versions.items() if v.get("served"))
        reason = f"the {kind} CRD of {source} does not serve {version}; it serves {offered}"
        return CelResult([Finding(("apiVersion",), reason)], [])
    findings = []
    if served.get("deprecated"):
        warning = served.get("deprecationWarning") or f"{api_version} {kind} is deprecated"
        findings.append(Finding(("apiVersion",), f"deprecated in the CRD of {source}: {warning}"))
    schema = (served.get("schema") or {}).get("openAPIV3Schema") or {"x-kubernetes-preserve-unknown-fields": True}
    stored = with_defaults(obj, schema)
    findings += schema_findings({k: v for k, v in stored.items() if k not in OBJECT_FIELDS}, schema)
    findings += object_meta_findings(obj.get("metadata"), kubernetes_version)
    findings += _scope_findings(obj, crd["spec"].get("scope"))
    cel = cel_findings(stored, schema)
    return CelResult(findings + cel.findings, cel.not_evaluated)


def _scope_findings(obj: Mapping[str, Any], scope: str | None) -> list[Finding]:
    metadata = obj.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    if scope == "Cluster" and metadata.get("namespace"):
        return [Finding(("metadata", "namespace"), f"{obj['kind']} is cluster-scoped: the API server ignores the namespace")]
    if scope == "Namespaced" and not metadata.get("namespace"):
        reason = f"{obj['kind']} is namespaced: without a namespace it lands in whatever namespace the provider defaults to"
        return [Finding(("metadata", "namespace"), reason)]
    return []
