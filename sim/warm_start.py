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
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from config import time_to_gpu
from config.autoscaling import InferenceDeploymentConfig, s3_model_location
from config.headroom import HEADROOM_PRIORITY
from models.kubernetes import preemption

from .state import Group, Node, Pod, Pool

if TYPE_CHECKING:
    from .engine import Simulation

HEADROOM = "headroom"
IMAGE_SNAPSHOT = "image-snapshot"
MODEL_SOURCE = "model-source"
WORKING_HOURS = "working-hours"
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


def place_headroom(sim: Simulation) -> None:
    """Each pool's placeholder pods, pending at the start: Karpenter launches their nodes."""
    if not headroom_on(sim):
        return
    for pool in sim.pools.values():
        plan = pool.plan
        if not plan.headroom_pods:
            continue
        kind = plan.headroom_capacity_type
        flavor = next(
            f for f in sim.flavors.values() if f.pool.name == pool.name and f.capacity_type in (None, kind)
        )
        units = sum(plan.headroom_pod_requests.values())
        for _ in range(plan.headroom_pods):
            group = sim.new_group(
                tenant=HEADROOM_TENANT, tier="", priority=HEADROOM_PRIORITY, size=1, units_per_pod=units,
                flavors=(flavor.name,), run_seconds=None, stream=HEADROOM_TENANT,
            )
            group.flavor = flavor
            group.waited = 0.0  # never queued: outside Kueue
            sim.created(group)
            _add_placeholder(sim, group)
    sim.request_cycle()


def _add_placeholder(sim: Simulation, group: Group) -> None:
    pod = Pod(group, group.units_per_pod, sim.now)
    group.pods = [pod]
    sim.pending_pods.append(pod)


def _pod_priority(pod: Pod) -> int:
    return HEADROOM_PRIORITY if is_placeholder(pod.group) else TENANT_POD_PRIORITY


def preempt_for(sim: Simulation, pod: Pod, nodes: list[Node]) -> Node | None:
    """kube-scheduler's preemption for a pod no Ready node fits: evict the victims, recreate evicted
    placeholders pending, and return the node the pod goes to (None when it must wait)."""
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
    for victim in [p for p in node.pods if str(id(p)) in evicted]:
        sim.evict_placeholder(victim)
        _add_placeholder(sim, victim.group)
    return node


def start_delay(sim: Simulation, pod: Pod, node: Node, preempted: bool) -> float:
    """Seconds from binding to Ready: the replica's cold start less what the node's image and staged weights save."""
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
        node.images.add(group.deployment)
        if IMAGE_SNAPSHOT not in sim.options.without and node.pool.plan.config.warm_start.image_snapshot:
            delay -= image.cold - image.warm
    if MODEL_SOURCE not in sim.options.without and group.deployment in sim.s3_models:
        delay -= model.cold - model.warm
    return max(delay, 0.0)


def reads_from_s3(spec: InferenceDeploymentConfig) -> bool:
    return spec.serving is not None and s3_model_location(spec.serving.model_source) is not None
