"""`python -m offline.bench` (`make bench`): how the render scales with tenants.

For 10, 100 and 1000 synthetic tenants it renders a prod-shaped stack in a fresh process and prints
wall seconds, resources registered and milliseconds per resource, next to the SDK floor: the same
number of trivial resources through the same mock engine. The ratio shows what the platform's own
code costs on top of Pulumi; a ratio that grows with the tenant count means something is not linear.
Figures only: nothing here passes or fails.
"""

from __future__ import annotations

import argparse
import copy
import json
import subprocess
import sys
import time

import yaml

from .engine import PROJECT_DIR

SIZES = (10, 100, 1000)


def prod_document() -> dict:
    """The `config:` mapping of the project's Pulumi.prod.yaml, the stack the benchmark is shaped like."""
    return yaml.safe_load((PROJECT_DIR / "Pulumi.prod.yaml").read_text())["config"]


def synthetic_stack(tenants: int, base: dict) -> dict:
    """`base`'s cluster and pools (a prod-shaped stack's `config:` mapping), with the H100 pool sized to give
    every tenant one guaranteed GPU and the CPU pool's limits raised to every tenant's 4 vCPUs and 16 GiB."""
    config = copy.deepcopy(base)
    pools = config["gpu-platform:nodePools"]
    pools[0]["gpus"] = max(8, -(-tenants // 8) * 8)
    cpu_pool = config["gpu-platform:cpuPool"]
    cpu_pool["cpuLimit"] = max(cpu_pool["cpuLimit"], 4 * tenants)
    cpu_pool["memoryLimitGiB"] = max(cpu_pool["memoryLimitGiB"], 16 * tenants)
    config["gpu-platform:tenants"] = [
        {
            "name": f"team-{index:04d}",
            "businessUnit": ("research", "product")[index % 2],
            "priority": "standard",
            "gpu": {"h100-on-demand": {"nominal": 1, "borrowingLimit": 1 if tenants > 1 else 0}},
            "cpu": 4,
            "memoryGiB": 16,
            "admins": [f"arn:aws:iam::111122223333:role/team-{index:04d}-admin"],
        }
        for index in range(tenants)
    ]
    return config


def measure_platform(tenants: int) -> dict:
    from .engine import run_program
    from .stack import stack_config_from_mapping

    stack = stack_config_from_mapping("bench", synthetic_stack(tenants, prod_document()))
    started = time.perf_counter()
    recording = run_program("bench", stack.values, stack.secret_keys)
    return {"seconds": time.perf_counter() - started, "resources": len(recording.resources)}


def measure_floor(resources: int) -> dict:
    import pulumi

    from .engine import run_program

    class Trivial(pulumi.CustomResource):
        def __init__(self, name: str):
            super().__init__("bench:index:Trivial", name, {})

    def program() -> None:
        for index in range(resources):
            Trivial(f"trivial-{index}")

    started = time.perf_counter()
    recording = run_program("bench", {"aws:region": "us-east-1"}, program=program)
    return {"seconds": time.perf_counter() - started, "resources": len(recording.resources)}


def _in_fresh_process(kind: str, size: int) -> dict:
    """Each measurement in its own interpreter: no warm caches or leftover state from the one before."""
    result = subprocess.run(
        [sys.executable, "-m", "offline.bench", "--one", kind, str(size)],
        cwd=PROJECT_DIR, capture_output=True, text=True, check=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m offline.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=list(SIZES), help="tenant counts (default 10 100 1000)")
    parser.add_argument("--one", nargs=2, metavar=("KIND", "SIZE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        kind, size = args.one[0], int(args.one[1])
        print(json.dumps(measure_platform(size) if kind == "platform" else measure_floor(size)))
        return 0

    print(f"{'tenants':>8} {'resources':>10} {'seconds':>9} {'ms/res':>8} {'floor s':>9} {'floor ms/res':>13} {'ratio':>6}")
    for tenants in args.sizes:
        platform = _in_fresh_process("platform", tenants)
        floor = _in_fresh_process("floor", platform["resources"])
        per_resource = platform["seconds"] * 1000 / platform["resources"]
        floor_per_resource = floor["seconds"] * 1000 / floor["resources"]
        print(
            f"{tenants:>8} {platform['resources']:>10} {platform['seconds']:>9.2f} {per_resource:>8.2f} "
            f"{floor['seconds']:>9.2f} {floor_per_resource:>13.2f} {platform['seconds'] / floor['seconds']:>6.2f}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
