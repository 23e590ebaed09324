"""The metric inventory: every metric name and label the pinned exporters emit, read from their own source.

`upstream/metrics/<source>/<version>/` holds, byte for byte, the upstream files that define a source's
metrics (rows in upstream/SOURCES like the charts' files). `upstream/metrics-inventory.json` is generated
from them by `python -m offline metrics-inventory` and never edited by hand; a test regenerates it and
compares. The rules, dashboards and KEDA queries are checked against it (tests/promql_inventory.py).

Where each source's version comes from, so that a pin bump without re-vendoring fails a test:
- dcgm-exporter: the image the GPU Operator deploys, `dcgmExporter.version` of the vendored gpu-operator
  values (4.6.0-4.8.3-distroless at v26.7.0). The store has no 4.6.0-4.8.3 tag, so the folder holds a
  stand-in, not that release's files: main at d5e5f51 (2026-05-12, one commit after 4.5.3-4.8.2,
  NVIDIA/dcgm-exporter#655 "Rename Hostname label to hostname"). Checked by hand against main at
  7ad58324, after the release (hack/versions.env: DCGM 4.6.0, exporter 4.8.3), as far as the search
  index holds it: the same counters in etc/dcp-metrics-included.csv and the same labels in
  internal/pkg/transformation/const.go, which adds only `pod_label_<key>` (written with pod labels
  enabled, which the platform leaves off). d5e5f51 is not the release elsewhere: its dra.go watches
  ResourceSlices at resource.k8s.io/v1beta1 only, 7ad58324's at v1 when served; models/nvidia/
  dcgm_exporter.py names both where a rule depends on it. The operator's DaemonSet (assets/state-dcgm-
  exporter/0800_daemonset.yaml) sets DCGM_EXPORTER_COLLECTORS to the image's etc/dcp-metrics-included.csv.
- kube-state-metrics: the appVersion of kube-prometheus-stack's vendored kube-state-metrics subchart.
- kueue, keda, karpenter: their chart pins (Karpenter's core module at tag v1.14.1 is the commit
  karpenter-provider-aws v1.14.1's go.mod requires, 6e7eab7a0f48).
- opencost: the appVersion of the vendored opencost chart (1.120.1 at 2.5.17). The store's newest
  OpenCost release is v1.112.0; its pkg/costmodel/metrics.go is vendored under the deployed version's
  folder, as for dcgm-exporter.
- vllm: config.versions.VLLM, the release whose metrics the queue-depth trigger reads; the file comes
  from its PyPI wheel (the repository is too large for the store), whose vllm/_version.py names the commit.
- kai-scheduler, kai-queue-controller: the KAI chart's pin, its scheduler's and queue-controller's metrics, each
  beside pkg/common/constants/constants.go, whose DefaultMetricsNamespace prefixes them (models/kai/metrics.py).
- kai-binder: under the KAI chart's pin, controller-runtime's controller metrics at the release KAI's go.mod
  requires at that tag (sigs.k8s.io/controller-runtime v0.23.3): the binder registers none of its own.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import sys
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import yaml

from config.versions import CHARTS, VLLM

from .project import PROJECT_DIR
from .upstream import UPSTREAM_DIR, Source, chart_values

METRICS_DIR = UPSTREAM_DIR / "metrics"
INVENTORY_FILE = UPSTREAM_DIR / "metrics-inventory.json"
# The dcgm-exporter commit vendored in place of the release the GPU Operator deploys (see the docstring).
DCGM_EXPORTER_COMMIT = "d5e5f510a1b6b393f39a43293ccd9dc985defc79"
# The controller-runtime release kai-scheduler/KAI-Scheduler v0.17.0's go.mod requires (its binder's metrics).
KAI_CONTROLLER_RUNTIME = "v0.23.3"


@dataclass(frozen=True)
class MetricSource:
    """Where one exporter's metric definitions are upstream."""

    repository: str  # GitHub owner/name; `pypi/<name>` for a file taken from a released wheel
    ref: str  # tag or commit; `{version}` stands for the version
    files: tuple[str, ...]  # paths at `ref`; each lands in the version folder under its base name
    license: str = "Apache-2.0"


