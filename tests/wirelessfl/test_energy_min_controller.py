"""The energy-min controller (least round energy under ``controller.round_time_s``, Yang et al.)
and the joint radio of tsfa/osfa in the simulator (docs/solvers.md, "The energy-min and joint
radio controllers"): every realised time and energy of ``clients.csv`` against the optim solver
called here on inputs rebuilt from the tables by hand; one-line refusals."""

from __future__ import annotations

import numpy as np
import pytest
from scenario_helpers import small_scenario

from optim import min_feasible_deadline_s, solve_energy_min
from optim.energy_min import client_block
from wirelessfl.errors import ConfigError, SimulationError, UserError
from wirelessfl.sim import run_scenario

B_HZ, SPEED, KAPPA, PER_CYCLE, F_MAX, F_MIN = 1.0e6, 1.0e14, 1.0e-32, 8.0, 2.0e9, 0.5e9
P_MAX_W = 10.0 ** (23.0 / 10.0) / 1000.0  # channel.tx_power_dbm's default, 23 dBm
T_S = 0.08
SCHEMES = ("joint", "equal_bandwidth", "max_power", "max_frequency")
RADIO = {
    "channel.bandwidth_hz": B_HZ,
    "channel.noise_bandwidth": "share",
    "devices.include_compute": True,
    "devices.flops_per_s": SPEED,
    "devices.energy.model": "cmos",
    "devices.energy.kappa": KAPPA,
    "devices.energy.flops_per_cycle": PER_CYCLE,
    "devices.energy.cpu_freq_hz": F_MAX,
    "devices.energy.cpu_freq_min_hz": F_MIN,
    "n_clients": 10,
    "n_scheduled": 3,
    "rounds": 3,
}
ENERGY_MIN = {
    **RADIO,
    "controller.name": "energy_min",
    "controller.rank": 4,
    "controller.sparsification": 0.5,
    "controller.round_time_s": T_S,
}


def _run(tmp_path, name, base, **overrides):
    return run_scenario(small_scenario(**{**base, **overrides}), tmp_path / name)


def _inputs(rows) -> dict:
    """The solver's inputs of one round, rebuilt from its clients.csv rows by hand: the SNR per
    watt is SNR(p) / p at any p; C_k / f_k is the compute time, so C_k = compute_s f_k; CMOS
    energy kappa f^2 FLOPs / flops_per_cycle with FLOPs = C_k flops_per_s / f_max."""
    p = rows.tx_power_w.to_numpy()
    cycles = rows.compute_s.to_numpy() * rows.cpu_hz.to_numpy()
    return {
        "bits": rows.bits.to_numpy(),
        "cycles": cycles,
        "snr_per_w": 10.0 ** (rows.snr_db.to_numpy() / 10.0) / p,
        "f_min_hz": F_MIN,
        "f_max_hz": F_MAX,
        "kappa": KAPPA * SPEED / (PER_CYCLE * F_MAX),
        "p_max_w": P_MAX_W,
        "bandwidth_hz": B_HZ,
    }


def _upload_s(rows) -> np.ndarray:
    """bits / (b B log2(1 + SNR(p) / b)): the rate with the noise over the share."""
    snr, b = 10.0 ** (rows.snr_db.to_numpy() / 10.0), rows.share.to_numpy()
    return rows.bits.to_numpy() / (b * B_HZ * np.log2(1.0 + snr / b))


@pytest.fixture(scope="module")
def scheme_runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("schemes")
    return {s: _run(tmp, s, ENERGY_MIN, **{"controller.energy_scheme": s}) for s in SCHEMES}


@pytest.mark.parametrize("scheme", SCHEMES)
def test_each_round_is_the_solvers_plan_and_meets_t(scheme_runs, scheme):
    run = scheme_runs[scheme]
    c = run.clients
    assert len(c) == 9 and (c.status == "arrived").all()
    assert (run.rounds.solver_fallback == 0).all()
    np.testing.assert_allclose(c.upload_s, _upload_s(c), rtol=1e-9)
    np.testing.assert_allclose(c.transmit_energy_j, c.tx_power_w * c.upload_s, rtol=1e-12)
    for _, rows in c.groupby("round"):
        plan = solve_energy_min(deadline_s=T_S, method=scheme, **_inputs(rows))
        np.testing.assert_allclose(rows.share, plan.share, rtol=1e-9)
        np.testing.assert_allclose(rows.tx_power_w, np.minimum(plan.power_w, P_MAX_W), rtol=1e-9)
        np.testing.assert_allclose(rows.cpu_hz, plan.frequency_hz, rtol=1e-9)
        energy_j = float((rows.compute_energy_j + rows.transmit_energy_j).sum())
        assert energy_j == pytest.approx(plan.energy_j, rel=1e-9)
        assert (rows.compute_s + rows.upload_s <= T_S * (1 + 1e-9)).all()
        assert plan.share.sum() <= 1.0 + 1e-9
    # the planned delay is the longest upload the simulator measured
    np.testing.assert_allclose(run.rounds.planned_delay_s, run.rounds.delay_s, rtol=1e-9)


