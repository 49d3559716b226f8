"""Flower clients in our wireless simulator: ``learner.kind: flower``.

Clients are written against Flower's client API only (``flwr.client.NumPyClient``:
``get_parameters``, ``fit``, ``evaluate``) and built by a factory ``client_fn(client_id) ->
NumPyClient``, named by ``learner.client_fn`` (``"module:function"``) or passed to
:class:`FlowerClientLearner` directly. A fresh client is built for every call, as Flower's
simulation does, so a client keeps nothing between rounds that its factory does not rebuild.

Per round, for the scheduled clients the simulator says train (our channel, controller and
virtual clock decide who that is and who arrives):

- **fit**: ``fit(global parameters, {"server-round": t + 1, "rank": r_k, "ratio": O_k})``
  (the controller's rank and ratio, for a client that uses them); the parameter list it returns
  is its upload, ``v x (its values)`` bits (``payload.bits_per_value``), sent dense; the
  download is the global parameter list, counted the same way;
- **compute**: the fit's FLOPs are ``metrics["flops"]`` when the client reports them, else
  ``learner.client_flops``; the simulator turns them into virtual time with the scenario's
  device speeds (``devices.*``); wall time is never used, so a run repeats exactly;
- **aggregate**: FedAvg of the arrived clients' parameter lists weighted by their
  ``num_examples`` (Flower's own ``flwr.server.strategy.aggregate.aggregate``); the round's
  ``loss`` is the same weighted mean of the fits' ``metrics["loss"]`` (or ``"train_loss"``);
- **evaluate**: every client evaluates the global parameters; ``test_loss`` and ``accuracy``
  are the ``num_examples``-weighted means of their losses and ``metrics["accuracy"]`` (NaN when
  a client reports no accuracy). ``server-round`` is t + 1 after round t, and 0 for the initial
  parameters before round 0 (``eval_initial``), as Flower's server numbers its evaluation of
  the initial parameters.

The model is one list of dense arrays with no LoRA rank, so the controller plans its payload as
the whole list (:class:`FlowerCost`, ``ModelGeometry.fixed_values``): only ``controller.name:
fixed`` applies (its shares: ``controller.bandwidth``, equal-delay or min-max); the
rank-choosing controllers need a payload that grows with the rank. ``algorithm.*``,
``strategy.*`` and ``compression.*`` are not used.
"""

from __future__ import annotations

import importlib
import io
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from channels.payload import payload_bits
from wirelessfl.algorithms.cost import CostModel
from wirelessfl.algorithms.finite import KEPT
from wirelessfl.errors import ConfigError, SimulationError, UserError
from wirelessfl.learners.base import ClientReport, Learner, ModelGeometry, RoundPlan
from wirelessfl.results.files import atomic_write_bytes

if TYPE_CHECKING:
    from wirelessfl.config.scenario import Scenario

__all__ = ["FlowerClientLearner", "load_client_fn"]

CHECKPOINT = "learner.npz"
#: fit metrics read as the client's training loss, first found wins.
LOSS_KEYS = ("loss", "train_loss")
KEY = "learner.client_fn"
INSTALL = "pip install -e '.[scale]' (flwr[simulation])"

#: ``client_fn(client_id) -> flwr.client.NumPyClient``.
ClientFactory = Callable[[int], Any]


def load_client_fn(target: str | None) -> ClientFactory:
    """The factory named by ``learner.client_fn`` (``"module:function"``); one-line errors."""
    if target is None:
        raise ConfigError(
            f"{KEY}: learner.kind 'flower' needs 'module:function' naming client_fn(client_id) "
            "-> flwr NumPyClient (or pass client_fn to FlowerClientLearner), got null"
        )
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise ConfigError(f"{KEY}: expected 'module:function', got {target!r}")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as err:
        problem = str(err)  # raised below, outside the handler: the command line must not
        # read this error as a missing library (it walks the errors it was raised while handling)
    else:
        problem = None
    if problem is not None:
        raise ConfigError(f"{KEY}: cannot import module {module_name!r} ({problem})")
    for part in attribute.split("."):
        if not hasattr(obj, part):
            raise ConfigError(f"{KEY}: {target!r} does not exist (no attribute {part!r})")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ConfigError(f"{KEY}: {target!r} is a {type(obj).__name__}, not a function")
    return obj


