"""`gpu-platform:autoscaling` and each tenant's `inference` deployments: KEDA scaling on GPU load.

A deployment scales on its own GPU utilisation and, when given a target, on its request queue depth
(`vllm:num_requests_waiting`). Its class sets the thresholds: the platform's presets, overridable per stack.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import Field, field_validator, model_validator

from models.keda import cron

from .base import ConfigModel
from .errors import Problems, item_labels, show
from .monitoring import TENANT_SCRAPE_LABEL_VALUE_LENGTH_LIMIT

if TYPE_CHECKING:
    from .tenants import TenantConfig

WorkloadClass = Literal["realtime", "batch", "interactive"]
# An image pinned by tag (not `latest`) or digest; the tag may precede the digest.
_PINNED_IMAGE = re.compile(r"^[a-z0-9][a-z0-9._/-]*(:(?!latest$)[A-Za-z0-9._-]+(@sha256:[a-f0-9]{64})?|@sha256:[a-f0-9]{64})$")
# What `--model` takes: a Hugging Face model id or a path, never blank and without spaces.
_MODEL = re.compile(r"^\S+$")
_DNS_LABEL = re.compile(r"^[a-z]([a-z0-9-]{0,38}[a-z0-9])?$")
# A Hugging Face Hub revision: a branch, a tag or a commit hash.
_REVISION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$")
# A Secrets Manager secret name below the tenant's path (Secrets Manager allows letters, digits and /_+=.@-).
_SECRET_NAME = re.compile(r"^[A-Za-z0-9_+=.@-]+(/[A-Za-z0-9_+=.@-]+)*$")


class ClassPreset(ConfigModel):
    """Thresholds of one workload class."""

    scale_up_utilization: int = Field(ge=1, le=100, description="GPU utilisation (%) above which replicas are added.")
    scale_down_utilization: int = Field(ge=0, le=99, description="GPU utilisation (%) below which the scaler may go idle.")
    cooldown_seconds: int = Field(ge=0, le=3600, description="Seconds after the last active trigger before scaling to min.")

    @model_validator(mode="after")
    def _down_below_up(self) -> ClassPreset:
        if self.scale_down_utilization >= self.scale_up_utilization:
            raise ValueError(
                f"scaleDownUtilization {self.scale_down_utilization} must be below scaleUpUtilization {self.scale_up_utilization}"
            )
        return self


# The platform's presets: realtime scales early and settles fast; batch runs hot; interactive reacts quickest.
CLASS_PRESETS: dict[WorkloadClass, ClassPreset] = {
    "realtime": ClassPreset(scaleUpUtilization=70, scaleDownUtilization=30, cooldownSeconds=60),
    "batch": ClassPreset(scaleUpUtilization=85, scaleDownUtilization=40, cooldownSeconds=300),
    "interactive": ClassPreset(scaleUpUtilization=60, scaleDownUtilization=25, cooldownSeconds=30),
}


# S3 bucket names (Amazon S3 User Guide, "General purpose bucket naming rules"): 3-63 lowercase letters,
# digits, '.' and '-', starting and ending with a letter or digit.
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_REGION = re.compile(r"^[a-z]{2}(-gov)?-[a-z]+-[0-9]$")
# A KMS key's ARN (AWS KMS Developer Guide, "Key ARN"): partition, region, account, `key/<key id>`.
KMS_KEY_ARN = re.compile(r"^arn:aws(-[a-z]+)*:kms:(?P<region>[a-z0-9-]+):\d{12}:key/[A-Za-z0-9-]+$")
# `modelSource`: the Hub, or a folder of safetensors files in S3 (`s3://<bucket>/<key prefix>/`).
HUB = "hub"
_S3_URI = re.compile(r"^s3://(?P<bucket>[^/]+)/(?P<key>[A-Za-z0-9!_.*'()/-]+)/$")
# The service account a tenant's model servers run as when they read weights from S3: its Pod Identity
# association gives it the tenant's model-reader role (components/autoscaling/model_access.py).
MODEL_READER_SERVICE_ACCOUNT = "model-reader"


class ModelStoreConfig(ConfigModel):
    """The S3 bucket tenants stage model weights in, each under its own prefix `<tenant>/`."""

    bucket: str = Field(description="Bucket name; a tenant's servers may read `s3://<bucket>/<tenant>/*` only.")
    region: str = Field(description="The bucket's region (the model streamer's S3 client is sent there), e.g. `us-east-1`.")
    kms_key_arn: str | None = Field(
        None,
        description="The customer managed KMS key of the bucket's default encryption (SSE-KMS), as "
        "`aws s3api get-bucket-encryption` shows it: each tenant's model-reader role may decrypt with it only "
        "through S3 and only for this bucket. Unset: the bucket uses SSE-S3 or the AWS managed key `aws/s3`, which "
        "needs no grant of its own. The key's own policy must let the account's IAM policies grant its use.",
    )

    @field_validator("bucket")
    @classmethod
    def _bucket(cls, bucket: str) -> str:
        if not _BUCKET.match(bucket) or ".." in bucket:
            raise ValueError("is not an S3 bucket name: 3-63 lowercase letters, digits, '.' and '-'")
        return bucket

    @field_validator("region")
    @classmethod
    def _region(cls, region: str) -> str:
        if not _REGION.match(region):
            raise ValueError("is not an AWS region such as 'us-east-1'")
        return region

    @model_validator(mode="after")
    def _key_in_the_buckets_region(self) -> ModelStoreConfig:
        if self.kms_key_arn is None:
            return self
        found = KMS_KEY_ARN.match(self.kms_key_arn)
        if found is None:
            raise ValueError(
                f"kmsKeyArn {self.kms_key_arn!r} is not a KMS key ARN such as "
                "'arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab' (an alias does not work "
                "in an IAM policy's Resource)"
            )
        if found["region"] != self.region:
            raise ValueError(
                f"kmsKeyArn is in {found['region']}, the bucket in {self.region}: S3 encrypts with a key of the bucket's "
                "own region; give that key"
            )
        return self


def s3_model_location(source: str) -> tuple[str, str] | None:
    """`s3://bucket/tenant/model/` -> ("bucket", "tenant/model"); None for the Hub."""
    found = _S3_URI.match(source)
    return None if found is None else (found["bucket"], found["key"])


class AutoscalingConfig(ConfigModel):
    """KEDA, and per-class overrides of the scaling presets."""

    classes: dict[WorkloadClass, ClassPreset] = Field(
        default_factory=dict,
        description="Overrides of the class presets (realtime 70/30/60 s, batch 85/40/300 s, interactive 60/25/30 s).",
    )
    fallback_replicas: int = Field(
        1, ge=1, le=100, description="Replicas KEDA holds when its Prometheus queries keep failing."
    )
    model_store: ModelStoreConfig | None = Field(
        None, description="Where `serving.modelSource: s3://...` weights are staged; needed by any such source."
    )

    def preset(self, workload_class: WorkloadClass) -> ClassPreset:
        return self.classes.get(workload_class, CLASS_PRESETS[workload_class])


class ServingConfig(ConfigModel):
    """A model server the platform declares for the deployment (Deployment, Service, PodDisruptionBudget)."""

    image: str = Field(description="Container image, pinned by tag or digest, e.g. `vllm/vllm-openai:v0.11.0`.")
    model: str = Field(
        description="Model to serve, passed as `--model`: a Hugging Face model id such as "
        "`meta-llama/Llama-3.1-8B-Instruct`, or a path; no spaces."
    )
    revision: str | None = Field(
        None,
        min_length=1,
        description="Model revision passed as `--revision` (a branch, tag or commit hash); a commit hash pins the "
        "weights every replica downloads. Required when `supplyChain.requireModelRevisions` is true.",
    )
    hf_token_secret: str | None = Field(
        None,
        description="Name of an AWS Secrets Manager secret under the tenant's path `/<cluster>/<tenant>/` whose "
        "value is a Hugging Face token (e.g. `hf-token` for `/gpu-prod/inference/hf-token`); the server gets it as "
        "`HF_TOKEN`. Needs `gpu-platform:secrets.enabled`.",
    )
    model_source: str = Field(
        HUB,
        description="`hub`: download `model` from the Hugging Face Hub at each start. Or `s3://<bucket>/<tenant>/<path>/`: "
        "the model's safetensors staged under the tenant's prefix of `autoscaling.modelStore`, streamed to the GPU "
        "by vLLM's Run:ai model streamer (`--load-format runai_streamer`) with the tenant's own read-only role; "
        "clients still call it `model`.",
    )
    port: int = Field(8000, ge=1024, le=65535, description="Port the server listens on (non-root: above 1023).")
    # runAsUser is an int64 in the API, but the API server refuses a UID above 2^31-1
    # (k8s.io/apimachinery pkg/util/validation/validation.go IsValidUserID: maxUserID = math.MaxInt32).
    run_as_user: int = Field(
        1000, ge=1, le=2147483647, description="Non-root UID the server runs as (tenant namespaces enforce Pod Security)."
    )
    cache_gib: int = Field(
        100,
        alias="cacheGiB",
        ge=1,
        le=10000,
        description="Size limit of the node-local model cache (an emptyDir), GiB: at least the model's weights. Each "
        "replica requests it as ephemeral storage, so it counts against the tenant's `ephemeralStorageGiB`.",
    )

    @field_validator("image")
    @classmethod
    def _pinned_image(cls, image: str) -> str:
        if image.endswith(":latest"):
            raise ValueError("uses ':latest'; pin a version so every replica runs the same server")
        if not _PINNED_IMAGE.match(image):
            raise ValueError("is not an image pinned by tag or digest, e.g. 'vllm/vllm-openai:v0.11.0'")
        return image

    @field_validator("model")
    @classmethod
    def _model(cls, model: str) -> str:
        if not _MODEL.match(model):
            raise ValueError(
                f"{'is empty' if not model else 'is blank' if not model.strip() else 'contains a space'}: name the model "
                "`--model` loads, a Hugging "
                "Face model id such as 'meta-llama/Llama-3.1-8B-Instruct' or a path"
            )
        if len(model) > TENANT_SCRAPE_LABEL_VALUE_LENGTH_LIMIT:
            raise ValueError(
                f"is {len(model)} characters: vLLM writes it into the `model_name` label of every metric, and the "
                f"serving scrape fails whole on a value over {TENANT_SCRAPE_LABEL_VALUE_LENGTH_LIMIT} (its queue-depth "
                "trigger then reads nothing); use a shorter path"
            )
        return model

    @field_validator("model_source")
    @classmethod
    def _model_source(cls, source: str) -> str:
        if source != HUB and s3_model_location(source) is None:
            raise ValueError("is neither 'hub' nor a folder in S3 such as 's3://acme-models/inference/llama-3.1-8b/'")
        return source

    @model_validator(mode="after")
    def _revision_is_the_hubs(self) -> ServingConfig:
        if self.revision is not None and self.model_source != HUB:
            raise ValueError("revision names a Hub commit; weights from S3 are the staged copy: remove revision")
        return self

    @field_validator("revision")
    @classmethod
    def _revision(cls, revision: str | None) -> str | None:
        if revision is not None and not _REVISION.match(revision):
            raise ValueError("is not a Hub revision: a branch, tag or commit hash such as 'd4aa6901d3a4...'")
        return revision

    @field_validator("hf_token_secret")
    @classmethod
    def _secret_name(cls, name: str | None) -> str | None:
        if name is not None and not _SECRET_NAME.match(name):
            raise ValueError("is not a secret name below the tenant's path: letters, digits and /_+=.@-, e.g. 'hf-token'")
        return name

    @property
    def pinned_by_digest(self) -> bool:
        return "@sha256:" in self.image


# How long the platform's model server has to load its model: its startup probe fails this many
# times, this many seconds apart, before the kubelet restarts the container (liveness and readiness
# wait for it). Kueue's waitForPodsReady timeout is derived from it.
SERVER_STARTUP_PROBE_FAILURES = 90
SERVER_PROBE_PERIOD_SECONDS = 10
SERVER_STARTUP_SECONDS = SERVER_STARTUP_PROBE_FAILURES * SERVER_PROBE_PERIOD_SECONDS


class WorkingHoursConfig(ConfigModel):
    """When a deployment keeps more replicas warm: KEDA's cron trigger (models/keda/cron.py).

    Between `start` and `end` the deployment keeps at least `replicas`; outside, its `minReplicas`. Its
    other triggers still add replicas above either floor.
    """

    start: str = Field(description="Cron schedule (5 fields, in `timezone`) that opens the window, e.g. `0 8 * * mon-fri`.")
    end: str = Field(description="Cron schedule that closes it, e.g. `0 20 * * mon-fri`.")
    timezone: str = Field(description="IANA time zone both schedules are read in, e.g. `Europe/Berlin`.")
    replicas: int = Field(
        ge=1, le=1000, description="Fewest replicas inside the window (KEDA's `desiredReplicas`); above minReplicas."
    )

    @field_validator("start", "end")
    @classmethod
    def _schedule(cls, schedule: str) -> str:
        try:
            parsed = cron.parse(schedule)
        except cron.CronError as error:
            raise ValueError(f"is not a schedule KEDA's cron scaler accepts: {error}") from None
        if parsed.zone is not None:
            # KEDA would run this schedule in that zone and the other in `timezone`: one zone, named once.
            raise ValueError(f"names time zone {parsed.zone} in the schedule: remove the prefix and set `timezone`")
        return schedule

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, timezone: str) -> str:
        try:
            cron.check_timezone(timezone)
        except cron.CronError as error:
            raise ValueError(str(error).replace(f"{timezone!r} ", "", 1)) from None
        return timezone

    @model_validator(mode="after")
    def _start_differs_from_end(self) -> WorkingHoursConfig:
        if self.start == self.end:
            raise ValueError("start and end are the same schedule; KEDA refuses a window that opens when it closes")
        return self


class InferenceDeploymentConfig(ConfigModel):
    """An inference Deployment in the tenant's namespace that KEDA scales."""

    name: str = Field(description="Deployment name (a DNS label).")
    flavor: str = Field(
        description="The flavor (pool) its replicas run on; its GPUs count against the tenant's quota there. A "
        "whole-GPU or time-sliced flavor: no inference on MIG or DRA flavors, whose pods get MIG devices or claims, "
        "not the `nvidia.com/gpu` the server requests and KEDA scales on, nor on a pool with `scheduler: kai`."
    )
    gpus_per_replica: int = Field(
        1, ge=1, le=8, description="GPUs each replica requests, in the flavor's units: slices on a time-sliced flavor."
    )
    min_replicas: int = Field(
        1,
        le=1000,
        # The schema's bound; the validator below says why.
        json_schema_extra={"minimum": 1},
        description="Fewest replicas, at least 1: both triggers read metrics the deployment's own pods emit, so at "
        "zero replicas nothing could wake it.",
    )
    max_replicas: int = Field(ge=1, le=1000, description="Most replicas.")
    workload_class: WorkloadClass = Field(alias="class", description="`realtime`, `batch` or `interactive`: the scaling preset.")
    queue_depth_target: int | None = Field(
        None, ge=1, le=10000, description="Requests waiting per replica (vllm:num_requests_waiting) that adds a replica."
    )
    serving: ServingConfig | None = Field(None, description="Declare the model server too; otherwise the tenant deploys it.")
    working_hours: WorkingHoursConfig | None = Field(
        None,
        description="Keep `replicas` warm during working hours only; outside, the minimum drops to minReplicas and "
        "consolidation gives the nodes back.",
    )

    @field_validator("name")
    @classmethod
    def _dns_label(cls, name: str) -> str:
        if not _DNS_LABEL.match(name):
            raise ValueError("is not a DNS label: lowercase letters, digits and '-'")
        return name

    @field_validator("min_replicas")
    @classmethod
    def _at_least_one(cls, replicas: int) -> int:
        if replicas < 1:
            raise ValueError(
                "would scale the deployment to zero, and nothing wakes it there: both triggers (GPU "
                "utilisation and queue depth) read metrics its own pods emit; use 1 or more"
            )
        return replicas

    @model_validator(mode="after")
    def _min_below_max(self) -> InferenceDeploymentConfig:
        if self.min_replicas > self.max_replicas:
            raise ValueError(f"minReplicas {self.min_replicas} exceeds maxReplicas {self.max_replicas}")
        hours = self.working_hours
        if hours is not None and not self.min_replicas < hours.replicas <= self.max_replicas:
            raise ValueError(
                f"workingHours.replicas {hours.replicas} must be above minReplicas {self.min_replicas} (the off-hours "
                f"floor) and at most maxReplicas {self.max_replicas}"
            )
        return self


