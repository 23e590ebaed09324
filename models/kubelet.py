"""What a node's kubelet lets the scheduler hand out (allocatable) on EKS's AMIs.

Mirrors awslabs/amazon-eks-ami nodeadm/internal/kubelet (tag v20260724, the newest stored; the pinned
AMI release is v20260903), config.go and eni_max_pods.go:

    allocatable = capacity - kubeReserved - evictionHard            (nodeadm sets no systemReserved)
    kubeReserved.cpu    = 6% of the first core, 1% of the second, 0.5% of cores 3-4, 0.25% above
                          (getCPUMillicoresToReserve: ranges 0/1000/2000/4000 m, 600/100/50/25 per 10000)
    kubeReserved.memory = 11 * maxPods + 255 MiB                    (getMemoryMebibytesToReserve)
    evictionHard        = memory.available 100Mi
    maxPods             = ENIs * (IPv4 per ENI - 1) + 2             (calculateStandardMaxPods)

Bottlerocket's kube-reserved helpers (bottlerocket-os/bottlerocket sources/api/schnauzer, helpers.rs
`kube_reserve_cpu`, `kube_reserve_memory`) are "taken from EKS' calculations", so both AMI families
share these numbers.
"""

from __future__ import annotations

EVICTION_HARD_MEMORY_MIB = 100
# (from, to, reserved per 10000) in millicores, then 25 per 10000 above 4000m.
_CPU_RESERVE_TIERS: tuple[tuple[int, int, int], ...] = ((0, 1000, 600), (1000, 2000, 100), (2000, 4000, 50))
_CPU_RESERVE_ABOVE = 25
_CPU_RESERVE_ABOVE_FROM = 4000


def max_pods(enis: int, ipv4_per_eni: int) -> int:
    """The VPC CNI's pod limit without prefix delegation: one address per ENI is the ENI's own, plus host-network pods."""
    return enis * (ipv4_per_eni - 1) + 2


def kube_reserved_cpu_millicores(vcpus: int) -> int:
    total = vcpus * 1000
    reserved = sum((min(total, end) - start) * share // 10000 for start, end, share in _CPU_RESERVE_TIERS if total > start)
    if total > _CPU_RESERVE_ABOVE_FROM:
        reserved += (total - _CPU_RESERVE_ABOVE_FROM) * _CPU_RESERVE_ABOVE // 10000
    return reserved


def kube_reserved_memory_mib(pods: int) -> int:
    return 11 * pods + 255


def allocatable(vcpus: int, memory_capacity_mib: int, pods: int) -> tuple[int, int]:
    """(millicores, MiB) the scheduler may hand out on a node with this capacity and maxPods."""
    return (
        vcpus * 1000 - kube_reserved_cpu_millicores(vcpus),
        memory_capacity_mib - kube_reserved_memory_mib(pods) - EVICTION_HARD_MEMORY_MIB,
    )
