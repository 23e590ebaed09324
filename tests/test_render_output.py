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
from offline.summary import render_summary

from .conftest import fixture_config, fixture_document, load, render_fixture

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


def test_the_node_groups_table_gives_min_desired_and_max_each_from_its_own_key():
    """Every fixture sets desiredSize to minSize; here all three differ, so the row shows which is which."""
    document = fixture_document("single-pool")
    document["gpu-platform:cluster"]["systemNodes"].update(minSize=2, desiredSize=3, maxSize=5)
    summary = render_summary(render_fixture("single-pool"), load(document))
    section = summary[summary.index("## Node groups") :]
    row = next(line for line in section.splitlines() if line.startswith("| system (on-demand)"))
    assert "| m7i.xlarge, m6i.xlarge | " in row
    assert "| 2 / 3 / 5 | 50 GiB gp3, encrypted |" in row


def test_the_capacity_table_gives_promised_declared_and_unpromised_by_value():
    """multi-pool's tenants: nominal H100 16 + 8 + 8 + 0 of 32, A100 8 + 8 + 0 of 16, L40S 12 + 4 of 16;
    cpu 64 + 64 + 128 + 16 = 272 of the CPU pool's 512, memory 256 + 256 + 512 + 64 = 1088 of 2048 GiB."""
    summary = render_summary(render_fixture("multi-pool"), load(fixture_document("multi-pool")))
    section = summary[summary.index("## Capacity promised vs declared") : summary.index("## Idle cost")]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    assert rows == [
        "| `gpu-h100` | h100-on-demand | 32 / 32 GPUs | 0 |",
        "| `gpu-a100` | a100-spot | 16 / 16 GPUs | 0 |",
        "| `gpu-l40s` | l40s-on-demand | 16 / 16 GPUs | 0 |",
        "| `cpu` (cpu) | cpu | 272 / 512 vCPUs | 240 |",
        "| `cpu` (memory) | cpu | 1088 / 2048 GiB | 960 |",
    ]


def _rows(summary: str, heading: str) -> dict[str, list[str]]:
    """A summary table's rows by their first cell, each split into its cells."""
    section = summary[summary.index(heading) :]
    table = section[: section.index("\n\n", section.index("\n| "))]
    return {
        cells[0]: cells
        for cells in ([c.strip() for c in line.strip("|").split(" | ")] for line in table.splitlines() if line.startswith("| `"))
    }


def test_the_gpu_pool_costs_say_how_spot_pools_are_priced():
    """A spot-only pool runs on spot, priced here at the on-demand rate; a pool of both may run either.
    multi-pool gpu-a100: 16 GPUs on p4d.24xlarge (8 GPUs at $21.957642/h) = $43.92; gpu-h100: 32 GPUs on
    p5.48xlarge (8 at $55.04/h) = $220.16."""
    multi = _rows(render_summary(render_fixture("multi-pool"), load(fixture_document("multi-pool"))), "## GPU pools")
    assert multi["`gpu-a100`"][-1] == "$43.92 (on-demand rate; runs on spot)"
    assert multi["`gpu-h100`"][-1] == "$220.16"
    single = _rows(render_summary(render_fixture("single-pool"), load(fixture_document("single-pool"))), "## GPU pools")
    assert single["`gpu-l40s`"][-1].endswith(" (on-demand rate; spot is usually cheaper)")


def test_the_tenants_table_gives_borrowable_slices_with_their_own_gpu_equivalent():
    """single-pool's l40s is time-sliced x4: ml-research's 12 nominal slices are 3 GPUs and its 4 borrowable
    slices 1 GPU; 4 spot slices are 1 GPU."""
    rows = _rows(render_summary(render_fixture("single-pool"), load(fixture_document("single-pool"))), "## Tenants")
    assert rows["`ml-research`"][2:4] == ["12 l40s-on-demand (3 GPUs), 4 l40s-spot (1 GPU)", "+4 l40s-on-demand (1 GPU)"]
    assert rows["`inference`"][2:4] == ["12 l40s-on-demand (3 GPUs)", "+4 l40s-on-demand (1 GPU)"]


def test_the_system_nodes_pod_count_is_against_every_nodes_max_pods():
    """single-pool: 2 m7i.xlarge nodes (minSize), each taking 4 ENIs x (15 addresses - 1) + 2 = 58 pods
    (amazon-eks-ami eni-max-pods.txt), so 116 pods across the group."""
    summary = render_summary(render_fixture("single-pool"), load(fixture_document("single-pool")))
    section = summary[summary.index("## System nodes") :]
    assert " of 116 (58 per node).\n" in section[: section.index("| pod")]
