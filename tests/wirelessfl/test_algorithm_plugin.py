"""An algorithm defined in tests/ is registered from outside the package and runs a scenario."""

from __future__ import annotations

import sys
import textwrap

import numpy as np
import pandas as pd
import pytest
from plugin_algorithm import HalfRankPersonalHead
from scenario_helpers import digits_scenario, interrupt_at

from channels.registry import Registry
from wirelessfl.errors import ConfigError
from wirelessfl.registries import ALGORITHMS
from wirelessfl.sim import resume_run, run_scenario
from wirelessfl.sim.runner import Run

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture
def registered():
    ALGORITHMS.register("half_rank_personal", HalfRankPersonalHead)
    yield "half_rank_personal"
    ALGORITHMS.unregister("half_rank_personal")


def _scenario(**overrides):
    return digits_scenario(
        **{"algorithm.name": "half_rank_personal", "strategy": {"min_rank": 1}, **overrides}
    )


def test_plugin_algorithm_runs_with_per_client_plans_and_private_state(registered, tmp_path):
    run = Run(_scenario(rounds=3), tmp_path / "run")
    result = run.execute()
    clients, rounds = result.clients, result.rounds
    trained = clients[clients.status == "arrived"]
    # per-client plans: odd ids train at half the model rank 4
    assert (trained.loc[trained.client % 2 == 1, "rank"] == 2).all()
    assert (trained.loc[trained.client % 2 == 0, "rank"] == 4).all()
    # tiny_mlp: fc1 64 -> 64, fc2 64 -> 64; the head stays on the client: LoRA only, dense
    expected_bits = 32 * trained["rank"] * 2 * (64 + 64)
    assert (trained.bits == expected_bits).all() and (trained.bits_down == expected_bits).all()
    # the algorithm's metric reaches rounds.csv as algo.<name>
    mean_rank = [trained[trained["round"] == t]["rank"].mean() for t in range(3)]
    np.testing.assert_allclose(rounds["algo.mean_rank"], mean_rank)
    # the private heads stay with the clients that trained, never in the global state
    learner = run.learner
    assert set(learner.private.clients()) == set(trained.client)
    head = learner.runtime.state.full_names
    for c in learner.private.clients():
        private_head = learner.private.get(c)["head"]
        assert set(private_head) == set(head)
        assert not all(
            torch.equal(private_head[n], learner.global_state[n]) for n in head
        )  # trained, but never averaged into the global state
    assert rounds.loss.notna().all()


def test_plugin_private_state_survives_resume(registered, tmp_path):
    full = run_scenario(_scenario(rounds=4), tmp_path / "full")
    interrupt_at(Run(_scenario(rounds=4), tmp_path / "cut"), 3)
    resumed = resume_run(tmp_path / "cut")
    pd.testing.assert_frame_equal(
        full.rounds.drop(columns="wall_s"), resumed.rounds.drop(columns="wall_s")
    )


def test_plugin_settings_are_validated_like_any_section(registered):
    with pytest.raises(ConfigError, match=r"^strategy.min_rank: must be >= 1, got 0$"):
        _scenario(strategy={"min_rank": 0})
    with pytest.raises(ConfigError, match=r"^strategy.sparsifier: unknown key"):
        _scenario(strategy={"sparsifier": "soft"})


def test_entry_point_group_registers_an_installed_plugin(tmp_path, monkeypatch):
    """A package declaring ``[project.entry-points."wirelessfl.algorithms"]`` is found."""
    (tmp_path / "my_plugin.py").write_text(
        textwrap.dedent(
            """
            from plugin_algorithm import HalfRankPersonalHead as MyAlgorithm
            """
        )
    )
    info = tmp_path / "my_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[wirelessfl.algorithms]\nmy_algo = my_plugin:MyAlgorithm\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = Registry(
        "algorithm",
        {"soft": "wirelessfl.algorithms.soft:SOFT"},
        entry_point_group="wirelessfl.algorithms",
    )
    assert registry.names() == ["soft", "my_algo"]
    assert "my_plugin" not in sys.modules  # listed without importing it
    assert registry.load("my_algo") is HalfRankPersonalHead


def test_network_only_run_plans_and_sizes_with_the_plugins_cost_model(registered, tmp_path):
    """No training: the surrogate plans the clients and sizes their messages with the plug-in's
    cost model (odd clients at half rank, the private head not sent), and the controller plans
    the delay the simulator then measures."""
    from scenario_helpers import small_scenario

    controller = {"name": "fixed", "rank": 8, "sparsification": 1.0, "r_max": 16}
    sc = small_scenario(rounds=3, controller=controller, **{"algorithm.name": "half_rank_personal"})
    result = run_scenario(sc, tmp_path / "run")
    trained = result.clients[result.clients.status == "arrived"]
    ranks = np.where(trained.client % 2 == 1, 4, 8)
    assert (trained["rank"] == ranks).all()
    assert (trained.bits == 32 * ranks * (64 + 64 + 64 + 32)).all()
    np.testing.assert_allclose(result.rounds.planned_delay_s, result.rounds.delay_s, rtol=1e-9)
