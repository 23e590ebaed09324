"""The administrator's DeviceClasses: checked against what the DRA pools publish, mapped in Kueue to their
own quota resource, rendered as resource.k8s.io/v1 DeviceClasses, and shown in the summary.

The dra-attributes fixture defines `gpu-80gb` (memory >= 79Gi: the two H100s of gpu-h100-dra) and `ada`
(Ada Lovelace, compute capability >= 8.9: the eight L4s of gpu-l4-dra); ml-research holds 2 devices in
each, inference 5 of the driver's gpu.nvidia.com on the L4 pool.
"""

from __future__ import annotations

from typing import Any

import pytest

from config.device_classes import ClassPromise, promises
from offline.summary import render_summary

from .builders import kueue_manager_config
from .conftest import fixture_config, fixture_document, load, problems_of, render_fixture
from .recorded import declared

FIXTURE = "dra-attributes"
ADA = "ada.deviceclass.resource.k8s.io/devices"
GPU_80GB = "gpu-80gb.deviceclass.resource.k8s.io/devices"
DRIVER_GPU = "gpu.nvidia.com.deviceclass.resource.k8s.io/devices"
GPU_BASE = "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"


def rendered(kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
    return declared(render_fixture(FIXTURE), kind, name, namespace).inputs


def test_each_class_is_rendered_with_the_drivers_selector_of_its_kind_and_its_own():
    assert rendered("DeviceClass", "gpu-80gb") == {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu-80gb"},
        "spec": {
            "selectors": [
                {"cel": {"expression": GPU_BASE}},
                {"cel": {"expression": "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('79Gi')) >= 0"}},
            ]
        },
    }
    assert [s["cel"]["expression"] for s in rendered("DeviceClass", "ada")["spec"]["selectors"]] == [
        GPU_BASE,
        "device.attributes['gpu.nvidia.com'].architecture == 'Ada Lovelace'",
        "device.attributes['gpu.nvidia.com'].cudaComputeCapability.compareTo(semver('8.9.0')) >= 0",
    ]


def test_kueue_maps_each_class_to_its_own_quota_resource():
    assert kueue_manager_config(render_fixture(FIXTURE))["resources"]["deviceClassMappings"] == [
        {"name": DRIVER_GPU, "deviceClassNames": ["gpu.nvidia.com"]},
        {"name": "mig.nvidia.com.deviceclass.resource.k8s.io/devices", "deviceClassNames": ["mig.nvidia.com"]},
        {"name": GPU_80GB, "deviceClassNames": ["gpu-80gb"]},
        {"name": ADA, "deviceClassNames": ["ada"]},
    ]


def flavor_quotas(tenant: str) -> dict[str, dict[str, str]]:
    [group] = rendered("ClusterQueue", tenant)["spec"]["resourceGroups"]
    return {f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]} for f in group["flavors"]}


def test_a_tenants_quota_in_a_class_is_in_that_class_resource_only():
    quotas = flavor_quotas("ml-research")
    assert (quotas["h100-dra-on-demand"][GPU_80GB], quotas["h100-dra-on-demand"][ADA]) == ("2", "0")
    assert (quotas["l4-dra-on-demand"][ADA], quotas["l4-dra-on-demand"][GPU_80GB]) == ("2", "0")
    # Without quota in the driver's class ml-research's ClusterQueue does not cover it: such claims are refused.
    assert DRIVER_GPU not in quotas["l4-dra-on-demand"]
    # inference holds the driver's class on the L4 pool and covers no administrator's class.
    assert flavor_quotas("inference")["l4-dra-on-demand"][DRIVER_GPU] == "5"
    assert ADA not in flavor_quotas("inference")["l4-dra-on-demand"]


def test_the_namespace_quota_counts_the_class_devices_under_the_same_name():
    hard = rendered("ResourceQuota", "tenant-quota", "ml-research")["spec"]["hard"]
    assert (hard[ADA], hard[GPU_80GB]) == ("2", "2")
    assert DRIVER_GPU not in hard or hard[DRIVER_GPU] == "0"


def test_the_promise_of_each_class_names_its_pools_devices_and_quota():
    config = fixture_config(FIXTURE)
    assert promises(config.gpu.dra, config.tenants, config.gpu_pools) == [
        ClassPromise("gpu-80gb", ("gpu-h100-dra",), 2, 2),
        ClassPromise("ada", ("gpu-l4-dra",), 8, 2),
    ]


def test_the_summary_shows_each_class_its_pools_and_promised_quota():
    summary = render_summary(render_fixture(FIXTURE), fixture_config(FIXTURE))
    assert "| `gpu-80gb` | gpu-h100-dra | 2 | 2 | `gpu-80gb.deviceclass.resource.k8s.io/devices` |" in summary
    assert "| `ada` | gpu-l4-dra | 8 | 2 | `ada.deviceclass.resource.k8s.io/devices` |" in summary


