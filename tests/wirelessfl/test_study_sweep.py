"""Sweeps: one folder per grid point × seed, finished runs skipped, unfinished ones resumed."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from wirelessfl.config import load_scenario
from wirelessfl.errors import SimulationError, UserError
from wirelessfl.results import load
from wirelessfl.sim.runner import run_scenario
from wirelessfl.study import load_study, parse_grid, run_name, run_sweep, summarize
from wirelessfl.study.command import add_sweep_command
from wirelessfl.study.grid import normalize_grid
from wirelessfl.study.plan import plan_sweep

SMALL = ["rounds=30", "n_clients=20", "n_scheduled=5", "eval_every=5"]
GRID = {"controller.V": [1e-4, 1e-2], "controller.d_th_s": [1.5, 2.5]}
NAMES = [
    "controller.V=0.0001,controller.d_th_s=1.5,seed=0",
    "controller.V=0.0001,controller.d_th_s=2.5,seed=0",
    "controller.V=0.01,controller.d_th_s=1.5,seed=0",
    "controller.V=0.01,controller.d_th_s=2.5,seed=0",
]


@pytest.fixture(scope="module")
def base_study(tmp_path_factory) -> Path:
    """A finished 2×2 sweep of the paper scenario (network only, 30 rounds); copy to modify."""
    out = tmp_path_factory.mktemp("study") / "base"
    run_sweep("paper", grid=GRID, seeds=1, out_dir=out, overrides=SMALL)
    return out


@pytest.fixture
def study_copy(base_study, tmp_path) -> Path:
    out = tmp_path / "study"
    shutil.copytree(base_study, out)
    return out


def _mtimes(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob("*")}


def _table(path: Path) -> pd.DataFrame:
    return load(path).rounds.drop(columns=["wall_s"])


# -- grid parsing and naming --------------------------------------------------------------------
def test_grid_values_parse_like_set_values():
    grid = parse_grid(
        [
            "controller.V=1e-4,0.01,3",
            "payload.index_overhead=true,false",
            "controller.method=exact,cvxpy",
            "learner.shape.layer_shapes=[[8,8]],[[8,8],[4,8]]",
        ]
    )
    assert grid["controller.V"] == [0.0001, 0.01, 3]
    assert grid["payload.index_overhead"] == [True, False]
    assert grid["controller.method"] == ["exact", "cvxpy"]
    assert grid["learner.shape.layer_shapes"] == [[[8, 8]], [[8, 8], [4, 8]]]


@pytest.mark.parametrize(
    "items",
    [["controller.V"], ["controller.V="], ["=1,2"], ["controller.V=1,,2"], ["a=1", "a=2"]],
)
def test_bad_grid_syntax_is_a_user_error(items):
    with pytest.raises(UserError, match="--grid"):
        parse_grid(items)


def test_seed_in_grid_and_repeated_values_are_refused():
    with pytest.raises(UserError, match="--seeds"):
        plan_sweep({"seed": [1, 2]}, [0])
    with pytest.raises(UserError, match="share the folder"):
        plan_sweep({"controller.V": [0.1, 0.1]}, [0])


def test_run_names_are_deterministic_and_safe():
    assert run_name({"controller.V": 1e-4, "b": True}, 1) == "b=true,controller.V=0.0001,seed=1"
    assert run_name({"b": True, "controller.V": 1e-4}, 1) == run_name(
        {"controller.V": 1e-4, "b": True}, 1
    )
    a, b = run_name({"data.path": "x/y"}, 0), run_name({"data.path": "x_y"}, 0)
    assert "/" not in a and a != b
    long = run_name({"k": "v" * 500}, 0)
    assert len(long) <= 150 and long != run_name({"k": "v" * 499}, 0)


def test_numpy_grids_and_scalars_are_plain_values():
    import numpy as np

    grid = normalize_grid({"controller.V": np.array([1e-4, 1e-3]), "rounds": np.int64(5)})
    assert grid == {"controller.V": [1e-4, 1e-3], "rounds": [5]}
    assert [type(v) for v in grid["controller.V"]] == [float, float]
    assert run_name({"controller.V": np.float64(1e-4)}, 0) == "controller.V=0.0001,seed=0"


def test_points_carry_the_overrides_and_the_seed():
    (point,) = plan_sweep({"controller.V": [1e-5]}, [7], ["rounds=3"])
    assert point.name == "controller.V=1e-05,seed=7"
    assert point.overrides == ("rounds=3", "controller.V=1e-05", "seed=7")
    assert load_scenario("paper", list(point.overrides)).controller.V == 1e-5


# -- running ------------------------------------------------------------------------------------
def test_sweep_runs_every_point_and_indexes_it(base_study):
    study = load_study(base_study)
    index = study.index
    assert list(index["run"]) == NAMES
    assert list(index.columns[:5]) == [
        "run",
        "controller.V",
        "controller.d_th_s",
        "seed",
        "finished",
    ]
    assert index["finished"].all() and (index["status"] == "started").all()
    assert study.grid == GRID and study.seeds == [0] and study.overrides == SMALL
    runs = study.runs()
    assert len(runs) == 4
    for (_, row), run in zip(index.iterrows(), runs, strict=True):
        assert run.finished and len(run.rounds) == 30
        assert run.config["controller"]["V"] == row["controller.V"]
        assert run.config["controller"]["d_th_s"] == row["controller.d_th_s"]
        assert run.config["seed"] == row["seed"] == 0
        expected = summarize(run.rounds)
        for key in ("final_accuracy", "mean_delay_s", "mean_sparsification", "total_bits_up"):
            assert row[key] == pytest.approx(expected[key], rel=1e-12)
    assert not (base_study / "index.csv.tmp").exists()


def test_rerun_touches_nothing(study_copy):
    before = {name: _mtimes(study_copy / name) for name in NAMES}
    study = run_sweep("paper", grid=GRID, seeds=1, out_dir=study_copy, overrides=SMALL)
    assert (study.index["status"] == "skipped").all() and study.index["finished"].all()
    assert {name: _mtimes(study_copy / name) for name in NAMES} == before


def test_only_the_unfinished_run_is_resumed(study_copy, base_study):
    victim = study_copy / NAMES[2]
    meta = json.loads((victim / "meta.json").read_text())
    meta["finished"] = False
    (victim / "meta.json").write_text(json.dumps(meta))
    (victim / "state.json").unlink()  # killed before its first checkpoint
    shutil.rmtree(victim / "checkpoints")
    lines = (victim / "rounds.csv").read_text().splitlines()
    (victim / "rounds.csv").write_text("\n".join(lines[:11]) + "\n" + lines[11][:7])
    others = {name: _mtimes(study_copy / name) for name in NAMES if name != NAMES[2]}

    study = run_sweep("paper", grid=GRID, seeds=1, out_dir=study_copy, overrides=SMALL)
    status = dict(zip(study.index["run"], study.index["status"], strict=True))
    assert status == {name: "resumed" if name == NAMES[2] else "skipped" for name in NAMES}
    assert study.index["finished"].all() and (study.index["rounds_done"] == 30).all()
    assert {name: _mtimes(study_copy / name) for name in others} == others
    pd.testing.assert_frame_equal(_table(victim), _table(base_study / NAMES[2]))
    assert load(victim).meta["resumed"]


def test_a_failed_run_is_recorded_and_resumed_from_its_checkpoint(tmp_path, monkeypatch):
    from wirelessfl.sim.simulator import Simulator

    overrides = [*SMALL, "output.checkpoint_every=10", "output.checkpoint_interval_s=1e6"]
    grid = {"controller.V": [1e-2]}
    original = Simulator.run_round
    calls = {"n": 0}

    def dying(self, t):
        if self.scenario.seed == 1 and t == 17:
            # the index was rewritten when the seed-0 run completed
            partial = pd.read_csv(tmp_path / "s" / "index.csv")
            assert list(partial["status"]) == ["started", "pending"]
            raise SimulationError("non-finite update (injected)")
        return original(self, t)

    monkeypatch.setattr(Simulator, "run_round", dying)
    study = run_sweep("paper", grid=grid, seeds=2, out_dir=tmp_path / "s", overrides=overrides)
    name = "controller.V=0.01,seed=1"
    assert study.failed == {name: "non-finite update (injected)"}
    row = study.index.set_index("run").loc[name]
    # rounds 0..16 are kept (10 under the checkpoint); the resume re-runs from round 10
    assert row["status"] == "failed" and not row["finished"] and row["rounds_done"] == 17
    assert load_study(tmp_path / "s").failed == study.failed

    def counting(self, t):
        calls["n"] += 1
        return original(self, t)

    monkeypatch.setattr(Simulator, "run_round", counting)
    study = run_sweep("paper", grid=grid, seeds=2, out_dir=tmp_path / "s", overrides=overrides)
    assert calls["n"] == 20  # rounds 10..29 of the failed run; seed 0 is skipped
    assert list(study.index["status"]) == ["skipped", "resumed"] and not study.failed
    reference = run_scenario(
        load_scenario("paper", [*overrides, "controller.V=0.01", "seed=1"]), tmp_path / "ref"
    )
    pd.testing.assert_frame_equal(
        _table(tmp_path / "s" / name), reference.rounds.drop(columns=["wall_s"])
    )


def test_parallel_jobs_give_the_serial_tables(tmp_path, base_study):
    grid = {"controller.V": [1e-4, 1e-2], "controller.d_th_s": [1.5]}
    study = run_sweep("paper", grid=grid, seeds=1, out_dir=tmp_path / "p", jobs=2, overrides=SMALL)
    assert list(study.index["run"]) == [NAMES[0], NAMES[2]]
    assert study.index["finished"].all()
    for name in study.index["run"]:
        pd.testing.assert_frame_equal(_table(tmp_path / "p" / name), _table(base_study / name))


def _proc_stat(pid: int) -> list[str]:
    """Fields of /proc/PID/stat after the command name: [state, ppid, ...]; [] if gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return []


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        fields = _proc_stat(int(stat.parent.name))
        if fields:
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _running(pid: int) -> bool:
    fields = _proc_stat(pid)
    return bool(fields) and fields[0] not in ("Z", "X")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="lists processes with /proc")
