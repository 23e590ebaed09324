"""GPU capacity: pools checked against the catalog, and the NodePools and EC2NodeClasses they become."""

from __future__ import annotations

import tomllib

import pytest

from config.labels import GPU_TAINT, MIG_CONFIG_LABEL, POOL_LABEL

from .conftest import fixture_document, load, problems_of, render_fixture, short
from .recorded import waits_for

NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"
NODECLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
P = "gpu-platform:nodePools"


def pool_doc(fixture: str = "multi-pool", **changes):
    doc = fixture_document(fixture)
    doc[P][0].update(changes)
    return doc


BAD_POOLS = [
    pytest.param(
        {"instanceTypes": ["p5.96xlarge"]},
        "gpu-platform:nodePools[gpu-h100].instanceTypes[0]: 'p5.96xlarge' is not in the GPU catalog (config/catalog.py); known: ",
        id="unknown-instance-type",
    ),
    pytest.param(
        {"instanceTypes": [], "instanceFamilies": ["g7"]},
        "gpu-platform:nodePools[gpu-h100].instanceFamilies[0]: 'g7' is not a GPU family in the catalog "
        "(config/catalog.py); known: ",
        id="unknown-family",
    ),
    pytest.param(
        {"instanceTypes": ["p5.48xlarge", "p4d.24xlarge"]},
        "gpu-platform:nodePools[gpu-h100]: mixes GPU models A100-40GB, H100-80GB; a pool has one GPU model",
        id="mixed-gpu-models",
    ),
    pytest.param(
        {"instanceTypes": ["p4d.24xlarge"], "sharing": {"mode": "mig", "migLayout": {"3g.40gb": 1}}},
        "gpu-platform:nodePools[gpu-h100].sharing.migLayout.3g.40gb: '3g.40gb' is not a MIG profile of the A100-40GB in pool "
        "gpu-h100; allowed: 1g.5gb, 1g.5gb+me, 1g.10gb, 2g.10gb, 3g.20gb, 4g.20gb, 7g.40gb",
        id="mig-profile-not-on-this-gpu",
    ),
    pytest.param(
        {"instanceTypes": ["g6e.12xlarge"], "gpus": 8},
        "gpu-platform:nodePools[gpu-h100].sharing.mode: 'mig' is not possible on pool gpu-h100: its L40S GPUs do not support "
        "MIG (MIG needs A100, H100 or H200); use timeSlicing or none",
        id="mig-on-a-non-mig-gpu",
    ),
    pytest.param(
        {"sharing": {"mode": "mig", "migLayout": {"4g.40gb": 1, "3g.40gb": 1, "1g.10gb": 1}}},
        "gpu-platform:nodePools[gpu-h100].sharing.migLayout: oversubscribes each H100-80GB of pool gpu-h100: 8 of 7 compute "
        "slices and 9 of 8 memory slices; remove profiles until both fit",
        id="mig-layout-oversubscribed",
    ),
    pytest.param(
        {"sharing": {"mode": "mig", "migLayout": {"1g.10gb": 8}}},
        "gpu-platform:nodePools[gpu-h100].sharing.migLayout.1g.10gb: 8 instances of 1g.10gb per GPU; a H100-80GB fits 1 to 7",
        id="mig-profile-count",
    ),
    pytest.param(
        {"sharing": {"mode": "timeSlicing"}},
        "gpu-platform:nodePools[gpu-h100].sharing: timeSlicing needs `replicas` (schedulable units per GPU), e.g. 4",
        id="time-slicing-without-replicas",
    ),
    pytest.param(
        {"gpus": 4},
        "gpu-platform:nodePools[gpu-h100].gpus: 4 is less than the 8 GPUs of the pool's smallest instance type; Karpenter "
        "could never launch a node: declare at least 8",
        id="limit-below-one-node",
    ),
    pytest.param(
        {"amiVersion": "latest"},
        "gpu-platform:nodePools[gpu-h100].amiVersion: 'latest' rolls every node to each new AMI the day it ships; production "
        "stacks (cluster.protect: true) pin a release such as 'v20260903'",
        id="latest-ami-in-production",
    ),
    pytest.param(
        {"name": "gpu-a100"},
        "gpu-platform:nodePools[1].name: 'gpu-a100' is already the name of gpu-platform:nodePools[0]; pool names must be unique",
        id="duplicate-pool-name",
    ),
    pytest.param(
        {"disruption": {"budgets": [{"nodes": "0", "schedule": "0 9 * * mon-fri"}]}},
        "gpu-platform:nodePools[gpu-h100].disruption.budgets[0]: schedule and duration must be set together (a window has a "
        "start and a length)",
        id="budget-window-without-duration",
    ),
    pytest.param(
        {"disruption": {"budgets": [{"nodes": "0", "schedule": "0 9 * * 1-7", "duration": "8h"}]}},
        "gpu-platform:nodePools[gpu-h100].disruption.budgets[0].schedule: '0 9 * * 1-7' is not a schedule Karpenter's "
        "cron parser accepts: day of week '1-7' ends above 6 (Sunday is 0 or sun)",
        id="budget-weekday-seven",
    ),
    pytest.param(
        {"disruption": {"budgets": [{"nodes": "20 percent"}]}},
        "gpu-platform:nodePools[gpu-h100].disruption.budgets[0].nodes: '20 percent' is not a node count ('0', '3') or a "
        "percentage ('20%')",
        id="budget-nodes",
    ),
    pytest.param(
        {"capacityTypes": ["preemptible"]},
        "gpu-platform:nodePools[gpu-h100].capacityTypes[0]: 'preemptible' is not allowed; expected one of 'on-demand', "
        "'spot' or 'reserved'",
        id="capacity-type",
    ),
]


