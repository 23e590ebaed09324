"""`gpu-platform:monitoring`: Prometheus, Alertmanager and Grafana (kube-prometheus-stack)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from .base import ConfigModel
from .errors import duplicates, show

_RETENTION = re.compile(r"^[0-9]+(h|d|w|y)$")
_RECEIVER_NAME = re.compile(r"^[a-z][a-z0-9-]{0,62}$")
_ABSOLUTE_URL = re.compile(r"^https?://[^\s/#?]+(/[^\s#?]*)?$")
# The runbooks as this repository publishes them (docs/runbooks.md); each alert links to its section.
DEFAULT_RUNBOOK_BASE_URL = "https://github.com/gpu-platform/gpu-platform/blob/main/docs/runbooks.md"
Severity = Literal["critical", "warning", "info"]


# --- what one scrape of a tenant's pod may bring (models/prometheus/limits.py) ---------------------------
# The serving PodMonitor (components/autoscaling) scrapes pods whose /metrics the tenant writes, so
# Prometheus' per-scrape limits on the body, samples and labels are set on it; a scrape past any of
# them fails alone, and its target's `up` turns 0. Sized from what vLLM v0.11.0 exposes (upstream/metrics/vllm/, vendored
# loggers.py): 57 series names per engine, 15 of them histogram buckets of at most 23 `le` values,
# every series labelled model_name and engine (tests/test_scrape_limits.py builds that exposition).
# The uncompressed body Prometheus reads at most: vLLM's whole exposition at its largest, eight engines
# of one server with a model name at the value limit below and its HTTP and process metrics, is about
# 1.9 MB; a quarter of the limit.
TENANT_SCRAPE_BODY_SIZE_LIMIT = "8MiB"
# Samples kept after relabeling: the kept metrics have one series per served model and engine.
TENANT_SCRAPE_SAMPLE_LIMIT = 200
# Labels per kept sample: the target's six, __name__ and the kept metrics' own.
TENANT_SCRAPE_LABEL_LIMIT = 16
# Every label the scrape keeps is named by the platform (`labelkeep`); the longest is `model_name`.
TENANT_SCRAPE_LABEL_NAME_LENGTH_LIMIT = 64
# The longest kept value a platform server writes: `job` (`<namespace>/<PodMonitor>`, 63 + 1 + 253),
# `pod` (a DNS subdomain, 253) and `model_name` (the served model, `serving.model`, held to this too).
TENANT_SCRAPE_LABEL_VALUE_LENGTH_LIMIT = 512
# Targets relabeling dropped (a labelled pod not running, a port other than the metrics port) that
# Prometheus keeps in memory with all their discovered labels, for its targets page only: a few.
TENANT_SCRAPE_KEEP_DROPPED_TARGETS = 16

# The Prometheus resource's `enforced*` fields, each a cap on every scrape job Prometheus runs (the
# kubelet's, kube-state-metrics', DCGM's), not only the tenants'. A tenant cannot write a monitor (RBAC
# leaves monitoring.coreos.com out of `admin`), so the serving PodMonitor's own limits bound every
# scrape of tenant pods; an enforced value is set only where it can bound a platform scrape without
# ever failing a healthy one. None: not set, for the reason beside it.
PROMETHEUS_ENFORCED_LIMITS: dict[str, str | int | None] = {
    # Prometheus reads at most this much of any response, so no target, a misbehaving exporter or a
    # scrape a tenant's objects inflate, can make it buffer more. Far above the largest healthy body:
    # kube-state-metrics serves its body from the metrics it keeps in memory, capped at 64Mi
    # (config/system_capacity.py), and a node's kubelet/cAdvisor body is a few MiB; and a sixteenth of
    # Prometheus' 2Gi memory limit.
    "enforcedBodySizeLimit": "128MiB",
    # kube-state-metrics and cAdvisor write tens of thousands of samples in a large cluster; a cap
    # low enough to bound a tenant would fail those whole scrapes, and every kube_* alert with them.
    "enforcedSampleLimit": None,
    # kube-state-metrics' label counts follow the allowlisted node labels; the tenants' scrape has its own.
    "enforcedLabelLimit": None,
    # Names in platform scrapes are the exporters' own (and allowlisted node labels); nothing to bound.
    "enforcedLabelNameLengthLimit": None,
    # Values in platform scrapes include what tenants write into their objects (kube-state-metrics'
    # and cAdvisor's `image`): one over-long value would fail the whole scrape, blacking out every
    # tenant's kube_* series; stored instead, it costs its bytes.
    "enforcedLabelValueLengthLimit": None,
    # Targets are nodes, the platform's pods, and tenant pods bounded by their `pods` quota.
    "enforcedTargetLimit": None,
    # Dropped targets are kept for the UI only; the tenant PodMonitors select within one namespace.
    "enforcedKeepDroppedTargets": None,
}


def _paging_severities() -> list[Severity]:
    return ["critical", "warning"]


class ReceiverConfig(ConfigModel):
    """Where Alertmanager sends alerts: Slack, PagerDuty, or both."""

    name: str = Field(description="Receiver name, e.g. `gpu-oncall`.")
    severities: list[Severity] = Field(
        default_factory=_paging_severities, min_length=1, description="Alert severities routed here."
    )
    slack_webhook_url: str | None = Field(
        None,
        min_length=1, description="Slack incoming-webhook URL; store it with `pulumi config set --secret --path ...`."
    )
    slack_channel: str | None = Field(None, min_length=1, description="Slack channel, e.g. `#gpu-alerts`.")
    pagerduty_routing_key: str | None = Field(
        None,
        min_length=1, description="PagerDuty Events API v2 routing key; store it with `pulumi config set --secret --path ...`."
    )

    @field_validator("name")
    @classmethod
    def _valid_name(cls, name: str) -> str:
        if not _RECEIVER_NAME.match(name):
            raise ValueError("is not a receiver name: lowercase letters, digits and '-'")
        return name

    @model_validator(mode="after")
    def _has_a_destination(self) -> ReceiverConfig:
        if self.slack_webhook_url is None and self.pagerduty_routing_key is None:
            raise ValueError("a receiver needs slackWebhookUrl or pagerdutyRoutingKey")
        if (self.slack_webhook_url is None) != (self.slack_channel is None):
            raise ValueError("slackWebhookUrl and slackChannel go together")
        return self


class MonitoringConfig(ConfigModel):
    """Prometheus, Alertmanager and Grafana on the system nodes, in namespace `monitoring`."""

    retention: str = Field("15d", description="How long Prometheus keeps samples, e.g. `15d`.")
    storage_gib: int = Field(100, alias="storageGiB", ge=10, le=16384, description="Prometheus gp3 volume size, GiB.")
    replicas: int = Field(1, ge=1, le=3, description="Prometheus replicas.")
    volume_on_destroy: Literal["keep", "delete"] = Field(
        "keep",
        description="What happens to Prometheus' EBS volume when its StatefulSet is deleted (`pulumi destroy`). "
        "`keep`: the volume outlives the cluster, still billed, outside Pulumi's state (docs/monitoring.md "
        "says how to find it). `delete`: its PVC goes with the StatefulSet, and the volume with it if "
        "the EBS CSI driver is "
        "still running; also whenever prometheus-operator recreates the StatefulSet, e.g. after a change to "
        "storageGiB, which then loses the metrics history.",
    )
    receivers: list[ReceiverConfig] = Field(default_factory=list, description="Alertmanager receivers.")
    idle_gpu_hours: int = Field(
        1, ge=1, le=48, description="Hours a GPU may stay allocated at ~0% utilisation before the waste alert fires."
    )
    runbook_base_url: str = Field(
        DEFAULT_RUNBOOK_BASE_URL,
        description="Absolute URL of the runbooks page (docs/runbooks.md as your fork publishes it, or an internal "
        "wiki page with the same `#<alertname>` anchors); every alert's `runbook_url` is this plus `#<alert name in "
        "lowercase>`. The default is this repository's docs.",
    )

    @field_validator("runbook_base_url")
    @classmethod
    def _absolute_url(cls, url: str) -> str:
        if not _ABSOLUTE_URL.match(url):
            raise ValueError("is not an absolute http(s) URL without a fragment, e.g. 'https://wiki.example.com/gpu-runbooks'")
        return url

    @field_validator("retention")
    @classmethod
    def _valid_retention(cls, retention: str) -> str:
        if not _RETENTION.match(retention):
            raise ValueError("is not a Prometheus retention such as '15d' or '720h'")
        return retention

    @field_validator("receivers")
    @classmethod
    def _unique_receivers(cls, receivers: list[ReceiverConfig]) -> list[ReceiverConfig]:
        repeated = duplicates([r.name for r in receivers])
        if repeated:
            raise ValueError(f"names receiver {show(repeated[0])} twice")
        return receivers
