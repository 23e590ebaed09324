"""The Kueue seam's scheduling loop (sim/admission.py): a run of heads of shapes known NoFit is set aside in one
step, and the loop still admits what Kueue's loop over models/kueue admits, head by head, cycle by cycle.

dev as shipped: ClusterQueues ml-research (l40s-on-demand: nominal 12, borrowingLimit 4; l40s-spot: nominal 4)
and inference (l40s-on-demand: nominal 12, borrowingLimit 4, lendingLimit 4) in one flat cohort; priorities
production 1000, standard 500, best-effort 100; one L40S GPU per unit.
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from models.kueue import (
    ADMITTED,
    NO_FIT_STATUS,
    PREEMPTING,
    PendingQueue,
    PodSet,
    Snapshot,
    Workload,
    apply,
    heads,
    schedule,
)
from models.kueue.cohort import BEST_EFFORT_FIFO
from sim.admission import ModelKueue, Pending, kueue_for
from sim.queueing import QueuedWorkload

from .conftest import load, shipped_document

ML, INFERENCE = "ml-research", "inference"
ON_DEMAND, SPOT = "l40s-on-demand", "l40s-spot"
STANDARD, PRODUCTION, BEST_EFFORT = 500, 1000, 100


@pytest.fixture(scope="module")
def dev_config():
    return load(shipped_document("dev"))


def job(key: int, units: int, at: float, queue: str = ML, priority: int = STANDARD, flavors=(ON_DEMAND,)) -> QueuedWorkload:
    return QueuedWorkload(key, queue, priority, at, 1, units, tuple(flavors))


def admitted_keys(kueue: ModelKueue, now: float) -> list[int]:
    decisions = kueue.schedule(now)
    assert decisions.preempted == ()
    return [admission.key for admission in decisions.admitted]


def test_a_run_of_heads_known_nofit_is_set_aside_and_the_next_shape_still_gets_its_turn(dev_config):
    kueue = kueue_for(dev_config, False)
    # ml-research may hold 16 on-demand GPUs: its 12 and the 4 inference lends.
    for key, units in ((1, 10), (2, 8), (3, 8), (4, 8), (5, 4), (6, 2)):
        kueue.submit(job(key, units, at=key))
    # 10 fits; 10 + 8 = 18 > 16 for 2, and so for 3 and 4 (same shape); 10 + 4 = 14 and 14 + 2 = 16 fit.
    assert admitted_keys(kueue, 10) == [1, 5, 6]
    assert kueue.pending() == {ML: 3}
    assert admitted_keys(kueue, 11) == []  # nothing changed: the set-aside ones stay aside
    kueue.release(1)  # 10 GPUs back: everything set aside is in line again
    # 6 + 8 = 14 fits; 14 + 8 = 22 does not, for 3 nor 4.
    assert admitted_keys(kueue, 12) == [2]
    kueue.release(5)
    kueue.release(6)  # 8 in use: 3 fits (16), then 4 does not (24)
    assert admitted_keys(kueue, 13) == [3]
    assert kueue.pending() == {ML: 1}


def test_a_preemptor_waits_as_head_for_its_target_and_those_set_aside_come_back_in_queue_order(dev_config):
    kueue = kueue_for(dev_config, False)
    kueue.submit(job(1, 16, at=0))
    assert admitted_keys(kueue, 0) == [1]
    for key in (2, 3, 4):
        kueue.submit(job(key, 4, at=key))
    # 16 in use; each 4 would need preemption, and 1 is as standard as they are: set aside, one cycle for all three.
    assert admitted_keys(kueue, 5) == []
    kueue.submit(job(5, 4, at=6, priority=PRODUCTION))
    decisions = kueue.schedule(7)
    # 5 preempts 1 (lower priority, its own queue) and stays the head: 1 holds its 16 until its job has stopped.
    assert decisions.preempted == (1,)
    assert decisions.admitted == ()
    assert kueue.pending() == {ML: 4}
    again = kueue.schedule(8)  # still held: 5 finds 1 again, already evicted, and nothing is reported twice
    assert (again.preempted, again.admitted) == ((), ())
    kueue.release_evicted(1)
    # The 16 1 gives back puts 2, 3, 4 back in line behind the head 5, and 4 + 4 + 4 + 4 = 16 holds them all.
    assert admitted_keys(kueue, 9) == [5, 2, 3, 4]
    assert kueue.pending() == {}


def test_strict_fifo_keeps_a_known_nofit_head_and_does_not_look_behind_it():
    queue = Pending("StrictFIFO")
    big, small = Workload("1", ML, (), STANDARD, 0.0), Workload("2", ML, (), STANDARD, 1.0)
    queue.push(big, ("big",))
    queue.push(small, ("small",))
    known = {("big",)}
    assert queue.known_run(known.__contains__, {big: ("big",), small: ("small",)}.__getitem__) is None
    queue.skip(3)
    assert queue.head() is big  # still the head: StrictFIFO never sets it aside
    queue.requeue(big, NO_FIT_STATUS)
    assert queue.head() is big and len(queue) == 2


def test_best_effort_fifo_skips_exactly_the_known_run_in_queue_order():
    queue = Pending(BEST_EFFORT_FIFO)
    shapes = {}
    # queue order: priority first, then time: p0 (prod) ahead of every standard one.
    for name, priority, at, shape in (("a", STANDARD, 1, "x"), ("b", STANDARD, 2, "x"), ("c", STANDARD, 3, "y"),
                                      ("d", STANDARD, 4, "x"), ("p0", PRODUCTION, 9, "x")):
        workload = Workload(name, ML, (), priority, float(at))
        shapes[name] = workload
        queue.push(workload, (shape,))
    run = queue.known_run({("x",)}.__contains__, lambda w: ())
    assert run == 3  # p0, a, b are x; c is the first y
    queue.skip(run)
    assert queue.head() is shapes["c"]
    queue.requeue(shapes["c"], NO_FIT_STATUS)  # set aside
    assert queue.head() is shapes["d"]
    queue.queue_inadmissible()
    assert queue.head() is shapes["p0"] and len(queue) == 5


def test_a_run_set_aside_ends_the_wait_of_a_preemptor_already_admitted():
    """PendingQueue keeps a preemptor as the head until its queue's next requeue; a run set aside is such requeues."""
    queue = Pending(BEST_EFFORT_FIFO)
    preemptor, other = Workload("1", ML, (), PRODUCTION, 0.0), Workload("2", ML, (), STANDARD, 1.0)
    queue.push(preemptor, ("p",))
    queue.push(other, ("o",))
    queue.requeue(preemptor, PREEMPTING)
    assert queue.sticky_in_line()
    queue.remove(preemptor)  # admitted once its targets went
    queue.skip(1)  # `other`, known NoFit, set aside
    preemptor.timestamp = 5.0  # preempted in its turn and back in line, behind `third` in queue order
    third = Workload("3", ML, (), PRODUCTION, 2.0)
    queue.push(third, ("p",))
    queue.push(preemptor, ("p",))
    assert queue.head() is third