@pytest.mark.parametrize("changes, expected", BAD_POOLS)
def test_a_pool_mistake_names_the_pool_key_and_what_is_allowed(changes, expected):
    problems = problems_of(pool_doc(**changes))
    assert len(problems) == 1, problems
    assert problems[0].startswith(expected), problems[0]


def test_single_mig_strategy_needs_one_profile_per_pool():
    doc = fixture_document("multi-pool")
    doc["gpu-platform:gpu"]["migStrategy"] = "single"
    assert problems_of(doc) == [
        "gpu-platform:nodePools[gpu-h100].sharing.migLayout: gpu-platform:gpu.migStrategy 'single' advertises MIG devices as "
        "nvidia.com/gpu, so every device of pool gpu-h100 must be one profile; it has 3g.40gb, 2g.20gb, 1g.10gb: use "
        "one profile or migStrategy 'mixed'"
    ]


def test_dra_needs_kubernetes_1_34():
    doc = fixture_document("single-pool-dra")
    doc["gpu-platform:cluster"]["kubernetesVersion"] = "1.33"
    assert problems_of(doc) == [
        "gpu-platform:gpu.dra.enabled: true needs Kubernetes 1.34 or newer (resource.k8s.io/v1); the cluster runs "
        "1.33: upgrade cluster.kubernetesVersion or set dra.enabled: false"
    ]


@pytest.mark.parametrize(
    "change, expected",
    [
        (
            lambda doc: doc["gpu-platform:gpu"]["dra"].update(enabled=False),
            "gpu-platform:nodePools[gpu-l4-dra].allocation: 'dra' on pool gpu-l4-dra needs gpu-platform:gpu.dra.enabled: true",
        ),
        (
            lambda doc: doc["gpu-platform:gpu"]["dra"]["claimTemplates"][0].update(migProfile="1g.10gb"),
            "gpu-platform:gpu.dra.claimTemplates[l4-gpu].migProfile: 1g.10gb asks for a MIG device (class mig.nvidia.com), "
            "and no DRA pool publishes one, only whole GPUs (gpu-l4-dra: productName NVIDIA L4, architecture Ada Lovelace, "
            "cudaComputeCapability 8.9.0, memory 22.49Gi): drop migProfile to take a whole GPU",
        ),
        (
            lambda doc: doc[P][1].update(allocation="devicePlugin"),
            "gpu-platform:gpu.dra.claimTemplates: no pool has allocation: dra, so no claim could ever be satisfied",
        ),
    ],
    ids=["dra-pool-without-driver", "claim-for-a-profile-no-pool-has", "claims-without-a-dra-pool"],
)
def test_dra_config_must_be_satisfiable(change, expected):
    doc = fixture_document("single-pool-dra")
    change(doc)
    # Kueue's own refusals of the same claim (config/claims.py) are tested in tests/test_dra_admission.py.
    assert problems_of(doc)[0] == expected


def test_the_cpu_pool_refuses_gpu_families():
    doc = fixture_document("single-pool")
    doc["gpu-platform:cpuPool"]["instanceFamilies"] = ["m7i", "g6"]
    assert problems_of(doc) == [
        "gpu-platform:cpuPool.instanceFamilies: [m7i, g6] contains 'g6', an accelerator family; GPU capacity "
        "belongs in nodePools"
    ]


