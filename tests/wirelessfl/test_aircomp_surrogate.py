"""The network-only learner sees the over-the-air aggregation's noise (docs/simulator.md,
"What the network-only learner sees"): the term gamma_air = S MSE eta^2 E^2 G^2 / (2 K^2) on a
hand case, recomputed from the loss model's closed form; a lower SNR gives a higher loss; FDMA
runs do not see it."""

from __future__ import annotations

import numpy as np
import pytest
from scenario_helpers import small_scenario

from optim import BoundConstants
from optim.aircomp_bound import aircomp_term
from wirelessfl.learners.surrogate import SurrogateLearner
from wirelessfl.plans import AirRound, RoundPlan
from wirelessfl.sim import run_scenario

#: constants that make the noise term visible: eta E G = 1, S = 2
LOUD = {"constants.S": 2.0, "constants.eta": 0.1, "constants.E": 5, "constants.G": 2.0}


def test_the_term_is_its_closed_form_on_a_hand_case():
    constants = BoundConstants(S=2.0, eta=0.1, E=5, G=2.0)
    # c = (1, 0.5, 0.8), eta_d = 4: MSE = 0 + 0.25 + 0.04 + 0.25 = 0.54; K = 3
    term = aircomp_term(mse=0.54, n_aggregated=3, constants=constants)
    assert term == pytest.approx(2.0 * 0.54 * (0.1 * 5 * 2.0) ** 2 / (2.0 * 9.0), rel=1e-15)


def test_the_learner_adds_the_term_to_gamma_of_the_arrived_clients():
    sc = small_scenario(**{**LOUD, "channel.uplink": "aircomp", "controller.name": "fixed"})
    learner = SurrogateLearner.from_scenario(sc)
    learner.start(rank=4, n_clients=sc.n_clients, seed=sc.seed)
    gamma, k_scheduled = 3.0, 4
    learner.local_round(RoundPlan(0, np.arange(k_scheduled), 4, 1.0, gamma, k_scheduled))
    arrived = np.array([0, 1, 2])  # client 3 scheduled, lost: not in the sum
    learner.receive_over_the_air(AirRound({0: 1.0, 1: 0.5, 2: 0.8, 3: 0.1}, denoising=4.0))
    loss = learner.aggregate(0, arrived)["loss"]
    # by hand: MSE over the arrived = 0.25 + 0.04 + 1/4; S eta^2 E^2 G^2 = 2
    air = 2.0 * 0.54 / (2.0 * 3**2)
    e0, half, rate = sc.learner.initial_loss, sc.learner.bound_half, sc.learner.progress_rate
    floor = e0 * (gamma + air) / (gamma + air + half)
    assert loss == pytest.approx(e0 - rate * (3 / k_scheduled) * (e0 - floor), rel=1e-14)
    # the channel is used once: the next aggregation without one sees gamma alone
    learner.local_round(RoundPlan(1, np.arange(k_scheduled), 4, 1.0, gamma, k_scheduled))
    again = learner.aggregate(1, arrived)["loss"]
    floor = e0 * gamma / (gamma + half)
    assert again == pytest.approx(loss - rate * (3 / k_scheduled) * (loss - floor), rel=1e-14)


def _final_loss(tmp_path, name, **overrides):
    common = {
        **LOUD,
        "controller.name": "fixed",
        "controller.rank": 4,
        "controller.sparsification": 1.0,
        "channel.aircomp.policy": "full_inversion",  # MSE 1 / min_k q_k: unbounded at low SNR
        "learner.bound_half": 1.0e3,
        "learner.progress_rate": 0.2,
        "rounds": 20,
    }
    run = run_scenario(small_scenario(**{**common, **overrides}), tmp_path / name)
    return run.rounds.loss.to_numpy(), run.rounds


def test_lower_snr_costs_surrogate_loss_and_fdma_is_untouched(tmp_path):
    losses = {}
    for snr_db in (-10.0, 20.0):
        losses[snr_db], rounds = _final_loss(
            tmp_path, f"air{snr_db}", **{"channel.uplink": "aircomp", "channel.mean_snr_db": snr_db}
        )
        assert rounds.aircomp_mse.notna().all()
    fdma, _ = _final_loss(tmp_path, "fdma", **{"channel.mean_snr_db": -10.0})
    assert (losses[-10.0][1:] > losses[20.0][1:]).all()
    assert losses[-10.0][-1] > 1.05 * losses[20.0][-1]  # a visible cost, not rounding
    # FDMA at the same SNR: no analog noise, the loss model is the bound's alone
    assert (fdma[-1] < losses[-10.0][-1]) and fdma[-1] == pytest.approx(losses[20.0][-1], rel=1e-3)
