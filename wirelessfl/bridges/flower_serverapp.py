"""Our simulator and federated algorithms as a Flower ``ServerApp``.

:func:`server_app` returns a ``ServerApp`` whose main function, :func:`run_on_grid` (also the
Flower App's, :mod:`wirelessfl.bridges.flower_app`, with the scenario of its run config), runs
the scenario with our simulator (:class:`~wirelessfl.sim.Run`: channel, client selection,
controller, faults, virtual clock, results folder and checkpoints), with a learner,
:class:`FlowerGridLearner`, that has the Flower ClientApps of
:mod:`wirelessfl.bridges.flower_clientapp` do the clients' part:

1. server: the controller's decision, then ``algorithm.plan`` and ``algorithm.broadcast``;
2. one Flower ``train`` message per client that trains, to the node whose ``partition-id`` is
   that client (found once by a ``query`` to every node): its plan, its download and the
   scenario;
3. the node trains (``algorithm.train``) and replies with ``algorithm.sent_message``'s shared
   part and its loss; the private part stays in the node's ``context.state``;
4. server: bits, virtual compute and upload times as in the simulator; the arrived clients'
   messages go to ``algorithm.aggregate``; evaluation on the server's test set.

The results folder is the one our own learner writes, column for column: the same run seed
gives the same global state and tables (but ``wall_s``, and ``algo.memory_norm``, NaN here: the
SOFT family's error memory never leaves its client). A resume starts the clients' private state
afresh (Flower keeps it in each node's context, which a new federation does not have).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wirelessfl.algorithms.finite import KEPT, non_finite
from wirelessfl.bridges.flower_clientapp import PARTITION_ID
from wirelessfl.bridges.flower_records import (
    content_to_message,
    message_to_content,
    plan_to_text,
    to_bytes,
)
from wirelessfl.config.loader import scenario_yaml
from wirelessfl.errors import ConfigError, SimulationError, UserError
from wirelessfl.learners.base import ClientReport, RoundPlan
from wirelessfl.learners.federated import FederatedLearner
from wirelessfl.sim.runner import Run

if TYPE_CHECKING:
    from flwr.serverapp import Grid, ServerApp

    from wirelessfl.config.scenario import Scenario

__all__ = ["FlowerGridLearner", "run_on_grid", "server_app"]

#: Seconds between looks at the nodes connected while waiting for all of them.
POLL_S = 0.2


def server_app(scenario: Scenario, out_dir: str | Path, *, timeout_s: float = 600.0) -> ServerApp:
    """A ``ServerApp`` that simulates ``scenario`` into the new folder ``out_dir``, training on
    the federation's ClientApps (:func:`~wirelessfl.bridges.flower_clientapp.client_app`).

    Args:
        timeout_s: the longest wait [s] for the nodes to connect and for a round's replies.
    """
    from flwr.serverapp import ServerApp

    app = ServerApp()

    @app.main()
    def main(grid: Grid, context: Any) -> None:
        run_on_grid(scenario, out_dir, grid, timeout_s=timeout_s)

    return app


def run_on_grid(scenario: Scenario, out_dir: str | Path, grid: Grid, *, timeout_s: float) -> None:
    """Simulate ``scenario`` into the new folder ``out_dir``, training on ``grid``'s nodes (a
    ServerApp's main function; ``timeout_s`` [s] as in :func:`server_app`)."""
    learner = FlowerGridLearner(scenario, grid, timeout_s=timeout_s)
    Run(scenario, out_dir, learner=learner).execute()


