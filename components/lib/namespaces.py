"""Namespaces the platform's controllers run in, each with one Pod Security level for all three modes."""

from __future__ import annotations

from typing import Any

from config.labels import POD_SECURITY_LABEL, TENANT_LABEL
from config.namespaces import CONTROLLER_NAMESPACES, namespace_selector


def controller_namespace(name: str) -> dict[str, Any]:
    """A Namespace enforcing, auditing and warning at its level in `CONTROLLER_NAMESPACES`.

    Only names in that table can be built, so every controller namespace is one tenants may not take.
    """
    level = CONTROLLER_NAMESPACES[name]
    labels = {f"{POD_SECURITY_LABEL}/{mode}": level for mode in ("enforce", "audit", "warn")}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def every_tenant_namespace() -> dict[str, Any]:
    """A selector of every tenant namespace, by the label the tenants component sets (tenants cannot relabel their namespace).

    A label rather than a list of names: onboarding a tenant must not change (and restart) Kueue or the
    admission policies' bindings.
    """
    return {"matchExpressions": [{"key": TENANT_LABEL, "operator": "Exists"}]}


def namespace_peer(name: str) -> dict[str, Any]:
    """A NetworkPolicy peer: every pod of namespace `name`."""
    return {"namespaceSelector": namespace_selector(name)}