def _numpy_client_class() -> type:
    """``flwr.client.NumPyClient``; a one-line error naming the extra when flwr is missing."""
    try:
        from flwr.client import NumPyClient
    except ImportError:
        NumPyClient = None  # raised below, outside the handler (as above): the line names the extra
    if NumPyClient is None:
        raise UserError(f"learner.kind: 'flower' needs flwr: {INSTALL}")
    return NumPyClient


class FlowerCost(CostModel):
    """What Flower clients send: the whole parameter list, dense, both ways (the geometry's
    ``fixed_values``); no rank to choose, no LoRA factors for a compression stage."""

    COMPRESSES = None
    TAKES_RANK = False
    NO_STAGE_REASON = "a Flower client's parameter list is sent as the client returns it"


class FlowerClientLearner(Learner):
    """Flower ``NumPyClient``s as the learning side of a run (see the module docstring).

    Args:
        scenario: the run's scenario (``learner.client_flops``, ``payload.bits_per_value``).
        client_fn: ``client_fn(client_id) -> NumPyClient`` for ids 0..N-1.
    """

    def __init__(self, scenario: Scenario, client_fn: ClientFactory) -> None:
        if scenario.controller.name != "fixed":
            raise ConfigError(
                f"controller.name: learner.kind 'flower' sends each client's whole parameter "
                f"list dense, with no LoRA rank to choose, so only 'fixed' applies (its shares: "
                f"controller.bandwidth), got {scenario.controller.name!r}"
            )
        self.scenario = scenario
        self.client_fn = client_fn
        self._numpy_client = _numpy_client_class()
        self.parameters: list[np.ndarray] = []  # the global parameter list
        self._fits: dict[int, tuple[list[np.ndarray], int, float]] = {}  # id -> (params, n, loss)
        self._cost: CostModel | None = None

    @classmethod
    def from_scenario(cls, scenario: Scenario) -> FlowerClientLearner:
        """The learner of ``scenario``, its factory imported from ``learner.client_fn``."""
        return cls(scenario, load_client_fn(scenario.learner.client_fn))

    # ---- clients ---------------------------------------------------------------------------
    def _client(self, client_id: int) -> Any:
        """A fresh NumPyClient for ``client_id`` (a one-line error for any other type)."""
        client = self.client_fn(client_id)
        if not isinstance(client, self._numpy_client):
            raise ConfigError(
                f"{KEY}: client_fn({client_id}) returned {type(client).__name__}; expected a "
                "flwr.client.NumPyClient"
            )
        return client

    def _array_list(self, value: Any, what: str) -> list[np.ndarray]:
        """``value`` checked to be a list of arrays shaped like the global parameters."""
        if not isinstance(value, list) or not all(isinstance(a, np.ndarray) for a in value):
            raise ConfigError(f"{KEY}: {what} is not a list of numpy arrays")
        shapes = [a.shape for a in value]
        if self.parameters and shapes != [a.shape for a in self.parameters]:
            raise ConfigError(
                f"{KEY}: {what} has shapes {shapes}; the global parameters have "
                f"{[a.shape for a in self.parameters]}"
            )
        return value

    # ---- sizes -----------------------------------------------------------------------------
    def geometry(self) -> ModelGeometry:
        """No LoRA layers: every value is sent dense (client 0's initial parameter count)."""
        if not self.parameters:
            initial = self._client(0).get_parameters(config={})
            self.parameters = self._array_list(initial, "client_fn(0).get_parameters")
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
        """The global parameters start as client 0's ``get_parameters`` (Flower's default)."""
        self.geometry()

    # ---- a round ---------------------------------------------------------------------------
    def local_round(self, plan: RoundPlan) -> dict[int, ClientReport]:
        """``fit`` of every client that trains, from the global parameters."""
        t, v = plan.round_index, self.scenario.payload.bits_per_value
        bits_down = float(payload_bits(self.n_values, v))
        self._fits, reports = {}, {}
        for c, rank, ratio in zip(plan.clients, plan.ranks, plan.ratios, strict=True):
            c = int(c)
            config = {"server-round": t + 1, "rank": int(rank), "ratio": float(ratio)}
            out = self._client(c).fit([a.copy() for a in self.parameters], config)
            if not (isinstance(out, tuple) and len(out) == 3):
                raise ConfigError(
                    f"{KEY}: client {c}'s fit returned {type(out).__name__}; expected "
                    "(parameters, num_examples, metrics)"
                )
            params = self._array_list(out[0], f"client {c}'s fit parameters")
            n_examples, metrics = int(out[1]), dict(out[2])
            bad = next((i for i, a in enumerate(params) if not np.isfinite(a).all()), None)
            if bad is not None:
                raise SimulationError(
                    f"round {t}: client {c}'s fit returned non-finite parameters (array {bad}); "
                    f"{KEPT} Check the client's training"
                )
            self._fits[c] = (params, n_examples, self._fit_loss(c, metrics))
            n = int(sum(a.size for a in params))
            reports[c] = ClientReport(
                rank=int(rank),
                ratio=float(ratio),
                bits_up=float(payload_bits(n, v)),
                bits_down=bits_down,
                n_values=n,
                n_total=n,
                index_bits=0,
                flops=float(metrics.get("flops", self.scenario.learner.client_flops)),
            )
        return reports

    @staticmethod
    def _fit_loss(client: int, metrics: dict[str, Any]) -> float:
        for key in LOSS_KEYS:
            if key in metrics:
                return float(metrics[key])
        raise ConfigError(
            f"{KEY}: client {client}'s fit metrics {sorted(metrics)} hold no training loss; "
            f"report it as metrics[{LOSS_KEYS[0]!r}] (or {LOSS_KEYS[1]!r})"
        )

    def aggregate(self, round_index: int, arrived: np.ndarray) -> dict[str, float]:
        """FedAvg of the arrived clients' parameters by ``num_examples`` (Flower's arithmetic)."""
        from flwr.server.strategy.aggregate import aggregate

        fits = {int(c): self._fits[int(c)] for c in arrived}
        self._fits = {}
        if not fits:
            return {"loss": math.nan}
        n = np.array([n for _, n, _ in fits.values()], dtype=float)
        if n.sum() == 0:
            raise ConfigError(
                f"{KEY}: clients {sorted(fits)} arrived with num_examples = 0 from fit; FedAvg "
                "weighs their parameters by it"
            )
        self.parameters = list(aggregate([(params, n) for params, n, _ in fits.values()]))
        return {"loss": float(np.dot(n, [loss for _, _, loss in fits.values()]) / n.sum())}

    def evaluate(self, round_index: int) -> dict[str, float]:
        """Every client's ``evaluate`` of the global parameters, weighted by its examples."""
        config = {"server-round": round_index + 1}
        losses, accuracies, counts = [], [], []
        for c in range(self.scenario.n_clients):
            out = self._client(c).evaluate([a.copy() for a in self.parameters], config)
            if not (isinstance(out, tuple) and len(out) == 3):
                raise ConfigError(
                    f"{KEY}: client {c}'s evaluate returned {type(out).__name__}; expected "
                    "(loss, num_examples, metrics)"
                )
            loss, n_examples, metrics = float(out[0]), int(out[1]), dict(out[2])
            losses.append(loss)
            accuracies.append(float(metrics.get("accuracy", math.nan)))
            counts.append(n_examples)
        n = np.asarray(counts, dtype=float)
        if n.sum() == 0:
            raise ConfigError(f"{KEY}: every client's evaluate returned num_examples = 0")
        return {
            "accuracy": float(np.dot(n, accuracies) / n.sum()),
            "test_loss": float(np.dot(n, losses) / n.sum()),
        }

    # ---- persistence -----------------------------------------------------------------------
    def save_state(self, folder: Path) -> None:
        buffer = io.BytesIO()
        np.savez(buffer, *self.parameters)
        atomic_write_bytes(folder / CHECKPOINT, buffer.getvalue())

    def load_state(self, folder: Path) -> None:
        with np.load(folder / CHECKPOINT) as saved:
            self.parameters = [saved[f"arr_{i}"] for i in range(len(saved.files))]

    def describe(self) -> dict[str, object]:
        return {
            "learner": "flower",
            "client_fn": getattr(self.client_fn, "__qualname__", repr(self.client_fn)),
            "values": self.n_values,
        }
