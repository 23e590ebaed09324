"""`python -m offline render --stack dev --out build/dev` and `python -m offline check --stack dev`.

`python -m offline vendor [CHART ...]` refreshes upstream/ for the pinned chart versions.

`python -m offline diff --stack dev [--base REF]` prints, as markdown, what the working tree changes
in a stack's render against the same stack at a git ref (offline/diff.py); exit 0 no change, 1
changed, 2 a render failed.

`python -m offline check-manifest --stack dev --tenant T FILE...` tells a tenant what the cluster would do with
its workloads (offline/check_manifest.py); exit 0 nothing refuses them, 1 something would, 2 unreadable input.

`python -m offline simulate --stack dev --workload workloads/design-surge.yaml [--baseline static]
[--ablations] [--without MECHANISM] [--commitment-discount SHARE] [--seed N] [--seeds COUNT|FIRST-LAST]
[--out DIR]` runs a workload through the stack's derived config and writes report.json, report.md and plots
(sim/); exit 2 on an invalid stack, workload, seed list or discount.

`python -m offline claims [--claim ID ...] [--out DIR] [--write-docs]` runs the design's five claims
(sim/claims.py) from replications and writes claims.json and claims.md (offline/claims.py).

`python -m offline plan --stack dev --workload workloads/design-surge.yaml --slo 'production.p95_time_to_start<=15m'
[--slo ...] [--trials N] [--seeds N] [--verify-seeds N] [--seed N] [--batch N] [--workers N] [--out DIR] [--resume]`
searches the stack's capacity knobs for the cheapest stack that meets the service levels (offline/plan.py,
docs/capacity-planning.md); exit 1 when no candidate meets them, 2 on bad input.

`python -m offline validate build/dev [--k8s-version 1.35]` checks a render against the Kubernetes
version and the vendored upstream schemas (offline/validate.py); exit 1 on problems, 2 on usage errors.

Exit codes: 0 done, 1 the engine refused the program (a duplicate URN), 2 invalid stack config
(every problem on stderr). A render that fails leaves no render behind: the output directory's files
are removed and RENDER_FAILED.txt says why, so a stale build/<stack> is never mistaken for the
current one.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from config import ConfigError, PlatformConfig
from config.errors import counted
from sim.variants import MECHANISMS, SHARING_ALL, SHARING_MODES

from .project import PROJECT_DIR
from .stack import StackConfig, StackNotFound, load_config, load_stack

EXIT_ENGINE_REFUSED = 1
EXIT_INVALID_CONFIG = 2


def mark_failed(out_dir: Path, lines: list[str]) -> None:
    """Take the previous render out of `out_dir` and leave the reason in its place."""
    from .render import FAILED_MARKER, clear_render

    if out_dir.exists():
        clear_render(out_dir)
        (out_dir / FAILED_MARKER).write_text("\n".join(lines) + "\n")


def example_value_warnings(config: PlatformConfig) -> list[str]:
    """What the render accepts but a real deploy cannot use: the example values a real `pulumi up` refuses
    (config/placeholders.py), and documentation CIDRs it would deploy with but no one could reach."""
    from config.placeholders import documentation_cidr_warnings, placeholder_problems

    refused = [f"{line} (a real `pulumi up` refuses it)" for line in placeholder_problems(config)]
    return refused + documentation_cidr_warnings(config)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give 1 or more")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m offline", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    render = commands.add_parser("render", help="render a stack's desired state into a directory")
    render.add_argument("--stack", default="dev")
    render.add_argument("--out", type=Path, help="output directory (default build/<stack>)")
    check = commands.add_parser("check", help="validate a stack's config only")
    check.add_argument("--stack", default="dev")
    version = commands.add_parser("kubernetes-version", help="print a stack's Kubernetes version (for the conformance check)")
    version.add_argument("--stack", default="dev")
    diff = commands.add_parser("diff", help="review what the working tree changes in a stack's render against a git ref")
    diff.add_argument("--stack", default="dev")
    diff.add_argument("--base", default="HEAD", help="git ref to compare against (default HEAD)")
    validate = commands.add_parser("validate", help="check a render against Kubernetes and the vendored upstream schemas")
    validate.add_argument("render_dir", type=Path, metavar="RENDER_DIR")
    validate.add_argument("--k8s-version", help="Kubernetes minor to check against (default: the one the render deploys)")
    manifest = commands.add_parser(
        "check-manifest", help="a tenant's pre-flight check: what the cluster would do with its workloads (docs/tenants.md)"
    )
    manifest.add_argument("--stack", default="dev")
    manifest.add_argument("--tenant", required=True)
    manifest.add_argument("files", nargs="+", type=Path, metavar="FILE")
    vendor = commands.add_parser("vendor", help="fetch the pinned charts' upstream files into upstream/")
    vendor.add_argument("charts", nargs="*", metavar="CHART", help="charts of config/versions.py (default: all)")
    vendor.add_argument("--from-git", action="append", default=[], metavar="DIR",
                        help="a git dir to read a repository from instead of cloning it: owner/name=DIR, or a DIR "
                        "whose origin remote or `<owner>+<name>` folder names it (repeatable)")
    metrics = commands.add_parser("vendor-metrics", help="fetch the pinned exporters' metric definitions into upstream/metrics/")
    metrics.add_argument("--from-git", action="append", default=[], metavar="DIR", help="as for `vendor`")
    metrics.add_argument("--from-wheel", action="append", default=[], metavar="PACKAGE=WHEEL",
                         help="a released wheel to read a PyPI source from (vllm=vllm-0.11.0-...whl)")
    simulate = commands.add_parser("simulate", help="replay a workload through a stack: utilisation, waits, time to GPU, cost")
    simulate.add_argument("--stack", default="dev")
    simulate.add_argument("--workload", type=Path, required=True, help="a workload file, e.g. workloads/design-surge.yaml")
    simulate.add_argument("--baseline", choices=["static"], help="also run each tenant's nominal quota as fixed capacity")
    simulate.add_argument("--seed", type=int, default=0)
    simulate.add_argument("--seeds", help="replications: a count from --seed (10) or a range (3-12); figures as mean and 95%% CI")
    simulate.add_argument("--out", type=Path, help="output directory (default build/sim-<stack>-<workload>[-without-...])")
    simulate.add_argument(
        "--without", action="append", default=[], choices=list(MECHANISMS),
        help="a what-if: run as if the platform's mechanism were off (repeatable; docs/simulation.md says what each means)",
    )
    simulate.add_argument("--ablations", action="store_true",
                          help="also run each mechanism switched off in turn, on the same seeds, and compare")
    simulate.add_argument("--sharing", choices=[*SHARING_MODES, SHARING_ALL],
                          help="how the trace's fractional tasks share GPUs (docs/fractional-gpus-measured.md); all: "
                          "every mode on the same seeds, compared with whole GPUs")
    simulate.add_argument("--commitment-discount", default="0", metavar="SHARE",
                          help="off the static baseline's on-demand prices, e.g. 0.3 (stated in the report; default 0)")
    fleet = commands.add_parser("simulate-fleet", help="a fleet of worker stacks behind one MultiKueue queue against "
                                "the same clusters each with its own queues (docs/fleet-simulation.md)")
    fleet_from = fleet.add_mutually_exclusive_group(required=True)
    fleet_from.add_argument("--workers", help="worker stacks, comma-separated: names or stack file paths")
    fleet_from.add_argument("--stack", help="a manager stack: its gpu-platform:fleet workers and workerLostTimeout")
    fleet.add_argument("--workload", type=Path, required=True)
    fleet.add_argument("--seed", type=int, default=0)
    fleet.add_argument("--seeds", help="replications: a count from --seed (10) or a range (3-12)")
    fleet.add_argument("--dispatcher", choices=["all-at-once", "incremental"], default="all-at-once")
    fleet.add_argument("--step-size", type=int, default=3, help="the incremental dispatcher's stepSize (default 3)")
    fleet.add_argument("--dispatch-latency", type=float, default=2.0, metavar="SECONDS",
                       help="manager to worker and back, each way (default 2)")
    fleet.add_argument("--split", choices=["alternate", "first"], default="alternate",
                       help="each workload's home cluster: alternate across the workers, or all on the first")
    fleet.add_argument("--out", type=Path, help="output directory (default build/sim-fleet-<workers>-<workload>)")
    commands.add_parser("metrics-inventory", help="regenerate upstream/metrics-inventory.json from upstream/metrics/")
    claims = commands.add_parser("claims", help="the design's five claims from replications: build/claims/claims.json, .md")
    claims.add_argument("--claim", action="append", default=[], help="run only this claim (repeatable)")
    claims.add_argument("--out", type=Path, default=Path("build") / "claims")
    claims.add_argument("--write-docs", action="store_true",
                        help="also write docs/simulation-claims.json and the table in docs/simulation.md")
    planner = commands.add_parser("plan", help="the cheapest stack that meets a workload's service levels, by simulation")
    planner.add_argument("--stack", default="dev")
    planner.add_argument("--workload", type=Path, required=True, help="a workload file, e.g. workloads/design-surge.yaml")
    planner.add_argument("--slo", action="append", default=[], metavar="SCOPE.METRIC<=BOUND",
                         help="a service level (repeatable), e.g. 'production.p95_time_to_start<=15m', "
                         "'inference.unserved<=1%%' (docs/capacity-planning.md has the grammar)")
    planner.add_argument("--trials", type=_positive, default=40, help="candidate stacks to simulate (default 40)")
    planner.add_argument("--seeds", type=_positive, default=3, help="seeds each candidate runs on (default 3)")
    planner.add_argument("--verify-seeds", type=_positive, default=5,
                         help="fresh seeds for the chosen stack and the why table (default 5)")
    planner.add_argument("--seed", type=int, default=0, help="the sampler's and the seeds' start (default 0)")
    planner.add_argument("--batch", type=_positive, default=4,
                         help="candidates asked of the sampler at once (default 4); the result depends on it, not on --workers")
    planner.add_argument("--workers", type=_positive, help="processes (default: one per core)")
    planner.add_argument("--out", type=Path, help="output directory (default build/plan-<stack>-<workload>)")
    planner.add_argument("--tighten", type=int, default=24, metavar="ROUNDS",
                         help="rounds lowering the cheapest stack's knobs one at a time after the search (default 24; 0: none)")
    planner.add_argument("--range", type=_positive, default=2, metavar="FACTOR",
                         help="each knob searched from 0 up to FACTOR times its value in the stack (default 2)")
    planner.add_argument("--floor", type=float, default=0.0, metavar="FACTOR",
                         help="each knob searched from FACTOR times its value in the stack (default 0): keeps a search off "
                         "stacks far too small, whose runs cost the most")
    planner.add_argument("--no-early-stop", dest="early_stop", action="store_false",
                         help="simulate every candidate to the end, even once a level is certainly missed "
                         "(sim/early_stop.py): every figure of the frontier measured, at the cost of the slowest runs")
    planner.add_argument("--resume", action="store_true", help="carry on the search in --out's journal")
    args = parser.parse_args(argv)

    if args.command == "plan":
        from .plan import Options
        from .plan import main as plan_main

        return plan_main(args.stack, args.workload, args.slo, args.out,
                         Options(args.trials, args.seeds, args.verify_seeds, args.seed, args.batch, args.workers,
                                 args.resume, args.tighten, args.range, args.floor, args.early_stop))

    if args.command == "claims":
        from .claims import main as claims_main

        return claims_main(args.out, args.write_docs, args.claim)

    if args.command == "simulate-fleet":
        from sim.cli import seed_list

        from .simulate_fleet import main as fleet_main

        try:
            fleet_seeds = seed_list(args.seeds, args.seed) if args.seeds else [args.seed]
        except ValueError as err:
            print(f"error: {err}", file=sys.stderr)
            return EXIT_INVALID_CONFIG
        return fleet_main(args.workers.split(",") if args.workers else [], args.workload, args.out, seeds=fleet_seeds,
                          dispatcher=args.dispatcher, step_size=args.step_size, latency=args.dispatch_latency,
                          split=args.split, manager=args.stack)

    if args.command == "validate":
        from .validate import main as validate_main

        return validate_main(args.render_dir, args.k8s_version)

    if args.command == "check-manifest":
        from .check_manifest import main as check_manifest_main

        return check_manifest_main(args.stack, args.tenant, args.files)

    if args.command == "diff":
        from .diff import main as diff_main

        return diff_main(args.stack, args.base)

    if args.command == "vendor":
        from .vendor import main as vendor_main

        return vendor_main(args.charts, args.from_git)

    if args.command == "vendor-metrics":
        from .metrics_inventory import vendor_metric_sources

        return vendor_metric_sources(args.from_git, args.from_wheel)

    if args.command == "metrics-inventory":
        from .metrics_inventory import write_inventory

        return write_inventory()

    out_dir = getattr(args, "out", None) or Path("build") / args.stack
    try:
        stack = load_stack(args.stack)
        config = load_config(stack)
    except StackNotFound as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_INVALID_CONFIG
    except ConfigError as err:
        lines = [f"Pulumi.{args.stack}.yaml: invalid stack config ({counted(len(err.problems), 'problem')}):"]
        lines += [f"  {problem}" for problem in err.problems]
        print("\n".join(lines), file=sys.stderr)
        if args.command == "render":
            mark_failed(out_dir, lines)
        return EXIT_INVALID_CONFIG

    if args.command in ("check", "render"):
        for line in example_value_warnings(config):
            print(f"Pulumi.{args.stack}.yaml: warning: {line}", file=sys.stderr)
    if args.command == "check":
        from .fleet import fleet_check
        from .versions_check import chart_override_problems
        refused = chart_override_problems(config.versions.charts, config.charts)
        refused = [f"Pulumi.{args.stack}.yaml: {line}" for line in refused] + fleet_check(args.stack, config)
        if refused:
            print("\n".join(refused), file=sys.stderr)
            return EXIT_INVALID_CONFIG
        print("ok")
        return 0
    if args.command == "render" and config.fleet.role == "manager":
        # A manager's render renders its workers' stacks, which must exist and agree with it.
        from .fleet import fleet_check
        refused = fleet_check(args.stack, config)
        if refused:
            print("\n".join(refused), file=sys.stderr)
            mark_failed(out_dir, refused)
            return EXIT_INVALID_CONFIG
    if args.command == "simulate":
        from sim.cli import commitment_discount, seed_list
        from sim.cli import run as simulate_main

        try:
            seeds = seed_list(args.seeds, args.seed) if args.seeds else None
            discount = commitment_discount(args.commitment_discount)
        except ValueError as err:
            print(f"error: {err}", file=sys.stderr)
            return EXIT_INVALID_CONFIG
        return simulate_main(config, args.stack, args.workload, args.out, seed=args.seed, baseline=args.baseline,
                             project_dir=PROJECT_DIR, without=frozenset(args.without), seeds=seeds,
                             ablations=args.ablations, discount=discount, sharing=args.sharing)
    if args.command == "kubernetes-version":
        print(config.cluster.kubernetes_version)
        return 0
    return _render(stack, config, out_dir)


def _render(stack: StackConfig, config: PlatformConfig, out_dir: Path) -> int:
    # Imported here: `check` must stay fast and must not need the cloud SDKs.
    from .engine import DuplicateUrnError, run_program
    from .render import write_render

    try:
        recording = run_program(stack.stack, stack.values, stack.secret_keys)
    except DuplicateUrnError as err:
        lines = [f"stack {stack.stack}: the engine refuses the program:", *(f"  {line}" for line in str(err).splitlines())]
        print("\n".join(lines), file=sys.stderr)
        mark_failed(out_dir, lines)
        return EXIT_ENGINE_REFUSED
    written = write_render(recording, config, out_dir)
    print(f"rendered stack {stack.stack}: {len(recording.resources)} resources -> {out_dir}/ ({len(written)} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
