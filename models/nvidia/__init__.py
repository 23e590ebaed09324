"""NVIDIA's GPU stack as the platform relies on it: the GPU Operator's labels, the device plugin, the DRA driver."""
