"""NetworkPolicy (networking.k8s.io/v1) as an enforcing network plugin answers one TCP connection.

kubernetes/kubernetes v1.35.0 staging/src/k8s.io/api/networking/v1/types.go (`NetworkPolicySpec`,
`NetworkPolicyPeer`): a pod no policy of a direction selects is open in that direction; a selected pod
allows what any selecting policy's rules allow, and a connection needs the source's egress and the
destination's ingress. A rule without peers matches every peer, without ports every port; a peer with
only a `podSelector` means pods of the policy's own namespace; `ipBlock` matches addresses, minus `except`.
A `namespaceSelector` sees the namespace's labels, `kubernetes.io/metadata.name` included.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .labels import NAMESPACE_NAME_LABEL, selects


@dataclass(frozen=True)
class Endpoint:
    """A pod: its namespace (and that namespace's labels), its labels, its address."""

    namespace: str
    ip: str
    labels: Mapping[str, str] = field(default_factory=dict)
    namespace_labels: Mapping[str, str] = field(default_factory=dict)

    def all_namespace_labels(self) -> dict[str, str]:
        return {**self.namespace_labels, NAMESPACE_NAME_LABEL: self.namespace}


def connection_allowed(objects: Sequence[Mapping[str, Any]], source: Endpoint, destination: Endpoint, port: int) -> bool:
    """Whether NetworkPolicies let `source` open a TCP connection to `destination` on `port`."""
    return _direction_allows(objects, source, destination, port, "Egress") and _direction_allows(
        objects, destination, source, port, "Ingress"
    )


def policy_types(spec: Mapping[str, Any]) -> list[str]:
    """The directions a policy governs. Unset, the API server defaults them (kubernetes/kubernetes v1.35.0
    pkg/apis/networking/v1/defaults.go SetDefaults_NetworkPolicy): Ingress always, and Egress too when the
    policy has egress rules."""
    if spec.get("policyTypes"):
        return list(spec["policyTypes"])
    return ["Ingress", "Egress"] if spec.get("egress") else ["Ingress"]


def _direction_allows(objects: Sequence[Mapping[str, Any]], pod: Endpoint, peer: Endpoint, port: int, direction: str) -> bool:
    selecting = [
        o["spec"]
        for o in objects
        if o["kind"] == "NetworkPolicy"
        and o["metadata"]["namespace"] == pod.namespace
        and direction in policy_types(o["spec"])
        and selects(o["spec"]["podSelector"], pod.labels)
    ]
    if not selecting:
        return True
    key, peers_key = ("egress", "to") if direction == "Egress" else ("ingress", "from")
    for spec in selecting:
        for rule in spec.get(key) or ():
            peers = rule.get(peers_key)
            peers_ok = not peers or any(_peer_matches(p, pod, peer) for p in peers)
            ports_ok = not rule.get("ports") or any(p.get("port") in (None, port) for p in rule["ports"])
            if peers_ok and ports_ok:
                return True
    return False


def _peer_matches(peer_rule: Mapping[str, Any], pod: Endpoint, peer: Endpoint) -> bool:
    if "ipBlock" in peer_rule:
        block = peer_rule["ipBlock"]
        address = ipaddress.ip_address(peer.ip)
        return address in ipaddress.ip_network(block["cidr"]) and not any(
            address in ipaddress.ip_network(e) for e in block.get("except", ())
        )
    namespace_ok = (
        selects(peer_rule["namespaceSelector"], peer.all_namespace_labels())
        if "namespaceSelector" in peer_rule
        else peer.namespace == pod.namespace
    )
    pods_ok = selects(peer_rule["podSelector"], peer.labels) if "podSelector" in peer_rule else True
    return namespace_ok and pods_ok
