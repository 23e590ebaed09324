"""Builders shared by tests: a tenant's plan by name, and what Kueue reads of a rendered tenant namespace.

They look things up and assemble inputs; what a controller does with them is in the models the tests
call (tests/test_layering.py keeps behaviour out of this module).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from config import PlatformConfig
from config.fair_share import TenantPlan
from models.kueue.workload import Tenancy
from offline.engine import Recording

from .recorded import kubernetes_objects, releases


def tenant_plan(config: PlatformConfig, name: str) -> TenantPlan:
    """The plan of tenant `name`; fails the test when the config has no such tenant."""
    [plan] = [tenant for tenant in config.tenants if tenant.name == name]
    return plan


def kueue_manager_config(recording: Recording) -> dict[str, Any]:
    """The Configuration the rendered Kueue release hands its controller."""
    values = releases(recording)["kueue"].inputs["values"]
    return yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])


def tenancy_of(recording: Recording, namespace: str, *, kueue_config: Mapping[str, Any] | None = None) -> Tenancy:
    """What Kueue reads of a rendered tenant namespace besides the job: its LimitRange defaults and claim
    templates, the cluster's training runtimes, and Kueue's config (the rendered one unless given)."""
    objects = [r.inputs for r in kubernetes_objects(recording)]
    in_namespace = [o for o in objects if o["metadata"].get("namespace") == namespace]
    [limit_range] = [o for o in in_namespace if o["kind"] == "LimitRange"]
    return Tenancy(
        default_requests=limit_range["spec"]["limits"][0]["defaultRequest"],
        claim_templates={o["metadata"]["name"]: o for o in in_namespace if o["kind"] == "ResourceClaimTemplate"},
        kueue_config=kueue_manager_config(recording) if kueue_config is None else kueue_config,
        runtimes={o["metadata"]["name"]: o for o in objects if o["kind"] == "ClusterTrainingRuntime"},
    )
