"""Tenants: namespaces with Pod Security, quotas, container defaults, network rules and access.

Builders are checked as plain manifests; the component runs under the mock engine through a small
harness (a fresh context, the recording monitor, a provider and a stand-in cluster) until
components/platform.py declares it.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Sequence

import pulumi
import pulumi_kubernetes as k8s
import pytest

from components.queueing import cluster_queue
from components.tenants import (
    DEFAULT_CONTAINER_LIMITS,
    DEFAULT_CONTAINER_REQUESTS,
    Tenants,
    limit_range,
    namespace,
    network_policies,
    principal_groups,
    resource_quota,
    role_bindings,
    tenant_objects,
)
from config import ConfigError
from config.cluster import principal_slug
from config.fair_share import TenantPlan
from config.labels import GPU_RESOURCE
from offline.builtin_kinds import built_in_findings
from offline.engine import RecordedResource, run_program

from .builders import tenant_plan
from .conftest import fixture_config, fixture_document, load, short

PSS = "pod-security.kubernetes.io"
ON_CALL = "arn:aws:iam::111122223333:role/MLPlatformOnCall"
ACCESS_ENTRY = "aws:eks/accessEntry:AccessEntry"
TENANT = "gpu-platform:tenants:Tenant"
PROVIDER = "pulumi:providers:kubernetes"
RFC1918 = {"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"}


# --- config and harness ---------------------------------------------------------------------------


def multi_pool():
    return fixture_config("multi-pool")


def tenant(name: str) -> TenantPlan:
    return tenant_plan(multi_pool(), name)


def declare(tenants: Sequence[TenantPlan], kubernetes_version: str = "1.35", protect: bool = False) -> list[RecordedResource]:
    """Build `Tenants` alone under the offline engine's mocks; return the records."""

    def program():
        provider = k8s.Provider("test-k8s", kubeconfig="{}")
        cluster = pulumi.CustomResource("test:index:Cluster", "test-cluster", {})
        Tenants(
            "gpu-prod-tenants",
            tenants,
            cluster_name="gpu-prod",
            kubernetes_version=kubernetes_version,
            provider=provider,
            tags={"environment": "prod"},
            protect=protect,
            depends_on=[cluster],
        )

    return run_program("test", {"aws:region": "us-east-1"}, program=program).resources


@functools.cache
def declared_multi_pool() -> tuple[RecordedResource, ...]:
    return tuple(declare(multi_pool().tenants, multi_pool().cluster.kubernetes_version))


def k8s_objects(records) -> list[RecordedResource]:
    return [r for r in records if r.custom and r.type.startswith("kubernetes:")]


def recorded(records, kind: str, namespace_: str) -> list[dict]:
    """Recorded inputs (what the render writes as manifests) of one kind in one namespace."""
    return [
        r.inputs
        for r in k8s_objects(records)
        if r.inputs["kind"] == kind and (r.inputs["metadata"].get("namespace") or r.inputs["metadata"]["name"]) == namespace_
    ]


def policy(plan: TenantPlan, name: str) -> dict:
    [found] = [p for p in network_policies(plan).values() if p["metadata"]["name"] == name]
    return found["spec"]


def egress_peers(plan: TenantPlan) -> list[dict]:
    return [peer for p in network_policies(plan).values() for rule in p["spec"].get("egress", []) for peer in rule["to"]]


def ingress_peers(plan: TenantPlan) -> list[dict]:
    return [peer for p in network_policies(plan).values() for rule in p["spec"].get("ingress", []) for peer in rule["from"]]


