"""The AWS EFA device plugin: each EFA pool node's Elastic Fabric Adapters as `vpc.amazonaws.com/efa`.

A pod asking for `vpc.amazonaws.com/efa` makes Karpenter launch its node with an EFA interface on every
network card the instance type has (karpenter-provider-aws v1.14.1 pkg/providers/instance/instance.go
getEFACountForInstance; pkg/providers/launchtemplate/launchtemplate.go generateNetworkInterfaces), but
the kubelet only hands the devices to the pod through a device plugin, which neither NVIDIA AMI runs.
The chart is aws/eks-charts stable/aws-efa-k8s-device-plugin (pinned in config/versions.py); its
DaemonSet selects nodes by instance type and tolerates only CriticalAddonsOnly
(templates/daemonset.yaml), so the values narrow it to the EFA pools' nodes and let it onto GPU nodes.
On a bump, diff that template and values.yaml between the two tags.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from config import namespaces
from config.labels import EFA_LABEL, GPU_TAINT
from config.versions import ChartPin

from .lib.helm import helm_release
from .lib.resources import Children

CHART_KEY = "aws-efa-k8s-device-plugin"
RELEASE_NAME = "aws-efa-k8s-device-plugin"
NAMESPACE = namespaces.KUBE_SYSTEM


class EfaDevicePlugin(pulumi.ComponentResource):
    """The EFA device plugin's Helm release, on the nodes of pools with `efa`."""

    release: k8s.helm.v3.Release

    def __init__(
        self,
        name: str,
        *,
        chart: ChartPin,
        provider: k8s.Provider,
        depends_on: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ):
        """
        :param chart: `PlatformConfig.charts["aws-efa-k8s-device-plugin"]`.
        :param depends_on: what the cluster's workloads wait for (the system nodes and add-ons).
        """
        super().__init__("gpu-platform:efa:EfaDevicePlugin", name, None, opts)
        children = Children(self, provider, depends_on)
        self.release = helm_release(
            f"{name}-device-plugin",
            release_name=RELEASE_NAME,
            pin=chart,
            namespace=NAMESPACE,
            values=device_plugin_values(),
            opts=children.opts(),
        )
        self.register_outputs({})


def device_plugin_values() -> dict[str, Any]:
    """Only on EFA pools' nodes (their pool label), tolerating the taint every GPU node carries."""
    return {
        "nodeSelector": {EFA_LABEL: "true"},
        "tolerations": [{"key": GPU_TAINT["key"], "operator": "Exists", "effect": GPU_TAINT["effect"]}],
    }
