"""A run: a scenario simulated into a results folder, with checkpoints and ``--resume``.

Folder layout (see ``wirelessfl.results`` for the tables)::

    OUT/config.yaml        the fully resolved scenario
    OUT/meta.json          versions, seed, git revision, device, times, controller summary
    OUT/rounds.csv         one row per round (append-only)
    OUT/events.csv         one row per event (if output.events)
    OUT/clients.csv        one row per scheduled client per round (if output.clients)
    OUT/state.json         the last complete checkpoint: {"next_round": n, "folder": ...}
    OUT/checkpoints/<n>/   simulator + learner state after round n - 1

Rows are buffered and written together with each checkpoint: every ``output.checkpoint_every``
rounds, whenever ``output.checkpoint_interval_s`` of wall time has passed (so a training run,
whose rounds take seconds, checkpoints after every round), and after the last round. Each table
gets one ``write`` of whole rounds, then the learner state goes into a fresh folder, which
becomes current only when ``state.json`` is atomically replaced: a kill at any instant leaves a
consistent checkpoint and loses at most the work since it. Resuming cuts the tables back to the
checkpoint's round and re-runs from there; every draw is addressed by (seed, stream, round), so
the resumed tables equal an uninterrupted run's (``wall_s`` aside).
"""

from __future__ import annotations

import datetime as dt
import json
import platform
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np

from wirelessfl import __version__
from wirelessfl.config.loader import dump_scenario, read_mapping
from wirelessfl.config.scenario import Scenario
from wirelessfl.config.schema import build
from wirelessfl.errors import UserError
from wirelessfl.learners import make_learner
from wirelessfl.results.columns import (
    CLIENT_COLUMNS,
    EVENT_COLUMNS,
    ROUND_COLUMNS,
    algorithm_columns,
)
from wirelessfl.results.store import RunResult, TableWriter, atomic_write_text, load, truncate_table
from wirelessfl.sim.events import event_lines
from wirelessfl.sim.simulator import Simulator


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _git_revision() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def _versions() -> dict[str, str]:
    import cvxpy
    import scipy
    import simpy

    versions = {
        "wirelessfl": __version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "cvxpy": cvxpy.__version__,
        "simpy": simpy.__version__,
    }
    import sys

    if "torch" in sys.modules:
        versions["torch"] = sys.modules["torch"].__version__
    return versions


