"""Quota through a cohort tree: what each ClusterQueue may use now, and at most, of each flavor and resource.

Mirrors kubernetes-sigs/kueue v0.19.2 pkg/cache/scheduler:
- resource.go createResourceQuotas: a ClusterQueue's (or Cohort's) quota per (flavor, resource) is its
  nominalQuota, with an optional borrowingLimit and lendingLimit (missing: unlimited).
- resource_node.go: `SubtreeQuota` is a node's nominal plus what its children lend it (each child lends
  its SubtreeQuota less its `localQuota`, the part above its lendingLimit that only its own subtree
  sees); `Usage` of a cohort is what its children use beyond their local quota. `available`,
  `potentialAvailable`, `addUsage`, `removeUsage`, `QuantitiesFitInQuota`, `IsWithinNominalInResources`
  are transcribed below, as is clusterqueue_snapshot.go (`Borrowing`, `BorrowingWith`, `Fits`).

Amounts are integers in Kueue's units (`models.kueue.resources`). Usage updates are O(depth of the
tree) and nothing is copied: the scheduler and preemption simulate by adding and removing usage and
undoing it, as Kueue's snapshot does.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from models.kubernetes.quantity import parse_quantity

from .resources import resource_value

if TYPE_CHECKING:
    from .workload import Workload

FlavorResource = tuple[str, str]  # (flavor, resource)

# ClusterQueue spec enums (apis/kueue/v1beta2/clusterqueue_types.go), with their defaults.
NEVER, LOWER_PRIORITY, LOWER_OR_NEWER_EQUAL_PRIORITY, ANY = "Never", "LowerPriority", "LowerOrNewerEqualPriority", "Any"
MAY_STOP_SEARCH, TRY_NEXT_FLAVOR = "MayStopSearch", "TryNextFlavor"
BORROWING_OVER_PREEMPTION, PREEMPTION_OVER_BORROWING = "BorrowingOverPreemption", "PreemptionOverBorrowing"
BEST_EFFORT_FIFO, STRICT_FIFO = "BestEffortFIFO", "StrictFIFO"


@dataclass(frozen=True, slots=True)
class Quota:
    nominal: int
    borrowing_limit: int | None = None  # None: unlimited
    lending_limit: int | None = None  # None: lends all of it


@dataclass(frozen=True, slots=True)
class ResourceGroup:
    covered_resources: tuple[str, ...]
    flavors: tuple[str, ...]  # in the order the scheduler tries them


@dataclass(frozen=True, slots=True)
class Preemption:
    """spec.preemption; the defaults are the CRD's (everything Never)."""

    within_cluster_queue: str = NEVER
    reclaim_within_cohort: str = NEVER
    borrow_within_cohort: str = NEVER
    max_priority_threshold: int | None = None


@dataclass(frozen=True, slots=True)
class FlavorFungibility:
    """spec.flavorFungibility, with the CRD's defaults."""

    when_can_borrow: str = MAY_STOP_SEARCH
    when_can_preempt: str = TRY_NEXT_FLAVOR
    preference: str | None = None


@dataclass(eq=False, slots=True)
class Node:
    """What a ClusterQueue and a Cohort share: quotas, the subtree's quota and usage (resource_node.go)."""

    name: str
    quotas: dict[FlavorResource, Quota] = field(default_factory=dict)
    parent: Cohort | None = None
    fair_weight: float = 1.0
    subtree_quota: dict[FlavorResource, int] = field(default_factory=dict)
    usage: dict[FlavorResource, int] = field(default_factory=dict)
    # Derived from quotas alone, so computed once per `Snapshot.rebuild`: the local quota per
    # (flavor, resource), and potentialAvailable as it is asked for.
    local: dict[FlavorResource, int] = field(default_factory=dict)
    potential: dict[FlavorResource, int] = field(default_factory=dict)

    def local_quota(self, fr: FlavorResource) -> int:
        """The part of this subtree's quota above its lendingLimit: never lent to the parent."""
        return self.local.get(fr, 0)

    def _settle(self) -> None:
        """Fix the local quotas once the subtree quota is known; forget cached potentials."""
        self.local = {
            fr: max(0, self.subtree_quota.get(fr, 0) - q.lending_limit)
            for fr, q in self.quotas.items()
            if q.lending_limit is not None
        }
        self.potential = {}

    def path_to_root(self) -> Iterator[Cohort]:
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def borrowing_with(self, fr: FlavorResource, value: int) -> bool:
        """Using `value` more would exceed this node's own (subtree) quota."""
        return self.subtree_quota.get(fr, 0) < self.usage.get(fr, 0) + value

    def borrowing(self, fr: FlavorResource) -> bool:
        return self.borrowing_with(fr, 0)

    def within_nominal(self, frs: Iterable[FlavorResource]) -> bool:
        """IsWithinNominalInResources."""
        return all(self.subtree_quota.get(fr, 0) >= self.usage.get(fr, 0) for fr in frs)


