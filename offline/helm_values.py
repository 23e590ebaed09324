"""A Helm release's values against the chart's defaults, as vendored in upstream/<chart>/<version>/.

Helm accepts any key and the chart's templates ignore those they do not read, so a misspelt setting
passes silently. Every key path a release sets must exist in the chart's values.yaml; a subchart's
keys (the dependency's values key, its alias if it has one) in that subchart's vendored values.yaml
under the parent's own section for it. Beneath a default the chart leaves free-form anything goes;
lists are not descended into.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any

from config.versions import CHARTS

from . import upstream
from .openapi import FieldPath, Finding, dotted, type_name


def chart_key(chart: Any) -> str | None:
    """The `config.versions.CHARTS` key of a release's chart reference."""
    return next((key for key, pin in CHARTS.items() if pin.chart == chart), None)


def release_problems(file: str, release: Mapping[str, Any]) -> list[str]:
    """Problem lines, `<file> <chart> <version>: values.<path>: <reason>`, for one release as the render writes it."""
    chart, version = release.get("chart"), str(release.get("version"))
    key = chart_key(chart)
    label = f"{file} {key or chart} {version}"
    if key is None:
        return [f"{label}: chart: no chart of config/versions.py has this reference, so no defaults to check against"]
    try:
        defaults = upstream.chart_values(key, version)
        subcharts = subchart_defaults(key, version, defaults)
    except upstream.MissingUpstream as err:
        return [f"{label}: chart: {err}"]
    findings = values_findings(release.get("values") or {}, defaults, subcharts)
    return [f"{label}: {dotted(('values', *f.path))}: {f.reason}" for f in findings]


def subchart_defaults(chart: str, version: str, defaults: Mapping[str, Any]) -> dict[str, Mapping[str, Any] | None]:
    """By values key: each dependency's vendored defaults under the parent's own section, or None if not vendored."""
    vendored = upstream.subchart_values(chart, version)
    keys = {d.get("alias") or d["name"]: d["name"] for d in _dependencies(chart, version)}
    keys.update({name: name for name in vendored})
    result: dict[str, Mapping[str, Any] | None] = {}
    for key, name in keys.items():
        section = defaults.get(key)
        result[key] = helm_merge(vendored[name], section if isinstance(section, dict) else {}) if name in vendored else None
    return result


@functools.cache
def _dependencies(chart: str, version: str) -> tuple[Mapping[str, Any], ...]:
    return tuple(upstream.chart_metadata(chart, version).get("dependencies") or ())


def values_findings(
    values: Mapping[str, Any],
    defaults: Mapping[str, Any],
    subcharts: Mapping[str, Mapping[str, Any] | None] | None = None,
) -> list[Finding]:
    """Key paths of `values` the chart does not have; a subchart's keys against its own defaults where vendored.

    `global` reaches the chart and every subchart, so its keys may come from any of their defaults.
    """
    subcharts = subcharts or {}
    findings = []
    for key, value in values.items():
        if key in subcharts:
            subchart = subcharts[key]
            if subchart is not None and isinstance(value, dict):
                findings += _tree_findings(value, subchart, (key,), f"subchart {key}'s values.yaml")
        elif key == "global" and isinstance(value, dict):
            merged = helm_merge(*(d.get("global") or {} for d in _present(defaults, *subcharts.values())))
            findings += _tree_findings(value, merged, (key,), "the global values of the chart and its subcharts")
        else:
            findings += _tree_findings({key: value}, defaults, (), "the chart's values.yaml")
    return findings


def _tree_findings(values: Mapping[str, Any], defaults: Mapping[str, Any], path: FieldPath, source: str) -> list[Finding]:
    findings: list[Finding] = []
    for key, value in values.items():
        here = (*path, key)
        if key not in defaults:
            findings.append(Finding(here, f"not a key of {source}"))
            continue
        default = defaults[key]
        if _free_form(default):
            continue
        if isinstance(default, dict) and isinstance(value, dict):
            findings += _tree_findings(value, default, here, source)
        elif value is not None and (
            isinstance(default, dict) != isinstance(value, dict)
            # A list or a switch in the chart's templates (`range`, `if`) misreads a scalar, or a string "false".
            or (isinstance(default, list | bool) and type(value) is not type(default))
        ):
            findings.append(Finding(here, f"is {type_name(value)} where {source} has {type_name(default)}"))
    return findings


def _free_form(default: Any) -> bool:
    """A map the chart passes through as it is: empty or null by default (podAnnotations: {}), or keyed by
    label keys rather than settings (nodeSelector: {kubernetes.io/os: linux}), which a setting's name never is."""
    return default is None or default == {} or (isinstance(default, dict) and any("/" in str(k) for k in default))


def _present(*trees: Mapping[str, Any] | None) -> Iterable[Mapping[str, Any]]:
    return (tree for tree in trees if tree is not None)


def helm_merge(*layers: Mapping[str, Any]) -> dict[str, Any]:
    """Later layers over earlier ones, maps merged key by key, anything else (lists included) replaced:
    Helm's coalescing of values. The layers are not changed; the result shares their leaves."""
    result: dict[str, Any] = {}
    for layer in layers:
        for key, value in layer.items():
            if isinstance(value, dict) and isinstance(result.get(key), dict):
                result[key] = helm_merge(result[key], value)
            else:
                result[key] = value
    return result
