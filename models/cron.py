"""robfig/cron v3.0.1, the cron library KEDA's cron scaler and Karpenter's disruption budgets both parse with.

Both pin v3.0.1 (kedacore/keda v2.20.2 and kubernetes-sigs/karpenter v1.14.1 go.mod); the callers differ
only in the parser's options: KEDA builds `NewParser(Minute | Hour | Dom | Month | Dow)`, Karpenter calls
`ParseStandard`, the same fields plus `Descriptor` (models/keda/cron.py, models/karpenter/disruption.py).

- parser.go `Parse` and `normalizeFields`: an optional `TZ=<zone> ` or `CRON_TZ=<zone> ` prefix, read once,
  names the zone the schedule runs in (`time.LoadLocation`); then exactly five whitespace-separated
  fields (no seconds), or, starting `@`, a descriptor, refused without the `Descriptor` option.
  Karpenter prefixes `TZ=UTC` itself, so a prefix of the user's own is a sixth field there.
- parser.go `getField`, `getRange`, `parseIntOrName`, `mustParseInt`: comma-separated parts, each `*` or
  `?` (the whole field; whatever follows a `-` after it is ignored), a value, or a range `a-b`, with an
  optional step `/n`; `a/n` runs from a to the field's maximum. Values are decimal (`strconv.Atoi`, a sign
  allowed, negatives refused); months and weekdays also by three-letter name, any case. A value outside
  the field's bounds, a range running backwards or a step of 0 is an error.
- spec.go bounds: minutes 0-59, hours 0-23, days 1-31, months 1-12, weekdays 0-6 (Sunday 0). Weekday 7
  is out of bounds: an error, not Sunday.
- The star bit: a part starting `*` or `?` with no step above 1 marks its field unrestricted, and
  spec.go `dayMatches` then requires both the day of month and the weekday to match; with both fields
  restricted, either matching is enough.
- parser.go `parseDescriptor`: `@yearly`/`@annually` (midnight, 1 January), `@monthly` (midnight on
  the 1st), `@weekly` (midnight on Sunday), `@daily`/`@midnight`, `@hourly` (minute 0). `@every
  <duration>` is a constant delay, not a calendar schedule: neither caller's CRD accepts it
  (Karpenter's `schedule` pattern names only the calendar descriptors), and it is not modelled here.
- spec.go `Next`: the first whole minute strictly after the given time that every field matches.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from zoneinfo import available_timezones

_MONTHS = {
    name: index + 1
    for index, name in enumerate(["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"])
}
_WEEKDAYS = {name: index for index, name in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
# (name, minimum, maximum, names) of the five fields, spec.go bounds.
_FIELDS: tuple[tuple[str, int, int, dict[str, int]], ...] = (
    ("minute", 0, 59, {}),
    ("hour", 0, 23, {}),
    ("day of month", 1, 31, {}),
    ("month", 1, 12, _MONTHS),
    ("day of week", 0, 6, _WEEKDAYS),
)
# strconv.Atoi: an optional sign, then decimal digits.
_INTEGER = re.compile(r"^[+-]?[0-9]+$")


class CronError(ValueError):
    """A schedule robfig/cron refuses."""


class NeverFires(CronError):
    """A schedule with no hit in five years (`Next` returns the zero time), such as 31 February."""


@dataclass(frozen=True)
class Schedule:
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # Sunday 0, as Go's time.Weekday
    any_day: bool  # the day-of-month field carries the star bit
    any_weekday: bool  # the day-of-week field carries the star bit
    zone: str | None = None  # the `TZ=` prefix's zone; None: the caller's

    def day_matches(self, moment: datetime) -> bool:
        """spec.go `dayMatches`: both day fields must match when either carries the star bit, else either."""
        dom = moment.day in self.days
        dow = (moment.weekday() + 1) % 7 in self.weekdays  # Python's Monday 0 -> Go's Sunday 0
        if self.any_day or self.any_weekday:
            return dom and dow
        return dom or dow

    def matches(self, moment: datetime) -> bool:
        """Whether the schedule fires in `moment`'s minute."""
        return (
            moment.minute in self.minutes
            and moment.hour in self.hours
            and moment.month in self.months
            and self.day_matches(moment)
        )

    def next_after(self, moment: datetime) -> datetime:
        """`Next`: the first whole minute strictly after `moment` (wall-clock time) the schedule fires."""
        t = moment.replace(second=0, microsecond=0) + timedelta(minutes=1)
        limit = t + timedelta(days=5 * 366)  # `Next` gives up after five years
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
        raise NeverFires("never fires")


def _all(field: int) -> frozenset[int]:
    _, low, high, _ = _FIELDS[field]
    return frozenset(range(low, high + 1))


