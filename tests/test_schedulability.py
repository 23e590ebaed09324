"""The schedulability proof: every nominal quota Kueue promises, Karpenter can launch nodes for.

What Karpenter counts and launches is config/advertised.py's (tests/test_advertised.py holds it to
kubernetes-sigs/karpenter v1.14.1: scheduler.go filterByRemainingResources stops launching a type
whose capacity no longer fits in what is left of the NodePool's limit). Here: the promise per flavor
and resource, the one line a config gets when a pool cannot keep it, and capacity nobody can use
(Kueue admits only against ClusterQueues' nominal quotas; borrowing lends another queue's unused
nominal: kubernetes-sigs/kueue v0.19.2 pkg/cache/scheduler/clusterqueue_snapshot.go).
"""

from __future__ import annotations

import pytest

from config.schedulability import promises, unpromised

from .conftest import FIXTURES, fixture_document, load, problems_of, render_fixture

DRA_GPU = "gpu.nvidia.com.deviceclass.resource.k8s.io/devices"
P = "gpu-platform:nodePools"


@pytest.mark.parametrize("fixture", FIXTURES)
def test_every_fixture_quota_is_launchable(fixture):
    config = load(fixture_document(fixture))
    rows = promises(config.flavors, config.tenants)
    assert rows and all(row.holds for row in rows)


def test_a_promise_names_its_pool_the_types_that_advertise_it_and_the_limit_karpenter_counts():
    config = load(fixture_document("single-pool-dra"))
    table = {(r.flavor.name, r.resource): r for r in promises(config.flavors, config.tenants)}
    assert set(table) == {
        ("l40s-on-demand", "nvidia.com/gpu"), ("l40s-spot", "nvidia.com/gpu"), ("l4-dra-on-demand", DRA_GPU),
    }
    # Time-sliced: quota in slices (12 + 12 on-demand, 4 spot: 28 on the pool), limit 8 GPUs x 4 slices.
    sliced = table[("l40s-on-demand", "nvidia.com/gpu")]
    assert (sliced.quota, sliced.promised_on_pool, sliced.limit, sliced.reachable) == (24, 28, ("nvidia.com/gpu", 32), 32)
    assert sliced.advertised_by[0] == "g6e.xlarge" and len(sliced.advertised_by) == 8
    # DRA: Karpenter counts no device, so the pool is limited in nodes: 2 GPUs / 1 per node = 2 nodes of 1.
    dra = table[("l4-dra-on-demand", DRA_GPU)]
    assert (dra.quota, dra.limit, dra.reachable, dra.advertised_by) == (2, ("nodes", 2), 2, ("g6.xlarge", "g6.2xlarge"))


def test_mig_quota_is_proven_per_profile_the_pool_advertises():
    config = load(fixture_document("multi-pool"))
    mig = [(r.resource, r.quota, r.limit) for r in promises(config.flavors, config.tenants) if r.flavor.name == "h100-on-demand"]
    # 32 GPUs promised (16 + 8 + 8), each 2x 1g, 1x 2g, 1x 3g; limits per profile, 32 GPUs' worth.
    assert mig == [
        ("nvidia.com/mig-1g.10gb", 64, ("nvidia.com/mig-1g.10gb", 64)),
        ("nvidia.com/mig-2g.20gb", 32, ("nvidia.com/mig-2g.20gb", 32)),
        ("nvidia.com/mig-3g.40gb", 32, ("nvidia.com/mig-3g.40gb", 32)),
    ]


def test_a_time_sliced_limit_its_nodes_cannot_fill_is_refused():
    document = fixture_document("single-pool")
    # 7 GPUs x 4 slices = 28, all promised; a g6e.12xlarge node is 16 slices, so Karpenter stops at one
    # node (16) with 12 left that no node fits.
    document[P][0].update(instanceFamilies=[], instanceTypes=["g6e.12xlarge"], gpus=7)
    assert problems_of(document) == [
        f"{P}[gpu-l40s].gpus: pool gpu-l40s is promised 28 nvidia.com/gpu (nominal quotas on its flavors), but its NodePool "
        "limit nvidia.com/gpu: 28 lets Karpenter surely launch only 16 on g6e.12xlarge: lower the quotas to 16 or "
        "declare gpus that its instance types fill"
    ]


