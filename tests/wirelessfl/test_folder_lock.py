"""One process owns a run folder: while a run writes it, a second ``run --resume`` or an
``export`` of it is refused at once in one line naming the holder's pid; after the holder is
killed, the ``.lock`` file it leaves blocks nothing and the run resumes. Real processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wirelessfl.results.folder_lock import LOCK_FILE, FolderInUseError, FolderLock
from wirelessfl.results.run_folder import find_checkpoint

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the lock is POSIX flock")

CLI = [sys.executable, "-m", "wirelessfl"]


def _cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout)


def _wait_for(predicate, what: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_a_live_run_is_refused_to_others_and_a_killed_one_resumes(tmp_path):
    out = tmp_path / "run"
    holder = subprocess.Popen(
        [*CLI, "run", "paper", "--set", "rounds=100000", "--out", str(out), "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lock = out / LOCK_FILE
        _wait_for(lambda: lock.is_file() and lock.read_text().strip(), "the run's lock")
        assert lock.read_text().strip() == str(holder.pid)
        _wait_for(lambda: find_checkpoint(out) is not None, "a first checkpoint")
        expected = f"is in use by process {holder.pid} "
        for args in (["run", "--resume", str(out)], ["export", str(out), "--out", "x"]):
            done = _cli(*args)
            lines = done.stderr.strip().splitlines()
            assert done.returncode == 2, done.stderr
            assert len(lines) == 1 and expected in lines[0], lines
        assert holder.poll() is None  # the holder runs on, untouched
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    assert lock.is_file()  # left behind by the killed run
    done_rounds = find_checkpoint(out).next_round
    resumed = _cli("run", "--resume", str(out), "--set", f"rounds={done_rounds + 3}", "--quiet")
    assert resumed.returncode == 0, resumed.stderr
    assert f"rounds         {done_rounds + 3}" in resumed.stdout


def test_the_lock_is_one_per_folder_and_ends_on_release(tmp_path):
    first = FolderLock(tmp_path, what="--out")
    with pytest.raises(FolderInUseError, match=rf"^--resume: {tmp_path} is in use by process "):
        FolderLock(tmp_path, what="--resume")
    first.release()
    with FolderLock(tmp_path, what="--resume"):
        assert (tmp_path / LOCK_FILE).read_text() == f"{os.getpid()}\n"


def test_a_folder_holding_only_a_stale_lock_takes_a_new_run(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / LOCK_FILE).write_text("999999\n")  # a run killed before it wrote anything else
    done = _cli("run", "paper", "--set", "rounds=2", "--out", str(out), "--quiet")
    assert done.returncode == 0, done.stderr
    assert Path(out / "rounds.csv").is_file()


def test_a_second_sweep_into_a_live_study_is_refused_and_a_killed_one_resumes(tmp_path):
    out = tmp_path / "study"
    sweep = ["sweep", "paper", "--grid", "controller.V=1e-4", "--out", str(out), "--jobs", "1"]
    holder = subprocess.Popen(
        [*CLI, *sweep, "--set", "rounds=100000"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        lock = out / LOCK_FILE
        _wait_for(lambda: lock.is_file() and lock.read_text().strip(), "the study's lock")
        assert lock.read_text().strip() == str(holder.pid)
        second = _cli(*sweep, "--set", "rounds=100000")
        lines = second.stderr.strip().splitlines()
        assert second.returncode == 2, second.stderr
        assert len(lines) == 1 and f"--out: {out} is in use by process {holder.pid} " in lines[0]
        assert second.stdout == "" and holder.poll() is None
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    # the .lock files the killed sweep leaves (the study's, its run's) block nothing
    assert lock.is_file()
    after = _cli(*sweep, "--set", "rounds=3")
    assert after.returncode == 0, after.stderr
    assert len(list(out.glob("*/rounds.csv"))) == 2  # the killed run kept, the new one beside
