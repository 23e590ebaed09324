"""Stop a run once a work level is certainly missed: the capacity plan's early decision (offline/plan.py).

A plan simulates many candidates that miss a level by far: a stack a third of the size the workload needs
starts its production work days late. Their runs are also the slowest (a starved stack keeps Kueue busy), and
the search needs only to know that they miss. So a run may watch some of the plan's levels and stop as soon
as one is decided:

1. The work a level counts is known when the run starts: every job and trace task is scheduled before the
   clock runs (sim/arrivals.py counts them by tenant and tier in `Simulation.expected`). That count `N` is an
   upper bound: some may prove never runnable or fall past the end, and the measures leave those out. Inference
   replicas are created on demand, so a workload with inference deployments is never watched.
2. At each check, the work of the level's scope that has started (or, for `p95_wait`, been admitted) has its
   figure for good: creation to first Running (first admission) does not change. Everything else may still
   come, at any time from 0 up. The lowest the final figure can be is then the figure over the known values
   and `N - known` zeros: a nearest-rank percentile or a mean only falls when values are lowered or zeros
   added, and the final set of values is the known ones plus at most that many others, each at least 0.
   (sim/measures.py computes each figure over the work that started by the end, so work that never starts
   adds nothing; a zero for it is still a lower bound.)
3. A plan's level is met when its mean over K seeds meets the bound, and every seed's figure is at least 0.
   A seed whose lower bound is past K times the bound therefore decides the level missed for the candidate
   whatever the other seeds give. `Watch.beyond` is that K times the bound.

A stopped run's ledger ends when it stopped: its cost is what it spent until then, also a lower bound. Only the
times of work are watched; `unstarted` and the inference levels are decided at the end only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import plan_slo
from .ledger import PLACEHOLDER, Admitted, Created, Started
from .plan_slo import Names, Slo
from .stats import percentile

if TYPE_CHECKING:
    from .engine import Simulation

# The metrics a run can decide early, and how each is figured: a percentile (q) or the mean, over each
# workload's time from creation to its first start or first admission.
STARTED = "started"
ADMITTED = "admitted"
WATCHED: dict[str, tuple[str, float | None]] = {
    "p95_time_to_start": (STARTED, 95),
    "p50_time_to_start": (STARTED, 50),
    "mean_time_to_start": (STARTED, None),
    "p95_wait": (ADMITTED, 95),
}


@dataclass(frozen=True)
class Watch:
    """A level a run watches: its scope is a tier, a tenant, or all (as `names` reads it); the run stops once
    its lower bound is past `beyond`."""

    slo: Slo
    level: str  # "run", "tier" or "tenant" (plan_slo.level_of)
    beyond: float


def watches(slos: Sequence[Slo], names: Names, seeds: int, has_inference: bool) -> tuple[Watch, ...]:
    """The levels a run of `seeds` seeds may stop on: the watchable work levels, none when replicas count."""
    if has_inference:
        return ()
    found = []
    for slo in slos:
        if slo.metric not in WATCHED:
            continue
        found.append(Watch(slo, plan_slo.level_of(slo, names), seeds * slo.bound))
    return tuple(found)


def lower_bound(metric: str, known: Sequence[float], count: int) -> float | None:
    """The least the final figure can be: the known values and `count - len(known)` zeros (None: no work)."""
    if count <= 0:
        return None
    padded = list(known) + [0.0] * max(0, count - len(known))
    _, q = WATCHED[metric]
    if q is None:
        return sum(padded) / len(padded)
    return percentile(padded, q)


def _member(watch: Watch, tenant: str, tier: str) -> bool:
    if watch.level == "run":
        return True
    return (tier if watch.level == "tier" else tenant) == watch.slo.scope


class Watcher:
    """The watched levels of one run, checked every `period` simulated seconds from the first. Made once the
    arrivals are scheduled: each watch's `N` is the work scheduled in its scope then."""

    def __init__(self, sim: Simulation, watched: Sequence[Watch], period: float):
        self.sim = sim
        self.watched = tuple(watched)
        self.counts = [sum(n for (tenant, tier), n in sim.expected.items() if _member(w, tenant, tier))
                       for w in self.watched]
        self.values: list[dict[int, float]] = [{} for _ in self.watched]
        self.created: dict[int, Created] = {}
        self.seen = {"created": 0, STARTED: 0, ADMITTED: 0}
        self.stopped: dict[str, Any] | None = None
        if self.watched:
            sim.clock.every(period, self.check, first=period)

    def _read(self) -> None:
        ledger = self.sim.ledger
        for workload in ledger.created[self.seen["created"]:]:
            self.created[workload.key] = workload
        self.seen["created"] = len(ledger.created)
        facts: dict[str, Sequence[Started | Admitted]] = {STARTED: ledger.started, ADMITTED: ledger.admitted}
        for source, found in facts.items():
            for fact in found[self.seen[source]:]:
                work = self.created.get(fact.key)
                if work is None or work.kind == PLACEHOLDER or work.never is not None:
                    continue
                for watch, values in zip(self.watched, self.values, strict=True):
                    if WATCHED[watch.slo.metric][0] == source and _member(watch, work.tenant, work.tier):
                        values.setdefault(fact.key, fact.at - work.at)
            self.seen[source] = len(found)

    def bounds(self) -> dict[str, float | None]:
        """Each watched level's lower bound now, by its text."""
        self._read()
        return {watch.slo.text: lower_bound(watch.slo.metric, list(values.values()), count)
                for watch, values, count in zip(self.watched, self.values, self.counts, strict=True)}

    def check(self) -> None:
        bounds = self.bounds()
        for watch in self.watched:
            bound = bounds[watch.slo.text]
            if bound is not None and bound > watch.beyond:
                self.stopped = {"at": self.sim.now, "level": watch.slo.text, "lower_bounds": bounds}
                self.sim.clock.halt()
