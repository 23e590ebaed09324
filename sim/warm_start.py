"""What a stack's warm start does in the simulation: headroom, staged images and weights, working hours.

- Headroom (config/headroom.py): each pool with `warmStart.headroom` gets its placeholder pods at the
  start, outside Kueue, at HEADROOM_PRIORITY. A tenant pod that fits on no Ready node evicts
  placeholders as kube-scheduler would (models/kubernetes/preemption.py; tenant pods run at priority
  0) and starts after PREEMPTION; the evicted placeholder is recreated pending, and Karpenter launches a
  node for it within the NodePool limit, which counts the headroom (`GpuPoolPlan.nodepool_gpus`).
- Server start: the workload's `serverStartSeconds` is a replica's cold start (image pull and a Hub
  download). A node keeps an image it has pulled, so the next replica of the deployment there skips the
  pull; a pool's `imageSnapshot` replaces the pull by reading the restored image; `modelSource: s3://`
  replaces the Hub download by the streamer. The seconds saved are config/time_to_gpu.py's figures.
- Working hours (models/keda/cron.py): the HPA adds the cron trigger's proposal; outside the window the
  floor is `minReplicas`.

`Options.without` turns a feature off for a what-if (`--without headroom`, ...): without
`working-hours`, the deployment keeps its working-hours floor all week, as it would without a schedule.

Each function here reads the simulation and returns a decision (placeholders to add, victims to evict, a
delay); the engine applies it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from config import time_to_gpu
from config.autoscaling import InferenceDeploymentConfig, s3_model_location
from config.fair_share import FlavorPlan
from config.headroom import HEADROOM_PRIORITY
from models.kubernetes import preemption

from .state import Group, Node, Pod, Pool
from .variants import HEADROOM, IMAGE_SNAPSHOT, MODEL_SOURCE, WORKING_HOURS

if TYPE_CHECKING:
    from .engine import Simulation

# The warm-start mechanisms a run can switch off (sim/variants.py lists every mechanism).
FEATURES = (HEADROOM, IMAGE_SNAPSHOT, MODEL_SOURCE, WORKING_HOURS)
# The placeholders' tenant in the record: their GPU-hours are the headroom's standing cost.
HEADROOM_TENANT = "(headroom)"
# Tenant pods name no PriorityClass: priority 0 (components/headroom.py).
TENANT_POD_PRIORITY = 0


def headroom_on(sim: Simulation) -> bool:
    return HEADROOM not in sim.options.without and not sim.options.static_baseline


def limit_gpus(sim: Simulation, pool: Pool) -> int:
    """The NodePool's GPU limit: the declared GPUs, plus the headroom when it is on."""
    return pool.plan.nodepool_gpus if headroom_on(sim) else pool.plan.gpu_limit


def is_placeholder(group: Group) -> bool:
    return group.tenant == HEADROOM_TENANT


@dataclass(frozen=True)
class Placeholders:
    """A pool's headroom: `pods` placeholder pods of `units` each, on `flavor`, outside Kueue."""

    flavor: FlavorPlan
    units: int
    pods: int


def headroom(sim: Simulation) -> list[Placeholders]:
    """Each pool's placeholder pods, pending at the start: Karpenter launches their nodes."""
    if not headroom_on(sim):
        return []
    found = []
    for pool in sim.pools.values():
        plan = pool.plan
        if not plan.headroom_pods:
            continue
        kind = plan.headroom_capacity_type
        flavor = next(
            f for f in sim.flavors.values() if f.pool.name == pool.name and f.capacity_type in (None, kind)
        )
        found.append(Placeholders(flavor, sum(plan.headroom_pod_requests.values()), plan.headroom_pods))
    return found


def _pod_priority(pod: Pod) -> int:
    return HEADROOM_PRIORITY if is_placeholder(pod.group) else TENANT_POD_PRIORITY


def preemption_victims(pod: Pod, nodes: list[Node]) -> tuple[Node, list[Pod]] | None:
    """kube-scheduler's preemption for a pod no Ready node fits: the node it goes to and the placeholders
    evicted for it (None when it must wait)."""
    if is_placeholder(pod.group):
        return None  # preemptionPolicy: Never
    by_name = {str(node.id): node for node in nodes}
    modelled = [
        preemption.Node(
            str(node.id), {"gpu": node.units},
            tuple(preemption.Pod(str(id(p)), _pod_priority(p), {"gpu": p.units}) for p in node.pods),
        )
        for node in nodes
    ]
    chosen = preemption.preempt(preemption.Pod("preemptor", TENANT_POD_PRIORITY, {"gpu": pod.units}), modelled)
    if chosen is None:
        return None
    node_name, victims = chosen
    node = by_name[node_name]
    evicted = {victim.name for victim in victims}
    return node, [p for p in node.pods if str(id(p)) in evicted]


def start_delay(sim: Simulation, pod: Pod, node: Node, preempted: bool) -> float:
    """Seconds from binding to Ready: the replica's cold start less what the node's image and staged weights save
    (the engine then records the image as on the node)."""
    group = pod.group
    if is_placeholder(group):
        return 0.0
    delay = group.start_delay + (time_to_gpu.PREEMPTION.value if preempted else 0.0)
    if group.deployment is None:
        return delay
    _, image, model = time_to_gpu.steps(node.pool.plan, s3_weights=True)
    if group.deployment in node.images:
        delay -= image.cold  # pulled by an earlier replica on this node
    else:
        if IMAGE_SNAPSHOT not in sim.options.without and node.pool.plan.config.warm_start.image_snapshot:
            delay -= image.cold - image.warm
    if MODEL_SOURCE not in sim.options.without and group.deployment in sim.s3_models:
        delay -= model.cold - model.warm
    return max(delay, 0.0)


def reads_from_s3(spec: InferenceDeploymentConfig) -> bool:
    return spec.serving is not None and s3_model_location(spec.serving.model_source) is not None
