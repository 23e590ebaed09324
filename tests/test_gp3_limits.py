"""Node volumes EC2 would refuse are config errors, one line each, naming the limit and the fix.

EC2's gp3 limits (Amazon EBS User Guide, General Purpose SSD volumes): 3,000-80,000 IOPS, at most 500
IOPS per GiB, 125-2,000 MiB/s, and at most 0.25 MiB/s per provisioned IOPS. Karpenter's EC2NodeClass
CRD (v1.14.1) checks none of them: a volume past them fails only at CreateFleet, after `pulumi up`.
"""

from __future__ import annotations

import pytest

from .conftest import fixture_document, load, problems_of

GPU = "gpu-platform:nodePools[gpu-l40s].rootVolume"
CPU = "gpu-platform:cpuPool.rootVolume"


def with_volume(volume: dict, section: str = "gpu"):
    doc = fixture_document("single-pool")
    if section == "gpu":
        doc["gpu-platform:nodePools"][0]["rootVolume"] = volume
    else:
        doc["gpu-platform:cpuPool"]["rootVolume"] = volume
    return doc


VIOLATIONS = [
    pytest.param(
        "gpu",
        {"sizeGiB": 200, "iops": 3000, "throughput": 1000},
        f"{GPU}.throughput: 1000 MiB/s is above gp3's 0.25 MiB/s per provisioned IOPS, 750 with iops 3000: "
        "lower throughput to 750 or raise iops to 4000",
        id="throughput-per-iops",
    ),
    pytest.param(
        "cpu",
        {"sizeGiB": 100, "iops": 6000, "throughput": 1501},
        f"{CPU}.throughput: 1501 MiB/s is above gp3's 0.25 MiB/s per provisioned IOPS, 1500 with iops 6000: "
        "lower throughput to 1500 or raise iops to 6004",
        id="cpu-pool-throughput-per-iops",
    ),
    pytest.param(
        "gpu",
        {"sizeGiB": 200, "iops": 2000},
        f"{GPU}.iops: 2000 is below gp3's minimum of 3000 IOPS: set iops to at least 3000",
        id="iops-below-minimum",
    ),
    pytest.param(
        "gpu",
        {"sizeGiB": 500, "iops": 90000},
        f"{GPU}.iops: 90000 is above gp3's maximum of 80000 IOPS: set iops to at most 80000",
        id="iops-above-maximum",
    ),
    pytest.param(
        "cpu",
        {"sizeGiB": 20, "iops": 12000},
        f"{CPU}.iops: 12000 is above gp3's 500 IOPS per GiB, 10000 on a 20 GiB volume: lower iops to 10000 "
        "or raise sizeGiB to 24",
        id="iops-per-gib",
    ),
    pytest.param(
        "gpu",
        {"throughput": 100},
        f"{GPU}.throughput: 100 is below gp3's minimum of 125 MiB/s: set throughput to at least 125",
        id="throughput-below-minimum",
    ),
    pytest.param(
        "gpu",
        {"sizeGiB": 500, "iops": 16000, "throughput": 2500},
        f"{GPU}.throughput: 2500 is above gp3's maximum of 2000 MiB/s: set throughput to at most 2000",
        id="throughput-above-maximum",
    ),
]


@pytest.mark.parametrize("section, volume, line", VIOLATIONS)
def test_each_gp3_limit_a_volume_breaks_is_one_line_with_the_limit_and_the_fix(section, volume, line):
    assert problems_of(with_volume(volume, section)) == [line]


@pytest.mark.parametrize(
    "volume",
    [
        {},  # the defaults: 200 GiB, 3000 IOPS, 125 MiB/s
        {"sizeGiB": 20, "iops": 8000, "throughput": 2000},  # 0.25 MiB/s per IOPS exactly, 400 IOPS per GiB
        {"sizeGiB": 160, "iops": 80000, "throughput": 2000},  # both maximums, 500 IOPS per GiB exactly
    ],
)
def test_volumes_at_the_gp3_limits_are_accepted(volume):
    load(with_volume(volume))
