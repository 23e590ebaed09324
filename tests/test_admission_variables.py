"""models/kubernetes/admission.py: a policy's variables keep their CEL types when later expressions read them.

kubernetes v1.35.0 staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/validating/validator.go: each variable is
evaluated once and later expressions see its value as it is; a boolean variable is a boolean in `?:`, `&&` and `!`.
"""

from __future__ import annotations

from typing import Any

import pytest

from models.kubernetes.admission import Request, admission_denials
from models.kubernetes.user import User

API = "admissionregistration.k8s.io/v1"


def objects(expression: str) -> list[dict[str, Any]]:
    rule = {"apiGroups": [""], "apiVersions": ["*"], "resources": ["pods"], "operations": ["CREATE"]}
    policy = {
        "apiVersion": API, "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "p"},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"namespaceSelector": {}, "resourceRules": [rule]},
            "variables": [
                {"name": "names", "expression": "object.spec.containers.map(c, c.name) + ['x']"},
                {"name": "first", "expression": "has(object.spec.schedulerName) && object.spec.schedulerName == 'kai'"},
            ],
            "validations": [{"expression": expression, "message": "refused"}],
        },
    }
    binding = {"apiVersion": API, "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "p"},
               "spec": {"policyName": "p", "validationActions": ["Deny"], "matchResources": {"namespaceSelector": {}}}}
    return [policy, binding]


@pytest.mark.parametrize(
    "scheduler, expression, refused",
    [
        ("kai", "(variables.first ? object.spec.containers[0].name : '') == 'main'", False),
        ("other", "(variables.first ? object.spec.containers[0].name : '') == 'main'", True),
        ("kai", "!variables.first", True),
        ("other", "size(variables.names) == 2 && !variables.first", False),
    ],
)
def test_a_boolean_variable_is_a_boolean_beside_a_list_variable(scheduler, expression, refused):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "t"},
           "spec": {"schedulerName": scheduler, "containers": [{"name": "main", "image": "busybox:1.36"}]}}
    request = Request("CREATE", "", "pods", "t", User("u", ()), pod, None, {})
    assert admission_denials(objects(expression), request) == (["refused"] if refused else [])
