"""A scenario, one run of it for a seed as plain data, and replications of it across seeds in a process pool.

`run_one(Scenario, seed)` returns only picklable data (measures keyed by metric id, the plots' series,
the trace's statistics, the event count), never the live simulator, so `run_many` can fan seeds out
across cores and gather them back in seed order: the same seeds give the same bytes whatever the
number of workers.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from config import PlatformConfig

from .admission import kueue_for
from .measures import Measures, Scope, compute
from .run import Result, simulate
from .stats import summary
from .workload import Workload

STATIC = "static"


@dataclass(frozen=True)
class Scenario:
    """What to run: a stack's derived config, a workload, and the variant (the static baseline, features off)."""

    config: PlatformConfig
    workload: Workload
    source: str = "workload"
    project_dir: Path = Path(".")
    static_baseline: bool = False
    without: frozenset[str] = frozenset()

    def variant(self, **changes: Any) -> Scenario:
        fields = {name: getattr(self, name) for name in self.__dataclass_fields__}
        return Scenario(**{**fields, **changes})


def scope_of(result: Result) -> Scope:
    config = result.sim.config
    tiers = tuple(tier for tier, _ in sorted(config.queueing.priorities.items(), key=lambda item: -item[1]))
    return Scope(
        tuple(sorted(result.sim.pools)), tuple(sorted(result.sim.tenants)), tiers,
        tuple(deployment.name for deployment in result.deployments),
    )


def measure(result: Result) -> Measures:
    """The run's figures by metric id (sim/measures.py)."""
    return compute(result.sim.ledger, scope_of(result))


def outcome(result: Result) -> dict[str, Any]:
    """The plain data of one finished run."""
    return {
        "seed": result.sim.options.seed,
        "events": result.sim.clock.events,
        "measures": measure(result),
        "series": result.sim.record.as_data(),
        "trace": [asdict(stats) for stats in result.trace_stats],
    }


def run_one(scenario: Scenario, seed: int) -> dict[str, Any]:
    result = simulate(scenario.config, scenario.workload, kueue_for, source=scenario.source, seed=seed,
                      static_baseline=scenario.static_baseline, project_dir=scenario.project_dir, without=scenario.without)
    return outcome(result)


def _run(job: tuple[Scenario, int]) -> dict[str, Any]:
    return run_one(*job)


def run_many(scenario: Scenario, seeds: Sequence[int], workers: int | None = None) -> list[dict[str, Any]]:
    """One run per seed, in seed order; across processes when there is more than one seed and core."""
    workers = min(len(seeds), workers or os.cpu_count() or 1)
    if workers <= 1:
        return [run_one(scenario, seed) for seed in seeds]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(_run, [(scenario, seed) for seed in seeds]))


def replicate(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Each figure over the runs: {"mean", "low", "high", "n"} (a 95 % Student-t interval when n >= 2).
    A row (a tier, a tenant) or figure missing from a run counts as absent there, not as zero."""
    levels = runs[0]["measures"].keys()
    combined: dict[str, Any] = {}
    for level in levels:
        if level == "run":
            metrics = _union(r["measures"]["run"] for r in runs)
            combined[level] = {m: summary([r["measures"]["run"].get(m) for r in runs]) for m in metrics}
            continue
        names = _union(r["measures"][level] for r in runs)
        combined[level] = {}
        for name in names:
            rows = [r["measures"][level].get(name, {}) for r in runs]
            combined[level][name] = {m: summary([row.get(m) for row in rows]) for m in _union(rows)}
    return combined


def _union(mappings: Iterable[Mapping[str, Any]]) -> list[str]:
    """Keys in first-seen order."""
    seen: dict[str, None] = {}
    for mapping in mappings:
        seen.update(dict.fromkeys(mapping))
    return list(seen)
