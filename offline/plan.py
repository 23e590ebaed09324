"""`python -m offline plan`: the cheapest stack that meets a workload's service levels, found by simulation.

The knobs are the stack's own (docs/capacity-planning.md): on every flavor a workload item uses, each tenant's
`nominal` quota (where it has one) and `borrowingLimit`, and each such pool's warm headroom
(`warmStart.headroom.gpus`, whole-GPU and time-sliced pools). A pool's `gpus` follows its quotas: the least
that holds the nominal quota promised on it and passes the stack's rules, because Kueue admits nobody to
capacity beyond the nominal quotas (config/schedulability.py) and a larger limit changes nothing a workload
sees. Every candidate is the stack file with those values changed, validated by the rules `make check` runs;
one the rules refuse is recorded with the rule's message and never simulated.

The search is optuna's TPE sampler with constraints (one per service level: how far its mean over the seeds
is past its bound) minimising the mean simulated cost (sim/measures.py `cost_usd`). Candidates are asked in
batches of `--batch`, each run on the same `--seeds` seeds (common random numbers: two candidates differ by
their knobs, not their draws) across a process pool, and told back in trial order; the sampler is re-seeded
from `--seed` and the batch's index, so the result depends on neither the number of workers nor an
interruption: `--resume` reads the trials from the journal (`journal.log` in the out dir) and carries on.

The chosen stack is the cheapest candidate that meets every level; it is then simulated again on fresh seeds
(`--verify-seeds`, from 10,000 + `--seed`), and the next cheapest is tried when it misses one there. Why each
value is where it is: each knob of the chosen stack lowered by at least 10 % (one step at least), simulated on
the fresh seeds; a level it then misses is the level that binds that knob.

Writes, in `--out` (default build/plan-<stack>-<workload>): plan.md and plan.json (levels, chosen values, the
verification, why each value, the frontier), Pulumi.<stack>.yaml (the stack file with the chosen values,
comments and order kept), stack.diff (against the stack file), frontier.png, journal.log.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import io
import json
import math
import os
import sys
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from config import ConfigError, PlatformConfig
from models.kueue.cohort import lendable
from sim import measures as m
from sim import plan_slo
from sim.early_stop import Watch, watches
from sim.experiment import Scenario, replicate, run_one
from sim.plan_slo import Names, Slo, SloError
from sim.report import LIMITS
from sim.stats import summary
from sim.workload import Workload, WorkloadError, read_workload
from sim.workload_check import check, check_runnable

from .project import PROJECT, PROJECT_DIR
from .stack import StrictLoader, load_config, stack_config_from_mapping
from .versions_check import chart_override_problems

EXIT_UNMET = 1
EXIT_INVALID = 2
STUDY = "plan"
JOURNAL = "journal.log"
VERIFY_SEED_OFFSET = 10_000
# A knob's search range: from 0 (or `--floor` times its value in the stack) up to twice its value (`--range`), and at
# least this many GPUs' worth.
RANGE_FACTOR = 2
RANGE_FLOOR_GPUS = 4
# A knob's range holds at most about this many values; wider ranges step by more than one unit.
VALUES_PER_KNOB = 24
# Lower by at least this share to show which level binds a value, and to end the tightening.
CHEAPER = 0.10
# The tightening's step doubles after a round whose lowerings all met every level together, up to this share, and
# halves back to CHEAPER after a round that found nothing cheaper.
WIDEST = 0.40
# How many candidates the verification on fresh seeds tries, cheapest first.
VERIFY_CANDIDATES = 3
# Pools searched for a `gpus` that holds their promised quota: this many above the least.
GPUS_TRIES = 8
INVALID_COST = 1e12
# The study's attribute that holds the tightening's progress, written at once: rounds done, the round in progress's
# incumbent (None between rounds) and share.
TIGHTENING = "tightening"

TENANTS_KEY = f"{PROJECT}:tenants"
POOLS_KEY = f"{PROJECT}:nodePools"
NOMINAL = "nominal"
BORROWING = "borrowingLimit"
HEADROOM = "headroom"


class PlanError(Exception):
    """Bad input to the plan: one line, exit 2."""


@dataclass(frozen=True)
class Knob:
    """One value of the stack the search moves, where it lives in the stack file, and its range."""

    name: str  # `tenants[inference].gpu.l40s-on-demand.nominal`, `nodePools[gpu-l40s].warmStart.headroom.gpus`
    kind: str  # NOMINAL, BORROWING or HEADROOM
    owner: str  # the tenant or pool
    flavor: str | None
    pool: str
    current: int
    low: int
    high: int
    step: int
    unit: str

    def lowered(self, value: int, share: float = 0.10) -> int | None:
        """The value at least `share` (CHEAPER) below `value` on the knob's grid, or None at the floor."""
        target = value - max(self.step, math.ceil(share * value - 1e-9))
        target = self.low + ((target - self.low) // self.step) * self.step if target >= self.low else self.low
        return target if target < value else None


@dataclass
class Candidate:
    """A stack's values: the knobs' and the pools' `gpus` they lead to, and the validated config or the rule that
    refuses it."""

    values: dict[str, int]
    pool_gpus: dict[str, int]
    document: dict[str, Any] | None = None
    config: PlatformConfig | None = None
    problem: str | None = None


@dataclass(frozen=True)
class Options:
    trials: int = 40
    seeds: int = 3
    verify_seeds: int = 5
    seed: int = 0
    batch: int = 4
    workers: int | None = None
    resume: bool = False
    tighten: int = 24
    range_factor: int = RANGE_FACTOR
    floor_factor: float = 0.0
    early_stop: bool = True


@dataclass
class Evaluation:
    """A candidate's figures over seeds: cost and each level, as {"mean", "low", "high", "n"}."""

    cost: dict[str, Any]
    levels: list[dict[str, Any]]
    violations: list[float]
    problem: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # Seeds stopped once a level was certainly missed (sim/early_stop.py): the level and when, in hours; the cost
    # and the watched levels are then lower bounds ("at_least"), the other levels unknown.
    stopped: dict[str, Any] | None = None

    @property
    def feasible(self) -> bool:
        return self.problem is None and self.stopped is None and all(v <= 0 for v in self.violations)


# --- the stack file ---------------------------------------------------------------------------------------------


def read_document(path: Path) -> dict[str, Any]:
    """The stack file's `config:` mapping as plain data, read as `make check` reads it."""
    document = yaml.load(path.read_text(), Loader=StrictLoader)
    config = document.get("config") if isinstance(document, dict) else None
    if not isinstance(config, dict):
        raise PlanError(f"{path.name}: no `config:` mapping; run `make check` first")
    return config


def _key(config: Mapping[str, Any], key: str) -> str:
    """The section's key as the file writes it: `gpu-platform:tenants` or bare `tenants`."""
    bare = key.split(":", 1)[1]
    return key if key in config or bare not in config else bare


def _named(items: Sequence[Any], name: str) -> Any:
    return next(item for item in items if item.get("name") == name)


def validate(document: Mapping[str, Any], stack: str) -> tuple[PlatformConfig | None, str | None]:
    """The config, or the first problem `make check` would print for this document."""
    try:
        config = load_config(stack_config_from_mapping(stack, dict(document)))
    except ConfigError as err:
        return None, err.problems[0] if err.problems else "invalid"
    refused = chart_override_problems(config.versions.charts, config.charts)
    if refused:
        return None, refused[0]
    return config, None


# --- knobs ------------------------------------------------------------------------------------------------------


def used_flavors(config: PlatformConfig, workload: Workload) -> set[str]:
    """Every flavor a workload item may run on: its own list, or every flavor of its tenant when it names none."""
    own = {plan.name: [q.flavor.name for q in plan.quotas] for plan in config.tenants}
    deployments = {(plan.name, d.name): d.flavor for plan in config.tenants for d in plan.config.inference}
    found: set[str] = set()
    for job in workload.jobs:
        found.update(job.flavors or own.get(job.tenant, []))
    for load in workload.inference:
        flavor = load.spec.flavor if load.spec is not None else deployments.get((load.tenant, load.deployment))
        if flavor is not None:
            found.add(flavor)
    for trace in workload.traces:
        for row in trace.classes.values():
            for tenant in row.tenants:
                found.update(row.flavors or own.get(tenant, []))
    return found


def knobs_for(config: PlatformConfig, workload: Workload, factor: int = RANGE_FACTOR, floor_factor: float = 0.0) -> list[Knob]:
    """The knobs of every flavor the workload uses, in the stack's tenant order, then its pools' headroom."""
    used = used_flavors(config, workload)
    knobs: list[Knob] = []
    pools: dict[str, Any] = {}
    for plan in config.tenants:
        for quota in plan.quotas:
            flavor = quota.flavor
            if flavor.name not in used:
                continue
            pools[flavor.pool.name] = flavor.pool
            base = f"tenants[{plan.name}].gpu.{flavor.name}"
            floor = RANGE_FLOOR_GPUS * flavor.slices_per_gpu
            if quota.quota.nominal:
                low = quota.quota.lending_limit or 0
                knobs.append(_knob(f"{base}.{NOMINAL}", NOMINAL, plan.name, flavor.name, flavor.pool.name,
                                   quota.quota.nominal, max(low, math.floor(floor_factor * quota.quota.nominal)), floor,
                                   1, flavor.unit, factor))
            knobs.append(_knob(f"{base}.{BORROWING}", BORROWING, plan.name, flavor.name, flavor.pool.name,
                               quota.quota.borrowing_limit, math.floor(floor_factor * quota.quota.borrowing_limit), floor,
                               1, flavor.unit, factor))
    for name, pool in pools.items():
        if pool.config.allocation == "dra" or pool.config.sharing.mode == "mig":
            continue
        headroom = pool.config.warm_start.headroom
        least = headroom.gpus_per_pod * math.floor(floor_factor * headroom.gpus / headroom.gpus_per_pod)
        knobs.append(_knob(f"nodePools[{name}].warmStart.headroom.gpus", HEADROOM, name, None, name, headroom.gpus, least,
                           RANGE_FLOOR_GPUS * headroom.gpus_per_pod, headroom.gpus_per_pod, "GPUs", factor))
    return knobs


def _knob(name: str, kind: str, owner: str, flavor: str | None, pool: str, current: int, low: int, floor: int,
          unit_step: int, unit: str, factor: int) -> Knob:
    high = max(factor * current, floor, low + unit_step)
    step = unit_step * max(1, math.ceil((high - low) / unit_step / VALUES_PER_KNOB))
    # The stack's own value stays on the grid: the grid starts where the current value's steps reach below.
    start = low + (current - low) % step if current >= low else low
    high = start + ((high - start) // step) * step
    return Knob(name, kind, owner, flavor, pool, current, start, max(high, current), step, unit)


def candidate(base: Mapping[str, Any], knobs: Sequence[Knob], values: Mapping[str, int], config: PlatformConfig,
              stack: str) -> Candidate:
    """The stack with these knob values and each searched pool's least valid `gpus`, validated."""
    document = copy.deepcopy(dict(base))
    tenants = document[_key(document, TENANTS_KEY)]
    pools = document.get(_key(document, POOLS_KEY)) or []
    for knob in knobs:
        value = values[knob.name]
        if knob.kind == HEADROOM:
            entry = _named(pools, knob.owner)
            if value or (entry.get("warmStart") or {}).get("headroom") is not None:
                entry.setdefault("warmStart", {}).setdefault("headroom", {})["gpus"] = value
        else:
            quota = _named(tenants, knob.owner)["gpu"][knob.flavor]
            if value or knob.kind in quota:
                quota[knob.kind] = value
    _clamp_borrowing(tenants, knobs, values)
    slices = {flavor.name: flavor.slices_per_gpu for flavor in config.flavors}
    pool_of = {flavor.name: flavor.pool.name for flavor in config.flavors}
    searched = sorted({knob.pool for knob in knobs if knob.kind != HEADROOM})
    promised = dict.fromkeys(searched, 0.0)
    for tenant in tenants:
        for flavor, quota in (tenant.get("gpu") or {}).items():
            if pool_of.get(flavor) in promised:
                promised[pool_of[flavor]] += quota.get(NOMINAL, 0) / slices[flavor]
    least = {name: max(1, math.ceil(promised[name] - 1e-9)) for name in searched}
    effective = {k.name: int(_named(tenants, k.owner)["gpu"][k.flavor].get(k.kind, 0)) if k.kind != HEADROOM
                 else values[k.name] for k in knobs}
    found = Candidate(effective, dict(least))
    for extra in range(GPUS_TRIES + 1):
        for name in searched:
            _named(pools, name)["gpus"] = least[name] + extra
        valid, problem = validate(document, stack)
        if valid is not None:
            found.pool_gpus = {name: least[name] + extra for name in searched}
            found.document, found.config, found.problem = document, valid, None
            return found
        if extra == 0:
            found.problem = problem
    return found


def _clamp_borrowing(tenants: Sequence[dict[str, Any]], knobs: Sequence[Knob], values: Mapping[str, int]) -> None:
    """A searched borrowingLimit above what the rest of the cohort can lend on its flavor is that much: the value
    config/fair_share.py's rule tells the user to set, so a sample there is the stack the rule allows."""
    lendable_on: dict[str, int] = {}
    for tenant in tenants:
        for flavor, quota in (tenant.get("gpu") or {}).items():
            lendable_on[flavor] = lendable_on.get(flavor, 0) + lendable(quota.get(NOMINAL, 0), quota.get("lendingLimit"))
    for knob in knobs:
        if knob.kind != BORROWING or knob.flavor is None:
            continue
        quota = _named(tenants, knob.owner)["gpu"][knob.flavor]
        available = lendable_on[knob.flavor] - lendable(quota.get(NOMINAL, 0), quota.get("lendingLimit"))
        if quota.get(BORROWING, 0) > available:
            quota[BORROWING] = max(0, available)


# --- evaluation -------------------------------------------------------------------------------------------------


def _run(job: tuple[Scenario, int, tuple[Watch, ...]]) -> dict[str, Any]:
    started = time.process_time()
    outcome = run_one(*job)
    return {"seed": outcome["seed"], "measures": outcome["measures"], "events": outcome["events"],
            "stopped": outcome["stopped"], "cpu": time.process_time() - started}


def evaluate(candidates: Sequence[Candidate], scenario: Scenario, seeds: Sequence[int], slos: Sequence[Slo],
             names: Names, pool: Executor | None, early_stop: bool = True) -> list[Evaluation]:
    """Each candidate on every seed (one job each, across the pool), gathered back in order.

    With `early_stop`, a run stops once a work level is certainly missed over these seeds (sim/early_stop.py),
    in two rounds: every candidate's first seed, watched past K times each bound (K seeds, the others unknown,
    each at least 0); then the other seeds of the candidates it did not decide, each watched past K times the
    bound less the first seed's figure. A candidate its first seed decides runs no other seed."""
    watch = watches(slos, names, len(seeds), bool(scenario.workload.inference)) if early_stop else ()
    live = [c for c in candidates if c.config is not None]
    if not watch:
        jobs = [(scenario.replace(config=c.config), seed, watch) for c in live for seed in seeds]
        runs = _map(pool, jobs)
        mine = {id(c): runs[i * len(seeds): (i + 1) * len(seeds)] for i, c in enumerate(live)}
    else:
        first = _map(pool, [(scenario.replace(config=c.config), seeds[0], watch) for c in live])
        later = [(c, tuple(replace(w, beyond=w.beyond - (_figure(w.slo, run, names) or 0.0)) for w in watch))
                 for c, run in zip(live, first, strict=True) if run["stopped"] is None and len(seeds) > 1]
        rest = _map(pool, [(scenario.replace(config=c.config), seed, lowered) for c, lowered in later
                           for seed in seeds[1:]])
        mine = {id(c): [run] for c, run in zip(live, first, strict=True)}
        for i, (c, _) in enumerate(later):
            mine[id(c)] += rest[i * (len(seeds) - 1): (i + 1) * (len(seeds) - 1)]
    found = []
    for c in candidates:
        if c.config is None:
            found.append(Evaluation(summary([]), [summary([]) for _ in slos], [1.0] * len(slos), c.problem))
            continue
        runs = mine[id(c)]
        extra = {"events": sum(r["events"] for r in runs), "cpu": sum(r["cpu"] for r in runs)}
        if any(r["stopped"] for r in runs):
            found.append(_stopped(runs, len(seeds), slos, names, {w.slo.text for w in watch}, extra))
            continue
        combined = replicate(runs)
        levels = [plan_slo.figure(slo, combined, names) for slo in slos]
        violations = [plan_slo.violation(s, v) for s, v in zip(slos, levels, strict=True)]
        found.append(Evaluation(combined["run"][m.COST], levels, violations, extra=extra))
    return found


def _map(pool: Executor | None, jobs: list[tuple[Scenario, int, tuple[Watch, ...]]]) -> list[dict[str, Any]]:
    return list(pool.map(_run, jobs)) if pool is not None else [_run(job) for job in jobs]


def _figure(slo: Slo, run: dict[str, Any], names: Names) -> float | None:
    """One run's figure for the level (a stopped run's: its lower bound)."""
    if run["stopped"] is not None:
        return run["stopped"]["lower_bounds"].get(slo.text)
    value: float | None = plan_slo.figure(slo, replicate([run]), names)["mean"]
    return value


def _stopped(runs: Sequence[dict[str, Any]], seeds: int, slos: Sequence[Slo], names: Names, watched: set[str],
             extra: dict[str, Any]) -> Evaluation:
    """A candidate some of whose runs stopped early. Each watched level's lower bound of its mean over the `seeds`
    seeds: the finished runs' figures and the stopped runs' lower bounds, over `seeds` (a seed not run counts 0); the
    level that stopped a run is past its bound by it. The cost is what the runs spent over `seeds`, a lower bound too.
    Levels not watched are unknown: they tell the sampler nothing (violation 0)."""
    stops = [r["stopped"] for r in runs if r["stopped"]]
    levels: list[dict[str, Any]] = []
    violations: list[float] = []
    for slo in slos:
        if slo.text not in watched:
            levels.append({"mean": None, "low": None, "high": None, "n": 0, "unknown": True})
            violations.append(0.0)
            continue
        known = [v for r in runs if (v := _figure(slo, r, names)) is not None]
        level = {"mean": sum(known) / seeds if known else None, "low": None, "high": None, "n": len(runs),
                 "at_least": True}
        levels.append(level)
        violations.append(plan_slo.violation(slo, level))
    costs = [r["measures"]["run"][m.COST] for r in runs]
    cost = {"mean": sum(costs) / seeds, "low": None, "high": None, "n": len(runs), "at_least": True}
    stopped = {"level": stops[0]["level"], "seeds": len(stops), "runs": len(runs),
               "at_hours": [s["at"] / 3600 for s in stops]}
    return Evaluation(cost, levels, violations, extra=extra, stopped=stopped)


# --- the search -------------------------------------------------------------------------------------------------


def fingerprint(stack_text: str, workload_text: str, slos: Sequence[Slo], knobs: Sequence[Knob], options: Options) -> str:
    """What a journal's trials depend on: a resumed plan must match it."""
    data = json.dumps({"stack": stack_text, "workload": workload_text, "slos": [s.text for s in slos],
                       "knobs": [asdict(k) for k in knobs], "seeds": options.seeds, "seed": options.seed,
                       "batch": options.batch, "early_stop": options.early_stop}, sort_keys=True)
    return hashlib.sha256(data.encode()).hexdigest()


def _sampler(options: Options, batch: int, startup: int) -> Any:
    """TPE seeded from the plan's seed and the batch's index: the same batches whatever ran before in this process.
    It reads each trial's constraints (Trial.set_constraint: one per level, feasible at 0 or less)."""
    import optuna

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return optuna.samplers.TPESampler(seed=options.seed * 1_000_003 + batch, n_startup_trials=startup,
                                          multivariate=True)


def search(study: Any, knobs: Sequence[Knob], make: Callable[[dict[str, int]], Candidate],
           run: Callable[[list[Candidate]], list[Evaluation]], options: Options, slos: Sequence[Slo],
           say: Callable[[str], None]) -> None:
    """Ask, simulate and tell batches until the study holds `options.trials` finished trials."""
    from optuna.trial import TrialState

    startup = max(2, min(10, options.trials // 3))
    clock = _Clock(study)
    while True:
        asked = _pending(study, knobs)
        if not asked:
            trials = study.get_trials(deepcopy=False)
            complete = sum(1 for t in trials if t.state == TrialState.COMPLETE)
            if complete >= options.trials:
                return
            study.sampler = _sampler(options, complete // options.batch, startup)
            for _ in range(min(options.batch, options.trials - complete)):
                trial = study.ask()
                asked.append((trial.number, {k.name: trial.suggest_int(k.name, k.low, k.high, step=k.step)
                                             for k in knobs}))
        _run_batch(study, asked, make, run, slos, say, f"/{options.trials}")
        clock.report(study, options.trials, say)


def tighten(study: Any, knobs: Sequence[Knob], make: Callable[[dict[str, int]], Candidate],
            run: Callable[[list[Candidate]], list[Evaluation]], options: Options, slos: Sequence[Slo],
            say: Callable[[str], None]) -> None:
    """A pattern search down from the cheapest candidate that meets every level. Each round: each knob lowered by
    the round's share (one batch, the same seeds), then every lowering that still met every level at once; the
    cheapest of these that meets every level (ties: the smaller stack) is the next one. The share starts at
    CHEAPER, doubles (up to WIDEST) after a round whose lowerings together were the cheapest, and halves after a
    round that found nothing cheaper to the cent (a smaller stack of the same cost is taken all the same); the
    search ends when a round at CHEAPER finds no stack to take, or after `options.tighten` rounds.
    Every step is a trial of the study, enqueued with its values, so the frontier and a resumed plan hold it too;
    a stack the study already holds is not run again. The round in progress, its share and the rounds done are the
    study's own attributes, so an interrupted plan resumes the round it was in."""
    while True:
        progress = study.user_attrs.get(TIGHTENING, {"done": 0, "trial": None, "share": CHEAPER, "ended": False})
        done, number, share = progress["done"], progress["trial"], progress["share"]
        pending = _pending(study, knobs)
        if pending:  # asked before an interruption: simulated now, as the uninterrupted plan did
            _run_batch(study, pending, make, run, slos, say, "")
        if number is None:
            best = best_trials(study)
            if progress["ended"] or done >= options.tighten or not best:
                return
            number = best[0].number
            study.set_user_attr(TIGHTENING, {"done": done, "trial": number, "share": share, "ended": False})
        incumbent = study.get_trials(deepcopy=False)[number]
        start = {k.name: int(incumbent.params[k.name]) for k in knobs}
        singles = [(knob.name, lower) for knob in knobs
                   if (lower := knob.lowered(incumbent.user_attrs["values"][knob.name], share)) is not None]
        fresh = _new(study, make, [{**start, name: lower} for name, lower in singles])
        if fresh:
            say(f"tighten: trial {number + 1} with each of {len(fresh)} knobs lowered by {share * 100:.0f} % or more")
            _enqueue_and_run(study, knobs, fresh, make, run, slos, say)
        held = _held(study)
        kept = {name: lower for name, lower in singles
                if _meets(held.get(_values_key(make({**start, name: lower}).values)))}
        together = _values_key(make({**start, **kept}).values)
        if len(kept) > 1 and _new(study, make, [{**start, **kept}]):
            say(f"tighten: trial {number + 1} with the {len(kept)} lowerings that met every level, together")
            _enqueue_and_run(study, knobs, [{**start, **kept}], make, run, slos, say)
        best = best_trials(study)[0]
        cheaper = round(best.value, 2) < round(incumbent.value, 2)
        finished = best.number == number and share <= CHEAPER
        if not cheaper:
            share = max(CHEAPER, share / 2)
        elif len(kept) > 1 and _values_key(best.user_attrs["values"]) == together:
            share = min(WIDEST, share * 2)
        study.set_user_attr(TIGHTENING, {"done": done + 1, "trial": None, "share": share, "ended": finished})
        if finished:
            return


def _held(study: Any) -> dict[str, Any]:
    """The study's finished trials by their stack's values (the first of equal ones)."""
    from optuna.trial import TrialState

    held: dict[str, Any] = {}
    for t in study.get_trials(deepcopy=False):
        if t.state == TrialState.COMPLETE and "values" in t.user_attrs:
            held.setdefault(_values_key(t.user_attrs["values"]), t)
    return held


def _new(study: Any, make: Callable[[dict[str, int]], Candidate], params: list[dict[str, int]]) -> list[dict[str, int]]:
    """The params whose stacks the study does not hold yet, each once (called with nothing pending)."""
    seen = set(_held(study))
    fresh = []
    for p in params:
        key = _values_key(make(p).values)
        if key not in seen:
            seen.add(key)
            fresh.append(p)
    return fresh


def _enqueue_and_run(study: Any, knobs: Sequence[Knob], params: list[dict[str, int]],
                     make: Callable[[dict[str, int]], Candidate], run: Callable[[list[Candidate]], list[Evaluation]],
                     slos: Sequence[Slo], say: Callable[[str], None]) -> None:
    for p in params:
        study.enqueue_trial(p)
    _run_batch(study, _pending(study, knobs), make, run, slos, say, "")


def _meets(trial: Any) -> bool:
    return (trial is not None and trial.user_attrs.get("problem") is None and trial.user_attrs.get("stopped") is None
            and all(v <= 0 for v in trial.user_attrs["violations"]))


def _values_key(values: Mapping[str, int]) -> str:
    return json.dumps(values, sort_keys=True)


def _pending(study: Any, knobs: Sequence[Knob]) -> list[tuple[int, dict[str, int]]]:
    """Trials asked before an interruption (simulated now, as the uninterrupted plan would have) and trials
    enqueued and not yet asked (asked now), in trial order."""
    from optuna.trial import TrialState

    asked = [(t.number, {k.name: int(t.params[k.name]) for k in knobs})
             for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))]
    for _ in study.get_trials(deepcopy=False, states=(TrialState.WAITING,)):
        trial = study.ask()
        asked.append((trial.number, {k.name: trial.suggest_int(k.name, k.low, k.high, step=k.step) for k in knobs}))
    return sorted(asked)


def _run_batch(study: Any, asked: list[tuple[int, dict[str, int]]], make: Callable[[dict[str, int]], Candidate],
               run: Callable[[list[Candidate]], list[Evaluation]], slos: Sequence[Slo], say: Callable[[str], None],
               of: str) -> None:
    candidates = [make(values) for _, values in asked]
    results = run(candidates)
    for (number, _), c, result in zip(asked, candidates, results, strict=True):
        _record(study, number, c, result)
        cpu = f" ({result.extra['cpu']:.1f} CPU s)" if result.extra else ""
        say(f"trial {number + 1}{of}: {_verdict(result, slos)}{cpu}")


class _Clock:
    """Progress: trials done, time spent, the cheapest so far, and the time left at the rate so far."""

    def __init__(self, study: Any) -> None:
        self.started = time.perf_counter()
        self.before = len(study.get_trials(deepcopy=False))

    def report(self, study: Any, total: int, say: Callable[[str], None]) -> None:
        from optuna.trial import TrialState

        complete = sum(1 for t in study.get_trials(deepcopy=False) if t.state == TrialState.COMPLETE)
        spent = time.perf_counter() - self.started
        rate = spent / max(1, complete - self.before)
        best = best_trials(study)
        left = max(0, total - complete)
        say(f"  {complete}/{total} trials, {spent:.0f} s; "
            + (f"cheapest meeting every level: trial {best[0].number + 1}, ${best[0].value:,.2f}" if best
               else "none yet meets every level") + (f"; about {left * rate:.0f} s to go" if left else ""))


def _record(study: Any, number: int, c: Candidate, result: Evaluation) -> None:
    """The trial's figures as user attributes (the constraints read them as it is told), then its cost. By number
    through the storage: a trial asked before an interruption has no Trial object in this process."""
    import optuna

    trial = optuna.trial.Trial(study, study._storage.get_trial_id_from_study_id_trial_number(study._study_id, number))
    attrs = {"violations": result.violations, "cost": result.cost, "levels": result.levels, "problem": result.problem,
             "pool_gpus": c.pool_gpus, "values": c.values, "stopped": result.stopped}
    for key, value in attrs.items():
        trial.set_user_attr(key, value)
    for index, violation in enumerate(result.violations):
        trial.set_constraint(f"level{index:02d}", violation)
    study.tell(number, result.cost["mean"] if result.problem is None else INVALID_COST)


def _verdict(result: Evaluation, slos: Sequence[Slo]) -> str:
    if result.problem is not None:
        return f"refused by the stack's rules: {result.problem}"
    missed = [f"{s.text} at {_at_least(v)}{plan_slo.show(v['mean'], s.kind.unit)}" for s, v, x in
              zip(slos, result.levels, result.violations, strict=True) if x > 0]
    cost = f"{_at_least(result.cost)}${result.cost['mean']:,.2f}"
    if result.stopped is not None:
        hours = ", ".join(f"{h:.0f}" for h in result.stopped["at_hours"])
        return (f"{cost}; misses {', '.join(missed)} (certain at hour {hours}: stopped there, "
                f"{result.stopped['runs']} seed{'s' if result.stopped['runs'] > 1 else ''} run)")
    return f"{cost}; meets every level" if not missed else f"{cost}; misses {', '.join(missed)}"


def _at_least(value: Mapping[str, Any]) -> str:
    """`≥ ` before a lower bound's figure (a stopped run's), nothing before a measured one."""
    return "≥ " if value.get("at_least") else ""


def best_trials(study: Any) -> list[Any]:
    """Finished trials that meet every level, cheapest first; ties (the same simulated cost to the cent) go to
    the smaller stack (fewer GPUs on its pools), then the earlier trial."""
    from optuna.trial import TrialState

    feasible = [t for t in study.get_trials(deepcopy=False) if t.state == TrialState.COMPLETE and _meets(t)]
    return sorted(feasible, key=lambda t: (round(t.value, 2), sum(t.user_attrs["pool_gpus"].values()),
                                           sum(t.user_attrs["values"].values()), t.number))


def open_study(out_dir: Path, mark: str, resume: bool, say: Callable[[str], None]) -> Any:
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    journal = out_dir / JOURNAL
    if journal.exists() and not resume:
        say(f"{journal}: a previous plan's journal; starting afresh (--resume carries it on)")
        journal.unlink()
    storage = JournalStorage(JournalFileBackend(str(journal)))
    if resume and journal.exists():
        try:
            study = optuna.load_study(study_name=STUDY, storage=storage)
        except KeyError:
            raise PlanError(f"{journal}: holds no plan to resume; run without --resume") from None
        if study.user_attrs.get("fingerprint") != mark:
            raise PlanError(f"{journal}: a plan of another stack, workload, service levels, seeds or batch; run without "
                            "--resume to start afresh, or give another --out")
        return study
    study = optuna.create_study(study_name=STUDY, storage=storage, direction="minimize")
    study.set_user_attr("fingerprint", mark)
    return study


# --- the plan ---------------------------------------------------------------------------------------------------


def plan(stack: str, workload_path: Path, slo_texts: Sequence[str], out_dir: Path | None, options: Options,
         project_dir: Path = PROJECT_DIR, say: Callable[[str], None] = print) -> int:
    started = time.perf_counter()
    stack_path = project_dir / f"Pulumi.{stack}.yaml"
    if not stack_path.is_file():
        raise PlanError(f"no stack {stack!r}: {stack_path.name} does not exist")
    base = read_document(stack_path)
    config, problem = validate(base, stack)
    if config is None:
        raise PlanError(f"{stack_path.name}: invalid stack config: {problem}; `make check STACK={stack}` lists every problem")
    try:
        read = read_workload(workload_path)
        check(config, read.workload, locator=read.locator, project_dir=project_dir)
        check_runnable(config, read.workload, locator=read.locator)
    except WorkloadError as err:
        first = err.problems[0]
        raise PlanError(first if first.startswith(str(workload_path)) else f"{workload_path}: {first}") from None
    workload = read.workload
    names = Names(tuple(config.queueing.priorities), tuple(t.name for t in config.tenants),
                  tuple(f"{load.tenant}/{load.deployment}" for load in workload.inference))
    slos = plan_slo.parse_all(slo_texts, names)
    if not slos:
        raise PlanError(f"give at least one --slo, {plan_slo.EXAMPLE}")
    knobs = knobs_for(config, workload, options.range_factor, options.floor_factor)
    if not knobs:
        raise PlanError(f"{workload_path}: uses no flavor of stack {stack} with quota: nothing to plan")
    out_dir = out_dir or Path("build") / f"plan-{stack}-{workload_path.stem}"
    out_dir.mkdir(parents=True, exist_ok=True)
    scenario = Scenario(config, workload, str(workload_path), project_dir)
    mark = fingerprint(stack_path.read_text(), workload_path.read_text(), slos, knobs, options)
    study = open_study(out_dir, mark, options.resume, say)
    if not study.get_trials(deepcopy=False):
        # The stack as it is, then the largest stack of the ranges: if that misses a level, nothing in range meets it.
        study.enqueue_trial({k.name: k.current for k in knobs})
        study.enqueue_trial({k.name: k.high for k in knobs})
    search_seeds = list(range(options.seed, options.seed + options.seeds))
    fresh = list(range(VERIFY_SEED_OFFSET + options.seed, VERIFY_SEED_OFFSET + options.seed + options.verify_seeds))
    say(f"plan for stack {stack} with {workload_path.name}: {len(knobs)} knobs, {options.trials} trials x "
        f"{options.seeds} seeds, batches of {options.batch}; levels: {', '.join(s.text for s in slos)}")

    def make(values: dict[str, int]) -> Candidate:
        return candidate(base, knobs, values, config, stack)

    workers = max(1, options.workers or os.cpu_count() or 1)
    executor: Executor | None = ProcessPoolExecutor(max_workers=workers) if workers > 1 else None

    def judge(candidates: list[Candidate], seeds: Sequence[int]) -> list[Evaluation]:
        return evaluate(candidates, scenario, seeds, slos, names, executor, options.early_stop)

    try:
        search(study, knobs, make, lambda cs: judge(cs, search_seeds), options, slos, say)
        tighten(study, knobs, make, lambda cs: judge(cs, search_seeds), options, slos, say)
        searched_at = time.perf_counter()
        chosen, verification, attempts = _verify(study, knobs, make, lambda cs: judge(cs, fresh), len(fresh), slos, say)
        why = (_why(chosen, verification.cost["mean"], knobs, make, lambda cs: judge(cs, fresh), slos, say)
               if chosen is not None and verification is not None else [])
    finally:
        if executor is not None:
            executor.shutdown()
    finished = time.perf_counter()
    data = _data(stack, workload_path, slos, knobs, options, search_seeds, fresh, study, chosen, verification,
                 attempts, why, config)
    written = _write(out_dir, stack, stack_path, data, chosen, slos)
    say(f"search {searched_at - started:.0f} s, verification and why {finished - searched_at:.0f} s, on {workers} "
        f"worker{'s' if workers > 1 else ''} -> {', '.join(str(p) for p in written)}")
    if chosen is None:
        say(f"no candidate met every level on fresh seeds: {data['unmet']}")
        return EXIT_UNMET
    return 0


def _verify(study: Any, knobs: Sequence[Knob], make: Callable[[dict[str, int]], Candidate],
            run: Callable[[list[Candidate]], list[Evaluation]], seeds: int, slos: Sequence[Slo],
            say: Callable[[str], None]) -> tuple[Candidate | None, Evaluation | None, list[dict[str, Any]]]:
    """The cheapest candidates that met every level, each on the fresh seeds, until one meets them there too."""
    attempts = []
    for trial in best_trials(study)[:VERIFY_CANDIDATES]:
        chosen = make({k.name: int(trial.params[k.name]) for k in knobs})
        [result] = run([chosen])
        attempts.append({"trial": trial.number + 1, "cost": result.cost, "levels": result.levels,
                         "met": result.feasible, "stopped": result.stopped})
        say(f"verify trial {trial.number + 1} on {seeds} fresh seeds: {_verdict(result, slos)}")
        if result.feasible:
            return chosen, result, attempts
    return None, None, attempts


def _why(chosen: Candidate, cost: float, knobs: Sequence[Knob], make: Callable[[dict[str, int]], Candidate],
         run: Callable[[list[Candidate]], list[Evaluation]], slos: Sequence[Slo],
         say: Callable[[str], None]) -> list[dict[str, Any]]:
    """Each knob of the chosen stack lowered by at least CHEAPER, on the fresh seeds: which level it then misses, or
    that it costs no less than the chosen stack's `cost` there (lower is not cheaper), or that it has slack."""
    rows: list[dict[str, Any]] = []
    lowered: list[Candidate] = []
    for knob in knobs:
        value = chosen.values[knob.name]
        lower = knob.lowered(value)
        row: dict[str, Any] = {"knob": knob.name, "value": value, "lowered": lower}
        rows.append(row)
        if lower is not None:
            lowered.append(make({**chosen.values, knob.name: lower}))
            row["index"] = len(lowered) - 1
    results = run(lowered)
    for row in rows:
        index = row.pop("index", None)
        if index is None:
            row["verdict"] = "at the floor of its range"
            continue
        result = results[index]
        row["cost"], row["levels"], row["problem"] = result.cost, result.levels, result.problem
        row["pool_gpus"] = lowered[index].pool_gpus
        row["stopped"] = result.stopped
        if result.problem is not None:
            row["binds"], row["verdict"] = [], f"refused by the stack's rules: {result.problem}"
        else:
            row["binds"] = [s.text for s, x in zip(slos, result.violations, strict=True) if x > 0]
            if row["binds"]:
                row["verdict"] = f"misses {', '.join(row['binds'])}" + (
                    f" (certain at hour {min(result.stopped['at_hours']):.0f}: the run stopped there)"
                    if result.stopped else "")
            elif result.cost["mean"] >= cost:
                row["verdict"] = f"meets every level and costs no less (${result.cost['mean']:,.2f}): lower is not cheaper"
            else:
                row["verdict"] = "still meets every level, for less (slack: the search did not reach lower)"
        say(f"why {row['knob']} = {row['value']}: at {row['lowered']}, {row['verdict']}")
    return rows


# --- outputs ----------------------------------------------------------------------------------------------------


def _data(stack: str, workload_path: Path, slos: Sequence[Slo], knobs: Sequence[Knob], options: Options,
          search_seeds: Sequence[int], fresh: Sequence[int], study: Any, chosen: Candidate | None,
          verification: Evaluation | None, attempts: list[dict[str, Any]], why: list[dict[str, Any]],
          config: PlatformConfig) -> dict[str, Any]:
    from optuna.trial import TrialState

    trials = []
    for t in sorted(study.get_trials(deepcopy=False), key=lambda t: t.number):
        if t.state != TrialState.COMPLETE:
            continue
        trials.append({"trial": t.number + 1, "values": t.user_attrs["values"],
                       "pool_gpus": t.user_attrs["pool_gpus"], "problem": t.user_attrs["problem"],
                       "cost": t.user_attrs["cost"], "levels": t.user_attrs["levels"],
                       "stopped": t.user_attrs.get("stopped"),
                       "meets": t.user_attrs["problem"] is None and t.user_attrs.get("stopped") is None
                       and all(v <= 0 for v in t.user_attrs["violations"])})
    measured = [t for t in trials if t["problem"] is None and t["stopped"] is None]
    for t in measured:
        t["pareto"] = not any(_dominates(o, t) for o in measured if o is not t)
    current_gpus = {pool.name: pool.config.gpus for pool in config.gpu_pools}
    return {
        "stack": stack, "workload": str(workload_path),
        "levels": [{"slo": s.text, "scope": s.scope, "metric": s.metric, "bound": s.bound, "unit": s.kind.unit,
                    "means": s.kind.means} for s in slos],
        "search": {"method": "optuna TPESampler (multivariate, constraints), seeded per batch", "trials": options.trials,
                   "seeds": list(search_seeds), "batch": options.batch, "seed": options.seed,
                   "early_stop": options.early_stop},
        "verification_seeds": list(fresh),
        "knobs": [asdict(k) for k in knobs],
        "chosen": None if chosen is None else {
            "values": chosen.values, "pool_gpus": chosen.pool_gpus,
            "current_pool_gpus": {name: current_gpus[name] for name in chosen.pool_gpus},
            "verification": {"cost": verification.cost, "levels": verification.levels} if verification else None,
        },
        "verified": attempts,
        "why": why,
        "trials": trials,
        "unmet": None if chosen is not None else _unmet(study, knobs, slos, options, attempts),
    }


def _unmet(study: Any, knobs: Sequence[Knob], slos: Sequence[Slo], options: Options,
           attempts: list[dict[str, Any]]) -> str:
    """Why no stack was chosen, and what to change: the largest stack in range misses a level (raise --range), the
    candidates that met every level on the search seeds missed on fresh ones (more seeds), or the search found none."""
    from optuna.trial import TrialState

    top = {k.name: k.high for k in knobs}
    largest = next((t for t in study.get_trials(deepcopy=False) if t.state == TrialState.COMPLETE
                    and {k.name: int(t.params[k.name]) for k in knobs} == top), None)
    if largest is not None and largest.user_attrs["problem"] is not None:
        return (f"the largest stack in range (trial {largest.number + 1}, every knob at --range {options.range_factor} "
                f"times its value) is refused by the stack's rules: {largest.user_attrs['problem']}")
    if largest is not None:
        missed = [f"{slo.text} at {_at_least(value)}{plan_slo.show(value['mean'], slo.kind.unit)}"
                  for slo, value, violation in zip(slos, largest.user_attrs["levels"], largest.user_attrs["violations"],
                                                   strict=True) if violation > 0]
        if missed:
            return (f"the largest stack in range (trial {largest.number + 1}, every knob at --range "
                    f"{options.range_factor} times its value) misses {', '.join(missed)}: raise --range, or relax "
                    f"{'that level' if len(missed) == 1 else 'those levels'}")
    if attempts:
        return ("the cheapest candidates that met every level on the search seeds missed one on fresh seeds (the "
                "verification table): raise --seeds, or give the levels a margin")
    return "no trial met every level, though the largest stack in range does: raise --trials"


def _dominates(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """`a` costs no more and does no worse on every level, and better on one (means)."""
    pairs = [(a["cost"]["mean"], b["cost"]["mean"])]
    pairs += [(x["mean"], y["mean"]) for x, y in zip(a["levels"], b["levels"], strict=True)]
    if any(x is None or y is None for x, y in pairs):
        return False
    return all(x <= y for x, y in pairs) and any(x < y for x, y in pairs)


def planned_text(stack_path: Path, chosen: Candidate, knobs: Sequence[Knob]) -> str:
    """The stack file with the chosen values: comments, key order and flow style kept (ruamel.yaml)."""
    import ruamel.yaml

    editor = ruamel.yaml.YAML()
    editor.indent(mapping=2, sequence=4, offset=2)  # the shipped stack files' list style
    editor.preserve_quotes = True
    editor.width = 4096
    document = editor.load(stack_path.read_text())
    config = document["config"]
    tenants = config[_key(config, TENANTS_KEY)]
    pools = config[_key(config, POOLS_KEY)]
    for knob in knobs:
        value = chosen.values[knob.name]
        if knob.kind == HEADROOM:
            entry = _named(pools, knob.owner)
            warm = entry.get("warmStart")
            if warm is not None and warm.get("headroom") is not None:
                warm["headroom"]["gpus"] = value
            elif value:
                if warm is None:
                    entry["warmStart"] = warm = ruamel.yaml.comments.CommentedMap()
                warm["headroom"] = ruamel.yaml.comments.CommentedMap(gpus=value)
        else:
            quota = _named(tenants, knob.owner)["gpu"][knob.flavor]
            if value or knob.kind in quota:
                quota[knob.kind] = value
    for name, gpus in chosen.pool_gpus.items():
        _named(pools, name)["gpus"] = gpus
    stream = io.StringIO()
    editor.dump(document, stream)
    return stream.getvalue()


def _write(out_dir: Path, stack: str, stack_path: Path, data: dict[str, Any], chosen: Candidate | None,
           slos: Sequence[Slo]) -> list[Path]:
    written = []
    knobs = [Knob(**k) for k in data["knobs"]]
    if chosen is not None:
        text = planned_text(stack_path, chosen, knobs)
        from .stack import stack_config_from_text

        # What `make check` runs on the planned file, read back from its bytes.
        planned = load_config(stack_config_from_text(stack, text.encode(), stack_path.name))
        refused = chart_override_problems(planned.versions.charts, planned.charts)
        if refused:
            raise PlanError(f"the planned stack file is refused: {refused[0]}")
        (out_dir / stack_path.name).write_text(text)
        diff = "".join(difflib.unified_diff(stack_path.read_text().splitlines(True), text.splitlines(True),
                                            f"a/{stack_path.name}", f"b/{stack_path.name}"))
        (out_dir / "stack.diff").write_text(diff)
        data["diff"] = diff
        written += [out_dir / stack_path.name, out_dir / "stack.diff"]
    (out_dir / "plan.json").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    (out_dir / "plan.md").write_text(render_markdown(data, slos))
    written += [out_dir / "plan.json", out_dir / "plan.md"]
    from .plan_plot import write_frontier

    written.append(write_frontier(data, slos, out_dir / "frontier.png"))
    return written


def _ci(value: Mapping[str, Any], unit: str) -> str:
    if value.get("unknown"):
        return "not measured"
    shown = _at_least(value) + plan_slo.show(value.get("mean"), unit)
    if value.get("low") is None:
        return shown
    return f"{shown} [{plan_slo.show(value['low'], unit)}, {plan_slo.show(value['high'], unit)}]"


def _usd(value: Mapping[str, Any]) -> str:
    if value.get("mean") is None:
        return "n/a"
    if value.get("low") is None:
        return f"{_at_least(value)}${value['mean']:,.2f}"
    return f"${value['mean']:,.2f} [{value['low']:,.2f}, {value['high']:,.2f}]"


def render_markdown(data: Mapping[str, Any], slos: Sequence[Slo]) -> str:
    units = [s.kind.unit for s in slos]
    lines = [f"# Capacity plan: stack {data['stack']}, {data['workload']}", ""]
    search = data["search"]
    lines += [f"Search: {search['method']}, {search['trials']} trials, each on seeds {search['seeds']} "
              f"(batches of {search['batch']}, seed {search['seed']}); verification and the why table on fresh seeds "
              f"{data['verification_seeds']}. Figures: mean over the seeds [95 % Student-t interval]. A level is met "
              "when its mean meets the bound. docs/capacity-planning.md says how to read this.", ""]
    lines += ["## Service levels", "", "| level | means |", "| --- | --- |"]
    lines += [f"| `{row['slo']}` | {row['means']} |" for row in data["levels"]]
    chosen = data["chosen"]
    lines += ["", "## Chosen stack", ""]
    if chosen is None:
        lines += [f"No candidate met every level on fresh seeds: {data['unmet']}", ""]
    else:
        verification = chosen["verification"]
        lines += ["| value | in the stack | planned |", "| --- | ---: | ---: |"]
        knobs = {k["name"]: k for k in data["knobs"]}
        for name, value in chosen["values"].items():
            lines.append(f"| `{name}` | {knobs[name]['current']} | {value} |")
        for pool, gpus in chosen["pool_gpus"].items():
            lines.append(f"| `nodePools[{pool}].gpus` (follows the nominal quotas) | {chosen['current_pool_gpus'][pool]} "
                         f"| {gpus} |")
        lines += ["", f"On fresh seeds: cost {_usd(verification['cost'])}.", "",
                  "| level | bound | on fresh seeds | met |", "| --- | ---: | ---: | --- |"]
        for slo, unit, value in zip(slos, units, verification["levels"], strict=True):
            lines.append(f"| `{slo.text}` | {slo.show_bound()} | {_ci(value, unit)} | "
                         f"{'yes' if plan_slo.met(slo, value) else 'no'} |")
        lines += ["", "The stack file with these values: `Pulumi.<stack>.yaml` beside this file; its diff: `stack.diff`. "
                  "Copy it over the stack file, then `make check` and `make diff`.", ""]
        lines += ["## Why each value", "",
                  "Each value lowered by at least 10 % (one step at least), everything else as planned, on the fresh "
                  "seeds.", "", "| value | planned | lowered to | cost | then |", "| --- | ---: | ---: | ---: | --- |"]
        for row in data["why"]:
            cost = _usd(row["cost"]) if row.get("cost") else ""
            lines.append(f"| `{row['knob']}` | {row['value']} | {row['lowered'] if row['lowered'] is not None else ''} "
                         f"| {cost} | {row['verdict']} |")
        lines += ["", "A pool's `gpus` is the least that holds the nominal quota promised on it (config/fair_share.py "
                  "refuses less; Kueue admits nobody beyond it, config/schedulability.py), so it moves with the quotas.",
                  ""]
    if data["verified"]:
        lines += ["Verification on fresh seeds, cheapest candidates first:", "", "| trial | cost | met every level |",
                  "| ---: | ---: | --- |"]
        lines += [f"| {a['trial']} | {_usd(a['cost'])} | {'yes' if a['met'] else 'no'} |" for a in data["verified"]]
        lines.append("")
    lines += ["## Frontier", "",
              "Every trial the rules accepted and simulated to the end, cheapest first, on the search seeds; `pareto`: no "
              "other such trial is as cheap and as good on every level and better on one. frontier.png plots cost "
              "against each level.", ""]
    header = ["trial", "cost"] + [f"`{s.text}`" for s in slos] + ["meets all", "pareto"]
    lines += ["| " + " | ".join(header) + " |", "| " + " | ".join(["---:"] * len(header)) + " |"]
    valid = sorted((t for t in data["trials"] if t["problem"] is None and t.get("stopped") is None),
                   key=lambda t: (t["cost"]["mean"], t["trial"]))
    for t in valid:
        cells = [str(t["trial"]), _usd(t["cost"])] + [_ci(v, u) for v, u in zip(t["levels"], units, strict=True)]
        cells += ["yes" if t["meets"] else "", "yes" if t["pareto"] else ""]
        lines.append("| " + " | ".join(cells) + " |")
    stopped = sorted((t for t in data["trials"] if t.get("stopped") is not None), key=lambda t: t["trial"])
    if stopped:
        lines += ["", f"{len(stopped)} trial(s) stopped early: a level was certainly missed (sim/early_stop.py), so "
                  "the rest of the runs could not change the verdict; a first seed that decided alone ran no other. "
                  "Their figures are lower bounds (≥) of the mean over every seed, a seed not run counting 0: the "
                  "cost spent until the stop, and each watched level's least possible mean; the other levels were not "
                  "measured. They are left out of the table above and of frontier.png.", "",
                  "| trial | stopped on | seeds run | stopped at hour | cost | " + " | ".join(f"`{s.text}`" for s in slos)
                  + " |", "| ---: | --- | ---: | ---: | ---: | " + " | ".join(["---:"] * len(slos)) + " |"]
        for t in stopped:
            hours = ", ".join(f"{h:.0f}" for h in t["stopped"]["at_hours"])
            cells = [str(t["trial"]), f"`{t['stopped']['level']}`", str(t["stopped"]["runs"]), hours, _usd(t["cost"])]
            cells += [_ci(v, u) for v, u in zip(t["levels"], units, strict=True)]
            lines.append("| " + " | ".join(cells) + " |")
    refused = [t for t in data["trials"] if t["problem"] is not None]
    if refused:
        lines += ["", f"{len(refused)} trial(s) the stack's rules refused (not simulated), e.g. trial "
                  f"{refused[0]['trial']}: {refused[0]['problem']}"]
    lines += ["", "## What the plan does not model", "",
              "The plan searches only the knobs above, on the one workload given, and every figure is the simulator's, "
              "with what the simulator leaves out (sim/report.py; docs/capacity-planning.md says what follows for a "
              "plan):", ""]
    lines += [f"- {line}" for line in LIMITS] + [""]
    return "\n".join(lines)


def main(stack: str, workload: Path, slos: Sequence[str], out_dir: Path | None, options: Options) -> int:
    try:
        return plan(stack, workload, slos, out_dir, options)
    except (PlanError, SloError) as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_INVALID
    except KeyboardInterrupt:
        print("interrupted: carry on with the same command and --resume", file=sys.stderr)
        return 130
