"""The run's Flower clients, in each style Flower writes them, behind one driver.

``learner.client_fn`` names (``'module:attribute'``), or Python passes, one of these; the
object's type decides how it is driven (:func:`driver_for`):

- a ``flwr.clientapp.ClientApp`` with Message API handlers (``@app.train()``,
  ``@app.evaluate()``): :class:`MessageAppDriver` sends it the messages Flower's ``FedAvg``
  sends (content ``"arrays"``: an ``ArrayRecord``, ``"config"``: a ``ConfigRecord``) and reads
  its replies (one ``ArrayRecord`` and one ``MetricRecord`` with ``"num-examples"``);
- a ``ClientApp(client_fn=...)``: :class:`LegacyAppDriver` sends it Flower's records of
  ``FitIns`` / ``EvaluateIns`` (what Flower's legacy strategies send);
- a function of one argument: :class:`FactoryDriver` calls it for a fresh client each time and
  calls the client's ``get_parameters`` / ``fit`` / ``evaluate`` (a ``NumPyClient`` through
  ``to_client()``, as Flower does). Its argument is the client's ``Context`` when the parameter
  is annotated ``Context`` or named ``context``, else the client id (an int: the legacy
  ``client_fn(cid)``).

The learner gives every client the same ``Context`` for the whole run, as a node keeps its
context in Flower's simulation.
"""

from __future__ import annotations

import inspect
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from wirelessfl.bridges.flower_initial import NamedArrays, named
from wirelessfl.bridges.flower_metrics import NUM_EXAMPLES, first_number
from wirelessfl.errors import ConfigError

if TYPE_CHECKING:
    from flwr.app import Context, RecordDict

__all__ = [
    "EvaluateReply",
    "FactoryDriver",
    "FitReply",
    "KEY",
    "LegacyAppDriver",
    "MessageAppDriver",
    "driver_for",
]

KEY = "learner.client_fn"
#: The node id the simulator's server sends from (Flower's SuperLink node id).
SERVER_NODE_ID = 1


@dataclass(frozen=True)
class FitReply:
    """A client's training result: its arrays (named as sent), examples and metrics."""

    names: list[str]
    arrays: list[np.ndarray]
    num_examples: int
    metrics: dict[str, Any]


@dataclass(frozen=True)
class EvaluateReply:
    """A client's evaluation: its loss (None: not reported), examples and metrics."""

    loss: float | None
    num_examples: int
    metrics: dict[str, Any]


class ClientDriver(ABC):
    """Asks one style of Flower client to train and to evaluate ``(names, arrays)``."""

    #: The style, for ``meta.json`` and messages.
    STYLE = ""

    def __init__(self, target: Any) -> None:
        self.target = target

    def initial(self, context: Context) -> NamedArrays | None:
        """The client's own initial parameters (``get_parameters``); None when it has none."""
        return None

    def aggregate(self, fits: list[FitReply]) -> list[np.ndarray]:
        """FedAvg of ``fits`` by their examples, as Flower's legacy ``FedAvg`` computes it."""
        from flwr.server.strategy.aggregate import aggregate

        return list(aggregate([(f.arrays, f.num_examples) for f in fits]))

    @abstractmethod
    def fit(
        self, context: Context, model: NamedArrays, config: dict[str, Any], who: str
    ) -> FitReply:
        """Train ``model`` on ``context``'s client with the train ``config``."""

    @abstractmethod
    def evaluate(
        self, context: Context, model: NamedArrays, config: dict[str, Any], who: str
    ) -> EvaluateReply:
        """Evaluate ``model`` on ``context``'s client with the evaluate ``config``."""


