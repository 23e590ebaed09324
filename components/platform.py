"""The whole platform, composed from its parts in dependency order."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from config import PlatformConfig, namespaces
from config.versions import AMI_RELEASES

from . import autoscaling, dcgm_exporter, efa, monitoring, opencost, queueing, secrets, supply_chain, training
from .addons import BEFORE_NODES, EBS_CSI_DRIVER, ClusterAddons, DefaultStorageClass
from .admission import TenantAdmission
from .autoscaling import Autoscaling, model_access
from .autoscaling.model_access import ModelAccess
from .cluster import Cluster
from .dcgm_exporter import DcgmExporter
from .efa import EfaDevicePlugin
from .gpu_operator import GpuOperator
from .headroom import Headroom
from .karpenter import Karpenter
from .lib.kubeconfig import KubeconfigCredentials
from .monitoring import Monitoring
from .network import Network
from .node_pools import CPU_AMI_FAMILY, NodePools
from .opencost import OpenCost
from .platform_network import PlatformNetwork
from .queueing import Queueing
from .secrets import TenantSecrets
from .supply_chain import SupplyChain
from .system_nodes import SystemNodeGroup
from .tenants import Tenants
from .training import Training


class GpuPlatform(pulumi.ComponentResource):
    """Network, cluster, add-ons and system nodes for one stack.

    Logical names start with the cluster name from config, so two stacks' resources never collide
    and a resource's name only changes when its config name does.
    """

    def __init__(self, config: PlatformConfig, opts: pulumi.ResourceOptions | None = None):
        name = config.cluster.name
        super().__init__("gpu-platform:index:GpuPlatform", name, None, opts)
        cluster_config = config.cluster
        tags = config.tags
        # Found once, used in every ARN of an AWS-owned policy: aws-cn and aws-us-gov have their own.
        partition = aws.get_partition(opts=pulumi.InvokeOptions(parent=self)).partition
        # The account every trust policy names (aws:SourceAccount).
        account_id = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self)).account_id

        self.network = Network(
            f"{name}-network",
            config.network,
            cluster_name=name,
            region=config.region,
            account_id=account_id,
            partition=partition,
            tags=tags,
            protect=cluster_config.protect,
            flow_log_retention_days=(
                cluster_config.network.flow_logs.retention_days if cluster_config.network.flow_logs.enabled else None
            ),
            ecr_endpoints=cluster_config.network.ecr_endpoints,
            opts=pulumi.ResourceOptions(parent=self),
        )

        self.cluster = Cluster(
            f"{name}-cluster",
            cluster_config,
            vpc_id=self.network.vpc_id,
            private_subnet_ids=self.network.private_subnet_ids,
            partition=partition,
            credentials=KubeconfigCredentials.from_stack_config(),
            tags=tags,
            efa=config.uses_efa,
            opts=pulumi.ResourceOptions(parent=self),
        )

        node_addons = ClusterAddons(
            f"{name}-node-addons",
            [addon for addon in config.addon_versions if addon.name in BEFORE_NODES],
            cluster_name=name,
            account_id=account_id,
            partition=partition,
            tags=tags,
            depends_on=[self.cluster.eks],
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.system_nodes = SystemNodeGroup(
            f"{name}-system",
            cluster_config.system_nodes,
            cluster_name=name,
            partition=partition,
            subnet_ids=self.network.private_subnet_ids,
            tags=tags,
            depends_on=[self.cluster.eks, *node_addons.addons.values()],
            opts=pulumi.ResourceOptions(parent=self),
        )
        workload_addons = ClusterAddons(
            f"{name}-addons",
            [addon for addon in config.addon_versions if addon.name not in BEFORE_NODES],
            cluster_name=name,
            account_id=account_id,
            partition=partition,
            tags=tags,
            depends_on=[self.system_nodes.node_group],
            opts=pulumi.ResourceOptions(parent=self),
        )
        storage_class = DefaultStorageClass(
            f"{name}-storage",
            provider=self.cluster.provider,
            depends_on=[workload_addons.addons[EBS_CSI_DRIVER]],
            opts=pulumi.ResourceOptions(parent=self),
        )

        # Controllers go on the system nodes, so they wait for them and for cluster DNS.
        controllers_ready = [self.system_nodes.node_group, *workload_addons.addons.values()]
        # Prometheus' volume needs the gp3 StorageClass; its pods go on the system nodes.
        self.monitoring = Monitoring(
            f"{name}-monitoring",
            config.monitoring,
            chart=config.charts[monitoring.CHART_KEY],
            crd_chart=config.charts[monitoring.CRD_CHART_KEY],
            provider=self.cluster.provider,
            cost_estimates={tenant.namespace: tenant.guaranteed_hourly_cost for tenant in config.tenants},
            depends_on=controllers_ready,
            storage=[storage_class],
            opts=pulumi.ResourceOptions(parent=self),
        )
        # Charts that render ServiceMonitors (Karpenter's, Kueue's, KEDA's) wait for the release that installs
        # their CRD: without it Kueue's and KEDA's installs fail and Karpenter's leaves its ServiceMonitor out
        # until the next upgrade. The GPU Operator creates the DCGM exporter's ServiceMonitor itself, and skips
        # it while the CRD is missing (NVIDIA/gpu-operator v26.7.0 controllers/object_controls.go, ServiceMonitor).
        scraped_controllers_ready = [*controllers_ready, self.monitoring.crd_release]
        self.karpenter = Karpenter(
            f"{name}-karpenter",
            cluster_name=name,
            region=config.region,
            account_id=account_id,
            partition=partition,
            chart_versions=config.charts,
            k8s_provider=self.cluster.provider,
            tags=tags,
            create_spot_service_linked_role=config.creates_spot_service_linked_role,
            depends_on=controllers_ready,
            service_monitor_crd=[self.monitoring.crd_release],
            opts=pulumi.ResourceOptions(parent=self),
        )
        # Tenants' namespaces, quotas, network rules and access. Kueue's LocalQueues go into
        # `self.tenants.namespaces`, each waiting for its namespace.
        self.tenants = Tenants(
            f"{name}-tenants",
            config.tenants,
            cluster_name=name,
            kubernetes_version=cluster_config.kubernetes_version,
            provider=self.cluster.provider,
            tags=tags,
            protect=cluster_config.protect,
            depends_on=[self.cluster.eks],
            opts=pulumi.ResourceOptions(parent=self),
        )

        # Admission policies of every tenant namespace, bound by the tenant label: in place before any
        # tenant principal can act (its access entry waits for the cluster, as they do).
        self.admission = TenantAdmission(
            f"{name}-admission",
            provider=self.cluster.provider,
            depends_on=[self.cluster.eks],
            opts=pulumi.ResourceOptions(parent=self),
        )

        # Kueue after the system nodes (its controller runs there); LocalQueues after their namespaces.
        self.queueing = Queueing(
            f"{name}-queueing",
            config.queueing,
            config.flavors,
            config.tenants,
            chart=config.charts[queueing.CHART_KEY],
            provider=self.cluster.provider,
            namespaces=self.tenants.namespaces,
            depends_on=scraped_controllers_ready,
            opts=pulumi.ResourceOptions(parent=self),
        )
        # The trainer after Kueue, whose TrainJob webhook must queue the first TrainJob.
        self.training = Training(
            f"{name}-training",
            chart=config.charts[training.CHART_KEY],
            provider=self.cluster.provider,
            depends_on=controllers_ready,
            queueing=[self.queueing.release],
            opts=pulumi.ResourceOptions(parent=self),
        )
        # Cost per namespace from this Prometheus; its ServiceMonitor needs the monitoring CRDs.
        self.opencost = OpenCost(
            f"{name}-opencost",
            name,
            chart=config.charts[opencost.CHART_KEY],
            provider=self.cluster.provider,
            depends_on=scraped_controllers_ready,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.gpu_operator = GpuOperator(
            f"{name}-gpu",
            config.gpu_pools,
            config.gpu,
            kubernetes_version=cluster_config.kubernetes_version,
            charts=config.charts,
            provider=self.cluster.provider,
            namespaces=self.tenants.namespaces,
            depends_on=scraped_controllers_ready,
            opts=pulumi.ResourceOptions(parent=self),
        )
        # GPU metrics of the nodes the operator's operands skip (Bottlerocket), into the operator's namespace.
        self.dcgm_exporter = (
            DcgmExporter(
                f"{name}-dcgm-exporter",
                config.gpu_pools,
                chart=config.charts[dcgm_exporter.CHART_KEY],
                provider=self.cluster.provider,
                depends_on=[*scraped_controllers_ready, self.gpu_operator.release],
                opts=pulumi.ResourceOptions(parent=self),
            )
            if dcgm_exporter.exporter_pools(config.gpu_pools)
            else None
        )
        # EFA devices reach pods only through the device plugin; only where a pool asks for EFA.
        self.efa = (
            EfaDevicePlugin(
                f"{name}-efa",
                chart=config.charts[efa.CHART_KEY],
                provider=self.cluster.provider,
                depends_on=controllers_ready,
                opts=pulumi.ResourceOptions(parent=self),
            )
            if config.uses_efa
            else None
        )
        self.node_pools = NodePools(
            f"{name}-pools",
            config.gpu_pools,
            config.cpu_pool,
            cluster_name=name,
            node_role_name=self.karpenter.node_role_name,
            cpu_ami_release=AMI_RELEASES[CPU_AMI_FAMILY],
            tags=tags,
            provider=self.cluster.provider,
            spot_role=self.karpenter.spot_service_linked_role,
            depends_on=self.karpenter.destroy_after,
            opts=pulumi.ResourceOptions(parent=self),
        )

        # Placeholder pods holding each pool's warm headroom, after the NodePools that launch their nodes.
        self.headroom = (
            Headroom(
                f"{name}-headroom",
                config.gpu_pools,
                provider=self.cluster.provider,
                depends_on=[self.node_pools, self.gpu_operator.release],
                opts=pulumi.ResourceOptions(parent=self),
            )
            if any(pool.headroom_pods for pool in config.gpu_pools)
            else None
        )

        # Kyverno before the platform's model servers, so their first pods are verified too; nothing of the
        # platform's own waits for it (its webhooks never see a platform namespace).
        verification = config.supply_chain.image_verification
        self.supply_chain = (
            SupplyChain(
                f"{name}-supply-chain",
                verification,
                chart=config.charts[supply_chain.CHART_KEY],
                provider=self.cluster.provider,
                depends_on=controllers_ready,
                opts=pulumi.ResourceOptions(parent=self),
            )
            if verification is not None
            else None
        )
        # External Secrets Operator, a role and a SecretStore per tenant, and the model servers' token secrets.
        self.secrets = (
            TenantSecrets(
                f"{name}-secrets",
                config.tenants,
                cluster_name=name,
                region=config.region,
                account_id=account_id,
                partition=partition,
                chart=config.charts[secrets.CHART_KEY],
                provider=self.cluster.provider,
                namespaces=self.tenants.namespaces,
                tags=tags,
                depends_on=controllers_ready,
                opts=pulumi.ResourceOptions(parent=self),
            )
            if config.secrets.enabled
            else None
        )
        # Read-only roles for tenants whose servers stream weights from the model store.
        model_store = config.autoscaling.model_store
        self.model_access = (
            ModelAccess(
                f"{name}-model-access",
                config.tenants,
                model_store,
                cluster_name=name,
                account_id=account_id,
                partition=partition,
                provider=self.cluster.provider,
                namespaces=self.tenants.namespaces,
                tags=tags,
                depends_on=[self.cluster.eks],
                opts=pulumi.ResourceOptions(parent=self),
            )
            if model_store is not None and model_access.readers(config.tenants)
            else None
        )
        tenant_workloads_ready = [
            *(self.supply_chain.policies.values() if self.supply_chain else ()),
            *(self.secrets.external_secrets.values() if self.secrets else ()),
            *(self.model_access.ready if self.model_access else ()),
        ]

        self.autoscaling = Autoscaling(
            name,
            config.tenants,
            config.autoscaling,
            chart=config.charts[autoscaling.CHART_KEY],
            provider=self.cluster.provider,
            namespaces=self.tenants.namespaces,
            local_queues=self.queueing.local_queues,
            gpu_nodes=[self.gpu_operator.release, self.node_pools, *tenant_workloads_ready],
            depends_on=scraped_controllers_ready,
            opts=pulumi.ResourceOptions(parent=self),
        )

        # Each platform namespace closed to everything but what its components need; a policy waits
        # for the release installed into its namespace (so for the namespace), and for nothing a
        # tenant adds.
        platform_namespaces: dict[str, list[pulumi.Resource]] = {
            namespaces.MONITORING: [self.monitoring.release],
            namespaces.KEDA: [self.autoscaling.release],
            namespaces.KUEUE: [self.queueing.release],
            namespaces.GPU_OPERATOR: [self.gpu_operator.release],
            namespaces.TRAINER: [self.training.release],
            namespaces.OPENCOST: [self.opencost.release],
        }
        if self.gpu_operator.dra_release is not None:
            platform_namespaces[namespaces.DRA_DRIVER] = [self.gpu_operator.dra_release]
        if self.supply_chain is not None:
            platform_namespaces[namespaces.KYVERNO] = [self.supply_chain.release]
        if self.secrets is not None:
            platform_namespaces[namespaces.EXTERNAL_SECRETS] = [self.secrets.release]
        if self.headroom is not None:
            platform_namespaces[namespaces.HEADROOM] = [self.headroom]
        self.platform_network = PlatformNetwork(
            f"{name}-platform-network",
            platform_namespaces,
            vpc_cidr=config.network.vpc_cidr,
            provider=self.cluster.provider,
            opts=pulumi.ResourceOptions(parent=self),
        )

        self.register_outputs({})
