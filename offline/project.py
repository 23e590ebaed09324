"""The Pulumi project this repository is: its name and its directory. Imports nothing, so the CLI's
Pulumi-free commands (`check`, `kubernetes-version`) can name the project without loading the SDK."""

from __future__ import annotations

from pathlib import Path

# Pulumi.yaml `name`: the engine puts it in every URN and gives it to bare keys of a stack file.
PROJECT = "gpu-platform"
PROJECT_DIR = Path(__file__).resolve().parent.parent
