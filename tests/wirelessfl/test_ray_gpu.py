"""On CUDA with Ray: ``learner.executor: ray`` with ``ray_workers`` unset starts one actor per
GPU, each holding one GPU, and the run's tables match a local CUDA run within float32 kernel
differences. Skipped where there is no CUDA device or no Ray (benchmarks/gpu_check.sh runs it)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from wirelessfl.config import load_scenario
from wirelessfl.results import load
from wirelessfl.sim.runner import run_scenario

torch = pytest.importorskip("torch")
ray = pytest.importorskip("ray")

pytestmark = pytest.mark.gpu  # skipped without CUDA (tests/conftest.py)

ROUNDS = ["rounds=2", "n_clients=8", "n_scheduled=4", "learner.device=cuda"]


def test_one_actor_per_gpu_gives_the_local_cuda_tables(tmp_path):
    with warnings.catch_warnings():  # Ray's notice about a future change of its GPU masking
        warnings.simplefilter("ignore", FutureWarning)
        ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False)
    try:
        gpus = int(ray.cluster_resources().get("GPU", 0))
        assert gpus == torch.cuda.device_count() >= 1
        run_scenario(load_scenario("default", ROUNDS), tmp_path / "local")
        run_scenario(load_scenario("default", [*ROUNDS, "learner.executor=ray"]), tmp_path / "ray")
    finally:
        ray.shutdown()
    local, remote = load(tmp_path / "local").rounds, load(tmp_path / "ray").rounds
    assert len(local) == len(remote) == 2
    for column in ("loss", "test_loss", "accuracy", "delay_s"):
        np.testing.assert_allclose(remote[column], local[column], rtol=2e-3, atol=1e-4)