# --- refusals ------------------------------------------------------------------------------------------

def with_changes(change: Any) -> dict[str, Any]:
    document = fixture_document(FIXTURE)
    change(document)
    return document


def dra(document: dict[str, Any]) -> dict[str, Any]:
    return document["gpu-platform:gpu"]["dra"]


def ml_research(document: dict[str, Any]) -> dict[str, Any]:
    return document["gpu-platform:tenants"][0]["gpu"]


L4 = "productName NVIDIA L4, architecture Ada Lovelace, cudaComputeCapability 8.9.0, memory 22.49Gi"
H100 = "productName NVIDIA H100 80GB HBM3, architecture Hopper, cudaComputeCapability 9.0.0, memory 79.65Gi"
REFUSED = [
    (
        lambda d: dra(d)["deviceClasses"][0].update(minMemoryGiB=100),
        "gpu-platform:gpu.dra.deviceClasses[gpu-80gb]: no DRA pool publishes a device of class gpu.nvidia.com that "
        f"matches minMemoryGiB (gpu-l4-dra: {L4}; gpu-h100-dra: {H100}); Kueue would hold its pods for ever "
        "(insufficient matching devices): loosen the selectors or add a DRA pool of a GPU that has them",
    ),
    (
        lambda d: dra(d)["deviceClasses"][1].update(selectors=["device.attributes['gpu.nvidia.com'].uuid != ''"]),
        "gpu-platform:gpu.dra.deviceClasses[ada].selectors[0]: device.attributes['gpu.nvidia.com'].uuid != '' reads "
        "uuid, which a device publishes only once its node runs, so the platform cannot prove any device matches: "
        "select by productName, architecture, cudaComputeCapability, memory or profile",
    ),
    (
        lambda d: dra(d)["deviceClasses"].append({"name": "ada", "productName": "NVIDIA L4"}),
        "gpu-platform:gpu.dra.deviceClasses.name: ada is defined twice; a DeviceClass name is cluster-wide",
    ),
    (
        lambda d: ml_research(d)["l4-dra-on-demand"].update(deviceClass="hopper"),
        "gpu-platform:tenants[ml-research].gpu.l4-dra-on-demand.deviceClass: hopper is no DeviceClass of "
        "gpu.dra.deviceClasses (gpu-80gb, ada)",
    ),
    (
        lambda d: ml_research(d)["l4-dra-on-demand"].update(deviceClass="gpu-80gb"),
        f"gpu-platform:tenants[ml-research].gpu.l4-dra-on-demand.deviceClass: gpu-80gb takes no device of pool "
        f"gpu-l4-dra ({L4}), so quota in it there admits claims that never schedule: give the quota in the driver's "
        "class, or on a pool the class matches",
    ),
    (
        lambda d: ml_research(d)["l40s-spot"].update(deviceClass="ada"),
        "gpu-platform:tenants[ml-research].gpu.l40s-spot.deviceClass: set on flavor l40s-spot of pool gpu-l40s, whose "
        "GPUs the device plugin hands out, not DRA: a DeviceClass applies to DRA pools only; remove it",
    ),
    (
        lambda d: ml_research(d)["h100-dra-on-demand"].update(nominal=3),
        "gpu-platform:tenants: nominal quotas in DeviceClass gpu-80gb on pool gpu-h100-dra add up to 3 devices, and "
        "the pool publishes 2 of the class: lower them to 2 in all",
    ),
]


@pytest.mark.parametrize("change, line", REFUSED)
def test_a_class_or_quota_the_pools_cannot_back_is_refused(change, line):
    assert line in problems_of(with_changes(change))


@pytest.mark.parametrize(
    "name, reason",
    [
        ("gpu.nvidia.com", "is one of the DRA driver's own DeviceClasses"),
        ("GPU_80", "is not a DNS subdomain of at most 63 characters"),
        ("a" * 64, "is not a DNS subdomain of at most 63 characters"),
    ],
)
def test_a_class_name_must_be_a_dns_subdomain_other_than_the_drivers(name, reason):
    document = with_changes(lambda d: dra(d)["deviceClasses"][0].update(name=name))
    assert any(reason in line and line.startswith("gpu-platform:gpu.dra.deviceClasses[") for line in problems_of(document))


def test_a_dotted_class_name_of_63_characters_is_accepted():
    name = "gpu-80gb.ml." + "a" * 51
    document = with_changes(lambda d: dra(d)["deviceClasses"][0].update(name=name))
    ml_research(document)["h100-dra-on-demand"]["deviceClass"] = name
    dra(document)["claimTemplates"][0]["deviceClass"] = name
    assert load(document).gpu.dra.device_classes[0].name == name
