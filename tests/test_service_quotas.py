"""The EC2 GPU vCPU quotas each pool needs at its limit, as the summary lists them.

Quota per family group and purchase option: models/aws_ec2_quotas.py (EC2 User Guide, "On-Demand Instance
quotas", "Spot Instance quotas"). A Karpenter pool holds at most the worst mix of its types within its
NodePool's GPU limit (models/karpenter/limits.py `most_carried`); a DRA pool its node group's size.
"""

from __future__ import annotations

import pytest

from models.aws_ec2_quotas import vcpu_quota
from models.karpenter.limits import most_carried
from offline.quotas import quota_rows, render_service_quotas
from offline.summary import render_summary

from .conftest import fixture_config, fixture_document, load, render_fixture


@pytest.mark.parametrize(
    "instance_type, option, code",
    [
        ("g6e.12xlarge", "on-demand", "L-DB2E81BA"),
        ("g5.xlarge", "on-demand", "L-DB2E81BA"),
        ("vt1.3xlarge", "on-demand", "L-DB2E81BA"),
        ("p5.48xlarge", "on-demand", "L-417A185B"),
        ("p4d.24xlarge", "on-demand", "L-417A185B"),
        ("g6.2xlarge", "spot", "L-3819A6DF"),
        ("p5en.48xlarge", "spot", "L-7212CCBC"),
        ("p4de.24xlarge", "spot", "L-7212CCBC"),
    ],
)
def test_each_gpu_family_counts_against_its_groups_quota(instance_type, option, code):
    assert vcpu_quota(instance_type, option).code == code


def test_a_family_without_a_modelled_quota_is_refused():
    with pytest.raises(ValueError):
        vcpu_quota("inf2.xlarge", "on-demand")


@pytest.mark.parametrize(
    "limit, types, expected",
    [
        # g6e: 12xlarge 4 GPUs/48 vCPUs, 24xlarge 4/96, 48xlarge 8/192: two 48xlarge or four 24xlarge.
        (16, [(4, 48), (4, 96), (8, 192)], 384),
        # 6 GPUs: one 4-GPU node, then nothing of 4 fits in the 2 left.
        (6, [(4, 96)], 96),
        # 5: a 1-GPU node of 64 vCPUs five times beats one 4-GPU node of 96 and a 1-GPU one.
        (5, [(1, 64), (4, 96)], 320),
        (3, [(4, 96)], 0),
        (0, [(1, 8)], 0),
        # A type without GPUs is not bounded by the GPU limit and carries nothing here.
        (2, [(0, 500), (1, 4)], 8),
    ],
)
def test_the_most_vcpus_a_gpu_limit_admits_is_the_worst_mix_of_types(limit, types, expected):
    assert most_carried(limit, types) == expected


def test_every_pool_and_capacity_type_gets_its_quota_and_vcpus_at_limit():
    # multi-pool: 32 H100 in p5.48xlarge (8 GPUs, 192 vCPUs) = 4 nodes; A100 spot: 16 GPUs + 6 of headroom = 22,
    # two p4d.24xlarge (8 GPUs, 96 vCPUs) fit; L40S 16 GPUs in g6e.12/24/48xlarge: 384.
    assert quota_rows(fixture_config("multi-pool")) == [
        ("gpu-h100", "on-demand", "L-417A185B", 768),
        ("gpu-a100", "spot", "L-7212CCBC", 192),
        ("gpu-l40s", "on-demand", "L-DB2E81BA", 384),
    ]
    # single-pool-dra: the g6e family at 8 GPUs is eight g6e.16xlarge (1 GPU, 64 vCPUs), on either capacity
    # type; the DRA pool's two nodes at g6.2xlarge's 8 vCPUs, and no surge on a version update.
    assert quota_rows(fixture_config("single-pool-dra")) == [
        ("gpu-l40s", "on-demand", "L-DB2E81BA", 512),
        ("gpu-l40s", "spot", "L-3819A6DF", 512),
        ("gpu-l4-dra", "on-demand", "L-DB2E81BA", 16),
    ]


def test_a_pools_cpu_limit_caps_its_vcpus():
    document = fixture_document("single-pool-dra")
    document["gpu-platform:nodePools"][0]["cpuLimit"] = 200
    [l40s, dra] = load(document).gpu_pools
    assert (l40s.vcpus_at_limit, dra.vcpus_at_limit) == (200, 16)


def test_the_summary_totals_each_quota_and_says_how_to_raise_it():
    section = render_service_quotas(fixture_config("single-pool-dra"))
    assert "| `L-DB2E81BA` | Running On-Demand G and VT instances | 528 |" in section
    assert (
        "`aws service-quotas request-service-quota-increase --service-code ec2 --quota-code L-3819A6DF "
        "--desired-value 512 --region us-west-2`"
    ) in section
    summary = render_summary(render_fixture("single-pool-dra"), fixture_config("single-pool-dra"))
    assert "\n## Service quotas\n" in summary
