"""A workload file (`workloads/*.yaml`): what runs on the platform during a simulation.

    inference   deployments with a request-rate curve, per-replica capacity and server start time
    jobs        batch and training jobs: arrivals, durations, GPUs per pod, gang size, tenant, priority
    traces      a recorded trace mapped onto the stack's tenants and flavors (sim/trace.py)

Every key is camelCase, unknown keys are refused, and the JSON Schema editors check the file with is
generated from these models (`schema/workload.schema.json`, `make schema`). Times of day are UTC;
offsets (`14h`, `30m`) count from `start`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, ValidationError, WithJsonSchema, field_validator, model_validator
from pydantic_core import ErrorDetails

from config.autoscaling import InferenceDeploymentConfig
from config.base import ConfigModel
from config.errors import describe, did_you_mean, key_path, show

from .yaml_input import KeyPath, Unreadable, read_yaml

SCHEMA_PATH = "schema/workload.schema.json"
# One duration syntax, in this module and in the JSON Schema: hours, minutes, seconds, each of a few digits.
DURATION_PATTERN = r"^(?:([0-9]{1,7})h)?(?:([0-9]{1,7})m)?(?:([0-9]{1,9})s)?$"
_DURATION = re.compile(DURATION_PATTERN)
_CLOCK = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")
_DURATION_HINT = "a duration like '90s', '30m', '14h' or '1h30m'"
# The longest run the simulator takes: a leap year (the Alibaba trace is 3,585 h). With the bounds on
# rates and samples (sim/workload_check.py) a run is finite and its memory bounded whatever the file says.
MAX_RUN_SECONDS = 8784 * 3600
MAX_PER_HOUR = 1_000_000  # job arrivals per hour of one stream
MAX_REQUESTS_PER_SECOND = 1_000_000
MAX_SURGE_FACTOR = 1000
MAX_START_SECONDS = 86_400  # a server start or a node launch: a day at most


def seconds(text: str) -> int:
    """`1h30m` -> 5400. The one duration syntax of a workload file: hours, minutes, seconds."""
    match = _DURATION.match(text)
    if not text or not match:
        raise ValueError(f"is not {_DURATION_HINT}")
    hours, minutes, secs = (int(part or 0) for part in match.groups())
    return hours * 3600 + minutes * 60 + secs


def _offset(text: str) -> str:
    seconds(text)
    return text


def _duration(text: str) -> str:
    if seconds(text) == 0:
        raise ValueError(f"is zero; give {_DURATION_HINT}")
    return text


# A time from the workload's start (`0s` is the start itself), and a length of time (never zero).
Offset = Annotated[str, AfterValidator(_offset), WithJsonSchema({"type": "string", "pattern": DURATION_PATTERN,
                                                                  "minLength": 2})]
Duration = Annotated[str, AfterValidator(_duration), WithJsonSchema({
    "type": "string", "pattern": DURATION_PATTERN, "minLength": 2, "not": {"pattern": "^(0+[hms])+$"}})]


def _clock(text: str) -> str:
    if not _CLOCK.match(text):
        raise ValueError("is not a time of day like '09:00' (UTC)")
    return text


class Surge(ConfigModel):
    """A step in the request rate: `factor` times the curve from `at` for `duration`."""

    at: Offset = Field(description="Offset from the workload's start, e.g. `14h`; before the run's end.")
    duration: Duration = Field(description="How long the surge lasts, e.g. `30m`.")
    factor: float = Field(
        gt=0, le=MAX_SURGE_FACTOR, description="Multiplier of the rate while it lasts (5: five times the traffic)."
    )


class RateCurve(ConfigModel):
    """Requests per second over time: `night` outside working hours, `day` within them, times any surges."""

    day: float = Field(ge=0, le=MAX_REQUESTS_PER_SECOND, description="Requests per second during working hours.")
    night: float = Field(
        ge=0, le=MAX_REQUESTS_PER_SECOND,
        description="Requests per second outside working hours (and at weekends when `weekdaysOnly`).",
    )
    working_hours: str = Field("09:00-18:00", description="Working hours, UTC, `HH:MM-HH:MM`.", json_schema_extra={
        "pattern": "^([01][0-9]|2[0-3]):[0-5][0-9]-([01][0-9]|2[0-3]):[0-5][0-9]$"})
    weekdays_only: bool = Field(True, description="Saturdays and Sundays run at the `night` rate all day.")
    surges: list[Surge] = Field(default_factory=list, description="Step surges on top of the curve.")

    @field_validator("working_hours")
    @classmethod
    def _hours(cls, value: str) -> str:
        parts = value.split("-")
        if len(parts) != 2:
            raise ValueError("is not a range of times of day like '09:00-18:00'")
        first, last = (_clock(part) for part in parts)
        if first >= last:
            raise ValueError("ends before it starts; write the earlier time first, like '09:00-18:00'")
        return value


class InferenceLoad(ConfigModel):
    """Traffic for one inference deployment, and what one replica of it can serve."""

    tenant: str = Field(description="The tenant whose deployment this is.")
    deployment: str = Field(description="The deployment's name: one of the tenant's `inference` entries in the stack.")
    spec: InferenceDeploymentConfig | None = Field(
        None,
        description="The deployment's scaling spec when the stack does not declare it (a deployment the tenant runs "
        "itself), with the stack's keys (`flavor`, `class`, `minReplicas`, ...). Omit it for a deployment the stack "
        "declares: its spec then comes from the stack.",
    )
    requests_per_second_per_replica: float = Field(
        gt=0, le=MAX_REQUESTS_PER_SECOND, description="Requests per second one replica serves at full load."
    )
    server_start_seconds: int = Field(
        ge=0, le=MAX_START_SECONDS,
        description="Seconds from a replica's pod landing on a Ready node to serving: image pull and model load.",
    )
    rate: RateCurve = Field(description="The request rate over time.")


class Arrivals(ConfigModel):
    """When jobs arrive: a Poisson process, or listed offsets."""

    per_hour: float | None = Field(None, gt=0, le=MAX_PER_HOUR, description="Poisson arrivals at this mean rate per hour.")
    at: list[Offset] | None = Field(None, description="Exact arrival offsets from the start, e.g. `[1h, 1h30m]`.")

    @model_validator(mode="after")
    def _one_kind(self) -> Arrivals:
        if (self.per_hour is None) == (self.at is None):
            raise ValueError("give exactly one of perHour (Poisson) or at (listed offsets)")
        return self


class Durations(ConfigModel):
    """How long a job runs once all its pods are Ready: fixed, or exponential with a mean."""

    fixed: Duration | None = Field(None, description="Every job runs exactly this long, e.g. `45m`.")
    exponential_mean: Duration | None = Field(None, description="Exponentially distributed with this mean, e.g. `1h`.")

    @model_validator(mode="after")
    def _one_kind(self) -> Durations:
        if (self.fixed is None) == (self.exponential_mean is None):
            raise ValueError("give exactly one of fixed or exponentialMean")
        return self


class JobStream(ConfigModel):
    """A stream of batch or training jobs of one shape."""

    name: str = Field(description="Name of the stream (the report's label).")
    tenant: str = Field(description="The tenant that submits the jobs.")
    priority: str | None = Field(None, description="Priority tier (`queueing.priorities`); the tenant's own when unset.")
    flavors: list[str] | None = Field(
        None, description="Flavors the jobs may run on (a node selector); every flavor of the tenant when unset."
    )
    gpus_per_pod: int | None = Field(
        None, ge=1, le=64,
        description="GPUs each pod requests, in the flavor's units (slices on a time-sliced flavor); or claimTemplate.",
    )
    claim_template: str | None = Field(
        None,
        description="Instead of gpusPerPod: a ResourceClaimTemplate of the tenant's namespace (`gpu.dra.claimTemplates`); "
        "each pod holds one claim made from it, so the template's devices, on a DRA pool whose devices match its "
        "selectors (sim/claims_placement.py).",
    )
    pods: int = Field(1, ge=1, le=64, description="Pods per job, admitted and started together (a gang).")
    arrivals: Arrivals = Field(description="When jobs arrive.")
    duration: Durations = Field(description="How long each job runs.")
    until: Offset | None = Field(None, description="No arrivals after this offset; the workload's end when unset.")

    @model_validator(mode="after")
    def _one_request(self) -> JobStream:
        if (self.gpus_per_pod is None) == (self.claim_template is None):
            raise ValueError("give exactly one of gpusPerPod (a device-plugin request) or claimTemplate (a DRA claim)")
        return self


class TraceClass(ConfigModel):
    """Where a trace's tasks of one class (QoS) go in the stack."""

    tenants: list[str] = Field(
        min_length=1, description="Tenants that run the class's tasks: one tenant, or several taking the tasks in turn."
    )
    priority: str | None = Field(None, description="Priority tier; each tenant's own when unset.")
    flavors: list[str] | None = Field(None, description="Flavors the tasks may use; every flavor of the tenant when unset.")
    replay: Literal["job", "service"] = Field(
        "job",
        description="`job`: an evicted task runs its whole run again from zero. `service`: a long-running service; an "
        "eviction costs the time to be placed and start again, and the running time it had counts towards its run "
        "(sim/trace.py rule 4).",
    )
    start_seconds: int = Field(
        0, ge=0, le=86400,
        description="Seconds from a task's pod landing on a node to running (image pull, model load), on every start.",
    )


