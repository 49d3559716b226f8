"""``sweep --executor ray``: the runs as Ray tasks on a local Ray instance give the tables of the
sequential executor, and a sweep run again skips finished runs and resumes unfinished ones."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest

from wirelessfl.errors import UserError
from wirelessfl.results import load
from wirelessfl.study import run_sweep

ray = pytest.importorskip("ray")

SMALL = ["rounds=30", "n_clients=20", "n_scheduled=5", "eval_every=5"]
GRID = {"controller.V": [1e-4, 1e-2]}
SEEDS = 2
NAMES = [
    "controller.V=0.0001,seed=0",
    "controller.V=0.0001,seed=1",
    "controller.V=0.01,seed=0",
    "controller.V=0.01,seed=1",
]


@pytest.fixture(scope="module")
def local_ray():
    """A local Ray instance of two CPUs for the module, shut down after it."""
    with warnings.catch_warnings():  # Ray's notice about a future change of its GPU masking
        warnings.simplefilter("ignore", FutureWarning)
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def sequential(tmp_path_factory) -> Path:
    """The network-only paper scenario swept one run after another."""
    out = tmp_path_factory.mktemp("sequential") / "study"
    run_sweep("paper", grid=GRID, seeds=SEEDS, out_dir=out, overrides=SMALL)
    return out


def _sweep_on_ray(out: Path):
    return run_sweep("paper", grid=GRID, seeds=SEEDS, out_dir=out, overrides=SMALL, executor="ray")


def _rounds(run: Path) -> pd.DataFrame:
    return load(run).rounds.drop(columns=["wall_s"])


def _mtimes(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob("*")}


def test_ray_sweep_gives_the_sequential_tables_and_skips_finished_runs(
    local_ray, sequential, tmp_path
):
    out = tmp_path / "study"
    study = _sweep_on_ray(out)
    assert list(study.index["run"]) == NAMES and (study.index["status"] == "started").all()
    pd.testing.assert_frame_equal(study.index, pd.read_csv(sequential / "index.csv"))
    for name in NAMES:
        pd.testing.assert_frame_equal(_rounds(out / name), _rounds(sequential / name))

    before = {name: _mtimes(out / name) for name in NAMES}
    again = _sweep_on_ray(out)
    assert (again.index["status"] == "skipped").all() and again.index["finished"].all()
    assert {name: _mtimes(out / name) for name in NAMES} == before


def test_ray_sweep_resumes_only_the_unfinished_run(local_ray, sequential, tmp_path):
    out = tmp_path / "study"
    shutil.copytree(sequential, out)
    victim = out / NAMES[2]
    meta = json.loads((victim / "meta.json").read_text())
    meta["finished"] = False
    (victim / "meta.json").write_text(json.dumps(meta))
    (victim / "state.json").unlink()  # killed before its first checkpoint
    shutil.rmtree(victim / "checkpoints")
    lines = (victim / "rounds.csv").read_text().splitlines()
    (victim / "rounds.csv").write_text("\n".join(lines[:11]) + "\n" + lines[11][:7])
    others = {name: _mtimes(out / name) for name in NAMES if name != NAMES[2]}

    study = _sweep_on_ray(out)
    status = dict(zip(study.index["run"], study.index["status"], strict=True))
    assert status == {name: "resumed" if name == NAMES[2] else "skipped" for name in NAMES}
    assert study.index["finished"].all() and (study.index["rounds_done"] == 30).all()
    assert {name: _mtimes(out / name) for name in others} == others
    pd.testing.assert_frame_equal(_rounds(victim), _rounds(sequential / NAMES[2]))


def test_runs_that_train_on_ray_themselves_are_refused(tmp_path):
    with pytest.raises(UserError, match=r"^--executor ray: the runs set learner.executor: ray"):
        run_sweep(
            "default",
            grid={"rounds": [1, 2]},
            out_dir=tmp_path / "study",
            overrides=["learner.executor=ray"],
            executor="ray",
        )
    assert not (tmp_path / "study").exists()


def test_cli_sweep_on_ray(local_ray, sequential, tmp_path, capsys):
    from wirelessfl.cli import main

    grid = ",".join(str(v) for v in GRID["controller.V"])
    sets = [item for key in SMALL for item in ("--set", key)]
    argv = ["sweep", "paper", "--grid", f"controller.V={grid}", "--seeds", str(SEEDS), *sets]
    assert main([*argv, "--executor", "ray", "--out", str(tmp_path / "s"), "--quiet"]) == 0
    assert "4 runs: 4 started" in capsys.readouterr().out
    pd.testing.assert_frame_equal(
        pd.read_csv(tmp_path / "s" / "index.csv"), pd.read_csv(sequential / "index.csv")
    )
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--executor", "dask", "--out", str(tmp_path / "t")])
    assert stop.value.code == 2


def test_a_dead_cluster_address_is_one_line_before_anything_is_written(tmp_path):
    out = tmp_path / "study"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "wirelessfl",
            "sweep",
            "paper",
            "--grid",
            "controller.V=1e-4,1e-3",
            "--set",
            "rounds=2",
            "--executor",
            "ray",
            "--ray-address",
            "127.0.0.1:1",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stdout == ""  # no sweep header, no progress bar
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "wirelessfl: error: --ray-address: no Ray cluster answers at '127.0.0.1:1'"
    )
    assert not out.exists()
