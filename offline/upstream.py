"""The upstream schemas the project checks against: chart defaults and CRDs, vendored verbatim in upstream/.

`upstream/<chart>/<version>/` holds, for a chart of `config.versions.CHARTS` at a version, the chart's
Chart.yaml and values.yaml, the CRDs it installs (`crds/`) and the defaults of the subcharts whose values
the platform sets (`charts/<subchart>/`). `upstream/SOURCES` names each file's repository, tag, commit,
path, sha256 and license. `python -m offline vendor` (offline/vendor.py) writes both from `CHART_SOURCES`.
"""

from __future__ import annotations

import copy
import csv
import functools
import hashlib
import os
import pickle
import re
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import yaml

from .project import PROJECT_DIR

UPSTREAM_DIR = PROJECT_DIR / "upstream"
SOURCES_FILE = UPSTREAM_DIR / "SOURCES"


@dataclass(frozen=True)
class Subchart:
    """A dependency whose values the platform sets; its version is the one the parent's Chart.yaml pins."""

    name: str  # the dependency's name, which is also its values key in the parent
    repository: str  # GitHub owner/name
    tag: str  # `{version}` stands for the dependency's version, `{parent_tag}` for the parent's tag (a local subchart)
    chart: str  # folder holding Chart.yaml and values.yaml at the tag
    license: str = "Apache-2.0"
    # Globs (at the subchart's tag) of the CRDs in its crds/, which Helm installs with the parent's
    # release (a dependency's crds/ counts as the parent's) and, like any crds/, never upgrades.
    crds: tuple[str, ...] = ()


@dataclass(frozen=True)
class ChartSource:
    """Where a chart's files are upstream, at the tag its pinned version names."""

    repository: str  # GitHub owner/name
    tag: str  # `{version}` stands for the pin
    chart: str  # folder holding Chart.yaml and values.yaml at the tag
    crds: tuple[str, ...] = ()  # globs (at the tag) of the CRD files the chart installs
    crd_repository: str = ""  # where `crds` live when not in `repository`, at the same tag
    subcharts: tuple[Subchart, ...] = ()
    license: str = "Apache-2.0"  # SPDX id of the LICENSE at the tag; `vendor` refuses a different one
    # The release job writes `version` into Chart.yaml when it packages the chart, so Chart.yaml at
    # the tag carries a placeholder or the previous release's version.
    release_stamps_version: bool = False
    # Set when the CRD files are Helm templates of a subchart: the key of the chart's values that the
    # templates see as `.Values` (the subchart's name). `crd_documents` renders them with the defaults.
    crd_template_values: str | None = None
    # Globs (at the tag) of the chart's templates whose objects the project reasons about: the names
    # a release creates (offline/chart_objects.py), which two releases must not share.
    templates: tuple[str, ...] = ()


