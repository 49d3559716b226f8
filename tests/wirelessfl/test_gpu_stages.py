"""On CUDA: the stages that act on the shared tensors (the quantiser, the AirComp uplink,
client-level DP central and local) and DP-SGD in the local trainer run with the model on the
GPU, and each leaves its own columns in the rounds table. Skipped where no CUDA device is
present (benchmarks/gpu_check.sh runs them)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scenario_helpers import digits_scenario

from wirelessfl.config import load_scenario
from wirelessfl.sim import run_scenario

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.gpu  # skipped without CUDA (tests/conftest.py)

DEVICE = "cuda"


def _on_cuda(result, out) -> None:
    learner = json.loads((out / "meta.json").read_text())["learner"]
    assert learner["device"].startswith(DEVICE), learner["device"]
    assert result.finished and np.isfinite(result.rounds.loss).all()
    assert np.isfinite(result.rounds.test_loss.dropna()).all()


def _scenario(name: str, settings: dict):
    """The shipped default scenario, or the tiny MLP on digits, with ``settings``."""
    if name == "default":
        return load_scenario("default", [f"{k}={v}" for k, v in settings.items()])
    return digits_scenario(**settings)


@pytest.mark.parametrize("scenario", ["default", "digits"])
def test_quantised_uploads_on_cuda(scenario: str, tmp_path) -> None:
    settings = {"quantize.bits": 4, "learner.device": DEVICE, "rounds": 2, "eval_every": 1}
    result = run_scenario(_scenario(scenario, settings), tmp_path)
    _on_cuda(result, tmp_path)
    bits = result.rounds["algo.quant_bits"]
    assert (bits == 4).all(), bits.tolist()
    rel_error = result.rounds["algo.quant_rel_error"]
    assert ((rel_error > 0) & (rel_error < 1)).all(), rel_error.tolist()


@pytest.mark.parametrize("scenario", ["default", "digits"])
def test_aircomp_uplink_on_cuda(scenario: str, tmp_path) -> None:
    settings = {
        "algorithm.name": "fedit",
        "channel.uplink": "aircomp",
        "learner.device": DEVICE,
        "rounds": 2,
        "eval_every": 1,
    }
    result = run_scenario(_scenario(scenario, settings), tmp_path)
    _on_cuda(result, tmp_path)
    mse = result.rounds["aircomp_mse"]
    assert (np.isfinite(mse) & (mse > 0)).all(), mse.tolist()


@pytest.mark.parametrize("mode", ["central", "local"])
def test_client_level_dp_on_cuda(mode: str, tmp_path) -> None:
    sc = digits_scenario(
        **{
            "algorithm.name": "fedit",
            "privacy.mode": mode,
            "privacy.noise_multiplier": 0.5,
            "learner.device": DEVICE,
            "learner.optimizer": "adam",  # SGD at lr 0.1 diverges under the noise
            "learner.lr": 0.01,
            "rounds": 3,
            "eval_every": 1,
        }
    )
    result = run_scenario(sc, tmp_path)
    _on_cuda(result, tmp_path)
    epsilon = result.rounds["dp_epsilon"].to_numpy()
    # local mode reports the most-released device's epsilon: flat in a round that skips it
    assert np.isfinite(epsilon).all() and (np.diff(epsilon) >= 0).all(), epsilon.tolist()
    assert 0 < epsilon[0] < epsilon[-1], epsilon.tolist()


def test_dp_sgd_on_cuda(tmp_path) -> None:
    pytest.importorskip("opacus")
    sc = digits_scenario(
        **{
            "algorithm.name": "fedit",
            "privacy.dp_sgd": True,
            "learner.trainer": "sequential",
            "learner.device": DEVICE,
            "learner.optimizer": "adam",
            "learner.lr": 0.01,
            "rounds": 2,
            "eval_every": 1,
        }
    )
    result = run_scenario(sc, tmp_path)
    _on_cuda(result, tmp_path)
    epsilon = result.rounds["dp_sgd_epsilon"].to_numpy()
    assert np.isfinite(epsilon).all() and (np.diff(epsilon) >= 0).all(), epsilon.tolist()
    assert epsilon[0] > 0, epsilon.tolist()