def namespace_peer(name: str) -> dict:
    return {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": name}}}


# --- namespace and Pod Security -------------------------------------------------------------------


def test_namespace_is_named_for_the_tenant_and_enforces_restricted_by_default():
    manifest = namespace(tenant("llm-training"), "1.35")
    labels = manifest["metadata"]["labels"]
    assert manifest["metadata"]["name"] == "llm-training"
    assert {labels[f"{PSS}/{mode}"] for mode in ("enforce", "audit", "warn")} == {"restricted"}


def test_baseline_tenant_enforces_baseline_but_audits_and_warns_restricted():
    labels = namespace(tenant("data-science"), "1.35")["metadata"]["labels"]
    assert labels[f"{PSS}/enforce"] == "baseline"
    assert labels[f"{PSS}/audit"] == "restricted"
    assert labels[f"{PSS}/warn"] == "restricted"


@pytest.mark.parametrize("version", ["1.33", "1.34", "1.35"])
def test_pod_security_versions_are_pinned_to_the_clusters_minor(version):
    labels = namespace(tenant("inference"), version)["metadata"]["labels"]
    assert {labels[f"{PSS}/{mode}-version"] for mode in ("enforce", "audit", "warn")} == {f"v{version}"}


def test_declared_namespaces_follow_the_kubernetes_version_passed_in():
    [manifest] = recorded(declare(multi_pool().tenants[:1], "1.34"), "Namespace", "llm-training")
    assert manifest["metadata"]["labels"][f"{PSS}/enforce-version"] == "v1.34"


def test_a_tenants_cluster_queue_selects_its_namespace_and_no_other():
    # The API server adds kubernetes.io/metadata.name (the namespace's name, immutable) to every namespace.
    labels = {
        plan.name: {**namespace(plan, "1.35")["metadata"]["labels"], "kubernetes.io/metadata.name": plan.namespace}
        for plan in multi_pool().tenants
    }
    [inference] = [plan for plan in multi_pool().tenants if plan.name == "inference"]
    selector = cluster_queue(inference)["spec"]["namespaceSelector"]
    assert set(selector) == {"matchLabels"}
    matching = [name for name, ns_labels in labels.items() if selector["matchLabels"].items() <= ns_labels.items()]
    assert matching == ["inference"]


# --- quota and container defaults -----------------------------------------------------------------


@pytest.mark.parametrize("name", ["llm-training", "inference", "data-science", "experiments"])
def test_resource_quota_is_the_planned_one_and_covers_every_gpu_kueue_admits(name):
    plan = tenant(name)
    hard = resource_quota(plan)["spec"]["hard"]
    assert hard == plan.resource_quota
    admissible = plan.admissible()
    assert int(hard[f"requests.{GPU_RESOURCE}"]) >= admissible.get(GPU_RESOURCE, 0)
    for resource in plan.covered_resources[2:]:
        assert int(hard[f"requests.{resource}"]) >= admissible.get(resource, 0), resource


def test_declared_quota_is_the_planned_one():
    quotas = recorded(declared_multi_pool(), "ResourceQuota", "llm-training")
    [manifest] = [q for q in quotas if q["metadata"]["name"] == "tenant-quota"]
    assert manifest["spec"]["hard"] == tenant("llm-training").resource_quota


def test_a_container_without_requests_gets_a_default_for_everything_the_quota_limits():
    plan = tenant("llm-training")
    [limits] = limit_range(plan)["spec"]["limits"]
    assert limits["type"] == "Container"
    for key in plan.resource_quota:
        kind, _, resource = key.partition(".")
        if resource in ("cpu", "memory", "ephemeral-storage"):
            defaults = limits["defaultRequest"] if kind == "requests" else limits["default"]
            assert resource in defaults, f"the quota limits {key} but containers get no default for it"


def test_default_memory_request_fits_under_the_default_memory_limit():
    request, limit = DEFAULT_CONTAINER_REQUESTS["memory"], DEFAULT_CONTAINER_LIMITS["memory"]
    to_mib = {"Mi": 1, "Gi": 1024}
    assert int(request[:-2]) * to_mib[request[-2:]] <= int(limit[:-2]) * to_mib[limit[-2:]]


def test_no_default_cpu_limit_throttles_containers():
    assert "cpu" not in DEFAULT_CONTAINER_LIMITS


# --- network ----------------------------------------------------------------------------------------


def test_every_pod_is_denied_all_traffic_both_ways_by_default():
    spec = policy(tenant("inference"), "default-deny-all")
    assert spec == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}


def test_pods_may_resolve_names_with_cluster_dns_over_udp_and_tcp():
    spec = policy(tenant("inference"), "allow-dns")
    assert spec["policyTypes"] == ["Egress"]
    [rule] = spec["egress"]
    assert rule["to"] == [
        {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
            "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
        }
    ]
    assert sorted((p["protocol"], p["port"]) for p in rule["ports"]) == [("TCP", 53), ("UDP", 53)]


