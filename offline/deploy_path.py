"""The deploy path: what the first `pulumi up` creates in which order, and roughly how long it waits.

The engine starts a resource once everything it waits for exists: its recorded `dependencies`,
its parent and its provider. Grouping resources by the longest chain of such waits before them
gives the waves a first `up` goes through; adding up estimated durations along the slowest chain
gives the critical path. Component resources take no time of their own, so they are left out of
the waves and the path but still pass their parents' and providers' waits on to their children.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from config import PlatformConfig

    from .engine import RecordedResource, Recording

# Rough first-create durations in seconds, by type token. Not measured on this platform: typical
# times, rounded. EKS control plane ~10 min, managed node group ~4 min, EKS add-on ~1-2 min and Helm
# release ~1-3 min (the add-ons wait for ACTIVE; a Helm release waits
# for its pods to become ready); NAT gateways and VPC endpoints wait until
# they are `available`, a minute or two. Everything else (IAM, SQS, EventBridge, KMS, subnets,
# Kubernetes objects) takes seconds: DEFAULT_SECONDS.
TYPE_SECONDS: dict[str, int] = {
    "eks:index:Cluster": 600,
    "aws:eks/cluster:Cluster": 600,
    "aws:eks/nodeGroup:NodeGroup": 240,
    "aws:eks/addon:Addon": 90,
    "kubernetes:helm.sh/v3:Release": 120,
    "aws:ec2/natGateway:NatGateway": 120,
    "aws:ec2/vpcEndpoint:VpcEndpoint": 60,
}
DEFAULT_SECONDS = 5


@dataclass(frozen=True)
class Step:
    resource: RecordedResource
    wave: int
    seconds: int
    finish: int  # estimated seconds from the start of `up` until it exists


def is_step(resource: RecordedResource) -> bool:
    """Whether the resource takes time of its own: custom resources, and components that create a cloud object."""
    return resource.custom or resource.type in TYPE_SECONDS


def waits_for(resource: RecordedResource, known: set[str]) -> set[str]:
    """The URNs the engine waits for before it creates `resource`, among the recorded ones."""
    return {urn for urn in (*resource.dependencies, resource.parent, resource.provider) if urn in known}


def plan_steps(recording: Recording) -> dict[str, Step]:
    """Every resource's wave (longest chain of steps before it) and estimated finish time, by URN."""
    by_urn = {r.urn: r for r in recording.resources}
    known = set(by_urn)
    steps: dict[str, Step] = {}

    def visit(urn: str, trail: frozenset[str]) -> Step:
        if urn in steps:
            return steps[urn]
        if urn in trail:
            raise ValueError(f"dependency cycle through {urn}")
        resource = by_urn[urn]
        before = [visit(other, trail | {urn}) for other in sorted(waits_for(resource, known))]
        own = is_step(resource)
        wave = max((s.wave + (1 if is_step(s.resource) else 0) for s in before), default=0)
        seconds = TYPE_SECONDS.get(resource.type, DEFAULT_SECONDS) if own else 0
        steps[urn] = Step(resource, wave, seconds, max((s.finish for s in before), default=0) + seconds)
        return steps[urn]

    for urn in by_urn:
        visit(urn, frozenset())
    return steps


def critical_path(recording: Recording) -> list[Step]:
    """The chain of steps that finishes last: each step's slowest predecessor, back to the first."""
    steps = plan_steps(recording)
    known = set(steps)
    path: list[Step] = []
    current: Step | None = max(steps.values(), key=lambda s: (s.finish, s.resource.urn), default=None)
    while current is not None:
        if is_step(current.resource):
            path.append(current)
        before = [steps[urn] for urn in waits_for(current.resource, known)]
        current = max(before, key=lambda s: (s.finish, s.resource.urn), default=None)
    return list(reversed(path))


def waves(recording: Recording) -> list[list[RecordedResource]]:
    """The steps grouped by wave, in order."""
    grouped: dict[int, list[RecordedResource]] = {}
    for step in plan_steps(recording).values():
        if is_step(step.resource):
            grouped.setdefault(step.wave, []).append(step.resource)
    return [sorted(grouped[wave], key=lambda r: r.urn) for wave in sorted(grouped)]