def test_shapes_past_a_queues_254th_are_never_taken_as_known_in_bulk():
    queue = Pending(BEST_EFFORT_FIFO)
    for index in range(260):
        queue.push(Workload(str(1000 + index), ML, (), STANDARD, float(index)), (index,))
    unknown = 257
    run = queue.known_run(lambda shape: shape != (unknown,), lambda w: ())
    assert run == 254  # the first workload whose shape has no byte of its own: looked at on its own


def test_leaving_a_nofit_head_out_of_its_cycle_would_reorder_the_others_under_nested_cohorts():
    """Why the seam keeps a head known NoFit in its cycle (models/kueue schedule's `pending`) rather than leave it
    out. Cohort org holds cohort unit (queues x: 4 GPUs, y: none) and queue z (4 GPUs); y holds 2 of x's.
    Heads: x asks 100 (NoFit), y 1 (priority 300), z 1 (priority 200), x's priority 100. Within unit, x's
    entry wins (y borrows); at org nobody borrows, so priority decides: z over x, y over z. With x in the
    cycle z is taken first; left out, y's entry wins unit and goes first."""
    gpu = "nvidia.com/gpu"

    def queue(name, cohort, nominal):
        resources = [{"name": gpu, "nominalQuota": nominal}]
        return {"metadata": {"name": name}, "spec": {"cohortName": cohort, "resourceGroups": [
            {"coveredResources": [gpu], "flavors": [{"name": "f", "resources": resources}]}]}}

    def order(heads):
        snapshot = Snapshot.from_manifests(
            [queue("x", "unit", 4), queue("y", "unit", 0), queue("z", "org", 4)],
            [{"metadata": {"name": "org"}, "spec": {}}, {"metadata": {"name": "unit"}, "spec": {"parentName": "org"}}],
            fair_sharing=True,
        )
        held = Workload("held", "y", (PodSet("main", 2, {gpu: 1}),), priority=300)
        held.usage, held.flavors = {("f", gpu): 2}, ({gpu: "f"},)
        snapshot.add_workload(held)
        workloads = {
            "x": Workload("x1", "x", (PodSet("main", 100, {gpu: 1}),), priority=100),
            "y": Workload("y1", "y", (PodSet("main", 1, {gpu: 1}),), priority=300),
            "z": Workload("z1", "z", (PodSet("main", 1, {gpu: 1}),), priority=200),
        }
        cycle = schedule(snapshot, [workloads[name] for name in heads])
        return [(entry.workload.name, entry.status) for entry in cycle.entries]

    assert order("xyz") == [("z1", ADMITTED), ("x1", NO_FIT_STATUS), ("y1", ADMITTED)]
    assert order("yz") == [("y1", ADMITTED), ("z1", ADMITTED)]