def test_pods_of_a_tenant_reach_each_other_both_ways():
    spec = policy(tenant("llm-training"), "allow-same-namespace")
    assert spec["podSelector"] == {}
    assert spec["ingress"] == [{"from": [{"podSelector": {}}]}]
    assert spec["egress"] == [{"to": [{"podSelector": {}}]}]


def test_monitoring_may_scrape_every_tenant():
    for plan in multi_pool().tenants:
        spec = policy(plan, "allow-monitoring-scrapes")
        assert spec["ingress"] == [{"from": [namespace_peer("monitoring")]}]


def test_only_named_namespaces_may_connect_in():
    assert namespace_peer("ingress-nginx") in ingress_peers(tenant("inference"))
    assert namespace_peer("ingress-nginx") not in ingress_peers(tenant("llm-training"))
    # Beyond the named ones, only the tenant's own pods and monitoring.
    assert {str(p) for p in ingress_peers(tenant("llm-training"))} == {
        str({"podSelector": {}}),
        str(namespace_peer("monitoring")),
    }


def test_internet_egress_only_when_allowed_and_never_to_private_ranges_or_instance_metadata():
    [internet] = [p for p in egress_peers(tenant("llm-training")) if "ipBlock" in p]
    block = internet["ipBlock"]
    assert block["cidr"] == "0.0.0.0/0"
    assert set(block["except"]) == RFC1918 | {"169.254.169.254/32"}
    assert not any("ipBlock" in p for p in egress_peers(tenant("inference")))


def test_without_internet_egress_pods_reach_only_dns_and_their_own_namespace():
    peers = egress_peers(tenant("inference"))
    for peer in peers:
        kube_system = namespace_peer("kube-system")["namespaceSelector"]
        assert peer == {"podSelector": {}} or peer["namespaceSelector"] == kube_system, peer


def test_the_private_ranges_excepted_cover_the_vpc():
    vpc = ipaddress.IPv4Network(multi_pool().network.vpc_cidr)
    assert any(vpc.subnet_of(ipaddress.IPv4Network(r)) for r in RFC1918)


# --- access ---------------------------------------------------------------------------------------


def test_a_principal_of_two_tenants_gets_one_access_entry_with_both_groups():
    entries = [r for r in declared_multi_pool() if r.type == ACCESS_ENTRY and r.inputs["principalArn"] == ON_CALL]
    assert len(entries) == 1
    assert entries[0].inputs["kubernetesGroups"] == ["gpu-platform:inference:admins", "gpu-platform:llm-training:admins"]
    assert entries[0].inputs["type"] == "STANDARD"
    assert entries[0].inputs["clusterName"] == "gpu-prod"


def test_every_tenant_principal_has_exactly_one_access_entry_that_waits_for_the_cluster():
    principals = {arn for plan in multi_pool().tenants for arn in (*plan.config.admins, *plan.config.viewers)}
    entries = [r for r in declared_multi_pool() if r.type == ACCESS_ENTRY]
    assert sorted(r.inputs["principalArn"] for r in entries) == sorted(principals)
    [cluster] = [r for r in declared_multi_pool() if r.type == "test:index:Cluster"]
    assert all(cluster.urn in r.dependencies for r in entries)


def test_groups_never_use_the_system_prefix_eks_refuses():
    assert all(not g.startswith("system:") for groups in principal_groups(multi_pool().tenants).values() for g in groups)


def test_adding_a_tenant_renames_and_changes_no_other_resource():
    doc = fixture_document("multi-pool")
    doc["gpu-platform:tenants"].append(
        {"name": "newcomers", "admins": ["arn:aws:iam::111122223333:role/NewcomersAdmin"], "viewers": [ON_CALL]}
    )
    before = {r.urn: r.inputs for r in declared_multi_pool()}
    after = {r.urn: r.inputs for r in declare(load(doc).tenants)}
    changed = {urn for urn in before if after.get(urn) != before[urn]}
    # The one principal shared with the new tenant gains a group; nothing else moves.
    assert {short(urn) for urn in changed} == {f"gpu-prod-tenants-access-{principal_slug(ON_CALL)}"}
    assert set(before) < set(after)


