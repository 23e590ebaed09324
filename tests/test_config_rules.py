"""What the loaded config carries beyond quotas: the network plan, chart pins, tags, and the rules
across sections. Expected values are written out from the fixture stacks.
"""

from __future__ import annotations

import pytest

from config import ConfigError
from config.versions import ChartPin

from .conftest import fixture_document, load, problems_of

# --- network ---------------------------------------------------------------------------------------


def test_the_network_plan_keeps_the_vpc_cidr_and_takes_the_regions_first_zones():
    multi = load(fixture_document("multi-pool")).network
    assert (multi.vpc_cidr, multi.availability_zones, multi.nat_per_az) == (
        "10.30.0.0/16", ("us-east-1a", "us-east-1b", "us-east-1c"), True,
    )
    single = load(fixture_document("single-pool")).network
    assert (single.vpc_cidr, single.availability_zones, single.nat_per_az) == (
        "10.20.0.0/16", ("us-west-2a", "us-west-2b"), False,
    )


# --- chart pins ------------------------------------------------------------------------------------

# Where each chart is published (each project's install docs) and the version config/versions.py pins.
PINNED = {
    "karpenter-crd": ChartPin("oci://public.ecr.aws/karpenter/karpenter-crd", "1.14.1"),
    "karpenter": ChartPin("oci://public.ecr.aws/karpenter/karpenter", "1.14.1"),
    "gpu-operator": ChartPin("gpu-operator", "v26.7.0", "https://helm.ngc.nvidia.com/nvidia"),
    "kueue": ChartPin("oci://registry.k8s.io/kueue/charts/kueue", "0.19.2"),
    "kube-prometheus-stack": ChartPin("kube-prometheus-stack", "88.5.3", "https://prometheus-community.github.io/helm-charts"),
    "keda": ChartPin("keda", "2.20.2", "https://kedacore.github.io/charts"),
}


def test_a_stack_overrides_one_charts_version_and_keeps_its_source():
    document = fixture_document("single-pool")
    document["gpu-platform:versions"] = {"charts": {"karpenter": "1.14.2", "keda": "2.20.3"}}
    charts = load(document).charts
    for name, pin in PINNED.items():
        expected = {"karpenter": "1.14.2", "keda": "2.20.3"}.get(name, pin.version)
        assert charts[name] == ChartPin(pin.chart, expected, pin.repository), name


@pytest.mark.parametrize(
    "charts, lines",
    [
        ({"karpenter": "latest"}, ["charts.karpenter: 'latest' is not an exact release; pin one such as 1.14.1"]),
        (
            {"cert-manager": "1.16.0", "karpentr": "1.14.2", "keda": "2.x"},
            [
                "charts.cert-manager: 'cert-manager' is not a chart the platform installs (charts: ",
                "charts.karpentr: 'karpentr' is not a chart the platform installs; did you mean karpenter? (charts: ",
                "charts.keda: '2.x' is not an exact release; pin one such as 1.14.1",
            ],
        ),
    ],
)
def test_a_chart_override_must_be_a_known_chart_at_an_exact_version_one_line_per_key(charts, lines):
    document = fixture_document("single-pool")
    document["gpu-platform:versions"] = {"charts": charts}
    problems = problems_of(document)
    assert len(problems) == len(lines)
    for problem, line in zip(problems, lines, strict=True):
        assert problem.startswith(f"gpu-platform:versions.{line}"), problem


# --- tags ------------------------------------------------------------------------------------------


def test_every_aws_resource_is_tagged_with_the_stacks_tags_the_cluster_and_the_manager():
    assert load(fixture_document("multi-pool")).tags == {
        "environment": "prod",
        "cost-center": "ml-platform",
        "gpu-platform/cluster": "gpu-prod",
        "managed-by": "pulumi",
    }


# --- tenants across sections -------------------------------------------------------------------------


def test_a_business_unit_needs_declared_business_units():
    document = fixture_document("single-pool")
    document["gpu-platform:tenants"][0]["businessUnit"] = "research"
    assert problems_of(document) == [
        "gpu-platform:tenants[ml-research].businessUnit: 'research' is not in gpu-platform:queueing.businessUnits (none declared)"
    ]


def test_every_unknown_flavor_of_a_tenant_is_reported():
    document = fixture_document("single-pool")
    document["gpu-platform:tenants"][0]["gpu"].update({"h200": {"nominal": 1}, "a10g": {"nominal": 1}})
    assert problems_of(document) == [
        "gpu-platform:tenants[ml-research].gpu.h200: no such flavor (flavors: l40s-on-demand, l40s-spot)",
        "gpu-platform:tenants[ml-research].gpu.a10g: no such flavor (flavors: l40s-on-demand, l40s-spot)",
    ]


