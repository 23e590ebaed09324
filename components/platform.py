"""The whole platform, composed from its parts in dependency order."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from config import PlatformConfig, namespaces
from config.claims import template_charges
from config.fleet import manager_multikueue, stack_reference_name, worker_token_secret
from config.kai import kai_gpu_memory_mib
from config.secrets import tenant_secrets_role_name
from config.versions import AMI_RELEASES

from . import autoscaling, dcgm_exporter, efa, kai, monitoring, opencost, queueing, secrets, supply_chain, training
from .addons import BEFORE_NODES, EBS_CSI_DRIVER, ClusterAddons, DefaultStorageClass
from .admission import TenantAdmission
from .autoscaling import Autoscaling, model_access
from .autoscaling.model_access import ModelAccess
from .cluster import Cluster
from .dcgm_exporter import DcgmExporter
from .dra_nodes import DraNodeGroups
from .efa import EfaDevicePlugin
from .fleet import FleetManager, FleetWorker
from .gpu_operator import GpuOperator
from .headroom import Headroom
from .image_pulls import TenantImagePulls
from .kai import KaiScheduler
from .karpenter import SPOT_ROLE_NAME, SPOT_SERVICE, Karpenter
from .lib import iam as policies
from .lib.account import account_has_service_linked_role
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


@dataclass(frozen=True)
class _Account:
    """What every phase names the AWS account by: found once per stack."""

    # Found once, used in every ARN of an AWS-owned policy: aws-cn and aws-us-gov have their own.
    partition: str
    # The account every trust policy names (aws:SourceAccount).
    account_id: pulumi.Output[str]


class GpuPlatform(pulumi.ComponentResource):
    """The whole platform for one stack, declared in phases, each a method:

    foundation (network, cluster, add-ons, system nodes), cluster-wide controllers, tenancy (namespaces,
    admission, queues, secrets), capacity (GPU software and Karpenter's pools), serving (KEDA and the
    model servers) and the platform namespaces' network policies. A phase gets what earlier phases
    declared through the attributes they set and the lists they return.

    Logical names start with the cluster name from config, so two stacks' resources never collide
    and a resource's name only changes when its config name does.
    """

    def __init__(self, config: PlatformConfig, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:index:GpuPlatform", config.cluster.name, None, opts)
        account = _Account(
            partition=aws.get_partition(opts=pulumi.InvokeOptions(parent=self)).partition,
            account_id=aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self)).account_id,
        )
        # The account-wide EC2 Spot service-linked role, created with Karpenter when a pool allows spot and the
        # account lacks it; a spot DRA pool's node group, declared before Karpenter, waits for it too.
        self._create_spot_role = config.uses_spot and not account_has_service_linked_role(SPOT_SERVICE, SPOT_ROLE_NAME, self)
        self._spot_role: asyncio.Future[pulumi.Resource] = asyncio.get_event_loop().create_future()
        try:
            # Controllers go on the system nodes, so they wait for them and for cluster DNS.
            controllers_ready, storage_class = self._foundation(config, account)
            scraped_controllers_ready = self._controllers(config, account, controllers_ready, storage_class)
        except BaseException as err:
            # A spot DRA group would wait for the role forever, and the run with it: it fails with the run.
            if self._create_spot_role and not self._spot_role.done():
                self._spot_role.set_exception(err)
            raise
        self._tenancy(config, account, controllers_ready, scraped_controllers_ready)
        self._capacity(config, controllers_ready, scraped_controllers_ready)
        self._serving(config, scraped_controllers_ready)
        self._network(config)
        self.register_outputs({})

    def _opts(self) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self)

    def _foundation(self, config: PlatformConfig, account: _Account) -> tuple[list[pulumi.Resource], pulumi.Resource]:
        """Network, cluster, the add-ons nodes need, the managed node groups, the rest of the add-ons, the gp3
        StorageClass.

        Returns what controllers wait for (system nodes and every add-on) and the StorageClass.
        """
        name, cluster_config, tags = config.cluster.name, config.cluster, config.tags
        flow_logs = cluster_config.network.flow_logs
        self.network = Network(
            f"{name}-network",
            config.network,
            cluster_name=name,
            region=config.region,
            account_id=account.account_id,
            partition=account.partition,
            tags=tags,
            protect=cluster_config.protect,
            flow_log_retention_days=flow_logs.retention_days if flow_logs.enabled else None,
            ecr_endpoints=cluster_config.network.ecr_endpoints,
            opts=self._opts(),
        )
        self.cluster = Cluster(
            f"{name}-cluster",
            cluster_config,
            vpc_id=self.network.vpc_id,
            private_subnet_ids=self.network.private_subnet_ids,
            partition=account.partition,
            credentials=KubeconfigCredentials.from_stack_config(),
            tags=tags,
            efa=config.uses_efa,
            opts=self._opts(),
        )
        node_addons = self._addons(f"{name}-node-addons", config, account, [self.cluster.eks], before_nodes=True)
        self._node_groups(config, account, [self.cluster.eks, *node_addons.addons.values()])
        workload_addons = self._addons(f"{name}-addons", config, account, [self.system_nodes.node_group], before_nodes=False)
        storage_class = DefaultStorageClass(
            f"{name}-storage",
            provider=self.cluster.provider,
            depends_on=[workload_addons.addons[EBS_CSI_DRIVER]],
            opts=self._opts(),
        )
        return [self.system_nodes.node_group, *workload_addons.addons.values()], storage_class

    def _node_groups(self, config: PlatformConfig, account: _Account, depends_on: list[pulumi.Resource]) -> None:
        """The EKS managed node groups: the system nodes, and the standing nodes of DRA pools."""
        name = config.cluster.name
        self.system_nodes = SystemNodeGroup(
            f"{name}-system",
            config.cluster.system_nodes,
            cluster_name=name,
            kubernetes_version=config.cluster.kubernetes_version,
            partition=account.partition,
            account_id=account.account_id,
            repository_prefixes=config.supply_chain.node_repositories,
            subnet_ids=self.network.private_subnet_ids,
            tags=config.tags,
            depends_on=depends_on,
            opts=self._opts(),
        )
        # DRA pools' standing capacity: Karpenter v1.14.1 launches nothing for pods with resource claims.
        self.dra_nodes = (
            DraNodeGroups(
                f"{name}-dra-nodes",
                config.gpu_pools,
                cluster_name=name,
                kubernetes_version=config.cluster.kubernetes_version,
                partition=account.partition,
                account_id=account.account_id,
                repository_prefixes=config.supply_chain.node_repositories,
                subnet_ids=self.network.private_subnet_ids,
                tags=config.tags,
                depends_on=depends_on,
                spot_after=[pulumi.Output.from_input(self._spot_role)] if self._create_spot_role else [],
                opts=self._opts(),
            )
            if any(pool.is_dra for pool in config.gpu_pools)
            else None
        )

    def _addons(
        self, name: str, config: PlatformConfig, account: _Account, depends_on: list[pulumi.Resource], *, before_nodes: bool
    ) -> ClusterAddons:
        """The EKS add-ons that must run before nodes join (`BEFORE_NODES`), or all the others."""
        return ClusterAddons(
            name,
            [addon for addon in config.addon_versions if (addon.name in BEFORE_NODES) == before_nodes],
            cluster_name=config.cluster.name,
            account_id=account.account_id,
            partition=account.partition,
            tags=config.tags,
            depends_on=depends_on,
            opts=self._opts(),
        )

    def _controllers(
        self, config: PlatformConfig, account: _Account, controllers_ready: list[pulumi.Resource], storage_class: pulumi.Resource
    ) -> list[pulumi.Resource]:
        """Cluster-wide controllers no tenant object needs: monitoring, Karpenter, OpenCost, Kyverno.

        Returns what a chart rendering ServiceMonitors waits for: charts that render ServiceMonitors
        (Karpenter's, Kueue's, KEDA's) wait for the release that installs their CRD; without it Kueue's and
        KEDA's installs fail and Karpenter's leaves its ServiceMonitor out until the next upgrade. The GPU
        Operator creates the DCGM exporter's ServiceMonitor itself, and skips it while the CRD is missing
        (NVIDIA/gpu-operator v26.7.0 controllers/object_controls.go, ServiceMonitor).
        """
        name, provider = config.cluster.name, self.cluster.provider
        # Prometheus' volume needs the gp3 StorageClass; its pods go on the system nodes.
        self.monitoring = Monitoring(
            f"{name}-monitoring",
            config.monitoring,
            chart=config.charts[monitoring.CHART_KEY],
            crd_chart=config.charts[monitoring.CRD_CHART_KEY],
            provider=provider,
            cost_estimates={tenant.namespace: tenant.guaranteed_hourly_cost for tenant in config.tenants},
            dra_claims=template_charges(config.gpu.dra.claim_templates),
            depends_on=controllers_ready,
            storage=[storage_class],
            multikueue=config.fleet.role == "manager",
            kai=config.uses_kai,
            opts=self._opts(),
        )
        scraped_controllers_ready = [*controllers_ready, self.monitoring.crd_release]
        self.karpenter = Karpenter(
            f"{name}-karpenter",
            cluster_name=name,
            region=config.region,
            account_id=account.account_id,
            partition=account.partition,
            node_repositories=config.supply_chain.node_repositories,
            chart_versions=config.charts,
            k8s_provider=provider,
            tags=config.tags,
            create_spot_service_linked_role=self._create_spot_role,
            snapshot_kms_keys=config.snapshot_kms_keys,
            depends_on=controllers_ready,
            service_monitor_crd=[self.monitoring.crd_release],
            opts=self._opts(),
        )
        if self.karpenter.spot_service_linked_role is not None:
            self._spot_role.set_result(self.karpenter.spot_service_linked_role)
        # Cost per namespace from this Prometheus; its ServiceMonitor needs the monitoring CRDs.
        self.opencost = OpenCost(
            f"{name}-opencost",
            name,
            chart=config.charts[opencost.CHART_KEY],
            provider=provider,
            depends_on=scraped_controllers_ready,
            opts=self._opts(),
        )
        # Kyverno before the platform's model servers, so their first pods are verified too; nothing of the
        # platform's own waits for it (its webhooks never see a platform namespace).
        verification = config.supply_chain.image_verification
        self.supply_chain = (
            SupplyChain(
                f"{name}-supply-chain",
                verification,
                chart=config.charts[supply_chain.CHART_KEY],
                provider=provider,
                depends_on=controllers_ready,
                opts=self._opts(),
            )
            if verification is not None
            else None
        )
        return scraped_controllers_ready

    def _tenancy(
        self,
        config: PlatformConfig,
        account: _Account,
        controllers_ready: list[pulumi.Resource],
        scraped_controllers_ready: list[pulumi.Resource],
    ) -> None:
        """Tenants' namespaces, quotas, network rules and access; their admission policies, Kueue and its
        queues, the trainer, and the tenants' secrets."""
        name, provider = config.cluster.name, self.cluster.provider
        self._tenants_and_queues(config, scraped_controllers_ready)
        # The trainer after Kueue, whose TrainJob webhook must queue the first TrainJob.
        self.training = Training(
            f"{name}-training",
            chart=config.charts[training.CHART_KEY],
            provider=provider,
            depends_on=controllers_ready,
            queueing=[self.queueing.release],
            opts=self._opts(),
        )
        self._tenant_secrets(config, account, controllers_ready)
        self._model_access(config, account)
        self._fleet(config, account)

    def _fleet(self, config: PlatformConfig, account: _Account) -> None:
        """A fleet manager's MultiKueue objects, reading each worker stack's outputs; a worker's identity for it."""
        name, fleet = config.cluster.name, config.fleet
        if fleet.role == "worker":
            FleetWorker(f"{name}-fleet", provider=self.cluster.provider, namespaces=self.tenants.namespaces,
                        depends_on=[self.queueing.release], opts=self._opts())
        if fleet.role != "manager":
            return
        assert self.secrets is not None  # config/platform.py: a manager has External Secrets
        references = {
            worker: pulumi.StackReference(
                f"{name}-fleet-{worker}", stack_name=stack_reference_name(worker), opts=self._opts()
            )
            for worker in fleet.workers
        }
        role_name = tenant_secrets_role_name(name, namespaces.KUEUE)
        controller_arn = self.secrets.controller_role.arn
        FleetManager(
            f"{name}-fleet",
            fleet,
            region=config.region,
            workers={
                worker: {
                    "endpoint": reference.get_output("clusterEndpoint"),
                    "certificateAuthority": reference.get_output("clusterCertificateAuthority"),
                }
                for worker, reference in references.items()
            },
            token_secret_names={worker: worker_token_secret(name, worker) for worker in fleet.workers},
            role_name=role_name,
            trust_policy=pulumi.Output.all(account.account_id, controller_arn).apply(
                lambda values: policies.to_json(
                    secrets.tenant_trust_policy(values[0], values[1], name, namespaces.KUEUE)
                )
            ),
            read_policy=account.account_id.apply(
                lambda account_id: policies.to_json(
                    secrets.tenant_read_policy(account.partition, config.region, account_id, name, namespaces.KUEUE)
                )
            ),
            provider=self.cluster.provider,
            tags=config.tags,
            depends_on=[self.queueing.release, self.secrets.release],
            opts=self._opts(),
        )

    def _tenants_and_queues(self, config: PlatformConfig, scraped_controllers_ready: list[pulumi.Resource]) -> None:
        """Tenants' namespaces, quotas, network rules and access; their admission policies; Kueue and its queues.

        Tenant namespaces wait for Kueue's release, declared after them (its LocalQueues go into them): a
        destroy then deletes each namespace, with the pods and Workloads that carry Kueue's finalizers,
        while Kueue still runs to remove them, and uninstalls Kueue after.
        """
        name, provider = config.cluster.name, self.cluster.provider
        kueue_installed: asyncio.Future[pulumi.Resource] = asyncio.get_event_loop().create_future()
        try:
            # Kueue's LocalQueues go into `self.tenants.namespaces`, each waiting for its namespace.
            self.tenants = Tenants(
                f"{name}-tenants",
                config.tenants,
                cluster_name=name,
                kubernetes_version=config.cluster.kubernetes_version,
                provider=provider,
                tags=config.tags,
                protect=config.cluster.protect,
                bootstrap_admin=self.cluster.creator,
                namespaces_after=[pulumi.Output.from_input(kueue_installed)],
                depends_on=[self.cluster.eks],
                opts=self._opts(),
            )
            # Admission policies of every tenant namespace, bound by the tenant label: in place before any
            # tenant principal can act (its access entry waits for the cluster, as they do).
            self.admission = TenantAdmission(
                f"{name}-admission",
                deployers=sorted({*config.cluster.admins, self.cluster.creator}),
                kubernetes_version=config.cluster.kubernetes_version,
                provider=provider,
                kai_pools=kai_gpu_memory_mib(config.gpu_pools) or None,
                depends_on=[self.cluster.eks],
                opts=self._opts(),
            )
            # Kueue after the system nodes (its controller runs there); LocalQueues after their namespaces.
            self.queueing = Queueing(
                f"{name}-queueing",
                config.queueing,
                config.flavors,
                config.tenants,
                chart=config.charts[queueing.CHART_KEY],
                provider=provider,
                namespaces=self.tenants.namespaces,
                depends_on=scraped_controllers_ready,
                device_classes=[device_class.name for device_class in config.gpu.dra.device_classes],
                multikueue=manager_multikueue(config.fleet, name) if config.fleet.role == "manager" else None,
                opts=self._opts(),
            )
        except BaseException as err:
            # The namespaces would wait for the release forever, and the run with them: they fail with the run.
            kueue_installed.set_exception(err)
            raise
        kueue_installed.set_result(self.queueing.release)

    def _tenant_secrets(self, config: PlatformConfig, account: _Account, controllers_ready: list[pulumi.Resource]) -> None:
        """External Secrets Operator, a role and a SecretStore per tenant, the model servers' token secrets, and
        each tenant's ECR pull secret."""
        self.secrets = (
            TenantSecrets(
                f"{config.cluster.name}-secrets",
                config.tenants,
                cluster_name=config.cluster.name,
                region=config.region,
                account_id=account.account_id,
                partition=account.partition,
                chart=config.charts[secrets.CHART_KEY],
                provider=self.cluster.provider,
                namespaces=self.tenants.namespaces,
                tags=config.tags,
                depends_on=controllers_ready,
                opts=self._opts(),
            )
            if config.secrets.enabled
            else None
        )
        # Each tenant's ECR login, pulling its own repositories only, made by the same controller.
        self.image_pulls = (
            TenantImagePulls(
                f"{config.cluster.name}-image-pulls",
                config.tenants,
                cluster_name=config.cluster.name,
                region=config.region,
                account_id=account.account_id,
                partition=account.partition,
                controller_role_arn=self.secrets.controller_role.arn,
                provider=self.cluster.provider,
                namespaces=self.tenants.namespaces,
                tags=config.tags,
                depends_on=[self.secrets.release],
                opts=self._opts(),
            )
            if self.secrets is not None
            else None
        )

    def _model_access(self, config: PlatformConfig, account: _Account) -> None:
        """Read-only roles for tenants whose servers stream weights from the model store."""
        model_store = config.autoscaling.model_store
        self.model_access = (
            ModelAccess(
                f"{config.cluster.name}-model-access",
                config.tenants,
                model_store,
                cluster_name=config.cluster.name,
                account_id=account.account_id,
                partition=account.partition,
                provider=self.cluster.provider,
                namespaces=self.tenants.namespaces,
                tags=config.tags,
                depends_on=[self.cluster.eks],
                opts=self._opts(),
            )
            if model_store is not None and model_access.readers(config.tenants)
            else None
        )

    def _capacity(
        self, config: PlatformConfig, controllers_ready: list[pulumi.Resource], scraped_controllers_ready: list[pulumi.Resource]
    ) -> None:
        """What makes GPU nodes usable and launches them: the GPU Operator (and DRA), the DCGM exporter for
        Bottlerocket pools, the EFA device plugin, then the GPU nodes (`_gpu_nodes`)."""
        name, provider = config.cluster.name, self.cluster.provider
        self.gpu_operator = GpuOperator(
            f"{name}-gpu",
            config.gpu_pools,
            config.gpu,
            kubernetes_version=config.cluster.kubernetes_version,
            charts=config.charts,
            provider=provider,
            namespaces=self.tenants.namespaces,
            depends_on=scraped_controllers_ready,
            opts=self._opts(),
        )
        # GPU metrics of the nodes the operator's operands skip (Bottlerocket, DRA), beside the operator or DRA driver.
        self.dcgm_exporter = (
            DcgmExporter(
                f"{name}-dcgm-exporter",
                config.gpu_pools,
                chart=config.charts[dcgm_exporter.CHART_KEY],
                provider=provider,
                depends_on=[
                    *scraped_controllers_ready,
                    self.gpu_operator.release,
                    *([self.gpu_operator.dra_release] if self.gpu_operator.dra_release else []),
                ],
                opts=self._opts(),
            )
            if dcgm_exporter.exporter_pools(config.gpu_pools)
            else None
        )
        # EFA devices reach pods only through the device plugin; only where a pool asks for EFA.
        self.efa = (
            EfaDevicePlugin(
                f"{name}-efa",
                chart=config.charts[efa.CHART_KEY],
                provider=provider,
                depends_on=controllers_ready,
                opts=self._opts(),
            )
            if config.uses_efa
            else None
        )
        # KAI places and counts fractions on the pools it schedules; only where a pool says `scheduler: kai`.
        self.kai = (
            KaiScheduler(
                f"{name}-kai",
                config.kai_queues,
                chart=config.charts[kai.CHART_KEY],
                provider=provider,
                depends_on=controllers_ready,
                service_monitor_crd=[self.monitoring.crd_release],
                opts=self._opts(),
            )
            if config.uses_kai
            else None
        )
        self._gpu_nodes(config)

    def _gpu_nodes(self, config: PlatformConfig) -> None:
        """Karpenter's NodePools, and the placeholder pods that keep each pool's warm headroom on running nodes."""
        name, provider = config.cluster.name, self.cluster.provider
        self.node_pools = NodePools(
            f"{name}-pools",
            config.gpu_pools,
            config.cpu_pool,
            cluster_name=name,
            node_role_name=self.karpenter.node_role_name,
            cpu_ami_release=AMI_RELEASES[CPU_AMI_FAMILY],
            tags=config.tags,
            provider=provider,
            spot_role=self.karpenter.spot_service_linked_role,
            depends_on=self.karpenter.destroy_after,
            opts=self._opts(),
        )
        # Placeholder pods holding each pool's warm headroom, after the NodePools that launch their nodes.
        self.headroom = (
            Headroom(
                f"{name}-headroom",
                config.gpu_pools,
                provider=provider,
                depends_on=[self.node_pools, self.gpu_operator.release],
                opts=self._opts(),
            )
            if any(pool.headroom_pods for pool in config.gpu_pools)
            else None
        )

    def _serving(self, config: PlatformConfig, scraped_controllers_ready: list[pulumi.Resource]) -> None:
        """KEDA, and each tenant's inference deployments: their scalers and the model servers the platform runs.

        A served Deployment waits for the GPU nodes and for what admits its pods and what they read: the
        image verification policies and the model-hub token secrets, when the stack has them.
        """
        tenant_workloads_ready = [
            *(self.supply_chain.policies.values() if self.supply_chain else ()),
            *(self.secrets.external_secrets.values() if self.secrets else ()),
            *(self.model_access.ready if self.model_access else ()),
        ]
        self.autoscaling = Autoscaling(
            config.cluster.name,
            config.tenants,
            config.autoscaling,
            chart=config.charts[autoscaling.CHART_KEY],
            provider=self.cluster.provider,
            namespaces=self.tenants.namespaces,
            local_queues=self.queueing.local_queues,
            gpu_nodes=[self.gpu_operator.release, self.node_pools, *tenant_workloads_ready],
            depends_on=scraped_controllers_ready,
            opts=self._opts(),
        )

    def _network(self, config: PlatformConfig) -> None:
        """Each platform namespace closed to everything but what its components need.

        A policy waits for the release installed into its namespace (so for the namespace), and for
        nothing a tenant adds.
        """
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
            f"{config.cluster.name}-platform-network",
            platform_namespaces,
            vpc_cidr=config.network.vpc_cidr,
            provider=self.cluster.provider,
            opts=self._opts(),
        )
