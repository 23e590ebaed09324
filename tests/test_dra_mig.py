"""MIG through DRA: a DRA pool cut into a declared MIG layout, claims that select its devices by profile, and the
quotas that count them; and why no claim is shared between pods.

The driver (kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1, DynamicMIG off) publishes the MIG devices that exist
when its kubelet plugin starts, never their parent GPU (cmd/gpu-kubelet-plugin/nvlib.go
GetPerGpuAllocatableDevices); the node group's boot makes them (components/lib/gpu_nodes.py). The dra-mig
fixture: DRA pools gpu-l4-dra (two g6.12xlarge, four whole L4s each) and gpu-h100-mig (two p5.4xlarge, one H100
each cut into 3g.40gb + 2g.20gb + 2x 1g.10gb), classes h100-3g.40gb and ada, tenants ml-research (the driver's
mig.nvidia.com, one GPU's layout), vision (h100-3g.40gb, one device) and inference (ada, six L4s).
"""

from __future__ import annotations

import base64
import copy
import functools
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.gpu_operator import mig_config_map
from components.monitoring.alerts import KUEUE_GPU
from config import PlatformConfig
from config.catalog import GPU_MODELS, MIG_MEMORY_BYTES
from config.claims import ROOT
from config.dra_devices import pool_devices
from config.labels import device_class_resource
from models.kueue.workload import Inadmissible, pod_sets
from models.nvidia.dra_driver import published_on_gpu
from offline.check_manifest import Cluster, check, rendered_objects
from offline.engine import Recording

from .builders import tenancy_of
from .conftest import load, problems_of, render
from .recorded import declared

# A stack of the kind the issue holds out (DRA pools of two GPU models, a MIG layout, two administrator classes),
# kept out of tests/fixtures/stacks so the generic per-fixture tests do not render it again.
HELD_OUT = Path(__file__).resolve().parent / "fixtures" / "held_out" / "dra-mig.yaml"
MIB = 2**20
MIG = device_class_resource("mig.nvidia.com")
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
H100_MIG_OFFERS = (
    "gpu-h100-mig: productName NVIDIA H100 80GB HBM3, architecture Hopper, cudaComputeCapability 9.0.0, "
    "profile {profile}, memory {memory}"
)


@functools.cache
def _document() -> dict[str, Any]:
    return yaml.safe_load(HELD_OUT.read_text())["config"]


def held_out_document() -> dict[str, Any]:
    return copy.deepcopy(_document())


@functools.cache
def held_out_config() -> PlatformConfig:
    return load(held_out_document())


@functools.cache
def held_out_render() -> Recording:
    return render(held_out_document(), "dra-mig")


# --- what the driver publishes for a GPU ------------------------------------------------------------------


@pytest.mark.parametrize(
    "layout, published",
    [
        (None, [(None, 1)]),  # MIG mode off: the whole GPU
        ({"3g.40gb": 2}, [("3g.40gb", 2)]),
        ({"1g.10gb": 2, "3g.40gb": 1, "2g.20gb": 1}, [("1g.10gb", 2), ("2g.20gb", 1), ("3g.40gb", 1)]),
        ({}, []),  # MIG mode on and no MIG device: nothing, not the parent
    ],
)
def test_a_gpu_publishes_itself_or_its_mig_devices_never_both(layout, published):
    assert published_on_gpu(layout) == published


def test_a_mig_pool_publishes_each_profile_of_its_layout_with_nvmls_memory_and_no_whole_gpu():
    pools = {pool.name: pool for pool in held_out_config().gpu_pools}
    kinds = pool_devices(pools["gpu-h100-mig"])
    assert [(k.device.attributes["type"], k.device.attributes["profile"], k.per_gpu) for k in kinds] == [
        ("mig", "1g.10gb", 2),
        ("mig", "2g.20gb", 1),
        ("mig", "3g.40gb", 1),
    ]
    assert [k.device.capacity["memory"] for k in kinds] == [10240 * MIB, 20480 * MIB, 40960 * MIB]
    assert {k.device.attributes["productName"] for k in kinds} == {"NVIDIA H100 80GB HBM3"}
    [whole] = pool_devices(pools["gpu-l4-dra"])
    assert whole.device.attributes["type"] == "gpu" and whole.per_gpu == 1


