"""Scrape limits: the tenant serving PodMonitor's own, Prometheus' enforced caps, and the model of both.

A tenant (or a compromised model server) writes whatever its /metrics says; Prometheus reads the body
whole before it relabels anything. Each limit here fails the offending scrape alone.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from config.errors import ConfigError
from config.monitoring import PROMETHEUS_ENFORCED_LIMITS
from models.prometheus.limits import Limits, body_size_limit, byte_size, scrape_failure, scrape_limit
from models.prometheus.scrape import relabel, scraped
from offline.upstream import crd_documents

from .conftest import fixture_document, load, project_path, render_fixture
from .recorded import kubernetes_objects

TENANT = "inference"
MIB = 1024 * 1024


def _objects() -> list[dict[str, Any]]:
    return [r.inputs for r in kubernetes_objects(render_fixture("multi-pool"))]


def _monitor(objects: list[dict[str, Any]]) -> dict[str, Any]:
    [monitor] = [o for o in objects if o["kind"] == "PodMonitor" and o["metadata"]["namespace"] == TENANT]
    return monitor


def _prometheus_spec() -> dict[str, Any]:
    recording = render_fixture("multi-pool")
    [release] = [r for r in recording.by_type("kubernetes:helm.sh/v3:Release") if r.inputs["name"] == "kube-prometheus-stack"]
    return release.inputs["values"]["prometheus"]["prometheusSpec"]


def _crd_spec(kind: str) -> dict[str, Any]:
    [crd] = [c for c in crd_documents({"prometheus-operator-crds": "31.0.1"}) if c["spec"]["names"]["kind"] == kind]
    [version] = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    return version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]


def _effective(monitor: dict[str, Any], prometheus: dict[str, Any]) -> Limits:
    """The limits the tenant's scrape job runs with, the Prometheus resource's caps applied."""
    spec = monitor["spec"]
    return Limits(
        body_bytes=body_size_limit(spec.get("bodySizeLimit"), prometheus.get("enforcedBodySizeLimit")),
        samples=scrape_limit(spec.get("sampleLimit"), prometheus.get("enforcedSampleLimit")),
        labels=scrape_limit(spec.get("labelLimit"), prometheus.get("enforcedLabelLimit")),
        label_name_length=scrape_limit(spec.get("labelNameLengthLimit"), prometheus.get("enforcedLabelNameLengthLimit")),
        label_value_length=scrape_limit(spec.get("labelValueLengthLimit"), prometheus.get("enforcedLabelValueLengthLimit")),
    )


# --- the model: prometheus-operator's getLimit / getLowerByteSize, Prometheus' readResponse ---------------

@pytest.mark.parametrize(
    ("own", "enforced", "default", "expected"),
    [
        (200, None, None, 200),  # the monitor's own, nothing enforced
        (200, 5000, None, 200),  # under the cap: kept
        (7000, 5000, None, 5000),  # over the cap: the cap
        (None, 5000, None, 5000),  # none of its own: the enforced value, from the global section
        (None, None, 300, 300),  # none of its own: the resource's default
        (None, 250, 300, 250),  # the default, capped
        (120, None, 300, 120),  # its own beats the default, even a larger one
        (None, None, None, 0),  # no limit at all
    ],
)
def test_a_scrape_runs_with_its_own_limit_capped_at_the_enforced_one(own, enforced, default, expected):
    assert scrape_limit(own, enforced, default) == expected


@pytest.mark.parametrize(
    ("own", "enforced", "expected"),
    [
        ("4MiB", None, 4 * MIB),
        ("4MiB", "128MiB", 4 * MIB),
        ("512MiB", "128MiB", 128 * MIB),
        (None, "128MiB", 128 * MIB),
        ("3KB", None, 3 * 1024),  # ParseBase2Bytes: KB is 1024 too
        ("1.5GiB", None, 3 * 512 * MIB),
        ("0", None, 0),
        (None, None, 0),
    ],
)
def test_the_body_size_a_scrape_reads_is_the_lower_of_its_own_and_the_enforced(own, enforced, expected):
    assert body_size_limit(own, enforced) == expected


def test_a_byte_size_outside_the_crds_pattern_is_refused():
    with pytest.raises(ValueError):
        byte_size("4M")


def test_a_body_of_exactly_the_limit_fails_the_scrape_and_one_byte_less_does_not():
    limits = Limits(body_bytes=1000)
    assert scrape_failure(999, [], limits) is None
    assert scrape_failure(1000, [], limits) == "body_size_limit exceeded"


@pytest.mark.parametrize(
    ("labels", "failure"),
    [
        ({"__name__": "m", "a": "x", "b": "y"}, None),
        ({"__name__": "m", "a": "x", "b": "y", "c": "z"}, "label_limit exceeded"),  # __name__ counts: 4 > 3
        ({"__name__": "m", "abcdefghi": "x"}, "label_name_length_limit exceeded"),
        ({"__name__": "m", "abcdefgh": "x"}, None),  # as long as `__name__`, which counts too
        ({"__name__": "m", "a": "123456789"}, "label_value_length_limit exceeded"),
        ({"__name__": "metric_name", "a": "x"}, "label_value_length_limit exceeded"),  # the name is a value
        ({"__name__": "m", "a": "12345678"}, None),
    ],
)
def test_one_sample_over_a_label_limit_fails_the_scrape(labels, failure):
    limits = Limits(labels=3, label_name_length=8, label_value_length=8)
    assert scrape_failure(10, [{"__name__": "ok"}, labels], limits) == failure


# --- the render: the tenant's PodMonitor and the Prometheus resource ----------------------------------

def test_the_tenant_scrape_bounds_its_body_samples_labels_and_dropped_targets():
    monitor = _monitor(_objects())
    offered = _crd_spec("PodMonitor")
    limits = {k: v for k, v in monitor["spec"].items() if k not in ("selector", "selectorMechanism", "podMetricsEndpoints")}
    assert limits == {
        "bodySizeLimit": "8MiB",
        "sampleLimit": 200,
        "labelLimit": 16,
        "labelNameLengthLimit": 64,
        "labelValueLengthLimit": 512,
        "keepDroppedTargets": 16,
    }
    assert set(limits) <= set(offered)
    assert re.match(offered["bodySizeLimit"]["pattern"], limits["bodySizeLimit"])


def test_prometheus_discovers_only_the_labelled_pods_of_a_tenant():
    """RoleSelector hands the label selector to the API server: unlabelled pods never reach Prometheus' memory."""
    monitor = _monitor(_objects())
    assert monitor["spec"]["selectorMechanism"] == "RoleSelector"
    assert "RoleSelector" in _crd_spec("PodMonitor")["selectorMechanism"]["enum"]


