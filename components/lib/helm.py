"""Declaring a pinned Helm chart: the one way every component installs a chart."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from config.versions import ChartPin, helm_install


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
    """A Helm release of `pin` (an OCI reference has no repository) with explicit values.

    Timeout, atomic and cleanup-on-fail come from the chart's row of config/versions.py HELM_INSTALL.
    """
    install = helm_install(pin)
    return k8s.helm.v3.Release(
        logical_name,
        name=release_name,
        chart=pin.chart,
        version=pin.version,
        repository_opts=k8s.helm.v3.RepositoryOptsArgs(repo=pin.repository) if pin.repository else None,
        namespace=namespace,
        values=dict(values),
        skip_crds=skip_crds or None,
        timeout=install.timeout_seconds,
        atomic=install.atomic,
        cleanup_on_fail=install.cleanup_on_fail,
        opts=opts,
    )
