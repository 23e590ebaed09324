"""A fleet run as plain data: one ledger for the fleet, figures per worker, replications and the wait saved.

`fleet_ledger` assembles the workers' ledgers into one (sim/fleet.py says how); `outcome` reduces a finished
run to measures (sim/measures.py, the one place a figure is computed) keyed as a single-cluster run's are,
plus `regions`: per worker, the waits of the work homed there and the GPU-hours and cost of the capacity
there. `run_fleet` replicates the fleet and its baseline on the same seeds; `fleet_report` pairs them
(sim/experiment.py `replicate`, `paired_deltas`) into report.json's data, `render_fleet` into report.md.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from . import measures as m
from .experiment import paired_deltas, replicate
from .fleet import ASSUMPTIONS, Fleet, FleetScenario
from .ledger import DELETED, JOB, PLACEHOLDER, REPLICA, SERVICE, Created, Ledger, Queued
from .measures import Measures, Scope, compute
from .state import Group

FLEET = "fleet"
BASELINE = "baseline"
# Per worker: of the work homed there, and of the capacity there.
DEMAND = (m.CREATED, m.ADMITTED, m.FINISHED, m.WAIT_MEAN, m.WAIT_P50, m.WAIT_P95, m.START_MEAN, m.START_P50,
          m.START_P95, m.QUEUE_LENGTH, m.NEVER_STARTED, m.NEVER_ADMISSIBLE)
CAPACITY = (m.PROVISIONED, m.ALLOCATED, m.USEFUL, m.LOST, m.IDLE, m.ALLOCATION_PCT, m.COST, m.USD_PER_USEFUL,
            m.LAUNCHED)
# What the fleet is compared with the baseline on, seed by seed.
COMPARED = (m.WAIT_MEAN, m.WAIT_P50, m.WAIT_P95, m.START_MEAN, m.START_P95, m.FINISHED, m.NEVER_STARTED, m.USEFUL,
            m.COST, m.USD_PER_USEFUL)


def _kind(group: Group) -> str:
    if group.service:
        return SERVICE
    return JOB if group.run_seconds is not None else REPLICA


def fleet_ledger(fleet: Fleet) -> tuple[Ledger, dict[int, str]]:
    """The fleet's one ledger, and each fleet workload's home worker."""
    out = Ledger(fleet.clock.end)
    homes: dict[int, str] = {}
    for dispatched in fleet.workloads.values():
        g = dispatched.group
        out.created.append(Created(g.key, g.tenant, g.tier, g.stream, _kind(g), g.size, g.units_per_pod, g.created,
                                   dispatched.never))
        out.queued.append(Queued(g.key, g.created))
        homes[g.key] = dispatched.home
    next_key = max((d.group.key for d in fleet.workloads.values()), default=0)
    next_node = 0
    for worker, sim in fleet.sims.items():
        ledger = sim.ledger
        placeholders: dict[int, int] = {}
        for created in ledger.created:
            if created.kind == PLACEHOLDER:
                next_key += 1
                placeholders[created.key] = next_key
                out.created.append(created._replace(key=next_key))

        def mine(key: int, at: float, after: bool = False, worker: str = worker,
                 placeholders: dict[int, int] = placeholders) -> tuple[int, int] | None:
            """The fleet key and attempt offset of a fact of `worker`'s, or None when it is not the fleet's."""
            if key in placeholders:
                return placeholders[key], 0
            window = fleet.windows.get((worker, key))
            if window is None or at < window.start or (after and at <= window.start):
                return None
            if window.end is not None and at > window.end:
                return None
            return window.key, window.offset

        nodes = {fact.node: fact.node + next_node for fact in ledger.nodes}
        out.nodes += [f._replace(node=nodes[f.node], pool=f"{worker}/{f.pool}") for f in ledger.nodes]
        out.ready += [f._replace(node=nodes[f.node]) for f in ledger.ready]
        out.disrupted += [f._replace(node=nodes[f.node], pool=f"{worker}/{f.pool}") for f in ledger.disrupted]
        out.down += [f._replace(node=nodes[f.node]) for f in ledger.down]
        next_node += max(nodes, default=0)
        for queued in ledger.queued:
            if (found := mine(queued.key, queued.at, after=True)) is not None:
                out.queued.append(queued._replace(key=found[0]))
        for admitted in ledger.admitted:
            if (found := mine(admitted.key, admitted.at)) is not None:
                out.admitted.append(admitted._replace(key=found[0]))
        for blocked in ledger.blocked:
            if (found := mine(blocked.key, blocked.at)) is not None:
                out.blocked.append(blocked._replace(key=found[0], pool=f"{worker}/{blocked.pool}"))
        for started in ledger.started:
            if (found := mine(started.key, started.at)) is not None:
                out.started.append(started._replace(key=found[0], attempt=started.attempt + found[1]))
        for ended in ledger.ended:
            window = fleet.windows.get((worker, ended.key))
            if ended.cause == DELETED and window is not None and window.end == ended.at:
                continue  # the manager dropped this copy; the workload goes on elsewhere
            if (found := mine(ended.key, ended.at)) is not None:
                out.ended.append(ended._replace(key=found[0], attempt=ended.attempt + found[1]))
        for held in ledger.held:
            if (found := mine(held.key, held.start)) is not None:
                out.held.append(held._replace(key=found[0], attempt=held.attempt + found[1], pool=f"{worker}/{held.pool}"))
    return out, homes


def _scope(fleet: Fleet) -> Scope:
    config = fleet.config
    tiers = tuple(tier for tier, _ in sorted(config.queueing.priorities.items(), key=lambda item: -item[1]))
    pools = tuple(sorted(f"{worker}/{name}" for worker, sim in fleet.sims.items() for name in sim.pools))
    return Scope(pools, tuple(sorted(fleet.tenants)), tiers, ())


def _homed(ledger: Ledger, keys: set[int]) -> Ledger:
    """The facts of the workloads in `keys`: their waits and starts, wherever they ran."""
    def of(items: list[Any]) -> list[Any]:
        return [fact for fact in items if fact.key in keys]
    return Ledger(ledger.end, created=of(ledger.created), queued=of(ledger.queued), withdrawn=of(ledger.withdrawn),
                  blocked=of(ledger.blocked), admitted=of(ledger.admitted), started=of(ledger.started),
                  ended=of(ledger.ended), held=of(ledger.held))


def _capacity(ledger: Ledger, worker: str) -> Ledger:
    """The nodes of `worker`'s pools and what its pods held, whoever's work it was."""
    prefix = f"{worker}/"
    nodes = [fact for fact in ledger.nodes if fact.pool.startswith(prefix)]
    ids = {fact.node for fact in nodes}
    return Ledger(ledger.end, nodes=nodes, ready=[f for f in ledger.ready if f.node in ids],
                  disrupted=[f for f in ledger.disrupted if f.node in ids], down=[f for f in ledger.down if f.node in ids],
                  created=list(ledger.created), started=list(ledger.started), ended=list(ledger.ended),
                  held=[f for f in ledger.held if f.pool.startswith(prefix)])


def measure(fleet: Fleet) -> Measures:
    ledger, homes = fleet_ledger(fleet)
    scope = _scope(fleet)
    found = compute(ledger, scope)
    regions = {}
    for worker in fleet.order:
        homed = compute(_homed(ledger, {key for key, home in homes.items() if home == worker}), scope)["run"]
        capacity = compute(_capacity(ledger, worker), scope)["run"]
        regions[worker] = {**{k: homed.get(k) for k in DEMAND}, **{k: capacity.get(k) for k in CAPACITY}}
    found["regions"] = regions
    return found


def run_one(scenario: FleetScenario, seed: int) -> dict[str, Any]:
    fleet = Fleet(scenario, seed)
    fleet.run()
    return {"seed": seed, "events": fleet.clock.events, "measures": measure(fleet)}


def _run(job: tuple[FleetScenario, int]) -> dict[str, Any]:
    return run_one(*job)


def run_fleet(scenario: FleetScenario, seeds: Sequence[int], workers: int | None = None) -> dict[str, list[dict[str, Any]]]:
    """The fleet and its baseline, each on every seed, in seed order; across processes when there are cores."""
    jobs = [(variant, seed) for variant in (scenario, scenario.baseline()) for seed in seeds]
    count = min(len(jobs), workers or os.cpu_count() or 1)
    if count <= 1:
        results = [_run(job) for job in jobs]
    else:
        with ProcessPoolExecutor(max_workers=count) as pool:
            results = list(pool.map(_run, jobs))
    return {FLEET: results[:len(seeds)], BASELINE: results[len(seeds):]}


def _as_run(runs: Sequence[dict[str, Any]], worker: str) -> list[dict[str, Any]]:
    """Runs with one worker's figures in place of the run's, for `paired_deltas`."""
    return [{"seed": r["seed"], "measures": {"run": r["measures"]["regions"][worker]}} for r in runs]


def fleet_report(scenario: FleetScenario, seeds: Sequence[int], runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """report.json's data: each variant's replicated figures, and what the fleet saves: baseline less fleet,
    seed by seed (a positive wait saved is a shorter wait in the fleet)."""
    fleet, base = runs[FLEET], runs[BASELINE]
    return {
        "workload": scenario.source,
        "description": scenario.workload.description,
        "seeds": list(seeds),
        "fleet": {
            "workers": [{"name": w.name, "region": w.region} for w in scenario.workers],
            "dispatcher": scenario.dispatcher,
            "step_size": scenario.step_size,
            "dispatch_latency_s": scenario.latency,
            "worker_lost_timeout_s": scenario.worker_lost_timeout,
            "split": scenario.split,
            "assumptions": list(ASSUMPTIONS),
            "variants": {FLEET: replicate(fleet), BASELINE: replicate(base)},
            "saved": {
                "run": paired_deltas(base, fleet, COMPARED),
                "regions": {w.name: paired_deltas(_as_run(base, w.name), _as_run(fleet, w.name), COMPARED)
                            for w in scenario.workers},
            },
            "events": sum(r["events"] for r in fleet + base),
        },
    }


def fleet_json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def _figure(stat: dict[str, Any] | None, scale: float = 1.0, digits: int = 0) -> str:
    if not stat or stat.get("mean") is None:
        return "-"
    mean = stat["mean"] / scale
    low, high = stat.get("low"), stat.get("high")
    text = f"{mean:,.{digits}f}"
    if low is not None and high is not None and stat.get("n", 1) >= 2 and low != high:
        text += f" ({low / scale:,.{digits}f} to {high / scale:,.{digits}f})"
    return text


ROWS = (
    ("workloads", m.CREATED, 1.0, 0), ("finished", m.FINISHED, 1.0, 0), ("never started by the end", m.NEVER_STARTED, 1.0, 0),
    ("Kueue wait mean (min)", m.WAIT_MEAN, 60.0, 1), ("Kueue wait p95 (min)", m.WAIT_P95, 60.0, 1),
    ("time to start mean (min)", m.START_MEAN, 60.0, 1), ("time to start p95 (min)", m.START_P95, 60.0, 1),
    ("GPU-hours provisioned (here)", m.PROVISIONED, 1.0, 0), ("GPU-hours useful (here)", m.USEFUL, 1.0, 0),
    ("cost USD (here)", m.COST, 1.0, 0), ("USD per useful GPU-hour (here)", m.USD_PER_USEFUL, 1.0, 2),
)
SAVED_ROWS = (
    ("Kueue wait mean (min)", m.WAIT_MEAN, 60.0, 1), ("Kueue wait p95 (min)", m.WAIT_P95, 60.0, 1),
    ("time to start mean (min)", m.START_MEAN, 60.0, 1), ("time to start p95 (min)", m.START_P95, 60.0, 1),
)


def render_fleet(data: dict[str, Any]) -> str:
    """report.md: read from report.json's data, nothing computed but units."""
    fleet = data["fleet"]
    names = [w["name"] for w in fleet["workers"]]
    variants = fleet["variants"]
    lines = [
        f"# Fleet: {' + '.join(_worker(w) for w in fleet['workers'])}, {data['workload']}", "",
        f"Seeds {data['seeds'][0]}-{data['seeds'][-1]} ({len(data['seeds'])}); figures are means with their 95 % "
        f"interval over the seeds. Dispatcher `{fleet['dispatcher']}`, dispatch latency {fleet['dispatch_latency_s']:g} s "
        f"each way, work homed by `{fleet['split']}`.", "",
        "Waits and starts are of the work homed on a worker; GPU-hours and cost (here) are of the worker's own capacity.",
        "", "| | " + " | ".join(f"{n} baseline | {n} fleet" for n in names) + " | all baseline | all fleet |",
        "|---|" + "---|" * (2 * len(names) + 2),
    ]
    for label, metric, scale, digits in ROWS:
        cells = []
        for name in names:
            cells += [_figure(_stat(variants[BASELINE]["regions"].get(name, {}), metric), scale, digits),
                      _figure(_stat(variants[FLEET]["regions"].get(name, {}), metric), scale, digits)]
        cells += [_figure(variants[BASELINE]["run"].get(metric), scale, digits),
                  _figure(variants[FLEET]["run"].get(metric), scale, digits)]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += ["", "What the second region saves: baseline less fleet on the same seed, mean and 95 % interval "
              "(positive: shorter in the fleet).", "",
              "| | " + " | ".join(names) + " | all |", "|---|" + "---|" * (len(names) + 1)]
    saved = fleet["saved"]
    for label, metric, scale, digits in SAVED_ROWS:
        cells = [_figure(saved["regions"][name].get(metric), scale, digits) for name in names]
        cells.append(_figure(saved["run"].get(metric), scale, digits))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += ["", "## Assumptions", "", *[f"- {line}" for line in fleet["assumptions"]], ""]
    return "\n".join(lines)


def _worker(worker: dict[str, str]) -> str:
    return f"{worker['name']} ({worker['region']})"


def _stat(row: dict[str, Any], metric: str) -> dict[str, Any] | None:
    value = row.get(metric)
    return value if isinstance(value, dict) else None