CHART_SOURCES: dict[str, ChartSource] = {
    # hack/release/common.sh `publishHelmChart` sets version/appVersion (and the image) at release.
    "karpenter-crd": ChartSource(
        "aws/karpenter-provider-aws", "v{version}", "charts/karpenter-crd",
        crds=("pkg/apis/crds/*.yaml",), release_stamps_version=True,
    ),
    # Its crds/ duplicates karpenter-crd's, which the platform installs instead.
    "karpenter": ChartSource(
        "aws/karpenter-provider-aws", "v{version}", "charts/karpenter", release_stamps_version=True
    ),
    # NVIDIA's release packages the chart with the tag's version; Chart.yaml says v1.0.0-devel.
    "gpu-operator": ChartSource(
        "NVIDIA/gpu-operator", "{version}", "deployments/gpu-operator",
        crds=("deployments/gpu-operator/crds/*.yaml",),
        subcharts=(
            Subchart("node-feature-discovery", "kubernetes-sigs/node-feature-discovery", "v{version}",
                     "deployment/helm/node-feature-discovery"),
        ),
        release_stamps_version=True,
    ),
    # The chart renders these CRDs from templates/crd, generated from config/components/crd/bases.
    "kueue": ChartSource(
        "kubernetes-sigs/kueue", "v{version}", "charts/kueue", crds=("config/components/crd/bases/*.yaml",)
    ),
    # The CRDs are templates of its `crds` subchart (hack/update_crds.sh copies them from
    # prometheus-operator's example/prometheus-operator-crd/ at the chart's appVersion and wraps each
    # in `if .Values.<crd>.enabled` and an annotations block); `crd_documents` renders them.
    "prometheus-operator-crds": ChartSource(
        "prometheus-community/helm-charts", "prometheus-operator-crds-{version}", "charts/prometheus-operator-crds",
        crds=("charts/prometheus-operator-crds/charts/crds/templates/crd-*.yaml",), crd_template_values="crds",
    ),
    # Its crds/ subchart is turned off (`crds.enabled: false`): prometheus-operator-crds installs them.
    "kube-prometheus-stack": ChartSource(
        "prometheus-community/helm-charts", "kube-prometheus-stack-{version}", "charts/kube-prometheus-stack",
        subcharts=(
            # Local (version 0.0.0): the parent's `crds` values are also its values (`crds.enabled` is the condition).
            Subchart("crds", "prometheus-community/helm-charts", "{parent_tag}", "charts/kube-prometheus-stack/charts/crds"),
            Subchart("grafana", "grafana-community/helm-charts", "grafana-{version}", "charts/grafana"),
            Subchart("kube-state-metrics", "prometheus-community/helm-charts", "kube-state-metrics-{version}",
                     "charts/kube-state-metrics"),
            Subchart("prometheus-node-exporter", "prometheus-community/helm-charts",
                     "prometheus-node-exporter-{version}", "charts/prometheus-node-exporter"),
        ),
    ),
    # KEDA releases the chart and the operator under one version; the chart's CRD templates are
    # generated from the operator's config/crd/bases.
    "keda": ChartSource(
        "kedacore/charts", "v{version}", "keda", crds=("config/crd/bases/*.yaml",), crd_repository="kedacore/keda"
    ),
    "opencost": ChartSource("opencost/opencost-helm-chart", "opencost-{version}", "charts/opencost"),
    # eks-charts tags the repository (v0.0.N), not each chart: the tag is where Chart.yaml first says the pin.
    "aws-efa-k8s-device-plugin": ChartSource("aws/eks-charts", "v0.0.241", "stable/aws-efa-k8s-device-plugin"),
    "dra-driver-nvidia-gpu": ChartSource(
        "kubernetes-sigs/dra-driver-nvidia-gpu", "v{version}", "deployments/helm/dra-driver-nvidia-gpu",
        crds=("deployments/helm/dra-driver-nvidia-gpu/crds/*.yaml",),
    ),
    # The chart renders its CRDs from templates/crd (gated on `crds.enabled`), generated from
    # manifests/base/crds; JobSet, which the TrainJob controller creates, comes as a dependency
    # (Chart.yaml `jobset`, condition `jobset.install`) whose CRD sits in the subchart's crds/.
    "kubeflow-trainer": ChartSource(
        "kubeflow/trainer", "v{version}", "charts/kubeflow-trainer", crds=("manifests/base/crds/trainer.kubeflow.org_*.yaml",),
        subcharts=(
            Subchart("jobset", "kubernetes-sigs/jobset", "v{version}", "charts/jobset", crds=("charts/jobset/crds/*.yaml",)),
        ),
    ),
    # The chart installs the policies.kyverno.io CRDs through its kyverno-api dependency (kyverno/api, not
    # in this repository); config/crds/policies.kyverno.io/ at the tag is generated from the same module
    # (go.mod github.com/kyverno/api). Only the kind the platform declares is vendored: the group's CRDs
    # weigh 3 MB, the kyverno.io ones 3.5 MB more.
    "kyverno": ChartSource(
        "kyverno/kyverno", "kyverno-chart-{version}", "charts/kyverno",
        crds=("config/crds/policies.kyverno.io/policies.kyverno.io_imagevalidatingpolicies.yaml",),
    ),
    # The chart renders its CRDs from templates generated from config/crds/bases. Only the kinds the
    # platform declares are vendored (SecretStore alone is 690 kB; the generators' group 400 kB more).
    "external-secrets": ChartSource(
        "external-secrets/external-secrets", "helm-chart-{version}", "deploy/charts/external-secrets",
        crds=(
            "config/crds/bases/external-secrets.io_externalsecrets.yaml",
            "config/crds/bases/external-secrets.io_secretstores.yaml",
            "config/crds/bases/generators.external-secrets.io_ecrauthorizationtokens.yaml",
        ),
    ),
    # NVIDIA tags the repository `<DCGM version>-<exporter version>`; the chart's version is the exporter's.
    # Its templates name some objects without the release (templates/role.yaml, metrics-configmap.yaml).
    "dcgm-exporter": ChartSource(
        "NVIDIA/dcgm-exporter", "4.5.3-{version}", "deployment", templates=("deployment/templates/*",)
    ),
    # The release job stamps the tag into Chart.yaml (0.0.0 at the tag). Only the Queue CRD is vendored: the
    # platform declares Queues and nothing else of the chart's groups.
    "kai-scheduler": ChartSource(
        "kai-scheduler/KAI-Scheduler", "{version}", "deployments/kai-scheduler",
        crds=("deployments/kai-scheduler/crds/scheduling.run.ai_queues.yaml",),
        release_stamps_version=True,
    ),
}