class FlowerGridLearner(FederatedLearner):
    """The ``lora`` learner with local training and client messages on Flower ClientApps.

    Args:
        scenario: the run's scenario (``learner.kind: lora``, ``learner.executor: local``).
        grid: the ServerApp's Flower ``Grid``.
        timeout_s: the longest wait [s] for the nodes and for each round's replies.
    """

    def __init__(self, scenario: Scenario, grid: Grid, *, timeout_s: float) -> None:
        executor = scenario.learner.given("executor", "local")
        if scenario.learner.kind != "lora" or executor != "local":
            raise ConfigError(
                f"learner.kind: a Flower ServerApp trains the lora learner's clients on its "
                f"ClientApps (learner.kind: lora, learner.executor: local), got "
                f"{scenario.learner.kind!r} with executor {executor!r}"
            )
        super().__init__(scenario)
        self.grid = grid
        self.timeout_s = timeout_s
        self.nodes: dict[int, int] = {}  # client id -> Flower node id
        self._scenario_text = scenario_yaml(scenario)

    def start(self, *, rank: int, n_clients: int, seed: int) -> None:
        super().start(rank=rank, n_clients=n_clients, seed=seed)
        self.nodes = self._find_nodes(n_clients)

    def _find_nodes(self, n_clients: int) -> dict[int, int]:
        """Client id -> node id, from every node's ``partition-id`` (waits for N nodes)."""
        from flwr.app import Message, MessageType, RecordDict

        deadline = time.monotonic() + self.timeout_s
        while len(nodes := list(self.grid.get_node_ids())) < n_clients:
            if time.monotonic() > deadline:
                raise UserError(
                    f"n_clients: {len(nodes)} Flower nodes connected in {self.timeout_s:g} s; "
                    f"the scenario has {n_clients} clients, one node each"
                )
            time.sleep(POLL_S)
        queries = [
            Message(RecordDict(), dst_node_id=n, message_type=MessageType.QUERY) for n in nodes
        ]
        found = {}
        for reply in self._exchange(queries, "query"):
            found[int(reply.content["node"][PARTITION_ID])] = reply.metadata.src_node_id
        if sorted(found) != list(range(n_clients)):
            raise UserError(
                f"n_clients: the Flower nodes are clients {sorted(found)} "
                f"({PARTITION_ID}); the scenario needs exactly 0..{n_clients - 1}"
            )
        return found

    def _exchange(self, messages: list[Any], what: str) -> list[Any]:
        """Send ``messages`` and return their replies; one line for a failure or a timeout."""
        replies = list(self.grid.send_and_receive(messages, timeout=self.timeout_s))
        failed = [r for r in replies if r.has_error()]
        if failed:
            reason = str(failed[0].error.reason).splitlines()[0]
            raise SimulationError(
                f"{what}: Flower node {failed[0].metadata.src_node_id} failed ({reason})"
            )
        if len(replies) < len(messages):
            raise SimulationError(
                f"{what}: {len(messages) - len(replies)} of {len(messages)} Flower nodes did not "
                f"reply within {self.timeout_s:g} s"
            )
        return replies

    # ---- a round ---------------------------------------------------------------------------
    def local_round(self, plan: RoundPlan) -> dict[int, ClientReport]:
        """Steps 1-2 here, 3-4 on the clients' nodes; the reports as the simulator's learner's."""
        from flwr.app import ConfigRecord, Message, MessageType

        t = plan.round_index
        self._round_plan = plan
        plans = self.algorithm.plan(plan)
        downloads = self._broadcast(plans)
        training_state = to_bytes(self.algorithm.training_state())
        messages = []
        for p, download in zip(plans, downloads, strict=True):
            content = message_to_content(download)
            content["run"] = ConfigRecord(
                {
                    "plan": plan_to_text(p),
                    "scenario": self._scenario_text,
                    "model_rank": int(self.runtime.rank),
                    "training_state": training_state,
                }
            )
            node = self.nodes[p.client]
            messages.append(Message(content, dst_node_id=node, message_type=MessageType.TRAIN))
        by_node = {r.metadata.src_node_id: r for r in self._exchange(messages, f"round {t}")}
        self._pending, self._losses, self._plans, reports = {}, {}, {}, {}
        for p, download in zip(plans, downloads, strict=True):
            reply = by_node[self.nodes[p.client]].content
            message = content_to_message(reply, self.runtime.device)
            loss = float(reply["metrics"]["loss"])
            bad = non_finite(message.shared, label=self._label)
            if bad is not None:
                raise SimulationError(
                    f"round {t}: client {p.client} sent a non-finite message ({bad}); {KEPT} "
                    "Check the algorithm's client_message"
                )
            reports[p.client] = self._received(p, download, message, loss)
        return reports

    def describe(self) -> dict[str, object]:
        return {**super().describe(), "clients": "Flower ClientApps", "nodes": len(self.nodes)}
