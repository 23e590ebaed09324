"""GPUs through DRA end to end: Kueue admits a pod that uses a ResourceClaimTemplate, and the quotas count it.

The admission model below mirrors kubernetes-sigs/kueue v0.19.2 and runs on the rendered objects of the
single-pool-dra fixture (its ResourceClaimTemplate, ClusterQueue, LimitRange and Kueue's own config):
- pkg/dra/claims.go, countDevicesPerClass and GetResourceRequestsForResourceClaimTemplates: ExactCount
  requests charge `count` devices of their class; FirstAvailable, AllocationMode All and adminAccess are
  refused; requests with CEL selectors need matching devices already published; each class goes
  through pkg/dra/mapper.go (Lookup), and an unmapped class is inadmissible;
- pkg/workload/workload.go, dropExcludedResources: `resources.excludeResourcePrefixes` is a prefix match;
- pkg/scheduler/flavorassigner/flavorassigner.go: with the default quotaCheckStrategy BlockUndeclared a
  requested resource the queue does not cover is inadmissible; flavors are tried in order and the first
  where every requested resource fits (nominal + borrowing, an idle cohort) is assigned.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from config import ConfigError
from config.claims import ROOT, admitting_flavors, claim_charge
from config.labels import DEVICE_CLASS_RESOURCE_SUFFIX, DRA_DEVICE_CLASSES, GPU_RESOURCE, device_class_resource
from config.node_pools import ClaimTemplateConfig
from config.versions import KUBERNETES_VERSIONS

from .conftest import fixture_document, load, render_fixture
from .recorded import declared, kubernetes_objects, releases

FIXTURE = "single-pool-dra"
TEMPLATE = ("l4-gpu", "ml-research")
# A ResourceQuota or Kueue resource name: an optional DNS-subdomain prefix, '/', a name
# (k8s.io/apimachinery validation IsQualifiedName, which Kueue applies as content.IsLabelKey to
# deviceClassMappings names, pkg/config/validation.go, and ClusterQueue resources, pkg/webhooks/common.go).
_QUALIFIED = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)


def problems_of(document: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load(document)
    return caught.value.problems


class Inadmissible(Exception):
    """Kueue leaves the workload pending, with this reason in its conditions."""


# --- the model of Kueue v0.19.2 ---------------------------------------------------------------------

def quantity(value: str) -> float:
    """cpu and memory quantities as numbers (cores, GiB): enough of resource.Quantity for these objects."""
    units = {"m": 1e-3, "Mi": 1 / 1024, "Gi": 1.0, "Ti": 1024.0}
    for suffix, factor in units.items():
        if value.endswith(suffix):
            return float(value[: -len(suffix)]) * factor
    return float(value)


def claim_devices(claim_spec: dict[str, Any], published: int = 0) -> dict[str, int]:
    """pkg/dra/claims.go countDevicesPerClass (and the CEL check of validateCELSelectorsAgainstDevices)."""
    counts: dict[str, int] = {}
    for request in claim_spec["devices"]["requests"]:
        if "firstAvailable" in request:
            raise Inadmissible("FirstAvailable device selection is not supported")
        exactly = request["exactly"]
        if exactly.get("adminAccess"):
            raise Inadmissible("AdminAccess is not supported")
        if exactly.get("allocationMode", "ExactCount") != "ExactCount":
            raise Inadmissible("AllocationMode 'All' is not supported")
        count = exactly.get("count", 1)
        if any("cel" in selector for selector in exactly.get("selectors", [])) and published < count:
            raise Inadmissible(f"insufficient matching devices for CEL selector: {published} match, {count} requested")
        counts[exactly["deviceClassName"]] = counts.get(exactly["deviceClassName"], 0) + count
    return counts


def workload_requests(
    pod: dict[str, Any], templates: dict[str, dict[str, Any]], limit_range: dict[str, Any], kueue: dict[str, Any]
) -> dict[str, float]:
    """What Kueue charges one pod: container requests (LimitRange defaults where none) plus mapped claim devices."""
    defaults = {r: quantity(v) for r, v in limit_range["spec"]["limits"][0]["defaultRequest"].items()}
    requests: dict[str, float] = {}
    for container in pod["containers"]:
        own = {r: quantity(str(v)) for r, v in container.get("resources", {}).get("requests", {}).items()}
        for resource, amount in {**defaults, **own}.items():
            requests[resource] = requests.get(resource, 0) + amount
    mapping = {
        device_class: entry["name"]
        for entry in kueue.get("resources", {}).get("deviceClassMappings", [])
        for device_class in entry["deviceClassNames"]
    }
    for claim in pod.get("resourceClaims", []):
        spec = templates[claim["resourceClaimTemplateName"]]["spec"]["spec"]
        for device_class, count in claim_devices(spec).items():
            if device_class not in mapping:
                raise Inadmissible(f"DeviceClass {device_class} is not mapped in DRA configuration")
            requests[mapping[device_class]] = requests.get(mapping[device_class], 0) + count
    excluded = kueue.get("resources", {}).get("excludeResourcePrefixes", [])
    return {r: q for r, q in requests.items() if not any(r.startswith(prefix) for prefix in excluded)}


def assigned_flavor(requests: dict[str, float], cluster_queue: dict[str, Any]) -> str:
    """The first flavor of the queue's one resource group where every request fits, as Kueue assigns it."""
    [group] = cluster_queue["spec"]["resourceGroups"]
    undeclared = sorted(set(requests) - set(group["coveredResources"]))
    if undeclared:
        raise Inadmissible(f"resources not covered by the ClusterQueue: {', '.join(undeclared)}")
    for flavor in group["flavors"]:
        quotas = {r["name"]: quantity(r["nominalQuota"]) + quantity(r["borrowingLimit"]) for r in flavor["resources"]}
        if all(amount <= quotas[resource] for resource, amount in requests.items()):
            return flavor["name"]
    raise Inadmissible("no flavor of the ClusterQueue fits the request")


