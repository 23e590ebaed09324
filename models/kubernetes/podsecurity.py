"""Pod Security Standards as the PodSecurity admission plugin enforces them on a pod (kubernetes/kubernetes
v1.35.0, staging/src/k8s.io/pod-security-admission/policy/check_*.go, the checks of the `baseline` and
`restricted` levels at version `latest`).

`violations(pod_spec, level)` returns one reason per failed check, worded as the plugin's
`forbidden reasons` (`privileged (container "x" must not set securityContext.privileged=true)`). Every
container counts: init and ephemeral containers too (policy/visitor.go, visitContainers). Enforcement
applies to pods: a Job or Deployment is accepted, and each pod its controller creates is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

BASELINE, RESTRICTED = "baseline", "restricted"
LEVELS = ("privileged", BASELINE, RESTRICTED)
# The namespace label PodSecurity enforces (pod-security-admission api/constants.go EnforceLevelLabel).
ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"

# check_capabilities_baseline.go: capabilities a baseline pod may add.
BASELINE_CAPABILITIES = frozenset({
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE", "SETFCAP",
    "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
})
# check_seLinuxOptions.go: the SELinux types a baseline pod may set.
SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"})
# check_sysctls.go: the safe sysctls (the latest version's list).
SAFE_SYSCTLS = frozenset({
    "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem",
})
# check_restrictedVolumes.go: the volume sources a restricted pod may use.
RESTRICTED_VOLUMES = frozenset({
    "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret", "image",
})
_VOLUME_META = frozenset({"name"})


def containers(pod: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for key in ("initContainers", "containers", "ephemeralContainers"):
        yield from pod.get(key) or ()


def _context(container: Mapping[str, Any]) -> Mapping[str, Any]:
    return container.get("securityContext") or {}


def _names(found: list[str]) -> str:
    return ", ".join(f'"{name}"' for name in found)


def _container_check(
    pod: Mapping[str, Any], failing: Callable[[Mapping[str, Any]], bool], check: str, what: str
) -> list[str]:
    bad = [c["name"] for c in containers(pod) if failing(c)]
    if not bad:
        return []
    noun = "container" if len(bad) == 1 else "containers"
    return [f"{check} ({noun} {_names(bad)} {what})"]


def _baseline(pod: Mapping[str, Any]) -> list[str]:
    found: list[str] = []
    host = [f"{key}=true" for key in ("hostNetwork", "hostPID", "hostIPC") if pod.get(key)]
    if host:
        found.append(f"host namespaces ({', '.join(host)})")
    found += _container_check(
        pod, lambda c: bool(_context(c).get("privileged")), "privileged", "must not set securityContext.privileged=true"
    )
    found += _container_check(
        pod,
        lambda c: bool(set((_context(c).get("capabilities") or {}).get("add") or ()) - BASELINE_CAPABILITIES),
        "non-default capabilities",
        "must not include capabilities beyond the default set in securityContext.capabilities.add",
    )
    host_paths = [v["name"] for v in pod.get("volumes") or () if "hostPath" in v]
    if host_paths:
        found.append(f"hostPath volumes (volumes {_names(host_paths)})")
    found += _container_check(
        pod, lambda c: any(p.get("hostPort") for p in c.get("ports") or ()), "hostPort", "uses hostPort"
    )
    found += _container_check(
        pod, lambda c: _context(c).get("procMount", "Default") != "Default", "procMount", "must not set securityContext.procMount"
    )
    unconfined = (pod.get("securityContext") or {}).get("seccompProfile", {}).get("type") == "Unconfined" or any(
        (_context(c).get("seccompProfile") or {}).get("type") == "Unconfined" for c in containers(pod)
    )
    if unconfined:
        found.append("seccompProfile (must not set seccompProfile.type to \"Unconfined\")")
    selinux = [pod.get("securityContext") or {}, *(_context(c) for c in containers(pod))]
    if any(
        (ctx.get("seLinuxOptions") or {}).get("type", "") not in SELINUX_TYPES
        or (ctx.get("seLinuxOptions") or {}).get("user")
        or (ctx.get("seLinuxOptions") or {}).get("role")
        for ctx in selinux
    ):
        found.append("seLinuxOptions (must not set a custom type, user or role)")
    sysctls = [s["name"] for s in (pod.get("securityContext") or {}).get("sysctls") or () if s["name"] not in SAFE_SYSCTLS]
    if sysctls:
        found.append(f"forbidden sysctls ({', '.join(sysctls)})")
    return found


def _restricted(pod: Mapping[str, Any]) -> list[str]:
    found: list[str] = []
    volumes = [
        v["name"] for v in pod.get("volumes") or ()
        if not (set(v) - _VOLUME_META) <= RESTRICTED_VOLUMES and "hostPath" not in v
    ]
    if volumes:
        found.append(f"restricted volume types (volumes {_names(volumes)})")
    found += _container_check(
        pod, lambda c: _context(c).get("allowPrivilegeEscalation") is not False, "allowPrivilegeEscalation != false",
        "must set securityContext.allowPrivilegeEscalation=false",
    )
    pod_context = pod.get("securityContext") or {}
    found += _container_check(
        pod,
        lambda c: not _context(c).get("runAsNonRoot", pod_context.get("runAsNonRoot", False)),
        "runAsNonRoot != true",
        "must set securityContext.runAsNonRoot=true (on the pod or the container)",
    )
    if pod_context.get("runAsUser") == 0:
        found.append("runAsUser=0 (pod must not set runAsUser=0)")
    found += _container_check(pod, lambda c: _context(c).get("runAsUser") == 0, "runAsUser=0", "must not set runAsUser=0")
    allowed = ("RuntimeDefault", "Localhost")
    pod_seccomp = (pod_context.get("seccompProfile") or {}).get("type")
    found += _container_check(
        pod,
        lambda c: (_context(c).get("seccompProfile") or {}).get("type", pod_seccomp) not in allowed,
        "seccompProfile",
        'must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost" (on the pod or the container)',
    )
    found += _container_check(
        pod,
        lambda c: "ALL" not in ((_context(c).get("capabilities") or {}).get("drop") or ()),
        "unrestricted capabilities",
        'must set securityContext.capabilities.drop=["ALL"]',
    )
    found += _container_check(
        pod,
        lambda c: bool(set((_context(c).get("capabilities") or {}).get("add") or ()) - {"NET_BIND_SERVICE"}),
        "unrestricted capabilities",
        "must not add capabilities beyond NET_BIND_SERVICE",
    )
    return found


def violations(pod: Mapping[str, Any], level: str) -> list[str]:
    """Why PodSecurity at `level` refuses a pod with this spec; empty when it admits it."""
    if level not in LEVELS:
        raise ValueError(f"{level!r} is not a Pod Security level ({', '.join(LEVELS)})")
    if level == "privileged":
        return []
    return _baseline(pod) + (_restricted(pod) if level == RESTRICTED else [])
