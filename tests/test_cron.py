"""robfig/cron v3.0.1 as models/cron.py reads it: the parser KEDA's cron scaler and Karpenter's budgets share.

Cases from robfig/cron v3.0.1 parser_test.go (TestRange, TestField) put in the hour field (0-23), the
weekday field (0-6), and spec.go's day rule, each with the set upstream's bits name.
"""

from __future__ import annotations

from datetime import datetime

import pytest

from models.cron import CronError, NeverFires, parse


def hours(field: str) -> frozenset[int]:
    return parse(f"0 {field} * * *", descriptors=False).hours


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        ("5", {5}),
        ("0", {0}),
        ("5-5", {5}),
        ("5-7", {5, 6, 7}),
        ("5-6/2", {5}),
        ("5-7/2", {5, 7}),
        ("20/2", {20, 22}),  # `a/n` runs to the field's maximum
        ("*/5", {0, 5, 10, 15, 20}),
        ("1,5-7/2,3", {1, 3, 5, 7}),
        ("+4", {4}),  # strconv.Atoi takes a sign
        ("1,,2", {1, 2}),  # strings.FieldsFunc drops the empty part
        ("*-3", set(range(24))),  # after `*`, getRange reads nothing more
    ],
)
def test_a_field_holds_the_values_upstream_sets(field, expected):
    assert hours(field) == frozenset(expected)


@pytest.mark.parametrize(
    ("field", "error"),
    [
        ("5--5", "more than one '-'"),
        ("2-x", "'x' is not a number"),
        ("*/-12", "'-12' is negative"),
        ("*//2", "more than one '/'"),
        ("24", "ends above 23"),
        ("5-3", "runs backwards"),
        ("*/0", "step 0"),
        ("-3", "'' is not a number"),
    ],
)
def test_a_field_upstream_refuses_is_refused(field, error):
    with pytest.raises(CronError, match=error):
        hours(field)


def test_weekdays_run_from_sunday_0_to_saturday_6_and_7_is_out_of_bounds():
    assert parse("0 0 * * sun,SAT", descriptors=False).weekdays == frozenset({0, 6})
    assert parse("0 0 * * mon-fri", descriptors=False).weekdays == frozenset({1, 2, 3, 4, 5})
    with pytest.raises(CronError, match="day of week '7' ends above 6"):
        parse("0 0 * * 7", descriptors=False)
    with pytest.raises(CronError, match="ends above 6"):
        parse("0 0 * * 5-7", descriptors=False)


@pytest.mark.parametrize(
    ("spec", "moment", "fires"),
    [
        # Both day fields restricted: either matching is enough (1 December 2026 is a Tuesday).
        ("0 0 1 * fri", datetime(2026, 12, 1), True),
        ("0 0 2 * fri", datetime(2026, 12, 4), True),
        ("0 0 2 * fri", datetime(2026, 12, 3), False),
        # A star in either one: both must match.
        ("0 0 * * fri", datetime(2026, 12, 1), False),
        ("0 0 1 * *", datetime(2026, 12, 1), True),
        ("0 0 1 * */1", datetime(2026, 12, 4), False),  # `*/1` keeps the star bit
    ],
)
def test_day_of_month_and_weekday_combine_as_day_matches_does(spec, moment, fires):
    assert parse(spec, descriptors=False).matches(moment) is fires


def test_a_step_above_one_on_a_star_is_restricted():
    # 2 December 2026 is a Wednesday (3): `*/2` is 0,2,4,6, so only the day of month matches, which is enough.
    assert parse("0 0 2 * */2", descriptors=False).matches(datetime(2026, 12, 2))
    assert not parse("0 0 3 * */2", descriptors=False).matches(datetime(2026, 12, 2))


@pytest.mark.parametrize(
    ("descriptor", "after", "first"),
    [
        ("@yearly", datetime(2026, 12, 1, 9), datetime(2027, 1, 1)),
        ("@annually", datetime(2026, 12, 1, 9), datetime(2027, 1, 1)),
        ("@monthly", datetime(2026, 12, 1, 9), datetime(2027, 1, 1)),
        ("@weekly", datetime(2026, 12, 1, 9), datetime(2026, 12, 6)),  # the next Sunday
        ("@daily", datetime(2026, 12, 1, 9), datetime(2026, 12, 2)),
        ("@midnight", datetime(2026, 12, 1, 0, 0), datetime(2026, 12, 2)),  # strictly after
        ("@hourly", datetime(2026, 12, 1, 9, 30), datetime(2026, 12, 1, 10)),
    ],
)
def test_descriptors_fire_as_parse_descriptor_defines_them(descriptor, after, first):
    assert parse(descriptor, descriptors=True).next_after(after) == first


def test_descriptors_need_the_descriptor_option_and_every_is_not_a_calendar_schedule():
    with pytest.raises(CronError, match="is a descriptor"):
        parse("@daily", descriptors=False)
    with pytest.raises(CronError, match="is not one of the descriptors"):
        parse("@every 1h", descriptors=True)


def test_exactly_five_fields():
    with pytest.raises(CronError, match="has 6 fields"):
        parse("0 0 8 * * *", descriptors=False)
    with pytest.raises(CronError, match="is empty"):
        parse("", descriptors=False)


def test_a_schedule_with_no_day_says_it_never_fires():
    with pytest.raises(NeverFires):
        parse("0 0 31 2 *", descriptors=False).next_after(datetime(2026, 12, 1))


def test_a_tz_prefix_names_the_schedules_zone_once():
    assert parse("TZ=Europe/Berlin 0 8 * * *", descriptors=False).zone == "Europe/Berlin"
    assert parse("CRON_TZ=UTC @daily", descriptors=True).zone == "UTC"
    assert parse("0 8 * * *", descriptors=False).zone is None
    with pytest.raises(CronError, match="has 6 fields"):
        parse("TZ=UTC TZ=Asia/Tokyo 0 8 * * *", descriptors=False)  # Karpenter's own prefix, then the user's
    with pytest.raises(CronError, match="'Mars/Olympus', which is not an IANA name"):
        parse("TZ=Mars/Olympus 0 8 * * *", descriptors=False)