# parser.go parseDescriptor: (minutes, hours, days, months, weekdays, any_day, any_weekday).
_DESCRIPTORS = {
    "@yearly": Schedule(frozenset({0}), frozenset({0}), frozenset({1}), frozenset({1}), _all(4), False, True),
    "@monthly": Schedule(frozenset({0}), frozenset({0}), frozenset({1}), _all(3), _all(4), False, True),
    "@weekly": Schedule(frozenset({0}), frozenset({0}), _all(2), _all(3), frozenset({0}), True, False),
    "@daily": Schedule(frozenset({0}), frozenset({0}), _all(2), _all(3), _all(4), True, True),
    "@hourly": Schedule(frozenset({0}), _all(1), _all(2), _all(3), _all(4), True, True),
}
_DESCRIPTORS["@annually"] = _DESCRIPTORS["@yearly"]
_DESCRIPTORS["@midnight"] = _DESCRIPTORS["@daily"]


@functools.cache
def parse(spec: str, *, descriptors: bool) -> Schedule:
    """`Parse` with the five standard fields, and descriptors when the caller's parser takes them (`Descriptor`)."""
    if not spec:
        raise CronError("is empty")
    zone = None
    if spec.startswith(("TZ=", "CRON_TZ=")):
        if " " not in spec:
            raise CronError("names a time zone and no schedule")
        zone = spec[spec.index("=") + 1 : spec.index(" ")]
        if zone not in zone_names():
            raise CronError(f"names time zone {zone!r}, which is not an IANA name such as 'Europe/Berlin'")
        spec = spec[spec.index(" ") :].strip()
    if spec.startswith("@"):
        if not descriptors:
            raise CronError("is a descriptor, which this parser does not accept: give five fields")
        if spec not in _DESCRIPTORS:
            raise CronError(f"is not one of the descriptors {', '.join(_DESCRIPTORS)}")
        return replace(_DESCRIPTORS[spec], zone=zone)
    fields = spec.split()
    if len(fields) != len(_FIELDS):
        raise CronError(f"has {len(fields)} fields; it takes exactly 5 (minute hour day-of-month month day-of-week)")
    values, stars = [], []
    for text, (name, low, high, names) in zip(fields, _FIELDS, strict=True):
        found: set[int] = set()
        star = False
        for part in text.split(","):
            if not part:
                continue  # strings.FieldsFunc drops empty parts
            part_values, part_star = _range(part, name, low, high, names)
            found |= part_values
            star = star or part_star
        values.append(frozenset(found))
        stars.append(star)
    minutes, hours, days, months, weekdays = values
    return Schedule(minutes, hours, days, months, weekdays, any_day=stars[2], any_weekday=stars[4], zone=zone)


@functools.cache
def zone_names() -> frozenset[str]:
    """The IANA names the installed tz database holds (what `time.LoadLocation` finds); `available_timezones`
    walks the whole database each call."""
    return frozenset(available_timezones()) | {"UTC"}


def _range(part: str, name: str, low: int, high: int, names: dict[str, int]) -> tuple[set[int], bool]:
    """`getRange`: the values of one comma-separated part, and whether it sets the star bit."""
    range_and_step = part.split("/")
    if len(range_and_step) > 2:
        raise CronError(f"{name} {part!r} has more than one '/'")
    bounds = range_and_step[0].split("-")
    star = bounds[0] in ("*", "?")
    if star:
        start, end = low, high
    else:
        if len(bounds) > 2:
            raise CronError(f"{name} {part!r} has more than one '-'")
        start = _value(bounds[0], name, names)
        end = _value(bounds[1], name, names) if len(bounds) == 2 else start
    step = 1
    if len(range_and_step) == 2:
        step = _value(range_and_step[1], name, {})
        if len(bounds) == 1:
            end = high  # `a/n`: from a to the field's maximum
        if step > 1:
            star = False
    if start < low:
        raise CronError(f"{name} {part!r} starts below {low}")
    if end > high:
        raise CronError(f"{name} {part!r} ends above {high}" + (" (Sunday is 0 or sun)" if names is _WEEKDAYS else ""))
    if start > end:
        raise CronError(f"{name} {part!r} runs backwards")
    if step == 0:
        raise CronError(f"{name} {part!r} has step 0; it must be positive")
    return set(range(start, end + 1, step)), star


def _value(text: str, name: str, names: dict[str, int]) -> int:
    """`parseIntOrName`: a three-letter name where the field has names, else a non-negative decimal."""
    if text.lower() in names:
        return names[text.lower()]
    if not _INTEGER.match(text):
        raise CronError(f"{name} {text!r} is not a number{' or a three-letter name' if names else ''}")
    value = int(text)
    if value < 0:
        raise CronError(f"{name} {text!r} is negative")
    return value
