"""A held-out queueing check a user can repeat: an M/M/c queue written as a workload file, run through
`python -m offline simulate` with replications, read back from report.json and compared with Erlang C.

The queue: Poisson arrivals of one-slice jobs at LAMBDA per hour, exponential run times of mean 1 h,
and c = C_SERVERS slices: the frozen dev stack with ml-research's spot quota set to C_SERVERS slices
(no borrowing, no other tenant on that flavor). The static baseline (`--baseline static`) holds its
nodes Ready from the start, so a job starts the moment Kueue admits it and holds its quota for exactly
its run: Kueue's wait is the M/M/c queue's wait. The same file and stack, run as the normal platform,
add node launch times to the service, which is no longer exponential; that variant is not compared.

Erlang C for c servers and offered load a = lambda / mu (written out here, not taken from sim/):
    P(wait > 0) = C(c, a) = [a^c / c! * c / (c - a)] / [sum_{k<c} a^k / k! + a^c / c! * c / (c - a)]
    mean wait   = C(c, a) / (c mu - lambda)
    mean queue  = lambda * mean wait                                  (Little's law)

The run starts empty, so its first hours wait less than the steady state; at rho = 0.3 the queue
forgets its start within hours, and over 200 h the bias is small against the interval of 10 seeds.
Across ten disjoint sets of ten seeds the three intervals covered Erlang C's value 9, 8 and 9 times.
"""

from __future__ import annotations

import functools
import json
import math
import re
from pathlib import Path

import pytest
import yaml

from offline.__main__ import main

from .conftest import project_path

C_SERVERS = 2
LAMBDA_PER_HOUR = 0.6
MEAN_RUN_HOURS = 1.0
SEEDS = 10

WORKLOAD = f"""\
# M/M/{C_SERVERS}: Poisson arrivals, exponential run times, {C_SERVERS} one-slice servers (ml-research's spot quota)
start: "2026-06-01T00:00:00Z"
duration: 200h
sampleInterval: 4h
jobs:
  - name: poisson
    tenant: ml-research
    flavors: [l40s-spot]
    gpusPerPod: 1
    arrivals: {{perHour: {LAMBDA_PER_HOUR}}}
    duration: {{exponentialMean: {MEAN_RUN_HOURS:g}h}}
"""


def erlang_c(servers: int, load: float) -> float:
    top = load**servers / math.factorial(servers) * servers / (servers - load)
    return top / (sum(load**k / math.factorial(k) for k in range(servers)) + top)


def test_erlang_c_of_textbook_values():
    # M/M/1: P(wait) = rho. M/M/2 at a = 1: (1/2 * 2) / (1 + 1 + 1) = 1/3.
    assert erlang_c(1, 0.7) == pytest.approx(0.7)
    assert erlang_c(2, 1.0) == pytest.approx(1 / 3)


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> dict:
    """report.json of the M/M/c workload on the stack, through the command line."""
    directory = tmp_path_factory.mktemp("mmc")
    stack = yaml.safe_load(project_path("tests", "fixtures", "shipped", "dev.yaml").read_text())
    research = next(tenant for tenant in stack["config"]["gpu-platform:tenants"] if tenant["name"] == "ml-research")
    research["gpu"]["l40s-spot"] = {"nominal": C_SERVERS}
    (directory / "Pulumi.mmc.yaml").write_text(yaml.safe_dump(stack))
    (directory / "mmc.yaml").write_text(WORKLOAD)
    from offline import stack as stack_module

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("offline.__main__.load_stack", functools.partial(stack_module.load_stack, project_dir=directory))
        code = main(["simulate", "--stack", "mmc", "--workload", str(directory / "mmc.yaml"), "--baseline", "static",
                     "--seeds", str(SEEDS), "--out", str(directory / "out")])
    assert code == 0
    return json.loads((directory / "out" / "report.json").read_text())


