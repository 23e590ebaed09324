"""Weights without the Hub: a server streams its tenant's own weights from S3 with the tenant's own role."""

from __future__ import annotations

import fnmatch
import json
from typing import Any

import pytest

from components.autoscaling import model_access
from components.autoscaling.model_access import model_read_policy, model_reader_service_account
from components.autoscaling.vllm import server_deployment, tenant_flavor
from components.lib.iam import pod_identity_trust_policy
from config import ConfigError
from models.aws_iam import identity_allows, trust_allows

from .conftest import fixture_document, load

T = "gpu-platform:tenants"
SOURCE = "s3://acme-ai-models/llm-training/bge-large-en-v1.5/"
ACCOUNT, CLUSTER = "111122223333", "gpu-prod"


def with_s3(doc: dict[str, Any], source: str = SOURCE, store: dict | None = None) -> dict[str, Any]:
    doc["gpu-platform:autoscaling"]["modelStore"] = store or {"bucket": "acme-ai-models", "region": "eu-west-1"}
    serving = doc[T][0]["inference"][0]["serving"]
    serving["modelSource"] = source
    del serving["revision"]
    return doc


def embeddings_pod(doc: dict[str, Any]) -> dict[str, Any]:
    config = load(doc)
    tenant = next(t for t in config.tenants if t.name == "llm-training")
    deployment = tenant.config.inference[0]
    manifest = server_deployment(tenant, deployment, tenant_flavor(tenant, deployment.flavor), config.autoscaling.model_store)
    return manifest["spec"]["template"]["spec"]


def test_an_s3_source_streams_with_runai_and_keeps_the_models_name():
    pod = embeddings_pod(with_s3(fixture_document("multi-pool")))
    [container] = pod["containers"]
    args = container["args"]
    assert args[:2] == ["--model", SOURCE]
    assert args[args.index("--load-format") + 1] == "runai_streamer"
    assert args[args.index("--served-model-name") + 1] == "BAAI/bge-large-en-v1.5"
    assert "--revision" not in args
    assert {"name": "AWS_REGION", "value": "eu-west-1"} in container["env"]
    assert pod["serviceAccountName"] == "model-reader"


def test_a_hub_source_downloads_as_before():
    pod = embeddings_pod(fixture_document("multi-pool"))
    args = pod["containers"][0]["args"]
    assert args[:2] == ["--model", "BAAI/bge-large-en-v1.5"]
    assert "--load-format" not in args and "serviceAccountName" not in pod


# --- least privilege --------------------------------------------------------------------------------------


def s3_allows(policy: dict[str, Any], action: str, resource: str, prefix: str | None = None) -> bool:
    for statement in policy["Statement"]:
        if statement["Effect"] != "Allow" or statement["Action"] != action:
            continue
        if not fnmatch.fnmatchcase(resource, statement["Resource"]):
            continue
        like = statement.get("Condition", {}).get("StringLike", {})
        if all(prefix is not None and any(fnmatch.fnmatchcase(prefix, p) for p in patterns) for patterns in like.values()):
            return True
    return False


POLICY = model_read_policy("aws", "acme-ai-models", "llm-training")


@pytest.mark.parametrize(
    ("action", "resource", "prefix", "allowed"),
    [
        ("s3:GetObject", "arn:aws:s3:::acme-ai-models/llm-training/bge/model.safetensors", None, True),
        ("s3:ListBucket", "arn:aws:s3:::acme-ai-models", "llm-training/bge/", True),
        # Another tenant's weights, the whole bucket, another bucket, and any write: refused.
        ("s3:GetObject", "arn:aws:s3:::acme-ai-models/inference/chat/model.safetensors", None, False),
        ("s3:GetObject", "arn:aws:s3:::acme-ai-models/llm-training-2/model.safetensors", None, False),
        ("s3:ListBucket", "arn:aws:s3:::acme-ai-models", "inference/", False),
        ("s3:ListBucket", "arn:aws:s3:::acme-ai-models", None, False),
        ("s3:GetObject", "arn:aws:s3:::other-bucket/llm-training/model.safetensors", None, False),
        ("s3:PutObject", "arn:aws:s3:::acme-ai-models/llm-training/bge/model.safetensors", None, False),
    ],
)
def test_a_tenants_role_reads_only_its_own_prefix(action, resource, prefix, allowed):
    assert s3_allows(POLICY, action, resource, prefix) is allowed


