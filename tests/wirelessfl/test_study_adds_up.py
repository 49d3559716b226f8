"""Several sweeps into one study folder: every run stays listed, with its resolved parameters,
and plots together; a run folder deleted by hand is reported, not silently skipped."""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from wirelessfl.cli import main
from wirelessfl.plots import accuracy_vs_round
from wirelessfl.results import accuracy_table, group_runs
from wirelessfl.study import load_study, run_sweep

SMALL = ["rounds=12", "n_clients=12", "n_scheduled=4", "eval_every=4"]
METHODS = {"controller.name": ["tsfa", "osfa"]}
FIXED = ["controller.name=fixed"]
RATIOS = {"controller.sparsification": [0.4, 1.0]}
FIRST = ["controller.name=tsfa,seed=0", "controller.name=osfa,seed=0"]
SECOND = ["controller.sparsification=0.4,seed=0", "controller.sparsification=1.0,seed=0"]


@pytest.fixture(scope="module")
def two_sweeps(tmp_path_factory) -> Path:
    """The issue's study: TSFA and osfa, then a fixed ratio (which refuses a budget, so
    cannot share their grid), into one folder."""
    out = tmp_path_factory.mktemp("adds_up") / "cmp"
    run_sweep("paper", grid=METHODS, out_dir=out, overrides=SMALL)
    run_sweep("paper", grid=RATIOS, out_dir=out, overrides=[*SMALL, *FIXED])
    return out


@pytest.fixture
def study_copy(two_sweeps, tmp_path) -> Path:
    out = tmp_path / "cmp"
    shutil.copytree(two_sweeps, out)
    return out


def test_the_second_sweep_adds_its_runs_to_the_first(two_sweeps):
    study = load_study(two_sweeps)
    index = study.index
    assert list(index["run"]) == [*FIRST, *SECOND]
    assert list(index["status"]) == ["kept", "kept", "started", "started"]
    assert index["finished"].all() and (index["rounds_done"] == 12).all()
    # the union of the grid keys, each run's resolved value in every column
    assert list(index.columns[1:4]) == ["controller.name", "controller.sparsification", "seed"]
    assert list(index["controller.name"]) == ["tsfa", "osfa", "fixed", "fixed"]
    # the fixed controller's ratio (1.0: its default); tsfa and osfa have none
    assert index["controller.sparsification"].isna().tolist() == [True, True, False, False]
    assert list(index["controller.sparsification"][2:]) == [0.4, 1.0]
    assert [s["grid"] for s in study.sweeps] == [METHODS, RATIOS]
    assert study.sweeps[1]["overrides"] == [*SMALL, *FIXED]
    for (_, row), run in zip(index.iterrows(), study.runs(), strict=True):
        assert run.config["controller"]["name"] == row["controller.name"]
        if row["controller.name"] == "fixed":
            assert run.config["controller"]["sparsification"] == row["controller.sparsification"]


def test_every_curve_of_both_sweeps_is_drawn(two_sweeps, tmp_path):
    groups = group_runs(load_study(two_sweeps).runs())
    assert len(groups) == 4
    table = accuracy_table(two_sweeps)
    assert table["group"].nunique() == 4
    fig = accuracy_vs_round(two_sweeps)
    assert len(fig.axes[0].get_lines()) == 4
    out = tmp_path / "acc.png"
    assert main(["plot", str(two_sweeps), "--out", str(out)]) == 0
    assert out.stat().st_size > 0


def test_sweeping_again_reuses_runs_of_the_same_resolved_config(study_copy):
    """TSFA at the scenario's own V is the first sweep's TSFA run, named otherwise: reused."""
    study = run_sweep(
        "paper",
        grid={"controller.V": [1e-4]},
        out_dir=study_copy,
        overrides=[*SMALL, "controller.name=tsfa"],
    )
    status = dict(zip(study.index["run"], study.index["status"], strict=True))
    assert status == {FIRST[0]: "skipped", FIRST[1]: "kept", **dict.fromkeys(SECOND, "kept")}
    assert not (study_copy / "controller.V=0.0001,seed=0").exists()
    assert "controller.V" in study.index.columns
    assert list(study.index["controller.V"]) == [1e-4] * 4  # equal in every run


def test_a_deleted_run_folder_is_reported(study_copy, caplog):
    gone = study_copy / FIRST[1]
    shutil.rmtree(gone)
    with caplog.at_level(logging.WARNING):
        runs = load_study(study_copy).runs()
    assert len(runs) == 3
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 1 and str(gone) in warned[0] and "folder is gone" in warned[0]

    caplog.clear()
    with caplog.at_level(logging.WARNING):
        study = run_sweep("paper", grid=RATIOS, out_dir=study_copy, overrides=[*SMALL, *FIXED])
    assert any(str(gone) in r.getMessage() for r in caplog.records)
    status = dict(zip(study.index["run"], study.index["status"], strict=True))
    assert status[FIRST[1]] == "missing"  # still listed, never dropped
    assert len(study.index) == 4


def test_the_deleted_run_is_redone_by_its_own_sweep(study_copy):
    shutil.rmtree(study_copy / FIRST[1])
    study = run_sweep("paper", grid=METHODS, out_dir=study_copy, overrides=SMALL)
    status = dict(zip(study.index["run"], study.index["status"], strict=True))
    assert status == {FIRST[0]: "skipped", FIRST[1]: "started", **dict.fromkeys(SECOND, "kept")}
    assert (study_copy / FIRST[1] / "rounds.csv").is_file()


def test_the_cli_warns_in_one_line(study_copy, tmp_path):
    shutil.rmtree(study_copy / SECOND[0])
    out = tmp_path / "a.png"
    argv = [sys.executable, "-m", "wirelessfl", "plot", str(study_copy), "--out", str(out)]
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    err = [line for line in done.stderr.splitlines() if line]
    assert len(err) == 1 and err[0].startswith("wirelessfl: warning: study: ")
    assert SECOND[0] in err[0] and out.is_file()


def test_only_keys_with_two_values_become_columns(tmp_path):
    """Each algorithm's runs carry their own strategy table: keys that only one algorithm's
    runs have, with one value, are no columns; a base-scenario key that differs is one."""
    out = tmp_path / "algorithms"
    grid = {"algorithm.name": ["soft", "fslora"]}
    run_sweep("paper", grid=grid, out_dir=out, overrides=["rounds=2", *SMALL[1:]])
    index = run_sweep("paper", grid=grid, out_dir=out, overrides=["rounds=3", *SMALL[1:]]).index
    assert list(index.columns[:4]) == ["run", "algorithm.name", "rounds", "seed"]
    assert list(index["rounds"]) == [2, 2, 3, 3] and list(index["rounds_done"]) == [2, 2, 3, 3]
