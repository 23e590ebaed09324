"""KEDA's `cron` scaler (kedacore/keda v2.20.2, pkg/scalers/cron_scaler.go) and the cron parser it uses.

- Metadata: `start`, `end`, `timezone` and `desiredReplicas`, all required (`cronMetadata`: no
  `optional` tag); `Validate` refuses a start equal to the end and `desiredReplicas` 0.
- Schedules are parsed by robfig/cron v3.0.1 (KEDA's go.mod; models/cron.py) with
  `cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)`: exactly five fields, no
  `@daily` descriptors (no `cron.Descriptor` flag), no seconds. A `TZ=` prefix would make that schedule
  run in its own zone rather than `timezone`; the functions below read both schedules in `timezone`, and
  config/autoscaling.py refuses a prefix, so the zone is named once.
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

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from models.cron import CronError, Schedule, zone_names
from models.cron import parse as parse_cron

__all__ = ["CronError", "Schedule", "check_timezone", "hours_inside", "hpa_floor", "in_window", "metric_value", "parse"]


def parse(spec: str) -> Schedule:
    """Parse a schedule as KEDA's cron scaler configures robfig/cron: five fields, no descriptors."""
    return parse_cron(spec, descriptors=False)


def check_timezone(name: str) -> None:
    """A zone `time.LoadLocation` finds: an IANA name. An empty name would be UTC upstream, but the key is required."""
    if name not in zone_names():
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
