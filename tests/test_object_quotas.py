"""Object-count quotas: every kind a tenant can create is bounded, so no tenant fills the shared etcd.

The kinds come from the rendered roles a tenant admin holds (the built-in `admin` with everything
aggregated into it), never from a list kept beside the quota, so a new aggregated role without a count
fails here.
"""

from __future__ import annotations

from typing import Any

import pytest

from models.kubernetes import rbac
from models.kubernetes.apis import served
from models.kubernetes.resourcequota import IGNORED_RESOURCES, exceeded, stored_object_bound

from .conftest import fixture_document, load, project_path, render_fixture
from .guards import bootstrap_roles
from .recorded import kubernetes_objects

WRITE = ("create", "*")


def _objects(fixture: str) -> list[dict[str, Any]]:
    return [r.inputs for r in kubernetes_objects(render_fixture(fixture))]


def creatable(objects: list[dict[str, Any]]) -> set[tuple[str, str]]:
    """(group, resource) a holder of `admin` may create, from the rules after aggregation."""
    roles = rbac.cluster_roles(bootstrap_roles(), objects)
    kinds = set()
    for rule in rbac.effective_rules(roles, "admin"):
        if not any(verb in WRITE for verb in rule["verbs"]):
            continue
        for group in rule.get("apiGroups", ()):
            for resource in rule.get("resources", ()):
                assert "*" not in (group, resource), f"a wildcard rule ({group}/{resource}) cannot be counted kind by kind"
                kinds.add((group, resource))
    return kinds


def _tenant_quota(objects: list[dict[str, Any]], namespace: str) -> dict[str, str]:
    [quota] = [o for o in objects if o["kind"] == "ResourceQuota" and o["metadata"]["namespace"] == namespace
               and not o["spec"].get("scopeSelector")]
    return quota["spec"]["hard"]


@pytest.mark.parametrize(("fixture", "tenant", "version"), [("multi-pool", "data-science", "1.35"),
                                                              ("single-pool-dra", "ml-research", "1.35"),
                                                              ("single-pool", "ml-research", "1.35")])
def test_every_kind_a_tenant_can_create_has_an_object_count(fixture, tenant, version):
    objects = _objects(fixture)
    hard = _tenant_quota(objects, tenant)
    uncounted = sorted(
        f"{group}/{resource}" for group, resource in creatable(objects)
        if "/" not in resource and (group, resource) not in IGNORED_RESOURCES and served(group, version)
        and stored_object_bound(hard, group, resource) is None
    )
    assert uncounted == []


def test_the_derivation_sees_the_kinds_the_platforms_own_roles_aggregate():
    """Not a vacuous pass: the rendered roles add the trainer's and External Secrets' kinds to the built-in ones."""
    kinds = creatable(_objects("multi-pool"))
    for kind in [("", "configmaps"), ("batch", "jobs"), ("rbac.authorization.k8s.io", "roles"),
                 ("trainer.kubeflow.org", "trainjobs"), ("jobset.x-k8s.io", "jobsets"),
                 ("external-secrets.io", "externalsecrets"), ("", "events"), ("extensions", "ingresses")]:
        assert kind in kinds, kind


# Default maxObjects 1000, maxPods 500: the ceiling of each kind and the key that carries it.
CEILINGS = [
    ("", "configmaps", "configmaps", 1000),
    ("", "serviceaccounts", "count/serviceaccounts", 1000),
    ("", "replicationcontrollers", "replicationcontrollers", 1000),
    ("", "pods", "count/pods", 10500),
    ("apps", "replicasets", "count/replicasets.apps", 11000),
    ("apps", "daemonsets", "count/daemonsets.apps", 1000),
    ("batch", "jobs", "count/jobs.batch", 10000),
    ("policy", "poddisruptionbudgets", "count/poddisruptionbudgets.policy", 1000),
    ("coordination.k8s.io", "leases", "count/leases.coordination.k8s.io", 1000),
    ("rbac.authorization.k8s.io", "rolebindings", "count/rolebindings.rbac.authorization.k8s.io", 1000),
    ("jobset.x-k8s.io", "jobsets", "count/jobsets.jobset.x-k8s.io", 10000),
    ("trainer.kubeflow.org", "trainjobs", "count/trainjobs.trainer.kubeflow.org", 10000),
    ("trainer.kubeflow.org", "trainingruntimes", "count/trainingruntimes.trainer.kubeflow.org", 1000),
    ("external-secrets.io", "externalsecrets", "count/externalsecrets.external-secrets.io", 1000),
]


@pytest.mark.parametrize(("group", "resource", "key", "ceiling"), CEILINGS, ids=[c[2] for c in CEILINGS])
def test_the_object_past_each_ceiling_is_refused_and_the_last_one_under_it_is_not(group, resource, key, ceiling):
    objects = _objects("multi-pool")
    assert exceeded(objects, "data-science", group, resource, {}, used={key: str(ceiling - 1)}) == []
    over = exceeded(objects, "data-science", group, resource, {}, used={key: str(ceiling)})
    assert [name.split("/", 1)[1] for name in over] == [key]


