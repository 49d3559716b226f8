"""The client side of our federated algorithms as a Flower ``ClientApp``.

:func:`client_app` answers the two messages :mod:`wirelessfl.bridges.flower_serverapp` sends:

- ``query``: which of the scenario's clients this node is, its ``node_config["partition-id"]``
  (Flower's simulation numbers its SuperNodes 0..N-1; a deployment sets it with
  ``flower-supernode --node-config "partition-id=3"``);
- ``train``: the client's plan, its download and the scenario (YAML text). The node builds the
  scenario's training runtime and algorithm once per process (model, data and partition from
  the seed, wrapped at the model rank the message names), trains its own plan
  (``algorithm.train``) from the download, builds its message (``algorithm.sent_message``:
  the client message, then the compression stage), keeps the private part (error memory,
  optimizer moments) in its Flower ``context.state`` and replies with the shared part and its
  training loss.

Local training is addressed by (seed, client, round) as in the simulator, so a node trains
exactly what the simulator's own learner would.
"""

from __future__ import annotations

import hashlib
import math
from typing import TYPE_CHECKING, Any

import yaml

from wirelessfl.bridges.flower_records import (
    content_to_message,
    from_bytes,
    message_to_content,
    plan_from_text,
    to_bytes,
)
from wirelessfl.errors import SimulationError

if TYPE_CHECKING:
    from flwr.app import Context, Message
    from flwr.clientapp import ClientApp

    from wirelessfl.algorithms.base import FederatedAlgorithm

__all__ = ["PARTITION_ID", "STATE", "client_app"]

#: The node-config key naming the client a node is (Flower's simulation sets it).
PARTITION_ID = "partition-id"
#: The ``context.state`` record holding the client's private state.
STATE = "wirelessfl"

#: (scenario hash, model rank) -> the algorithm bound to its runtime; one run per process.
_ALGORITHMS: dict[tuple[str, int], FederatedAlgorithm] = {}


def client_app() -> ClientApp:
    """A Flower ``ClientApp`` training our algorithms' clients (see the module docstring)."""
    from flwr.clientapp import ClientApp

    app = ClientApp()
    app.query()(_identify)
    app.train()(_train)
    return app


def _partition_id(context: Context) -> int:
    if PARTITION_ID not in context.node_config:
        raise ValueError(
            f"node {context.node_id} has no node_config {PARTITION_ID!r}: start it with "
            f'--node-config "{PARTITION_ID}=<client id>"'
        )
    return int(context.node_config[PARTITION_ID])


def _identify(message: Message, context: Context) -> Message:
    """Reply with the client id this node is."""
    from flwr.app import ConfigRecord, Message, RecordDict

    reply = RecordDict({"node": ConfigRecord({PARTITION_ID: _partition_id(context)})})
    return Message(reply, reply_to=message)


def _algorithm(scenario_text: str, model_rank: int) -> FederatedAlgorithm:
    """The scenario's algorithm on its runtime, started at ``model_rank`` (built once)."""
    key = (hashlib.sha256(scenario_text.encode()).hexdigest(), model_rank)
    if key not in _ALGORITHMS:
        from wirelessfl.algorithms import started_algorithm
        from wirelessfl.config import scenario_from_dict

        scenario = scenario_from_dict(yaml.safe_load(scenario_text))
        algorithm = started_algorithm(scenario, rank=model_rank, seed=scenario.seed)
        _ALGORITHMS.clear()  # a node serves one run at a time
        _ALGORITHMS[key] = algorithm
    return _ALGORITHMS[key]


def _train(message: Message, context: Context) -> Message:
    """Train this node's plan from its download; keep the private part, reply with the rest."""
    from flwr.app import ConfigRecord, Message, MetricRecord

    from wirelessfl.algorithms.finite import non_finite
    from wirelessfl.training.private_state import PrivateState

    run = message.content["run"]
    plan = plan_from_text(str(run["plan"]))
    if plan.client != _partition_id(context):
        raise ValueError(
            f"node {context.node_id} is client {_partition_id(context)}, sent client "
            f"{plan.client}'s plan"
        )
    algorithm = _algorithm(str(run["scenario"]), int(run["model_rank"]))
    runtime = algorithm.runtime_or_fail()
    algorithm.load_training_state(from_bytes(bytes(run["training_state"]), runtime.device))
    private = PrivateState(limit_values=runtime.private_limit)
    private.load_state_dict(_stored_private(context, plan.client), runtime.device)
    start = content_to_message(message.content, runtime.device)
    (result,) = algorithm.train([plan], [start.shared], private)
    bad = non_finite(result.local)
    if not math.isfinite(result.mean_loss) or bad is not None:
        raise SimulationError(
            f"round {plan.round_index}: client {plan.client} trained to a non-finite state "
            f"(loss {result.mean_loss}; {bad or 'parameters finite'})"
        )
    upload = algorithm.sent_message(plan, start, result, private.get(plan.client))
    private.stage(plan.client, upload.private)
    private.commit()
    entries = private.state_dict().get(str(plan.client), {})
    context.state[STATE] = ConfigRecord({"private": to_bytes(entries)})
    reply = message_to_content(upload)
    reply["metrics"] = MetricRecord({"loss": float(result.mean_loss)})
    return Message(reply, reply_to=message)


def _stored_private(context: Context, client: int) -> dict[str, Any]:
    """``PrivateState.state_dict`` of ``client`` from this node's context (``{}`` at first)."""
    if STATE not in context.state:
        return {}
    entries = from_bytes(bytes(context.state[STATE]["private"]), "cpu")
    return {str(client): entries} if entries else {}