def driver_for(target: Any, where: str) -> ClientDriver:
    """The driver of ``target`` (see the module docstring); ``where`` names it in errors."""
    from flwr.clientapp import ClientApp

    if isinstance(target, ClientApp):
        # a ClientApp built with client_fn keeps it wrapped as its one handler (flwr 1.42)
        legacy = getattr(target, "_call", None) is not None
        return LegacyAppDriver(target) if legacy else MessageAppDriver(target)
    if not callable(target):
        raise ConfigError(
            f"{KEY}: {where} is a {type(target).__name__}; expected a flwr ClientApp or a client_fn"
        )
    try:
        parameters = list(inspect.signature(target).parameters.values())
    except (TypeError, ValueError):
        parameters = []
    required = [
        p
        for p in parameters
        if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    if len(required) != 1:
        raise ConfigError(
            f"{KEY}: {where} takes {len(required)} required arguments; a client_fn takes one "
            "(a flwr Context, or the client id)"
        )
    return FactoryDriver(target, takes_context=_takes_context(required[0]))


def _takes_context(parameter: inspect.Parameter) -> bool:
    """Annotated ``Context`` (the class or its name) or named ``context``."""
    annotation = parameter.annotation
    if isinstance(annotation, str):
        return annotation.rsplit(".", 1)[-1] == "Context"
    return getattr(annotation, "__name__", None) == "Context" or parameter.name == "context"


def _status_ok(status: Any, who: str, what: str) -> None:
    from flwr.common import Code

    if status.code != Code.OK:
        raise ConfigError(f"{KEY}: {who} does not implement {what} ({status.message})")


class FactoryDriver(ClientDriver):
    """``client_fn(context)`` or ``client_fn(client_id)``: a fresh ``Client`` per call."""

    STYLE = "client_fn"

    def __init__(self, target: Any, *, takes_context: bool) -> None:
        super().__init__(target)
        self.takes_context = takes_context

    def _client(self, context: Context) -> Any:
        from flwr.client import Client, NumPyClient

        argument = context if self.takes_context else int(context.node_config["partition-id"])
        client = self.target(argument)
        if isinstance(client, NumPyClient):
            client = client.to_client()
        if not isinstance(client, Client):
            shown = "context" if self.takes_context else argument
            raise ConfigError(
                f"{KEY}: client_fn({shown}) returned {type(client).__name__}; expected a flwr "
                "NumPyClient or Client"
            )
        return client

    def initial(self, context: Context) -> NamedArrays | None:
        from flwr.common import Code, GetParametersIns, parameters_to_ndarrays
        from flwr.compat.client.client import maybe_call_get_parameters

        res = maybe_call_get_parameters(self._client(context), GetParametersIns(config={}))
        if res.status.code != Code.OK:
            return None
        arrays = parameters_to_ndarrays(res.parameters)
        return named(arrays) if arrays else None

    def fit(self, context, model, config, who):
        from flwr.common import FitIns, ndarrays_to_parameters, parameters_to_ndarrays
        from flwr.compat.client.client import maybe_call_fit
        from flwr.compat.client.numpy_client import EXCEPTION_MESSAGE_WRONG_RETURN_TYPE_FIT

        client = self._client(context)
        ins = FitIns(ndarrays_to_parameters(model[1]), dict(config))
        res = _numpy_checked(
            lambda: maybe_call_fit(client, ins),
            EXCEPTION_MESSAGE_WRONG_RETURN_TYPE_FIT,
            f"{KEY}: {who}'s fit returned something else than (parameters: list of arrays, "
            "num_examples: int, metrics: dict)",
        )
        _status_ok(res.status, who, "fit")
        arrays = parameters_to_ndarrays(res.parameters)
        return FitReply(model[0], arrays, int(res.num_examples), dict(res.metrics))

    def evaluate(self, context, model, config, who):
        from flwr.common import EvaluateIns, ndarrays_to_parameters
        from flwr.compat.client.client import maybe_call_evaluate
        from flwr.compat.client.numpy_client import EXCEPTION_MESSAGE_WRONG_RETURN_TYPE_EVALUATE

        client = self._client(context)
        ins = EvaluateIns(ndarrays_to_parameters(model[1]), dict(config))
        res = _numpy_checked(
            lambda: maybe_call_evaluate(client, ins),
            EXCEPTION_MESSAGE_WRONG_RETURN_TYPE_EVALUATE,
            f"{KEY}: {who}'s evaluate returned something else than (loss: float, num_examples: "
            "int, metrics: dict)",
        )
        _status_ok(res.status, who, "evaluate")
        return EvaluateReply(float(res.loss), int(res.num_examples), dict(res.metrics))


def _numpy_checked(call: Any, flower_message: str, line: str) -> Any:
    """``call()``, with the TypeError Flower's ``NumPyClient`` wrapper raises for a wrong return
    type as one line."""
    try:
        return call()
    except TypeError as err:
        if str(err) != flower_message:
            raise
    raise ConfigError(line)


class _AppDriver(ClientDriver):
    """Shared by both ClientApp styles: one message in, one reply out."""

    def _ask(self, context: Context, message_type: str, content: RecordDict, who: str) -> Any:
        from flwr.app import DEFAULT_TTL, Message, Metadata

        metadata = Metadata(
            run_id=context.run_id,
            message_id=f"{message_type}-{context.node_id}",
            src_node_id=SERVER_NODE_ID,
            dst_node_id=context.node_id,
            reply_to_message_id="",
            group_id="",
            created_at=time.time(),  # metadata only: Flower's TTL check, never a result
            ttl=DEFAULT_TTL,
            message_type=message_type,
        )
        message = Message(content, metadata=metadata)
        try:
            reply = self.target(message, context)
        except ValueError as err:
            if not str(err).startswith(f"No {message_type} function registered"):
                raise
            reply = None
        if reply is None:
            raise ConfigError(
                f"{KEY}: {who}'s ClientApp has no @app.{message_type}() function; the "
                "simulator sends train and evaluate messages"
            )
        if not isinstance(reply, Message):
            raise ConfigError(
                f"{KEY}: {who}'s {message_type} function returned {type(reply).__name__}; "
                "expected a flwr Message (Message(content, reply_to=msg))"
            )
        if reply.has_error():
            reason = str(reply.error.reason).strip().splitlines() or [""]
            raise ConfigError(f"{KEY}: {who} replied to {message_type} with an error ({reason[0]})")
        return reply.content


class MessageAppDriver(_AppDriver):
    """A Message API ``ClientApp``: train and evaluate messages as Flower's ``FedAvg`` sends."""

    STYLE = "ClientApp (Message API)"

    @staticmethod
    def _content(model: NamedArrays, config: dict[str, Any]) -> RecordDict:
        from flwr.app import Array, ArrayRecord, ConfigRecord, RecordDict

        arrays = ArrayRecord({n: Array(np.asarray(a)) for n, a in zip(*model, strict=True)})
        return RecordDict({"arrays": arrays, "config": ConfigRecord(dict(config))})

    @staticmethod
    def _one(records: dict[str, Any], what: str, who: str, message_type: str) -> Any:
        if len(records) != 1:
            raise ConfigError(
                f"{KEY}: {who}'s {message_type} reply holds {len(records)} {what}s; expected "
                f"one, as Flower's FedAvg does"
            )
        return next(iter(records.values()))

    def _metrics(self, content: RecordDict, who: str, message_type: str) -> dict[str, Any]:
        metrics = dict(self._one(content.metric_records, "MetricRecord", who, message_type))
        if first_number(metrics, (NUM_EXAMPLES,), who) is None:
            raise ConfigError(
                f"{KEY}: {who}'s {message_type} reply has no metric {NUM_EXAMPLES!r} (Flower's "
                f"FedAvg weighs by it); its metrics are {sorted(metrics)}"
            )
        return metrics

    def fit(self, context, model, config, who):
        content = self._ask(context, "train", self._content(model, config), who)
        record = self._one(content.array_records, "ArrayRecord", who, "train")
        metrics = self._metrics(content, who, "train")
        names = list(record.keys())
        arrays = [array.numpy() for array in record.values()]
        return FitReply(names, arrays, int(metrics[NUM_EXAMPLES]), metrics)

    def aggregate(self, fits: list[FitReply]) -> list[np.ndarray]:
        """FedAvg as Flower's Message API ``FedAvg`` computes it (``aggregate_arrayrecords``
        weighted by ``"num-examples"``)."""
        from flwr.app import MetricRecord, RecordDict
        from flwr.serverapp.strategy.strategy_utils import aggregate_arrayrecords

        records = [
            RecordDict(
                {
                    "arrays": self._content((f.names, f.arrays), {})["arrays"],
                    "metrics": MetricRecord({NUM_EXAMPLES: f.num_examples}),
                }
            )
            for f in fits
        ]
        return [array.numpy() for array in aggregate_arrayrecords(records, NUM_EXAMPLES).values()]

    def evaluate(self, context, model, config, who):
        content = self._ask(context, "evaluate", self._content(model, config), who)
        metrics = self._metrics(content, who, "evaluate")
        return EvaluateReply(None, int(metrics[NUM_EXAMPLES]), metrics)


class LegacyAppDriver(_AppDriver):
    """A ``ClientApp(client_fn=...)``: Flower's records of ``FitIns`` and ``EvaluateIns``. It
    has no ``get_parameters`` to ask (Flower 1.42 sends no such message): the initial
    parameters come from ``learner.initial_parameters``."""

    STYLE = "ClientApp (client_fn)"

    def fit(self, context, model, config, who):
        from flwr.common import FitIns, ndarrays_to_parameters, parameters_to_ndarrays
        from flwr.compat.common.recorddict_compat import fitins_to_recorddict, recorddict_to_fitres

        ins = FitIns(ndarrays_to_parameters(model[1]), dict(config))
        content = self._ask(context, "train", fitins_to_recorddict(ins, keep_input=True), who)
        res = recorddict_to_fitres(content, keep_input=False)
        _status_ok(res.status, who, "fit")
        arrays = parameters_to_ndarrays(res.parameters)
        return FitReply(model[0], arrays, int(res.num_examples), dict(res.metrics))

    def evaluate(self, context, model, config, who):
        from flwr.common import EvaluateIns, ndarrays_to_parameters
        from flwr.compat.common.recorddict_compat import (
            evaluateins_to_recorddict,
            recorddict_to_evaluateres,
        )

        ins = EvaluateIns(ndarrays_to_parameters(model[1]), dict(config))
        content = self._ask(context, "evaluate", evaluateins_to_recorddict(ins, True), who)
        res = recorddict_to_evaluateres(content)
        _status_ok(res.status, who, "evaluate")
        return EvaluateReply(float(res.loss), int(res.num_examples), dict(res.metrics))
