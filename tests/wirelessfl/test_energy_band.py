"""Each device's band of time-average energy with the joint radio (wirelessfl.sim.energy_band):
both ends against computations written here, and the start-of-run warning line."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest
from scenario_helpers import small_scenario
from scipy.optimize import minimize_scalar

from optim import solve_energy_min
from wirelessfl.sim.energy_band import energy_band_j
from wirelessfl.sim.runner import Run

B_HZ, FLOPS_PER_S, KAPPA, F_MAX, F_MIN, PER_CYCLE = 2.0e5, 1.0e11, 1.0e-28, 2.0e9, 0.5e9, 8.0
D_TH_S, P_MAX_W = 0.3, 10.0 ** (23.0 / 10.0) / 1000.0
HAND = {
    "n_clients": 2,
    "n_scheduled": 2,
    "rounds": 1,
    "controller.name": "osfa",
    "controller.radio": "joint",
    "controller.rank": 4,
    "controller.V": 1.0e-4,
    "controller.d_th_s": D_TH_S,
    "controller.energy_budget_j": 1.0,
    "channel.bandwidth_hz": B_HZ,
    "channel.noise_bandwidth": "share",
    "channel.mean_snr_db": None,  # path loss: the two devices' mean SNRs differ
    "channel.d_min_m": 1000.0,
    "channel.d_max_m": 3000.0,
    "channel.tx_power_dbm": 23.0,
    "devices.include_compute": True,
    "devices.flops_per_s": FLOPS_PER_S,
    "devices.energy.model": "cmos",
    "devices.energy.kappa": KAPPA,
    "devices.energy.flops_per_cycle": PER_CYCLE,
    "devices.energy.cpu_freq_hz": F_MAX,
    "devices.energy.cpu_freq_min_hz": F_MIN,
    "learner.shape.base_params": 100_000,
}
LOGGER = "wirelessfl.sim.simulator"


class _Unfaded:
    """|s| = 1 in every round: each client's SNR is its mean SNR (a deterministic channel)."""

    mean_power = 1.0

    def sample(self, rng, n_rounds, n_clients, *, initial=None):
        return np.ones((n_rounds, n_clients), dtype=complex)


def _client_energy_j(compute_s, bits, snr, share, round_s):
    """One client's least energy [J] on ``share`` of the band within ``round_s``: the compute
    takes tau in [c, c f_max / f_min] at energy E(f_max) (c / tau)^2 (CMOS, f = f_max c / tau),
    the upload t = round_s - tau at the power that sends ``bits`` on b B log2(1 + p g / b)."""
    gain_per_w = snr / P_MAX_W
    at_fmax_j = KAPPA * F_MAX**2 * compute_s * FLOPS_PER_S / PER_CYCLE

    def power_w(upload_s):
        return share / gain_per_w * (2.0 ** (bits / (share * B_HZ * upload_s)) - 1.0)

    def energy_j(tau_s):
        upload_s = round_s - tau_s
        return at_fmax_j * (compute_s / tau_s) ** 2 + power_w(upload_s) * upload_s

    # the compute takes at most what leaves the upload its least time, at full power
    least_upload_s = bits / (share * B_HZ * np.log2(1.0 + P_MAX_W * gain_per_w / share))
    lo, hi = compute_s, min(compute_s * F_MAX / F_MIN, round_s - least_upload_s)
    if hi < lo:
        return np.inf
    best = minimize_scalar(energy_j, bounds=(lo, hi), method="bounded", options={"xatol": 1e-13})
    return float(best.fun)


def _hand_run(tmp_path, name="hand", **sets):
    return Run(small_scenario(**{**HAND, **sets}), tmp_path / name)


def test_both_ends_of_the_band_against_closed_forms_on_two_devices(tmp_path):
    """N = K = 2 on a deterministic channel: E_hi,k = E(f_max) + P_max (D_th - c_k) (the
    device's energy free: f_max, and full power for the rest of the round), and E_lo,k the
    round of least total energy at O_min, found here by nested 1-D searches over the share
    and each device's compute time."""
    run = _hand_run(tmp_path)
    sim, ctl = run.sim, run.sim.controller
    snr = np.asarray(sim.cell.mean_snr, dtype=float)
    assert snr[0] != pytest.approx(snr[1], rel=0.1)  # two different devices
    flops = run.learner.expected_flops(sim.rank)
    compute_s = np.full(2, flops / FLOPS_PER_S)
    band_j = energy_band_j(
        ctl,
        channel_at=lambda time_s: (snr, np.full(2, P_MAX_W)),
        horizon_s=1.0,
        fading=_Unfaded(),
        compute_s=compute_s,
        n_scheduled=2,
        d_th_s=D_TH_S,
    )
    at_fmax_j = KAPPA * F_MAX**2 * flops / PER_CYCLE
    np.testing.assert_allclose(band_j[1], at_fmax_j + P_MAX_W * (D_TH_S - compute_s), rtol=1e-9)
    ctl.begin_round(0, np.arange(2), np.full(2, P_MAX_W))
    # the high end is what the least weighted-energy round gives a device whose weight is 0
    inputs = {
        "cycles": compute_s * F_MAX,
        "snr_per_w": snr / P_MAX_W,
        "f_min_hz": F_MIN,
        "f_max_hz": F_MAX,
        "kappa": at_fmax_j / (compute_s * F_MAX**3),
        "p_max_w": P_MAX_W,
        "bandwidth_hz": B_HZ,
    }
    dense = ctl.upload_bits(ctl.round_plans(snr, ctl.rank, 1.0))
    for k in range(2):
        free = solve_energy_min(deadline_s=D_TH_S, weight=np.eye(2)[1 - k], bits=dense, **inputs)
        spent_j = free.compute_energy_j[k] + free.upload_energy_j[k]
        assert spent_j == pytest.approx(band_j[1, k], rel=1e-6)
    bits = ctl.upload_bits(ctl.round_plans(snr, ctl.rank, HAND_O_MIN))
    assert bits.min() > 0

    def total_j(share0):
        return _client_energy_j(compute_s[0], bits[0], snr[0], share0, D_TH_S) + _client_energy_j(
            compute_s[1], bits[1], snr[1], 1.0 - share0, D_TH_S
        )

    best = minimize_scalar(total_j, bounds=(1e-6, 1 - 1e-6), method="bounded").x
    low_j = [
        _client_energy_j(compute_s[0], bits[0], snr[0], best, D_TH_S),
        _client_energy_j(compute_s[1], bits[1], snr[1], 1.0 - best, D_TH_S),
    ]
    np.testing.assert_allclose(band_j[0], low_j, rtol=1e-4)
    # the low end lies above the compute at f_min and below the high end
    assert (band_j[0] > at_fmax_j * (F_MIN / F_MAX) ** 2).all()
    assert (band_j[0] < band_j[1]).all()


