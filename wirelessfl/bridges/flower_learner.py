"""Flower clients in our wireless simulator: ``learner.kind: flower``.

The clients are written against Flower's API alone, in any of its styles
(:mod:`~wirelessfl.bridges.flower_clients`): a Message API ``ClientApp`` (``@app.train()``,
``@app.evaluate()``), a ``ClientApp(client_fn=...)``, ``client_fn(context) -> Client`` or the
legacy ``client_fn(client_id) -> NumPyClient``, named by ``learner.client_fn``
(``"module:attribute"``) or passed to :class:`FlowerClientLearner` directly. Each client has one
Flower ``Context`` for the run, as in Flower's simulation: ``node_config`` ``{"partition-id": k,
"num-partitions": N}``, ``run_config`` = ``learner.run_config``, a ``state`` that lasts the run
(and is checkpointed), and a ``node_id`` and ``run_id`` drawn from the run seed.

Per round, for the scheduled clients the simulator says train (our channel, controller and
virtual clock decide who that is and who arrives):

- **initial parameters**: ``learner.initial_parameters`` when set (Flower's server supplies
  them), else client 0's ``get_parameters``; neither is a one-line error naming the setting;
- **fit**: the global parameters with the config ``learner.train_config`` + ``{"server-round":
  t + 1, "rank": r_k, "ratio": O_k}``; the returned parameters are the upload, ``v x (its
  values)`` bits (``payload.bits_per_value``), sent dense; the download is the global list,
  counted the same way;
- **compute**: the fit's FLOPs are ``metrics["flops"]`` when the client reports them, else
  ``learner.client_flops``; the simulator turns them into virtual time with the scenario's
  device speeds (``devices.*``); wall time is never used, so a run repeats exactly;
- **aggregate**: FedAvg of the arrived clients' parameters weighted by their examples, with
  Flower's own arithmetic for the style (the Message API's ``aggregate_arrayrecords``, else
  ``flwr.server.strategy.aggregate.aggregate``); ``loss`` and ``algo.train_accuracy`` are the
  same weighted means of the metrics :mod:`~wirelessfl.bridges.flower_metrics` recognises
  (NaN, with one warning line per run, when no client reports a loss);
- **evaluate**: every client evaluates the global parameters (config
  ``learner.evaluate_config`` + ``{"server-round": t + 1}``, 0 for the initial parameters);
  ``test_loss`` and ``accuracy`` are the example-weighted means (one warning line per run when
  no client reports an accuracy: the column is NaN).

The model is one list of dense arrays with no LoRA rank, so the controller plans its payload as
the whole list (:class:`FlowerCost`, ``ModelGeometry.fixed_values``): only ``controller.name:
fixed`` applies (its shares: ``controller.bandwidth``, equal-delay or min-max); the
rank-choosing controllers need a payload that grows with the rank. ``algorithm.*``,
``strategy.*`` and ``compression.*`` are not used.
"""

from __future__ import annotations

import io
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from channels.payload import payload_bits
from wirelessfl.algorithms.cost import CostModel
from wirelessfl.algorithms.finite import KEPT
from wirelessfl.bridges import flower_metrics as fm
from wirelessfl.bridges.flower_clients import KEY, ClientDriver, FitReply, driver_for
from wirelessfl.bridges.flower_initial import KEY as INITIAL_KEY
from wirelessfl.bridges.flower_initial import NamedArrays, from_setting, named
from wirelessfl.bridges.targets import import_target
from wirelessfl.errors import ConfigError, SimulationError, UserError
from wirelessfl.learners.base import ClientReport, Learner, ModelGeometry, RoundPlan
from wirelessfl.results.files import atomic_write_bytes

if TYPE_CHECKING:
    from flwr.app import Context

    from wirelessfl.config.scenario import Scenario

__all__ = ["FlowerClientLearner", "load_client_fn"]

CHECKPOINT = "learner.npz"
#: The clients' ``context.state`` records (Flower's protobuf bytes per client).
STATES = "flower_states.npz"
INSTALL = "pip install -e '.[scale]' (flwr[simulation])"
#: The Flower ``node_config`` keys its simulation gives every node.
PARTITION_ID, NUM_PARTITIONS = "partition-id", "num-partitions"

_log = logging.getLogger(__name__)


