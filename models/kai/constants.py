"""KAI's own names, as kai-scheduler/KAI-Scheduler v0.17.0 defines them.

pkg/common/constants/constants.go: DefaultSchedulerName, DefaultQueueLabel, the GPU-sharing annotations
(GpuFraction, GpuMemory, GpuFractionsNumDevices, GpuFractionContainerName), DefaultResourceReservationName,
DefaultScaleAdjustName, UnlimitedResourceQuantity; the Queue API group and version from
deployments/kai-scheduler/crds/scheduling.run.ai_queues.yaml (served and stored: v2); the PriorityClasses of
deployments/kai-scheduler/templates/priorityclasses/ (vendored under upstream/kai-scheduler/v0.17.0/templates/).
"""

from __future__ import annotations

# The schedulerName a pod names to be scheduled by KAI; KAI's scheduler, pod grouper and binder act on no other pod.
SCHEDULER_NAME = "kai-scheduler"
# The label naming the Queue a workload is charged to. The pod grouper reads it from the pod's top owner first,
# then from the pod (pkg/podgrouper/podgrouper/plugins/defaultgrouper/default_grouper.go `CalcPodGroupQueue`).
QUEUE_LABEL = "kai.scheduler/queue"
# The label the pod grouper derives a queue name from when neither the top owner nor the pod carries
# QUEUE_LABEL (default_grouper.go `calculateQueueName`: `<project>` or `<project>-<node pool>`).
PROJECT_LABEL = "project"
# Where the pod grouper puts a workload that names no queue at all (plugins/constants `DefaultQueueName`),
# a Queue the chart creates unless `defaultQueue.createDefaultQueue` is false (templates/default-queue.yaml).
DEFAULT_QUEUE = "default-queue"

# A fraction of one GPU's memory, a decimal strictly between 0 and 1 ("0.5").
GPU_FRACTION_ANNOTATION = "gpu-fraction"
# MiB of one GPU's memory, a positive integer ("2000").
GPU_MEMORY_ANNOTATION = "gpu-memory"
# How many GPUs the fraction or memory is taken on, each (a positive integer).
GPU_FRACTION_NUM_DEVICES_ANNOTATION = "gpu-fraction-num-devices"
# Which container gets the fraction; the first one otherwise.
GPU_FRACTION_CONTAINER_ANNOTATION = "gpu-fraction-container-name"
SHARING_ANNOTATIONS = (GPU_FRACTION_ANNOTATION, GPU_MEMORY_ANNOTATION, GPU_FRACTION_NUM_DEVICES_ANNOTATION)

# The namespace and service account of the reservation pods the binder creates, one per shared GPU, each
# requesting the whole `nvidia.com/gpu` the fractions on it share (chart values.yaml
# `global.resourceReservation`; pkg/binder/binding/resourcereservation/resource_reservation.go).
RESERVATION_NAMESPACE = "kai-resource-reservation"
RESERVATION_SERVICE_ACCOUNT = "kai-resource-reservation"
# The namespace of the node-scale-adjuster's scaling pods, which request whole GPUs for unschedulable fractional
# pods so a cluster autoscaler sees them (chart values.yaml `nodescaleadjuster.scalingPodNamespace`).
SCALING_POD_NAMESPACE = "kai-scale-adjust"
# The namespace the chart's components run in (README: "KAI Scheduler will be installed in `kai-scheduler` namespace").
SYSTEM_NAMESPACE = "kai-scheduler"

# The Queue kind (cluster-scoped).
QUEUE_API_VERSION = "scheduling.run.ai/v2"
QUEUE_KIND = "Queue"
# A quota or limit of -1: no bound (UnlimitedResourceQuantity).
UNLIMITED = -1
# The priority a Queue without one gets (DefaultQueuePriority).
DEFAULT_QUEUE_PRIORITY = 100

# The PriorityClasses the chart creates while `defaultPriorityClasses.enabled` (the default), name -> value
# (deployments/kai-scheduler/templates/priorityclasses/*.yaml). None sets `preemptionPolicy` or `globalDefault`:
# each preempts lower-priority pods (PreemptLowerPriority), and a pod naming none is left at 0.
CHART_PRIORITY_CLASSES = {"train": 50, "build-preemptible": 75, "build": 100, "inference": 125}
