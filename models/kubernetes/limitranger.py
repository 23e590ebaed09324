"""The LimitRanger admission plugin's container defaults.

kubernetes/kubernetes v1.35.0 plugin/pkg/admission/limitranger/admission.go `defaultContainerResourceRequirements`
and `mergeContainerResources`: for each `type: Container` limit, a container's missing requests come from
`defaultRequest` and its missing limits from `default`; what the container sets is kept.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any


def with_container_defaults(objects: Sequence[Mapping[str, Any]], pod: Mapping[str, Any], namespace: str) -> dict[str, Any]:
    """`pod` after the LimitRanger: each container's missing requests and limits from the namespace's defaults."""
    defaulted: dict[str, Any] = json.loads(json.dumps(pod))
    for limit_range in (o for o in objects if o["kind"] == "LimitRange" and o["metadata"]["namespace"] == namespace):
        for item in limit_range["spec"]["limits"]:
            if item["type"] != "Container":
                continue
            for container in defaulted["spec"]["containers"]:
                resources = container.setdefault("resources", {})
                for key, defaults in (("requests", item.get("defaultRequest", {})), ("limits", item.get("default", {}))):
                    for name, value in defaults.items():
                        resources.setdefault(key, {}).setdefault(name, value)
    return defaulted
