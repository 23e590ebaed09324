"""Kubernetes' own replica-calculator cases replayed through the HPA model (models/kubernetes/hpa.py).

upstream/kubernetes-hpa/replica_calculator_cases.yaml transcribes the table tests of
pkg/controller/podautoscaler/replica_calculator_test.go (the commit in its header). Each case lists its pods
as the Go test builds them; `classify` applies what the calculator's groupPods makes of them, so the model
gets the ready, unready and missing pods the Go test's calculator sees.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from models.kubernetes import hpa

CASES_FILE = Path(__file__).resolve().parent.parent / "upstream" / "kubernetes-hpa" / "replica_calculator_cases.yaml"
CASES = yaml.safe_load(CASES_FILE.read_text())["cases"]


def pods(case: dict) -> list[dict]:
    """The pods runTest lists: `current` of them, or as many as `phase` names (failed pods are extra)."""
    count = max(case["current"], len(case.get("phase", [])))
    return [
        {
            "name": f"test-pod-{i}",
            "ready": case.get("readiness", [True] * count)[i] if i < len(case.get("readiness", [])) else True,
            "hot": case.get("start", ["cool"] * count)[i] == "hot",
            "phase": case.get("phase", ["Running"] * count)[i],
            "deleted": case.get("deleted", [False] * count)[i],
        }
        for i in range(count)
    ]


def classify(case: dict, cpu: bool) -> tuple[list[str], list[str]]:
    """groupPods: (counted pods, unready pods). Failed and deleting pods are not counted; pending pods are
    unready; for CPU only, a pod not ready or inside its initialisation period is unready."""
    counted, unready = [], []
    for pod in pods(case):
        if pod["phase"] == "Failed" or pod["deleted"]:
            continue
        counted.append(pod["name"])
        if pod["phase"] == "Pending" or (cpu and (not pod["ready"] or pod["hot"])):
            unready.append(pod["name"])
    return counted, unready


def metric_pod_names(levels: list, names: list[str] | None = None) -> list[str]:
    return [names[i] if names and i < len(names) else f"test-pod-{i}" for i in range(len(levels))]


def replay(case: dict) -> tuple[int, int | None]:
    """(replicas, utilisation where the model computes it)."""
    current = case["current"]
    if "resource" in case:
        resource = case["resource"]
        counted, unready = classify(case, cpu=True)
        listed = {pod["name"] for pod in pods(case)}
        requests = {f"test-pod-{i}": request for i, request in enumerate(resource["requests"]) if f"test-pod-{i}" in counted}
        reported = zip(metric_pod_names(resource["levels"], resource.get("pod_names")), resource["levels"], strict=True)
        # Metrics of failed and deleting pods are dropped; those of pods not listed stay (and count for nothing).
        usage = {name: value for name, value in reported if name in counted or name not in listed}
        return hpa.resource_utilisation_replicas(current, usage, requests, resource["target"], unready)
    metric = case["metric"]
    kind, levels, target = metric["kind"], metric["levels"], metric["target"]
    if kind == "pods":
        counted, unready = classify(case, cpu=False)
        usage = {name: value for name, value in zip(metric_pod_names(levels), levels, strict=True) if name in counted}
        missing = [name for name in counted if name not in usage and name not in unready]
        ready = [name for name in counted if name in usage and name not in unready]
        return hpa.plain_metric_replicas(current, usage, target, ready, unready, missing), None
    ready_pods = sum(1 for pod in pods(case) if pod["phase"] == "Running" and pod["ready"])
    if kind in ("object", "external"):
        return hpa.external_value_replicas(current, ready_pods, sum(levels), target), None
    return hpa.external_average_replicas(current, sum(levels), target), None


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_the_model_computes_what_the_kubernetes_replica_calculator_tests_expect(case):
    if "error" in case:
        with pytest.raises(ValueError):
            replay(case)
        return
    replicas, utilisation = replay(case)
    assert replicas == case["expected"]
    if utilisation is not None:
        assert utilisation == case["resource"]["utilisation"]


def direction(case: dict) -> str:
    if case["expected"] == case["current"]:
        return "same"
    return "up" if case["expected"] > case["current"] else "down"


def test_the_transcription_is_broad():
    """Every metric kind the model implements, and the scale-up, scale-down and tolerance paths of each."""
    kinds = [case["metric"]["kind"] if "metric" in case else "resource" for case in CASES]
    assert {kind: kinds.count(kind) for kind in set(kinds)} == {
        "resource": 28,
        "pods": 7,
        "object": 4,
        "object_per_pod": 3,
        "external": 3,
        "external_per_pod": 3,
    }
    directions = {(kind, direction(case)) for kind, case in zip(kinds, CASES, strict=True) if "error" not in case}
    # The Go test's one External Value scale-up case with unready pods ends below the current count.
    expected = {(kind, d) for kind in set(kinds) for d in ("up", "down", "same")} - {("external", "up")}
    assert expected <= directions
