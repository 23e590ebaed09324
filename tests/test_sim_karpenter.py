"""Karpenter's rules the simulator runs (models/karpenter/provisioning.py, disruption.py), each against a hand-worked case."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from models.cron import CronError
from models.karpenter.disruption import (
    EMPTY,
    UNDERUTILIZED,
    WHEN_EMPTY,
    WHEN_EMPTY_OR_UNDERUTILIZED,
    Budget,
    allowed_disruptions,
    budget_active,
    consolidatable,
    consolidation_reason,
    expired,
)
from models.karpenter.provisioning import InstanceOption, PoolRef, capacity_type, order_by_weight, pack

G6E_12 = InstanceOption("g6e.12xlarge", 4, 10.49264)
G6E_24 = InstanceOption("g6e.24xlarge", 4, 15.06559)
G6E_48 = InstanceOption("g6e.48xlarge", 8, 30.13118)
L40S = [G6E_24, G6E_12, G6E_48]

MONDAY_10 = datetime(2026, 6, 1, 10, 0, tzinfo=UTC)


def test_nodepools_are_tried_by_weight_then_by_the_later_name():
    pools = [PoolRef("gpu-a", 10), PoolRef("gpu-b", None), PoolRef("gpu-c", 10), PoolRef("gpu-d", 50)]
    assert [p.name for p in order_by_weight(pools)] == ["gpu-d", "gpu-c", "gpu-a", "gpu-b"]


@pytest.mark.parametrize(
    ("allowed", "room", "expected"),
    [
        (["on-demand", "spot"], False, "spot"),
        (["reserved", "on-demand"], True, "reserved"),
        (["reserved", "on-demand"], False, "on-demand"),
        (["reserved", "spot", "on-demand"], False, "spot"),
        (["on-demand"], True, "on-demand"),
    ],
)
def test_a_nodeclaim_prefers_a_reservation_with_room_then_spot(allowed, room, expected):
    assert capacity_type(allowed, reservation_has_room=room) == expected


def test_two_one_gpu_pods_launch_the_cheapest_four_gpu_type():
    claims, unplaced = pack([1, 1], L40S, gpus_remaining=16)
    assert [(c.instance_type.name, c.pods) for c in claims] == [("g6e.12xlarge", [1, 1])]
    assert unplaced == []


def test_five_one_gpu_pods_share_one_eight_gpu_node():
    claims, _ = pack([1] * 5, L40S, gpus_remaining=16)
    assert [(c.instance_type.name, len(c.pods)) for c in claims] == [("g6e.48xlarge", 5)]


def test_the_nodepool_limit_leaves_pods_pending():
    # 16 GPUs left: two 8-GPU claims; the third 8-GPU pod (index 2) waits.
    claims, unplaced = pack([8, 8, 8], L40S, gpus_remaining=16)
    assert [c.instance_type.name for c in claims] == ["g6e.48xlarge", "g6e.48xlarge"]
    assert unplaced == [2]


def test_a_limit_below_the_biggest_type_caps_the_claim_at_the_type_that_fits():
    # 4 GPUs left: six 1-GPU pods pack onto a 4-GPU claim, two wait.
    claims, unplaced = pack([1] * 6, L40S, gpus_remaining=4)
    assert [(c.instance_type.name, len(c.pods)) for c in claims] == [("g6e.12xlarge", 4)]
    assert unplaced == [4, 5]


def test_a_percentage_budget_rounds_up():
    assert allowed_disruptions([Budget("20%")], MONDAY_10, nodes=7, reason=EMPTY) == 2  # ceil(1.4)
    assert allowed_disruptions([Budget("20%")], MONDAY_10, nodes=3, reason=EMPTY) == 1  # ceil(0.6)


WORKING_HOURS = Budget("0", schedule="0 9 * * mon-fri", duration_seconds=8 * 3600)


@pytest.mark.parametrize(
    ("at", "active"),
    [
        (datetime(2026, 6, 1, 9, 0, tzinfo=UTC), True),  # the hit itself
        (datetime(2026, 6, 1, 16, 59, tzinfo=UTC), True),
        (datetime(2026, 6, 1, 17, 0, tzinfo=UTC), False),  # (now - 8h, now] no longer holds 09:00
        (datetime(2026, 6, 1, 8, 59, tzinfo=UTC), False),
        (datetime(2026, 6, 6, 10, 0, tzinfo=UTC), False),  # Saturday
        (datetime(2026, 6, 5, 12, 0, tzinfo=UTC), True),  # Friday
    ],
)
def test_a_scheduled_budget_is_active_from_its_hit_for_its_duration(at, active):
    assert budget_active(WORKING_HOURS, at) is active


def test_the_most_restrictive_active_budget_wins_and_others_allow_everything():
    budgets = [Budget("20%"), WORKING_HOURS]
    assert allowed_disruptions(budgets, MONDAY_10, nodes=10, reason=EMPTY) == 0
    assert allowed_disruptions(budgets, datetime(2026, 6, 6, 10, 0, tzinfo=UTC), nodes=10, reason=EMPTY) == 2


def test_a_budget_for_other_reasons_does_not_limit_this_one():
    drift_only = Budget("0", reasons=("Drifted",))
    assert allowed_disruptions([drift_only, Budget("3")], MONDAY_10, nodes=10, reason=EMPTY) == 3
    assert allowed_disruptions([drift_only], MONDAY_10, nodes=10, reason="Drifted") == 0


def test_sunday_is_0_or_sun():
    sunday = datetime(2026, 6, 7, 2, 0, tzinfo=UTC)
    assert budget_active(Budget("0", schedule="0 0 * * 0", duration_seconds=3 * 3600), sunday)
    assert budget_active(Budget("0", schedule="0 0 * * sun", duration_seconds=3 * 3600), sunday)
    assert not budget_active(Budget("0", schedule="0 0 * * sun", duration_seconds=3 * 3600), sunday + timedelta(days=1))


def test_weekday_7_is_refused_and_the_pool_allows_no_disruption_for_any_reason():
    # robfig/cron v3.0.1 bounds weekdays 0-6; IsActive errs, and MustGetAllowedDisruptions returns 0 on any error.
    sunday = datetime(2026, 6, 7, 2, 0, tzinfo=UTC)
    drift_window = Budget("5", schedule="0 0 * * 7", duration_seconds=3 * 3600, reasons=("Drifted",))
    with pytest.raises(CronError, match="ends above 6"):
        budget_active(drift_window, sunday)
    assert allowed_disruptions([Budget("10"), drift_window], sunday, nodes=10, reason=EMPTY) == 0
    assert allowed_disruptions([Budget("10"), drift_window], MONDAY_10, nodes=10, reason="Drifted") == 0
    assert allowed_disruptions([Budget("10")], sunday, nodes=10, reason=EMPTY) == 10


def test_a_budget_takes_parse_standards_descriptors_in_utc():
    daily = Budget("0", schedule="@daily", duration_seconds=3600)
    assert budget_active(daily, datetime(2026, 6, 1, 0, 59, tzinfo=UTC))
    assert not budget_active(daily, datetime(2026, 6, 1, 1, 0, tzinfo=UTC))
    # 02:30 in Berlin (summer) is 00:30 UTC: inside the UTC window.
    assert budget_active(daily, datetime(2026, 6, 1, 2, 30, tzinfo=ZoneInfo("Europe/Berlin")))


def test_a_budget_naming_its_own_zone_is_refused_as_karpenter_prefixes_utc():
    with pytest.raises(CronError, match="has 6 fields"):
        budget_active(Budget("0", schedule="TZ=Europe/Berlin 0 9 * * *", duration_seconds=3600), MONDAY_10)


def test_a_budget_whose_schedule_never_fires_is_always_active():
    # Next returns the zero time, which is not after now.
    assert budget_active(Budget("0", schedule="0 0 31 2 *", duration_seconds=60), MONDAY_10)


def test_a_node_is_consolidatable_consolidate_after_its_last_pod_event():
    assert not consolidatable(last_pod_event=100, now=399, consolidate_after=300)
    assert consolidatable(last_pod_event=100, now=400, consolidate_after=300)
    assert not consolidatable(last_pod_event=0, now=10**9, consolidate_after=None)  # Never


@pytest.mark.parametrize(
    ("policy", "empty", "fits", "reason"),
    [
        (WHEN_EMPTY, True, False, EMPTY),
        (WHEN_EMPTY, False, True, None),
        (WHEN_EMPTY_OR_UNDERUTILIZED, False, True, UNDERUTILIZED),
        (WHEN_EMPTY_OR_UNDERUTILIZED, False, False, None),
        (WHEN_EMPTY_OR_UNDERUTILIZED, True, False, EMPTY),
    ],
)
def test_when_empty_removes_only_empty_nodes(policy, empty, fits, reason):
    assert consolidation_reason(policy, empty, fits) == reason


def test_expire_after_counts_from_launch_and_never_is_never():
    assert not expired(launched_at=50, now=50 + 3599, expire_after=3600)
    assert expired(launched_at=50, now=50 + 3600, expire_after=3600)
    assert not expired(launched_at=0, now=10**9, expire_after=None)
