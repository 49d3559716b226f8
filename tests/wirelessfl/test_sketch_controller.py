"""controller.name: sketch, end to end on network-only scenarios (learner.kind: surrogate).

The surrogate with algorithm fslora (every client's sketching ratio 1) gives client i the
controller's k_i: it uploads v k_i P bits and computes the FLOPs of rank k_i, which is the
sketch controller's latency model, and its penalty is Theorem 4.4's r^2 / k_i^2.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scenario_helpers import small_scenario

from channels import lora_training_flops
from wirelessfl.config import scenario_from_dict
from wirelessfl.controllers.sketch import SketchRatio, lora_step_fraction
from wirelessfl.errors import ConfigError
from wirelessfl.learners import make_learner
from wirelessfl.sim import run_scenario
from wirelessfl.sim.simulator import Simulator

R = 8


def _sketch(**overrides):
    return small_scenario(
        **{
            "algorithm.name": "fslora",
            "controller.name": "sketch",
            "controller.rank": R,
            "controller.V": 1.0e-3,
            "faults.outage_snr_db": 0.0,  # bounded delays: the Rayleigh tail is cut off
            "output.events": False,
            **overrides,
        }
    )


@pytest.mark.parametrize("d_th", [0.03, 0.05])
def test_mean_delay_approaches_the_threshold(d_th, tmp_path):
    """D_th between the delays at k_min and at r: the queue holds the mean delay at D_th."""
    rounds = 400
    result = run_scenario(_sketch(**{"controller.d_th_s": d_th, "rounds": rounds}), tmp_path / "r")
    r = result.rounds
    delay = r.delay_s.to_numpy()
    # eq. (21) telescoped: Q^T >= sum_t (D^t - D_th), so mean D <= D_th + Q^T / T
    assert delay.mean() <= d_th + r.queue_after.iloc[-1] / rounds + 1e-12
    assert delay[rounds // 2 :].mean() == pytest.approx(d_th, rel=0.02)
    np.testing.assert_allclose(r.queue.to_numpy()[1:], r.queue_after.to_numpy()[:-1])
    assert r.queue_after.iloc[-1] / rounds < 0.1 * d_th  # the queue stays small: mean D ~ D_th
    # no compute, no faults beyond outage: the planned D is the observed upload time
    np.testing.assert_allclose(r.planned_delay_s, r.delay_s, rtol=1e-12)
    assert (r.sparsification == 1.0).all() and (r["rank"] == R).all()
    # the bound column is the penalty (1/K') sum r^2 / k_i^2 over the allocated clients
    c = result.clients[result.clients.status == "arrived"]
    penalty = c.groupby("round")["rank"].apply(lambda k: float(np.mean((R / k) ** 2)))
    np.testing.assert_allclose(r.set_index("round").bound.loc[penalty.index], penalty)
    ranks = c["rank"].to_numpy()
    assert ranks.min() >= 1 and ranks.max() <= R and len(np.unique(ranks)) > 2


def test_loose_threshold_gives_full_rank_and_an_empty_queue(tmp_path):
    r = run_scenario(_sketch(**{"controller.d_th_s": 10.0, "rounds": 30}), tmp_path / "r")
    assert (r.rounds.queue_after == 0.0).all() and (r.rounds.bound == 1.0).all()
    assert (r.clients[r.clients.status == "arrived"]["rank"] == R).all()


def test_threshold_below_the_smallest_sketch_keeps_k_min(tmp_path):
    """D_th below the k_min delay: the queue grows and, once it is not empty, every client
    gets k_min (round 0 starts with Q = 0, hence k = r)."""
    over = {"controller.d_th_s": 1e-4, "controller.k_min": 2, "controller.V": 1e-6}
    r = run_scenario(_sketch(**over, rounds=30), tmp_path / "r")
    assert np.all(np.diff(r.rounds.queue_after.to_numpy()) > 0)
    arrived = r.clients[r.clients.status == "arrived"]
    assert (arrived[arrived["round"] == 0]["rank"] == R).all()
    assert (arrived[arrived["round"] >= 1]["rank"] == 2).all()


def test_compute_follows_the_rank_as_planned(tmp_path):
    """With compute on, the planned D is the slowest client's compute plus upload time.

    No frozen base: phi(k) = k / r, so the compute estimate at r scales with each k_i exactly as
    the surrogate's FLOPs do; lognormal speeds make the clients differ.
    """
    sc = _sketch(
        **{
            "controller.d_th_s": 0.05,
            "rounds": 40,
            "devices.include_compute": True,
            "devices.kind": "lognormal",
            "devices.median_flops_per_s": 1.0e10,
            "devices.sigma": 0.7,
            "learner.shape.base_params": 0,
        }
    )
    result = run_scenario(sc, tmp_path / "r")
    c = result.clients[result.clients.status == "arrived"]
    finish = (c.compute_s + c.upload_s).groupby(c["round"]).max()
    planned = result.rounds.set_index("round").planned_delay_s.loc[finish.index]
    np.testing.assert_allclose(planned, finish, rtol=1e-9)
    assert c.compute_s.max() > 0.1 * c.upload_s.max()  # compute matters in this scenario


def test_lora_step_fraction_matches_the_flop_model():
    sc = _sketch()
    geometry = make_learner(sc).geometry()
    f = lora_step_fraction(geometry, R)
    args = {"batch_size": geometry.batch_size, "steps": 3, "seq_len": geometry.seq_len}
    shapes, base = list(geometry.layer_shapes), geometry.base_params
    at_r = lora_training_flops(shapes, R, base_params=base, **args)
    for k in range(1, R + 1):
        at_k = lora_training_flops(shapes, k, base_params=base, **args)
        assert 1.0 - f + f * k / R == pytest.approx(at_k / at_r, rel=1e-12)
    assert lora_step_fraction(None, R) == 0.0


def test_controller_summary_in_meta(tmp_path):
    run_scenario(_sketch(**{"rounds": 2}), tmp_path / "r")
    meta = json.loads((tmp_path / "r" / "meta.json").read_text())
    summary = meta["controller"]
    assert summary["rank"] == R and summary["k_min"] == 1
    assert 0.0 < summary["lora_flops_fraction"] <= 1.0
    assert "r^2 / k_i^2" in summary["bound_column"]


def test_simulator_builds_the_sketch_controller():
    sc = _sketch(**{"controller.k_min": 3})
    ctl = Simulator(sc, make_learner(sc)).controller
    assert isinstance(ctl, SketchRatio) and ctl.rank == R and ctl.k_min == 3
    d = ctl.decide(np.array([1.0, 10.0, 100.0]), np.zeros(3))
    np.testing.assert_array_equal(d.client_ranks(ctl.rank), [R, R, R])  # Q = 0: k = r
    assert d.bound == 1.0 and d.sparsification == 1.0 and d.shares.sum() == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("controller", "needle"),
    [
        ({"k_min": 9}, "controller.k_min: must be <= controller.rank (8), got 9"),
        ({"k_min": 0}, "controller.k_min: must be >= 1"),
        ({"k_min": "two"}, "controller.k_min: expected an integer"),
    ],
)
def test_config_errors_are_one_line_naming_the_key(controller, needle):
    data = {"controller": {"name": "sketch", "rank": R, **controller}}
    with pytest.raises(ConfigError) as err:
        scenario_from_dict(data)
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_k_min_is_not_checked_for_other_controllers():
    sc = scenario_from_dict({"controller": {"name": "osfa", "rank": 2, "k_min": 4}})
    assert sc.controller.given("k_min") == 4  # sketch's key, kept for a switch of controller
