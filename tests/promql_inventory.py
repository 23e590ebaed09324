"""What a PromQL expression reads, checked against the metric inventory, and series built from it.

The inventory (upstream/metrics-inventory.json, offline/metrics_inventory.py) holds each exporter's
metrics and labels as the exporter writes them; Prometheus' scrape then adds target labels and, where the
monitor does not honour the exporter's labels, renames a clashing one to `exported_<name>`. `Inventory`
applies both, so `labels("keda_scaler_detail_errors_total")` is what a query can select on.

`check(expr)` walks an expression with promql-parser and returns one problem line for every metric the
inventory (or a recording rule) does not have, every label a selector, grouping, join or label_replace
names that its operand does not carry, and, given `templates`, every `{{ $labels.x }}` or legend
`{{x}}` its result does not carry.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import promql_parser as pp

from components.lib.prometheus import EXPORTER_JOBS
from offline.metrics_inventory import load_inventory

# prometheus-operator v0.93.0 pkg/prometheus/promcfg.go: the target labels a ServiceMonitor's and a
# PodMonitor's scrape configs write (relabelings `target_label`), besides `instance`.
_SERVICE_MONITOR = frozenset({"job", "instance", "namespace", "service", "pod", "container", "endpoint"})
_POD_MONITOR = frozenset({"job", "instance", "namespace", "pod", "container", "endpoint"})


@dataclass(frozen=True)
class Scrape:
    honor_labels: bool
    target_labels: frozenset[str]


# How each source is scraped, read where the monitor is declared:
SCRAPES: dict[str, Scrape] = {
    # components/gpu_operator.py dcgm_exporter_values: serviceMonitor.honorLabels true.
    "dcgm-exporter": Scrape(True, _SERVICE_MONITOR),
    # kube-prometheus-stack 88.5.3 values.yaml kubeStateMetrics... `prometheus.monitor.honorLabels: true`.
    "kube-state-metrics": Scrape(True, _SERVICE_MONITOR),
    # kubernetes-sigs/kueue v0.19.2 charts/kueue/templates/prometheus/monitor.yaml: no honorLabels.
    "kueue": Scrape(False, _SERVICE_MONITOR),
    # aws/karpenter-provider-aws v1.14.1 charts/karpenter/templates/servicemonitor.yaml: no honorLabels.
    "karpenter": Scrape(False, _SERVICE_MONITOR),
    # kedacore/charts v2.20.2 keda/templates/manager/servicemonitor.yaml: no honorLabels.
    "keda": Scrape(False, _SERVICE_MONITOR),
    # opencost/opencost-helm-chart opencost-2.5.17 values.yaml opencost.metrics.serviceMonitor.honorLabels: true.
    "opencost": Scrape(True, _SERVICE_MONITOR),
    # components/autoscaling serving_pod_monitor: a PodMonitor, no honorLabels.
    "vllm": Scrape(False, _POD_MONITOR),
    # components/kai.py service_monitor: no honorLabels.
    "kai-scheduler": Scrape(False, _SERVICE_MONITOR),
    "kai-queue-controller": Scrape(False, _SERVICE_MONITOR),
    "kai-binder": Scrape(False, _SERVICE_MONITOR),
}
# Series Prometheus writes for every target itself (prometheus/prometheus scrape/scrape.go `up`), with the
# target's labels only; no exporter's, so a query names the job it means.
TARGET_SERIES = {"up": _SERVICE_MONITOR | _POD_MONITOR}


def scraped_labels(labels: Iterable[str], scrape: Scrape) -> set[str]:
    exported = set(labels)
    if not scrape.honor_labels:
        exported = {f"exported_{label}" if label in scrape.target_labels else label for label in exported}
    return exported | scrape.target_labels


@dataclass
class Inventory:
    """metric -> labels as Prometheus stores them; recording rules join as they are checked."""

    metrics: dict[str, set[str]] = field(default_factory=dict)
    # metric -> the exporter that writes it (recording rules have none)
    sources: dict[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls, raw: Mapping[str, Mapping[str, Iterable[str]]] | None = None) -> Inventory:
        raw = load_inventory() if raw is None else raw
        scraped = {
            name: scraped_labels(labels, SCRAPES[source]) for source, metrics in raw.items() for name, labels in metrics.items()
        }
        scraped.update({name: set(labels) for name, labels in TARGET_SERIES.items()})
        return cls(scraped, {name: source for source, metrics in raw.items() for name in metrics})

    def has_label(self, metric: str, label: str) -> bool:
        return has_label(self.metrics[metric], label)

    def series(self, metric: str, /, **labels: str) -> str:
        """A promtool input series of `metric` with `labels`, and the `job` its exporter's scrape writes;
        every label must be one the metric has."""
        if metric not in self.metrics:
            raise KeyError(f"{metric} is not in the metric inventory")
        unknown = sorted(label for label in labels if not self.has_label(metric, label))
        if unknown:
            raise KeyError(f"{metric} has no label {', '.join(unknown)} in the metric inventory")
        job = EXPORTER_JOBS.get(self.sources.get(metric, ""))
        if job is not None:
            labels = {"job": job, **labels}  # what the scrape writes; a row may name another job
        return metric + "{" + ",".join(f'{key}="{value}"' for key, value in sorted(labels.items())) + "}"


def has_label(labels: set[str], label: str) -> bool:
    """`label` is in `labels`, or a kube-state-metrics template there stands for it (`label_NODE_LABEL`:
    every allow-listed node label, `label_gpu_platform_node_pool`)."""
    return label in labels or any(_stands_for(template, label) for template in labels)


def _stands_for(template: str, label: str) -> bool:
    prefix, _, rest = template.partition("_")
    return bool(rest) and rest.isupper() and label.startswith(prefix + "_")


_TEMPLATE_LABEL = re.compile(r"\$labels\.(\w+)")
_LEGEND_LABEL = re.compile(r"\{\{\s*(\w+)\s*\}\}")


def template_labels(text: str) -> set[str]:
    """Labels an alert annotation (`{{ $labels.x }}`) or a Grafana legend (`{{x}}`) reads."""
    return set(_TEMPLATE_LABEL.findall(text)) | set(_LEGEND_LABEL.findall(text))


class Checker:
    def __init__(self, inventory: Inventory):
        self.inventory = inventory
        self.problems: list[str] = []

    def record(self, name: str, expr: str, labels: Iterable[str] = ()) -> None:
        """Check a recording rule and make its result (with the rule's own labels) a metric later
        expressions may read."""
        self.inventory.metrics[name] = (self.check(expr) or set()) | set(labels)

    def check(self, expr: str, templates: Iterable[str] = (), extra: Iterable[str] = ()) -> set[str] | None:
        """The labels `expr`'s result carries (None for a scalar); problems go to `self.problems`."""
        self._expr = expr
        result = self._labels(pp.parse(expr))
        available = (result or set()) | set(extra)
        for text in templates:
            for label in sorted(label for label in template_labels(text) if not has_label(available, label)):
                self._problem(f"template {text!r} reads label {label!r}, which the result does not carry")
        return result

    def _problem(self, text: str) -> None:
        self.problems.append(f"{self._expr}: {text}")

    def _need(self, labels: Iterable[str], have: set[str] | None, where: str) -> None:
        for label in labels:
            if have is not None and not has_label(have, label):
                self._problem(f"{where} names label {label!r}, not among {sorted(have)}")

    def _need_job(self, name: str, node: pp.VectorSelector) -> None:
        """A platform exporter's series is read only with its exporter's `job`: a tenant's server may
        expose a series of the same name, which only the scrape's `job` tells apart."""
        job = EXPORTER_JOBS.get(self.inventory.sources.get(name, ""))
        if job is None:
            return
        if not any(m.name == "job" and m.op == pp.MatchOp.Equal and m.value == job for m in node.matchers.matchers):
            self._problem(f"selector of {name} does not select job=\"{job}\"")

    def _labels(self, node: object) -> set[str] | None:
        if isinstance(node, pp.VectorSelector):
            name = node.name or next((m.value for m in node.matchers.matchers if m.name == "__name__"), None)
            if name is None or name not in self.inventory.metrics:
                self._problem(f"metric {name!r} is in neither the metric inventory nor a recording rule")
                return set()
            have = self.inventory.metrics[name]
            self._need_job(name, node)
            self._need([m.name for m in node.matchers.matchers if m.name != "__name__"], have, f"selector of {name}")
            return set(have)
        if isinstance(node, pp.MatrixSelector):
            return self._labels(node.vector_selector)
        if isinstance(node, (pp.ParenExpr, pp.UnaryExpr, pp.SubqueryExpr)):
            return self._labels(node.expr)
        if isinstance(node, (pp.NumberLiteral, pp.StringLiteral)):
            return None
        if isinstance(node, pp.Call):
            return self._call(node)
        if isinstance(node, pp.AggregateExpr):
            inner = self._labels(node.expr)
            modifier = node.modifier
            if modifier is None:
                return set()
            self._need(modifier.labels, inner, f"aggregation {node.op}")
            if modifier.type == pp.AggModifierType.By:
                return set(modifier.labels)
            return (inner or set()) - set(modifier.labels)
        if isinstance(node, pp.BinaryExpr):
            return self._binary(node)
        raise TypeError(f"unhandled PromQL node {type(node).__name__}")

    def _call(self, node: pp.Call) -> set[str] | None:
        name = node.func.name
        args = node.args
        if name in ("label_replace", "label_join"):
            inner = self._labels(args[0])
            sources = [args[3].val] if name == "label_replace" else [a.val for a in args[3:]]
            # An empty source label reads as "": label_replace(vector(1), "namespace", "a", "", "") sets a constant.
            self._need([label for label in sources if label], inner, name)
            return (inner or set()) | {args[1].val}
        if name in ("time", "scalar", "pi"):
            for arg in args:
                self._labels(arg)
            return None
        if name == "vector":
            return set()
        found: set[str] | None = None
        for arg in args:
            labels = self._labels(arg)
            if found is None and labels is not None:
                found = labels
        return found

    def _binary(self, node: pp.BinaryExpr) -> set[str] | None:
        left, right = self._labels(node.lhs), self._labels(node.rhs)
        if left is None or right is None:
            return right if left is None else left
        modifier = node.modifier
        op = str(node.op).lower()
        matching = modifier.matching if modifier is not None else None
        if matching is not None and matching.type == pp.LabelModifierType.Include:
            self._need(matching.labels, left, f"left side of `{op} on`")
            self._need(matching.labels, right, f"right side of `{op} on`")
        group = modifier.group_labels if modifier is not None else None
        if op.endswith("or"):
            return left | right
        if modifier is not None and modifier.card == pp.VectorMatchCardinality.ManyToOne:
            self._need(group or [], right, "group_left")
            return left | set(group or [])
        if modifier is not None and modifier.card == pp.VectorMatchCardinality.OneToMany:
            self._need(group or [], left, "group_right")
            return right | set(group or [])
        return left
