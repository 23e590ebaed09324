"""What `write_render` leaves in its directory: exactly the current render, and no secret.

A render directory is reviewed and diffed between runs, so a file left over from an earlier render
(a Helm release the config no longer declares) would show as desired state that is not.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from offline.engine import SECRET, Recording
from offline.render import HELM_RELEASE, write_render
from offline.stack import SECURE_PLACEHOLDER

from .conftest import fixture_config, fixture_document, render_fixture

# The two `secure:` values of tests/fixtures/stacks/multi-pool.yaml (monitoring.receivers).
CIPHERTEXTS = (
    "v1:ZXhhbXBsZS1ub25jZQ==:ZXhhbXBsZSBwYWdlcmR1dHkgcm91dGluZyBrZXk=",
    "v1:ZXhhbXBsZS1ub25jZQ==:ZXhhbXBsZSBzbGFjayB3ZWJob29rIHVybA==",
)
# What a kubeconfig carries (client-go's clientcmd v1 Config, and the exec plugin's `aws eks get-token`).
KUBECONFIG_MARKERS = ("certificate-authority-data", "get-token")


def without_releases(recording: Recording, *names: str) -> Recording:
    """The same recording as if the config no longer declared the named Helm releases."""
    kept = [r for r in recording.resources if not (r.type == HELM_RELEASE and r.inputs["name"] in names)]
    return dataclasses.replace(recording, resources=kept)


def files(directory: Path) -> set[Path]:
    return {path for path in directory.rglob("*") if path.is_file()}


def test_a_render_writes_one_file_per_helm_release_beside_manifests_plan_and_summary(tmp_path):
    written = write_render(render_fixture("multi-pool"), fixture_config("multi-pool"), tmp_path)
    assert files(tmp_path) == set(written)
    assert sorted(str(path.relative_to(tmp_path)) for path in written) == [
        "helm/dcgm-exporter.yaml",
        "helm/external-secrets.yaml",
        "helm/gpu-operator.yaml",
        "helm/karpenter-crd.yaml",
        "helm/karpenter.yaml",
        "helm/keda.yaml",
        "helm/kube-prometheus-stack.yaml",
        "helm/kubeflow-trainer.yaml",
        "helm/kueue.yaml",
        "helm/kyverno.yaml",
        "helm/opencost.yaml",
        "helm/prometheus-operator-crds.yaml",
        "manifests.yaml",
        "plan.json",
        "summary.md",
    ]


def test_a_re_render_removes_the_file_of_a_release_no_longer_declared(tmp_path):
    write_render(render_fixture("multi-pool"), fixture_config("multi-pool"), tmp_path)
    written = write_render(without_releases(render_fixture("multi-pool"), "keda"), fixture_config("multi-pool"), tmp_path)
    assert not (tmp_path / "helm" / "keda.yaml").exists()
    assert files(tmp_path) == set(written)


def test_a_re_render_without_releases_leaves_no_helm_directory(tmp_path):
    recording = render_fixture("multi-pool")
    write_render(recording, fixture_config("multi-pool"), tmp_path)
    everything = {r.inputs["name"] for r in recording.by_type(HELM_RELEASE)}
    written = write_render(without_releases(recording, *everything), fixture_config("multi-pool"), tmp_path)
    assert not (tmp_path / "helm").exists()
    assert sorted(path.name for path in files(tmp_path)) == sorted(path.name for path in written)
    assert sorted(path.name for path in written) == ["manifests.yaml", "plan.json", "summary.md"]


def test_a_stack_with_secure_values_writes_none_of_them_nor_their_placeholder(tmp_path):
    document = fixture_document("multi-pool")
    receivers = document["gpu-platform:monitoring"]["receivers"]
    # The fixture does carry secure values, so this test cannot pass for want of any.
    assert [receivers[0]["pagerdutyRoutingKey"]["secure"], receivers[1]["slackWebhookUrl"]["secure"]] == list(CIPHERTEXTS)

    written = write_render(render_fixture("multi-pool"), fixture_config("multi-pool"), tmp_path)
    leaks = [
        (str(path.relative_to(tmp_path)), needle)
        for path in written
        for needle in (*CIPHERTEXTS, SECURE_PLACEHOLDER, *KUBECONFIG_MARKERS)
        if needle in path.read_text()
    ]
    assert leaks == []
    # They did reach the program: the receivers' Secret is declared, its values redacted.
    [secret] = [r for r in render_fixture("multi-pool").resources if r.inputs.get("kind") == "Secret"]
    assert secret.inputs["stringData"] == {
        "gpu-oncall-pagerduty-routing-key": SECRET,
        "gpu-platform-slack-webhook-url": SECRET,
    }
