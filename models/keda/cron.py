"""KEDA's `cron` scaler (kedacore/keda v2.20.2, pkg/scalers/cron_scaler.go) and the cron parser it uses.

- Metadata: `start`, `end`, `timezone` and `desiredReplicas`, all required (`cronMetadata`: no
  `optional` tag); `Validate` refuses a start equal to the end and `desiredReplicas` 0.
- Schedules are parsed by robfig/cron v3.0.1 (KEDA's go.mod) with
  `cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)`: exactly five fields, no
  `@daily` descriptors (no `cron.Descriptor` flag), no seconds. Each field is `*`, `?` (as `*`), a value,
  a range `a-b`, with an optional step `/n` (`a/n` runs from a to the field's maximum), comma-separated;
  months and weekdays also by three-letter name, case-insensitive (parser.go getField, getRange, parseIntOrName;
  spec.go bounds: minutes 0-59, hours 0-23, days 1-31, months 1-12, weekdays 0-6).
- robfig's day rule (spec.go dayMatches): when day-of-month or day-of-week is `*`/`?`, both must match;
  when both are restricted, either may.
- `GetMetricsAndActivity`: in `timezone` (Go's `time.LoadLocation`), with the next start and the next
  end after now, the trigger is inside its window unless the next start comes strictly before the next
  end. Inside, the metric is `desiredReplicas`, else 0; the trigger is active inside only.
- `GetMetricSpecForScaling`: an External metric with target AverageValue 1 (the default metricType), so
  the HPA proposes ceil(value / 1) replicas: `desiredReplicas` inside the window, none outside.
- The HPA takes the largest proposal of all metrics (kubernetes/kubernetes pkg/controller/podautoscaler/
  horizontal.go computeReplicasForMetrics), then clamps to [minReplicas, maxReplicas]: beside other
  triggers the cron trigger is a floor of `desiredReplicas` during the window, and outside it the floor
  falls back to the ScaledObject's `minReplicaCount`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo, available_timezones

# (minimum, maximum, names) per field, robfig/cron v3.0.1 spec.go.
_MONTHS = {
    name: i + 1
    for i, name in enumerate(["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"])
}
_WEEKDAYS = {name: i for i, name in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
_FIELDS: tuple[tuple[str, int, int, dict[str, int]], ...] = (
    ("minute", 0, 59, {}),
    ("hour", 0, 23, {}),
    ("day of month", 1, 31, {}),
    ("month", 1, 12, _MONTHS),
    ("day of week", 0, 6, _WEEKDAYS),
)


class CronError(ValueError):
    """A schedule robfig/cron (as KEDA configures it) refuses."""


@dataclass(frozen=True)
class Schedule:
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    any_day: bool  # day of month was `*` or `?`
    any_weekday: bool

    def day_matches(self, moment: datetime) -> bool:
        dom = moment.day in self.days
        # Go's Weekday: Sunday is 0; Python's weekday(): Monday is 0.
        dow = (moment.weekday() + 1) % 7 in self.weekdays
        if self.any_day or self.any_weekday:
            return dom and dow
        return dom or dow

    def next_after(self, moment: datetime) -> datetime:
        """The first minute strictly after `moment` (wall-clock time) that the schedule fires."""
        t = moment.replace(second=0, microsecond=0) + timedelta(minutes=1)
        limit = t + timedelta(days=5 * 366)
        while t < limit:
            if t.month not in self.months:
                t = (t.replace(day=1, hour=0, minute=0) + timedelta(days=32)).replace(day=1)
            elif not self.day_matches(t):
                t = t.replace(hour=0, minute=0) + timedelta(days=1)
            elif t.hour not in self.hours:
                t = t.replace(minute=0) + timedelta(hours=1)
            elif t.minute not in self.minutes:
                t += timedelta(minutes=1)
            else:
                return t
        raise CronError("never fires")


@functools.cache
def parse(spec: str) -> Schedule:
    """Parse a five-field schedule as KEDA's cron scaler does; CronError names the field at fault."""
    fields = spec.split()
    if len(fields) != len(_FIELDS):
        raise CronError(f"has {len(fields)} fields; KEDA's cron scaler takes exactly 5 (minute hour day month weekday)")
    values = []
    stars = []
    for text, (name, low, high, names) in zip(fields, _FIELDS, strict=True):
        values.append(frozenset(_field(text, name, low, high, names)))
        # robfig keeps its star bit for `*`, `?` and a step of 1 over them (getRange), in any part of a list.
        stars.append(any(part in ("*", "?", "*/1", "?/1") for part in text.split(",")))
    minutes, hours, days, months, weekdays = values
    return Schedule(minutes, hours, days, months, weekdays, any_day=stars[2], any_weekday=stars[4])


