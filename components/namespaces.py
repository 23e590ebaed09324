"""Namespaces the platform's controllers run in, each with one Pod Security level for all three modes."""

from __future__ import annotations

from typing import Any, Literal

PodSecurityLevel = Literal["privileged", "baseline", "restricted"]


def controller_namespace(name: str, level: PodSecurityLevel) -> dict[str, Any]:
    """A Namespace enforcing, auditing and warning at `level`."""
    labels = {f"pod-security.kubernetes.io/{mode}": level for mode in ("enforce", "audit", "warn")}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}
