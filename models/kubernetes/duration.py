"""metav1.Duration as the API server and controllers read it: Go's time.ParseDuration.

golang/go src/time/format.go ParseDuration: a sequence of decimal numbers, each with a unit, in any order,
summed ("1h30m", "30m1h" and "45m45m" are all 5400 s). The durations the platform writes and the
controllers it models read (Karpenter's consolidateAfter, expireAfter, terminationGracePeriod and budget
durations) use whole hours, minutes and seconds, which is what this reads; anything else is refused.
"""

from __future__ import annotations

import re

_PART = re.compile(r"([0-9]+)(h|m|s)")
_WHOLE = re.compile(r"^(?:[0-9]+(?:h|m|s))+$")
_SECONDS = {"h": 3600, "m": 60, "s": 1}


def duration_seconds(text: str) -> int:
    """`8h`, `1h30m`, `90s` -> seconds; ValueError for anything but whole hours, minutes and seconds."""
    if not _WHOLE.match(text):
        raise ValueError(f"{text!r} is not a duration like '8h', '1h30m' or '90s'")
    return sum(int(amount) * _SECONDS[unit] for amount, unit in _PART.findall(text))
