"""A misspelt name in a stack file is one line that names the closest real one, and nothing else: no
line that follows from it suggesting another fix; values print as YAML, never as Python reprs.

The stack is dev as shipped (its frozen copy, tests/fixtures/shipped/dev.yaml, so a team onboarded into
Pulumi.dev.yaml changes nothing here): pool gpu-l40s split per capacity type into l40s-on-demand
and l40s-spot; tenants ml-research (standard; l40s-on-demand 12 + 4, l40s-spot 4) and inference
(production; l40s-on-demand 12 + 4, lending 4; deployment chat on l40s-on-demand).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from config import ConfigError
from config.errors import counted, show
from offline import __main__ as cli

from .conftest import load, shipped_document

T = "gpu-platform:tenants"


def problems_after(change: Callable[[dict[str, Any]], object]) -> list[str]:
    document = shipped_document("dev")
    change(document)
    with pytest.raises(ConfigError) as caught:
        load(document)
    return caught.value.problems


def rename_quota(tenant: int, old: str, new: str) -> Callable[[dict[str, Any]], None]:
    def change(document: dict[str, Any]) -> None:
        gpu = document[T][tenant]["gpu"]
        gpu[new] = gpu.pop(old)
    return change


def set_at(*path: str | int, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(document: dict[str, Any]) -> None:
        target: Any = document
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return change


MISTAKES = {
    # ml-research's l40s-on-demand quota misspelt: without it, inference's borrowingLimit 4 would exceed what the
    # cohort lends (0), a line that would tell the user to lower it; the misspelling is the one mistake.
    "flavor": (
        rename_quota(0, "l40s-on-demand", "l40s-on-demnd"),
        [f"{T}[ml-research].gpu.l40s-on-demnd: no such flavor; did you mean l40s-on-demand? (flavors: l40s-on-demand, "
         "l40s-spot)"],
    ),
    # inference's quota misspelt: its deployment chat then has no quota on l40s-on-demand, which follows from it.
    "flavor-under-a-deployment": (
        rename_quota(1, "l40s-on-demand", "l40-on-demand"),
        [f"{T}[inference].gpu.l40-on-demand: no such flavor; did you mean l40s-on-demand? (flavors: l40s-on-demand, "
         "l40s-spot)"],
    ),
    "tier": (
        set_at(T, 0, "priority", value="standrd"),
        [f"{T}[ml-research].priority: 'standrd' is not a tier of gpu-platform:queueing.priorities (production, standard, "
         "best-effort); did you mean standard?"],
    ),
    # The split pool misspelt: gpu-l40s then makes one flavor, l40s, and every tenant's l40s-on-demand and l40s-spot
    # would be "no such flavor"; those lines follow from the misspelling.
    "pool": (
        set_at("gpu-platform:queueing", "flavorPerCapacityType", value=["gpu-l40"]),
        ["gpu-platform:queueing.flavorPerCapacityType[0]: 'gpu-l40' is not a pool in gpu-platform:nodePools; did you "
         "mean gpu-l40s? (pools: gpu-l40s)"],
    ),
    "deployment-flavor": (
        set_at(T, 1, "inference", 0, "flavor", value="l40s-ondemand"),
        [f"{T}[inference].inference[chat].flavor: 'l40s-ondemand' is not a flavor tenant inference has quota on "
         "(l40s-on-demand), so its pods would never be admitted; did you mean l40s-on-demand?"],
    ),
    "business-unit": (
        lambda d: (d["gpu-platform:queueing"].update(businessUnits=["research", "product"]),
                   d[T][0].update(businessUnit="reserch")),
        [f"{T}[ml-research].businessUnit: 'reserch' is not in gpu-platform:queueing.businessUnits (research, product); did you "
         "mean research?"],
    ),
    # Each add-on override on its own key, the value as written, the mapping never printed whole.
    "addons": (
        set_at("gpu-platform:versions", value={"addons": {"vpc-cni": "v9.9", "corends": "v1.12.1-eksbuild.2"}}),
        [
            "gpu-platform:versions.addons.vpc-cni: 'v9.9' is not an EKS add-on version; they look like "
            "v1.21.1-eksbuild.7",
            "gpu-platform:versions.addons.corends: 'corends' is not an add-on the platform installs; did you mean "
            "coredns? (add-ons: vpc-cni, coredns, kube-proxy, eks-pod-identity-agent, aws-ebs-csi-driver)",
        ],
    ),
    "a-list-where-a-mapping-belongs": (
        set_at("gpu-platform:versions", value={"addons": ["vpc-cni", "v1.2"]}),
        ["gpu-platform:versions.addons: [vpc-cni, v1.2] is not a mapping of keys to values"],
    ),
}


@pytest.mark.parametrize("case", sorted(MISTAKES))
def test_a_misspelt_name_is_one_line_with_the_closest_real_name(case):
    change, lines = MISTAKES[case]
    assert problems_after(change) == lines


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("standrd", "'standrd'"),
        ("it's", "'it''s'"),  # YAML's single quote, doubled
        ("two\nlines", '"two\\nlines"'),
        (["m7i", "g6", "yes", "1.5", "a b"], "[m7i, g6, 'yes', '1.5', 'a b']"),  # quoted where YAML reads it otherwise
        ({"vpc-cni": "latest", "n": [True, None]}, "{vpc-cni: latest, n: [true, null]}"),
        (3, "3"),
        (None, "null"),
    ],
)
def test_values_are_shown_as_yaml_writes_them(value, shown):
    assert show(value) == shown


@pytest.mark.stack_files
def test_a_count_takes_the_number_of_its_noun(capsys, monkeypatch):
    assert [counted(n, "problem") for n in (0, 1, 2)] == ["0 problems", "1 problem", "2 problems"]

    def refused(_stack):
        raise ConfigError(["gpu-platform:cluster.name: required but not set"])

    monkeypatch.setattr(cli, "load_stack", refused)
    assert cli.main(["check", "--stack", "dev"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "Pulumi.dev.yaml: invalid stack config (1 problem):",
        "  gpu-platform:cluster.name: required but not set",
    ]
