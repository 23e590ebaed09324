"""Write a recording as the render: manifests, Helm releases, the full plan, and a summary."""

from __future__ import annotations

import functools
import io
import json
import shutil
from pathlib import Path
from typing import Any

import yaml

from config import PlatformConfig

from .engine import Recording
from .summary import render_summary

HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
# Objects a cluster needs before others can exist go first, as `kubectl apply -f` would need them.
_KIND_ORDER = {"Namespace": 0, "CustomResourceDefinition": 1, "PriorityClass": 2, "StorageClass": 3}


# Left in the output directory by a render that failed, with the reason (offline/__main__.py).
FAILED_MARKER = "RENDER_FAILED.txt"


def clear_render(out_dir: Path) -> None:
    """Remove a render's files from `out_dir` (and a failed render's marker), leaving anything else."""
    for stale in ("manifests.yaml", "plan.json", "summary.md", FAILED_MARKER):
        (out_dir / stale).unlink(missing_ok=True)
    shutil.rmtree(out_dir / "helm", ignore_errors=True)


def write_render(recording: Recording, config: PlatformConfig, out_dir: Path) -> list[Path]:
    """Replace `out_dir`'s render with this one; return the files written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    clear_render(out_dir)

    written = [out_dir / "manifests.yaml", out_dir / "plan.json", out_dir / "summary.md"]
    written[0].write_text(manifests_yaml(recording))
    written[1].write_text(json.dumps([r.as_plan_entry() for r in recording.resources], indent=2, sort_keys=True) + "\n")
    written[2].write_text(render_summary(recording, config))

    releases = helm_releases(recording)
    if releases:
        (out_dir / "helm").mkdir()
    for release in releases:
        path = out_dir / "helm" / f"{release['name']}.yaml"
        path.write_text(_dump(release))
        written.append(path)
    return written


def kubernetes_objects(recording: Recording) -> list[dict[str, Any]]:
    """Every Kubernetes object the program declares, in apply order."""
    objects = [
        r.inputs
        for r in recording.resources
        if r.custom and r.type.startswith("kubernetes:") and r.type != HELM_RELEASE
    ]
    return sorted(objects, key=_object_order)


def helm_releases(recording: Recording) -> list[dict[str, Any]]:
    releases = []
    for r in recording.by_type(HELM_RELEASE):
        inputs = r.inputs
        releases.append(
            {
                "name": inputs.get("name", r.name),
                "namespace": inputs.get("namespace", "default"),
                "chart": inputs.get("chart"),
                "repository": (inputs.get("repositoryOpts") or {}).get("repo", ""),
                "version": inputs.get("version"),
                "values": inputs.get("values", {}),
            }
        )
    return sorted(releases, key=lambda release: release["name"])


def manifests_yaml(recording: Recording) -> str:
    return "".join(f"---\n{_dump(obj)}" for obj in kubernetes_objects(recording))



def _object_order(obj: dict[str, Any]) -> tuple[int, str, str, str]:
    metadata = obj.get("metadata") or {}
    kind = obj.get("kind", "")
    return (_KIND_ORDER.get(kind, 9), kind, metadata.get("namespace", ""), metadata.get("name", ""))


def _dump(document: Any) -> str:
    return yaml.dump(document, Dumper=_Dumper, sort_keys=True, default_flow_style=False, width=120)


class _Dumper(yaml.SafeDumper):
    """`yaml.safe_dump`'s dumper, the same bytes, with what it works out per scalar remembered across documents.

    A render writes the same keys and values (`name`, `app.kubernetes.io/...`, images) thousands of times, and the
    emitter's analysis of a scalar (which styles can hold it) and the resolver's implicit tag of a plain one are
    pure functions of the text: the cached answers are the ones the dumper works out each time without them.
    """

    def analyze_scalar(self, scalar: str) -> Any:
        return _analysis(scalar, bool(self.allow_unicode))

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is yaml.ScalarNode and not self.yaml_path_resolvers:
            return _scalar_tag(value, implicit)
        return super().resolve(kind, value, implicit)


# Plain SafeDumpers (no stream is written) whose own methods give the answers `_Dumper` remembers.
_ASKED = {flag: yaml.SafeDumper(io.StringIO(), allow_unicode=flag) for flag in (False, True)}


@functools.lru_cache(maxsize=1 << 16)
def _analysis(scalar: str, allow_unicode: bool) -> Any:
    return _ASKED[allow_unicode].analyze_scalar(scalar)


@functools.lru_cache(maxsize=1 << 16)
def _scalar_tag(value: str, implicit: tuple[bool, bool]) -> Any:
    return _ASKED[False].resolve(yaml.ScalarNode, value, implicit)
