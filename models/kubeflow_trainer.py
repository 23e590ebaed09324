"""What Kubeflow Trainer does with a TrainJob's runtime, as kubeflow/trainer v2.3.0 does it.

- The replicated job of a (Cluster)TrainingRuntime that runs the training carries the label
  `trainer.kubeflow.org/trainjob-ancestor-step: trainer` (pkg/constants/constants.go,
  LabelTrainJobAncestor and AncestorTrainer); the runtime webhook requires its container to be named
  `node` (pkg/webhooks/trainingruntime_webhook.go, validateReplicatedJobs; constants.Node).
- The JobSet plugin runs that replicated job as `numNodes` pods (the TrainJob's `trainer.numNodes`,
  else the runtime's `mlPolicy.numNodes`, else 1) and gives the `node` container the TrainJob's
  `trainer.resourcesPerNode` (pkg/runtime/framework/plugins/jobset, plugins/torch).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

ANCESTOR_STEP_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
TRAINER_ANCESTOR = "trainer"
TRAINER_CONTAINER = "node"


def is_trainer_step(replicated_job: Mapping[str, Any]) -> bool:
    """The replicated job the trainer runs the training in."""
    labels = replicated_job["template"].get("metadata", {}).get("labels", {})
    return labels.get(ANCESTOR_STEP_LABEL) == TRAINER_ANCESTOR


def trainer_nodes(train_job: Mapping[str, Any], runtime: Mapping[str, Any]) -> int:
    trainer = train_job["spec"].get("trainer", {})
    return int(trainer.get("numNodes", runtime["spec"].get("mlPolicy", {}).get("numNodes", 1)))


def trainer_pod(pod: Mapping[str, Any], train_job: Mapping[str, Any]) -> dict[str, Any]:
    """The trainer step's pod spec with the TrainJob's `resourcesPerNode` on its `node` container (a new dict)."""
    resources = train_job["spec"].get("trainer", {}).get("resourcesPerNode")
    if resources is None:
        return dict(pod)
    containers = [
        {**container, "resources": resources} if container["name"] == TRAINER_CONTAINER else container
        for container in pod["containers"]
    ]
    return {**pod, "containers": containers}
