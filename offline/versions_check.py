"""Checks of a stack's version overrides against what the project has vendored, and of a version change.

`python -m offline check` refuses a chart override the project cannot validate (no vendored files
in upstream/) and a pair of charts that must move together but would not; `python -m offline diff`
shows the same as warnings beside those of a Kubernetes version change EKS refuses or that skips a
minor.
"""

from __future__ import annotations

from collections.abc import Mapping

from config.versions import ChartPin

from .upstream import UPSTREAM_DIR

# Charts that ship one release in two: the CRD chart carries the controller's CRDs, so a controller
# newer than its CRDs reads fields the API server drops (config/versions.py CHARTS, karpenter-crd).
PAIRED_CHARTS: tuple[tuple[str, str], ...] = (("karpenter", "karpenter-crd"),)
KEY = "gpu-platform:versions.charts"


def chart_override_problems(overrides: Mapping[str, str], charts: Mapping[str, ChartPin]) -> list[str]:
    """One line per override with no vendored files, and per pair of charts left at different versions."""
    problems = [
        f"{KEY}.{name}: {version!r} has no vendored files in upstream/{name}/{version}/, so `validate` and the tests "
        f"cannot check what it renders: pin it in config/versions.py and run `python -m offline vendor {name}`, "
        "or drop the override"
        for name, version in sorted(overrides.items())
        if not (UPSTREAM_DIR / name / version).is_dir()
    ]
    for controller, crds in PAIRED_CHARTS:
        if charts[controller].version != charts[crds].version and (controller in overrides or crds in overrides):
            problems.append(
                f"{KEY}: {controller} {charts[controller].version!r} and {crds} {charts[crds].version!r} differ; "
                f"{crds} installs {controller}'s CRDs and must move with it: set both to one version"
            )
    return problems


def minor(version: str) -> tuple[int, int]:
    major, minor_ = version.split(".")[:2]
    return int(major), int(minor_)


def kubernetes_change_warnings(before: str | None, after: str | None) -> list[str]:
    """What EKS refuses in a control-plane version change: any downgrade, and more than one minor at a time."""
    if before is None or after is None or before == after:
        return []
    old, new = minor(before), minor(after)
    if new < old:
        return [
            f"Kubernetes {before} -> {after} is a downgrade: EKS never moves a control plane back a minor "
            "(docs/upgrading.md, Rolling back); restore the stack file instead"
        ]
    if new[1] - old[1] > 1:
        return [
            f"Kubernetes {before} -> {after} skips a minor: EKS upgrades the control plane one minor at a time; "
            f"deploy {old[0]}.{old[1] + 1} first (docs/upgrading.md, Upgrading Kubernetes)"
        ]
    return []
