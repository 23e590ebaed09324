"""One source of truth for capacity: the platform never promises GPUs it does not have."""

from __future__ import annotations

import pytest

from config.labels import DEVICE_CLASS_RESOURCE_SUFFIX

from .builders import irregular_capacity_document, tenant_plan
from .conftest import fixture_document, load, problems_of

T = "gpu-platform:tenants"


def tenants(doc):
    return doc[T]


VIOLATIONS = [
    pytest.param(
        lambda d: tenants(d)[2]["gpu"]["h100-on-demand"].update(nominal=16),
        [
            "gpu-platform:tenants[data-science].gpu.h100-on-demand.nominal: 16 GPUs makes 40 promised on pool gpu-h100, which "
            "declares 32 GPUs: lower the quota or raise the pool's gpus"
        ],
        id="nominal-sum-exceeds-pool",
    ),
    pytest.param(
        lambda d: tenants(d)[0]["gpu"]["h100-on-demand"].update(borrowingLimit=20),
        [
            "gpu-platform:tenants[llm-training].gpu.h100-on-demand.borrowingLimit: 20 GPUs exceeds the 12 the rest of the cohort "
            "can lend on h100-on-demand (inference 4, data-science 8); lower it to 12"
        ],
        id="borrowing-beyond-what-others-lend",
    ),
    pytest.param(
        lambda d: tenants(d)[1]["gpu"]["h100-on-demand"].update(lendingLimit=9),
        [
            "gpu-platform:tenants[inference].gpu.h100-on-demand: lendingLimit 9 exceeds nominal 8: a tenant "
            "lends only what it has"
        ],
        id="lending-more-than-nominal",
    ),
    pytest.param(
        lambda d: tenants(d)[3]["gpu"].update({"h200-on-demand": {"nominal": 0, "borrowingLimit": 1}}),
        [
            "gpu-platform:tenants[experiments].gpu.h200-on-demand: no such flavor; did you mean h100-on-demand? "
            "(flavors: h100-on-demand, a100-spot, l40s-on-demand)"
        ],
        id="unknown-flavor",
    ),
    pytest.param(
        lambda d: tenants(d)[3].update(name="monitoring"),
        ["gpu-platform:tenants[monitoring].name: 'monitoring' is a namespace the platform or Kubernetes owns; pick another name"],
        id="platform-namespace",
    ),
    pytest.param(
        lambda d: tenants(d)[3].update(name="Team_A"),
        [
            "gpu-platform:tenants[Team_A].name: 'Team_A' is not a DNS label: lowercase letters, digits and '-', starting "
            "with a letter, at most 40 characters"
        ],
        id="not-a-dns-label",
    ),
    pytest.param(
        lambda d: tenants(d)[3].update(name="inference"),
        ["gpu-platform:tenants[3].name: 'inference' is already the name of gpu-platform:tenants[1]; tenant names must be unique"],
        id="duplicate-tenant",
    ),
    pytest.param(
        lambda d: tenants(d)[3].update(businessUnit="marketing"),
        [
            "gpu-platform:tenants[experiments].businessUnit: 'marketing' is not in "
            "gpu-platform:queueing.businessUnits (research, product)"
        ],
        id="unknown-business-unit",
    ),
    pytest.param(
        lambda d: tenants(d)[3].update(priority="urgent"),
        [
            "gpu-platform:tenants[experiments].priority: 'urgent' is not a tier of gpu-platform:queueing.priorities "
            "(production, standard, best-effort)"
        ],
        id="unknown-priority",
    ),
    pytest.param(
        lambda d: tenants(d)[3].update(admins=["arn:aws:iam::111122223333:role/PlatformAdmin"]),
        [
            "gpu-platform:tenants[experiments].admins[0]: 'arn:aws:iam::111122223333:role/PlatformAdmin' is a "
            "cluster admin already "
            "(gpu-platform:cluster.admins); EKS allows it one access entry: remove it here"
        ],
        id="cluster-admin-as-tenant-admin",
    ),
    pytest.param(
        lambda d: (
            d["gpu-platform:cluster"].update(creator="arn:aws:iam::111122223333:role/Deployer"),
            tenants(d)[3].update(viewers=["arn:aws:iam::111122223333:role/Deployer"]),
        ),
        [
            "gpu-platform:tenants[experiments].viewers[0]: 'arn:aws:iam::111122223333:role/Deployer' created the cluster "
            "(gpu-platform:cluster.creator) and holds EKS's own cluster-admin entry; EKS allows it one access entry: "
            "remove it here"
        ],
        id="cluster-creator-as-tenant-viewer",
    ),
]


@pytest.mark.parametrize("change, expected", VIOLATIONS)
def test_each_violation_is_one_line_with_the_key_the_numbers_and_the_fix(change, expected):
    doc = fixture_document("multi-pool")
    change(doc)
    assert problems_of(doc) == expected


