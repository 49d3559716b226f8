"""``learner.executor: ray``: a round's clients train on Ray actors, with the tables of a local
run, bit for bit (``wall_s`` aside: wall-clock seconds); bad settings get one line.

Each comparison runs a scenario here and again with two actors on a local Ray instance of two
CPUs. Torch runs on one thread (the actors take this process's thread count, so two of them fit
the two CPUs and sum like this process).
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest
from scenario_helpers import digits_scenario

from wirelessfl.config import load_scenario
from wirelessfl.errors import ConfigError

pytest.importorskip("torch")
ray = pytest.importorskip("ray")

from wirelessfl.results import load  # noqa: E402
from wirelessfl.sim.runner import run_scenario  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ON_RAY = ["learner.executor=ray", "learner.ray_workers=2"]


@pytest.fixture(scope="module")
def local_ray():
    """A local Ray instance of two CPUs for the module, shut down after it."""
    with warnings.catch_warnings():  # Ray's notice about a future change of its GPU masking
        warnings.simplefilter("ignore", FutureWarning)
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _same_tables(local: Path, remote: Path) -> None:
    """``rounds.csv`` (but ``wall_s``) and ``clients.csv`` of the two runs are equal."""
    a, b = load(local), load(remote)
    assert len(a.rounds) == len(b.rounds) > 0 and len(a.clients) > 0
    pd.testing.assert_frame_equal(a.rounds.drop(columns="wall_s"), b.rounds.drop(columns="wall_s"))
    pd.testing.assert_frame_equal(a.clients, b.clients)


@pytest.mark.parametrize(
    ("name", "overrides"),
    [
        # SOFT with error feedback (private memory) and Adam moments kept between rounds
        # (private state staged by training, sent to the actors and back), EfficientNet-Lite0
        pytest.param(
            "default",
            [
                "rounds=3",
                "learner.keep_optimizer_state=true",
                "learner.dataset_options.max_test=100",
            ],
            marks=pytest.mark.slow,
        ),
        # FLoRAL: its own routed model and trainer, private router logits
        ("floral/synthetic_linear", ["rounds=3", "eval_every=1", "output.clients=true"]),
    ],
)
def test_ray_training_gives_the_local_tables(local_ray, tmp_path, name, overrides):
    run_scenario(load_scenario(name, overrides), tmp_path / "local")
    run_scenario(load_scenario(name, [*overrides, *ON_RAY]), tmp_path / "ray")
    _same_tables(tmp_path / "local", tmp_path / "ray")


def test_fedstack_trains_on_the_merged_update_it_sends_to_the_actors(local_ray, tmp_path):
    """FedStack trains on W0 + Delta, server state set by its broadcast: its training_state."""
    settings = {"algorithm.name": "fedstack", "strategy": {"ratio_choices": [0.25, 0.5, 1.0]}}
    run_scenario(digits_scenario(rounds=4, **settings), tmp_path / "local")
    remote = {"learner.executor": "ray", "learner.ray_workers": 2}
    run_scenario(digits_scenario(rounds=4, **settings, **remote), tmp_path / "ray")
    _same_tables(tmp_path / "local", tmp_path / "ray")
    assert (load(tmp_path / "ray").rounds["algo.merged_norm"] > 0).all()


def test_batched_trainer_with_one_actor_gives_the_local_tables(local_ray, tmp_path):
    """One actor trains a round's clients in one batch, as a local run does."""
    batched = {"learner.trainer": "batched"}
    run_scenario(digits_scenario(rounds=3, **batched), tmp_path / "local")
    remote = {"learner.executor": "ray", "learner.ray_workers": 1}
    run_scenario(digits_scenario(rounds=3, **batched, **remote), tmp_path / "ray")
    _same_tables(tmp_path / "local", tmp_path / "ray")


def test_more_actors_than_the_cluster_holds_is_one_line(local_ray, tmp_path):
    scenario = digits_scenario(**{"learner.executor": "ray", "learner.ray_workers": 3})
    wanted = r"^learner.ray_workers: 3 actors of 1 CPU each .* nodes of 2 CPUs, which hold 2;"
    with pytest.raises(ConfigError, match=wanted):
        run_scenario(scenario, tmp_path / "run")


def test_without_ray_installed_the_executor_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # what `import ray` meets on a base install
    scenario = digits_scenario(**{"learner.executor": "ray"})
    with pytest.raises(ConfigError, match=r"^learner.executor: 'ray' needs the \[scale\] extra"):
        run_scenario(scenario, tmp_path / "run")


def test_an_unreachable_address_is_one_line_at_once(tmp_path):
    """A fresh process (not connected to Ray) is refused in seconds, not after Ray's retries."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "learner: {kind: lora, model: tiny_mlp, dataset: digits, executor: ray, "
        "ray_address: '127.0.0.1:1'}\n"
        "controller: {name: fixed, rank: 4, sparsification: 0.5, r_max: 16}\n"
        "rounds: 1\nn_clients: 4\nn_scheduled: 2\n"
    )
    command = [sys.executable, "-m", "wirelessfl", "run", str(scenario), "--out"]
    done = subprocess.run(
        [*command, str(tmp_path / "run"), "--quiet"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "wirelessfl: error: learner.ray_address: no Ray cluster answers at '127.0.0.1:1'"
    )


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        (["learner.executor=dask"], r"learner.executor: must be one of 'local', 'ray'"),
        (["learner.ray_workers=2"], r"learner.ray_workers: used only with learner.executor: ray"),
        (["learner.executor=ray", "learner.ray_workers=0"], r"learner.ray_workers: must be >= 1"),
    ],
)
def test_bad_executor_settings_are_one_line(overrides, match):
    with pytest.raises(ConfigError, match=match):
        load_scenario("default", overrides)


def test_a_network_only_run_has_nothing_to_farm_out():
    with pytest.raises(ConfigError, match=r"learner.executor: 'ray' farms out real training"):
        load_scenario("paper", ["learner.executor=ray"])
