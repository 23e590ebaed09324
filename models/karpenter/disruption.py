"""When Karpenter takes a node away: consolidation, disruption budgets, expiry, spot interruption.

Rules from kubernetes-sigs/karpenter v1.14.1 (the pin of `karpenter` in config/versions.py):
- pkg/apis/v1/nodepool.go, `Budget.IsActive` and `Budget.GetAllowedDisruptions`: a budget with a
  schedule is active when a schedule hit lies in (now - duration, now]; one without is always active.
  A percentage scales the NodePool's node count rounding UP (`GetScaledValueFromIntOrPercent(..., true)`);
  `NodePool.GetAllowedDisruptionsByReason` takes the minimum over the active budgets naming the reason
  (or naming none); an inactive budget allows everything.
- pkg/controllers/nodeclaim/disruption/consolidation.go and pkg/utils/disruption/disruption.go
  (`IsUnderConsolidateAfter`): a node becomes Consolidatable once `consolidateAfter` has passed since its
  last pod event (a pod bound to it or removed from it; its initialisation before any); `Never` turns
  consolidation off.
- pkg/controllers/disruption/emptiness.go (`WhenEmpty` and `WhenEmptyOrUnderutilized`): an empty,
  consolidatable node is deleted; pkg/controllers/disruption/singlenodeconsolidation.go
  (`WhenEmptyOrUnderutilized` only): a consolidatable node whose pods fit on the other nodes is deleted
  and its pods rescheduled.
- pkg/controllers/nodeclaim/expiration/controller.go: a NodeClaim older than `expireAfter` is deleted,
  not gated by budgets (forceful disruption since v1).
- aws/karpenter-provider-aws v1.14.1 pkg/controllers/interruption: on an EC2 Spot interruption warning
  Karpenter taints and drains the node at once; EC2 reclaims the instance two minutes after the warning.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

# EC2 sends the Spot interruption warning two minutes before it stops or terminates the instance
# (Amazon EC2 User Guide, "Spot Instance interruption notices").
SPOT_NOTICE_SECONDS = 120

EMPTY = "Empty"
UNDERUTILIZED = "Underutilized"
WHEN_EMPTY = "WhenEmpty"
WHEN_EMPTY_OR_UNDERUTILIZED = "WhenEmptyOrUnderutilized"

_DAY_NAMES = {"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTH_NAMES = {month: index + 1 for index, month in enumerate(_MONTHS)}


@dataclass(frozen=True)
class Budget:
    """One `spec.disruption.budgets[]` entry: `nodes` a count or a percentage, an optional window."""

    nodes: str
    schedule: str | None = None
    duration_seconds: int | None = None
    reasons: tuple[str, ...] | None = None


def _field(text: str, low: int, high: int, names: dict[str, int]) -> frozenset[int]:
    values: set[int] = set()
    for part in text.lower().split(","):
        step = 1
        if "/" in part:
            part, step_text = part.split("/")
            step = int(step_text)
        if part == "*":
            start, end = low, high
        elif "-" in part:
            first, last = part.split("-")
            start, end = _value(first, names), _value(last, names)
        else:
            start = end = _value(part, names)
        values.update(range(start, end + 1, step))
    # Cron's weekday 7 is Sunday, like 0.
    return frozenset(v % 7 for v in values) if names is _DAY_NAMES else frozenset(values)


def _value(text: str, names: dict[str, int]) -> int:
    return names[text] if text in names else int(text)


@dataclass(frozen=True)
class Cron:
    """A five-field cron schedule (robfig/cron's standard parser, as Karpenter uses it), in UTC."""

    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    any_day: bool
    any_weekday: bool

    @classmethod
    @functools.cache
    def parse(cls, text: str) -> Cron:
        fields = text.split()
        if len(fields) != 5:
            raise ValueError(f"{text!r} is not a five-field cron schedule")
        minute, hour, day, month, weekday = fields
        return cls(
            _field(minute, 0, 59, {}),
            _field(hour, 0, 23, {}),
            _field(day, 1, 31, {}),
            _field(month, 1, 12, _MONTH_NAMES),
            _field(weekday, 0, 6, _DAY_NAMES),
            day.startswith("*"),
            weekday.startswith("*"),
        )

    def matches(self, at: datetime) -> bool:
        """Whether the schedule fires in `at`'s minute. Day-of-month and weekday combine as cron does:
        when both are restricted, either one matching is enough."""
        if at.minute not in self.minutes or at.hour not in self.hours or at.month not in self.months:
            return False
        weekday = (at.weekday() + 1) % 7  # Python's Monday=0 -> cron's Sunday=0
        day_ok, weekday_ok = at.day in self.days, weekday in self.weekdays
        if self.any_day or self.any_weekday:
            return day_ok and weekday_ok
        return day_ok or weekday_ok


def budget_active(budget: Budget, now: datetime) -> bool:
    """`Budget.IsActive`: always without a schedule; else a hit in (now - duration, now]."""
    if budget.schedule is None or budget.duration_seconds is None:
        return True
    cron = Cron.parse(budget.schedule)
    minute = now.replace(second=0, microsecond=0)
    earliest = now - timedelta(seconds=budget.duration_seconds)
    while minute > earliest:
        if cron.matches(minute):
            return True
        minute -= timedelta(minutes=1)
    return False


def allowed_disruptions(budgets: Sequence[Budget], now: datetime, nodes: int, reason: str) -> int:
    """`GetAllowedDisruptionsByReason`: the fewest nodes any active budget for `reason` allows (rounded up)."""
    allowed = math.inf
    for budget in budgets:
        if budget.reasons is not None and reason not in budget.reasons:
            continue
        if not budget_active(budget, now):
            continue
        percent = budget.nodes.endswith("%")
        value = math.ceil(int(budget.nodes[:-1]) * nodes / 100) if percent else int(budget.nodes)
        allowed = min(allowed, value)
    return nodes if allowed == math.inf else int(allowed)


def consolidatable(last_pod_event: float, now: float, consolidate_after: float | None) -> bool:
    """A node is Consolidatable once `consolidateAfter` seconds passed since its last pod event; None: `Never`."""
    return consolidate_after is not None and now - last_pod_event >= consolidate_after


def consolidation_reason(policy: str, empty: bool, pods_fit_elsewhere: bool) -> str | None:
    """Why Karpenter would remove a consolidatable node under `policy`, or None to keep it."""
    if empty:
        return EMPTY
    if policy == WHEN_EMPTY_OR_UNDERUTILIZED and pods_fit_elsewhere:
        return UNDERUTILIZED
    return None


def expired(launched_at: float, now: float, expire_after: float | None) -> bool:
    """`expireAfter` (None: `Never`): the NodeClaim is deleted once it is this old, budgets or not."""
    return expire_after is not None and now - launched_at >= expire_after