def _field(text: str, name: str, low: int, high: int, names: dict[str, int]) -> set[int]:
    found: set[int] = set()
    for part in text.split(","):
        found |= _range(part, name, low, high, names)
    return found


def _range(part: str, name: str, low: int, high: int, names: dict[str, int]) -> set[int]:
    range_and_step = part.split("/")
    if len(range_and_step) > 2:
        raise CronError(f"{name} {part!r} has more than one '/'")
    bounds = range_and_step[0].split("-")
    if len(bounds) > 2:
        raise CronError(f"{name} {part!r} has more than one '-'")
    if bounds[0] in ("*", "?"):
        if len(bounds) > 1:
            raise CronError(f"{name} {part!r}: '*' takes no range")
        start, end = low, high
    else:
        start = _value(bounds[0], name, names)
        end = _value(bounds[1], name, names) if len(bounds) == 2 else start
    step = 1
    if len(range_and_step) == 2:
        step = _value(range_and_step[1], name, {})
        if step <= 0:
            raise CronError(f"{name} {part!r} has step {step}; it must be positive")
        if len(bounds) == 1 and bounds[0] not in ("*", "?"):
            end = high  # `a/n`: from a to the field's maximum
    if start < low or end > high or start > end:
        raise CronError(f"{name} {part!r} is outside {low}-{high} or runs backwards")
    return set(range(start, end + 1, step))


def _value(text: str, name: str, names: dict[str, int]) -> int:
    if text.lower() in names:
        return names[text.lower()]
    if not text.isdigit():
        raise CronError(f"{name} {text!r} is not a number{' or a three-letter name' if names else ''}")
    return int(text)


@functools.cache
def _zone_names() -> frozenset[str]:
    """The IANA names the installed tz database holds; `available_timezones` walks the whole database each call."""
    return frozenset(available_timezones())


def check_timezone(name: str) -> None:
    """A zone `time.LoadLocation` finds: an IANA name. An empty name would be UTC upstream, but the key is required."""
    if name not in _zone_names():
        raise CronError(f"{name!r} is not an IANA time zone name such as 'Europe/Berlin' or 'America/New_York'")


def in_window(start: Schedule, end: Schedule, timezone: str, now: datetime) -> bool:
    """`GetMetricsAndActivity`: whether `now` (timezone-aware) is inside the start-end window."""
    local = now.astimezone(ZoneInfo(timezone)).replace(tzinfo=None)
    return not start.next_after(local) < end.next_after(local)


def metric_value(start: Schedule, end: Schedule, timezone: str, desired_replicas: int, now: datetime) -> int:
    """The External metric the trigger reports, which the HPA reads against a target of 1 per replica."""
    return desired_replicas if in_window(start, end, timezone, now) else 0


def hpa_floor(
    start: Schedule, end: Schedule, timezone: str, desired_replicas: int, min_replicas: int, now: datetime
) -> int:
    """The fewest replicas the HPA keeps with the cron trigger beside others: the max of proposals, at least min."""
    return max(metric_value(start, end, timezone, desired_replicas, now), min_replicas)


def hours_inside(start: Schedule, end: Schedule, timezone: str, begin: datetime, until: datetime) -> float:
    """Hours of [begin, until) (timezone-aware) the window is open: it opens at a start firing, closes at an end one."""
    zone = ZoneInfo(timezone)
    local = begin.astimezone(zone).replace(tzinfo=None)
    stop = until.astimezone(zone).replace(tzinfo=None)
    inside = in_window(start, end, timezone, begin)
    total = timedelta()
    while local < stop:
        change = min((end if inside else start).next_after(local), stop)
        if inside:
            total += change - local
        local, inside = change, not inside if change < stop else inside
    return total.total_seconds() / 3600
