"""Inference deployments: request rate -> KEDA's two metrics -> the HPA -> replicas through Kueue onto GPUs.

Each deployment's traffic is a fluid queue: Ready replicas serve `requestsPerSecondPerReplica` each;
what they cannot serve waits (vLLM's `num_requests_waiting`); with none Ready, requests are refused.
Every HPA sync the HPA reads, through KEDA's metrics server (which queries Prometheus at that moment),
the GPU-utilisation trigger (target type Value: the deployment's average busy %, 0 with no Ready
replica as `ignoreNullValues` makes an empty result) and the queue-depth trigger (AverageValue:
waiting requests over replicas), takes the larger recommendation and applies the platform's `behavior`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from config import timing
from config.autoscaling import InferenceDeploymentConfig
from config.fair_share import TenantPlan
from models import keda
from models.keda import cron
from models.kubernetes import hpa

from . import warm_start
from .engine import Simulation
from .ledger import ScaleUp, Served
from .state import Group
from .workload import InferenceLoad, RateCurve, seconds


def rate_at(curve: RateCurve, wall_weekday: int, minute_of_day: int, offset: float) -> float:
    """Requests per second at a moment: day or night by working hours (weekdays only if so), times any surge."""
    start, end = _minutes(curve.working_hours)
    working = start <= minute_of_day < end and (wall_weekday < 5 or not curve.weekdays_only)
    rate = curve.day if working else curve.night
    for surge in curve.surges:
        begin = _seconds(surge.at)
        if begin <= offset < begin + _seconds(surge.duration):
            rate *= surge.factor
    return rate


# Every HPA sync asks for the rate: the texts of a curve are parsed once, not at each of a run's syncs.
@functools.lru_cache(maxsize=256)
def _minutes(working_hours: str) -> tuple[int, int]:
    """`09:00-18:00` -> (540, 1080): the first and the last minute of the day, the last not included."""
    first, last = working_hours.split("-")
    return int(first[:2]) * 60 + int(first[3:]), int(last[:2]) * 60 + int(last[3:])


_seconds = functools.lru_cache(maxsize=256)(seconds)


@dataclass
class Deployment:
    sim: Simulation
    tenant: TenantPlan
    spec: InferenceDeploymentConfig
    load: InferenceLoad
    autoscaler: hpa.Autoscaler
    replicas: list[Group] = field(default_factory=list)
    waiting: float = 0.0  # requests queued

    @property
    def name(self) -> str:
        return f"{self.tenant.name}/{self.spec.name}"

    def ready(self) -> int:
        return sum(1 for group in self.replicas if group.started_at is not None)

    def demand(self) -> float:
        clock = self.sim.clock
        wall = clock.wall()
        return rate_at(self.load.rate, wall.weekday(), wall.hour * 60 + wall.minute, clock.now)

    def add(self, count: int, scale_up: bool) -> None:
        tier = self.tenant.config.priority
        for _ in range(count):
            group = self.sim.new_group(
                tenant=self.tenant.name,
                tier=tier,
                priority=self.sim.config.queueing.priorities[tier],
                size=1,
                units_per_pod=self.spec.gpus_per_replica,
                flavors=(self.spec.flavor,),
                run_seconds=None,
                stream=self.name,
                deployment=self.name,
                start_delay=float(self.load.server_start_seconds),
            )
            self.replicas.append(group)
            if scale_up:
                self.sim.ledger.scale_ups.append(ScaleUp(group.key, self.name, self.sim.now))
            self.sim.submit(group)

    def remove(self, count: int) -> None:
        """The ReplicaSet deletes unscheduled pods first, then not-ready ones, then the newest
        (kubernetes pkg/controller/controller_utils.go, ActivePods ordering)."""
        ordered = sorted(self.replicas, key=lambda g: (g.admitted_at is not None, g.started_at is not None, -g.created, -g.key))
        for group in ordered[:count]:
            self.replicas.remove(group)
            self.sim.delete(group)

    def sync(self) -> None:
        """One HPA sync: serve, measure, recommend, normalise, scale."""
        ready = self.ready()
        capacity = ready * self.load.requests_per_second_per_replica
        demand = self.demand()
        # With no Ready replica the Service has no endpoints: requests are refused, not queued.
        before = self.waiting
        self.waiting = max(0.0, self.waiting + (demand - capacity) * hpa.SYNC_PERIOD_SECONDS) if ready else 0.0
        self.sim.ledger.served.append(Served(
            self.name, self.sim.now, hpa.SYNC_PERIOD_SECONDS, demand, capacity, before, self.waiting,
            demand / self.load.requests_per_second_per_replica, self.spec.max_replicas,
        ))
        busy = keda.prometheus_value([min(100.0, 100.0 * demand / capacity)] if capacity else [])
        current = len(self.replicas)
        preset = self.sim.config.autoscaling.preset(self.spec.workload_class)
        recommendations = [hpa.external_value_replicas(current, ready, busy, preset.scale_up_utilization)]
        if self.spec.queue_depth_target is not None:
            depth = keda.prometheus_value([self.waiting] if ready else [])
            recommendations.append(hpa.external_average_replicas(max(current, 1), depth, self.spec.queue_depth_target))
        hours = self.spec.working_hours
        if hours is not None and warm_start.WORKING_HOURS not in self.sim.options.without:
            # KEDA's cron trigger: desiredReplicas inside the window against a target of 1 per replica, else 0.
            value = cron.metric_value(cron.parse(hours.start), cron.parse(hours.end), hours.timezone, hours.replicas,
                                      self.sim.clock.wall())
            recommendations.append(hpa.external_average_replicas(max(current, 1), value, 1))
        desired = self.autoscaler.normalize(self.sim.now, current, max(recommendations))
        if desired > current:
            self.add(desired - current, scale_up=True)
        elif desired < current:
            self.remove(current - desired)


def deployments(sim: Simulation) -> list[Deployment]:
    """One per `inference` entry of the workload: the stack's spec, or the workload's for a tenant's own server."""
    found = []
    for load in sim.workload.inference:
        tenant = sim.tenants[load.tenant]
        declared = {d.name: d for d in tenant.config.inference}
        spec = declared.get(load.deployment) or load.spec
        assert spec is not None  # sim.run checks the workload against the stack first
        if warm_start.reads_from_s3(spec):
            sim.s3_models.add(f"{tenant.name}/{spec.name}")
        floor = spec.min_replicas
        if spec.working_hours is not None and warm_start.WORKING_HOURS in sim.options.without:
            floor = spec.working_hours.replicas  # no schedule: the working-hours floor all the time
        scaler = hpa.Autoscaler(
            keda.hpa_min_replicas(floor),
            spec.max_replicas,
            _rules(timing.HPA_SCALE_UP, hpa.DEFAULT_SCALE_UP),
            _rules(timing.HPA_SCALE_DOWN, hpa.DEFAULT_SCALE_DOWN),
        )
        found.append(Deployment(sim, tenant, spec, load, scaler))
    return found


def _rules(rules: timing.ScalingRules, default: hpa.Rules) -> hpa.Rules:
    """The platform's HPA behaviour (config/timing.py, what components/autoscaling renders) as the HPA model reads it."""
    return hpa.Rules(
        rules.stabilization_window_seconds,
        tuple(hpa.Policy(p.type, p.value, p.period_seconds) for p in rules.policies),
        rules.select_policy or default.select_policy,
    )


def start(sim: Simulation, deployment: Deployment) -> None:
    deployment.add(deployment.autoscaler.min_replicas, scale_up=False)
    sim.clock.every(hpa.SYNC_PERIOD_SECONDS, deployment.sync, first=hpa.SYNC_PERIOD_SECONDS)
