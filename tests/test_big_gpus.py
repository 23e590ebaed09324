"""Big GPUs as AWS sells them: capacity reservations, EFA, and single-strategy MIG.

The shape lives in tests/fixtures/shapes/big-gpu.yaml, outside the fixture stacks every generic test
renders; it is rendered once here.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
import yaml

from config.versions import CHARTS
from offline.engine import Recording
from offline.validate import CustomResourceDefinitions, object_findings

from .conftest import chart_values_problems, problems_of, render, render_fixture

SHAPE = Path(__file__).resolve().parent / "fixtures" / "shapes" / "big-gpu.yaml"
NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"
NODECLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
NODEOVERLAY = "kubernetes:karpenter.sh/v1alpha1:NodeOverlay"
P = "gpu-platform:nodePools"


def document() -> dict:
    return yaml.safe_load(SHAPE.read_text())["config"]


@functools.cache
def rendered() -> Recording:
    return render(document(), "big-gpu")


def spec(type_: str, name: str) -> dict:
    [found] = [r.inputs["spec"] for r in rendered().by_type(type_) if r.inputs["metadata"]["name"] == name]
    return found


def test_the_shapes_karpenter_objects_pass_their_crds_schemas_and_cel_rules():
    # The objects this shape adds over the fixture stacks (reserved node class, EFA pool, single-MIG
    # overlay), checked as `python -m offline validate` checks them; the built-in kinds are the fixtures'.
    pin = CHARTS["karpenter-crd"]
    crds = CustomResourceDefinitions.installed_by([{"chart": pin.chart, "version": pin.version}])
    checked = [r for r in rendered().resources if r.type in (NODEPOOL, NODECLASS, NODEOVERLAY)]
    assert len(checked) == 7  # three NodePools, three EC2NodeClasses (cpu too), one NodeOverlay
    for resource in checked:
        result = object_findings(resource.inputs, crds, "1.35")
        assert (result.findings, result.not_evaluated) == ([], []), resource.name


# --- reserved capacity ------------------------------------------------------------------------------


def test_a_reserved_pool_selects_its_reservations_by_id_and_by_tags():
    # Karpenter offers `reserved` capacity only for reservations these terms find (karpenter-provider-aws
    # v1.14.1 pkg/controllers/nodeclass/capacityreservation.go); an id stands alone in its term
    # (karpenter.k8s.aws_ec2nodeclasses.yaml CEL: "'id' is mutually exclusive").
    assert spec(NODECLASS, "gpu-h200")["capacityReservationSelectorTerms"] == [
        {"id": "cr-0123456789abcdef0"},
        {"tags": {"gpu-platform/node-pool": "gpu-h200"}, "ownerID": "111122223333"},
    ]
    requirements = spec(NODEPOOL, "gpu-h200")["template"]["spec"]["requirements"]
    assert {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["reserved"]} in requirements


def test_pools_without_reservations_select_none():
    assert "capacityReservationSelectorTerms" not in spec(NODECLASS, "gpu-h100")


def test_a_reservation_only_type_needs_the_reserved_capacity_type():
    doc = document()
    pool = doc[P][1]
    pool["capacityTypes"] = ["on-demand"]
    del pool["capacityReservations"]
    assert problems_of(doc) == [
        "gpu-platform:nodePools[gpu-h200].capacityTypes: p5e.48xlarge is sold only through capacity reservations and "
        "Capacity Blocks (config/catalog.py has no on-demand price): add 'reserved' and name them in capacityReservations"
    ]


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        pytest.param(
            {"capacityReservations": []},
            "gpu-platform:nodePools[gpu-h200]: capacityTypes has 'reserved' but capacityReservations is empty: name the "
            "reservations by id or tags",
            id="reserved-without-reservations",
        ),
        pytest.param(
            {"capacityTypes": ["on-demand"], "instanceTypes": ["p5en.48xlarge"]},
            "gpu-platform:nodePools[gpu-h200]: capacityReservations are used only by the 'reserved' capacity type: add it "
            "to capacityTypes",
            id="reservations-without-reserved",
        ),
        pytest.param(
            {"capacityReservations": [{"id": "cr-0123456789abcdef0", "tags": {"team": "ml"}}]},
            "gpu-platform:nodePools[gpu-h200].capacityReservations[0]: give exactly one of id (one reservation) or tags "
            "(every reservation carrying them)",
            id="id-and-tags",
        ),
        pytest.param(
            {"capacityReservations": [{"id": "reservation-1"}]},
            "gpu-platform:nodePools[gpu-h200].capacityReservations[0].id: 'reservation-1' is not a capacity reservation id "
            "such as 'cr-0123456789abcdef0'",
            id="malformed-id",
        ),
    ],
)
def test_reservations_and_the_reserved_capacity_type_go_together(change, problem):
    doc = document()
    doc[P][1].update(change)
    assert problems_of(doc) == [problem]


# --- single-strategy MIG ----------------------------------------------------------------------------


def test_single_strategy_mig_nodes_are_sized_and_limited_in_mig_devices_as_gpus():
    # Seven 1g.10gb devices on each of 8 H100s are 56 nvidia.com/gpu per node; 16 GPUs are 112.
    assert spec(NODEOVERLAY, "gpu-h100-p5.48xlarge")["capacity"] == {"nvidia.com/gpu": "56"}
    assert spec(NODEPOOL, "gpu-h100")["limits"] == {"nvidia.com/gpu": "112"}
    # The H200 pool hands out whole GPUs, as the provider already counts them: no overlay.
    assert [r.inputs["metadata"]["name"] for r in rendered().by_type(NODEOVERLAY)] == ["gpu-h100-p5.48xlarge"]


# --- EFA --------------------------------------------------------------------------------------------

RELEASE = "kubernetes:helm.sh/v3:Release"
SG_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"


def efa_plugin():
    [release] = [r for r in rendered().by_type(RELEASE) if r.inputs["name"] == "aws-efa-k8s-device-plugin"]
    return release


def test_an_efa_pool_labels_its_nodes_for_the_efa_device_plugin():
    labels = spec(NODEPOOL, "gpu-h200")["template"]["metadata"]["labels"]
    assert labels["gpu-platform/efa"] == "true"
    assert "gpu-platform/efa" not in spec(NODEPOOL, "gpu-h100")["template"]["metadata"]["labels"]


def test_the_efa_device_plugin_runs_on_efa_pools_gpu_nodes_only():
    # The chart's DaemonSet tolerates only CriticalAddonsOnly and selects by instance type
    # (aws/eks-charts v0.0.241 stable/aws-efa-k8s-device-plugin/templates/daemonset.yaml): without the
    # GPU taint's toleration it would never reach a GPU node, without the selector it would reach all.
    release = efa_plugin()
    values = release.inputs["values"]
    assert values["nodeSelector"] == {"gpu-platform/efa": "true"}
    assert values["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert release.inputs["namespace"] == "kube-system"
    assert chart_values_problems("aws-efa-k8s-device-plugin", values) == []


def test_efa_nodes_may_send_to_each_other():
    # EFA needs all traffic allowed to and from the security group itself; EKS's cluster security group
    # lets itself in already, and out only to 0.0.0.0/0.
    [rule] = [r for r in rendered().by_type(SG_RULE) if r.name.endswith("-node-sg-efa-egress")]
    assert (rule.inputs["type"], rule.inputs["protocol"], rule.inputs["self"]) == ("egress", "-1", True)


def test_stacks_without_efa_get_neither_the_plugin_nor_the_rule():
    recording = render_fixture("multi-pool")
    assert not [r for r in recording.by_type(RELEASE) if r.inputs["name"] == "aws-efa-k8s-device-plugin"]
    assert not [r for r in recording.by_type(SG_RULE) if r.name.endswith("-node-sg-efa-egress")]


def test_efa_on_a_type_without_it_is_refused():
    doc = document()
    doc[P][0].update(instanceTypes=["g6e.xlarge", "g6e.12xlarge"], efa=True, sharing={"mode": "none"}, gpus=4)
    doc["gpu-platform:tenants"][0]["gpu"].pop("h100-on-demand")
    assert problems_of(doc) == [
        "gpu-platform:nodePools[gpu-h100].efa: true, but g6e.xlarge has no Elastic Fabric Adapter: drop it or set efa false"
    ]
