"""NetworkPolicies of the platform's own namespaces: closed to tenants, open to what each needs.

The namespaces: `ACCESS`, where the stack creates them (components/platform.py).

Every pod in a platform namespace accepts connections only from:
- its own namespace (operator and webhook, NFD master and workers, Grafana and Prometheus, ...);
- `monitoring` (Prometheus scrapes every component; Grafana and Alertmanager talk to Prometheus);
- the namespaces listed for it in ACCESS, on the ports listed (KEDA's Prometheus trigger queries
  Prometheus in `monitoring`);
- the VPC, on the ports the API server calls: admission webhooks and aggregated APIs. The EKS control
  plane reaches them through the cross-account ENIs it places in the cluster's subnets, so its source
  is a VPC address; no other port of a platform pod is open to the VPC.
Kubelet probes come from the node's own address, which the VPC CNI's network policy agent always
allows for pods under namespaced policies (aws/aws-network-policy-agent#56, #65). Egress stays open:
controllers call the API server and AWS. Tenant pods are also held by their own namespace's egress
policy (components/tenants.py), which allows no private address outside the namespace.

Namespaced NetworkPolicies rather than the charts' own `networkPolicy` values (keda, kube-prometheus-stack,
dra-driver-nvidia-gpu have them, each off by default): one shape for every namespace, rendered and
checked offline here; the charts' templates are not vendored, so what they would render cannot be.
Rather than an admin-tier ClusterNetworkPolicy (networking.k8s.aws/v1alpha1): vpc-cni v1.21.1's node
agent reads its ClusterPolicyEndpoints (charts/aws-vpc-cni/templates/clusterrole.yaml), but the CRD is
served by the EKS control plane, not vendored here, and pods under a ClusterNetworkPolicy alone lose the
node-IP allowance in strict mode (aws/aws-network-policy-agent#635). kube-system keeps EKS's defaults:
CoreDNS serves every pod and the EKS add-ons there are EKS-managed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from config import namespaces

from .lib.namespaces import namespace_peer
from .lib.resources import Children, declare


@dataclass(frozen=True)
class NamespaceAccess:
    """What a platform namespace accepts besides itself and `monitoring`."""

    api_server_ports: tuple[int, ...] = ()  # container ports of its webhooks and aggregated APIs
    from_namespaces: Mapping[str, tuple[int, ...]] = field(default_factory=dict)


# Container ports, each from the pinned chart's defaults.
ACCESS: dict[str, NamespaceAccess] = {
    # kube-prometheus-stack 88.5.3 values.yaml prometheusOperator.tls.internalPort: the operator's
    # admission webhook. Prometheus (9090) also answers KEDA's Prometheus triggers and OpenCost's queries
    # (components/lib/prometheus.py PROMETHEUS_URL).
    namespaces.MONITORING: NamespaceAccess(
        api_server_ports=(10250,), from_namespaces={namespaces.KEDA: (9090,), namespaces.OPENCOST: (9090,)}
    ),
    # keda 2.20.2 values.yaml: admission webhooks on 9443 (`webhooks.port` empty means 9443), the
    # external-metrics APIService on metricsServer portHttpsTarget 6443.
    namespaces.KEDA: NamespaceAccess(api_server_ports=(6443, 9443)),
    # kueue 0.19.2: webhooks on 9443 (charts/kueue/values.yaml webhookService.ports targetPort), the
    # visibility APIService on 8082 (charts/kueue/templates/visibility/service.yaml targetPort).
    namespaces.KUEUE: NamespaceAccess(api_server_ports=(8082, 9443)),
    # gpu-operator v26.7.0 runs no admission webhook.
    namespaces.GPU_OPERATOR: NamespaceAccess(),
    # dra-driver-nvidia-gpu 0.4.1 values.yaml webhook.containerPort (the webhook is off by default).
    namespaces.DRA_DRIVER: NamespaceAccess(api_server_ports=(443,)),
    # kubeflow-trainer values.yaml manager webhook.port 9443; its JobSet subchart's webhook, 9443 too.
    namespaces.TRAINER: NamespaceAccess(api_server_ports=(9443,)),
    # OpenCost serves its API to Grafana and people (port-forward); Prometheus scrapes it.
    namespaces.OPENCOST: NamespaceAccess(),
    # kyverno 3.9.0 values.yaml: admissionController.webhookServer.port and cleanupController's webhook, 9443.
    namespaces.KYVERNO: NamespaceAccess(api_server_ports=(9443,)),
    # external-secrets 2.9.0 values.yaml webhook.port: the webhook that validates ExternalSecrets and stores.
    namespaces.EXTERNAL_SECRETS: NamespaceAccess(api_server_ports=(10250,)),
    # Pause containers listen on nothing; the policy keeps the namespace closed like every other.
    namespaces.HEADROOM: NamespaceAccess(),
}


def _ports(ports: Sequence[int]) -> list[dict[str, Any]]:
    return [{"protocol": "TCP", "port": port} for port in ports]


def platform_network_policy(namespace: str, vpc_cidr: str) -> dict[str, Any]:
    """The one ingress policy of a platform namespace: itself, monitoring, ACCESS, the API server's ports."""
    access = ACCESS[namespace]
    ingress: list[dict[str, Any]] = [{"from": [{"podSelector": {}}]}]
    if namespace != namespaces.MONITORING:
        ingress.append({"from": [namespace_peer(namespaces.MONITORING)]})
    for source, ports in sorted(access.from_namespaces.items()):
        ingress.append({"from": [namespace_peer(source)], "ports": _ports(ports)})
    if access.api_server_ports:
        ingress.append({"from": [{"ipBlock": {"cidr": vpc_cidr}}], "ports": _ports(access.api_server_ports)})
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "platform-ingress", "namespace": namespace},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": ingress},
    }


class PlatformNetwork(pulumi.ComponentResource):
    """One ingress NetworkPolicy in each platform namespace the stack creates."""

    def __init__(
        self,
        name: str,
        namespaces_created: Mapping[str, Sequence[pulumi.Resource]],
        *,
        vpc_cidr: str,
        provider: k8s.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ):
        """`namespaces_created`: namespace -> what the policy waits for (the release installed there);
        `vpc_cidr`: `PlatformConfig.network.vpc_cidr`, where the API server's webhook calls come from."""
        super().__init__("gpu-platform:network:PlatformNetwork", name, None, opts)
        for namespace, creators in sorted(namespaces_created.items()):
            declare(
                f"{name}-{namespace}",
                platform_network_policy(namespace, vpc_cidr),
                Children(self, provider, creators).opts(),
            )
        self.register_outputs({"namespaces": sorted(namespaces_created)})
