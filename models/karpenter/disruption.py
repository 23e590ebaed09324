"""When Karpenter takes a node away: consolidation, disruption budgets, expiry, spot interruption.

Rules from kubernetes-sigs/karpenter v1.14.1 (the pin of `karpenter` in config/versions.py):
- pkg/apis/v1/nodepool.go, `Budget.IsActive` and `Budget.GetAllowedDisruptions`: a budget with a
  schedule is active when the schedule's next hit after now - duration is not after now, that is a hit
  in (now - duration, now]; one without is always active. The schedule is parsed by robfig/cron v3.0.1's
  `ParseStandard` (Karpenter's go.mod; models/cron.py) prefixed `TZ=UTC`: five fields or a calendar
  descriptor, weekdays 0-6. A schedule that never fires has a zero next hit, which is not after now, so
  the budget is always active.
  A percentage scales the NodePool's node count rounding UP (`GetScaledValueFromIntOrPercent(..., true)`);
  `NodePool.GetAllowedDisruptionsByReason` takes the minimum over the active budgets naming the reason
  (or naming none); an inactive budget allows everything.
- A schedule the parser refuses (weekday 7 among them, which passes the CRD's pattern) fails closed:
  `GetAllowedDisruptions` returns 0 with the error, and `MustGetAllowedDisruptions`, which
  pkg/controllers/disruption/helpers.go `BuildDisruptionBudgetMapping` calls, returns 0 for every reason
  when any budget of the NodePool errs, so no node of the pool is disrupted by budget-gated methods.
- pkg/controllers/nodeclaim/disruption/consolidation.go and pkg/utils/disruption/disruption.go
  (`IsUnderConsolidateAfter`): a node becomes Consolidatable once `consolidateAfter` has passed since its
  last pod event (a pod bound to it or removed from it; its initialisation before any); `Never` turns
  consolidation off.
- pkg/controllers/disruption/emptiness.go (`WhenEmpty` and `WhenEmptyOrUnderutilized`): an empty,
  consolidatable node is deleted; pkg/controllers/disruption/singlenodeconsolidation.go
  (`WhenEmptyOrUnderutilized` only): a consolidatable node whose pods fit on the other nodes is deleted
  and its pods rescheduled.
- pkg/controllers/nodeclaim/expiration/controller.go: a NodeClaim older than `expireAfter` (counted from its
  creationTimestamp: the launch) is deleted, gated by nothing: no budget, no `karpenter.sh/do-not-disrupt`
  pod, no PodDisruptionBudget is consulted before the delete (forceful disruption since v1).
- What blocks is the drain that follows, pkg/controllers/node/termination/terminator/terminator.go `Drain`
  with pkg/utils/pod/scheduling.go: a pod with an active `karpenter.sh/do-not-disrupt` annotation is
  `IsDrainable` (the drain waits for it) but not `IsEvictable` (Karpenter never evicts it), and an eviction a
  PDB refuses (429) is retried. The wait ends at the NodeClaim's termination time, its deletion plus
  `terminationGracePeriod` (pkg/controllers/nodeclaim/lifecycle/controller.go
  `ensureTerminationGracePeriodTerminationTimeAnnotation`): `DeleteExpiringPods` deletes each remaining pod at
  that time less the pod's own `terminationGracePeriodSeconds` (`podDeleteTimeWithGracePeriod`), so it still
  gets its full grace period. Without a `terminationGracePeriod` the drain waits for such pods indefinitely.
- pkg/controllers/disruption/types.go: disruption methods are `graceful` (emptiness and consolidation: a node
  with a pod blocking eviction is no candidate), or `eventual` (drift: a candidate despite blocking pods only
  when the NodeClaim has a `terminationGracePeriod`, which then bounds the drain as above).
- aws/karpenter-provider-aws v1.14.1 pkg/controllers/interruption: on an EC2 Spot interruption warning
  Karpenter taints and drains the node at once; EC2 reclaims the instance two minutes after the warning.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from models import cron

# EC2 sends the Spot interruption warning two minutes before it stops or terminates the instance
# (Amazon EC2 User Guide, "Spot Instance interruption notices").
SPOT_NOTICE_SECONDS = 120

EMPTY = "Empty"
UNDERUTILIZED = "Underutilized"
WHEN_EMPTY = "WhenEmpty"
WHEN_EMPTY_OR_UNDERUTILIZED = "WhenEmptyOrUnderutilized"

@dataclass(frozen=True)
class Budget:
    """One `spec.disruption.budgets[]` entry: `nodes` a count or a percentage, an optional window."""

    nodes: str
    schedule: str | None = None
    duration_seconds: int | None = None
    reasons: tuple[str, ...] | None = None


def parse_schedule(text: str) -> cron.Schedule:
    """A budget's `schedule` as `IsActive` parses it (`ParseStandard` of `TZ=UTC <schedule>`); CronError for one
    it refuses."""
    return cron.parse(f"TZ=UTC {text}", descriptors=True)


def budget_active(budget: Budget, now: datetime) -> bool:
    """`Budget.IsActive`: always without a schedule; else the next hit after now - duration is not after now.

    CronError for a schedule `ParseStandard` refuses (the error `IsActive` returns).
    """
    if budget.schedule is None or budget.duration_seconds is None:
        return True
    schedule = parse_schedule(budget.schedule)
    now_utc = now.astimezone(UTC).replace(tzinfo=None)
    try:
        hit = schedule.next_after(now_utc - timedelta(seconds=budget.duration_seconds))
    except cron.NeverFires:
        return True  # robfig's zero time is not after now
    return hit <= now_utc


def allowed_disruptions(budgets: Sequence[Budget], now: datetime, nodes: int, reason: str) -> int:
    """`GetAllowedDisruptionsByReason`: the fewest nodes any active budget for `reason` allows (rounded up)."""
    allowed = math.inf
    for budget in budgets:
        try:
            active = budget_active(budget, now)
        except cron.CronError:
            return 0  # `MustGetAllowedDisruptions`: any budget's error blocks every reason
        if budget.reasons is not None and reason not in budget.reasons:
            continue
        if not active:
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


# Disruption classes (pkg/controllers/disruption/types.go) and which methods use them; expiration and EC2's
# interruption delete the NodeClaim without asking anything (FORCEFUL).
GRACEFUL = "graceful"
EVENTUAL = "eventual"
FORCEFUL = "forceful"
DISRUPTION_CLASS = {
    "emptiness": GRACEFUL,  # emptiness.go
    "single-node-consolidation": GRACEFUL,  # singlenodeconsolidation.go
    "multi-node-consolidation": GRACEFUL,  # multinodeconsolidation.go
    "drift": EVENTUAL,  # drift.go
    "static-drift": EVENTUAL,  # staticdrift.go
    "expiration": FORCEFUL,  # nodeclaim/expiration/controller.go
    "interruption": FORCEFUL,  # karpenter-provider-aws pkg/controllers/interruption
}


def is_candidate(disruption_class: str, blocking_pod: bool, termination_grace_period: float | None) -> bool:
    """`NewCandidate`: may the method pick a node, given whether a pod on it blocks eviction (an active
    do-not-disrupt annotation, or a PDB with no disruption left)? Forceful methods never ask."""
    if disruption_class == FORCEFUL or not blocking_pod:
        return True
    return disruption_class == EVENTUAL and termination_grace_period is not None


def pod_deleted_after(blocking_pod: bool, termination_grace_period: float | None, pod_grace_seconds: float) -> float | None:
    """Seconds from a NodeClaim's deletion to when its drain takes a pod: at once (an eviction) unless the pod
    blocks eviction; a blocking pod at the termination time less its own grace period (`DeleteExpiringPods`);
    None when the NodeClaim has no terminationGracePeriod (the drain waits for the pod to end)."""
    if not blocking_pod:
        return 0.0
    if termination_grace_period is None:
        return None
    return max(0.0, termination_grace_period - pod_grace_seconds)
