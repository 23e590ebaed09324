"""Kyverno, and the image signature policies it enforces in tenant namespaces.

Everything here follows kyverno/kyverno at tag kyverno-chart-3.9.0 (the v1.19.0 commit): the chart
(charts/kyverno/values.yaml, templates/rbac/policies.yaml, templates/_helpers/_pdb.tpl), the webhook
controller (pkg/controllers/webhook/validating.go), the image verification engine
(pkg/image/verification/evaluator/policy.go, pkg/cel/libs/imageverify/impl.go, pkg/cel/compiler/images.go,
pkg/cel/policies/ivpol/autogen/autogen.go) and the ImageValidatingPolicy CRD
(config/crds/policies.kyverno.io/). When bumping Kyverno, diff those between the two tags.

Why ImageValidatingPolicy (`policies.kyverno.io/v1`) and not ClusterPolicy `verifyImages`: Kyverno 1.17
made the CEL policy types v1 (stable) and deprecated ClusterPolicy, which gets only critical fixes
through 1.19 and is to be removed in 1.20 (kyverno.io release announcement for 1.17).

Availability. A Kyverno outage must never stop the platform's controllers:
- every policy selects tenant namespaces only (`matchConstraints.namespaceSelector`), and Kyverno
  builds each policy's webhook from that selector merged with the chart's `config.webhooks`
  selector (validating.go `resolveNamespaceSelector`), which here excludes kube-system and every
  platform namespace as well: the API server never calls Kyverno for a platform pod;
- the admission controller runs `admissionReplicas` replicas on the system nodes, spread by the
  chart's anti-affinity, with a PodDisruptionBudget that keeps all but one up;
- `Audit` policies fail open (`failurePolicy: Ignore`); `Enforce` policies fail closed, which holds
  tenants' pods (not the platform's) while no replica answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from config import namespaces
from config.labels import NAMESPACE_NAME_LABEL, TENANT_LABEL
from config.supply_chain import ImagePolicyConfig, ImageVerificationConfig, KeylessIdentity
from config.versions import ChartPin

from .lib.helm import helm_release
from .lib.namespaces import controller_namespace
from .lib.placement import system_node_selector, system_node_toleration
from .lib.resources import Children, declare

CHART_KEY = "kyverno"
NAMESPACE = namespaces.KYVERNO
RELEASE_NAME = "kyverno"
API_VERSION = "policies.kyverno.io/v1"
POLICY_PREFIX = "gpu-platform-"
ATTESTOR = "signers"
# Signature lookups reach the registry and the Rekor log; 15 s leaves them room while a stuck lookup
# cannot hold a pod's creation for the API server's 30 s maximum.
WEBHOOK_TIMEOUT_SECONDS = 15
# The pod's image lists as Kyverno's pod extractors name them (pkg/cel/compiler/images.go
# podImageExtractors); each holds only the images the policy's globs match (evaluator/policy.go).
IMAGE_LISTS = ("containers", "initContainers", "ephemeralContainers")
# Pods only: pods/ephemeralcontainers is how `kubectl debug` adds a container to a running pod.
POD_RESOURCES = ("pods", "pods/ephemeralcontainers")
# The API server calls Kyverno for a pod update only when the spec changed (its images are spec):
# label, annotation and finalizer updates never wait on signature lookups.
SPEC_CHANGED = "request.operation == 'CREATE' || object.spec != oldObject.spec"


class SupplyChain(pulumi.ComponentResource):
    """Kyverno in `kyverno` on the system nodes, and one ImageValidatingPolicy per configured policy.

    The policies wait for the release: the chart installs their CRD (through its kyverno-api
    dependency) and the admission controller that serves them.
    """

    namespace: pulumi.CustomResource
    release: k8s.helm.v3.Release
    policies: dict[str, pulumi.CustomResource]

    def __init__(
        self,
        name: str,
        verification: ImageVerificationConfig,
        *,
        chart: ChartPin,
        provider: k8s.Provider,
        depends_on: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ):
        """
        :param verification: `PlatformConfig.supply_chain.image_verification`: the mode, policies and replicas.
        :param chart: the Kyverno chart pin (`PlatformConfig.charts["kyverno"]`).
        :param provider: the cluster's Kubernetes provider.
        :param depends_on: what must exist before the controller is installed (system nodes, add-ons).
        """
        super().__init__("gpu-platform:supply-chain:SupplyChain", name, None, opts)
        children = Children(self, provider, depends_on)
        self.namespace = declare(f"{name}-namespace", controller_namespace(NAMESPACE), children.opts())
        self.release = helm_release(
            f"{name}-release",
            release_name=RELEASE_NAME,
            pin=chart,
            namespace=NAMESPACE,
            values=kyverno_values(verification),
            opts=children.opts(self.namespace),
        )
        self.policies = {
            policy.name: declare(f"{name}-policy-{policy.name}", manifest, children.opts(self.release))
            for policy, manifest in zip(verification.policies, image_policies(verification), strict=True)
        }
        self.register_outputs({})


def kyverno_values(verification: ImageVerificationConfig) -> dict[str, Any]:
    """The chart's values: placement, replicas, webhook scope, and what tenants may not do to Kyverno."""
    replicas = verification.admission_replicas
    return {
        # charts/kyverno/values.yaml `global.nodeSelector`/`tolerations`: every controller, hook Job
        # (the pre-delete webhook cleanup, the post-upgrade CRD migration) and test pod.
        "global": {"nodeSelector": system_node_selector(), "tolerations": [system_node_toleration()]},
        # The chart aggregates read-write access to every Kyverno policy kind, PolicyExceptions included,
        # into the built-in `admin` role (templates/rbac/policies.yaml), which tenant admins hold in their
        # namespace: they could write a namespaced policy or an exception. Reading stays (`view`).
        "rbac": {"roles": {"aggregate": {"admin": False, "view": True}}},
        "config": {
            "excludeKyvernoNamespace": True,
            "webhooks": {"namespaceSelector": {"matchExpressions": [platform_namespaces_excluded()]}},
        },
        # Exceptions are honoured only with the flag (cmd/kyverno/main.go passes
        # PolicyExceptionEnabled() to the ImageValidatingPolicy provider); the chart's default is off.
        "features": {"policyExceptions": {"enabled": False}},
        "admissionController": {
            "replicas": replicas,
            # templates/_helpers/_pdb.tpl: `minAvailable` falls back to 1 when falsy, so one replica gets
            # no budget at all (it would block every drain of its node).
            "podDisruptionBudget": {
                "enabled": replicas > 1,
                "minAvailable": max(1, replicas - 1),
                "unhealthyPodEvictionPolicy": "AlwaysAllow",
            },
        },
        # Generate and mutate-existing policies (background) and cleanup policies: none are declared.
        "backgroundController": {"enabled": False},
        "cleanupController": {"enabled": False},
    }


