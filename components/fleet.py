"""MultiKueue: a manager's AdmissionCheck, MultiKueueConfig and clusters; a worker's identity for the manager.

Everything here follows kubernetes-sigs/kueue at tag v0.19.2 (models/kueue/multikueue.py names the files:
multikueue_types.go, multikueuecluster.go, site/content/en/docs/tasks/manage/setup_multikueue.md and
create-multikueue-kubeconfig.sh). When bumping Kueue, diff those between the tags.

Credentials. At v0.19.2 a MultiKueueCluster connects through a kubeconfig Secret or a ClusterProfile.
The kubeconfig may not run an exec plugin (`validateKubeconfig`), so the 15-minute EKS tokens of
`aws eks get-token` are out; the ClusterProfile path allows one but is Alpha, off by default
(MultiKueueClusterProfile), and needs an access-provider binary in the controller's image. So each
worker gives the manager a ServiceAccount in kueue-system with upstream's documented rules and nothing
else (reads cluster-wide, writes in the tenant namespaces only), and a token Secret
(`kubernetes.io/service-account-token`) whose deletion revokes it. The token is kept in the manager's
Secrets Manager (`/<manager>/kueue-system/multikueue-<worker>`), and an ExternalSecret in the
manager's kueue-system writes the kubeconfig Kueue reads: the worker's endpoint and CA from its stack
(a `pulumi.StackReference`), the token from Secrets Manager. Rotation: docs/fleet.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml
from pulumi_aws import iam

from config import namespaces
from config.fleet import ADMISSION_CHECK, WORKER_SERVICE_ACCOUNT, FleetConfig, kubeconfig_secret
from models.kueue import multikueue

from .lib.resources import Children, declare

NAMESPACE = namespaces.KUEUE
ESO_API_VERSION = "external-secrets.io/v1"
TOKEN_STORE = "multikueue-tokens"
# How often the manager's kubeconfig Secrets re-read Secrets Manager: a rotated token reaches Kueue,
# which watches the Secret and reconnects, within this.
REFRESH_INTERVAL = "10m"
WORKER_TOKEN_SECRET = f"{WORKER_SERVICE_ACCOUNT}-token"
RBAC = "rbac.authorization.k8s.io/v1"


def admission_check() -> dict[str, Any]:
    """The manager's one MultiKueue AdmissionCheck, parameterised by the MultiKueueConfig of the same name."""
    return {
        "apiVersion": multikueue.API_VERSION,
        "kind": "AdmissionCheck",
        "metadata": {"name": ADMISSION_CHECK},
        "spec": {
            "controllerName": multikueue.CONTROLLER_NAME,
            "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": ADMISSION_CHECK},
        },
    }


def multikueue_config(fleet: FleetConfig) -> dict[str, Any]:
    """The workers, in the stack's order: the incremental dispatcher nominates them in it."""
    return {
        "apiVersion": multikueue.API_VERSION,
        "kind": "MultiKueueConfig",
        "metadata": {"name": ADMISSION_CHECK},
        "spec": {"clusters": list(fleet.workers)},
    }


def multikueue_cluster(worker: str) -> dict[str, Any]:
    """A worker, named for its stack, connected through the kubeconfig Secret its ExternalSecret writes."""
    return {
        "apiVersion": multikueue.API_VERSION,
        "kind": "MultiKueueCluster",
        "metadata": {"name": worker},
        "spec": {
            "clusterSource": {
                "kubeConfig": {"location": kubeconfig_secret(worker), "locationType": multikueue.SECRET_LOCATION}
            }
        },
    }


def kubeconfig_template(worker: str, endpoint: str, certificate_authority: str) -> str:
    """The kubeconfig Kueue reads: inline CA, the worker's endpoint, the token as ESO's template fills it."""
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": worker, "cluster": {"server": endpoint, "certificate-authority-data": certificate_authority}}],
        "users": [{"name": WORKER_SERVICE_ACCOUNT, "user": {"token": "{{ .token }}"}}],
        "contexts": [{"name": worker, "context": {"cluster": worker, "user": WORKER_SERVICE_ACCOUNT}}],
        "current-context": worker,
    }
    return yaml.safe_dump(document, sort_keys=True, default_flow_style=False)


def kubeconfig_external_secret(
    worker: str, secret_name: str, endpoint: pulumi.Input[str], certificate_authority: pulumi.Input[str]
) -> dict[str, Any]:
    """The Secret `multikueue-<worker>` (key `kubeconfig`), rebuilt from Secrets Manager's token every refresh."""
    template = pulumi.Output.all(endpoint, certificate_authority).apply(
        lambda values: kubeconfig_template(worker, values[0], values[1])
    )
    return {
        "apiVersion": ESO_API_VERSION,
        "kind": "ExternalSecret",
        "metadata": {"name": kubeconfig_secret(worker), "namespace": NAMESPACE},
        "spec": {
            "refreshInterval": REFRESH_INTERVAL,
            "secretStoreRef": {"kind": "SecretStore", "name": TOKEN_STORE},
            "target": {
                "name": kubeconfig_secret(worker),
                "creationPolicy": "Owner",
                "template": {"engineVersion": "v2", "data": {multikueue.KUBECONFIG_SECRET_KEY: template}},
            },
            "data": [{"secretKey": "token", "remoteRef": {"key": secret_name}}],
        },
    }


