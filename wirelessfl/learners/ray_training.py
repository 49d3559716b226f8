"""``learner.executor: ray``: each round's local training (step 3) on Ray actors.

Each actor (:class:`TrainingWorker`) builds the run's training runtime and algorithm from the
scenario once, as this process does (the same seed, the same rank), so it holds the frozen base
model(s) once and trains with the trainer a local run would use. Per round, :class:`RayTraining`

1. splits the round's clients into contiguous shares, one per actor;
2. sends every actor its share's plans and start states, the share's committed private state
   and the algorithm's :meth:`~wirelessfl.algorithms.base.FederatedAlgorithm.training_state`
   (server-side state that training reads, put in the object store once), all on the CPU;
3. gets back each client's :class:`~wirelessfl.training.local.LocalResult` and the private
   entries training staged (optimizer moments), which it stages here.

Everything else (plan, broadcast, messages, aggregation, evaluation, checkpoints and the virtual
clock) stays in this process. Randomness is addressed by (seed, client, round), so with the
sequential trainer (the CPU default) or the algorithms' own trainers the results are those of a
local run bit for bit, provided every actor computes like this process: the same device type and
the same number of torch threads (each actor takes this process's ``torch.get_num_threads()``;
CPU kernels sum in a different order with another thread count). The batched trainer's results
depend on which clients share a batch, so they equal a local run's only with one actor.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from wirelessfl.algorithms.finite import KEPT
from wirelessfl.errors import ConfigError, SimulationError
from wirelessfl.learners.ray_cluster import cluster_resources, connect, node_cpus, task_cause
from wirelessfl.training.private_state import PrivateState
from wirelessfl.training.transfer import to_device

if TYPE_CHECKING:
    from wirelessfl.algorithms.base import FederatedAlgorithm, State
    from wirelessfl.plans import ClientPlan
    from wirelessfl.training.local import LocalResult

__all__ = ["START_TIMEOUT_S", "RayTraining", "TrainingWorker", "default_workers"]

#: seconds the actors get to build their runtime (a cluster without room for them never does)
START_TIMEOUT_S = 600.0


class TrainingWorker:
    """A Ray actor's body: the run's runtime and algorithm, built once; trains shares of rounds.

    Args:
        scenario: the run's scenario.
        algorithm_class: the run's algorithm class (built with the scenario's ``strategy``).
        rank: the model rank the controller chose (``Learner.start``).
        seed: the run seed.
        threads: torch threads (this process's, so that CPU kernels sum alike).

    A failure to build (a data set missing on that node, say) is kept and raised by
    :meth:`device_type`, so it reaches the driver as itself: Ray reports an exception raised
    in an actor's constructor only as text.
    """

    def __init__(
        self, scenario: Any, algorithm_class: type, rank: int, seed: int, threads: int
    ) -> None:
        from wirelessfl.algorithms import started_algorithm

        self.failure: Exception | None = None
        try:
            torch.set_num_threads(threads)
            self.algorithm = started_algorithm(
                scenario, rank=rank, seed=seed, algorithm_class=algorithm_class
            )
            self.runtime = self.algorithm.runtime_or_fail()
        except Exception as err:  # noqa: BLE001 - raised again by device_type
            self.failure = err

    def device_type(self) -> str:
        """``cpu`` or ``cuda``: where this actor trains (answered once it is built); raises
        what building it raised."""
        if self.failure is not None:
            raise self.failure
        return self.runtime.device.type

    def train(
        self,
        training_state: dict[str, Any],
        plans: Sequence[ClientPlan],
        starts: Sequence[State],
        private: dict[int, dict[str, Any]],
        record_grad_norms: bool,
    ) -> tuple[list[LocalResult], dict[int, dict[str, Any]]]:
        """Train one share: (results in plan order, private entries staged), on the CPU."""
        device = self.runtime.device
        self.algorithm.load_training_state(to_device(training_state, device))
        store = PrivateState()
        store.load_state_dict({str(c): entries for c, entries in private.items()}, device)
        results = self.algorithm.train(
            plans, to_device(starts, device), store, record_grad_norms=record_grad_norms
        )
        return to_device((results, store.staged()), "cpu")


def default_workers(*, room: int, n_scheduled: int) -> int:
    """``learner.ray_workers: null``: as many actors as the cluster has ``room`` for (one per
    GPU when training on CUDA, else as many as its nodes' CPUs hold at this process's torch
    threads each), at most ``n_scheduled`` (K: more would idle) and at least 1."""
    return max(1, min(room, n_scheduled))


class RayTraining:
    """Step 3 of every round on Ray actors (see the module docstring).

    Args:
        scenario: the run's scenario (its ``learner.ray_address`` and ``ray_workers``).
        algorithm: the run's algorithm in this process (started, bound to its runtime).
        rank: the model rank.
        seed: the run seed.
        device: this process's torch device (the actors must train on the same type).
    """

    def __init__(
        self,
        scenario: Any,
        algorithm: FederatedAlgorithm,
        *,
        rank: int,
        seed: int,
        device: torch.device,
    ) -> None:
        lc = scenario.learner
        self.ray = ray = connect(
            lc.ray_address, key="learner.executor", address_key="learner.ray_address"
        )
        self.algorithm = algorithm
        self.device = device
        threads = torch.get_num_threads()
        on_gpu = device.type == "cuda"
        cpus = node_cpus(ray)
        room = cluster_resources(ray)[1] if on_gpu else sum(c // threads for c in cpus)
        n = lc.ray_workers or default_workers(room=room, n_scheduled=scenario.n_scheduled)
        if n > room:
            raise ConfigError(_no_room(n, threads=threads, on_gpu=on_gpu, room=room, cpus=cpus))
        options = {"num_gpus": 1, "num_cpus": 1} if on_gpu else {"num_cpus": threads}
        actor = ray.remote(**options)(TrainingWorker)
        self.workers = [
            actor.remote(scenario, type(algorithm), rank, seed, threads) for _ in range(n)
        ]
        try:
            types = ray.get([w.device_type.remote() for w in self.workers], timeout=START_TIMEOUT_S)
        except ray.exceptions.GetTimeoutError:
            raise ConfigError(
                f"learner.ray_workers: the Ray cluster did not start {n} training actors in "
                f"{START_TIMEOUT_S:.0f} s (its resources are taken?); lower it or free the cluster"
            ) from None
        except ray.exceptions.RayTaskError as err:
            raise task_cause(err) from err
        if set(types) != {device.type}:
            raise ConfigError(
                f"learner.device: this process trains on {device.type} but the Ray actors on "
                f"{sorted(set(types))}; give every node the same kind of device"
            )

    def train(
        self,
        plans: Sequence[ClientPlan],
        starts: Sequence[State],
        private: PrivateState,
        *,
        record_grad_norms: bool = False,
    ) -> list[LocalResult]:
        """``algorithm.train(plans, starts, private)``, its clients shared among the actors;
        the private entries the actors staged are staged in ``private``."""
        ray = self.ray
        shares = [s for s in np.array_split(np.arange(len(plans)), len(self.workers)) if s.size]
        state = ray.put(to_device(self.algorithm.training_state(), "cpu"))
        refs = []
        for worker, share in zip(self.workers, shares, strict=False):
            share_plans = [plans[i] for i in share]
            committed = {p.client: private.get(p.client) for p in share_plans}
            refs.append(
                worker.train.remote(
                    state,
                    share_plans,
                    to_device([starts[i] for i in share], "cpu"),
                    to_device(committed, "cpu"),
                    record_grad_norms,
                )
            )
        try:
            outcomes = ray.get(refs)
        except ray.exceptions.RayTaskError as err:
            raise task_cause(err) from err
        except ray.exceptions.RayActorError as err:
            t = plans[0].round_index
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise SimulationError(
                f"round {t}: a Ray training actor died ({first}); {KEPT} Continue with "
                "wirelessfl run --resume"
            ) from None
        results: list[LocalResult] = []
        for share_results, staged in outcomes:
            results.extend(to_device(share_results, self.device))
            for client, entries in staged.items():
                private.stage(client, to_device(entries, self.device))
        return results


def _no_room(n: int, *, threads: int, on_gpu: bool, room: int, cpus: list[int]) -> str:
    """Why ``n`` actors cannot all be placed in a cluster with ``room`` for that many."""
    actors = f"learner.ray_workers: {n} actor{'s' * (n > 1)}"
    if on_gpu:
        return (
            f"{actors} training on CUDA need a GPU each; the Ray cluster has {room}; lower it, "
            "or set learner.device: cpu"
        )
    return (
        f"{actors} of {threads} CPU{'s' * (threads > 1)} each (this process's torch threads, "
        "which every actor uses so that results match) do not fit the Ray cluster's nodes of "
        f"{', '.join(map(str, cpus)) or 'no'} CPUs, which hold {room}; lower it, or start with "
        "fewer threads (OMP_NUM_THREADS)"
    )
