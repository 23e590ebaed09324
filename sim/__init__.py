"""A discrete-event simulation of the platform: what a stack's config delivers for a workload.

    workload.py   the workload file (inference traffic, job streams, traces) and its schema (schema.py)
    trace.py      recorded traces and the rule that maps them onto a stack
    clock.py      simulated time on SimPy; timers are plain callbacks
    events.py     what a run records (totals, waits, times to GPU, sampled series)
    state.py      pools, nodes, workloads and pods, built from the derived plans
    queueing.py   the seam to Kueue; admission.py drives models/kueue through it
    engine.py     pods onto nodes, Karpenter's provisioning and disruption (models/karpenter)
    serving.py    request rates -> KEDA's metrics -> the HPA (models/keda, models/kubernetes/hpa.py)
    arrivals.py   job streams and trace tasks as Kueue workloads; sampling.py the plots' series
    run.py        check a workload against the stack, build, run; report.py and plots.py the output
    cli.py        `python -m offline simulate`; bench.py `make bench-sim`

It reads the stack's `PlatformConfig` (the render's, from offline/stack.py), never the stack file, and
the ClusterQueues and Cohorts from the builders the render declares them with (components/queueing.py),
so Kueue here gets exactly what the cluster gets.
"""
