"""Kyverno and its image signature policies: what is admitted, what is refused, and what never waits on Kyverno.

Each policy is read the way Kyverno v1.19.0 acts on it: the webhook's namespace selector is the policy's
merged with the chart's `config.webhooks` one (pkg/controllers/webhook/validating.go
`resolveNamespaceSelector`), only images a glob matches are verified (pkg/image/verification/evaluator/
policy.go filters `images.*`), and `failurePolicy` decides while no replica answers.
"""

from __future__ import annotations

import fnmatch
from typing import Any

import celpy
import pytest

from components import supply_chain
from components.autoscaling import vllm
from config import namespaces
from config.errors import ConfigError
from config.labels import NAMESPACE_NAME_LABEL, TENANT_LABEL
from config.supply_chain import ImageVerificationConfig, KeylessIdentity
from offline.upstream import chart_values

from .conftest import fixture_document, load, render_fixture, short
from .recorded import RELEASE, declared, waits_for

SIGNED = "ghcr.io/acme-ai/trainer:v1.4.0"
UNSIGNED = "ghcr.io/acme-ai/trainer:dev"
ELSEWHERE = "nvcr.io/nvidia/pytorch:25.09-py3"


def verification(mode: str = "Enforce", replicas: int = 3) -> ImageVerificationConfig:
    return ImageVerificationConfig.model_validate({
        "mode": mode,
        "admissionReplicas": replicas,
        "policies": [{
            "name": "acme-ai-images",
            "images": ["ghcr.io/acme-ai/*"],
            "identities": [{"issuer": "https://token.actions.githubusercontent.com", "subject": "https://github.com/acme-ai/x"}],
        }],
    })


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """A LabelSelector's matchExpressions (In, NotIn, Exists) against a namespace's labels."""
    for requirement in selector.get("matchExpressions", []):
        key, operator, values = requirement["key"], requirement["operator"], requirement.get("values", [])
        if operator == "Exists" and key not in labels:
            return False
        if operator == "In" and labels.get(key) not in values:
            return False
        if operator == "NotIn" and key in labels and labels[key] in values:
            return False
    return all(labels.get(key) == value for key, value in selector.get("matchLabels", {}).items())


def webhook_selector(config: ImageVerificationConfig, policy: dict[str, Any]) -> dict[str, Any]:
    """The selector Kyverno gives the policy's webhook: the policy's and the chart's, merged (mergeLabelSelectors)."""
    chart = supply_chain.kyverno_values(config)["config"]["webhooks"]["namespaceSelector"]
    own = policy["spec"]["matchConstraints"]["namespaceSelector"]["matchExpressions"]
    return {"matchExpressions": [*own, *chart["matchExpressions"]]}


def verdict(config: ImageVerificationConfig, namespace: dict[str, str], images: list[str], *, kyverno_up: bool = True) -> str:
    """What happens to a pod with `images` created in a namespace labelled `namespace`, SIGNED being the one signed image."""
    [policy] = supply_chain.image_policies(config)
    spec = policy["spec"]
    if not selects(webhook_selector(config, policy), namespace):
        return "admitted without Kyverno"
    if not kyverno_up:
        return {"Ignore": "admitted", "Fail": "refused"}[spec["failurePolicy"]]
    globs = [reference["glob"] for reference in spec["matchImageReferences"]]
    unverified = [image for image in images if any(fnmatch.fnmatchcase(image, g) for g in globs) and image != SIGNED]
    if not unverified:
        return "admitted"
    return "refused" if "Deny" in spec["validationActions"] else "admitted, audited"


TENANT = {NAMESPACE_NAME_LABEL: "llm-training", TENANT_LABEL: "llm-training"}

VERDICTS = [
    # (mode, namespace labels, images, Kyverno answering, outcome)
    ("Enforce", TENANT, [SIGNED], True, "admitted"),
    ("Enforce", TENANT, [UNSIGNED], True, "refused"),
    ("Enforce", TENANT, [SIGNED, UNSIGNED], True, "refused"),
    ("Enforce", TENANT, [ELSEWHERE], True, "admitted"),
    ("Enforce", TENANT, [SIGNED], False, "refused"),
    ("Audit", TENANT, [UNSIGNED], True, "admitted, audited"),
    ("Audit", TENANT, [SIGNED], False, "admitted"),
    ("Enforce", {NAMESPACE_NAME_LABEL: namespaces.KUBE_SYSTEM}, [UNSIGNED], False, "admitted without Kyverno"),
]


