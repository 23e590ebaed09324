"""A discrete-event simulation of the platform: what a stack's config delivers for a workload.

    inputs     workload.py (the workload file; schema.py its JSON Schema), trace.py (recorded traces),
               experiment.py Scenario (config, workload, variant), variants.py (the variants as data: the fair
               static baseline, each mechanism off), baseline.py (fixed capacity: nominal, or pinned at the limit)
    core       clock.py (SimPy; timers are plain callbacks), rng.py (one random stream per purpose),
               state.py (pools, nodes, workloads, pods: no counters), ledger.py (append-only facts)
    mechanics  queueing.py (the Kueue seam) and admission.py (models/kueue through it), admissibility.py
               (work the stack can never run), engine.py (pods onto nodes, Karpenter via models/karpenter),
               serving.py (request rates -> KEDA -> the HPA), warm_start.py, arrivals.py, sampling.py
    results    measures.py (every figure, from the ledger, by metric id), stats.py (percentiles, Student-t
               intervals), experiment.py (run_one(Scenario, seed) -> plain data; run_many over a process pool)
    outputs    report.py (report.json, and report.md from it), plots.py (from report.json), cli.py
               (`python -m offline simulate`); offline/bench_sim.py is `make bench-sim`

It reads the stack's `PlatformConfig` (the render's, from offline/stack.py), never the stack file, and
the ClusterQueues and Cohorts from the builders the render declares them with (config/kueue_objects.py),
so Kueue here gets exactly what the cluster gets.
"""
