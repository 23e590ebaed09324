"""The project's conformance check: each kind of problem it exists to catch, against the vendored upstream files.

Each bad sample in `tests/fixtures/validate/` carries one mistake; its render holds the sample and the
pinned releases whose CRDs are in scope, and the check must report exactly the one line for it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from config.versions import CHARTS
from models.kubernetes.cel import CelResult, cel_findings
from offline.__main__ import main
from offline.helm_values import release_problems, values_findings
from offline.openapi import Finding, schema_findings, with_defaults
from offline.validate import Report, validate_render

SAMPLES = Path(__file__).resolve().parent / "fixtures" / "validate"
KUBERNETES = "1.35"
# The releases that put Karpenter's and Kueue's CRDs in scope, as the render writes them.
CRD_RELEASES = ("karpenter-crd", "kueue")


def _release(chart: str, values: dict[str, Any] | None = None) -> dict[str, Any]:
    pin = CHARTS[chart]
    return {"chart": pin.chart, "name": chart, "namespace": "kube-system", "repository": pin.repository,
            "values": values or {}, "version": pin.version}


def _render(directory: Path, manifests: str, releases: list[dict[str, Any]] | None = None, plan: list | None = None) -> Path:
    """A render directory as `python -m offline render` writes one, holding what the test gives it."""
    (directory / "helm").mkdir(parents=True)
    (directory / "manifests.yaml").write_text(manifests)
    for release in releases if releases is not None else [_release(chart) for chart in CRD_RELEASES]:
        (directory / "helm" / f"{release['name']}.yaml").write_text(yaml.safe_dump(release))
    if plan is not None:
        (directory / "plan.json").write_text(json.dumps(plan))
    return directory


def _check(tmp_path: Path, sample: str) -> Report:
    return validate_render(_render(tmp_path / "render", (SAMPLES / sample).read_text()), KUBERNETES)


def test_a_good_object_of_each_kind_passes(tmp_path):
    report = _check(tmp_path, "good.yaml")
    assert report.problems == []
    assert report.objects == 3 + len(CRD_RELEASES)


KARPENTER = f"karpenter-crd {CHARTS['karpenter-crd'].version}"
KUEUE = f"kueue {CHARTS['kueue'].version}"
VIOLATIONS = [
    ("nodepool-unknown-field.yaml",
     "karpenter.sh/v1 NodePool gpu: spec.template.spec.taint: unknown field (the API server would drop it)"),
    ("nodepool-unknown-consolidation-policy.yaml",
     'karpenter.sh/v1 NodePool gpu: spec.disruption.consolidationPolicy: "Sometimes" is not one of '
     '"WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"'),
    ("nodepool-restricted-requirement.yaml",
     'karpenter.sh/v1 NodePool gpu: spec.template.spec.requirements[0].key: label "karpenter.sh/nodepool" is '
     'restricted (rule: self != "karpenter.sh/nodepool")'),
    ("nodepool-requirement-in-karpenter-domain.yaml",
     'karpenter.sh/v1 NodePool gpu: spec.template.spec.requirements[0].key: label domain "karpenter.sh" is '
     'restricted (rule: self in ["karpenter.sh/capacity-type", "karpenter.sh/nodepool"] || '
     '!self.find("^([^/]+)").endsWith("karpenter.sh"))'),
    ("ec2nodeclass-unknown-alias-family.yaml",
     "karpenter.k8s.aws/v1 EC2NodeClass gpu: spec.amiSelectorTerms[0].alias: family is not supported, must be one "
     "of the following: 'al2', 'al2023', 'bottlerocket', 'windows2019', 'windows2022', 'windows2025' "
     "(rule: self.split('@')[0] in ['al2','al2023','bottlerocket','windows2019','windows2022','windows2025'])"),
    ("clusterqueue-flavor-without-a-covered-resource.yaml",
     "kueue.x-k8s.io/v1beta2 ClusterQueue research: spec.resourceGroups[0]: flavors must have the same number of "
     "resources as the coveredResources (rule: self.flavors.all(x, size(x.resources) == size(self.coveredResources)))"),
    ("nodepool-unserved-version.yaml",
     f"karpenter.sh/v1beta1 NodePool gpu: apiVersion: the NodePool CRD of {KARPENTER} does not serve v1beta1; "
     "it serves karpenter.sh/v1"),
    ("localqueue-deprecated-version.yaml",
     f"kueue.x-k8s.io/v1beta1 LocalQueue research/default: apiVersion: deprecated in the CRD of {KUEUE}: "
     "This version is deprecated. Use v1beta2 instead."),
    ("cronjob-removed-version.yaml",
     "batch/v1beta1 CronJob research/nightly: apiVersion: Kubernetes 1.35 does not serve batch/v1beta1 CronJob; "
     "it serves CronJob as batch/v1"),
    ("deployment-unknown-field.yaml",
     "apps/v1 Deployment inference/chat: spec.template.spec.containers[0].resource: unknown field "
     "(the API server would drop it)"),
    ("widget-without-a-crd.yaml",
     "widgets.example.com/v1 Widget research/one: kind: no CRD of the render's charts or manifests defines Widget "
     "in group widgets.example.com"),
]


@pytest.mark.parametrize(("sample", "problem"), VIOLATIONS, ids=[sample for sample, _ in VIOLATIONS])
def test_each_bad_sample_is_reported_with_its_path_and_reason(tmp_path, sample, problem):
    assert _check(tmp_path, sample).problems == [f"manifests.yaml#1 {problem}"]


def test_a_crd_the_manifests_declare_is_in_scope_and_its_library_rules_are_counted_not_judged(tmp_path):
    crd = yaml.safe_load((SAMPLES / "crd-with-a-kubernetes-library-rule.yaml").read_text())
    good = {"apiVersion": "example.com/v1", "kind": "Budget", "metadata": {"name": "a"}, "spec": {"limit": "2Gi"}}
    bad = {**good, "metadata": {"name": "b"}, "spec": {"limit": "2Gi", "owner": ""}}
    report = validate_render(_render(tmp_path / "render", yaml.safe_dump_all([crd, good, bad]), []), KUBERNETES)
    # `isQuantity` is Kubernetes' quantity library, which cel-python lacks: counted once, neither passed nor failed.
    assert report.cel_not_evaluated == 1
    assert report.problems == [
        "manifests.yaml#3 example.com/v1 Budget b: spec.owner: owner may not be empty (rule: self.size() > 0)"
    ]


def test_a_malformed_crd_in_the_manifests_is_reported_not_used(tmp_path):
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "budgets.example.com"},
    }
    report = validate_render(_render(tmp_path / "render", yaml.safe_dump(crd), []), KUBERNETES)
    assert report.problems == [
        "manifests.yaml#1 apiextensions.k8s.io/v1 CustomResourceDefinition budgets.example.com: spec: required field is missing"
    ]


RANGE = {
    "type": "object",
    "properties": {"min": {"type": "integer"}, "max": {"type": "integer"}},
    "x-kubernetes-validations": [
        {"rule": "self.min <= self.max", "message": "min above max"},
        {"rule": "self.min == oldSelf.min", "message": "min is immutable"},
    ],
}


def test_a_rule_reading_an_unset_field_is_a_problem_as_at_admission():
    assert cel_findings({"min": 1}, RANGE) == CelResult(
        [Finding((), "rule fails to evaluate (no such member in mapping: 'max'), so the API server rejects the object "
                     "(rule: self.min <= self.max)")],
        [],
    )


def test_transition_rules_are_skipped_not_counted():
    assert cel_findings({"min": 1, "max": 2}, RANGE) == CelResult([], [])
    assert cel_findings({"min": 3, "max": 2}, RANGE) == CelResult([Finding((), "min above max (rule: self.min <= self.max)")], [])


def test_schema_defaults_apply_before_validation():
    schema = {
        "type": "object",
        "properties": {"mode": {"type": "string", "default": "fast", "enum": ["fast", "safe"]}, "n": {"type": "integer"}},
        "required": ["mode"],
    }
    assert with_defaults({"n": 1}, schema) == {"n": 1, "mode": "fast"}
    assert schema_findings(with_defaults({"n": 1}, schema), schema) == []
    assert schema_findings({"n": 1}, schema) == [Finding(("mode",), "required field is missing")]


OPENAPI_CASES = [
    ("int-or-string takes either", {"x-kubernetes-int-or-string": True}, 3, []),
    ("the int-or-string format takes either", {"type": "string", "format": "int-or-string"}, 3, []),
    ("int-or-string refuses a list", {"x-kubernetes-int-or-string": True}, [3], ["must be an integer or a string, not a list"]),
    ("nullable admits null", {"type": "string", "nullable": True}, None, []),
    ("a quantity format must parse", {"type": "string", "format": "quantity"}, "2 GiB", ['"2 GiB" is not a valid quantity']),
    ("preserve-unknown-fields keeps any field", {"type": "object", "x-kubernetes-preserve-unknown-fields": True}, {"a": 1}, []),
    ("an embedded resource names its kind", {"type": "object", "x-kubernetes-embedded-resource": True,
                                            "x-kubernetes-preserve-unknown-fields": True},
     {"apiVersion": "v1", "metadata": {"name": "x"}}, ["required field is missing"]),
]


@pytest.mark.parametrize(("case", "schema", "value", "reasons"), OPENAPI_CASES, ids=[c[0] for c in OPENAPI_CASES])
def test_openapi_specifics(case, schema, value, reasons):
    assert [f.reason for f in schema_findings(value, schema)] == reasons


# --- Helm values ------------------------------------------------------------------------------------------

def test_an_unknown_helm_values_key_is_reported(tmp_path):
    version = CHARTS["karpenter"].version
    release = {**yaml.safe_load((SAMPLES / "karpenter-values-unknown-key.yaml").read_text()), "version": version}
    report = validate_render(_render(tmp_path / "render", "", [release]), KUBERNETES)
    assert report.problems == [
        f"helm/karpenter.yaml karpenter {version}: values.replicaCount: not a key of the chart's values.yaml"
    ]


def test_subchart_keys_are_checked_against_the_vendored_subchart_defaults():
    release = _release("kube-prometheus-stack", {"grafana": {"adminUser": "ops", "replicas": 2, "replicaz": 2}})
    version = CHARTS["kube-prometheus-stack"].version
    assert release_problems("helm/kps.yaml", release) == [
        f"helm/kps.yaml kube-prometheus-stack {version}: values.grafana.replicaz: not a key of subchart grafana's values.yaml"
    ]


DEFAULTS = {
    "podAnnotations": {},
    "affinity": None,
    "nodeSelector": {"kubernetes.io/os": "linux"},
    "controller": {"resources": {}, "replicas": 1, "env": [], "enabled": True},
}
VALUES_CASES = [
    ("keys beneath an empty-map default are free-form", {"podAnnotations": {"a/b": "c"}}, []),
    ("keys beneath a null default are free-form", {"affinity": {"nodeAffinity": {}}}, []),
    ("a map keyed by label keys is free-form", {"nodeSelector": {"CriticalAddonsOnly": "true"}}, []),
    ("lists are not descended into", {"controller": {"env": [{"anything": 1}]}}, []),
    ("an unknown nested key", {"controller": {"replica": 2}},
     [(("controller", "replica"), "not a key of the chart's values.yaml")]),
    ("a map where the chart has a scalar", {"controller": {"replicas": {"min": 1}}},
     [(("controller", "replicas"), "is a map where the chart's values.yaml has an integer")]),
    ("a string where the chart has a switch", {"controller": {"enabled": "false"}},
     [(("controller", "enabled"), "is a string where the chart's values.yaml has a boolean")]),
    ("a scalar where the chart has a list", {"controller": {"env": "A=1"}},
     [(("controller", "env"), "is a string where the chart's values.yaml has a list")]),
]


@pytest.mark.parametrize(("case", "values", "findings"), VALUES_CASES, ids=[c[0] for c in VALUES_CASES])
def test_helm_values_key_paths(case, values, findings):
    assert [(f.path, f.reason) for f in values_findings(values, DEFAULTS)] == findings


def test_a_subchart_without_vendored_defaults_is_not_checked():
    assert values_findings({"crds": {"anything": True}}, {}, {"crds": None}) == []


# --- the command ------------------------------------------------------------------------------------------

def test_the_command_exits_0_clean_1_on_problems_2_on_usage_errors(tmp_path, capsys):
    good = _render(tmp_path / "good", (SAMPLES / "good.yaml").read_text())
    bad = _render(tmp_path / "bad", (SAMPLES / "nodepool-unknown-field.yaml").read_text())

    assert main(["validate", str(good), "--k8s-version", KUBERNETES]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "5 objects checked, 0 problems, 0 CEL rules not evaluated"

    assert main(["validate", str(bad), "--k8s-version", KUBERNETES]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "3 objects checked, 1 problem, 0 CEL rules not evaluated"
    assert lines[0].startswith("manifests.yaml#1 karpenter.sh/v1 NodePool gpu: spec.template.spec.taint: ")

    assert main(["validate", str(tmp_path / "missing")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "is not a render directory" in err and "Traceback" not in err


def test_the_kubernetes_version_defaults_to_the_one_the_render_deploys(tmp_path, capsys):
    """FlowSchema's v1beta3 was last served by 1.31: fine for a 1.31 render, a problem when checked as 1.35."""
    flow_schema = yaml.safe_dump({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1beta3", "kind": "FlowSchema", "metadata": {"name": "batch"},
        "spec": {"priorityLevelConfiguration": {"name": "workload-low"}},
    })
    plan = [{"type": "eks:index:Cluster", "inputs": {"version": "1.31"}}]
    render = _render(tmp_path / "render", flow_schema, [], plan)
    assert validate_render(render).problems == []
    assert validate_render(render, "1.35").problems == [
        "manifests.yaml#1 flowcontrol.apiserver.k8s.io/v1beta3 FlowSchema batch: apiVersion: Kubernetes 1.35 does not "
        "serve flowcontrol.apiserver.k8s.io/v1beta3 FlowSchema; it serves FlowSchema as flowcontrol.apiserver.k8s.io/v1"
    ]
    (render / "plan.json").write_text("[]")
    assert main(["validate", str(render)]) == 2
    assert "pass --k8s-version" in capsys.readouterr().err


def test_an_ecr_token_generator_is_checked_against_the_vendored_generator_crd(tmp_path):
    """`regin` for `region`: the API server would drop it and refuse the generator for its missing region."""
    generator = (
        "apiVersion: generators.external-secrets.io/v1alpha1\nkind: ECRAuthorizationToken\n"
        "metadata: {name: ecr-pull, namespace: research}\nspec: {regin: us-east-1, role: arn:aws:iam::111122223333:role/r}\n"
    )
    report = validate_render(_render(tmp_path / "render", generator, [_release("external-secrets")]), KUBERNETES)
    prefix = "manifests.yaml#1 generators.external-secrets.io/v1alpha1 ECRAuthorizationToken research/ecr-pull: spec."
    assert report.problems == [
        f"{prefix}region: required field is missing",
        f"{prefix}regin: unknown field (the API server would drop it)",
    ]
