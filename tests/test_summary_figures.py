"""Every figure of the summary's capacity and cost sections, worked out by hand on an irregular stack.

The stack (tests/builders.py `irregular_capacity_document`): a MIG pool, a pool of two flavors with
headroom, a time-sliced pool (3 slices a GPU) two tenants share, with headroom. us-east-1 on-demand
prices (config/catalog_prices.py): p5.48xlarge $55.04 (8 GPUs: $6.88 a GPU), p4d.24xlarge $21.957642
(8 GPUs: $2.74470525 a GPU), g6e.12xlarge $10.49264 (4 GPUs: $2.62316 a GPU, the pool's cheapest),
g6e.24xlarge $15.06559 (4), g6e.48xlarge $30.13118 (8). A month is 730 hours.
"""

from __future__ import annotations

import functools

from offline.summary import render_summary

from .builders import irregular_capacity_document
from .conftest import load, render


@functools.cache
def summary() -> str:
    document = irregular_capacity_document()
    return render_summary(render(document, "irregular"), load(document))


def section(title: str) -> str:
    return summary().split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def rows(title: str) -> dict[str, list[str]]:
    """The section's first table, by first cell."""
    found: dict[str, list[str]] = {}
    for line in section(title).splitlines():
        if line.startswith("| ") and not line.startswith("|---"):
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            found.setdefault(cells[0], cells)
    return found


def test_gpu_pools_limit_units_and_cost_at_limit():
    pools = rows("GPU pools")
    # pool: GPU limit, schedulable at limit, cost/hour at limit (declared GPUs x cheapest price a GPU).
    assert [pools["`gpu-h100`"][i] for i in (6, 8, 9)] == [
        "32",
        "64 `nvidia.com/mig-1g.10gb`, 32 `nvidia.com/mig-2g.20gb`, 32 `nvidia.com/mig-3g.40gb`",  # 32 x 2, x 1, x 1
        "$220.16",  # 32 x 6.88
    ]
    assert [pools["`gpu-a100`"][i] for i in (6, 8, 9)] == [
        "32", "32 `nvidia.com/gpu`", "$87.83 (on-demand rate; spot is usually cheaper)",  # 32 x 2.74470525 = 87.8306
    ]
    assert [pools["`gpu-l40s`"][i] for i in (6, 7, 8, 9)] == [
        "16", "time-slicing x3", "48 `nvidia.com/gpu`", "$41.97",  # 16 x 3 slices; 16 x 2.62316 = 41.9706
    ]


def test_tenants_guaranteed_borrowable_quota_and_monthly_cost():
    tenants = rows("Tenants")
    # guaranteed, may borrow, ResourceQuota (GPU), monthly cost.
    assert [tenants["`llm-training`"][i] for i in (2, 3, 4, 8)] == [
        "16 h100-on-demand, 8 a100-spot",
        "+12 h100-on-demand, +8 a100-spot",
        # a100: 8 + 8; MIG per unit 2, 1, 1 x (16 + 12).
        "nvidia.com/gpu=16, nvidia.com/mig-1g.10gb=56, nvidia.com/mig-2g.20gb=28, nvidia.com/mig-3g.40gb=28",
        "$96,387",  # (16 x 6.88 + 8 x 2.74470525) x 730 = 132.037642 x 730 = 96,387.48
    ]
    assert [tenants["`inference`"][i] for i in (2, 3, 4, 8)] == [
        "8 h100-on-demand, 21 l40s-on-demand (7 GPUs)",
        "+6 l40s-on-demand (2 GPUs)",
        "nvidia.com/gpu=27, nvidia.com/mig-1g.10gb=16, nvidia.com/mig-2g.20gb=8, nvidia.com/mig-3g.40gb=8",  # 21 + 6
        "$53,584",  # (8 x 6.88 + 21 / 3 x 2.62316) x 730 = 73.40212 x 730 = 53,583.55
    ]
    assert [tenants["`data-science`"][i] for i in (2, 3, 4, 8)] == [
        "8 h100-on-demand, 8 a100-spot, 4 a100-on-demand, 9 l40s-on-demand (3 GPUs)",
        "+8 h100-on-demand, +9 l40s-on-demand (3 GPUs)",
        "nvidia.com/gpu=30, nvidia.com/mig-1g.10gb=32, nvidia.com/mig-2g.20gb=16, nvidia.com/mig-3g.40gb=16",  # 8+4+9+9
        "$69,968",  # (8 x 6.88 + 12 x 2.74470525 + 9 / 3 x 2.62316) x 730 = 95.845943 x 730 = 69,967.54
    ]
    assert tenants["`experiments`"][8] == "$0"


def test_capacity_counts_every_flavor_of_a_pool():
    capacity = rows("Capacity promised vs declared")
    assert capacity["`gpu-h100`"][1:] == ["h100-on-demand", "32 / 32 GPUs", "0"]
    # 4 on a100-on-demand and 8 + 8 on a100-spot; the headroom is not declared capacity.
    assert capacity["`gpu-a100`"][1:] == ["a100-on-demand, a100-spot", "20 / 32 GPUs", "12"]
    assert capacity["`gpu-l40s`"][1:] == ["l40s-on-demand", "30 / 48 GPU slices (10 / 16 GPUs)", "18"]
    assert capacity["`cpu` (cpu)"][1:] == ["cpu", "272 / 512 vCPUs", "240"]  # 64 + 64 + 128 + 16


