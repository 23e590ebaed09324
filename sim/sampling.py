"""The plots' series, sampled every `sampleInterval` of simulated time."""

from __future__ import annotations

from . import warm_start
from .engine import Simulation
from .serving import Deployment


def start_sampling(sim: Simulation, deployments: list[Deployment], interval: float) -> None:
    record = sim.record
    tenants = sorted(sim.tenants)

    def sample() -> None:
        hours = sim.now / 3600
        for series in (record.allocation, record.queue_depth, record.nodes, record.replicas):
            series.times.append(hours)
        for name, pool in sorted(sim.pools.items()):
            # From launch, as the report counts provisioned GPU-hours (sim/measures.py): billed from then.
            provisioned = sum(node.instance.gpus for node in pool.nodes)
            # The headroom's placeholders are idle GPUs, as in the report's allocation.
            held = (pod.units for node in pool.nodes for pod in node.pods if not warm_start.is_placeholder(pod.group))
            allocated = sum(held) / pool.slices_per_gpu
            record.allocation.values[name].append(100 * allocated / provisioned if provisioned else 0.0)
            record.nodes.values[name].append(float(len(pool.nodes)))
        pending = sim.kueue.pending()
        for tenant in tenants:
            record.queue_depth.values[tenant].append(float(pending.get(tenant, 0)))
        for deployment in deployments:
            record.replicas.values[f"{deployment.name} replicas"].append(float(len(deployment.replicas)))
            record.replicas.values[f"{deployment.name} ready"].append(float(deployment.ready()))
            needed = deployment.demand() / deployment.load.requests_per_second_per_replica
            record.replicas.values[f"{deployment.name} demand"].append(needed)

    sim.clock.every(interval, sample)
