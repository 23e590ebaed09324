"""Identity in Pulumi state: every resource's URN stays what it was.

A URN is the stack, the type tokens of the resource and its parents (`gpu-platform:queueing:Queueing`),
and its logical name. Moving a module is free; changing a type token or a logical name makes Pulumi
delete the resource and create a new one (a tenant's namespace with its volumes, an EKS cluster) unless
the change carries an alias. So the URNs each fixture stack declares are kept in `tests/snapshots/`,
and a change to them has to be made on purpose.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from .conftest import fixture_document, render, render_fixture

SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"
SNAPSHOT_FIXTURES = ("single-pool", "multi-pool")
UPDATE = os.environ.get("UPDATE_SNAPSHOTS") == "1"


def urns(recording) -> list[str]:
    return sorted(resource.urn for resource in recording.resources)


def snapshot_path(fixture: str) -> Path:
    return SNAPSHOTS / f"{fixture}.urns"


def identity_changes(fixture: str, expected: list[str], actual: list[str]) -> str:
    gone, new = sorted(set(expected) - set(actual)), sorted(set(actual) - set(expected))
    lines = [f"the URNs of fixture stack {fixture} differ from {snapshot_path(fixture).relative_to(SNAPSHOTS.parent.parent)}:"]
    if gone:
        lines += ["  disappeared (pulumi up would delete these):", *(f"    {urn}" for urn in gone)]
    if new:
        lines += ["  appeared (pulumi up would create these):", *(f"    {urn}" for urn in new)]
    lines += [
        "A renamed type token or logical name needs a Pulumi alias (pulumi.ResourceOptions(aliases=[...]))",
        "naming the old one, or every existing stack replaces the resource. If the change is deliberate,",
        "refresh the snapshot and commit it: UPDATE_SNAPSHOTS=1 python -m pytest tests/test_identity.py",
    ]
    return "\n".join(lines)


def test_urns_chain_every_ancestor_type_and_leave_out_the_root_stack_as_the_engine_does():
    """pulumi/pulumi `pkg/resource/deploy/deployment.go` `generateURN` with `sdk/go/common/resource/urn.go` `NewURN`.

    The parent's qualified type (its whole chain) goes before the child's; the root stack's type never does.
    """
    import pulumi

    from offline.engine import run_program

    def program() -> None:
        outer = pulumi.ComponentResource("test:index:Outer", "outer")
        inner = pulumi.ComponentResource("test:mid:Inner", "inner", opts=pulumi.ResourceOptions(parent=outer))
        pulumi.CustomResource("aws:ec2/vpc:Vpc", "vpc", {}, opts=pulumi.ResourceOptions(parent=inner))

    recording = run_program("dev", {}, program=program)
    assert urns(recording) == [
        "urn:pulumi:dev::gpu-platform::test:index:Outer$test:mid:Inner$aws:ec2/vpc:Vpc::vpc",
        "urn:pulumi:dev::gpu-platform::test:index:Outer$test:mid:Inner::inner",
        "urn:pulumi:dev::gpu-platform::test:index:Outer::outer",
    ]


def test_a_grandparent_type_change_shows_in_its_grandchildren_urns():
    """The platform's VPC is three levels down: renaming the platform component's type would replace it."""
    [vpc] = render_fixture("single-pool").by_type("aws:ec2/vpc:Vpc")
    assert vpc.urn.split("::")[2] == (
        "gpu-platform:index:GpuPlatform$gpu-platform:network:Network$aws:ec2/vpc:Vpc"
    ), vpc.urn


def test_the_offboarding_unprotect_command_names_the_urn_of_a_tenant_namespace():
    """docs/tenants.md's `pulumi state unprotect` URN, with the stack and team filled in, is one the stack declares."""
    import re

    text = (Path(__file__).resolve().parent.parent / "docs" / "tenants.md").read_text()
    [documented] = re.findall(r"pulumi state unprotect '([^']+)'", text)
    recording = render_fixture("multi-pool")
    namespaces = {r.urn for r in recording.by_type("kubernetes:core/v1:Namespace")}
    team = fixture_document("multi-pool")["gpu-platform:tenants"][0]["name"]
    filled = documented.replace("urn:pulumi:prod::", "urn:pulumi:multi-pool::").replace("<team>", team)
    assert filled in namespaces, filled


@pytest.mark.parametrize("fixture", SNAPSHOT_FIXTURES)
def test_every_urn_matches_the_committed_snapshot(fixture):
    actual = urns(render_fixture(fixture))
    path = snapshot_path(fixture)
    if UPDATE:
        path.write_text("".join(f"{urn}\n" for urn in actual))
    if not path.exists():
        pytest.fail(f"no snapshot {path.name}: create it with UPDATE_SNAPSHOTS=1 python -m pytest tests/test_identity.py")
    expected = path.read_text().splitlines()
    assert actual == expected, identity_changes(fixture, expected, actual)


def new_tenant(document: dict[str, Any]) -> dict[str, Any]:
    """A tenant that borrows on a flavor the first tenant has quota on and shares a principal with it."""
    first = document["gpu-platform:tenants"][0]
    flavor = next(iter(first["gpu"]))
    return {
        "name": "new-team",
        "priority": first["priority"],
        "gpu": {flavor: {"nominal": 0, "borrowingLimit": 1}},
        "cpu": 4,
        "memoryGiB": 16,
        "viewers": list(first.get("admins", [])),
    }


@pytest.mark.parametrize("fixture", SNAPSHOT_FIXTURES)
def test_adding_a_tenant_only_adds_resources(fixture):
    document = fixture_document(fixture)
    document["gpu-platform:tenants"].append(new_tenant(document))
    before, after = set(urns(render_fixture(fixture))), set(urns(render(document, fixture)))
    assert sorted(before - after) == [], "adding a tenant renamed or removed these resources"
    added = after - before
    assert added
    assert all("new-team" in urn.rsplit("::", 1)[-1] for urn in added), sorted(added)
