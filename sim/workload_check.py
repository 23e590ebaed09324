"""A workload file against the stack it runs on, before anything runs: one line per mistake, with the file,
the line, the key path, the value and the fix (`WorkloadError`).

- names: every tenant, deployment, flavor, priority tier and instance family the file names exists in the
  stack (the closest real name is offered for a misspelt one), and the flavors a pod may use hand out one
  kind of unit;
- time: a surge or a listed arrival at or after the run's end never happens;
- size: the run is finite and its memory bounded: at most MAX_SAMPLES samples of the plots' series and
  MAX_ARRIVALS expected arrivals per job stream (sim/workload.py bounds each value on its own);
- traces: the file exists under the project directory, is a CSV with the format's columns, and every class
  the workload maps is a class of the trace;
- `check_runnable`: every job stream's shape can run on the stack (sim/admissibility.py's rule, the one
  the report counts never-admissible work by): a gang that can never fit, a pod larger than any node or
  over any quota the tenant can get is a mistake in a file someone wrote, not a wait.
"""

from __future__ import annotations

import csv
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from config import PlatformConfig
from config.errors import did_you_mean
from models.karpenter.provisioning import LAUNCH_TO_READY

from . import admissibility, claims_placement, warm_start
from .admission import kueue_for
from .arrivals import job_group
from .engine import Options, Simulation
from .queueing import QueuedWorkload
from .trace import ALIBABA_COLUMNS, ALIBABA_GPU_2023
from .workload import Locator, TraceSource, Workload, WorkloadError, seconds

MAX_SAMPLES = 200_000
MAX_ARRIVALS = 1_000_000
# A trace's header and classes are read from at most this much of the file; a recording is tens of MB at most.
MAX_TRACE_BYTES = 512 * 1024 * 1024


def check(config: PlatformConfig, workload: Workload, source: str = "workload", *, project_dir: Path = Path("."),
          locator: Locator | None = None) -> None:
    """Names, times, size and traces; raise `WorkloadError` with one line per problem."""
    found = _Problems(locator or Locator(source))
    _names(config, workload, found)
    _times(workload, found)
    _size(workload, found)
    for index, trace in enumerate(workload.traces):
        _trace(trace, project_dir, ("traces", index), found)
    found.raise_if_any()


def check_runnable(config: PlatformConfig, workload: Workload, source: str = "workload", *,
                   locator: Locator | None = None, without: frozenset[str] = frozenset()) -> None:
    """Each job stream's jobs can run at all on the stack as configured (with `without`'s features off)."""
    found = _Problems(locator or Locator(source))
    sim = Simulation(config, workload, kueue_for(config, False), Options(without=without))
    for index, stream in enumerate(workload.jobs):
        group = job_group(sim, stream, 0.0)
        queued = QueuedWorkload(group.key, group.tenant, group.priority, 0.0, group.size, group.units_per_pod,
                                group.flavors, group.claim.charge if group.claim else ())
        reason = admissibility.never_runs(sim, group, queued)
        where = ("jobs", index)
        if group.claim is not None:
            if reason == admissibility.QUOTA:
                found.add((*where, "claimTemplate"), f"{stream.claim_template}: {stream.pods} pod(s) each charged "
                          f"{', '.join(f'{n} {r}' for r, n in group.claim.charge)} is more than tenant {stream.tenant} can "
                          f"ever be given on {', '.join(group.flavors)}; Kueue leaves the jobs pending for good: ask for "
                          "less, or raise the tenant's quota in the class")
            continue  # the template's count fits one node of each matching pool (config/claims.py)
        slices = max(sim.flavors[name].slices_per_gpu for name in group.flavors) if group.flavors else 1
        shape = (f"{stream.pods} pod{'s' if stream.pods > 1 else ''} of {stream.gpus_per_pod} "
                 f"{'GPUs' if slices == 1 else 'slices'}")
        flavors = ", ".join(group.flavors)
        if reason == admissibility.QUOTA:
            found.add((*where, "gpusPerPod"), f"{stream.gpus_per_pod} ({shape}) is more than tenant {stream.tenant} "
                      f"can ever be given on {flavors}, its nominal quota and all it may borrow; Kueue leaves the jobs "
                      "pending for good: ask for less, or raise the tenant's quota")
        elif reason == admissibility.LARGER_THAN_NODE:
            biggest = max(_biggest(sim, name) for name in group.flavors)
            found.add((*where, "gpusPerPod"), f"{stream.gpus_per_pod} is more than the biggest node of {flavors} "
                      f"holds ({biggest}); at most {biggest}, or split the job into pods")
        elif reason == admissibility.GANG_CANNOT_FIT:
            limits = ", ".join(
                f"{pool.plan.name} {warm_start.limit_gpus(sim, pool)} GPUs"
                for pool in {sim.flavors[name].pool.name: sim.pools[sim.flavors[name].pool.name]
                             for name in group.flavors}.values()
            )
            found.add((*where, "pods"), f"{stream.pods} ({shape}): the gang never fits all at once within the "
                      f"NodePool limit ({limits}) as Karpenter packs nodes; lower pods or gpusPerPod")
    found.raise_if_any()


