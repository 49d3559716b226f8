"""On CUDA: one round of every algorithm trains on the GPU (batched trainer, the CUDA default),
and rounds of a model without stochastic layers (tiny MLP on digits) give the sequential
trainer's tables under the batched one, within float32 kernel differences (EfficientNet's
drop-connect masks differ between the two trainers by design: docs/training.md). Skipped where
no CUDA device is present (benchmarks/gpu_check.sh runs them)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scenario_helpers import digits_scenario

from wirelessfl.config import load_scenario
from wirelessfl.errors import ConfigError, UserError
from wirelessfl.registries import ALGORITHMS
from wirelessfl.sim import run_scenario

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.gpu  # skipped without CUDA (tests/conftest.py)

#: Every scenario shape an algorithm family needs: LoRA on a CNN, FLoRAL's per-client tests.
SCENARIOS = ("default", "floral/synthetic_linear")
DEVICE = "cuda"
ROUND = ["rounds=1", "eval_every=1", "n_clients=8", "n_scheduled=2", f"learner.device={DEVICE}"]


def _one_round(scenario: str, algorithm: str, out, *extra: str):
    sc = load_scenario(scenario, [f"algorithm.name={algorithm}", *ROUND, *extra])
    return run_scenario(sc, out)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_algorithm_runs_one_round_on_cuda(scenario: str, tmp_path) -> None:
    ran = []
    for name in ALGORITHMS.names():
        try:
            result = _one_round(scenario, name, tmp_path / name)
        except (ConfigError, UserError) as err:  # a misfit of model or data, in one line
            assert "\n" not in str(err), str(err)
            continue
        learner = json.loads((tmp_path / name / "meta.json").read_text())["learner"]
        assert learner["device"].startswith(DEVICE), (name, learner["device"])
        assert learner["trainer"] != "sequential", name  # batched, or the family's own
        assert result.finished and result.rounds.loss.notna().all(), name
        assert np.isfinite(result.rounds.test_loss.iloc[-1]), name
        ran.append(name)
    assert len(ran) >= (8 if scenario == "default" else 1), ran


@pytest.mark.parametrize("algorithm", ["soft", "fslora", "hetlora"])
def test_batched_round_on_cuda_matches_sequential(algorithm: str, tmp_path) -> None:
    runs = {
        trainer: run_scenario(
            digits_scenario(
                rounds=2,
                eval_every=1,
                **{
                    "algorithm.name": algorithm,
                    "learner.device": DEVICE,
                    "learner.trainer": trainer,
                },
            ),
            tmp_path / trainer,
        ).rounds
        for trainer in ("batched", "sequential")
    }
    for column in ("loss", "test_loss", "accuracy"):
        np.testing.assert_allclose(
            runs["batched"][column], runs["sequential"][column], rtol=2e-3, atol=1e-4
        )
