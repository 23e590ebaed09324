"""Every fix a warning suggests is one `make check` accepts.

The summary's warnings that suggest a change are the Unpromised lines (config/schedulability.py; `offline
check` prints no warnings). Each stack below is accepted and prints at least one such warning: the
example stacks, the fixtures, and variants that leave capacity unpromised on a MIG pool, a DRA pool, a
time-sliced pool with headroom and a pool of several flavors. Each suggested fix is applied alone to a
copy of the stack and loaded as `make check` loads it.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from config import PlatformConfig
from config.keys import CONFIG_NAMESPACE
from config.schedulability import Fix, Unpromised, unpromised
from offline.summary import render_summary

from .builders import irregular_capacity_document, stack_item
from .conftest import FIXTURES, fixture_document, load, project_path, render_fixture, shipped_document

P = f"{CONFIG_NAMESPACE}:nodePools"
T = f"{CONFIG_NAMESPACE}:tenants"


def example_stack(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())["config"]


def mig_pool_under_promised() -> dict[str, Any]:
    document = fixture_document("multi-pool")
    stack_item(document[T], "llm-training")["gpu"]["h100-on-demand"]["nominal"] = 10  # 26 of 32 H100s promised
    return document


def dra_pool_under_promised() -> dict[str, Any]:
    document = fixture_document("single-pool-dra")
    stack_item(document[P], "gpu-l4-dra")["gpus"] = 5  # 5 one-GPU nodes, 2 devices promised
    return document


def headroom_on_a_time_sliced_pool() -> dict[str, Any]:
    document = fixture_document("single-pool")
    stack_item(document[P], "gpu-l40s")["warmStart"] = {"headroom": {"gpus": 2}}
    return document


def several_flavors_half_promised() -> dict[str, Any]:
    document = fixture_document("multi-pool")
    stack_item(document[P], "gpu-l40s")["gpus"] = 28  # 16 promised across two tenants
    return document


STACKS: dict[str, Callable[[], dict[str, Any]]] = {
    **{f"example {path.name}": functools.partial(example_stack, path) for path in sorted(project_path().glob("Pulumi.*.yaml"))},
    **{f"fixture {name}": functools.partial(fixture_document, name) for name in FIXTURES},
    "MIG pool under-promised": mig_pool_under_promised,
    "DRA pool under-promised": dra_pool_under_promised,
    "headroom on a time-sliced pool": headroom_on_a_time_sliced_pool,
    "several flavors, half promised": several_flavors_half_promised,
    "irregular capacity": irregular_capacity_document,
}


def apply(document: dict[str, Any], fix: Fix) -> dict[str, Any]:
    """A copy of `document` with `fix` made: list items by name, then the keys."""
    changed = copy.deepcopy(document)
    section, item, *keys = fix.path
    target = stack_item(changed[f"{CONFIG_NAMESPACE}:{section}"], item)
    for key in keys[:-1]:
        target = target[key]
    target[keys[-1]] = fix.value
    return changed


def warnings_of(config: PlatformConfig) -> list[Unpromised]:
    return unpromised(config.flavors, config.tenants)


CASES = [
    pytest.param(name, index, fix, id=f"{name}: {warning.pool.name} {warning.resource} {fix.key}")
    for name, build in STACKS.items()
    for index, warning in enumerate(warnings_of(load(build())))
    for fix in warning.fixes
]


@pytest.mark.parametrize(("stack", "index", "fix"), CASES)
def test_each_suggested_fix_is_accepted_and_leaves_less_unpromised(stack, index, fix):
    document = STACKS[stack]()
    warning = warnings_of(load(document))[index]
    fixed = load(apply(document, fix))  # a ConfigError here fails the test with the lines `make check` prints
    after = {(w.pool.name, w.resource): w.amount for w in warnings_of(fixed)}
    assert after.get((warning.pool.name, warning.resource), 0) < warning.amount


def test_the_variants_print_the_warnings_they_were_made_for():
    # Each variant, its warnings (pool, resource, reached, declared, promised) and the keys of its fixes.
    expected = {
        "MIG pool under-promised": [
            ("gpu-h100", "nvidia.com/mig-1g.10gb", 64, 64, 52, ["tenants[llm-training].gpu.h100-on-demand.nominal"]),
            ("gpu-h100", "nvidia.com/mig-2g.20gb", 32, 32, 26, ["tenants[llm-training].gpu.h100-on-demand.nominal"]),
            ("gpu-h100", "nvidia.com/mig-3g.40gb", 32, 32, 26, ["tenants[llm-training].gpu.h100-on-demand.nominal"]),
        ],
        "DRA pool under-promised": [
            ("gpu-l40s", "nvidia.com/gpu", 32, 32, 28,
             ["tenants[ml-research].gpu.l40s-on-demand.nominal", "nodePools[gpu-l40s].gpus"]),
            ("gpu-l4-dra", "gpu.nvidia.com.deviceclass.resource.k8s.io/devices", 5, 5, 2,
             ["tenants[ml-research].gpu.l4-dra-on-demand.nominal", "nodePools[gpu-l4-dra].gpus"]),
        ],
        "several flavors, half promised": [
            ("gpu-l40s", "nvidia.com/gpu", 28, 28, 16,
             ["tenants[inference].gpu.l40s-on-demand.nominal", "nodePools[gpu-l40s].gpus"]),
        ],
    }
    for stack, rows in expected.items():
        found = [
            (w.pool.name, w.resource, w.reachable, w.declared, w.promised,
             [fix.key.removeprefix(f"{CONFIG_NAMESPACE}:") for fix in w.fixes])
            for w in warnings_of(load(STACKS[stack]()))
        ]
        assert found == rows, stack


def test_what_the_headroom_adds_beyond_the_declared_gpus_is_not_unpromised():
    # gpu-l40s in single-pool: 8 GPUs x 4 slices declared, 28 promised. Headroom of 2 GPUs raises the limit to
    # 40 slices, all reached on its 4- and 8-GPU types (16 and 32 slices a node), but quotas may hold only the
    # 32 declared: 32 - 28 = 4, as without headroom.
    [warning] = warnings_of(load(headroom_on_a_time_sliced_pool()))
    assert (warning.reachable, warning.declared, warning.promised, warning.amount) == (40, 32, 28, 4)
    assert warning.message.startswith("pool `gpu-l40s` reaches 40 `nvidia.com/gpu` (32 declared, the rest for its headroom)")


def test_prods_headroom_is_no_warning():
    prod = load(shipped_document("prod"))
    assert warnings_of(prod) == []


def test_the_summary_prints_each_warning_and_its_fixes_and_no_other():
    config = load(fixture_document("single-pool"))
    summary = render_summary(render_fixture("single-pool"), config)
    printed = [line for line in summary.splitlines() if line.startswith("**Unpromised:**")]
    assert printed == [
        "**Unpromised:** pool `gpu-l40s` reaches 32 `nvidia.com/gpu` but only 28 are nominal quota; Kueue admits work "
        "only against nominal quotas, so no tenant can borrow the other 4: set "
        "gpu-platform:tenants[ml-research].gpu.l40s-on-demand.nominal to 16 or set gpu-platform:nodePools[gpu-l40s].gpus "
        "to 7."
    ]
