"""The energy reproductions (``wirelessfl reproduce energy-min-*``, Yang et al.): listed, their
grids valid scenarios of the paper's cell, the trend table by hand, and a small end-to-end run
whose summary, paired and trend tables are checked against the runs' own rounds.csv."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from wirelessfl.cli import build_parser
from wirelessfl.config import load_scenario
from wirelessfl.config.loader import SCENARIO_DIR
from wirelessfl.study.energy_figures import trend_table
from wirelessfl.study.grid import format_value
from wirelessfl.study.reproduce import REPRODUCTIONS, reproduce

ENERGY = [name for name in REPRODUCTIONS if name.startswith("energy-min-")]
SCHEMES = {"joint", "equal_bandwidth", "max_power", "max_frequency"}


def _grid_points(name: str) -> list[dict]:
    """Every grid point of the reproduction's sweeps, as key -> value."""
    points = []
    for grid in REPRODUCTIONS[name].sweeps.values():
        keys = list(grid)
        points += [
            dict(zip(keys, combo, strict=True)) for combo in itertools.product(*grid.values())
        ]
    return points


def test_the_reproductions_are_listed():
    assert ENERGY == ["energy-min-deadline", "energy-min-devices"]
    for name in ENERGY:
        assert build_parser().parse_args(["reproduce", name]).figure == name
        spec = REPRODUCTIONS[name]
        assert spec.seeds >= 5 and spec.reference.value == {"controller.energy_scheme": "joint"}


@pytest.mark.parametrize("name", ENERGY)
def test_every_grid_point_is_a_valid_energy_min_scenario(name):
    """Each point loads (validation included) as energy_min in a Rayleigh cell with the noise
    over the share and CMOS clocks; every scheme meets every T (or K)."""
    spec = REPRODUCTIONS[name]
    points = _grid_points(name)
    schemes = set()
    for point in points:
        sets = [f"{k}={format_value(v)}" for k, v in point.items()]
        sc = load_scenario(SCENARIO_DIR / spec.scenario, sets)
        assert sc.controller.name == "energy_min"
        assert sc.controller.energy_scheme == point["controller.energy_scheme"]
        assert sc.controller.round_time_s == point.get("controller.round_time_s", 1.0)
        assert sc.learner.kind == "surrogate"
        assert sc.channel.noise_bandwidth == "share"
        assert sc.channel.fading.model == "rayleigh"
        energy = sc.devices.energy
        assert energy.model == "cmos" and energy.cpu_freq_min_hz < energy.cpu_freq_hz
        assert sc.n_scheduled <= sc.n_clients
        schemes.add(sc.controller.energy_scheme)
    assert schemes == SCHEMES
    swept = "controller.round_time_s" if name.endswith("deadline") else "n_scheduled"
    values = sorted({p[swept] for p in points})
    assert len(values) >= 4
    assert len(points) == len(SCHEMES) * len(values)


def test_the_cell_has_the_papers_path_loss():
    """128.1 + 37.6 log10(d / 1 km) dB: the single-slope gain reference_gain_db - 20 gamma
    log10(d / 1 m) at 10 m, 100 m and the cell edge."""
    sc = load_scenario(SCENARIO_DIR / "energy/yang_cell.yaml")
    ch = sc.channel
    for d_m in (10.0, 100.0, ch.d_max_m):
        gain_db = ch.reference_gain_db - 20.0 * ch.path_loss_exponent * math.log10(d_m)
        assert gain_db == pytest.approx(-(128.1 + 37.6 * math.log10(d_m / 1000.0)), abs=1e-9)
    assert ch.noise_psd_dbm_per_hz == -174.0 and ch.bandwidth_hz == 20.0e6
    assert sc.devices.energy.kappa == 1e-28 and sc.devices.energy.cpu_freq_hz == 2.0e9


def test_trend_table_by_hand():
    """Energy at T = 1, 2, 4 for two seeds: per-seed differences of neighbours, verdict."""
    rows = [
        {"controller.energy_scheme": "joint", "seed": s, "controller.round_time_s": t, "e": e}
        for s, values in ((0, (3.0, 2.0, 1.5)), (1, (4.0, 2.5, 2.6)))
        for t, e in zip((1.0, 2.0, 4.0), values, strict=True)
    ]
    table = trend_table(pd.DataFrame(rows), "controller.round_time_s", metric="e")
    assert table[["x_from", "x_to"]].values.tolist() == [[1.0, 2.0], [2.0, 4.0]]
    np.testing.assert_allclose(table.diffs.tolist(), [(-1.0, -1.5), (-0.5, 0.1)], rtol=1e-12)
    assert table.mean_diff.tolist() == pytest.approx([-1.25, -0.2])
    assert table.same_sign_all_seeds.tolist() == [True, False]
    assert (table.verdict == "not established").all()  # 2 seeds: fewer than 5
    assert "sign differs across seeds" in table.reason.iloc[1]


def test_network_only_study_against_the_run_tables(tmp_path):
    """energy-min-devices at 2 seeds and 2 rounds: summary energy and fallbacks from each
    run's rounds.csv, each baseline's paired difference the per-seed difference of those, the
    trend the per-seed difference of neighbouring K; the joint scheme is never above."""
    from wirelessfl.results import load

    result = reproduce("energy-min-devices", out_dir=tmp_path, seeds=2, overrides=["rounds=2"])
    table = result["summary"]
    assert len(table) == 4 * 5 * 2 and table.finished.all()
    for _, row in table.iterrows():
        rounds = load(result["folder"] / row["sweep"] / row["run"]).rounds
        energy_j = (rounds.compute_energy_j + rounds.transmit_energy_j).to_numpy()
        assert row["round_energy_j"] == pytest.approx(energy_j.mean(), rel=1e-12)
        assert row["fallback_rounds"] == (rounds.solver_fallback > 0).sum()
    wide = table.pivot_table(
        index=["n_scheduled", "seed"], columns="controller.energy_scheme", values="round_energy_j"
    )
    paired = result["paired"]
    energy = paired[paired.metric == "round_energy_j"]
    assert len(energy) == 3 * 5 and (energy.n == 2).all()
    for _, row in energy.iterrows():
        scheme = row["method"].split("=")[1]
        k = int(row["context"].split("=")[1])
        want = (wide[scheme] - wide["joint"]).loc[k].to_numpy()
        np.testing.assert_allclose(row["diffs"], want, rtol=1e-12)
    # no round fell back at T = 1 s: the joint plan is the least energy of every round
    assert (table.fallback_rounds == 0).all()
    assert ((wide[list(SCHEMES - {"joint"})].min(axis=1) - wide["joint"]) >= 0).all()
    trend = result["tables"]["energy_trend"]
    assert len(trend) == 4 * 4
    joint = trend[trend.scheme == "joint"].iloc[0]
    want = (wide["joint"].xs(4, level=0) - wide["joint"].xs(2, level=0)).to_numpy()
    np.testing.assert_allclose(joint.diffs, want, rtol=1e-12)
    assert (result["folder"] / "energy_trend.csv").is_file()
    assert [p.name for p in result["figures"]] == ["energy_vs_devices.png"]
