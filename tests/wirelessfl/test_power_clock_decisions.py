"""Transmit power and CPU clock decided per round (docs/simulator.md, "Transmit power and CPU
frequency as decisions"): the simulator applies them exactly; refusals are one line."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest
from scenario_helpers import small_scenario

from wirelessfl.config import scenario_from_dict
from wirelessfl.controllers import Decision
from wirelessfl.errors import ConfigError, SimulationError
from wirelessfl.sim import run_scenario
from wirelessfl.sim.runner import Run

B_HZ, FLOPS_PER_S, KAPPA, F_MAX, F_MIN, PER_CYCLE = 1.0e6, 1.0e11, 1.0e-28, 2.0e9, 0.5e9, 8.0
FIXED = {
    "controller.name": "fixed",
    "controller.rank": 4,
    "controller.sparsification": 0.5,
    "devices.include_compute": True,
    "devices.flops_per_s": FLOPS_PER_S,
    "devices.energy.model": "cmos",
    "devices.energy.kappa": KAPPA,
    "devices.energy.cpu_freq_hz": F_MAX,
    "devices.energy.cpu_freq_min_hz": F_MIN,
    "devices.energy.flops_per_cycle": PER_CYCLE,
    "channel.bandwidth_hz": B_HZ,
    "rounds": 6,
}
KEY = ["round", "client"]


def _run(tmp_path, name, **overrides):
    return run_scenario(small_scenario(**{**FIXED, **overrides}), tmp_path / name)


def _paired(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """The two runs' client rows side by side (the same clients are scheduled in both)."""
    assert a[KEY].equals(b[KEY])
    return a.merge(b, on=KEY, suffixes=("_a", "_b"))


def test_half_clock_doubles_compute_time_and_quarters_compute_energy(tmp_path):
    base = _run(tmp_path, "base")
    half = _run(tmp_path, "half", **{"controller.cpu_freq_hz": F_MAX / 2})
    assert "cpu_hz" not in base.clients.columns  # no clock decided: the table as before
    assert (half.clients.cpu_hz == F_MAX / 2).all()
    both = _paired(base.clients, half.clients)
    flops = both.compute_s_a * FLOPS_PER_S  # the FLOPs of each client's round
    # independent: at f the device computes at flops_per_s f / f_max; CMOS energy kappa f^2 cycles
    np.testing.assert_allclose(both.compute_s_b, flops / (FLOPS_PER_S * 0.5), rtol=1e-12)
    np.testing.assert_allclose(both.compute_s_b, 2.0 * both.compute_s_a, rtol=1e-12)
    cycles = flops / PER_CYCLE
    np.testing.assert_allclose(both.compute_energy_j_a, KAPPA * F_MAX**2 * cycles, rtol=1e-12)
    np.testing.assert_allclose(
        both.compute_energy_j_b, KAPPA * (F_MAX / 2) ** 2 * cycles, rtol=1e-12
    )
    np.testing.assert_allclose(both.compute_energy_j_b, both.compute_energy_j_a / 4, rtol=1e-12)
    # the uploads are untouched; the rounds last the longer compute
    np.testing.assert_allclose(both.upload_s_b, both.upload_s_a, rtol=1e-12)
    np.testing.assert_allclose(both.transmit_energy_j_b, both.transmit_energy_j_a, rtol=1e-12)
    assert (half.rounds.completion_s > base.rounds.completion_s).all()


def test_lower_power_uploads_at_the_rate_the_formula_gives(tmp_path):
    fraction = 0.25
    base = _run(tmp_path, "base")
    low = _run(tmp_path, "low", **{"controller.tx_power_fraction": fraction})
    both = _paired(base.clients, low.clients)
    p_max = both.tx_power_w_a.to_numpy()
    p = fraction * p_max
    np.testing.assert_allclose(both.tx_power_w_b, p, rtol=1e-15)
    snr_at_p_max = 10.0 ** (both.snr_db_a.to_numpy() / 10.0)
    snr = snr_at_p_max * p / p_max  # SNR per watt g / (N0 B) times p
    np.testing.assert_allclose(10.0 ** (both.snr_db_b / 10.0), snr, rtol=1e-12)
    rate_bps = both.share_b * B_HZ * np.log2(1.0 + snr)  # noise over the whole band B
    upload_s = both.bits_b / rate_bps
    np.testing.assert_allclose(both.upload_s_b, upload_s, rtol=1e-12)
    np.testing.assert_allclose(both.transmit_energy_j_b, p * upload_s, rtol=1e-12)
    # the shares were computed at the lower SNR: every client of a round still finishes together
    spread = low.clients.groupby("round").upload_s.agg(lambda s: s.max() / s.min() - 1.0)
    assert (spread < 1e-9).all()
    assert (both.upload_s_b > both.upload_s_a).all()
    np.testing.assert_allclose(both.compute_energy_j_b, both.compute_energy_j_a, rtol=1e-15)


def test_deciding_the_maximum_changes_nothing(tmp_path):
    """p_k = P_max,k and f_k = f_max through the decision path give the tables of no decision,
    bit for bit (cpu_hz aside)."""
    base = _run(tmp_path, "base")
    top = _run(
        tmp_path, "top", **{"controller.tx_power_fraction": 1.0, "controller.cpu_freq_hz": F_MAX}
    )
    pd.testing.assert_frame_equal(base.clients, top.clients.drop(columns="cpu_hz"))
    wall = ["wall_s"]
    pd.testing.assert_frame_equal(base.rounds.drop(columns=wall), top.rounds.drop(columns=wall))