def test_an_m_m_c_workload_through_the_cli_agrees_with_erlang_c(report):
    mu = 1 / (MEAN_RUN_HOURS * 3600)
    lam = LAMBDA_PER_HOUR / 3600
    p_wait = erlang_c(C_SERVERS, lam / mu)
    mean_wait = p_wait / (C_SERVERS * mu - lam)
    expected = {"wait.p_positive": p_wait, "wait.mean_s": mean_wait, "queue.mean_length": lam * mean_wait}
    # 0.1385, 356 s and 0.0593: the values the intervals must hold.
    assert (round(p_wait, 4), round(mean_wait), round(lam * mean_wait, 4)) == (0.1385, 356, 0.0593)
    assert report["seeds"] == list(range(SEEDS))
    figures = report["variants"]["static"]["measures"]["run"]
    for metric, value in expected.items():
        figure = figures[metric]
        assert figure["n"] == SEEDS
        assert figure["low"] <= value <= figure["high"], (metric, value, figure)
        # An interval this narrow tells M/M/2 from M/M/3 (P(wait) 0.012) and from a service twice as long.
        assert figure["high"] - figure["low"] < value, (metric, figure)
    # No job is lost or never admissible: the queue is the only reason to wait.
    assert figures["gpu_hours.lost"]["mean"] == 0
    assert figures["never_admissible"]["mean"] == 0


# --- report.json's keys are documented ---------------------------------------------------------------------

DOC = project_path("docs", "simulation.md")


def documented_ids() -> tuple[set[str], list[re.Pattern[str]]]:
    """Backticked metric ids of docs/simulation.md, and the patterns written with `<cause>` or `*`."""
    ids, patterns = set(), []
    for token in re.findall(r"`([a-z_][a-z0-9_.<>*-]*)`", DOC.read_text()):
        if "<" in token or "*" in token:
            regex = re.escape(token).replace(r"\*", "[a-z0-9_.-]+")
            regex = re.sub(r"<[a-z]+>", "[a-z0-9-]+", regex.replace(r"\<", "<").replace(r"\>", ">"))
            patterns.append(re.compile(f"^{regex}$"))
        else:
            ids.add(token)
    return ids, patterns


def undocumented(metrics: set[str]) -> list[str]:
    ids, patterns = documented_ids()
    return sorted(m for m in metrics if m not in ids and not any(p.match(m) for p in patterns))


def metric_ids(measures: dict) -> set[str]:
    found = set(measures["run"])
    for level, rows in measures.items():
        if level != "run":
            found |= {metric for row in rows.values() for metric in row}
    return found


def test_every_key_of_report_json_is_documented(report):
    block = DOC.read_text().split("## report.json", 1)[1].split("```")[1]
    quoted = set(re.findall(r'"([a-z_]+)"', block))
    assert set(report) <= quoted, sorted(set(report) - quoted)
    for variant in report["variants"].values():
        assert set(variant) <= quoted, sorted(set(variant) - quoted)
        assert set(variant["measures"]) <= quoted, sorted(set(variant["measures"]) - quoted)
        assert undocumented(metric_ids(variant["measures"])) == []


def test_the_deployments_metric_ids_are_documented():
    from sim.experiment import Scenario, run_one
    from sim.workload import Workload

    from .conftest import load, shipped_document

    chat = {"tenant": "inference", "deployment": "chat", "requestsPerSecondPerReplica": 4, "serverStartSeconds": 240,
            "rate": {"day": 6, "night": 1}}
    one_hour = Workload.model_validate({"start": "2026-06-01T09:00:00Z", "duration": "1h", "inference": [chat]})
    measures = run_one(Scenario(load(shipped_document("dev")), one_hour, project_dir=project_path()), 0)["measures"]
    assert measures["deployments"], "the run has deployments to check"
    assert undocumented({metric for row in measures["deployments"].values() for metric in row}) == []


def test_an_undocumented_id_is_found():
    assert undocumented({"wait.mean_s", "gpu_hours.lost.expiry", "wait.mean_minutes", "gpu_hours.lost"}) == [
        "wait.mean_minutes"]
    assert undocumented({"never_started.dreaming"}) == []  # a reason matches the documented `never_started.<why>`
    assert Path(DOC).is_file()
