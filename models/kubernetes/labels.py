"""Well-known labels the API server sets, and label selectors as apimachinery evaluates them.

kubernetes/kubernetes v1.35.0:
- staging/src/k8s.io/api/core/v1/well_known_labels.go (`LabelMetadataName`): the namespace lifecycle
  sets it on every namespace to the namespace's name (since 1.22, KEP-2161).
- staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/helpers.go `LabelSelectorAsSelector` and
  pkg/labels/selector.go `Requirement.Matches`: every `matchLabels` pair and every expression must hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


def selects(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Whether a LabelSelector selects an object with `labels` (an empty selector selects everything)."""
    if not (selector.get("matchLabels") or {}).items() <= labels.items():
        return False
    for expression in selector.get("matchExpressions") or ():
        key, operator, values = expression["key"], expression["operator"], expression.get("values", ())
        present = key in labels
        if not {
            "Exists": present,
            "DoesNotExist": not present,
            "In": present and labels[key] in values,
            "NotIn": not present or labels[key] not in values,
        }[operator]:
            return False
    return True
