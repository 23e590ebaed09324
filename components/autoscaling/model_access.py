"""Each tenant's read-only access to its own weights in the model store, for servers with `modelSource: s3://...`.

Per tenant with such a server: an IAM role only EKS Pod Identity may assume, and only for the tenant's
`model-reader` service account in its own namespace on this cluster (components/lib/iam.py
pod_identity_trust_policy: `aws:SourceAccount` and the session tags Pod Identity sets); an inline policy
reading objects under `s3://<bucket>/<tenant>/` and listing that prefix only; the Pod Identity
association; and the service account the tenant's servers run as. Another tenant's prefix, or any
write, is denied by omission.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from config.autoscaling import MODEL_READER_SERVICE_ACCOUNT, ModelStoreConfig, s3_model_location
from config.fair_share import TenantPlan

from ..lib import iam as policies
from ..lib.resources import Children, declare


def readers(tenants: Sequence[TenantPlan]) -> list[TenantPlan]:
    """The tenants with at least one server reading its weights from S3."""
    return [
        tenant for tenant in tenants
        if any(d.serving is not None and s3_model_location(d.serving.model_source) for d in tenant.config.inference)
    ]


class ModelAccess(pulumi.ComponentResource):
    """A read-only model role per tenant that streams weights from S3, bound to its servers' service account."""

    def __init__(
        self,
        name: str,
        tenants: Sequence[TenantPlan],
        store: ModelStoreConfig,
        *,
        cluster_name: str,
        account_id: pulumi.Input[str],
        partition: pulumi.Input[str],
        provider: k8s.Provider,
        namespaces: Mapping[str, pulumi.Resource],
        tags: Mapping[str, str],
        depends_on: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ):
        """
        :param tenants: `PlatformConfig.tenants`: a role for each with an `s3://` modelSource.
        :param store: `autoscaling.modelStore`: the bucket, each tenant's prefix its name.
        :param cluster_name: names the roles and scopes their trust policies.
        :param account_id: the account trust policies name (`aws:SourceAccount`).
        :param partition: the ARN partition of the bucket.
        :param namespaces: the tenants' Namespace resources, which their service accounts wait for.
        :param depends_on: the cluster (Pod Identity associations need it).
        """
        super().__init__("gpu-platform:autoscaling:ModelAccess", name, None, opts)
        in_cluster = Children(self, provider)
        self.ready: list[pulumi.Resource] = []
        for tenant in readers(tenants):
            role = aws.iam.Role(
                f"{name}-{tenant.name}-role",
                name=model_reader_role_name(cluster_name, tenant.name),
                assume_role_policy=pulumi.Output.from_input(account_id).apply(_trust_json(cluster_name, tenant.namespace)),
                tags=dict(tags),
                opts=pulumi.ResourceOptions(parent=self),
            )
            read = aws.iam.RolePolicy(
                f"{name}-{tenant.name}-read",
                role=role.id,
                policy=pulumi.Output.from_input(partition).apply(_read_json(store, tenant.name)),
                opts=pulumi.ResourceOptions(parent=role),
            )
            association = aws.eks.PodIdentityAssociation(
                f"{name}-{tenant.name}-identity",
                cluster_name=cluster_name,
                namespace=tenant.namespace,
                service_account=MODEL_READER_SERVICE_ACCOUNT,
                role_arn=role.arn,
                tags=dict(tags),
                opts=pulumi.ResourceOptions(parent=self, depends_on=list(depends_on)),
            )
            account = declare(
                f"{name}-{tenant.name}-service-account",
                model_reader_service_account(tenant),
                in_cluster.opts(namespaces[tenant.name]),
            )
            self.ready += [read, association, account]
        self.register_outputs({})


def _trust_json(cluster_name: str, namespace: str) -> Callable[[str], str]:
    return lambda account: policies.to_json(
        policies.pod_identity_trust_policy(account, cluster_name, namespace, MODEL_READER_SERVICE_ACCOUNT)
    )


def _read_json(store: ModelStoreConfig, tenant: str) -> Callable[[str], str]:
    return lambda partition: policies.to_json(
        model_read_policy(partition, store.bucket, tenant, kms_key_arn=store.kms_key_arn, region=store.region)
    )


def model_reader_role_name(cluster_name: str, tenant: str) -> str:
    return f"{cluster_name}-{tenant}-model-reader"


def model_read_policy(
    partition: str, bucket: str, tenant: str, *, kms_key_arn: str | None = None, region: str | None = None
) -> dict[str, Any]:
    """Read the tenant's objects and list its prefix; nothing else in the bucket (the streamer lists, then reads).

    With `kms_key_arn` (an SSE-KMS bucket), also decrypt with that key, but only when S3 asks KMS on the
    role's behalf (`kms:ViaService` S3 in the bucket's region) and only for this bucket's objects: S3 sets
    the encryption context `aws:s3:arn` to the object's ARN, or to the bucket's when the bucket uses an S3
    Bucket Key (Amazon S3 User Guide, "Using server-side encryption with AWS KMS keys", encryption context).
    S3 still authorises the GetObject first, so the bucket-wide context opens no other tenant's prefix.
    """
    bucket_arn = f"arn:{partition}:s3:::{bucket}"
    decrypt = []
    if kms_key_arn is not None:
        assert region is not None, "an SSE-KMS bucket's policy needs the bucket's region"
        decrypt = [
            {
                "Sid": "DecryptOwnModelsThroughS3",
                "Effect": "Allow",
                "Action": "kms:Decrypt",
                "Resource": kms_key_arn,
                "Condition": {
                    "StringEquals": {"kms:ViaService": policies.service_endpoint("s3", region, partition)},
                    "StringLike": {"kms:EncryptionContext:aws:s3:arn": [f"{bucket_arn}/{tenant}/*", bucket_arn]},
                },
            }
        ]
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "ReadOwnModels",
                "Effect": "Allow",
                "Action": "s3:GetObject",
                "Resource": f"arn:{partition}:s3:::{bucket}/{tenant}/*",
            },
            {
                "Sid": "ListOwnPrefix",
                "Effect": "Allow",
                "Action": "s3:ListBucket",
                "Resource": f"arn:{partition}:s3:::{bucket}",
                "Condition": {"StringLike": {"s3:prefix": [f"{tenant}/*"]}},
            },
            *decrypt,
        ],
    }


def model_reader_service_account(tenant: TenantPlan) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": MODEL_READER_SERVICE_ACCOUNT, "namespace": tenant.namespace},
        # The servers use no Kubernetes API; Pod Identity projects its own token.
        "automountServiceAccountToken": False,
    }
