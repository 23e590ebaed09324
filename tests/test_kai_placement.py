"""KAI's fractional GPU placement (models/kai/placement.py), rule by rule, on GPUs and nodes irregular enough
that binpack and spread, and an exact fill and one MiB over, choose differently. Values worked out by hand
from the rules at kai-scheduler/KAI-Scheduler v0.17.0."""

from __future__ import annotations

import pytest

from models.kai import placement as kai

A100_MIB = 40960  # nvidia.com/gpu.memory of an A100-SXM4-40GB
L40S_MIB = 46068

# (used MiB per GPU, whole-GPU pod on it, request MiB) -> GPU under binpack (gpupack), under spread (gpuspread)
GPU_CASES = {
    # GPU 2 is filled exactly (30720 + 10240 = 40960): the fullest that fits under binpack; spread takes idle GPU 1.
    "exact fill": (([20480, 0, 30720, 8192], [False, False, False, True], 10240), 2, 1),
    # One MiB past GPU 2's room: binpack falls back to the half-used GPU 0.
    "one MiB over": (([20480, 0, 30720, 8192], [False, False, False, True], 10241), 0, 1),
    # Only shared GPUs: binpack the fuller, spread the emptier.
    "shared only": (([10240, 30720], [False, False], 4096), 1, 0),
    # Equal shares: the lower index, under both.
    "tie": (([20480, 20480], [False, False], 4096), 0, 0),
    # A GPU held whole is no candidate, even with no fraction on it.
    "whole GPUs": (([0, 0], [True, True], 1), None, None),
    # Nothing shared fits and no GPU is idle.
    "full": (([40000, 38000], [False, False], 4096), None, None),
}


@pytest.mark.parametrize("case", GPU_CASES)
def test_a_fraction_goes_to_the_fullest_fitting_gpu_under_binpack_and_an_idle_one_under_spread(case):
    (used, whole, request), binpack, spread = GPU_CASES[case]
    assert kai.choose_gpu(used, whole, request, A100_MIB, kai.BINPACK) == binpack
    assert kai.choose_gpu(used, whole, request, A100_MIB, kai.SPREAD) == spread


def test_a_gpu_with_no_fraction_on_it_is_not_a_shared_gpu():
    assert kai.fits_shared_gpu(0, 1, A100_MIB) is False
    assert kai.fits_shared_gpu(1, A100_MIB - 1, A100_MIB) is True
    assert kai.fits_shared_gpu(1, A100_MIB, A100_MIB) is False


def test_a_fraction_is_accounted_in_the_gpus_memory_truncated_to_a_mib():
    assert kai.fraction_memory(0.47, L40S_MIB) == 21651  # 21651.96
    assert kai.fraction_memory(0.5, A100_MIB) == 20480


# (idle GPUs, GPUs, a shared GPU fits) per node -> the node chosen under binpack, under spread
NODE_CASES = {
    # A node with a shared GPU the fraction fits wins under both (gpusharingorder's 10000).
    "shared GPU first": (([0, 3, 1], [4, 4, 4], [False, False, True]), 2, 2),
    # Without one: binpack the node with fewest idle GPUs, spread the largest idle share.
    "binpack or spread": (([2, 3, 1], [8, 4, 4], [False, False, False]), 2, 1),
    # As many idle GPUs on each: binpack scores 9 each and takes the first; spread the larger idle share.
    "even": (([2, 2], [8, 4], [False, False]), 0, 1),
}


@pytest.mark.parametrize("case", NODE_CASES)
def test_nodes_are_ordered_by_sharing_then_by_idle_gpus(case):
    (idle, gpus, shares), binpack, spread = NODE_CASES[case]
    assert kai.best_node(kai.node_scores(idle, gpus, shares, kai.BINPACK)) == binpack
    assert kai.best_node(kai.node_scores(idle, gpus, shares, kai.SPREAD)) == spread


def test_binpack_scores_scale_between_the_least_and_most_idle_nodes():
    # least 1, most 5 idle: 9 x (1 - (idle - 1) / 4)
    assert kai.node_scores([1, 3, 5], [8, 8, 8], [False, False, False]) == [9.0, 4.5, 0.0]


def test_an_unknown_strategy_is_refused():
    with pytest.raises(ValueError, match="one of binpack, spread"):
        kai.choose_gpu([0], [False], 1, A100_MIB, "pack")
