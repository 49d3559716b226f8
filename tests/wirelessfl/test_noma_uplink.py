"""``channel.uplink: noma`` (power-domain NOMA with SIC, wirelessfl/uplinks/noma.py): the rates
of three clients by hand, with perfect and imperfect SIC; the perfect-SIC sum rate equals the
multiple-access capacity B log2(1 + sum SNR) whatever the order the clients come in; through
the simulator on a deterministic channel (an SNR trace) every upload lasts bits / R_k computed
here from ``clients.csv`` alone and the fixed and the online (osfa) controllers' planned delay
equals the measured one to 1e-9; osfa's ratio minimises P3 with the longest upload as the
delay, checked on a grid of ratios with the real bits of each; the combinations it cannot run
(TSFA's offline average, controllers that plan shares) are refused in one line at load."""

from __future__ import annotations

import math

import numpy as np
import pytest

from wirelessfl.config.loader import scenario_from_dict
from wirelessfl.errors import ConfigError
from wirelessfl.learners import make_learner
from wirelessfl.sim.runner import run_scenario
from wirelessfl.sim.simulator import Simulator
from wirelessfl.uplinks.noma import sic_rates_bps

B_HZ = 1.0e6


def test_three_clients_by_hand():
    snr = np.array([4.0, 1.0, 9.0])  # decoded 9 (client 2), then 4 (0), then 1 (1)
    want = B_HZ * np.log2([1 + 4 / (1 + 1), 1 + 1, 1 + 9 / (1 + 4 + 1)])
    np.testing.assert_allclose(sic_rates_bps(snr, B_HZ), want, rtol=1e-14)
    eps = 0.1  # imperfect SIC: a tenth of each cancelled signal stays
    want = B_HZ * np.log2([1 + 4 / (1 + 1 + eps * 9), 1 + 1 / (1 + eps * 13), 1 + 9 / (1 + 5)])
    np.testing.assert_allclose(sic_rates_bps(snr, B_HZ, eps), want, rtol=1e-14)


def test_the_perfect_sic_sum_rate_is_the_multiple_access_capacity():
    rng = np.random.default_rng(7)
    for k in (1, 2, 5, 40):
        snr = rng.exponential(10.0, size=k)
        rates = sic_rates_bps(snr, B_HZ)
        assert rates.sum() == pytest.approx(B_HZ * math.log2(1 + snr.sum()), rel=1e-12)
        perm = rng.permutation(k)  # the order they come in does not matter
        np.testing.assert_allclose(sic_rates_bps(snr[perm], B_HZ), rates[perm], rtol=1e-14)
        assert (sic_rates_bps(snr, B_HZ, 0.2) <= rates * (1 + 1e-14)).all()  # residual hurts


def _scenario(tmp_path, **over) -> dict:
    rounds, n = 4, 8
    trace = np.random.default_rng(3).uniform(-5.0, 20.0, size=(rounds, n))  # dB
    np.save(tmp_path / "snr.npy", trace)
    data = {
        "name": "noma",
        "seed": 1,
        "n_clients": n,
        "n_scheduled": 3,
        "rounds": rounds,
        "channel": {
            "bandwidth_hz": B_HZ,
            "snr_trace": str(tmp_path / "snr.npy"),
            "uplink": "noma",
            "uplink_params": {"sic_residual": 0.05},
        },
        "devices": {"include_compute": False},
        "controller": {"name": "fixed", "rank": 4, "r_max": 8, "sparsification": 0.5},
        "learner": {"kind": "surrogate", "shape": {"layer_shapes": [[64, 32]], "base_params": 0}},
        "output": {"clients": True},
    }
    for key, value in over.items():
        section, name = key.split(".")
        data.setdefault(section, {})[name] = value
    return data


OSFA = {"name": "osfa", "rank": 4, "r_max": 8, "V": 1.0e-3, "d_th_s": 1.0e-3}


