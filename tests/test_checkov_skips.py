"""checkov's accepted checks hold for the one resource they were written for: the model server's
Deployment carries each as a `checkov.io/skip<n>` annotation with its reason (checkov 3.3.30 reads them
from the scanned object), and `.checkov.yaml` skips nothing for the whole render."""

from __future__ import annotations

from pathlib import Path

import yaml

from components.autoscaling import vllm

from .conftest import fixture_document, load

CHECKOV_CONFIG = Path(__file__).resolve().parent.parent / ".checkov.yaml"


def server(with_token: bool) -> dict:
    tenant = next(t for t in load(fixture_document("multi-pool")).tenants if t.name == "llm-training")
    serving = tenant.config.inference[0].serving
    assert serving is not None and serving.hf_token_secret is not None
    deployment = tenant.config.inference[0].model_copy(
        update={"serving": serving.model_copy(update={"hf_token_secret": serving.hf_token_secret if with_token else None})}
    )
    return vllm.server_deployment(tenant, deployment, vllm.tenant_flavor(tenant, deployment.flavor))


def skipped(manifest: dict) -> dict[str, str]:
    annotations = manifest["metadata"]["annotations"]
    return dict(v.split("=", 1) for k, v in annotations.items() if k.startswith("checkov.io/skip"))


def test_the_model_server_names_each_check_it_fails_on_purpose_with_a_reason():
    with_token = skipped(server(with_token=True))
    assert sorted(with_token) == ["CKV_K8S_11", "CKV_K8S_22", "CKV_K8S_35", "CKV_K8S_40"]
    assert all(len(reason) > 20 for reason in with_token.values())


def test_the_secret_as_environment_check_is_accepted_only_where_a_token_is_passed():
    assert sorted(skipped(server(with_token=False))) == ["CKV_K8S_11", "CKV_K8S_22", "CKV_K8S_40"]


def test_no_check_is_skipped_for_every_resource():
    assert "skip-check" not in yaml.safe_load(CHECKOV_CONFIG.read_text())
