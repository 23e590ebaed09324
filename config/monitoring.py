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
        "`keep`: the volume outlives the cluster, still billed, outside Pulumi's state (README, Monitoring and "
        "autoscaling, says how to find it). `delete`: its PVC goes with the StatefulSet, and the volume with it if "
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
