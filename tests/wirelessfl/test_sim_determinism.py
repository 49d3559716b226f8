"""Seeds give identical tables; a killed run resumes to the same table."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest
import yaml

from wirelessfl.config.schema import to_dict
from wirelessfl.sim import resume_run, run_scenario

VOLATILE = ["wall_s"]


def _table(result):
    return result.rounds.drop(columns=VOLATILE)


def test_same_seed_same_tables(make_scenario, tmp_path):
    a = run_scenario(make_scenario(), tmp_path / "a")
    b = run_scenario(make_scenario(), tmp_path / "b")
    pd.testing.assert_frame_equal(_table(a), _table(b))
    pd.testing.assert_frame_equal(a.events, b.events)
    c = run_scenario(make_scenario(seed=4), tmp_path / "c")
    assert not _table(a).equals(_table(c))


def test_adding_clients_keeps_existing_channels(make_scenario, tmp_path):
    """Per-client streams: client 3's SNR in round 0 is the same with N = 20 and N = 40."""
    from wirelessfl.learners import make_learner
    from wirelessfl.sim.simulator import Simulator

    snrs = []
    for n in (20, 40):
        sc = make_scenario(n_clients=n)
        sim = Simulator(sc, make_learner(sc))
        snrs.append(sim.channel.observe(0, 0.0)[0][:20])
    pd.testing.assert_series_equal(pd.Series(snrs[0]), pd.Series(snrs[1]))


def test_resume_after_exception_matches_uninterrupted(make_scenario, tmp_path):
    every = {"output.checkpoint_every": 3, "output.checkpoint_interval_s": 1e6}
    full = run_scenario(make_scenario(**every), tmp_path / "full")
    from wirelessfl.sim.runner import Run

    run = Run(make_scenario(**every), tmp_path / "cut")
    original = run.sim.run_round
    calls = {"n": 0}

    def dying(t):
        calls["n"] += 1
        if calls["n"] == 23:
            raise KeyboardInterrupt
        return original(t)

    run.sim.run_round = dying
    with pytest.raises(KeyboardInterrupt):
        run.execute()
    partial = pd.read_csv(tmp_path / "cut" / "rounds.csv")
    # rounds 0..21: the 21 of the checkpoint after round 20, and round 21, written when the
    # interrupt came (the resume cuts it and runs it again)
    assert len(partial) == 22
    resumed = resume_run(tmp_path / "cut")
    pd.testing.assert_frame_equal(_table(full), _table(resumed))
    pd.testing.assert_frame_equal(full.events, resumed.events)
    pd.testing.assert_frame_equal(full.clients, resumed.clients)


def test_resume_after_sigkill_matches_uninterrupted(make_scenario, tmp_path):
    """Kill a real `wirelessfl run` process mid-way, resume it, compare with a clean run."""
    sc = make_scenario(
        rounds=4000,
        **{"output.clients": False, "output.events": False, "output.checkpoint_every": 50},
    )
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(to_dict(sc)))
    out = tmp_path / "killed"
    proc = subprocess.Popen(
        [sys.executable, "-m", "wirelessfl", "run", str(path), "--out", str(out), "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    rounds = out / "rounds.csv"
    deadline = time.time() + 120
    while time.time() < deadline:
        if rounds.exists() and rounds.read_bytes().count(b"\n") > 300:
            break
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    written = rounds.read_bytes().count(b"\n") - 1
    assert 300 <= written < 4000, "the run must be killed mid-way for this test to mean anything"
    resumed = resume_run(out)
    full = run_scenario(sc, tmp_path / "full")
    pd.testing.assert_frame_equal(_table(full), _table(resumed))


def test_resume_refuses_a_table_with_other_columns(make_scenario, tmp_path):
    """A run folder written with other columns is not appended to (rows would misalign)."""
    from wirelessfl.errors import UserError
    from wirelessfl.sim.runner import Run

    every = {"output.checkpoint_every": 2, "output.checkpoint_interval_s": 1e6}
    run_scenario(make_scenario(rounds=4, **every), tmp_path / "run")
    path = tmp_path / "run" / "rounds.csv"
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0].replace(",bits_down", ""), *lines[1:]]) + "\n")
    (tmp_path / "run" / "meta.json").write_text("{}")
    with pytest.raises(UserError, match="rounds.csv: its columns differ"):
        Run.resume_from(tmp_path / "run").execute()