def load_client_fn(target: str | None) -> Any:
    """The object named by ``learner.client_fn`` (``"module:attribute"``); one-line errors."""
    if target is None:
        raise ConfigError(
            f"{KEY}: learner.kind 'flower' needs 'module:attribute' naming a flwr ClientApp or "
            "a client_fn (or pass it to FlowerClientLearner), got null"
        )
    return import_target(target, KEY)


def _require_flwr() -> None:
    """A one-line error naming the extra when flwr is missing."""
    try:
        import flwr.app  # noqa: F401
    except ImportError:
        missing = True  # raised below, outside the handler (as above): the line names the extra
    else:
        missing = False
    if missing:
        raise UserError(f"learner.kind: 'flower' needs flwr: {INSTALL}")


def _contexts(scenario: Scenario) -> list[Context]:
    """One Flower ``Context`` per client, as Flower's simulation gives its nodes; node and run
    ids drawn from the run seed (Flower draws them at random)."""
    from flwr.app import Context, RecordDict

    n = scenario.n_clients
    rng = np.random.default_rng([scenario.seed, 0x464C])
    run_id, *node_ids = (int(i) for i in rng.integers(2, 2**63 - 1, size=n + 1))
    run_config = dict(scenario.learner.run_config)
    return [
        Context(
            run_id=run_id,
            node_id=node_ids[c],
            node_config={PARTITION_ID: c, NUM_PARTITIONS: n},
            state=RecordDict(),
            run_config=dict(run_config),
        )
        for c in range(n)
    ]


class FlowerCost(CostModel):
    """What Flower clients send: the whole parameter list, dense, both ways (the geometry's
    ``fixed_values``); no rank to choose, no LoRA factors for a compression stage."""

    COMPRESSES = None
    TAKES_RANK = False
    NO_STAGE_REASON = "a Flower client's parameter list is sent as the client returns it"


