"""The simulation: workloads through Kueue, pods onto nodes, nodes from Karpenter, replicas from the HPA.

    arrivals ─> Kueue (sim/queueing.py seam) ─> admitted: pods ─> bind to a Ready node (least allocated)
                                                           └─> none fits: Karpenter packs a NodeClaim
    node Ready after its launch time ─> pods bind ─> server start ─> Ready ─> run ─> finish ─> quota back
    Karpenter: consolidation after consolidateAfter within budgets, expireAfter, spot interruptions
    HPA every 15 s per deployment: KEDA's metrics (GPU utilisation, queue depth) -> replicas

The rules are the models' (models/karpenter, models/kubernetes/hpa.py, models/keda); this module only
moves time and objects between them.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

from config import PlatformConfig
from config.fair_share import FlavorPlan, TenantPlan
from config.headroom import HEADROOM_PRIORITY
from config.timing import (
    PODS_READY_TIMEOUT_SECONDS,
    REQUEUE_BACKOFF_BASE_SECONDS,
    REQUEUE_BACKOFF_MAX_SECONDS,
    TENANT_POD_MAX_GRACE_SECONDS,
)
from models.karpenter import disruption
from models.karpenter.provisioning import (
    DEFAULT_LAUNCH_TO_READY,
    LAUNCH_TO_READY,
    SPOT,
    InstanceOption,
    LaunchTime,
    PoolRef,
    order_by_weight,
    pack,
)
from models.kueue import requeue_wait_seconds

from . import admissibility, claims_placement, rng, variants, warm_start
from .baseline import FixedNodes, default_kind, fixed_capacity, kind_without
from .clock import Clock
from .events import Record
from .ledger import (
    CONSOLIDATION,
    DELETED,
    EXPIRY,
    FINISHED,
    INTERRUPTION,
    JOB,
    PLACEHOLDER,
    PODS_READY_TIMEOUT,
    PREEMPTION,
    REPLICA,
    SERVICE,
    Admitted,
    Blocked,
    Created,
    Disrupted,
    Ended,
    Held,
    Ledger,
    NodeDown,
    NodeReady,
    NodeUp,
    Queued,
    Started,
    Withdrawn,
)
from .queueing import Kueue, QueuedWorkload
from .sharing import GpuSharing
from .state import Group, Node, Pod, Pool
from .workload import Workload, seconds

# Karpenter's provisioner batches pending pods for 1 s of quiet (BATCH_IDLE_DURATION, at most 10 s).
PROVISIONING_BATCH_SECONDS = 1.0
# From Kueue's preemption to the victim's quota freed: the scheduler marks it evicted, the job reconciler
# suspends its job, the Job (or JobSet) controller deletes its pods, and once the job counts no active pod
# the reconciler clears the reservation and the workload is requeued (kubernetes-sigs/kueue v0.19.2
# pkg/controller/jobframework/reconciler.go, eviction: `!job.IsActive()`; a batch Job's `status.active`
# leaves out terminating pods). Four watch-driven reconciles of a healthy control plane: the simulator
# takes 2 s. A workload of Kueue's pod integration (a Deployment's pods) holds its quota until its pods
# have stopped (pod_controller.go IsActive; FastQuotaReleaseInPodIntegration is alpha and off): not modelled.
PREEMPTION_RELEASE_SECONDS = 2.0
# How long a consolidation blocked by a budget waits before trying again (Karpenter re-evaluates every 10 s;
# a minute keeps long budget windows cheap to simulate and moves a decision by under a minute).
BUDGET_RETRY_SECONDS = 60.0


@dataclass(frozen=True)
class Options:
    seed: int = 0
    static_baseline: bool = False
    without: frozenset[str] = frozenset()  # mechanisms switched off (sim/variants.py MECHANISMS)
    commitment_discount: float = 0.0  # off the static baseline's on-demand prices


class Simulation:
    def __init__(self, config: PlatformConfig, workload: Workload, kueue: Kueue, options: Options = Options()):
        self.config = config
        self.workload = workload
        self.kueue = kueue
        self.options = options
        self.rng = rng.Streams(options.seed)
        self.clock = Clock(workload.start_time, seconds(workload.duration))
        self.ledger = Ledger(self.clock.end)
        self.record = Record()
        self.pools = {plan.name: Pool.from_plan(plan) for plan in config.gpu_pools}
        if variants.CONSOLIDATION in options.without:
            for pool in self.pools.values():
                pool.consolidate_after = None  # no node is ever checked for consolidation
        self.fixed: list[FixedNodes] = []  # the fixed nodes of a variant without autoscaling (sim/baseline.py)
        self.flavors: dict[str, FlavorPlan] = {flavor.name: flavor for flavor in config.flavors}
        self.tenants: dict[str, TenantPlan] = {tenant.name: tenant for tenant in config.tenants}
        self.groups: dict[int, Group] = {}
        # Work scheduled to arrive, by (tenant, tier): at least as many as the run's measures will count there, known
        # once the arrivals are scheduled (sim/early_stop.py reads it). Inference replicas are created on demand and
        # not counted.
        self.expected: Counter[tuple[str, str]] = Counter()
        self.pending_pods: list[Pod] = []
        self._next_key = 0
        self._next_node = 0
        self._cycle_requested = False
        self._provision_requested = False
        self.launch_times = {
            **LAUNCH_TO_READY,
            **{family: LaunchTime(o.median_seconds, o.p95_seconds) for family, o in workload.launch_to_ready.items()},
        }
        self.s3_models: set[str] = set()  # deployments whose servers stream weights from S3
        self.gpu_sharing: GpuSharing | None = None  # which GPU of a node a pod holds, under a sharing mode (sim/sharing.py)

    # --- workloads ------------------------------------------------------------------------------
    @property
    def now(self) -> float:
        return self.clock.now

    def new_group(self, **fields: Any) -> Group:
        self._next_key += 1
        group = Group(key=self._next_key, created=self.now, **fields)
        self.groups[group.key] = group
        return group

    def _kind(self, group: Group) -> str:
        if warm_start.is_placeholder(group):
            return PLACEHOLDER
        if group.service:
            return SERVICE
        return JOB if group.run_seconds is not None else REPLICA

    def created(self, group: Group, never: str | None = None) -> None:
        self.ledger.created.append(Created(group.key, group.tenant, group.tier, group.stream, self._kind(group), group.size,
                                           group.units_per_pod, group.created, never))

    def submit(self, group: Group) -> None:
        """Queue the group in Kueue, stamped now (its creation, or its eviction when requeued)."""
        queued = self._queued_workload(group, self.now)
        if not group.submitted:
            group.submitted = True
            self.created(group, admissibility.never_runs(self, group, queued))
        self.ledger.queued.append(Queued(group.key, self.now))
        group.queued = True
        self.kueue.submit(queued)
        self.request_cycle()

    def _queued_workload(self, group: Group, timestamp: float) -> QueuedWorkload:
        return QueuedWorkload(group.key, group.tenant, group.priority, timestamp, group.size, group.units_per_pod,
                              group.flavors, group.claim.charge if group.claim else ())

    def end_attempt(self, group: Group, cause: str) -> None:
        """The group's current attempt is over (its pods' holds already closed); the next one starts afresh."""
        self.ledger.ended.append(Ended(group.key, group.attempt, cause, self.now))
        group.attempt += 1

    def request_cycle(self) -> None:
        if not self._cycle_requested:
            self._cycle_requested = True
            self.clock.call(0, self._cycle)

    def _cycle(self) -> None:
        self._cycle_requested = False
        decisions = self.kueue.schedule(self.now)
        for key in decisions.preempted:
            victim = self.groups[key]
            victim.preemptions += 1
            self._stop(victim)
            self.end_attempt(victim, PREEMPTION)
            victim.admitted_at = None
            # Waiting again from its eviction (requeuingStrategy timestamp Eviction), its quota still held.
            self.ledger.queued.append(Queued(key, self.now))
            victim.queued = True
            self.clock.call(PREEMPTION_RELEASE_SECONDS, self._evicted, victim, victim.generation, self.now)
        for key in decisions.requeued:
            group = self.groups[key]
            self.clock.call(PREEMPTION_RELEASE_SECONDS, self._evicted, group, group.generation, self.now)
        for admission in decisions.admitted:
            self._admit(self.groups[admission.key], self.flavors[admission.flavor])
        self._bind_pending()

    def _evicted(self, group: Group, generation: int, evicted_at: float) -> None:
        """A preempted workload's job has stopped: Kueue clears its reservation and queues it again, ordered by
        its eviction's time. A workload deleted meanwhile released its quota when it went."""
        if group.generation != generation or group.deleted:
            return
        self.kueue.release_evicted(group.key)
        self.kueue.submit(self._queued_workload(group, evicted_at))
        self.request_cycle()

    def _admit(self, group: Group, flavor: FlavorPlan) -> None:
        group.flavor = flavor
        group.admitted_at = self.now
        if group.waited is None:
            group.waited = self.now - group.created
        self.ledger.admitted.append(Admitted(group.key, flavor.name, self.now))
        group.queued = False
        group.pods = [Pod(group, group.units_per_pod, self.now) for _ in range(group.size)]
        self.pending_pods.extend(group.pods)
        self.clock.call(PODS_READY_TIMEOUT_SECONDS, self._pods_ready_timeout, group, group.generation)

    def _pods_ready_timeout(self, group: Group, generation: int) -> None:
        """waitForPodsReady: not all pods Ready within the timeout -> evict, requeue after a backoff."""
        if group.generation != generation or group.started_at is not None or group.done or group.deleted:
            return
        group.evictions += 1
        self._stop(group)
        self.end_attempt(group, PODS_READY_TIMEOUT)
        group.admitted_at = None
        self.kueue.evict(group.key)
        self.request_cycle()
        backoff = requeue_wait_seconds(
            group.evictions, REQUEUE_BACKOFF_BASE_SECONDS, REQUEUE_BACKOFF_MAX_SECONDS,
            jitter=self.rng(rng.REQUEUE_JITTER).random(),
        )
        self.clock.call(backoff, self._requeue, group, group.generation)

    def _requeue(self, group: Group, generation: int) -> None:
        if group.generation == generation and not group.deleted:
            self.submit(group)

    def _pause(self, group: Group) -> None:
        """The group stops running: a service keeps the running time it had (a job's run starts over)."""
        if group.service and group.started_at is not None:
            group.ran += self.now - group.started_at
        group.started_at = None

    def _stop(self, group: Group) -> None:
        """Take the group's pods off their nodes (and out of pending); its timers lapse."""
        group.generation += 1
        self._pause(group)
        for pod in group.pods:
            if pod.node is not None:
                self._unbind(pod)
            elif pod in self.pending_pods:
                self.pending_pods.remove(pod)
                for node in self._pool_of(group).nodes:
                    if pod in node.nominated:
                        node.nominated.remove(pod)
        group.pods = []

    def finish(self, group: Group, generation: int) -> None:
        if group.generation != generation or group.done:
            return
        group.done = True
        self._stop(group)
        self.end_attempt(group, FINISHED)
        self.kueue.release(group.key)
        self.request_cycle()

    def delete(self, group: Group) -> None:
        """An inference replica scaled away: pods gone, quota (or queue place) released."""
        group.deleted = True
        if group.queued:
            self.ledger.withdrawn.append(Withdrawn(group.key, self.now))
            group.queued = False
        self._stop(group)
        self.end_attempt(group, DELETED)
        self.kueue.release(group.key)
        self.request_cycle()

    # --- pods on nodes --------------------------------------------------------------------------
    def _pool_of(self, group: Group) -> Pool:
        assert group.flavor is not None
        return self.pools[group.flavor.pool.name]

    def _fits(self, node: Node, pod: Pod) -> bool:
        flavor = pod.group.flavor
        assert flavor is not None
        return (
            node.ready
            and not node.deleting
            and node.pool.name == flavor.pool.name
            and self._kind_matches(node, flavor)
            and node.free >= pod.units
            and (self.gpu_sharing is None or self.gpu_sharing.fits(node, pod))
            and (pod.group.claim is None or claims_placement.fits(node, pod))
        )

    def _kind_matches(self, node: Node, flavor: FlavorPlan) -> bool:
        """A flavor naming a capacity type selects nodes of that type (spot as on-demand once spot is off)."""
        return flavor.capacity_type is None or node.capacity_type == kind_without(flavor.capacity_type, self.options.without)

    def _bind_pending(self) -> None:
        """The scheduler's pass over pending pods, oldest first: each onto the least allocated Ready node that fits
        (NodeResourcesFit's default LeastAllocated score; GPUs stand in for the cpu and memory it scores)."""
        left = []
        for pod in self.pending_pods:
            candidates = [node for node in self._pool_of(pod.group).nodes if self._fits(node, pod)]
            if not candidates:
                # kube-scheduler's preemption: a tenant pod may evict the headroom's placeholders.
                reachable = [node for node in self._pool_of(pod.group).nodes if self._could_fit(node, pod)]
                decision = warm_start.preemption_victims(pod, reachable)
                if decision is None:
                    left.append(pod)
                else:
                    target, victims = decision
                    for victim in victims:
                        self._evict_placeholder(victim)
                    self._bind(pod, target, preempted=True)
                continue
            if self.gpu_sharing is not None:
                node = self.gpu_sharing.choose(candidates, pod)
            else:
                node = min(candidates, key=lambda n: (n.used / n.units, n.id))
            self._bind(pod, node)
        self.pending_pods = left
        if left and not self._provision_requested:
            self._provision_requested = True
            self.clock.call(PROVISIONING_BATCH_SECONDS, self._provision)

    def _could_fit(self, node: Node, pod: Pod) -> bool:
        """`_fits` but for the free room: a node the pod could use once pods are evicted from it."""
        flavor = pod.group.flavor
        assert flavor is not None
        # A claim's pod preempts nothing: the DRA pools' standing nodes hold no headroom placeholders.
        return (
            node.ready and not node.deleting and node.pool.name == flavor.pool.name and self._kind_matches(node, flavor)
            and pod.group.claim is None
        )

    def place_headroom(self) -> None:
        """The headroom's placeholder pods (sim/warm_start.py), pending from the start, outside Kueue."""
        for placeholders in warm_start.headroom(self):
            for _ in range(placeholders.pods):
                group = self.new_group(
                    tenant=warm_start.HEADROOM_TENANT, tier="", priority=HEADROOM_PRIORITY, size=1,
                    units_per_pod=placeholders.units, flavors=(placeholders.flavor.name,), run_seconds=None,
                    stream=warm_start.HEADROOM_TENANT,
                )
                group.flavor = placeholders.flavor
                group.waited = 0.0  # never queued
                self.created(group)
                self._add_placeholder_pod(group)
        self.request_cycle()

    def _add_placeholder_pod(self, group: Group) -> None:
        pod = Pod(group, group.units_per_pod, self.now)
        group.pods = [pod]
        self.pending_pods.append(pod)

    def _evict_placeholder(self, pod: Pod) -> None:
        """A headroom placeholder evicted by kube-scheduler's preemption; its Deployment recreates it, pending."""
        self._unbind(pod)
        pod.group.pods.remove(pod)
        pod.group.started_at = None
        self._add_placeholder_pod(pod.group)

    def _bind(self, pod: Pod, node: Node, preempted: bool = False) -> None:
        pod.node = node
        pod.node_id = node.id
        pod.bound_at = self.now
        if pod.group.claim is not None:
            pod.devices = claims_placement.allocate(node, pod)
        node.pods.append(pod)
        if self.gpu_sharing is not None:
            self.gpu_sharing.bind(node, pod)
        if pod in node.nominated:
            node.nominated.remove(pod)
        self._pod_event(node)
        group = pod.group
        delay = warm_start.start_delay(self, pod, node, preempted)
        if group.deployment is not None:
            node.images.add(group.deployment)  # the kubelet keeps the pulled image for the next replica
        self.clock.call(delay, self._pod_ready, pod, group.generation)

    def _pod_ready(self, pod: Pod, generation: int) -> None:
        group = pod.group
        if group.generation != generation or pod.node is None:
            return
        pod.ready_at = self.now
        if group.started_at is None and all(p.ready_at is not None and p.node is not None for p in group.pods):
            group.started_at = self.now
            self.ledger.started.append(Started(group.key, group.attempt, self.now))
            if group.run_seconds is not None:
                self.clock.call(max(0.0, group.run_seconds - group.ran), self.finish, group, group.generation)

    def _close_hold(self, pod: Pod) -> None:
        """The pod's hold of its GPUs, from its binding (or its workload's last restart) to now, into the ledger."""
        node = pod.node
        assert node is not None and pod.bound_at is not None
        held = self.now - pod.bound_at
        self.ledger.held.append(Held(
            pod.group.key, pod.group.attempt, node.pool.name, pod.units / node.pool.slices_per_gpu, pod.bound_at, self.now,
            held / 3600 * node.price_per_hour * pod.units / node.units,
        ))
        pod.bound_at = self.now

    def _unbind(self, pod: Pod) -> None:
        node = pod.node
        assert node is not None
        self._close_hold(pod)
        node.pods.remove(pod)
        if self.gpu_sharing is not None:
            self.gpu_sharing.release(node, pod)
        pod.node = None
        self._pod_event(node)

    def _pod_event(self, node: Node) -> None:
        node.last_pod_event = self.now
        pool = node.pool
        if node.draining and not node.pods and node in pool.nodes:
            self.clock.call(0, self._terminate, node)  # drained: the last blocking pod has ended
        if not pool.static and pool.consolidate_after is not None:
            self._schedule_check(node, self.now + pool.consolidate_after)

    # --- Karpenter ------------------------------------------------------------------------------
    def _provision(self) -> None:
        """Pending pods: first onto in-flight NodeClaims with room, then packed onto new ones per pool."""
        self._provision_requested = False
        waiting = [pod for pod in self.pending_pods if not any(pod in n.nominated for n in self._pool_of(pod.group).nodes)]
        by_pool: dict[tuple[str, str], list[Pod]] = {}
        for pod in waiting:
            pool = self._pool_of(pod.group)
            if pool.static:
                continue
            flavor = pod.group.flavor
            assert flavor is not None
            without = self.options.without
            kind = kind_without(flavor.capacity_type, without) if flavor.capacity_type else default_kind(pool.plan, without)
            inflight = [
                n for n in pool.nodes
                if not n.ready and not n.deleting and n.capacity_type == kind
                and n.units - sum(p.units for p in n.nominated) >= pod.units
            ]
            if inflight:
                inflight[0].nominated.append(pod)
                continue
            by_pool.setdefault((pool.name, kind), []).append(pod)
        order = [ref.name for ref in order_by_weight([PoolRef(p.name, p.plan.config.weight) for p in self.pools.values()])]
        for (pool_name, kind), pods in sorted(by_pool.items(), key=lambda item: (order.index(item[0][0]), item[0][1])):
            pool = self.pools[pool_name]
            slices = pool.slices_per_gpu
            options = [InstanceOption(o.name, o.gpus * slices, o.on_demand_usd_per_hour) for o in pool.options]
            remaining = (warm_start.limit_gpus(self, pool) - pool.gpus_in_use()) * slices
            claims, unplaced = pack([pod.units for pod in pods], options, remaining)
            for index in unplaced:
                self.ledger.blocked.append(Blocked(pods[index].group.key, pool.name, self.now))
            queue = sorted(pods, key=lambda p: -p.units)
            for claim in claims:
                instance = next(o for o in pool.options if o.name == claim.instance_type.name)
                node = self._launch(pool, instance, kind)
                for units in claim.pods:
                    pod = next(p for p in queue if p.units == units)
                    queue.remove(pod)
                    node.nominated.append(pod)

    def _launch(self, pool: Pool, instance: InstanceOption, kind: str, ready_now: bool = False) -> Node:
        self._next_node += 1
        price = instance.on_demand_usd_per_hour * (self.workload.spot.price_factor if kind == SPOT else 1.0)
        if pool.static and self.options.static_baseline:
            price *= 1.0 - self.options.commitment_discount
        node = Node(self._next_node, pool, instance, kind, price, self.now, last_pod_event=self.now)
        pool.nodes.append(node)
        self.ledger.nodes.append(NodeUp(node.id, pool.name, instance.name, instance.gpus, kind, price, self.now))
        if ready_now:
            self._node_ready(node)
        else:
            family = instance.name.split(".")[0]
            launch = self.launch_times.get(family, DEFAULT_LAUNCH_TO_READY)
            delay = self.rng(rng.LAUNCHES).lognormvariate(math.log(launch.median_seconds), launch.sigma)
            self.clock.call(delay, self._node_ready, node)
        if not pool.static and pool.expire_after is not None:
            self.clock.call(pool.expire_after, self._expire, node)
        rate = self.workload.spot.interruptions_per_node_hour
        if kind == SPOT and rate > 0:
            self.clock.call(self.rng(rng.INTERRUPTIONS).expovariate(rate / 3600), self._interrupt, node)
        return node

    def _node_ready(self, node: Node) -> None:
        if node.deleting or node not in node.pool.nodes:
            return
        node.ready = True
        node.ready_at = self.now
        self.ledger.ready.append(NodeReady(node.id, self.now))
        # Pods Karpenter launched this node for go first (kube-scheduler sees them as nominated here).
        nominated, node.nominated = node.nominated, []
        for pod in nominated:
            if pod in self.pending_pods and self._fits(node, pod):
                self.pending_pods.remove(pod)
                self._bind(pod, node)
        self._pod_event(node)
        self._bind_pending()

    def _schedule_check(self, node: Node, at: float) -> None:
        if node.check_at is not None and node.check_at <= at and node.check_at >= self.now:
            return
        node.check_at = at
        self.clock.call(at - self.now, self._check, node, at)

    def _check(self, node: Node, at: float) -> None:
        if node.check_at != at or node.deleting or node not in node.pool.nodes or not node.ready:
            return
        node.check_at = None
        pool = node.pool
        # A timer set for last_pod_event + consolidateAfter may fire a rounding error early: a microsecond's grace.
        if not disruption.consolidatable(node.last_pod_event, self.now + 1e-6, pool.consolidate_after):
            assert pool.consolidate_after is not None
            self._schedule_check(node, node.last_pod_event + pool.consolidate_after)
            return
        if not disruption.is_candidate(disruption.GRACEFUL, _blocks_eviction(node), pool.termination_grace_period):
            return  # a pod event (one leaving) checks the node again
        empty = not node.pods and not node.nominated
        reason = disruption.consolidation_reason(pool.consolidation_policy, empty, not empty and self._fits_elsewhere(node))
        if reason is None:
            return
        live = [n for n in pool.nodes if not n.deleting]
        allowed = disruption.allowed_disruptions(pool.budgets, self.clock.wall(), len(live), reason)
        if allowed <= 0:
            self._schedule_check(node, self.now + BUDGET_RETRY_SECONDS)
            return
        self._disrupt(node, CONSOLIDATION)
        self._terminate(node)

    def _fits_elsewhere(self, node: Node) -> bool:
        """Single-node consolidation: every pod of `node` fits the free room of the pool's other Ready nodes."""
        free = {other.id: other.free for other in node.pool.nodes if other is not node and other.ready and not other.deleting
                and other.capacity_type == node.capacity_type}
        for pod in sorted(node.pods, key=lambda p: -p.units):
            target = next((key for key, room in free.items() if room >= pod.units), None)
            if target is None:
                return False
            free[target] -= pod.units
        return True

    def _expire(self, node: Node) -> None:
        """Forceful: the NodeClaim is deleted whatever runs on it; its drain evicts the pods that allow it at once
        and waits for do-not-disrupt pods until the terminationGracePeriod (models/karpenter/disruption.py)."""
        if node.deleting or node not in node.pool.nodes:
            return
        self._disrupt(node, EXPIRY)
        pool = node.pool
        blocking = [pod for pod in node.pods if pod.group.do_not_disrupt]
        if not blocking:
            self._terminate(node)
            return
        node.deleting = True  # tainted: nothing new lands on it
        node.draining = True
        free = [pod for pod in node.pods if not pod.group.do_not_disrupt]
        if free or node.nominated:
            self._evict_pods(node, free)
        wait = disruption.pod_deleted_after(True, pool.termination_grace_period, TENANT_POD_MAX_GRACE_SECONDS)
        if wait is not None:
            self.clock.call(wait, self._terminate, node)

    def _interrupt(self, node: Node) -> None:
        """The 2-minute notice: Karpenter cordons and drains now; EC2 reclaims the instance at the deadline, an
        expired node still draining around do-not-disrupt pods included."""
        if (node.deleting and not node.draining) or node not in node.pool.nodes:
            return
        self._disrupt(node, INTERRUPTION)
        node.deleting = True
        node.draining = False
        self._evict_pods(node)
        self.clock.call(disruption.SPOT_NOTICE_SECONDS, self._terminate, node)

    def _disrupt(self, node: Node, cause: str) -> None:
        node.cause = cause
        self.ledger.disrupted.append(Disrupted(node.id, node.pool.name, cause, self.now))

    def _evict_pods(self, node: Node, pods: list[Pod] | None = None) -> None:
        """The node's pods (or `pods` of them) are deleted; their controllers recreate them as pending pods of the
        same workload, whose run starts over (the attempt ends with the node's disruption as its cause)."""
        assert node.cause is not None
        restarted: dict[int, Group] = {}
        for pod in list(node.pods) if pods is None else pods:
            group = pod.group
            self._unbind(pod)
            group.pods.remove(pod)
            if group.started_at is not None or any(p.node is not None for p in group.pods):
                group.evictions += 1
            group.generation += 1  # the run (a service: what is left of it) goes on once every pod is Ready again
            self._pause(group)
            replacement = Pod(group, pod.units, self.now)
            group.pods.append(replacement)
            self.pending_pods.append(replacement)
            restarted[group.key] = group
            for other in group.pods:
                if other.node is not None:
                    other.ready_at = None
                    self.clock.call(group.start_delay, self._pod_ready, other, group.generation)
        for group in restarted.values():
            # The pods still bound elsewhere keep their GPUs, but what they held so far went with the run.
            for other in group.pods:
                if other.node is not None:
                    self._close_hold(other)
            self.end_attempt(group, node.cause)
        node.nominated = []  # still pending: the next provisioning pass finds them
        self._bind_pending()

    def _terminate(self, node: Node) -> None:
        if node not in node.pool.nodes:
            return
        node.deleting = True
        if node.pods or node.nominated:
            self._evict_pods(node)
        self._close_node(node)
        node.pool.nodes.remove(node)
        if node.pool.static and node.cause == INTERRUPTION:
            self._launch(node.pool, node.instance, node.capacity_type)  # a fixed node group replaces its node
        self._bind_pending()

    def _close_node(self, node: Node) -> None:
        self.ledger.down.append(NodeDown(node.id, self.now))

    # --- fixed capacity: the static baseline, pools pinned without autoscaling -------------------
    def launch_fixed_capacity(self, largest: dict[str, int]) -> None:
        """Every pool's fixed nodes (sim/baseline.py), launched Ready at the start and kept; Karpenter launches
        and removes nothing in these pools. `largest`: each pool's largest pod in GPUs (baseline.largest_pods)."""
        limits = {name: warm_start.limit_gpus(self, pool) for name, pool in self.pools.items()}
        self.fixed = fixed_capacity(self.config, self.workload, static_baseline=self.options.static_baseline,
                                    without=self.options.without, limits=limits, largest=largest,
                                    commitment_discount=self.options.commitment_discount)
        for pool in self.pools.values():
            pool.static = True
        for fixed in self.fixed:
            pool = self.pools[fixed.pool]
            by_name = {option.name: option for option in pool.options}
            for name in fixed.instance_types:
                self._launch(pool, by_name[name], fixed.capacity_type, ready_now=True)

    def launch_standing(self, pool: Pool, instance: InstanceOption, kind: str) -> Node:
        """A node of a fixed-size node group (a DRA pool's: sim/claims_placement.py), Ready at the start."""
        return self._launch(pool, instance, kind, ready_now=True)

    # --- the end --------------------------------------------------------------------------------
    def close(self) -> None:
        """Close the holds of pods still bound at the end (nodes still up stay open in the ledger)."""
        for pool in self.pools.values():
            for node in list(pool.nodes):
                for pod in list(node.pods):
                    self._close_hold(pod)


def _blocks_eviction(node: Node) -> bool:
    return any(pod.group.do_not_disrupt for pod in node.pods)