@pytest.mark.parametrize("mode, labels, images, up, outcome", VERDICTS)
def test_a_pod_is_admitted_or_refused_as_the_mode_and_its_signatures_say(mode, labels, images, up, outcome):
    assert verdict(verification(mode), labels, images, kyverno_up=up) == outcome


@pytest.mark.parametrize("namespace", sorted({*namespaces.CONTROLLER_NAMESPACES, namespaces.KUBE_SYSTEM}))
def test_no_platform_namespace_ever_waits_on_kyverno_even_if_labelled_as_a_tenant(namespace):
    labels = {NAMESPACE_NAME_LABEL: namespace, TENANT_LABEL: namespace}
    assert verdict(verification("Enforce"), labels, [UNSIGNED], kyverno_up=False) == "admitted without Kyverno"


def test_every_image_list_of_a_pod_is_verified_with_the_policys_signers():
    [policy] = supply_chain.image_policies(verification())
    expressions = [validation["expression"] for validation in policy["spec"]["validations"]]
    assert expressions == [
        f"images.{images}.all(image, verifyImageSignatures(image, [attestors.signers]) > 0)"
        for images in ("containers", "initContainers", "ephemeralContainers")
    ]
    assert [a["name"] for a in policy["spec"]["attestors"]] == [supply_chain.ATTESTOR]
    assert "pods/ephemeralcontainers" in policy["spec"]["matchConstraints"]["resourceRules"][0]["resources"]


def test_the_verified_digest_replaces_the_tag_and_only_in_pods():
    [policy] = supply_chain.image_policies(verification())
    assert policy["spec"]["validationConfigurations"] == {"mutateDigest": True, "verifyDigest": True, "required": True}
    # autogen.go generates Deployment/Job/... rules unless the controller list is empty, not absent.
    assert policy["spec"]["autogen"]["podControllers"]["controllers"] == []
    rules = policy["spec"]["matchConstraints"]["resourceRules"]
    assert [rule["resources"] for rule in rules] == [["pods", "pods/ephemeralcontainers"]]


def _match_condition(request: dict[str, Any], obj: dict[str, Any], old: dict[str, Any] | None) -> bool:
    program = celpy.Environment().program(celpy.Environment().compile(supply_chain.SPEC_CHANGED))
    return bool(program.evaluate({
        "request": celpy.json_to_cel(request), "object": celpy.json_to_cel(obj), "oldObject": celpy.json_to_cel(old),
    }))


POD = {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "main", "image": SIGNED}]}}


@pytest.mark.parametrize("operation, changed, called", [
    ("CREATE", None, True),
    ("UPDATE", {"metadata": {"labels": {"app": "b"}}, "spec": POD["spec"]}, False),
    ("UPDATE", {"metadata": POD["metadata"], "spec": {"containers": [{"name": "main", "image": UNSIGNED}]}}, True),
])
def test_kyverno_is_called_on_pod_creation_and_on_spec_changes_only(operation, changed, called):
    obj, old = (POD, None) if changed is None else (changed, POD)
    assert _match_condition({"operation": operation}, obj, old) is called


def test_admission_controller_keeps_all_but_one_replica_through_a_drain():
    budget = supply_chain.kyverno_values(verification(replicas=3))["admissionController"]["podDisruptionBudget"]
    assert budget == {"enabled": True, "minAvailable": 2, "unhealthyPodEvictionPolicy": "AlwaysAllow"}


def test_a_single_admission_replica_gets_no_budget_that_would_block_every_drain():
    assert supply_chain.kyverno_values(verification(replicas=1))["admissionController"]["podDisruptionBudget"]["enabled"] is False


def test_kyverno_runs_on_the_system_nodes_hooks_included():
    placement = supply_chain.kyverno_values(verification())["global"]
    assert placement["nodeSelector"] == {"CriticalAddonsOnly": "true"}
    assert placement["tolerations"][0]["key"] == "CriticalAddonsOnly"


def test_tenant_admins_cannot_write_kyverno_policies_or_exceptions():
    # charts/kyverno/values.yaml aggregates policy write access into `admin` unless told not to.
    assert chart_values("kyverno", "3.9.0")["rbac"]["roles"]["aggregate"]["admin"] is True
    values = supply_chain.kyverno_values(verification())
    assert values["rbac"]["roles"]["aggregate"]["admin"] is False
    assert values["features"]["policyExceptions"]["enabled"] is False