@dataclass(eq=False, slots=True)
class Cohort(Node):
    child_cohorts: list[Cohort] = field(default_factory=list)
    child_queues: list[ClusterQueue] = field(default_factory=list)
    lendable: dict[str, int] | None = None  # fair sharing's calculateLendable, cached until a rebuild

    def root(self) -> Cohort:
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    def subtree_queues(self) -> Iterator[ClusterQueue]:
        for child in self.child_cohorts:
            yield from child.subtree_queues()
        yield from self.child_queues

    def height(self) -> int:
        """getNodeHeight (classical/hierarchical_preemption.go): 1 for a cohort of ClusterQueues only."""
        height = min(len(self.child_cohorts) + len(self.child_queues), 1)
        for child in self.child_cohorts:
            height = max(height, child.height() + 1)
        return height


@dataclass(eq=False, slots=True)
class ClusterQueue(Node):
    resource_groups: tuple[ResourceGroup, ...] = ()
    preemption: Preemption = Preemption()
    flavor_fungibility: FlavorFungibility = FlavorFungibility()
    queueing_strategy: str = BEST_EFFORT_FIFO
    namespace_selector: Mapping[str, Any] | None = None  # None: every namespace
    workloads: dict[str, Workload] = field(default_factory=dict)  # admitted (quota reserved) here
    group_of: dict[str, ResourceGroup] = field(default_factory=dict)

    def quota(self, fr: FlavorResource) -> Quota:
        return self.quotas.get(fr) or _NO_QUOTA

    def available(self, fr: FlavorResource) -> int:
        """What this queue can still take of `fr` now, its own idle quota and what the cohort can lend it."""
        return max(0, _available(self, fr))

    def potential_available(self, fr: FlavorResource) -> int:
        """The most this queue could hold of `fr` were nothing else admitted, within its borrowingLimit."""
        return _potential_available(self, fr)

    def fits(self, usage: Mapping[FlavorResource, int]) -> bool:
        return all(self.available(fr) >= value for fr, value in usage.items())

    def admits_namespace(self, labels: Mapping[str, str] | None) -> bool:
        """The namespace's labels match spec.namespaceSelector (None labels: not checked)."""
        return labels is None or self.namespace_selector is None or selector_matches(self.namespace_selector, labels)


def selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """A metav1.LabelSelector (matchLabels and matchExpressions In, NotIn, Exists, DoesNotExist); {} matches all."""
    if any(labels.get(key) != value for key, value in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression["key"], expression["operator"], expression.get("values") or []
        present = key in labels
        matched = {
            "In": present and labels.get(key) in values,
            "NotIn": not present or labels.get(key) not in values,
            "Exists": present,
            "DoesNotExist": not present,
        }[operator]
        if not matched:
            return False
    return True


_NO_QUOTA = Quota(0)


def local_available(node: Node, fr: FlavorResource) -> int:
    """LocalAvailable: guaranteed quota of this node (above its lendingLimit) not yet used."""
    return max(0, node.local_quota(fr) - node.usage.get(fr, 0))


def _available(node: Node, fr: FlavorResource) -> int:
    if node.parent is None:
        return node.subtree_quota.get(fr, 0) - node.usage.get(fr, 0)
    parent_available = _available(node.parent, fr)
    quota = node.quotas.get(fr)
    if quota is not None and quota.borrowing_limit is not None:
        local = node.local_quota(fr)
        stored_in_parent = node.subtree_quota.get(fr, 0) - local
        used_in_parent = max(0, node.usage.get(fr, 0) - local)
        parent_available = min(stored_in_parent - used_in_parent + quota.borrowing_limit, parent_available)
    return local_available(node, fr) + parent_available


def _potential_available(node: Node, fr: FlavorResource) -> int:
    cached = node.potential.get(fr)
    if cached is not None:
        return cached
    if node.parent is None:
        value = node.subtree_quota.get(fr, 0)
    else:
        value = node.local_quota(fr) + _potential_available(node.parent, fr)
        quota = node.quotas.get(fr)
        if quota is not None and quota.borrowing_limit is not None:
            value = min(node.subtree_quota.get(fr, 0) + quota.borrowing_limit, value)
    node.potential[fr] = value
    return value


def add_usage(node: Node, fr: FlavorResource, value: int) -> None:
    """addUsage: the part beyond the node's local available quota is stored in its parent."""
    free = local_available(node, fr)
    node.usage[fr] = node.usage.get(fr, 0) + value
    if node.parent is not None and value > free:
        add_usage(node.parent, fr, value - free)


def remove_usage(node: Node, fr: FlavorResource, value: int) -> None:
    stored_in_parent = node.usage.get(fr, 0) - node.local_quota(fr)
    left = node.usage.get(fr, 0) - value
    if left:
        node.usage[fr] = left
    else:
        node.usage.pop(fr, None)  # an undone simulation leaves the usage as it was
    if stored_in_parent <= 0 or node.parent is None:
        return
    remove_usage(node.parent, fr, min(value, stored_in_parent))


def quantities_fit_in_quota(node: Node, requests: Mapping[FlavorResource, int]) -> tuple[bool, dict[FlavorResource, int]]:
    """QuantitiesFitInQuota: whether `requests` fit this node's subtree quota, and what is left for its parent."""
    fits = True
    remaining = {}
    for fr, value in requests.items():
        if node.subtree_quota.get(fr, 0) < node.usage.get(fr, 0) + value:
            fits = False
        remaining[fr] = max(0, value - local_available(node, fr))
    return fits, remaining


def lendable(nominal: int, lending_limit: int | None) -> int:
    """What a ClusterQueue lends its cohort of one flavor and resource: its nominal quota, at most lendingLimit."""
    return nominal if lending_limit is None else min(nominal, lending_limit)


@dataclass(eq=False)
class Snapshot:
    """Every ClusterQueue and Cohort with their usage: the state one scheduling cycle reads and changes."""

    cluster_queues: dict[str, ClusterQueue]
    cohorts: dict[str, Cohort]
    fair_sharing: bool = False
    # fairSharing.preemptionStrategies, in order (the Configuration's; these are v1beta1's defaults).
    fair_sharing_strategies: tuple[str, ...] = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")
    # ClusterQueues Kueue holds inactive (a flavor they name does not exist): nothing is admitted there.
    inactive: set[str] = field(default_factory=set)
    # Each ResourceFlavor's NoSchedule and NoExecute nodeTaints, and the tolerations it adds to pods.
    flavor_taints: dict[str, tuple[Mapping[str, Any], ...]] = field(default_factory=dict)
    flavor_tolerations: dict[str, tuple[Mapping[str, Any], ...]] = field(default_factory=dict)
    # Each ResourceFlavor's nodeLabels, which the pods' node selector and required affinity must match.
    flavor_labels: dict[str, Mapping[str, str]] = field(default_factory=dict)

    def add_workload(self, workload: Workload) -> None:
        """An admitted workload's usage is charged to its queue (and what exceeds it, up the tree)."""
        queue = self.cluster_queues[workload.cluster_queue]
        queue.workloads[workload.name] = workload
        for fr, value in workload.usage.items():
            add_usage(queue, fr, value)

    def remove_workload(self, workload: Workload) -> None:
        queue = self.cluster_queues[workload.cluster_queue]
        del queue.workloads[workload.name]
        for fr, value in workload.usage.items():
            remove_usage(queue, fr, value)

    def remove_usage_of(self, workloads: Iterable[Workload]) -> None:
        """SimulateWorkloadUsageRemoval: their usage, but not the workloads, leaves the queues."""
        for workload in workloads:
            queue = self.cluster_queues[workload.cluster_queue]
            for fr, value in workload.usage.items():
                remove_usage(queue, fr, value)

    def add_usage_of(self, workloads: Iterable[Workload]) -> None:
        for workload in workloads:
            queue = self.cluster_queues[workload.cluster_queue]
            for fr, value in workload.usage.items():
                add_usage(queue, fr, value)

    def lenders(self, queue_name: str, fr: FlavorResource) -> dict[str, int]:
        """The other ClusterQueues of the queue's cohort tree with idle quota of `fr` they lend, and how
        much: nominal up to the lendingLimit, less what they use of it. What the queue can take of it is
        `available`, which its own borrowingLimit bounds too."""
        queue = self.cluster_queues[queue_name]
        if queue.parent is None:
            return {}
        found = {}
        for other in queue.parent.root().subtree_queues():
            if other is queue:
                continue
            local = other.local_quota(fr)
            idle = max(0, other.subtree_quota.get(fr, 0) - local - max(0, other.usage.get(fr, 0) - local))
            if idle:
                found[other.name] = idle
        return found

    def rebuild(self) -> None:
        """updateCohortResourceNode from every root: subtree quotas and cohort usage from the queues' usage.
        Call it after changing any quota."""
        for cohort in self.cohorts.values():
            if cohort.parent is None:
                _update_subtree(cohort)
        for queue in self.cluster_queues.values():
            if queue.parent is None:
                queue.subtree_quota = {fr: q.nominal for fr, q in queue.quotas.items()}
                queue._settle()
        for cohort in self.cohorts.values():
            cohort.lendable = None

    @classmethod
    def from_manifests(
        cls,
        cluster_queues: Sequence[Mapping[str, Any]],
        cohorts: Sequence[Mapping[str, Any]] = (),
        fair_sharing: bool = False,
        flavors: Sequence[Mapping[str, Any]] | None = None,
    ) -> Snapshot:
        """Rendered ClusterQueue, Cohort and (optionally) ResourceFlavor manifests (kueue.x-k8s.io/v1beta2).

        A cohort named by a ClusterQueue or Cohort but not declared exists implicitly with no quota, as in
        Kueue. With `flavors`, a ClusterQueue naming a flavor not among them is inactive, and the flavors'
        taints, tolerations and node labels are read; without, every flavor is taken to exist untainted and
        unlabelled.
        """
        snapshot = cls({}, {}, fair_sharing)
        if flavors is not None:
            for flavor in flavors:
                spec = flavor.get("spec") or {}
                name = flavor["metadata"]["name"]
                snapshot.flavor_taints[name] = tuple(
                    t for t in spec.get("nodeTaints") or [] if t.get("effect") in ("NoSchedule", "NoExecute")
                )
                snapshot.flavor_tolerations[name] = tuple(spec.get("tolerations") or [])
                snapshot.flavor_labels[name] = dict(spec.get("nodeLabels") or {})
        for manifest in cohorts:
            spec = manifest.get("spec") or {}
            cohort = snapshot._cohort(manifest["metadata"]["name"])
            cohort.quotas = _quotas(spec.get("resourceGroups", []))
            cohort.fair_weight = _weight(spec)
            if spec.get("parentName"):
                _attach(cohort, snapshot._cohort(spec["parentName"]))
        for manifest in cluster_queues:
            queue = cluster_queue_from_manifest(manifest)
            snapshot.cluster_queues[queue.name] = queue
            named = {f for group in queue.resource_groups for f in group.flavors}
            if flavors is not None and not named <= set(snapshot.flavor_taints):
                snapshot.inactive.add(queue.name)
            cohort_name = (manifest.get("spec") or {}).get("cohortName")
            if cohort_name:
                queue.parent = snapshot._cohort(cohort_name)
                queue.parent.child_queues.append(queue)
        snapshot.rebuild()
        return snapshot

    def _cohort(self, name: str) -> Cohort:
        if name not in self.cohorts:
            self.cohorts[name] = Cohort(name)
        return self.cohorts[name]


def _attach(child: Cohort, parent: Cohort) -> None:
    child.parent = parent
    parent.child_cohorts.append(child)


def _update_subtree(cohort: Cohort) -> None:
    cohort.subtree_quota = {fr: q.nominal for fr, q in cohort.quotas.items()}
    cohort.usage = {}
    for child_cohort in cohort.child_cohorts:
        _update_subtree(child_cohort)
    for queue in cohort.child_queues:
        queue.subtree_quota = {fr: q.nominal for fr, q in queue.quotas.items()}
        queue._settle()
    children: list[Node] = [*cohort.child_cohorts, *cohort.child_queues]
    for child in children:
        for fr, quota in child.subtree_quota.items():
            cohort.subtree_quota[fr] = cohort.subtree_quota.get(fr, 0) + quota - child.local_quota(fr)
        for fr, used in child.usage.items():
            cohort.usage[fr] = cohort.usage.get(fr, 0) + max(0, used - child.local_quota(fr))
    cohort._settle()


_LIMITS = ("borrowingLimit", "lendingLimit")


def _quotas(groups: Sequence[Mapping[str, Any]]) -> dict[FlavorResource, Quota]:
    quotas = {}
    for group in groups:
        for flavor in group["flavors"]:
            for entry in flavor["resources"]:
                resource = entry["name"]
                limits = [None if key not in entry else resource_value(resource, entry[key]) for key in _LIMITS]
                quotas[(flavor["name"], resource)] = Quota(resource_value(resource, entry["nominalQuota"]), *limits)
    return quotas


def _weight(spec: Mapping[str, Any]) -> float:
    """spec.fairSharing.weight, a Quantity defaulting to 1."""
    weight = (spec.get("fairSharing") or {}).get("weight")
    if weight is None:
        return 1.0
    # YAML reads an unquoted 0.5 as a float; the API server reads the same text as a Quantity.
    return float(parse_quantity(repr(weight) if isinstance(weight, float) else weight))


def cluster_queue_from_manifest(manifest: Mapping[str, Any]) -> ClusterQueue:
    spec = manifest.get("spec") or {}
    groups = tuple(
        ResourceGroup(tuple(group["coveredResources"]), tuple(f["name"] for f in group["flavors"]))
        for group in spec.get("resourceGroups", [])
    )
    preemption = spec.get("preemption") or {}
    borrow = preemption.get("borrowWithinCohort") or {}
    fungibility = spec.get("flavorFungibility") or {}
    return ClusterQueue(
        name=manifest["metadata"]["name"],
        quotas=_quotas(spec.get("resourceGroups", [])),
        fair_weight=_weight(spec),
        resource_groups=groups,
        # RGByResource: the first group covering the resource (the webhook allows one; Kueue's own tests may not).
        group_of={resource: group for group in reversed(groups) for resource in group.covered_resources},
        preemption=Preemption(
            within_cluster_queue=preemption.get("withinClusterQueue", NEVER),
            reclaim_within_cohort=preemption.get("reclaimWithinCohort", NEVER),
            borrow_within_cohort=borrow.get("policy", NEVER),
            max_priority_threshold=borrow.get("maxPriorityThreshold"),
        ),
        flavor_fungibility=FlavorFungibility(
            when_can_borrow=fungibility.get("whenCanBorrow", MAY_STOP_SEARCH),
            when_can_preempt=fungibility.get("whenCanPreempt", TRY_NEXT_FLAVOR),
            preference=fungibility.get("preference"),
        ),
        queueing_strategy=spec.get("queueingStrategy", BEST_EFFORT_FIFO),
        namespace_selector=spec.get("namespaceSelector"),
    )
