"""The summary's idle cost: what a stack bills by the hour with no work running.

multi-pool: three zones with a NAT gateway (and its Elastic IP) each, no interface endpoints, three
m7i.xlarge system nodes of 100 GiB, two Prometheus replicas of 500 GiB, one KMS key, and 6 GPUs of
headroom on gpu-a100 (three 2-GPU placeholders, which one 8-GPU p4d.24xlarge holds).
"""

from __future__ import annotations

import pytest

from config.idle_cost import GpuNodes, IdleInputs, idle_lines, idle_prices, idle_total, standing_gpu_nodes
from config.system_capacity import INSTANCE_SHAPES
from offline.summary import idle_inputs, render_summary

from .conftest import fixture_document, load, render_fixture

P = "gpu-platform:nodePools"


def test_multi_pool_idle_inputs_are_what_it_declares():
    inputs = idle_inputs(render_fixture("multi-pool"), load(fixture_document("multi-pool")))
    assert inputs == IdleInputs(
        nat_gateways=3, public_ipv4=3, interface_endpoint_zones=0, system_nodes=3, system_node_type="m7i.xlarge",
        system_disk_gib=100, prometheus_volume_gib=1000, kms_keys=1,
        gpu_nodes=(GpuNodes("GPU headroom `gpu-a100`, spot at the on-demand rate", "p4d.24xlarge", 1, 21.957642),),
    )


def test_multi_pool_idle_cost_per_month_line_by_line():
    summary = render_summary(render_fixture("multi-pool"), load(fixture_document("multi-pool")))
    section = summary[summary.index("## Idle cost") : summary.index("## Schedulability")]
    # 730 hours: 0.10 -> 73; 3 x 0.045 -> 98.55; 3 x 0.005 -> 10.95; 3 x 0.2016 -> 441.50;
    # (3 x 100 + 1000) GiB x 0.08 -> 104; 1 key -> 1; one p4d.24xlarge, 21.957642 -> 16,029.08. Total 16,758.08.
    for row in (
        "| EKS control plane | 1 | $0.1/h | $73 |",
        "| NAT gateways | 3 | $0.045/h | $99 |",
        "| public IPv4 addresses | 3 | $0.005/h | $11 |",
        "| interface endpoints (endpoint x zone) | 0 | $0.01/h | $0 |",
        "| system nodes (m7i.xlarge) | 3 | $0.2016/h | $442 |",
        "| gp3 volumes (GiB) | 1300 | $0.08/GiB-month | $104 |",
        "| KMS keys | 1 | $1/month | $1 |",
        "| GPU headroom `gpu-a100`, spot at the on-demand rate (p4d.24xlarge) | 1 | $21.9576/h | $16,029 |",
        "| **idle, per month** |  |  | **$16,758** |",
    ):
        assert row in section
    assert "(at us-east-1 prices" not in section  # multi-pool is in us-east-1


def test_a_stack_outside_the_priced_region_says_whose_prices_it_shows():
    summary = render_summary(render_fixture("single-pool"), load(fixture_document("single-pool")))
    assert "What the stack bills with no work running (at us-east-1 prices; us-west-2 may differ)" in summary


@pytest.mark.parametrize(
    "instance_type, usd",
    # aws/karpenter-provider-aws zz_generated.pricing_aws.go, us-east-1
    [("m7i.4xlarge", 0.8064), ("m6g.2xlarge", 0.308), ("c7i.xlarge", 0.1785), ("r7i.2xlarge", 0.5292),
     ("m8i.xlarge", 0.21168), ("m7a.4xlarge", 0.92736), ("m6a.large", 0.0864), ("m5.2xlarge", 0.384)],
)
def test_system_node_prices_are_the_price_lists(instance_type, usd):
    assert idle_prices("us-east-1").instance(instance_type) == pytest.approx(usd)


def test_every_instance_type_the_system_nodes_may_use_has_a_price():
    prices = idle_prices("eu-west-1")
    assert [t for t in INSTANCE_SHAPES if prices.instance(t) is None] == []
    assert prices.region == "us-east-1"


def test_interface_endpoints_bill_per_zone_and_a_type_without_a_price_is_left_out_of_the_total():
    inputs = IdleInputs(
        nat_gateways=0, public_ipv4=0, interface_endpoint_zones=6, system_nodes=2, system_node_type="x9z.large",
        system_disk_gib=0, prometheus_volume_gib=0, kms_keys=0,
    )
    lines = idle_lines(inputs, idle_prices("us-east-1"))
    by_item = {line.item: line for line in lines}
    assert by_item["interface endpoints (endpoint x zone)"].usd_per_month == pytest.approx(6 * 0.01 * 730)
    assert by_item["system nodes (x9z.large)"].usd_per_month is None
    assert idle_total(lines) == pytest.approx(73 + 43.8)


