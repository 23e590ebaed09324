"""What the checker asks of each string (and enumerated number), as JSON Schema keywords for editors.

The models check strings in validators, which pydantic cannot put into a JSON Schema. Each rule here
gives the schema the same pattern or list of values the validator uses: the compiled regexes and the
tables are imported from the models, not copied, so an editor flags a mistake as `make check` does.
`tests/test_schema_mistakes.py` holds every rule to a mistake both refuse. Rules across keys (a quota
against its pool, a flavor a tenant names) remain `make check`'s alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from . import autoscaling, cluster, monitoring, node_pools, supply_chain, tenants, versions
from .catalog import CPU_FAMILIES, FAMILIES, INSTANCE_TYPES
from .system_capacity import INSTANCE_SHAPES

Where = Literal["self", "items", "values", "keys"]


@dataclass(frozen=True)
class StringRule:
    """JSON Schema keywords for one property of one model's schema: on its value, its list's items, its
    map's values or its map's keys."""

    model: str
    prop: str
    keywords: dict[str, Any]
    where: Where = "self"
    extra: dict[str, Any] = field(default_factory=dict)  # keywords for the property itself (uniqueItems, maxProperties)

    def apply(self, defs: dict[str, Any]) -> None:
        prop = defs[self.model]["properties"][self.prop]
        # `X | None`: the rule is for X.
        target = next((o for o in prop.get("anyOf", []) if o != {"type": "null"}), prop)
        target.update(self.extra)
        if self.where == "items":
            target = target["items"]
        elif self.where == "values":
            target = target["additionalProperties"]
        elif self.where == "keys":
            target = target.setdefault("propertyNames", {})
        target.update(self.keywords)


def _pattern(regex: re.Pattern[str]) -> dict[str, str]:
    return {"pattern": regex.pattern}


def _enum(values: Iterable[Any]) -> dict[str, list[Any]]:
    return {"enum": sorted(values)}


def _ipv4_cidr(prefixes: str) -> dict[str, str]:
    octet = r"(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
    return {"pattern": rf"^({octet}\.){{3}}{octet}/({prefixes})$"}


def _not_reserved_tag_key() -> dict[str, Any]:
    """Tag keys others own (cluster.RESERVED_TAG_*), refused whatever their case, as the checker does for prefixes."""
    prefixes = "|".join(
        "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else _literal(c) for c in prefix)
        for prefix in cluster.RESERVED_TAG_PREFIXES
    )
    keys = "|".join(_literal(key) for key in cluster.RESERVED_TAG_KEYS)
    return {"minLength": 1, "maxLength": 128, "pattern": rf"^(?!({prefixes})|({keys})$)"}


def _literal(text: str) -> str:
    """`text` matched literally, escaping only what is special in both Python's and ECMAScript's regexes (which
    editors and check-jsonschema use, and where an escaped `-` outside a class is an error)."""
    return re.sub(r"([.^$*+?()\[\]{}|\\])", r"\\\1", text)


def _duration(allow_never: bool) -> dict[str, str]:
    body = node_pools._DURATION.pattern.removeprefix("^").removesuffix("$")
    return {"pattern": f"^({body}{'|Never' if allow_never else ''})$"}


def _kubernetes_versions() -> dict[str, list[Any]]:
    """The versions as text, and as the YAML number each is read as when unquoted, if that number prints back as the
    version (1.35 does; 1.30 reads as 1.3, which the checker refuses)."""
    numbers = [float(v) for v in versions.KUBERNETES_VERSIONS if str(float(v)) == v]
    return {"enum": [*versions.KUBERNETES_VERSIONS, *numbers]}


_DNS_LABEL = _pattern(tenants._DNS_LABEL)
_MIG_PROFILES = sorted({name for t in INSTANCE_TYPES.values() for name in t.gpu.mig_profiles})
_RETENTION_DAYS = _enum(cluster._LOG_RETENTION_DAYS)
_UNIQUE = {"uniqueItems": True}

STRING_RULES: tuple[StringRule, ...] = (
    # cluster
    StringRule("ClusterConfig", "name", _pattern(cluster._CLUSTER_NAME)),
    StringRule("ClusterConfig", "kubernetesVersion", {**_kubernetes_versions(), "type": ["string", "number"]}),
    StringRule("ClusterConfig", "admins", _pattern(cluster._PRINCIPAL_ARN), "items", _UNIQUE),
    StringRule("ClusterConfig", "creator", _pattern(cluster._PRINCIPAL_ARN)),
    StringRule("ClusterConfig", "tags", _not_reserved_tag_key(), "keys", {"maxProperties": cluster.MAX_STACK_TAGS}),
    StringRule("NetworkConfig", "vpcCidr", _ipv4_cidr("1[6-9]|20")),
    StringRule("EndpointConfig", "publicAccessCidrs", _ipv4_cidr("1[6-9]|2[0-9]|3[0-2]"), "items", _UNIQUE),
    StringRule("SystemNodesConfig", "instanceTypes", _enum(INSTANCE_SHAPES), "items", _UNIQUE),
    StringRule("LoggingConfig", "retentionDays", _RETENTION_DAYS),
    StringRule("FlowLogsConfig", "retentionDays", _RETENTION_DAYS),
    # GPU pools
    StringRule("NodePoolConfig", "name", _pattern(node_pools._DNS_LABEL)),
    StringRule("NodePoolConfig", "instanceTypes", _enum(INSTANCE_TYPES), "items", _UNIQUE),
    StringRule("NodePoolConfig", "instanceFamilies", _enum(FAMILIES), "items", _UNIQUE),
    StringRule("NodePoolConfig", "capacityTypes", {}, "items", _UNIQUE),
    StringRule("NodePoolConfig", "amiVersion", _pattern(node_pools._AMI_VERSION)),
    StringRule("NodePoolConfig", "expireAfter", _duration(allow_never=True)),
    StringRule("NodePoolConfig", "terminationGracePeriod", _duration(allow_never=False)),
    StringRule("DisruptionConfig", "consolidateAfter", _duration(allow_never=True)),
    StringRule("BudgetConfig", "nodes", _pattern(node_pools._BUDGET_NODES)),
    StringRule("BudgetConfig", "schedule", _pattern(node_pools._CRON)),
    StringRule("BudgetConfig", "duration", _pattern(node_pools._BUDGET_DURATION)),
    StringRule("CapacityReservationConfig", "id", _pattern(node_pools._RESERVATION_ID)),
    StringRule("CapacityReservationConfig", "ownerID", _pattern(node_pools._ACCOUNT_ID)),
    StringRule("SharingConfig", "migLayout", _enum(_MIG_PROFILES), "keys"),
    StringRule("ClaimTemplateConfig", "name", _pattern(node_pools._DNS_LABEL)),
    StringRule("ClaimTemplateConfig", "namespace", _pattern(node_pools._DNS_LABEL)),
    StringRule("ClaimTemplateConfig", "migProfile", _enum(_MIG_PROFILES)),
    # the CPU pool
    StringRule("CpuPoolConfig", "instanceFamilies", _enum(CPU_FAMILIES), "items", _UNIQUE),
    StringRule("CpuPoolConfig", "consolidateAfter", _duration(allow_never=True)),
    StringRule("CpuPoolConfig", "expireAfter", _duration(allow_never=True)),
    StringRule("CpuPoolConfig", "terminationGracePeriod", _duration(allow_never=False)),
    # queueing and tenants
    StringRule("QueueingConfig", "cohort", _DNS_LABEL),
    StringRule("QueueingConfig", "businessUnits", _DNS_LABEL, "items", _UNIQUE),
    StringRule("TenantConfig", "name", _DNS_LABEL),
    StringRule("TenantConfig", "admins", _pattern(cluster._PRINCIPAL_ARN), "items", _UNIQUE),
    StringRule("TenantConfig", "viewers", _pattern(cluster._PRINCIPAL_ARN), "items", _UNIQUE),
    StringRule("NetworkAllowances", "ingressFromNamespaces", _DNS_LABEL, "items"),
    StringRule("InferenceDeploymentConfig", "name", _pattern(autoscaling._DNS_LABEL)),
    StringRule("ServingConfig", "image", _pattern(autoscaling._PINNED_IMAGE)),
    StringRule("ServingConfig", "model", _pattern(autoscaling._MODEL)),
    StringRule("ServingConfig", "revision", _pattern(autoscaling._REVISION)),
    StringRule("ServingConfig", "hfTokenSecret", _pattern(autoscaling._SECRET_NAME)),
    # monitoring, supply chain, versions
    StringRule("MonitoringConfig", "retention", _pattern(monitoring._RETENTION)),
    StringRule("MonitoringConfig", "runbookBaseUrl", _pattern(monitoring._ABSOLUTE_URL)),
    StringRule("ReceiverConfig", "name", _pattern(monitoring._RECEIVER_NAME)),
    StringRule("ImagePolicyConfig", "name", _pattern(supply_chain._POLICY_NAME)),
    StringRule("ImagePolicyConfig", "images", _pattern(supply_chain._IMAGE_GLOB), "items"),
    StringRule("KeylessIdentity", "issuer", _pattern(supply_chain._OIDC_ISSUER)),
    StringRule("KeylessIdentity", "subjectRegExp", {"pattern": r"^\^.*\$$"}),
    StringRule("VersionsConfig", "charts", _enum(versions.CHARTS), "keys"),
    StringRule("VersionsConfig", "charts", _pattern(versions._CHART_VERSION), "values"),
    StringRule("VersionsConfig", "addons", _enum(versions.ADDON_NAMES), "keys"),
    StringRule("VersionsConfig", "addons", _pattern(versions._ADDON_VERSION), "values"),
)
