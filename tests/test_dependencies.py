"""The order a deploy creates things in: every object waits for what it needs to exist first.

Checked on the whole program's recording, not on one component fed stand-ins: what matters is the
edge the platform actually wires. Each rule is derived from the object itself (the API group of its
kind, the namespace it lives in, the names its spec or Helm values refer to), so a new object is
held to the same rule without a test change.

"Waits for" is the transitive closure of the recorded dependencies, plus each resource's provider:
Pulumi creates nothing before its dependencies and its provider exist. Which release installs a
custom kind's CRD, and the kinds each chart renders, are tests/test_deploy_order.py's.
"""

from __future__ import annotations

from .conftest import fixture_document, render_fixture, short
from .recorded import RELEASE, declared, describe, kubernetes_objects, releases, value_at, waits_for

PROVIDER = "pulumi:providers:kubernetes"

# The EKS access policy that makes the deploying identity a cluster admin (AWS EKS access policies).
CLUSTER_ADMIN_POLICY = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"


# --- Karpenter's and the DRA driver's objects (every custom kind waits for its CRD: test_deploy_order.py) ---


def test_node_pools_and_node_classes_wait_for_the_running_karpenter_controller(recorded):
    # On `pulumi destroy` the reverse order holds: NodePools go while Karpenter can still drain and
    # terminate their nodes and delete the instance profiles it made.
    controller = releases(recorded)["karpenter"]
    node_role = next(r for r in recorded.by_type("aws:iam/role:Role") if r.inputs["name"].endswith("-karpenter-node"))
    pools = [r for r in kubernetes_objects(recorded) if r.inputs["kind"] in ("NodePool", "EC2NodeClass")]
    assert len(pools) >= 4  # a GPU pool and the CPU pool, each a NodePool and an EC2NodeClass
    for resource in pools:
        assert {controller.urn, node_role.urn} <= waits_for(recorded, resource), describe(resource)


def test_a_node_pool_waits_for_the_node_class_it_references(recorded):
    for pool in (r for r in kubernetes_objects(recorded) if r.inputs["kind"] == "NodePool"):
        reference = pool.inputs["spec"]["template"]["spec"]["nodeClassRef"]["name"]
        assert declared(recorded, "EC2NodeClass", reference).urn in waits_for(recorded, pool), describe(pool)


def test_claim_templates_wait_for_the_dra_driver_that_installs_their_device_classes():
    # The DeviceClasses gpu.nvidia.com and mig.nvidia.com come from the dra-driver-nvidia-gpu chart.
    recording = render_fixture("single-pool-dra")
    driver = releases(recording)["dra-driver-nvidia-gpu"]
    templates = [r for r in kubernetes_objects(recording) if r.inputs["kind"] == "ResourceClaimTemplate"]
    assert templates
    for template in templates:
        assert driver.urn in waits_for(recording, template), describe(template)


# --- namespaced objects wait for their namespace --------------------------------------------------------


def test_each_namespace_is_declared_once_so_every_component_shares_the_real_one(recorded):
    names = [r.inputs["metadata"]["name"] for r in kubernetes_objects(recorded) if r.inputs["kind"] == "Namespace"]
    assert sorted(names) == sorted(set(names))


def test_tenant_namespaces_are_the_tenants_components(recorded):
    tenants = {r.urn for r in recorded.by_type("gpu-platform:tenants:Tenant")}
    for namespace in (r for r in kubernetes_objects(recorded) if r.inputs["kind"] == "Namespace"):
        is_tenant = "gpu-platform/tenant" in namespace.inputs["metadata"].get("labels", {})
        assert (namespace.parent in tenants) == is_tenant, describe(namespace)


def test_every_namespaced_object_and_release_waits_for_its_namespace(recorded):
    namespaces = {
        r.inputs["metadata"]["name"]: r for r in kubernetes_objects(recorded) if r.inputs["kind"] == "Namespace"
    }
    checked = 0
    for resource in [*recorded.by_type(RELEASE), *kubernetes_objects(recorded)]:
        inputs = resource.inputs
        namespace = inputs["namespace"] if resource.type == RELEASE else inputs["metadata"].get("namespace")
        if namespace in namespaces:
            assert namespaces[namespace].urn in waits_for(recorded, resource), f"{describe(resource)} waits not for {namespace}"
            checked += 1
    assert checked > 20


def test_every_tenant_namespace_holds_a_local_queue_that_waits_for_it(recorded):
    for namespace in (r for r in kubernetes_objects(recorded) if r.inputs["kind"] == "Namespace"):
        if "gpu-platform/tenant" not in namespace.inputs["metadata"].get("labels", {}):
            continue
        queue = declared(recorded, "LocalQueue", "default", namespace.inputs["metadata"]["name"])
        assert namespace.urn in waits_for(recorded, queue)


# --- releases wait for what their pods and values need -------------------------------------------------


def test_every_release_waits_for_the_system_nodes_and_cluster_dns(recorded):
    # Before Karpenter's pools exist the system node group is the only place a pod can run, and
    # pods need the CNI (before the nodes) and CoreDNS (after them) to start.
    [node_group] = [
        group for group in recorded.by_type("aws:eks/nodeGroup:NodeGroup") if "CriticalAddonsOnly" in group.inputs["labels"]
    ]
    addons = {r.inputs["addonName"]: r.urn for r in recorded.by_type("aws:eks/addon:Addon")}
    for release in recorded.by_type(RELEASE):
        needed = {node_group.urn, addons["vpc-cni"], addons["coredns"], addons["kube-proxy"]}
        assert needed <= waits_for(recorded, release), release.inputs["name"]