def test_a_mig_pool_whose_limit_splits_a_node_is_refused_per_profile():
    document = fixture_document("multi-pool")
    document[P][0]["gpus"] = 36  # 4 GPUs past the 4th p5.48xlarge: Karpenter launches 4 nodes, 32 GPUs
    document["gpu-platform:tenants"][3]["gpu"]["h100-on-demand"]["nominal"] = 2  # 34 GPUs promised
    assert problems_of(document) == [
        f"{P}[gpu-h100].gpus: pool gpu-h100 is promised {per_gpu * 34} nvidia.com/mig-{profile} (nominal quotas on its "
        f"flavors), but its NodePool limit nvidia.com/mig-{profile}: {per_gpu * 36} lets Karpenter surely launch "
        f"only {per_gpu * 32} on p5.48xlarge: lower the quotas to {per_gpu * 32} or declare gpus that its instance "
        "types fill"
        for profile, per_gpu in (("1g.10gb", 2), ("2g.20gb", 1), ("3g.40gb", 1))
    ]


def test_a_dra_pool_reaches_its_node_limit_times_its_nodes_devices():
    document = fixture_document("single-pool-dra")
    # Nodes of 4 L4s (a DRA pool's types share one GPU count); 5 GPUs make a node group of 5 // 4 = 1 node.
    document[P][1].update(instanceTypes=["g6.12xlarge", "g6.24xlarge"], gpus=5)
    [tenant] = [t for t in document["gpu-platform:tenants"] if "l4-dra-on-demand" in (t.get("gpu") or {})]
    tenant["gpu"]["l4-dra-on-demand"]["nominal"] = 5
    assert problems_of(document) == [
        f"{P}[gpu-l4-dra].gpus: pool gpu-l4-dra is promised 5 {DRA_GPU} (nominal quotas on its flavors), but its node "
        "group of 1 nodes surely holds only 4 on g6.12xlarge, g6.24xlarge: lower the quotas to 4 or "
        "declare gpus that its instance types fill"
    ]


def test_a_pool_promised_more_than_it_declares_is_refused_once_by_the_capacity_check():
    document = fixture_document("single-pool")
    document["gpu-platform:tenants"][0]["gpu"]["l40s-spot"]["nominal"] = 8  # 32 promised, 32 declared: fine
    assert all(r.holds for r in promises(load(document).flavors, load(document).tenants))
    document["gpu-platform:tenants"][0]["gpu"]["l40s-spot"]["nominal"] = 9
    [line] = problems_of(document)
    # Summed in tenant order, the pool's 33rd slice is inference's: fair_share.py's line, and no second one.
    assert line.startswith(
        "gpu-platform:tenants[inference].gpu.l40s-on-demand.nominal: 12 GPU slices (3 GPUs at 4 slices each) makes 33"
    )


def test_capacity_no_nominal_quota_covers_is_flagged():
    config = load(fixture_document("single-pool"))
    [spare] = unpromised(config.flavors, config.tenants)
    # 32 slices reachable, 24 + 4 nominal: 4 slices no tenant holds, so no tenant can borrow them.
    assert (spare.pool.name, spare.resource, spare.reachable, spare.promised, spare.amount) == (
        "gpu-l40s", "nvidia.com/gpu", 32, 28, 4,
    )
    multi = load(fixture_document("multi-pool"))
    assert unpromised(multi.flavors, multi.tenants) == []


def test_the_summary_shows_the_proof_and_the_unpromised_capacity():
    from offline.summary import render_summary

    summary = render_summary(render_fixture("single-pool-dra"), load(fixture_document("single-pool-dra")))
    section = summary.split("## Schedulability\n", 1)[1].split("\n## ", 1)[0]
    assert "| flavor | resource | quota | advertised by | limit in Karpenter's units | ✓/✗ |" in section
    assert (
        f"| `l4-dra-on-demand` | `{DRA_GPU}` | 2 | `gpu-l4-dra`: g6.xlarge, g6.2xlarge | `node group: 2 nodes` (reaches 2) | ✓ |"
        in section
    )
    assert "| `l40s-spot` | `nvidia.com/gpu` | 4 (28 on the pool) |" in section
    assert "**Unpromised:** pool `gpu-l40s` reaches 32 `nvidia.com/gpu` but only 28 are nominal quota" in section
    assert "✗" not in section.split("|---|", 1)[1]
