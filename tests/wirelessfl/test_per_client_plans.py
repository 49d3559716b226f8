"""Per-client ranks and ratios travel from the controller's Decision to clients.csv, and each
client's download time follows its own download size."""

from __future__ import annotations

import numpy as np
import pytest

from wirelessfl.controllers.base import Decision
from wirelessfl.controllers.fixed import Fixed
from wirelessfl.registries import CONTROLLERS
from wirelessfl.sim import run_scenario

SHAPES = [[64, 64], [64, 32]]  # sum (d + l) = 224


class HalfForOdd(Fixed):
    """The fixed controller, but odd-numbered allocated clients get half the rank and ratio."""

    def decide(self, snr, compute_s):
        d = super().decide(snr, compute_s)
        odd = np.arange(len(snr)) % 2 == 1
        ranks = np.where(odd, self.rank // 2, self.rank)
        ratios = np.where(odd, d.sparsification / 2, d.sparsification)
        return Decision(
            d.sparsification, d.shares, d.planned_delay_s, d.bound, ranks=ranks, ratios=ratios
        )


@pytest.fixture
def half_for_odd():
    CONTROLLERS.register("half_for_odd", HalfForOdd)
    yield
    CONTROLLERS.unregister("half_for_odd")


def test_decision_ranks_and_ratios_reach_the_clients_table(make_scenario, half_for_odd, tmp_path):
    sc = make_scenario(
        rounds=3,
        **{
            "controller.name": "half_for_odd",
            "controller.rank": 8,
            "controller.sparsification": 0.5,
            "learner.shape.layer_shapes": SHAPES,
        },
    )
    clients = run_scenario(sc, tmp_path / "run").clients
    for _, rows in clients.groupby("round"):
        odd = np.arange(len(rows)) % 2 == 1  # allocation order = scheduled order (no outage)
        assert (rows["rank"].to_numpy() == np.where(odd, 4, 8)).all()
        np.testing.assert_allclose(rows["ratio"], np.where(odd, 0.25, 0.5))
        n = rows["rank"].to_numpy() * 224
        kept = [
            round(o * r * (d + e))
            for o, r in zip(rows.ratio, rows["rank"], strict=True)
            for d, e in SHAPES
        ]
        kept = np.array(kept).reshape(-1, 2).sum(axis=1)
        np.testing.assert_array_equal(rows.bits, 32 * kept)
        np.testing.assert_array_equal(rows.bits_down, 32 * n)


def test_each_client_waits_for_its_own_download(make_scenario, half_for_odd, tmp_path):
    rate = 1.0e6
    sc = make_scenario(
        rounds=2,
        **{
            "controller.name": "half_for_odd",
            "controller.rank": 8,
            "learner.shape.layer_shapes": SHAPES,
            "channel.downlink_rate_bps": rate,
        },
    )
    result = run_scenario(sc, tmp_path / "run")
    events, clients = result.events, result.clients
    for t in (0, 1):
        start = events[(events["round"] == t) & (events.kind == "broadcast")].time_s.iloc[0]
        compute = events[(events["round"] == t) & (events.kind == "compute_start")]
        rows = clients[clients["round"] == t].set_index("client")
        for _, e in compute.iterrows():
            assert e.time_s - start == pytest.approx(rows.loc[e.client, "bits_down"] / rate)
    assert result.rounds.bits_down.tolist() == [
        float(clients[clients["round"] == t].bits_down.sum()) for t in (0, 1)
    ]