def test_without_pools_a_gpu_quota_says_to_declare_one():
    document = fixture_document("single-pool")
    document["gpu-platform:nodePools"] = []
    document["gpu-platform:queueing"]["flavorPerCapacityType"] = []
    for entry in document["gpu-platform:tenants"]:
        entry["gpu"], entry["inference"] = {}, []
    document["gpu-platform:tenants"][1]["gpu"] = {"l40s": {"nominal": 1}}
    assert problems_of(document) == [
        "gpu-platform:tenants[inference].gpu.l40s: no such flavor (flavors: none; declare gpu-platform:nodePools)"
    ]


@pytest.mark.parametrize("name", ["kube-flannel", "kube-anything"])
def test_no_tenant_may_take_a_kube_prefixed_namespace(name):
    document = fixture_document("single-pool")
    document["gpu-platform:tenants"][0]["name"] = name
    assert problems_of(document) == [
        f"gpu-platform:tenants[{name}].name: '{name}' is a namespace the platform or Kubernetes owns; pick another name"
    ]


# inference: tenants[1] of single-pool serves `chat` on l40s-on-demand (nominal 12 + borrowing 4 slices).
INFERENCE_PROBLEMS = [
    pytest.param(
        {"maxReplicas": 17},
        "gpu-platform:tenants[inference].inference[chat].maxReplicas: 17 replicas x 1 GPU slices = 17 GPU slices "
        "(4.25 GPUs at 4 slices each) exceeds the 16 tenant "
        "inference can get on l40s-on-demand (nominal 12 + borrowing 4); lower maxReplicas to 16",
        id="beyond-nominal-plus-borrowing",
    ),
    pytest.param(
        {"gpusPerReplica": 3, "maxReplicas": 6},
        "gpu-platform:tenants[inference].inference[chat].maxReplicas: 6 replicas x 3 GPU slices = 18 GPU slices "
        "(4.5 GPUs at 4 slices each) exceeds the 16 tenant "
        "inference can get on l40s-on-demand (nominal 12 + borrowing 4); lower maxReplicas to 5",
        id="replicas-of-several-gpus",
    ),
    pytest.param(
        {"flavor": "l40s-spot"},
        "gpu-platform:tenants[inference].inference[chat].flavor: 'l40s-spot' is not a flavor tenant inference has quota on "
        "(l40s-on-demand), so its pods would never be admitted",
        id="flavor-without-quota",
    ),
]


@pytest.mark.parametrize("change, problem", INFERENCE_PROBLEMS)
def test_an_inference_deployment_at_its_most_must_fit_what_kueue_admits_for_its_tenant(change, problem):
    document = fixture_document("single-pool")
    document["gpu-platform:tenants"][1]["inference"][0].update(change)
    assert problems_of(document) == [problem]


def test_an_inference_deployment_exactly_at_nominal_plus_borrowing_is_accepted():
    document = fixture_document("single-pool")
    document["gpu-platform:tenants"][1]["inference"][0].update(gpusPerReplica=2, maxReplicas=8)
    assert [d.max_replicas for d in load(document).tenants[1].config.inference] == [8]


def test_inference_cannot_run_on_mig_devices():
    document = fixture_document("multi-pool")
    document["gpu-platform:tenants"][0]["inference"][0]["flavor"] = "h100-on-demand"
    assert problems_of(document) == [
        "gpu-platform:tenants[llm-training].inference[embeddings].flavor: 'h100-on-demand' does not hand out "
        "nvidia.com/gpu (MIG devices or "
        "DRA claims); run inference deployments on a whole-GPU or time-sliced flavor"
    ]


def test_no_tenant_may_take_the_cpu_flavors_name():
    document = fixture_document("single-pool")
    document["gpu-platform:tenants"][0]["name"] = "cpu"
    assert problems_of(document) == ["gpu-platform:tenants[cpu].name: 'cpu' is the name of the CPU flavor; pick another name"]


ADMIN = "arn:aws:iam::111122223333:role/MLResearchAdmin"


@pytest.mark.parametrize(
    "change, problem",
    [
        (
            {"admins": [ADMIN, ADMIN]},
            f"gpu-platform:tenants[ml-research].admins[1]: '{ADMIN}' is listed twice",
        ),
        (
            {"viewers": [ADMIN]},
            f"gpu-platform:tenants[ml-research].viewers[0]: '{ADMIN}' is an admin of this tenant already",
        ),
    ],
    ids=["admin-twice", "viewer-and-admin"],
)
def test_a_principal_has_one_role_in_a_tenant(change, problem):
    document = fixture_document("single-pool")
    document["gpu-platform:tenants"][0].update(change)
    assert problems_of(document) == [problem]


def test_borrowing_where_no_other_tenant_has_quota_says_so():
    document = fixture_document("single-pool")
    document["gpu-platform:tenants"][0]["gpu"]["l40s-spot"]["borrowingLimit"] = 2
    assert problems_of(document) == [
        "gpu-platform:tenants[ml-research].gpu.l40s-spot.borrowingLimit: 2 GPU slices (0.5 GPUs at 4 slices "
        "each) exceeds the 0 the rest of the cohort can "
        "lend on l40s-spot (no other tenant has quota there); lower it to 0"
    ]


