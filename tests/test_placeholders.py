"""The shipped stacks' example values: rendered offline with a warning, refused by a real deploy before anything exists.

prod names an image snapshot and a model bucket no account has; a real `pulumi up` with them would fail
late (the node class never ready, the model servers unable to read their weights). The program tells
the mock engine from a real one by its resource monitor (the SDK's MockMonitor, installed by
`pulumi.runtime.set_mocks`, offline/engine.py).
"""

from __future__ import annotations

import pulumi
import pytest

from components import stack_config
from config.placeholders import documentation_cidr_warnings, placeholder_problems
from offline.__main__ import main as offline_main
from offline.engine import run_program
from offline.stack import stack_config_from_mapping

from .conftest import fixture_document, load
from .test_doc_snippets import stack_document

P = "gpu-platform:nodePools"
SNAPSHOT_LINE = (
    "gpu-platform:nodePools[gpu-l40s].warmStart.imageSnapshot: 'snap-0123456789abcdef0' is the example snapshot id the "
    "shipped stack carries (the EC2 documentation's); your account has no such snapshot: build the snapshot as "
    "docs/time-to-gpu.md says and set its id, or remove imageSnapshot"
)
BUCKET_LINE = (
    "gpu-platform:autoscaling.modelStore.bucket: 'acme-ai-models' is the example model bucket the shipped stack "
    "carries; it is not yours: set your own bucket and region (and each `s3://` modelSource under it), or remove "
    "modelStore and the servers' s3:// modelSource"
)


def with_examples():
    """prod (the frozen copy the docs describe) with Pulumi.prod.yaml's example snapshot and model bucket."""
    document = stack_document("prod")
    [l40s] = [pool for pool in document[P] if pool["name"] == "gpu-l40s"]
    l40s["warmStart"] = {"imageSnapshot": "snap-0123456789abcdef0", "volumeInitializationRate": 300}
    document["gpu-platform:autoscaling"]["modelStore"] = {"bucket": "acme-ai-models", "region": "us-east-1"}
    return document


def own_values(document):
    """prod with an operator's own snapshot and bucket, as the README's prod steps set them."""
    [l40s] = [pool for pool in document[P] if pool["name"] == "gpu-l40s"]
    l40s["warmStart"]["imageSnapshot"] = "snap-0fedcba9876543210"
    document["gpu-platform:autoscaling"]["modelStore"]["bucket"] = "example-corp-weights"
    for tenant in document["gpu-platform:tenants"]:
        for server in tenant.get("inference", []):
            source = server.get("serving", {}).get("modelSource", "")
            if source.startswith("s3://acme-ai-models/"):
                server["serving"]["modelSource"] = source.replace("acme-ai-models", "example-corp-weights", 1)
    return document


def test_prods_example_snapshot_and_bucket_are_each_one_line():
    assert placeholder_problems(load(with_examples())) == [SNAPSHOT_LINE, BUCKET_LINE]


def test_an_operators_own_snapshot_and_bucket_pass_and_dev_has_none():
    assert placeholder_problems(load(own_values(with_examples()))) == []
    assert placeholder_problems(load(stack_document("dev"))) == []


def test_a_snapshot_that_only_resembles_the_example_passes():
    document = with_examples()
    [l40s] = [pool for pool in document[P] if pool["name"] == "gpu-l40s"]
    l40s["warmStart"]["imageSnapshot"] = "snap-0123456789abcdef1"
    assert placeholder_problems(load(document)) == [BUCKET_LINE]


@pytest.mark.parametrize(
    "cidrs, warned",
    [
        (["203.0.113.0/24"], [0]),
        (["198.51.100.10/32", "100.64.10.0/24"], [0]),
        (["100.64.10.0/24", "192.0.2.128/25"], [1]),
        (["203.0.112.0/24", "198.51.101.0/24", "192.0.3.0/24"], []),
    ],
)
def test_a_public_endpoint_cidr_inside_a_documentation_range_is_warned_about(cidrs, warned):
    document = fixture_document("single-pool")
    document["gpu-platform:cluster"]["endpoint"]["publicAccessCidrs"] = cidrs
    lines = documentation_cidr_warnings(load(document))
    assert [line.split("]")[0].rsplit("[", 1)[1] for line in lines] == [str(i) for i in warned]
    assert all("is a documentation range (RFC 5737)" in line for line in lines)


@pytest.mark.stack_files
def test_the_offline_check_of_the_prod_stack_file_warns_of_each_and_still_passes(capsys):
    """Pulumi.prod.yaml itself, as `make check STACK=prod` reads it; an operator's own values silence it."""
    assert offline_main(["check", "--stack", "prod"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert f"Pulumi.prod.yaml: warning: {SNAPSHOT_LINE} (a real `pulumi up` refuses it)" in err
    assert f"Pulumi.prod.yaml: warning: {BUCKET_LINE} (a real `pulumi up` refuses it)" in err


def test_the_program_knows_the_mock_engine_from_a_real_one():
    seen = []
    run_program("probe", {"aws:region": "us-west-2"}, program=lambda: seen.append(stack_config.runs_under_mocks()))
    assert seen == [True]
    assert stack_config.runs_under_mocks() is False  # no monitor at all outside a run


def test_a_real_deploy_of_prod_as_shipped_is_refused_before_anything_is_declared(monkeypatch):
    monkeypatch.setattr(stack_config, "runs_under_mocks", lambda: False)
    declared = []
    monkeypatch.setattr("components.platform.GpuPlatform.__init__", lambda *args, **kwargs: declared.append(args))
    config = stack_config_from_mapping("prod", with_examples())
    with pytest.raises(pulumi.RunError) as refused:
        run_program("prod", config.values, config.secret_keys)
    assert str(refused.value).splitlines() == ["example values a real deploy cannot use (2):", SNAPSHOT_LINE, BUCKET_LINE]
    assert declared == []
