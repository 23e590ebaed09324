"""When an evicted workload may be admitted again (kubernetes-sigs/kueue v0.19.2).

waitForPodsReady evicts an admitted workload whose pods are not all ready within `timeout`
(pkg/controller/core/workload_controller.go) and requeues it with a backoff:
pkg/workload/workload.go UpdateRequeueState counts the requeue (`requeueState.count`, n) and waits
pkg/util/wait/backoff.go NewBackoff(base, max, factor 2, jitter 0.0001).WaitTime(n), which steps
k8s.io/apimachinery's wait.Backoff n times: the n-th step returns the duration before doubling and
doubling stops at `backoffMaxSeconds`, so the wait is `base` for n = 1 and min(base * 2^(n-1), max)
after, each stretched by up to 0.01% of jitter. Past `backoffLimitCount` requeues (when set) the
workload is deactivated instead (pkg/controller/core/workload_controller.go).
"""

from __future__ import annotations

JITTER = 0.0001  # the factor NewBackoff gets


def requeue_wait_seconds(count: int, base_seconds: int, max_seconds: int, jitter: float = 0.0) -> float:
    """Seconds an evicted workload waits before its `count`-th requeue (count >= 1).

    `jitter` in [0, 1) is the random draw wait.Jitter makes; 0 gives the shortest wait.
    """
    if count < 1:
        raise ValueError(f"the requeue count starts at 1, got {count}")
    duration = float(base_seconds)
    for _ in range(count - 1):
        duration = min(duration * 2, max_seconds)
        if duration == max_seconds:
            break
    return duration * (1 + jitter * JITTER)


def deactivated(count: int, backoff_limit_count: int | None) -> bool:
    """The workload is deactivated rather than requeued once its requeue count exceeds backoffLimitCount."""
    return backoff_limit_count is not None and count > backoff_limit_count
