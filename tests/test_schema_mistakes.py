"""Mistakes a user makes in a stack file, each flagged by the JSON Schema as they type (the editor, or
`check-jsonschema`) and refused by `make check`, and at the same place.

Each row changes one value of tests/fixtures/stacks/multi-pool.yaml. The schema's error must sit at the
changed value's own position (inside the list, not at the list), and the checker's line must name the
same key. Rules across keys (a quota against its pool) are the checker's alone and are not here.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from config import ConfigError
from config.schema import SCHEMA_PATH, stack_schema

from .conftest import fixture_document, load, project_path

C, P, T, M = "gpu-platform:cluster", "gpu-platform:nodePools", "gpu-platform:tenants", "gpu-platform:monitoring"
S, V = "gpu-platform:supplyChain", "gpu-platform:versions"
SERVING = (T, 0, "inference", 0, "serving")
POLICY = (S, "imageVerification", "policies", 0)
DELETE = object()

# (name, path of the changed value, new value, the checker's key path: where its problem line starts)
MISTAKES: list[tuple[str, tuple[Any, ...], Any, str]] = [
    ("cluster name in capitals", (C, "name"), "GPU-Prod", "gpu-platform:cluster.name"),
    ("kubernetesVersion 1.30 unquoted", (C, "kubernetesVersion"), 1.30, "gpu-platform:cluster.kubernetesVersion"),
    ("kubernetesVersion unsupported", (C, "kubernetesVersion"), "1.99", "gpu-platform:cluster.kubernetesVersion"),
    ("admin not an ARN", (C, "admins", 0), "PlatformAdmin", "gpu-platform:cluster.admins[0]"),
    ("admin a group ARN", (C, "admins", 0), "arn:aws:iam::111122223333:group/Admins", "gpu-platform:cluster.admins[0]"),
    ("admin with a short account", (C, "admins", 0), "arn:aws:iam::1111:role/A", "gpu-platform:cluster.admins[0]"),
    ("creator not an ARN", (C, "creator"), "me", "gpu-platform:cluster.creator"),
    ("tag key AWS owns", (C, "tags", "aws:created-by"), "me", "gpu-platform:cluster.tags"),
    ("tag key Karpenter owns, in capitals", (C, "tags", "Karpenter.sh/pool"), "x", "gpu-platform:cluster.tags"),
    ("tag key Name", (C, "tags", "Name"), "x", "gpu-platform:cluster.tags"),
    ("tag value too long", (C, "tags", "team"), "x" * 257, "gpu-platform:cluster.tags.team"),
    ("VPC CIDR too small", (C, "network", "vpcCidr"), "10.30.0.0/24", "gpu-platform:cluster.network.vpcCidr"),
    ("VPC CIDR without a prefix", (C, "network", "vpcCidr"), "10.30.0.0", "gpu-platform:cluster.network.vpcCidr"),
    ("VPC CIDR octet out of range", (C, "network", "vpcCidr"), "10.300.0.0/16", "gpu-platform:cluster.network.vpcCidr"),
    ("NAT layout misspelt", (C, "network", "natGateways"), "perAZ", "gpu-platform:cluster.network.natGateways"),
    ("flow-log retention CloudWatch lacks", (C, "network", "flowLogs"), {"enabled": True, "retentionDays": 10},
     "gpu-platform:cluster.network.flowLogs.retentionDays"),
    ("public endpoint open to the internet", (C, "endpoint", "publicAccessCidrs", 0), "0.0.0.0/0",
     "gpu-platform:cluster.endpoint.publicAccessCidrs[0]"),
    ("public endpoint prefix /33", (C, "endpoint", "publicAccessCidrs", 0), "203.0.113.0/33",
     "gpu-platform:cluster.endpoint.publicAccessCidrs[0]"),
    ("system instance type misspelt", (C, "systemNodes", "instanceTypes", 0), "m7i.xlarg",
     "gpu-platform:cluster.systemNodes.instanceTypes[0]"),
    ("system instance type without a shape", (C, "systemNodes", "instanceTypes", 1), "t3.large",
     "gpu-platform:cluster.systemNodes.instanceTypes"),
    ("system instance type twice", (C, "systemNodes", "instanceTypes", 1), "m7i.xlarge",
     "gpu-platform:cluster.systemNodes.instanceTypes"),
    ("log retention CloudWatch lacks", (C, "logging", "retentionDays"), 45, "gpu-platform:cluster.logging.retentionDays"),
    ("pool name with an underscore", (P, 1, "name"), "gpu_a100", "gpu-platform:nodePools[gpu_a100].name"),
    ("pool instance type not in the catalog", (P, 1, "instanceTypes", 0), "p4d.48xlarge", "gpu-platform:nodePools[gpu-a100]"),
    ("pool capacity type misspelt", (P, 1, "capacityTypes", 0), "Spot", "gpu-platform:nodePools[gpu-a100].capacityTypes[0]"),
    ("pool expiry in days", (P, 1, "expireAfter"), "7d", "gpu-platform:nodePools[gpu-a100].expireAfter"),
    ("pool grace period Never", (P, 1, "terminationGracePeriod"), "Never",
     "gpu-platform:nodePools[gpu-a100].terminationGracePeriod"),
    ("consolidation delay with a space", (P, 1, "disruption", "consolidateAfter"), "10 m",
     "gpu-platform:nodePools[gpu-a100].disruption.consolidateAfter"),
    ("budget above 100%", (P, 1, "disruption", "budgets"), [{"nodes": "150%"}],
     "gpu-platform:nodePools[gpu-a100].disruption.budgets[0].nodes"),
    ("budget schedule in words", (P, 1, "disruption", "budgets"), [{"nodes": "0", "schedule": "weekdays", "duration": "8h"}],
     "gpu-platform:nodePools[gpu-a100].disruption.budgets[0].schedule"),
    ("budget duration in seconds", (P, 1, "disruption", "budgets"), [{"nodes": "0", "schedule": "@daily", "duration": "30s"}],
     "gpu-platform:nodePools[gpu-a100].disruption.budgets[0].duration"),
    ("AMI version without its v", (P, 2, "amiVersion"), "1.50.0", "gpu-platform:nodePools[gpu-l40s].amiVersion"),
    ("MIG profile unknown", (P, 0, "sharing", "migLayout"), {"3g.40gb": 1, "2g.20gb": 1, "1g.12gb": 2},
     "gpu-platform:nodePools[gpu-h100].sharing"),
    ("sharing mode misspelt", (P, 2, "sharing"), {"mode": "timeslicing", "replicas": 2},
     "gpu-platform:nodePools[gpu-l40s].sharing.mode"),
    ("CPU pool with an accelerator family", ("gpu-platform:cpuPool", "instanceFamilies"), ["m7i", "g5"],
     "gpu-platform:cpuPool.instanceFamilies"),
    ("CPU pool family misspelt", ("gpu-platform:cpuPool", "instanceFamilies"), ["m7"], "gpu-platform:cpuPool.instanceFamilies"),
    ("CPU pool consolidation in words", ("gpu-platform:cpuPool", "consolidateAfter"), "1 minute",
     "gpu-platform:cpuPool.consolidateAfter"),
    ("CPU pool reserved capacity", ("gpu-platform:cpuPool", "capacityTypes", 0), "reserved",
     "gpu-platform:cpuPool.capacityTypes[0]"),
    ("MIG strategy none", ("gpu-platform:gpu", "migStrategy"), "none", "gpu-platform:gpu.migStrategy"),
    ("cohort in capitals", ("gpu-platform:queueing", "cohort"), "Acme-AI", "gpu-platform:queueing.cohort"),
    ("tenant name in capitals", (T, 1, "name"), "Inference", "gpu-platform:tenants[Inference].name"),
    ("tenant admin a group", (T, 1, "admins", 1), "arn:aws:iam::111122223333:group/OnCall",
     "gpu-platform:tenants[inference].admins[1]"),
    ("tenant admin listed twice", (T, 0, "admins"), ["arn:aws:iam::111122223333:role/LLMTrainingAdmin"] * 2,
     "gpu-platform:tenants[llm-training].admins"),
    ("tenant viewer listed twice", (T, 2, "viewers"), ["arn:aws:iam::111122223333:role/DataScienceAnalyst"] * 2,
     "gpu-platform:tenants[data-science].viewers"),
    ("Pod Security privileged", (T, 2, "podSecurity"), "privileged", "gpu-platform:tenants[data-science].podSecurity"),
    ("ingress namespace with an underscore", (T, 1, "network", "ingressFromNamespaces", 0), "ingress_nginx",
     "gpu-platform:tenants[inference].network.ingressFromNamespaces[0]"),
    ("negative nominal quota", (T, 3, "gpu", "a100-spot", "nominal"), -1,
     "gpu-platform:tenants[experiments].gpu.a100-spot.nominal"),
    ("inference class misspelt", (T, 1, "inference", 0, "class"), "realtim",
     "gpu-platform:tenants[inference].inference[chat].class"),
    ("inference name in capitals", (T, 2, "inference", 0, "name"), "Notebook",
     "gpu-platform:tenants[data-science].inference[Notebook].name"),
    ("minReplicas 0", (T, 1, "inference", 0, "minReplicas"), 0, "gpu-platform:tenants[inference].inference[chat].minReplicas"),
    ("blank model", (*SERVING, "model"), "  ", "gpu-platform:tenants[llm-training].inference[embeddings].serving.model"),
    ("image on latest", (*SERVING, "image"), "vllm/vllm-openai:latest",
     "gpu-platform:tenants[llm-training].inference[embeddings].serving.image"),
    ("image without a tag", (*SERVING, "image"), "vllm/vllm-openai",
     "gpu-platform:tenants[llm-training].inference[embeddings].serving.image"),
    ("revision with a space", (*SERVING, "revision"), "main branch",
     "gpu-platform:tenants[llm-training].inference[embeddings].serving.revision"),
    ("HF token secret with a space", (*SERVING, "hfTokenSecret"), "hf token",
     "gpu-platform:tenants[llm-training].inference[embeddings].serving.hfTokenSecret"),
    ("retention in days spelt out", (M, "retention"), "30days", "gpu-platform:monitoring.retention"),
    ("runbook URL without a scheme", (M, "runbookBaseUrl"), "wiki.example.com/runbooks",
     "gpu-platform:monitoring.runbookBaseUrl"),
    ("receiver name with a space", (M, "receivers", 0, "name"), "gpu oncall", "gpu-platform:monitoring.receivers[0].name"),
    ("volume policy misspelt", (M, "volumeOnDestroy"), "retain", "gpu-platform:monitoring.volumeOnDestroy"),
    ("image policy name in capitals", (*POLICY, "name"), "Acme",
     "gpu-platform:supplyChain.imageVerification.policies[Acme].name"),
    ("image glob in capitals", (*POLICY, "images", 1), "Registry.acme.example/*",
     "gpu-platform:supplyChain.imageVerification.policies[acme-ai-images].images"),
    ("issuer over http", (*POLICY, "identities", 1, "issuer"), "http://accounts.google.com",
     "gpu-platform:supplyChain.imageVerification.policies[acme-ai-images].identities[1].issuer"),
    ("subject pattern unanchored", (*POLICY, "identities", 0, "subjectRegExp"), "github.com/acme-ai/",
     "gpu-platform:supplyChain.imageVerification.policies[acme-ai-images].identities[0].subjectRegExp"),
    ("chart version latest", (V,), {"charts": {"karpenter": "latest"}}, "gpu-platform:versions.charts"),
    ("chart name misspelt", (V,), {"charts": {"karpentr": "1.14.1"}}, "gpu-platform:versions.charts"),
    ("add-on version without eksbuild", (V,), {"addons": {"vpc-cni": "v1.21.1"}}, "gpu-platform:versions.addons"),
    ("unknown key in a section", (C, "nmae"), "gpu-prod", "gpu-platform:cluster.nmae"),
    ("region unknown", ("aws:region",), "us-west-9", "aws:region"),
    ("namespace misspelt", ("gpu-platfrom:tenants",), [], "gpu-platfrom:tenants"),
]


def mutated(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    document = fixture_document("multi-pool")
    node: Any = document
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return document


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(stack_schema())


@pytest.mark.parametrize("path, value, key", [row[1:] for row in MISTAKES], ids=[row[0] for row in MISTAKES])
def test_the_schema_flags_the_mistake_where_it_is_and_the_checker_refuses_it(validator, path, value, key):
    document = mutated(path, value)
    errors = list(validator.iter_errors({"config": document}))
    assert errors, "the schema accepts it"
    # Where the schema points: the changed value itself (or inside it, when the change is a whole entry),
    # or the list or map that holds it (uniqueness, a map's keys); never a section or list above it.
    deepest = max(errors, key=lambda e: len(e.absolute_path))
    where = tuple(deepest.absolute_path)[1:]
    assert where[: len(path)] == path or where == path[:-1], [(list(e.absolute_path), e.message) for e in errors]
    with pytest.raises(ConfigError) as caught:
        load(document)
    assert any(line.startswith(key) for line in caught.value.problems), caught.value.problems


def test_the_list_holds_at_least_45_kinds_of_mistake():
    assert len({row[0] for row in MISTAKES}) == len(MISTAKES) >= 45


@pytest.mark.parametrize(
    "path, value",
    [
        ((C, "kubernetesVersion"), 1.35),  # unquoted: YAML reads 1.35, which the checker takes as "1.35"
        ((C, "tags", "Owner-Name"), "x"),  # a key that merely contains a reserved word
        ((C, "endpoint", "publicAccessCidrs", 0), "198.51.100.7/32"),
        ((P, 1, "expireAfter"), "Never"),
        ((P, 1, "disruption", "budgets"), [{"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "1h30m"}]),
        ((*SERVING, "image"), "vllm/vllm-openai@sha256:" + "0" * 64),
        ((*SERVING, "model"), "/models/bge-large"),
        ((V,), {"charts": {"karpenter": "1.14.1"}, "addons": {"vpc-cni": "v1.21.1-eksbuild.7"}}),
    ],
)
def test_values_the_checker_accepts_the_schema_accepts_too(validator, path, value):
    document = mutated(path, value)
    load(document)
    assert [e.message for e in validator.iter_errors({"config": document})] == []


def test_check_jsonschema_reads_the_committed_schema_and_flags_a_stack_file(tmp_path: Path):
    """The command-line tool, as CI or a pre-commit hook would run it, on a good and a broken stack file."""
    tool = shutil.which("check-jsonschema", path=str(Path(sys.executable).parent))
    assert tool, "pip install -r requirements-dev.txt"
    good, bad = tmp_path / "Pulumi.good.yaml", tmp_path / "Pulumi.bad.yaml"
    good.write_text(yaml.safe_dump({"config": fixture_document("multi-pool")}))
    bad.write_text(yaml.safe_dump({"config": mutated((T, 1, "admins", 1), "arn:aws:iam::111122223333:group/OnCall")}))
    schema = str(project_path(SCHEMA_PATH))
    # One run over both files (the tool starts in about a second): only the broken one is flagged.
    flagged = subprocess.run([tool, "--schemafile", schema, "-o", "json", str(good), str(bad)], capture_output=True, text=True)
    assert flagged.returncode == 1
    result = json.loads(flagged.stdout)
    assert result["parse_errors"] == []
    [error] = result["errors"]
    assert (error["filename"], error["path"]) == (str(bad), "$.config['gpu-platform:tenants'][1].admins[1]")