class TraceWindow(ConfigModel):
    """The part of the trace to replay, as offsets from the trace's second 0 (sim/trace.py rule 3)."""

    start: str | None = Field(None, description="Replay from this offset, e.g. `2640h` (day 110); tasks still running "
                              "then arrive at once with what is left of their run.")
    end: str | None = Field(None, description="No arrivals from this offset on.")

    @field_validator("start", "end")
    @classmethod
    def _durations(cls, value: str | None) -> str | None:
        return None if value is None else _duration(value)

    @model_validator(mode="after")
    def _ordered(self) -> TraceWindow:
        if self.start is not None and self.end is not None and seconds(self.end) <= seconds(self.start):
            raise ValueError(f"end {self.end!r} is not after start {self.start!r}")
        return self


class TraceInflation(ConfigModel):
    """Scale the trace's arrivals to the stack's capacity, as the FGD simulator does (sim/trace.py rule 7)."""

    ratio: float = Field(
        gt=0, le=16,
        description="Target mean GPUs asked for, as a share of the NodePool GPU limits of the pools the trace's classes "
        "use (1.3: 130 %, the ATC'23 paper's runs). Tasks drawn at random are copied (or removed) to meet it.",
    )


class TraceSource(ConfigModel):
    """A recorded trace, replayed with its own arrival times and run times (sim/trace.py)."""

    format: Literal["alibaba-gpu-v2023"] = Field(description="The trace's format.")
    file: str = Field(description="Path from the project directory, e.g. the vendored copy under upstream/.")
    classes: dict[str, TraceClass] = Field(description="Trace class (the Alibaba trace's `qos`) -> tenant, priority, flavors.")
    copies: int = Field(1, ge=1, le=64, description="Replay each task this many times (load x copies), for benchmarks.")
    window: TraceWindow | None = Field(None, description="Replay only part of the trace; the whole trace when unset.")
    inflation: TraceInflation | None = Field(None, description="Scale arrivals to the stack's capacity; as recorded when unset.")


