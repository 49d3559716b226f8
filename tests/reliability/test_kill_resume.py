"""kill -9 at random instants, then ``--resume``: the tables equal an uninterrupted run's.

A real ``python -m wirelessfl run`` process is SIGKILLed several times at random moments (while
it imports, writes its config, simulates, writes rows or a checkpoint), resumed each time, and
finally resumed to the end. Whatever instant the kills hit, the final ``rounds.csv``,
``events.csv`` and ``clients.csv`` must equal those of an uninterrupted run (``wall_s`` aside).
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from scenario_helpers import digits_scenario, small_scenario

from wirelessfl.config.schema import to_dict
from wirelessfl.results import load
from wirelessfl.sim.runner import resume_run, run_scenario

ROOT = Path(__file__).resolve().parents[2]


def _rows(path: Path) -> int:
    return max(path.read_bytes().count(b"\n") - 1, 0) if path.exists() else 0


def _state_stamp(out: Path) -> int:
    """Changes whenever a checkpoint becomes current (state.json is replaced)."""
    try:
        return (out / "state.json").stat().st_mtime_ns
    except FileNotFoundError:
        return 0


def _kill_and_resume(
    scenario_file: Path, out: Path, rng: random.Random, kills: int, after_checkpoint_s: float
) -> list[int]:
    """Start or resume the run and SIGKILL it, ``kills`` times; rows of rounds.csv at each kill.

    The first kill comes at a random instant of the first second (imports, the config being
    written); each later one at a random instant up to ``after_checkpoint_s`` after the process
    has made a checkpoint, so it lands mid-run whatever the machine's load.
    """
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    seen = []
    for i in range(kills):
        started = (out / "config.yaml").exists()
        args = ["--resume", str(out)] if started else [str(scenario_file), "--out", str(out)]
        stamp = _state_stamp(out)
        proc = subprocess.Popen(
            [sys.executable, "-m", "wirelessfl", "run", *args, "--quiet"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        if i == 0:
            time.sleep(rng.uniform(0.0, 1.0))
        else:
            deadline = time.monotonic() + 120
            while _state_stamp(out) == stamp and proc.poll() is None:
                assert time.monotonic() < deadline, "the run made no checkpoint in 120 s"
                time.sleep(0.01)
            time.sleep(rng.uniform(0.0, after_checkpoint_s))
        if proc.poll() is None:
            proc.kill()
        _, err = proc.communicate()
        assert proc.returncode in (0, -9), err.decode()
        seen.append(_rows(out / "rounds.csv"))
    return seen


def _assert_same_tables(full, resumed) -> None:
    pd.testing.assert_frame_equal(
        full.rounds.drop(columns=["wall_s"]), resumed.rounds.drop(columns=["wall_s"])
    )
    for name in ("events", "clients"):
        pd.testing.assert_frame_equal(getattr(full, name), getattr(resumed, name))


def _write_scenario(scenario, path: Path) -> Path:
    path.write_text(yaml.safe_dump(to_dict(scenario), sort_keys=False))
    return path


def test_network_only_run_killed_at_random_instants(tmp_path):
    every = {"output.checkpoint_every": 5, "output.checkpoint_interval_s": 1e6}
    scenario = small_scenario(rounds=600, **every)
    seen = _kill_and_resume(
        _write_scenario(scenario, tmp_path / "s.yaml"), tmp_path / "k", random.Random(11), 8, 0.2
    )
    resumed = resume_run(tmp_path / "k")
    print("rows at each kill:", seen)
    assert any(0 < n < scenario.rounds for n in seen), f"no kill landed mid-run: {seen}"
    _assert_same_tables(run_scenario(scenario, tmp_path / "full"), resumed)
    assert len(load(tmp_path / "k").meta["resumed"]) >= 1


@pytest.mark.slow
@pytest.mark.train
def test_training_run_killed_at_random_instants(tmp_path):
    pytest.importorskip("torch")
    scenario = digits_scenario(rounds=8)  # a checkpoint after every round
    seen = _kill_and_resume(
        _write_scenario(scenario, tmp_path / "s.yaml"), tmp_path / "k", random.Random(5), 3, 1.0
    )
    resumed = resume_run(tmp_path / "k")
    _assert_same_tables(run_scenario(scenario, tmp_path / "full"), resumed)
    print("rows at each kill:", seen)
    assert seen[-1] <= scenario.rounds


def test_event_driven_run_killed_at_random_instants(tmp_path):
    """Buffered asynchronous aggregation (FedBuff): every checkpoint falls between two
    aggregations with updates in flight (``n_in_flight`` > 0 in every row); the resumed tables
    equal the uninterrupted ones as bytes (``rounds.csv`` but its ``wall_s``)."""
    every = {"output.checkpoint_every": 5, "output.checkpoint_interval_s": 1e6}
    server = {"mode": "buffered", "concurrency": 8, "buffer_size": 3}
    scenario = small_scenario(rounds=600, server=server, **every)
    seen = _kill_and_resume(
        _write_scenario(scenario, tmp_path / "s.yaml"), tmp_path / "k", random.Random(7), 5, 0.2
    )
    resume_run(tmp_path / "k")
    print("rows at each kill:", seen)
    assert any(0 < n < scenario.rounds for n in seen), f"no kill landed mid-run: {seen}"
    run_scenario(scenario, tmp_path / "full")
    for name in ("events.csv", "clients.csv", "devices.csv"):
        assert (tmp_path / "k" / name).read_bytes() == (tmp_path / "full" / name).read_bytes()
    killed, full = (pd.read_csv(tmp_path / d / "rounds.csv", dtype=str) for d in ("k", "full"))
    assert (killed.n_in_flight.astype(int) > 0).all()
    pd.testing.assert_frame_equal(killed.drop(columns="wall_s"), full.drop(columns="wall_s"))
