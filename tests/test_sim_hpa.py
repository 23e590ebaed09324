"""The HPA and KEDA as the simulator runs them (models/kubernetes/hpa.py, models/keda), against hand-worked cases.

Replica-calculation rows give usage in percent of a pod's request and the target in percent. The first
two follow Kubernetes' TestReplicaCalcScaleUp and TestReplicaCalcScaleUpUnreadyLessScale
(pkg/controller/podautoscaler/replica_calculator_test.go: 3 pods at 300m/500m/700m of 1000m, a 30 %
target, 5 and 4 replicas); the others are worked out here, one per branch of calcPlainMetricReplicas.
"""

from __future__ import annotations

import pytest

from models import keda
from models.kubernetes import hpa

# (case, current replicas, usage by pod name, ready pods, unready, missing, target, expected)
REPLICA_CALC = [
    # TestReplicaCalcScaleUp: 300m/500m/700m of 1000m at a 30 % target: ratio 50/30 -> ceil(1.67 x 3) = 5.
    ("ScaleUp", 3, {"a": 30, "b": 50, "c": 70}, "abc", "", "", 30, 5),
    # TestReplicaCalcScaleUpUnreadyLessScale: a unready; b, c ready at 50 %, 70 % -> ratio 2; a counted at
    # 0 -> (0 + 50 + 70) / 3 / 30 = 1.33 -> ceil(4.0) = 4.
    ("ScaleUpUnreadyLessScale", 3, {"a": 30, "b": 50, "c": 70}, "bc", "a", "", 30, 4),
    # 5 pods at 10, 30, 50, 60, 10 % of a 50 % target -> ratio 0.64 -> ceil(3.2) = 4.
    ("ScaleDown", 5, {"a": 10, "b": 30, "c": 50, "d": 60, "e": 10}, "abcde", "", "", 50, 4),
    # An average 1.05 times the target -> within the 0.1 tolerance -> keeps 3.
    ("Tolerance", 3, {"a": 1010, "b": 1090, "c": 1140}, "abc", "", "", 1030, 3),
    # 4 pods, 3 report 190 % of a 100 % target (one missing):
    # ratio 1.9 up -> the missing pod counts 0 -> 570 / 4 / 100 = 1.425 -> ceil(5.7) = 6.
    ("MissingMetricsScaleUp", 4, {"a": 190, "b": 190, "c": 190}, "abc", "", "d", 100, 6),
    # 4 pods, 3 at 10 % of 50 % (one missing): ratio 0.2 down ->
    # the missing pod counts at target -> (30 + 50) / 4 / 50 = 0.4 -> ceil(1.6) = 2.
    ("MissingMetricsScaleDown", 4, {"a": 10, "b": 10, "c": 10}, "abc", "", "d", 50, 2),
    # Rebalancing that crosses 1 keeps the current count: up 1.2 with one missing -> 360/4/100 = 0.9.
    ("MissingMetricsFlip", 4, {"a": 120, "b": 120, "c": 120}, "abc", "", "d", 100, 4),
]


@pytest.mark.parametrize(
    ("case", "current", "metrics", "ready", "unready", "missing", "target", "expected"),
    REPLICA_CALC,
    ids=[row[0] for row in REPLICA_CALC],
)
def test_replica_calculation(case, current, metrics, ready, unready, missing, target, expected):
    got = hpa.plain_metric_replicas(current, metrics, target, list(ready), list(unready), list(missing))
    assert got == expected


@pytest.mark.parametrize(
    ("current", "ready", "usage", "target", "expected"),
    [
        (4, 4, 105, 100, 4),  # within tolerance
        (4, 4, 120, 100, 5),  # ceil(1.2 x 4)
        (4, 3, 200, 100, 6),  # Value: the ratio scales the ready pods, not the current count
        (4, 4, 50, 100, 2),
    ],
)
def test_an_external_value_target_scales_the_ready_pods_by_the_ratio(current, ready, usage, target, expected):
    assert hpa.external_value_replicas(current, ready, usage, target) == expected


