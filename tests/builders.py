"""Builders shared by tests: a tenant's plan by name, what Kueue reads of a rendered tenant namespace, and
stack variants several test modules read.

They look things up and assemble inputs; what a controller does with them is in the models the tests
call (tests/test_layering.py keeps behaviour out of this module).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from config import PlatformConfig
from config.dra_devices import device_class_selectors
from config.dra_devices import published_devices as config_published_devices
from config.fair_share import TenantPlan
from config.node_pools import DraConfig
from models.kubernetes.dra_cel import Device
from models.kueue.workload import Tenancy
from offline.engine import Recording

from .conftest import fixture_document
from .recorded import kubernetes_objects, releases


def tenant_plan(config: PlatformConfig, name: str) -> TenantPlan:
    """The plan of tenant `name`; fails the test when the config has no such tenant."""
    [plan] = [tenant for tenant in config.tenants if tenant.name == name]
    return plan


def kueue_manager_config(recording: Recording) -> dict[str, Any]:
    """The Configuration the rendered Kueue release hands its controller."""
    values = releases(recording)["kueue"].inputs["values"]
    return yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])


def tenancy_of(
    recording: Recording,
    namespace: str,
    *,
    kueue_config: Mapping[str, Any] | None = None,
    published_devices: Sequence[tuple[Device, int]] | None = None,
    dra: DraConfig | None = None,
    config: PlatformConfig | None = None,
) -> Tenancy:
    """What Kueue reads of a rendered tenant namespace besides the job: its LimitRange defaults and claim
    templates, the cluster's training runtimes, and Kueue's config (the rendered one unless given); with the
    stack's `config`, the devices its DRA pools publish and its DeviceClasses."""
    if config is not None:
        published_devices = config_published_devices(config.gpu_pools)
        dra = config.gpu.dra
    objects = [r.inputs for r in kubernetes_objects(recording)]
    in_namespace = [o for o in objects if o["metadata"].get("namespace") == namespace]
    [limit_range] = [o for o in in_namespace if o["kind"] == "LimitRange"]
    return Tenancy(
        default_requests=limit_range["spec"]["limits"][0]["defaultRequest"],
        claim_templates={o["metadata"]["name"]: o for o in in_namespace if o["kind"] == "ResourceClaimTemplate"},
        kueue_config=kueue_manager_config(recording) if kueue_config is None else kueue_config,
        runtimes={o["metadata"]["name"]: o for o in objects if o["kind"] == "ClusterTrainingRuntime"},
        published_devices=published_devices if published_devices is not None else (),
        device_class_selectors=device_class_selectors(dra or DraConfig()),
    )


def stack_item(items: list[dict[str, Any]], name: str) -> dict[str, Any]:
    """The item of a stack list (`nodePools`, `tenants`) called `name`; fails the test when there is not one."""
    [item] = [item for item in items if item["name"] == name]
    return item


def irregular_capacity_document() -> dict[str, Any]:
    """multi-pool made irregular, so each of the summary's figures comes from one rule only.

    - gpu-h100: MIG (3g.40gb + 2g.20gb + 2x 1g.10gb per GPU), 32 GPUs, all promised: 16 + 8 + 8.
    - gpu-a100: 32 GPUs on on-demand and spot, a flavor each; 20 promised over both (4 on-demand, 8 + 8
      spot), with 6 GPUs of headroom in 3 placeholders of 2.
    - gpu-l40s: 16 GPUs time-sliced 3 ways (48 slices), two tenants sharing them: 21 + 9 slices promised,
      6 and 9 borrowable, with 2 GPUs of headroom.
    """
    document = fixture_document("multi-pool")
    pools, tenants = document["gpu-platform:nodePools"], document["gpu-platform:tenants"]
    stack_item(pools, "gpu-a100").update(capacityTypes=["on-demand", "spot"], gpus=32)
    stack_item(pools, "gpu-l40s").update(
        sharing={"mode": "timeSlicing", "replicas": 3, "shareBetweenTenants": True},
        warmStart={"headroom": {"gpus": 2}},
    )
    document["gpu-platform:queueing"]["flavorPerCapacityType"] = ["gpu-a100"]
    stack_item(tenants, "inference")["gpu"]["l40s-on-demand"] = {"nominal": 21, "borrowingLimit": 6}
    stack_item(tenants, "data-science")["gpu"] = {
        "h100-on-demand": {"nominal": 8, "borrowingLimit": 8},
        "a100-spot": {"nominal": 8},
        "a100-on-demand": {"nominal": 4},
        "l40s-on-demand": {"nominal": 9, "borrowingLimit": 9},
    }
    return document
