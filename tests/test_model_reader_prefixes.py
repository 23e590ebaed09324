"""The model reader's S3 policy against tenants whose names share a prefix: `ml` must never reach `mlops/`.

Every statement of the policy is checked with both tenants' keys and prefixes, through the IAM
evaluation of models/aws_iam.py (wildcards `*`/`?` only, case-sensitive, `s3:prefix` absent when the
request names none). A listing prefix without the tenant's trailing slash (`ml`) would return
`mlops/...` keys too, so the condition must require it.
"""

from __future__ import annotations

import pytest

from components.autoscaling.model_access import model_read_policy
from models.aws_iam import identity_allows, wildcard_match

BUCKET = "acme-ai-models"
OBJECTS = f"arn:aws:s3:::{BUCKET}"
ML, MLOPS = model_read_policy("aws", BUCKET, "ml"), model_read_policy("aws", BUCKET, "mlops")


@pytest.mark.parametrize(
    ("key", "ml", "mlops"),
    [
        ("ml/llama/model.safetensors", True, False),
        ("mlops/llama/model.safetensors", False, True),
        ("ml/", True, False),
        ("mlopsx/model.safetensors", False, False),
        ("ml-2/model.safetensors", False, False),
        ("ML/llama/model.safetensors", False, False),  # keys are case-sensitive
        ("ml", False, False),
        ("shared/ml/model.safetensors", False, False),
    ],
)
def test_each_tenant_reads_only_keys_under_its_own_name_and_slash(key, ml, mlops):
    resource = f"{OBJECTS}/{key}"
    assert (identity_allows(ML, "s3:GetObject", resource), identity_allows(MLOPS, "s3:GetObject", resource)) == (ml, mlops)


@pytest.mark.parametrize(
    ("prefix", "ml", "mlops"),
    [
        ("ml/", True, False),
        ("ml/llama/", True, False),
        ("mlops/", False, True),
        ("mlops/llama/", False, True),
        ("ml", False, False),  # S3 would return mlops/... keys as well
        ("mlo", False, False),
        ("mlops", False, False),
        ("", False, False),  # the whole bucket
        ("ML/", False, False),
    ],
)
def test_each_tenant_lists_only_prefixes_inside_its_own_folder(prefix, ml, mlops):
    context = {"s3:prefix": prefix}
    assert (
        identity_allows(ML, "s3:ListBucket", OBJECTS, context),
        identity_allows(MLOPS, "s3:ListBucket", OBJECTS, context),
    ) == (ml, mlops)


def test_a_listing_that_names_no_prefix_is_refused():
    assert not identity_allows(ML, "s3:ListBucket", OBJECTS, {})


@pytest.mark.parametrize(
    ("action", "resource", "context"),
    [
        ("s3:PutObject", f"{OBJECTS}/ml/x", {}),
        ("s3:DeleteObject", f"{OBJECTS}/ml/x", {}),
        ("s3:GetObject", "arn:aws:s3:::other-bucket/ml/x", {}),
        ("s3:ListBucket", "arn:aws:s3:::other-bucket", {"s3:prefix": "ml/"}),
        ("s3:ListBucketVersions", OBJECTS, {"s3:prefix": "ml/"}),
        ("s3:GetObject", OBJECTS, {}),
    ],
)
def test_nothing_else_is_allowed(action, resource, context):
    assert not identity_allows(ML, action, resource, context)


def test_every_statement_names_the_tenant_with_its_trailing_slash():
    """Each statement's tenant-specific part ends in `ml/` then a wildcard: `ml*` or `ml?*` would take in `mlops/`."""
    for statement in ML["Statement"]:
        if statement["Action"] == "s3:GetObject":
            scoped = [statement["Resource"]]
        else:
            scoped = statement["Condition"]["StringLike"]["s3:prefix"]
        for pattern in scoped:
            assert pattern.endswith("ml/*"), pattern
    assert {s["Action"] for s in ML["Statement"]} == {"s3:GetObject", "s3:ListBucket"}


@pytest.mark.parametrize(
    ("pattern", "value", "matches"),
    [
        ("ml/*", "ml/", True),
        ("ml/*", "ml/a/b", True),
        ("ml/*", "mlops/", False),
        ("ml*", "mlops/", True),
        ("ml?", "mlo", True),
        ("ml?", "ml", False),
        ("m[l]/*", "ml/x", False),  # brackets are literal in IAM, not a character class
        ("m[l]/*", "m[l]/x", True),
        ("ML/*", "ml/x", False),
    ],
)
def test_iam_wildcards_are_star_and_question_mark_only(pattern, value, matches):
    assert wildcard_match(pattern, value) is matches


def test_an_unmodelled_condition_operator_is_refused_not_ignored():
    policy = {"Statement": [{"Effect": "Deny", "Action": "s3:*", "Resource": "*",
                             "Condition": {"StringNotLike": {"s3:prefix": "ml/*"}}}, *ML["Statement"]]}
    with pytest.raises(ValueError):
        identity_allows(policy, "s3:ListBucket", OBJECTS, {"s3:prefix": "ml/"})
