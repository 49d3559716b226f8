"""The controllers plan the over-the-air uplink (``channel.uplink: aircomp``; docs/solvers.md,
"Planning the over-the-air uplink"): the planned round equals the round the simulator charges
(the slowest compute plus n / B, recomputed from the tables and the model's shapes), the
queue takes it, P3 keeps O = 1, the rank knob and TSFA's offline stage trade the analog time
n(r) / B against Theorem 1's penalty; a controller that plans shares is refused in one line."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scenario_helpers import small_scenario

from optim import convergence_bound
from wirelessfl.errors import ConfigError
from wirelessfl.sim import run_scenario
from wirelessfl.sim.setup import bound_constants

B_HZ = 1.0e6
LOGGER = "wirelessfl.sim.simulator"
#: dense values per unit of rank of small_scenario's layers [[64, 64], [64, 32]]: r (d + l)
VALUES_PER_RANK = (64 + 64) + (64 + 32)
AIR = {
    "channel.uplink": "aircomp",
    "rounds": 6,
    # heterogeneous compute of the order of the analog time: milliseconds
    "devices.include_compute": True,
    "devices.kind": "classes",
    "devices.classes": {"low_end_phone": 0.5, "laptop_cpu": 0.5},
    "learner.shape.base_params": 1000,
    "learner.shape.seq_len": 1,
}


def _run(tmp_path, name, **overrides):
    """The scenario and its run."""
    sc = small_scenario(**{**AIR, **overrides})
    return sc, run_scenario(sc, tmp_path / name)


@pytest.mark.parametrize(
    "overrides",
    [
        {"controller.name": "fixed", "controller.rank": 4, "controller.sparsification": 0.5},
        {"controller.name": "osfa", "controller.rank": 8},
        {"controller.name": "tsfa"},
        {"controller.name": "osfa", "controller.rank": 8, "algorithm.name": "fedit"},
        {
            "controller.name": "fixed",
            "controller.rank": 4,
            "channel.aircomp.policy": "truncated",
            "channel.aircomp.threshold_snr_db": 10.0,
        },
    ],
    ids=["fixed", "osfa-ratio", "tsfa", "osfa-rank", "truncated"],
)
def test_planned_round_is_the_charged_round(tmp_path, overrides):
    sc, run = _run(tmp_path, "run", **overrides)
    rounds, clients = run.rounds.set_index("round"), run.clients
    sent = clients[clients.status == "arrived"]
    assert (sent.share == 1.0).all()  # no shares: the whole band
    d_th = sc.controller.d_th_s
    for t, rows in sent.groupby("round"):
        analog_s = rows["rank"].max() * VALUES_PER_RANK / B_HZ  # dense n / B, any ratio
        charged_s = rows.compute_s.max() + analog_s
        assert rows.upload_s.to_numpy() == pytest.approx(analog_s, rel=1e-12)
        assert rounds.loc[t, "planned_delay_s"] == pytest.approx(charged_s, rel=1e-9)
        queue = rounds.loc[t, "queue"]
        assert rounds.loc[t, "queue_after"] == pytest.approx(
            max(queue + charged_s - d_th, 0.0), rel=1e-9, abs=1e-15
        )
    if sc.channel.aircomp.policy == "truncated":
        excluded = clients[clients.status == "excluded"]
        assert len(excluded) > 0  # the plan was over the included clients only


def test_p3_keeps_every_value_over_the_air(tmp_path):
    over = {"controller.name": "osfa", "controller.rank": 8, "controller.d_th_s": 1.0e-4}
    _, run = _run(tmp_path, "osfa", **over)
    assert (run.rounds.sparsification == 1.0).all()  # no ratio shortens n / B; eq. 14 falls in O
    assert run.rounds.queue.iloc[-1] > 0.0  # even with the queue up


def test_rank_knob_minimises_queue_times_analog_time_plus_v_penalty(tmp_path):
    over = {
        "controller.name": "osfa",
        "controller.rank": 16,
        "controller.d_th_s": 1.0e-3,
        "controller.V": 1.0e-8,
        "algorithm.name": "fedit",
        "devices.include_compute": False,
        "rounds": 8,
    }
    sc, run = _run(tmp_path, "rank", **over)
    constants = bound_constants(sc)
    ranks = np.arange(1, 17)
    chosen = run.clients[run.clients.status == "arrived"].groupby("round")["rank"].max()
    for t, row in run.rounds.set_index("round").iterrows():
        k = int(row.n_scheduled)
        gamma = convergence_bound(
            rank=ranks,
            sparsification=1.0,
            n_scheduled=k,
            n_clients=sc.n_clients,
            constants=constants,
        )
        objective = row.queue * ranks * VALUES_PER_RANK / B_HZ + sc.controller.V * gamma
        best = ranks[np.flatnonzero(objective <= objective.min() * (1 + 1e-12))[-1]]
        assert chosen[t] == best
    assert chosen.iloc[0] == 16 and chosen.min() < 16  # Q = 0 at first, then it bites


def test_tsfa_offline_stage_keeps_ranks_whose_analog_time_meets_d_th(tmp_path):
    feasible_rank = 5
    d_th = (feasible_rank + 0.5) * VALUES_PER_RANK / B_HZ  # n(5) / B <= D_th < n(6) / B
    over = {"controller.name": "tsfa", "controller.d_th_s": d_th, "rounds": 1}
    sc, run = _run(tmp_path, "tsfa", **over)
    meta = run.meta["controller"]
    ranks = np.arange(1, sc.controller.r_max + 1)
    gamma = convergence_bound(
        rank=ranks,
        sparsification=1.0,
        n_scheduled=sc.n_scheduled,
        n_clients=sc.n_clients,
        constants=bound_constants(sc),
    )
    feasible = ranks * VALUES_PER_RANK / B_HZ <= d_th
    expected = int(ranks[feasible][np.argmin(gamma[feasible])])
    assert meta["rank"] == expected
    assert (np.array(meta["offline_sparsifications"])[feasible] == 1.0).all()
    bounds = np.array(meta["offline_bounds"])
    assert np.isinf(bounds[~feasible]).all()
    np.testing.assert_allclose(bounds[feasible], gamma[feasible], rtol=1e-12)
    assert math.isclose(meta["offline_fixed_delay_s"], expected * VALUES_PER_RANK / B_HZ)


def test_a_controller_planning_shares_is_refused_in_one_line_at_load():
    with pytest.raises(ConfigError) as err:
        small_scenario(
            **{**AIR, "controller.name": "sketch", "controller.rank": 4, "algorithm.name": "fedit"}
        )
    message = str(err.value)
    assert message.startswith("channel.uplink: aircomp sends every client on the whole band")
    assert "controller.name: fixed, osfa or tsfa" in message and "\n" not in message


def test_a_round_limit_below_the_slowest_compute_warns_in_one_line(tmp_path, caplog):
    import logging

    from wirelessfl.sim.runner import Run

    caplog.set_level(logging.WARNING, logger=LOGGER)
    sets = {**AIR, "controller.name": "fixed", "controller.rank": 4, "rounds": 1}
    Run(small_scenario(**{**sets, "controller.d_th_s": 1.0e-9}), tmp_path / "short")
    lines = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert len(lines) == 1 and "\n" not in lines[0]
    assert "with channel.uplink: aircomp (the analog sum waits for the slowest compute)" in lines[0]
    caplog.clear()
    Run(small_scenario(**{**sets, "controller.d_th_s": 10.0}), tmp_path / "long")
    assert [r for r in caplog.records if r.name == LOGGER] == []


def test_redistributing_shares_is_refused_in_one_line():
    with pytest.raises(ConfigError) as err:
        small_scenario(**{**AIR, "faults.redistribute_unused": True})
    message = str(err.value)
    assert message.startswith("faults.redistribute_unused:") and "\n" not in message