# --- against Kueue's loop head by head over models/kueue, no shortcuts -------------------------------------


class Reference:
    """ModelKueue's loop without its shortcuts: models/kueue PendingQueue, every head nominated every cycle."""

    def __init__(self, config):
        self.kueue = kueue_for(config, False)  # its snapshot and Workload building only
        self.queues = {name: PendingQueue(q.queueing_strategy) for name, q in self.kueue.snapshot.cluster_queues.items()}
        self.admitted: set[int] = set()
        self.evicting: set[int] = set()

    def submit(self, queued: QueuedWorkload) -> None:
        self.kueue.submit(queued)
        self.queues[queued.cluster_queue].push(self.kueue.workloads[queued.key])

    def release(self, key: int) -> None:
        workload = self.kueue.workloads.pop(key)
        self.evicting.discard(key)
        if key in self.admitted:
            self.admitted.discard(key)
            self.kueue.snapshot.remove_workload(workload)
            for queue in self.queues.values():  # one flat cohort: every queue
                queue.queue_inadmissible()
        else:
            self.queues[workload.cluster_queue].remove(workload)

    def release_evicted(self, key: int) -> None:
        self.release(key)

    def schedule(self, now: float) -> tuple[list[int], list[int], list[int]]:
        admitted, preempted, requeued = [], [], []
        while nominated := heads(self.queues.values()):
            cycle = schedule(self.kueue.snapshot, nominated)
            apply(self.kueue.snapshot, cycle, now)
            changed = False
            for entry in cycle.entries:
                if entry.status == ADMITTED:
                    self.admitted.add(int(entry.workload.name))
                    admitted.append(int(entry.workload.name))
                    changed = True
                else:
                    self.queues[entry.workload.cluster_queue].requeue(entry)
                    changed = changed or not entry.nominated
            for target in cycle.preempted:  # marked evicted, their quota held until released
                key = int(target.workload.name)
                if key in self.evicting:
                    continue
                self.evicting.add(key)
                if key in admitted:
                    admitted.remove(key)
                    requeued.append(key)
                else:
                    preempted.append(key)
            if not changed:
                break
        return admitted, preempted, requeued


def test_the_loop_admits_and_preempts_what_kueues_loop_does_head_by_head(dev_config):
    """Both queues, every tier, both flavors, sizes 1-16: many shapes, long runs of set-aside heads, preemption.
    A preempted workload holds its quota until the next step releases it, then is gone from both (the simulator
    resubmits it under the same key later); one admitted and preempted in one call is submitted again, stamped
    with its eviction."""
    chance = random.Random(7)
    fast, reference = kueue_for(dev_config, False), Reference(dev_config)
    live: list[int] = []
    evicted: list[tuple[int, float]] = []
    submitted: dict[int, QueuedWorkload] = {}
    key = 0
    preemptions = requeues = 0
    for step in range(90):
        now = float(step)
        for victim, at in evicted:
            fast.release_evicted(victim)
            reference.release_evicted(victim)
            if victim in submitted:  # admitted and preempted within one call: queued again
                again = replace(submitted[victim], timestamp=at)
                fast.submit(again)
                reference.submit(again)
        evicted = []
        for _ in range(chance.choice((0, 1, 3, 6))):
            key += 1
            queue = chance.choice((ML, ML, INFERENCE))
            flavors = chance.choice(((ON_DEMAND,), (SPOT,), (SPOT, ON_DEMAND))) if queue == ML else (ON_DEMAND,)
            queued = job(key, chance.choice((1, 2, 2, 4, 8, 12, 16)), now, queue,
                         chance.choice((STANDARD, STANDARD, PRODUCTION, BEST_EFFORT)), flavors)
            fast.submit(queued)
            reference.submit(queued)
            submitted[key] = queued
            live.append(key)
        if live and chance.random() < 0.5:
            gone = live.pop(chance.randrange(len(live)))
            fast.release(gone)
            reference.release(gone)
        decisions = fast.schedule(now)
        expected_admitted, expected_preempted, expected_requeued = reference.schedule(now)
        assert [a.key for a in decisions.admitted] == expected_admitted, step
        assert list(decisions.preempted) == expected_preempted, step
        assert list(decisions.requeued) == expected_requeued, step
        preemptions += len(decisions.preempted)
        requeues += len(decisions.requeued)
        for victim in decisions.preempted:
            live.remove(victim)
            del submitted[victim]
        evicted = [(victim, now) for victim in (*decisions.preempted, *decisions.requeued)]
        assert fast.pending() == {name: len(q) for name, q in reference.queues.items() if len(q)}, step
    assert preemptions > 5  # the run exercises preemption, not only admission