class _Problems:
    def __init__(self, locator: Locator):
        self.locator = locator
        self.lines: list[tuple[int, str]] = []

    def add(self, loc: Sequence[str | int], message: str) -> None:
        self.lines.append((self.locator.line(loc), self.locator.problem(loc, message)))

    def raise_if_any(self) -> None:
        if self.lines:
            raise WorkloadError([line for _, line in sorted(self.lines, key=lambda item: item[0])])


def _biggest(sim: Simulation, flavor: str) -> int:
    pool = sim.pools[sim.flavors[flavor].pool.name]
    return max((option.gpus for option in pool.options), default=0) * pool.slices_per_gpu


# --- names ------------------------------------------------------------------------------------------


def _names(config: PlatformConfig, workload: Workload, found: _Problems) -> None:
    tenants = {tenant.name: tenant for tenant in config.tenants}
    tiers = config.queueing.priorities
    units = {flavor.name: (repr(sorted(flavor.resources_per_unit.items())), flavor.slices_per_gpu)
             for flavor in config.flavors}

    def tenant(where: tuple[str | int, ...], name: str) -> bool:
        if name in tenants:
            return True
        found.add(where, f"{name!r} is not a tenant of the stack ({', '.join(tenants)}){did_you_mean(name, tenants)}")
        return False

    def flavors(where: tuple[str | int, ...], names: Sequence[str], wanted: list[str] | None, one_kind: bool = True) -> None:
        own = [quota.flavor.name for name in names if name in tenants for quota in tenants[name].quotas]
        for index, flavor in enumerate(wanted or []):
            if flavor not in own:
                whose = " and ".join(names)
                found.add((*where, index), f"{flavor!r} is not a flavor of tenant {whose} ({', '.join(dict.fromkeys(own))})"
                          f"{did_you_mean(flavor, own)}")
        chosen = sorted({name for name in own if wanted is None or name in wanted})
        # A claim's charge is its class's devices whatever the flavor's unit.
        if one_kind and len({units[name] for name in chosen}) > 1:
            found.add(where, f"{', '.join(chosen)} hand out different units (whole GPUs, time slices, MIG layouts); "
                      "a pod requests one kind, so list flavors of one kind")

    def tier(where: tuple[str | int, ...], name: str | None) -> None:
        if name is not None and name not in tiers:
            found.add(where, f"{name!r} is not a tier of queueing.priorities ({', '.join(tiers)}){did_you_mean(name, tiers)}")

    for index, load in enumerate(workload.inference):
        where = ("inference", index)
        if not tenant((*where, "tenant"), load.tenant):
            continue
        declared = sorted(d.name for d in tenants[load.tenant].config.inference)
        if load.deployment in declared and load.spec is not None:
            found.add((*where, "spec"), f"tenant {load.tenant} declares {load.deployment} in the stack; remove spec")
        elif load.deployment not in declared and load.spec is None:
            found.add((*where, "deployment"), f"{load.deployment!r}: tenant {load.tenant} declares no such deployment "
                      f"(it has: {', '.join(declared) or 'none'}), and one it does not declare needs spec"
                      f"{did_you_mean(load.deployment, declared)}")
        elif load.spec is not None:
            own = [quota.flavor.name for quota in tenants[load.tenant].quotas]
            if load.spec.flavor not in own:
                found.add((*where, "spec", "flavor"), f"{load.spec.flavor!r} is not a flavor of tenant {load.tenant} "
                          f"({', '.join(own)}){did_you_mean(load.spec.flavor, own)}")
    names = [stream.name for stream in workload.jobs]
    for index, stream in enumerate(workload.jobs):
        where = ("jobs", index)
        if names.index(stream.name) != index:
            found.add((*where, "name"), f"{stream.name!r} names another stream too; each stream draws its own arrivals "
                      "and durations by its name: rename one")
        if tenant((*where, "tenant"), stream.tenant):
            flavors((*where, "flavors"), [stream.tenant], stream.flavors, one_kind=stream.claim_template is None)
            if stream.claim_template is not None:
                refused = claims_placement.problem(config, tenants[stream.tenant], stream.claim_template, stream.flavors)
                if refused is not None:
                    found.add((*where, refused[0]), refused[1])
        tier((*where, "priority"), stream.priority)
    for index, trace in enumerate(workload.traces):
        for qos, target in trace.classes.items():
            mapped: tuple[str | int, ...] = ("traces", index, "classes", qos)
            known = [tenant((*mapped, "tenants", turn), name) for turn, name in enumerate(target.tenants)]
            if all(known):
                flavors((*mapped, "flavors"), target.tenants, target.flavors)
            tier((*mapped, "priority"), target.priority)
    families = sorted({*LAUNCH_TO_READY, *(t.name.split(".")[0] for plan in config.gpu_pools for t in plan.instance_types)})
    for family in workload.launch_to_ready:
        if family not in families:
            found.add(("launchToReady", family), f"{family!r} is not an instance family of the stack's GPU pools or "
                      f"the model's ({', '.join(families)}){did_you_mean(family, families)}")


