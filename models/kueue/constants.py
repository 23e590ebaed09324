"""Kueue's own names, as kubernetes-sigs/kueue v0.19.2 defines them.

pkg/controller/constants/constants.go: QueueLabel, WorkloadPriorityClassLabel, DefaultLocalQueueName;
pkg/controller/jobs/pod/constants/constants.go: SchedulingGateName, SuspendedByParentAnnotation, PodFinalizer;
pkg/constants/constants.go: ManagedByKueueLabelKey, ManagedByKueueLabelValue.
"""

from __future__ import annotations

# The label a workload names its LocalQueue with.
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
# The label a workload names its WorkloadPriorityClass with.
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
# The LocalQueue Kueue's webhooks give a job without a queue name, where the namespace has one so named.
DEFAULT_LOCAL_QUEUE = "default"
# The scheduling gate Kueue puts on the pods it manages and lifts when it admits them.
ADMISSION_SCHEDULING_GATE = "kueue.x-k8s.io/admission"
# The annotation the Deployment and StatefulSet webhooks put on their pod templates: Kueue's pod webhook
# gates every pod carrying it, whatever its owners.
SUSPENDED_BY_PARENT_ANNOTATION = "kueue.x-k8s.io/pod-suspending-parent"
# The label Kueue's pod webhook puts on each pod it manages; its pod reconciler skips a pod without it
# (pod_controller.go `Skip`), so such a pod keeps its gate.
MANAGED_LABEL = "kueue.x-k8s.io/managed"
MANAGED_LABEL_VALUE = "true"
# The finalizer Kueue's pod webhook adds to each pod it gates (the same key as the label).
POD_FINALIZER = MANAGED_LABEL
