"""Mistakes in a workload file: one line each with the file, the line, the key path, the value and the fix;
exit 2, no traceback, nothing written; hostile files refused the same way, at once.

The fixture is irregular on purpose (comments, blank lines, flow and block styles, an anchor and its
alias, a named and an unnamed list entry) so that a line number off by one, or counted from the wrong
node, lands on a different line.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sim.cli import EXIT_INVALID, run

from .conftest import fixture_document, load, project_path, shipped_document

BASE = """\
# yaml-language-server: $schema=../schema/workload.schema.json
# An irregular file: comments, blank lines, flow and block styles, an anchor.
description: mistakes, one at a time
start: "2026-06-01T06:00:00Z"

duration: 12h
sampleInterval: 10m
inference:
  - tenant: inference
    deployment: chat
    requestsPerSecondPerReplica: 4
    serverStartSeconds: 240
    rate:
      day: 6
      night: 1
      # the afternoon surge
      surges:
        - {at: 8h, duration: 30m, factor: 5}
jobs:
  - name: research-batch
    tenant: ml-research
    flavors: [l40s-spot]
    gpusPerPod: 2
    arrivals: {perHour: 3}
    duration:
      exponentialMean: 45m

  - name: research-training
    tenant: ml-research
    flavors:
      - l40s-on-demand
    gpusPerPod: 4
    pods: 2
    arrivals: {at: [2h, 10h]}
    duration: &two-hours {fixed: 2h}
