"""Where KAI's controllers serve metrics, and the metrics the platform reads (kai-scheduler/KAI-Scheduler v0.17.0).

The chart renders no metrics Service or monitor of its own. KAI's operator creates a Service for each controller
(pkg/operator/operands/<controller>/resources.go), named after the controller and labelled `app: <name>`
(operands/common/common.go `ObjectForKAIConfig`, which sets that label on every object it builds); the pods carry the
same label (`DeploymentForKAIConfig`; the scheduler's from `deploymentForShard`). No controller's container declares
a port (only the admission webhook's `webhook` port), so a monitor cannot select a pod's metrics port by name or
number (prometheus-operator v0.93.0 pkg/prometheus/promcfg.go keeps a PodMonitor's target on the container's declared
port): the platform scrapes the operator's Services, by their named ports.

- scheduler (scheduler/resources_for_shard.go `serviceForShard`): `<schedulerName>-<shard>`, headless, port
  `http-metrics` at `SchedulerService.Port` (8080, pkg/apis/kai/v1/scheduler/scheduler.go), the address the
  scheduler listens on (`--listen-address`, cmd/scheduler/app/server.go serves the default registry at /metrics).
  The chart's one shard is `default` (templates/default-shard.yaml). With more than one replica the Service has no
  selector and the operator keeps an EndpointSlice naming the leader's pod (`endpointSliceForShard`); with one, the
  platform's case (chart `operator.replicaCount: 1`, which `global.replicaCount` follows), it selects `app`.
- binder (binder/resources.go `serviceForKAIConfig`): `binder`, port `http-metrics` at `MetricsPort` (8080,
  pkg/apis/kai/v1/binder/binder.go), controller-runtime's metrics server (`--metrics-bind-address`).
- queue-controller (queue_controller/resources.go `serviceForKAIConfig`): `queue-controller`, ports `webhook` and
  `metrics` (`ControllerService.Metrics`: 8080, named `metrics`, pkg/apis/kai/v1/queue_controller/queue_controller.go).
- admission (admission/resources.go `serviceForKAIConfig`): `admission`, ports `webhook` and `http-metrics`
  (`Webhook.MetricsPort`, 8080).

Not scraped: the pod grouper serves controller-runtime's metrics on its default `:8080` but has no Service
(pod_grouper/pod_grouper.go `DesiredState` builds a Deployment, a PodDisruptionBudget and a ServiceAccount) and no
container port; the podgroup-controller's Service has only its `webhook` port (pod_group_controller/resources.go).
Their being down shows as KAI pods that never get a PodGroup or status, not as a scrape.

The operator makes ServiceMonitors of its own only with `prometheus.enabled` (operands/prometheus/prometheus.go
`DesiredState`, `serviceMonitorsForKAIConfig`), then for the queue-controller and kube-state-metrics
(common.go `KaiServicesForServiceMonitor`); the chart leaves it off (values.yaml `prometheus.enabled: false`).

Metric names: the scheduler and the queue-controller prefix theirs with `--metrics-namespace`, default
`DefaultMetricsNamespace` (pkg/common/constants/constants.go, `kai`; cmd/scheduler/app/options/options.go,
cmd/queuecontroller/app/options.go), which the operator passes only from `queueController.metricsNamespace`
(queue_controller/resources.go, scheduler/resources_for_shard.go `buildArgsList`), which the chart never sets.
The scheduler's package `init` first registers every metric unprefixed (pkg/scheduler/metrics/metrics.go
`InitMetrics("")`), then `Run` registers the `kai_` set and updates only that: the unprefixed series stay at their
initial values, so nothing reads them. The binder registers no metric of its own (pkg/binder defines none): a
failed bind is an error its BindRequest reconciler returns (pkg/binder/controllers/bindrequest_controller.go
`Reconcile`, after which it rolls the bind back, marks the BindRequest Failed and the pod `BindingError`), which
controller-runtime counts per controller (v0.23.3, the release KAI's go.mod requires: pkg/internal/controller/
controller.go `reconcileHandler`, metrics/metrics.go `controller_runtime_reconcile_errors_total`, set to 0 when the
controller starts). The controller is named after the kind it reconciles, lower-cased (pkg/builder/controller.go
`getControllerName`: KAI's `ctrl.NewControllerManagedBy(mgr).For(&BindRequest{})` names none).
KAI exports no count of pending pods or PodGroups, and no Queue's limit (the queue-controller's gauges are its
deserved GPUs, CPU and memory quota, and what is allocated); the upstream files are vendored under
upstream/metrics/kai-scheduler/ and upstream/metrics/kai-queue-controller/ (offline/metrics_inventory.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from .constants import SCHEDULER_NAME

# The namespace KAI's scheduler and queue-controller prefix their metrics with (DefaultMetricsNamespace).
METRICS_NAMESPACE = "kai"
# The label the operator sets on each controller's Deployment, pods and Service (constants.AppLabelName).
APP_LABEL = "app"
# The SchedulingShard the chart creates (templates/default-shard.yaml `metadata.name`).
DEFAULT_SHARD = "default"


@dataclass(frozen=True)
class MetricsService:
    """A Service KAI's operator creates for a controller: its name (also its `app` label) and its metrics port's name."""

    name: str
    port: str


# controller -> the Service its metrics are scraped through, as the operator builds it (the module docstring).
METRICS_SERVICES: dict[str, MetricsService] = {
    "scheduler": MetricsService(f"{SCHEDULER_NAME}-{DEFAULT_SHARD}", "http-metrics"),
    "binder": MetricsService("binder", "http-metrics"),
    "queue-controller": MetricsService("queue-controller", "metrics"),
    "admission": MetricsService("admission", "http-metrics"),
}

# The queue-controller's Queue gauges (pkg/queuecontroller/metrics/metrics.go `SetQueueMetrics`), one series per Queue,
# labelled `queue_name` (the Queue's metadata.name). Deserved is `spec.resources.gpu.quota` as written (-1 for no
# bound); allocated is the Queue's `status.allocated` of the resource ending in `/gpu` (nvidia.com/gpu), which the
# podgroup-controller sums with each fractional pod counted as its fraction (pkg/podgroupcontroller/controllers/
# resources/received.go), rounded to four decimals.
QUEUE_DESERVED_GPUS = f"{METRICS_NAMESPACE}_queue_deserved_gpus"
QUEUE_ALLOCATED_GPUS = f"{METRICS_NAMESPACE}_queue_allocated_gpus"
QUEUE_NAME_LABEL = "queue_name"

# The binder's BindRequest controller and controller-runtime's count of its failed reconciles (the module docstring).
BIND_REQUEST_CONTROLLER = "bindrequest"
RECONCILE_ERRORS = "controller_runtime_reconcile_errors_total"
