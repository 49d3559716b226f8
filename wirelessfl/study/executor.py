"""Running a sweep's runs: one after another here, or in spawned worker processes (the local
executor; ``--executor ray`` is :mod:`wirelessfl.study.ray_sweep`).

The parallel executor owns its worker processes: on an interrupt, an exception or a worker that
dies, it terminates every worker at once rather than waiting for their runs to end (a run
killed at any instant resumes from its last checkpoint). A worker also ends with the sweep's
process however that ends (``kill -9`` included), so that none keeps a run folder locked.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import pickle
import queue
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from typing import Any

from wirelessfl.errors import SimulationError
from wirelessfl.results.summary import summarize_run

#: seconds between checks that the workers are alive while waiting for an outcome
_POLL_S = 0.2
#: seconds a terminated worker gets to exit before it is killed
_GRACE_S = 5.0
#: prctl's option that sets the signal a process gets when its parent ends (linux/prctl.h)
_PR_SET_PDEATHSIG = 1
#: where a sweep's runs go: here (one after another, or ``--jobs`` worker processes) or Ray tasks
EXECUTORS = ("local", "ray")


@dataclass(frozen=True)
class RunTask:
    """One run to start (``resume`` false) or resume in ``folder``; ``wants_gpu``: it trains
    a model on the GPU when there is one (an executor that places runs gives it one);
    ``plugins``: the sweep's ``--plugin`` modules and files (resolved), imported by the process
    that runs it (a resumed run imports those its ``config.yaml`` lists)."""

    name: str
    scenario_path: str
    overrides: tuple[str, ...]
    folder: str
    resume: bool
    wants_gpu: bool = False
    plugins: tuple[str, ...] = ()


def add_executor_arguments(parser: argparse.ArgumentParser) -> None:
    """``--executor`` and ``--ray-address``, for the commands that run sweeps."""
    parser.add_argument(
        "--executor",
        choices=EXECUTORS,
        default="local",
        help="local: runs here, --jobs at a time (default); ray: every run is a Ray task (one "
        "CPU, and a GPU where the cluster has them), as many at once as the cluster holds "
        "(docs/scale-out.md)",
    )
    parser.add_argument(
        "--ray-address",
        metavar="HOST:PORT",
        help="with --executor ray: the cluster (default: RAY_ADDRESS, else a local Ray instance)",
    )


def execute(task: RunTask) -> dict[str, Any]:
    """Start or resume one run.

    Args:
        task: the run.

    Returns:
        ``error`` (the ``SimulationError`` message, or None), ``finished`` and, without an
        error, ``summary`` (``summarize_run``).
    """
    from wirelessfl.config import load_scenario
    from wirelessfl.sim.runner import resume_run, run_scenario

    try:
        if task.resume:
            result = resume_run(task.folder)
        else:
            scenario = load_scenario(task.scenario_path, list(task.overrides), task.plugins)
            result = run_scenario(scenario, task.folder)
    except SimulationError as err:
        return {"error": str(err) or type(err).__name__, "finished": False}
    return {"error": None, "finished": result.finished, "summary": summarize_run(result)}


Started = Callable[[RunTask], None]
Done = Callable[[RunTask, dict[str, Any]], None]


def run_tasks(tasks: Sequence[RunTask], jobs: int, started: Started, done: Done) -> None:
    """Run every task: here when ``jobs`` is 1 (or there is one task), else in ``jobs`` workers.

    Args:
        tasks: the runs.
        jobs: runs at a time.
        started: called here as a run starts.
        done: called here with a run's ``execute`` outcome as it ends.

    Raises:
        SimulationError: a worker process died (the sweep resumes its run when run again).
    """
    if jobs == 1 or len(tasks) <= 1:
        for task in tasks:
            started(task)
            done(task, execute(task))
    else:
        _run_parallel(tasks, min(jobs, len(tasks)), started, done)


def share_cores(workers: int) -> None:
    """Worker start-up: each of ``workers`` processes gets its share of the CPU cores.

    Without this every worker starts one math thread per core and they oversubscribe the
    machine (seen as 10-30x slower training on 2 cores). Set before torch is imported.
    """
    threads = str(max(1, (os.cpu_count() or 1) // workers))
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, threads)


def _portable(err: BaseException) -> BaseException:
    """``err`` if it survives pickling (to cross to the parent), else a RuntimeError with its
    text."""
    try:
        pickle.loads(pickle.dumps(err))
    except Exception:
        return RuntimeError(f"{type(err).__name__}: {err}")
    return err


def _work(worker: int, workers: int, todo: Any, outcomes: Any) -> None:
    """A worker process: runs ``(index, task)`` items from ``todo`` until a ``None``.

    Puts ``(worker, index, kind, value)`` on ``outcomes``: ``started``, then ``done`` with the
    outcome or ``raised`` with ``(exception, traceback text)``. Ctrl-C is left to the parent,
    which terminates the workers; a worker ends with its parent (:func:`_end_with_parent`).
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    share_cores(workers)
    _end_with_parent(multiprocessing.parent_process())
    for index, task in iter(todo.get, None):
        outcomes.put((worker, index, "started", None))
        try:
            outcomes.put((worker, index, "done", execute(task)))
        except BaseException as err:
            outcomes.put((worker, index, "raised", (_portable(err), traceback.format_exc())))


