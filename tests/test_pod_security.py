"""Pod Security Standards (models/kubernetes/podsecurity.py): each check refuses its case and admits the
compliant pod, at the level that owns it; a baseline namespace admits what only restricted refuses."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from models.kubernetes.podsecurity import violations

# A pod the restricted level admits.
COMPLIANT: dict[str, Any] = {
    "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
    "containers": [
        {
            "name": "main",
            "image": "busybox:1.37",
            "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
        }
    ],
    "volumes": [{"name": "scratch", "emptyDir": {}}],
}


def changed(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    pod = copy.deepcopy(COMPLIANT)
    node: Any = pod
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return pod


C = ("containers", 0, "securityContext")
# (case, changed path, value, the level that refuses it, the reason's start)
CASES = [
    ("host network", ("hostNetwork",), True, "baseline", "host namespaces (hostNetwork=true)"),
    ("privileged", (*C, "privileged"), True, "baseline", 'privileged (container "main"'),
    ("SYS_ADMIN added", (*C, "capabilities"), {"drop": ["ALL"], "add": ["SYS_ADMIN"]}, "baseline", "non-default capabilities"),
    ("hostPath volume", ("volumes",), [{"name": "host", "hostPath": {"path": "/"}}], "baseline",
     'hostPath volumes (volumes "host")'),
    ("host port", ("containers", 0, "ports"), [{"containerPort": 80, "hostPort": 80}], "baseline", 'hostPort (container "main"'),
    ("seccomp unconfined", ("securityContext", "seccompProfile"), {"type": "Unconfined"}, "baseline", "seccompProfile"),
    ("unsafe sysctl", ("securityContext", "sysctls"), [{"name": "kernel.msgmax", "value": "1"}], "baseline",
     "forbidden sysctls (kernel.msgmax)"),
    ("privilege escalation", (*C, "allowPrivilegeEscalation"), True, "restricted", "allowPrivilegeEscalation != false"),
    ("root allowed", ("securityContext", "runAsNonRoot"), False, "restricted", "runAsNonRoot != true"),
    ("runs as root", ("securityContext", "runAsUser"), 0, "restricted", "runAsUser=0"),
    ("capabilities kept", (*C, "capabilities"), {}, "restricted", "unrestricted capabilities"),
    ("NFS volume", ("volumes",), [{"name": "nfs", "nfs": {"server": "a", "path": "/"}}], "restricted",
     'restricted volume types (volumes "nfs")'),
]


def test_the_compliant_pod_is_admitted_at_every_level():
    assert [violations(COMPLIANT, level) for level in ("privileged", "baseline", "restricted")] == [[], [], []]


@pytest.mark.parametrize("path, value, level, reason", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_check_refuses_at_its_level_and_no_lower(path, value, level, reason):
    pod = changed(path, value)
    [found] = violations(pod, level)
    assert found.startswith(reason)
    if level == "restricted":
        assert violations(pod, "baseline") == []
    assert violations(pod, "privileged") == []
