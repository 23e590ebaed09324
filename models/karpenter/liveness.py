"""How long Karpenter waits for a NodeClaim's instance and node before replacing it (kubernetes-sigs/karpenter
v1.14.1 pkg/controllers/nodeclaim/lifecycle/liveness.go).

A NodeClaim whose `Launched` condition has not gone True `LaunchTimeout` after it was set is deleted,
and so is one whose `Registered` condition has not gone True `registrationTimeout` after it was set;
the provisioner then creates a new NodeClaim for the pods that are still pending. Both are constants
of the controller, not settings.
"""

from __future__ import annotations

# liveness.go: `var LaunchTimeout = time.Minute * 5`.
LAUNCH_TIMEOUT_SECONDS = 5 * 60
# liveness.go: `registrationTimeout = time.Minute * 15`.
REGISTRATION_TIMEOUT_SECONDS = 15 * 60