@pytest.mark.parametrize("baseline", SCHEMES[1:])
def test_the_joint_scheme_spends_no_more_than_a_baseline(scheme_runs, baseline):
    def per_round(run):
        c = run.clients
        return (c.compute_energy_j + c.transmit_energy_j).groupby(c["round"]).sum().to_numpy()

    joint, other = scheme_runs["joint"], scheme_runs[baseline]
    assert joint.clients[["round", "client"]].equals(other.clients[["round", "client"]])
    assert (per_round(joint) <= per_round(other) * (1 + 1e-6)).all()
    assert per_round(joint).sum() < per_round(other).sum()


def test_a_limit_below_the_least_round_time_takes_the_least_time(tmp_path):
    run = _run(tmp_path, "tight", ENERGY_MIN, **{"controller.round_time_s": 1.0e-3})
    assert (run.rounds.solver_fallback == 1).all()
    for _, rows in run.clients.groupby("round"):
        inputs = _inputs(rows)
        least_s = min_feasible_deadline_s(client_block(**inputs))
        assert least_s > 1.0e-3
        finish = (rows.compute_s + rows.upload_s).to_numpy()
        np.testing.assert_allclose(finish, least_s, rtol=1e-6)


def test_joint_radio_without_budget_takes_the_least_round_time(tmp_path):
    """Z = 0: (J2) at the chosen O is the least round time: full power and clock, the band
    used up, every client done together at min_feasible_deadline_s, the planned D^t met."""
    run = _run(
        tmp_path,
        "osfa",
        RADIO,
        **{"controller.name": "osfa", "controller.radio": "joint", "controller.rank": 4},
        **{"controller.d_th_s": 0.005},
    )
    r, c = run.rounds, run.clients
    np.testing.assert_allclose(r.planned_delay_s, r.delay_s, rtol=1e-9)
    assert ((r.sparsification >= 0.05) & (r.sparsification <= 1.0)).all()
    assert r.sparsification.iloc[0] == 1.0  # Q = 0: V gamma(O) alone, least at O = 1
    assert (r.sparsification.iloc[1:] < 1.0).all()  # Q > 0 pays for the delay
    # the delay queue takes what (J2) prices: the round's longest compute + upload
    round_s = (c.compute_s + c.upload_s).groupby(c["round"]).max().to_numpy()
    assert (round_s > r.delay_s.to_numpy()).all()  # not eq. (21)'s upload alone
    queue = np.maximum(r.queue.to_numpy() + round_s - 0.005, 0.0)
    np.testing.assert_allclose(r.queue.iloc[1:], queue[:-1], rtol=1e-12)
    np.testing.assert_allclose(c.tx_power_w, P_MAX_W, rtol=1e-9)
    np.testing.assert_allclose(c.cpu_hz, F_MAX, rtol=1e-9)
    np.testing.assert_allclose(c.upload_s, _upload_s(c), rtol=1e-9)
    for _, rows in c.groupby("round"):
        least_s = min_feasible_deadline_s(client_block(**_inputs(rows)))
        np.testing.assert_allclose(rows.compute_s + rows.upload_s, least_s, rtol=1e-6)
        assert rows.share.sum() == pytest.approx(1.0, abs=1e-6)


