"""Example values the shipped stack files carry where an operator's own must go, and documentation ranges.

`Pulumi.prod.yaml` names an image snapshot and a model bucket that exist in no one's account, so that
the stack renders offline and reads like a real one. A real `pulumi up` with them gets far before it
fails: the snapshot only when Karpenter launches the pool's first node (the node class stays not ready,
`InvalidSnapshot.NotFound`), the bucket only when a server streams its weights. So they are recognised
here by value, and `__main__.py` refuses them, one line each, before anything is declared whenever the
program runs outside the offline mock engine; the offline render and `make check` show the same lines
as warnings instead (offline/__main__.py).

Documentation address ranges (RFC 5737 TEST-NET-1/2/3) as `endpoint.publicAccessCidrs` are warned about
only: they belong to no one, so no deployer is inside them, and with the private endpoint alone a
deploy from inside the VPC still works.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from .errors import show
from .keys import CONFIG_NAMESPACE
from .platform import PlatformConfig


@dataclass(frozen=True)
class Placeholder:
    value: str
    what: str  # what the value stands for, and why it cannot be real
    fix: str


# `snap-0123456789abcdef0` is the EC2 API reference's example snapshot id; the bucket is the example
# organisation's (acme-ai, as in the example stacks' registries and cohorts).
SNAPSHOT = Placeholder(
    "snap-0123456789abcdef0",
    "the example snapshot id the shipped stack carries (the EC2 documentation's); your account has no such snapshot",
    "build the snapshot as docs/time-to-gpu.md says and set its id, or remove imageSnapshot",
)
MODEL_BUCKET = Placeholder(
    "acme-ai-models",
    "the example model bucket the shipped stack carries; it is not yours",
    "set your own bucket and region (and each `s3://` modelSource under it), or remove modelStore and the "
    "servers' s3:// modelSource",
)
# RFC 5737: reserved for documentation, never routed.
DOCUMENTATION_NETWORKS = tuple(
    ipaddress.IPv4Network(cidr) for cidr in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24")
)


def placeholder_problems(config: PlatformConfig) -> list[str]:
    """One line for each example value a real deploy cannot use, with its key path and the fix."""
    lines = []
    for pool in config.gpu_pools:
        warm = pool.config.warm_start
        if warm is not None and warm.image_snapshot == SNAPSHOT.value:
            key = f"{CONFIG_NAMESPACE}:nodePools[{pool.name}].warmStart.imageSnapshot"
            lines.append(f"{key}: {show(SNAPSHOT.value)} is {SNAPSHOT.what}: {SNAPSHOT.fix}")
    store = config.autoscaling.model_store
    if store is not None and store.bucket == MODEL_BUCKET.value:
        key = f"{CONFIG_NAMESPACE}:autoscaling.modelStore.bucket"
        lines.append(f"{key}: {show(MODEL_BUCKET.value)} is {MODEL_BUCKET.what}: {MODEL_BUCKET.fix}")
    return lines


def documentation_cidr_warnings(config: PlatformConfig) -> list[str]:
    """One line for each public endpoint CIDR inside a documentation range."""
    key = f"{CONFIG_NAMESPACE}:cluster.endpoint.publicAccessCidrs"
    return [
        f"{key}[{index}]: {show(cidr)} is a documentation range (RFC 5737) that no one deploys from: the public "
        "API endpoint admits no one until you list your office or VPN CIDR (README: Deploy for real)"
        for index, cidr in enumerate(config.cluster.endpoint.public_access_cidrs)
        if any(ipaddress.IPv4Network(cidr).subnet_of(network) for network in DOCUMENTATION_NETWORKS)
    ]
