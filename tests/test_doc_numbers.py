"""Numbers the docs quote are the numbers the commands print.

- docs/rendering.md "Reviewing a change": how many resources `make diff` shows the README's `vision`
  tenant adding to dev as shipped (tests/fixtures/shipped/dev.yaml).
- docs/testing.md "Benchmark": the resources column of `make bench`, for prod as shipped: a fixed part
  and the same count per tenant, so two small renders give every row, and the prose's two counts.
- README "Onboard a tenant": what dev's CPU pool leaves for the `vision` entry.
- README "How it fits together": the chart versions the diagram names are the pinned ones.
- Pulumi.dev.yaml's comment on its system nodes: the requests, what two large nodes allocate and what
  the xlarge nodes cost more (the summary's "System nodes" and "Idle cost" sections print the same sums).
"""

from __future__ import annotations

import json
import re

import pytest
import yaml

from config.capacity import HOURS_PER_MONTH
from config.idle_cost import idle_prices
from config.system_capacity import INSTANCE_SHAPES
from config.versions import CHARTS
from offline.bench import SIZES, synthetic_stack

from .conftest import load, project_path, render
from .test_doc_snippets import SNIPPETS, _render_urns, stack_document, with_snippet


def readme() -> str:
    return project_path("README.md").read_text()


def doc(name: str) -> str:
    return project_path("docs", name).read_text()


def test_the_readme_quotes_how_many_resources_the_vision_tenant_adds_to_dev():
    [snippet] = [s for s in SNIPPETS if s.where.startswith("README.md") and s.kind == "tenants"]
    before = _render_urns(json.dumps(stack_document("dev"), sort_keys=True))
    after = _render_urns(json.dumps(with_snippet(snippet), sort_keys=True))
    [quoted] = re.findall(r"Adding the README's `vision` tenant to dev\s+shows its (\d+) new resources", doc("rendering.md"))
    assert int(quoted) == after - before


def bench_rows() -> dict[int, list[str]]:
    section = doc("testing.md")[doc("testing.md").index("\n## Benchmark") :]
    rows = re.findall(r"^\| ([\d,]+) \| ([\d,]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|$", section, re.MULTILINE)
    return {int(row[0].replace(",", "")): list(row[1:]) for row in rows}


def test_the_benchmark_table_has_a_row_per_size_whose_derived_columns_follow_from_the_measured_ones():
    rows = bench_rows()
    assert sorted(rows) == sorted(SIZES)
    for resources, seconds, per_resource, floor, ratio in rows.values():
        count = int(resources.replace(",", ""))
        assert float(per_resource) == pytest.approx(float(seconds) * 1000 / count, abs=0.06)
        # The floor's column is rounded to two places, a few per cent of its value.
        assert float(ratio) == pytest.approx(float(per_resource) / float(floor), rel=0.03)


def test_the_benchmark_tables_resource_counts_are_what_prod_as_shipped_renders():
    prod = stack_document("prod")
    one, two = (len(render(synthetic_stack(n, prod), "bench").resources) for n in (1, 2))
    per_tenant = two - one
    rows = bench_rows()
    assert {n: int(row[0].replace(",", "")) for n, row in rows.items()} == {n: one + (n - 1) * per_tenant for n in rows}
    quoted = f"linear in tenants, {per_tenant}\nresources each on top of the platform's own {one - per_tenant} ("
    assert quoted in doc("testing.md")


def test_the_readme_says_what_devs_cpu_pool_leaves_for_the_vision_entry():
    config = load(stack_document("dev"))
    cpu = sum(t.config.cpu for t in config.tenants)
    memory = sum(t.config.memory_gib for t in config.tenants)
    limits = (config.cpu_pool.cpu_limit, config.cpu_pool.memory_limit_gib)
    quoted = (
        f"its CPU pool's `cpuLimit: {limits[0]}` and `memoryLimitGiB: {limits[1]}` leave {limits[0] - cpu} vCPUs and "
        f"{limits[1] - memory} GiB beside\ntheir {cpu} and {memory}"
    )
    assert quoted in readme()


