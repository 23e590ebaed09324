"""Amounts as Kueue counts them: integers, milli-units for cpu and whole units (rounded up) for the rest
(kubernetes-sigs/kueue v0.19.2 pkg/resources/requests.go, ResourceValue). Integer arithmetic keeps
the model exact and fast."""

from __future__ import annotations

import math
from fractions import Fraction

from models.kubernetes.quantity import parse_quantity

CPU = "cpu"


def resource_value(resource: str, quantity: str | int | Fraction) -> int:
    """A quantity of `resource` in Kueue's units: "500m" cpu -> 500, "1Gi" memory -> 1073741824."""
    value = quantity if isinstance(quantity, Fraction) else parse_quantity(quantity)
    if resource == CPU:
        value *= 1000
    return math.ceil(value) if value >= 0 else -math.ceil(-value)