def test_a_workload_class_takes_its_preset_unless_the_stack_overrides_it():
    document = fixture_document("single-pool")
    batch = {"scaleUpUtilization": 90, "scaleDownUtilization": 50, "cooldownSeconds": 120}
    document["gpu-platform:autoscaling"] = {"classes": {"batch": batch}}
    autoscaling = load(document).autoscaling
    presets = {name: autoscaling.preset(name) for name in ("realtime", "batch", "interactive")}
    # The documented presets: realtime 70/30/60 s, interactive 60/25/30 s; batch as overridden.
    assert {name: (p.scale_up_utilization, p.scale_down_utilization, p.cooldown_seconds) for name, p in presets.items()} == {
        "realtime": (70, 30, 60),
        "batch": (90, 50, 120),
        "interactive": (60, 25, 30),
    }


def test_an_inference_deployment_names_the_flavors_its_tenant_could_use_instead():
    document = fixture_document("multi-pool")
    document["gpu-platform:tenants"][2]["inference"][0]["flavor"] = "h200-on-demand"
    document["gpu-platform:tenants"].append(
        {"name": "web", "inference": [{"name": "chat", "flavor": "l40s-on-demand", "class": "realtime", "maxReplicas": 1}]}
    )
    assert problems_of(document) == [
        "gpu-platform:tenants[data-science].inference[notebook-assist].flavor: 'h200-on-demand' is not a "
        "flavor tenant data-science has quota on "
        "(h100-on-demand, a100-spot, l40s-on-demand), so its pods would never be admitted; did you mean h100-on-demand?",
        "gpu-platform:tenants[web].inference[chat].flavor: 'l40s-on-demand' is not a flavor tenant web has quota on (none), "
        "so its pods would never be admitted",
    ]


def test_an_inference_deployment_cannot_use_gpus_handed_out_through_dra():
    document = fixture_document("single-pool-dra")
    research, inference = document["gpu-platform:tenants"]
    research["gpu"]["l4-dra-on-demand"] = inference["gpu"]["l4-dra-on-demand"] = {"nominal": 1}
    inference["inference"][0]["flavor"] = "l4-dra-on-demand"
    assert problems_of(document) == [
        "gpu-platform:tenants[inference].inference[chat].flavor: 'l4-dra-on-demand' does not hand out "
        "nvidia.com/gpu (MIG devices "
        "or DRA claims); run inference deployments on a whole-GPU or time-sliced flavor"
    ]


def test_every_inference_deployment_of_a_tenant_is_checked():
    document = fixture_document("multi-pool")
    # llm-training has a100-spot: nominal 8 + borrowing 8.
    document["gpu-platform:tenants"][0]["inference"] = [
        {"name": "a", "flavor": "l40s-on-demand", "class": "batch", "maxReplicas": 1},
        {"name": "b", "flavor": "h100-on-demand", "class": "batch", "maxReplicas": 1},
        {"name": "c", "flavor": "a100-spot", "class": "batch", "maxReplicas": 17},
    ]
    assert [line.split(": ", 1)[0] for line in problems_of(document)] == [
        "gpu-platform:tenants[llm-training].inference[a].flavor",
        "gpu-platform:tenants[llm-training].inference[b].flavor",
        "gpu-platform:tenants[llm-training].inference[c].maxReplicas",
    ]


# --- flavors ---------------------------------------------------------------------------------------


def test_a_split_flavor_must_name_a_pool_that_runs_on_both_capacity_types():
    document = fixture_document("multi-pool")
    document["gpu-platform:queueing"]["flavorPerCapacityType"] = ["gpu-h200", "gpu-h100"]
    assert problems_of(document) == [
        "gpu-platform:queueing.flavorPerCapacityType[0]: 'gpu-h200' is not a pool in gpu-platform:nodePools; did you mean "
        "gpu-h100? (pools: gpu-h100, gpu-a100, gpu-l40s)",
        "gpu-platform:queueing.flavorPerCapacityType[1]: pool gpu-h100 runs only on on-demand; nothing to split",
    ]


def test_a_split_flavor_without_any_pool_says_there_is_none():
    document = fixture_document("single-pool")
    document["gpu-platform:nodePools"] = []
    for entry in document["gpu-platform:tenants"]:
        entry["gpu"], entry["inference"] = {}, []
    assert problems_of(document) == [
        "gpu-platform:queueing.flavorPerCapacityType[0]: 'gpu-l40s' is not a pool in gpu-platform:nodePools (pools: none)"
    ]


def test_flavors_follow_the_pools_in_order_with_split_pools_in_place():
    document = fixture_document("single-pool")
    document["gpu-platform:nodePools"].insert(
        0, {"name": "gpu-l4", "instanceTypes": ["g6.xlarge"], "capacityTypes": ["on-demand"], "gpus": 2}
    )
    document["gpu-platform:nodePools"].append(
        {"name": "gpu-a10g", "instanceTypes": ["g5.xlarge"], "capacityTypes": ["spot", "on-demand"], "gpus": 2}
    )
    assert [(f.name, f.pool.name, f.capacity_type) for f in load(document).flavors] == [
        ("l4-on-demand", "gpu-l4", None),
        ("l40s-on-demand", "gpu-l40s", "on-demand"),
        ("l40s-spot", "gpu-l40s", "spot"),
        # Two capacity types, not split: one flavor named for the pool alone.
        ("a10g", "gpu-a10g", None),
    ]