def test_all_violations_are_reported_together():
    doc = fixture_document("multi-pool")
    tenants(doc)[2]["gpu"]["h100-on-demand"]["nominal"] = 16
    tenants(doc)[3]["priority"] = "urgent"
    tenants(doc)[0]["gpu"]["a100-spot"]["borrowingLimit"] = 9
    assert [line.split(":", 2)[1] for line in problems_of(doc)] == [
        "tenants[experiments].priority",
        "tenants[data-science].gpu.h100-on-demand.nominal",
        "tenants[llm-training].gpu.a100-spot.borrowingLimit",
    ]


def test_time_sliced_quotas_count_in_slices():
    doc = fixture_document("single-pool")
    tenants(doc)[1]["gpu"]["l40s-on-demand"]["nominal"] = 20
    assert problems_of(doc) == [
        "gpu-platform:tenants[inference].gpu.l40s-on-demand.nominal: 20 GPU slices (5 GPUs at 4 slices each) makes 36 "
        "promised on pool gpu-l40s, which declares 32 GPU slices (8 GPUs at 4 slices each): lower the quota or raise the "
        "pool's gpus"
    ]


def test_split_capacity_flavors_select_their_capacity_type():
    flavors = {f.name: f for f in load(fixture_document("single-pool")).flavors}
    assert flavors["l40s-spot"].node_labels == {"gpu-platform/node-pool": "gpu-l40s", "karpenter.sh/capacity-type": "spot"}
    assert flavors["l40s-on-demand"].node_labels == {
        "gpu-platform/node-pool": "gpu-l40s",
        "karpenter.sh/capacity-type": "on-demand",
    }


def test_a_single_capacity_pool_has_one_flavor_named_for_gpu_and_capacity():
    names = [f.name for f in load(fixture_document("multi-pool")).flavors]
    assert names == ["h100-on-demand", "a100-spot", "l40s-on-demand"]


def test_resource_quota_is_never_below_what_kueue_can_admit(fixture_stack):
    for tenant in load(fixture_document(fixture_stack)).tenants:
        hard = tenant.resource_quota
        for quota in tenant.quotas:
            for resource, (nominal, borrowing, _) in quota.resources().items():
                if resource in ("cpu", "memory"):
                    continue
                # Devices of a DRA DeviceClass are counted under the class's name, without `requests.`
                # (kubernetes pkg/quota/v1/evaluator/core/resource_claims.go, V1ResourceByDeviceClass).
                key = resource if resource.endswith(DEVICE_CLASS_RESOURCE_SUFFIX) else f"requests.{resource}"
                assert int(hard[key]) >= nominal + borrowing, (tenant.name, resource)


def test_mig_quotas_become_each_profile_per_gpu():
    llm = load(fixture_document("multi-pool")).tenants[0]
    assert llm.name == "llm-training"
    # 16 nominal + 12 borrowable H100s, each cut into 2x 1g.10gb, 1x 2g.20gb, 1x 3g.40gb.
    assert llm.resource_quota["requests.nvidia.com/mig-1g.10gb"] == "56"
    assert llm.resource_quota["requests.nvidia.com/mig-3g.40gb"] == "28"
    # plus 8 nominal + 8 borrowable whole A100s.
    assert llm.resource_quota["requests.nvidia.com/gpu"] == "16"


def test_a_best_effort_tenant_is_guaranteed_nothing_but_may_borrow():
    experiments = load(fixture_document("multi-pool")).tenants[3]
    assert experiments.priority_value == 100
    assert all(q.quota.nominal == 0 for q in experiments.quotas)
    assert experiments.resource_quota["requests.nvidia.com/gpu"] == "8"


def test_extended_resources_take_only_the_requests_prefix():
    for tenant in load(fixture_document("multi-pool")).tenants:
        assert not [key for key in tenant.resource_quota if key.startswith("limits.nvidia.com")]
        assert not [key for key in tenant.resource_quota if key.startswith("nvidia.com")]


def test_business_units_and_the_root_cohort_have_distinct_names():
    doc = fixture_document("multi-pool")
    doc["gpu-platform:queueing"]["businessUnits"] = ["research", "acme-ai"]
    assert problems_of(doc) == [
        "gpu-platform:queueing: cohort 'acme-ai' is named twice (the root and business units are all Cohorts)"
    ]


@pytest.mark.parametrize(
    ("tenant", "usd_per_hour"),
    [
        # tests/builders.py irregular_capacity_document, us-east-1: an H100 $6.88 (p5.48xlarge / 8), an A100
        # $2.74470525 (p4d.24xlarge / 8), an L40S $2.62316 (g6e.12xlarge / 4, the pool's cheapest) per hour.
        ("llm-training", 16 * 6.88 + 8 * 2.74470525),  # 132.037642
        ("inference", 8 * 6.88 + 21 / 3 * 2.62316),  # 21 slices at 3 a GPU: 73.40212
        ("data-science", 8 * 6.88 + (8 + 4) * 2.74470525 + 9 / 3 * 2.62316),  # both A100 flavors: 95.845943
        ("experiments", 0.0),  # borrows only
    ],
)
def test_a_tenants_guaranteed_cost_is_its_nominal_gpus_at_the_cheapest_price_per_gpu(tenant, usd_per_hour):
    config = load(irregular_capacity_document())
    assert tenant_plan(config, tenant).guaranteed_hourly_cost == pytest.approx(usd_per_hour, abs=1e-9)
