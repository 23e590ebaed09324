"""The design's five claims as scenarios: each a stack, a workload file (`workloads/claims/`), the variants it
compares, and the rows of the claims table it yields.

A variant is data: one of the simulator's own variants (sim/variants.py: the stack as configured, the fair
static baseline, one mechanism off), plus edits to a copy of the stack's config mapping and of the workload
file (`patch`). Nothing here changes how the engine runs; a variant the simulator has no switch for (two
models sharing a cohort, a server held at its maximum, another consolidation policy) is a different stack or
workload, written as edits to the shipped one.

Each row compares one figure (a metric id of sim/measures.py at one level) between a "before" and an "after"
variant over the same seeds: both means with their 95 % intervals, and the change per seed (after against
before, paired: the variants see the same arrivals, sim/rng.py) with its interval. The verdict:

    design range given   the after figure's interval against the design's range: overlapping it reproduces
                         the claim; wholly on the better side beats it; wholly on the worse side misses it
    no design figure     the design only says the after is better: the paired change's interval wholly on the
                         better side reproduces it, wholly on the worse side misses it, across zero is "not
                         shown" (the seeds cannot tell the two apart)

`offline/claims.py` runs the claims (`make claims`); `claims_data` and `render_table` turn runs into
claims.json and the markdown table, which the docs quote.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from config import PlatformConfig

from . import measures as m
from . import variants
from .experiment import Scenario
from .ledger import CONSOLIDATION, INTERRUPTION, PREEMPTION
from .stats import summary
from .variants import SIMULATED, STATIC, ablation
from .workload import Workload

DELETE = object()  # a patch value: remove the key

REPRODUCED = "reproduced"
BEATEN = "beaten"
MISSED = "missed"
NOT_SHOWN = "not shown"
HIGHER = "higher"
LOWER = "lower"

# AWS EC2 Spot Instance Advisor (https://aws.amazon.com/ec2/spot/instance-advisor/), "Frequency of
# interruption": the share of an instance type's spot capacity AWS reclaimed over the trailing month, in bands
# <5 %, 5-10 %, 10-15 %, 15-20 % and >20 %. Read as the chance that an instance running the whole month
# (730 h) is interrupted, a band's edge p is a Poisson rate of -ln(1 - p) / 730 per node-hour.
HOURS_PER_MONTH = 730.0
ADVISOR_BAND_EDGES = (0.05, 0.10, 0.15, 0.20)


def per_node_hour(monthly: float) -> float:
    """A monthly interruption frequency (0.05: 5 %) as a Poisson rate per node-hour."""
    return -math.log(1.0 - monthly) / HOURS_PER_MONTH


# --- editing a stack's config mapping or a workload document ---------------------------------------------------
_STEP = re.compile(r"^([^.\[\]]+)((?:\[[^\]]+\])*)$")


def _steps(path: str) -> list[str | tuple[str]]:
    """`gpu-platform:tenants[inference].gpu.l40s-on-demand` -> keys, with `(name,)` selecting a list item."""
    steps: list[str | tuple[str]] = []
    for part in path.split("."):
        match = _STEP.match(part)
        if not match:
            raise ValueError(f"patch path {path!r}: {part!r} is not `key` or `key[name]`")
        steps.append(match.group(1))
        steps += [(name,) for name in re.findall(r"\[([^\]]+)\]", match.group(2))]
    return steps


def _item(items: list[Any], name: str, path: str) -> dict[str, Any]:
    """The list item named `name` (by its `name`, or an inference load's `deployment`)."""
    for item in items:
        if isinstance(item, dict) and name in (item.get("name"), item.get("deployment")):
            return item
    raise ValueError(f"patch path {path!r}: no item named {name!r}")


def patch(document: Mapping[str, Any], edits: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    """A copy of `document` with each `(path, value)` set (DELETE removes the key). A path's last key may be new;
    every key and named item before it must exist, so a misspelt path fails instead of adding a stray key."""
    edited = copy.deepcopy(dict(document))
    for path, value in edits:
        steps = _steps(path)
        node: Any = edited
        for step in steps[:-1]:
            if isinstance(step, tuple):
                node = _item(node, step[0], path)
            elif isinstance(node, dict) and step in node:
                node = node[step]
            else:
                raise ValueError(f"patch path {path!r}: no key {step!r}")
        last = steps[-1]
        if isinstance(last, tuple) or not isinstance(node, dict):
            raise ValueError(f"patch path {path!r}: the last step must be a key of a mapping")
        if value is DELETE:
            if last not in node:
                raise ValueError(f"patch path {path!r}: no key {last!r} to delete")
            del node[last]
        else:
            node[last] = copy.deepcopy(value)
    return edited


# --- what a claim is ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Variant:
    """One side of a comparison: a variant of sim/variants.py (`of`), and edits to the stack and the workload."""

    name: str
    label: str
    stack: tuple[tuple[str, Any], ...] = ()
    workload: tuple[tuple[str, Any], ...] = ()
    of: str = SIMULATED


@dataclass(frozen=True)
class Figure:
    """A metric id at a level of the measures: ("run",) or (level, name), e.g. ("deployments", "inference/chat")."""

    metric: str
    label: str
    where: tuple[str, ...] = ("run",)
    better: str = HIGHER
    unit: str = ""  # "%", "USD", "GPU-h", "min" (a figure in seconds shown in minutes)

    def read(self, measures: Mapping[str, Any]) -> Any:
        level = measures[self.where[0]]
        row = level if len(self.where) == 1 else level.get(self.where[1], {})
        return row.get(self.metric)


@dataclass(frozen=True)
class Row:
    figure: Figure
    before: str  # variant names
    after: str
    design: tuple[float, float] | None = None  # the design's range for the after figure, in the figure's unit
    design_text: str = ""
    context: bool = False  # a figure shown beside the claim (what it costs), judged by no verdict


@dataclass(frozen=True)
class Claim:
    id: str
    claim: str  # the design's words
    stack: str
    workload: str  # path from the project directory
    seeds: int
    variants: tuple[Variant, ...]
    rows: tuple[Row, ...]
    depends: str  # what the outcome depends on
    why: str  # the mechanism behind the verdict

    def variant(self, name: str) -> Variant:
        return next(v for v in self.variants if v.name == name)


@dataclass(frozen=True)
class Inputs:
    """How to turn data into a Scenario: the stack's config mapping -> PlatformConfig, and where files are."""

    stack_document: Callable[[str], dict[str, Any]]
    load_config: Callable[[dict[str, Any]], PlatformConfig]
    project_dir: Path = Path(".")
    _cache: dict[Any, PlatformConfig] = field(default_factory=dict)


def scenario(claim: Claim, variant: Variant, inputs: Inputs) -> Scenario:
    key = (claim.stack, repr(variant.stack))
    config = inputs._cache.get(key)
    if config is None:
        config = inputs._cache[key] = inputs.load_config(patch(inputs.stack_document(claim.stack), variant.stack))
    document = yaml.safe_load((inputs.project_dir / claim.workload).read_text())
    workload = Workload.model_validate(patch(document, variant.workload))
    return Scenario(config, workload, claim.workload, inputs.project_dir).variant(variant.of)


# --- from runs to the table ---------------------------------------------------------------------------------------
def change_pct(before: float | None, after: float | None) -> float | None:
    """After against before, in per cent of before (-40: 40 % less)."""
    if before is None or after is None or before == 0:
        return None
    return 100.0 * (after - before) / before


def verdict(row: Row, after: Mapping[str, Any], change: Mapping[str, Any]) -> str:
    """The rule in the module docstring. A figure from one seed has no interval: its mean stands for it."""
    better_high = row.figure.better == HIGHER
    if row.design is not None:
        if after.get("mean") is None:
            return MISSED
        low = after["low"] if after.get("low") is not None else after["mean"]
        high = after["high"] if after.get("high") is not None else after["mean"]
        if high < row.design[0]:
            return MISSED if better_high else BEATEN
        if low > row.design[1]:
            return BEATEN if better_high else MISSED
        return REPRODUCED
    if change.get("mean") is None:
        return NOT_SHOWN
    low = change["low"] if change.get("low") is not None else change["mean"]
    high = change["high"] if change.get("high") is not None else change["mean"]
    if (low > 0 and better_high) or (high < 0 and not better_high):
        return REPRODUCED
    if (high < 0 and better_high) or (low > 0 and not better_high):
        return MISSED
    return NOT_SHOWN


def row_data(claim: Claim, row: Row, runs: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """One row of claims.json from each variant's runs (the same seeds, in the same order)."""
    before_runs, after_runs = runs[row.before], runs[row.after]
    assert [r["seed"] for r in before_runs] == [r["seed"] for r in after_runs]
    before_values = [row.figure.read(r["measures"]) for r in before_runs]
    after_values = [row.figure.read(r["measures"]) for r in after_runs]
    before, after = summary(before_values, floor=0.0), summary(after_values, floor=0.0)
    change = summary([change_pct(b, a) for b, a in zip(before_values, after_values, strict=True)])
    return {
        "claim": claim.id,
        "figure": row.figure.label,
        "metric": row.figure.metric,
        "where": list(row.figure.where),
        "unit": row.figure.unit,
        "better": row.figure.better,
        "before": {"variant": row.before, "label": claim.variant(row.before).label, **before},
        "after": {"variant": row.after, "label": claim.variant(row.after).label, **after},
        "change_pct": change,
        "design": list(row.design) if row.design is not None else None,
        "design_text": row.design_text,
        "verdict": None if row.context else verdict(row, after, change),
    }


def claims_data(claims: Sequence[Claim], runs: Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]]) -> dict[str, Any]:
    """claims.json: per claim its words, stack, workload, seeds, what it depends on and why, and its rows."""
    return {
        "claims": [
            {
                "id": claim.id,
                "claim": claim.claim,
                "stack": claim.stack,
                "workload": claim.workload,
                "seeds": [r["seed"] for r in next(iter(runs[claim.id].values()))],
                "variants": {v.name: v.label for v in claim.variants},
                "depends": claim.depends,
                "why": claim.why,
                "rows": [row_data(claim, row, runs[claim.id]) for row in claim.rows],
            }
            for claim in claims
        ],
    }


_SECONDS_PER = {"min": 60, "h": 3600}  # a figure in seconds, shown in this unit


def _number(value: float, unit: str, decimals: int | None = None, signed: bool = False) -> str:
    """`value` as the tables print it: `decimals` places when given, else by unit and size; "change" and
    `signed` put a sign on anything that does not round to zero; "min" and "h" are a figure in seconds shown in
    minutes or hours."""
    if unit == "change":
        return _number(value, "", decimals, signed=True)
    if unit in _SECONDS_PER:
        value, decimals = value / _SECONDS_PER[unit], 1 if decimals is None else decimals
        unit = ""
    if decimals is not None:
        text = f"{value:,.{decimals}f}"
    elif unit == "USD" and abs(value) < 100:
        text = f"{value:,.2f}"
    elif abs(value) >= 100:
        text = f"{value:,.0f}"
    else:
        text = f"{value:,.1f}"
    if not signed:
        return text
    if text.lstrip("-").replace(",", "").replace(".", "").strip("0") == "":
        return text.lstrip("-")  # rounds to zero: no sign
    return ("+" if value > 0 else "") + text


def figure_text(figure: Mapping[str, Any], unit: str, decimals: int | None = None, signed: bool = False) -> str:
    """`12.3 (11.9 to 12.7)`: the mean and its 95 % interval; the interval left out when every seed agrees."""
    if figure.get("mean") is None:
        return "-"
    text = _number(figure["mean"], unit, decimals, signed)
    if figure.get("low") is not None:
        low, high = _number(figure["low"], unit, decimals, signed), _number(figure["high"], unit, decimals, signed)
        if (low, high) != (text, text):
            text += f" ({low} to {high})"
    return text


def render_table(data: Mapping[str, Any]) -> str:
    """The claims table in markdown, from claims.json alone."""
    lines = [
        "| claim | scenario | figure | before | after | change % (95 % CI) | design | verdict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    notes = []
    for number, claim in enumerate(data["claims"], 1):
        for index, row in enumerate(claim["rows"]):
            first = index == 0
            lines.append("| " + " | ".join([
                f"{number}. {claim['claim']}" if first else "",
                f"`{claim['workload']}` on {claim['stack']}, seeds {claim['seeds'][0]}-{claim['seeds'][-1]}" if first else "",
                row["figure"],
                f"{figure_text(row['before'], row['unit'])} ({row['before']['label']})",
                f"{figure_text(row['after'], row['unit'])} ({row['after']['label']})",
                figure_text(row["change_pct"], "change"),
                row["design_text"] or "-",
                f"**{row['verdict']}**" if row["verdict"] else "-",
            ]) + " |")
        notes.append(f"{number}. **{claim['id']}**: depends on {claim['depends']} Why: {claim['why']}")
    return "\n".join(lines) + "\n\n" + "\n".join(notes) + "\n"


# --- the design's five claims ---------------------------------------------------------------------------------
TENANTS = "gpu-platform:tenants"
L40S = "gpu-platform:nodePools[gpu-l40s]"
CHAT = "inference/chat"
MODEL_B = "ml-research/model-b"

UTILISATION_RANGE = (60.0, 85.0)
UTILISATION_TEXT = "25-35 % before, 60-85 % after"

_SPOT_QUOTAS: tuple[tuple[str, Any], ...] = (
    # The same room on either capacity type: 12 slices (3 GPUs) nominal of each, nothing borrowed.
    (f"{TENANTS}[ml-research].gpu", {"l40s-on-demand": {"nominal": 12, "borrowingLimit": 0},
                                      "l40s-spot": {"nominal": 12}}),
    (f"{TENANTS}[inference].gpu", {"l40s-on-demand": {"nominal": 8}}),
)


def _spot(name: str, label: str, rate: float) -> Variant:
    return Variant(name, label, _SPOT_QUOTAS, (("spot", {"interruptionsPerNodeHour": round(rate, 8)}),))


_SHARED_QUOTAS: tuple[tuple[str, Any], ...] = (
    # Model A's own quota covers its day; its surge borrows Model B's idle quota in the cohort.
    (f"{TENANTS}[inference].gpu", {"l40s-on-demand": {"nominal": 4, "borrowingLimit": 8}}),
    (f"{TENANTS}[ml-research].gpu", {"l40s-on-demand": {"nominal": 8, "borrowingLimit": 4}}),
)
_DEDICATED_QUOTAS: tuple[tuple[str, Any], ...] = (
    # Each model its own peak (8 replicas, 8 slices), nothing shared.
    (f"{TENANTS}[inference].gpu", {"l40s-on-demand": {"nominal": 8}}),
    (f"{TENANTS}[ml-research].gpu", {"l40s-on-demand": {"nominal": 8}}),
)

# The off-hours claim is about chat's schedule: prod's L40S headroom (10 warm GPUs, the same in every variant)
# is taken off so the pool's cost is chat's.
_NO_HEADROOM: tuple[tuple[str, Any], ...] = ((f"{L40S}.warmStart.headroom", DELETE),)

_COST = Figure(m.COST, "cost USD", better=LOWER, unit="USD")
_USD_PER_USEFUL = Figure(m.USD_PER_USEFUL, "USD per useful GPU-hour", better=LOWER, unit="USD")

CLAIMS: tuple[Claim, ...] = (
    Claim(
        id="utilisation",
        claim="GPU utilisation with Kueue goes from 25-35 % to 60-85 %",
        stack="dev",
        workload="workloads/claims/utilisation.yaml",
        seeds=10,
        variants=(
            Variant("static-max", "static, servers at max", (
                (f"{TENANTS}[inference].inference[chat].minReplicas", 8),
            ), (("inference[model-b].spec.minReplicas", 4),), of=STATIC),
            Variant("static", "static, HPA", of=STATIC),
            Variant("platform", "the platform"),
        ),
        rows=(
            Row(Figure(m.UTILISATION, "chat's utilisation %", ("deployments", CHAT), unit="%"), "static-max",
                "platform", UTILISATION_RANGE, UTILISATION_TEXT),
            Row(Figure(m.UTILISATION, "model-b's utilisation %", ("deployments", MODEL_B), unit="%"), "static-max",
                "platform", UTILISATION_RANGE, UTILISATION_TEXT),
            Row(Figure(m.UTILISATION, "chat's utilisation %", ("deployments", CHAT), unit="%"), "static",
                "platform", UTILISATION_RANGE, UTILISATION_TEXT),
            Row(Figure(m.ALLOCATION_PCT, "allocation %", unit="%"), "static-max", "platform", UTILISATION_RANGE,
                UTILISATION_TEXT),
            Row(Figure(m.ALLOCATION_PCT, "allocation %", unit="%"), "static", "platform", UTILISATION_RANGE,
                UTILISATION_TEXT),
            Row(_USD_PER_USEFUL, "static", "platform"),
        ),
        depends="the servers' request curves (requests per replica are assumptions), the HPA's targets (realtime "
        "scales up at 60 % busy), and the before: the fair static baseline (sim/variants.py: each tenant's usable "
        "nominal quota on the cheapest always-on nodes, on-demand), with each server held at its maximum or "
        "scaled by its HPA.",
        why="the HPA keeps replicas near the load, so utilisation (served over what Ready replicas could serve) "
        "sits near the scale-up target instead of at the day's average over the peak; allocation rises because "
        "Karpenter runs nodes only while pods hold them. Allocation still counts idle server capacity as used.",
    ),
    Claim(
        id="spot",
        claim="Spot capacity makes training cheaper, work lost to interruptions included",
        stack="dev",
        workload="workloads/claims/spot-training.yaml",
        seeds=10,
        variants=(
            Variant("on-demand", "on-demand", _SPOT_QUOTAS, of=ablation(variants.SPOT)),
            _spot("spot-0", "spot, no interruptions", 0.0),
            _spot("spot-5", "spot, 5 %/month", per_node_hour(0.05)),
            _spot("spot-20", "spot, 20 %/month", per_node_hour(0.20)),
            _spot("spot-stress", "spot, 0.01/node-h", 0.01),
        ),
        rows=(
            Row(_USD_PER_USEFUL, "on-demand", "spot-0", design_text="cheaper; price an input: 0.35 x on-demand"),
            Row(_USD_PER_USEFUL, "on-demand", "spot-5", design_text="cheaper"),
            Row(_USD_PER_USEFUL, "on-demand", "spot-20", design_text="cheaper"),
            Row(_USD_PER_USEFUL, "on-demand", "spot-stress", design_text="cheaper"),
            Row(Figure(m.restarts(INTERRUPTION), "jobs restarted by interruptions", better=LOWER), "on-demand",
                "spot-20", context=True),
            Row(Figure(m.restarts(INTERRUPTION), "jobs restarted by interruptions", better=LOWER), "on-demand",
                "spot-stress", context=True),
            Row(Figure(m.lost(INTERRUPTION), "GPU-hours lost to interruptions", better=LOWER, unit="GPU-h"),
                "on-demand", "spot-stress", context=True),
            Row(Figure(m.USEFUL_PCT, "useful share of provisioned %", unit="%"), "on-demand", "spot-stress",
                context=True),
        ),
        depends="the spot price (workload `spot.priceFactor` 0.35, an assumption; AWS quotes up to 90 % off), the "
        "interruption rate (the Spot Instance Advisor's monthly bands <5 % ... >20 %, read as a Poisson rate per "
        "node-hour: 5 %/month is 7.0e-5, 20 %/month 3.1e-4; 0.01/node-h, about 99.9 % a month, is a stress "
        "case), and 8-hour gangs with no checkpoints.",
        why="at the Advisor's bands a node-week sees far less than one interruption, so the saving is the price "
        "discount; only at rates far above the bands does lost work (the whole 8-hour run, both pods) eat into it.",
    ),
    Claim(
        id="consolidation",
        claim="Consolidation (WhenEmptyOrUnderutilized) saves against WhenEmpty",
        stack="dev",
        workload="workloads/claims/consolidation.yaml",
        seeds=10,
        variants=(
            Variant("when-empty", "WhenEmpty"),
            Variant("underutilized", "WhenEmptyOrUnderutilized",
                    ((f"{L40S}.disruption.consolidationPolicy", "WhenEmptyOrUnderutilized"),)),
        ),
        rows=(
            Row(Figure(m.PROVISIONED, "GPU-hours provisioned", better=LOWER, unit="GPU-h"), "when-empty",
                "underutilized", design_text="fewer"),
            Row(_COST, "when-empty", "underutilized", design_text="cheaper"),
            Row(_USD_PER_USEFUL, "when-empty", "underutilized", design_text="cheaper"),
            Row(Figure(m.restarts(CONSOLIDATION), "jobs restarted by consolidation", better=LOWER),
                "when-empty", "underutilized", context=True),
            Row(Figure(m.lost(CONSOLIDATION), "GPU-hours lost to consolidation", better=LOWER, unit="GPU-h"),
                "when-empty", "underutilized", context=True),
            Row(Figure(m.START_MEAN, "time to start, mean (min)", better=LOWER, unit="min"), "when-empty",
                "underutilized", context=True),
        ),
        depends="dev's L40S pool (g6e types of 1 to 8 GPUs, time-sliced four ways, consolidateAfter 5m, a 50 % "
        "budget), jobs without checkpoints, and single-node consolidation by deletion (the simulator does not "
        "replace a node by a cheaper one).",
        why="a part-full node is deleted once its pods fit on the others, but each eviction restarts a job from "
        "zero: the work runs again, the pods spread back out (kube-scheduler's LeastAllocated score) and "
        "nodes are launched again, so on batch jobs without checkpoints WhenEmptyOrUnderutilized provisions "
        "more, not less. Where a restart is cheap (inference replicas) or jobs carry Karpenter's "
        "`karpenter.sh/do-not-disrupt` the trade differs; this scenario measures neither.",
    ),
    Claim(
        id="off-hours",
        claim="Off-hours scaling (working hours) saves GPU-hours",
        stack="prod",
        workload="workloads/claims/off-hours.yaml",
        seeds=5,
        variants=(
            Variant("floor", "working-hours floor all week", _NO_HEADROOM, of=ablation(variants.WORKING_HOURS)),
            Variant("hpa", "HPA alone", (*_NO_HEADROOM, (f"{TENANTS}[inference].inference[chat].workingHours", DELETE))),
            Variant("schedule", "working hours", _NO_HEADROOM),
        ),
        rows=(
            Row(Figure(m.ALLOCATED, "chat's GPU-hours", ("deployments", CHAT), better=LOWER, unit="GPU-h"),
                "floor", "schedule", design_text="fewer"),
            Row(_COST, "floor", "schedule", design_text="cheaper"),
            Row(Figure(m.ALLOCATED, "chat's GPU-hours", ("deployments", CHAT), better=LOWER, unit="GPU-h"),
                "hpa", "schedule", design_text="fewer"),
            Row(_COST, "hpa", "schedule", design_text="cheaper"),
            Row(Figure(m.PROVISIONED, "L40S GPU-hours provisioned", ("pools", "gpu-l40s"), better=LOWER,
                       unit="GPU-h"), "hpa", "schedule", context=True),
            Row(Figure(m.SLOW, "chat's slow requests", ("deployments", CHAT), better=LOWER), "hpa", "schedule",
                context=True),
            Row(Figure(m.TTG_P95, "chat's time to GPU p95 (min)", ("deployments", CHAT), better=LOWER, unit="min"),
                "hpa", "schedule", context=True),
        ),
        depends="prod's chat (floor 8 replicas 08:00-20:00 Berlin on weekdays, minReplicas 2, realtime HPA), a "
        "request curve of 24 rps by day and 2 at night (8 per replica, an assumption); prod's L40S headroom is "
        "taken off in every variant so the pool's cost is chat's.",
        why="against the floor held all week the schedule gives back nights and the weekend. Against the HPA "
        "alone it adds chat's GPU-hours (the HPA follows the load down at night either way) and buys the morning "
        "ramp without slow requests, yet the pool costs less: with the HPA alone, replicas added a few at a time "
        "land on 4-GPU nodes launched a batch at a time and spread by kube-scheduler's LeastAllocated score, so "
        "part-full nodes stay that consolidation cannot empty; the schedule's floor fills its nodes at once. "
        "That saving is packing, not the schedule's hours.",
    ),
    Claim(
        id="surge",
        claim="A surge is served from another model's idle GPUs (shared cohort, Kueue borrowing)",
        stack="dev",
        workload="workloads/claims/surge-shared.yaml",
        seeds=10,
        variants=(
            Variant("dedicated", "dedicated, each its peak", _DEDICATED_QUOTAS, of=STATIC),
            Variant("headroom", "autoscaled + 2 warm GPUs",
                    (*_SHARED_QUOTAS, (f"{L40S}.warmStart", {"headroom": {"gpus": 2}}))),
            Variant("cold", "autoscaled, borrowing", _SHARED_QUOTAS),
            Variant("shared", "shared cohort, fixed pool",
                    (*_SHARED_QUOTAS, (f"{L40S}.gpus", 3)), of=ablation(variants.AUTOSCALING)),
            # B's demand back in the middle of A's surge: B reclaims the quota A borrowed (reclaimWithinCohort).
            Variant("contended", "shared, B back at 14:10",
                    (*_SHARED_QUOTAS, (f"{L40S}.gpus", 3)),
                    (("inference[model-b].rate.surges", [{"at": "8h10m", "duration": "20m", "factor": 30}]),),
                    of=ablation(variants.AUTOSCALING)),
        ),
        rows=(
            Row(Figure(m.TTG_P95, "chat's time to GPU p95 (min)", ("deployments", CHAT), better=LOWER, unit="min"),
                "dedicated", "shared", design_text="fast"),
            Row(_COST, "dedicated", "shared", design_text="cheaper"),
            Row(Figure(m.TTG_P95, "chat's time to GPU p95 (min)", ("deployments", CHAT), better=LOWER, unit="min"),
                "headroom", "shared", design_text="fast"),
            Row(_COST, "headroom", "shared", design_text="cheaper"),
            Row(Figure(m.TTG_P95, "chat's time to GPU p95 (min)", ("deployments", CHAT), better=LOWER, unit="min"),
                "cold", "shared", design_text="fast"),
            Row(_COST, "cold", "shared", design_text="cheaper"),
            Row(Figure(m.SLOW, "chat's slow requests", ("deployments", CHAT), better=LOWER), "cold", "shared",
                context=True),
            Row(Figure(m.restarts(PREEMPTION), "replicas preempted by Kueue", better=LOWER), "shared", "contended",
                context=True),
            Row(Figure(m.SLOW, "chat's slow requests", ("deployments", CHAT), better=LOWER), "shared", "contended",
                context=True),
        ),
        depends="Model B's GPUs still running when A surges: the shared pool is the design's primary pool, fixed "
        "nodes of the two quotas' sum (3 GPUs, 12 slices: dev's pool cut to 3 GPUs, without autoscaling); with "
        "dev's 5-minute WhenEmpty consolidation B's nodes are gone within minutes of its ramp-down and borrowing "
        "alone brings no GPU (the autoscaled rows). Quotas are edits of dev's: A 4 slices nominal and 8 to "
        "borrow, B 8 (shared, autoscaled, headroom); 8 each (dedicated: the fair static baseline).",
        why="Kueue lends B's idle quota to A's surge and the fixed pool has the GPUs, so no node is launched; a "
        "replica landing where A's image is not yet pulled still pulls it. The fixed pool holds the two quotas' "
        "sum (12 slices) all day, less than dedicated capacity for both peaks (16); autoscaling costs least and "
        "waits a node launch. When B's demand comes back during the surge, Kueue reclaims B's quota from A "
        "(reclaimWithinCohort: Any) and preempts the replicas A borrowed it for. The headroom's two warm GPUs "
        "are packed onto one node of the cheapest type that holds both (`GpuPoolPlan.headroom_nodes`), a 4-GPU "
        "g6e.12xlarge on dev, kept all day.",
    ),
)