def test_prometheus_waits_for_the_storage_class_its_volumes_claim(recorded):
    stack = releases(recorded)["kube-prometheus-stack"]
    claim = value_at(stack.inputs["values"], "prometheus.prometheusSpec.storageSpec.volumeClaimTemplate.spec")
    storage_class = declared(recorded, "StorageClass", claim["storageClassName"])
    assert storage_class.urn in waits_for(recorded, stack)
    # ... and the StorageClass waits for the CSI driver that provisions it.
    ebs = next(r for r in recorded.by_type("aws:eks/addon:Addon") if r.inputs["addonName"] == "aws-ebs-csi-driver")
    assert ebs.urn in waits_for(recorded, storage_class)


def test_alertmanager_waits_for_the_secrets_it_mounts():
    recording = render_fixture("multi-pool")
    stack = releases(recording)["kube-prometheus-stack"]
    secrets = value_at(stack.inputs["values"], "alertmanager.alertmanagerSpec.secrets")
    assert secrets == ["alertmanager-receivers"]
    for name in secrets:
        assert declared(recording, "Secret", name, stack.inputs["namespace"]).urn in waits_for(recording, stack)


def test_the_gpu_operator_waits_for_the_config_maps_its_values_name(recorded):
    operator = releases(recorded)["gpu-operator"]
    values = operator.inputs["values"]
    for path in ("devicePlugin.config.name", "migManager.config.name"):
        config_map = declared(recorded, "ConfigMap", value_at(values, path), operator.inputs["namespace"])
        assert config_map.urn in waits_for(recorded, operator), path


def test_the_dra_driver_waits_for_the_gpu_operator_whose_node_labels_schedule_it():
    recording = render_fixture("single-pool-dra")
    by_name = releases(recording)
    assert by_name["gpu-operator"].urn in waits_for(recording, by_name["dra-driver-nvidia-gpu"])


def test_the_karpenter_controller_waits_for_its_aws_identity_queue_and_node_access(recorded):
    controller = releases(recorded)["karpenter"]
    values = controller.inputs["values"]
    after = waits_for(recorded, controller)
    service_account = (controller.inputs["namespace"], values["serviceAccount"]["name"])
    [identity] = [
        r for r in recorded.by_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
        if (r.inputs["namespace"], r.inputs["serviceAccount"]) == service_account
    ]
    [queue] = [r for r in recorded.by_type("aws:sqs/queue:Queue") if r.inputs["name"] == values["settings"]["interruptionQueue"]]
    role = next(r for r in recorded.by_type("aws:iam/role:Role") if r.inputs["name"].endswith("-karpenter-controller"))
    attachments = [r for r in recorded.by_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment") if r.parent == role.urn]
    assert len(attachments) == 6  # upstream's six managed policies
    [node_access] = [r for r in recorded.by_type("aws:eks/accessEntry:AccessEntry") if r.inputs["type"] == "EC2_LINUX"]
    assert {identity.urn, queue.urn, node_access.urn, releases(recorded)["karpenter-crd"].urn} <= after
    assert {a.urn for a in attachments} <= after


# --- Kueue objects wait for the objects they name --------------------------------------------------------


def test_cluster_queues_wait_for_their_flavors_and_cohort(recorded):
    for queue in (r for r in kubernetes_objects(recorded) if r.inputs["kind"] == "ClusterQueue"):
        spec = queue.inputs["spec"]
        named = [declared(recorded, "Cohort", spec["cohortName"])]
        flavors = [flavor["name"] for group in spec["resourceGroups"] for flavor in group["flavors"]]
        named += [declared(recorded, "ResourceFlavor", flavor) for flavor in flavors]
        for resource in named:
            assert resource.urn in waits_for(recorded, queue), f"{describe(queue)} does not wait for {describe(resource)}"


def test_cohorts_wait_for_their_parent_and_local_queues_for_their_cluster_queue(recorded):
    for cohort in (r for r in kubernetes_objects(recorded) if r.inputs["kind"] == "Cohort"):
        parent = cohort.inputs["spec"].get("parentName")
        if parent:
            assert declared(recorded, "Cohort", parent).urn in waits_for(recorded, cohort)
    for queue in (r for r in kubernetes_objects(recorded) if r.inputs["kind"] == "LocalQueue"):
        cluster_queue = declared(recorded, "ClusterQueue", queue.inputs["spec"]["clusterQueue"])
        assert cluster_queue.urn in waits_for(recorded, queue)


# --- the cluster and access to it -----------------------------------------------------------------------


def test_everything_that_names_the_cluster_waits_for_it(recorded):
    [cluster] = recorded.by_type("eks:index:Cluster")
    named = [r for r in recorded.resources if r.custom and r.inputs.get("clusterName") == cluster.inputs["name"]]
    assert len(named) >= 10  # access entries, add-ons, the node group, Karpenter's identity
    for resource in named:
        assert cluster.urn in waits_for(recorded, resource), describe(resource)


def test_kubernetes_objects_wait_for_every_admins_cluster_admin_access(recorded):
    admins = [
        r for r in recorded.by_type("aws:eks/accessPolicyAssociation:AccessPolicyAssociation")
        if r.inputs["policyArn"] == CLUSTER_ADMIN_POLICY and r.inputs["accessScope"] == {"type": "cluster"}
    ]
    # Less the creator, whose access entry EKS makes with the cluster (tests/test_deploy_access.py).
    admins_listed = fixture_document(recorded.stack)["gpu-platform:cluster"]["admins"]
    configured = [a for a in admins_listed if a != recorded.outputs["clusterCreator"]]
    assert sorted(a.inputs["principalArn"] for a in admins) == sorted(configured)
    for resource in recorded.resources:
        if resource.provider and short(resource.provider).endswith("-k8s"):
            assert {a.urn for a in admins} <= waits_for(recorded, resource), describe(resource)

