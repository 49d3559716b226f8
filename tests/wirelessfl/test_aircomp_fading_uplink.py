"""``channel.aircomp.policy: optimal_fading`` in the simulator (docs/simulator.md, "Fading with an
average power"): over a long network-only run on Rayleigh fading each device's mean power meets
its budget and the MSE is below truncated inversion's at the same budget; resume reproduces
the tables (the multipliers are checkpointed); the missing budget is refused in one line."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scenario_helpers import interrupt_at, small_scenario

from wirelessfl.errors import ConfigError
from wirelessfl.sim import resume_run, run_scenario
from wirelessfl.sim.runner import Run

BUDGET_W = 0.02  # average power; the peak is 23 dBm = 0.2 W
FADING = {
    "controller.name": "fixed",
    "controller.rank": 4,
    "controller.sparsification": 1.0,
    "channel.uplink": "aircomp",
    "channel.aircomp.policy": "optimal_fading",
    "channel.aircomp.average_power_w": BUDGET_W,
    "output.events": False,
}


def _run(tmp_path, name, **overrides):
    return run_scenario(small_scenario(**{**FADING, **overrides}), tmp_path / name)


def test_long_run_meets_the_average_power_and_beats_truncation(tmp_path):
    every_round = {"n_clients": 5, "n_scheduled": 5, "rounds": 500, "eval_every": 500}
    run = _run(tmp_path, "fading", **every_round)
    assert run.config["channel"]["fading"]["model"] == "rayleigh"
    sent = run.clients[run.clients.status == "arrived"]
    assert (sent.groupby("client").size() > 450).all()  # few outages: ~500 rounds each
    mean_power_w = sent.groupby("client").tx_power_w.mean()
    np.testing.assert_allclose(mean_power_w, BUDGET_W, rtol=0.03)
    assert (run.rounds.aircomp_mean_price.iloc[50:] > 0).all()  # the constraint binds
    assert sent.tx_power_w.max() <= 0.2 * (1 + 1e-12)  # the peak holds every round
    truncated = {
        "channel.aircomp.policy": "truncated",
        "channel.aircomp.threshold_snr_db": 3.0,  # near the best fixed threshold here
    }
    baseline = _run(tmp_path, "truncated", **every_round, **truncated)
    base_sent = baseline.clients[baseline.clients.status == "arrived"]
    assert base_sent.groupby("client").tx_power_w.sum().max() / 500 <= BUDGET_W * 1.1
    assert run.rounds.aircomp_mse.mean() < baseline.rounds.aircomp_mse.mean()


def test_resume_reproduces_the_tables(tmp_path):
    full = _run(tmp_path, "full", rounds=8)
    cut = small_scenario(**{**FADING, "rounds": 8, "output.checkpoint_every": 1})
    interrupt_at(Run(cut, tmp_path / "cut"), 4)
    resumed = resume_run(tmp_path / "cut")
    pd.testing.assert_frame_equal(full.clients, resumed.clients)
    wall = ["wall_s"]
    pd.testing.assert_frame_equal(full.rounds.drop(columns=wall), resumed.rounds.drop(columns=wall))
    assert (full.rounds.aircomp_mean_price.iloc[4:] > 0).all()  # the resumed rounds priced


def test_it_runs_under_rician_fading_where_truncations_e1_rule_is_refused(tmp_path):
    run = _run(tmp_path, "rician", rounds=30, **{"channel.fading.model": "rician"})
    assert run.rounds.aircomp_mean_price.iloc[-1] > 0
    with pytest.raises(ConfigError, match=r"^channel.aircomp.average_power_w: .*rayleigh"):
        small_scenario(
            **{
                **FADING,
                "channel.fading.model": "rician",
                "channel.aircomp.policy": "truncated",
                "channel.aircomp.threshold_snr_db": 3.0,
            }
        )


def test_the_missing_average_power_is_refused_in_one_line():
    with pytest.raises(ConfigError) as err:
        small_scenario(**{**FADING, "channel.aircomp.average_power_w": None})
    message = str(err.value)
    assert message.startswith("channel.aircomp.average_power_w:") and "\n" not in message
    assert "optimal_fading" in message
