"""Each tenant pulls its own private images, and no other's: its ECR login, and the kubelet's cached copies.

IAM is evaluated from the documents components/image_pulls.py builds (models/aws_iam.py for identity
policies), against what External Secrets Operator v2.9.0's ECR generator does: the controller's Pod
Identity session assumes the generator's `role` with no session tags (providers/v1/aws/auth/auth.go
`NewGeneratorSession`) and calls GetAuthorizationToken; the token then pulls what that role may pull.
Admission is evaluated with models/kubernetes/admission.py against the policies the platform builds for a
cluster minor.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from components import image_pulls, secrets
from components.admission import admission_objects
from components.autoscaling import vllm
from config.errors import ConfigError
from config.labels import TENANT_LABEL
from config.versions import oldest_kubelet_minor
from models.aws_iam import identity_allows
from models.kubernetes.admission import Request, admission_denials
from models.kubernetes.duration import duration_seconds
from models.kubernetes.features import KUBELET_ENSURE_SECRET_PULLED_IMAGES, enabled_by_default, first_enabled
from models.kubernetes.user import User
from offline.upstream import UPSTREAM_DIR

from .conftest import fixture_document, load, render_fixture
from .recorded import declared, kubernetes_objects, waits_for

ACCOUNT, REGION, CLUSTER = "111122223333", "us-east-1", "gpu-prod"
CONTROLLER = f"arn:aws:iam::{ACCOUNT}:role/{CLUSTER}-external-secrets"
CONTROLLER_SESSION = {
    "aws:PrincipalAccount": ACCOUNT,
    "aws:PrincipalTag/eks-cluster-name": CLUSTER,
    "aws:PrincipalTag/kubernetes-namespace": "external-secrets",
    "aws:PrincipalTag/kubernetes-service-account": "external-secrets",
}
ML = image_pulls.image_pull_policy("aws", REGION, ACCOUNT, "ml")


def repository(name: str, region: str = REGION, account: str = ACCOUNT) -> str:
    return f"arn:aws:ecr:{region}:{account}:repository/{name}"


@pytest.mark.parametrize(
    ("resource", "pulled"),
    [
        (repository("ml/trainer"), True),
        (repository("ml/team/nested"), True),
        (repository("mlops/trainer"), False),  # a tenant whose name starts with `ml`
        (repository("ml-research/trainer"), False),
        (repository("ml"), False),
        (repository("platform/ml/trainer"), False),
        (repository("ML/trainer"), False),
        (repository("ml/trainer", region="eu-west-1"), False),  # the token is this region's registry's
        (repository("ml/trainer", account="444455556666"), False),
    ],
)
@pytest.mark.parametrize("action", ["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"])
def test_a_tenants_pull_role_pulls_its_own_repositories_and_no_other(action, resource, pulled):
    assert identity_allows(ML, action, resource) is pulled


def test_a_tenants_pull_role_logs_in_and_writes_nothing():
    assert identity_allows(ML, "ecr:GetAuthorizationToken", "*")
    for action in ("ecr:PutImage", "ecr:InitiateLayerUpload", "ecr:BatchDeleteImage", "ecr:SetRepositoryPolicy",
                   "ecr:DescribeRepositories", "sts:AssumeRole"):
        assert not identity_allows(ML, action, repository("ml/trainer")), action


def trusts(document: dict[str, Any], principal: str, context: dict[str, str]) -> bool:
    """Whether an Allow statement admits `principal` (an AWS principal) assuming the role for `context`."""
    for statement in document["Statement"]:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        if statement["Effect"] != "Allow" or "sts:AssumeRole" not in actions:
            continue
        if statement.get("Principal", {}).get("AWS") != principal:
            continue
        if all(context.get(k) == v for k, v in statement.get("Condition", {}).get("StringEquals", {}).items()):
            return True
    return False


@pytest.mark.parametrize(
    ("principal", "session", "assumed"),
    [
        (CONTROLLER, CONTROLLER_SESSION, True),
        (CONTROLLER, {**CONTROLLER_SESSION, "aws:PrincipalTag/eks-cluster-name": "gpu-dev"}, False),
        (CONTROLLER, {**CONTROLLER_SESSION, "aws:PrincipalTag/kubernetes-namespace": "ml"}, False),
        (CONTROLLER, {**CONTROLLER_SESSION, "aws:PrincipalTag/kubernetes-service-account": "default"}, False),
        (CONTROLLER, {**CONTROLLER_SESSION, "aws:PrincipalAccount": "444455556666"}, False),
        (f"arn:aws:iam::{ACCOUNT}:role/{CLUSTER}-ml-model-reader", CONTROLLER_SESSION, False),
    ],
)
def test_a_pull_role_trusts_only_the_controllers_pod_identity_session_on_its_cluster(principal, session, assumed):
    document = image_pulls.image_pull_trust_policy(ACCOUNT, CONTROLLER, CLUSTER)
    assert trusts(document, principal, session) is assumed


def test_the_controller_may_assume_this_clusters_pull_roles():
    policy = secrets.controller_policy("aws", ACCOUNT, CLUSTER)
    assert identity_allows(policy, "sts:AssumeRole", f"arn:aws:iam::{ACCOUNT}:role/{CLUSTER}-image-pull-ml")
    assert identity_allows(policy, "sts:AssumeRole", f"arn:aws:iam::{ACCOUNT}:role/{CLUSTER}-secrets-ml")
    assert not identity_allows(policy, "sts:AssumeRole", f"arn:aws:iam::{ACCOUNT}:role/{CLUSTER}-ml-model-reader")
    assert not identity_allows(policy, "sts:AssumeRole", f"arn:aws:iam::{ACCOUNT}:role/{CLUSTER}-karpenter-controller")


# --- what the render declares per tenant ------------------------------------------------------------

MULTI_POOL_TENANTS = ["llm-training", "inference", "data-science", "experiments"]


def _tenant_objects(kind: str) -> dict[str, dict[str, Any]]:
    found = [r.inputs for r in kubernetes_objects(render_fixture("multi-pool")) if r.inputs["kind"] == kind
             and r.inputs["metadata"]["name"] in ("ecr-pull", "default")]
    return {o["metadata"]["namespace"]: o for o in found}


def test_every_tenant_gets_its_generator_external_secret_and_default_service_account_in_its_own_namespace():
    generators = _tenant_objects("ECRAuthorizationToken")
    external_secrets = _tenant_objects("ExternalSecret")
    accounts = _tenant_objects("ServiceAccount")
    assert sorted(generators) == sorted(external_secrets) == sorted(accounts) == sorted(MULTI_POOL_TENANTS)
    for tenant in MULTI_POOL_TENANTS:
        assert generators[tenant]["spec"] == {
            "region": REGION, "role": f"arn:aws:iam::{ACCOUNT}:role/{CLUSTER}-image-pull-{tenant}"
        }
        spec = external_secrets[tenant]["spec"]
        assert spec["dataFrom"] == [{"sourceRef": {"generatorRef": {
            "apiVersion": "generators.external-secrets.io/v1alpha1", "kind": "ECRAuthorizationToken", "name": "ecr-pull"}}}]
        assert spec["target"]["name"] == "ecr-pull" and spec["target"]["template"]["type"] == "kubernetes.io/dockerconfigjson"
        assert accounts[tenant]["imagePullSecrets"] == [{"name": "ecr-pull"}]
        # Nothing else of the ServiceAccount is the platform's: checkov's default-account check is accepted here.
        assert set(accounts[tenant]) == {"apiVersion", "kind", "metadata", "imagePullSecrets"}
        assert list(accounts[tenant]["metadata"]["annotations"]) == ["checkov.io/skip1"]


def test_each_pull_role_is_named_for_its_tenant_and_carries_its_own_prefix():
    recording = render_fixture("multi-pool")
    policies = {p.inputs["role"]: json.loads(p.inputs["policy"]) for p in recording.by_type("aws:iam/rolePolicy:RolePolicy")}
    for tenant in MULTI_POOL_TENANTS:
        document = policies[f"{CLUSTER}-image-pull-{tenant}"]
        [pull] = [s for s in document["Statement"] if s["Sid"] == "OwnRepositories"]
        assert pull["Resource"] == f"arn:aws:ecr:{REGION}:{ACCOUNT}:repository/{tenant}/*"


def test_the_token_is_renewed_well_inside_its_twelve_hours():
    """ECR's token lasts 12 hours (ECR API Reference, GetAuthorizationToken): an hourly refresh leaves any pod
    a token with 11 hours to run, and eleven failed refreshes before pulls fail."""
    [refresh] = {o["spec"]["refreshInterval"] for o in _tenant_objects("ExternalSecret").values()}
    assert duration_seconds(refresh) == 3600
    assert duration_seconds(refresh) * 12 <= 12 * 3600


def test_the_pull_secret_template_is_a_docker_config_once_the_token_fills_it():
    """The Go template with ESO's generator keys filled (username, password, proxy_endpoint) parses as a docker
    config naming the registry host without its scheme."""
    filled = image_pulls.DOCKER_CONFIG_TEMPLATE
    filled = filled.replace('{{ .proxy_endpoint | replace "https://" "" }}', f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com")
    filled = filled.replace("{{ .username }}", "AWS").replace("{{ .password }}", "tok")
    filled = filled.replace('{{ printf "%s:%s" .username .password | b64enc }}', "QVdTOnRvaw==")
    assert "{{" not in filled
    assert json.loads(filled) == {
        "auths": {f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com": {"username": "AWS", "password": "tok", "auth": "QVdTOnRvaw=="}}
    }


def test_a_generator_waits_for_its_roles_permissions_and_the_external_secret_for_its_generator():
    recording = render_fixture("multi-pool")
    generator = declared(recording, "ECRAuthorizationToken", "ecr-pull", "experiments")
    external = declared(recording, "ExternalSecret", "ecr-pull", "experiments")
    policies = recording.by_type("aws:iam/rolePolicy:RolePolicy")
    [pull] = [p for p in policies if p.inputs["role"] == f"{CLUSTER}-image-pull-experiments"]
    assert pull.urn in waits_for(recording, generator)
    assert generator.urn in waits_for(recording, external)


def test_a_generator_ref_names_no_namespace_at_the_pinned_version():
    """An ExternalSecret reads its generator from its own namespace: the CRD gives `generatorRef` no namespace
    field (the API server prunes one), and ESO's resolver looks the name up in the ExternalSecret's namespace."""
    crds = UPSTREAM_DIR / "external-secrets" / "2.9.0" / "crds"
    crd = yaml.safe_load((crds / "external-secrets.io_externalsecrets.yaml").read_text())
    [v1] = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    spec = v1["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    for field in ("data", "dataFrom"):
        generator_ref = spec[field]["items"]["properties"]["sourceRef"]["properties"]["generatorRef"]
        assert sorted(generator_ref["properties"]) == ["apiVersion", "kind", "name"], field


def test_a_stack_without_secrets_makes_no_pull_secrets():
    recording = render_fixture("single-pool")
    kinds = {r.inputs["kind"] for r in kubernetes_objects(recording)}
    assert "ECRAuthorizationToken" not in kinds and "ExternalSecret" not in kinds
    assert not [r for r in recording.by_type("aws:iam/role:Role") if "-image-pull-" in r.inputs["name"]]
    accounts = [r for r in kubernetes_objects(recording) if r.inputs["kind"] == "ServiceAccount"]
    assert not [r for r in accounts if r.inputs["metadata"]["name"] == "default"]


# --- node repositories never reach into a tenant's --------------------------------------------------


@pytest.mark.parametrize(
    ("prefix", "refused"),
    [
        ("data-science/", True),
        ("data-science/models/", True),
        ("data/", False),  # `data-science/...` does not start with `data/`
        ("data-science-shared/", False),
        ("platform/", False),
    ],
)
def test_a_node_repository_prefix_covering_a_tenants_repositories_is_one_line(prefix, refused):
    document = fixture_document("multi-pool")
    document.setdefault("gpu-platform:supplyChain", {})["nodeRepositories"] = ["ecr-public/", prefix]
    if not refused:
        assert load(document).supply_chain.node_repositories == ["ecr-public/", prefix]
        return
    with pytest.raises(ConfigError) as caught:
        load(document)
    assert caught.value.problems == [
        f"gpu-platform:supplyChain.nodeRepositories[1]: {prefix!r} covers tenant data-science's private repositories "
        "(data-science/...), which every node could then pull for any tenant's pod: move the platform's images under "
        "a prefix no tenant is named"
    ]


# --- the kubelet's cache: KubeletEnsureSecretPulledImages, and Always where it is off ------------------


@pytest.mark.parametrize(("version", "on"), [("1.32", False), ("1.33", False), ("1.34", False), ("1.35", True), ("1.36", True)])
def test_the_kubelet_checks_pull_credentials_of_cached_images_by_default_from_1_35(version, on):
    assert enabled_by_default(KUBELET_ENSURE_SECRET_PULLED_IMAGES, version) is on


def test_the_first_minor_checking_cached_images_is_1_35():
    assert first_enabled(KUBELET_ENSURE_SECRET_PULLED_IMAGES) == "1.35"


PULL_ALWAYS = "tenant-pods-pull-private-images-always"


@pytest.mark.parametrize(("version", "oldest"), [("1.33", "1.32"), ("1.35", "1.34"), ("1.36", "1.35"), ("1.40", "1.39")])
def test_a_cluster_runs_kubelets_of_its_minor_and_the_one_before(version, oldest):
    """EKS upgrades one minor at a time and the old minor's nodes run on until they are replaced."""
    assert oldest_kubelet_minor(version) == oldest


