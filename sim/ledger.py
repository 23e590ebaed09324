"""What happened in a run, as append-only facts: the one record the report's measures are computed from.

Nothing here is a counter or a total. Each fact says what happened to which object and when; `measures.py`
derives every figure from them, so "provisioned GPU-hours" or "lost GPU-hours" has one definition.

    nodes       NodeUp (launch: billing starts), NodeReady, Disrupted (Karpenter's or EC2's decision, by
                cause), NodeDown (the instance is gone: billing stops)
    workloads   Created (with why it can never run, if it cannot), Queued (into Kueue: creation or requeue),
                Withdrawn (deleted while queued), Admitted, Blocked (a pod Karpenter could not launch a node
                for: NodePool limit), Started (every pod Ready), Ended (an attempt's end, by cause), ScaleUp
                (the HPA's decision that created a replica)
    GPUs        Held: one pod's hold of its GPUs on one node during one attempt of its workload
    traffic     Served: one HPA sync period of a deployment's fluid request queue
    sharing     Fragments: a pool's free share of each GPU and the GPUs each waiting task asks for, sampled
                (only in a run with a sharing mode, sim/sharing.py)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

# How an attempt ends. Finished and deleted keep the attempt's work; the rest throw a job's run away.
FINISHED = "finished"
DELETED = "deleted"  # an inference replica scaled away
PREEMPTION = "preemption"  # Kueue preempted the workload
PODS_READY_TIMEOUT = "pods-ready-timeout"  # waitForPodsReady evicted it
CONSOLIDATION = "consolidation"
EXPIRY = "expiry"
INTERRUPTION = "interruption"
LOSS_CAUSES = (EXPIRY, CONSOLIDATION, PREEMPTION, INTERRUPTION, PODS_READY_TIMEOUT)
NODE_CAUSES = (CONSOLIDATION, EXPIRY, INTERRUPTION)

# What a workload is.
JOB = "job"
REPLICA = "replica"
SERVICE = "service"  # a trace's long-running service: an eviction costs a restart, not its run so far
PLACEHOLDER = "placeholder"


class NodeUp(NamedTuple):
    node: int
    pool: str
    instance: str
    gpus: int
    capacity_type: str
    price_per_hour: float
    at: float


class NodeReady(NamedTuple):
    node: int
    at: float


class Disrupted(NamedTuple):
    node: int
    pool: str
    cause: str  # CONSOLIDATION, EXPIRY or INTERRUPTION
    at: float


class NodeDown(NamedTuple):
    node: int
    at: float


class Created(NamedTuple):
    key: int
    tenant: str
    tier: str
    stream: str
    kind: str  # JOB, SERVICE, REPLICA or PLACEHOLDER
    pods: int
    units_per_pod: int
    at: float
    never: str | None  # why it can never run on this stack (sim/admissibility.py), None when it can


class Queued(NamedTuple):
    key: int
    at: float


class Withdrawn(NamedTuple):
    """Deleted while pending in Kueue (an inference replica scaled away before admission)."""

    key: int
    at: float


class Blocked(NamedTuple):
    """Karpenter left the workload's pending pod unlaunched: its pool is at its NodePool limit."""

    key: int
    pool: str
    at: float


class Admitted(NamedTuple):
    key: int
    flavor: str
    at: float


class Started(NamedTuple):
    key: int
    attempt: int
    at: float


class Ended(NamedTuple):
    key: int
    attempt: int
    cause: str
    at: float


class ScaleUp(NamedTuple):
    key: int
    deployment: str
    at: float


class Held(NamedTuple):
    key: int
    attempt: int
    pool: str
    gpus: float  # physical GPUs: units / slices per GPU
    start: float
    end: float
    cost: float  # the pod's share of its node's price for the time held


class Served(NamedTuple):
    deployment: str
    at: float
    seconds: float  # the sync period
    demand: float  # requests per second arriving
    capacity: float  # requests per second the Ready replicas serve
    waiting_before: float  # requests queued at the period's start
    waiting_after: float
    replicas_needed: float  # demand in replicas
    max_replicas: int


class Fragments(NamedTuple):
    """One sample of a pool under a sharing mode: what each Ready node's GPUs have free, and what waits for them."""

    pool: str
    at: float
    seconds: float  # the sample interval this sample stands for
    nodes: tuple[tuple[float, ...], ...]  # per node, each GPU's free share (0 to 1)
    waiting: tuple[float, ...]  # GPUs each pod waiting for the pool asks for (a fraction below 1)


@dataclass
class Ledger:
    end: float  # simulated seconds of the run
    nodes: list[NodeUp] = field(default_factory=list)
    ready: list[NodeReady] = field(default_factory=list)
    disrupted: list[Disrupted] = field(default_factory=list)
    down: list[NodeDown] = field(default_factory=list)
    created: list[Created] = field(default_factory=list)
    queued: list[Queued] = field(default_factory=list)
    withdrawn: list[Withdrawn] = field(default_factory=list)
    blocked: list[Blocked] = field(default_factory=list)
    admitted: list[Admitted] = field(default_factory=list)
    started: list[Started] = field(default_factory=list)
    ended: list[Ended] = field(default_factory=list)
    scale_ups: list[ScaleUp] = field(default_factory=list)
    held: list[Held] = field(default_factory=list)
    served: list[Served] = field(default_factory=list)
    fragments: list[Fragments] = field(default_factory=list)
