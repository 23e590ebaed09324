"""KEDA (kedacore/keda v2.20.2, the `keda` chart pin in config/versions.py): what a ScaledObject feeds the HPA.

- apis/keda/v1alpha1/withtriggers_types.go: the operator polls each trigger every `pollingInterval`
  (default 30 s) to decide activity; the HPA it owns reads the metric values through KEDA's metrics
  server at its own sync period, and KEDA queries the trigger then.
- apis/keda/v1alpha1/scaledobject_types.go `GetHPAMinReplicas`: the HPA's `minReplicas` is
  `minReplicaCount` when above 0, else 1.
- pkg/scaling/executor/scale_scaledobjects.go (cooldown default 300 s in scale_executor.go): with every
  trigger inactive for `cooldownPeriod` KEDA scales to `idleReplicaCount` if set, else to 0 when
  `minReplicaCount` is 0; otherwise the HPA owns the replica count.
- pkg/scalers/prometheus_scaler.go: a query returning no series is 0 when `ignoreNullValues` is true
  (the default) and an error otherwise; a trigger is active when its value exceeds
  `activationThreshold` (default 0).
"""

from __future__ import annotations

from collections.abc import Sequence

DEFAULT_POLLING_INTERVAL_SECONDS = 30
DEFAULT_COOLDOWN_PERIOD_SECONDS = 300
DEFAULT_MIN_REPLICA_COUNT = 0
DEFAULT_ACTIVATION_THRESHOLD = 0.0


class EmptyQueryResult(Exception):
    """A Prometheus trigger's query returned no series and `ignoreNullValues` is false."""


def prometheus_value(series: Sequence[float], ignore_null_values: bool = True) -> float:
    """The trigger's value: the first series' (queries here aggregate to one), or 0 / an error when empty."""
    if not series:
        if ignore_null_values:
            return 0.0
        raise EmptyQueryResult("prometheus query returned no series")
    return series[0]


def active(value: float, activation_threshold: float = DEFAULT_ACTIVATION_THRESHOLD) -> bool:
    return value > activation_threshold


def hpa_min_replicas(min_replica_count: int) -> int:
    """The `minReplicas` KEDA writes into the HPA it owns: the ScaledObject's minimum, at least 1."""
    return max(min_replica_count, 1)


def idle_target(
    current: int,
    any_active: bool,
    inactive_for: float,
    min_replica_count: int,
    idle_replica_count: int | None = None,
    cooldown_period: float = DEFAULT_COOLDOWN_PERIOD_SECONDS,
) -> int | None:
    """The replicas KEDA itself sets when the ScaledObject is idle, or None when it leaves them to the HPA.

    With a trigger active and fewer replicas than the minimum (0 -> 1), KEDA scales up to
    max(minReplicaCount, 1); once every trigger has been inactive for the cooldown it scales down to
    idleReplicaCount, or to 0 when minReplicaCount is 0."""
    if any_active:
        floor = max(min_replica_count, 1)
        return floor if current < floor else None
    if inactive_for < cooldown_period:
        return None
    if idle_replica_count is not None:
        return idle_replica_count
    return 0 if min_replica_count == 0 else None