def check_model_sources(tenants: Sequence[TenantConfig], autoscaling: AutoscalingConfig, root: str, problems: Problems) -> None:
    """Each `modelSource: s3://...` lies in the model store, under its own tenant's prefix, and can be reached."""
    labels = item_labels(tenants)
    for i, tenant in enumerate(tenants):
        deployments = item_labels(tenant.inference)
        for j, deployment in enumerate(tenant.inference):
            source = deployment.serving.model_source if deployment.serving is not None else HUB
            location = s3_model_location(source)
            if location is None:
                continue
            key = f"{root}[{labels[i]}].inference[{deployments[j]}].serving.modelSource"
            bucket, prefix = location
            store = autoscaling.model_store
            if store is None:
                problems.add(key, f"{show(source)} needs gpu-platform:autoscaling.modelStore, the bucket weights are staged in")
            elif bucket != store.bucket:
                problems.add(key, f"{show(source)} is in bucket {bucket}, not the model store {store.bucket}")
            elif prefix.split("/", 1)[0] != tenant.name:
                problems.add(
                    key,
                    f"{show(source)} is outside the tenant's prefix: its servers may read only "
                    f"s3://{store.bucket}/{tenant.name}/...",
                )
            if not tenant.network.internet_egress:
                problems.add(
                    key,
                    f"{show(source)} needs network.internetEgress: true; S3 and the EKS Pod Identity agent "
                    "(169.254.170.23) are outside the namespace",
                )
