"""The summary's warm-start numbers, by value, worked out by hand from config/time_to_gpu.py's figures.

multi-pool: gpu-a100 (p4d.24xlarge, AL2023, spot, 6 warm GPUs in 3 pods of 2), gpu-l40s (g6e 12/24/48xlarge,
Bottlerocket, an image snapshot without an initialization rate, gp3 at 125 MiB/s), and
data-science/notebook-assist warm from 22:00 to 06:00 Tokyo time (3 replicas, 1 outside).
"""

from __future__ import annotations

import functools

from offline.summary import render_summary

from .conftest import fixture_document, load, render_fixture


@functools.cache
def summary() -> str:
    return render_summary(render_fixture("multi-pool"), load(fixture_document("multi-pool")))


def row(first_cell: str, after: str) -> list[str]:
    section = summary().split(after, 1)[1]
    [line] = [line for line in section.splitlines() if line.startswith(f"| {first_cell} |")][:1]
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_headroom_standing_cost_and_limit_per_pool():
    # Three 2-GPU placeholders fit one 8-GPU p4d.24xlarge, which runs whole: $21.957642/h (shown $21.96);
    # x 730 h = $16,029.08.
    assert row("`gpu-a100`", "## Warm start") == [
        "`gpu-a100`", "6", "3 x 2 on spot", "22 `nvidia.com/gpu`", "$21.96/h, $16,029/month", "-"
    ]
    assert row("`gpu-l40s`", "## Warm start") == [
        "`gpu-l40s`", "-", "-", "16 `nvidia.com/gpu`", "-", "`snap-0fedcba9876543210`"
    ]


def test_time_to_gpu_by_step_cold_and_warm():
    after = "| pool | node (cold / warm)"
    # Node: 75 s launch + 90 s GPU Operator (AL2023) = 165 s; headroom: a 5 s preemption.
    # Image: 10 GiB at min(400 Gbit/s, 150 MiB/s unpack) = 68 s, no snapshot.
    # Model: 16 GiB from the Hub at 100 MiB/s = 164 s + 60 s engine = 224 s; S3 at 1000 MiB/s: 16 + 60 = 76 s.
    # Cold 165 + 68.3 + 223.8 = 457 s = 7.6 min; warm 5 + 68.3 + 76.4 = 150 s = 2.5 min.
    assert row("`gpu-a100`", after) == [
        "`gpu-a100`", "165 s / 5 s", "68 s / 68 s (pulled at 150 MiB/s)",
        "224 s / 76 s (S3 streamer at 1000 MiB/s)", "7.6 min", "2.5 min",
    ]
    # Bottlerocket: 75 + 20 = 95 s, no headroom. Snapshot: 4 GiB read lazily at 40 MiB/s = 102 s.
    # Cold 95 + 68.3 + 223.8 = 387 s = 6.5 min; warm 95 + 102.4 + 76.4 = 274 s = 4.6 min.
    assert row("`gpu-l40s`", after) == [
        "`gpu-l40s`", "95 s / 95 s", "68 s / 102 s (snapshot, read at 40 MiB/s)",
        "224 s / 76 s (S3 streamer at 1000 MiB/s)", "6.5 min", "4.6 min",
    ]


def test_working_hours_floor_released_per_week():
    # 22:00-06:00 every day: 8 h x 7 = 56 h open; (3 - 1) replicas x 1 GPU x (168 - 56) h = 224 GPU-hours.
    assert row("`data-science/notebook-assist`", "| deployment | working hours") == [
        "`data-science/notebook-assist`", "`0 22 * * *` to `0 6 * * *` (Asia/Tokyo)", "3 / 1", "56 h", "224"
    ]