@pytest.mark.parametrize(
    "model, profile, mib",
    [
        # go-nvml's A100 model carries what hardware reports, under the name's size; its H100 and H200 the name's.
        ("A100-40GB", "3g.20gb", 19968),
        ("A100-80GB", "3g.40gb", 40192),
        ("A100-80GB", "1g.10gb+me", 9856),
        ("H100-80GB", "3g.40gb", 40960),
        ("H200-141GB", "3g.71gb", 72704),
    ],
)
def test_a_mig_profiles_memory_is_nvmls_memory_size_in_mib(model, profile, mib):
    assert MIG_MEMORY_BYTES[model][profile] == mib * MIB


def test_every_mig_profile_of_the_catalog_has_its_memory():
    assert {m.name: sorted(m.mig_profiles) for m in GPU_MODELS.values() if m.supports_mig} == {
        name: sorted(table) for name, table in MIG_MEMORY_BYTES.items()
    }


# --- the seed's claim --------------------------------------------------------------------------------------


def template(index: int, **changes: Any) -> dict[str, Any]:
    document = held_out_document()
    entry = document["gpu-platform:gpu"]["dra"]["claimTemplates"][index]
    entry.update(changes)
    return document


def test_the_seeds_claim_on_a_matching_mig_pool_is_rendered_with_its_selectors():
    inputs = declared(held_out_render(), "ResourceClaimTemplate", "big-slice", "ml-research").inputs
    [request] = inputs["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"]["deviceClassName"] == "mig.nvidia.com"
    assert [s["cel"]["expression"] for s in request["exactly"]["selectors"]] == [
        "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('39Gi')) >= 0",
        "device.attributes['gpu.nvidia.com'].profile == '3g.40gb'",
    ]


def test_a_floor_above_the_profiles_memory_is_refused_naming_what_the_pool_publishes():
    # 3g.40gb publishes 40960 MiB = 40Gi on the H100: 41Gi matches no device of the MIG pool.
    offers = "; ".join(
        H100_MIG_OFFERS.format(profile=profile, memory=memory)
        for profile, memory in (("1g.10gb", "10.00Gi"), ("2g.20gb", "20.00Gi"), ("3g.40gb", "40.00Gi"))
    )
    assert problems_of(template(0, minMemoryGiB=41)) == [
        f"{ROOT}[big-slice]: no DRA pool publishes a device of class mig.nvidia.com that matches minMemoryGiB, "
        f"migProfile ({offers}); Kueue would hold its pods for ever (insufficient matching devices): loosen the "
        "selectors or add a DRA pool of a GPU that has them"
    ]


def test_the_seeds_literal_claim_is_refused_in_one_line_naming_what_the_pool_publishes():
    # 3g.20gb is an A100-40GB profile (19.5Gi there, so never >= 40Gi); the pool is cut into H100 profiles.
    offers = "; ".join(
        H100_MIG_OFFERS.format(profile=profile, memory=memory)
        for profile, memory in (("1g.10gb", "10.00Gi"), ("2g.20gb", "20.00Gi"), ("3g.40gb", "40.00Gi"))
    )
    assert problems_of(template(0, minMemoryGiB=40, migProfile="3g.20gb")) == [
        f"{ROOT}[big-slice]: no DRA pool publishes a device of class mig.nvidia.com that matches minMemoryGiB, "
        f"migProfile ({offers}); Kueue would hold its pods for ever (insufficient matching devices): loosen the "
        "selectors or add a DRA pool of a GPU that has them"
    ]


# --- quotas, Kueue's charge and check-manifest ----------------------------------------------------------------


def flavor_quota(queue: str, flavor: str) -> dict[str, str]:
    [group] = declared(held_out_render(), "ClusterQueue", queue).inputs["spec"]["resourceGroups"]
    return {r["name"]: r["nominalQuota"] for f in group["flavors"] if f["name"] == flavor for r in f["resources"]}


