"""Name, namespace, label and annotation syntax: the API server checks these in code, not in any schema.

The rules are apimachinery's (k8s.io/apimachinery/pkg/util/validation and pkg/api/validation): most
names are DNS subdomains, namespaces and services DNS labels, RBAC names path segments; label and
annotation keys are qualified names with an optional DNS-subdomain prefix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .openapi import Finding

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_LABEL_NAMED = {"Namespace", "Service"}
_PATH_SEGMENT_NAMED = {"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"}
_NOT_A_DNS_LABEL = "is not a DNS label (lowercase alphanumerics and '-', at most 63)"
_NOT_A_LABEL_VALUE = "is not a label value (at most 63 of [A-Za-z0-9-_.], alphanumeric at both ends)"


def metadata_findings(obj: Mapping[str, Any]) -> list[Finding]:
    """Syntax problems of `obj`'s metadata; the types are the schemas' to check."""
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        return [Finding(("metadata",), "required field is missing" if metadata is None else "must be a map")]
    findings = []
    name = metadata.get("name")
    if not name and not metadata.get("generateName"):
        findings.append(Finding(("metadata", "name"), "required field is missing"))
    elif isinstance(name, str) and (problem := name_problem(obj.get("kind"), name)):
        findings.append(Finding(("metadata", "name"), problem))
    namespace = metadata.get("namespace")
    if isinstance(namespace, str) and not _is_dns_label(namespace):
        findings.append(Finding(("metadata", "namespace"), f"{namespace!r} {_NOT_A_DNS_LABEL}"))
    for group in ("labels", "annotations"):
        entries = metadata.get(group)
        for key, value in (entries if isinstance(entries, dict) else {}).items():
            if problem := key_problem(key):
                findings.append(Finding(("metadata", group, key), problem))
            if group == "labels" and isinstance(value, str) and not (_LABEL_VALUE.fullmatch(value) and len(value) <= 63):
                findings.append(Finding(("metadata", group, key), f"{value!r} {_NOT_A_LABEL_VALUE}"))
    return findings


def name_problem(kind: Any, name: str) -> str | None:
    if kind in _PATH_SEGMENT_NAMED:
        if name in (".", "..") or set(name) & {"/", "%"}:
            return f"{name!r} may not be '.' or '..', nor contain '/' or '%'"
        return None
    if kind in _LABEL_NAMED:
        return None if _is_dns_label(name) else f"{name!r} {_NOT_A_DNS_LABEL}"
    if _DNS_SUBDOMAIN.fullmatch(name) and len(name) <= 253:
        return None
    return f"{name!r} is not a DNS subdomain (lowercase alphanumerics, '-' and '.', at most 253)"


def key_problem(key: Any) -> str | None:
    """A label or annotation key: `[prefix/]name`."""
    prefix, _, name = str(key).rpartition("/")
    if prefix and not (_DNS_SUBDOMAIN.fullmatch(prefix) and len(prefix) <= 253):
        return f"key prefix {prefix!r} is not a DNS subdomain"
    if not (_QUALIFIED_NAME.fullmatch(name) and len(name) <= 63):
        return f"key name {name!r} is not a qualified name (at most 63 of [A-Za-z0-9-_.], alphanumeric at both ends)"
    return None


def _is_dns_label(text: str) -> bool:
    return bool(_DNS_LABEL.fullmatch(text)) and len(text) <= 63