@pytest.mark.parametrize("stop", ["ctrl-c", "a worker dies"])
def test_a_stopped_parallel_sweep_leaves_no_worker_running(tmp_path, stop):
    out = tmp_path / "s"
    sets = ["rounds=1000000", "n_clients=20", "n_scheduled=5"]
    argv = ["sweep", "paper", "--grid", "controller.V=1e-4,1e-2", "--jobs", "2", "--quiet"]
    argv += [*(x for s in sets for x in ("--set", s)), "--out", str(out)]
    parent = subprocess.Popen(
        [sys.executable, "-m", "wirelessfl", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    runs = [out / "controller.V=0.0001,seed=0", out / "controller.V=0.01,seed=0"]
    family: set[int] = set()
    try:
        _wait_for_rounds(parent, runs, 20)
        family = _descendants(parent.pid)
        workers = [
            pid for pid in family if "spawn_main" in Path(f"/proc/{pid}/cmdline").read_text()
        ]
        assert len(workers) == 2
        if stop == "ctrl-c":
            parent.send_signal(signal.SIGINT)
        else:
            os.kill(workers[0], signal.SIGKILL)
        _, err = parent.communicate(timeout=20)
        if stop == "ctrl-c":
            assert parent.returncode == 130 and "sweep interrupted" in err
        else:
            assert parent.returncode == 1 and "died (exit code -9)" in err
        deadline = time.monotonic() + 5
        while any(_running(pid) for pid in family) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [pid for pid in family if _running(pid)]
        assert all(not load(run).finished for run in runs)  # stopped mid-run: resumable
    finally:  # leave nothing behind if the test failed
        for pid in family | _descendants(parent.pid):
            if _running(pid):
                os.kill(pid, signal.SIGKILL)
        parent.kill()
        parent.wait()


def _wait_for_rounds(parent: subprocess.Popen, runs: list[Path], seconds: float) -> None:
    """Wait until every run of ``runs`` has written two rounds, ``parent`` still running."""
    deadline = time.monotonic() + seconds
    while not all(len(_lines(run / "rounds.csv")) > 2 for run in runs):
        assert parent.poll() is None and time.monotonic() < deadline, "the runs never started"
        time.sleep(0.05)


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="lists processes with /proc")
def test_the_workers_end_with_a_killed_sweep_and_a_rerun_finishes(tmp_path):
    """``kill -9`` of a ``--jobs 2`` sweep ends its workers with it: an immediate re-run is not
    refused by a run folder's lock, and finishes both runs."""
    out = tmp_path / "s"
    sets = ["rounds=4000", "n_clients=20", "n_scheduled=5"]
    argv = [
        sys.executable,
        "-m",
        "wirelessfl",
        "sweep",
        "paper",
        "--grid",
        "controller.V=1e-4,1e-2",
    ]
    argv += ["--jobs", "2", "--quiet", *(x for s in sets for x in ("--set", s)), "--out", str(out)]
    runs = [out / "controller.V=0.0001,seed=0", out / "controller.V=0.01,seed=0"]
    parent = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    family: set[int] = set()
    try:
        _wait_for_rounds(parent, runs, 30)
        family = _descendants(parent.pid)
        parent.kill()
        parent.wait()
        again = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        assert again.returncode == 0, again.stderr
        assert not [pid for pid in family if _running(pid)]
    finally:  # leave nothing behind if the test failed
        for pid in family:
            if _running(pid):
                os.kill(pid, signal.SIGKILL)
    index = load_study(out).index
    assert index["finished"].all() and (index["rounds_done"] == 4000).all()


def test_a_worker_without_a_parent_death_signal_exits_when_the_parent_does():
    """Where the kernel has no parent-death signal, a thread waits on the parent's sentinel
    (here a pipe whose writing end closes, as a dead parent's does) and ends the process."""
    code = (
        "import os, threading\n"
        "from wirelessfl.study.executor import _exit_when_ready\n"
        "read, write = os.pipe()\n"
        "threading.Timer(0.2, os.close, (write,)).start()\n"
        "print('waiting', flush=True)\n"
        "_exit_when_ready(read)\n"
        "raise SystemExit(5)  # not reached\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (1, "waiting\n", "")


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text().splitlines()
    except OSError:
        return []


def test_a_changed_scenario_adds_runs_beside_the_old_ones(study_copy):
    """The grid names are taken by runs of 30 rounds: the 31-round runs get folders named with
    their --set keys too, and the old runs stay listed, untouched."""
    before = {name: _mtimes(study_copy / name) for name in NAMES}
    changed = [*SMALL, "rounds=31"]
    study = run_sweep("paper", grid=GRID, seeds=1, out_dir=study_copy, overrides=changed)
    index = study.index
    sets = "eval_every=5,n_clients=20,n_scheduled=5,rounds=31"
    new = [name.replace(",seed=0", f",{sets},seed=0") for name in NAMES]
    assert list(index["run"]) == [*NAMES, *new]
    assert list(index["status"]) == ["kept"] * 4 + ["started"] * 4
    assert list(index["rounds"]) == [30] * 4 + [31] * 4  # the key that differs: a column
    assert list(index["rounds_done"]) == [30] * 4 + [31] * 4
    assert {name: _mtimes(study_copy / name) for name in NAMES} == before
    again = run_sweep("paper", grid=GRID, seeds=1, out_dir=study_copy, overrides=changed)
    assert list(again.index["status"]) == ["kept"] * 4 + ["skipped"] * 4


def test_load_study_needs_an_index(tmp_path):
    with pytest.raises(UserError, match="not a study folder"):
        load_study(tmp_path)


# -- command line -------------------------------------------------------------------------------
def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="wirelessfl")
    add_sweep_command(parser.add_subparsers())
    args = parser.parse_args(argv)
    return args.func(args)


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["paper", "--grid", "controller.V"], "--grid"),
        (["no_such_scenario", "--grid", "controller.V=1"], "no_such_scenario"),
        (["paper", "--grid", "controller.nokey=1,2"], "nokey"),
        (["paper", "--grid", "controller.V=abc"], "controller.V"),
        (["paper", "--seeds", "two"], "--seeds"),
        (["paper", "--jobs", "0"], "--jobs"),
    ],
)
def test_cli_user_mistakes_raise_user_errors(argv, match, tmp_path):
    with pytest.raises(UserError, match=match):
        _cli(["sweep", *argv, "--out", str(tmp_path / "s"), "--quiet"])
    assert not (tmp_path / "s" / "index.csv").exists()


def test_cli_sweep(tmp_path, capsys):
    argv = ["sweep", "paper", "--grid", "controller.V=1e-4,1e-2", "--seeds", "3,5", "--quiet"]
    small = [x for s in ["rounds=10", "n_clients=20", "n_scheduled=5"] for x in ("--set", s)]
    assert _cli([*argv, *small, "--out", str(tmp_path / "s")]) == 0
    out = capsys.readouterr().out
    assert "4 started" in out and "load_study" in out
    index = load_study(tmp_path / "s").index
    assert list(index["seed"]) == [3, 5, 3, 5]
    assert list(index["controller.V"]) == [1e-4, 1e-4, 1e-2, 1e-2]


def test_registering_the_commands_is_cheap():
    code = (
        "import sys; from wirelessfl.cli import build_parser; build_parser(); "
        "print(sorted(m for m in ('pandas', 'matplotlib', 'cvxpy', 'torch') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