def platform_namespaces_excluded() -> dict[str, Any]:
    """A selector requirement: none of Kubernetes' own namespaces nor any platform controller's."""
    excluded = sorted({*namespaces.KUBERNETES_NAMESPACES, *namespaces.CONTROLLER_NAMESPACES} - {"default"})
    return {"key": NAMESPACE_NAME_LABEL, "operator": "NotIn", "values": excluded}


def image_policies(verification: ImageVerificationConfig) -> list[dict[str, Any]]:
    """One ImageValidatingPolicy per configured policy, in config order."""
    return [image_validating_policy(policy, verification.mode) for policy in verification.policies]


def image_validating_policy(policy: ImagePolicyConfig, mode: str) -> dict[str, Any]:
    """Pods in tenant namespaces whose images `policy.images` matches must carry a keyless signature
    of one of `policy.identities`; other images pass untouched (impl.go skips unmatched images)."""
    enforce = mode == "Enforce"
    return {
        "apiVersion": API_VERSION,
        "kind": "ImageValidatingPolicy",
        "metadata": {"name": f"{POLICY_PREFIX}{policy.name}", "labels": {"app.kubernetes.io/managed-by": "gpu-platform"}},
        "spec": {
            "validationActions": ["Deny"] if enforce else ["Audit"],
            "failurePolicy": "Fail" if enforce else "Ignore",
            "webhookConfiguration": {"timeoutSeconds": WEBHOOK_TIMEOUT_SECONDS},
            "matchConstraints": {
                "namespaceSelector": {"matchExpressions": [{"key": TENANT_LABEL, "operator": "Exists"}]},
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": list(POD_RESOURCES),
                    }
                ],
            },
            "matchConditions": [{"name": "spec-changed", "expression": SPEC_CHANGED}],
            # Admission only: a background rescan would look every running pod's images up in the registry
            # and Rekor each hour, and has no admission request for the match condition to read.
            "evaluation": {"background": {"enabled": False}},
            # No rules for Deployments, Jobs and the like (autogen.go generates them unless the list is
            # empty): their pods are checked, and the digests Kyverno writes in never touch objects Pulumi owns.
            "autogen": {"podControllers": {"controllers": []}},
            "matchImageReferences": [{"glob": glob} for glob in policy.images],
            # The verified digest replaces the tag in the pod, so the node pulls the bytes that were verified.
            "validationConfigurations": {"mutateDigest": True, "verifyDigest": True, "required": True},
            "attestors": [{"name": ATTESTOR, "cosign": {"keyless": {"identities": [_identity(i) for i in policy.identities]}}}],
            "validations": [
                {
                    "expression": f"images.{images}.all(image, verifyImageSignatures(image, [attestors.{ATTESTOR}]) > 0)",
                    "message": f"{images}: an image matching {', '.join(policy.images)} is not signed by an identity "
                    f"policy {policy.name} trusts",
                }
                for images in IMAGE_LISTS
            ],
        },
    }


def _identity(identity: KeylessIdentity) -> dict[str, str]:
    subject = {"subject": identity.subject} if identity.subject is not None else {"subjectRegExp": identity.subject_reg_exp}
    return {"issuer": identity.issuer, **subject}  # type: ignore[dict-item]
