"""Service levels a capacity plan must meet: a small grammar, and each level read from replicated measures.

A service level is `SCOPE.METRIC<=BOUND`, one per `--slo`:

    production.p95_time_to_start<=15m     work of the `production` tier: 95th percentile creation -> Running
    standard.p95_time_to_start<=2h        work of the `standard` tier
    ml-research.unstarted<=5%             a tenant's runnable work still not started at the run's end
    all.p95_wait<=30m                     every job: Kueue's wait, creation -> first admission
    inference.p95_time_to_gpu<=3m         every inference scale-up together: HPA decision -> a Ready server
    inference/chat.unserved<=1%           one deployment: requests not served by the end, share of its demand

Work metrics (`p50_time_to_start`, `p95_time_to_start`, `mean_time_to_start`, `p95_wait`, `unstarted`) take a
priority tier, a tenant, or `all`; inference metrics (`p50_time_to_gpu`, `p95_time_to_gpu`, `unserved`) take
`inference` (every deployment together) or one deployment as `tenant/name`. Times take a unit (`90s`, `15m`,
`2h`, `1h30m`); shares a percent sign (`1%`). Every level is an upper bound: lower is better for each metric.

A level is met when the mean over the seeds meets the bound (sim/stats.py gives the mean and its 95 % interval,
which the plan reports beside it). Each figure comes from sim/measures.py by its metric id; none is computed here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import measures as m

WORK = "work"
INFERENCE = "inference"
ALL = "all"
# The scope word for every inference deployment together.
ALL_DEPLOYMENTS = "inference"

SECONDS = "s"
PERCENT = "%"


@dataclass(frozen=True)
class Metric:
    kind: str  # WORK or INFERENCE
    unit: str  # SECONDS or PERCENT
    measure: str  # the id at a tier, tenant or deployment level (sim/measures.py)
    run_measure: str  # the id at the run's level: all work, or every deployment together
    means: str


METRICS: dict[str, Metric] = {
    "p95_time_to_start": Metric(WORK, SECONDS, m.START_P95, m.START_P95, "95th percentile of creation to every pod Running"),
    "p50_time_to_start": Metric(WORK, SECONDS, m.START_P50, m.START_P50, "median of creation to every pod Running"),
    "mean_time_to_start": Metric(WORK, SECONDS, m.START_MEAN, m.START_MEAN, "mean of creation to every pod Running"),
    "p95_wait": Metric(WORK, SECONDS, m.WAIT_P95, m.WAIT_P95, "95th percentile of Kueue's wait, creation to admission"),
    "unstarted": Metric(WORK, PERCENT, m.UNSTARTED_PCT, m.UNSTARTED_PCT,
                        "runnable work not started by the run's end, share of the runnable work"),
    "p95_time_to_gpu": Metric(INFERENCE, SECONDS, m.TTG_P95, m.INFERENCE_TTG_P95,
                              "95th percentile of an HPA scale-up to its server Ready"),
    "p50_time_to_gpu": Metric(INFERENCE, SECONDS, m.TTG_P50, m.INFERENCE_TTG_P50,
                              "median of an HPA scale-up to its server Ready"),
    "unserved": Metric(INFERENCE, PERCENT, m.UNSERVED_PCT, m.INFERENCE_UNSERVED_PCT,
                       "requests not served by the run's end (refused or still queued), share of demand"),
}

_SLO = re.compile(r"^(?P<scope>[A-Za-z0-9][A-Za-z0-9_/-]*)\.(?P<metric>[a-z0-9_]+)\s*(?P<op><=|>=|<|>|==|=)\s*(?P<bound>\S+)$")
_DURATION = re.compile(r"^(?:(?P<h>\d+(?:\.\d+)?)h)?(?:(?P<m>\d+(?:\.\d+)?)m)?(?:(?P<s>\d+(?:\.\d+)?)s)?$")
_PERCENT = re.compile(r"^(?P<p>\d+(?:\.\d+)?)%$")
EXAMPLE = "e.g. 'production.p95_time_to_start<=15m' or 'inference.unserved<=1%'"


class SloError(ValueError):
    """One line: the level as given, what is wrong, and how to write it."""


@dataclass(frozen=True)
class Slo:
    text: str  # as the user wrote it, spaces removed
    scope: str
    metric: str
    bound: float  # seconds, or percent

    @property
    def kind(self) -> Metric:
        return METRICS[self.metric]

    def show_bound(self) -> str:
        return show(self.bound, self.kind.unit)


@dataclass(frozen=True)
class Names:
    """What a level's scope may name in this stack and workload."""

    tiers: tuple[str, ...]
    tenants: tuple[str, ...]
    deployments: tuple[str, ...]  # tenant/name


def show(value: float | None, unit: str) -> str:
    """A level's figure as the grammar writes it: `15m`, `1h30m`, `42s`, `0.8%`."""
    if value is None:
        return "n/a"
    if unit == PERCENT:
        return f"{value:.3g}%"
    if value < 120:
        return f"{value:.0f}s"
    if value < 7200:
        return f"{value / 60:.1f}m"
    return f"{value / 3600:.2f}h"