CLAIMS = {"count/resourceclaims.resource.k8s.io": "10000", "count/resourceclaimtemplates.resource.k8s.io": "1000"}


# Every fixture runs 1.35, which serves resource.k8s.io whether or not the stack has DRA pools.
@pytest.mark.parametrize(("fixture", "tenant", "counted"), [
    ("multi-pool", "data-science", {"count/externalsecrets.external-secrets.io": "1000", **CLAIMS}),  # secrets.enabled
    ("single-pool-dra", "ml-research", CLAIMS),
    ("single-pool", "ml-research", CLAIMS),
])
def test_kinds_an_option_installs_are_counted_only_where_the_stack_installs_them(fixture, tenant, counted):
    hard = _tenant_quota(_objects(fixture), tenant)
    optional = ("count/externalsecrets.external-secrets.io", "count/resourceclaims.resource.k8s.io",
                "count/resourceclaimtemplates.resource.k8s.io")
    assert {key: hard[key] for key in optional if key in hard} == counted


def test_live_pods_stay_bounded_by_the_pod_quota_below_the_stored_pod_count():
    hard = _tenant_quota(_objects("multi-pool"), "data-science")
    assert (hard["pods"], hard["count/pods"]) == ("500", "10500")


@pytest.mark.parametrize(
    ("hard", "group", "resource", "bound"),
    [
        ({"configmaps": "5"}, "", "configmaps", "configmaps"),
        ({"count/configmaps": "5"}, "", "configmaps", "count/configmaps"),
        ({"pods": "5"}, "", "pods", None),  # live pods only: finished ones pile up unbounded
        ({"count/pods": "5"}, "", "pods", "count/pods"),
        ({"count/jobs": "5"}, "batch", "jobs", None),  # the core form of a grouped kind counts nothing
        ({"count/jobs.batch": "5"}, "batch", "jobs", "count/jobs.batch"),
        ({"count/events": "5"}, "", "events", None),  # ignored by the quota system
        ({"count/pods/exec": "5"}, "", "pods/exec", None),
    ],
)
def test_which_quota_key_bounds_a_kinds_stored_objects(hard, group, resource, bound):
    assert stored_object_bound(hard, group, resource) == bound


@pytest.mark.parametrize(("group", "version", "expected"), [("extensions", "1.21", True), ("extensions", "1.22", False),
                                                             ("extensions", "1.35", False), ("apps", "1.35", True)])
def test_the_extensions_group_is_served_no_more_from_1_22(group, version, expected):
    assert served(group, version) is expected


def test_the_tenant_guide_states_the_ceilings_the_quota_sets():
    """docs/tenants.md's object-count table, read back against the rendered quota of a default tenant."""
    hard = _tenant_quota(_objects("multi-pool"), "data-science")
    text = project_path("docs", "tenants.md").read_text()
    for row, keys in [
        ("| ReplicaSets (a Deployment keeps 10 old ones) | ", ["count/replicasets.apps"]),
        ("| Jobs, JobSets, TrainJobs, ResourceClaims | ", ["count/jobs.batch", "count/jobsets.jobset.x-k8s.io",
                                                         "count/trainjobs.trainer.kubeflow.org"]),
        ("| pods stored, finished ones included (running at once: 500) | ", ["count/pods"]),
        ("Leases, ReplicationControllers, ResourceClaimTemplates, ExternalSecrets, TrainingRuntimes | ",
         ["configmaps", "count/leases.coordination.k8s.io", "count/externalsecrets.external-secrets.io"]),
    ]:
        [line] = [line for line in text.splitlines() if row in line]
        stated = line.split(row)[1].split()[0]
        assert {hard[key] for key in keys} == {stated}, row
    assert hard["pods"] == "500"


@pytest.mark.parametrize(("version", "dra", "counted"), [
    ("1.33", False, False),  # resource.k8s.io is not served without DRA's feature gates (a DRA stack needs 1.34)
    ("1.34", False, True),  # DRA is GA: the API server serves ResourceClaims, and `edit` may create them
])
def test_resource_claims_are_counted_wherever_the_api_server_serves_them(version, dra, counted):
    document = fixture_document("single-pool-dra" if dra else "single-pool")
    document["gpu-platform:cluster"]["kubernetesVersion"] = version
    [plan] = [t for t in load(document).tenants if t.name == "ml-research"]
    assert ("count/resourceclaims.resource.k8s.io" in plan.resource_quota) is counted
    assert ("count/resourceclaimtemplates.resource.k8s.io" in plan.resource_quota) is counted