def test_a_unit_of_mig_quota_is_one_gpus_layout_and_of_a_class_quota_the_class_devices_on_one_gpu():
    assert flavor_quota("ml-research", "h100-mig-on-demand")[MIG] == "4"
    assert flavor_quota("vision", "h100-mig-on-demand")[device_class_resource("h100-3g.40gb")] == "1"
    quota = declared(held_out_render(), "ResourceQuota", "tenant-quota", "vision").inputs["spec"]["hard"]
    assert quota["h100-3g.40gb.deviceclass.resource.k8s.io/devices"] == "1"


def test_a_class_quota_of_two_gpus_is_two_devices_of_the_class_within_the_two_the_pool_publishes():
    document = held_out_document()
    tenants = {t["name"]: t for t in document["gpu-platform:tenants"]}
    tenants["vision"]["gpu"]["h100-mig-on-demand"]["nominal"] = 2
    del tenants["ml-research"]["gpu"]["h100-mig-on-demand"]
    dra = document["gpu-platform:gpu"]["dra"]
    dra["claimTemplates"] = [c for c in dra["claimTemplates"] if c["namespace"] != "ml-research"]
    [quota] = next(t for t in load(document).tenants if t.name == "vision").quotas
    assert quota.resources()[device_class_resource("h100-3g.40gb")] == (2, 0, None)


def checked(namespace: str, template_name: str) -> list[str]:
    """check-manifest's kueue and capacity lines for a one-pod Job using the template."""
    cluster = Cluster.of(held_out_config(), namespace, rendered_objects(held_out_render()))
    container = {"name": "main", "image": "busybox:1.36", "resources": {"claims": [{"name": "gpu"}]}}
    pod = {
        "containers": [container],
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template_name}],
        "restartPolicy": "Never",
    }
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "eval", "namespace": namespace, "labels": {"kueue.x-k8s.io/queue-name": "default"}},
        "spec": {"template": {"spec": pod}},
    }
    found = check(cluster, [("job.yaml", job)])
    return [f"{f.aspect}: {'PROBLEM ' if f.problem else ''}{f.text}" for f in found if f.aspect in ("kueue", "capacity")]


@pytest.mark.parametrize(
    "namespace, template_name, amounts",
    [
        ("ml-research", "big-slice", f"cpu 0.1, memory 0.25Gi, {MIG} 1"),
        ("vision", "h100-half", "cpu 0.1, h100-3g.40gb.deviceclass.resource.k8s.io/devices 1, memory 0.25Gi"),
    ],
)
def test_check_manifest_admits_a_pod_of_each_mig_claim_on_the_mig_pool(namespace, template_name, amounts):
    assert sorted(checked(namespace, template_name)) == [
        "capacity: main: pool gpu-h100-mig, instance types p5.4xlarge",
        f"kueue: admitted on h100-mig-on-demand within {namespace}'s nominal quota: 1 pod(s), {amounts}",
    ]


def test_kueue_never_admits_a_pod_that_names_a_claim_so_no_claim_is_shared():
    tenancy = tenancy_of(held_out_render(), "ml-research", config=held_out_config())
    pod = {
        "containers": [{"name": "main", "image": "busybox:1.36", "resources": {"claims": [{"name": "gpu"}]}}],
        "resourceClaims": [{"name": "gpu", "resourceClaimName": "shared-h100"}],
    }
    job = {"kind": "Job", "spec": {"parallelism": 2, "template": {"spec": pod}}}
    with pytest.raises(Inadmissible) as refused:
        pod_sets(job, tenancy)
    assert str(refused.value) == "KueueDRAIntegration feature does not support use of resource claims"


# --- the nodes -------------------------------------------------------------------------------------------------


def user_data(pool: str) -> str:
    template = held_out_render().named(LAUNCH_TEMPLATE, f"gpu-dev-dra-nodes-{pool}").inputs
    return base64.b64decode(template["userData"]).decode()