class FlowerClientLearner(Learner):
    """Flower clients as the learning side of a run (see the module docstring).

    Args:
        scenario: the run's scenario (``learner.*``, ``payload.bits_per_value``).
        client_fn: a flwr ``ClientApp``, ``client_fn(context) -> Client`` or
            ``client_fn(client_id) -> NumPyClient``.
    """

    def __init__(self, scenario: Scenario, client_fn: Any) -> None:
        if scenario.controller.name != "fixed":
            raise ConfigError(
                f"controller.name: learner.kind 'flower' sends each client's whole parameter "
                f"list dense, with no LoRA rank to choose, so only 'fixed' applies (its shares: "
                f"controller.bandwidth), got {scenario.controller.name!r}"
            )
        _require_flwr()
        self.scenario = scenario
        self.client_fn = client_fn
        where = scenario.learner.client_fn or getattr(client_fn, "__qualname__", "client_fn")
        self.driver: ClientDriver = driver_for(client_fn, repr(where))
        self.contexts = _contexts(scenario)
        self.names: list[str] = []  # the global parameters' names (an ArrayRecord's keys)
        self.parameters: list[np.ndarray] = []  # the global parameter list
        self._fits: dict[int, FitReply] = {}
        self._warned: set[str] = set()
        self._cost: CostModel | None = None

    @classmethod
    def from_scenario(cls, scenario: Scenario) -> FlowerClientLearner:
        """The learner of ``scenario``, its clients imported from ``learner.client_fn``."""
        return cls(scenario, load_client_fn(scenario.learner.client_fn))

    # ---- checks ----------------------------------------------------------------------------
    def _checked(self, names: list[str], arrays: list[np.ndarray], what: str) -> list[np.ndarray]:
        """``arrays`` checked to be named and shaped like the global parameters."""
        if not all(isinstance(a, np.ndarray) for a in arrays):
            raise ConfigError(f"{KEY}: {what} are not all numpy arrays")
        mine = dict(zip(names, [a.shape for a in arrays], strict=True))
        wanted = dict(zip(self.names, [a.shape for a in self.parameters], strict=True))
        if list(mine.items()) != list(wanted.items()):
            raise ConfigError(
                f"{KEY}: {what} are named and shaped {mine}; the global parameters {wanted}"
            )
        return arrays

    def _warn_once(self, message: str) -> None:
        """One warning line per run for each distinct ``message``."""
        if message not in self._warned:
            self._warned.add(message)
            _log.warning("wirelessfl: warning: %s", message)

    # ---- sizes -----------------------------------------------------------------------------
    def _initial(self) -> NamedArrays:
        """``learner.initial_parameters``, else client 0's ``get_parameters``."""
        setting = self.scenario.learner.initial_parameters
        if setting is not None:
            return from_setting(setting)
        own = self.driver.initial(self.contexts[0])
        if own is None:
            raise ConfigError(
                f"{INITIAL_KEY}: the clients ({self.driver.STYLE}) give no initial parameters "
                "(no get_parameters: in Flower the server supplies them); set it to "
                "'module:attribute' (a list of numpy arrays or an ArrayRecord) or a .npz file"
            )
        return own

    def geometry(self) -> ModelGeometry:
        """No LoRA layers: every value is sent dense (the initial parameters' count)."""
        if not self.parameters:
            self.names, self.parameters = self._initial()
        n = self.n_values
        return ModelGeometry(
            layer_shapes=(), base_params=n, batch_size=1, seq_len=1, fixed_values=n
        )

    @property
    def n_values(self) -> int:
        """Values of the global parameter list."""
        return int(sum(a.size for a in self.parameters))

    def expected_flops(self, rank: int) -> float:
        return float(self.scenario.learner.client_flops)

    def cost_model(self) -> CostModel:
        if self._cost is None:
            self._cost = FlowerCost(None, scenario=self.scenario, geometry=self.geometry())
        return self._cost

    def start(self, *, rank: int, n_clients: int, seed: int) -> None:
        """The global parameters start as :meth:`_initial` gives them."""
        self.geometry()

    def metric_names(self) -> dict[str, str]:
        return {
            "train_accuracy": "example-weighted mean of the arrived clients' fit accuracy "
            f"(metrics {fm.names(fm.TRAIN_ACCURACY)})"
        }

    # ---- a round ---------------------------------------------------------------------------
    def local_round(self, plan: RoundPlan) -> dict[int, ClientReport]:
        """``fit`` of every client that trains, from the global parameters."""
        t, v = plan.round_index, self.scenario.payload.bits_per_value
        bits_down = float(payload_bits(self.n_values, v))
        self._fits, reports = {}, {}
        model = (self.names, self.parameters)
        for c, rank, ratio in zip(plan.clients, plan.ranks, plan.ratios, strict=True):
            c, who = int(c), f"client {int(c)}"
            config = {
                **self.scenario.learner.train_config,
                "server-round": t + 1,
                "rank": int(rank),
                "ratio": float(ratio),
            }
            reply = self.driver.fit(self.contexts[c], model, config, who)
            params = self._checked(reply.names, reply.arrays, f"{who}'s fit parameters")
            bad = next((i for i, a in enumerate(params) if not np.isfinite(a).all()), None)
            if bad is not None:
                raise SimulationError(
                    f"round {t}: {who}'s fit returned non-finite parameters (array {bad}); "
                    f"{KEPT} Check the client's training"
                )
            self._fits[c] = reply
            n = int(sum(a.size for a in params))
            flops = fm.first_number(reply.metrics, (fm.FLOPS,), who)
            reports[c] = ClientReport(
                rank=int(rank),
                ratio=float(ratio),
                bits_up=float(payload_bits(n, v)),
                bits_down=bits_down,
                n_values=n,
                n_total=n,
                index_bits=0,
                flops=self.scenario.learner.client_flops if flops is None else flops,
            )
        return reports

    def aggregate(self, round_index: int, arrived: np.ndarray) -> dict[str, float]:
        """FedAvg of the arrived clients' parameters by their examples (Flower's arithmetic)."""
        fits = {int(c): self._fits[int(c)] for c in arrived}
        self._fits = {}
        if not fits:
            return {}
        weights = [float(f.num_examples) for f in fits.values()]
        if sum(weights) == 0:
            raise ConfigError(
                f"{KEY}: clients {sorted(fits)} arrived with num_examples = 0 from fit; FedAvg "
                "weighs their parameters by it"
            )
        self.parameters = self.driver.aggregate(list(fits.values()))
        metrics: dict[str, float] = {}
        for name, keys in (("loss", fm.TRAIN_LOSS), ("train_accuracy", fm.TRAIN_ACCURACY)):
            values = [fm.first_number(f.metrics, keys, f"client {c}") for c, f in fits.items()]
            mean = fm.weighted_mean(values, weights)
            if mean is not None:
                metrics[name] = mean
        if "loss" not in metrics:
            reported = sorted({k for f in fits.values() for k in f.metrics})
            self._warn_once(
                f"{KEY}: the clients' fit metrics {reported} hold no training loss "
                f"({fm.names(fm.TRAIN_LOSS)}); the loss column is NaN"
            )
        return metrics

    def evaluate(self, round_index: int) -> dict[str, float]:
        """Every client's evaluation of the global parameters, weighted by its examples."""
        config = {**self.scenario.learner.evaluate_config, "server-round": round_index + 1}
        model = (self.names, self.parameters)
        replies = [
            self.driver.evaluate(self.contexts[c], model, config, f"client {c}")
            for c in range(self.scenario.n_clients)
        ]
        weights = [float(r.num_examples) for r in replies]
        if sum(weights) == 0:
            raise ConfigError(f"{KEY}: every client's evaluate returned num_examples = 0")
        losses = [
            r.loss
            if r.loss is not None
            else fm.first_number(r.metrics, fm.EVAL_LOSS, f"client {c}")
            for c, r in enumerate(replies)
        ]
        accuracies = [
            fm.first_number(r.metrics, fm.EVAL_ACCURACY, f"client {c}")
            for c, r in enumerate(replies)
        ]
        reported = sorted({k for r in replies for k in r.metrics})
        evaluation = {}
        accuracy = fm.weighted_mean(accuracies, weights)
        if accuracy is None:
            self._warn_once(
                f"{KEY}: the clients' evaluate metrics {reported} hold no accuracy "
                f"({fm.names(fm.EVAL_ACCURACY)}); the accuracy column is NaN"
            )
        else:
            evaluation["accuracy"] = accuracy
        test_loss = fm.weighted_mean(losses, weights)
        if test_loss is None:
            self._warn_once(
                f"{KEY}: the clients' evaluate metrics {reported} hold no loss "
                f"({fm.names(fm.EVAL_LOSS)}); the test_loss column is NaN"
            )
        else:
            evaluation["test_loss"] = test_loss
        return evaluation

    # ---- persistence -----------------------------------------------------------------------
    def save_state(self, folder: Path) -> None:
        """The global parameters (``arr_0``, ``arr_1``... and their ``names``) and the
        clients' non-empty ``context.state``."""
        from flwr.common.serde import recorddict_to_proto

        buffer = io.BytesIO()
        np.savez(buffer, *self.parameters, names=np.array(self.names, dtype=str))
        atomic_write_bytes(folder / CHECKPOINT, buffer.getvalue())
        states = {
            f"client_{c}": np.frombuffer(
                recorddict_to_proto(context.state).SerializeToString(), dtype=np.uint8
            )
            for c, context in enumerate(self.contexts)
            if len(context.state)
        }
        buffer = io.BytesIO()
        np.savez(buffer, **states)
        atomic_write_bytes(folder / STATES, buffer.getvalue())

    def load_state(self, folder: Path) -> None:
        from flwr.app import RecordDict
        from flwr.common.serde import recorddict_from_proto
        from flwr.proto.recorddict_pb2 import RecordDict as ProtoRecordDict

        with np.load(folder / CHECKPOINT, allow_pickle=False) as saved:
            count = sum(1 for name in saved.files if name.startswith("arr_"))
            self.parameters = [saved[f"arr_{i}"] for i in range(count)]
            self.names = (
                [str(n) for n in saved["names"]]
                if "names" in saved.files
                else named(self.parameters)[0]
            )
        for context in self.contexts:
            context.state = RecordDict()
        if (folder / STATES).is_file():
            with np.load(folder / STATES, allow_pickle=False) as saved:
                for name in saved.files:
                    proto = ProtoRecordDict.FromString(saved[name].tobytes())
                    self.contexts[int(name.removeprefix("client_"))].state = recorddict_from_proto(
                        proto
                    )

    def describe(self) -> dict[str, object]:
        return {
            "learner": "flower",
            "client_fn": getattr(self.client_fn, "__qualname__", type(self.client_fn).__name__),
            "clients": self.driver.STYLE,
            "values": self.n_values,
        }