# --- cluster -----------------------------------------------------------------------------------------


def test_desired_system_nodes_may_equal_the_maximum_but_not_exceed_it():
    document = fixture_document("single-pool")
    document["gpu-platform:cluster"]["systemNodes"].update(minSize=2, desiredSize=3, maxSize=3)
    assert load(document).cluster.system_nodes.desired_size == 3
    document["gpu-platform:cluster"]["systemNodes"].update(desiredSize=4)
    assert problems_of(document) == [
        "gpu-platform:cluster.systemNodes.desiredSize: 4 must lie between minSize (2) and maxSize (3)"
    ]


@pytest.mark.parametrize(
    "ami_type, instance_types",
    [
        ("AL2023_ARM_64_STANDARD", ["m7g.xlarge", "m6g.xlarge"]),
        ("BOTTLEROCKET_ARM_64", ["m7g.xlarge"]),
        ("BOTTLEROCKET_x86_64", ["m7i.xlarge"]),
    ],
)
def test_system_nodes_of_the_ami_types_architecture_are_accepted(ami_type, instance_types):
    document = fixture_document("single-pool")
    document["gpu-platform:cluster"]["systemNodes"].update(amiType=ami_type, instanceTypes=instance_types)
    assert load(document).cluster.system_nodes.instance_types == instance_types


@pytest.mark.parametrize(
    "ami_type, instance_type, problem",
    [
        ("AL2023_ARM_64_STANDARD", "m7i.large", "'m7i.large' is x86_64 but amiType AL2023_ARM_64_STANDARD is arm64"),
        ("AL2023_x86_64_STANDARD", "m7g.large", "'m7g.large' is arm64 but amiType AL2023_x86_64_STANDARD is x86_64"),
    ],
)
def test_system_nodes_of_another_architecture_are_refused(ami_type, instance_type, problem):
    document = fixture_document("single-pool")
    document["gpu-platform:cluster"]["systemNodes"].update(amiType=ami_type, instanceTypes=[instance_type])
    assert problems_of(document) == [
        f"gpu-platform:cluster.systemNodes.instanceTypes[0]: {problem}; pick instance types of one architecture"
    ]


def test_a_cluster_may_use_every_zone_of_its_region_and_no_more():
    # config/regions.py lists three zones for us-east-2.
    document = fixture_document("single-pool")
    document["aws:region"] = "us-east-2"
    document["gpu-platform:cluster"]["network"]["azCount"] = 3
    assert load(document).network.availability_zones == ("us-east-2a", "us-east-2b", "us-east-2c")
    document["gpu-platform:cluster"]["network"]["azCount"] = 4
    assert problems_of(document) == [
        "gpu-platform:cluster.network.azCount: 4 exceeds the 3 availability zones of us-east-2 (us-east-2a, us-east-2b, "
        "us-east-2c); use 2 to 3"
    ]


# --- DRA ---------------------------------------------------------------------------------------------


def test_dra_runs_on_kubernetes_1_34_itself():
    document = fixture_document("single-pool-dra")
    document["gpu-platform:cluster"]["kubernetesVersion"] = "1.34"
    assert load(document).gpu.dra.enabled is True


@pytest.mark.parametrize(
    "change, problem",
    [
        (
            {"amiFamily": "bottlerocket"},
            "'dra' on pool gpu-l4-dra: Bottlerocket runs its own device plugin; use amiFamily al2023",
        ),
        (
            {"sharing": {"mode": "timeSlicing", "replicas": 2}},
            "'dra' on pool gpu-l4-dra: the DRA driver time-slices a GPU only behind its alpha TimeSlicingSettings "
            "gate (off in v0.4.1), and only among pods sharing one named claim, which Kueue never admits; use "
            "sharing none or mig",
        ),
    ],
    ids=["bottlerocket", "time-slicing"],
)
def test_a_dra_pool_needs_al2023_and_no_time_slicing(change, problem):
    document = fixture_document("single-pool-dra")
    document["gpu-platform:nodePools"][1].update(change)
    assert problems_of(document) == [f"gpu-platform:nodePools[gpu-l4-dra].allocation: {problem}"]


def test_a_claim_template_is_declared_once_per_namespace():
    document = fixture_document("single-pool-dra")
    templates = document["gpu-platform:gpu"]["dra"]["claimTemplates"]
    templates += [dict(templates[0]), {**templates[0], "namespace": "inference"}]
    # Both tenants have quota on the DRA flavor, so Kueue admits pods using either template.
    research, inference = document["gpu-platform:tenants"]
    research["gpu"]["l4-dra-on-demand"] = inference["gpu"]["l4-dra-on-demand"] = {"nominal": 1}
    assert problems_of(document) == ["gpu-platform:gpu.dra.claimTemplates[1].name: ml-research/l4-gpu is declared twice"]


