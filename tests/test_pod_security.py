"""Pod Security Standards (models/kubernetes/podsecurity.py): each check refuses its case and admits the
compliant pod, at the level that owns it; a baseline namespace admits what only restricted refuses; each
restricted field unset, set wrong and set right, at the pod and the container, as
k8s.io/pod-security-admission v0.35.0 policy/check_*.go judges them."""

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
     'restricted volume types (volume "nfs" uses restricted volume type "nfs")'),
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


# --- each restricted field: unset, wrong, right --------------------------------------------------------

APE = 'allowPrivilegeEscalation != false (container "main" must set securityContext.allowPrivilegeEscalation=false)'
NON_ROOT_UNSET = 'runAsNonRoot != true (pod or container "main" must set securityContext.runAsNonRoot=true)'
SECCOMP_UNSET = (
    'seccompProfile (pod or container "main" must set securityContext.seccompProfile.type to "RuntimeDefault" '
    'or "Localhost")'
)
DROP_ALL = 'unrestricted capabilities (container "main" must set securityContext.capabilities.drop=["ALL"])'


def edited(pod_context: dict[str, Any] | None, container_context: dict[str, Any] | None, **spec: Any) -> dict[str, Any]:
    """COMPLIANT with the pod's and the container's securityContext replaced (None: removed), and `spec` added."""
    pod = copy.deepcopy(COMPLIANT)
    for holder, context in ((pod, pod_context), (pod["containers"][0], container_context)):
        holder.pop("securityContext")
        if context is not None:
            holder["securityContext"] = context
    pod.update(spec)
    return pod


