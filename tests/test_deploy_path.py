"""The summary's deploy path: waves over what each resource waits for, and the estimated critical path."""

from __future__ import annotations

import pytest

from offline.deploy_path import DEFAULT_SECONDS, TYPE_SECONDS, critical_path, plan_steps, waves
from offline.engine import RecordedResource, Recording
from offline.summary import render_summary

from .conftest import fixture_document, load, render_fixture

EKS = "eks:index:Cluster"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
RELEASE = "kubernetes:helm.sh/v3:Release"


def resource(name: str, type_: str = "aws:iam/role:Role", *, custom: bool = True, depends: tuple[str, ...] = (),
             parent: str = "", provider: str = "") -> RecordedResource:
    return RecordedResource(
        urn=f"urn:{name}", type=type_, name=name, custom=custom, parent=parent, provider=provider,
        dependencies=depends, property_dependencies={}, inputs={}, protect=False,
    )


def test_a_resource_waits_for_its_parent_and_provider_as_for_its_dependencies():
    recording = Recording(
        stack="t",
        resources=[
            resource("cluster", EKS),
            # A component takes no time and is no wave of its own, but its children wait for what it waits for.
            resource("component", "gpu-platform:x:X", custom=False, depends=("urn:cluster",)),
            resource("provider", "pulumi:providers:kubernetes", depends=("urn:cluster",)),
            resource("release", RELEASE, parent="urn:component", provider="urn:provider"),
            resource("unrelated"),
        ],
    )
    assert [[r.name for r in wave] for wave in waves(recording)] == [["cluster", "unrelated"], ["provider"], ["release"]]
    steps = plan_steps(recording)
    assert steps["urn:release"].finish == TYPE_SECONDS[EKS] + DEFAULT_SECONDS + TYPE_SECONDS[RELEASE]
    assert [step.resource.name for step in critical_path(recording)] == ["cluster", "provider", "release"]


@pytest.mark.parametrize("fixture", ["single-pool", "multi-pool"])
def test_the_eks_cluster_comes_before_the_node_group_before_every_helm_release(fixture):
    recording = render_fixture(fixture)
    steps = plan_steps(recording)
    [cluster] = [steps[r.urn].wave for r in recording.by_type(EKS)]
    [node_group] = [steps[r.urn].wave for r in recording.by_type(NODE_GROUP)]
    releases = [steps[r.urn].wave for r in recording.by_type(RELEASE)]
    assert cluster < node_group < min(releases)


def test_the_critical_path_runs_through_the_control_plane_the_system_nodes_and_a_helm_release():
    path = critical_path(render_fixture("single-pool"))
    types = [step.resource.type for step in path]
    assert types.index(EKS) < types.index(NODE_GROUP) < types.index(RELEASE)
    assert path[-1].finish == sum(step.seconds for step in path)


def test_the_summary_shows_the_waves_and_the_estimated_first_up():
    summary = render_summary(render_fixture("single-pool"), load(fixture_document("single-pool")))
    section = summary.split("## Deploy path", 1)[1].split("\n## ", 1)[0]
    assert "| 0 |" in section and "Estimated critical path: about" in section
    assert "eks.Cluster `cluster-eks`" in section