def dcgm_exporter_version() -> str:
    image = chart_values("gpu-operator", CHARTS["gpu-operator"].version)["dcgmExporter"]["version"]
    return str(image).removesuffix("-distroless")


def opencost_version() -> str:
    chart = UPSTREAM_DIR / "opencost" / CHARTS["opencost"].version / "Chart.yaml"
    return str(yaml.safe_load(chart.read_text())["appVersion"])


# The OpenCost release the store has for the one the chart deploys (see the docstring).
OPENCOST_TAG = "v1.112.0"


def kube_state_metrics_version() -> str:
    chart = UPSTREAM_DIR / "kube-prometheus-stack" / CHARTS["kube-prometheus-stack"].version / "charts"
    return str(yaml.safe_load((chart / "kube-state-metrics" / "Chart.yaml").read_text())["appVersion"])


# source -> (how its version is found, where its files are)
METRIC_SOURCES: dict[str, tuple[Callable[[], str], MetricSource]] = {
    "dcgm-exporter": (dcgm_exporter_version, MetricSource(
        "NVIDIA/dcgm-exporter", DCGM_EXPORTER_COMMIT,
        ("etc/dcp-metrics-included.csv", "internal/pkg/rendermetrics/render_metrics.go",
         "internal/pkg/transformation/const.go"),
    )),
    "gpu-operator": (lambda: CHARTS["gpu-operator"].version, MetricSource(
        "NVIDIA/gpu-operator", "{version}", ("assets/state-dcgm-exporter/0800_daemonset.yaml",),
    )),
    "kube-state-metrics": (kube_state_metrics_version, MetricSource(
        "kubernetes/kube-state-metrics", "v{version}",
        tuple(f"docs/metrics/{page}-metrics.md" for page in (
            "workload/pod", "workload/replicaset", "cluster/node", "policy/resourcequota",
            "workload/horizontalpodautoscaler",
        )),
    )),
    "kueue": (lambda: CHARTS["kueue"].version, MetricSource(
        "kubernetes-sigs/kueue", "v{version}", ("pkg/metrics/metrics.go", "pkg/constants/constants.go"),
    )),
    "karpenter": (lambda: CHARTS["karpenter"].version, MetricSource(
        "kubernetes-sigs/karpenter", "v{version}",
        ("pkg/controllers/metrics/nodepool/controller.go", "pkg/metrics/constants.go", "pkg/metrics/metrics.go"),
    )),
    "keda": (lambda: CHARTS["keda"].version, MetricSource(
        "kedacore/keda", "v{version}",
        ("pkg/metricscollector/prommetrics.go", "pkg/metricscollector/metricscollectors.go"),
    )),
    "opencost": (opencost_version, MetricSource("opencost/opencost", OPENCOST_TAG, ("pkg/costmodel/metrics.go",))),
    "vllm": (lambda: VLLM, MetricSource("pypi/vllm", "{version}", ("vllm/v1/metrics/loggers.py",))),
    "kai-scheduler": (lambda: CHARTS["kai-scheduler"].version, MetricSource(
        "kai-scheduler/KAI-Scheduler", "{version}",
        ("pkg/scheduler/metrics/metrics.go", "pkg/common/constants/constants.go"),
    )),
    "kai-queue-controller": (lambda: CHARTS["kai-scheduler"].version, MetricSource(
        "kai-scheduler/KAI-Scheduler", "{version}",
        ("pkg/queuecontroller/metrics/metrics.go", "pkg/common/constants/constants.go"),
    )),
    "kai-binder": (lambda: CHARTS["kai-scheduler"].version, MetricSource(
        "kubernetes-sigs/controller-runtime", KAI_CONTROLLER_RUNTIME, ("pkg/internal/controller/metrics/metrics.go",),
    )),
}


def source_dir(source: str) -> Path:
    version_of, _ = METRIC_SOURCES[source]
    return METRICS_DIR / source / version_of()


# --- parsers: upstream files -> {metric: labels} ---------------------------------------------------

Inventory = dict[str, set[str]]