def _end_with_parent(parent: BaseProcess | None) -> None:
    """End this worker as soon as ``parent`` (the sweep's process) ends, however it ends: the
    kernel's parent-death signal on Linux, elsewhere a thread waiting on its sentinel."""
    if parent is None:
        return
    if not _set_parent_death_signal():
        watch = threading.Thread(target=_exit_when_ready, args=(parent.sentinel,), daemon=True)
        watch.start()
    if not parent.is_alive():  # it ended before the signal or the watch was set
        os._exit(1)


def _set_parent_death_signal() -> bool:
    """Ask Linux to SIGKILL this process when its parent ends (``prctl(PR_SET_PDEATHSIG)``);
    whether it took."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes  # here, in the worker: the command line that registers sweep never needs it

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _exit_when_ready(sentinel: int) -> None:
    """Wait until ``sentinel`` is ready (the parent ended), then end this process at once."""
    from multiprocessing.connection import wait

    wait([sentinel])
    os._exit(1)


def _run_parallel(tasks: Sequence[RunTask], workers: int, started: Started, done: Done) -> None:
    context = multiprocessing.get_context("spawn")
    todo, outcomes = context.Queue(), context.Queue()
    for item in enumerate(tasks):
        todo.put(item)
    for _ in range(workers):
        todo.put(None)
    processes = [
        context.Process(
            target=_work, args=(w, workers, todo, outcomes), name=f"wirelessfl-sweep-{w}"
        )
        for w in range(workers)
    ]
    running: dict[int, int] = {}  # worker -> index of the task it runs
    try:
        for process in processes:
            process.start()
        left = len(tasks)
        while left:
            try:
                worker, index, kind, value = outcomes.get(timeout=_POLL_S)
            except queue.Empty:
                _check_alive(processes, running, tasks)
                continue
            if kind == "started":
                running[worker] = index
                started(tasks[index])
            elif kind == "done":
                running.pop(worker, None)
                left -= 1
                done(tasks[index], value)
            else:
                err, text = value
                err.add_note(f"raised in the sweep worker running {tasks[index].name}:\n{text}")
                raise err
        for process in processes:
            process.join()
    finally:
        _stop(processes)
        todo.close()
        todo.cancel_join_thread()
        outcomes.close()


def _check_alive(
    processes: Sequence[BaseProcess], running: dict[int, int], tasks: Sequence[RunTask]
) -> None:
    """Raise if a worker died (killed, out of memory) instead of finishing its tasks."""
    for worker, process in enumerate(processes):
        if process.exitcode not in (None, 0):
            what = f"running {tasks[running[worker]].name} " if worker in running else ""
            raise SimulationError(
                f"sweep: the worker {what}died (exit code {process.exitcode}); "
                "run the sweep again to resume"
            )


def _stop(processes: Sequence[BaseProcess]) -> None:
    """Terminate the workers still alive, kill those that do not exit in time, reap them all."""
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        if process.pid is None:
            continue
        process.join(_GRACE_S)
        if process.is_alive():
            process.kill()
            process.join()