def parse(text: str, names: Names) -> Slo:
    """`production.p95_time_to_start<=15m` -> Slo; SloError with one line for anything else."""
    given = "".join(text.split())
    where = f"--slo {text!r}"
    found = _SLO.match(given)
    if found is None:
        raise SloError(f"{where}: not SCOPE.METRIC<=BOUND; {EXAMPLE}")
    scope, metric, op, bound = found["scope"], found["metric"], found["op"], found["bound"]
    if metric not in METRICS:
        raise SloError(f"{where}: no metric {metric!r}; one of {', '.join(METRICS)}")
    kind = METRICS[metric]
    if op != "<=":
        raise SloError(f"{where}: {op!r}: every service level is an upper bound (lower is better for {metric}); "
                       f"write {scope}.{metric}<={bound}")
    value = _bound(bound, kind.unit, where, metric)
    _check_scope(scope, metric, kind, names, where)
    return Slo(given, scope, metric, value)


def _bound(text: str, unit: str, where: str, metric: str) -> float:
    if unit == PERCENT:
        found = _PERCENT.match(text)
        if found is None:
            raise SloError(f"{where}: {text!r}: {metric} is a share of demand or work; write a percentage, e.g. 1%")
        value = float(found["p"])
        if value > 100:
            raise SloError(f"{where}: {text!r}: a share is at most 100%")
        return value
    found = _DURATION.match(text)
    if found is None or not text or not any(found.groupdict().values()):
        raise SloError(f"{where}: {text!r}: {metric} is a time; give it a unit, e.g. 90s, 15m, 2h or 1h30m")
    return sum(float(found[part] or 0) * factor for part, factor in (("h", 3600), ("m", 60), ("s", 1)))


def _check_scope(scope: str, metric: str, kind: Metric, names: Names, where: str) -> None:
    if kind.kind == INFERENCE:
        if not names.deployments:
            raise SloError(f"{where}: {metric} is an inference level and the workload has no inference deployments")
        if scope == ALL_DEPLOYMENTS or scope in names.deployments:
            return
        known = ", ".join(names.deployments) or "none in this workload"
        raise SloError(f"{where}: {metric} is an inference level: its scope is {ALL_DEPLOYMENTS!r} (every deployment) or "
                       f"a deployment as tenant/name ({known}), not {scope!r}")
    if scope == ALL:
        return
    if scope in names.tiers and scope in names.tenants:
        raise SloError(f"{where}: {scope!r} is both a priority tier and a tenant here; name the tenant's work by tier "
                       "instead, or rename one")
    if scope in names.tiers or scope in names.tenants:
        return
    raise SloError(f"{where}: {metric} is a work level: its scope is {ALL!r}, a priority tier "
                   f"({', '.join(names.tiers)}) or a tenant ({', '.join(names.tenants)}), not {scope!r}")


def level_of(slo: Slo, names: Names) -> str:
    """Whose figure the level reads: "run" (every workload or deployment), a "deployment", a "tier" or a "tenant"."""
    if slo.scope in (ALL, ALL_DEPLOYMENTS):
        return "run"
    if slo.kind.kind == INFERENCE:
        return "deployment"
    return "tier" if slo.scope in names.tiers else "tenant"


def figure(slo: Slo, combined: Mapping[str, Any], names: Names) -> dict[str, Any]:
    """The level's figure over the seeds, {"mean", "low", "high", "n"}, from sim/experiment.py's replicate()."""
    level = level_of(slo, names)
    if level == "run":
        row, measure = combined["run"], slo.kind.run_measure
    else:
        row, measure = combined[f"{level}s"].get(slo.scope, {}), slo.kind.measure
    return dict(row.get(measure) or {"mean": None, "low": None, "high": None, "n": 0})


def violation(slo: Slo, value: Mapping[str, Any]) -> float:
    """How far the mean is past the bound, as a share of the bound (<= 0: met). A level with no figure (nothing
    of its scope ran on any seed) counts as missed by 1."""
    mean = value.get("mean")
    if mean is None:
        return 1.0
    return (mean - slo.bound) / max(slo.bound, 1e-9)


def met(slo: Slo, value: Mapping[str, Any]) -> bool:
    return violation(slo, value) <= 0


def parse_all(texts: Sequence[str], names: Names) -> list[Slo]:
    """Every level, each scope.metric once."""
    slos: list[Slo] = []
    for text in texts:
        slo = parse(text, names)
        twin = next((s for s in slos if (s.scope, s.metric) == (slo.scope, slo.metric)), None)
        if twin is not None:
            raise SloError(f"--slo {text!r}: {slo.scope}.{slo.metric} is given twice ({twin.text}); keep one")
        slos.append(slo)
    return slos
