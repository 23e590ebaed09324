"""The objects a Helm release creates, by kind, namespace and name, read from its chart's vendored templates.

For a chart whose templates are vendored (`templates` in offline/upstream.py CHART_SOURCES), each
template's object is found by its top-level `kind:` and the `name:`/`namespace:` of its `metadata:` block.
A name is literal text and `{{ include "<chart>.<helper>" . }}` calls, which `HELPERS` evaluates from the
release's name and namespace and its values merged over the chart's defaults (`fullnameOverride`,
`nameOverride`, `namespaceOverride`, `serviceAccount`, `tlsServerConfig`). Each helper is the define block
of the chart's templates/_helpers.tpl whose sha256 `HELPERS` records: a bump that changes one, or a
template naming an object any other way, raises ChartTemplateError instead of guessing.

Every template's object counts, whatever the `if` around it: two releases that might both create an
object are already one values change away from failing (models/helm.py).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from models.helm import ObjectKey, ownership_conflicts

from .helm_values import chart_key, helm_merge
from .upstream import CHART_SOURCES, chart_dir, chart_metadata, chart_values

# Kinds without a namespace among those the vendored templates create.
CLUSTER_SCOPED = frozenset({"ClusterRole", "ClusterRoleBinding", "Namespace", "CustomResourceDefinition"})


class ChartTemplateError(Exception):
    pass


@dataclass(frozen=True)
class Release:
    """A Helm release as the render records it (helm/<name>.yaml): chart, version, name, namespace, values."""

    chart: str
    version: str
    name: str
    namespace: str
    values: Mapping[str, Any]


@dataclass(frozen=True)
class Context:
    """What the helpers read: `.Chart.Name`, `.Release.Name`, `.Release.Namespace` and the merged `.Values`."""

    chart: str
    release: str
    namespace: str
    values: Mapping[str, Any]

    def value(self, *path: str) -> Any:
        node: Any = self.values
        for key in path:
            node = node.get(key) if isinstance(node, Mapping) else None
        return node


def _trunc(text: str) -> str:
    """`trunc 63 | trimSuffix "-"`."""
    text = text[:63]
    return text[:-1] if text.endswith("-") else text


def _name(c: Context) -> str:
    return _trunc(c.value("nameOverride") or c.chart)


def _fullname(c: Context) -> str:
    if c.value("fullnameOverride"):
        return _trunc(str(c.value("fullnameOverride")))
    name = c.value("nameOverride") or c.chart
    return _trunc(c.release if name in c.release else f"{c.release}-{name}")


def _namespace(c: Context) -> str:
    return str(c.value("namespaceOverride") or c.namespace)


def _service_account_name(c: Context) -> str:
    if c.value("serviceAccount", "create"):
        return str(c.value("serviceAccount", "name") or _fullname(c))
    return str(c.value("serviceAccount", "name") or "default")


def _tls_certs_secret_name(c: Context) -> str:
    existing = c.value("tlsServerConfig", "existingSecret")
    if existing and "{{" in str(existing):
        raise ChartTemplateError("tlsServerConfig.existingSecret is a template: chart_objects does not evaluate `tpl`")
    return str(existing) if existing else f"{_fullname(c)}-tls"


def _web_config_config_map(c: Context) -> str:
    return f"{_fullname(c)}-web-config.yml"


# helper -> (its evaluation, sha256 of its define block in _helpers.tpl: the text from `{{- define` to the
# next define or comment). dcgm-exporter 4.8.2 (NVIDIA/dcgm-exporter 4.5.3-4.8.2 deployment/templates/_helpers.tpl).
HELPERS: dict[str, dict[str, tuple[Callable[[Context], str], str]]] = {
    "dcgm-exporter": {
        "name": (_name, "a88905fde42f3669efc912791a68569f7978662172d24e54cf15b9d81516e24c"),
        "fullname": (_fullname, "ec008dd1293257e019d0394c46022ef86a5b34f10179760e293f6cc1812f6e5e"),
        "namespace": (_namespace, "6af254dd22b61c67070efca4fb8b26a67500fefab980fa4409e7afd113464a39"),
        "serviceAccountName": (_service_account_name, "d6dc7624fa52a62bb8ce2fa7e29607d453e5d66a9ab09388f81088c5ab7639c5"),
        "tlsCertsSecretName": (_tls_certs_secret_name, "40b4e3cdc3992306afd303a224a87695590579027278bb11bd6482f67c19f517"),
        "webConfigConfigMap": (_web_config_config_map, "0f247e8593809d8b2ef499c360ba3d63fa6cb8e038989a9faf605d76dffc8870"),
    },
}

_DEFINE = re.compile(r'\{\{-? define "(?P<name>[^"]+)" -?\}\}')
_ACTION = re.compile(r"\{\{-?\s*\(?\s*include \"(?P<chart>[^\".]+)\.(?P<helper>[^\"]+)\" \.\s*\)?\s*-?\}\}")


def define_blocks(text: str) -> dict[str, str]:
    """_helpers.tpl's define blocks by name: from `{{- define` to the next define or `{{/*` comment."""
    starts = [(m.start(), m.group("name")) for m in _DEFINE.finditer(text)]
    blocks = {}
    for index, (start, name) in enumerate(starts):
        end = starts[index + 1][0] if index + 1 < len(starts) else len(text)
        comment = text.find("{{/*", start, end)
        blocks[name] = text[start : comment if comment != -1 else end].rstrip()
    return blocks


