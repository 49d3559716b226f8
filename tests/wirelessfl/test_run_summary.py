"""The summary ``wirelessfl run`` prints, read with the csv module, against the same figures
computed with pandas from the loaded run (``wirelessfl.results.load``), for a network-only run
with a deadline (stragglers) and an energy budget, and for a real training run evaluated every
other round (NaN accuracy cells)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scenario_helpers import digits_scenario

from wirelessfl.config import load_scenario
from wirelessfl.results import load
from wirelessfl.results.run_summary import read_columns, run_summary_text
from wirelessfl.sim import run_scenario


def _fmt(x: float, unit: str = "") -> str:
    return "n/a" if math.isnan(x) else f"{x:.4g}{unit}"


def _expected(folder) -> dict[str, str]:
    """The lines' values, from pandas' tables."""
    run = load(folder)
    r = run.rounds
    acc = r["accuracy"].dropna()
    n = int(run.config["n_clients"])
    per_device = (run.devices["compute_energy_j"] + run.devices["transmit_energy_j"]) / len(r)
    compute = r["compute_energy_j"].sum() / (len(r) * n)
    transmit = r["transmit_energy_j"].sum() / (len(r) * n)
    budget = run.config["controller"]["energy_budget_j"]
    lines = {
        "rounds": f"{len(r)}   (rank {int(r['rank'].iloc[-1])})",
        "virtual time": _fmt(r["t_end_s"].iloc[-1], " s"),
        "mean D^t": f"{_fmt(r['delay_s'].mean(), ' s')}   "
        f"(D_th {_fmt(run.config['controller']['d_th_s'], ' s')})",
        "final queue": _fmt(r["queue_after"].iloc[-1]),
        "mean O^t": _fmt(r["sparsification"].mean()),
        "uplink": f"{_fmt(r['bits_up'].sum() / 8e6, ' MB')} ({int(r['n_arrived'].sum())} "
        f"uploads arrived of {int(r['n_scheduled'].sum())} scheduled)",
        "energy": f"{_fmt(compute + transmit, ' J')} per device per round (compute "
        f"{_fmt(compute, ' J')}, transmit {_fmt(transmit, ' J')})",
        "loss": f"{_fmt(r['loss'].iloc[0])} -> {_fmt(r['loss'].iloc[-1])}",
        "accuracy": f"{_fmt(acc.iloc[0] if len(acc) else math.nan)} -> "
        f"{_fmt(acc.iloc[-1] if len(acc) else math.nan)}",
    }
    if budget is not None:
        met = int((per_device <= budget * (1 + 1e-9)).sum())
        lines["energy budget"] = (
            f"{_fmt(budget, ' J')} per device per round: met by {met} of {n} devices "
            f"({100 * met / n:.0f} %; largest device {_fmt(per_device.max(), ' J')})"
        )
    return lines


def _printed(folder) -> dict[str, str]:
    return {line[:15].strip(): line[15:] for line in run_summary_text(folder).splitlines()}


@pytest.mark.parametrize(
    "overrides",
    [
        ["rounds=30", "faults.deadline_s=0.8", "controller.energy_budget_j=25"],
        ["rounds=20", "controller.energy_budget_j=1e-6"],  # no device within the budget
    ],
)
def test_network_only_summary_matches_the_loaded_tables(tmp_path, overrides):
    run_scenario(load_scenario("paper", overrides), tmp_path / "run")
    printed, expected = _printed(tmp_path / "run"), _expected(tmp_path / "run")
    for key, value in expected.items():
        assert printed[key] == value, key
    assert printed["load with"] == f"wirelessfl.results.load({str(tmp_path / 'run')!r})"


def test_training_summary_with_unevaluated_rounds(tmp_path):
    pytest.importorskip("torch")
    scenario = digits_scenario(rounds=4, eval_every=2, **{"controller.energy_budget_j": None})
    run_scenario(scenario, tmp_path / "run")
    columns = read_columns(tmp_path / "run" / "rounds.csv")
    assert np.isnan(columns["accuracy"]).sum() == 2  # rounds 0 and 2 were not evaluated
    printed, expected = _printed(tmp_path / "run"), _expected(tmp_path / "run")
    for key, value in expected.items():
        assert printed[key] == value, key
    assert printed["energy budget"].startswith("none (largest device ")


def test_a_partial_last_row_is_left_out(tmp_path):
    table = tmp_path / "rounds.csv"
    table.write_text("round,accuracy\n0,0.5\n1,\n2,0.7")  # row 2 is cut mid-write
    columns = read_columns(table)
    assert list(columns) == ["round", "accuracy"] and columns["round"].tolist() == [0.0, 1.0]
    assert columns["accuracy"][0] == 0.5 and math.isnan(columns["accuracy"][1])
