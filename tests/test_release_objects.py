"""No two owners in a render create the same object: Helm refuses to install one another release owns.

The objects a release creates are read from its chart's vendored templates (offline/chart_objects.py),
the rule is Helm's ownership check (models/helm.py). Every shipped stack is checked by
`python -m offline validate` (tests/test_stacks.py); here every fixture stack and every shape, among them
one with both a Bottlerocket GPU pool and a DRA pool, the render that installs both standalone exporters.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
import yaml

from config.versions import CHARTS
from models.helm import ObjectKey, ownership_conflicts
from offline.chart_objects import ChartTemplateError, Release, conflicts, define_blocks, release_objects
from offline.engine import Recording
from offline.validate import validate_render

from .conftest import FIXTURES, render, render_fixture
from .recorded import kubernetes_objects, releases

SHAPES = Path(__file__).resolve().parent / "fixtures" / "shapes"
BOTH_EXPORTERS = "bottlerocket-and-dra"
DCGM = CHARTS["dcgm-exporter"]


@functools.cache
def render_shape(name: str) -> Recording:
    return render(yaml.safe_load((SHAPES / f"{name}.yaml").read_text())["config"], name)


def dcgm_release(name: str, namespace: str, values: dict[str, Any] | None = None) -> Release:
    return Release(DCGM.chart, DCGM.version, name, namespace, values or {})


# (release, namespace, values) -> every object the chart's 4.8.2 templates name, written out.
OBJECTS = [
    (
        "dcgm-exporter", "gpu-operator", {},
        {
            ObjectKey("ClusterRole", "", "dcgm-exporter-read-pods"),
            ObjectKey("ClusterRoleBinding", "", "dcgm-exporter-read-pods"),
            ObjectKey("ConfigMap", "gpu-operator", "exporter-metrics-config-map"),
            ObjectKey("ConfigMap", "gpu-operator", "dcgm-exporter-web-config.yml"),
            ObjectKey("DaemonSet", "gpu-operator", "dcgm-exporter"),
            ObjectKey("Role", "gpu-operator", "dcgm-exporter-read-cm"),
            ObjectKey("RoleBinding", "gpu-operator", "dcgm-exporter"),
            ObjectKey("Secret", "gpu-operator", "dcgm-exporter-tls"),
            ObjectKey("Service", "gpu-operator", "dcgm-exporter"),
            ObjectKey("ServiceAccount", "gpu-operator", "dcgm-exporter"),
            ObjectKey("ServiceMonitor", "gpu-operator", "dcgm-exporter"),
        },
    ),
    (
        # A release name without the chart's gets it appended; namespaceOverride moves every namespaced
        # object, the fixed names included; serviceAccount.name names the account and nothing else.
        "gpu-metrics", "ops", {"namespaceOverride": "telemetry", "serviceAccount": {"name": "exporter"}},
        {
            ObjectKey("ClusterRole", "", "gpu-metrics-dcgm-exporter-read-pods"),
            ObjectKey("ClusterRoleBinding", "", "gpu-metrics-dcgm-exporter-read-pods"),
            ObjectKey("ConfigMap", "telemetry", "exporter-metrics-config-map"),
            ObjectKey("ConfigMap", "telemetry", "gpu-metrics-dcgm-exporter-web-config.yml"),
            ObjectKey("DaemonSet", "telemetry", "gpu-metrics-dcgm-exporter"),
            ObjectKey("Role", "telemetry", "dcgm-exporter-read-cm"),
            ObjectKey("RoleBinding", "telemetry", "gpu-metrics-dcgm-exporter"),
            ObjectKey("Secret", "telemetry", "gpu-metrics-dcgm-exporter-tls"),
            ObjectKey("Service", "telemetry", "gpu-metrics-dcgm-exporter"),
            ObjectKey("ServiceAccount", "telemetry", "exporter"),
            ObjectKey("ServiceMonitor", "telemetry", "gpu-metrics-dcgm-exporter"),
        },
    ),
    (
        # Helm's `contains $name .Release.Name`: a release named inside the chart's name still gets it appended.
        "dcgm", "metrics", {},
        {
            ObjectKey("ClusterRole", "", "dcgm-dcgm-exporter-read-pods"),
            ObjectKey("ClusterRoleBinding", "", "dcgm-dcgm-exporter-read-pods"),
            ObjectKey("ConfigMap", "metrics", "exporter-metrics-config-map"),
            ObjectKey("ConfigMap", "metrics", "dcgm-dcgm-exporter-web-config.yml"),
            ObjectKey("DaemonSet", "metrics", "dcgm-dcgm-exporter"),
            ObjectKey("Role", "metrics", "dcgm-exporter-read-cm"),
            ObjectKey("RoleBinding", "metrics", "dcgm-dcgm-exporter"),
            ObjectKey("Secret", "metrics", "dcgm-dcgm-exporter-tls"),
            ObjectKey("Service", "metrics", "dcgm-dcgm-exporter"),
            ObjectKey("ServiceAccount", "metrics", "dcgm-dcgm-exporter"),
            ObjectKey("ServiceMonitor", "metrics", "dcgm-dcgm-exporter"),
        },
    ),
    (
        # fullnameOverride wins over the release name; an existing TLS secret is not created under the fullname.
        "dcgm-exporter-dra", "dra", {"fullnameOverride": "gpu-dra-", "tlsServerConfig": {"existingSecret": "certs"}},
        {
            ObjectKey("ClusterRole", "", "gpu-dra-read-pods"),
            ObjectKey("ClusterRoleBinding", "", "gpu-dra-read-pods"),
            ObjectKey("ConfigMap", "dra", "exporter-metrics-config-map"),
            ObjectKey("ConfigMap", "dra", "gpu-dra-web-config.yml"),
            ObjectKey("DaemonSet", "dra", "gpu-dra"),
            ObjectKey("Role", "dra", "dcgm-exporter-read-cm"),
            ObjectKey("RoleBinding", "dra", "gpu-dra"),
            ObjectKey("Secret", "dra", "certs"),
            ObjectKey("Service", "dra", "gpu-dra"),
            ObjectKey("ServiceAccount", "dra", "gpu-dra"),
            ObjectKey("ServiceMonitor", "dra", "gpu-dra"),
        },
    ),
]


@pytest.mark.parametrize(("name", "namespace", "values", "expected"), OBJECTS, ids=[o[0] for o in OBJECTS])
def test_a_release_creates_the_objects_its_chart_templates_name(name, namespace, values, expected):
    assert set(release_objects(dcgm_release(name, namespace, values)) or ()) == expected


def test_two_exporter_releases_in_one_namespace_collide_on_the_charts_fixed_names():
    found = conflicts({"helm/a.yaml": dcgm_release("dcgm-exporter", "gpu-operator"),
                       "helm/b.yaml": dcgm_release("dcgm-exporter-dra", "gpu-operator")})
    assert [line.split(": ")[1] for line in found] == [
        "ConfigMap gpu-operator/exporter-metrics-config-map", "Role gpu-operator/dcgm-exporter-read-cm",
    ]
    assert conflicts({"helm/a.yaml": dcgm_release("dcgm-exporter", "gpu-operator"),
                      "helm/b.yaml": dcgm_release("dcgm-exporter-dra", "dra-driver-nvidia-gpu")}) == []


def test_an_object_the_manifests_declare_collides_with_a_release_that_creates_it():
    declared = {"manifests.yaml#4": [ObjectKey("Role", "gpu-operator", "dcgm-exporter-read-cm")]}
    [line] = conflicts({"helm/a.yaml": dcgm_release("dcgm-exporter", "gpu-operator")}, declared)
    assert line.startswith("helm/a.yaml dcgm-exporter 4.8.2: Role gpu-operator/dcgm-exporter-read-cm: manifests.yaml#4 ")


def test_helms_rule_names_every_owner_of_a_shared_object_and_ignores_an_owners_repeats():
    shared, own = ObjectKey("Role", "x", "r"), ObjectKey("Role", "y", "r")
    assert ownership_conflicts({"b": [shared, shared], "a": [shared, own], "c": [ObjectKey("Role", "", "r")]}) == {
        shared: ["a", "b"]
    }


def test_a_changed_helper_in_the_charts_templates_is_refused_not_guessed(monkeypatch):
    import offline.chart_objects as chart_objects

    helpers = dict(chart_objects.HELPERS["dcgm-exporter"])
    helpers["fullname"] = (helpers["fullname"][0], "0" * 64)
    monkeypatch.setitem(chart_objects.HELPERS, "dcgm-exporter", helpers)
    with pytest.raises(ChartTemplateError, match=r"define dcgm-exporter\.fullname"):
        release_objects(dcgm_release("dcgm-exporter", "gpu-operator"))


def test_the_helpers_define_blocks_end_where_the_next_begins():
    text = '{{- define "c.a" -}}\nA\n{{- end -}}\n\n{{/*\nnote\n*/}}\n{{- define "c.b" -}}\nB\n{{- end -}}\n'
    assert define_blocks(text) == {"c.a": '{{- define "c.a" -}}\nA\n{{- end -}}', "c.b": '{{- define "c.b" -}}\nB\n{{- end -}}'}


def owners(recording: Recording) -> tuple[dict[str, Release], dict[str, list[ObjectKey]]]:
    found = {
        f"helm/{name}.yaml": Release(r.inputs["chart"], r.inputs["version"], name, r.inputs["namespace"], r.inputs["values"])
        for name, r in releases(recording).items()
    }
    declared = {
        r.urn: [ObjectKey(r.inputs["kind"], r.inputs["metadata"].get("namespace") or "", r.inputs["metadata"]["name"])]
        for r in kubernetes_objects(recording)
    }
    return found, declared


@pytest.mark.parametrize("stack", [*FIXTURES, BOTH_EXPORTERS])
def test_no_two_owners_in_a_fixture_render_create_the_same_object(stack):
    recording = render_shape(stack) if stack == BOTH_EXPORTERS else render_fixture(stack)
    assert conflicts(*owners(recording)) == []


def test_the_bottlerocket_and_dra_shape_installs_both_exporters_in_namespaces_of_their_own():
    found, _ = owners(render_shape(BOTH_EXPORTERS))
    exporters = {r.name: r.namespace for r in found.values() if r.chart == DCGM.chart}
    assert exporters == {"dcgm-exporter": "gpu-operator", "dcgm-exporter-dra": "dra-driver-nvidia-gpu"}


def test_offline_validate_reports_two_releases_that_create_one_object(tmp_path):
    (tmp_path / "helm").mkdir()
    (tmp_path / "manifests.yaml").write_text("")
    for name in ("dcgm-exporter", "dcgm-exporter-dra"):
        release: dict[str, Any] = {"chart": DCGM.chart, "name": name, "namespace": "gpu-operator", "repository": DCGM.repository,
                   "values": {}, "version": DCGM.version}
        (tmp_path / "helm" / f"{name}.yaml").write_text(yaml.safe_dump(release))
    assert validate_render(tmp_path, "1.35").problems == [
        "helm/dcgm-exporter-dra.yaml dcgm-exporter 4.8.2: ConfigMap gpu-operator/exporter-metrics-config-map: "
        "helm/dcgm-exporter.yaml creates it too, and Helm refuses to install an object another owner has: "
        "give the releases distinct namespaces or names",
        "helm/dcgm-exporter-dra.yaml dcgm-exporter 4.8.2: Role gpu-operator/dcgm-exporter-read-cm: "
        "helm/dcgm-exporter.yaml creates it too, and Helm refuses to install an object another owner has: "
        "give the releases distinct namespaces or names",
    ]


def test_an_exporter_release_moved_to_another_namespace_is_deleted_before_its_successor_installs():
    """A namespace change replaces a helm.v3.Release (pulumi/pulumi-kubernetes#2532); the successor's
    ClusterRole `<release>-read-pods` has the old one's name, owned by the old release until it is gone."""
    recording = render_shape(BOTH_EXPORTERS)
    exporters = [r for r in recording.by_type("kubernetes:helm.sh/v3:Release") if r.inputs["chart"] == DCGM.chart]
    assert len(exporters) == 2 and all(r.delete_before_replace is True for r in exporters)