KMS_KEY = "arn:aws:kms:eu-west-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
KMS_POLICY = model_read_policy("aws", "acme-ai-models", "llm-training", kms_key_arn=KMS_KEY, region="eu-west-1")
OBJECT = "arn:aws:s3:::acme-ai-models/llm-training/bge/model.safetensors"
OTHER_TENANTS = "arn:aws:s3:::acme-ai-models/inference/chat/model.safetensors"
THROUGH_S3 = {"kms:ViaService": "s3.eu-west-1.amazonaws.com", "kms:EncryptionContext:aws:s3:arn": OBJECT}


@pytest.mark.parametrize(
    ("action", "resource", "context", "allowed"),
    [
        # S3 decrypting the tenant's object for the role, per object or with the bucket's S3 Bucket Key.
        ("kms:Decrypt", KMS_KEY, THROUGH_S3, True),
        ("kms:Decrypt", KMS_KEY, {**THROUGH_S3, "kms:EncryptionContext:aws:s3:arn": "arn:aws:s3:::acme-ai-models"}, True),
        # Called directly, through another service or region, for another bucket or tenant, or another key: refused.
        ("kms:Decrypt", KMS_KEY, {"kms:EncryptionContext:aws:s3:arn": OBJECT}, False),
        ("kms:Decrypt", KMS_KEY, {**THROUGH_S3, "kms:ViaService": "ec2.eu-west-1.amazonaws.com"}, False),
        ("kms:Decrypt", KMS_KEY, {**THROUGH_S3, "kms:ViaService": "s3.us-east-1.amazonaws.com"}, False),
        ("kms:Decrypt", KMS_KEY, {**THROUGH_S3, "kms:EncryptionContext:aws:s3:arn": "arn:aws:s3:::other/llm-training/m"}, False),
        ("kms:Decrypt", KMS_KEY, {**THROUGH_S3, "kms:EncryptionContext:aws:s3:arn": OTHER_TENANTS}, False),
        ("kms:Decrypt", KMS_KEY, {"kms:ViaService": "s3.eu-west-1.amazonaws.com"}, False),
        ("kms:Decrypt", KMS_KEY.replace("1234abcd", "9999abcd"), THROUGH_S3, False),
        ("kms:Encrypt", KMS_KEY, THROUGH_S3, False),
        ("kms:GenerateDataKey", KMS_KEY, THROUGH_S3, False),
        # The S3 reads are as without a key.
        ("s3:GetObject", OBJECT, {}, True),
        ("s3:GetObject", "arn:aws:s3:::acme-ai-models/inference/chat/model.safetensors", {}, False),
    ],
)
def test_an_sse_kms_buckets_key_decrypts_only_through_s3_for_the_tenants_objects(action, resource, context, allowed):
    assert identity_allows(KMS_POLICY, action, resource, context) is allowed


def test_without_a_key_the_role_has_no_kms_permission():
    assert not identity_allows(POLICY, "kms:Decrypt", KMS_KEY, THROUGH_S3)
    assert [s["Sid"] for s in POLICY["Statement"]] == ["ReadOwnModels", "ListOwnPrefix"]


def test_the_role_a_stack_declares_carries_its_stores_key():
    store = {"bucket": "acme-ai-models", "region": "eu-west-1", "kmsKeyArn": KMS_KEY}
    config = load(with_s3(fixture_document("multi-pool"), store=store))
    assert config.autoscaling.model_store is not None
    declared = json.loads(model_access._read_json(config.autoscaling.model_store, "llm-training")("aws"))
    assert declared == KMS_POLICY


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        (
            "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab",
            "kmsKeyArn is in us-east-1, the bucket in eu-west-1: S3 encrypts with a key of the bucket's own region; "
            "give that key",
        ),
        (
            "arn:aws:kms:eu-west-1:111122223333:alias/models",
            "kmsKeyArn 'arn:aws:kms:eu-west-1:111122223333:alias/models' is not a KMS key ARN such as "
            "'arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab' (an alias does not work in "
            "an IAM policy's Resource)",
        ),
    ],
)
def test_a_key_outside_the_buckets_region_or_an_alias_is_one_line(key, expected):
    store = {"bucket": "acme-ai-models", "region": "eu-west-1", "kmsKeyArn": key}
    with pytest.raises(ConfigError) as caught:
        load(with_s3(fixture_document("multi-pool"), store=store))
    [problem] = caught.value.problems
    assert problem.startswith("gpu-platform:autoscaling.modelStore") and problem.endswith(expected), problem