def test_every_idle_line_counts_its_own_input():
    """Irregular counts, so no line can borrow another's: a network with more public IPv4 addresses than
    NAT gateways (an Elastic IP kept for a bastion, say), two keys, nodes of a 2xlarge."""
    inputs = IdleInputs(
        nat_gateways=2, public_ipv4=5, interface_endpoint_zones=4, system_nodes=3, system_node_type="m6g.2xlarge",
        system_disk_gib=80, prometheus_volume_gib=250, kms_keys=2,
    )
    lines = {line.item: (line.count, line.usd_per_month) for line in idle_lines(inputs, idle_prices("us-east-1"))}
    expected = {
        "EKS control plane": (1, 73.0),
        "NAT gateways": (2, 65.7),  # 2 x 0.045 x 730
        "public IPv4 addresses": (5, 18.25),  # 5 x 0.005 x 730
        "interface endpoints (endpoint x zone)": (4, 29.2),  # 4 x 0.01 x 730
        "system nodes (m6g.2xlarge)": (3, 674.52),  # 3 x 0.308 x 730
        "gp3 volumes (GiB)": (490, 39.2),  # (3 x 80 + 250) x 0.08
        "KMS keys": (2, 2.0),
    }
    assert set(lines) == set(expected)
    for item, (count, usd) in expected.items():
        assert lines[item][0] == count, item
        assert lines[item][1] == pytest.approx(usd), item
    assert idle_total(idle_lines(inputs, idle_prices("us-east-1"))) == pytest.approx(901.87)


def _pool(document: dict, name: str) -> dict:
    [pool] = [p for p in document[P] if p["name"] == name]
    return pool


def test_headroom_runs_on_the_nodes_karpenter_packs_its_placeholders_onto():
    # Prod's shape: ten 1-GPU placeholders on g6e.12xlarge/24xlarge (4 GPUs) and 48xlarge (8). Karpenter fills
    # one claim while a type fits all its pods (8, only the 48xlarge), then a second with the other 2, which
    # launches the cheapest type that fits them, the 12xlarge: $30.13118 + $10.49264 an hour, 12 GPUs up.
    document = fixture_document("multi-pool")
    _pool(document, "gpu-l40s")["warmStart"] = {"headroom": {"gpus": 10}}
    config = load(document)
    nodes = [n for n in standing_gpu_nodes(config.gpu_pools) if "gpu-l40s" in n.item]
    assert [(n.item, n.instance_type, n.count, n.usd_per_hour) for n in nodes] == [
        ("GPU headroom `gpu-l40s`", "g6e.48xlarge", 1, 30.13118),
        ("GPU headroom `gpu-l40s`", "g6e.12xlarge", 1, 10.49264),
    ]
    [pool] = [p for p in config.gpu_pools if p.name == "gpu-l40s"]
    assert pool.headroom_hourly_cost == pytest.approx(40.62382)


def test_time_sliced_headroom_packs_in_slices_and_dra_node_groups_stand_at_their_first_type():
    # single-pool-dra (us-west-2): gpu-l40s is g6e (1, 4 and 8 GPUs) at 4 slices per GPU; 3 GPUs of headroom in
    # 1-GPU placeholders are 3 pods of 4 slices. The first claim may become an 8-GPU node (32 slices) and takes
    # all three (12 slices); the cheapest type holding 12 slices is a 4-GPU one, the g6e.12xlarge at
    # $10.49264 (no us-west-2 list is vendored: us-east-1's). The DRA pool gpu-l4-dra: 2 GPUs of
    # g6.xlarge/g6.2xlarge (1 GPU each) are 2 nodes of g6.xlarge, the type EKS launches first, at $0.8048 each.
    document = fixture_document("single-pool-dra")
    _pool(document, "gpu-l40s")["warmStart"] = {"headroom": {"gpus": 3}}
    found = [(n.item, n.instance_type, n.count, n.usd_per_hour) for n in standing_gpu_nodes(load(document).gpu_pools)]
    assert found == [
        ("GPU headroom `gpu-l40s`", "g6e.12xlarge", 1, 10.49264),
        ("DRA node group `gpu-l4-dra`", "g6.xlarge", 2, 0.8048),
    ]