def token_store(region: str, role_arn: pulumi.Input[str]) -> dict[str, Any]:
    """Secrets Manager in the manager's region, through the role that reads the fleet's tokens only."""
    return {
        "apiVersion": ESO_API_VERSION,
        "kind": "SecretStore",
        "metadata": {"name": TOKEN_STORE, "namespace": NAMESPACE},
        "spec": {
            "provider": {
                "aws": {"service": "SecretsManager", "region": region, "role": role_arn, "sessionTagsPolicy": "Simple"}
            }
        },
    }


def worker_objects(tenant_namespaces: Sequence[str]) -> list[dict[str, Any]]:
    """A worker's side: the manager's ServiceAccount and its token Secret; upstream's ClusterRole split in two,
    its reads bound cluster-wide and its writes (create, delete, update, patch) only in the tenants' namespaces,
    where the manager's copies of the tenants' workloads go."""
    name = WORKER_SERVICE_ACCOUNT
    reads, writes = multikueue.split_rules(multikueue.WORKER_RBAC_RULES)
    subject = {"kind": "ServiceAccount", "name": name, "namespace": NAMESPACE}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": NAMESPACE}},
        {
            # The token controller fills `token` and `ca.crt`; deleting the Secret revokes the token.
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/service-account-token",
            "metadata": {
                "name": WORKER_TOKEN_SECRET,
                "namespace": NAMESPACE,
                "annotations": {"kubernetes.io/service-account.name": name},
            },
        },
        {"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": f"{name}-read"}, "rules": reads},
        {
            "apiVersion": RBAC,
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"{name}-read"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": f"{name}-read"},
            "subjects": [subject],
        },
        {"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": f"{name}-write"}, "rules": writes},
        *(
            {
                "apiVersion": RBAC,
                "kind": "RoleBinding",
                "metadata": {"name": f"{name}-write", "namespace": namespace},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": f"{name}-write"},
                "subjects": [subject],
            }
            for namespace in tenant_namespaces
        ),
    ]


class FleetManager(pulumi.ComponentResource):
    """The manager's MultiKueue objects, and per worker an ExternalSecret writing its kubeconfig."""

    def __init__(
        self,
        name: str,
        fleet: FleetConfig,
        *,
        region: str,
        workers: Mapping[str, Mapping[str, pulumi.Input[str]]],
        token_secret_names: Mapping[str, str],
        role_name: str,
        trust_policy: pulumi.Input[str],
        read_policy: pulumi.Input[str],
        provider: k8s.Provider,
        tags: Mapping[str, str],
        depends_on: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ):
        """
        :param fleet: `PlatformConfig.fleet` of a manager.
        :param region: the manager's region, where the token secrets are kept.
        :param workers: worker stack -> {"endpoint", "certificateAuthority"}, the worker stack's outputs.
        :param token_secret_names: worker stack -> its token's Secrets Manager name (config/fleet.py).
        :param role_name: the store's IAM role, named so the ESO controller may assume it.
        :param trust_policy: the role's trust: the ESO controller's session for kueue-system only.
        :param read_policy: the role's rights: the fleet's token secrets only.
        :param provider: the manager cluster's Kubernetes provider.
        :param tags: tags for the IAM role.
        :param depends_on: Kueue's release (its CRDs and webhooks) and External Secrets' release.
        """
        super().__init__("gpu-platform:fleet:FleetManager", name, None, opts)
        children = Children(self, provider, depends_on)
        self.role = iam.Role(
            f"{name}-token-role", name=role_name, assume_role_policy=trust_policy, tags=dict(tags),
            opts=pulumi.ResourceOptions(parent=self),
        )
        iam.RolePolicy(
            f"{name}-token-read", role=self.role.name, policy=read_policy, opts=pulumi.ResourceOptions(parent=self)
        )
        store = declare(f"{name}-token-store", token_store(region, self.role.arn), children.opts())
        self.check = declare(f"{name}-admission-check", admission_check(), children.opts())
        config = declare(f"{name}-config", multikueue_config(fleet), children.opts())
        for worker in fleet.workers:
            outputs = workers[worker]
            external = kubeconfig_external_secret(
                worker, token_secret_names[worker], outputs["endpoint"], outputs["certificateAuthority"]
            )
            secret = declare(f"{name}-kubeconfig-{worker}", external, children.opts(store))
            declare(f"{name}-cluster-{worker}", multikueue_cluster(worker), children.opts(secret, config))
        self.register_outputs({"workers": list(fleet.workers)})


class FleetWorker(pulumi.ComponentResource):
    """A worker's ServiceAccount for its manager: upstream's least rights, writes only in tenant namespaces."""

    def __init__(
        self,
        name: str,
        *,
        provider: k8s.Provider,
        namespaces: Mapping[str, pulumi.Resource],
        depends_on: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ):
        """
        :param provider: the worker cluster's Kubernetes provider.
        :param namespaces: tenant namespace -> its Namespace resource (the tenants component's); a RoleBinding each.
        :param depends_on: Kueue's release: its namespace and CRDs.
        """
        super().__init__("gpu-platform:fleet:FleetWorker", name, None, opts)
        children = Children(self, provider, depends_on)
        account: list[pulumi.Resource] = []
        for manifest in worker_objects(sorted(namespaces)):
            kind, metadata = manifest["kind"], manifest["metadata"]
            # Everything waits for the ServiceAccount (first); a RoleBinding also for its tenant's namespace.
            after = [*account, *([namespaces[metadata["namespace"]]] if kind == "RoleBinding" else [])]
            where = f"{metadata['namespace']}-" if kind == "RoleBinding" else ""
            resource = declare(f"{name}-{kind.lower()}-{where}{metadata['name']}", manifest, children.opts(*after))
            account = account or [resource]
        self.register_outputs({})
