"""Per-round callbacks, ``output.tensorboard`` and the MLflow callback, on a network-only run
built from a dict (no CLI)."""

from __future__ import annotations

import math
import sys

import numpy as np
import pandas as pd
import pytest
from scenario_helpers import small_scenario

from wirelessfl.errors import ConfigError, UserError
from wirelessfl.results import load
from wirelessfl.sim import (
    CallbackError,
    MLflowCallback,
    RoundCallback,
    Run,
    resume_run,
    run_scenario,
)

#: checkpoints after rounds 9, 19, 29, 39 only
EVERY_10 = {"output.checkpoint_every": 10, "output.checkpoint_interval_s": 1e6}


class Recorder(RoundCallback):
    def __init__(self):
        self.info, self.rows, self.result = None, [], None

    def on_run_start(self, info):
        self.info = info

    def on_round_end(self, round_index, row):
        assert row["round"] == round_index
        self.rows.append(row)

    def on_run_end(self, result):
        self.result = result


def _same(row: dict, table: pd.DataFrame, index: int) -> None:
    """``row`` equals line ``index`` of a ``rounds.csv`` read back, column by column."""
    assert list(row) == list(table.columns)
    for column, value in row.items():
        written = table[column].iloc[index]
        if isinstance(value, float) and math.isnan(value):
            assert math.isnan(written), column
        else:
            assert value == written, (column, value, written)


def _cut_at(run: Run, dead_round: int) -> None:
    """Make ``run`` die with a KeyboardInterrupt when it reaches ``dead_round``."""
    original = run.sim.run_round

    def dying(t):
        if t == dead_round:
            raise KeyboardInterrupt
        return original(t)

    run.sim.run_round = dying


def test_rows_equal_rounds_csv_in_order(tmp_path):
    rec = Recorder()
    result = run_scenario(small_scenario(), tmp_path / "run", callbacks=[rec])
    table = pd.read_csv(tmp_path / "run" / "rounds.csv")
    assert [r["round"] for r in rec.rows] == list(range(40)) == list(table["round"])
    for i, row in enumerate(rec.rows):
        _same(row, table, i)
    assert rec.info.start_round == 0 and not rec.info.resumed
    assert rec.info.columns == tuple(table.columns)
    assert rec.result.path == result.path and rec.result.finished


def test_resume_delivers_only_the_rounds_it_runs(tmp_path):
    out = tmp_path / "cut"
    first = Recorder()
    run = Run(small_scenario(**EVERY_10), out, callbacks=[first])
    _cut_at(run, 24)
    with pytest.raises(KeyboardInterrupt):
        run.execute()
    assert [r["round"] for r in first.rows] == list(range(24))
    assert first.result is None
    second = Recorder()
    resume_run(out, callbacks=[second])
    assert second.info.start_round == 20 and second.info.resumed
    assert [r["round"] for r in second.rows] == list(range(20, 40))
    table = pd.read_csv(out / "rounds.csv")
    for row in second.rows:
        _same(row, table, row["round"])


def _tensorboard_scalars(folder) -> dict[str, list]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(folder), size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: acc.Scalars(tag) for tag in acc.Tags()["scalars"]}


def test_tensorboard_holds_every_numeric_column_of_a_resumed_run(tmp_path):
    pytest.importorskip("tensorboard")
    out = tmp_path / "run"
    run = Run(small_scenario(**EVERY_10, **{"output.tensorboard": True}), out)
    _cut_at(run, 24)  # rounds 20-23 are logged, then run again by the resume
    with pytest.raises(KeyboardInterrupt):
        run.execute()
    resume_run(out)
    table = pd.read_csv(out / "rounds.csv")
    scalars = _tensorboard_scalars(out / "tensorboard")
    numeric = [c for c in table.columns if pd.api.types.is_numeric_dtype(table[c])]
    assert numeric == list(table.columns)  # every rounds.csv column is a number
    assert sorted(scalars) == sorted(c for c in numeric if table[c].notna().any())
    for column in numeric:
        logged = table[table[column].notna()]
        events = scalars.get(column, [])
        assert [e.step for e in events] == list(logged["round"]), column
        expected = logged[column].to_numpy(dtype=np.float32)
        np.testing.assert_array_equal(np.float32([e.value for e in events]), expected)
        # the wall time of each event is the round's virtual end time
        np.testing.assert_allclose([e.wall_time for e in events], logged["t_end_s"], rtol=1e-12)