def test_the_tenant_scrape_follows_no_redirect():
    """prometheus/common's HTTP client follows redirects unless told not to: a pod could point the scrape anywhere."""
    [endpoint] = _monitor(_objects())["spec"]["podMetricsEndpoints"]
    assert endpoint["followRedirects"] is False
    assert "followRedirects" in _crd_spec("PodMonitor")["podMetricsEndpoints"]["items"]["properties"]


def test_prometheus_caps_every_scrapes_body_and_nothing_else():
    spec = _prometheus_spec()
    assert {k: v for k, v in spec.items() if k.startswith("enforced")} == {"enforcedBodySizeLimit": "128MiB"}


def test_every_enforced_limit_the_crd_offers_has_a_decision():
    """A new enforced* field in a CRD bump is a decision to make, not a default to inherit silently."""
    offered = {k for k in _crd_spec("Prometheus") if k.startswith("enforced") and k != "enforcedNamespaceLabel"}
    assert offered == set(PROMETHEUS_ENFORCED_LIMITS)


def test_the_enforced_caps_lower_none_of_the_tenants_own_limits():
    monitor, prometheus = _monitor(_objects()), _prometheus_spec()
    assert _effective(monitor, prometheus) == Limits(
        body_bytes=8 * MIB, samples=200, labels=16, label_name_length=64, label_value_length=512
    )


def test_the_body_cap_stays_far_below_prometheus_memory_and_above_kube_state_metrics():
    """kube-state-metrics serves its body from what it holds in memory (64Mi limit); Prometheus has 2Gi."""
    cap = byte_size(PROMETHEUS_ENFORCED_LIMITS["enforcedBodySizeLimit"])  # type: ignore[arg-type]
    assert 64 * MIB < cap <= 2048 * MIB // 16