def test_idle_cost_runs_each_pools_headroom_nodes():
    idle = rows("Idle cost")
    # gpu-a100: three 2-GPU placeholders on one 8-GPU p4d.24xlarge: 21.957642 x 730 = 16,029.08.
    assert idle["GPU headroom `gpu-a100` (p4d.24xlarge)"][1:] == ["1", "$21.9576/h", "$16,029"]
    # gpu-l40s: two placeholders of 3 slices (1 GPU); one claim may become a 48xlarge and takes both, and the
    # cheapest type holding 2 GPUs launches: g6e.12xlarge, 10.49264 x 730 = 7,659.63.
    assert idle["GPU headroom `gpu-l40s` (g6e.12xlarge)"][1:] == ["1", "$10.4926/h", "$7,660"]
    # 729.004 for the platform (tests/test_idle_cost.py) + 16,029.0787 + 7,659.6272 = 24,417.71.
    assert idle["**idle, per month**"][3] == "**$24,418**"


def test_schedulability_limits_reach_and_unpromised_capacity():
    proof = rows("Schedulability")
    # gpu-a100: limit 32 + 6 = 38, reached in 8-GPU nodes: 32.
    assert proof["`a100-on-demand`"][2:5] == [
        "4 (20 on the pool)", "`gpu-a100`: p4d.24xlarge", "`nvidia.com/gpu: 38` (reaches 32)",
    ]
    assert proof["`a100-spot`"][2] == "16 (20 on the pool)"
    # gpu-l40s: (16 + 2) x 3 = 54 slices, nodes of 12, 12 and 24: 48.
    assert proof["`l40s-on-demand`"][4] == "`nvidia.com/gpu: 54` (reaches 48)"
    unpromised = [line for line in section("Schedulability").splitlines() if line.startswith("**Unpromised:**")]
    assert unpromised == [
        # 32 - 20 = 12 to llm-training's a100-spot (8 + 12); 20 GPUs hold the 20 promised, reached (26: 24).
        "**Unpromised:** pool `gpu-a100` reaches 32 `nvidia.com/gpu` but only 20 are nominal quota; Kueue admits "
        "work only against nominal quotas, so no tenant can borrow the other 12: set "
        "gpu-platform:tenants[llm-training].gpu.a100-spot.nominal to 20 or set gpu-platform:nodePools[gpu-a100].gpus "
        "to 20.",
        # 48 - 30 = 18 to inference (21 + 18); 10 GPUs are 30 slices, reached ((10 + 2) x 3 = 36: 36).
        "**Unpromised:** pool `gpu-l40s` reaches 48 `nvidia.com/gpu` but only 30 are nominal quota; Kueue admits "
        "work only against nominal quotas, so no tenant can borrow the other 18: set "
        "gpu-platform:tenants[inference].gpu.l40s-on-demand.nominal to 39 or set gpu-platform:nodePools[gpu-l40s].gpus "
        "to 10.",
    ]


def test_warm_start_headroom_limits_and_standing_cost():
    warm = rows("Warm start and time to GPU")
    # headroom GPUs, placeholders, NodePool GPU limit, standing cost (the Idle cost nodes, per hour and month).
    assert warm["`gpu-a100`"][1:5] == ["6", "3 x 2 on on-demand", "38 `nvidia.com/gpu`", "$21.96/h, $16,029/month"]
    assert warm["`gpu-l40s`"][1:5] == ["2", "2 x 1 on on-demand", "54 `nvidia.com/gpu`", "$10.49/h, $7,660/month"]
    assert warm["`gpu-h100`"][1:5] == [
        "-", "-", "64 `nvidia.com/mig-1g.10gb`, 32 `nvidia.com/mig-2g.20gb`, 32 `nvidia.com/mig-3g.40gb`", "-",
    ]


def test_autoscaling_units_at_max_and_working_hours_floors():
    scaling = rows("Autoscaling")
    assert scaling["`inference/chat`"][3] == "12 GPU slices (4 GPUs at 3 slices each) on l40s-on-demand"  # 12 x 1
    assert scaling["`data-science/notebook-assist`"][3] == (
        "4 GPU slices (1.33333 GPUs at 3 slices each) on l40s-on-demand"
    )
    assert scaling["`llm-training/embeddings`"][3] == "8 GPUs on a100-spot"
    floors = [line for line in section("Warm start and time to GPU").splitlines() if "notebook-assist" in line]
    # 22:00-06:00 Tokyo, every day: 8 h x 7 = 56 h open; (3 - 1) x 1 x (168 - 56) = 224 released.
    assert floors == ["| `data-science/notebook-assist` | `0 22 * * *` to `0 6 * * *` (Asia/Tokyo) | 3 / 1 | 56 h | 224 |"]