@pytest.mark.stack_files
def test_devs_comment_on_its_system_nodes_quotes_their_sums_and_their_cost():
    text = project_path("Pulumi.dev.yaml").read_text()
    comment = " ".join(line.strip().lstrip("# ") for line in text.splitlines() if line.strip().startswith("#"))
    config = load(yaml.safe_load(text)["config"])
    requested = config.system_capacity.requested.cpu_m
    nodes = config.cluster.system_nodes
    xlarge = nodes.instance_types[0]
    large = xlarge.replace(".xlarge", ".large")
    allocate = nodes.min_size * INSTANCE_SHAPES[large].allocatable.cpu_m
    prices = idle_prices(config.region)
    more = nodes.desired_size * (prices.instance(xlarge) - prices.instance(large)) * HOURS_PER_MONTH  # type: ignore[operator]
    assert f"request about {requested / 1000:.1f} vCPU" in comment
    assert f"two large nodes allocate {allocate / 1000:g}" in comment
    assert f"cost about ${round(more, -1):.0f} a month more" in comment


# The controllers the README's diagram names with a version, and the chart each version is the pin of.
DIAGRAM_CHARTS = {
    "Karpenter": "karpenter",
    "NVIDIA GPU Operator": "gpu-operator",
    "Kueue": "kueue",
    "kube-prometheus-stack": "kube-prometheus-stack",
    "OpenCost": "opencost",
    "KEDA": "keda",
    "Kubeflow Trainer": "kubeflow-trainer",
}


def test_the_readme_diagram_names_the_pinned_chart_versions():
    diagram = readme()[readme().index("```mermaid") :]
    diagram = diagram[: diagram.index("\n```\n")]
    names = "|".join(re.escape(name) for name in DIAGRAM_CHARTS)
    quoted = dict(re.findall(rf'"({names}) (v?\d+\.\d+\.\d+)', diagram))
    assert quoted == {name: CHARTS[chart].version for name, chart in DIAGRAM_CHARTS.items()}


def bench_sim_rows() -> dict[int, list[str]]:
    """docs/simulation.md's `make bench-sim` table: load -> CPU s, per load vs 1x, events, events/CPU s, h/CPU s, MiB."""
    row = r"^\| (\d+)x \| ([\d.]+) \| ([\d.]+) \| ([\d,]+) \| ([\d,]+) \| ([\d,]+) \| ([\d,]+) \|$"
    return {int(found[0]): list(found[1:]) for found in re.findall(row, doc("simulation.md"), re.MULTILINE)}


def test_the_simulator_benchmark_rows_derive_from_their_measured_columns_and_the_prose_quotes_the_1x_row():
    from offline.bench_sim import LIMIT_MIB, PLAN_LIMIT_SECONDS

    rows = bench_sim_rows()
    assert sorted(rows) == [1, 4, 16]
    one = float(rows[1][0])
    hours = 1065  # workloads/alibaba-gpu-2023.yaml `duration`, the same at every load
    for factor, (cpu, per_load, events, per_cpu, sim_hours, _rss) in rows.items():
        count = int(events.replace(",", ""))
        assert float(per_load) == pytest.approx(float(cpu) / factor / one, abs=0.02)
        assert int(per_cpu.replace(",", "")) == pytest.approx(count / float(cpu), rel=0.02)
        # Printed as whole hours: within half an hour of the quotient, or 2 % of it where that is more.
        assert int(sim_hours.replace(",", "")) == pytest.approx(hours / float(cpu), rel=0.02, abs=0.5)
    rss = int(rows[1][5].replace(",", ""))
    assert f"The whole trace at 1x costs {rows[1][0]} CPU seconds and {rss} MiB" in doc("simulation.md")
    assert one < PLAN_LIMIT_SECONDS and rss < LIMIT_MIB
