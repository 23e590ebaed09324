"""Declaring a pinned Helm chart: the one way every component installs a chart."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from config.versions import ChartPin


def helm_release(
    logical_name: str,
    *,
    release_name: str,
    pin: ChartPin,
    namespace: str,
    values: Mapping[str, Any],
    opts: pulumi.ResourceOptions,
    skip_crds: bool = False,
) -> k8s.helm.v3.Release:
    """A Helm release of `pin` (an OCI reference has no repository) with explicit values."""
    return k8s.helm.v3.Release(
        logical_name,
        name=release_name,
        chart=pin.chart,
        version=pin.version,
        repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=pin.repository) if pin.repository else None,
        namespace=namespace,
        values=dict(values),
        skip_crds=skip_crds or None,
        opts=opts,
    )
