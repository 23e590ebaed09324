"""Pod Security Standards as the PodSecurity admission plugin enforces them on a pod (kubernetes/kubernetes
v1.35.0, staging/src/k8s.io/pod-security-admission/policy/check_*.go, the checks of the `baseline` and
`restricted` levels; k8s.io/pod-security-admission v0.35.0 is the same code).

`violations(pod_spec, level, version)` returns one reason per failed check, worded as the plugin's
`forbidden reasons` (`privileged (container "x" must not set securityContext.privileged=true)`). Every
container counts: init and ephemeral containers too (policy/visitor.go, visitContainers). Enforcement
applies to pods: a Job or Deployment is accepted, and each pod its controller creates is refused.

The restricted checks tell a field left unset from one set wrong, as the Go code's nil pointers do: an
unset `allowPrivilegeEscalation` or `capabilities` fails as surely as a wrong one; an unset container
`runAsNonRoot` or `seccompProfile` falls back to the pod's, while a wrong pod-level value fails whatever
the containers set. Versioned checks (`VersionedCheck.MinimumVersion`) apply from their minor on:
Windows pods (`spec.os.name: windows`) skip allowPrivilegeEscalation, the restricted seccomp and the
restricted capabilities checks from 1.25; pods in a user namespace (`hostUsers: false`) skip runAsNonRoot
and runAsUser from 1.35 (policy/helpers.go relaxPolicyForUserNamespacePod).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

BASELINE, RESTRICTED = "baseline", "restricted"
LEVELS = ("privileged", BASELINE, RESTRICTED)
# The namespace labels PodSecurity enforces (pod-security-admission api/constants.go EnforceLevelLabel,
# EnforceVersionLabel); a version is `latest` or `v1.<minor>`.
ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"
ENFORCE_VERSION_LABEL = "pod-security.kubernetes.io/enforce-version"
LATEST = "latest"
# The minors from which the Windows and user-namespace exemptions apply.
WINDOWS_EXEMPT_FROM = (1, 25)
USER_NAMESPACE_EXEMPT_FROM = (1, 35)

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


def _baseline(pod: Mapping[str, Any], version: tuple[int, int] | None) -> dict[str, list[str]]:
    """Check ID (the policy package's) -> its reasons, empty when it passes."""
    found: dict[str, list[str]] = {}
    host = [f"{key}=true" for key in ("hostNetwork", "hostPID", "hostIPC") if pod.get(key)]
    found["hostNamespaces"] = [f"host namespaces ({', '.join(host)})"] if host else []
    found["privileged"] = _container_check(
        pod, lambda c: bool(_context(c).get("privileged")), "privileged", "must not set securityContext.privileged=true"
    )
    found["capabilities_baseline"] = _container_check(
        pod,
        lambda c: bool(set((_context(c).get("capabilities") or {}).get("add") or ()) - BASELINE_CAPABILITIES),
        "non-default capabilities",
        "must not include capabilities beyond the default set in securityContext.capabilities.add",
    )
    host_paths = [v["name"] for v in pod.get("volumes") or () if "hostPath" in v]
    found["hostPathVolumes"] = [f"hostPath volumes (volumes {_names(host_paths)})"] if host_paths else []
    found["hostPorts"] = _container_check(
        pod, lambda c: any(p.get("hostPort") for p in c.get("ports") or ()), "hostPort", "uses hostPort"
    )
    # check_procMount_baseline.go: from 1.35 a pod in a user namespace may unmask /proc.
    user_namespace = pod.get("hostUsers") is False and _from(version, USER_NAMESPACE_EXEMPT_FROM)
    found["procMount"] = [] if user_namespace else _proc_mount(pod)
    unconfined = (pod.get("securityContext") or {}).get("seccompProfile", {}).get("type") == "Unconfined" or any(
        (_context(c).get("seccompProfile") or {}).get("type") == "Unconfined" for c in containers(pod)
    )
    found["seccompProfile_baseline"] = (
        ["seccompProfile (must not set seccompProfile.type to \"Unconfined\")"] if unconfined else []
    )
    selinux = [pod.get("securityContext") or {}, *(_context(c) for c in containers(pod))]
    bad_selinux = any(
        (ctx.get("seLinuxOptions") or {}).get("type", "") not in SELINUX_TYPES
        or (ctx.get("seLinuxOptions") or {}).get("user")
        or (ctx.get("seLinuxOptions") or {}).get("role")
        for ctx in selinux
    )
    found["seLinuxOptions"] = ["seLinuxOptions (must not set a custom type, user or role)"] if bad_selinux else []
    sysctls = [s["name"] for s in (pod.get("securityContext") or {}).get("sysctls") or () if s["name"] not in SAFE_SYSCTLS]
    found["sysctls"] = [f"forbidden sysctls ({', '.join(sysctls)})"] if sysctls else []
    return found


def _proc_mount(pod: Mapping[str, Any]) -> list[str]:
    """procMount_1_0: any procMount but Default, unset passing."""
    return _container_check(
        pod, lambda c: _context(c).get("procMount", "Default") != "Default", "procMount", "must not set securityContext.procMount"
    )


# The baseline checks a restricted check replaces at the restricted level (each restricted check's
# OverrideCheckIDs): restrictedVolumes hostPath, the restricted seccomp and capabilities checks their
# baseline ones, procMount_restricted (from 1.35) the baseline procMount.
RESTRICTED_OVERRIDES = ("hostPathVolumes", "seccompProfile_baseline", "capabilities_baseline", "procMount")


def _restricted(pod: Mapping[str, Any], version: tuple[int, int] | None) -> list[str]:
    windows = (pod.get("os") or {}).get("name") == "windows" and _from(version, WINDOWS_EXEMPT_FROM)
    user_namespace = pod.get("hostUsers") is False and _from(version, USER_NAMESPACE_EXEMPT_FROM)
    found = _restricted_volumes(pod) + _proc_mount(pod)
    if not windows:
        # check_allowPrivilegeEscalation.go: nil securityContext, nil field or true all fail.
        found += _container_check(
            pod, lambda c: _context(c).get("allowPrivilegeEscalation") is not False, "allowPrivilegeEscalation != false",
            "must set securityContext.allowPrivilegeEscalation=false",
        )
    if not user_namespace:
        found += _run_as_non_root(pod) + _run_as_user(pod)
    if not windows:
        found += _seccomp_restricted(pod) + _capabilities_restricted(pod)
    return found


def _from(version: tuple[int, int] | None, minimum: tuple[int, int]) -> bool:
    return version is None or version >= minimum


def _restricted_volumes(pod: Mapping[str, Any]) -> list[str]:
    """check_restrictedVolumes.go; at restricted it replaces the baseline hostPath check (OverrideCheckIDs)."""
    bad = [v for v in pod.get("volumes") or () if not (set(v) - _VOLUME_META) <= RESTRICTED_VOLUMES]
    if not bad:
        return []
    types = sorted({next(iter(set(v) - _VOLUME_META), "unknown") for v in bad})
    volumes, uses = ("volume", "uses") if len(bad) == 1 else ("volumes", "use")
    kinds = "restricted volume type" if len(types) == 1 else "restricted volume types"
    return [f"restricted volume types ({volumes} {_names([v['name'] for v in bad])} {uses} {kinds} {_names(types)})"]


def _explicit_then_implicit(
    pod_setting: Any, settings: list[tuple[str, Any]], bad: Callable[[Any], bool], reason: str, wrong: str, unset: str
) -> list[str]:
    """The shape runAsNonRoot and seccompProfile share: a pod-level value set wrong, or a container's, fails
    first; then each container that sets nothing, unless the pod sets a good value."""
    setters = ["pod"] if pod_setting is not None and bad(pod_setting) else []
    explicit = [name for name, value in settings if value is not None and bad(value)]
    if explicit:
        setters.append(f"{'container' if len(explicit) == 1 else 'containers'} {_names(explicit)}")
    if setters:
        return [f"{reason} ({' and '.join(setters)} {wrong})"]
    pod_good = pod_setting is not None
    implicit = [name for name, value in settings if value is None and not pod_good]
    if implicit:
        return [f"{reason} (pod or {'container' if len(implicit) == 1 else 'containers'} {_names(implicit)} {unset})"]
    return []


def _run_as_non_root(pod: Mapping[str, Any]) -> list[str]:
    """check_runAsNonRoot.go runAsNonRoot1_0."""
    return _explicit_then_implicit(
        (pod.get("securityContext") or {}).get("runAsNonRoot"),
        [(c["name"], _context(c).get("runAsNonRoot")) for c in containers(pod)],
        lambda value: value is not True,
        "runAsNonRoot != true",
        "must not set securityContext.runAsNonRoot=false",
        "must set securityContext.runAsNonRoot=true",
    )


def _run_as_user(pod: Mapping[str, Any]) -> list[str]:
    """check_runAsUser.go runAsUser1_23: only an explicit 0 fails; unset is left to runAsNonRoot."""
    setters = ["pod"] if (pod.get("securityContext") or {}).get("runAsUser") == 0 else []
    bad = [c["name"] for c in containers(pod) if _context(c).get("runAsUser") == 0]
    if bad:
        setters.append(f"{'container' if len(bad) == 1 else 'containers'} {_names(bad)}")
    return [f"runAsUser=0 ({' and '.join(setters)} must not set runAsUser=0)"] if setters else []


def _seccomp_restricted(pod: Mapping[str, Any]) -> list[str]:
    """check_seccompProfile_restricted.go seccompProfileRestricted_1_19."""
    allowed = ("RuntimeDefault", "Localhost")

    def profile_type(context: Mapping[str, Any]) -> str | None:
        profile = context.get("seccompProfile")
        return None if profile is None else profile.get("type", "")

    pod_type = profile_type(pod.get("securityContext") or {})
    settings = [(c["name"], profile_type(_context(c))) for c in containers(pod)]
    bad_values = sorted({t for t in (pod_type, *(t for _, t in settings)) if t is not None and t not in allowed})
    return _explicit_then_implicit(
        pod_type, settings, lambda value: value not in allowed, "seccompProfile",
        f"must not set securityContext.seccompProfile.type to {_names(bad_values)}",
        'must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"',
    )


def _capabilities_restricted(pod: Mapping[str, Any]) -> list[str]:
    """check_capabilities_restricted.go capabilitiesRestricted_1_22: drop must name ALL; add at most
    NET_BIND_SERVICE; a container without capabilities fails the first."""
    missing, adding, forbidden = [], [], set()
    for c in containers(pod):
        capabilities = _context(c).get("capabilities")
        if capabilities is None:
            missing.append(c["name"])
            continue
        if "ALL" not in (capabilities.get("drop") or ()):
            missing.append(c["name"])
        extra = set(capabilities.get("add") or ()) - {"NET_BIND_SERVICE"}
        if extra:
            adding.append(c["name"])
            forbidden |= extra
    details = []
    if missing:
        details.append(f"{'container' if len(missing) == 1 else 'containers'} {_names(missing)} "
                       'must set securityContext.capabilities.drop=["ALL"]')
    if adding:
        details.append(f"{'container' if len(adding) == 1 else 'containers'} {_names(adding)} "
                       f"must not include {_names(sorted(forbidden))} in securityContext.capabilities.add")
    return [f"unrestricted capabilities ({'; '.join(details)})"] if details else []


def violations(pod: Mapping[str, Any], level: str, version: str = LATEST) -> list[str]:
    """Why PodSecurity at `level` and `version` (`latest`, `v1.35`) refuses a pod with this spec; empty when
    it admits it."""
    if level not in LEVELS:
        raise ValueError(f"{level!r} is not a Pod Security level ({', '.join(LEVELS)})")
    if level == "privileged":
        return []
    minor = _minor(version)
    baseline = _baseline(pod, minor)
    if level == BASELINE:
        return [reason for reasons in baseline.values() for reason in reasons]
    kept = [reason for check, reasons in baseline.items() if check not in RESTRICTED_OVERRIDES for reason in reasons]
    return kept + _restricted(pod, minor)


def _minor(version: str) -> tuple[int, int] | None:
    """`latest` -> None (every check at its newest), `v1.35` -> (1, 35)."""
    if version == LATEST:
        return None
    major, _, minor = version.removeprefix("v").partition(".")
    if not (major.isdigit() and minor.isdigit()):
        raise ValueError(f"{version!r} is not a Pod Security version (latest, or v<major>.<minor> such as v1.35)")
    return int(major), int(minor)
