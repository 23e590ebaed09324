"""An image snapshot encrypted under a customer managed KMS key: the principal that launches the node can use it.

Karpenter's controller launches the pool's nodes (CreateFleet), and EBS restores each node's data volume
from the snapshot with the snapshot's key for that principal. Without the key's use the instance
terminates right after launch (karpenter-provider-aws v1.14.1 troubleshooting.md, "Node terminates
before ready on failed encrypted EBS volume"). The policy is checked with models/aws_iam.py.
"""

from __future__ import annotations

import json

import pytest

from components.karpenter.policy import snapshot_key_policy
from models.aws_iam import identity_allows
from offline.cloud import ACCOUNT_ID

from .conftest import fixture_document, load, problems_of, render

REGION, ACCOUNT = "us-west-2", ACCOUNT_ID  # the fake account the mock engine deploys into
KEY = "arn:aws:kms:us-west-2:111122223333:key/0f1e2d3c-4b5a-6978-8899-aabbccddeeff"
OTHER_KEY = "arn:aws:kms:us-west-2:111122223333:key/11111111-2222-3333-4444-555555555555"
VIA_EC2 = {"kms:ViaService": "ec2.us-west-2.amazonaws.com", "kms:CallerAccount": ACCOUNT}
POLICY = snapshot_key_policy(REGION, ACCOUNT, "aws", (KEY,))


@pytest.mark.parametrize(
    ("action", "resource", "context", "allowed"),
    [
        # What EBS does with the key while EC2 launches the instance for the controller.
        ("kms:CreateGrant", KEY, VIA_EC2, True),
        ("kms:Decrypt", KEY, VIA_EC2, True),
        ("kms:GenerateDataKeyWithoutPlaintext", KEY, VIA_EC2, True),
        ("kms:ReEncryptFrom", KEY, VIA_EC2, True),
        ("kms:DescribeKey", KEY, VIA_EC2, True),
        # Directly, through another service or region, from another account, another key, or key administration.
        ("kms:Decrypt", KEY, {"kms:CallerAccount": ACCOUNT}, False),
        ("kms:Decrypt", KEY, {**VIA_EC2, "kms:ViaService": "s3.us-west-2.amazonaws.com"}, False),
        ("kms:Decrypt", KEY, {**VIA_EC2, "kms:ViaService": "ec2.us-east-1.amazonaws.com"}, False),
        ("kms:Decrypt", KEY, {**VIA_EC2, "kms:CallerAccount": "444455556666"}, False),
        ("kms:Decrypt", OTHER_KEY, VIA_EC2, False),
        ("kms:ScheduleKeyDeletion", KEY, VIA_EC2, False),
        ("kms:PutKeyPolicy", KEY, VIA_EC2, False),
    ],
)
def test_the_controller_uses_the_snapshots_key_only_through_ec2_for_this_account(action, resource, context, allowed):
    assert identity_allows(POLICY, action, resource, context) is allowed


def with_snapshot_key(key: str = KEY) -> dict:
    document = fixture_document("single-pool")
    [pool] = document["gpu-platform:nodePools"]
    pool["warmStart"] = {"imageSnapshot": "snap-0fedcba9876543210", "imageSnapshotKmsKey": key}
    return document


def test_the_controllers_role_gets_the_key_before_karpenter_is_installed():
    recording = render(with_snapshot_key(), "snapshot-key")
    [inline] = [p for p in recording.by_type("aws:iam/rolePolicy:RolePolicy") if p.inputs.get("name") == "snapshot-keys"]
    assert json.loads(inline.inputs["policy"]) == POLICY
    [role] = [r for r in recording.by_type("aws:iam/role:Role") if r.inputs["name"] == "gpu-dev-karpenter-controller"]
    assert inline.parent == role.urn
    [controller] = [r for r in recording.by_type("kubernetes:helm.sh/v3:Release") if r.inputs["name"] == "karpenter"]
    assert inline.urn in controller.dependencies


def test_without_a_key_no_kms_use_is_granted():
    assert load(fixture_document("single-pool")).snapshot_kms_keys == ()


@pytest.mark.parametrize(
    ("warm_start", "expected"),
    [
        (
            {"imageSnapshot": "snap-0fedcba9876543210", "imageSnapshotKmsKey": KEY.replace("us-west-2", "eu-west-1")},
            "gpu-platform:nodePools[gpu-l40s].warmStart.imageSnapshotKmsKey: "
            "'arn:aws:kms:eu-west-1:111122223333:key/0f1e2d3c-4b5a-6978-8899-aabbccddeeff' is a key in eu-west-1, the "
            "stack deploys to us-west-2: a snapshot and its key are in the region the nodes launch in; copy the snapshot "
            "there (`aws ec2 copy-snapshot --kms-key-id`) and give that key",
        ),
        (
            {"imageSnapshotKmsKey": KEY},
            "imageSnapshotKmsKey is the key of imageSnapshot's encryption: set imageSnapshot",
        ),
        (
            {"imageSnapshot": "snap-0fedcba9876543210", "imageSnapshotKmsKey": "alias/aws/ebs"},
            "is not a KMS key ARN such as",
        ),
    ],
)
def test_a_key_that_cannot_serve_the_snapshot_is_one_line(warm_start, expected):
    document = fixture_document("single-pool")
    document["gpu-platform:nodePools"][0]["warmStart"] = warm_start
    [problem] = problems_of(document)
    assert expected in problem, problem
