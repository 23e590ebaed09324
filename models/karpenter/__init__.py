"""Karpenter (kubernetes-sigs/karpenter and aws/karpenter-provider-aws v1.14.1): its names, how it counts limits and capacity."""
