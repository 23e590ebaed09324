"""The pods KAI's operator runs from its Config, and what each requests (kai-scheduler/KAI-Scheduler v0.17.0).

The chart installs the operator (deployments/kai-scheduler/templates/services/operator.yaml: `operator.resources`,
absent from values.yaml, so unsized; `operator.replicaCount` replicas). The operator creates the other components
from the `kai-config` Config, each sized by its `SetDefaultsWhereNeeded` (pkg/apis/kai/v1/):

- scheduler/scheduler.go and binder/binder.go set their own requests when none are given, then the common service
  defaults: scheduler 250m / 512Mi, binder 50m / 200Mi.
- pod_grouper/pod_grouper.go, pod_group_controller/pod_group_controller.go and queue_controller/queue_controller.go
  call `Service.SetDefaultsWhereNeeded` first, which sets common/resources.go's 50m / 256Mi; their own numbers
  (50m/200Mi, 20m/100Mi, 20m/50Mi) are set only where no request exists, so never: each requests 50m / 256Mi.
- admission/admission.go and node_scale_adjuster/node_scale_adjuster.go take the common defaults, 50m / 256Mi.

Replicas: each controller `ptr.Deref(global.replicaCount, 1)`, which the chart sets to `operator.replicaCount`
(templates/_helpers.tpl, default 1); the node-scale-adjuster always one (its defaults take no replica count).
KAI's own Prometheus is off (values.yaml `prometheus.enabled: false`, prometheus/prometheus.go). The
numa-placement exporter is left out: a DaemonSet its own `nodeSelector` places, not the global one the platform
points at the system nodes, and enabled automatically (numa_placement_exporter.go: nil is auto), not by default.
"""

from __future__ import annotations

# The operator-run controllers and their requests per replica (cpu, memory), at the defaults above.
OPERATED_POD_REQUESTS: dict[str, tuple[str, str]] = {
    "scheduler": ("250m", "512Mi"),
    "binder": ("50m", "200Mi"),
    "pod-grouper": ("50m", "256Mi"),
    "podgroup-controller": ("50m", "256Mi"),
    "queue-controller": ("50m", "256Mi"),
    "admission": ("50m", "256Mi"),
    "node-scale-adjuster": ("50m", "256Mi"),
}
# Runs one replica whatever `global.replicaCount` says.
SINGLE_REPLICA = ("node-scale-adjuster",)