def dcgm_exporter_metrics(folder: Path) -> Inventory:
    """Each counter of the default CSV, with the labels render_metrics.go writes for a GPU and the
    Kubernetes attributes const.go names (added when the GPU is assigned to a pod)."""
    template = (folder / "render_metrics.go").read_text()
    # The GPU template: `{{ $counter.FieldName }}{gpu="…",{{ $metric.UUID }}="…",…}`; `$metric.UUID` is
    # the name of the UUID label, "UUID" (collector.go: `UUID: "UUID"` unless --use-old-namespace).
    gpu_line = next(line for line in template.splitlines() if line.startswith('{{ $counter.FieldName }}{gpu='))
    labels = set(re.findall(r'[,{](\w+)="', gpu_line)) | {"UUID"}
    const = (folder / "const.go").read_text()
    kubernetes = {name for name in re.findall(r'^\s*\w+Attribute\s*=\s*"(\w+)"', const, re.M)}
    # Old names (pod_name, ...) only with --use-old-namespace, which the operator never passes.
    kubernetes -= set(re.findall(r'^\s*old\w+Attribute\s*=\s*"(\w+)"', const, re.M))
    inventory: Inventory = {}
    for row in csv.reader(io.StringIO((folder / "dcp-metrics-included.csv").read_text())):
        if not row or row[0].lstrip().startswith("#") or len(row) < 2:
            continue
        name, kind = row[0].strip(), row[1].strip()
        if kind != "label":  # `label` fields become labels of other series, not series
            inventory[name] = labels | kubernetes
    return inventory


def kube_state_metrics(folder: Path) -> Inventory:
    """Rows of the docs' metric tables: the name cell, and each `label`=&lt;…&gt; of the labels cell."""
    inventory: Inventory = {}
    for page in sorted(folder.glob("*.md")):
        for line in page.read_text().splitlines():
            # Cells split on `|`, not on the `\|` escaped inside a value list (`phase`=&lt;Pending\|Running…).
            cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
            if len(cells) > 4 and re.fullmatch(r"kube_\w+", cells[0]):
                labels_cell = next(cell for cell in reversed(cells) if "`" in cell and "=" in cell)
                inventory[cells[0]] = set(re.findall(r"`(\w+)`=", labels_cell))
    return inventory


_GO_CONST = re.compile(r'^\s*(\w+)(?:\s+\w+)?\s*=\s*"([^"]*)"\s*$', re.M)
_GO_SLICE = re.compile(r"^\s*(\w+)\s*:?=\s*(?:append\(\s*)?\[\]string\{([^}]*)\}", re.M)
_GO_OPTS = re.compile(r"prometheus\.(Gauge|Counter|Histogram|Summary)Opts\{")
# Label lists a metric appends that are empty unless configured: Kueue's custom metric labels
# (pkg/metrics/metrics.go `cl.LabelNames(...)`, from Configuration `metrics.customLabels`, which the
# platform leaves unset), called inline or through these variables.
_CUSTOM_LABELS_CALL = re.compile(r"cl\.LabelNames\([^)]*\)(?:\.\.\.)?")
# KAI's queue-controller appends the metric labels `--queue-label-to-metric-label` maps Queue labels to, which the
# operator passes only from `queueController.queueLabelToMetricLabel`, which the chart never sets.
_EMPTY_BY_DEFAULT = {"clusterQueueMetricsLabels", "localQueueMetricsLabels", "cohortMetricLabels", "additionalMetricLabelKeys"}


def go_metrics(folder: Path, variables: dict[str, str] | None = None) -> Inventory:
    """client_golang metrics: every `prometheus.<Kind>Opts{Namespace, Subsystem, Name}` and the label
    list that follows it in the constructor call, with string constants resolved across the files
    (`variables`: values of identifiers that are not constants, as the program runs)."""
    texts = [path.read_text() for path in sorted(folder.glob("*.go"))]
    consts = {name: value for text in texts for name, value in _GO_CONST.findall(text)}
    consts.update(variables or {})
    slices = {name: body for text in texts for name, body in _GO_SLICE.findall(text)}
    inventory: Inventory = {}
    for text in texts:
        for match in _GO_OPTS.finditer(text):
            body_end = _closing(text, match.end() - 1, "{", "}")
            body = text[match.end():body_end]
            parts = [_go_value(field, body, consts) for field in ("Namespace", "Subsystem", "Name")]
            name = "_".join(part for part in parts if part)
            call_end = _closing(text, _opening_paren(text, match.start()), "(", ")")
            labels = _go_labels(text[body_end + 1:call_end], consts, slices)
            kind = match.group(1)
            if kind == "Histogram":
                inventory.update({f"{name}_bucket": labels | {"le"}, f"{name}_sum": labels, f"{name}_count": labels})
            elif kind == "Summary":
                inventory.update({name: labels | {"quantile"}, f"{name}_sum": labels, f"{name}_count": labels})
            else:
                inventory[name] = labels
    return inventory