def test_an_x86_family_whose_name_starts_with_g_is_not_taken_for_graviton():
    # g5 is an x86_64 family: the 'g' that marks Graviton follows the generation digit (m7g, c8gd).
    document = fixture_document("single-pool")
    document["gpu-platform:cluster"]["systemNodes"]["instanceTypes"] = ["g5.2xlarge"]
    try:
        load(document)
        found: list[str] = []
    except ConfigError as error:
        found = error.problems
    assert not [line for line in found if "architecture" in line]


# --- pools -------------------------------------------------------------------------------------------


def test_a_pool_with_an_unknown_instance_type_is_not_checked_further():
    document = fixture_document("multi-pool")
    document["gpu-platform:nodePools"][0].update(instanceTypes=["p5.96xlarge", "p5.48xlarge"], gpus=4)
    [line] = problems_of(document)
    assert line.startswith("gpu-platform:nodePools[gpu-h100].instanceTypes[0]: 'p5.96xlarge' is not in the GPU catalog")


def test_a_pool_of_two_gpu_models_says_why_it_must_be_split():
    document = fixture_document("multi-pool")
    document["gpu-platform:nodePools"][1]["instanceTypes"] = ["p4d.24xlarge", "p5.48xlarge"]
    assert problems_of(document) == [
        "gpu-platform:nodePools[gpu-a100]: mixes GPU models A100-40GB, H100-80GB; a pool has one GPU model (its label, sharing "
        "layout and price depend on it): split it into one pool per model"
    ]


def test_a_pool_may_declare_exactly_one_nodes_gpus():
    document = fixture_document("multi-pool")
    document["gpu-platform:nodePools"].append({"name": "gpu-h200", "instanceTypes": ["p5en.48xlarge"], "gpus": 8})
    assert [p.gpu_limit for p in load(document).gpu_pools if p.name == "gpu-h200"] == [8]


def test_a_disruption_budget_lists_each_reason_once():
    document = fixture_document("multi-pool")
    budgets = document["gpu-platform:nodePools"][0]["disruption"]["budgets"] = [{"nodes": "1", "reasons": ["Empty", "Drifted"]}]
    assert load(document).gpu_pools[0].config.disruption.budgets[0].reasons == ["Empty", "Drifted"]
    budgets[0]["reasons"] = ["Empty", "Drifted", "Empty"]
    assert problems_of(document) == ["gpu-platform:nodePools[gpu-h100].disruption.budgets[0].reasons: lists a reason twice"]


def test_a_claim_for_a_mig_profile_names_the_profiles_dra_pools_have():
    document = fixture_document("single-pool-dra")
    document["gpu-platform:nodePools"].append(
        {
            "name": "gpu-h100-dra",
            "instanceTypes": ["p5.48xlarge"],
            "gpus": 8,
            "allocation": "dra",
            "sharing": {"mode": "mig", "migLayout": {"4g.40gb": 1, "3g.40gb": 1}},
        }
    )
    document["gpu-platform:tenants"][0]["gpu"]["h100-dra-on-demand"] = {"nominal": 8}
    templates = document["gpu-platform:gpu"]["dra"]["claimTemplates"]
    templates.append({"name": "h100-slice", "namespace": "ml-research", "migProfile": "1g.10gb"})
    # One line, naming the devices the MIG pools publish (config/claims.py).
    assert problems_of(document) == [
        "gpu-platform:gpu.dra.claimTemplates[h100-slice]: no DRA pool publishes a device of class mig.nvidia.com that "
        "matches migProfile (gpu-h100-dra: productName NVIDIA H100 80GB HBM3, architecture Hopper, "
        "cudaComputeCapability 9.0.0, profile 3g.40gb, memory 40.00Gi; gpu-h100-dra: productName NVIDIA H100 80GB "
        "HBM3, architecture Hopper, cudaComputeCapability 9.0.0, profile 4g.40gb, memory 40.00Gi); Kueue would hold "
        "its pods for ever (insufficient matching devices): loosen the selectors or add a DRA pool of a GPU that has them"
    ]


@pytest.mark.parametrize(
    "change",
    [{"instanceFamilies": ["p5"]}, {"instanceTypes": []}],
    ids=["both", "neither"],
)
def test_a_pool_names_its_instances_one_way(change):
    document = fixture_document("multi-pool")
    document["gpu-platform:nodePools"][0].update(change)
    assert problems_of(document) == ["gpu-platform:nodePools[gpu-h100]: give exactly one of instanceTypes or instanceFamilies"]