@dataclass(frozen=True)
class Source:
    """One row of upstream/SOURCES: a vendored file and where it came from."""

    file: str  # relative to upstream/
    repository: str
    tag: str
    commit: str
    path: str
    sha256: str
    license: str


SOURCES_HEADER: tuple[str, ...] = tuple(f.name for f in fields(Source))


class MissingUpstream(Exception):
    """A chart version has no vendored upstream files."""

    def __init__(self, chart: str, version: str):
        self.directory = UPSTREAM_DIR / chart / version
        super().__init__(
            f"{self.directory.relative_to(PROJECT_DIR)}/ is missing: pin {chart} {version} in config/versions.py, "
            f"then run `python -m offline vendor {chart}` to fetch its upstream files"
        )


def chart_dir(chart: str, version: str) -> Path:
    """`upstream/<chart>/<version>/`; raises MissingUpstream when it has not been vendored."""
    directory = UPSTREAM_DIR / chart / version
    if not (directory / "Chart.yaml").is_file():
        raise MissingUpstream(chart, version)
    return directory


def chart_metadata(chart: str, version: str) -> dict[str, Any]:
    """The chart's Chart.yaml (version, appVersion, dependencies), as a copy the caller may change."""
    return copy.deepcopy(_load(chart_dir(chart, version) / "Chart.yaml"))


def chart_values(chart: str, version: str) -> dict[str, Any]:
    """The chart's default values, as a copy the caller may change."""
    return copy.deepcopy(_load(chart_dir(chart, version) / "values.yaml"))


def subchart_values(chart: str, version: str) -> dict[str, dict[str, Any]]:
    """Default values of the vendored subcharts, by subchart name (the parent's values key)."""
    charts = chart_dir(chart, version) / "charts"
    return {path.parent.name: copy.deepcopy(_load(path)) for path in sorted(charts.glob("*/values.yaml"))}


def crd_documents(versions: Mapping[str, str]) -> list[dict[str, Any]]:
    """Every CRD the given `{chart: version}` install, their vendored subcharts' crds/ included.

    Shared parsed documents: read, don't change.
    """
    return [
        document
        for chart, version in versions.items()
        for path in _crd_paths(chart_dir(chart, version))
        for document in _crd_file(chart, version, path)
        if isinstance(document, dict) and document.get("kind") == "CustomResourceDefinition"
    ]


def _crd_paths(directory: Path) -> list[Path]:
    return [*sorted((directory / "crds").glob("*.yaml")), *sorted((directory / "charts").glob("*/crds/*.yaml"))]


@functools.cache
def _crd_file(chart: str, version: str, path: Path) -> tuple[Any, ...]:
    source = CHART_SOURCES.get(chart)
    if source is None or source.crd_template_values is None:
        return _load_all(path)
    values = _load(chart_dir(chart, version) / "values.yaml").get(source.crd_template_values) or {}
    return _load_all_text(render_crd_template(path.read_text(), values, path.name))


_ACTION = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}")