def _go_value(field: str, body: str, consts: dict[str, str]) -> str:
    found = re.search(rf"^\s*{field}:\s*([^,\n]+),", body, re.M)
    if found is None:
        return ""
    return _go_string(found.group(1).strip(), consts)


def _go_string(expr: str, consts: dict[str, str]) -> str:
    if expr.startswith('"'):
        return expr.strip('"')
    ident = expr.rsplit(".", 1)[-1]
    if ident not in consts:
        raise ValueError(f"cannot resolve Go string {expr!r} from the vendored files")
    return consts[ident]


def _go_labels(text: str, consts: dict[str, str], slices: dict[str, str]) -> set[str]:
    labels: set[str] = set()
    for token in re.findall(r'"[^"]*"|[\w.]+(?:\.\.\.)?', _CUSTOM_LABELS_CALL.sub("", text)):
        if token in ("append", "string", "nil"):
            continue
        if token.startswith('"'):
            labels.add(token.strip('"'))
        elif token.endswith("...") and token[:-3] in _EMPTY_BY_DEFAULT:
            continue
        elif token.removesuffix("...") in slices:
            labels |= _go_labels(slices[token.removesuffix("...")], consts, slices)
        else:
            labels.add(_go_string(token, consts))
    return labels


def _closing(text: str, start: int, open_: str, close: str) -> int:
    depth = 0
    for index in range(start, len(text)):
        if text[index] == open_:
            depth += 1
        elif text[index] == close:
            depth -= 1
            if depth == 0:
                return index
    raise ValueError(f"unbalanced {open_}{close} from offset {start}")


def _opening_paren(text: str, before: int) -> int:
    """The `(` of the constructor call an Opts literal is an argument of."""
    depth = 0
    for index in range(before, -1, -1):
        if text[index] == ")":
            depth += 1
        elif text[index] == "(":
            if depth == 0:
                return index
            depth -= 1
    raise ValueError(f"no call around offset {before}")


def vllm_metrics(folder: Path) -> Inventory:
    """prometheus_client metrics of vLLM's PrometheusStatLogger: `name="vllm:…"` and its `labelnames`."""
    text = (folder / "loggers.py").read_text()
    base = re.search(r"^\s*labelnames = (\[[^\]]*\])", text, re.M)
    if base is None:
        raise ValueError("loggers.py no longer defines `labelnames`")
    base_labels = set(re.findall(r'"(\w+)"', base.group(1)))
    inventory: Inventory = {}
    pattern = r'(_gauge_cls|_counter_cls|_histogram_cls)\(\s*name="(vllm:\w+)".*?labelnames=(labelnames(?: \+ \[[^\]]*\])?)'
    for kind, name, labels_expr in re.findall(pattern, text, re.S):
        labels = base_labels | set(re.findall(r'"(\w+)"', labels_expr))
        if kind == "_histogram_cls":
            inventory.update({f"{name}_bucket": labels | {"le"}, f"{name}_sum": labels, f"{name}_count": labels})
        elif kind == "_counter_cls":
            # prometheus_client exposes a Counter as <name>_total (and <name>_created).
            inventory[f"{name.removesuffix('_total')}_total"] = labels
        else:
            inventory[name] = labels
    return inventory


def kai_metrics(folder: Path) -> Inventory:
    """KAI's scheduler or queue-controller metrics as they run: `Namespace: namespace` is the `--metrics-namespace`
    flag, whose default is constants.go's DefaultMetricsNamespace (models/kai/metrics.py says why only that set)."""
    consts = dict(_GO_CONST.findall((folder / "constants.go").read_text()))
    return go_metrics(folder, {"namespace": consts["DefaultMetricsNamespace"]})


