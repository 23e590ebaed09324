"""`python -m offline.expiry_study`: what a GPU pool's `expireAfter` costs in lost work, on the same seeds.

Runs a workload (the Alibaba trace on prod by default) through the stack as it is and through variants of its
GPU pools' node lifetime, every variant on the same seeds (sim/rng.py: the arrivals, durations and spot
interruptions each come from their own stream), and prints the replicated figures (mean and 95 % interval)
as the markdown table docs/simulation.md quotes:

    shipped          the stack's expireAfter on each GPU pool
    never            expireAfter: Never on every GPU pool (new AMIs arrive by drift when the pin moves)
    do-not-disrupt   the stack's expireAfter, with every job's and trace task's pods annotated
                     karpenter.sh/do-not-disrupt: the expired node's drain waits for them until its
                     terminationGracePeriod (models/karpenter/disruption.py)
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sim import measures as m
from sim.experiment import Scenario, replicate, run_many
from sim.workload import load_workload

from .project import PROJECT_DIR
from .stack import load_config, load_stack, stack_config_from_mapping

WORKLOAD = PROJECT_DIR / "workloads" / "alibaba-gpu-2023.yaml"
VARIANTS = ("shipped", "never", "do-not-disrupt")
NODE_POOLS = "gpu-platform:nodePools"

# (metric id, label, digits)
ROWS = (
    (m.ALLOCATED, "GPU-hours allocated", 0),
    (m.USEFUL, "useful", 0),
    (m.lost("expiry"), "lost: expiry", 0),
    (m.lost("interruption"), "lost: interruption", 0),
    (m.lost("preemption"), "lost: preemption", 0),
    (m.SERVICE_DOWN, "service hours down after evictions", 0),
    (m.disrupted("expiry"), "nodes expired", 1),
    (m.COST, "cost USD", 0),
    (m.USD_PER_USEFUL, "USD per useful GPU-hour", 2),
    (m.FINISHED, "workloads finished", 0),
    (m.NEVER_STARTED, "never started by the end", 0),
)


def variant_config(stack: str, variant: str) -> Any:
    """The stack's derived config with the variant's GPU pools (the stack file itself is left as it is)."""
    loaded = load_stack(stack)
    if variant != "never":
        return load_config(loaded)
    import yaml

    document = yaml.safe_load((PROJECT_DIR / f"Pulumi.{stack}.yaml").read_text())["config"]
    for pool in document[NODE_POOLS]:
        pool["expireAfter"] = "Never"
    return load_config(stack_config_from_mapping(stack, document))


def cell(figure: Mapping[str, Any] | None, digits: int) -> str:
    if not figure or figure.get("mean") is None:
        return "-"
    text = f"{figure['mean']:,.{digits}f}"
    if figure.get("low") is not None and (figure["low"], figure["high"]) != (figure["mean"], figure["mean"]):
        text += f" ({figure['low']:,.{digits}f} to {figure['high']:,.{digits}f})"
    return text


def main(stack: str, workload_path: Path, seeds: list[int], workers: int | None) -> None:
    workload = load_workload(workload_path)
    results = {}
    for variant in VARIANTS:
        chosen = workload.model_copy(update={"do_not_disrupt": True}) if variant == "do-not-disrupt" else workload
        scenario = Scenario(variant_config(stack, variant), chosen, str(workload_path), PROJECT_DIR)
        results[variant] = replicate(run_many(scenario, seeds, workers))["run"]
    print(f"stack {stack}, {workload_path.name}, seeds {seeds[0]}-{seeds[-1]} (mean and 95 % interval)\n")
    print("| | " + " | ".join(f"`{v}`" for v in VARIANTS) + " |")
    print("|---" * (len(VARIANTS) + 1) + "|")
    for metric, label, digits in ROWS:
        print(f"| {label} | " + " | ".join(cell(results[v].get(metric), digits) for v in VARIANTS) + " |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m offline.expiry_study", description=__doc__.split("\n\n")[0])
    parser.add_argument("--stack", default="prod")
    parser.add_argument("--workload", type=Path, default=WORKLOAD)
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0 to N-1")
    parser.add_argument("--workers", type=int)
    args = parser.parse_args()
    main(args.stack, args.workload, list(range(args.seeds)), args.workers)