def render_crd_template(text: str, values: Mapping[str, Any], name: str) -> str:
    """A CRD template of the shape prometheus-operator-crds' hack/update_crds.sh writes, rendered with `values`.

    Every template action sits on a line of its own: `if .Values.<path>`, `with .Values.<path>` (only
    where that value is empty, so there is nothing to insert), `toYaml ...` inside such a `with`, and
    `end`. Anything else is refused rather than half-rendered: a new shape is read and supported on purpose.
    """
    kept: list[str] = []
    emitting = [True]
    for line in text.splitlines(keepends=True):
        if "{{" not in line:
            if all(emitting):
                kept.append(line)
            continue
        match = _ACTION.fullmatch(line.strip())
        keyword, _, argument = match.group(1).partition(" ") if match else ("", "", "")
        if keyword in ("if", "with") and argument.startswith(".Values."):
            value = _value_at(values, argument.removeprefix(".Values."))
            if keyword == "with" and value and all(emitting):
                raise ValueError(f"{name}: `{line.strip()}` would insert {value!r}; only empty values are supported")
            emitting.append(bool(value))
        elif keyword == "toYaml" and not all(emitting):
            continue
        elif keyword == "end" and len(emitting) > 1:
            emitting.pop()
        else:
            raise ValueError(f"{name}: unsupported template line {line.strip()!r}")
    if len(emitting) != 1:
        raise ValueError(f"{name}: {len(emitting) - 1} template block(s) left open")
    return "".join(kept)


def _value_at(values: Mapping[str, Any], path: str) -> Any:
    value: Any = values
    for key in path.split("."):
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def sources() -> list[Source]:
    """The rows of upstream/SOURCES."""
    with SOURCES_FILE.open(newline="") as handle:
        reader = csv.DictReader(handle, delimiter="\t")
        if tuple(reader.fieldnames or ()) != SOURCES_HEADER:
            raise ValueError(f"{SOURCES_FILE}: header {reader.fieldnames} is not {list(SOURCES_HEADER)}")
        return [Source(**row) for row in reader]


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """The safe loader, in C when built: it parses the megabytes of prometheus-operator CRDs in a fraction of the time."""


# A bare `=` (an AlertmanagerConfig matcher enum) is YAML 1.1's "value" tag to PyYAML; to Kubernetes, a string.
_Loader.add_constructor("tag:yaml.org,2002:value", yaml.SafeLoader.construct_yaml_str)


@functools.cache
def _load(path: Path) -> Any:
    return _parsed(path.read_text(), every_document=False)


@functools.cache
def _load_all(path: Path) -> tuple[Any, ...]:
    return _load_all_text(path.read_text())


@functools.cache
def _load_all_text(text: str) -> tuple[Any, ...]:
    return tuple(_parsed(text, every_document=True))


# Parsed vendored files, pickled beside the compiled modules and named by what they were parsed from, as Python caches
# bytecode: building the objects of the CRDs' megabytes costs every process that validates a render over a second
# of CPU, unpickling them a twentieth of that. A changed file, PyYAML or this module (where `_Loader` is defined) is
# another name, never a stale read.
_PARSED_DIR = Path(__file__).resolve().parent / "__pycache__" / "upstream-yaml"
_PARSER = f"pyyaml-{yaml.__version__}-{_Loader.__mro__[1].__name__}-{hashlib.sha256(Path(__file__).read_bytes()).hexdigest()}"


def _parsed(text: str, every_document: bool) -> Any:
    key = hashlib.sha256(f"{_PARSER}\0{every_document}\0{text}".encode()).hexdigest()
    cached = _PARSED_DIR / f"{key}.pickle"
    try:
        return pickle.loads(cached.read_bytes())
    except (OSError, pickle.UnpicklingError, EOFError):
        pass
    parsed = list(yaml.load_all(text, Loader=_Loader)) if every_document else yaml.load(text, Loader=_Loader)
    if not sys.dont_write_bytecode:  # PYTHONDONTWRITEBYTECODE keeps this cache unwritten too
        try:
            _PARSED_DIR.mkdir(parents=True, exist_ok=True)
            # Written whole under a name of its own, then renamed: a concurrent reader sees all of it or nothing.
            partial = _PARSED_DIR / f"{key}.{os.getpid()}.{threading.get_ident()}.tmp"
            partial.write_bytes(pickle.dumps(parsed, protocol=pickle.HIGHEST_PROTOCOL))
            os.replace(partial, cached)
        except OSError:
            pass
    return parsed