GOOD_POD = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
GOOD_CONTAINER = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
# (case, pod securityContext, container securityContext, the restricted level's reasons)
RESTRICTED_FIELDS = [
    ("allowPrivilegeEscalation unset", GOOD_POD, {"capabilities": {"drop": ["ALL"]}}, [APE]),
    ("allowPrivilegeEscalation true", GOOD_POD, {**GOOD_CONTAINER, "allowPrivilegeEscalation": True}, [APE]),
    ("container securityContext unset", GOOD_POD, None, [APE, DROP_ALL]),
    ("runAsNonRoot unset on both", {"seccompProfile": {"type": "RuntimeDefault"}}, GOOD_CONTAINER, [NON_ROOT_UNSET]),
    ("runAsNonRoot on the container only", {"seccompProfile": {"type": "RuntimeDefault"}},
     {**GOOD_CONTAINER, "runAsNonRoot": True}, []),
    ("runAsNonRoot false on the container", GOOD_POD, {**GOOD_CONTAINER, "runAsNonRoot": False},
     ['runAsNonRoot != true (container "main" must not set securityContext.runAsNonRoot=false)']),
    ("runAsNonRoot false on the pod, true on the container", {**GOOD_POD, "runAsNonRoot": False},
     {**GOOD_CONTAINER, "runAsNonRoot": True}, ["runAsNonRoot != true (pod must not set securityContext.runAsNonRoot=false)"]),
    ("runAsUser unset", GOOD_POD, GOOD_CONTAINER, []),
    ("runAsUser 0 on the pod", {**GOOD_POD, "runAsUser": 0}, GOOD_CONTAINER, ["runAsUser=0 (pod must not set runAsUser=0)"]),
    ("runAsUser 0 on both", {**GOOD_POD, "runAsUser": 0}, {**GOOD_CONTAINER, "runAsUser": 0},
     ['runAsUser=0 (pod and container "main" must not set runAsUser=0)']),
    ("runAsUser 1000", {**GOOD_POD, "runAsUser": 1000}, GOOD_CONTAINER, []),
    ("seccompProfile unset on both", {"runAsNonRoot": True}, GOOD_CONTAINER, [SECCOMP_UNSET]),
    ("seccompProfile on the container only", {"runAsNonRoot": True},
     {**GOOD_CONTAINER, "seccompProfile": {"type": "Localhost", "localhostProfile": "p.json"}}, []),
    ("seccompProfile Unconfined on the pod, RuntimeDefault on the container",
     {**GOOD_POD, "seccompProfile": {"type": "Unconfined"}}, {**GOOD_CONTAINER, "seccompProfile": {"type": "RuntimeDefault"}},
     ['seccompProfile (pod must not set securityContext.seccompProfile.type to "Unconfined")']),
    ("seccompProfile Unconfined on the container", GOOD_POD, {**GOOD_CONTAINER, "seccompProfile": {"type": "Unconfined"}},
     ['seccompProfile (container "main" must not set securityContext.seccompProfile.type to "Unconfined")']),
    ("capabilities unset", GOOD_POD, {"allowPrivilegeEscalation": False}, [DROP_ALL]),
    ("capabilities drop empty", GOOD_POD, {**GOOD_CONTAINER, "capabilities": {"drop": []}}, [DROP_ALL]),
    ("capabilities drop all in lower case", GOOD_POD, {**GOOD_CONTAINER, "capabilities": {"drop": ["all"]}}, [DROP_ALL]),
    ("capabilities add NET_BIND_SERVICE", GOOD_POD,
     {**GOOD_CONTAINER, "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}, []),
    ("capabilities add SYS_TIME", GOOD_POD,
     {**GOOD_CONTAINER, "capabilities": {"drop": ["ALL"], "add": ["SYS_TIME", "NET_BIND_SERVICE"]}},
     ['unrestricted capabilities (container "main" must not include "SYS_TIME" in securityContext.capabilities.add)']),
    ("procMount unset", GOOD_POD, GOOD_CONTAINER, []),
    ("procMount Unmasked", GOOD_POD, {**GOOD_CONTAINER, "procMount": "Unmasked"},
     ['procMount (container "main" must not set securityContext.procMount)']),
]


@pytest.mark.parametrize("pod_context, container_context, reasons", [c[1:] for c in RESTRICTED_FIELDS],
                         ids=[c[0] for c in RESTRICTED_FIELDS])
def test_each_restricted_field_unset_wrong_and_right(pod_context, container_context, reasons):
    assert violations(edited(pod_context, container_context), "restricted") == reasons


def test_an_unset_field_in_an_init_or_ephemeral_container_counts_too():
    pod = copy.deepcopy(COMPLIANT)
    pod["initContainers"] = [{"name": "init", "image": "busybox:1.37", "securityContext": {"capabilities": {"drop": ["ALL"]}}}]
    pod["ephemeralContainers"] = [{"name": "debug", "image": "busybox:1.37", "securityContext": dict(GOOD_CONTAINER)}]
    assert violations(pod, "restricted") == [
        'allowPrivilegeEscalation != false (container "init" must set securityContext.allowPrivilegeEscalation=false)'
    ]
    pod["ephemeralContainers"][0]["securityContext"] = {"allowPrivilegeEscalation": False}
    assert violations(pod, "restricted")[1] == (
        'unrestricted capabilities (container "debug" must set securityContext.capabilities.drop=["ALL"])'
    )


def test_a_host_path_at_restricted_is_a_restricted_volume_type_and_at_baseline_a_host_path():
    pod = edited(GOOD_POD, GOOD_CONTAINER, volumes=[{"name": "host", "hostPath": {"path": "/"}}])
    assert violations(pod, "restricted") == ['restricted volume types (volume "host" uses restricted volume type "hostPath")']
    assert violations(pod, "baseline") == ['hostPath volumes (volumes "host")']


def test_a_user_namespace_pod_needs_no_run_as_non_root_from_1_35():
    pod = edited({"seccompProfile": {"type": "RuntimeDefault"}, "runAsUser": 0}, GOOD_CONTAINER, hostUsers=False)
    assert violations(pod, "restricted") == []
    assert violations(pod, "restricted", "v1.35") == []
    assert violations(pod, "restricted", "v1.34") == [NON_ROOT_UNSET, "runAsUser=0 (pod must not set runAsUser=0)"]
    assert violations({**pod, "hostUsers": True}, "restricted") == [NON_ROOT_UNSET, "runAsUser=0 (pod must not set runAsUser=0)"]


def test_a_user_namespace_pod_may_unmask_proc_at_baseline_from_1_35_and_never_at_restricted():
    pod = edited(GOOD_POD, {**GOOD_CONTAINER, "procMount": "Unmasked"}, hostUsers=False)
    unmasked = 'procMount (container "main" must not set securityContext.procMount)'
    assert violations(pod, "baseline") == []
    assert violations(pod, "baseline", "v1.34") == [unmasked]
    assert violations(pod, "restricted") == [unmasked]


def test_a_windows_pod_skips_the_linux_only_restricted_checks_from_1_25():
    pod = edited({"runAsNonRoot": True}, {}, os={"name": "windows"})
    assert violations(pod, "restricted") == []
    assert violations(pod, "restricted", "v1.24") == [APE, SECCOMP_UNSET, DROP_ALL]
    assert violations({**pod, "os": {"name": "linux"}}, "restricted") == [APE, SECCOMP_UNSET, DROP_ALL]


def test_a_version_that_is_neither_latest_nor_a_minor_is_refused():
    with pytest.raises(ValueError, match=r"v1\.35"):
        violations(COMPLIANT, "restricted", "1.35-ish")