def test_an_unknown_instance_type_or_family_lists_the_catalogs():
    document = fixture_document("multi-pool")
    document["gpu-platform:nodePools"][1]["instanceTypes"] = ["p4.24xlarge"]
    document["gpu-platform:nodePools"][2].update(instanceTypes=[], instanceFamilies=["g7e"])
    [types, families] = problems_of(document)
    assert types.startswith(
        "gpu-platform:nodePools[gpu-a100].instanceTypes[0]: 'p4.24xlarge' is not in the GPU catalog (config/catalog.py); "
        "known: g5.xlarge, g5.2xlarge, g5.4xlarge, "
    )
    assert families == (
        "gpu-platform:nodePools[gpu-l40s].instanceFamilies[0]: 'g7e' is not a GPU family in the catalog (config/catalog.py); "
        "known: g5, g6, g6e, p4d, p4de, p5, p5e, p5en"
    )


def test_a_pool_names_each_instance_type_once():
    document = fixture_document("multi-pool")
    document["gpu-platform:nodePools"][2]["instanceTypes"] = ["g6e.12xlarge", "g6e.48xlarge", "g6e.12xlarge", "g6e.48xlarge"]
    assert problems_of(document) == ["gpu-platform:nodePools[gpu-l40s]: names g6e.12xlarge, g6e.48xlarge more than once"]


def test_the_single_mig_strategy_refuses_even_two_profiles():
    document = fixture_document("multi-pool")
    document["gpu-platform:gpu"]["migStrategy"] = "single"
    document["gpu-platform:nodePools"][0]["sharing"]["migLayout"] = {"4g.40gb": 1, "3g.40gb": 1}
    [line] = problems_of(document)
    assert line.endswith("it has 4g.40gb, 3g.40gb: use one profile or migStrategy 'mixed'")


def test_every_mistake_of_a_mig_layout_is_reported():
    document = fixture_document("multi-pool")
    document["gpu-platform:nodePools"][0]["sharing"]["migLayout"] = {"9g.90gb": 1, "1g.10gb": 8}
    assert [line.split(": ", 1)[0] for line in problems_of(document)] == [
        "gpu-platform:nodePools[gpu-h100].sharing.migLayout.9g.90gb",
        "gpu-platform:nodePools[gpu-h100].sharing.migLayout.1g.10gb",
    ]


# --- the config as a whole ---------------------------------------------------------------------------


def test_a_public_access_cidr_is_a_network_address():
    document = fixture_document("single-pool")
    document["gpu-platform:cluster"]["endpoint"]["publicAccessCidrs"] = ["203.0.113.7/24"]
    assert problems_of(document) == [
        "gpu-platform:cluster.endpoint.publicAccessCidrs[0]: '203.0.113.7/24' is not an IPv4 network CIDR such as "
        "203.0.113.0/24 (203.0.113.7/24 has host bits set)"
    ]


def test_a_key_under_the_projects_namespace_that_names_no_section_is_refused():
    document = fixture_document("single-pool")
    document["gpu-platform:cluster:name"] = "gpu-dev"
    [line] = problems_of(document)
    assert line.startswith("gpu-platform:cluster:name: unknown key; did you mean gpu-platform:cluster? known keys: ")


def test_the_cluster_section_is_required():
    document = fixture_document("single-pool")
    del document["gpu-platform:cluster"]
    assert problems_of(document) == [
        "gpu-platform:cluster: required but not set; see the config reference in docs/configuration.md"
    ]


def test_every_section_is_checked_even_when_one_is_missing():
    document = fixture_document("single-pool")
    del document["gpu-platform:cluster"]
    document["gpu-platform:monitoring"]["replicas"] = 5
    assert problems_of(document) == [
        "gpu-platform:cluster: required but not set; see the config reference in docs/configuration.md",
        "gpu-platform:monitoring.replicas: 5 is out of range; must be <= 3",
    ]


def test_a_loaded_config_carries_every_section_it_was_given():
    config = load(fixture_document("multi-pool"))
    assert config.region == "us-east-1"
    assert (config.cpu_pool.cpu_limit, config.cpu_pool.memory_limit_gib) == (512, 2048)
    assert config.gpu.mig_strategy == "mixed"
    assert (config.queueing.cohort, config.queueing.business_units) == ("acme-ai", ["research", "product"])
    assert (config.monitoring.retention, config.monitoring.storage_gib, config.monitoring.replicas) == ("30d", 500, 2)
    assert config.autoscaling.fallback_replicas == 2
    assert (config.versions.charts, config.versions.addons) == ({}, {})


def test_structured_config_is_json_text_even_with_leading_whitespace():
    from config import load_platform_config
    from offline.stack import stack_config_from_mapping

    values = stack_config_from_mapping("test", fixture_document("single-pool")).values
    values["gpu-platform:cluster"] = "\n  " + values["gpu-platform:cluster"]
    assert load_platform_config(values).cluster.name == "gpu-dev"