# --- derived capacity ---------------------------------------------------------------------------


def test_time_slicing_multiplies_schedulable_gpus_but_not_the_karpenter_limit():
    pool = load(fixture_document("single-pool")).gpu_pools[0]
    assert pool.name == "gpu-l40s"
    assert pool.gpu_limit == 8
    assert pool.schedulable_units == {"nvidia.com/gpu": 32}


def test_mixed_mig_yields_each_profile_per_gpu():
    pool = load(fixture_document("multi-pool")).gpu_pools[0]
    assert pool.schedulable_units == {
        "nvidia.com/mig-1g.10gb": 64,
        "nvidia.com/mig-2g.20gb": 32,
        "nvidia.com/mig-3g.40gb": 32,
    }


def test_cost_at_the_limit_uses_the_cheapest_type_per_gpu():
    pools = {p.name: p for p in load(fixture_document("multi-pool")).gpu_pools}
    assert pools["gpu-h100"].hourly_cost_at_limit == pytest.approx(55.04 * 4)
    # g6e.12xlarge is the cheapest per GPU of the three listed ($2.62/GPU-hour against $3.77 for the 48xlarge).
    assert pools["gpu-l40s"].hourly_cost_at_limit == pytest.approx(10.49264 / 4 * 16, abs=0.01)


# --- what is declared ---------------------------------------------------------------------------


def objects(recording, type_):
    return {r.inputs["metadata"]["name"]: r for r in recording.by_type(type_)}


def test_every_gpu_pool_is_tainted_and_the_cpu_pool_is_not(recording):
    pools = objects(recording, NODEPOOL)
    assert "cpu" in pools
    for name, pool in pools.items():
        taints = pool.inputs["spec"]["template"]["spec"].get("taints", [])
        if name == "cpu":
            assert taints == []
        else:
            assert GPU_TAINT in taints, name


def test_each_pool_limits_gpus_to_what_it_declares_in_the_units_karpenter_counts():
    pools = objects(render_fixture("multi-pool"), NODEPOOL)
    # 32 MIG-partitioned H100s: mixed-strategy nodes report nvidia.com/gpu 0, so each profile is limited.
    assert pools["gpu-h100"].inputs["spec"]["limits"] == {
        "nvidia.com/mig-1g.10gb": "64",
        "nvidia.com/mig-2g.20gb": "32",
        "nvidia.com/mig-3g.40gb": "32",
    }
    # 16 declared A100s plus the fixture's 6 of warm headroom (warmStart.headroom), which quotas never see.
    assert pools["gpu-a100"].inputs["spec"]["limits"] == {"nvidia.com/gpu": "22"}
    assert pools["cpu"].inputs["spec"]["limits"] == {"cpu": 512, "memory": "2048Gi"}


NODEOVERLAY = "kubernetes:karpenter.sh/v1alpha1:NodeOverlay"


def test_a_mig_pool_gets_an_overlay_per_type_advertising_its_mig_devices_and_no_whole_gpu():
    overlays = objects(render_fixture("multi-pool"), NODEOVERLAY)
    # Only the MIG pool needs one: the whole-GPU pools' nodes report what the provider already knows.
    assert sorted(overlays) == ["gpu-h100-p5.48xlarge"]
    spec = overlays["gpu-h100-p5.48xlarge"].inputs["spec"]
    # Requirements match the NodePool's name and the type (kubernetes-sigs/karpenter
    # pkg/controllers/nodeoverlay/controller.go, getOverlaidOfferings).
    assert spec["requirements"] == [
        {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["gpu-h100"]},
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["p5.48xlarge"]},
    ]
    # 8 H100s, each 3g.40gb + 2g.20gb + 2x 1g.10gb; mixed-strategy nodes report nvidia.com/gpu 0.
    assert spec["capacity"] == {
        "nvidia.com/gpu": "0",
        "nvidia.com/mig-1g.10gb": "16",
        "nvidia.com/mig-2g.20gb": "8",
        "nvidia.com/mig-3g.40gb": "8",
    }


def test_a_time_sliced_pool_is_sized_by_its_shares():
    overlays = objects(render_fixture("single-pool"), NODEOVERLAY)
    # Four shares per L40S: the 48xlarge's 8 GPUs are 32 nvidia.com/gpu to Karpenter, as to the kubelet.
    assert overlays["gpu-l40s-g6e.48xlarge"].inputs["spec"]["capacity"] == {"nvidia.com/gpu": "32"}
    assert len(overlays) == 8


