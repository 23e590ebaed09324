"""Claim templates that select GPUs by their attributes, proven against the devices DRA pools publish.

The devices: models/nvidia/dra_driver.py (kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1 deviceinfo.go,
mig.go, partitions.go). The evaluation: models/kubernetes/dra_cel.py (Kubernetes v1.35
dynamic-resource-allocation/cel/compile.go). Kueue v0.19.2 admits a pod with selectors only when enough
published devices match them (pkg/dra/claims.go, validateCELSelectorsAgainstDevices), which for a DRA
pool's standing node group are the devices listed here. The dra-attributes fixture has DRA pools of four
22.49Gi L4s per node (gpu-l4-dra) and one 79.65Gi H100 per node (gpu-h100-dra).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest

from config.claims import ROOT
from config.dra_devices import in_class, pool_devices, published_devices
from config.labels import device_class_resource
from models.kubernetes.cel import Verdict
from models.kubernetes.dra_cel import Device, Semver, device_matches
from models.kueue.workload import Inadmissible, Tenancy, pod_sets
from models.nvidia.dra_driver import DEVICE_CLASS_SELECTORS, GpuFacts, gpu_device, mig_device
from offline.check_manifest import Cluster, check, rendered_objects
from offline.upstream import UPSTREAM_DIR

from .builders import tenancy_of
from .conftest import fixture_config, fixture_document, load, problems_of, render_fixture
from .recorded import declared

FIXTURE = "dra-attributes"
DRA_GPU = device_class_resource("gpu.nvidia.com")
MIB = 2**20
L4 = GpuFacts("NVIDIA L4", "Ada Lovelace", "8.9", 23034 * MIB)
H100 = GpuFacts("NVIDIA H100 80GB HBM3", "Hopper", "9.0", 81559 * MIB)
L4_OFFERS = "gpu-l4-dra: productName NVIDIA L4, architecture Ada Lovelace, cudaComputeCapability 8.9.0, memory 22.49Gi"
H100_OFFERS = (
    "gpu-h100-dra: productName NVIDIA H100 80GB HBM3, architecture Hopper, cudaComputeCapability 9.0.0, memory 79.65Gi"
)


# --- the devices the driver publishes --------------------------------------------------------------

def test_a_whole_gpu_publishes_type_product_architecture_compute_capability_and_memory():
    device = gpu_device(L4)
    assert device.driver == "gpu.nvidia.com"
    assert dict(device.attributes) == {
        "type": "gpu",
        "productName": "NVIDIA L4",
        "architecture": "Ada Lovelace",
        "cudaComputeCapability": Semver(8, 9, 0),
    }
    assert dict(device.capacity) == {"memory": 24152899584}


def test_a_mig_device_publishes_its_profile_and_its_own_memory_under_its_parents_model():
    device = mig_device(H100, "3g.40gb", 40448 * MIB)
    assert device.attributes["type"] == "mig" and device.attributes["profile"] == "3g.40gb"
    assert device.attributes["productName"] == "NVIDIA H100 80GB HBM3"
    assert dict(device.capacity) == {"memory": 42412802048}


@pytest.mark.parametrize("device_class", ["gpu.nvidia.com", "mig.nvidia.com"])
def test_the_class_selectors_are_the_charts(device_class):
    template = UPSTREAM_DIR / f"dra-driver-nvidia-gpu/0.4.1/templates/deviceclass-{device_class.split('.')[0]}.yaml"
    [expression] = re.findall(r'expression: "(.*)"', template.read_text())
    assert DEVICE_CLASS_SELECTORS[device_class] == expression


def test_each_class_takes_only_its_kind_of_device():
    whole, mig = gpu_device(L4), mig_device(H100, "1g.10gb", 9984 * MIB)
    gpu, mig_class = ([DEVICE_CLASS_SELECTORS[name]] for name in ("gpu.nvidia.com", "mig.nvidia.com"))
    assert [in_class(gpu, d) for d in (whole, mig)] == [True, False]
    assert [in_class(mig_class, d) for d in (whole, mig)] == [False, True]


# --- CEL as the scheduler and Kueue evaluate it -----------------------------------------------------

L4_DEVICE = gpu_device(L4)
SELECTORS = [
    # Unqualified names take the driver's domain; the outer map answers an unknown domain with {}.
    ('device.attributes["gpu.nvidia.com"].productName == "NVIDIA L4"', Verdict.PASSED),
    ('device.attributes["gpu.nvidia.com"].productName == "NVIDIA L40S"', Verdict.FAILED),
    ('device.attributes["example.com"].size() == 0', Verdict.PASSED),
    ('device.driver == "gpu.nvidia.com"', Verdict.PASSED),
    # Quantities order by value, not by text: 22.49Gi is at least 22Gi and less than 23Gi.
    ('device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("22Gi")) >= 0', Verdict.PASSED),
    ('device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("23Gi")) >= 0', Verdict.FAILED),
    ('device.capacity["gpu.nvidia.com"].memory.isGreaterThan(quantity("24152899583"))', Verdict.PASSED),
    ('device.capacity["gpu.nvidia.com"].memory.isGreaterThan(quantity("24152899584"))', Verdict.FAILED),
    # Versions order as semvers: 8.9.0 >= 8.9.0, < 8.10.0 (a string comparison would say otherwise).
    ('device.attributes["gpu.nvidia.com"].cudaComputeCapability.compareTo(semver("8.9.0")) >= 0', Verdict.PASSED),
    ('device.attributes["gpu.nvidia.com"].cudaComputeCapability.isLessThan(semver("8.10.0"))', Verdict.PASSED),
    ('device.attributes["gpu.nvidia.com"].cudaComputeCapability.minor() == 9', Verdict.PASSED),
    # A missing id, and comparing a version with a quantity, are runtime errors.
    ('device.attributes["gpu.nvidia.com"].profile == "1g.10gb"', Verdict.ERRORED),
    ('device.attributes["gpu.nvidia.com"].cudaComputeCapability.compareTo(quantity("8")) == 0', Verdict.ERRORED),
    ("cel.bind(a, 1, a == 1)", Verdict.NOT_EVALUATED),
]


@pytest.mark.parametrize("expression, verdict", SELECTORS)
def test_a_selector_on_an_l4(expression, verdict):
    assert device_matches(expression, L4_DEVICE).verdict is verdict


def test_a_qualified_attribute_keeps_its_own_domain():
    device = Device("gpu.nvidia.com", {"resource.kubernetes.io/pcieRoot": "pci0000:00", "type": "gpu"}, {})
    pcie_root = 'device.attributes["resource.kubernetes.io"].pcieRoot == "pci0000:00"'
    assert device_matches(pcie_root, device).verdict is Verdict.PASSED
    assert device_matches('device.attributes["gpu.nvidia.com"].type == "gpu"', device).verdict is Verdict.PASSED


# --- what the pools publish, and the config check ----------------------------------------------------

def test_each_dra_pool_publishes_its_gpu_models_devices_and_other_pools_none():
    pools = {pool.name: pool for pool in fixture_config(FIXTURE).gpu_pools}
    assert [k.device.attributes["productName"] for k in pool_devices(pools["gpu-l4-dra"])] == ["NVIDIA L4"]
    assert [k.device.capacity["memory"] for k in pool_devices(pools["gpu-h100-dra"])] == [81559 * MIB]
    assert pool_devices(pools["gpu-l40s"]) == ()


def template(index: int, **changes: Any) -> dict[str, Any]:
    document = fixture_document(FIXTURE)
    entry = document["gpu-platform:gpu"]["dra"]["claimTemplates"][index]
    entry.update(changes)
    for key in [k for k, v in changes.items() if v is None]:
        del entry[key]
    return document


ACCEPTED = [
    # big-memory (ml-research, class gpu-80gb, quota on gpu-h100-dra): 79.65Gi and 9.0 on the H100s.
    (0, {"minMemoryGiB": 79}),
    (0, {"architecture": "Hopper", "productName": "NVIDIA H100 80GB HBM3"}),
    # four-l4 (inference, the driver's class, quota on gpu-l4-dra only): the boundaries of what an L4 publishes.
    (1, {"minMemoryGiB": 22, "minComputeCapability": "8.9"}),
    (1, {"selectors": ["device.attributes['gpu.nvidia.com'].architecture != 'Hopper'"]}),
]


@pytest.mark.parametrize("index, changes", ACCEPTED)
def test_selectors_some_pool_matches_are_accepted(index, changes):
    load(template(index, **changes))


NO_MATCH = (
    "no DRA pool publishes a device of class {device_class} that matches {fields} ({offers}); Kueue would hold its "
    "pods for ever (insufficient matching devices): loosen the selectors or add a DRA pool of a GPU that has them"
)
BOTH = f"{L4_OFFERS}; {H100_OFFERS}"
REFUSED = [
    (
        # In class gpu-80gb only the H100s are candidates.
        0,
        {"minMemoryGiB": 80},
        "[big-memory]",
        NO_MATCH.format(device_class="gpu-80gb", fields="minMemoryGiB, minComputeCapability", offers=H100_OFFERS),
    ),
    (
        1,
        {"minMemoryGiB": 80, "productName": None},
        "[four-l4]",
        NO_MATCH.format(device_class="gpu.nvidia.com", fields="minMemoryGiB", offers=BOTH),
    ),
    (
        1,
        {"productName": "NVIDIA L40S"},
        "[four-l4]",
        NO_MATCH.format(device_class="gpu.nvidia.com", fields="minMemoryGiB, productName", offers=BOTH),
    ),
    (
        # Only the H100s are Hopper, and inference's DRA quota is on the L4 pool.
        1,
        {"architecture": "Hopper", "minMemoryGiB": None, "productName": None, "count": 1},
        "[four-l4]",
        "tenant inference has quota in gpu.nvidia.com.deviceclass.resource.k8s.io/devices on flavor l4-dra-on-demand "
        "of pool gpu-l4-dra, whose devices do not match the template's selectors, and Kueue charges the class without "
        "reading them: a pod admitted there never schedules; take that quota off the tenant, or keep it to pools "
        "gpu-h100-dra",
    ),
    (
        1,
        {"count": 5},
        "[four-l4].count",
        "5 devices of class gpu.nvidia.com in one claim, but the node group of pool gpu-l4-dra may hold a g6.12xlarge "
        "with 4: lower it to 4 or give the pool instance types with more GPUs",
    ),
    (
        0,
        {"selectors": ["device.attributes['gpu.nvidia.com'].driverVersion.compareTo(semver('580.0.0')) >= 0"]},
        "[big-memory].selectors[0]",
        "device.attributes['gpu.nvidia.com'].driverVersion.compareTo(semver('580.0.0')) >= 0 reads driverVersion, which "
        "a device publishes only once its node runs, so the platform cannot prove any device matches: select by "
        "productName, architecture, cudaComputeCapability, memory or profile",
    ),
    (
        1,
        {"selectors": ["device.attributes['gpu.nvidia.com'].profile == '3g.40gb'"]},
        "[four-l4].selectors[0]",
        "device.attributes['gpu.nvidia.com'].profile == '3g.40gb' fails on the devices of pool gpu-l4-dra (no such "
        "member in mapping: 'profile'), and Kueue refuses a workload whose selector fails to evaluate (CEL evaluation "
        "failed): read only what those devices publish (productName NVIDIA L4, architecture Ada Lovelace, "
        "cudaComputeCapability 8.9.0, memory 22.49Gi)",
    ),
    (
        1,
        {"selectors": ["cel.bind(a, 1, a == 1)"]},
        "[four-l4].selectors[0]",
        "cel.bind(a, 1, a == 1) uses what the platform cannot evaluate (undeclared reference to 'bind'), so it cannot "
        "prove a device matches: write it with comparisons, &&, ||, quantity() and semver()",
    ),
    (
        2,
        {"deviceClass": "gpu-40gb"},
        "[ada-pair].deviceClass",
        "gpu-40gb is no DeviceClass of gpu.dra.deviceClasses (gpu-80gb, ada): define it or name one of those",
    ),
    (
        # ml-research holds 2 devices in class ada: a claim of 3 is never admitted.
        2,
        {"count": 3},
        "[ada-pair]",
        "pods using it are charged 3 ada.deviceclass.resource.k8s.io/devices, and tenant ml-research has no flavor "
        "with that much quota (nominal + borrowing), so Kueue never admits them: give the tenant quota on a DRA "
        "flavor of class ada",
    ),
]


@pytest.mark.parametrize("index, changes, where, line", REFUSED)
def test_selectors_no_admitting_pool_matches_are_refused_in_one_line(index, changes, where, line):
    assert problems_of(template(index, **changes)) == [f"{ROOT}{where}: {line}"]


def test_the_seeds_mig_claim_is_refused_naming_what_the_pools_publish():
    # memory >= 40Gi and MIG profile 3g.20gb, against whole-GPU DRA pools.
    document = template(1, minMemoryGiB=40, migProfile="3g.20gb", productName=None, count=1)
    assert problems_of(document) == [
        f"{ROOT}[four-l4].migProfile: 3g.20gb asks for a MIG device (class mig.nvidia.com), and no DRA pool "
        f"publishes one, only whole GPUs ({BOTH}): drop migProfile to take a whole GPU"
    ]


# --- the render ----------------------------------------------------------------------------------------

def test_the_rendered_claim_templates_carry_the_proven_selectors():
    recording = render_fixture(FIXTURE)
    big = declared(recording, "ResourceClaimTemplate", "big-memory", "ml-research").inputs
    [request] = big["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"] == {
        "allocationMode": "ExactCount",
        "count": 1,
        "deviceClassName": "gpu-80gb",
        "selectors": [
            {"cel": {"expression": "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0"}},
            {
                "cel": {
                    "expression": "device.attributes['gpu.nvidia.com'].cudaComputeCapability.compareTo(semver('9.0.0')) >= 0"
                }
            },
        ],
    }
    four = declared(recording, "ResourceClaimTemplate", "four-l4", "inference").inputs
    [request] = four["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"]["count"] == 4
    assert [s["cel"]["expression"] for s in request["exactly"]["selectors"]] == [
        "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('22Gi')) >= 0",
        "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA L4'",
    ]


def test_every_rendered_selector_matches_a_device_of_a_pool_the_tenant_has_quota_on():
    # What Kueue's validateCELSelectorsAgainstDevices does, over the devices the pools publish.
    config = fixture_config(FIXTURE)
    pools = {pool.name: pool for pool in config.gpu_pools}
    recording = render_fixture(FIXTURE)
    for name, namespace, pool in (("big-memory", "ml-research", "gpu-h100-dra"), ("four-l4", "inference", "gpu-l4-dra")):
        [request] = declared(recording, "ResourceClaimTemplate", name, namespace).inputs["spec"]["spec"]["devices"]["requests"]
        [kind] = pool_devices(pools[pool])
        for selector in request["exactly"]["selectors"]:
            assert device_matches(selector["cel"]["expression"], kind.device).verdict is Verdict.PASSED


# --- Kueue's admission of a pod whose claim has selectors -------------------------------------------------

def job_with_claim(template_name: str) -> dict[str, Any]:
    container = {"name": "main", "image": "busybox:1.36", "resources": {"claims": [{"name": "gpu"}]}}
    pod = {"containers": [container], "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template_name}]}
    return {"kind": "Job", "spec": {"parallelism": 1, "template": {"spec": pod}}}


def test_dra_pools_publish_every_gpu_they_declare_before_any_pod():
    # A standing managed node group of gpus / GPUs-per-node nodes (config/capacity.py node_group_size).
    published = published_devices(fixture_config(FIXTURE).gpu_pools)
    assert [(d.attributes["productName"], count) for d, count in published] == [("NVIDIA L4", 8), ("NVIDIA H100 80GB HBM3", 2)]


def tenancy(namespace: str, published: list[tuple[Device, int]] | None = None, **templates: Any) -> Tenancy:
    config = fixture_config(FIXTURE)
    base = tenancy_of(
        render_fixture(FIXTURE),
        namespace,
        published_devices=published_devices(config.gpu_pools) if published is None else published,
        dra=config.gpu.dra,
    )
    return dataclasses.replace(base, claim_templates={**base.claim_templates, **templates})


def test_kueue_counts_a_pod_whose_selectors_the_published_h100s_match():
    [pod_set] = pod_sets(job_with_claim("big-memory"), tenancy("ml-research"))
    assert pod_set.requests[device_class_resource("gpu-80gb")] == 1


def test_kueue_holds_a_pod_while_too_few_published_devices_match():
    only_l4s = [(gpu_device(L4), 8)]
    with pytest.raises(Inadmissible) as held:
        pod_sets(job_with_claim("big-memory"), tenancy("ml-research", only_l4s))
    assert str(held.value) == (
        "insufficient matching devices for CEL selector in DeviceClass gpu-80gb: 0 device(s) match in the "
        "cluster but 1 requested"
    )


def claim_template(*counts: int) -> dict[str, Any]:
    """A template of one request per count, each for H100s by product name."""
    expression = "device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'"
    selectors = [{"cel": {"expression": expression}}]
    requests = [
        {"name": f"r{i}", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": n, "selectors": selectors}}
        for i, n in enumerate(counts)
    ]
    return {"kind": "ResourceClaimTemplate", "metadata": {"name": "h100s"}, "spec": {"spec": {"devices": {"requests": requests}}}}


@pytest.mark.parametrize(
    "counts, matched",
    [
        ((2,), None),  # both published H100s
        ((1, 1), None),  # one each
        ((3,), "2 device(s) match in the cluster but 3 requested"),
        # A device one request of the claim matched is not counted again for the next.
        ((2, 1), "0 device(s) match in the cluster but 1 requested"),
        ((1, 2), "1 device(s) match in the cluster but 2 requested"),
    ],
)
def test_kueue_counts_each_published_device_once_per_claim(counts, matched):
    job = job_with_claim("h100s")
    if matched is None:
        [pod_set] = pod_sets(job, tenancy("ml-research", h100s=claim_template(*counts)))
        assert pod_set.requests[DRA_GPU] == sum(counts)
        return
    with pytest.raises(Inadmissible, match=re.escape(matched)):
        pod_sets(job, tenancy("ml-research", h100s=claim_template(*counts)))


def test_a_selector_that_fails_on_a_published_device_is_inadmissible():
    template = claim_template(1)
    template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [
        {"cel": {"expression": "device.attributes['gpu.nvidia.com'].profile == '3g.40gb'"}}
    ]
    with pytest.raises(Inadmissible, match=r"^CEL evaluation failed for DeviceClass gpu\.nvidia\.com: no such member"):
        pod_sets(job_with_claim("h100s"), tenancy("ml-research", h100s=template))


# --- check-manifest -------------------------------------------------------------------------------------

def checked_job(namespace: str, template_name: str, *templates: dict[str, Any]) -> list[str]:
    """check-manifest's kueue lines for a one-pod Job using the template, with the tenant's own `templates`."""
    cluster = Cluster.of(fixture_config(FIXTURE), namespace, rendered_objects(render_fixture(FIXTURE)))
    pod = {**job_with_claim(template_name)["spec"]["template"]["spec"], "restartPolicy": "Never"}
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "eval", "namespace": namespace, "labels": {"kueue.x-k8s.io/queue-name": "default"}},
        "spec": {"template": {"spec": pod}},
    }
    documents = [("claims.yaml", t) for t in templates] + [("job.yaml", job)]
    return [f"{'PROBLEM ' if f.problem else ''}{f.text}" for f in check(cluster, documents) if f.aspect == "kueue"]


@pytest.mark.parametrize(
    "namespace, template_name, flavor, amounts",
    [
        ("ml-research", "big-memory", "h100-dra-on-demand", "cpu 0.1, gpu-80gb.deviceclass.resource.k8s.io/devices 1"),
        ("ml-research", "ada-pair", "l4-dra-on-demand", "ada.deviceclass.resource.k8s.io/devices 2, cpu 0.1"),
        ("inference", "four-l4", "l4-dra-on-demand", "cpu 0.1, gpu.nvidia.com.deviceclass.resource.k8s.io/devices 4"),
    ],
)
def test_check_manifest_admits_a_pod_of_each_tenants_selector_template_on_the_pool_that_matches(
    namespace, template_name, flavor, amounts
):
    assert checked_job(namespace, template_name) == [
        f"admitted on {flavor} within {namespace}'s nominal quota: 1 pod(s), {amounts}, memory 0.25Gi"
    ]


def test_check_manifest_holds_a_tenants_own_template_no_published_device_matches_and_names_what_is():
    own = claim_template(1)
    own["apiVersion"] = "resource.k8s.io/v1"
    own["metadata"] = {"name": "h100s", "namespace": "ml-research"}
    own["spec"]["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [
        {"cel": {"expression": "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('80Gi')) >= 0"}}
    ]
    assert checked_job("ml-research", "h100s", own) == [
        "PROBLEM never admitted: insufficient matching devices for CEL selector in DeviceClass gpu.nvidia.com: 0 "
        f"device(s) match in the cluster but 1 requested; fix: select only what the DRA pools publish ({L4_OFFERS}; "
        f"{H100_OFFERS})"
    ]


def capacity_lines(namespace: str, template_name: str, *templates: dict[str, Any]) -> list[str]:
    cluster = Cluster.of(fixture_config(FIXTURE), namespace, rendered_objects(render_fixture(FIXTURE)))
    pod = {**job_with_claim(template_name)["spec"]["template"]["spec"], "restartPolicy": "Never"}
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "eval", "namespace": namespace, "labels": {"kueue.x-k8s.io/queue-name": "default"}},
        "spec": {"template": {"spec": pod}},
    }
    documents = [("claims.yaml", t) for t in templates] + [("job.yaml", job)]
    return [f"{'PROBLEM ' if f.problem else ''}{f.text}" for f in check(cluster, documents) if f.aspect == "capacity"]


def test_check_manifest_places_a_class_claim_only_where_a_node_publishes_enough_devices_of_the_class():
    assert capacity_lines("ml-research", "ada-pair") == ["main: pool gpu-l4-dra, instance types g6.12xlarge"]
    # Two devices of gpu-80gb in one claim: within ml-research's quota, but a p5.4xlarge has one H100.
    own = claim_template(2)
    own["apiVersion"] = "resource.k8s.io/v1"
    own["metadata"] = {"name": "h100s", "namespace": "ml-research"}
    own["spec"]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "gpu-80gb"
    assert capacity_lines("ml-research", "h100s", own) == [
        "PROBLEM main: no instance type of pool gpu-h100-dra holds one of its pods (cpu 0.1, "
        "gpu-80gb.deviceclass.resource.k8s.io/devices 2, memory 0.25Gi); ask for less per pod"
    ]