class LaunchTimeOverride(ConfigModel):
    median_seconds: float = Field(
        gt=0, le=MAX_START_SECONDS, description="Median seconds from NodeClaim to a Ready node with GPUs advertised."
    )
    p95_seconds: float = Field(gt=0, le=MAX_START_SECONDS, description="95th percentile of the same; at least the median.")

    @model_validator(mode="after")
    def _ordered(self) -> LaunchTimeOverride:
        if self.p95_seconds < self.median_seconds:
            raise ValueError(f"p95Seconds {self.p95_seconds:g} is below medianSeconds {self.median_seconds:g}; "
                             "the 95th percentile is at least the median")
        return self


class SpotConfig(ConfigModel):
    interruptions_per_node_hour: float = Field(
        0.0, ge=0, le=1, description="EC2 Spot interruptions per spot node-hour (a Poisson rate); 0: none."
    )
    price_factor: float = Field(
        0.35, gt=0, le=1, description="Spot price as a share of on-demand (an assumption: AWS quotes savings up to 90%)."
    )


class Workload(ConfigModel):
    """A workload file."""

    description: str = Field("", description="What the workload represents.")
    start: str = Field(description="UTC start of simulated time, e.g. `2026-06-01T00:00:00Z` (quote it).")
    duration: Duration = Field(description="Simulated time, e.g. `24h`; at most 8784h (a leap year).")
    sample_interval: Duration = Field("5m", description="How often the plots' series are sampled.")
    spot: SpotConfig = Field(default_factory=SpotConfig, description="Spot interruptions and prices.")
    launch_to_ready: dict[str, LaunchTimeOverride] = Field(
        default_factory=dict, description="Launch-to-Ready time per instance family (e.g. `g6e`), overriding the model's."
    )
    inference: list[InferenceLoad] = Field(default_factory=list, description="Inference deployments and their traffic.")
    jobs: list[JobStream] = Field(default_factory=list, description="Batch and training job streams.")
    traces: list[TraceSource] = Field(default_factory=list, description="Recorded traces.")
    do_not_disrupt: bool = Field(
        False,
        description="Pods of jobs and trace tasks carry `karpenter.sh/do-not-disrupt: \"true\"`: consolidation passes "
        "their nodes by, and an expired node's drain waits for them until its terminationGracePeriod "
        "(models/karpenter/disruption.py). Inference replicas and the headroom do not carry it.",
    )

    @field_validator("start")
    @classmethod
    def _start(cls, value: str) -> str:
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError("is not an ISO 8601 time like '2026-06-01T00:00:00Z'") from None
        if parsed.utcoffset() is None or parsed.utcoffset().total_seconds() != 0:  # type: ignore[union-attr]
            raise ValueError("is not UTC: end it with Z, like '2026-06-01T00:00:00Z'")
        return value

    @field_validator("duration")
    @classmethod
    def _run_length(cls, value: str) -> str:
        if seconds(value) > MAX_RUN_SECONDS:
            raise ValueError(f"is longer than {MAX_RUN_SECONDS // 3600}h (a leap year), the longest run simulated")
        return value

    @property
    def start_time(self) -> datetime:
        return datetime.fromisoformat(self.start.replace("Z", "+00:00")).astimezone(UTC)


