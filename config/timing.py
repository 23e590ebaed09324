"""How long the platform waits for things and how fast it scales: platform decisions, not stack keys.

Each number is chosen for the platform as a whole (every stack and tenant gets the same), from the
upstream behaviour it has to outlast or pace, cited beside it. Components turn them into the
fields their controllers read: `components/queueing.py` (Kueue's waitForPodsReady) and
`components/autoscaling/` (KEDA's polling and fallback, the HPA's `behavior`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from models.karpenter.liveness import LAUNCH_TIMEOUT_SECONDS, REGISTRATION_TIMEOUT_SECONDS

from .autoscaling import SERVER_STARTUP_SECONDS

# --- Kueue: admitted work that never starts --------------------------------------------------------

# waitForPodsReady: an admitted workload whose pods are not all ready by the timeout is evicted, its
# quota released, and requeued after a backoff (kubernetes-sigs/kueue v0.19.2
# apis/config/v1beta2/defaults.go turns it on with a 30-minute timeout). The timeout covers the
# slowest normal start of the platform's model server: Karpenter gives a NodeClaim LAUNCH_TIMEOUT_SECONDS
# to launch and REGISTRATION_TIMEOUT_SECONDS to register its node before replacing it
# (models/karpenter/liveness.py); the GPU Operator readies the node and the server's image (vLLM's is
# ~10 GB) is pulled; then the server's startup probe allows SERVER_STARTUP_SECONDS to load the model.
NODE_LAUNCH_SECONDS = LAUNCH_TIMEOUT_SECONDS + REGISTRATION_TIMEOUT_SECONDS
NODE_SETUP_SECONDS = 10 * 60
PODS_READY_TIMEOUT_SECONDS = NODE_LAUNCH_SECONDS + NODE_SETUP_SECONDS + SERVER_STARTUP_SECONDS

# Requeue backoff after an eviction: base x 2^(n-1) plus jitter, capped (kueue v0.19.2
# pkg/controller/core/workload_controller.go via workload.UpdateRequeueState); these are v1beta2's
# defaults, written out. No backoffLimitCount: a model server's pod is requeued for as long as it
# exists, never deactivated.
REQUEUE_BACKOFF_BASE_SECONDS = 60
REQUEUE_BACKOFF_MAX_SECONDS = 3600

# The longest a pod in a tenant namespace may take to stop, in its spec or in a delete or eviction
# request. Kueue releases a job's quota once none of its pods is active (kueue v0.19.2
# jobframework/reconciler.go, eviction: `!job.IsActive()`; a batch Job's `status.active` leaves out
# terminating pods), and the Job controller replaces a deleted pod at once: a pod's grace period is
# time it keeps its GPUs after Kueue has given them to someone else. Five minutes covers the model
# server's drain (components/autoscaling/vllm.py, 150 s) and a checkpoint written on SIGTERM; a spot
# interruption gives two.
TENANT_POD_MAX_GRACE_SECONDS = 300

# --- KEDA and the HPA: how fast inference deployments scale ------------------------------------------

# KEDA polls every trigger this often; 15 s is also the HPA's sync period and the scale-up period below.
KEDA_POLLING_INTERVAL_SECONDS = 15
# Failed polls in a row before KEDA serves the fallback: 45 s of a missing or broken query.
KEDA_FALLBACK_FAILURE_THRESHOLD = 3


@dataclass(frozen=True)
class ScalingPolicy:
    """One HPA scaling policy (autoscaling/v2 HPAScalingPolicy): change by `value` of `type` per period."""

    type: Literal["Percent", "Pods"]
    value: int
    period_seconds: int


@dataclass(frozen=True)
class ScalingRules:
    """One direction of the HPA's `behavior` (autoscaling/v2 HPAScalingRules).

    `select_policy` None leaves the HPA's default, Max: the policy allowing the largest change wins.
    """

    stabilization_window_seconds: int
    policies: tuple[ScalingPolicy, ...]
    select_policy: Literal["Max", "Min"] | None = None


# Under load: double, or add 4 replicas when that is more, every 15 s, with no stabilisation.
HPA_SCALE_UP = ScalingRules(
    stabilization_window_seconds=0,
    policies=(
        ScalingPolicy("Percent", 100, 15),
        ScalingPolicy("Pods", 4, 15),
    ),
    select_policy="Max",
)
# Give back at most a quarter of the replicas per minute, and only after 5 minutes of lower demand:
# the stabilisation, not KEDA's cooldownPeriod (which applies only to scaling to zero), paces scale-down.
HPA_SCALE_DOWN = ScalingRules(stabilization_window_seconds=300, policies=(ScalingPolicy("Percent", 25, 60),))
