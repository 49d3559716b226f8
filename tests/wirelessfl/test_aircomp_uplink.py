"""``channel.uplink: aircomp`` (docs/simulator.md, "Over-the-air aggregation"): the analog
round's time, powers, energy, exclusions and MSE recomputed by hand from the tables; the
received noisy sum of real training against the digital one and the MSE closed form;
one-line refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scenario_helpers import digits_scenario, small_scenario

from wirelessfl.errors import ConfigError
from wirelessfl.plans import AirRound, ClientPlan, RoundPlan
from wirelessfl.sim import run_scenario

torch = pytest.importorskip("torch")

from wirelessfl.algorithms import Message, make_algorithm  # noqa: E402
from wirelessfl.algorithms.over_the_air import over_the_air_sum, symbol_scale  # noqa: E402
from wirelessfl.training.runtime import Runtime  # noqa: E402

B_HZ = 1.0e6
V = 32  # bits per value
P_MAX_W = 10.0 ** (23.0 / 10.0) / 1000.0  # channel.tx_power_dbm default, 23 dBm
FIXED = {
    "controller.name": "fixed",
    "controller.rank": 4,
    "controller.sparsification": 1.0,
    "channel.uplink": "aircomp",
    "rounds": 6,
}


def _run(tmp_path, name, **overrides):
    return run_scenario(small_scenario(**{**FIXED, **overrides}), tmp_path / name)


def test_analog_round_by_hand(tmp_path):
    run = _run(tmp_path, "optimal", **{"channel.mean_snr_db": 0.0})
    c, rounds = run.clients, run.rounds.set_index("round")
    sent = c[c.status == "arrived"]
    n_values = sent.bits / V  # dense: every value of the message
    np.testing.assert_allclose(sent.upload_s, n_values / B_HZ, rtol=1e-12)
    np.testing.assert_allclose(sent.transmit_energy_j, sent.tx_power_w * sent.upload_s, rtol=1e-12)
    assert (sent.share == 1.0).all() and (sent.tx_power_w <= P_MAX_W * (1 + 1e-12)).all()
    for t, rows in sent.groupby("round"):
        q = 10.0 ** (rows.snr_db.to_numpy() / 10.0)  # SNR at the peak power
        eta = 10.0 ** (rounds.loc[t, "aircomp_snr_db"] / 10.0)
        c_k = np.sqrt(rows.tx_power_w.to_numpy() * q / P_MAX_W / eta)
        assert rounds.loc[t, "aircomp_mse"] == pytest.approx(
            np.sum((c_k - 1.0) ** 2) + 1.0 / eta, rel=1e-9
        )
        # Cao et al.'s structure: each client aligned (c = 1) or at full power
        full = np.isclose(rows.tx_power_w, P_MAX_W, rtol=1e-9)
        assert (np.isclose(c_k, 1.0, rtol=1e-9) | full).all()
        assert rounds.loc[t, "delay_s"] == pytest.approx(rows.upload_s.max(), rel=1e-12)


def test_round_time_does_not_grow_with_k_and_fdma_does(tmp_path):
    delays = {}
    for uplink in ("aircomp", "fdma"):
        for k in (2, 10):
            run = _run(tmp_path, f"{uplink}{k}", n_scheduled=k, **{"channel.uplink": uplink})
            delays[uplink, k] = run.rounds.delay_s.mean()
    assert delays["aircomp", 10] == pytest.approx(delays["aircomp", 2], rel=1e-12)
    assert delays["fdma", 10] > 3.0 * delays["fdma", 2]
    assert delays["aircomp", 10] < delays["fdma", 10]


def test_truncation_excludes_the_clients_below_the_threshold(tmp_path):
    threshold_db = 8.0
    run = _run(
        tmp_path,
        "truncated",
        **{
            "channel.aircomp.policy": "truncated",
            "channel.aircomp.threshold_snr_db": threshold_db,
            "rounds": 10,
        },
    )
    c, rounds = run.clients, run.rounds.set_index("round")
    excluded = c[c.status == "excluded"]
    assert len(excluded) > 0 and (excluded.snr_db < threshold_db).all()
    assert (excluded.bits == 0).all() and (excluded.transmit_energy_j == 0).all()
    sent = c[c.status == "arrived"]
    assert (sent.snr_db >= threshold_db).all()
    # inverted to the threshold: p_k = P q_th / q_k
    expected_power = P_MAX_W * 10.0 ** ((threshold_db - sent.snr_db) / 10.0)
    np.testing.assert_allclose(sent.tx_power_w, expected_power, rtol=1e-9)
    counts = excluded.groupby("round").size().reindex(rounds.index, fill_value=0)
    np.testing.assert_array_equal(rounds.aircomp_excluded, counts)
    np.testing.assert_array_equal(rounds.n_arrived, 5 - counts)
    noise = np.where(counts < 5, 10.0 ** (-threshold_db / 10.0), 0.0)  # none when none sent
    np.testing.assert_allclose(rounds.aircomp_mse, counts + noise)


def test_per_round_truncation_rule_excludes_only_weak_clients(tmp_path):
    run = _run(
        tmp_path,
        "rule",
        **{"channel.aircomp.policy": "truncated", "channel.mean_snr_db": 0.0, "rounds": 10},
    )
    c, rounds = run.clients, run.rounds.set_index("round")
    for t, rows in c.groupby("round"):
        out, kept = rows[rows.status == "excluded"], rows[rows.status == "arrived"]
        if kept.empty:  # every symbol missing beats the noise of the weakest: nobody sends
            assert rounds.loc[t, "aircomp_mse"] == len(out) == 5
            continue
        if len(out):
            assert out.snr_db.max() <= kept.snr_db.min()
        q_min = 10.0 ** (kept.snr_db.min() / 10.0)
        assert rounds.loc[t, "aircomp_mse"] == pytest.approx(len(out) + 1.0 / q_min, rel=1e-9)
    assert rounds.aircomp_excluded.sum() > 0


def test_average_power_lowers_the_received_snr_to_zhu_et_als_level(tmp_path):
    from scipy.special import exp1

    threshold_db, budget_w = 5.0, 0.02
    run = _run(
        tmp_path,
        "average",
        **{
            "channel.aircomp.policy": "truncated",
            "channel.aircomp.threshold_snr_db": threshold_db,
            "channel.aircomp.average_power_w": budget_w,
        },
    )
    q_th, mean_snr = 10.0 ** (threshold_db / 10.0), 10.0  # small_scenario: 10 dB every client
    # E[p] = eta P E1(q_th / mean) / mean = budget
    eta = budget_w * mean_snr / (P_MAX_W * exp1(q_th / mean_snr))
    assert eta < q_th
    sending = run.rounds[run.rounds.n_arrived > 0]
    np.testing.assert_allclose(sending.aircomp_snr_db, 10.0 * np.log10(eta), rtol=1e-9)
    sent = run.clients[run.clients.status == "arrived"]
    np.testing.assert_allclose(sent.tx_power_w, eta * P_MAX_W / 10.0 ** (sent.snr_db / 10.0))


def test_aircomp_resumes_to_the_same_tables(tmp_path):
    import pandas as pd
    from scenario_helpers import interrupt_at

    from wirelessfl.sim import resume_run
    from wirelessfl.sim.runner import Run

    overrides = {"channel.aircomp.policy": "truncated", "channel.mean_snr_db": 0.0}
    full = _run(tmp_path, "full", **overrides)
    cut = small_scenario(**{**FIXED, **overrides, "output.checkpoint_every": 1})
    interrupt_at(Run(cut, tmp_path / "cut"), 3)
    resumed = resume_run(tmp_path / "cut")
    pd.testing.assert_frame_equal(full.clients, resumed.clients)
    wall = ["wall_s"]
    pd.testing.assert_frame_equal(full.rounds.drop(columns=wall), resumed.rounds.drop(columns=wall))


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        ({"channel.aircomp.average_power_w": 0.1}, "channel.aircomp.average_power_w"),
        ({"algorithm.name": "flexlora"}, "channel.uplink"),
        ({"server.mode": "async"}, "channel.uplink"),
        ({"controller.tx_power_fraction": 0.5}, "controller.tx_power_fraction"),
        ({"quantize.bits": 4}, "quantize.bits / controller.bits_choices"),
        ({"privacy.mode": "central"}, "privacy.mode"),
    ],
)
def test_refusals_are_one_line(overrides, key):
    with pytest.raises(ConfigError) as err:
        small_scenario(**{**FIXED, **overrides})
    assert str(err.value).startswith(f"{key}:") and "\n" not in str(err.value)


# ---- real training ------------------------------------------------------------------------
def _bound(name="fedit"):
    sc = digits_scenario(**{"algorithm.name": name, "strategy": {}})
    runtime = Runtime(sc)
    runtime.start(rank=4, seed=sc.seed)
    algorithm = make_algorithm(sc)
    algorithm.bind(runtime)
    return algorithm, runtime


def _messages(runtime, algorithm, clients, seed=5):
    g = torch.Generator().manual_seed(seed)
    global_state = runtime.initial_state()
    plans = {c: ClientPlan(c, 0, 4, 1.0) for c in clients}
    messages = {
        c: Message(
            shared={
                n: 0.1 * torch.randn(v.shape, generator=g)
                for n, v in algorithm.broadcast(plans[c], global_state).shared.items()
            }
        )
        for c in clients
    }
    return global_state, plans, messages


def test_noisy_sum_matches_the_digital_sum_and_the_mse_closed_form():
    algorithm, runtime = _bound()
    clients = [1, 3, 6]
    global_state, plans, messages = _messages(runtime, algorithm, clients)
    round_plan = RoundPlan(0, np.array(clients), 4, 1.0, math.nan, 3)
    digital = algorithm.aggregate(
        {n: v.clone() for n, v in global_state.items()}, messages, plans, round_plan
    )
    weights = algorithm.client_weights(clients, messages, round_plan)
    scale = symbol_scale([messages[c] for c in clients], weights)
    shared = set(messages[clients[0]].shared)
    n_values = sum(v.numel() for n, v in digital.items() if n in shared)

    def received(gain, eta, seed):
        air = AirRound(gain=dict(zip(clients, gain, strict=True)), denoising=eta)
        state = {n: v.clone() for n, v in global_state.items()}
        noise = torch.Generator().manual_seed(seed)
        return over_the_air_sum(algorithm, state, messages, weights, air, noise)

    # no noise, aligned: the digital aggregate
    quiet = received([1.0, 1.0, 1.0], 1e30, 0)
    for name in digital:
        torch.testing.assert_close(quiet[name], digital[name], rtol=0, atol=1e-9)

    def mean_square_error(gain, eta, draws=8):
        total = 0.0
        for seed in range(100, 100 + draws):  # not the messages' seed
            state = received(gain, eta, seed)
            total += sum(float((state[n] - digital[n]).double().square().sum()) for n in digital)
        return total / (draws * n_values)

    # aligned, with noise: mean square error s^2 / eta (8 draws of ~1,700 values: +-2.5%)
    eta = 4.0
    assert mean_square_error([1.0, 1.0, 1.0], eta) == pytest.approx(scale**2 / eta, rel=0.08)
    # misaligned (Cao et al.'s full-power clients): s^2 ((1/n) ||sum (c_k - 1) x_k||^2 + 1/eta)
    gain = [0.6, 1.0, 0.8]
    bias = algorithm.add_updates(  # sum_k (c_k - 1) w_k Delta_k
        {n: torch.zeros_like(v) for n, v in global_state.items()},
        messages,
        [(g - 1.0) * w for g, w in zip(gain, weights, strict=True)],
    )
    bias_ms = sum(float(v.double().square().sum()) for v in bias.values()) / n_values
    assert mean_square_error(gain, eta) == pytest.approx(bias_ms + scale**2 / eta, rel=0.08)
    assert bias_ms > 0.2 * scale**2 / eta  # the misalignment is a visible part of it


@pytest.mark.slow  # three short real-training runs: ~30 s on a busy 2-core CPU
def test_high_snr_aircomp_run_trains_like_fdma(tmp_path):
    common = {"algorithm.name": "fedit", "strategy": {}, "rounds": 3, "eval_every": 3}
    common["channel.mean_snr_db"] = 90.0
    fdma = run_scenario(digits_scenario(**common), tmp_path / "fdma")
    air = run_scenario(digits_scenario(**common, **{"channel.uplink": "aircomp"}), tmp_path / "a")
    np.testing.assert_allclose(air.rounds.loss, fdma.rounds.loss, rtol=1e-4)
    np.testing.assert_allclose(air.rounds.accuracy, fdma.rounds.accuracy, atol=1e-9, equal_nan=True)
    assert (air.rounds.delay_s < fdma.rounds.delay_s).all()
    low = run_scenario(
        digits_scenario(**{**common, "channel.mean_snr_db": -20.0, "channel.uplink": "aircomp"}),
        tmp_path / "low",
    )
    assert not np.allclose(low.rounds.loss[1:], fdma.rounds.loss[1:], rtol=1e-3)


def test_a_controller_that_decides_powers_is_refused_in_one_line_at_load():
    from wirelessfl.config import load_scenario
    from wirelessfl.config.loader import SCENARIO_DIR

    with pytest.raises(ConfigError) as err:
        load_scenario(
            SCENARIO_DIR / "energy" / "umi_budget_joint.yaml",
            ["channel.uplink=aircomp", "controller.radio=joint", "rounds=1"],
        )
    assert str(err.value).startswith("channel.uplink: aircomp sets the transmit powers")
    assert "\n" not in str(err.value)


def test_aircomp_with_the_joint_radio_is_refused_in_one_step_naming_the_combination():
    """The combination first, at load: not the joint radio's prerequisites (the noise over
    the share, the CMOS energy model) one after another before it."""
    from wirelessfl.config.loader import load_scenario

    with pytest.raises(ConfigError) as err:
        load_scenario(
            "aircomp/latency",
            overrides=["controller.name=osfa", "controller.radio=joint", "rounds=1"],
        )
    text = str(err.value)
    assert text.startswith("channel.uplink: aircomp sets the transmit powers") and "\n" not in text
