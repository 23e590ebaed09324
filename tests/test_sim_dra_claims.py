"""The simulator places pods of claim templates by their devices' attributes (sim/claims_placement.py).

Hand-computed on tests/fixtures/held_out/dra-mig.yaml: pool gpu-h100-mig is two p5.4xlarge nodes of one H100
each, cut into 3g.40gb, 2g.20gb and two 1g.10gb (four MIG devices per node, one of them a 3g.40gb); pool
gpu-l4-dra is two g6.12xlarge nodes of four L4s. Tenant ml-research holds nominal 1 GPU of the MIG flavor:
4 devices of mig.nvidia.com. Its template big-slice asks for one device of memory >= 39Gi and profile 3g.40gb.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import pytest
import yaml

from config import PlatformConfig
from sim import measures as m
from sim.admission import kueue_for
from sim.run import Result, simulate
from sim.workload import Workload, WorkloadError, read_workload
from sim.workload_check import check

from .conftest import load

HELD_OUT = Path(__file__).parent / "fixtures" / "held_out" / "dra-mig.yaml"


@functools.cache
def _mig_document() -> dict[str, Any]:
    return yaml.safe_load(HELD_OUT.read_text())["config"]


@functools.cache
def mig_config() -> PlatformConfig:
    return load(copy.deepcopy(_mig_document()))


@functools.cache
def memory_config() -> PlatformConfig:
    """Three whole-GPU DRA pools: two 1-GPU g6e.xlarge nodes (L40S, 44.99Gi), one p5.4xlarge (H100, 79.65Gi),
    one g6.12xlarge of four L4s (22.49Gi). Template big-mem: one GPU of memory >= 40Gi; l4-pair: two devices of
    the administrator's DeviceClass l4 (productName NVIDIA L4). Tenant ml-research holds 2 GPUs on the L40S
    flavor, 1 on the H100 flavor, and 4 of DeviceClass l4 on the L4 flavor."""
    document = copy.deepcopy(_mig_document())
    document["gpu-platform:nodePools"] = [
        {"name": "gpu-l40s-dra", "instanceTypes": ["g6e.xlarge"], "capacityTypes": ["on-demand"], "gpus": 2,
         "allocation": "dra"},
        {"name": "gpu-h100-dra", "instanceTypes": ["p5.4xlarge"], "capacityTypes": ["on-demand"], "gpus": 1,
         "allocation": "dra"},
        {"name": "gpu-l4-dra", "instanceTypes": ["g6.12xlarge"], "capacityTypes": ["on-demand"], "gpus": 4,
         "allocation": "dra"},
    ]
    document["gpu-platform:gpu"]["dra"] = {
        "enabled": True,
        "deviceClasses": [{"name": "l4", "productName": "NVIDIA L4"}],
        "claimTemplates": [
            {"name": "big-mem", "namespace": "ml-research", "minMemoryGiB": 40},
            {"name": "l4-pair", "namespace": "ml-research", "deviceClass": "l4", "count": 2},
        ],
    }
    research = next(t for t in document["gpu-platform:tenants"] if t["name"] == "ml-research")
    research["gpu"] = {
        "l40s-dra-on-demand": {"nominal": 2},
        "h100-dra-on-demand": {"nominal": 1},
        "l4-dra-on-demand": {"nominal": 4, "deviceClass": "l4"},
    }
    document["gpu-platform:tenants"] = [research]
    return load(document)


def _run(config: PlatformConfig, jobs: list[dict[str, Any]], duration: str = "2h") -> Result:
    workload = Workload.model_validate({"start": "2026-06-01T00:00:00Z", "duration": duration, "jobs": jobs})
    return simulate(config, workload, kueue_for)


@functools.cache
def mig_run() -> Result:
    """Five jobs of one pod at 0s, each 4 minutes, each asking for one 3g.40gb device through big-slice."""
    return _run(mig_config(), [{"name": "big", "tenant": "ml-research", "claimTemplate": "big-slice",
                                "arrivals": {"at": ["0s"] * 5}, "duration": {"fixed": "4m"}}])


def test_a_3g40gb_claim_lands_only_on_the_mig_pool_one_per_node_the_rest_wait() -> None:
    ledger = mig_run().sim.ledger
    # Kueue charges 1 mig.nvidia.com device a pod and ml-research holds 4: jobs 1-4 admitted at 0, job 5 when
    # jobs 1 and 2 finish at 240 s. Each node has one 3g.40gb device: jobs 1, 2 start at 0; 3, 4 (admitted,
    # pending) bind at 240 s; job 5 finds no free 3g.40gb device until 3 and 4 finish at 480 s.
    assert [(a.key, a.flavor, a.at) for a in ledger.admitted] == [
        (1, "h100-mig-on-demand", 0.0), (2, "h100-mig-on-demand", 0.0), (3, "h100-mig-on-demand", 0.0),
        (4, "h100-mig-on-demand", 0.0), (5, "h100-mig-on-demand", 240.0),
    ]
    assert [(s.key, s.at) for s in ledger.started] == [(1, 0.0), (2, 0.0), (3, 240.0), (4, 240.0), (5, 480.0)]
    # One device of four on a 1-GPU node: a quarter of a GPU, a quarter of the node's price (6.88 USD/h) for 240 s.
    assert [(h.key, h.pool, h.gpus, h.start, h.end) for h in ledger.held] == [
        (1, "gpu-h100-mig", 0.25, 0.0, 240.0), (2, "gpu-h100-mig", 0.25, 0.0, 240.0),
        (3, "gpu-h100-mig", 0.25, 240.0, 480.0), (4, "gpu-h100-mig", 0.25, 240.0, 480.0),
        (5, "gpu-h100-mig", 0.25, 480.0, 720.0),
    ]
    assert [h.cost for h in ledger.held] == pytest.approx([6.88 / 4 * 240 / 3600] * 5)


def test_dra_pools_stand_from_the_start_and_the_report_counts_their_devices() -> None:
    result = mig_run()
    ledger = result.sim.ledger
    # The node groups: 2 x p5.4xlarge and 8 L4s / 4 per g6.12xlarge = 2 nodes, Ready at 0, never removed.
    assert sorted((n.pool, n.instance, n.gpus, n.capacity_type, n.at) for n in ledger.nodes) == [
        ("gpu-h100-mig", "p5.4xlarge", 1, "on-demand", 0.0), ("gpu-h100-mig", "p5.4xlarge", 1, "on-demand", 0.0),
        ("gpu-l4-dra", "g6.12xlarge", 4, "on-demand", 0.0), ("gpu-l4-dra", "g6.12xlarge", 4, "on-demand", 0.0),
    ]
    assert ledger.down == [] and ledger.disrupted == []
    scope = m.Scope(("gpu-h100-mig", "gpu-l4-dra"), ("inference", "ml-research", "vision"), ("production", "standard"), ())
    pools = m.compute(ledger, scope)["pools"]
    # Provisioned: 2 GPUs x 2 h and 8 GPUs x 2 h; allocated: five quarter-GPUs for 240 s; cost: always on.
    assert pools["gpu-h100-mig"][m.PROVISIONED] == pytest.approx(4.0)
    assert pools["gpu-h100-mig"][m.ALLOCATED] == pytest.approx(5 * 0.25 * 240 / 3600)
    assert pools["gpu-h100-mig"][m.COST] == pytest.approx(2 * 6.88 * 2)
    assert pools["gpu-l4-dra"][m.PROVISIONED] == pytest.approx(16.0)
    assert pools["gpu-l4-dra"][m.COST] == pytest.approx(2 * 4.6016 * 2)
    assert pools["gpu-l4-dra"][m.LAUNCHED] == 2


def test_a_claim_by_memory_lands_on_both_pools_that_match_and_never_on_the_l4s() -> None:
    # Four one-GPU jobs of 10 minutes at 0s, charged 1 gpu.nvidia.com device each: quota 2 (L40S) + 1 (H100), the
    # DeviceClass-l4 quota never holds them. Jobs 1, 2 on the L40S flavor (the queue's first), 3 on the H100's,
    # 4 waits for quota until 600 s and lands on the first flavor with room.
    result = _run(memory_config(), [{"name": "mem", "tenant": "ml-research", "claimTemplate": "big-mem",
                                     "arrivals": {"at": ["0s"] * 4}, "duration": {"fixed": "10m"}}], duration="1h")
    ledger = result.sim.ledger
    assert [(a.key, a.flavor, a.at) for a in ledger.admitted] == [
        (1, "l40s-dra-on-demand", 0.0), (2, "l40s-dra-on-demand", 0.0), (3, "h100-dra-on-demand", 0.0),
        (4, "l40s-dra-on-demand", 600.0),
    ]
    assert [(h.key, h.pool, h.gpus, h.start, h.end) for h in ledger.held] == [
        (1, "gpu-l40s-dra", 1.0, 0.0, 600.0), (2, "gpu-l40s-dra", 1.0, 0.0, 600.0),
        (3, "gpu-h100-dra", 1.0, 0.0, 600.0), (4, "gpu-l40s-dra", 1.0, 600.0, 1200.0),
    ]


def test_a_claim_of_an_administrators_class_takes_its_devices_two_per_pod_on_the_l4_node() -> None:
    # Charged 2 devices of l4 a pod against 4: jobs 1, 2 admitted at 0 and both fit the one node's four L4s;
    # job 3 waits for quota until 600 s.
    result = _run(memory_config(), [{"name": "pair", "tenant": "ml-research", "claimTemplate": "l4-pair",
                                     "arrivals": {"at": ["0s"] * 3}, "duration": {"fixed": "10m"}}], duration="1h")
    ledger = result.sim.ledger
    assert [(a.key, a.flavor, a.at) for a in ledger.admitted] == [
        (1, "l4-dra-on-demand", 0.0), (2, "l4-dra-on-demand", 0.0), (3, "l4-dra-on-demand", 600.0),
    ]
    assert [(h.key, h.pool, h.gpus, h.start, h.end) for h in ledger.held] == [
        (1, "gpu-l4-dra", 2.0, 0.0, 600.0), (2, "gpu-l4-dra", 2.0, 0.0, 600.0), (3, "gpu-l4-dra", 2.0, 600.0, 1200.0),
    ]


def _problems(tmp_path: Path, config: PlatformConfig, stream: str) -> list[str]:
    path = tmp_path / "w.yaml"
    path.write_text(f'start: "2026-06-01T00:00:00Z"\nduration: 1h\njobs:\n{stream}')
    read = read_workload(path)
    with pytest.raises(WorkloadError) as caught:
        check(config, read.workload, str(path), locator=read.locator)
    return [line.replace(str(path), "w.yaml") for line in caught.value.problems]


@pytest.mark.parametrize(("stream", "expected"), [
    (
        "  - name: typo\n    tenant: ml-research\n    claimTemplate: big-slise\n"
        "    arrivals: {at: [0s]}\n    duration: {fixed: 4m}\n",
        "w.yaml:6: jobs[typo].claimTemplate: 'big-slise' is no claim template of namespace ml-research in "
        "gpu.dra.claimTemplates (big-slice, small-slice): name one of those, or add it to the stack",
    ),
    (
        # h100-half is vision's, not ml-research's: a pod names only a template of its own namespace.
        "  - name: other\n    tenant: ml-research\n    claimTemplate: h100-half\n"
        "    arrivals: {at: [0s]}\n    duration: {fixed: 4m}\n",
        "w.yaml:6: jobs[other].claimTemplate: 'h100-half' is no claim template of namespace ml-research in "
        "gpu.dra.claimTemplates (big-slice, small-slice): name one of those, or add it to the stack",
    ),
])
def test_a_stream_naming_no_template_of_its_tenant_is_refused_in_one_line(
    tmp_path: Path, stream: str, expected: str
) -> None:
    assert _problems(tmp_path, mig_config(), stream) == [expected]


def test_a_stream_whose_template_matches_none_of_its_pools_is_refused_naming_what_they_publish(tmp_path: Path) -> None:
    stream = ("  - name: mem\n    tenant: ml-research\n    claimTemplate: big-mem\n    flavors: [l4-dra-on-demand]\n"
              "    arrivals: {at: [0s]}\n    duration: {fixed: 4m}\n")
    [line] = _problems(tmp_path, memory_config(), stream)
    assert line.startswith(
        "w.yaml:6: jobs[mem].claimTemplate: 'big-mem': no DRA pool among flavors l4-dra-on-demand of tenant ml-research "
        "publishes devices that match its selectors (class gpu.nvidia.com; the pools publish gpu-l40s-dra: productName "
        "NVIDIA L40S"
    )
    assert "gpu-l4-dra: productName NVIDIA L4, architecture Ada Lovelace, cudaComputeCapability 8.9.0, memory 22.49Gi" in line
    assert line.endswith("list a flavor of a pool that matches, or use a template its pools match")
    # The class alone excludes the L40S: a template of DeviceClass l4 matches nothing on flavor l40s-dra-on-demand.
    stream = ("  - name: pair\n    tenant: ml-research\n    claimTemplate: l4-pair\n    flavors: [l40s-dra-on-demand]\n"
              "    arrivals: {at: [0s]}\n    duration: {fixed: 4m}\n")
    [line] = _problems(tmp_path, memory_config(), stream)
    assert line.startswith("w.yaml:6: jobs[pair].claimTemplate: 'l4-pair': no DRA pool among flavors l40s-dra-on-demand "
                           "of tenant ml-research publishes devices that match its selectors (class l4; ")


def test_a_stream_gives_gpus_per_pod_or_a_claim_template_not_both() -> None:
    base = {"name": "x", "tenant": "t", "arrivals": {"at": ["0s"]}, "duration": {"fixed": "1m"}}
    for extra in ({}, {"gpusPerPod": 1, "claimTemplate": "big-slice"}):
        with pytest.raises(ValueError, match="exactly one of gpusPerPod"):
            Workload.model_validate({"start": "2026-06-01T00:00:00Z", "duration": "1h", "jobs": [{**base, **extra}]})
