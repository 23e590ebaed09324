"""GPUs through DRA end to end: Kueue admits a pod that uses a ResourceClaimTemplate, and the quotas count it.

Admission runs the Kueue model (models/kueue) of kubernetes-sigs/kueue v0.19.2 (claim devices through
`resources.deviceClassMappings`: pkg/dra/claims.go and mapper.go; flavors in order: pkg/scheduler/
flavorassigner/flavorassigner.go) over the rendered objects of the single-pool-dra fixture: its
ResourceClaimTemplate, ClusterQueue, LimitRange and Kueue's own config.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from config.claims import ROOT, admitting_flavors, claim_charge
from config.labels import DEVICE_CLASS_RESOURCE_SUFFIX, DRA_DEVICE_CLASSES, GPU_RESOURCE, device_class_resource
from config.node_pools import ClaimTemplateConfig
from config.versions import KUBERNETES_VERSIONS
from models.kueue import ADMITTED, NO_CANDIDATES, PREEMPT, Snapshot, Workload, apply, schedule
from models.kueue.flavorassigner import best_case_admission
from models.kueue.workload import Inadmissible, Tenancy, pod_sets

from .builders import kueue_manager_config, tenancy_of
from .conftest import fixture_document, load, problems_of, render_fixture
from .recorded import declared, kubernetes_objects

FIXTURE = "single-pool-dra"
TEMPLATE = "l4-gpu"  # in ml-research
DRA_GPU = device_class_resource("gpu.nvidia.com")
# A ResourceQuota or Kueue resource name: an optional DNS-subdomain prefix, '/', a name
# (k8s.io/apimachinery validation IsQualifiedName, which Kueue applies as content.IsLabelKey to
# deviceClassMappings names, pkg/config/validation.go, and ClusterQueue resources, pkg/webhooks/common.go).
_QUALIFIED = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)


def rendered(kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
    return declared(render_fixture(FIXTURE), kind, name, namespace).inputs


def kueue_config() -> dict[str, Any]:
    return kueue_manager_config(render_fixture(FIXTURE))


def tenancy(namespace: str, kueue: dict[str, Any] | None = None) -> Tenancy:
    return tenancy_of(render_fixture(FIXTURE), namespace, kueue_config=kueue)


def job_with_claim(template: str, *, pods: int = 1, requests: dict[str, str] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": "busybox:1.36", "resources": {"claims": [{"name": "gpu"}]}}
    if requests:
        container["resources"]["requests"] = dict(requests)
    pod = {"containers": [container], "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template}]}
    return {"kind": "Job", "spec": {"parallelism": pods, "template": {"spec": pod}}}


def test_a_pod_using_the_fixture_claim_template_is_admitted_on_the_dra_flavor():
    [pod_set] = pod_sets(job_with_claim(TEMPLATE), tenancy("ml-research"))
    assert pod_set.requests[DRA_GPU] == 1
    admission = best_case_admission([pod_set], rendered("ClusterQueue", "ml-research"))
    assert admission.flavors == ("l4-dra-on-demand",) and not admission.borrowing
    # The flavor puts the pod on the DRA pool's nodes, where the driver publishes the L4s.
    assert rendered("ResourceFlavor", "l4-dra-on-demand")["spec"]["nodeLabels"]["gpu-platform/node-pool"] == "gpu-l4-dra"


def test_the_dra_flavor_carries_devices_of_the_class_and_no_nvidia_gpu():
    [group] = rendered("ClusterQueue", "ml-research")["spec"]["resourceGroups"]
    dra = {r["name"]: r["nominalQuota"] for f in group["flavors"] if f["name"] == "l4-dra-on-demand" for r in f["resources"]}
    assert dra[DRA_GPU] == "2"
    assert dra[GPU_RESOURCE] == "0"


def test_dra_pods_beyond_the_tenants_devices_are_not_admitted():
    sets = pod_sets(job_with_claim(TEMPLATE, pods=3), tenancy("ml-research"))
    with pytest.raises(Inadmissible, match="no flavor"):
        best_case_admission(sets, rendered("ClusterQueue", "ml-research"))


def rendered_snapshot() -> Snapshot:
    """Every rendered ClusterQueue, Cohort and ResourceFlavor of the fixture, as Kueue's cache holds them."""
    objects = [r.inputs for r in kubernetes_objects(render_fixture(FIXTURE))]
    of = {kind: [o for o in objects if o["kind"] == kind] for kind in ("ClusterQueue", "Cohort", "ResourceFlavor")}
    return Snapshot.from_manifests(of["ClusterQueue"], of["Cohort"], fair_sharing=True, flavors=of["ResourceFlavor"])