# --- time and size ----------------------------------------------------------------------------------


def _times(workload: Workload, found: _Problems) -> None:
    end = seconds(workload.duration)
    after = f"at or after the run's end ({workload.duration}), so it never happens"
    for index, load in enumerate(workload.inference):
        for number, surge in enumerate(load.rate.surges):
            if seconds(surge.at) >= end:
                found.add(("inference", index, "rate", "surges", number, "at"),
                          f"{surge.at!r} is {after}: move it before {workload.duration} or lengthen duration")
    for index, stream in enumerate(workload.jobs):
        for number, offset in enumerate(stream.arrivals.at or []):
            if seconds(offset) >= end:
                found.add(("jobs", index, "arrivals", "at", number),
                          f"{offset!r} is {after}: move it before {workload.duration} or lengthen duration")


def _size(workload: Workload, found: _Problems) -> None:
    end = seconds(workload.duration)
    samples = end // seconds(workload.sample_interval)
    if samples > MAX_SAMPLES:
        shortest = -(-end // MAX_SAMPLES)
        found.add(("sampleInterval",), f"{workload.sample_interval!r} samples the {workload.duration} run {samples:,} "
                  f"times, more than {MAX_SAMPLES:,}: sample every {shortest}s or more")
    for index, stream in enumerate(workload.jobs):
        if stream.arrivals.per_hour is None:
            continue
        hours = min(end, seconds(stream.until) if stream.until else end) / 3600
        expected = stream.arrivals.per_hour * hours
        if expected > MAX_ARRIVALS:
            found.add(("jobs", index, "arrivals", "perHour"),
                      f"{stream.arrivals.per_hour:g} per hour for {hours:g} h is {expected:,.0f} jobs, more than "
                      f"{MAX_ARRIVALS:,} a stream may bring: lower the rate or shorten the run")


# --- traces -----------------------------------------------------------------------------------------


def _trace(trace: TraceSource, project_dir: Path, where: tuple[str | int, ...], found: _Problems) -> None:
    if trace.format != ALIBABA_GPU_2023:
        return
    path = project_dir / trace.file
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as err:
        found.add((*where, "file"), f"{trace.file!r}: {err.strerror or err} under the project directory; give the "
                  "trace's path from the project directory (the vendored copy is under upstream/alibaba-clusterdata/)")
        return
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        found.add((*where, "file"), f"{trace.file!r} is not a regular file; name the trace's CSV file")
        return
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_TRACE_BYTES)
    try:
        rows = csv.DictReader(data.decode("utf-8").splitlines())
        header = rows.fieldnames or []
        missing = [column for column in ALIBABA_COLUMNS if column not in header]
        if missing:
            found.add((*where, "file"), f"{trace.file!r} has no column {', '.join(missing)}: not a {trace.format} "
                      f"CSV (its columns: {', '.join(ALIBABA_COLUMNS)})")
            return
        classes = sorted({row["qos"] for row in rows})
    except (UnicodeDecodeError, csv.Error) as err:
        found.add((*where, "file"), f"{trace.file!r} is not a {trace.format} CSV ({str(err).splitlines()[0]})")
        return
    for qos in trace.classes:
        if qos not in classes:
            found.add((*where, "classes", qos), f"no task of the trace has qos {qos!r} (its classes: {', '.join(classes)})"
                      f"{did_you_mean(qos, classes)}")
