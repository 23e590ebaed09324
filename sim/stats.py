"""Statistics over runs: percentiles of one run's values, and means with Student-t confidence intervals over seeds.

The t quantile is exact for whole degrees of freedom: P(|T| <= t) has a closed form in theta = atan(t / sqrt(df))
(Abramowitz and Stegun 26.7.3 and 26.7.4), which bisection inverts. No SciPy needed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

CONFIDENCE = 0.95


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0-100); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def t_within(t: float, df: int) -> float:
    """P(|T| <= t) for Student's t with `df` degrees of freedom (A&S 26.7.3 odd df, 26.7.4 even df)."""
    theta = math.atan(t / math.sqrt(df))
    sin, cos = math.sin(theta), math.cos(theta)
    if df % 2 == 0:
        term, total = 1.0, 1.0
        for k in range(2, df, 2):  # cos^(k) theta (1.3...(k-1)) / (2.4...k)
            term *= cos * cos * (k - 1) / k
            total += term
        return sin * total
    if df == 1:
        return 2 * theta / math.pi
    term, total = cos, cos
    for k in range(3, df, 2):  # cos^(k) theta (2.4...(k-1)) / (1.3...k)
        term *= cos * cos * (k - 1) / k
        total += term
    return 2 / math.pi * (theta + sin * total)


def t_quantile(df: int, confidence: float = CONFIDENCE) -> float:
    """The t with P(|T| <= t) = confidence: the half-width of a two-sided interval in standard errors."""
    low, high = 0.0, 1.0
    while t_within(high, df) < confidence:
        high *= 2
    for _ in range(100):
        middle = (low + high) / 2
        if t_within(middle, df) < confidence:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def summary(values: Sequence[float | None], floor: float | None = None) -> dict[str, float | int | None]:
    """Mean over the seeds that have the figure, and its 95 % Student-t interval (None with fewer than two).

    `floor`: the least value the figure can take (0 for hours, counts, waits and costs). The t interval is
    symmetric about the mean; a skewed figure over few seeds (a p50 wait that is 0 on some seeds and hours on
    others) would reach below what the figure can be, so the interval is cut at `floor`. A difference
    between two runs takes no floor."""
    present = [v for v in values if v is not None]
    n = len(present)
    average = mean(present)
    if n < 2 or average is None:
        return {"mean": average, "low": None, "high": None, "n": n}
    variance = sum((v - average) ** 2 for v in present) / (n - 1)
    half = t_quantile(n - 1) * math.sqrt(variance / n)
    low = average - half if floor is None else max(floor, average - half)
    return {"mean": average, "low": low, "high": average + half, "n": n}