def kind(resource: RecordedResource) -> str:
    """`aws:eks/nodeGroup:NodeGroup` -> `NodeGroup`; `eks:index:Cluster` -> `eks.Cluster`; Kubernetes kinds by kind."""
    package, _, name = resource.type.rpartition(":")
    if package == "pulumi:providers":
        return f"{name} provider"
    return f"eks.{name}" if package.startswith("eks:") else name


def _minutes(seconds: int) -> str:
    return f"{seconds // 60}:{seconds % 60:02d}"


def _describe(resources: Iterable[RecordedResource], stack_prefix: str) -> str:
    """Quick kinds as counts; slow ones (a minute or more) by name, since they are what the wave waits on."""
    resources = list(resources)
    counts = Counter(kind(r) for r in resources if TYPE_SECONDS.get(r.type, DEFAULT_SECONDS) < 60)
    slow = [
        f"{kind(r)} `{r.name.removeprefix(stack_prefix)}`" for r in resources if TYPE_SECONDS.get(r.type, DEFAULT_SECONDS) >= 60
    ]
    quick = [f"{name} x{count}" if count > 1 else name for name, count in sorted(counts.items())]
    return ", ".join([*slow, *quick])


def render_deploy_path(recording: Recording, cluster_name: str) -> str:
    from .summary import table

    prefix = f"{cluster_name}-"
    wave_rows = [[index, len(group), _describe(group, prefix)] for index, group in enumerate(waves(recording))]
    path = critical_path(recording)
    path_rows = [
        [f"`{step.resource.name.removeprefix(prefix)}`", kind(step.resource), _minutes(step.seconds), _minutes(step.finish)]
        for step in path
    ]
    total = path[-1].finish if path else 0
    header = (
        "## Deploy path\n\n"
        "Waves of a first `pulumi up`: a resource starts once everything it waits for (dependencies, parent, "
        "provider) exists, so wave n waits on a chain of n resources. Durations are rough per-type estimates "
        "(offline/deploy_path.py `TYPE_SECONDS`), not measurements.\n\n"
    )
    critical = (
        f"\nEstimated critical path: about {round(total / 60)} minutes until the last resource exists "
        "(minutes:seconds).\n\n"
    )
    return (
        header
        + table(["wave", "resources", "what"], wave_rows)
        + critical
        + table(["resource", "kind", "takes", "done at"], path_rows)
    )


def after_destroy_steps(config: PlatformConfig) -> list[str]:
    """What is left to do once `pulumi destroy` has run: the volumes it cannot delete.

    With `monitoring.volumeOnDestroy: keep` Prometheus' StatefulSet retains its PersistentVolumeClaims
    (`persistentVolumeClaimRetentionPolicy.whenDeleted: Retain`), so each replica's EBS volume outlives
    the cluster, outside Pulumi's state and still billed. The EBS CSI driver tags the volumes it creates
    with their claim's namespace (`kubernetes.io/created-for/pvc/namespace`), which finds them.
    """
    monitoring = config.monitoring
    if monitoring.volume_on_destroy != "keep":
        return []
    volumes = (
        f"{monitoring.replicas} EBS volumes ({monitoring.storage_gib} GiB gp3 each" if monitoring.replicas > 1
        else f"EBS volume ({monitoring.storage_gib} GiB gp3"
    )
    return [
        f"Prometheus' {volumes}, `monitoring.volumeOnDestroy: keep`) outlived the stack, outside its state and still "
        "billed: keep for the metrics history, or delete. List: "
        f"`aws ec2 describe-volumes --region {config.region} --filters "
        "Name=tag:kubernetes.io/created-for/pvc/namespace,Values=monitoring --query 'Volumes[].[VolumeId,Size,State]'`; "
        f"delete: `aws ec2 delete-volume --region {config.region} --volume-id <id>`"
    ]
