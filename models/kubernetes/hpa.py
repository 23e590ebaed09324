"""The HorizontalPodAutoscaler: replicas from metrics, then behaviour (stabilisation windows, rate policies, min/max).

Rules from kubernetes/kubernetes at the cluster's version (1.35; config/versions.py KUBERNETES_VERSIONS):
- pkg/controller/podautoscaler/replica_calculator.go
  - `calcPlainMetricReplicas` (Pods metrics): the usage ratio of the ready pods' metrics to the target;
    within the tolerance (0.1, `--horizontal-pod-autoscaler-tolerance`) nothing changes; missing pods
    count as at-target on a scale-down and as zero otherwise, unready pods as zero on a scale-up; a
    rebalanced ratio that flips direction keeps the current replicas.
  - `GetResourceReplicas` (Resource, target Utilization): the same shape on the ready pods' summed usage
    over their summed requests, as whole percent (`GetResourceUtilizationRatio` in metrics/utilization.go
    truncates); a missing pod counts as max(100, target) % of its request on a scale-down, as zero only
    on a scale-up (`else if usageRatio > 1.0`: at a ratio of exactly 1 it is left out).
  - `GetObjectMetricReplicas` (Object, target Value) as `GetExternalMetricReplicas` below.
  - `GetExternalMetricReplicas` (External, target Value): ceil(ratio x ready pods) outside the tolerance.
  - `GetExternalPerPodMetricReplicas` (External, target AverageValue): ratio = usage / (target x
    current replicas); outside the tolerance, ceil(usage / target).
- pkg/controller/podautoscaler/horizontal.go
  - `stabilizeRecommendationWithBehaviors`: up to the lowest recommendation within the scale-up window,
    down to the highest within the scale-down window, never past the current replicas the other way.
  - `convertDesiredReplicasWithBehaviorRate` with `calculateScaleUpLimitWithScalingRules` and
    `calculateScaleDownLimitWithBehaviors`: each policy allows a change from the replicas at the start
    of its period (current minus what was added in it plus what was removed); `selectPolicy` Max takes
    the policy allowing the most change, Min the least, Disabled none; then min and max replicas.
- pkg/apis/autoscaling/v2/defaults.go: scale-up 0 s window, Max of 100 % and 4 pods per 15 s; scale-down
  300 s window (the controller's `--horizontal-pod-autoscaler-downscale-stabilization` default),
  100 % per 15 s.
- pkg/controller/podautoscaler/config/v1alpha1/defaults.go (`RecommendedDefaultHPAControllerConfiguration`):
  the controller syncs every HPA every 15 s (`--horizontal-pod-autoscaler-sync-period`), and reads its
  External metrics (KEDA's metrics server) at each sync.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

TOLERANCE = 0.1
SYNC_PERIOD_SECONDS = 15
PODS = "Pods"
PERCENT = "Percent"
MAX = "Max"
MIN = "Min"
DISABLED = "Disabled"


def within_tolerance(ratio: float, tolerance: float = TOLERANCE) -> bool:
    return abs(1.0 - ratio) <= tolerance


def plain_metric_replicas(
    current_replicas: int,
    metrics: Mapping[str, float],
    target: float,
    ready: Sequence[str],
    unready: Sequence[str] = (),
    missing: Sequence[str] = (),
    tolerance: float = TOLERANCE,
) -> int:
    """`calcPlainMetricReplicas`: `metrics` by pod name (ready pods' values are used), `target` per pod.

    Pods in `unready` have their metrics dropped; `missing` pods have none."""
    used = {pod: value for pod, value in metrics.items() if pod in set(ready)}
    if not used:
        raise ValueError("no metrics for ready pods")
    ratio = sum(used.values()) / (target * len(used))
    scale_up_with_unready = bool(unready) and ratio > 1.0
    if not scale_up_with_unready and not missing:
        if within_tolerance(ratio, tolerance):
            return current_replicas
        return math.ceil(ratio * len(used))
    filled = dict(used)
    for pod in missing:
        filled[pod] = target if ratio < 1.0 else 0.0
    if scale_up_with_unready:
        for pod in unready:
            filled[pod] = 0.0
    new_ratio = sum(filled.values()) / (target * len(filled))
    if within_tolerance(new_ratio, tolerance) or (ratio > 1.0 > new_ratio) or (ratio < 1.0 < new_ratio):
        return current_replicas
    replicas = math.ceil(new_ratio * len(filled))
    if (new_ratio < 1.0 and replicas > current_replicas) or (new_ratio > 1.0 and replicas < current_replicas):
        return current_replicas
    return replicas


def resource_utilisation_replicas(
    current_replicas: int,
    usage: Mapping[str, int],
    requests: Mapping[str, int],
    target_percent: int,
    unready: Sequence[str] = (),
    tolerance: float = TOLERANCE,
) -> tuple[int, int]:
    """`GetResourceReplicas`: (replicas, utilisation in whole percent).

    `requests` holds every counted pod (failed and deleting pods are not counted) with its request,
    `usage` the metrics reported (milli-units; a metric for a pod not in `requests` is ignored);
    `unready` pods (pending, or CPU not yet ready) have their metrics dropped, a pod without a metric
    is missing."""
    unready_set = set(unready)
    missing = [pod for pod in requests if pod not in usage and pod not in unready_set]
    used = {pod: value for pod, value in usage.items() if pod not in unready_set}

    def utilisation(metrics: Mapping[str, int]) -> int:
        counted = [pod for pod in metrics if pod in requests]
        if not counted:
            raise ValueError("no metrics for ready pods")
        return sum(metrics[pod] for pod in counted) * 100 // sum(requests[pod] for pod in counted)

    current = utilisation(used)
    ratio = current / target_percent
    ready = sum(1 for pod in used if pod in requests)
    scale_up_with_unready = bool(unready_set) and ratio > 1.0
    if not scale_up_with_unready and not missing:
        if within_tolerance(ratio, tolerance):
            return current_replicas, current
        return math.ceil(ratio * ready), current
    filled = dict(used)
    if ratio < 1.0:
        fallback = max(100, target_percent)
        filled.update({pod: requests[pod] * fallback // 100 for pod in missing})
    elif ratio > 1.0:
        filled.update({pod: 0 for pod in missing})
    if scale_up_with_unready:
        filled.update({pod: 0 for pod in unready_set if pod in requests})
    new_ratio = utilisation(filled) / target_percent
    if within_tolerance(new_ratio, tolerance) or (ratio > 1.0 > new_ratio) or (ratio < 1.0 < new_ratio):
        return current_replicas, current
    replicas = math.ceil(new_ratio * len(filled))
    if (new_ratio < 1.0 and replicas > current_replicas) or (new_ratio > 1.0 and replicas < current_replicas):
        return current_replicas, current
    return replicas, current


def external_value_replicas(
    current_replicas: int, ready_pods: int, usage: float, target: float, tolerance: float = TOLERANCE
) -> int:
    """`GetExternalMetricReplicas` (target type Value): ceil(usage / target x ready pods) outside the tolerance."""
    ratio = usage / target
    if within_tolerance(ratio, tolerance):
        return current_replicas
    return math.ceil(ratio * ready_pods)


def external_average_replicas(current_replicas: int, usage: float, target_per_pod: float, tolerance: float = TOLERANCE) -> int:
    """`GetExternalPerPodMetricReplicas` (target type AverageValue): ceil(usage / target) outside the tolerance."""
    ratio = usage / (target_per_pod * current_replicas)
    if within_tolerance(ratio, tolerance):
        return current_replicas
    return math.ceil(usage / target_per_pod)


@dataclass(frozen=True)
class Policy:
    type: str  # Pods or Percent
    value: int
    period_seconds: int


@dataclass(frozen=True)
class Rules:
    """One direction of `spec.behavior`."""

    stabilization_window_seconds: int
    policies: tuple[Policy, ...]
    select_policy: str = MAX

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any], default: Rules) -> Rules:
        """From a `behavior.scaleUp`/`scaleDown` mapping as written in a manifest; unset fields take `default`'s."""
        policies = spec.get("policies")
        return cls(
            spec.get("stabilizationWindowSeconds", default.stabilization_window_seconds),
            tuple(Policy(p["type"], p["value"], p["periodSeconds"]) for p in policies) if policies else default.policies,
            spec.get("selectPolicy", default.select_policy),
        )


DEFAULT_SCALE_UP = Rules(0, (Policy(PERCENT, 100, 15), Policy(PODS, 4, 15)))
DEFAULT_SCALE_DOWN = Rules(300, (Policy(PERCENT, 100, 15),))


@dataclass
class Autoscaler:
    """One HPA's memory between syncs: its recent recommendations and scale events."""

    min_replicas: int
    max_replicas: int
    scale_up: Rules = DEFAULT_SCALE_UP
    scale_down: Rules = DEFAULT_SCALE_DOWN
    recommendations: list[tuple[float, int]] = field(default_factory=list)
    up_events: list[tuple[float, int]] = field(default_factory=list)
    down_events: list[tuple[float, int]] = field(default_factory=list)

    def normalize(self, now: float, current: int, desired: int) -> int:
        """`normalizeDesiredReplicasWithBehaviors`, recording the scale event when the result differs."""
        stabilized = self._stabilize(now, current, desired)
        result = self._rate_limit(now, current, stabilized)
        if result > current:
            self.up_events.append((now, result - current))
        elif result < current:
            self.down_events.append((now, current - result))
        return result

    def _stabilize(self, now: float, current: int, desired: int) -> int:
        up_window = self.scale_up.stabilization_window_seconds
        down_window = self.scale_down.stabilization_window_seconds
        up_cutoff = now - up_window
        down_cutoff = now - down_window
        kept_cutoff = now - (up_window if up_window > down_window else down_window)
        up, down = desired, desired
        kept = []
        # One pass per sync (a simulation syncs every HPA every 15 s for weeks): the up window's minimum, the down
        # window's maximum, and the recommendations the longer window still needs.
        for entry in self.recommendations:
            at, recommendation = entry
            if at > up_cutoff and recommendation < up:
                up = recommendation
            if at > down_cutoff and recommendation > down:
                down = recommendation
            if at > kept_cutoff:
                kept.append(entry)
        kept.append((now, desired))
        self.recommendations = kept
        return min(max(current, up), down)

    def _rate_limit(self, now: float, current: int, desired: int) -> int:
        if desired > current:
            limit = max(_scale_up_limit(now, current, self.up_events, self.down_events, self.scale_up), current)
            return min(desired, self.max_replicas, limit)
        if desired < current:
            limit = min(_scale_down_limit(now, current, self.up_events, self.down_events, self.scale_down), current)
            return max(desired, self.min_replicas, limit)
        return desired


def _changed(events: Sequence[tuple[float, int]], now: float, period: int) -> int:
    return sum(change for at, change in events if at > now - period)


Events = Sequence[tuple[float, int]]


def _scale_up_limit(now: float, current: int, ups: Events, downs: Events, rules: Rules) -> int:
    if rules.select_policy == DISABLED:
        return current
    proposals = []
    for policy in rules.policies:
        start = current - _changed(ups, now, policy.period_seconds) + _changed(downs, now, policy.period_seconds)
        if policy.type == PODS:
            proposals.append(start + policy.value)
        else:
            proposals.append(math.ceil(start * (1 + policy.value / 100)))
    return min(proposals) if rules.select_policy == MIN else max(proposals)


def _scale_down_limit(now: float, current: int, ups: Events, downs: Events, rules: Rules) -> int:
    if rules.select_policy == DISABLED:
        return current
    proposals = []
    for policy in rules.policies:
        start = current - _changed(ups, now, policy.period_seconds) + _changed(downs, now, policy.period_seconds)
        if policy.type == PODS:
            proposals.append(start - policy.value)
        else:
            proposals.append(int(start * (1 - policy.value / 100)))
    # Max: the policy allowing the biggest drop, i.e. the fewest replicas.
    return max(proposals) if rules.select_policy == MIN else min(proposals)