def test_role_bindings_give_admins_admin_and_viewers_view_in_their_namespace_only():
    bindings = role_bindings(tenant("inference"))
    admins, viewers = bindings["admins"], bindings["viewers"]
    assert admins["metadata"]["namespace"] == viewers["metadata"]["namespace"] == "inference"
    assert admins["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"}
    assert viewers["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}
    group = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group"}
    assert admins["subjects"] == [{**group, "name": "gpu-platform:inference:admins"}]
    assert viewers["subjects"] == [{**group, "name": "gpu-platform:inference:viewers"}]


def test_bound_groups_are_the_groups_the_access_entries_carry():
    bound = {s["name"] for plan in multi_pool().tenants for b in role_bindings(plan).values() for s in b["subjects"]}
    carried = {g for groups in principal_groups(multi_pool().tenants).values() for g in groups}
    assert bound == carried


def test_nothing_cluster_scoped_is_created_for_a_tenant_but_its_namespace():
    objects = [r.inputs for r in k8s_objects(declared_multi_pool())]
    kinds = {o["kind"] for o in objects}
    assert kinds == {"Namespace", "ResourceQuota", "LimitRange", "NetworkPolicy", "RoleBinding"}
    tenants = {plan.name for plan in multi_pool().tenants}
    for obj in objects:
        if obj["kind"] != "Namespace":
            assert obj["metadata"]["namespace"] in tenants, obj


# --- wiring ---------------------------------------------------------------------------------------


def test_every_kubernetes_object_goes_through_the_provider_passed_in():
    [provider] = [r for r in declared_multi_pool() if r.type == PROVIDER]
    objects = k8s_objects(declared_multi_pool())
    assert objects and all(r.provider == provider.urn for r in objects)


def test_each_tenants_objects_belong_to_its_own_component_and_wait_for_its_namespace():
    records = declared_multi_pool()
    components = {r.urn: r for r in records if r.type == TENANT}
    assert sorted(r.name for r in components.values()) == sorted(f"gpu-prod-tenant-{plan.name}" for plan in multi_pool().tenants)
    for record in k8s_objects(records):
        owner = components[record.parent].name.removeprefix("gpu-prod-tenant-")
        assert record.name.startswith(f"{owner}-")
        if record.inputs["kind"] == "Namespace":
            assert record.inputs["metadata"]["name"] == owner
        else:
            assert record.inputs["metadata"]["namespace"] == owner
            [ns] = [r for r in records if r.parent == record.parent and r.inputs.get("kind") == "Namespace"]
            assert ns.urn in record.dependencies


def test_declared_objects_are_exactly_the_builders_manifests():
    """What the render writes is what the builders return: camelCase survives the typed classes."""
    declared = sorted((r.inputs for r in k8s_objects(declared_multi_pool())), key=str)
    built = sorted((m for plan in multi_pool().tenants for m in tenant_objects(plan, "1.35").values()), key=str)
    assert declared == built


def test_protected_stacks_keep_a_removed_tenants_namespace_and_its_volumes():
    records = k8s_objects(declare(multi_pool().tenants[:1], protect=True))
    assert {r.inputs["kind"] for r in records if r.protect} == {"Namespace"}
    assert not any(r.protect for r in k8s_objects(declare(multi_pool().tenants[:1], protect=False)))


def test_every_object_has_an_explicit_name():
    assert all(r.inputs["metadata"].get("name") for r in k8s_objects(declared_multi_pool()))


def test_tenant_manifests_validate_against_kubernetes_1_35():
    for record in k8s_objects(declared_multi_pool()):
        assert built_in_findings(record.inputs, "1.35") == [], record.inputs["kind"]


# --- node-local storage -----------------------------------------------------------------------------


def test_a_storage_quota_below_the_model_caches_at_max_replicas_plus_one_is_refused():
    doc = fixture_document("multi-pool")
    [llm] = [t for t in doc["gpu-platform:tenants"] if t["name"] == "llm-training"]
    llm["ephemeralStorageGiB"] = 500  # embeddings: (8 + 1) x (100 GiB cache + 10 GiB scratch) = 990 GiB
    with pytest.raises(ConfigError) as caught:
        load(doc)
    [problem] = caught.value.problems
    assert problem.endswith(
        "ephemeralStorageGiB 500 is below the 990 GiB its model servers limit at maxReplicas + 1 "
        "(cacheGiB + 10 GiB each): raise ephemeralStorageGiB or lower cacheGiB"
    )