def test_overlays_exist_before_their_node_pool_launches_anything():
    recording = render_fixture("multi-pool")
    pool = recording.named(NODEPOOL, "gpu-prod-pools-gpu-h100")
    overlay = recording.named(NODEOVERLAY, "gpu-prod-pools-gpu-h100-p5.48xlarge-overlay")
    assert overlay.urn in waits_for(recording, pool)


def test_pool_requirements_pin_instance_types_and_capacity_types():
    pools = objects(render_fixture("single-pool"), NODEPOOL)
    requirements = {r["key"]: r["values"] for r in pools["gpu-l40s"].inputs["spec"]["template"]["spec"]["requirements"]}
    assert requirements["karpenter.sh/capacity-type"] == ["on-demand", "spot"]
    assert requirements["node.kubernetes.io/instance-type"][0] == "g6e.xlarge"
    assert all(t.startswith("g6e.") for t in requirements["node.kubernetes.io/instance-type"])
    cpu = {r["key"]: r["values"] for r in pools["cpu"].inputs["spec"]["template"]["spec"]["requirements"]}
    assert not any(family.startswith(("g", "p")) for family in cpu["karpenter.k8s.aws/instance-family"])


def test_pool_nodes_carry_the_labels_kueue_and_the_gpu_operator_select_on():
    labels = objects(render_fixture("multi-pool"), NODEPOOL)["gpu-h100"].inputs["spec"]["template"]["metadata"]["labels"]
    assert labels[POOL_LABEL] == "gpu-h100"
    assert labels["gpu-platform/gpu-model"] == "h100-80gb"
    assert labels[MIG_CONFIG_LABEL] == "gpu-h100"