def test_a_latest_ami_is_refused_only_on_protected_stacks():
    document = fixture_document("single-pool")
    document["gpu-platform:nodePools"][0]["amiVersion"] = "latest"
    assert load(document).gpu_pools[0].config.ami_version == "latest"
    # A cluster section that does not validate counts as protected: the pool is still checked.
    document["gpu-platform:cluster"]["name"] = "GPU_dev"
    assert [line.split(": ", 1)[0] for line in problems_of(document)] == [
        "gpu-platform:cluster.name",
        "gpu-platform:nodePools[gpu-l40s].amiVersion",
    ]


def test_a_system_node_instance_type_is_an_ec2_type_name():
    document = fixture_document("single-pool")
    document["gpu-platform:cluster"]["systemNodes"]["instanceTypes"] = ["m7i"]
    assert problems_of(document) == [
        "gpu-platform:cluster.systemNodes.instanceTypes[0]: 'm7i' is not an EC2 instance type such as 'm7i.xlarge'"
    ]


@pytest.mark.parametrize("tenants, listed", [(None, "ml-research, inference"), ([], "no tenants")], ids=["tenants", "none"])
def test_a_claim_template_lives_in_a_tenants_namespace(tenants, listed):
    document = fixture_document("single-pool-dra")
    document["gpu-platform:gpu"]["dra"]["claimTemplates"][0]["namespace"] = "research"
    if tenants is not None:
        document["gpu-platform:tenants"] = tenants
    assert problems_of(document) == [
        f"gpu-platform:gpu.dra.claimTemplates[l4-gpu].namespace: 'research' is not a tenant's namespace ({listed})"
    ]


# --- who administers the cluster ---------------------------------------------------------------------

CREATOR = "arn:aws:iam::111122223333:role/PlatformAdmin"
DEPLOYER = "arn:aws:iam::111122223333:role/PlatformDeploy"


def test_the_bootstrap_admin_is_the_creator_or_the_caller_creating_the_cluster():
    cluster = load(fixture_document("single-pool")).cluster
    assert cluster.bootstrap_admin(DEPLOYER, cluster_exists=False) == DEPLOYER
    document = fixture_document("single-pool")
    document["gpu-platform:cluster"]["creator"] = CREATOR
    named = load(document).cluster
    assert named.bootstrap_admin(CREATOR, cluster_exists=False) == CREATOR
    assert named.bootstrap_admin(DEPLOYER, cluster_exists=True) == CREATOR
    # EKS made the creator's entry: the stack declares every other admin's.
    assert named.managed_admins(CREATOR) == []
    assert named.managed_admins(DEPLOYER) == [CREATOR]


def test_the_bootstrap_admin_is_never_a_guess():
    cluster = load(fixture_document("single-pool")).cluster
    with pytest.raises(ConfigError) as unknown:
        cluster.bootstrap_admin(DEPLOYER, cluster_exists=True)
    assert unknown.value.problems == [
        "gpu-platform:cluster.creator: not set, and cluster gpu-dev exists already: set it to the IAM role or user whose "
        f"`pulumi up` created the cluster (if that was you: `pulumi config set --path gpu-platform:cluster.creator {DEPLOYER}`)"
    ]
    document = fixture_document("single-pool")
    document["gpu-platform:cluster"]["creator"] = CREATOR
    with pytest.raises(ConfigError) as other:
        load(document).cluster.bootstrap_admin(DEPLOYER, cluster_exists=False)
    assert other.value.problems == [
        f"gpu-platform:cluster.creator: '{CREATOR}' is not who creates cluster gpu-dev: `pulumi up` runs as "
        f"'{DEPLOYER}', and EKS makes that principal the bootstrap admin; run the first `pulumi up` as the creator or "
        "set creator to the caller"
    ]


# --- how long deploys wait -----------------------------------------------------------------------------


@pytest.mark.parametrize("duration, seconds", [("45s", 45), ("10m", 600), ("1h30m", 5400), ("2h0m30s", 7230)])
def test_a_karpenter_duration_in_seconds(duration, seconds):
    from config.node_pools import duration_seconds

    assert duration_seconds(duration) == seconds


def test_destroy_waits_for_a_pools_grace_period_rounded_up_plus_fifteen_minutes():
    from config.node_pools import delete_timeout

    assert [delete_timeout(grace) for grace in ("1h", "4h", "90s")] == ["75m", "255m", "17m"]
    document = fixture_document("single-pool")
    document["gpu-platform:cpuPool"]["terminationGracePeriod"] = "30m"
    assert load(document).cpu_pool.delete_timeout == "45m"


@pytest.mark.parametrize(
    "chart, seconds", [("karpenter-crd", 300), ("karpenter", 600), ("kueue", 600), ("gpu-operator", 600), ("keda", 600)]
)
def test_each_release_installs_atomically_within_its_timeout(chart, seconds):
    from config.versions import HelmInstall, helm_install

    pin = load(fixture_document("single-pool")).charts[chart]
    assert helm_install(pin) == HelmInstall(timeout_seconds=seconds, atomic=True, cleanup_on_fail=True)


# --- names two objects would share: refused before anything is declared ------------------------------


