"""Small mistakes, each told in one line that says why: a blank model, a misspelt `config:` (an inference
deployment at zero replicas: tests/test_autoscaling.py); a derived storage quota is refused only when the
user set it; and the first `make render` says what it is installing."""

from __future__ import annotations

import subprocess

import pytest

from config import ConfigError
from offline.stack import stack_config_from_text

from .conftest import fixture_document, load, problems_of, project_path

SERVING = "gpu-platform:tenants[llm-training].inference[embeddings].serving"



@pytest.mark.parametrize(
    "model, problem",
    [
        ("  ", f"{SERVING}.model: '  ' is blank: name the model `--model` loads"),
        ("", f"{SERVING}.model: '' is empty: name the model `--model` loads"),
        ("BAAI/bge large", f"{SERVING}.model: 'BAAI/bge large' contains a space: name the model `--model` loads"),
    ],
)
def test_a_blank_or_spaced_model_is_refused(model, problem):
    document = fixture_document("multi-pool")
    document["gpu-platform:tenants"][0]["inference"][0]["serving"]["model"] = model
    [line] = problems_of(document)
    assert line.startswith(problem)


def test_a_misspelt_config_key_is_named_with_the_fix():
    text = b"confg:\n  aws:region: us-west-2\n  gpu-platform:cluster: {name: gpu-dev}\n"
    with pytest.raises(ConfigError) as caught:
        stack_config_from_text("typo", text, "Pulumi.typo.yaml")
    assert caught.value.problems == [
        "Pulumi.typo.yaml: confg: unknown top-level key; did you mean config? a stack file holds `config:` and "
        "Pulumi's own secretsprovider, encryptedkey, encryptionsalt, environment"
    ]


def test_pulumis_own_stack_file_keys_are_not_mistakes():
    text = b"secretsprovider: passphrase\nencryptionsalt: v1:abc\nconfig:\n  aws:region: us-west-2\n"
    assert stack_config_from_text("ok", text, "Pulumi.ok.yaml").values["aws:region"] == "us-west-2"


def with_big_cache(**tenant_fields) -> dict:
    """llm-training's embeddings server at maxReplicas 9 with a 100 GiB cache: (9 + 1) x (100 + 10) = 1100 GiB."""
    document = fixture_document("multi-pool")
    llm = document["gpu-platform:tenants"][0]
    llm["inference"][0]["maxReplicas"] = 9
    llm["gpu"]["a100-spot"]["borrowingLimit"] = 8
    llm.update(tenant_fields)
    return document


def test_the_storage_quota_a_tenant_leaves_unset_grows_to_what_its_model_servers_need():
    [llm] = [t for t in load(with_big_cache()).tenants if t.name == "llm-training"]
    assert llm.resource_quota["requests.ephemeral-storage"] == "1100Gi"
    assert llm.resource_quota["limits.ephemeral-storage"] == "1100Gi"


def test_the_storage_quota_of_a_tenant_without_servers_is_the_default():
    [experiments] = [t for t in load(fixture_document("multi-pool")).tenants if t.name == "experiments"]
    assert experiments.resource_quota["requests.ephemeral-storage"] == "1000Gi"


def test_a_storage_quota_the_user_set_too_small_is_refused():
    [line] = problems_of(with_big_cache(ephemeralStorageGiB=1099))
    assert "ephemeralStorageGiB 1099 is below the 1100 GiB its model servers limit" in line


def test_the_first_make_render_says_what_it_installs():
    dry_run = subprocess.run(
        ["make", "-n", "--no-print-directory", "-C", str(project_path()), "render", "VENV=/nonexistent-venv"],
        capture_output=True,
        text=True,
    )
    [say, make_venv] = dry_run.stdout.splitlines()[:2]
    assert say.startswith("echo ") and "Installing the pinned requirements into /nonexistent-venv" in say
    assert "-m venv /nonexistent-venv" in make_venv