def test_a_mig_pools_nodes_cut_every_gpu_into_the_layout_largest_first_before_the_kubelet():
    text = user_data("gpu-h100-mig")
    assert '  nvidia-smi mig -i "$gpu" -cgi 3g.40gb,2g.20gb,1g.10gb,1g.10gb -C' in text.splitlines()
    assert "Before=kubelet.service" in text.splitlines()
    assert "RequiredBy=kubelet.service" in text.splitlines()
    assert "systemctl enable --now gpu-platform-mig-layout.service" in text.splitlines()
    # The script's own lines run only at boot, through the unit, after nvidia-ctk hardened the toolkit.
    assert text.index("nvidia-ctk config") < text.index("nvidia-smi -mig 1")


def test_a_whole_gpu_pools_nodes_cut_nothing():
    assert "nvidia-smi" not in user_data("gpu-l4-dra")


def test_the_mig_manager_neither_labels_nor_configures_a_dra_pool():
    pools = {pool.name: pool for pool in held_out_config().gpu_pools}
    assert "nvidia.com/mig.config" not in pools["gpu-h100-mig"].labels
    assert pools["gpu-h100-mig"].labels["nvidia.com/gpu.deploy.operands"] == "false"
    config = mig_config_map(list(pools.values()))
    assert "gpu-h100-mig" not in config["data"]["config.yaml"]


# --- docs/tenants.md's example ------------------------------------------------------------------------------


def doc_block(marker: str, starts: str) -> Any:
    """The YAML of docs/tenants.md's block after `<!-- snippet: marker -->` whose text starts with `starts`."""
    text = (Path(__file__).resolve().parent.parent / "docs" / "tenants.md").read_text()
    opening = f"<!-- snippet: {marker} -->\n```yaml\n"
    [body] = [
        part.split("\n```", 1)[0] for part in text.split(opening)[1:] if part.startswith(starts)
    ]
    return yaml.safe_load(body)


def test_the_docs_mig_example_is_the_held_out_stacks():
    example = doc_block("fragment", "gpu-platform:nodePools:\n  - name: gpu-h100-mig")
    stack = held_out_document()
    [pool] = example["gpu-platform:nodePools"]
    assert pool == next(p for p in stack["gpu-platform:nodePools"] if p["name"] == "gpu-h100-mig")
    dra, stack_dra = example["gpu-platform:gpu"]["dra"], stack["gpu-platform:gpu"]["dra"]
    assert dra["enabled"] is stack_dra["enabled"] is True
    for section in ("deviceClasses", "claimTemplates"):
        for entry in dra[section]:
            assert entry in stack_dra[section]


def test_check_manifest_admits_the_docs_job_on_the_mig_pool():
    job = doc_block("manifest stack=held_out:dra-mig tenant=ml-research", "apiVersion: batch/v1")
    cluster = Cluster.of(held_out_config(), "ml-research", rendered_objects(held_out_render()))
    found = check(cluster, [("job.yaml", job)])
    assert sorted(f"{f.aspect}: {f.text}" for f in found if f.aspect in ("kueue", "capacity")) == [
        "capacity: main: pool gpu-h100-mig, instance types p5.4xlarge",
        f"kueue: admitted on h100-mig-on-demand within ml-research's nominal quota: 1 pod(s), cpu 2, memory 8Gi, {MIG} 1",
        "kueue: no kueue.x-k8s.io/queue-name label: Kueue gives it the namespace's LocalQueue `default` "
        "(manageJobsWithoutQueueName and the default LocalQueue)",
    ]
    assert not [f for f in found if f.problem]


@pytest.mark.parametrize(
    "resource, selected",
    [
        ("h100-3g.40gb.deviceclass.resource.k8s.io/devices", True),
        ("mig.nvidia.com.deviceclass.resource.k8s.io/devices", True),
        ("nvidia.com/mig-3g.40gb", True),
        ("cpu", False),
        ("memory", False),
    ],
)
def test_the_quota_alert_and_panel_select_every_device_class_resource(resource, selected):
    # Prometheus anchors a =~ matcher at both ends (RE2, as re.fullmatch).
    [pattern] = re.findall(r'resource=~"([^"]+)"', KUEUE_GPU)
    assert bool(re.fullmatch(pattern, resource)) is selected
