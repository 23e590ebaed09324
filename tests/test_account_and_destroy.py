"""What the summary tells an operator about taking a stack down, and what stays in the account."""

from __future__ import annotations

import re

from offline.summary import render_summary

from .conftest import fixture_document, load, project_path, render_fixture

# single-pool (and single-pool-dra): one Prometheus replica of 50 GiB in us-west-2, its volume kept on destroy.
KEPT_PROMETHEUS_VOLUME = (
    "Prometheus' EBS volume (50 GiB gp3, `monitoring.volumeOnDestroy: keep`) outlived the stack, outside its state "
    "and still billed: keep for the metrics history, or delete. List: `aws ec2 describe-volumes --region us-west-2 "
    "--filters Name=tag:kubernetes.io/created-for/pvc/namespace,Values=monitoring --query "
    "'Volumes[].[VolumeId,Size,State]'`; delete: `aws ec2 delete-volume --region us-west-2 --volume-id <id>`"
)


def destroy_section(fixture: str) -> str:
    summary = render_summary(render_fixture(fixture), load(fixture_document(fixture)))
    return summary.split("## To destroy this stack\n\n", 1)[1].split("\n## ", 1)[0]


def test_a_protected_stack_is_destroyed_by_turning_protect_off_then_up_then_destroy():
    assert fixture_document("multi-pool")["gpu-platform:cluster"].get("protect", True) is True
    steps = re.findall(r"^\d\. (.*)$", destroy_section("multi-pool"), flags=re.M)
    assert steps[0] == "`pulumi config set --path gpu-platform:cluster.protect false`"
    assert steps[1].startswith("`pulumi up`: clears Pulumi's protect flags and the cluster's EKS deletion protection")
    assert steps[2] == "`pulumi destroy`"
    # multi-pool keeps Prometheus' two replicas' volumes (volumeOnDestroy defaults to keep).
    assert steps[3].startswith("Prometheus' 2 EBS volumes (500 GiB gp3 each, `monitoring.volumeOnDestroy: keep`)")
    assert len(steps) == 4


def test_an_unprotected_stack_is_destroyed_in_one_step_and_the_spot_role_is_named_as_kept():
    assert fixture_document("single-pool")["gpu-platform:cluster"]["protect"] is False
    section = destroy_section("single-pool")
    assert re.findall(r"^\d\. (.*)$", section, flags=re.M) == ["`pulumi destroy`", KEPT_PROMETHEUS_VOLUME]
    assert "`aws:iam/serviceLinkedRole:ServiceLinkedRole` `gpu-dev-karpenter-spot`" in section


def test_protect_drives_the_clusters_eks_deletion_protection_too():
    for fixture, protect in (("multi-pool", True), ("single-pool", False)):
        [cluster] = render_fixture(fixture).by_type("eks:index:Cluster")
        assert cluster.protect is protect and cluster.inputs["deletionProtection"] is protect


def test_the_deploying_guide_gives_the_prod_destroy_sequence_in_order():
    readme = project_path("docs", "deploying.md").read_text()
    at = [readme.find(step) for step in (
        "pulumi config set --path gpu-platform:cluster.protect false", "pulumi up", "pulumi destroy"
    )]
    start = at[0]
    assert start >= 0
    following = [readme.find(step, start) for step in ("pulumi up", "pulumi destroy")]
    assert 0 < following[0] < following[1], "docs/deploying.md: protect off, then `pulumi up`, then `pulumi destroy`"


def test_node_groups_go_before_the_cluster_and_add_nothing_to_the_destroy_steps_or_the_account():
    """EKS refuses DeleteCluster while a node group remains, so each (the DRA pools' too) depends on the cluster.

    None is protected or retained: the summary's steps stay `pulumi destroy` and nothing of theirs is kept;
    their role and launch templates are named after the cluster, so a second stack's never clash.
    """
    recording = render_fixture("single-pool-dra")
    [cluster] = recording.by_type("eks:index:Cluster")
    groups = recording.by_type("aws:eks/nodeGroup:NodeGroup")
    assert sorted(group.name for group in groups) == ["gpu-dev-dra-nodes-gpu-l4-dra", "gpu-dev-system-nodes"]
    for group in groups:
        assert cluster.urn in group.dependencies, group.name
        assert not group.protect and not group.retain_on_delete
    section = destroy_section("single-pool-dra")
    assert re.findall(r"^\d\. (.*)$", section, flags=re.M) == ["`pulumi destroy`", KEPT_PROMETHEUS_VOLUME]
    assert section.count("`aws:") == 1 and "`gpu-dev-karpenter-spot`" in section
    dra_named = [
        r.inputs["name"] for r in recording.resources if r.name.startswith("gpu-dev-dra-nodes") and "name" in r.inputs
    ]
    assert sorted(dra_named) == ["gpu-dev-dra-gpu-l4-dra", "gpu-dev-dra-node"]


def test_a_stack_whose_prometheus_volume_goes_with_it_has_no_step_after_destroy():
    from offline.deploy_path import after_destroy_steps

    document = fixture_document("single-pool")
    document["gpu-platform:monitoring"]["volumeOnDestroy"] = "delete"
    assert after_destroy_steps(load(document)) == []
    document["gpu-platform:monitoring"]["volumeOnDestroy"] = "keep"
    assert after_destroy_steps(load(document)) == [KEPT_PROMETHEUS_VOLUME]