def test_an_unanchored_subject_pattern_is_refused():
    with pytest.raises(ValueError, match="anchored"):
        KeylessIdentity.model_validate({"issuer": "https://token.actions.githubusercontent.com", "subjectRegExp": "acme-ai"})


def test_an_identity_names_one_subject():
    with pytest.raises(ValueError, match="exactly one of subject and subjectRegExp"):
        KeylessIdentity.model_validate({"issuer": "https://token.actions.githubusercontent.com"})


# --- pinning the platform-served model servers --------------------------------------------------------------


def _serving(document: dict[str, Any]) -> dict[str, Any]:
    return document["gpu-platform:tenants"][0]["inference"][0]["serving"]


def test_a_served_image_without_a_digest_is_refused_in_one_line_when_digests_are_required():
    document = fixture_document("multi-pool")
    _serving(document)["image"] = "vllm/vllm-openai:v0.11.0"
    with pytest.raises(ConfigError) as error:
        load(document)
    assert error.value.problems == [
        "gpu-platform:tenants[llm-training].inference[embeddings].serving.image: 'vllm/vllm-openai:v0.11.0' has no "
        "@sha256: digest and "
        "supplyChain.requireDigests is true: pin it as 'vllm/vllm-openai:v0.11.0@sha256:<digest>' "
        "(`crane digest vllm/vllm-openai:v0.11.0` prints it)"
    ]


def test_a_served_model_without_a_revision_is_refused_when_revisions_are_required():
    document = fixture_document("multi-pool")
    del _serving(document)["revision"]
    with pytest.raises(ConfigError) as error:
        load(document)
    [problem] = error.value.problems
    assert problem.startswith("gpu-platform:tenants[llm-training].inference[embeddings].serving.revision: not set")


def test_unpinned_servers_are_accepted_when_the_stack_asks_for_no_pinning():
    document = fixture_document("multi-pool")
    document["gpu-platform:supplyChain"] = {}
    _serving(document).update(image="vllm/vllm-openai:v0.11.0")
    del _serving(document)["revision"]
    assert load(document).supply_chain.image_verification is None


def test_the_server_loads_the_pinned_revision():
    config = load(fixture_document("multi-pool"))
    tenant = next(t for t in config.tenants if t.name == "llm-training")
    deployment = tenant.config.inference[0]
    manifest = vllm.server_deployment(tenant, deployment, vllm.tenant_flavor(tenant, deployment.flavor))
    args = manifest["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--revision") + 1] == "d4aa6901d3a41ba39fb536a557fa166f842b0e09"


# --- the render ------------------------------------------------------------------------------------------


def test_the_model_server_waits_for_the_policies_and_no_controller_does():
    recording = render_fixture("multi-pool")
    policy = declared(recording, "ImageValidatingPolicy", "gpu-platform-acme-ai-images")
    server = declared(recording, "Deployment", "embeddings", "llm-training")
    assert policy.urn in waits_for(recording, server)
    kyverno = {r.urn for r in recording.resources if short(r.urn).startswith("gpu-prod-supply-chain")}
    for release in recording.by_type(RELEASE):
        if release.inputs["name"] != supply_chain.RELEASE_NAME:
            assert not kyverno & waits_for(recording, release), release.inputs["name"]


def test_a_stack_without_image_verification_installs_no_kyverno():
    recording = render_fixture("single-pool")
    assert supply_chain.RELEASE_NAME not in {r.inputs["name"] for r in recording.by_type(RELEASE)}


def test_the_summary_names_each_policy_and_how_each_served_image_is_pinned():
    from offline.summary import render_summary

    summary = render_summary(render_fixture("multi-pool"), load(fixture_document("multi-pool")))
    section = summary[summary.index("## Supply chain") :].split("\n## ")[0]
    assert "`Enforce` mode" in section
    assert "| `gpu-platform-acme-ai-images` | `ghcr.io/acme-ai/*`, `registry.acme.example/ml/*` |" in section
    assert "| `llm-training/embeddings` |" in section and "| yes | `d4aa6901d3a41ba39fb536a557fa166f842b0e09` |" in section
