"""Off-hours scaling: KEDA's cron trigger as KEDA v2.20.2 reads it, and its schedule checked like every key."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from config import ConfigError
from models.keda import cron

from .conftest import fixture_document, load, render_fixture
from .recorded import kubernetes_objects

T = "gpu-platform:tenants"


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


# Each row: start, end, zone, the moment (UTC), inside the window? Worked out by hand in the zone.
WINDOWS = [
    # Weekdays 08:00-20:00 Berlin (UTC+1 in December). Wed 2 Dec 2026.
    ("0 8 * * mon-fri", "0 20 * * mon-fri", "Europe/Berlin", "2026-12-02T06:59", False),  # 07:59
    ("0 8 * * mon-fri", "0 20 * * mon-fri", "Europe/Berlin", "2026-12-02T07:00", True),  # 08:00, the start minute
    ("0 8 * * mon-fri", "0 20 * * mon-fri", "Europe/Berlin", "2026-12-02T18:59", True),  # 19:59
    ("0 8 * * mon-fri", "0 20 * * mon-fri", "Europe/Berlin", "2026-12-02T19:00", False),  # 20:00, the end minute
    ("0 8 * * mon-fri", "0 20 * * mon-fri", "Europe/Berlin", "2026-12-05T12:00", False),  # Saturday noon
    # In July Berlin is UTC+2: 06:30 UTC is 08:30 there.
    ("0 8 * * mon-fri", "0 20 * * mon-fri", "Europe/Berlin", "2026-07-01T06:30", True),
    ("0 8 * * mon-fri", "0 20 * * mon-fri", "UTC", "2026-07-01T06:30", False),
    # Across midnight in Tokyo (UTC+9): 22:00-06:00 every day.
    ("0 22 * * *", "0 6 * * *", "Asia/Tokyo", "2026-12-02T14:00", True),  # 23:00 Tokyo
    ("0 22 * * *", "0 6 * * *", "Asia/Tokyo", "2026-12-02T20:30", True),  # 05:30 Tokyo next day
    ("0 22 * * *", "0 6 * * *", "Asia/Tokyo", "2026-12-02T21:00", False),  # 06:00 Tokyo
    ("0 22 * * *", "0 6 * * *", "Asia/Tokyo", "2026-12-02T12:59", False),  # 21:59 Tokyo
    # KEDA's own test schedules (cron_scaler_test.go): Thursdays all day; even hours.
    ("0 0 * * Thu", "59 23 * * Thu", "Etc/UTC", "2026-12-03T10:00", True),  # Thursday
    ("0 0 * * Thu", "59 23 * * Thu", "Etc/UTC", "2026-12-04T10:00", False),  # Friday
    ("0 */2 * * *", "0 1-23/2 * * *", "Etc/UTC", "2026-12-03T10:30", True),
    ("0 */2 * * *", "0 1-23/2 * * *", "Etc/UTC", "2026-12-03T11:30", False),
    # Day of month and weekday both restricted: either matches (robfig dayMatches). 1 Dec 2026 is a Tuesday.
    ("0 9 1 * fri", "0 17 1 * fri", "UTC", "2026-12-01T12:00", True),
    ("0 9 1 * fri", "0 17 1 * fri", "UTC", "2026-12-04T12:00", True),  # Friday the 4th
    ("0 9 1 * fri", "0 17 1 * fri", "UTC", "2026-12-03T12:00", False),
]


@pytest.mark.parametrize(("start", "end", "zone", "moment", "inside"), WINDOWS)
def test_the_window_is_where_keda_puts_it(start, end, zone, moment, inside):
    assert cron.in_window(cron.parse(start), cron.parse(end), zone, at(moment)) is inside


def test_the_hpa_keeps_the_larger_of_the_cron_floor_and_the_minimum():
    start, end = cron.parse("0 8 * * mon-fri"), cron.parse("0 20 * * mon-fri")
    assert cron.hpa_floor(start, end, "UTC", 4, 2, at("2026-12-02T09:00")) == 4
    assert cron.hpa_floor(start, end, "UTC", 4, 2, at("2026-12-02T21:00")) == 2
    assert cron.metric_value(start, end, "UTC", 4, at("2026-12-02T21:00")) == 0


# KEDA's parse table (cron_scaler_test.go testCronMetadata), the schedules' half: refused or not.
@pytest.mark.parametrize(
    ("schedule", "refused"),
    [
        ("30-33 * * * *", False),
        ("45-50 * * * *", False),
        ("0,30 * * * *", False),
        ("-30 * * * *", True),
        ("50 * * -3 *", True),
        ("@daily", True),  # no Descriptor flag in KEDA's parser
        ("0 0 8 * * *", True),  # six fields: KEDA's parser has no seconds
        ("0 24 * * *", True),
        ("0 8 * * 7", True),  # robfig's weekdays are 0-6
        ("0 8 * * MON-fri", False),
    ],
)
def test_schedules_parse_as_kedas_parser_does(schedule, refused):
    if refused:
        with pytest.raises(cron.CronError):
            cron.parse(schedule)
    else:
        cron.parse(schedule)


# --- the rendered trigger ------------------------------------------------------------------------------


def scaled_object(name: str) -> dict:
    [found] = [
        r.inputs
        for r in kubernetes_objects(render_fixture("multi-pool"))
        if r.inputs["kind"] == "ScaledObject" and r.inputs["metadata"]["name"] == name
    ]
    return found


def test_the_cron_trigger_sits_beside_the_load_triggers_with_kedas_keys():
    spec = scaled_object("notebook-assist")["spec"]
    triggers = {t["name"]: t for t in spec["triggers"]}
    assert set(triggers) == {"gpu-utilization", "working-hours"}
    assert triggers["working-hours"] == {
        "type": "cron",
        "name": "working-hours",
        "metadata": {"timezone": "Asia/Tokyo", "start": "0 22 * * *", "end": "0 6 * * *", "desiredReplicas": "3"},
    }
    # Outside the window the floor is the ScaledObject's minimum.
    assert spec["minReplicaCount"] == 1


def test_a_deployment_without_working_hours_has_no_cron_trigger():
    assert all(t["type"] != "cron" for t in scaled_object("chat")["spec"]["triggers"])


# --- config mistakes ------------------------------------------------------------------------------------

KEY = f"{T}[data-science].inference[notebook-assist].workingHours"
GOOD = {"start": "0 22 * * *", "end": "0 6 * * *", "timezone": "Asia/Tokyo", "replicas": 3}

MISTAKES = [
    pytest.param(
        {"start": "0 25 * * *"},
        f"{KEY}.start: '0 25 * * *' is not a schedule KEDA's cron scaler accepts: hour '25' ends above 23",
        id="hour-out-of-range",
    ),
    pytest.param(
        {"end": "@daily"},
        f"{KEY}.end: '@daily' is not a schedule KEDA's cron scaler accepts: is a descriptor, which this parser does "
        "not accept: give five fields",
        id="descriptor",
    ),
    pytest.param(
        {"start": "TZ=Asia/Tokyo 0 8 * * *"},
        f"{KEY}.start: 'TZ=Asia/Tokyo 0 8 * * *' names time zone Asia/Tokyo in the schedule: remove the prefix and "
        "set `timezone`",
        id="zone-prefix",
    ),
    pytest.param(
        {"timezone": "Mars/Olympus_Mons"},
        f"{KEY}.timezone: 'Mars/Olympus_Mons' is not an IANA time zone name such as 'Europe/Berlin' or "
        "'America/New_York'",
        id="unknown-zone",
    ),
    pytest.param(
        {"end": "0 22 * * *"},
        f"{KEY}: start and end are the same schedule; KEDA refuses a window that opens when it closes",
        id="start-is-end",
    ),
    pytest.param(
        {"replicas": 1},
        f"{T}[data-science].inference[notebook-assist]: workingHours.replicas 1 must be above minReplicas 1 (the "
        "off-hours floor) and at most maxReplicas 4",
        id="floor-not-above-minimum",
    ),
    pytest.param(
        {"replicas": 5},
        f"{T}[data-science].inference[notebook-assist]: workingHours.replicas 5 must be above minReplicas 1 (the "
        "off-hours floor) and at most maxReplicas 4",
        id="floor-above-maximum",
    ),
]


@pytest.mark.parametrize(("change", "line"), MISTAKES)
def test_each_schedule_mistake_is_one_line(change, line):
    doc = fixture_document("multi-pool")
    [deployment] = [d for t in doc[T] for d in t.get("inference", []) if d["name"] == "notebook-assist"]
    deployment["workingHours"] = {**GOOD, **change}
    with pytest.raises(ConfigError) as caught:
        load(doc)
    assert caught.value.problems == [line]


def test_a_step_from_a_single_value_runs_to_the_fields_maximum():
    # robfig getRange: `a/n` is `a-max/n`, so `5/20` in minutes is 5, 25 and 45.
    assert cron.parse("5/20 8 * * *").minutes == frozenset({5, 25, 45})
    assert cron.parse("0 20-23/2 * * *").hours == frozenset({20, 22})
