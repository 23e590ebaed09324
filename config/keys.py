"""Where the project's keys sit in a stack file.

Pulumi gives a project's config the project's name (Pulumi.yaml `name`) as its namespace, so every key
is written `gpu-platform:<section>...`. Not a Kubernetes namespace. Every config module builds the key
paths of its messages from `CONFIG_NAMESPACE`, so this module imports nothing.
"""

from __future__ import annotations

CONFIG_NAMESPACE = "gpu-platform"
