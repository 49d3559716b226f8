"""``controller.radio: joint`` in the event-driven modes (docs/solvers.md, "Power and clock per
dispatch"): the realised compute and upload of every update follow its power and clock, and
without an energy price the decision is the old one (full power and clock).

Network-only runs on a fixed SNR trace (observed at the power-control power P_bar = 23 dBm)
with one upload on the air (C = 1, share 1): each check recomputes from the tables.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scenario_helpers import small_scenario

from wirelessfl.errors import ConfigError
from wirelessfl.sim import run_scenario

N = 6
B_HZ, SPEED, KAPPA, PER_CYCLE, F_MAX, F_MIN = 1.0e6, 1.0e11, 1.0e-28, 8.0, 2.0e9, 0.5e9
P_BAR_W = 10.0 ** (23.0 / 10.0) / 1000.0
SNR = 10.0 ** (np.linspace(-12.0, 12.0, N) / 10.0)


def _scenario(tmp_path, *, radio: str, budget_j: float | None, d_th_s: float = 0.5):
    trace = tmp_path / "snr.npy"
    np.save(trace, np.tile(10.0 * np.log10(SNR), (40, 1)))
    return small_scenario(
        **{
            "rounds": 40,
            "n_clients": N,
            "n_scheduled": 1,
            "controller.name": "osfa",
            "controller.radio": radio,
            "controller.rank": 4,
            "controller.V": 1.0e-4,
            "controller.d_th_s": d_th_s,
            "controller.energy_budget_j": budget_j,
            "channel": {"bandwidth_hz": B_HZ, "snr_trace": str(trace)},
            "devices.include_compute": True,
            "devices.flops_per_s": SPEED,
            "devices.energy.model": "cmos",
            "devices.energy.kappa": KAPPA,
            "devices.energy.flops_per_cycle": PER_CYCLE,
            "devices.energy.cpu_freq_hz": F_MAX,
            "devices.energy.cpu_freq_min_hz": F_MIN,
            "learner.shape.base_params": 100_000,
            "server": {"mode": "async", "concurrency": 1},
        }
    )


def _flops(tmp_path) -> float:
    """An update's FLOPs: its compute time at f_max (no energy price) times the speed."""
    run = run_scenario(_scenario(tmp_path, radio="joint", budget_j=None), tmp_path / "free")
    flops = run.clients.compute_s * SPEED
    assert np.ptp(flops) <= 1e-9 * flops.max()  # every update the same work
    return float(flops.iloc[0])


def test_realised_compute_and_upload_follow_the_chosen_power_and_clock(tmp_path):
    flops = _flops(tmp_path)
    run = run_scenario(_scenario(tmp_path, radio="joint", budget_j=0.02), tmp_path / "run")
    c, rounds = run.clients, run.rounds
    power_w = c.tx_power_w.to_numpy()
    clock_hz = np.sqrt(PER_CYCLE * c.compute_energy_j.to_numpy() / (KAPPA * flops))  # CMOS
    # the decisions move: some updates below full power, some below full clock, within range
    assert (power_w < P_BAR_W * (1 - 1e-6)).sum() >= 3 and (power_w <= P_BAR_W * (1 + 1e-12)).all()
    assert (clock_hz < F_MAX * (1 - 1e-6)).sum() >= 3
    assert (clock_hz >= F_MIN * (1 - 1e-9)).all() and (clock_hz <= F_MAX * (1 + 1e-9)).all()
    # realised: compute at f, upload at p on the whole band (C = 1), energy p x upload
    np.testing.assert_allclose(c.compute_s, flops / SPEED * F_MAX / clock_hz, rtol=1e-9)
    rate_bps = B_HZ * np.log2(1.0 + SNR[c.client] * power_w / P_BAR_W)
    np.testing.assert_allclose(c.upload_s, c.bits / rate_bps, rtol=1e-9)
    np.testing.assert_allclose(c.transmit_energy_j, power_w * c.upload_s, rtol=1e-9)
    np.testing.assert_allclose(c.snr_db, 10 * np.log10(SNR[c.client] * power_w / P_BAR_W))
    # one update per aggregation at share 1: the plan is what happened
    np.testing.assert_allclose(rounds.planned_delay_s, c.compute_s + c.upload_s, rtol=1e-9)
    # the energy queues take the realised energy, once per aggregation
    z = np.zeros(N)
    for t in range(len(rounds)):
        spent = np.zeros(N)
        mine = c[c["round"] == t]
        np.add.at(spent, mine.client, mine.compute_energy_j + mine.transmit_energy_j)
        z = np.maximum(z + spent - 0.02, 0.0)
        assert rounds.energy_queue_mean_j[t] == pytest.approx(z.mean(), rel=1e-12)


def test_without_an_energy_price_the_decision_is_full_power_and_clock(tmp_path):
    """No budget (w = 0): p = P_max and f = f_max, the same updates as ``radio: fixed``."""
    tables = {}
    for radio in ("fixed", "joint"):
        sc = _scenario(tmp_path, radio=radio, budget_j=None, d_th_s=0.08)
        run = run_scenario(sc, tmp_path / radio)
        tables[radio] = run.clients
    joint, fixed = tables["joint"], tables["fixed"]
    np.testing.assert_allclose(joint.tx_power_w, P_BAR_W, rtol=1e-12)
    pd.testing.assert_frame_equal(joint, fixed, rtol=1e-12)
    assert joint.ratio.min() < 1.0  # the delay queue binds: (D1) still chooses O


def test_joint_radio_with_noise_over_the_share_is_refused_in_one_line():
    with pytest.raises(ConfigError) as err:
        small_scenario(
            **{
                "server.mode": "async",
                "controller.name": "osfa",
                "controller.radio": "joint",
                "channel.noise_bandwidth": "share",
            }
        )
    assert "\n" not in str(err.value) and "channel.noise_bandwidth" in str(err.value)
