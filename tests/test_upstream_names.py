"""Names the platform shares with software it does not own, as that software spells them.

config/labels.py defines each such name once, so every use moves together when one is mistyped:
the platform stays consistent with itself and silently stops matching the GPU Operator, Karpenter
or Kueue. These expectations are the upstream spellings, written out (or read from the vendored
chart defaults), checked on what the fixtures render.
"""

from __future__ import annotations

from typing import Any

from offline.engine import Recording
from offline.upstream import chart_values

from .conftest import render_fixture

GPU_OPERATOR_VERSION = "v26.7.0"


def objects(recording: Recording, kind: str) -> list[dict[str, Any]]:
    return [r.inputs for r in recording.resources if r.custom and r.inputs.get("kind") == kind]


def gpu_node_pools(recording: Recording) -> list[dict[str, Any]]:
    return [p for p in objects(recording, "NodePool") if p["metadata"]["name"] != "cpu"]


def test_gpu_nodes_are_tainted_so_the_gpu_operators_default_tolerations_cover_them():
    # The chart's operands tolerate exactly this (upstream/gpu-operator/v26.7.0/values.yaml,
    # daemonsets.tolerations); a GPU node tainted otherwise would run no device plugin or exporter.
    [toleration] = chart_values("gpu-operator", GPU_OPERATOR_VERSION)["daemonsets"]["tolerations"]
    assert toleration == {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    recording = render_fixture("multi-pool")
    pools = gpu_node_pools(recording)
    assert len(pools) == 3
    for pool in pools:
        assert pool["spec"]["template"]["spec"]["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
    # ... and work Kueue admits on a GPU flavor tolerates it, the CPU flavor's never does.
    for flavor in objects(recording, "ResourceFlavor"):
        expected = [] if flavor["metadata"]["name"] == "cpu" else [
            {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
        ]
        assert flavor["spec"].get("tolerations", []) == expected, flavor["metadata"]["name"]


def test_node_pools_select_instances_by_karpenters_well_known_labels():
    # aws/karpenter-provider-aws v1.14.1 pkg/apis/v1/labels.go and kubernetes-sigs/karpenter
    # pkg/apis/v1/labels.go: the requirement keys a NodePool may constrain.
    for pool in objects(render_fixture("multi-pool"), "NodePool"):
        keys = [r["key"] for r in pool["spec"]["template"]["spec"]["requirements"]]
        first = "karpenter.k8s.aws/instance-family" if pool["metadata"]["name"] == "cpu" else "node.kubernetes.io/instance-type"
        assert keys == [first, "karpenter.sh/capacity-type", "kubernetes.io/arch", "kubernetes.io/os"], pool["metadata"]["name"]
        assert all(r["operator"] == "In" for r in pool["spec"]["template"]["spec"]["requirements"])


def test_split_flavors_select_nodes_by_karpenters_capacity_type_label():
    flavors = {f["metadata"]["name"]: f["spec"]["nodeLabels"] for f in objects(render_fixture("single-pool"), "ResourceFlavor")}
    assert flavors == {
        "cpu": {"gpu-platform/node-pool": "cpu"},
        "l40s-on-demand": {"gpu-platform/node-pool": "gpu-l40s", "karpenter.sh/capacity-type": "on-demand"},
        "l40s-spot": {"gpu-platform/node-pool": "gpu-l40s", "karpenter.sh/capacity-type": "spot"},
    }


def test_karpenter_discovers_subnets_and_security_groups_by_the_discovery_tag():
    # Karpenter's getting-started (v1.14 cloudformation/step scripts) tags both with karpenter.sh/discovery.
    recording = render_fixture("multi-pool")
    for node_class in objects(recording, "EC2NodeClass"):
        spec = node_class["spec"]
        assert spec["subnetSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "gpu-prod"}}]
        assert spec["securityGroupSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "gpu-prod"}}]
    private = [s for s in recording.by_type("aws:ec2/subnet:Subnet") if "private" in s.name]
    assert len(private) == 3
    assert all(s.inputs["tags"]["karpenter.sh/discovery"] == "gpu-prod" for s in private)
    [tag] = recording.by_type("aws:ec2/tag:Tag")
    assert (tag.inputs["key"], tag.inputs["value"]) == ("karpenter.sh/discovery", "gpu-prod")


def test_a_served_model_is_queued_through_kueues_queue_name_label():
    # kubernetes-sigs/kueue v0.19.2 pkg/controller/constants: QueueLabel = "kueue.x-k8s.io/queue-name".
    # The headroom's placeholders (namespace gpu-headroom) are outside Kueue on purpose.
    [server] = [d for d in objects(render_fixture("multi-pool"), "Deployment") if d["metadata"]["namespace"] != "gpu-headroom"]
    assert server["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "default"
    assert server["spec"]["template"]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "default"
    assert [q["metadata"]["name"] for q in objects(render_fixture("multi-pool"), "LocalQueue")] == ["default"] * 4


def test_tenant_network_rules_name_namespaces_by_the_label_the_api_server_sets():
    # kubernetes.io/metadata.name: set on every namespace by the API server since 1.22 (KEP-2161).
    for policy in objects(render_fixture("multi-pool"), "NetworkPolicy"):
        spec = policy["spec"]
        peers = [p for rule in spec.get("ingress", []) for p in rule["from"]]
        peers += [p for rule in spec.get("egress", []) for p in rule["to"]]
        for peer in peers:
            if "namespaceSelector" in peer:
                assert list(peer["namespaceSelector"]["matchLabels"]) == ["kubernetes.io/metadata.name"]
