"""Kueue's own names, as kubernetes-sigs/kueue v0.19.2 defines them.

pkg/controller/constants/constants.go: QueueLabel, WorkloadPriorityClassLabel, DefaultLocalQueueName;
pkg/controller/jobs/pod/constants/constants.go: SchedulingGateName.
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
