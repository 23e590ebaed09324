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
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from config import PlatformConfig

from .admission import kueue_for
from .early_stop import Watch
from .measures import Measures, Scope, compute
from .run import Result, simulate
from .stats import summary
from .variants import ABLATIONS, MECHANISMS, SIMULATED, STATIC, VARIANTS, ablation, assumptions
from .workload import Workload

__all__ = ["ABLATIONS", "MECHANISMS", "SIMULATED", "STATIC", "VARIANTS", "Scenario", "ablation", "replicate", "run_many",
           "run_one"]


@dataclass(frozen=True)
class Scenario:
    """What to run: a stack's derived config, a workload, and the variant (sim/variants.py).

    Variants are data: `scenario.variant("static")` is the fair static baseline, `scenario.variant("without-spot")`
    (or `scenario.variant(ablation("spot"))`) the same scenario with spot switched off; `VARIANTS` lists every
    name, `ABLATIONS` the one-mechanism-off ones. A variant keeps the scenario's own `without` and adds its
    own, so an ablation of a what-if is that what-if with one more mechanism off. Run it on the same seeds
    (`run_many(scenario.variant(name), seeds)`) to compare like with like.
    """

    config: PlatformConfig
    workload: Workload
    source: str = "workload"
    project_dir: Path = Path(".")
    name: str = SIMULATED
    static_baseline: bool = False
    without: frozenset[str] = frozenset()
    commitment_discount: float = 0.0  # off the static baseline's on-demand prices, stated in the report
    sharing: str | None = None  # how the trace's fractional tasks share GPUs (sim/sharing.py); None: whole, unsampled

    def variant(self, name: str) -> Scenario:
        """This scenario as the variant `name` of VARIANTS."""
        try:
            row = VARIANTS[name]
        except KeyError:
            raise ValueError(f"no variant {name!r}: one of {', '.join(VARIANTS)}") from None
        return replace(self, name=name, static_baseline=row.static_baseline, without=self.without | row.without)

    def replace(self, **changes: Any) -> Scenario:
        """This scenario with some fields changed (a workload, a commitment discount)."""
        return replace(self, **changes)

    @property
    def assumptions(self) -> list[str]:
        """What this variant assumes, as the report states it."""
        return assumptions(self.without, self.static_baseline)


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
        "fixed_capacity": [asdict(fixed) for fixed in result.sim.fixed],
        "stopped": result.stopped,
    }


def run_one(scenario: Scenario, seed: int, watch: Sequence[Watch] = ()) -> dict[str, Any]:
    """One run as plain data; `watch`: levels that stop it once certainly missed (sim/early_stop.py), its
    outcome's "stopped" then says when and on which."""
    result = simulate(scenario.config, scenario.workload, kueue_for, source=scenario.source, seed=seed,
                      static_baseline=scenario.static_baseline, project_dir=scenario.project_dir, without=scenario.without,
                      commitment_discount=scenario.commitment_discount, sharing=scenario.sharing, watch=watch)
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
            combined[level] = {m: summary([r["measures"]["run"].get(m) for r in runs], floor=0.0) for m in metrics}
            continue
        names = _union(r["measures"][level] for r in runs)
        combined[level] = {}
        for name in names:
            rows = [r["measures"][level].get(name, {}) for r in runs]
            combined[level][name] = {m: summary([row.get(m) for row in rows], floor=0.0) for m in _union(rows)}
    return combined


def _union(mappings: Iterable[Mapping[str, Any]]) -> list[str]:
    """Keys in first-seen order."""
    seen: dict[str, None] = {}
    for mapping in mappings:
        seen.update(dict.fromkeys(mapping))
    return list(seen)


def paired_deltas(runs: Sequence[dict[str, Any]], base: Sequence[dict[str, Any]], metrics: Sequence[str]) -> dict[str, Any]:
    """Each run-level figure of `runs` less `base`'s on the same seed, over the seeds: {"mean", "low", "high", "n"}.

    Both ran on the same seeds and every purpose draws from its own stream, so the seed-by-seed difference
    is the mechanism's; its interval is narrower than the two figures' intervals would suggest."""
    by_seed = {r["seed"]: r["measures"]["run"] for r in base}
    found = {}
    for metric in metrics:
        differences = []
        for r in runs:
            mine, theirs = r["measures"]["run"].get(metric), by_seed.get(r["seed"], {}).get(metric)
            differences.append(None if mine is None or theirs is None else mine - theirs)
        found[metric] = summary(differences)
    return found