def test_default_budgets_stop_disruption_in_weekday_working_hours():
    budgets = objects(render_fixture("multi-pool"), NODEPOOL)["gpu-h100"].inputs["spec"]["disruption"]["budgets"]
    assert budgets == [{"nodes": "20%"}, {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h"}]


def test_every_node_class_requires_imdsv2_and_encrypts_its_volumes(recording):
    classes = objects(recording, NODECLASS)
    assert set(classes) == set(objects(recording, NODEPOOL))
    for name, node_class in classes.items():
        spec = node_class.inputs["spec"]
        assert spec["metadataOptions"]["httpTokens"] == "required", name
        assert spec["metadataOptions"]["httpPutResponseHopLimit"] == 1, name
        assert spec["blockDeviceMappings"], name
        for mapping in spec["blockDeviceMappings"]:
            assert mapping["ebs"]["encrypted"] is True, name


def test_node_classes_pin_the_ami_and_discover_subnets_and_groups_by_tag():
    classes = objects(render_fixture("multi-pool"), NODECLASS)
    assert classes["gpu-h100"].inputs["spec"]["amiSelectorTerms"] == [{"alias": "al2023@v20260903"}]
    assert classes["gpu-l40s"].inputs["spec"]["amiSelectorTerms"] == [{"alias": "bottlerocket@v1.57.0"}]
    for node_class in classes.values():
        spec = node_class.inputs["spec"]
        assert spec["subnetSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "gpu-prod"}}]
        assert spec["securityGroupSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "gpu-prod"}}]
        assert spec["role"] == "gpu-prod-karpenter-node"


def test_local_nvme_is_striped_where_the_instance_type_has_it():
    classes = objects(render_fixture("multi-pool"), NODECLASS)
    assert classes["gpu-h100"].inputs["spec"]["instanceStorePolicy"] == "RAID0"
    assert "instanceStorePolicy" not in classes["cpu"].inputs["spec"]


def test_bottlerocket_gets_an_encrypted_os_volume_and_a_sized_data_volume():
    mappings = objects(render_fixture("multi-pool"), NODECLASS)["gpu-l40s"].inputs["spec"]["blockDeviceMappings"]
    assert [m["deviceName"] for m in mappings] == ["/dev/xvda", "/dev/xvdb"]
    assert mappings[1]["ebs"]["volumeSize"] == "200Gi"


def test_bottlerocket_time_slices_in_its_own_device_plugin_as_plain_nvidia_gpu():
    # Bottlerocket's device plugin reads settings.kubelet-device-plugins.nvidia; its time-slicing defaults
    # rename shares to nvidia.com/gpu.shared and refuse requests above one
    # (bottlerocket-os/bottlerocket-core-kit packages/nvidia-k8s-device-plugin/nvidia-k8s-device-plugin-conf.in),
    # so both are turned off to advertise what config/advertised.py and the overlays say.
    spec = objects(render_fixture("single-pool"), NODECLASS)["gpu-l40s"].inputs["spec"]
    assert spec["amiSelectorTerms"] == [{"alias": "bottlerocket@v1.57.0"}]
    assert tomllib.loads(spec["userData"]) == {
        "settings": {
            "kubelet-device-plugins": {
                "nvidia": {
                    "device-sharing-strategy": "time-slicing",
                    "time-slicing": {"replicas": 4, "rename-by-default": False, "fail-requests-greater-than-one": False},
                }
            }
        }
    }


def test_node_classes_without_time_slicing_on_bottlerocket_carry_no_bottlerocket_settings():
    # AL2023 GPU classes carry only the container toolkit's settings (tests/test_attacks.py checks them).
    for recording in (render_fixture("multi-pool"), render_fixture("single-pool-dra")):
        for name, node_class in objects(recording, NODECLASS).items():
            assert "[settings." not in node_class.inputs["spec"].get("userData", ""), name


def test_mig_on_bottlerocket_is_refused():
    doc = pool_doc(amiFamily="bottlerocket")
    assert problems_of(doc) == [
        "gpu-platform:nodePools[gpu-h100].sharing.mode: 'mig' on Bottlerocket pool gpu-h100 would not partition its GPUs: "
        "the GPU Operator's MIG manager does not run on Bottlerocket; use amiFamily al2023 or sharing timeSlicing"
    ]


def test_destroy_removes_pools_and_node_classes_before_karpenter_and_its_aws_resources(recording):
    """A resource is deleted before everything it depends on: so these edges order the destroy."""
    by_name = {short(r.urn): r for r in recording.resources}
    cluster = recording.outputs["clusterName"]
    must_outlive_pools = [
        f"{cluster}-karpenter-controller",  # the Helm release
        f"{cluster}-karpenter-crd",
        f"{cluster}-karpenter-interruption",
        f"{cluster}-karpenter-controller-role",
        f"{cluster}-karpenter-node-access",
    ]
    for karpenter_part in must_outlive_pools:
        assert karpenter_part in by_name, karpenter_part
    karpenter_urns = {by_name[n].urn for n in must_outlive_pools}
    for resource in [*recording.by_type(NODEPOOL), *recording.by_type(NODECLASS)]:
        missing = karpenter_urns - set(resource.dependencies)
        assert not missing, f"{short(resource.urn)} does not wait for {sorted(map(short, missing))}"


def test_a_node_pool_waits_for_its_node_class(recording):
    classes = {r.inputs["metadata"]["name"]: r.urn for r in recording.by_type(NODECLASS)}
    for pool in recording.by_type(NODEPOOL):
        assert classes[pool.inputs["metadata"]["name"]] in pool.dependencies


# --- time slices between tenants -----------------------------------------------------------------


def test_a_time_sliced_pool_shared_by_two_tenants_is_refused_unless_the_pool_allows_it():
    doc = fixture_document("single-pool")
    del doc[P][0]["sharing"]["shareBetweenTenants"]
    assert problems_of(doc) == [
        "gpu-platform:tenants[inference].gpu.l40s-on-demand: gives inference time slices of pool gpu-l40s, which ml-research "
        "holds quota on too; time slices share a GPU's memory and faults between tenants: give the pool to one "
        "tenant or set gpu-platform:nodePools[gpu-l40s].sharing.shareBetweenTenants: true"
    ]


def test_a_time_sliced_pool_of_one_tenant_needs_no_permission_to_share():
    doc = fixture_document("single-pool")
    del doc[P][0]["sharing"]["shareBetweenTenants"]
    doc["gpu-platform:tenants"] = doc["gpu-platform:tenants"][:1]
    doc["gpu-platform:tenants"][0]["gpu"]["l40s-on-demand"] = {"nominal": 12}
    assert [tenant.name for tenant in load(doc).tenants] == ["ml-research"]


def test_sharing_between_tenants_is_a_time_slicing_choice_only():
    doc = pool_doc(sharing={"mode": "mig", "migLayout": {"1g.10gb": 7}, "shareBetweenTenants": True})
    assert problems_of(doc) == [
        "gpu-platform:nodePools[gpu-h100].sharing: `shareBetweenTenants` applies to timeSlicing only, not mig"
    ]