"""
TRACE = "upstream/alibaba-clusterdata/cluster-trace-gpu-v2023/openb_pod_list_default.csv"
DURATION_HINT = "a duration like '90s', '30m', '14h' or '1h30m'"

# (case, text replaced in BASE, its replacement, the lines expected after `<file>:`)
CASES = [
    ("a duration in words", "duration: 12h", "duration: 12 hours",
     [f"6: duration: '12 hours' is not {DURATION_HINT}"]),
    ("a zero sample interval", "sampleInterval: 10m", "sampleInterval: 0s",
     [f"7: sampleInterval: '0s' is zero; give {DURATION_HINT}"]),
    ("a run longer than a leap year", "duration: 12h", "duration: 99999h",
     ["6: duration: '99999h' is longer than 8784h (a leap year), the longest run simulated"]),
    ("a duration of too many digits", "duration: 12h", "duration: 123456789012h",
     [f"6: duration: '123456789012h' is not {DURATION_HINT}"]),
    ("too many samples", "duration: 12h\nsampleInterval: 10m", "duration: 8000h\nsampleInterval: 1m",
     ["7: sampleInterval: '1m' samples the 8000h run 480,000 times, more than 200,000: sample every 144s or more"]),
    ("a misspelt key, and the key it should be is missing", "requestsPerSecondPerReplica: 4", "requestsPerSecondPerReplca: 4",
     ["9: inference[0].requestsPerSecondPerReplica: required but not set (Requests per second one replica serves at full load.)",
      "11: inference[0].requestsPerSecondPerReplca: unknown key; did you mean requestsPerSecondPerReplica? allowed here: "
      "tenant, deployment, spec, requestsPerSecondPerReplica, serverStartSeconds, rate"]),
    ("a misspelt tenant", "  - tenant: inference", "  - tenant: inferense",
     ["9: inference[0].tenant: 'inferense' is not a tenant of the stack (ml-research, inference); did you mean inference?"]),
    ("a misspelt deployment", "deployment: chat", "deployment: caht",
     ["10: inference[0].deployment: 'caht': tenant inference declares no such deployment (it has: chat), and one it does "
      "not declare needs spec; did you mean chat?"]),
    ("not a number of requests", "      day: 6", "      day: .nan",
     ["14: inference[0].rate.day: nan is out of range; must be <= 1000000.0"]),
    ("a surge after the run's end", "{at: 8h, duration: 30m, factor: 5}", "{at: 13h, duration: 30m, factor: 5}",
     ["18: inference[0].rate.surges[0].at: '13h' is at or after the run's end (12h), so it never happens: move it before "
      "12h or lengthen duration"]),
    ("a surge factor beyond bounds", "factor: 5}", "factor: 5000}",
     ["18: inference[0].rate.surges[0].factor: 5000 is out of range; must be <= 1000.0"]),
    ("a misspelt tenant of a job stream", "    tenant: ml-research\n    flavors: [l40s-spot]",
     "    tenant: ml-reserch\n    flavors: [l40s-spot]",
     ["21: jobs[research-batch].tenant: 'ml-reserch' is not a tenant of the stack (ml-research, inference); "
      "did you mean ml-research?"]),
    ("a misspelt flavor in a block list", "      - l40s-on-demand", "      - l40s-on-demnad",
     ["31: jobs[research-training].flavors[0]: 'l40s-on-demnad' is not a flavor of tenant ml-research "
      "(l40s-on-demand, l40s-spot); did you mean l40s-on-demand?"]),
    ("a misspelt priority", "    gpusPerPod: 4\n", "    gpusPerPod: 4\n    priority: standrd\n",
     ["33: jobs[research-training].priority: 'standrd' is not a tier of queueing.priorities (production, standard, "
      "best-effort); did you mean standard?"]),
    ("a missing key", "    arrivals: {perHour: 3}\n", "",
     ["20: jobs[research-batch].arrivals: required but not set (When jobs arrive.)"]),
    ("no request", "    gpusPerPod: 2\n", "",
     ["20: jobs[research-batch]: give exactly one of gpusPerPod (a device-plugin request) or claimTemplate (a DRA "
      "claim)"]),
    ("both kinds of arrivals", "arrivals: {perHour: 3}", "arrivals: {perHour: 3, at: [1h]}",
     ["24: jobs[research-batch].arrivals: give exactly one of perHour (Poisson) or at (listed offsets)"]),
    ("a huge rate", "arrivals: {perHour: 3}", "arrivals: {perHour: 5000000}",
     ["24: jobs[research-batch].arrivals.perHour: 5000000 is out of range; must be <= 1000000.0"]),
    ("more arrivals than a stream may bring", "arrivals: {perHour: 3}", "arrivals: {perHour: 90000}",
     ["24: jobs[research-batch].arrivals.perHour: 90000 per hour for 12 h is 1,080,000 jobs, more than 1,000,000 a "
      "stream may bring: lower the rate or shorten the run"]),
    ("a zero mean duration", "exponentialMean: 45m", "exponentialMean: 0m",
     [f"26: jobs[research-batch].duration.exponentialMean: '0m' is zero; give {DURATION_HINT}"]),
    ("an arrival after the run's end", "arrivals: {at: [2h, 10h]}", "arrivals: {at: [2h, 12h]}",
     ["34: jobs[research-training].arrivals.at[1]: '12h' is at or after the run's end (12h), so it never happens: move "
      "it before 12h or lengthen duration"]),
    ("an arrival that is not a duration", "arrivals: {at: [2h, 10h]}", "arrivals: {at: [2h, ten]}",
     [f"34: jobs[research-training].arrivals.at[1]: 'ten' is not {DURATION_HINT}"]),
    ("two streams of one name", "  - name: research-training", "  - name: research-batch",
     ["28: jobs[1].name: 'research-batch' names another stream too; each stream draws its own arrivals and durations "
      "by its name: rename one"]),
    ("a launch time whose p95 is below its median", "sampleInterval: 10m",
     "sampleInterval: 10m\nlaunchToReady:\n  g6e: {medianSeconds: 300, p95Seconds: 200}",
     ["9: launchToReady.g6e: p95Seconds 200 is below medianSeconds 300; the 95th percentile is at least the median"]),
    ("a misspelt instance family", "sampleInterval: 10m",
     "sampleInterval: 10m\nlaunchToReady:\n\n  g6ee: {medianSeconds: 300, p95Seconds: 400}",
     ["10: launchToReady.g6ee: 'g6ee' is not an instance family of the stack's GPU pools or the model's (g5, g6, g6e, "
      "p4d, p4de, p5, p5e, p5en); did you mean g6e?"]),
    ("a key written twice", "    pods: 2\n", "    pods: 2\n    pods: 3\n",
     ["34: key 'pods' appears twice in one mapping (first on line 33); YAML keeps only the last: merge the two"]),
    ("a tab in the indentation", "    pods: 2\n", "\tpods: 2\n",
     ["33: not valid YAML: while scanning a plain scalar, found a tab character that violates indentation "
      "(YAML indents with spaces, never tabs)"]),
    ("a key YAML reads as a boolean", "    pods: 2\n", "    pods: 2\n    on: 3\n",
     ["34: key 'on' is not a string: quote it"]),
    ("a missing trace file", "sampleInterval: 10m",
     "sampleInterval: 10m\ntraces:\n  - format: alibaba-gpu-v2023\n    file: upstream/missing.csv\n"
     "    classes: {LS: {tenants: [inference]}}",
     ["10: traces[0].file: 'upstream/missing.csv': No such file or directory under the project directory; give the "
      "trace's path from the project directory (the vendored copy is under upstream/alibaba-clusterdata/)"]),
    ("a file that is not the trace", "sampleInterval: 10m",
     f"sampleInterval: 10m\ntraces:\n  - format: alibaba-gpu-v2023\n    file: {'upstream/SOURCES'}\n"
     "    classes: {LS: {tenants: [inference]}}",
     ["10: traces[0].file: 'upstream/SOURCES' has no column name, qos, num_gpu, gpu_milli, creation_time, "
      "scheduled_time, deletion_time: not a alibaba-gpu-v2023 CSV (its columns: name, qos, num_gpu, gpu_milli, "
      "creation_time, scheduled_time, deletion_time)"]),
    ("an unknown trace class", "sampleInterval: 10m",
     f"sampleInterval: 10m\ntraces:\n  - format: alibaba-gpu-v2023\n    file: {TRACE}\n    classes:\n"
     "      LS: {tenants: [inference]}\n      Guaranted: {tenants: [ml-research], flavors: [l40s-spot]}",
     ["13: traces[0].classes.Guaranted: no task of the trace has qos 'Guaranted' (its classes: BE, Burstable, "
      "Guaranteed, LS); did you mean Guaranteed?"]),
]


def problems(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str | bytes,
             document: dict | None = None) -> list[str]:
    """The lines `python -m offline simulate` prints for the file, each without its `  <file>` prefix, after
    checking that it exits 2, prints no traceback, writes nothing and counts the lines in its header."""
    path = tmp_path / "load.yaml"
    path.write_text(text) if isinstance(text, str) else path.write_bytes(text)
    config = load(document or shipped_document("dev"))
    code = run(config, "dev", path, tmp_path / "out", seed=0, baseline=None, project_dir=project_path())
    err = capsys.readouterr().err
    assert code == EXIT_INVALID, err
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists()
    header, *lines = err.splitlines()
    count = len(lines)
    assert header == f"{path}: invalid workload ({count} problem{'s' if count > 1 else ''}):"
    assert all(line.startswith(f"  {path}") for line in lines), lines
    return [line.removeprefix(f"  {path}") for line in lines]


def test_the_base_fixture_is_valid(tmp_path):
    from sim.workload import read_workload
    from sim.workload_check import check, check_runnable

    path = tmp_path / "load.yaml"
    path.write_text(BASE)
    read = read_workload(path)
    config = load(shipped_document("dev"))
    check(config, read.workload, locator=read.locator, project_dir=project_path())
    check_runnable(config, read.workload, locator=read.locator)


@pytest.mark.parametrize(("case", "old", "new", "expected"), CASES, ids=[case[0] for case in CASES])
def test_each_mistake_is_one_line_at_its_line(tmp_path, capsys, case, old, new, expected):
    assert BASE.count(old) == 1, f"{case}: the replaced text must occur once"
    assert problems(tmp_path, capsys, BASE.replace(old, new)) == [f":{line}" for line in expected]


NEVER = """\
start: "2026-06-01T00:00:00Z"
duration: 4h
jobs:
  # inference's quota on l40s-on-demand: 16 GPUs (12 + 4 borrowed); the gpu-l40s pool: g6e.12xlarge (4),
  # g6e.24xlarge (4) and g6e.48xlarge (8), a NodePool limit of 16 GPUs.
  - {name: fits, tenant: inference, flavors: [l40s-on-demand], gpusPerPod: 8, pods: 2, arrivals: {at: [1h]},
     duration: {fixed: 2h}}
  - name: wide
    tenant: inference
    flavors: [l40s-on-demand]
    gpusPerPod: 9
    arrivals: {at: [1h]}
    duration: {fixed: 1h}
  - {name: gang, tenant: inference, flavors: [l40s-on-demand], gpusPerPod: 5, pods: 3,
     arrivals: {at: [1h]}, duration: {fixed: 1h}}

  - {name: greedy, tenant: inference, flavors: [l40s-on-demand], gpusPerPod: 4, pods: 5, arrivals: {at: [1h]},
     duration: {fixed: 1h}}
