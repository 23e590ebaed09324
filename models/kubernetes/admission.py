"""ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1) as the API server applies it to one request.

kubernetes/kubernetes v1.35.0, staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/:
- validating/dispatcher.go: each binding whose policy exists and whose `validationActions` holds `Deny`
  refuses the request when its policy's validations fail.
- matching/matching.go `Matcher.Matches`: the policy's `matchConstraints`, then the binding's
  `matchResources`; each requires its namespace selector and a resource rule to match.
- ../webhook/predicates/rules/rules.go `Matcher.Matches`: a rule matches the request's operation,
  API group and resource; `*` is every resource but no subresource, `*/*` everything, `pods/*` every
  subresource of pods.
- ../webhook/predicates/namespace/matcher.go `MatchNamespaceSelector`: the selector against the labels
  of the request's namespace; a cluster-scoped request (no namespace) other than one on a Namespace is
  never excluded by a namespaceSelector.
- ../webhook/matchconditions/matcher.go `Match`: after the rules match, every `matchConditions`
  expression must be true for the policy to apply; a condition that fails to evaluate refuses the
  request under `failurePolicy: Fail`.
- validating/validator.go `Validate`: variables evaluate in order, each seeing the ones before; a
  validation fails when it evaluates to false; with `failurePolicy: Fail` an evaluation error refuses
  the request too.
"""

from __future__ import annotations

import fnmatch
import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .cel import bind, evaluate_in
from .labels import selects
from .rbac import matches
from .user import User


@dataclass(frozen=True)
class Request:
    """One API request as admission sees it."""

    operation: str  # CREATE, UPDATE, DELETE, CONNECT
    api_group: str
    resource: str  # plural, with `/subresource` where there is one
    namespace: str  # "" for a cluster-scoped request
    user: User
    object: Mapping[str, Any] | None = None
    old_object: Mapping[str, Any] | None = None
    namespace_labels: Mapping[str, str] = field(default_factory=dict)
    # The operation's options (DeleteOptions of a DELETE, CreateOptions, ...); `request.options` in CEL.
    options: Mapping[str, Any] | None = None

    def activation(self) -> dict[str, Any]:
        return {
            "object": self.object,
            "oldObject": self.old_object,
            "request": {
                "operation": self.operation,
                "namespace": self.namespace,
                "userInfo": self.user.info(),
                "resource": {"group": self.api_group, "resource": self.resource.split("/")[0]},
                "subResource": self.resource.partition("/")[2],
                "options": self.options,
            },
            "namespaceObject": (
                {"metadata": {"name": self.namespace, "labels": dict(self.namespace_labels)}} if self.namespace else None
            ),
        }


def admission_denials(objects: Sequence[Mapping[str, Any]], request: Request) -> list[str]:
    """The messages of every bound ValidatingAdmissionPolicy that refuses `request`."""
    policies = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ValidatingAdmissionPolicy"}
    activation = json.dumps(request.activation(), sort_keys=True)
    denials: list[str] = []
    for binding in (o for o in objects if o["kind"] == "ValidatingAdmissionPolicyBinding"):
        policy = policies.get(binding["spec"]["policyName"])
        if policy is None or "Deny" not in binding["spec"]["validationActions"]:
            continue
        selectors = [
            policy["spec"]["matchConstraints"].get("namespaceSelector"),
            binding["spec"].get("matchResources", {}).get("namespaceSelector"),
        ]
        if not all(_namespace_matches(s, request) for s in selectors if s is not None):
            continue
        if not any(rule_matches(rule, request) for rule in policy["spec"]["matchConstraints"]["resourceRules"]):
            continue
        denials += _policy_denials(json.dumps(policy["spec"], sort_keys=True), activation)
    return denials


# A policy's verdict on a request is a pure function of the two (JSON text here), and a table of attempts
# asks the same policy about the same request many times (every identity, every subset of policies):
# the CEL is evaluated once per pair.
@functools.lru_cache(maxsize=4096)
def _policy_denials(spec_json: str, activation_json: str) -> tuple[str, ...]:
    """What a policy whose `matchConstraints` match says of the request: () when it admits it or a
    matchCondition is false, else the messages of the failed conditions or of the failed validations."""
    spec, activation = json.loads(spec_json), _bound(activation_json)
    unmet = _unmet_conditions(spec, activation)
    if unmet is None:
        return ()
    if unmet:
        return tuple(unmet)
    return tuple(_violations(spec, activation))


@functools.lru_cache(maxsize=64)
def _bound(activation_json: str) -> dict[str, Any]:
    """A request's activation as CEL values, converted once for every policy that reads it."""
    return bind(json.loads(activation_json))


def _namespace_matches(selector: Mapping[str, Any], request: Request) -> bool:
    if not request.namespace and request.resource != "namespaces":
        return True
    return selects(selector, request.namespace_labels)


def _unmet_conditions(spec: Mapping[str, Any], activation: Mapping[str, Any]) -> list[str] | None:
    """None when a matchCondition is false (the policy does not apply); the errors of those that fail to
    evaluate (each refuses the request); [] when every condition holds."""
    errors = []
    for condition in spec.get("matchConditions") or ():
        verdict = evaluate_in(condition["expression"], activation)
        if isinstance(verdict, Exception):
            errors.append(f"matchCondition {condition['name']} fails to evaluate: {verdict}")
        elif not bool(verdict):
            return None
    return errors


def rule_matches(rule: Mapping[str, Any], request: Request) -> bool:
    return (
        matches(rule["apiGroups"], request.api_group)
        and any(_resource_matches(r, request.resource) for r in rule["resources"])
        and matches(rule["operations"], request.operation)
    )


def _resource_matches(pattern: str, resource: str) -> bool:
    """`*` is every resource but no subresource, `*/*` everything, `pods/*` every pods subresource."""
    if pattern == "*":
        return "/" not in resource
    return pattern == resource or ("/" in resource and fnmatch.fnmatchcase(resource, pattern))


def _violations(spec: Mapping[str, Any], activation: Mapping[str, Any]) -> list[str]:
    variables: dict[str, Any] = {}
    for variable in spec.get("variables") or ():
        value = evaluate_in(variable["expression"], {**activation, "variables": variables})
        if isinstance(value, Exception):
            return [f"variable {variable['name']} fails to evaluate: {value}"]
        variables[variable["name"]] = value
    messages = []
    for validation in spec["validations"]:
        verdict = evaluate_in(validation["expression"], {**activation, "variables": variables})
        if isinstance(verdict, Exception) or not bool(verdict):
            messages.append(validation.get("message", validation["expression"]))
    return messages