HAND_O_MIN = 0.05  # small_scenario's controller.o_min


def test_a_device_trains_in_k_of_n_of_the_drawn_rounds(tmp_path):
    """N = 4, K = 2 on a deterministic channel: each device's high end is its closed form
    times K / N = 1/2 (uniform selection), whatever the partners it was drawn with."""
    run = _hand_run(tmp_path, n_clients=4)
    sim = run.sim
    flops = run.learner.expected_flops(sim.rank)
    compute_s = np.full(4, flops / FLOPS_PER_S)
    band_j = energy_band_j(
        sim.controller,
        channel_at=lambda time_s: (np.asarray(sim.cell.mean_snr, dtype=float), P_MAX_W),
        horizon_s=1.0,
        fading=_Unfaded(),
        compute_s=compute_s,
        n_scheduled=2,
        d_th_s=D_TH_S,
    )
    closed_j = KAPPA * F_MAX**2 * flops / PER_CYCLE + P_MAX_W * (D_TH_S - compute_s)
    np.testing.assert_allclose(band_j[1], 0.5 * closed_j, rtol=1e-9)


def _warnings(tmp_path, caplog, name, budget_j):
    caplog.clear()
    caplog.set_level(logging.WARNING, logger=LOGGER)
    run = _hand_run(tmp_path, name, **{"controller.energy_budget_j": budget_j})
    return run, [r.getMessage() for r in caplog.records if r.name == LOGGER]


def test_a_budget_below_the_band_is_one_line_naming_the_devices(tmp_path, caplog):
    """Rayleigh fading (the run's own band): a budget between the two devices' low ends names
    the one above it; one above both says nothing; meta.json holds the band."""
    run, _ = _warnings(tmp_path, caplog, "probe", 1.0)
    low_j = run.sim.energy_band_j[0]
    assert low_j[0] != pytest.approx(low_j[1], rel=1e-3)
    above = int(np.argmax(low_j))
    _, lines = _warnings(tmp_path, caplog, "between", float(low_j.mean()))
    assert len(lines) == 1 and "\n" not in lines[0]
    assert f"for 1 of 2 devices (devices {above}; device {above}:" in lines[0]
    assert f"{low_j[above]:.4g} J at O_min" in lines[0]
    assert "controller.d_th_s = 0.3 s" in lines[0]
    run, lines = _warnings(tmp_path, caplog, "above", float(1.01 * low_j.max()))
    assert lines == []
    run.execute()
    meta = json.loads((tmp_path / "above" / "meta.json").read_text())
    np.testing.assert_array_equal(meta["energy_band_j"]["low"], run.sim.energy_band_j[0])
    np.testing.assert_array_equal(meta["energy_band_j"]["high"], run.sim.energy_band_j[1])


def test_no_band_without_a_budget_or_with_the_fixed_radio(tmp_path):
    free = _hand_run(tmp_path, "free", **{"controller.energy_budget_j": None})
    assert free.sim.energy_band_j is None
    fixed = _hand_run(
        tmp_path,
        "fixed",
        **{"controller.radio": "fixed", "channel.noise_bandwidth": "band"},
    )
    assert fixed.sim.energy_band_j is None
    run = _hand_run(tmp_path, "meta", **{"controller.energy_budget_j": None})
    run.execute()
    assert "energy_band_j" not in json.loads((tmp_path / "meta" / "meta.json").read_text())


def test_moving_clients_are_taken_along_the_run(tmp_path):
    """umi's moving clients: at time 0 the channel the band draws around is the cell's mean
    SNR (the offline stage's), later the gains where the clients have moved, with their
    power-control powers."""
    from wirelessfl.config import load_scenario
    from wirelessfl.config.loader import SCENARIO_DIR

    sets = ["controller.energy_budget_j=1.0", "rounds=2"]
    run = Run(load_scenario(SCENARIO_DIR / "energy/umi_budget_joint.yaml", sets), tmp_path / "u")
    sim = run.sim
    snr0, power0 = sim._mean_channel_at(0.0)
    np.testing.assert_allclose(snr0, sim.cell.mean_snr, rtol=1e-12)
    later = sim.channel.radio.large_scale.at(300.0)
    snr, power = sim._mean_channel_at(300.0)
    np.testing.assert_allclose(snr, later.power_gain / sim.cell.noise_power_w, rtol=1e-12)
    np.testing.assert_array_equal(power, later.tx_power_w)
    assert not np.allclose(snr, snr0)  # the clients moved
    assert (
        sim.energy_band_j.shape == (2, 10) and (sim.energy_band_j[0] < sim.energy_band_j[1]).all()
    )
