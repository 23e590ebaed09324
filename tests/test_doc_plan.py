"""docs/capacity-planning.md's measured plans are the plans in docs/capacity-plan-*.json (each the plan.json its
`make plan` wrote): every figure of the table's result cells, the runs, the knobs and the early stops read back."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from offline.project import PROJECT_DIR

DOC = PROJECT_DIR / "docs" / "capacity-planning.md"
PLANS = {
    "dev, design-surge": PROJECT_DIR / "docs" / "capacity-plan-dev-design-surge.json",
    "prod, the Alibaba trace": PROJECT_DIR / "docs" / "capacity-plan-prod-alibaba.json",
}


def _row(label: str) -> list[str]:
    [line] = [line for line in DOC.read_text().splitlines() if line.startswith(f"| {label}")]
    return [cell.strip() for cell in line.strip("|").split("|")]


def _plan(label: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(PLANS[label].read_text())
    return data


def _runs(plan: dict[str, Any]) -> int:
    """Every seed simulated: the search's (a stopped trial's runs), the verification's and the why table's."""
    seeds, fresh = len(plan["search"]["seeds"]), len(plan["verification_seeds"])

    def runs(entry: dict[str, Any], each: int) -> int:
        return int(entry["stopped"]["runs"]) if entry.get("stopped") else each

    search = sum(runs(t, seeds) for t in plan["trials"] if t["problem"] is None)
    verify = sum(runs(a, fresh) for a in plan["verified"])
    why = sum(runs(w, fresh) for w in plan["why"] if "cost" in w)
    return search + verify + why


def _usd(value: dict[str, Any]) -> str:
    return f"${value['mean']:,.2f} [{value['low']:,.2f}, {value['high']:,.2f}]"


@pytest.mark.parametrize("label", list(PLANS))
def test_the_row_is_the_plan(label: str) -> None:
    plan = _plan(label)
    _, knobs, runs, _, _, result = _row(label)
    assert int(knobs) == len(plan["knobs"])
    assert int(runs.replace(",", "")) == _runs(plan)
    chosen = plan["chosen"]
    assert f"on fresh seeds {_usd(chosen['verification']['cost'])} with every level met" in result
    current = {k["name"]: k["current"] for k in plan["knobs"]}
    changes = {name: (current[name], value) for name, value in chosen["values"].items() if value != current[name]}
    # Every change the row names ("12 -> 9") is one the plan made, and the pools' GPUs too.
    named = [(int(a), int(b)) for a, b in re.findall(r"(\d+) -> (\d+)", result)]
    pools = {(chosen["current_pool_gpus"][p], g) for p, g in chosen["pool_gpus"].items() if g != chosen["current_pool_gpus"][p]}
    assert sorted(named) == sorted(list(changes.values()) + list(pools))


def test_dev_binds_three_quotas_on_the_time_to_gpu() -> None:
    plan = _plan("dev, design-surge")
    binding = {w["knob"]: w["binds"] for w in plan["why"] if w.get("binds")}
    knobs = ["tenants[ml-research].gpu.l40s-on-demand.nominal", "tenants[ml-research].gpu.l40s-on-demand.borrowingLimit",
             "tenants[inference].gpu.l40s-on-demand.nominal"]
    assert binding == {knob: ["inference.p95_time_to_gpu<=5m"] for knob in knobs}
    assert "`inference.p95_time_to_gpu<=5m` binds three quota values" in _row("dev, design-surge")[5]


def test_prod_binds_two_nominal_quotas_on_the_standard_tier_and_reads_its_levels() -> None:
    plan = _plan("prod, the Alibaba trace")
    result = _row("prod, the Alibaba trace")[5]
    binding = {w["knob"]: w["binds"] for w in plan["why"] if w.get("binds")}
    assert binding == {"tenants[llm-training].gpu.a100-spot.nominal": ["standard.p95_time_to_start<=2h"],
                       "tenants[inference].gpu.l40s-on-demand.nominal": ["standard.p95_time_to_start<=2h"]}
    production, standard, unstarted = plan["chosen"]["verification"]["levels"]
    assert f"`production.p95_time_to_start` {production['mean'] / 60:.1f} min" in result
    assert (f"`standard.p95_time_to_start` {standard['mean'] / 60:.1f} min [{standard['low'] / 60:.1f}, "
            f"{standard['high'] / 60:.1f}]") in result
    assert unstarted["mean"] == 0 and "nothing unstarted" in result
    slack = [w["knob"] for w in plan["why"] if w["verdict"].startswith("still meets every level, for less")]
    assert slack == ["tenants[experiments].gpu.a100-spot.borrowingLimit"] and "experiments' borrowing has slack" in result
    stopped = [t for t in plan["trials"] if t.get("stopped")]
    alone = [t for t in stopped if t["stopped"]["runs"] == 1]
    said = f"{len(stopped)} of its {len(plan['trials'])} trials stopped early, {len(alone)} of them after their first seed"
    assert said in DOC.read_text()
    assert (plan["search"]["trials"], plan["search"]["seeds"], plan["verification_seeds"]) == (16, [0, 1, 2],
                                                                                            [10000, 10001, 10002])