# --- sized from what vLLM v0.11.0 exposes -------------------------------------------------------------

def _vllm_exposition(model_name: str, engines: int) -> tuple[int, list[dict[str, str]]]:
    """The bytes of vLLM's /metrics and its samples: every series of upstream/metrics/vllm (the inventory),
    each histogram with the most buckets loggers.py gives any, per engine, plus the HTTP and process metrics
    of prometheus_client and the FastAPI instrumentator (an allowance of 200 lines)."""
    inventory = json.loads(project_path("upstream", "metrics-inventory.json").read_text())["metrics"]["vllm"]
    loggers = project_path("upstream", "metrics", "vllm", "v0.11.0", "loggers.py").read_text()
    explicit = max(len(m.split(",")) for m in re.findall(r"buckets=\[([^\]]*)\]", loggers))
    one_two_five = len([v for e in range(7) for v in (1, 2, 5) if v * 10**e <= 1_000_000])  # max_model_len 1M
    buckets = max(explicit, one_two_five) + 1  # +Inf
    samples: list[dict[str, str]] = []
    for engine in range(engines):
        for name, labels in inventory.items():
            base = {"__name__": name, "model_name": model_name, "engine": str(engine)}
            les = [str(i) for i in range(buckets)] if "le" in labels else [None]
            reasons = ["stop", "length", "abort"] if "finished_reason" in labels else [None]
            for le in les:
                for reason in reasons:
                    samples.append({**base, **({"le": le} if le else {}), **({"finished_reason": reason} if reason else {})})
    lines = [
        f'{s["__name__"]}{{{",".join(f"{k}={json.dumps(v)}" for k, v in s.items() if k != "__name__")}}} 1.2345678e+06'
        for s in samples
    ]
    help_and_type = 2 * len(inventory) * 120
    return sum(len(line) + 1 for line in lines) + help_and_type + 200 * 200, samples


def test_vllms_whole_exposition_fits_the_tenant_body_limit_four_times_over():
    size, _ = _vllm_exposition("m" * 512, engines=8)
    assert size > 1.5 * MIB and size * 4 < 8 * MIB


def test_vllms_kept_series_pass_every_label_limit_and_a_forged_one_fails_the_scrape():
    objects = _objects()
    monitor = _monitor(objects)
    [endpoint] = monitor["spec"]["podMetricsEndpoints"]
    limits = _effective(monitor, _prometheus_spec())
    target = {"job": f"{TENANT}/{monitor['metadata']['name']}", "namespace": TENANT, "pod": "p" * 253,
              "instance": "10.30.64.10:8000", "container": "server", "endpoint": endpoint["port"]}
    size, samples = _vllm_exposition("meta-llama/Llama-3.1-70B-Instruct", engines=2)
    kept = [k for k in (relabel(scraped(s, target), endpoint["metricRelabelings"]) for s in samples) if k is not None]
    assert [k["__name__"] for k in kept] == ["vllm:num_requests_waiting"] * 2
    assert scrape_failure(size, kept, limits) is None
    assert scrape_failure(size, [{**kept[0], "model_name": "m" * 513}], limits) == "label_value_length_limit exceeded"
    assert scrape_failure(8 * MIB, kept, limits) == "body_size_limit exceeded"


def test_a_served_model_name_longer_than_the_scrape_keeps_is_one_line():
    document = fixture_document("multi-pool")
    tenant = next(t for t in document["gpu-platform:tenants"] if any("serving" in d for d in t.get("inference", ())))
    deployment = next(d for d in tenant["inference"] if "serving" in d)
    deployment["serving"]["model"] = "org/" + "m" * 509
    with pytest.raises(ConfigError) as caught:
        load(document)
    [line] = caught.value.problems
    assert line.endswith(
        "is 513 characters: vLLM writes it into the `model_name` label of every metric, and the serving scrape fails "
        "whole on a value over 512 (its queue-depth trigger then reads nothing); use a shorter path"
    )
    deployment["serving"]["model"] = "org/" + "m" * 508
    load(document)
