"""DP under ``learner.executor: ray``: DP-SGD's per-step noise is drawn on the actors from the
run's stream (seed, ``dp_sgd``, client, round), and the local client-level noise in this
process after training, so a run on two actors gives a local run's tables bit for bit
(``wall_s`` aside), epsilon columns included, in synchronous rounds and under FedBuff."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest
from scenario_helpers import digits_scenario

pytest.importorskip("torch")
pytest.importorskip("opacus")
ray = pytest.importorskip("ray")

from wirelessfl.results import load  # noqa: E402
from wirelessfl.sim.runner import run_scenario  # noqa: E402

# two runs and two actors' start per case: about 25 s each on two loaded cores
pytestmark = [pytest.mark.train, pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]


@pytest.fixture(scope="module")
def local_ray():
    """A local Ray instance of two CPUs for the module, shut down after it."""
    with warnings.catch_warnings():  # Ray's notice about a future change of its GPU masking
        warnings.simplefilter("ignore", FutureWarning)
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.mark.parametrize(
    "privacy",
    [
        {"privacy.dp_sgd": True, "privacy.sample_noise_multiplier": 1.1},
        {
            "privacy.dp_sgd": True,
            "privacy.mode": "local",
            "privacy.noise_multiplier": 0.5,
            "server": {"mode": "buffered", "buffer_size": 2, "concurrency": 3},
        },
    ],
    ids=["dp_sgd", "dp_sgd+local+buffered"],
)
def test_dp_on_ray_actors_gives_the_local_tables(local_ray, tmp_path, privacy):
    settings = {
        "algorithm.name": "fedit",
        "rounds": 3,
        "learner.trainer": "sequential",
        "privacy.delta": 1e-5,
        **privacy,
    }
    run_scenario(digits_scenario(**settings), tmp_path / "local")
    remote = {"learner.executor": "ray", "learner.ray_workers": 2}
    run_scenario(digits_scenario(**settings, **remote), tmp_path / "ray")
    a, b = load(tmp_path / "local"), load(tmp_path / "ray")
    assert len(a.rounds) == 3 and len(a.clients) > 0
    pd.testing.assert_frame_equal(a.rounds.drop(columns="wall_s"), b.rounds.drop(columns="wall_s"))
    pd.testing.assert_frame_equal(a.clients, b.clients)
    assert (a.rounds.dp_sgd_epsilon > 0).all() and a.rounds.dp_sgd_epsilon.is_monotonic_increasing
