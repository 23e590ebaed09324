"""A `pulumi destroy` that finishes: delete timeouts that outlast Karpenter's drains, Prometheus' volume as chosen.

Upstream: deleting a NodePool or EC2NodeClass waits for the pool's nodes, which drain for up to the
pool's terminationGracePeriod (kubernetes-sigs/karpenter at the commit karpenter-provider-aws v1.14.1
pins, pkg/controllers/node/termination/controller.go; the NodePool CRD: "If left undefined, the
controller will wait indefinitely"), while pulumi-kubernetes gives up after 10 minutes unless
`customTimeouts.delete` says otherwise (provider/pkg/await/await.go).
"""

from __future__ import annotations

import pytest

from components.monitoring import RELEASE_NAME
from config.node_pools import delete_timeout

from .conftest import fixture_document, render, render_fixture

NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"
NODECLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
RELEASE = "kubernetes:helm.sh/v3:Release"


@pytest.mark.parametrize(
    "grace, timeout",
    [("1h", "75m"), ("4h", "255m"), ("1h30m", "105m"), ("90s", "17m"), ("45m", "60m")],
)
def test_delete_timeout_is_the_grace_period_rounded_up_to_minutes_plus_fifteen(grace, timeout):
    assert delete_timeout(grace) == timeout


@pytest.mark.parametrize(
    "pool, timeout",
    [
        ("gpu-h100", "255m"),  # terminationGracePeriod: 4h
        ("gpu-a100", "75m"),  # the default 1h
        ("gpu-l40s", "75m"),
        ("cpu", "75m"),  # the CPU pool's default 1h
    ],
)
def test_each_node_pool_and_its_node_class_wait_for_the_pools_grace_period_on_delete(pool, timeout):
    recording = render_fixture("multi-pool")
    node_pool = recording.named(NODEPOOL, f"gpu-prod-pools-{pool}")
    node_class = recording.named(NODECLASS, f"gpu-prod-pools-{pool}-nodeclass")
    assert node_pool.custom_timeouts == {"delete": timeout}
    assert node_class.custom_timeouts == {"delete": timeout}


def test_the_cpu_pool_bounds_its_drain_with_a_grace_period_so_a_blocking_budget_cannot_hold_destroy_forever():
    doc = fixture_document("single-pool")
    doc["gpu-platform:cpuPool"]["terminationGracePeriod"] = "2h"
    recording = render(doc)
    node_pool = recording.named(NODEPOOL, "gpu-dev-pools-cpu")
    assert node_pool.inputs["spec"]["template"]["spec"]["terminationGracePeriod"] == "2h"
    assert node_pool.custom_timeouts == {"delete": "135m"}


def prometheus_retention(recording) -> dict[str, str]:
    [release] = [r for r in recording.by_type(RELEASE) if r.inputs["name"] == RELEASE_NAME]
    return release.inputs["values"]["prometheus"]["prometheusSpec"]["persistentVolumeClaimRetentionPolicy"]


def test_by_default_prometheus_keeps_its_volume_when_its_statefulset_goes():
    assert prometheus_retention(render_fixture("single-pool")) == {"whenDeleted": "Retain", "whenScaled": "Retain"}


def test_volume_on_destroy_delete_lets_the_statefulset_take_its_claims_and_volumes_with_it():
    doc = fixture_document("single-pool")
    doc["gpu-platform:monitoring"]["volumeOnDestroy"] = "delete"
    assert prometheus_retention(render(doc)) == {"whenDeleted": "Delete", "whenScaled": "Retain"}


def test_prometheus_is_destroyed_before_the_ebs_csi_driver_that_deletes_or_detaches_its_volume():
    recording = render_fixture("single-pool")
    [release] = [r for r in recording.by_type(RELEASE) if r.inputs["name"] == RELEASE_NAME]
    seen, todo = set(), list(release.dependencies)
    while todo:
        urn = todo.pop()
        if urn not in seen:
            seen.add(urn)
            todo.extend(recording.by_urn(urn).dependencies)
    addons = {recording.by_urn(urn).inputs.get("addonName") for urn in seen}
    assert "aws-ebs-csi-driver" in addons


def test_every_tenant_namespace_is_deleted_before_kueue_is_uninstalled(recorded):
    """Pulumi deletes a resource before what it depends on. Kueue puts finalizers on the pods and Workloads of
    tenant namespaces (kueue.x-k8s.io/managed, kueue.x-k8s.io/resource-in-use); uninstalled first, nothing
    removes them and each namespace stays Terminating."""
    [kueue] = [r for r in recorded.by_type(RELEASE) if r.inputs["name"] == "kueue"]
    tenant_namespaces = [
        r for r in recorded.by_type("kubernetes:core/v1:Namespace") if r.parent.split("::")[2].endswith("tenants:Tenant")
    ]
    assert tenant_namespaces
    for namespace in tenant_namespaces:
        assert kueue.urn in namespace.dependencies, namespace.name
    assert not any(namespace.urn in waits for waits in (kueue.dependencies,) for namespace in tenant_namespaces)