@pytest.mark.parametrize(
    ("overrides", "text"),
    [
        (
            {
                "controller.cpu_freq_hz": 1.0e9,
                "devices.energy.model": "per_flop",
                "devices.energy.cpu_freq_min_hz": None,
            },
            "controller.cpu_freq_hz: a clock needs devices.energy.model: cmos",
        ),
        (
            {"controller.cpu_freq_hz": 0.25e9},
            "controller.cpu_freq_hz: must be in [5e+08, 2e+09]",
        ),
        (
            {"devices.energy.cpu_freq_min_hz": 3.0e9},
            "devices.energy.cpu_freq_min_hz: must be <= cpu_freq_hz (2e+09), got 3e+09",
        ),
        (
            {"devices.energy.model": "per_flop", "devices.energy.cpu_freq_min_hz": 1.0e9},
            "devices.energy.cpu_freq_min_hz: a clock range needs model: cmos",
        ),
        (
            {"controller.tx_power_fraction": 0.5, "controller.name": "osfa"},
            "controller.tx_power_fraction: a fixed power or clock for every client is the fixed "
            "controller's, and 'osfa' does not read it",
        ),
        (
            {"controller.tx_power_fraction": 1.5},
            "controller.tx_power_fraction",
        ),
        (
            {"controller.cpu_freq_hz": 1.0e9, "server.mode": "async"},
            "controller.cpu_freq_hz: not read with server.mode: async",
        ),
    ],
)
def test_refusals_are_one_line(overrides, text):
    with pytest.raises(ConfigError) as err:
        small_scenario(**{**FIXED, **overrides})
    message = str(err.value)
    assert text in message and "\n" not in message


def test_a_decision_out_of_range_stops_the_round(tmp_path):
    run = Run(small_scenario(**FIXED), tmp_path / "r")
    controller = run.sim.controller
    decide = controller.decide

    def too_loud(snr, compute_s):
        d = decide(snr, compute_s)
        p = 2.0 * controller.round_tx_power_max_w
        return Decision(d.sparsification, d.shares, d.planned_delay_s, d.bound, tx_power_w=p)

    controller.decide = too_loud
    with pytest.raises(SimulationError, match=r"round 0: the controller's transmit power \[W\]"):
        run.execute()


LOGGER = "wirelessfl.sim.simulator"


def _budget_run(tmp_path, caplog, budget_j):
    caplog.clear()
    caplog.set_level(logging.WARNING, logger=LOGGER)
    scenario = small_scenario(
        **{
            **FIXED,
            "controller.name": "osfa",
            "controller.energy_budget_j": budget_j,
            "rounds": 1,
        }
    )
    run = Run(scenario, tmp_path / f"b{budget_j:g}")
    return run, [r.getMessage() for r in caplog.records if r.name == LOGGER]


def test_a_budget_below_the_compute_floor_is_reported_in_one_line(tmp_path, caplog):
    run, _ = _budget_run(tmp_path, caplog, 1.0)
    sc = run.scenario
    flops = run.learner.expected_flops(run.sim.rank)
    assert flops > 0
    # osfa does not decide clocks: every device computes at f_max, K/N of the rounds
    floor_j = sc.n_scheduled / sc.n_clients * KAPPA * F_MAX**2 * flops / PER_CYCLE
    np.testing.assert_allclose(run.sim.energy_floor_j(), floor_j, rtol=1e-12)
    _, lines = _budget_run(tmp_path, caplog, 0.5 * floor_j)
    assert len(lines) == 1 and "\n" not in lines[0]
    assert "below the least time-average energy per round of 20 of 20 devices" in lines[0]
    assert f"{floor_j:g} J" in lines[0]
    _, lines = _budget_run(tmp_path, caplog, 1.01 * floor_j)
    assert lines == []


def test_fixed_decisions_resume_to_the_same_tables(tmp_path):
    from scenario_helpers import interrupt_at

    from wirelessfl.sim import resume_run

    overrides = {"controller.tx_power_fraction": 0.5, "controller.cpu_freq_hz": 1.0e9}
    full = _run(tmp_path, "full", **overrides)
    run = Run(
        small_scenario(**{**FIXED, **overrides, "output.checkpoint_every": 1}), tmp_path / "cut"
    )
    interrupt_at(run, 3)
    resumed = resume_run(tmp_path / "cut")
    wall = ["wall_s"]
    pd.testing.assert_frame_equal(full.clients, resumed.clients)
    pd.testing.assert_frame_equal(full.rounds.drop(columns=wall), resumed.rounds.drop(columns=wall))


def test_scenario_keys_round_trip():
    sc = small_scenario(**{**FIXED, "controller.cpu_freq_hz": 1.0e9})
    assert sc.devices.energy.cpu_hz_range() == (F_MIN, F_MAX)
    assert scenario_from_dict(
        {"devices": {"energy": {"model": "cmos"}}}
    ).devices.energy.cpu_hz_range() == (
        F_MAX,
        F_MAX,
    )


def test_event_driven_engine_refuses_a_controller_that_decides_clocks(tmp_path, monkeypatch):
    """A plug-in controller deciding clocks meets the event-driven engine: one line."""
    from wirelessfl.controllers.fixed import Fixed

    monkeypatch.setattr(Fixed, "decides_cpu_frequency", property(lambda self: True))
    scenario = small_scenario(**{**FIXED, "server.mode": "async", "server.concurrency": 3})
    with pytest.raises(ConfigError) as err:
        Run(scenario, tmp_path / "a")
    assert "server.mode: async asks the controller for rank and ratio per dispatch" in str(
        err.value
    )
    assert "\n" not in str(err.value)