class Run:
    """One scenario simulated into ``out_dir`` (new, or resumed with ``resume=True``)."""

    def __init__(self, scenario: Scenario, out_dir: str | Path, *, resume: bool = False):
        self.scenario = scenario
        self.out = Path(out_dir)
        self.resume = resume
        if not resume and (self.out / "rounds.csv").exists():
            raise UserError(
                f"--out: {self.out} already holds a run; use --resume {self.out} to continue it "
                "or choose another folder"
            )
        self.out.mkdir(parents=True, exist_ok=True)
        self.learner = make_learner(scenario)
        self.sim = Simulator(scenario, self.learner)

    @classmethod
    def resume_from(cls, out_dir: str | Path) -> Run:
        """Continue the run in ``out_dir`` from its last checkpoint."""
        out = Path(out_dir)
        if not (out / "config.yaml").exists():
            raise UserError(f"--resume: {out} is not a run folder (no config.yaml)")
        scenario = build(Scenario, read_mapping(out / "config.yaml"))
        return cls(scenario, out, resume=True)

    # ------------------------------------------------------------------------------------
    def _write_meta(self, **extra: object) -> None:
        path = self.out / "meta.json"
        meta = json.loads(path.read_text()) if path.exists() else {}
        if not meta:
            meta = {
                "seed": self.scenario.seed,
                "name": self.scenario.name,
                "versions": _versions(),
                "git_revision": _git_revision(),
                "machine": platform.platform(),
                "started": _now(),
                "controller": self.sim.controller.summary(),
                "learner": self.learner.describe(),
                "finished": False,
            }
        meta.update(extra)
        atomic_write_text(path, json.dumps(meta, indent=2, default=float))

    def _checkpoint(self) -> None:
        n = self.sim.next_round
        folder = self.out / "checkpoints" / str(n)
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        self.learner.save_state(folder)
        np.save(folder / "average_rate.npy", self.sim.average_rate)
        (folder / "sim.json").write_text(json.dumps(self.sim.state_dict()))
        atomic_write_text(self.out / "state.json", json.dumps({"next_round": n, "folder": str(n)}))
        for old in (self.out / "checkpoints").iterdir():
            if old.name != str(n):
                shutil.rmtree(old, ignore_errors=True)

    def _restore(self) -> int:
        state_path = self.out / "state.json"
        if not state_path.exists():
            return 0
        state = json.loads(state_path.read_text())
        folder = self.out / "checkpoints" / state["folder"]
        sim_state = json.loads((folder / "sim.json").read_text())
        self.learner.load_state(folder)
        self.sim.load_state_dict(sim_state, np.load(folder / "average_rate.npy"))
        return int(state["next_round"])

    # ------------------------------------------------------------------------------------
    def execute(self, *, progress: bool = False) -> RunResult:
        """Simulate the remaining rounds; returns the loaded results."""
        sc = self.scenario
        start = self._restore() if self.resume else 0
        for name in ("rounds", "events", "clients"):
            truncate_table(self.out / f"{name}.csv", start)
        if not self.resume:
            dump_scenario(sc, self.out / "config.yaml")
        self._write_meta(
            **({"resumed": [*self._meta_list("resumed"), _now()]} if self.resume else {})
        )
        round_columns = [*ROUND_COLUMNS, *algorithm_columns(self.learner.metric_names())]
        writers = {"rounds": TableWriter(self.out / "rounds.csv", round_columns)}
        if sc.output.events:
            writers["events"] = TableWriter(self.out / "events.csv", EVENT_COLUMNS)
        if sc.output.clients:
            writers["clients"] = TableWriter(self.out / "clients.csv", CLIENT_COLUMNS)
        pending: dict[str, list] = {name: [] for name in writers}
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=sc.rounds, initial=start, unit="round", dynamic_ncols=True)
        last_checkpoint_wall, last_checkpoint_round = time.perf_counter(), start
        last_accuracy = None
        try:
            for t in range(start, sc.rounds):
                outcome = self.sim.run_round(t)
                pending["rounds"].append(outcome.record)
                if "events" in pending:
                    pending["events"].extend(event_lines(t, outcome.events))
                if "clients" in pending:
                    pending["clients"].extend(outcome.clients)
                every = sc.output.checkpoint_every
                due = (
                    t == sc.rounds - 1
                    or (every > 0 and t + 1 - last_checkpoint_round >= every)
                    or time.perf_counter() - last_checkpoint_wall >= sc.output.checkpoint_interval_s
                )
                if due:
                    for name, writer in writers.items():
                        if name == "events":
                            writer.append_lines(pending[name])
                        else:
                            writer.append(pending[name])
                        pending[name].clear()
                    self._checkpoint()
                    last_checkpoint_wall, last_checkpoint_round = time.perf_counter(), t + 1
                if bar is not None:
                    r = outcome.record
                    post = {"t_virtual": f"{r['t_end_s']:.3g}s", "Q": f"{r['queue_after']:.3g}"}
                    if r["accuracy"] == r["accuracy"]:  # evaluated this round
                        last_accuracy = r["accuracy"]
                    if last_accuracy is not None:
                        post["acc"] = f"{last_accuracy:.3f}"
                    bar.set_postfix(post, refresh=False)
                    bar.update(1)
        finally:
            if bar is not None:
                bar.close()
            for writer in writers.values():
                writer.close()
        self._write_meta(finished=True, ended=_now())
        return load(self.out)

    def _meta_list(self, key: str) -> list:
        path = self.out / "meta.json"
        if not path.exists():
            return []
        return list(json.loads(path.read_text()).get(key, []))


def run_scenario(scenario: Scenario, out_dir: str | Path, *, progress: bool = False) -> RunResult:
    """Simulate ``scenario`` into a new folder ``out_dir`` and load the results."""
    return Run(scenario, out_dir).execute(progress=progress)


def resume_run(out_dir: str | Path, *, progress: bool = False) -> RunResult:
    """Continue a killed run in ``out_dir``; ends with the same tables as an uninterrupted run."""
    return Run.resume_from(out_dir).execute(progress=progress)