# --- the rendered fixture ---------------------------------------------------------------------------

def rendered(kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
    return declared(render_fixture(FIXTURE), kind, name, namespace).inputs


def kueue_config() -> dict[str, Any]:
    values = releases(render_fixture(FIXTURE))["kueue"].inputs["values"]
    return yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])


def templates_in(namespace: str) -> dict[str, dict[str, Any]]:
    return {
        r.inputs["metadata"]["name"]: r.inputs
        for r in kubernetes_objects(render_fixture(FIXTURE))
        if r.inputs["kind"] == "ResourceClaimTemplate" and r.inputs["metadata"]["namespace"] == namespace
    }


def pod_with_claim(template: str, **requests: str) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": "busybox:1.36", "resources": {"claims": [{"name": "gpu"}]}}
    if requests:
        container["resources"]["requests"] = dict(requests)
    return {"containers": [container], "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template}]}


def admit(pod: dict[str, Any], namespace: str = TEMPLATE[1]) -> tuple[dict[str, float], str]:
    requests = workload_requests(
        pod, templates_in(namespace), rendered("LimitRange", "container-defaults", namespace), kueue_config()
    )
    return requests, assigned_flavor(requests, rendered("ClusterQueue", namespace))


def test_a_pod_using_the_fixture_claim_template_is_admitted_on_the_dra_flavor():
    requests, flavor = admit(pod_with_claim(TEMPLATE[0]))
    assert requests[device_class_resource("gpu.nvidia.com")] == 1
    assert flavor == "l4-dra-on-demand"
    # The flavor puts the pod on the DRA pool's nodes, where the driver publishes the L4s.
    assert rendered("ResourceFlavor", flavor)["spec"]["nodeLabels"]["gpu-platform/node-pool"] == "gpu-l4-dra"


def test_the_dra_flavor_carries_devices_of_the_class_and_no_nvidia_gpu():
    [group] = rendered("ClusterQueue", "ml-research")["spec"]["resourceGroups"]
    dra = {r["name"]: r["nominalQuota"] for f in group["flavors"] if f["name"] == "l4-dra-on-demand" for r in f["resources"]}
    assert dra[device_class_resource("gpu.nvidia.com")] == "2"
    assert dra[GPU_RESOURCE] == "0"


def test_a_dra_pod_asking_for_more_devices_than_the_tenant_may_use_is_not_admitted():
    template = templates_in("ml-research")["l4-gpu"]
    spec = template["spec"]["spec"]
    bigger = {**spec, "devices": {"requests": [{**spec["devices"]["requests"][0], "exactly": {
        **spec["devices"]["requests"][0]["exactly"], "count": 3}}]}}
    requests = {"cpu": 0.1, "memory": 0.25, **{device_class_resource("gpu.nvidia.com"): claim_devices(bigger)["gpu.nvidia.com"]}}
    with pytest.raises(Inadmissible, match="no flavor"):
        assigned_flavor(requests, rendered("ClusterQueue", "ml-research"))


def test_a_tenant_without_dra_quota_cannot_have_a_dra_pod_admitted():
    requests = {"cpu": 0.1, "memory": 0.25, device_class_resource("gpu.nvidia.com"): 1}
    with pytest.raises(Inadmissible, match="not covered"):
        assigned_flavor(requests, rendered("ClusterQueue", "inference"))


def test_a_claim_with_a_cel_selector_waits_for_published_devices():
    spec = {"devices": {"requests": [{"name": "gpu", "exactly": {
        "deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 1,
        "selectors": [{"cel": {"expression": "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('20Gi')) >= 0"}}],
    }}]}}
    with pytest.raises(Inadmissible, match="insufficient matching devices"):
        claim_devices(spec, published=0)
    assert claim_devices(spec, published=1) == {"gpu.nvidia.com": 1}


def test_an_unmapped_device_class_is_inadmissible():
    kueue = {**kueue_config(), "resources": {}}
    with pytest.raises(Inadmissible, match="not mapped"):
        limits = rendered("LimitRange", "container-defaults", "ml-research")
        workload_requests(pod_with_claim(TEMPLATE[0]), templates_in("ml-research"), limits, kueue)


def test_node_local_resources_do_not_keep_a_pod_out():
    requests, flavor = admit(pod_with_claim(TEMPLATE[0], **{"ephemeral-storage": "10Gi", "vpc.amazonaws.com/efa": "1"}))
    assert "ephemeral-storage" not in requests and flavor == "l4-dra-on-demand"


def test_the_resource_quota_counts_the_claimed_devices_under_the_class_name():
    # A claim from the template charges `<class>.deviceclass.resource.k8s.io/devices` per request
    # (kubernetes pkg/quota/v1/evaluator/core/resource_claims.go, Usage); with DRAExtendedResource
    # off (alpha up to 1.35) nothing is charged to `requests.nvidia.com/gpu`.
    hard = rendered("ResourceQuota", "tenant-quota", "ml-research")["spec"]["hard"]
    assert hard["gpu.nvidia.com.deviceclass.resource.k8s.io/devices"] == "2"
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
    assert admitting_flavors(research, {**claim_charge(template), device_class_resource("gpu.nvidia.com"): 3}) == []


@pytest.mark.parametrize("selector, value", [("minMemoryGiB", 20), ("migProfile", "1g.10gb")])
def test_a_claim_template_with_a_selector_is_refused(selector, value):
    document = fixture_document(FIXTURE)
    document["gpu-platform:gpu"]["dra"]["claimTemplates"][0][selector] = value
    refusal = (
        f"{ROOT}[0].{selector}: makes the claim a CEL selector, and Kueue 0.19 admits such a pod only while matching "
        "devices are already published (pkg/dra/claims.go); DRA pools scale from zero for admitted pods only, so it "
        "would wait forever: remove"
    )
    assert any(line.startswith(refusal) for line in problems_of(document))


def test_a_claim_template_in_a_namespace_without_dra_quota_is_refused():
    document = fixture_document(FIXTURE)
    del document["gpu-platform:tenants"][0]["gpu"]["l4-dra-on-demand"]
    assert problems_of(document) == [
        f"{ROOT}[0]: pods using it are charged 1 gpu.nvidia.com.deviceclass.resource.k8s.io/devices, and tenant "
        "ml-research has no flavor with that much quota (nominal + borrowing), so Kueue never admits them: give the "
        "tenant quota on a DRA flavor of class gpu.nvidia.com"
    ]


def test_a_claim_for_more_devices_than_a_node_has_is_refused():
    document = fixture_document(FIXTURE)
    document["gpu-platform:gpu"]["dra"]["claimTemplates"][0]["count"] = 2
    assert problems_of(document) == [
        f"{ROOT}[0].count: 2 devices of class gpu.nvidia.com in one claim, but the largest node of the DRA pools "
        "(gpu-l4-dra) has 1: lower it to 1"
    ]