def _pool_and_its_twin(document) -> None:
    """`gpu-h100` and `h100`, each on on-demand only: both would be flavor `h100-on-demand`."""
    pools = document["gpu-platform:nodePools"]
    pools.append({**pools[0], "name": "h100"})


def _tenant_and_deployment_twins(document) -> None:
    """Tenant `inference` with deployment `b-chat` and tenant `inference-b` with deployment `chat`."""
    tenants = document["gpu-platform:tenants"]
    owner = tenants[1]
    twin = {**owner, "name": "inference-b", "admins": [], "viewers": [], "inference": [dict(owner["inference"][0])]}
    owner["inference"][0]["name"] = "b-chat"
    tenants.append(twin)


COLLISIONS = [
    pytest.param(
        "multi-pool",
        lambda d: d["gpu-platform:nodePools"][2].update(name="cpu"),
        "gpu-platform:nodePools[cpu].name: 'cpu' is the general CPU pool's NodePool and EC2NodeClass name; pick "
        "another, e.g. 'gpu-cpu'",
        id="pool-named-cpu",
    ),
    pytest.param(
        "multi-pool",
        _pool_and_its_twin,
        "gpu-platform:nodePools[h100].name: 'h100' makes flavor h100-on-demand, which pool gpu-h100 makes too (a flavor "
        "is the pool's name without its 'gpu-' prefix, then '-<capacity type>' when the pool has one capacity type or "
        "is listed in queueing.flavorPerCapacityType (one flavor per type), else nothing); rename one of the pools",
        id="two-pools-one-flavor",
    ),
    pytest.param(
        "single-pool",
        lambda d: d["gpu-platform:nodePools"][0].update(name="gpu-cpu")
        or d["gpu-platform:queueing"].update(flavorPerCapacityType=[])
        or [t.update(gpu={}, inference=[]) for t in d["gpu-platform:tenants"]],
        "gpu-platform:nodePools[gpu-cpu].name: 'gpu-cpu' makes flavor 'cpu', the CPU pool's flavor (a flavor is the "
        "pool's name without its 'gpu-' prefix, then '-<capacity type>' when the pool has one capacity type or is "
        "listed in queueing.flavorPerCapacityType (one flavor per type), else nothing); rename the pool",
        id="pool-flavor-named-cpu",
    ),
    pytest.param(
        "single-pool",
        _tenant_and_deployment_twins,
        "gpu-platform:tenants[inference-b].inference[chat].name: tenant inference-b's deployment chat and tenant "
        "inference's deployment b-chat both name their resources inference-b-chat-*: rename one of the deployments",
        id="tenant-and-deployment-names",
    ),
    pytest.param(
        "single-pool",
        lambda d: d["gpu-platform:tenants"][0].update(viewers=["arn:aws:iam::111122223333:role/Platform_Admin"])
        or d["gpu-platform:cluster"].update(admins=["arn:aws:iam::111122223333:role/Platform-Admin"]),
        "gpu-platform:tenants[ml-research].viewers[0]: 'arn:aws:iam::111122223333:role/Platform_Admin' and "
        "'arn:aws:iam::111122223333:role/Platform-Admin' differ only in case or punctuation, and both would name their "
        "EKS access entry 111122223333-role-platform-admin: use one of them",
        id="principals-one-access-entry",
    ),
    pytest.param(
        "single-pool-dra",
        lambda d: d["gpu-platform:tenants"][0].update(name="dra-driver-nvidia-gpu")
        or d["gpu-platform:gpu"]["dra"]["claimTemplates"][0].update(namespace="dra-driver-nvidia-gpu"),
        "gpu-platform:tenants[dra-driver-nvidia-gpu].name: 'dra-driver-nvidia-gpu' is a namespace the platform or "
        "Kubernetes owns; pick another name",
        id="tenant-named-like-the-dra-driver-namespace",
    ),
]


@pytest.mark.parametrize(("fixture", "change", "expected"), COLLISIONS)
def test_a_name_two_objects_would_share_is_refused(fixture, change, expected):
    document = fixture_document(fixture)
    change(document)
    assert expected in problems_of(document)


def test_independent_mistakes_in_the_cluster_and_two_tenants_are_reported_in_one_run():
    document = fixture_document("multi-pool")
    document["gpu-platform:cluster"]["systemNodes"]["minSize"] = 0
    tenants = document["gpu-platform:tenants"]
    tenants[3]["cpu"] = "lots"
    tenants[2]["gpu"]["h100-on-demand"]["nominal"] = 16
    assert [line.split(": ")[0] for line in problems_of(document)] == [
        "gpu-platform:cluster.systemNodes.minSize",
        "gpu-platform:tenants[experiments].cpu",
        "gpu-platform:tenants[data-science].gpu.h100-on-demand.nominal",
    ]


def test_an_optional_section_left_empty_is_empty_not_a_type_error():
    """`gpu-platform:tenants:` with every entry commented out is YAML null."""
    document = fixture_document("single-pool")
    document["gpu-platform:tenants"] = None
    assert load(document).tenants == ()