@pytest.mark.parametrize(("version", "present"), [("1.33", True), ("1.34", True), ("1.35", True), ("1.36", False)])
def test_the_pull_always_policy_stays_while_some_kubelet_may_reuse_cached_images(version, present):
    """A 1.35 cluster still runs 1.34 kubelets after its upgrade, which hand out cached images; from a 1.36
    cluster on, every kubelet (1.35 or later) checks credentials itself."""
    names = {m["metadata"]["name"] for m in admission_objects([], version).values()}
    assert (PULL_ALWAYS in names) is present


def _pod(**container: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"},
            "spec": {"containers": [{"name": "main", **container}]}}


PRIVATE = f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/ml/trainer:1.0"


@pytest.mark.parametrize(
    ("container", "admitted"),
    [
        ({"image": PRIVATE, "imagePullPolicy": "Always"}, True),
        ({"image": PRIVATE, "imagePullPolicy": "IfNotPresent"}, False),
        ({"image": PRIVATE, "imagePullPolicy": "Never"}, False),
        ({"image": PRIVATE}, False),  # unset: the API server's default would be IfNotPresent
        ({"image": f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/ml/trainer@sha256:{'a' * 64}"}, False),
        ({"image": f"{ACCOUNT}.dkr.ecr-fips.us-gov-west-1.amazonaws.com/ml/t:1", "imagePullPolicy": "IfNotPresent"}, False),
        ({"image": f"{ACCOUNT}.dkr-ecr.{REGION}.on.aws/ml/t:1", "imagePullPolicy": "IfNotPresent"}, False),
        ({"image": f"{ACCOUNT}.dkr.ecr.cn-north-1.amazonaws.com.cn/ml/t:1", "imagePullPolicy": "IfNotPresent"}, False),
        ({"image": "444455556666.dkr.ecr.eu-west-1.amazonaws.com/vendor/t:1", "imagePullPolicy": "IfNotPresent"}, False),
        ({"image": "public.ecr.aws/docker/library/python:3.12", "imagePullPolicy": "IfNotPresent"}, True),
        ({"image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04", "imagePullPolicy": "IfNotPresent"}, True),
        ({"image": "busybox:1.36"}, True),
        ({"image": "dkr.ecr.example.com/ml/t:1", "imagePullPolicy": "IfNotPresent"}, True),
    ],
)
@pytest.mark.parametrize("version", ["1.33", "1.35"])
def test_while_kubelets_before_1_35_may_run_a_private_ecr_container_is_pulled_every_time(version, container, admitted):
    objects = list(admission_objects([], version).values())
    request = Request("CREATE", "", "pods", "ml", User("system:serviceaccount:ml:builder", ()), _pod(**container),
                      namespace_labels={TENANT_LABEL: "ml"})
    refused = [d for d in admission_denials(objects, request) if "imagePullPolicy: Always" in d]
    assert (refused == []) is admitted


def test_once_every_kubelet_checks_credentials_no_policy_asks_for_always():
    objects = list(admission_objects([], "1.36").values())
    request = Request("CREATE", "", "pods", "ml", User("system:serviceaccount:ml:builder", ()),
                      _pod(image=PRIVATE, imagePullPolicy="IfNotPresent"), namespace_labels={TENANT_LABEL: "ml"})
    assert not [d for d in admission_denials(objects, request) if "imagePullPolicy" in d]


@pytest.mark.parametrize(
    ("image", "policy"),
    [(PRIVATE, {"imagePullPolicy": "Always"}), ("vllm/vllm-openai:v0.11.0", {}), ("public.ecr.aws/x/vllm:1", {})],
)
def test_the_platforms_model_server_pulls_a_private_ecr_image_every_time(image, policy):
    config = load(fixture_document("multi-pool"))
    tenant = next(t for t in config.tenants if t.name == "llm-training")
    deployment = tenant.config.inference[0]
    assert deployment.serving is not None
    deployment = deployment.model_copy(update={"serving": deployment.serving.model_copy(update={"image": image})})
    manifest = vllm.server_deployment(tenant, deployment, vllm.tenant_flavor(tenant, deployment.flavor))
    [container] = manifest["spec"]["template"]["spec"]["containers"]
    assert {k: v for k, v in container.items() if k == "imagePullPolicy"} == policy


def test_the_platforms_and_a_tenants_own_external_secrets_pass_admission():
    """The ecr-pull and model-token ExternalSecrets the platform writes, and a tenant's one reading its own store,
    name only their namespace's sources."""
    objects = [r.inputs for r in kubernetes_objects(render_fixture("multi-pool"))]
    labels = {o["metadata"]["name"]: o["metadata"].get("labels", {}) for o in objects if o["kind"] == "Namespace"}
    tenant_admin = User("arn:aws:sts::111122223333:assumed-role/DataScienceAdmin/alice", ("gpu-platform:data-science:admins",))
    platform = [o for o in objects if o["kind"] == "ExternalSecret"]
    assert {o["metadata"]["name"] for o in platform} >= {"ecr-pull", "embeddings-hf-token"}
    own_store = {
        "apiVersion": "external-secrets.io/v1",
        "kind": "ExternalSecret",
        "metadata": {"name": "db", "namespace": "data-science"},
        "spec": {"secretStoreRef": {"kind": "SecretStore", "name": "aws-secrets-manager"},
                 "data": [{"secretKey": "p", "remoteRef": {"key": "/gpu-prod/data-science/db"}}]},
    }
    for external_secret in [*platform, own_store]:
        namespace = external_secret["metadata"]["namespace"]
        request = Request("CREATE", "external-secrets.io", "externalsecrets", namespace, tenant_admin, external_secret,
                          namespace_labels=labels[namespace])
        assert admission_denials(objects, request) == [], external_secret["metadata"]
