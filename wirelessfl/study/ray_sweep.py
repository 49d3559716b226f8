"""``sweep --executor ray``: a sweep's runs as Ray tasks (``docs/scale-out.md``).

Every run to start or resume is one task calling :func:`~wirelessfl.study.executor.execute`,
as a local worker would: it reserves one CPU (so Ray runs it with one torch thread) and, where
the cluster has GPUs, one GPU if the run trains a model. Ray's scheduler runs as many at once as
the cluster holds. Which runs to do is decided before (finished ones are skipped, unfinished
ones resumed) and the index is written here as each run ends, so a sweep on Ray resumes like
any other. The runs write their folders themselves: on a cluster of several machines the study
folder must be on a file system every node sees at the same path. On an interrupt or an error,
the tasks still running are cancelled (a run killed at any instant resumes from its last
checkpoint).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from wirelessfl.errors import SimulationError
from wirelessfl.learners.ray_cluster import cluster_resources, connect, task_cause
from wirelessfl.study.executor import Done, RunTask, Started, execute

__all__ = ["run_tasks_on_ray"]


def run_tasks_on_ray(
    tasks: Sequence[RunTask], started: Started, done: Done, *, address: str | None = None
) -> None:
    """Run every task as a Ray task; ``started`` as it is submitted, ``done`` as it ends.

    Args:
        tasks: the runs.
        started: called here as a run is handed to Ray.
        done: called here with a run's ``execute`` outcome as it ends.
        address: the cluster (``--ray-address``); None: ``RAY_ADDRESS``, else a local instance.

    Raises:
        SimulationError: a task's worker died (the sweep resumes its run when run again).
    """
    if not tasks:
        return
    ray = connect(address, key="--executor", address_key="--ray-address")
    _, gpus = cluster_resources(ray)
    remote = ray.remote(execute)
    pending: dict[Any, RunTask] = {}
    try:
        for task in tasks:
            gpu = 1 if gpus and task.wants_gpu else 0
            options = remote.options(num_cpus=1, num_gpus=gpu, max_retries=0)
            pending[options.remote(replace(task, folder=str(Path(task.folder).resolve())))] = task
            started(task)
        while pending:
            (ref,), _ = ray.wait(list(pending), num_returns=1)
            task = pending.pop(ref)
            done(task, _outcome(ray, ref, task))
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)


def _outcome(ray: Any, ref: Any, task: RunTask) -> dict[str, Any]:
    """The task's ``execute`` outcome; what it raised, as itself; a dead worker as a
    ``SimulationError``."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as err:
        cause = task_cause(err)
        if cause is err:
            raise
        cause.add_note(f"raised in the Ray task running {task.name}")
        raise cause from err
    except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError) as err:
        raise SimulationError(
            f"sweep: the Ray task running {task.name} died ({type(err).__name__}); "
            "run the sweep again to resume"
        ) from None
