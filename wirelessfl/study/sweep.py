"""Parameter sweeps: one run folder per grid point and seed, skipped when done, resumed when not.

A study folder (format in ``wirelessfl.results.study``)::

    STUDY/study.json   scenario, fixed overrides, grid and seeds of the last sweep into it, and
                       every distinct sweep into it (``sweeps``)
    STUDY/index.csv    one row per run of every sweep into the folder, with each run's resolved
                       value of every grid key and of every key that differs between runs;
                       rewritten atomically after every run that completes
    STUDY/<run>/       a run folder (``wirelessfl.results``) named from its parameters, grid keys
                       sorted, seed last: ``controller.V=0.0001,controller.d_th_s=2.0,seed=0``

Running the same sweep again skips the runs whose ``meta.json`` says ``finished``, resumes the
others from their last checkpoint and starts the missing ones, so a killed sweep continues where
it stopped. A sweep into a study adds to it: a run whose resolved config equals a listed run's
reuses that run; one whose grid name is taken by a run of another config (the base scenario or
a ``--set`` changed) gets a folder named with its ``--set`` keys too; the runs it does not ask
for stay listed (``kept``), and one whose folder was deleted is reported and listed as
``missing``.

Heavy imports (pandas, the simulator) happen inside the functions, so importing this module
costs the command line nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from wirelessfl.errors import UserError, folder_problem
from wirelessfl.plugins import resolve_plugin
from wirelessfl.results.folder_lock import FolderLock
from wirelessfl.results.study import PENDING, StudyResult, load_study
from wirelessfl.results.summary import summarize
from wirelessfl.study.executor import EXECUTORS, RunTask, run_tasks
from wirelessfl.study.folder import (
    StudyIndex,
    check_study_folder,
    folder_summary,
    make_folder,
    place_run,
    resolved_config,
    write_spec,
)
from wirelessfl.study.grid import normalize_grid, plain
from wirelessfl.study.plan import grid_sets, override_params, plan_sweep, seed_list

#: runs a sweep may run at a time (each is a process importing the simulator, maybe torch)
MIN_JOBS, MAX_JOBS = 1, 256
#: seeds per grid point
MAX_SEEDS = 1000


class _Progress:
    """A tqdm bar over the runs to do, on stderr (nothing when ``show`` is false)."""

    def __init__(self, show: bool, total: int, header: str):
        self.bar = None
        if show:
            from tqdm import tqdm

            print(header, file=sys.stderr)
            self.bar = tqdm(total=total, unit="run", dynamic_ncols=True, file=sys.stderr)

    def started(self, task: RunTask) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(task.name, refresh=True)

    def done(self) -> None:
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def run_sweep(
    scenario: str | Path,
    *,
    grid: dict[str, list],
    seeds: int | list[int] = 1,
    out_dir: Path,
    jobs: int = 1,
    progress: bool = False,
    overrides: Sequence[str] | None = None,
    executor: str = "local",
    ray_address: str | None = None,
    plugins: Sequence[str] = (),
) -> StudyResult:
    """Run ``scenario`` for every grid point × seed into ``out_dir/<run name>/``.

    Finished runs are skipped, unfinished ones resumed, missing ones started; ``jobs > 1`` runs
    them in spawned worker processes (a script calling this needs the usual
    ``if __name__ == "__main__":`` guard); ``executor="ray"`` runs them as Ray tasks
    (:mod:`wirelessfl.study.ray_sweep`; ``jobs`` is not used). A run that stops with a
    ``SimulationError`` is recorded in ``index.csv`` and ``StudyResult.failed`` and the others
    go on; running the sweep again resumes it from its last checkpoint.

    Args:
        scenario: a scenario file or shipped name.
        grid: dotted scenario keys -> value lists.
        seeds: a count (the scenario's seed and the next ones) or an explicit list.
        out_dir: the study folder.
        jobs: runs at a time.
        progress: show a progress bar on stderr.
        overrides: ``key=value`` strings applied to every run (not in folder names).
        executor: ``local`` or ``ray``.
        ray_address: with ``ray``, the cluster (None: ``RAY_ADDRESS``, else a local instance).
        plugins: modules or ``.py`` files (relative to the current folder) to import before the
            scenario is read, here and in every worker (``--plugin``); each run lists them.

    Returns:
        The study, loaded from ``out_dir``.
    """
    from wirelessfl.config import load_scenario, resolve_scenario_path

    if executor not in EXECUTORS:
        raise UserError(f"--executor: expected one of {', '.join(EXECUTORS)}, got {executor!r}")
    if executor == "ray":  # before anything is written or printed
        from wirelessfl.learners.ray_cluster import check_reachable, import_ray

        import_ray("--executor")
        check_reachable(ray_address, address_key="--ray-address")
    if not MIN_JOBS <= jobs <= MAX_JOBS:
        raise UserError(f"--jobs: expected an integer from {MIN_JOBS} to {MAX_JOBS}, got {jobs}")
    count = plain(seeds)
    count = count if isinstance(count, int) else len(count)
    if count > MAX_SEEDS:
        raise UserError(f"--seeds: at most {MAX_SEEDS} seeds per grid point, got {count}")
    out = Path(out_dir)
    problem = folder_problem(out)
    if problem:
        raise UserError(f"--out: {problem}")
    check_study_folder(out)
    # one process owns a study folder: a second sweep into it is refused before it reads
    # the index (a new folder is locked as soon as it is made, below)
    lock = FolderLock(out, what="--out") if out.is_dir() else None
    scenario_path = resolve_scenario_path(scenario).resolve()
    fixed = list(overrides or [])
    plugins = tuple(resolve_plugin(p, Path.cwd(), "--plugin") for p in plugins)
    seeds = seed_list(seeds, load_scenario(scenario_path, fixed, plugins).seed)
    points = plan_sweep(grid, seeds, fixed)
    # validate every point before running anything (a bad key or value fails in a second;
    # a grid item's errors name --grid)
    scenarios = {
        p.name: load_scenario(
            scenario_path, [*fixed, f"seed={p.seed}"], plugins, grid_sets(p.params)
        )
        for p in points
    }
    if executor == "ray" and any(s.learner.given("executor") == "ray" for s in scenarios.values()):
        raise UserError(
            "--executor ray: the runs set learner.executor: ray, and their training actors "
            "would wait for the CPUs the sweep's own tasks hold; use one of the two"
        )

    index = StudyIndex(out)  # the runs already listed (before anything is written)
    sets = override_params(fixed)
    placed, states, by_folder = [], {}, {}
    for p in points:
        config = resolved_config(scenarios[p.name])
        name, state = place_run(index, p, config, sets)
        if name in by_folder:  # two points of this sweep resolve to one config
            raise UserError(
                f"sweep: {p.name} and another run of this sweep resolve to the same scenario "
                f"(folder {name}); drop the repeated grid value or --set"
            )
        by_folder[name] = scenarios[p.name]
        placed.append(replace(p, name=name))
        states[name] = state
        index.add(name, p.seed, config)
    points, scenarios = placed, by_folder

    make_folder(out, "--out")
    lock = lock or FolderLock(out, what="--out")
    sweeps = write_spec(
        out,
        {
            "scenario": str(scenario),
            "scenario_path": str(scenario_path),
            "overrides": fixed,
            "grid": normalize_grid(grid),
            "seeds": seeds,
            "plugins": list(plugins),
        },
    )
    index.keep_others([p.name for p in points])
    index.resolve([k for sweep in sweeps for k in sweep.get("grid", {})])
    tasks = []
    for p in points:
        folder = out / p.name
        state = states[p.name]
        if state == "missing":
            index.update(p.name, finished=False, status=PENDING, **summarize(None))
        else:
            finished = state == "finished"
            status = "skipped" if finished else PENDING
            index.update(p.name, finished=finished, status=status, **folder_summary(folder))
        if state != "finished":
            resume = state == "unfinished"
            learner = scenarios[p.name].learner
            gpu = learner.kind != "surrogate" and learner.given("device", "auto") != "cpu"
            tasks.append(
                RunTask(p.name, str(scenario_path), p.overrides, str(folder), resume, gpu, plugins)
            )
    index.write()

    failed: dict[str, str] = {}
    n_resume = sum(t.resume for t in tasks)
    bar = _Progress(
        progress,
        len(tasks),
        f"sweep: {len(points)} runs in {out} ({len(points) - len(tasks)} finished, "
        f"{n_resume} to resume, {len(tasks) - n_resume} to start)",
    )

    def record(task: RunTask, outcome: dict[str, Any]) -> None:
        if outcome["error"] is not None:
            failed[task.name] = outcome["error"]
            index.update(task.name, finished=False, status="failed", error=outcome["error"])
            index.update(task.name, **folder_summary(Path(task.folder)))
        else:
            status = "resumed" if task.resume else "started"
            index.update(task.name, finished=outcome["finished"], status=status)
            index.update(task.name, **outcome["summary"])
        index.write()
        bar.done()

    try:
        if executor == "ray":
            from wirelessfl.study.ray_sweep import run_tasks_on_ray

            run_tasks_on_ray(tasks, bar.started, record, address=ray_address)
        else:
            run_tasks(tasks, jobs, bar.started, record)
    finally:
        bar.close()
    study = load_study(out)
    study.failed = failed
    lock.release()
    return study
