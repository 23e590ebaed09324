"""The variants a run can be compared with, as data: the fair static baseline, and each mechanism switched off.

A variant is a row of `VARIANTS`: a name, the mechanisms it switches off, whether its capacity is each
tenant's nominal quota bought as fixed nodes (the static baseline), and the assumptions the report states
for it. `sim/experiment.py` turns a row into a `Scenario` (`Scenario.variant(name)`); the engine reads the
switched-off set (`Options.without`) at the few places a mechanism acts:

    borrowing      every ClusterQueue's borrowingLimit and lendingLimit 0 (sim/admission.py)
    autoscaling    Karpenter launches and removes nothing: each pool's nodes launched Ready at the start,
                   pinned at its NodePool limit (sim/baseline.py); a spot node reclaimed is replaced in place
    consolidation  nodes are never consolidated (expiry and spot interruptions still remove them)
    spot           every flavor and pool that would launch spot launches on-demand, at the on-demand price
    working-hours  the deployment keeps its working-hours floor all week (sim/serving.py)
    headroom       no placeholder pods, and the NodePool limit without the headroom (sim/warm_start.py)
    image-snapshot a replica's image pulled from the registry on every node (sim/warm_start.py)
    model-source   weights downloaded from the Hub, not streamed from S3 (sim/warm_start.py)

Every variant runs on the same seeds, and every purpose draws from its own stream (sim/rng.py), so a
variant sees the same arrivals and durations as the full platform: the difference is the mechanism's.
"""

from __future__ import annotations

from dataclasses import dataclass

# Imports nothing else of ours: `python -m offline` reads MECHANISMS for its options without loading the simulator.

BORROWING = "borrowing"
AUTOSCALING = "autoscaling"
CONSOLIDATION = "consolidation"
SPOT = "spot"
WORKING_HOURS = "working-hours"
HEADROOM = "headroom"
IMAGE_SNAPSHOT = "image-snapshot"
MODEL_SOURCE = "model-source"
# Every mechanism a run can switch off, in the order the report lists them.
MECHANISMS = (BORROWING, AUTOSCALING, CONSOLIDATION, SPOT, WORKING_HOURS, HEADROOM, IMAGE_SNAPSHOT, MODEL_SOURCE)

WITHOUT_MEANS = {
    BORROWING: "every ClusterQueue's borrowingLimit and lendingLimit 0: a tenant runs on its nominal quota alone",
    AUTOSCALING: "no node autoscaling: each pool's nodes launched at the start and kept, pinned at its NodePool limit "
    "(the cheapest whole nodes within it, config/capacity.py cheapest_nodes): each capacity type's nominal quota, "
    "the rest on the type Karpenter launches by default; never consolidated or expired, a reclaimed spot node "
    "replaced in place",
    CONSOLIDATION: "Karpenter never consolidates a node (expiry and spot interruptions still remove nodes)",
    SPOT: "spot capacity replaced by on-demand at the on-demand price: no interruptions, no spot discount",
    WORKING_HOURS: "no working-hours schedule: each deployment keeps its working-hours floor all week",
    HEADROOM: "no warm headroom: no placeholder pods, and the NodePool limit without the headroom's GPUs",
    IMAGE_SNAPSHOT: "no image snapshot: a replica pulls its image from the registry on every new node",
    MODEL_SOURCE: "no S3 model source: weights downloaded from the Hub on every replica start",
}

SIMULATED = "simulated"
STATIC = "static"
# What the fair static baseline leaves out of the platform: it buys fixed capacity instead.
STATIC_WITHOUT = frozenset({BORROWING, AUTOSCALING, CONSOLIDATION, SPOT, HEADROOM})

STATIC_ASSUMPTIONS = (
    "Each tenant's nominal quota as its own always-on capacity: no borrowing or lending, no node autoscaling, "
    "no consolidation, no headroom, no spot.",
    "Only quota a workload item can use is bought: a tenant's nominal quota on a flavor that none of its work may "
    "be placed on gets no nodes, so a pool no workload item can use has no static capacity (the pool table says so).",
    "Time-sliced pools are bought in physical GPUs: a pool's slices divided by its replicas, rounded up.",
    "Nodes: the cheapest whole nodes of the pool's instance types that hold those GPUs within the NodePool limit "
    "(config/capacity.py cheapest_nodes, the rule the summary prices a pool with); where no set within the limit "
    "holds them all, the most GPUs the limit allows.",
    "Priced on-demand in the stack's region, less the stated commitment discount (a Savings Plan or reserved "
    "instances for always-on nodes); the platform's own nodes pay on-demand or spot, with no discount.",
    "A tenant with no nominal quota (best-effort work that only borrows) gets no capacity: its work is never "
    "admissible (quota).",
    "Inference deployments scale by their HPA within their tenant's fixed capacity; nodes run from the first "
    "second of the run to the last, empty days included.",
)


# How a trace's fractional tasks share GPUs (sim/sharing.py says what each means); `all` runs every runnable one.
SHARING_MODES = ("whole", "time-slice", "mig", "dra", "kai")
SHARING_ALL = "all"


def ablation(mechanism: str) -> str:
    """The variant's name with one mechanism off: `without-borrowing`."""
    return f"without-{mechanism}"


@dataclass(frozen=True)
class Variant:
    """One way to run a scenario: which mechanisms are off, and whether its capacity is the static baseline's."""

    name: str
    without: frozenset[str]
    static_baseline: bool
    assumptions: tuple[str, ...]


VARIANTS: dict[str, Variant] = {
    SIMULATED: Variant(SIMULATED, frozenset(), False, ("The stack as configured.",)),
    STATIC: Variant(STATIC, STATIC_WITHOUT, True, STATIC_ASSUMPTIONS),
    **{ablation(m): Variant(ablation(m), frozenset({m}), False, (f"Without {m}: {WITHOUT_MEANS[m]}.",)) for m in MECHANISMS},
}
# One mechanism off at a time, in MECHANISMS' order: what `--ablations` runs.
ABLATIONS = tuple(ablation(m) for m in MECHANISMS)


def assumptions(without: frozenset[str], static_baseline: bool) -> list[str]:
    """What a run with these switches assumes, in the report's words."""
    if static_baseline:
        return list(STATIC_ASSUMPTIONS)
    if not without:
        return list(VARIANTS[SIMULATED].assumptions)
    return [f"Without {m}: {WITHOUT_MEANS[m]}." for m in MECHANISMS if m in without]