def test_missing_tensorboard_is_one_line_before_the_folder_exists(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboard", None)  # what an import finds when missing
    with pytest.raises(UserError) as err:
        run_scenario(small_scenario(**{"output.tensorboard": True}), tmp_path / "run")
    assert str(err.value) == (
        "output.tensorboard: needs the tensorboard package; install it with: pip install "
        "tensorboard (or the [track] extra: pip install -e '.[track]')"
    )
    assert not (tmp_path / "run").exists()


def test_tensorboard_dir_collects_runs_in_one_shared_folder(tmp_path):
    pytest.importorskip("tensorboard")
    shared = {"output.tensorboard": True, "output.tensorboard_dir": "../tb"}
    for name in ("a", "b"):
        run_scenario(small_scenario(**shared), tmp_path / name)
        assert not (tmp_path / name / "tensorboard").exists()
        scalars = _tensorboard_scalars(tmp_path / "tb" / name)  # relative to the run folder
        assert len(scalars["delay_s"]) == len(pd.read_csv(tmp_path / name / "rounds.csv"))
    with pytest.raises(ConfigError) as err:
        small_scenario(**{"output.tensorboard_dir": "tb"})
    assert str(err.value) == (
        "output.tensorboard_dir: used only with output.tensorboard: true; set it or remove "
        "tensorboard_dir"
    )


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_bad_tensorboard_setting_is_one_line(value):
    with pytest.raises(ConfigError) as err:
        small_scenario(**{"output.tensorboard": value})
    assert str(err.value) == f"output.tensorboard: expected true or false, got {value!r}"


class Failing(RoundCallback):
    def on_round_end(self, round_index, row):
        if round_index == 7:
            raise ValueError("no space left on the dashboard\nsecond line")


def test_raising_callback_keeps_the_tables_and_checkpoint(tmp_path):
    out = tmp_path / "run"
    rec = Recorder()
    with pytest.raises(CallbackError) as err:
        run_scenario(small_scenario(**EVERY_10), out, callbacks=[rec, Failing()])
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(
        "callback Failing.on_round_end raised ValueError: no space left on the dashboard at "
        "round 7; rounds 0-7 are in the tables and the checkpoint; continue with: "
        "wirelessfl run --resume "
    )
    assert isinstance(err.value.__cause__, ValueError)
    assert len(load(out).rounds) == 8 and "stopped" in load(out).meta
    resumed = resume_run(out)  # continues after round 7 from the checkpoint
    full = run_scenario(small_scenario(**EVERY_10), tmp_path / "full")
    pd.testing.assert_frame_equal(
        resumed.rounds.drop(columns="wall_s"), full.rounds.drop(columns="wall_s")
    )
    assert len(rec.rows) == 8  # the callbacks before the failing one saw round 7


def test_mlflow_callback_logs_params_and_metrics(tmp_path, monkeypatch):
    mlflow = pytest.importorskip("mlflow")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # a folder store, no database
    uri = (tmp_path / "mlruns").as_uri()
    run_scenario(
        small_scenario(),
        tmp_path / "run",
        callbacks=[MLflowCallback(tracking_uri=uri, experiment="t", run_name="small")],
    )
    table = pd.read_csv(tmp_path / "run" / "rounds.csv")
    client = mlflow.tracking.MlflowClient(uri)
    (found,) = client.search_runs([client.get_experiment_by_name("t").experiment_id])
    assert found.data.params["n_clients"] == "20"
    history = client.get_metric_history(found.info.run_id, "delay_s")
    assert [m.step for m in history] == list(table["round"])
    np.testing.assert_allclose([m.value for m in history], table["delay_s"])
    assert {a.path for a in client.list_artifacts(found.info.run_id)} == {
        "config.yaml",
        "rounds.csv",
    }
    assert found.info.status == "FINISHED" and mlflow.active_run() is None


def test_missing_mlflow_is_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "mlflow", None)
    with pytest.raises(UserError) as err:
        MLflowCallback()
    assert str(err.value) == (
        "MLflowCallback: needs the mlflow package; install it with: pip install "
        "'wirelessfl[track]' (or pip install mlflow)"
    )


@pytest.mark.parametrize("stop", ["interrupt", "callback"])
def test_mlflow_run_of_a_stopped_run_ends_failed_and_a_resume_finishes(tmp_path, monkeypatch, stop):
    mlflow = pytest.importorskip("mlflow")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    uri = (tmp_path / "mlruns").as_uri()
    out = tmp_path / "run"
    logger = MLflowCallback(tracking_uri=uri, experiment="t")
    if stop == "interrupt":
        run = Run(small_scenario(**EVERY_10), out, callbacks=[logger])
        _cut_at(run, 24)
        with pytest.raises(KeyboardInterrupt):
            run.execute()
    else:
        with pytest.raises(CallbackError):
            run_scenario(small_scenario(**EVERY_10), out, callbacks=[logger, Failing()])
    assert mlflow.active_run() is None  # nothing left open in this process
    client = mlflow.tracking.MlflowClient(uri)
    experiment = client.get_experiment_by_name("t").experiment_id
    (stopped,) = client.search_runs([experiment])
    assert stopped.info.status == "FAILED"
    assert {a.path for a in client.list_artifacts(stopped.info.run_id)} == {
        "config.yaml",
        "rounds.csv",
    }
    resume_run(out, callbacks=[MLflowCallback(tracking_uri=uri, experiment="t")])
    statuses = sorted(r.info.status for r in client.search_runs([experiment]))
    assert statuses == ["FAILED", "FINISHED"] and mlflow.active_run() is None


def test_cli_writes_tensorboard_and_refuses_it_in_one_line_without_the_package(
    tmp_path, capsys, monkeypatch
):
    pytest.importorskip("tensorboard")
    from wirelessfl import cli

    run = ["run", "network_only", "--set", "rounds=60", "--set", "output.tensorboard=true"]
    assert cli.main([*run, "--quiet", "--out", str(tmp_path / "a")]) == 0
    scalars = _tensorboard_scalars(tmp_path / "a" / "tensorboard")
    assert [e.step for e in scalars["accuracy"]] == [49, 59]  # the rounds evaluated
    capsys.readouterr()
    monkeypatch.setitem(sys.modules, "tensorboard", None)
    assert cli.main([*run, "--quiet", "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("wirelessfl: error: output.tensorboard: needs the tensorboard package")
    assert "\n" not in err
