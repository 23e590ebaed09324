"""Upstream rules in models/ that the attack and guard tests judge by, checked on their own.

Each case is the upstream rule at the pinned version, written out; the rendered objects never exercise
these corners, so a mistake here would silently weaken every test that uses the model as its judge.
"""

from __future__ import annotations

import pytest

from models.kubernetes.labels import selects
from models.kubernetes.networkpolicy import Endpoint, connection_allowed
from models.nvidia.gpu_operator import DCGM_EXPORTER_OPERAND, DEVICE_PLUGIN_OPERAND, runs_operand
from models.prometheus.scrape import relabel, scraped

NOT_SYSTEM = {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["system"]}]}

NAMESPACE = {"kubernetes.io/metadata.name": "team-a", "gpu-platform/tenant": "team-a"}


@pytest.mark.parametrize(
    ("selector", "labels", "selected"),
    [
        # staging/src/k8s.io/apimachinery/pkg/labels/selector.go Requirement.Matches: NotIn and
        # DoesNotExist hold when the key is absent; In and Exists need it.
        (NOT_SYSTEM, NAMESPACE, True),
        (NOT_SYSTEM, {**NAMESPACE, "tier": "system"}, False),
        (NOT_SYSTEM, {**NAMESPACE, "tier": "batch"}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["system"]}]}, NAMESPACE, False),
        ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, NAMESPACE, True),
        ({"matchExpressions": [{"key": "gpu-platform/tenant", "operator": "Exists"}]}, NAMESPACE, True),
        ({"matchExpressions": [{"key": "gpu-platform/tenant", "operator": "DoesNotExist"}]}, NAMESPACE, False),
        # Every matchLabels pair and every expression must hold; an empty selector selects everything.
        ({"matchLabels": {"gpu-platform/tenant": "team-b"}}, NAMESPACE, False),
        (
            {
                "matchLabels": {"gpu-platform/tenant": "team-a"},
                "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": ["team-a"]}],
            },
            NAMESPACE,
            False,
        ),
        ({}, NAMESPACE, True),
    ],
)
def test_label_selectors_match_as_apimachinery_does(selector, labels, selected):
    assert selects(selector, labels) is selected


def test_a_scrape_renames_a_clashing_exposed_label_unless_it_honours_labels():
    """prometheus/prometheus v3 scrape/scrape.go mutateSampleLabels: with honor_labels false the target's
    value wins and the exposed one is kept as `exported_<name>`; with honor_labels true the exposed one
    wins and the target's is dropped. Labels that do not clash are kept either way."""
    exposed = {"__name__": "vllm:num_requests_running", "namespace": "kube-system", "model_name": "llama"}
    target = {"namespace": "team-a", "pod": "vllm-0", "job": "vllm"}
    assert scraped(exposed, target) == {
        "__name__": "vllm:num_requests_running", "exported_namespace": "kube-system", "model_name": "llama",
        "namespace": "team-a", "pod": "vllm-0", "job": "vllm",
    }
    assert scraped(exposed, target, honor_labels=True) == {
        "__name__": "vllm:num_requests_running", "namespace": "kube-system", "model_name": "llama",
        "pod": "vllm-0", "job": "vllm",
    }


def test_relabel_regexes_are_anchored_at_both_ends():
    """model/relabel/relabel.go: a rule's regex must match the whole value (Prometheus anchors it)."""
    labels = {"__name__": "vllm:num_requests_running_total", "namespace": "team-a", "exported_pod": "x"}
    keep = [{"action": "keep", "sourceLabels": ["__name__"], "regex": "vllm:num_requests_running"}]
    assert relabel(labels, keep) is None
    exact = {**labels, "__name__": "vllm:num_requests_running"}
    assert relabel(exact, keep) == exact
    # labelkeep keeps only the names the regex matches whole: `pod` does not keep `exported_pod`.
    assert relabel(labels, [{"action": "labelkeep", "regex": "__name__|namespace|pod"}]) == {
        "__name__": "vllm:num_requests_running_total", "namespace": "team-a",
    }
    assert relabel(labels, [{"action": "drop", "sourceLabels": ["namespace"], "regex": "team"}]) == labels


def test_the_gpu_operator_keeps_a_nodes_own_deploy_label_and_strips_them_all_when_operands_are_off():
    """NVIDIA/gpu-operator v26.7.0 controllers/state_manager.go: addGPUStateLabels sets each deploy label to
    "true" only where the node carries none (or an empty one); `nvidia.com/gpu.deploy.operands=false`
    removes them all (removeAllGPUStateLabels)."""
    own_plugin_off = {"nvidia.com/gpu.deploy.device-plugin": "false", "gpu-platform/node-pool": "gpu-a"}
    assert not runs_operand(own_plugin_off, DEVICE_PLUGIN_OPERAND)
    assert runs_operand(own_plugin_off, DCGM_EXPORTER_OPERAND)
    assert runs_operand({"nvidia.com/gpu.deploy.device-plugin": ""}, DEVICE_PLUGIN_OPERAND)
    operands_off = {"nvidia.com/gpu.deploy.operands": "false", "nvidia.com/gpu.deploy.dcgm-exporter": "true"}
    assert not runs_operand(operands_off, DCGM_EXPORTER_OPERAND)
    assert not runs_operand(operands_off, DEVICE_PLUGIN_OPERAND)


def test_a_policy_without_policy_types_governs_egress_only_when_it_has_egress_rules():
    """The API server defaults policyTypes to Ingress, plus Egress when the policy has egress rules
    (kubernetes/kubernetes pkg/apis/networking/v1/defaults.go, SetDefaults_NetworkPolicy)."""
    source = Endpoint("team-a", "10.0.1.5", {"app": "job"})
    dns = Endpoint("kube-system", "10.0.2.9", {"k8s-app": "kube-dns"})
    other = Endpoint("team-b", "10.0.3.7", {"app": "web"})
    only_dns = {
        "kind": "NetworkPolicy",
        "metadata": {"name": "egress-dns", "namespace": "team-a"},
        "spec": {
            "podSelector": {},
            "egress": [{"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}}]}],
        },
    }
    # Egress rules and no policyTypes: egress is governed, so only DNS is reachable.
    assert connection_allowed([only_dns], source, dns, 53)
    assert not connection_allowed([only_dns], source, other, 80)
    # The same policy without egress rules governs ingress only: egress stays open.
    ingress_only = {**only_dns, "spec": {"podSelector": {}}}
    assert connection_allowed([ingress_only], source, other, 80)



@pytest.mark.parametrize(
    ("text", "seconds"), [("90s", 90), ("1h30m", 5400), ("30m1h", 5400), ("45m45m", 5400), ("720h", 2592000)]
)
def test_a_duration_sums_its_parts_in_any_order_as_go_parses_it(text, seconds):
    from models.kubernetes.duration import duration_seconds

    assert duration_seconds(text) == seconds


@pytest.mark.parametrize("text", ["", "8", "8 hours", "1.5h", "Never"])
def test_a_duration_that_is_not_whole_hours_minutes_and_seconds_is_refused(text):
    from models.kubernetes.duration import duration_seconds

    with pytest.raises(ValueError):
        duration_seconds(text)
