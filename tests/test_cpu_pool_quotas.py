"""Tenants' CPU and memory quotas against the CPU pool's NodePool limits, as GPU quotas are against their pools.

single-pool: cpuPool `cpuLimit: 64`, `memoryLimitGiB: 256`; tenants ml-research 32 vCPUs / 128 GiB and
inference 16 / 64, so 16 vCPUs and 64 GiB are left.
"""

from __future__ import annotations

import pytest

from .conftest import fixture_document, load, problems_of

T = "gpu-platform:tenants"



def with_tenant(**fields) -> dict:
    document = fixture_document("single-pool")
    document[T].append({"name": "vision", "gpu": {}, "admins": ["arn:aws:iam::111122223333:role/VisionAdmin"], **fields})
    return document


@pytest.mark.parametrize(
    "fields, problem",
    [
        (
            {"cpu": 17, "memoryGiB": 64},
            "gpu-platform:tenants[vision].cpu: 17 vCPUs makes 65 promised on the CPU pool, whose cpuLimit is 64: "
            "lower the quota or raise gpu-platform:cpuPool.cpuLimit to 65",
        ),
        (
            {"cpu": 16, "memoryGiB": 65},
            "gpu-platform:tenants[vision].memoryGiB: 65 GiB makes 257 promised on the CPU pool, whose memoryLimitGiB "
            "is 256: lower the quota or raise gpu-platform:cpuPool.memoryLimitGiB to 257",
        ),
        (
            # Without cpu and memoryGiB a tenant asks for 32 vCPUs and 128 GiB: both limits overflow.
            {},
            "gpu-platform:tenants[vision].cpu: 32 vCPUs makes 80 promised on the CPU pool, whose cpuLimit is 64: "
            "lower the quota or raise gpu-platform:cpuPool.cpuLimit to 80",
        ),
    ],
    ids=["cpu-one-over", "memory-one-over", "defaults"],
)
def test_cpu_and_memory_quotas_past_the_cpu_pools_limits_are_refused_at_the_tenant_that_overflows(fields, problem):
    assert problem in problems_of(with_tenant(**fields))


def test_the_defaults_overflow_memory_too_and_say_so_in_one_line_each():
    found = [p for p in problems_of(with_tenant()) if "CPU pool" in p]
    assert len(found) == 2 and found[1].startswith("gpu-platform:tenants[vision].memoryGiB: 128 GiB makes 320")


def test_quotas_exactly_at_the_cpu_pools_limits_are_accepted():
    config = load(with_tenant(cpu=16, memoryGiB=64))
    assert sum(t.config.cpu for t in config.tenants) == config.cpu_pool.cpu_limit == 64
    assert sum(t.config.memory_gib for t in config.tenants) == config.cpu_pool.memory_limit_gib == 256


def test_the_first_tenant_past_the_limit_is_named_and_the_fix_covers_every_tenant():
    document = fixture_document("single-pool")
    document["gpu-platform:cpuPool"]["cpuLimit"] = 40
    [problem] = [p for p in problems_of(document) if "CPU pool" in p]
    assert problem == (
        "gpu-platform:tenants[inference].cpu: 16 vCPUs makes 48 promised on the CPU pool, whose cpuLimit is 40: "
        "lower the quota or raise gpu-platform:cpuPool.cpuLimit to 48"
    )


def test_the_summarys_capacity_table_shows_the_cpu_pool_promised_against_its_limits():
    from offline.summary import render_summary

    from .conftest import render_fixture

    summary = render_summary(render_fixture("single-pool"), load(fixture_document("single-pool")))
    section = summary[summary.index("## Capacity promised vs declared") :]
    assert "| `cpu` (cpu) | cpu | 48 / 64 vCPUs | 16 |" in section
    assert "| `cpu` (memory) | cpu | 192 / 256 GiB | 64 |" in section