@pytest.mark.parametrize("controller", [None, OSFA], ids=["fixed", "osfa"])
def test_uploads_and_the_planned_delay_through_the_simulator(tmp_path, controller):
    over = {} if controller is None else {"controller": controller}
    data = _scenario(tmp_path)
    data.update(over)
    result = run_scenario(scenario_from_dict(data), tmp_path / "run")
    clients, rounds = result.clients, result.rounds
    assert (clients.status == "arrived").all() and (clients.share == 1.0).all()
    for _, rows in clients.groupby("round"):
        snr = 10.0 ** (rows.snr_db.to_numpy() / 10.0)
        order = np.argsort(-snr, kind="stable")
        rate = np.empty(len(snr))
        for pos, i in enumerate(order):  # an independent loop over the decoding order
            after = snr[order[pos + 1 :]].sum()
            before = snr[order[:pos]].sum()
            rate[i] = B_HZ * math.log2(1 + snr[i] / (1 + after + 0.05 * before))
        np.testing.assert_allclose(rows.upload_s, rows.bits / rate, rtol=1e-12)
    np.testing.assert_allclose(rounds.planned_delay_s, rounds.delay_s, rtol=0, atol=1e-9)
    energy = clients.tx_power_w * clients.upload_s
    np.testing.assert_allclose(clients.transmit_energy_j, energy, rtol=1e-12)
    if controller is not None:  # the queue pushed the ratio below 1 in some round
        assert rounds.sparsification.min() < 1.0


def test_osfa_minimises_p3_with_the_longest_upload(tmp_path):
    """One decision against an independent search: at each O of a grid the payload O times the
    real plan's bits at O = 1 (P3's continuous payload; the plans count whole values), the SIC
    times bits_k / R_k, the longest as D(O), and Q D(O) + V penalty(O) of the real plans; and
    with the plans' whole values, within the rounding of one value."""
    data = _scenario(tmp_path)
    data["controller"] = OSFA
    scenario = scenario_from_dict(data)
    ctl = Simulator(scenario, make_learner(scenario)).controller
    snr = np.array([30.0, 3.0, 0.8])
    ctl.begin_round(0, np.arange(3))
    rate = sic_rates_bps(snr, B_HZ, 0.05)
    full_bits = ctl.upload_bits(ctl.round_plans(snr, ctl.rank, 1.0))

    def objective(o: float, queue: float, whole_values: bool = False) -> float:
        plans = ctl.round_plans(snr, ctl.rank, o)
        bits = ctl.upload_bits(plans) if whole_values else full_bits * o
        return queue * float(np.max(bits / rate)) + OSFA["V"] * ctl.penalty(plans)

    for queue in (0.02, 0.5, 5.0):
        ctl.virtual_queue.value = queue
        decision = ctl.decide(snr, np.zeros(3))
        grid = np.linspace(0.05, 1.0, 1901)
        o = decision.sparsification
        assert objective(o, queue) <= min(objective(x, queue) for x in grid) * (1 + 1e-12)
        best_whole = min(objective(x, queue, True) for x in grid)
        one_value_s = queue * ctl.ctx.bits_per_value / rate.min()  # a value more or less
        assert objective(o, queue, True) <= best_whole + one_value_s
        assert decision.planned_delay_s == pytest.approx(
            float(np.max(ctl.upload_bits(ctl.round_plans(snr, 4, decision.sparsification)) / rate)),
            rel=1e-12,
        )


@pytest.mark.parametrize(
    ("over", "key"),
    [
        ({"controller.name": "tsfa"}, "channel.uplink: noma has no average delay"),
        ({"controller.name": "sketch"}, "channel.uplink: noma sends every client on the whole"),
        ({"controller.name": "energy_min"}, "controller 'energy_min' plans bandwidth shares"),
        ({"server.mode": "async", "server.concurrency": 2}, "server.mode"),
        ({"channel.uplink_params": {"sic_residual": 2.0}}, "channel.uplink_params.sic_residual"),
        ({"channel.uplink_params": {"sic": 0.1}}, "channel.uplink_params.sic"),
        ({"channel.noise_bandwidth": "share"}, "channel.noise_bandwidth"),
        ({"channel.uplink": "fdma"}, "channel.uplink_params.sic_residual"),
    ],
)
def test_what_noma_cannot_run_is_refused_in_one_line(tmp_path, over, key):
    with pytest.raises(ConfigError) as err:
        scenario_from_dict(_scenario(tmp_path, **over))
    assert key in str(err.value) and "\n" not in str(err.value)
    if "controller.name" in over:
        assert "use controller.name: fixed or osfa, or channel.uplink: fdma" in str(err.value)