def test_in_the_rendered_cohort_dra_pods_are_admitted_up_to_the_tenants_devices_then_wait():
    # ml-research has 2 devices of the class on l4-dra-on-demand and nobody else has any: two one-device
    # pods are admitted within nominal quota; a third could only run by preempting one of them, which
    # its equal priority does not allow, so it waits (Preempt mode without candidates).
    snapshot = rendered_snapshot()
    [pod_set] = pod_sets(job_with_claim(TEMPLATE, pods=2), tenancy("ml-research"))
    cycle = schedule(snapshot, [Workload("pair", "ml-research", (pod_set,))])
    [entry] = cycle.entries
    assert (entry.status, entry.assignment.borrowing) == (ADMITTED, 0)
    assert entry.assignment.flavors()[0][DRA_GPU] == "l4-dra-on-demand"
    apply(snapshot, cycle, now=0)
    [one_more] = pod_sets(job_with_claim(TEMPLATE), tenancy("ml-research"))
    [third] = schedule(snapshot, [Workload("third", "ml-research", (one_more,))]).entries
    assert (third.status, third.assignment.mode, third.targets) == (NO_CANDIDATES, PREEMPT, [])


def test_a_tenant_without_dra_quota_cannot_have_a_dra_pod_admitted():
    # The inference namespace has no claim template; the ml-research one stands in for it.
    sets = pod_sets(job_with_claim(TEMPLATE), tenancy("ml-research"))
    with pytest.raises(Inadmissible, match="not covered"):
        best_case_admission(sets, rendered("ClusterQueue", "inference"))


def test_an_unmapped_device_class_is_inadmissible():
    with pytest.raises(Inadmissible, match="not mapped"):
        pod_sets(job_with_claim(TEMPLATE), tenancy("ml-research", kueue={**kueue_config(), "resources": {}}))


def test_node_local_resources_do_not_keep_a_pod_out():
    local = {"ephemeral-storage": "10Gi", "vpc.amazonaws.com/efa": "1"}
    [pod_set] = pod_sets(job_with_claim(TEMPLATE, requests=local), tenancy("ml-research"))
    assert set(pod_set.requests) == {"cpu", "memory", DRA_GPU}
    assert best_case_admission([pod_set], rendered("ClusterQueue", "ml-research")).flavors == ("l4-dra-on-demand",)


def test_the_resource_quota_counts_the_claimed_devices_under_the_class_name():
    # A claim from the template charges `<class>.deviceclass.resource.k8s.io/devices` per request
    # (kubernetes pkg/quota/v1/evaluator/core/resource_claims.go, Usage; matched by the suffix in
    # MatchingResources, so no `requests.` prefix); with DRAExtendedResource off (alpha up to 1.35)
    # nothing is charged to `requests.nvidia.com/gpu`.
    hard = rendered("ResourceQuota", "tenant-quota", "ml-research")["spec"]["hard"]
    assert hard[DRA_GPU] == "2"
    assert hard["requests.nvidia.com/gpu"] == "20"  # the L40S slices: 12 + 4 borrowable on-demand, 4 spot


def test_kueue_maps_every_class_the_driver_installs_to_a_valid_quota_name():
    mappings = kueue_config()["resources"]["deviceClassMappings"]
    assert [m["deviceClassNames"] for m in mappings] == [[c] for c in DRA_DEVICE_CLASSES]
    for mapping in mappings:
        assert mapping["name"].endswith(DEVICE_CLASS_RESOURCE_SUFFIX) and _QUALIFIED.match(mapping["name"])
        prefix, _, name = mapping["name"].partition("/")
        assert len(prefix) <= 253 and len(name) <= 63


