"""Energy in every study view: per device per round, per device, against the budget; in the run
summary, index.csv, the energy table and ``wirelessfl plot --kind energy``.

The numbers are checked against hand sums of small hand-made tables, and the recorded
``devices.csv`` against the sums of ``clients.csv``."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from wirelessfl.cli import main
from wirelessfl.config import load_scenario
from wirelessfl.plots import accuracy_vs_energy, energy_overview, energy_vs_round, energy_vs_time
from wirelessfl.results import RunResult, energy_table, load, summarize, summarize_run
from wirelessfl.results.energy import device_energy, energy_lines
from wirelessfl.sim.runner import Run, run_scenario
from wirelessfl.study import load_study, run_sweep

SMALL = ["rounds=8", "n_clients=6", "n_scheduled=3", "eval_every=4", "output.clients=true"]


# -- hand-made tables ---------------------------------------------------------------------------
def _rounds(compute_j, transmit_j, accuracy=None) -> pd.DataFrame:
    """A rounds table with the columns the energy views and ``summarize`` read."""
    n = len(compute_j)
    return pd.DataFrame(
        {
            "round": range(n),
            "t_end_s": np.arange(1, n + 1) * 2.0,
            "delay_s": 1.0,
            "sparsification": 0.5,
            "bits_up": 8.0,
            "queue_after": 0.0,
            "rank": 4,
            "compute_energy_j": compute_j,
            "transmit_energy_j": transmit_j,
            "accuracy": accuracy if accuracy is not None else [math.nan] * n,
        }
    )


# 4 devices, 3 rounds. Per device, per round (compute, transmit):
#   round 0: d0 (1, 2), d1 (3, 0)          -> sums 4 and 2
#   round 1: d1 (1, 1), d2 (2, 4)          -> sums 3 and 5
#   round 2: d0 (1, 0), d2 (0, 3)          -> sums 1 and 3
# device totals: d0 4, d1 5, d2 9, d3 0 -> time averages 4/3, 5/3, 3, 0
CLIENTS = pd.DataFrame(
    {
        "round": [0, 0, 1, 1, 2, 2],
        "client": [0, 1, 1, 2, 0, 2],
        "compute_energy_j": [1.0, 3.0, 1.0, 2.0, 1.0, 0.0],
        "transmit_energy_j": [2.0, 0.0, 1.0, 4.0, 0.0, 3.0],
    }
)
ROUNDS = _rounds([4.0, 3.0, 1.0], [2.0, 5.0, 3.0])
DEVICES = pd.DataFrame(
    {
        "device": [0, 1, 2, 3],
        "rounds": 3,
        "compute_energy_j": [2.0, 4.0, 2.0, 0.0],
        "transmit_energy_j": [2.0, 1.0, 7.0, 0.0],
    }
)


def test_per_device_energy_from_devices_csv_and_from_clients_csv():
    by_hand = [4 / 3, 5 / 3, 3.0, 0.0]
    for table in (device_energy(3, 4, devices=DEVICES), device_energy(3, 4, clients=CLIENTS)):
        np.testing.assert_allclose(table["energy_j"], by_hand, rtol=1e-15)
        np.testing.assert_allclose(table["compute_energy_j"], [2 / 3, 4 / 3, 2 / 3, 0.0])
        np.testing.assert_allclose(table["transmit_energy_j"], [2 / 3, 1 / 3, 7 / 3, 0.0])
    # devices.csv of another round count (a killed run's) is not used; clients.csv is
    stale = DEVICES.assign(rounds=2)
    np.testing.assert_allclose(
        device_energy(3, 4, devices=stale, clients=CLIENTS)["energy_j"], by_hand
    )
    assert device_energy(3, 4, devices=stale) is None
    assert device_energy(0, 4, devices=DEVICES) is None


def test_summary_energy_columns_by_hand():
    per_device = device_energy(3, 4, devices=DEVICES)
    s = summarize(ROUNDS, n_clients=4, energy_budget_j=5 / 3, per_device=per_device)
    assert s["device_compute_energy_j"] == pytest.approx(8 / 12, rel=1e-15)  # (4+3+1)/(3x4)
    assert s["device_transmit_energy_j"] == pytest.approx(10 / 12, rel=1e-15)  # (2+5+3)/12
    assert s["device_energy_j"] == pytest.approx(18 / 12, rel=1e-15)
    assert s["max_device_energy_j"] == pytest.approx(3.0)
    assert s["energy_budget_j"] == 5 / 3
    # 4/3, 5/3 (exactly at the budget: met), 3 (not), 0 -> 3 of 4
    assert s["budget_met_share"] == 0.75
    tight = summarize(ROUNDS, n_clients=4, energy_budget_j=1.0, per_device=per_device)
    assert tight["budget_met_share"] == 0.25  # only the device that never trained
    free = summarize(ROUNDS, n_clients=4, per_device=per_device)
    assert math.isnan(free["energy_budget_j"]) and math.isnan(free["budget_met_share"])
    assert free["max_device_energy_j"] == pytest.approx(3.0)
    unknown = summarize(ROUNDS, n_clients=4, energy_budget_j=1.0)
    assert math.isnan(unknown["budget_met_share"]) and math.isnan(unknown["max_device_energy_j"])
    assert unknown["device_energy_j"] == pytest.approx(1.5)


def test_run_summary_lines():
    per_device = device_energy(3, 4, devices=DEVICES)
    s = summarize(ROUNDS, n_clients=4, energy_budget_j=5 / 3, per_device=per_device)
    assert energy_lines(s, 4) == [
        "energy         1.5 J per device per round (compute 0.6667 J, transmit 0.8333 J)",
        "energy budget  1.667 J per device per round: met by 3 of 4 devices (75 %; "
        "largest device 3 J)",
    ]
    free = summarize(ROUNDS, n_clients=4, per_device=per_device)
    assert energy_lines(free, 4)[1] == "energy budget  none (largest device 3 J)"
    assert energy_lines(summarize(None), 4) == ["energy         n/a"]


def _run(name: str, seed: int, compute_j, transmit_j, accuracy, budget=None) -> RunResult:
    config = {
        "name": "hand",
        "seed": seed,
        "n_clients": 2,
        "controller": {"name": name, "energy_budget_j": budget},
    }
    rounds = _rounds(compute_j, transmit_j, accuracy)
    return RunResult(Path(f"/hand/{name}-{seed}"), rounds, config, {"seed": seed})


def test_energy_table_by_hand():
    nan = math.nan
    runs = [
        _run("tsfa", 0, [2.0, 4.0], [2.0, 0.0], [nan, 0.5], budget=3.0),
        _run("tsfa", 1, [4.0, 2.0], [0.0, 6.0], [nan, 0.7], budget=3.0),
        _run("osfa", 0, [1.0, 1.0], [1.0, 1.0], [0.2, 0.4]),
    ]
    table = energy_table(runs)
    tsfa = table[table["group"] == 0].set_index("round")
    # per device per round (N = 2): seed 0: 2, 2; seed 1: 2, 4
    np.testing.assert_allclose(tsfa["energy_j"], [2.0, 3.0])
    np.testing.assert_allclose(tsfa["energy_min"], [2.0, 2.0])
    np.testing.assert_allclose(tsfa["energy_max"], [2.0, 4.0])
    np.testing.assert_allclose(tsfa["compute_energy_j"], [1.5, 1.5])  # (1, 2) and (2, 1)
    np.testing.assert_allclose(tsfa["transmit_energy_j"], [0.5, 1.5])  # (1, 0) and (0, 3)
    np.testing.assert_allclose(tsfa["cumulative_energy_j"], [2.0, 5.0])  # (2, 4), (2, 6)
    np.testing.assert_allclose(tsfa["cumulative_min"], [2.0, 4.0])
    np.testing.assert_allclose(tsfa["cumulative_max"], [2.0, 6.0])
    np.testing.assert_allclose(tsfa["average_energy_j"], [2.0, 2.5])  # (2, 2), (2, 3)
    np.testing.assert_allclose(tsfa["accuracy"].iloc[1], 0.6)
    assert (tsfa["energy_budget_j"] == 3.0).all() and (tsfa["seeds"] == 2).all()
    osfa = table[table["group"] == 1]
    np.testing.assert_allclose(osfa["cumulative_energy_j"], [1.0, 2.0])
    assert osfa["energy_budget_j"].isna().all()

    fig = energy_vs_round(table)
    # per group: the per-round line, the time average; then tsfa's budget line
    lines = fig.axes[0].get_lines()
    assert len(lines) == 5
    np.testing.assert_allclose(lines[1].get_ydata(), [2.0, 2.5])
    np.testing.assert_allclose(lines[2].get_ydata(), [3.0, 3.0])
    np.testing.assert_allclose(energy_vs_time(table).axes[0].get_lines()[0].get_xdata(), [2, 4])
    acc = accuracy_vs_energy(table).axes[0].get_lines()
    np.testing.assert_allclose(acc[0].get_xdata(), [5.0])  # tsfa evaluated after round 1 only
    np.testing.assert_allclose(acc[1].get_xdata(), [1.0, 2.0])
    assert len(energy_overview(table).axes) == 3


# -- recorded by real runs ----------------------------------------------------------------------
def test_devices_csv_adds_up_clients_csv_and_survives_a_resume(tmp_path):
    """devices.csv sums each device's clients.csv energy; a run resumed to more rounds writes
    the devices.csv of an uninterrupted run."""
    budgeted = [*SMALL, "controller.energy_budget_j=50.0"]
    whole = run_scenario(load_scenario("paper", budgeted), tmp_path / "whole")
    clients = whole.clients
    by_hand = clients.groupby("client")[["compute_energy_j", "transmit_energy_j"]].sum()
    devices = whole.devices.set_index("device")
    assert list(devices.index) == list(range(6)) and (devices["rounds"] == 8).all()
    for column in ("compute_energy_j", "transmit_energy_j"):
        np.testing.assert_allclose(
            devices[column], by_hand[column].reindex(range(6), fill_value=0.0), rtol=1e-12
        )
        assert devices[column].sum() == pytest.approx(whole.rounds[column].sum(), rel=1e-12)

    run_scenario(load_scenario("paper", [*budgeted, "rounds=5"]), tmp_path / "part")
    assert (load(tmp_path / "part").devices["rounds"] == 5).all()
    resumed = Run.resume_from(tmp_path / "part", rounds=8).execute()
    pd.testing.assert_frame_equal(resumed.devices, whole.devices)

    s = summarize_run(whole)
    totals = (devices["compute_energy_j"] + devices["transmit_energy_j"]) / 8
    assert s["max_device_energy_j"] == pytest.approx(totals.max(), rel=1e-12)
    assert s["budget_met_share"] == pytest.approx((totals <= 50.0).mean())
    assert s["device_energy_j"] == pytest.approx(totals.mean(), rel=1e-12)


def test_index_csv_holds_the_energy_columns(tmp_path):
    out = tmp_path / "study"
    run_sweep(
        "paper", grid={"controller.energy_budget_j": [300.0, 1e6]}, out_dir=out, overrides=SMALL
    )
    index = load_study(out).index
    assert list(index["energy_budget_j"]) == [300.0, 1e6]
    for (_, row), run in zip(index.iterrows(), load_study(out).runs(), strict=True):
        energy = run.rounds["compute_energy_j"] + run.rounds["transmit_energy_j"]
        assert row["device_energy_j"] == pytest.approx(energy.sum() / (8 * 6), rel=1e-12)
        spent = run.clients["compute_energy_j"] + run.clients["transmit_energy_j"]
        per_device = spent.groupby(run.clients["client"]).sum().reindex(range(6), fill_value=0) / 8
        met = (per_device <= row["energy_budget_j"]).mean()
        assert row["budget_met_share"] == pytest.approx(met)
        assert row["max_device_energy_j"] == pytest.approx(per_device.max(), rel=1e-12)
    assert 0 < index["budget_met_share"].iloc[0] < 1 and index["budget_met_share"].iloc[1] == 1


def test_cli_run_prints_the_budget_and_plot_kind_energy_writes_a_figure(tmp_path, capsys):
    out = tmp_path / "run"
    sets = [x for s in [*SMALL, "controller.energy_budget_j=1e6"] for x in ("--set", s)]
    assert main(["run", "paper", "--quiet", "--out", str(out), *sets]) == 0
    printed = capsys.readouterr().out.splitlines()
    budget = [line for line in printed if line.startswith("energy budget")]
    assert budget and "met by 6 of 6 devices (100 %" in budget[0]
    figure = tmp_path / "energy.png"
    assert main(["plot", str(out), "--kind", "energy", "--out", str(figure)]) == 0
    assert figure.stat().st_size > 0
