"""Capacity a pool cannot deliver is refused: MIG layouts that do not fit a GPU, in either dimension.

An H100 (and an 80 GB A100) has 7 compute slices and 8 memory slices (NVIDIA Multi-Instance GPU
User Guide, "Supported MIG Profiles", r580): 1g.10gb takes 1 + 1, 1g.20gb 1 + 2, 2g.20gb 2 + 2,
3g.40gb 3 + 4, 4g.40gb 4 + 4, 7g.80gb 7 + 8. A layout that overflows either one cannot be applied
by the MIG manager, and the node would advertise none of it.
"""

from __future__ import annotations

import pytest

from .conftest import fixture_document, load, problems_of

H100_LAYOUT = "gpu-platform:nodePools[gpu-h100].sharing.migLayout"


def with_h100_layout(layout: dict[str, int]) -> dict:
    document = fixture_document("multi-pool")
    document["gpu-platform:nodePools"][0]["sharing"]["migLayout"] = layout
    return document


def test_a_layout_that_overflows_only_the_compute_slices_is_refused():
    # 3x 2g.20gb + 2x 1g.10gb: compute 6 + 2 = 8 of 7, memory 6 + 2 = 8 of 8.
    assert problems_of(with_h100_layout({"2g.20gb": 3, "1g.10gb": 2})) == [
        f"{H100_LAYOUT}: oversubscribes each H100-80GB of pool gpu-h100: 8 of 7 compute slices and 8 of 8 memory "
        "slices; remove profiles until both fit"
    ]


def test_a_layout_that_overflows_only_the_memory_slices_is_refused():
    # 4x 1g.20gb + 1x 1g.10gb: compute 4 + 1 = 5 of 7, memory 8 + 1 = 9 of 8.
    assert problems_of(with_h100_layout({"1g.20gb": 4, "1g.10gb": 1})) == [
        f"{H100_LAYOUT}: oversubscribes each H100-80GB of pool gpu-h100: 5 of 7 compute slices and 9 of 8 memory "
        "slices; remove profiles until both fit"
    ]


@pytest.mark.parametrize(
    "layout",
    [
        # The fixture's own: 3 + 2 + 2x 1 = 7 compute, 4 + 2 + 2x 1 = 8 memory.
        {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2},
        {"7g.80gb": 1},
        {"1g.10gb": 7},
        # 4 + 3 = 7 compute, 4 + 4 = 8 memory.
        {"4g.40gb": 1, "3g.40gb": 1},
    ],
    ids=["fixture", "whole-gpu", "seven-small", "four-and-three"],
)
def test_a_layout_that_fills_a_gpu_exactly_is_accepted(layout):
    [h100] = [pool for pool in load(with_h100_layout(layout)).gpu_pools if pool.name == "gpu-h100"]
    assert h100.config.sharing.mig_layout == layout


def test_a_profile_may_not_exceed_the_instances_one_gpu_holds():
    # 4g.40gb fits once per GPU.
    assert problems_of(with_h100_layout({"4g.40gb": 2})) == [
        f"{H100_LAYOUT}.4g.40gb: 2 instances of 4g.40gb per GPU; a H100-80GB fits 1 to 1"
    ]


def test_a_profile_count_below_one_is_refused_without_a_second_oversubscription_line():
    assert problems_of(with_h100_layout({"3g.40gb": 0, "7g.80gb": 1})) == [
        f"{H100_LAYOUT}.3g.40gb: 0 instances of 3g.40gb per GPU; a H100-80GB fits 1 to 2"
    ]


def test_the_media_engine_profile_counts_like_its_plain_twin_and_fits_once():
    # 1g.10gb+me: 1 compute, 1 memory, at most one per GPU (one media engine set per GPU).
    assert problems_of(with_h100_layout({"1g.10gb+me": 2})) == [
        f"{H100_LAYOUT}.1g.10gb+me: 2 instances of 1g.10gb+me per GPU; a H100-80GB fits 1 to 1"
    ]
    assert load(with_h100_layout({"1g.10gb+me": 1, "1g.10gb": 6})).gpu_pools[0].config.sharing.mig_layout == {
        "1g.10gb+me": 1,
        "1g.10gb": 6,
    }
