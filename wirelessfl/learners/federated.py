"""Real federated LoRA training: the scenario's algorithm on the training runtime.

``learner.kind = lora``. The runtime (:class:`~wirelessfl.training.runtime.Runtime`) holds the
model, data, partition and trainers; the algorithm (``algorithm.name``) says what is planned,
broadcast, trained, sent and aggregated (the steps of
:class:`~wirelessfl.algorithms.base.FederatedAlgorithm`). This class runs those steps in order,
keeps the global state and every client's private state, counts each message's bits once
(:meth:`~wirelessfl.algorithms.message.Message.bits`), stops a round with a clear message on
non-finite values, and checkpoints everything ``--resume`` needs.

Observers (the ``--calibrate`` pilot) get each round's local results and aggregated metrics
through :class:`RoundObserver`. With ``learner.executor: ray`` step 3 runs on Ray actors
(:mod:`wirelessfl.learners.ray_training`), with the same results; the rest stays here.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import torch

from wirelessfl.algorithms import make_algorithm
from wirelessfl.algorithms.compression_stage import STAGE_METRICS, stage_metrics
from wirelessfl.algorithms.cost import CostModel
from wirelessfl.algorithms.finite import KEPT, non_finite
from wirelessfl.algorithms.message import Message
from wirelessfl.algorithms.quantization import QUANT_METRICS
from wirelessfl.algorithms.quantize_stage import quant_metrics
from wirelessfl.errors import SimulationError, UserError
from wirelessfl.learners.base import (
    AirRound,
    ClientPlan,
    ClientReport,
    Learner,
    ModelGeometry,
    RoundPlan,
    WeightedUpdate,
)
from wirelessfl.plans import client_plan_from_state, client_plan_state
from wirelessfl.privacy.accounting import default_delta
from wirelessfl.privacy.dp_sgd import SampleLedger
from wirelessfl.privacy.stage import NORM
from wirelessfl.results.columns import PRIVACY_COLUMNS
from wirelessfl.training.local import LocalResult
from wirelessfl.training.lora_state import PEFT_PREFIX
from wirelessfl.training.private_state import PrivateState
from wirelessfl.training.runtime import Runtime
from wirelessfl.training.transfer import to_device

if TYPE_CHECKING:
    from wirelessfl.learners.ray_training import RayTraining

__all__ = ["FederatedLearner", "RoundObserver"]

CHECKPOINT = "learner.pt"
#: the key of ``learner.pt`` that holds the updates in flight (event-driven modes)
IN_FLIGHT = "in_flight"
#: the key of ``learner.pt`` that holds the DP stage's state (``privacy.mode``)
PRIVACY = "privacy"
#: the key of ``learner.pt`` that holds the DP-SGD steps per device (``privacy.dp_sgd``)
SAMPLE_LEDGER = "dp_sgd"
#: the DP metrics of client-level DP and of DP-SGD (``wirelessfl.results.columns``)
CLIENT_LEVEL = ("dp_epsilon", "dp_clip_norm", "dp_clipped_fraction")
SAMPLE_LEVEL = "dp_sgd_epsilon"
#: What to try when training diverges.
HINT = "Lower learner.lr (or use learner.optimizer = adam) and run again"
#: peft's prefix of the wrapped model's parameter names (left out of messages).


def _clients(ids: list[int]) -> str:
    """``clients [3, 5]``, or ``12 clients`` when there are many."""
    return f"clients {ids}" if len(ids) <= 8 else f"{len(ids)} clients"


class RoundObserver(Protocol):
    """Receives what a round produced (e.g. the calibration pilot's recorder)."""

    record_grad_norms: bool

    def local(self, results: list[LocalResult]) -> None:
        """After local training of the round's clients."""

    def aggregated(self, learner: FederatedLearner, metrics: dict[str, float]) -> None:
        """After the server updated the global state."""


class FederatedLearner(Learner):
    """Federated LoRA fine-tuning of a registry model on a registry data set."""

    #: the over-the-air sum is applied to the real updates (:meth:`receive_over_the_air`)
    UPLINKS = ("fdma", "aircomp")

    def __init__(self, scenario: Any) -> None:
        self.scenario = scenario
        self.runtime = Runtime(scenario)
        self.algorithm = make_algorithm(scenario)
        self.algorithm.bind(self.runtime)  # its cost model, on the runtime's model sizes
        self.private = PrivateState()
        self.observers: list[RoundObserver] = []
        self.global_state: dict[str, torch.Tensor] = {}
        self._pending: dict[int, Message] = {}
        self._losses: dict[int, float] = {}
        self._round_plan: RoundPlan | None = None
        self._plans: dict[int, ClientPlan] = {}
        #: the event-driven modes with mixing: the global state each pending client downloaded
        self._starts: dict[int, dict[str, torch.Tensor]] = {}
        self.remote: RayTraining | None = None  # learner.executor: ray
        #: per-device DP-SGD steps (``privacy.dp_sgd``), or None
        self.sample_ledger: SampleLedger | None = None
        if self.runtime.dp_sgd is not None:
            self.sample_ledger = SampleLedger(
                self.runtime.partition.sizes,
                scenario.learner.batch_size,
                self.runtime.dp_sgd,
                delta=default_delta(scenario),
                accountant=scenario.privacy.accountant,
            )
        self._air: AirRound | None = None  # channel.uplink: aircomp, the next aggregation's

    # ---- sizes -----------------------------------------------------------------------------
    def geometry(self) -> ModelGeometry:
        return self.runtime.geometry()

    def cost_model(self) -> CostModel:
        return self.algorithm.cost_or_fail()

    def expected_flops(self, rank: int) -> float:
        return self.algorithm.expected_flops()

    def metric_names(self) -> dict[str, str]:
        """The compression stage's metrics (when the message can take one), the quantiser's
        (when the run quantises), the algorithm's, then the DP stage's (``privacy.mode``)."""
        stage = STAGE_METRICS if self.cost_model().COMPRESSES is not None else {}
        quant = QUANT_METRICS if self.cost_model().quantizes else {}
        names = [*(CLIENT_LEVEL if self.algorithm.privacy is not None else ())]
        names += [SAMPLE_LEVEL] if self.sample_ledger is not None else []
        privacy = {n: PRIVACY_COLUMNS[n] for n in names}
        return {**stage, **quant, **self.algorithm.METRICS, **privacy}

    # ---- setup -----------------------------------------------------------------------------
    def start(self, *, rank: int, n_clients: int, seed: int) -> None:
        self.algorithm.start(rank=rank, seed=seed)
        self.private.limit_values = self.runtime.private_limit
        self.global_state = self.algorithm.initial_state()
        if self.scenario.learner.executor == "ray":
            from wirelessfl.learners.ray_training import RayTraining

            self.remote = RayTraining(
                self.scenario, self.algorithm, rank=rank, seed=seed, device=self.runtime.device
            )

    # ---- a round ---------------------------------------------------------------------------
    def local_round(self, plan: RoundPlan) -> dict[int, ClientReport]:
        """Steps 1-4 of the algorithm for every client that trains (wall time only)."""
        self._pending, self._losses, self._plans = {}, {}, {}
        return self._train_clients(plan)

    def _train_clients(self, plan: RoundPlan) -> dict[int, ClientReport]:
        """Steps 1-4 for ``plan.clients``, their messages added to the pending ones."""
        t = plan.round_index
        self._round_plan = plan
        plans = self.algorithm.plan(plan)  # 1. server: per-client plans
        downloads = self._broadcast(plans)  # 2.
        record = any(o.record_grad_norms for o in self.observers)
        train = self.remote.train if self.remote is not None else self.algorithm.train
        results = train(  # 3. client: local training (here, or on Ray actors)
            plans, [d.shared for d in downloads], self.private, record_grad_norms=record
        )
        reports = {}
        try:
            for p, result in zip(plans, results, strict=True):
                self._check_update(p, result)  # before the algorithm compresses it
            for observer in self.observers:
                observer.local(results)
            for p, download, result in zip(plans, downloads, results, strict=True):
                message = self.algorithm.sent_message(  # 4. client -> server, compressed
                    p, download, result, self.private.get(p.client)
                )
                bad = non_finite(message.shared, label=self._label)
                if bad is not None:
                    raise SimulationError(
                        f"round {t}: client {p.client} has a non-finite message ({bad}) from "
                        f"{type(self.algorithm).__name__}.client_message, though its local "
                        f"update is finite; {KEPT} Check the algorithm's client_message"
                    )
                self.private.stage(p.client, message.private)
                reports[p.client] = self._received(p, download, message, result.mean_loss)
        except BaseException:
            self.private.discard()
            raise
        self.private.commit()  # private state changes only once every client succeeded
        for p in plans if self.sample_ledger is not None else ():
            self.sample_ledger.trained(p.client, self.runtime.steps_for(p.client))
        return reports

    def _broadcast(self, plans: list[ClientPlan]) -> list[Message]:
        """Step 2 for every plan, the cost model told of each download as it goes."""
        downloads = []
        for p in plans:
            downloads.append(self.algorithm.broadcast(p, self.global_state))
            self.cost_model().downloaded(p)
        return downloads

    def _received(
        self, plan: ClientPlan, download: Message, message: Message, loss: float
    ) -> ClientReport:
        """Keep ``plan.client``'s message and loss for aggregation; its report (sizes, FLOPs)."""
        self._pending[plan.client] = message
        self._losses[plan.client] = loss
        self._plans[plan.client] = plan
        v = self.scenario.payload.bits_per_value
        up = message.payload(bits_per_value=v, count_index=self.scenario.payload.index_overhead)
        return ClientReport(
            rank=plan.rank,
            ratio=plan.ratio,
            bits_up=up.bits,
            bits_down=download.bits(bits_per_value=v, count_index=False),
            n_values=up.n_values,
            n_total=up.n_total,
            index_bits=up.index_bits,
            flops=self.algorithm.client_flops(plan),
        )

    def aggregate(self, round_index: int, arrived: np.ndarray) -> dict[str, float]:
        """Step 5 with the arrived clients' messages, then step 6 (the metrics)."""
        assert self._round_plan is not None
        ids = [int(c) for c in arrived]
        messages = {c: self._pending[c] for c in ids}
        plans = {c: self._plans[c] for c in ids}
        if messages and self._air is not None:  # the received noisy sum, de-scaled
            from wirelessfl.algorithms.over_the_air import over_the_air_sum

            weights = self.algorithm.client_weights(ids, messages, self._round_plan)
            noise = self.runtime.generator("aircomp", 0, round_index)
            self.global_state = over_the_air_sum(
                self.algorithm, self.global_state, messages, weights, self._air, noise
            )
        elif messages:
            self.global_state = self.algorithm.aggregate(
                self.global_state, messages, plans, self._round_plan
            )
        if messages:
            weights = self.algorithm.client_weights(list(messages), messages, self._round_plan)
            self._release_privately(round_index, messages, weights)
        self._air = None
        losses = self._losses
        self._pending, self._losses, self._plans = {}, {}, {}
        return self._after_aggregation(round_index, ids, messages, plans, losses, self._round_plan)

    def _release_privately(
        self, index: int, messages: dict[int, Message], weights: Sequence[float]
    ) -> None:
        """Central DP: the server's noise on every shared tensor of the new global state, at
        the aggregation's weights ``weights`` of ``messages`` (:mod:`wirelessfl.privacy.stage`),
        drawn from the stream (seed, ``dp_central``, 0, aggregation ``index``)."""
        stage = self.algorithm.privacy
        if stage is None:
            return
        names = sorted({n for m in messages.values() for n in m.shared})
        generator = self.runtime.generator("dp_central", 0, index)
        stage.release(self.global_state, names, weights, generator)

    def stop_reason(self) -> str | None:
        """``privacy.target_epsilon`` reached: by client-level DP's next release where it is
        on, else by DP-SGD's next round (every device training once more, the worst case)."""
        stage, ledger = self.algorithm.privacy, self.sample_ledger
        target = self.scenario.privacy.target_epsilon
        if stage is not None:
            return stage.stop_reason()
        if ledger is None or target is None:
            return None
        n = len(self.runtime.partition.sizes)
        after = ledger.epsilon(np.array([self.runtime.steps_for(c) for c in range(n)]))
        if after <= target:
            return None
        return (
            f"privacy.target_epsilon: the next round would take DP-SGD's epsilon to "
            f"{after:.4g} > {target:g} at delta {ledger.delta:.3g}"
        )

    def receive_over_the_air(self, air: AirRound) -> None:
        """The next :meth:`aggregate` sums the messages as received over the air
        (:mod:`wirelessfl.algorithms.over_the_air`)."""
        self._air = air

    # ---- the event-driven modes ------------------------------------------------------------
    def event_driven_refusal(self) -> str | None:
        if self.cost_model().SINGLE_UPDATES:
            return None
        return (
            f"algorithm {self.scenario.algorithm.name!r} does not aggregate single weighted updates"
        )

    # ---- client-edge-cloud hierarchies ------------------------------------------------------
    def hierarchy_refusal(self) -> str | None:
        name = self.scenario.algorithm.name
        if not self.cost_model().SINGLE_UPDATES:
            return (
                f"algorithm {name!r} does not aggregate by a weighted mean of updates, so "
                "averaging its edge models at a cloud is not its aggregation"
            )
        if self.algorithm.state_dict():
            return f"algorithm {name!r} keeps server state besides its global model"
        if self.remote is not None:
            return "learner.executor: ray trains on workers that hold one global model"
        return None

    def model_state(self) -> dict[str, torch.Tensor]:
        """The global state's tensors (copies)."""
        return {k: v.detach().clone() for k, v in self.global_state.items()}

    def load_model_state(self, state: object) -> None:
        assert isinstance(state, dict)
        device = self.runtime.device
        self.global_state = {k: v.detach().clone().to(device) for k, v in state.items()}

    def average_model_states(
        self, states: Sequence[object], weights: np.ndarray
    ) -> dict[str, torch.Tensor]:
        """Σ_c w_c θ_c / Σ_c w_c, tensor by tensor (every edge's state has the same keys and
        shapes: one rank for the network)."""
        share = np.asarray(weights, dtype=float) / float(np.sum(weights))
        first = states[0]
        assert isinstance(first, dict)
        return {
            key: sum(float(w) * s[key] for w, s in zip(share, states, strict=True))  # type: ignore[index]
            for key in first
        }

    def hand_over(self, client: int, to: Learner) -> None:
        """The client's private state (error-feedback memory, its own tensors) goes along."""
        assert isinstance(to, FederatedLearner)
        to.private.put(client, self.private.take(client))

    def data_weight(self, clients: np.ndarray) -> float:
        """The clients' training samples."""
        return float(self.runtime.partition.sizes[np.asarray(clients, dtype=int)].sum())

    def dispatch(self, plan: RoundPlan, *, keep_start: bool) -> dict[int, ClientReport]:
        if keep_start:
            start = {n: v.detach().clone() for n, v in self.global_state.items()}
            for c in plan.clients.tolist():
                self._starts[int(c)] = start
        reports = self._train_clients(plan)
        if self.algorithm.privacy is not None:
            self.algorithm.privacy.dispatched(list(reports))
        return reports

    def discard_updates(self, clients: Sequence[int]) -> None:
        for c in clients:
            for pending in (self._pending, self._losses, self._plans, self._starts):
                pending.pop(c, None)

    def add_updates(self, index: int, updates: Sequence[WeightedUpdate]) -> dict[str, float]:
        """The algorithm's :meth:`~wirelessfl.algorithms.base.FederatedAlgorithm.add_updates`
        with the pending messages of ``updates`` (taken out of the pending ones)."""
        ids = [u.client for u in updates]
        messages = {c: self._pending.pop(c) for c in ids}
        losses = {c: self._losses.pop(c) for c in ids}
        plans = {c: self._plans.pop(c) for c in ids}
        starts = {c: self._starts.pop(c) for c in ids if c in self._starts}
        round_plan = RoundPlan(
            index,
            np.array(sorted(ids), dtype=int),
            np.array([plans[c].rank for c in sorted(ids)], dtype=int),
            np.array([plans[c].ratio for c in sorted(ids)], dtype=float),
            math.nan,
            len(ids),
        )
        self.global_state = self.algorithm.add_updates(
            self.global_state,
            messages,
            [u.weight for u in updates],
            [u.mix for u in updates],
            starts,
        )
        if messages:  # the staleness weights bound the sensitivity (privacy/stage.py)
            self._release_privately(index, messages, [u.weight for u in updates])
        return self._after_aggregation(index, ids, messages, plans, losses, round_plan)

    def _after_aggregation(
        self,
        index: int,
        ids: list[int],
        messages: dict[int, Message],
        plans: dict[int, ClientPlan],
        losses: dict[int, float],
        round_plan: RoundPlan,
    ) -> dict[str, float]:
        """The global state's check, the cost model told, the metrics and the data-weighted
        loss of the clients ``ids`` just aggregated."""
        bad = non_finite(self.global_state, label=self._label)
        if bad is not None:
            raise SimulationError(
                f"round {index}: the global state holds non-finite values ({bad}) "
                f"after {type(self.algorithm).__name__}.aggregate of {_clients(ids)}, though "
                f"their messages are finite; {KEPT} Check the algorithm's aggregation "
                "and its weights"
            )
        self.cost_model().aggregated(index, plans)
        metrics = self.algorithm.metrics(self.global_state, messages, round_plan)
        if self.cost_model().COMPRESSES is not None:
            metrics = {**stage_metrics(messages), **metrics}
        if self.cost_model().quantizes:
            metrics = {**quant_metrics(messages), **metrics}
        privacy = self.algorithm.privacy
        if privacy is not None:
            norms = {c: float(messages[c].diagnostics.get(NORM, math.nan)) for c in ids}
            privacy.after_round(norms, self.runtime.generator("dp_clip_count", 0, index))
            metrics = {**metrics, **privacy.metrics()}
        if self.sample_ledger is not None:
            metrics[SAMPLE_LEVEL] = self.sample_ledger.epsilon()
        p = np.array([self.runtime.data_fractions[c] for c in ids])
        loss = float(np.dot(p, [losses[c] for c in ids]) / p.sum()) if ids else math.nan
        metrics = {"loss": loss, **metrics}
        for observer in self.observers:
            observer.aggregated(self, metrics)
        return metrics

    # ---- numerical faults ------------------------------------------------------------------
    def _check_update(self, plan: ClientPlan, result: LocalResult) -> None:
        """A one-line ``SimulationError`` if the client's loss or trained state is not finite."""
        t, c = plan.round_index, plan.client
        if not math.isfinite(result.mean_loss):
            raise SimulationError(
                f"round {t}: client {c} has a non-finite training loss ({result.mean_loss}); "
                f"{KEPT} {HINT}"
            )
        bad = non_finite(result.local, label=self._label)
        if bad is not None:
            raise SimulationError(
                f"round {t}: client {c} has a non-finite local update ({bad}) after a finite "
                f"training loss ({result.mean_loss:.4g}); {KEPT} {HINT}"
            )

    def _label(self, name: str) -> str:
        """``lora_A of layer <module>`` for a LoRA factor, else the parameter name (no prefix)."""
        state = getattr(self.runtime, "state", None)  # absent when the algorithm owns the model
        for layer in state.layers if state is not None else ():
            for tag, param in (("lora_A", layer.a_param), ("lora_B", layer.b_param)):
                if name == param:
                    return f"{tag} of layer {layer.name.removeprefix(PEFT_PREFIX)}"
        return name.removeprefix(PEFT_PREFIX)

    def evaluate(self, round_index: int) -> dict[str, float]:
        return self.algorithm.evaluate(self.global_state, self.private)

    # ---- persistence -----------------------------------------------------------------------
    def save_state(self, folder: Path) -> None:
        payload = {
            "global": {k: v.detach().cpu() for k, v in self.global_state.items()},
            "private": self.private.state_dict(),
            "algorithm": self.algorithm.state_dict(),
        }
        if self.algorithm.privacy is not None:  # the key only with DP on: old states unchanged
            payload[PRIVACY] = self.algorithm.privacy.state_dict()
        if self.sample_ledger is not None:
            payload[SAMPLE_LEDGER] = self.sample_ledger.state_dict()
        if self._pending:  # the key only with updates in flight: other states unchanged
            payload[IN_FLIGHT] = to_device(self._in_flight_state(), "cpu")
        tmp = folder / f"{CHECKPOINT}.tmp"
        torch.save(payload, tmp)
        os.replace(tmp, folder / CHECKPOINT)

    def load_state(self, folder: Path) -> None:
        device = self.runtime.device
        payload = torch.load(folder / CHECKPOINT, map_location=device, weights_only=True)
        missing = {"global", "private", "algorithm"} - set(payload)
        if missing:
            raise UserError(
                f"--resume: {folder / CHECKPOINT} lacks {sorted(missing)} (written by an older "
                "version of wirelessfl); start the run again"
            )
        self.global_state = {k: v.to(device) for k, v in payload["global"].items()}
        self.private.load_state_dict(payload["private"], device)
        self.algorithm.load_state_dict(payload["algorithm"])
        if self.algorithm.privacy is not None:
            self.algorithm.privacy.load_state_dict(payload[PRIVACY])
        if self.sample_ledger is not None:
            self.sample_ledger.load_state_dict(payload[SAMPLE_LEDGER])
        self._load_in_flight(to_device(payload.get(IN_FLIGHT, {}), device))

    def _in_flight_state(self) -> dict[str, Any]:
        """The updates dispatched and not yet added (event-driven modes), keyed by client id
        as a string: messages (their private part too: the compression stage's metrics read
        it when they are added), training losses, plans and, for FedAsync's mixing, the
        global states they started from."""
        return {
            "messages": {str(c): m.state_dict() for c, m in self._pending.items()},
            "losses": {str(c): float(loss) for c, loss in self._losses.items()},
            "plans": {str(c): client_plan_state(p) for c, p in self._plans.items()},
            "starts": {str(c): start for c, start in self._starts.items()},
        }

    def _load_in_flight(self, state: dict[str, Any]) -> None:
        """Restore :meth:`_in_flight_state` (nothing in flight when ``state`` is empty)."""
        self._pending = {
            int(c): Message.from_state_dict(m) for c, m in state.get("messages", {}).items()
        }
        self._losses = {int(c): loss for c, loss in state.get("losses", {}).items()}
        self._plans = {int(c): client_plan_from_state(p) for c, p in state.get("plans", {}).items()}
        self._starts = {int(c): start for c, start in state.get("starts", {}).items()}

    def describe(self) -> dict[str, object]:
        return {
            "learner": "lora",
            "algorithm": self.scenario.algorithm.name,
            **self.runtime.describe(),
        }
