"""Karpenter NodePools and EC2NodeClasses: one per GPU pool, plus the general CPU pool."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from config.advertised import nodepool_limits, overlay_capacity
from config.capacity import GpuPoolPlan
from config.headroom import WarmStartConfig
from config.kai import is_kai_pool
from config.labels import (
    CAPACITY_TYPE_LABEL,
    CPU_POOL_NAME,
    DISCOVERY_TAG,
    GPU_TAINT,
    POOL_LABEL,
)
from config.node_pools import CpuPoolConfig, RootVolumeConfig
from models.karpenter.labels import (
    ARCH_AMD64,
    ARCH_LABEL,
    INSTANCE_FAMILY_LABEL,
    INSTANCE_TYPE_LABEL,
    NODECLASS_API,
    NODECLASS_KIND,
    NODEOVERLAY_API,
    NODEPOOL_API,
    NODEPOOL_LABEL,
    OS_LABEL,
    PROVIDER_GROUP,
)

from .lib.gpu_nodes import KAI_TOOLKIT_SETTINGS, NVIDIA_TOOLKIT_SETTINGS, toolkit_user_data
from .lib.resources import Children, declare

# The general CPU pool runs the AMI family whose release `cpu_ami_release` names.
CPU_AMI_FAMILY = "al2023"


class NodePools(pulumi.ComponentResource):
    """The NodePools Karpenter launches nodes for, each with its own EC2NodeClass.

    Deleting either waits for the pool's nodes to drain and terminate, up to the pool's
    terminationGracePeriod, so each carries a delete timeout derived from it (`delete_timeout`).
    """

    def __init__(
        self,
        name: str,
        gpu_pools: Sequence[GpuPoolPlan],
        cpu_pool: CpuPoolConfig,
        *,
        cluster_name: str,
        node_role_name: pulumi.Input[str],
        cpu_ami_release: str,
        tags: Mapping[str, str],
        provider: k8s.Provider,
        spot_role: pulumi.Resource | None = None,
        depends_on: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ):
        """
        :param gpu_pools: `PlatformConfig.gpu_pools`: one NodePool and EC2NodeClass each but the DRA pools.
        :param cpu_pool: `PlatformConfig.cpu_pool`: the general CPU pool.
        :param node_role_name: Karpenter's node role (`Karpenter.node_role_name`), the node classes' `role`.
        :param spot_role: the spot service-linked role (`Karpenter.spot_service_linked_role`), which
            every pool that allows spot waits for; None when the stack does not create it.
        :param depends_on: the whole Karpenter install (`Karpenter.destroy_after`).
        """
        super().__init__("gpu-platform:karpenter:NodePools", name, None, opts)
        # NodePools and node classes depend on the whole Karpenter install (controller, IAM, queue):
        # `pulumi destroy` removes them first, so Karpenter is still there to drain and terminate the
        # instances it launched instead of leaving them running and unowned.
        children = Children(self, provider, depends_on)
        spot = [spot_role] if spot_role is not None else []

        # A DRA pool is an EKS managed node group instead (components/dra_nodes.py): Karpenter v1.14.1
        # launches nothing for pods with resource claims.
        for pool in [pool for pool in gpu_pools if not pool.is_dra]:
            timeouts = pulumi.CustomTimeouts(delete=pool.delete_timeout)
            node_class = declare(
                f"{name}-{pool.name}-nodeclass",
                gpu_toolkit_hardened(
                    ec2_node_class(
                        pool.name,
                        pool.config.ami_family,
                        pool.ami_release,
                        pool.config.root_volume,
                        pool.has_instance_store,
                        warm_start=pool.config.warm_start,
                        user_data=bottlerocket_user_data(pool),
                        capacity_reservations=capacity_reservation_terms(pool),
                        cluster_name=cluster_name,
                        role=node_role_name,
                        tags={**tags, POOL_LABEL: pool.name},
                    ),
                    pool.config.ami_family,
                    kai=is_kai_pool(pool),
                ),
                children.opts(custom_timeouts=timeouts),
            )
            # Overlays before the NodePool: Karpenter's first launches for it already see the capacity its
            # nodes will report, instead of sizing a time-sliced pool by physical GPUs; and they go after it.
            overlays = [
                declare(f"{name}-{overlay['metadata']['name']}-overlay", overlay, children.opts())
                for overlay in node_overlays(pool)
            ]
            after = [node_class, *overlays, *(spot if pool.uses_spot else [])]
            declare(f"{name}-{pool.name}", gpu_node_pool(pool), children.opts(*after, custom_timeouts=timeouts))

        cpu_timeouts = pulumi.CustomTimeouts(delete=cpu_pool.delete_timeout)
        cpu_class = declare(
            f"{name}-{CPU_POOL_NAME}-nodeclass",
            ec2_node_class(CPU_POOL_NAME, CPU_AMI_FAMILY, cpu_ami_release, cpu_pool.root_volume, False,
                           cluster_name=cluster_name, role=node_role_name, tags={**tags, POOL_LABEL: CPU_POOL_NAME}),
            children.opts(custom_timeouts=cpu_timeouts),
        )
        cpu_after = [cpu_class, *(spot if cpu_pool.uses_spot else [])]
        declare(f"{name}-{CPU_POOL_NAME}", cpu_node_pool(cpu_pool), children.opts(*cpu_after, custom_timeouts=cpu_timeouts))
        self.register_outputs({})


def ec2_node_class(
    name: str,
    ami_family: str,
    ami_release: str,
    volume: RootVolumeConfig,
    instance_store: bool,
    *,
    warm_start: WarmStartConfig | None = None,
    user_data: str | None = None,
    capacity_reservations: list[dict[str, Any]] | None = None,
    cluster_name: str,
    role: Any,
    tags: Mapping[str, str],
) -> dict[str, Any]:
    """An EC2NodeClass: pinned AMI alias, discovery by tag, IMDSv2 only, encrypted gp3, RAID0 local NVMe."""
    spec: dict[str, Any] = {
        "amiSelectorTerms": [{"alias": f"{ami_family}@{ami_release}"}],
        "role": role,
        "subnetSelectorTerms": [{"tags": {DISCOVERY_TAG: cluster_name}}],
        "securityGroupSelectorTerms": [{"tags": {DISCOVERY_TAG: cluster_name}}],
        "blockDeviceMappings": block_device_mappings(ami_family, volume, warm_start),
        # Hop limit 1: pods cannot reach the node's instance credentials; they use Pod Identity.
        "metadataOptions": {
            "httpEndpoint": "enabled",
            "httpProtocolIPv6": "disabled",
            "httpPutResponseHopLimit": 1,
            "httpTokens": "required",
        },
        "tags": dict(sorted(tags.items())),
    }
    if user_data is not None:
        spec["userData"] = user_data
    if capacity_reservations:
        spec["capacityReservationSelectorTerms"] = capacity_reservations
    restores_images = warm_start is not None and warm_start.image_snapshot is not None
    if instance_store and not restores_images:
        # The local NVMe drives become one striped volume for images and ephemeral storage (model caches).
        # Not with an image snapshot: on Bottlerocket RAID0 binds /var/lib/containerd onto the array
        # (karpenter-provider-aws v1.14.1 pkg/providers/amifamily/bootstrap/bottlerocket.go, `apiclient
        # ephemeral-storage bind`), which would hide the images restored on the data volume.
        spec["instanceStorePolicy"] = "RAID0"
    return {
        "apiVersion": NODECLASS_API,
        "kind": NODECLASS_KIND,
        "metadata": {"name": name},
        "spec": spec,
    }


def capacity_reservation_terms(pool: GpuPoolPlan) -> list[dict[str, Any]]:
    """The node class's capacityReservationSelectorTerms: the reservations the pool's `reserved` type launches into.

    Karpenter resolves them into the node class's status and offers each as a `reserved` offering of its
    instance type (karpenter-provider-aws v1.14.1 pkg/controllers/nodeclass/capacityreservation.go,
    pkg/providers/instancetype/offering/reserved_capacity_resolver.go); Capacity Blocks are reservations too.
    """
    terms = []
    for reservation in pool.config.capacity_reservations:
        if reservation.id is not None:
            terms.append({"id": reservation.id})
        else:
            assert reservation.tags is not None
            term: dict[str, Any] = {"tags": dict(sorted(reservation.tags.items()))}
            if reservation.owner_id is not None:
                term["ownerID"] = reservation.owner_id
            terms.append(term)
    return terms


def bottlerocket_user_data(pool: GpuPoolPlan) -> str | None:
    """Bottlerocket settings (TOML) that time-slice a pool's GPUs in Bottlerocket's own device plugin.

    Bottlerocket's NVIDIA variant runs the device plugin as a host service, configured from
    `settings.kubelet-device-plugins.nvidia` (bottlerocket-os/bottlerocket-core-kit
    packages/nvidia-k8s-device-plugin/nvidia-k8s-device-plugin-conf.in). Its time-slicing defaults differ
    from the GPU Operator's: `rename-by-default` true would advertise `nvidia.com/gpu.shared` and
    `fail-requests-greater-than-one` true would refuse a pod asking for two slices, so both are set false
    and a Bottlerocket slice is the same `nvidia.com/gpu` as an AL2023 one (config/advertised.py).
    Karpenter merges these settings with its own (karpenter-provider-aws v1.14.1
    pkg/providers/amifamily/bootstrap/bottlerocketsettings.go keeps unknown settings tables).
    `device-id-strategy` stays at Bottlerocket's `index`: it shapes only the runtime's device list, and the
    kubelet and dcgm-exporter see UUIDs either way (models/nvidia/device_plugin.py, kubelet_device_id).
    None for every other pool.
    """
    sharing = pool.config.sharing
    if pool.config.ami_family != "bottlerocket" or sharing.mode != "timeSlicing":
        return None
    return (
        "[settings.kubelet-device-plugins.nvidia]\n"
        'device-sharing-strategy = "time-slicing"\n'
        "\n"
        "[settings.kubelet-device-plugins.nvidia.time-slicing]\n"
        f"replicas = {sharing.replicas}\n"
        "rename-by-default = false\n"
        "fail-requests-greater-than-one = false\n"
    )


def gpu_toolkit_hardened(node_class: dict[str, Any], ami_family: str, kai: bool = False) -> dict[str, Any]:
    """An AL2023 GPU node class whose user data sets NVIDIA_TOOLKIT_SETTINGS before the kubelet starts, or on a
    pool the KAI Scheduler shares (`kai`) KAI_TOOLKIT_SETTINGS.

    Karpenter adds its own NodeConfig part to AL2023's MIME multipart user data and keeps this shell
    part (components/lib/gpu_nodes.py). Bottlerocket has no shell user data; its class is returned unchanged
    (config refuses a KAI pool on Bottlerocket).
    """
    if ami_family != "al2023":
        return node_class
    settings = KAI_TOOLKIT_SETTINGS if kai else NVIDIA_TOOLKIT_SETTINGS
    return {**node_class, "spec": {**node_class["spec"], "userData": toolkit_user_data(settings=settings)}}


def block_device_mappings(
    ami_family: str, volume: RootVolumeConfig, warm_start: WarmStartConfig | None = None
) -> list[dict[str, Any]]:
    """AL2023 keeps everything on its root volume; Bottlerocket has a small OS volume and a data volume.

    Bottlerocket's data volume (/dev/xvdb, karpenter-provider-aws v1.14.1 pkg/providers/amifamily/
    bottlerocket.go DefaultBlockDeviceMappings, EphemeralBlockDevice) holds containerd's images, so a pool with
    `warmStart.imageSnapshot` restores it from that snapshot (`ebs.snapshotID`, pkg/apis/v1/
    ec2nodeclass.go BlockDevice) and containerd finds the serving images already there. The size stays
    set: EC2 grows the volume past the snapshot's size, and Bottlerocket grows its filesystem to fill it.
    `encrypted` stays true: restoring may turn encryption on, never off (EC2 API reference, EbsBlockDevice).
    """
    ebs = {
        "volumeSize": f"{volume.size_gib}Gi",
        "volumeType": "gp3",
        "iops": volume.iops,
        "throughput": volume.throughput,
        "encrypted": True,
        "deleteOnTermination": True,
    }
    if ami_family == "bottlerocket":
        os_volume = {"volumeSize": "4Gi", "volumeType": "gp3", "encrypted": True, "deleteOnTermination": True}
        if warm_start is not None and warm_start.image_snapshot is not None:
            ebs["snapshotID"] = warm_start.image_snapshot
            if warm_start.volume_initialization_rate is not None:
                ebs["volumeInitializationRate"] = warm_start.volume_initialization_rate
        return [{"deviceName": "/dev/xvda", "ebs": os_volume}, {"deviceName": "/dev/xvdb", "ebs": ebs}]
    return [{"deviceName": "/dev/xvda", "ebs": ebs, "rootVolume": True}]


def gpu_node_pool(pool: GpuPoolPlan) -> dict[str, Any]:
    config = pool.config
    spec: dict[str, Any] = {
        "template": {
            "metadata": {"labels": pool.labels},
            "spec": {
                "nodeClassRef": {"group": PROVIDER_GROUP, "kind": NODECLASS_KIND, "name": pool.name},
                "requirements": [
                    requirement(INSTANCE_TYPE_LABEL, [t.name for t in pool.instance_types]),
                    requirement(CAPACITY_TYPE_LABEL, list(config.capacity_types)),
                    requirement(ARCH_LABEL, [ARCH_AMD64]),
                    requirement(OS_LABEL, ["linux"]),
                ],
                "taints": [dict(GPU_TAINT)],
                "expireAfter": config.expire_after,
                "terminationGracePeriod": config.termination_grace_period,
            },
        },
        "disruption": {
            "consolidationPolicy": config.disruption.consolidation_policy,
            "consolidateAfter": config.disruption.consolidate_after,
            "budgets": [budget.model_dump(exclude_none=True) for budget in config.disruption.budgets],
        },
        # In the units Karpenter counts for the pool's sharing mode (config/advertised.py).
        "limits": nodepool_limits(pool),
    }
    if config.weight is not None:
        spec["weight"] = config.weight
    return {"apiVersion": NODEPOOL_API, "kind": "NodePool", "metadata": {"name": pool.name}, "spec": spec}


def node_overlays(pool: GpuPoolPlan) -> list[dict[str, Any]]:
    """One NodeOverlay per instance type whose GPU resources Karpenter would otherwise get wrong.

    Karpenter merges an overlay's `capacity` over the instance type's, resource by resource
    (kubernetes-sigs/karpenter pkg/cloudprovider/types.go, ApplyCapacityOverlay), when its requirements
    match the NodePool's name, template labels and the type (pkg/controllers/nodeoverlay/controller.go,
    getOverlaidOfferings). Two overlays of equal weight setting one resource on one type conflict and
    neither applies (store.go, isCapacityUpdateConflicting): each overlay here names one pool and one
    type, so none overlap. Its name is `<pool>-<type>`; types hold no '-', so names cannot collide.
    """
    overlays = []
    for instance_type in pool.instance_types:
        capacity = overlay_capacity(pool, instance_type)
        if capacity is None:
            continue
        overlays.append(
            {
                "apiVersion": NODEOVERLAY_API,
                "kind": "NodeOverlay",
                "metadata": {"name": f"{pool.name}-{instance_type.name}"},
                "spec": {
                    "requirements": [
                        requirement(NODEPOOL_LABEL, [pool.name]),
                        requirement(INSTANCE_TYPE_LABEL, [instance_type.name]),
                    ],
                    "capacity": {resource: str(units) for resource, units in capacity.items()},
                },
            }
        )
    return overlays


def cpu_node_pool(config: CpuPoolConfig) -> dict[str, Any]:
    """General-purpose nodes for everything that needs no GPU, so nothing CPU-only lands on a GPU node."""
    return {
        "apiVersion": NODEPOOL_API,
        "kind": "NodePool",
        "metadata": {"name": CPU_POOL_NAME},
        "spec": {
            "template": {
                "metadata": {"labels": {POOL_LABEL: CPU_POOL_NAME}},
                "spec": {
                    "nodeClassRef": {"group": PROVIDER_GROUP, "kind": NODECLASS_KIND, "name": CPU_POOL_NAME},
                    "requirements": [
                        requirement(INSTANCE_FAMILY_LABEL, list(config.instance_families)),
                        requirement(CAPACITY_TYPE_LABEL, list(config.capacity_types)),
                        requirement(ARCH_LABEL, [ARCH_AMD64]),
                        requirement(OS_LABEL, ["linux"]),
                    ],
                    "expireAfter": config.expire_after,
                    "terminationGracePeriod": config.termination_grace_period,
                },
            },
            "disruption": {
                "consolidationPolicy": config.consolidation_policy,
                "consolidateAfter": config.consolidate_after,
            },
            "limits": {"cpu": config.cpu_limit, "memory": f"{config.memory_limit_gib}Gi"},
        },
    }


def requirement(key: str, values: list[str]) -> dict[str, Any]:
    return {"key": key, "operator": "In", "values": values}