def block_digest(block: str) -> str:
    return hashlib.sha256(block.encode()).hexdigest()


def _checked_helpers(chart: str, version: str) -> dict[str, Callable[[Context], str]]:
    path = chart_dir(chart, version) / "templates" / "_helpers.tpl"
    blocks = define_blocks(path.read_text())
    helpers = {}
    for helper, (evaluate, digest) in HELPERS[chart].items():
        block = blocks.get(f"{chart}.{helper}")
        if block is None or block_digest(block) != digest:
            raise ChartTemplateError(
                f"{path.relative_to(chart_dir(chart, version).parent.parent)}: define {chart}.{helper} is not the one "
                "offline/chart_objects.py evaluates: review it and update HELPERS"
            )
        helpers[helper] = evaluate
    return helpers


def _metadata(document: str) -> tuple[str | None, dict[str, str]]:
    """The top-level kind and the metadata block's name and namespace lines of one template document."""
    kind, fields, in_metadata = None, {}, False
    for line in document.splitlines():
        if re.match(r"kind:\s", line):
            kind = line.split(":", 1)[1].strip()
        if line and not line[0].isspace() and not line.startswith("{{"):
            in_metadata = line.rstrip() == "metadata:"
            continue
        match = re.match(r"  (name|namespace):\s*(.*?)\s*$", line) if in_metadata else None
        if match:
            fields[match.group(1)] = match.group(2)
    return kind, fields


def _evaluate(expression: str, chart: str, helpers: Mapping[str, Callable[[Context], str]], context: Context, where: str) -> str:
    def call(match: re.Match[str]) -> str:
        if match.group("chart") != chart or match.group("helper") not in helpers:
            raise ChartTemplateError(f"{where}: {match.group(0)} is no helper chart_objects evaluates")
        return helpers[match.group("helper")](context)

    text = _ACTION.sub(call, expression)
    if "{{" in text:
        raise ChartTemplateError(f"{where}: {expression!r} names the object in a way chart_objects does not read")
    return text.strip("\"'")


def release_objects(release: Release) -> list[ObjectKey] | None:
    """The objects `release` creates; None when its chart's templates are not vendored."""
    chart = chart_key(release.chart)
    if chart is None or not CHART_SOURCES[chart].templates or not (chart_dir(chart, release.version) / "templates").is_dir():
        return None  # release_problems (offline/helm_values.py) reports a chart or version not vendored
    helpers = _checked_helpers(chart, release.version)
    name = str(chart_metadata(chart, release.version)["name"])
    context = Context(name, release.name, release.namespace, helm_merge(chart_values(chart, release.version), release.values))
    keys = []
    for path in sorted((chart_dir(chart, release.version) / "templates").glob("*.yaml")):
        for document in re.split(r"^---\s*$", path.read_text(), flags=re.M):
            kind, fields = _metadata(document)
            if kind is None:
                continue
            where = f"{chart}/{release.version}/templates/{path.name}"
            if "name" not in fields:
                raise ChartTemplateError(f"{where}: a {kind} without metadata.name")
            object_name = _evaluate(fields["name"], name, helpers, context, where)
            namespace = "" if kind in CLUSTER_SCOPED else (
                _evaluate(fields["namespace"], name, helpers, context, where) if "namespace" in fields else release.namespace
            )
            keys.append(ObjectKey(kind, namespace, object_name))
    return keys


def conflicts(releases: Mapping[str, Release], declared: Mapping[str, Iterable[ObjectKey]] = {}) -> list[str]:
    """One line per object two owners would create: `<owner>: <kind> <namespace/name>: <why>`.

    `releases` by the file the render writes each to (helm/<name>.yaml); `declared`: objects made outside
    Helm, by where they are written (manifests.yaml#<n>).
    """
    created: dict[str, list[ObjectKey]] = {file: list(keys) for file, keys in declared.items()}
    for file, release in releases.items():
        keys = release_objects(release)
        if keys is not None:
            created[file] = keys
    lines = []
    for key, owners in ownership_conflicts(created).items():
        owner = next(o for o in owners if o in releases)
        others = ", ".join(o for o in owners if o != owner)
        lines.append(
            f"{owner} {releases[owner].chart} {releases[owner].version}: {key}: {others} creates it too, and Helm "
            "refuses to install an object another owner has: give the releases distinct namespaces or names"
        )
    return lines