def test_no_cluster_version_lets_kueue_charge_nvidia_gpu_requests_to_dra():
    # The driver's gpu.nvidia.com DeviceClass sets extendedResourceName nvidia.com/gpu (dra-driver-nvidia-gpu
    # v0.4.1 templates/deviceclass-gpu.yaml). The API server drops it while DRAExtendedResource is off
    # (kubernetes pkg/registry/resource/deviceclass/strategy.go, dropDisabledDRAExtendedResourceFields):
    # alpha, off, in 1.34 and 1.35; beta, on, from 1.36. Kept, Kueue would charge every `nvidia.com/gpu`
    # request to the class's mapped resource (pkg/dra/extended_resources.go, resolveQuotaKey), so
    # device-plugin flavors would admit nothing. Supporting 1.36 needs that resolved first.
    assert max(tuple(int(p) for p in v.split(".")) for v in KUBERNETES_VERSIONS) < (1, 36)


# --- the config check (config/claims.py) ---------------------------------------------------------------

def test_the_config_charges_what_kueue_charges():
    template = ClaimTemplateConfig.model_validate({"name": "two", "namespace": "ml-research", "count": 2})
    assert claim_charge(template) == {"gpu.nvidia.com.deviceclass.resource.k8s.io/devices": 2}
    research = load(fixture_document(FIXTURE)).tenants[0]
    assert admitting_flavors(research, claim_charge(template)) == ["l4-dra-on-demand"]
    assert admitting_flavors(research, {**claim_charge(template), DRA_GPU: 3}) == []


def test_a_claim_template_selecting_what_the_pools_l4s_publish_is_accepted():
    # The pool's node group publishes its L4s before any pod (config/dra_devices.py), so Kueue's check of the
    # selectors against published devices (pkg/dra/claims.go, validateCELSelectorsAgainstDevices) passes.
    document = fixture_document(FIXTURE)
    document["gpu-platform:gpu"]["dra"]["claimTemplates"][0].update(minMemoryGiB=22, productName="NVIDIA L4")
    assert load(document).gpu.dra.claim_templates[0].selector_expressions[0][0] == "minMemoryGiB"


def test_a_mig_claim_template_without_a_mig_pool_is_refused_naming_what_the_pool_publishes():
    document = fixture_document(FIXTURE)
    document["gpu-platform:gpu"]["dra"]["claimTemplates"][0]["migProfile"] = "1g.10gb"
    assert problems_of(document) == [
        f"{ROOT}[l4-gpu].migProfile: 1g.10gb asks for a MIG device (class mig.nvidia.com), and no DRA pool publishes "
        "one, only whole GPUs (gpu-l4-dra: productName NVIDIA L4, architecture Ada Lovelace, cudaComputeCapability "
        "8.9.0, memory 22.49Gi): drop migProfile to take a whole GPU"
    ]


def test_a_claim_template_in_a_namespace_without_dra_quota_is_refused():
    document = fixture_document(FIXTURE)
    del document["gpu-platform:tenants"][0]["gpu"]["l4-dra-on-demand"]
    assert problems_of(document) == [
        f"{ROOT}[l4-gpu]: pods using it are charged 1 gpu.nvidia.com.deviceclass.resource.k8s.io/devices, and tenant "
        "ml-research has no flavor with that much quota (nominal + borrowing), so Kueue never admits them: give the "
        "tenant quota on a DRA flavor of class gpu.nvidia.com"
    ]


def test_a_claim_must_fit_the_smallest_node_the_node_group_may_hold():
    document = fixture_document(FIXTURE)
    document["gpu-platform:gpu"]["dra"]["claimTemplates"][0]["count"] = 2
    assert problems_of(document) == [
        f"{ROOT}[l4-gpu].count: 2 devices of class gpu.nvidia.com in one claim, but the node group of pool gpu-l4-dra "
        "may hold a g6.xlarge with 1: lower it to 1 or give the pool instance types with more GPUs"
    ]
    # With only 4-GPU nodes (and quota for 4) a claim of 4 fits any node the pool launches.
    document["gpu-platform:nodePools"][1].update(instanceTypes=["g6.12xlarge"], gpus=4)
    document["gpu-platform:tenants"][0]["gpu"]["l4-dra-on-demand"] = {"nominal": 4}
    document["gpu-platform:gpu"]["dra"]["claimTemplates"][0]["count"] = 4
    assert load(document).gpu.dra.claim_templates[0].count == 4