"""


def test_work_that_can_never_run_is_refused_with_its_reason(tmp_path, capsys):
    # On the multi-pool fixture: one pod wider than the biggest node, a gang whose pods each need an 8-GPU node
    # (3 x 8 over the limit of 16), and a gang over everything inference may borrow (20 of 16).
    assert problems(tmp_path, capsys, NEVER, fixture_document("multi-pool")) == [
        ":11: jobs[wide].gpusPerPod: 9 is more than the biggest node of l40s-on-demand holds (8); at most 8, or split the "
        "job into pods",
        ":14: jobs[gang].pods: 3 (3 pods of 5 GPUs): the gang never fits all at once within the NodePool limit "
        "(gpu-l40s 16 GPUs) as Karpenter packs nodes; lower pods or gpusPerPod",
        ":17: jobs[greedy].gpusPerPod: 4 (5 pods of 4 GPUs) is more than tenant inference can ever be given on "
        "l40s-on-demand, its nominal quota and all it may borrow; Kueue leaves the jobs pending for good: ask for "
        "less, or raise the tenant's quota",
    ]


def _laughs() -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 10)}]" for n in range(1, 9)]
    return "\n".join(lines) + "\n"


# (case, the file's content, the one line expected after `<file>`)
HOSTILE = [
    ("a billion laughs", _laughs(),
     ":6: more than 200,000 values with its aliases expanded: write the values out, or replay a recording as a trace "
     "(traces:)"),
    ("a recursive alias", "a: &a [1, *a]\n",
     ":1: alias *a is inside the node &a it names, so it never ends: write the value out"),
    ("deep nesting in block style",
     "".join(f"{'  ' * depth}k{depth}:\n" for depth in range(60)) + "  " * 60 + "v: 1\n",
     ":51: nested more than 50 deep; a workload file is a few levels deep"),
    ("deep nesting in flow style", "a: " + "[" * 100_000 + "]" * 100_000 + "\n",
     ":1: not valid YAML: while increasing flow level, exceeded maximum nesting depth"),
    ("nesting just over the bound", "a: " + "[" * 50 + "]" * 50 + "\n",
     ":1: nested more than 50 deep; a workload file is a few levels deep"),
    ("a number of ten thousand digits", 'start: "2026-06-01T00:00:00Z"\nduration: 1h\nsampleInterval: ' + "9" * 10_000 + "\n",
     ":3: 99999999999999999999...: a number too long to read; write a number of a few digits"),
    ("bytes that are not UTF-8", b'start: "2026-06-01T00:00:00Z"\nduration: 1h\ndescription: caf\xe9\n',
     ":3: byte 0xe9 is not UTF-8: save the file as UTF-8"),
    ("a file of 5 MiB", "# " + "x" * (5 * 2**20) + "\n",
     ": larger than 4 MiB: a workload file is a few hundred lines; replay long recordings as a trace (traces:)"),
    ("text, not a mapping", "start 1h\n",
     ":1: (top level): the file holds 'start 1h'; a workload file is a mapping with start:, duration: and "
     "what runs (see workloads/design-surge.yaml)"),
    ("a Python object tag", "start: !!python/object/apply:os.system [ls]\n",
     ":1: the tag tag:yaml.org,2002:python/object/apply:os.system has no meaning in a workload file: remove it"),
    ("a Python object tag on a scalar", "start: !!python/name:os.system x\n",
     ":1: not valid YAML: could not determine a constructor for the tag 'tag:yaml.org,2002:python/name:os.system'"),
]


@pytest.mark.parametrize(("case", "text", "expected"), HOSTILE, ids=[case[0] for case in HOSTILE])
def test_a_hostile_file_is_one_line_and_exit_2(tmp_path, capsys, case, text, expected):
    assert problems(tmp_path, capsys, text) == [expected]


def test_a_fifo_or_a_missing_file_is_refused_without_blocking(tmp_path, capsys):
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    for path, reason in ((fifo, "not a regular file: name a YAML file"),
                         (tmp_path / "none.yaml", "cannot open it: No such file or directory")):
        code = run(load(shipped_document("dev")), "dev", path, tmp_path / "out", seed=0, baseline=None,
                   project_dir=project_path())
        assert code == EXIT_INVALID
        assert capsys.readouterr().err.splitlines()[1] == f"  {path}: {reason}"


def test_the_bounds_themselves_are_allowed_and_one_more_is_not(tmp_path, monkeypatch):
    from sim import yaml_input

    path = tmp_path / "bounds.yaml"
    # MAX_DEPTH collections deep: the mapping and MAX_DEPTH - 1 lists.
    path.write_text("a: " + "[" * (yaml_input.MAX_DEPTH - 1) + "]" * (yaml_input.MAX_DEPTH - 1) + "\n")
    assert yaml_input.read_yaml(path)[0] is not None
    # 60 nodes: the mapping, its key, the list, the anchored item and 56 aliases of it.
    monkeypatch.setattr(yaml_input, "MAX_NODES", 60)
    path.write_text("a: [&x 1" + ", *x" * 56 + "]\n")
    assert len(yaml_input.read_yaml(path)[0]["a"]) == 57
    path.write_text("a: [&x 1" + ", *x" * 57 + "]\n")
    with pytest.raises(yaml_input.Unreadable, match="more than 60 values"):
        yaml_input.read_yaml(path)
