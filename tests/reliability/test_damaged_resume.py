"""Damaged run folders: a resume either rebuilds the uninterrupted run's tables or refuses.

Each case damages a copy of a run folder the way a user, a full disk or a crashed editor
might, then runs ``wirelessfl run --resume`` in-process. ``recover`` cases must end with the
tables of an uninterrupted run (``wall_s`` aside); ``refuse`` cases must exit 2 with one line
that names the damaged file, and must leave every table as it was.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from scenario_helpers import interrupt_at, small_scenario

from wirelessfl.cli import main
from wirelessfl.results import load
from wirelessfl.sim.runner import Run, run_scenario

EVERY = {"output.checkpoint_every": 10, "output.checkpoint_interval_s": 1e6}
TABLES = ("rounds", "events", "clients")


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    """An uninterrupted run, the same run interrupted at round 25 (checkpoint at 20), finished."""
    root = tmp_path_factory.mktemp("runs")
    full = root / "full"
    run_scenario(small_scenario(**EVERY), full)
    cut = root / "cut"
    interrupt_at(Run(small_scenario(**EVERY), cut), 25)
    return {"full": full, "cut": cut}


def _tables(folder: Path) -> dict[str, pd.DataFrame]:
    result = load(folder)
    return {
        "rounds": result.rounds.drop(columns=["wall_s"]),
        "events": result.events,
        "clients": result.clients,
    }


def _cut_bytes(path: Path, keep: Callable[[bytes], int]) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: keep(data)])


def _mid_line(name: str, round_index: int) -> Callable[[Path], None]:
    """Cut ``name`` inside the row(s) of ``round_index`` (a row the checkpoint covers)."""

    def damage(folder: Path) -> None:
        _cut_bytes(folder / f"{name}.csv", lambda b: b.index(f"\n{round_index},".encode()) + 5)

    return damage


def _last_row_cut(folder: Path) -> None:
    _cut_bytes(folder / "rounds.csv", lambda b: len(b) - 7)


def _edit_a_cell(folder: Path) -> None:
    path = folder / "rounds.csv"
    lines = path.read_text().splitlines(keepends=True)
    cells = lines[5].split(",")
    cells[2] = "123.0"
    lines[5] = ",".join(cells)
    path.write_text("".join(lines))


def _write(name: str, text: str) -> Callable[[Path], None]:
    return lambda folder: (folder / name).write_text(text)


def _delete(name: str) -> Callable[[Path], None]:
    def damage(folder: Path) -> None:
        path = folder / name
        shutil.rmtree(path) if path.is_dir() else path.unlink()

    return damage


def _in_checkpoint(name: str, damage: str) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        state = json.loads((folder / "state.json").read_text())
        path = folder / "checkpoints" / state["folder"] / name
        if damage == "delete":
            path.unlink()
        else:
            path.write_bytes(path.read_bytes()[:-3])

    return apply


def _config_cut_at(fraction: float) -> Callable[[Path], None]:
    return lambda folder: _cut_bytes(folder / "config.yaml", lambda b: int(len(b) * fraction))


def _config_edited(folder: Path) -> None:
    path = folder / "config.yaml"
    path.write_text(path.read_text().replace("rounds: 40", "rounds: 50"))


def _state_past(folder: Path) -> None:
    (folder / "state.json").write_text(json.dumps({"next_round": 40, "folder": "20"}))


def _checkpoint_renamed(folder: Path) -> None:
    (folder / "checkpoints" / "20").rename(folder / "checkpoints" / "30")
    (folder / "state.json").write_text(json.dumps({"next_round": 30, "folder": "30"}))


def _header_changed(folder: Path) -> None:
    path = folder / "rounds.csv"
    text = path.read_text()
    path.write_text(text.replace(",bits_down", ",bits_dn", 1))


def _leftovers(folder: Path) -> None:
    (folder / "meta.json.tmp").write_text("{")
    (folder / "checkpoints" / ".partial-30").mkdir()
    (folder / "rounds.csv").open("a").write("26,0.5,0.")  # a partial row, as a kill leaves


def _everything_but_config_and_tables(folder: Path) -> None:
    shutil.rmtree(folder / "checkpoints")
    (folder / "state.json").unlink()
    (folder / "meta.json").unlink()


# (id, base folder, damage, "recover" | fragment the one-line refusal must hold)
CASES = [
    ("rounds-cut-mid-line-in-checkpoint", "cut", _mid_line("rounds", 12), "rounds.csv holds"),
    ("events-cut-in-checkpoint", "cut", _mid_line("events", 7), "events.csv holds"),
    ("clients-cut-in-checkpoint", "cut", _mid_line("clients", 3), "clients.csv holds"),
    ("finished-run-last-row-cut", "full", _last_row_cut, "rounds.csv holds 39 complete rows"),
    ("rounds-cell-edited", "cut", _edit_a_cell, "rounds.csv differs"),
    ("rounds-header-changed", "cut", _header_changed, "columns differ"),
    ("clients-deleted", "cut", _delete("clients.csv"), "clients.csv is missing"),
    ("state-not-json", "cut", _write("state.json", "{oops"), "state.json is damaged"),
    ("state-not-a-table", "cut", _write("state.json", "[1, 2]"), "state.json is damaged"),
    ("state-past-its-checkpoint", "cut", _state_past, "checkpoints/20"),
    ("state-round-differs-from-checkpoint", "cut", _checkpoint_renamed, "holds round 20"),
    ("checkpoints-deleted", "cut", _delete("checkpoints"), "which is missing"),
    ("sim-json-deleted", "cut", _in_checkpoint("sim.json", "delete"), "sim.json is missing"),
    ("sim-json-cut", "cut", _in_checkpoint("sim.json", "cut"), "sim.json is damaged"),
    ("rate-npy-cut", "cut", _in_checkpoint("average_rate.npy", "cut"), "average_rate.npy"),
    ("learner-state-cut", "cut", _in_checkpoint("learner.json", "cut"), "learner.json is damaged"),
    ("manifest-cut", "cut", _in_checkpoint("manifest.json", "cut"), "manifest.json is damaged"),
    ("config-deleted", "cut", _delete("config.yaml"), "not a run folder"),
    ("config-edited", "cut", _config_edited, "config.yaml differs"),
    *[
        (f"config-cut-at-{f:.2f}", "cut", _config_cut_at(f), "config.yaml differs")
        for f in (0.0, 0.1, 0.33, 0.5, 0.77, 0.99)
    ],
    ("state-deleted", "cut", _delete("state.json"), "recover"),
    ("meta-deleted", "cut", _delete("meta.json"), "recover"),
    ("meta-not-json", "cut", _write("meta.json", "not json"), "recover"),
    ("leftover-temp-files-and-partial-row", "cut", _leftovers, "recover"),
    ("only-config-and-tables-left", "cut", _everything_but_config_and_tables, "recover"),
    ("finished-run-untouched", "full", lambda folder: None, "recover"),
]


@pytest.mark.parametrize(
    ("base", "damage", "expect"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_damaged_folder_resumes_or_refuses(folders, tmp_path, capsys, base, damage, expect):
    folder = tmp_path / "run"
    shutil.copytree(folders[base], folder)
    damage(folder)
    before = {
        n: (folder / f"{n}.csv").read_bytes() for n in TABLES if (folder / f"{n}.csv").exists()
    }
    code = main(["run", "--resume", str(folder), "--quiet"])
    err = capsys.readouterr().err
    if expect == "recover":
        assert code == 0, err
        full, resumed = _tables(folders["full"]), _tables(folder)
        for name in TABLES:
            pd.testing.assert_frame_equal(full[name], resumed[name], check_dtype=False)
        return
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("wirelessfl: error: --resume"), err
    assert expect in lines[0]
    after = {
        n: (folder / f"{n}.csv").read_bytes() for n in TABLES if (folder / f"{n}.csv").exists()
    }
    assert after == before, "a refused resume must not touch the tables"


def test_state_missing_uses_the_latest_complete_checkpoint(folders, tmp_path):
    """What a kill between the checkpoint's rename and state.json leaves: a newer folder."""
    folder = tmp_path / "run"
    shutil.copytree(folders["cut"], folder)
    (folder / "state.json").unlink()
    run = Run.resume_from(folder)
    assert run._checkpoint is not None and run._checkpoint.next_round == 20


def test_resume_after_refusal_and_restore_completes(folders, tmp_path, capsys):
    """Refused for a cut table; with the table restored, the same resume completes."""
    folder = tmp_path / "run"
    shutil.copytree(folders["cut"], folder)
    saved = (folder / "rounds.csv").read_bytes()
    _mid_line("rounds", 3)(folder)
    assert main(["run", "--resume", str(folder), "--quiet"]) == 2
    (folder / "rounds.csv").write_bytes(saved)
    assert main(["run", "--resume", str(folder), "--quiet"]) == 0
    capsys.readouterr()
    full, resumed = _tables(folders["full"]), _tables(folder)
    pd.testing.assert_frame_equal(full["rounds"], resumed["rounds"])