PARSERS: dict[str, Callable[[Path], Inventory]] = {
    "dcgm-exporter": dcgm_exporter_metrics,
    "kube-state-metrics": kube_state_metrics,
    "kueue": go_metrics,
    "karpenter": go_metrics,
    "keda": go_metrics,
    "opencost": go_metrics,
    "vllm": vllm_metrics,
    "kai-scheduler": kai_metrics,
    "kai-queue-controller": kai_metrics,
    "kai-binder": go_metrics,
}


def build_inventory() -> dict[str, dict[str, list[str]]]:
    """source -> metric -> sorted labels, from the vendored files."""
    return {
        source: {name: sorted(labels) for name, labels in sorted(parse(source_dir(source)).items())}
        for source, parse in PARSERS.items()
    }


def inventory_text() -> str:
    versions = {source: version_of() for source, (version_of, _) in METRIC_SOURCES.items()}
    return json.dumps({"versions": versions, "metrics": build_inventory()}, indent=1, sort_keys=True) + "\n"


def load_inventory() -> dict[str, dict[str, list[str]]]:
    """The committed inventory: source -> metric -> labels."""
    metrics: dict[str, dict[str, list[str]]] = json.loads(INVENTORY_FILE.read_text())["metrics"]
    return metrics


# --- vendoring -------------------------------------------------------------------------------------

def vendor_metric_sources(from_git: Iterable[str], wheels: Iterable[str]) -> int:
    """Copy every METRIC_SOURCES file into upstream/metrics/, rewrite their SOURCES rows and the inventory."""
    from .vendor import Repositories, VendorError, git_dir_repository, write_sources

    rows: list[Source] = []
    folders: list[str] = []
    wheel_files = dict(value.split("=", 1) for value in wheels)
    try:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="vendor-metrics-") as scratch:
            repos = Repositories(dict(git_dir_repository(value) for value in from_git), Path(scratch))
            for source, (version_of, where) in METRIC_SOURCES.items():
                version = version_of()
                ref = where.ref.format(version=version)
                out = METRICS_DIR / source / version
                for path in where.files:
                    if where.repository.startswith("pypi/"):
                        data, commit = _from_wheel(wheel_files, where.repository, version, path)
                        license = where.license
                    else:
                        data, commit = repos.show(where.repository, ref, path), repos.commit(where.repository, ref)
                        license = repos.license(where.repository, ref)
                        if license != where.license:
                            raise VendorError(f"{where.repository} {ref} is licensed {license}, not {where.license}")
                    target = out / PurePosixPath(path).name
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(data)
                    rows.append(Source(
                        file=target.relative_to(UPSTREAM_DIR).as_posix(), repository=where.repository, tag=ref,
                        commit=commit, path=path, sha256=hashlib.sha256(data).hexdigest(), license=license,
                    ))
                folders.append(f"metrics/{source}/{version}")
    except VendorError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    write_sources(rows, folders)
    INVENTORY_FILE.write_text(inventory_text())
    print(f"wrote {len(rows)} files, their SOURCES rows and {INVENTORY_FILE.relative_to(PROJECT_DIR)}")
    return 0


def _from_wheel(wheels: dict[str, str], repository: str, version: str, path: str) -> tuple[bytes, str]:
    """A file of a released wheel and the commit its setuptools-scm `_version.py` records (`g<hash>`)."""
    from .vendor import VendorError

    package = repository.removeprefix("pypi/")
    if package not in wheels:
        raise VendorError(f"{package} {version}: pass its wheel as --from-wheel {package}=PATH (pip download --no-deps)")
    with zipfile.ZipFile(wheels[package]) as wheel:
        found = re.search(r"__version__ = version = '([^']+)'", wheel.read(f"{package}/_version.py").decode())
        if found is None or f"v{found.group(1)}" != version:
            raise VendorError(f"{wheels[package]} is not {package} {version}")
        commit = re.search(r"commit_id = 'g([0-9a-f]+)'", wheel.read(f"{package}/_version.py").decode())
        if commit is None:
            raise VendorError(f"{wheels[package]}: no commit id in {package}/_version.py")
        return wheel.read(path), commit.group(1)


def write_inventory() -> int:
    INVENTORY_FILE.write_text(inventory_text())
    print(f"wrote {INVENTORY_FILE.relative_to(PROJECT_DIR)}")
    return 0

