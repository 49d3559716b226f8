"""A run: a scenario simulated into a results folder, with checkpoints and ``--resume``.

The folder layout, what a checkpoint records and what a resume checks are described in
``wirelessfl.results.run_folder``. Rows are buffered and written together with each checkpoint:
every ``output.checkpoint_every`` rounds, whenever ``output.checkpoint_interval_s`` of wall
time has passed (so a training run, whose rounds take seconds, checkpoints after every round),
and after the last round. A kill at any instant leaves a consistent checkpoint and loses at most
the work since it; every draw is addressed by (seed, stream, round), so the resumed tables equal
an uninterrupted run's (``wall_s`` aside). A run stopped by a numerical fault, or interrupted,
first writes the rows of every round it completed.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import math
import platform
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from importlib import metadata
from pathlib import Path

import numpy as np

from wirelessfl import __version__
from wirelessfl.config.loader import read_mapping, scenario_yaml, with_plugins
from wirelessfl.config.scenario import Scenario
from wirelessfl.config.schema import build, to_dict
from wirelessfl.errors import ConfigError, SimulationError, UserError
from wirelessfl.learners import Learner, make_learner
from wirelessfl.results.columns import (
    CLIENT_COLUMNS,
    CPU_CLOCK_COLUMNS,
    EVENT_COLUMNS,
    EVENT_DRIVEN_ROUND_COLUMNS,
    ROUND_COLUMNS,
    UPDATE_COLUMNS,
    algorithm_columns,
)
from wirelessfl.results.energy import write_devices
from wirelessfl.results.files import atomic_write_text
from wirelessfl.results.folder_lock import FolderLock
from wirelessfl.results.run_folder import (
    CONFIG,
    FORMAT,
    INITIAL_EVALUATION,
    MANIFEST,
    META,
    STOPPED_EARLY,
    Checkpoint,
    DamagedRunError,
    claim_new,
    config_sha256,
    find_checkpoint,
    json_evaluation,
    read_evaluation,
    run_again,
    table_path,
    verify_checkpoint,
    write_checkpoint,
)
from wirelessfl.results.store import RunResult, load
from wirelessfl.results.table_writer import DamagedTableError, TableWriter, verify_table
from wirelessfl.sim.budget_check import budget_missed_line
from wirelessfl.sim.callbacks import CallbackError, RoundCallback, RunInfo, call_each, plain_row
from wirelessfl.sim.events import event_lines
from wirelessfl.sim.network import NetworkSimulator
from wirelessfl.sim.network_record import CELL_COLUMNS, NETWORK_ROUND_COLUMNS
from wirelessfl.sim.simulator import Simulator
from wirelessfl.sim.tensorboard_log import TensorBoardCallback, tensorboard_logdir

_log = logging.getLogger(__name__)

#: a checkpoint's file of ``Simulator.device_energy_j``
DEVICE_ENERGY = "device_energy_j.npy"


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


def _versions(extra: tuple[str, ...] = ()) -> dict[str, str]:
    """Versions of the packages a run depends on (and of ``extra``, its uplink's), from their
    installed metadata (importing cvxpy or scipy only to read a version would double the
    start-up of a short run)."""
    versions = {"wirelessfl": __version__, "python": platform.python_version()}
    for package in ("numpy", "scipy", "cvxpy", "numba", "simpy", *extra):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    if "torch" in sys.modules:
        versions["torch"] = sys.modules["torch"].__version__
    return versions


class Run:
    """One scenario simulated into ``out_dir``: a new folder, or a resumed one (``resume_from``)."""

    def __init__(
        self,
        scenario: Scenario,
        out_dir: str | Path,
        *,
        resume: bool = False,
        checkpoint: Checkpoint | None = None,
        learner: Learner | None = None,
        callbacks: Sequence[RoundCallback] = (),
        lock: FolderLock | None = None,
    ):
        """A new run into ``out_dir`` (new or empty); ``resume_from`` builds a checked resume.

        The run holds the folder's lock (``lock``, else one taken here) from now until
        ``execute`` ends: another process that wants the folder is refused in one line.

        ``learner``, built for ``scenario``, replaces the one ``learner.kind`` names (one made
        of Python objects, such as a Flower client factory or a Flower grid). ``callbacks``
        watch the rounds (``wirelessfl.sim.callbacks``), after the ``output.tensorboard`` one.
        """
        self.scenario = scenario
        self.out = Path(out_dir)
        self.resume = resume
        self._checkpoint = checkpoint
        tensorboard = (
            [TensorBoardCallback(tensorboard_logdir(self.out, scenario.output.tensorboard_dir))]
            if scenario.output.tensorboard
            else []
        )
        self.callbacks = [*tensorboard, *callbacks]
        if not resume:
            claim_new(self.out)
        self._lock = lock or FolderLock(self.out, what="--resume" if resume else "--out")
        if scenario.cells.enabled:  # one edge server per cell (wirelessfl.sim.network)
            if learner is not None:
                raise ConfigError(
                    "cells.n_rings: a network builds one learner per edge server from "
                    "learner.kind; a learner handed in (a Flower app) runs one cell"
                )
            self.sim = NetworkSimulator(scenario)
            self.learner = self.sim.learners
        else:
            self.learner = learner if learner is not None else make_learner(scenario)
            self.sim = Simulator(scenario, self.learner)

    @classmethod
    def resume_from(
        cls,
        out_dir: str | Path,
        *,
        rounds: int | None = None,
        callbacks: Sequence[RoundCallback] = (),
    ) -> Run:
        """Continue the run in ``out_dir`` from its last checkpoint, after checking the folder.

        ``rounds`` (at least the rounds done) extends a finished run or changes where a killed
        one ends; every draw is addressed by round, so the tables equal an uninterrupted run of
        ``rounds`` (but for the old last round's evaluation, kept). ``callbacks`` see only the
        rounds this resume runs. Raises ``UserError`` (one line: what is damaged, what to do)
        when the folder is not a run, or its config, state or checkpoint disagree with each
        other.
        """
        out = Path(out_dir)
        try:
            if not (out / CONFIG).is_file():
                raise UserError(f"--resume: {out} is not a run folder (no {CONFIG})")
            lock = FolderLock(out, what="--resume")  # before reading what a live run writes
            config_hash = config_sha256(out)
        except OSError as err:
            raise UserError(f"--resume: cannot read {out}: {err.strerror or err}") from None
        checkpoint = find_checkpoint(out)
        recorded = checkpoint.config_sha256 if checkpoint else _meta(out).get("config_sha256")
        if recorded is not None and recorded != config_hash:
            raise DamagedRunError(
                f"--resume {out}: {CONFIG} differs from the one the run was started with (it "
                "was edited or cut); restore it"
            )
        try:
            data = with_plugins(read_mapping(out / CONFIG), out, "")
            scenario = build(Scenario, data)
        except UserError as err:
            raise UserError(f"--resume {out}: {CONFIG}: {err}") from None
        if checkpoint is not None:
            verify_checkpoint(out, checkpoint, config_hash, scenario.rounds)
        if rounds is not None and rounds != scenario.rounds:
            scenario, checkpoint = _change_rounds(out, scenario, checkpoint, rounds)
        return cls(
            scenario, out, resume=True, checkpoint=checkpoint, callbacks=callbacks, lock=lock
        )

    # ------------------------------------------------------------------------------------
    def _write_meta(self, **extra: object) -> None:
        meta = _meta(self.out)
        if not meta:
            meta = {
                "format": FORMAT,
                "seed": self.scenario.seed,
                "name": self.scenario.name,
                "config_sha256": config_sha256(self.out),
                "versions": _versions(self.sim.uplink.PACKAGES),
                "git_revision": _git_revision(),
                "machine": platform.platform(),
                "started": _now(),
                "controller": self.sim.controller.summary(),
                "learner": self.learner.describe(),
                "finished": False,
            }
            band = self.sim.energy_band_j
            if band is not None:  # the key only with a band: other runs' meta.json unchanged
                meta["energy_band_j"] = {"low": band[0].tolist(), "high": band[1].tolist()}
            if self.resume:
                meta["rebuilt"] = _now()  # meta.json was missing or damaged
        meta.update(extra)
        atomic_write_text(self.out / META, json.dumps(meta, indent=2, default=float))

    def _refuse_unreachable_stop(self) -> None:
        """A new run whose stop rule already forbids round 0 (``privacy.target_epsilon`` below
        the epsilon of one round) is refused in one line before anything is written."""
        reason = self.learner.stop_reason()
        if reason is not None:
            raise ConfigError(
                f"{reason}: no round can run (that is the epsilon of one round); raise "
                "privacy.target_epsilon, or the noise (privacy.noise_multiplier, "
                "privacy.sample_noise_multiplier)"
            )

    def _initial_evaluation(self, start: int) -> dict[str, float] | None:
        """The evaluation before round 0 that an earlier process of this run made: the
        checkpoint's, else ``meta.json``'s (a run killed before its first checkpoint). A
        resumed run never evaluates it again: its global state is no longer the initial one
        (and, from round 0, the same as what was recorded)."""
        if self.sim.initial_evaluation is None and self.resume:
            recorded = read_evaluation(_meta(self.out).get(INITIAL_EVALUATION))
            if recorded is not None and self.scenario.evaluates_initial:
                self.sim.initial_evaluation = recorded
        return self.sim.initial_evaluation

    def _save_state(self, folder: Path) -> None:
        self.learner.save_state(folder)
        np.save(folder / "average_rate.npy", self.sim.average_rate)
        if self.sim.device_energy_j is not None:
            np.save(folder / DEVICE_ENERGY, self.sim.device_energy_j)
        (folder / "sim.json").write_text(json.dumps(self.sim.state_dict()))

    def _restore(self, checkpoint: Checkpoint) -> None:
        folder = checkpoint.folder
        try:
            sim_state = json.loads((folder / "sim.json").read_text())
            average_rate = np.load(folder / "average_rate.npy")
            self.learner.load_state(folder)
            self.sim.load_state_dict(sim_state, average_rate)
            energy = folder / DEVICE_ENERGY
            self.sim.device_energy_j = np.load(energy) if energy.is_file() else None
        except UserError:
            raise
        except Exception as err:  # a checkpoint this version cannot read: one line, not a trace
            first = str(err).splitlines()[0] if str(err) else type(err).__name__
            raise DamagedRunError(
                f"--resume {self.out}: checkpoint {folder.name} cannot be loaded ({first}); "
                f"{run_again(self.out)}"
            ) from None

    def _warn_unmet_budget(self, rounds: int) -> None:
        """One warning line at the end of a run whose devices spent more than their budget
        (:mod:`wirelessfl.sim.budget_check`; nothing without a budget, or after a resume from
        a checkpoint of an older version, which did not keep the energy sums)."""
        queues, energy = self.sim.controller.energy_queues, self.sim.device_energy_j
        if queues is None or energy is None:
            return
        line = budget_missed_line(energy.sum(axis=0), queues.budget_j, rounds)
        if line is not None:
            _log.warning("wirelessfl: warning: %s", line)

    def _write_devices(self) -> None:
        """``devices.csv`` for the rounds simulated so far (nothing when the sums are unknown:
        a run resumed from a checkpoint of an older version)."""
        energy = self.sim.device_energy_j
        if energy is not None:
            write_devices(self.out, self.sim.next_round, energy[0], energy[1])

    def _open_tables(self) -> dict[str, TableWriter]:
        sc = self.scenario
        event_driven = sc.server.event_driven
        extra = EVENT_DRIVEN_ROUND_COLUMNS if event_driven else {}
        extra = {**extra, **self.sim.uplink.round_columns()}
        if sc.cells.enabled:
            extra = {**extra, **NETWORK_ROUND_COLUMNS}
        algo = algorithm_columns(self.learner.metric_names())
        columns = {"rounds": [*ROUND_COLUMNS, *extra, *algo]}
        if sc.output.events:
            columns["events"] = EVENT_COLUMNS
        if sc.output.clients:
            columns["clients"] = UPDATE_COLUMNS if event_driven else CLIENT_COLUMNS
            if self.sim.controller.decides_cpu_frequency and not event_driven:
                columns["clients"] = {**CLIENT_COLUMNS, **CPU_CLOCK_COLUMNS}
            if not event_driven:
                columns["clients"] = {**columns["clients"], **self.sim.uplink.client_columns()}
        if sc.cells.enabled:
            columns["cells"] = CELL_COLUMNS
        marks = self._checkpoint.tables if self._checkpoint else {}
        verified = {}
        try:  # check every table before cutting any
            for name, cols in columns.items():
                if self._checkpoint is not None and name not in marks:
                    raise DamagedTableError(f"{name}.csv is not covered by the checkpoint")
                if name in marks:
                    verified[name] = verify_table(table_path(self.out, name), cols, marks[name])
        except DamagedTableError as err:
            raise DamagedRunError(
                f"--resume {self.out}: {err}; restore it, or {run_again(self.out)}"
            ) from None
        writers = {}
        for name, cols in columns.items():
            path = table_path(self.out, name)
            writers[name] = TableWriter(
                path, cols, mark=marks.get(name), verified=verified.get(name)
            )
        return writers

    # ------------------------------------------------------------------------------------
    def execute(self, *, progress: bool = False, load_result: bool = True) -> RunResult | None:
        """Simulate the remaining rounds; returns the loaded results (None with
        ``load_result=False`` and no callbacks, which would be handed them: the command line
        prints its summary from the files without loading pandas). Releases the folder's lock
        when it ends, however it ends."""
        try:
            return self._execute(progress, load_result or bool(self.callbacks))
        finally:
            self._lock.release()

    def _execute(self, progress: bool, load_result: bool) -> RunResult | None:
        sc = self.scenario
        if not self.resume:
            self._refuse_unreachable_stop()
            atomic_write_text(self.out / CONFIG, scenario_yaml(sc))
        writers = self._open_tables()
        start = 0
        if self._checkpoint is not None:
            self._restore(self._checkpoint)
            start = self._checkpoint.next_round
            self._write_devices()  # the tables were cut back to the checkpoint
        resumed = {"resumed": [*_meta(self.out).get("resumed", []), _now()], "finished": False}
        self._write_meta(**(resumed if self.resume else {}))
        initial = self._initial_evaluation(start)
        columns = writers["rounds"].columns
        resume_hint = f"; continue with: wirelessfl run --resume {self.out}"
        pending: dict[str, list] = {name: [] for name in writers}
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=sc.rounds, initial=start, unit="round", dynamic_ncols=True)
        last_checkpoint_wall, last_checkpoint_round = time.perf_counter(), start
        last_accuracy = None
        stopped = None  # the learner's reason to end before sc.rounds (privacy.target_epsilon)
        config_hash = config_sha256(self.out)
        try:
            if initial is None and start == 0 and sc.evaluates_initial:
                initial = self.sim.evaluate_initial()  # before round 0, at virtual time 0
            if initial is not None:
                self._write_meta(**{INITIAL_EVALUATION: json_evaluation(initial)})
                if not math.isnan(initial.get("accuracy", math.nan)):
                    last_accuracy = initial["accuracy"]
            info = RunInfo(self.out, sc, tuple(columns), start, self.resume, initial)
            call_each(self.callbacks, "on_run_start", info, where=resume_hint)
            done = start  # rounds in the tables
            uploads = [0, 0]  # scheduled, arrived this session
            for t in range(start, sc.rounds):
                stopped = self.learner.stop_reason()
                if stopped is not None:
                    break
                outcome = self.sim.run_round(t)
                done = t + 1
                pending["rounds"].append(outcome.record)
                uploads[0] += _count(outcome.record, "n_scheduled")
                uploads[1] += _count(outcome.record, "n_arrived")
                failed = None
                row = plain_row(columns, outcome.record)
                try:
                    call_each(self.callbacks, "on_round_end", t, row, where=f" at round {t}")
                except CallbackError as err:
                    failed = err  # checkpointed with this round, then raised
                if "events" in pending:
                    pending["events"].extend(event_lines(t, outcome.events))
                if "clients" in pending:
                    pending["clients"].extend(outcome.clients)
                if "cells" in pending:
                    pending["cells"].extend(outcome.cells)
                every = sc.output.checkpoint_every
                due = (
                    failed is not None
                    or t == sc.rounds - 1
                    or self.learner.stop_reason() is not None
                    or (every > 0 and t + 1 - last_checkpoint_round >= every)
                    or time.perf_counter() - last_checkpoint_wall >= sc.output.checkpoint_interval_s
                )
                if due:
                    _write_pending(writers, pending)
                    marks = {name: writer.flush() for name, writer in writers.items()}
                    write_checkpoint(self.out, t + 1, config_hash, marks, self._save_state)
                    last_checkpoint_wall, last_checkpoint_round = time.perf_counter(), t + 1
                if failed is not None:
                    raise CallbackError(
                        f"{failed}; rounds 0-{t} are in the tables and the checkpoint{resume_hint}"
                    ) from failed.__cause__
                if bar is not None:
                    r = outcome.record
                    post = {"t_virtual": f"{r['t_end_s']:.3g}s", "Q": f"{r['queue_after']:.3g}"}
                    if r["accuracy"] == r["accuracy"]:  # evaluated this round
                        last_accuracy = r["accuracy"]
                    if last_accuracy is not None:
                        post["acc"] = f"{last_accuracy:.3f}"
                    bar.set_postfix(post, refresh=False)
                    bar.update(1)
        except (SimulationError, KeyboardInterrupt) as err:
            _write_pending(writers, pending)  # the rounds completed before it; resume re-runs them
            self._write_devices()
            if isinstance(err, SimulationError):
                self._write_meta(stopped=str(err))
            raise
        finally:
            if bar is not None:
                bar.close()
            for writer in writers.values():
                writer.close()
            for callback in self.callbacks:
                getattr(callback, "close", lambda: None)()
        self._write_devices()
        self._write_meta(
            finished=True, ended=_now(), **({} if stopped is None else {STOPPED_EARLY: stopped})
        )
        self._warn_unmet_budget(done)
        if uploads[0] > 0 and uploads[1] == 0:
            _log.warning(
                "wirelessfl: warning: no upload arrived in rounds %d-%d (%d scheduled): the model "
                "never changed and the virtual clock moved only by compute and waits; every "
                "client was in outage, unavailable, cut by a deadline, or could not reach the "
                "server at its SNR (channel.uplink: nr below the BLER tables' -5 dB); see "
                "clients.csv's status column (output.clients: true)",
                start,
                done - 1,
                uploads[0],
            )
        if not load_result:
            return None
        result = load(self.out)
        call_each(self.callbacks, "on_run_end", result, where=" after the last round")
        return result


def _count(record: dict, key: str) -> int:
    """A round record's count ``key`` (0 where absent or NaN)."""
    value = record.get(key, 0)
    return int(value) if value == value else 0


def _write_pending(writers: dict[str, TableWriter], pending: dict[str, list]) -> None:
    for name, writer in writers.items():
        if name == "events":
            writer.append_lines(pending[name])
        else:
            writer.append(pending[name])
        pending[name].clear()


def _change_rounds(
    out: Path, scenario: Scenario, checkpoint: Checkpoint | None, rounds: int
) -> tuple[Scenario, Checkpoint | None]:
    """Rewrite ``config.yaml`` with ``rounds``, and the checkpoint and ``meta.json`` with its
    hash; returns the new scenario and checkpoint."""
    done = checkpoint.next_round if checkpoint is not None else 0
    if rounds < done:
        raise UserError(
            f"--set rounds: the run in {out} has done {done} rounds; give at least {done}"
        )
    changed = build(Scenario, {**to_dict(scenario), "rounds": rounds})
    atomic_write_text(out / CONFIG, scenario_yaml(changed))
    config_hash = config_sha256(out)
    if checkpoint is not None:
        checkpoint = replace(checkpoint, config_sha256=config_hash)
        atomic_write_text(checkpoint.folder / MANIFEST, json.dumps(checkpoint.manifest(), indent=1))
    meta = _meta(out)
    if meta:
        changes = [*meta.get("rounds_changed", []), {"from": scenario.rounds, "to": rounds}]
        meta.update(config_sha256=config_hash, rounds_changed=changes)
        atomic_write_text(out / META, json.dumps(meta, indent=2, default=float))
    return changed, checkpoint


def _meta(out: Path) -> dict:
    """``meta.json`` as a dict ({} when it is missing or damaged: it is rebuilt)."""
    try:
        meta = json.loads((out / META).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def run_scenario(
    scenario: Scenario,
    out_dir: str | Path,
    *,
    progress: bool = False,
    learner: Learner | None = None,
    callbacks: Sequence[RoundCallback] = (),
) -> RunResult:
    """Simulate ``scenario`` into a new folder ``out_dir`` and load the results (``learner``:
    one built in Python instead of the one ``learner.kind`` names; ``callbacks``: see
    ``wirelessfl.sim.callbacks``)."""
    return Run(scenario, out_dir, learner=learner, callbacks=callbacks).execute(progress=progress)


def resume_run(
    out_dir: str | Path, *, progress: bool = False, callbacks: Sequence[RoundCallback] = ()
) -> RunResult:
    """Continue a killed run in ``out_dir``; ends with the same tables as an uninterrupted run
    (``callbacks`` see only the rounds run here)."""
    return Run.resume_from(out_dir, callbacks=callbacks).execute(progress=progress)