def test_only_the_tenants_model_reader_service_account_on_this_cluster_assumes_the_role():
    trust = pod_identity_trust_policy(ACCOUNT, CLUSTER, "llm-training", "model-reader")
    session = {
        "aws:SourceAccount": ACCOUNT,
        "aws:RequestTag/eks-cluster-name": CLUSTER,
        "aws:RequestTag/kubernetes-namespace": "llm-training",
        "aws:RequestTag/kubernetes-service-account": "model-reader",
    }
    assert trust_allows(trust, "pods.eks.amazonaws.com", session)
    for key, other in [
        ("aws:RequestTag/kubernetes-namespace", "inference"),
        ("aws:RequestTag/kubernetes-service-account", "default"),
        ("aws:RequestTag/eks-cluster-name", "gpu-dev"),
        ("aws:SourceAccount", "444455556666"),
    ]:
        assert not trust_allows(trust, "pods.eks.amazonaws.com", {**session, key: other}), key
    account = model_reader_service_account(load(fixture_document("multi-pool")).tenants[0])
    assert account["metadata"] == {"name": "model-reader", "namespace": "llm-training"}


# --- config mistakes ------------------------------------------------------------------------------------

KEY = f"{T}[llm-training].inference[embeddings].serving"


@pytest.mark.parametrize("source", ["s3://acme-ai-models/inference/chat/", "s3://acme-ai-models/llm-training-2/bge/"])
def test_an_s3_source_outside_the_tenants_prefix_is_one_line(source):
    with pytest.raises(ConfigError) as caught:
        load(with_s3(fixture_document("multi-pool"), source))
    assert caught.value.problems == [
        f"{KEY}.modelSource: '{source}' is outside the tenant's prefix: its servers may read "
        "only s3://acme-ai-models/llm-training/..."
    ]


def test_an_s3_source_in_another_bucket_is_one_line():
    with pytest.raises(ConfigError) as caught:
        load(with_s3(fixture_document("multi-pool"), "s3://elsewhere/llm-training/bge/"))
    assert caught.value.problems == [
        f"{KEY}.modelSource: 's3://elsewhere/llm-training/bge/' is in bucket elsewhere, not the model store acme-ai-models"
    ]


def test_an_s3_source_without_a_model_store_is_one_line():
    doc = with_s3(fixture_document("multi-pool"))
    del doc["gpu-platform:autoscaling"]["modelStore"]
    with pytest.raises(ConfigError) as caught:
        load(doc)
    assert caught.value.problems == [
        f"{KEY}.modelSource: '{SOURCE}' needs gpu-platform:autoscaling.modelStore, the bucket weights are staged in"
    ]


def test_an_s3_source_with_a_hub_revision_or_no_folder_is_refused():
    doc = with_s3(fixture_document("multi-pool"))
    doc[T][0]["inference"][0]["serving"]["revision"] = "d4aa6901d3a41ba39fb536a557fa166f842b0e09"
    with pytest.raises(ConfigError) as caught:
        load(doc)
    assert caught.value.problems == [
        f"{KEY}: revision names a Hub commit; weights from S3 are the staged copy: remove revision"
    ]
    with pytest.raises(ConfigError) as caught:
        load(with_s3(fixture_document("multi-pool"), "s3://acme-ai-models/llm-training/model.safetensors"))
    assert caught.value.problems == [
        f"{KEY}.modelSource: 's3://acme-ai-models/llm-training/model.safetensors' is neither 'hub' nor a folder in S3 "
        "such as 's3://acme-models/inference/llama-3.1-8b/'"
    ]
