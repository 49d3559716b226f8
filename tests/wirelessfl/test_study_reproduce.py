"""Paper reproductions: every figure's scenario and grid validate; the dpp one runs end to end."""

from __future__ import annotations

import itertools

import pandas as pd
import pytest

from wirelessfl.config import load_scenario
from wirelessfl.config.loader import SCENARIO_DIR
from wirelessfl.errors import UserError
from wirelessfl.study.reproduce import REPRODUCTIONS, reproduce


@pytest.mark.parametrize("figure", list(REPRODUCTIONS))
@pytest.mark.parametrize("full", [False, True])
def test_every_grid_point_is_a_valid_scenario(figure, full):
    spec = REPRODUCTIONS[figure]
    sweeps = (spec.full_sweeps or spec.sweeps) if full else spec.sweeps
    for grid in sweeps.values():
        keys = list(grid)
        for values in itertools.product(*grid.values()):
            sets = [f"{k}={v}" for k, v in zip(keys, values, strict=True)]
            load_scenario(SCENARIO_DIR / spec.scenario, [*(spec.full if full else []), *sets])


def test_dpp_reproduction_runs_and_draws(tmp_path):
    result = reproduce("dpp", out_dir=tmp_path, overrides=["rounds=300"])
    table = result["summary"]
    assert len(table) == 5 and table.finished.all()
    assert all(p.exists() and p.stat().st_size > 0 for p in result["figures"])
    again = reproduce("dpp", out_dir=tmp_path, overrides=["rounds=300"])  # all skipped
    assert (again["summary"].status == "skipped").all()
    pd.testing.assert_series_equal(table.final_accuracy, again["summary"].final_accuracy)


def test_unknown_figure_is_one_line():
    with pytest.raises(UserError, match="unknown figure 'fig9'"):
        reproduce("fig9", out_dir="unused")