class WorkloadError(Exception):
    """A workload file that cannot be read or run: one line per problem, `file:line: key path: value and fix`."""

    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Locator:
    """Where a key path is in a workload file: `workloads/x.yaml:12: jobs[research-batch].tenant`.

    A location is a key path as pydantic writes one, `("jobs", 0, "tenant")`; a list entry with a `name`
    is named by it. A key the file does not have (a missing one) is placed at the nearest key it does have.
    """

    source: str
    document: Any = None
    lines: Mapping[KeyPath, int] = field(default_factory=dict)

    def line(self, loc: Sequence[str | int]) -> int:
        """The line of the key path, or of the nearest key above it the file has; 0 when none."""
        path = tuple(loc)
        while path and path not in self.lines:
            path = path[:-1]
        return self.lines.get(path, 0)

    def at(self, loc: Sequence[str | int]) -> str:
        line = self.line(loc)
        where = key_path("", [part for part in loc if part != "[key]"], self.document).lstrip(".") or "(top level)"
        return f"{self.source}:{line}: {where}" if line else f"{self.source}: {where}"

    def problem(self, loc: Sequence[str | int], message: str) -> str:
        return f"{self.at(loc)}: {message}"


@dataclass(frozen=True)
class WorkloadFile:
    workload: Workload
    locator: Locator


def read_workload(path: Path) -> WorkloadFile:
    """Read and validate a workload file, with where each key is (for later checks against a stack);
    raise `WorkloadError` with one line per problem."""
    source = str(path)
    try:
        document, lines = read_yaml(path)
    except Unreadable as err:
        raise WorkloadError([f"{source}:{err.line}: {err.reason}" if err.line else f"{source}: {err.reason}"]) from None
    locator = Locator(source, document, lines)
    if not isinstance(document, dict):
        raise WorkloadError([locator.problem((), f"the file holds {show(document)}; a workload file is a mapping with "
                                                 "start:, duration: and what runs (see workloads/design-surge.yaml)")])
    try:
        return WorkloadFile(Workload.model_validate(document), locator)
    except ValidationError as err:
        errors = sorted(err.errors(), key=lambda error: locator.line(error["loc"]))
        raise WorkloadError([locator.problem(error["loc"], _message(error)) for error in errors]) from None


def load_workload(path: Path) -> Workload:
    """Read and validate a workload file; raise `WorkloadError` with one line per problem."""
    return read_workload(path).workload


def _message(error: ErrorDetails) -> str:
    """config/errors.py's description of a pydantic error, naming the closest allowed key for an unknown one."""
    message = describe(Workload, error)
    if error["type"] == "extra_forbidden" and error["loc"]:
        allowed = message.partition("allowed here: ")[2].split(", ")
        hint = did_you_mean(str(error["loc"][-1]), [key for key in allowed if key])
        if hint:
            message = message.replace("unknown key;", f"unknown key{hint}", 1)
    return message
