"""A DRA pool's Karpenter-only fields, and the Kubernetes minor that turns DRAExtendedResource on.

A DRA pool is an EKS managed node group (components/dra_nodes.py), so the fields only a Karpenter
NodePool reads would configure nothing; each is refused in one line. From 1.36 DRAExtendedResource is
on by default (models/kubernetes/features.py), which the platform's GPU quotas do not handle.
"""

from __future__ import annotations

import pytest

import config.cluster
import config.versions
from config.errors import ConfigError
from models.kubernetes.features import DRA_EXTENDED_RESOURCE, enabled_by_default, first_enabled

from .conftest import fixture_document, load

POOL = "gpu-l4-dra"
KEY = f"gpu-platform:nodePools[{POOL}]"
UNREAD = (
    "configures nothing: the pool is an EKS managed node group of fixed size, not a Karpenter NodePool, and nothing "
    "reads {field} for it; remove it"
)
REASON = (
    "from Kubernetes 1.36 DRAExtendedResource is on by default, and the NVIDIA DRA driver's DeviceClass names "
    "extendedResourceName nvidia.com/gpu: a pod asking for nvidia.com/gpu could take a DRA pool's GPU, counted "
    "against a quota key the platform's quotas do not give it; stay on 1.35 until the platform handles that"
)


def _problems(document) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load(document)
    return caught.value.problems


def _with_pool_fields(**fields):
    document = fixture_document("single-pool-dra")
    [pool] = [p for p in document["gpu-platform:nodePools"] if p["name"] == POOL]
    pool.update(fields)
    return document


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("disruption", {"consolidationPolicy": "WhenEmpty"}),
        ("expireAfter", "720h"),  # the default, written out: still configures nothing
        ("weight", 10),
        ("terminationGracePeriod", "30m"),
        ("cpuLimit", 64),
        ("memoryLimitGiB", 256),
    ],
)
def test_a_karpenter_only_field_on_a_dra_pool_is_one_line(field, value):
    expected = f"{KEY}.{field}: set on DRA pool {POOL}, " + UNREAD.format(field=field)
    assert _problems(_with_pool_fields(**{field: value})) == [expected]


def test_two_such_fields_are_two_lines_and_the_same_fields_on_a_karpenter_pool_are_fine():
    assert len(_problems(_with_pool_fields(weight=10, expireAfter="168h"))) == 2
    document = fixture_document("single-pool-dra")
    karpenter = next(p for p in document["gpu-platform:nodePools"] if p["name"] != POOL)
    karpenter.update(weight=10, cpuLimit=64)
    load(document)


def test_the_dra_fixture_sets_none_of_them():
    load(fixture_document("single-pool-dra"))


@pytest.mark.parametrize(("version", "on"), [("1.33", False), ("1.34", False), ("1.35", False), ("1.36", True),
                                              ("1.37", True), ("1.40", True), ("2.0", True)])
def test_dra_extended_resource_is_on_by_default_from_1_36(version, on):
    assert enabled_by_default(DRA_EXTENDED_RESOURCE, version) is on


def test_the_first_minor_with_the_gate_on_is_1_36():
    assert first_enabled(DRA_EXTENDED_RESOURCE) == "1.36"


@pytest.mark.parametrize("version", ["1.36", "1.37"])
def test_kubernetes_1_36_and_later_are_refused_with_the_reason(version):
    document = fixture_document("multi-pool")
    document["gpu-platform:cluster"]["kubernetesVersion"] = version
    [line] = _problems(document)
    assert line == (
        f"gpu-platform:cluster.kubernetesVersion: '{version}' is not supported by the pinned components; use one of 1.33, 1.34, "
        f'1.35 (quote it in YAML: "1.30" is not 1.3); {REASON}'
    )


def test_an_older_unsupported_minor_gets_no_dra_reason():
    document = fixture_document("multi-pool")
    document["gpu-platform:cluster"]["kubernetesVersion"] = "1.32"
    [line] = _problems(document)
    assert "DRAExtendedResource" not in line


def test_once_1_36_is_pinned_a_dra_stack_on_it_is_still_refused(monkeypatch):
    """The gate does not hang on the version table: with 1.36's pins added, DRA stacks stay on 1.35."""
    monkeypatch.setattr(config.cluster, "KUBERNETES_VERSIONS", ("1.33", "1.34", "1.35", "1.36"))
    monkeypatch.setattr(config.cluster, "ami_release_problems", lambda version: [])
    monkeypatch.setitem(config.versions.ADDON_VERSIONS, "1.36", config.versions.ADDON_VERSIONS["1.35"])
    monkeypatch.setitem(config.versions.NODE_GROUP_RELEASE_VERSIONS, "1.36", "1.36.2-20260714")
    document = fixture_document("single-pool-dra")
    document["gpu-platform:cluster"]["kubernetesVersion"] = "1.36"
    problems = _problems(document)
    assert f"gpu-platform:cluster.kubernetesVersion: 1.36 with gpu.dra.enabled: {REASON.replace('1.35', '1.36')}" in problems