# prod as shipped, H100 (h100-on-demand) quotas: llm-training nominal 16 (fairShareWeight 2), inference 8 (lends 4),
# data-science 8 (borrowingLimit 8), experiments 0 (borrowingLimit 8, fairShareWeight 0.5); one cohort tree holds
# 16 + 8 + 8 = 32 H100s. Thirteen single-pod workloads queued at one instant (key, ClusterQueue, flavor, priority,
# GPUs); every admission in one scheduling call:
PREEMPTEE_AHEAD = (
    (6, "llm-training", "h100-on-demand", 1000, 1), (7, "inference", "h100-on-demand", 1000, 2),
    (9, "llm-training", "h100-on-demand", 100, 1), (10, "llm-training", "h100-on-demand", 500, 1),
    (13, "llm-training", "h100-on-demand", 100, 1), (14, "experiments", "a100-spot", 500, 8),
    (16, "inference", "h100-on-demand", 100, 1), (17, "llm-training", "h100-on-demand", 500, 1),
    (18, "experiments", "h100-on-demand", 100, 1), (20, "inference", "h100-on-demand", 500, 4),
    (24, "llm-training", "h100-on-demand", 1000, 8), (25, "data-science", "h100-on-demand", 100, 4),
    (28, "data-science", "h100-on-demand", 100, 8),
)


@pytest.fixture(scope="module")
def prod_config():
    return load(shipped_document("prod"))


def test_a_workload_preempted_in_the_call_that_admitted_it_holds_its_quota_until_released(prod_config):
    """The cycles admit 24, 7, 25, 14 | 6, 28, 20, 18 | 10, 16 | 17 | 13 (14 on A100s): all 32 H100s, llm-training
    12, inference 7, data-science 12, experiments' 18 one. Then llm-training's 9 (its 13th GPU, within its nominal
    16) has no room and preempts experiments' 18, which the call reports as requeued (never seen running), not
    preempted. 18 keeps its GPU until its job has stopped, so 9 waits at its queue's head; freed within the call,
    the two traded the GPU for ever at one instant.

    Once released and queued again, 18 goes first again: at the root, product with 18 stays within its quota (7 + 1
    of 8) while research with 9 borrows (24 + 1 of 24), and Kueue's fair sharing takes the non-borrowing entry
    first (FairSharingPrioritizeNonBorrowing); 9, no longer fitting, is skipped and preempts 18 in the next cycle.
    Kueue's own rules repeat the round at every release: each round costs an eviction, not nothing."""
    kueue = ModelKueue(prod_config, False)
    queued = {key: QueuedWorkload(key, queue, priority, 0.0, 1, gpus, (flavor,))
              for key, queue, flavor, priority, gpus in PREEMPTEE_AHEAD}
    for workload in queued.values():
        kueue.submit(workload)
    decisions = kueue.schedule(0.0)
    assert decisions.preempted == ()
    assert decisions.requeued == (18,)
    assert sorted(a.key for a in decisions.admitted) == [6, 7, 10, 13, 14, 16, 17, 20, 24, 25, 28]
    assert kueue.pending() == {"llm-training": 1}
    held = kueue.schedule(1.0)  # 18's reservation not yet cleared: nothing moves, nothing is reported twice
    assert (held.preempted, held.admitted, held.requeued) == ((), (), ())
    for at in (2.0, 4.0):
        kueue.release_evicted(18)
        kueue.submit(replace(queued[18], timestamp=at - 2.0))
        again = kueue.schedule(at)
        assert (again.preempted, again.admitted, again.requeued) == ((), (), (18,))
        assert kueue.pending() == {"llm-training": 1}
