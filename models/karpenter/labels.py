"""Karpenter's names: API groups, node labels, tag keys, resources.

Mirrors kubernetes-sigs/karpenter pkg/apis/v1/labels.go (NodePoolLabelKey, CapacityTypeLabelKey,
WellKnownLabels) and aws/karpenter-provider-aws v1.14.1 pkg/apis/v1/labels.go (LabelInstanceFamily,
LabelNodeClass, NodeClaimTagKey, ResourceEFA) at the pinned tag; config/labels.py re-exports what the
project uses. On a bump, diff both files between the tags.
"""

from __future__ import annotations

GROUP = "karpenter.sh"  # sigs.k8s.io/karpenter pkg/apis, Group
PROVIDER_GROUP = "karpenter.k8s.aws"  # karpenter-provider-aws pkg/apis, Group

NODEPOOL_API = f"{GROUP}/v1"
NODECLASS_API = f"{PROVIDER_GROUP}/v1"
# NodeOverlay is alpha in Karpenter 1.14 and acts only with the controller's `nodeOverlay` feature gate
# on (kubernetes-sigs/karpenter pkg/cloudprovider/overlay/cloudprovider.go; components/karpenter sets it).
NODEOVERLAY_API = f"{GROUP}/v1alpha1"
NODECLASS_KIND = "EC2NodeClass"

# --- labels Karpenter sets on its nodes and matches NodePool requirements against ----------------
NODEPOOL_LABEL = f"{GROUP}/nodepool"  # NodePoolLabelKey
CAPACITY_TYPE_LABEL = f"{GROUP}/capacity-type"  # CapacityTypeLabelKey
INSTANCE_FAMILY_LABEL = f"{PROVIDER_GROUP}/instance-family"  # LabelInstanceFamily
# Kubernetes' well-known labels Karpenter accepts in requirements (WellKnownLabels):
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"  # corev1.LabelInstanceTypeStable
ARCH_LABEL = "kubernetes.io/arch"  # corev1.LabelArchStable
OS_LABEL = "kubernetes.io/os"  # corev1.LabelOSStable
ARCH_AMD64 = "amd64"

# --- tag keys ------------------------------------------------------------------------------------
# The getting-started tag EC2NodeClasses find subnets and security groups by, valued with the cluster's
# name (website/content/en/v1.14/getting-started/.../cloudformation.yaml and its selector terms).
DISCOVERY_TAG = f"{GROUP}/discovery"
NODECLAIM_TAG = f"{GROUP}/nodeclaim"  # NodeClaimTagKey
NODECLASS_TAG = f"{PROVIDER_GROUP}/ec2nodeclass"  # NodeClassTagKey (= LabelNodeClass)
EKS_CLUSTER_NAME_TAG = "eks:eks-cluster-name"  # EKSClusterNameTagKey
NAME_TAG = "Name"  # NameTagKey
# NodePoolTagKey is NodePoolLabelKey: instances carry the NodePool's name under the label's key.

# --- resources -----------------------------------------------------------------------------------
# Karpenter counts every node as one of this resource (kubernetes-sigs/karpenter pkg/utils/resources,
# `resources.Node`; StateNode.Capacity adds it), so a NodePool may limit it.
NODES_RESOURCE = "nodes"
EFA_RESOURCE = "vpc.amazonaws.com/efa"  # ResourceEFA