@pytest.mark.parametrize(
    ("current", "usage", "target", "expected"),
    [
        (3, 100, 10, 10),  # ceil(100 / 10)
        (10, 105, 10, 10),  # 105 / (10 x 10) = 1.05: within tolerance
        (10, 111, 10, 12),  # ceil(11.1)
    ],
)
def test_an_external_average_value_target_divides_the_total_by_the_target(current, usage, target, expected):
    assert hpa.external_average_replicas(current, usage, target) == expected


PLATFORM = hpa.Autoscaler(
    1,
    20,
    hpa.Rules(0, (hpa.Policy(hpa.PERCENT, 100, 15), hpa.Policy(hpa.PODS, 4, 15))),
    hpa.Rules(300, (hpa.Policy(hpa.PERCENT, 25, 60),)),
)


def fresh() -> hpa.Autoscaler:
    return hpa.Autoscaler(PLATFORM.min_replicas, PLATFORM.max_replicas, PLATFORM.scale_up, PLATFORM.scale_down)


def test_scale_up_takes_the_larger_of_doubling_and_four_pods_per_period():
    scaler = fresh()
    assert scaler.normalize(0, current=2, desired=20) == 6  # max(2 x 2, 2 + 4)
    # 10 s later the 4 added still count in the 15 s period: from 2 again -> 6 stays.
    assert scaler.normalize(10, current=6, desired=20) == 6
    # At 15 s the period has moved past t=0: from 6 -> max(12, 10) = 12.
    assert scaler.normalize(15, current=6, desired=20) == 12


def test_scale_down_waits_out_the_stabilisation_window_then_gives_back_a_quarter_a_minute():
    scaler = fresh()
    assert scaler.normalize(0, current=8, desired=8) == 8
    assert scaler.normalize(100, current=8, desired=2) == 8  # 8 recommended within the last 300 s
    assert scaler.normalize(301, current=8, desired=2) == 6  # int(8 x 0.75)
    assert scaler.normalize(331, current=6, desired=2) == 6  # the 2 removed at 301 count within 60 s
    assert scaler.normalize(362, current=6, desired=2) == 4  # int(6 x 0.75)


def test_min_and_max_bound_the_result():
    scaler = hpa.Autoscaler(2, 5)
    assert scaler.normalize(0, current=4, desired=50) == 5
    scaler = hpa.Autoscaler(2, 5, scale_down=hpa.Rules(0, (hpa.Policy(hpa.PERCENT, 100, 15),)))
    assert scaler.normalize(0, current=4, desired=0) == 2


def test_rules_from_a_manifest_fill_unset_fields_from_the_defaults():
    rules = hpa.Rules.from_spec({"stabilizationWindowSeconds": 60}, hpa.DEFAULT_SCALE_DOWN)
    assert rules == hpa.Rules(60, (hpa.Policy(hpa.PERCENT, 100, 15),), hpa.MAX)


def test_keda_reads_an_empty_query_as_zero_only_with_ignore_null_values():
    assert keda.prometheus_value([]) == 0.0
    assert keda.prometheus_value([42.0]) == 42.0
    with pytest.raises(keda.EmptyQueryResult):
        keda.prometheus_value([], ignore_null_values=False)


def test_keda_gives_the_hpa_at_least_one_replica_and_owns_zero_and_idle():
    assert keda.hpa_min_replicas(0) == 1
    assert keda.hpa_min_replicas(3) == 3
    assert keda.idle_target(0, any_active=True, inactive_for=0, min_replica_count=0) == 1  # 0 -> 1 on activity
    assert keda.idle_target(2, any_active=True, inactive_for=0, min_replica_count=0) is None  # the HPA's
    assert keda.idle_target(2, any_active=False, inactive_for=299, min_replica_count=0) is None  # cooling down
    assert keda.idle_target(2, any_active=False, inactive_for=300, min_replica_count=0) == 0
    assert keda.idle_target(2, any_active=False, inactive_for=300, min_replica_count=1) is None
    assert keda.idle_target(2, any_active=False, inactive_for=300, min_replica_count=1, idle_replica_count=0) == 0
    assert keda.active(5.0, activation_threshold=5.0) is False
