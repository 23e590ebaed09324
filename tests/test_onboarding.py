"""Onboarding a tenant is adding a few lines of config; it must never touch anything that exists."""

from __future__ import annotations

import functools

from offline.engine import Recording

from .conftest import fixture_document, render, render_fixture, short

NEWCOMER = {
    "name": "newcomers",
    "businessUnit": "product",
    "priority": "best-effort",
    "gpu": {"a100-spot": {"nominal": 0, "borrowingLimit": 4}},
    "cpu": 8,
    "memoryGiB": 32,
    "admins": ["arn:aws:iam::111122223333:role/NewcomersAdmin"],
}


@functools.cache
def with_newcomer() -> Recording:
    """The multi-pool fixture with NEWCOMER onboarded, rendered once for this module's tests."""
    doc = fixture_document("multi-pool")
    doc["gpu-platform:tenants"].append(NEWCOMER)
    return render(doc, "multi-pool")


def test_adding_a_tenant_only_adds_resources():
    before = render_fixture("multi-pool")
    after = with_newcomer()

    after_by_urn = {r.urn: r for r in after.resources}
    for resource in before.resources:
        assert resource.urn in after_by_urn, f"{short(resource.urn)} was renamed or removed"
        assert after_by_urn[resource.urn].inputs == resource.inputs, f"{short(resource.urn)} changed"
        assert after_by_urn[resource.urn].dependencies == resource.dependencies, f"{short(resource.urn)} rewired"

    added = {short(urn) for urn in set(after_by_urn) - {r.urn for r in before.resources}}
    assert added, "the new tenant declared nothing"
    assert all("newcomers" in name for name in added), sorted(name for name in added if "newcomers" not in name)


def test_a_new_tenant_gets_its_namespace_quota_and_queues():
    kinds = {
        r.inputs["kind"]
        for r in with_newcomer().resources
        if r.custom and r.type.startswith("kubernetes:") and r.inputs.get("metadata", {}).get("namespace") == "newcomers"
    }
    assert {"ResourceQuota", "LimitRange", "NetworkPolicy", "RoleBinding"} <= kinds