def test_joint_radio_with_a_budget_keeps_the_queues_and_meets_its_plan(tmp_path):
    budget_j = 0.01
    run = _run(
        tmp_path,
        "tsfa",
        RADIO,
        **{
            "controller.name": "tsfa",
            "controller.radio": "joint",
            "controller.d_th_s": 0.2,  # above the least round time: Q stays 0
            "controller.energy_budget_j": budget_j,
            "n_scheduled": 2,
            "rounds": 3,
        },
    )
    r, c = run.rounds, run.clients
    np.testing.assert_allclose(r.planned_delay_s, r.delay_s, rtol=1e-9)
    np.testing.assert_allclose(c.upload_s, _upload_s(c), rtol=1e-9)
    # Z_k^1 = max(E_k^0 - E_bar, 0) for the devices of round 0, 0 for the others (N = 10)
    first = c[c["round"] == 0]
    z1 = np.maximum(first.compute_energy_j + first.transmit_energy_j - budget_j, 0.0)
    assert r.energy_queue_mean_j.iloc[0] == pytest.approx(z1.sum() / 10, rel=1e-9)
    assert (c.cpu_hz >= F_MIN * (1 - 1e-12)).all() and (c.tx_power_w <= P_MAX_W * 1.000001).all()
    # Q = 0 with Z > 0: the least Z-weighted energy under D = D_th, so compute + upload <= D_th
    empty = (r.queue == 0.0) & (r.energy_queue_mean_j.shift(1) > 0.0)
    assert empty.any()
    for t in r["round"][empty]:
        rows = c[c["round"] == t]
        assert (rows.compute_s + rows.upload_s <= 0.2 * (1 + 1e-9)).all()
    # a round whose clients all have Z_k > 0 lasts D_th: the longest the queue allows
    assert (c.compute_s + c.upload_s).groupby(c["round"]).max().iloc[-1] == pytest.approx(0.2)


@pytest.mark.parametrize(
    ("base", "overrides"),
    [
        (ENERGY_MIN, {}),
        (RADIO, {"controller.name": "osfa", "controller.radio": "joint", "controller.rank": 4}),
    ],
)
def test_an_algorithm_without_the_ratio_knob_sends_its_rank_within_plan(tmp_path, base, overrides):
    """FedIT has no ratio: both controllers plan its rank-4 message as sent (O no decision)."""
    run = _run(tmp_path, "fedit", base, **overrides, **{"algorithm.name": "fedit"})
    r, c = run.rounds, run.clients
    assert (r.sparsification == 1.0).all() and (c["rank"] == 4).all()
    assert (c.bits == 32 * 4 * (64 + 64 + 64 + 32)).all()  # v r sum_l (d_l + l_l), dense
    np.testing.assert_allclose(r.planned_delay_s, r.delay_s, rtol=1e-9)
    np.testing.assert_allclose(c.upload_s, _upload_s(c), rtol=1e-9)


@pytest.mark.parametrize(
    ("base", "overrides", "text"),
    [
        (
            ENERGY_MIN,
            {"channel.noise_bandwidth": "band"},
            "channel.noise_bandwidth: band makes the rate b B log2(1 + SNR), and controller "
            "'energy_min' plans with b B log2(1 + SNR / b) (noise over the share); use "
            "channel.noise_bandwidth: share, or controller.name:",
        ),
        (
            ENERGY_MIN,
            {"devices.energy.model": "per_flop", "devices.energy.cpu_freq_min_hz": None},
            "controller.name: energy_min decides each client's CPU clock, which needs "
            "devices.energy.model: cmos",
        ),
        (
            ENERGY_MIN,
            {"controller.energy_budget_j": 1.0},
            "controller.energy_budget_j: the 'energy_min' controller has no online stage",
        ),
        (ENERGY_MIN, {"controller.energy_scheme": "greedy"}, "controller.energy_scheme"),
        (
            ENERGY_MIN,
            {"server.mode": "async"},
            "channel.noise_bandwidth: not read with server.mode: async",
        ),
        (ENERGY_MIN, {"controller.round_time_s": 0.0}, "controller.round_time_s"),
        (
            RADIO,
            {
                "controller.name": "osfa",
                "controller.radio": "joint",
                "channel.noise_bandwidth": "band",
            },
            "channel.noise_bandwidth: band is not the rate controller 'osfa' plans with under "
            "these settings (controller.radio: joint plans with b B log2(1 + SNR / b), noise "
            "over the share); use channel.noise_bandwidth: share",
        ),
        (
            RADIO,
            {"controller.name": "osfa", "controller.radio": "joint", "controller.method": "cvxpy"},
            "controller.method: cvxpy solves P3 at full power and clock, and controller.radio: "
            "joint solves (J2)",
        ),
        (
            RADIO,
            {"controller.name": "tsfa", "controller.radio": "fixed"},
            "channel.noise_bandwidth: share makes the rate b B log2(1 + SNR / b), and controller "
            "'tsfa'",
        ),
    ],
)
def test_refusals_are_one_line(tmp_path, base, overrides, text):
    with pytest.raises((ConfigError, UserError, SimulationError)) as err:
        _run(tmp_path, "refused", base, **overrides)
    message = str(err.value)
    assert text in message and "\n" not in message
