"""A network of cells (``cells``): one edge server per cell, each running the scenario's
algorithm and controller for its own clients, and a cloud that averages the edge models every
``server.hierarchy.edge_rounds`` rounds (client-edge-cloud hierarchical federated learning,
HierFAVG: "Client-Edge-Cloud Hierarchical Federated Learning", L. Liu, J. Zhang, S. H. Song,
K. B. Letaief, arXiv:1905.06641). docs/simulator.md, "Many cells".

Edge round t, every cell alike:

1. each edge server's :class:`~wirelessfl.sim.simulator.Simulator` plans its round (its
   clients' channel, faults, its controller's decision on their interference-free SNR, the
   training): :meth:`~wirelessfl.sim.simulator.Simulator.plan_round`;
2. the SINR of every upload with the other cells' uploads of round t
   (:mod:`wirelessfl.sim.cell_interference`), handed to each cell's uplink;
3. each cell completes its round on its own clock (uploads at their SINR, aggregation at the
   edge, its queue's update): :meth:`~wirelessfl.sim.simulator.Simulator.complete_round`;
4. after every τ-th round (and the last) the cloud averages the edge models weighted by
   their clients' data, and every cell's clock moves to the slowest cell's end plus the
   backhaul: the edge's model up and the cloud's down, each way
   ``backhaul_latency_s + bits / backhaul_rate_bps``, bits = the LoRA factors at the model's
   rank (``payload.bits_per_value`` each); the cloud's model is evaluated there (every
   ``eval_every`` rounds: at the first cloud round at or after each).

τ = 1 with an instantaneous backhaul is flat synchronous FedAvg over every cell's clients,
each cell on its own band. The cells share one channel (each round's draws made once) and
one rank: the offline search plans it on every client's mean SNR at its serving site.
"""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path

import numpy as np

from channels.cell_mobility import MovingCells
from channels.fading import NoFading
from channels.handover import HandoverState, handover_step
from channels.multicell import MultiCellLayout
from wirelessfl.algorithms.finite import KEPT
from wirelessfl.config.cells import network_layout
from wirelessfl.config.scenario import Scenario
from wirelessfl.errors import ConfigError
from wirelessfl.learners import make_learner
from wirelessfl.learners.base import Learner
from wirelessfl.sim.cell_interference import (
    CellUploads,
    analog_interference_w,
    expected_interference_w,
    round_sinr,
)
from wirelessfl.sim.channel_process import ChannelProcess
from wirelessfl.sim.edge import EdgeCell
from wirelessfl.sim.events import EventTable, Kind
from wirelessfl.sim.network_record import cell_row, network_record
from wirelessfl.sim.outcome import RoundOutcome
from wirelessfl.sim.setup import build_moving_network_radio, build_network_radio
from wirelessfl.sim.simulator import Simulator
from wirelessfl.uplinks.cell_uplink import cell_uplink

__all__ = ["EdgeLearners", "NetworkSimulator"]


class EdgeLearners:
    """The edge servers' learners, where the runner keeps one learner's state: each in its
    own folder ``edge_<cell>`` of a checkpoint."""

    def __init__(self, learners: list[Learner], cells: list[int]) -> None:
        self.learners, self.cells = learners, cells

    def save_state(self, folder: Path) -> None:
        for cell, learner in zip(self.cells, self.learners, strict=True):
            sub = folder / f"edge_{cell:03d}"
            sub.mkdir(exist_ok=True)
            learner.save_state(sub)

    def load_state(self, folder: Path) -> None:
        for cell, learner in zip(self.cells, self.learners, strict=True):
            learner.load_state(folder / f"edge_{cell:03d}")

    def stop_reason(self) -> str | None:
        return None  # privacy, the one stop rule, is refused with cells

    def metric_names(self) -> dict[str, str]:
        return self.learners[0].metric_names()

    def describe(self) -> dict[str, object]:
        return {**self.learners[0].describe(), "edge_servers": len(self.learners)}


class NetworkSimulator:
    """The cells' edge servers and the cloud (module docstring); the runner drives it as one
    simulator (``run_round``, its state, ``evaluate_initial``)."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        ch, network = scenario.channel, scenario.cells
        self.layout = network_layout(scenario)
        edge_scenario = dataclasses.replace(
            scenario, channel=dataclasses.replace(ch, bandwidth_hz=ch.bandwidth_hz / network.reuse)
        )
        self.edge_scenario = edge_scenario
        #: (N,) each client's serving cell (updated in place by the handovers)
        self.serving = self.layout.serving.copy()
        self.moving: MovingCells | None = None
        self.handover: HandoverState | None = None
        if scenario.mobility.moves:  # every cell has its server: clients may come to any
            radio, self.moving = build_moving_network_radio(
                edge_scenario, self.layout, self.serving
            )
            self.handover = HandoverState(
                self.serving, np.full(len(self.serving), -1), np.full(len(self.serving), np.nan)
            )
            self.cells = list(range(self.layout.n_cells))
        else:
            radio = build_network_radio(edge_scenario, self.layout)
            self.cells = [c for c in range(self.layout.n_cells) if self.layout.members(c).size]
        channel = ChannelProcess(radio, ch.block_rounds)
        self.edges: list[Simulator] = []
        for cell in self.cells:
            learner = make_learner(edge_scenario)
            refusal = learner.hierarchy_refusal()
            if refusal is not None:
                raise ConfigError(f"cells.n_rings: {refusal}; run one cell (cells.n_rings: null)")
            try:
                uplink = cell_uplink(edge_scenario, self.serving)
            except ValueError as err:  # e.g. no NR carrier of B / reuse
                raise ConfigError(
                    f"cells.reuse: a cell's band is channel.bandwidth_hz / {network.reuse}: {err}"
                ) from None
            edge = EdgeCell(channel, np.flatnonzero(self.serving == cell), uplink)
            self.edges.append(Simulator(edge_scenario, learner, edge=edge))
        first = self.edges[0]
        self.learners = EdgeLearners([e.learner for e in self.edges], self.cells)
        self.uplink, self.controller = first.uplink, first.controller
        self.energy_band_j = None
        self.initial_evaluation: dict[str, float] | None = None
        self.next_round = 0
        #: whether the cross links fade (Rayleigh; not under channel.fading.model: none)
        self.cross_fading = not isinstance(self.edges[0].cell.fading, NoFading)
        self._expect_interference()
        hierarchy = scenario.server.hierarchy
        bits = first.params_per_rank * first.rank * scenario.payload.bits_per_value
        rate = hierarchy.backhaul_rate_bps
        one_way_s = hierarchy.backhaul_latency_s + (0.0 if rate is None else bits / rate)
        #: the edge-cloud exchange after a cloud round: up and down [s]
        self.backhaul_s = 2.0 * one_way_s

    # ---- the runner's view -----------------------------------------------------------------
    @property
    def rank(self) -> int:
        """The network's LoRA rank (every edge's: the offline stage plans one)."""
        return self.edges[0].rank

    @property
    def average_rate(self) -> np.ndarray:
        """(cells, N) each edge's proportional-fair tracker."""
        return np.stack([e.average_rate for e in self.edges])

    @property
    def device_energy_j(self) -> np.ndarray | None:
        """(2, N) each device's energy summed over the rounds (a device is in one cell)."""
        sums = [e.device_energy_j for e in self.edges]
        return None if any(s is None for s in sums) else np.sum(sums, axis=0)

    @device_energy_j.setter
    def device_energy_j(self, value: np.ndarray | None) -> None:
        for i, edge in enumerate(self.edges):
            edge.device_energy_j = None if value is None else (value if i == 0 else 0 * value)

    @property
    def weights(self) -> np.ndarray:
        """(cells,) the data each edge's clients hold now (the cloud's weights)."""
        return np.array([e.learner.data_weight(e.edge.members) for e in self.edges])

    def state_dict(self) -> dict:
        state = {
            "next_round": self.next_round,
            "edges": [e.state_dict() for e in self.edges],
            "interference_factor": [e.edge.interference_factor for e in self.edges],
        }
        if self.handover is not None:
            state["handover"] = self.handover.state()
        return state

    def load_state_dict(self, state: dict, average_rate: np.ndarray | None) -> None:
        for i, edge in enumerate(self.edges):
            edge.load_state_dict(
                state["edges"][i], None if average_rate is None else average_rate[i]
            )
            edge.edge.interference_factor = float(state["interference_factor"][i])
        if self.handover is not None:
            self.handover.restore(state["handover"])
            self._members()
        self.next_round = int(state["next_round"])

    def evaluate_initial(self) -> dict[str, float]:
        """The initial global model (every edge starts from it)."""
        self.initial_evaluation = self.edges[0].evaluate_initial()
        return self.initial_evaluation

    # ---- one edge round --------------------------------------------------------------------
    def is_cloud_round(self, t: int) -> bool:
        """Whether the cloud averages after edge round t: every τ-th and the last."""
        tau = self.scenario.server.hierarchy.edge_rounds
        return (t + 1) % tau == 0 or t == self.scenario.rounds - 1

    def evaluates_after(self, t: int) -> bool:
        """Whether cloud round t evaluates: an ``eval_every`` boundary since the previous
        cloud round, or the last round."""
        tau, every = self.scenario.server.hierarchy.edge_rounds, self.scenario.eval_every
        previous = (t // tau) * tau - 1
        return t == self.scenario.rounds - 1 or (t + 1) // every > (previous + 1) // every

    def _now_s(self) -> float:
        """The network's time for what all cells share (handover, cross links): the earliest
        cell's clock."""
        return min(edge.env.now for edge in self.edges)

    def _layout_now(self) -> MultiCellLayout:
        """The layout with the links and serving cells of now (moving clients), else as
        dropped."""
        if self.moving is None:
            return self.layout
        gain = self.moving.links_at(self._now_s())[1]
        return dataclasses.replace(self.layout, link_gain=gain, serving=self.serving)

    def _members(self) -> None:
        """Every edge's clients: those it serves now."""
        for cell, edge in zip(self.cells, self.edges, strict=True):
            edge.edge.members = np.flatnonzero(self.serving == cell)

    def _hand_over(self) -> EventTable | None:
        """Moving clients: the A3 check at the earliest cell's clock (``channels.handover``);
        a client that changes cell takes what its edge's learner keeps of it along, and the
        network logs a ``handover`` event (value: the new cell). None without mobility."""
        if self.moving is None or self.handover is None:
            return None
        now_s = self._now_s()
        old = self.serving.copy()
        _, gain, _ = self.moving.links_at(now_s)
        cells = self.scenario.cells
        moved = handover_step(
            self.handover,
            -10.0 * np.log10(gain),
            now_s,
            hysteresis_db=cells.handover_hysteresis_db,
            time_to_trigger_s=cells.time_to_trigger_s,
        )
        index = {cell: i for i, cell in enumerate(self.cells)}
        for client in moved.tolist():
            source, target = self.edges[index[old[client]]], self.edges[index[self.serving[client]]]
            source.learner.hand_over(client, target.learner)
        self._members()
        n = moved.size
        kind = np.full(n, int(Kind.HANDOVER))
        return EventTable(np.full(n, now_s), kind, moved, self.serving[moved].astype(float))

    def _expect_interference(self) -> None:
        """``cells.controller_sees: expected``: each cell's factor 1 + E[I]/N from fully
        loaded neighbours (:func:`expected_interference_w`), at the clients' powers at time 0
        and where they are served now."""
        sc = self.edge_scenario
        if sc.cells.controller_sees != "expected":
            return
        analog = self.edges[0].uplink.CELL_RESOURCES == "analog"
        counts = np.bincount(self.serving, minlength=self.layout.n_cells)
        per_cell = np.minimum(counts, sc.n_scheduled) if analog else np.ones(len(counts))
        layout = self._layout_now()
        power_w = self.edges[0].channel.radio.tx_power_w
        expected = expected_interference_w(layout, power_w, reuse=sc.cells.reuse, per_cell=per_cell)
        noise_w = self.edges[0].cell.noise_power_w
        for cell, edge in zip(self.cells, self.edges, strict=True):
            assert edge.edge is not None
            edge.edge.interference_factor = 1.0 + float(expected[cell]) / noise_w

    def run_round(self, t: int) -> RoundOutcome:
        wall0 = time.perf_counter()
        handovers = self._hand_over()
        if self.moving is not None:  # static clients: set once, at the start
            self._expect_interference()
        active = [i for i, edge in enumerate(self.edges) if edge.edge.members.size]
        planned = {i: self.edges[i].plan_round(t) for i in active}
        sinr_db = self._interfere(t, planned)
        outcomes = {i: self.edges[i].complete_round(r) for i, r in planned.items()}
        cloud = self.is_cloud_round(t)
        evaluation: dict[str, float] = {}
        end_s = max(edge.env.now for edge in self.edges)
        if cloud:
            self._average()
            end_s += self.backhaul_s
            for edge in self.edges:
                edge.advance_to(end_s)
            if self.evaluates_after(t):
                evaluation = self.edges[0].checked_evaluation(t, f"round {t}", KEPT)
        records = [o.record for o in outcomes.values()]
        all_sinr = np.concatenate(list(sinr_db.values())) if sinr_db else np.zeros(0)
        record = network_record(
            records,
            sinr_db=all_sinr,
            end_s=end_s,
            cloud=cloud,
            backhaul_s=self.backhaul_s if cloud else 0.0,
            evaluation=evaluation,
        )
        record["wall_s"] = time.perf_counter() - wall0
        cells = [
            cell_row(o.record, self.cells[i], _mean_db(sinr_db[i])) for i, o in outcomes.items()
        ]
        tables = [o.events for o in outcomes.values()]
        events = EventTable.merged(tables if handovers is None else [handovers, *tables])
        clients = [row for o in outcomes.values() for row in o.clients]
        self.next_round = t + 1
        return RoundOutcome(record, events, clients, None, cells=cells)

    def _interfere(self, t: int, planned: dict) -> dict[int, np.ndarray]:
        """Every upload's SINR with the other cells' (:func:`round_sinr`), handed to its
        cell's uplink; returns each planned edge's (m,) SINRs [dB] (by edge index)."""
        sc = self.edge_scenario
        uploads = {}
        for i, r in planned.items():
            idx = np.flatnonzero(r.active)
            shares = self.edges[i].uplink.occupied_shares(r.shares[idx])
            uploads[i] = CellUploads(r.scheduled[idx], shares, r.tx_power_w[idx], r.snr[idx])
        layout = self._layout_now()
        if self.edges[0].uplink.CELL_RESOURCES == "analog":
            return self._interfere_analog(t, planned, uploads, layout)
        result = round_sinr(
            list(uploads.values()),
            layout,
            seed=sc.seed,
            round_index=t,
            bandwidth_hz=self.scenario.channel.bandwidth_hz,
            reuse=sc.cells.reuse,
            noise_power_w=self.edges[0].cell.noise_power_w,
            noise_bandwidth=sc.channel.noise_bandwidth,
            interference=sc.cells.interference,
            cross_fading=self.cross_fading,
        )
        ids = result.clients.tolist()
        rate = dict(zip(ids, result.rate_sinr.tolist(), strict=True))
        sinr = dict(zip(ids, result.sinr.tolist(), strict=True))
        power = dict(zip(ids, result.interference_w.tolist(), strict=True))
        out, start = {}, 0
        for i, u in uploads.items():
            edge, m = self.edges[i], len(u.clients)
            edge.uplink.set_round(rate, sinr, power)
            out[i] = result.sinr[start : start + m]
            if sc.cells.controller_sees == "last_round":
                self._update_factor(edge, u, result.rate_sinr[start : start + m])
            start += m
        return {i: 10.0 * np.log10(np.maximum(v, 1e-300)) for i, v in out.items()}

    def _interfere_analog(
        self, t: int, planned: dict, uploads: dict[int, CellUploads], layout
    ) -> dict[int, np.ndarray]:
        """Over-the-air cells: the other cells' sums at each site
        (:func:`analog_interference_w`) multiply its noise by 1 + I/N (the uplink's
        ``interfere``); each upload's SINR is its SNR over that factor."""
        sc = self.edge_scenario
        noise_w = self.edges[0].cell.noise_power_w
        if sc.cells.interference:
            interference_w = analog_interference_w(
                list(uploads.values()),
                layout,
                seed=sc.seed,
                round_index=t,
                reuse=sc.cells.reuse,
                cross_fading=self.cross_fading,
            )
        else:
            interference_w = np.zeros(len(layout.sites_m))
        out = {}
        for i, u in uploads.items():
            edge, cell = self.edges[i], self.cells[i]
            factor = 1.0 + float(interference_w[cell]) / noise_w
            edge.uplink.interfere(planned[i].prepared, factor)
            ids = u.clients.tolist()
            edge.uplink.set_round(
                dict(zip(ids, u.snr.tolist(), strict=True)),
                dict(zip(ids, (u.snr / factor).tolist(), strict=True)),
                dict.fromkeys(ids, float(interference_w[cell])),
            )
            if sc.cells.controller_sees == "last_round" and len(ids):
                assert edge.edge is not None
                edge.edge.interference_factor = factor
            out[i] = 10.0 * np.log10(np.maximum(u.snr / factor, 1e-300))
        return out

    @staticmethod
    def _update_factor(edge: Simulator, uploads: CellUploads, rate_sinr: np.ndarray) -> None:
        """``cells.controller_sees: last_round``: the cell's next factor, the mean over its
        uploads of SNR / SINR = 1 + I/N0 (under either noise rule: SNR / rate SINR); a cell
        without uploads keeps its factor."""
        ok = rate_sinr > 0
        if ok.any():
            assert edge.edge is not None
            edge.edge.interference_factor = float(np.mean(uploads.snr[ok] / rate_sinr[ok]))

    def _average(self) -> None:
        """The cloud's weighted mean of the edge models (an edge without clients now weighs
        nothing), sent back to every edge."""
        learners = [edge.learner for edge in self.edges]
        weights = self.weights
        keep = np.flatnonzero(weights > 0)
        states = [learners[i].model_state() for i in keep]
        average = learners[0].average_model_states(states, weights[keep])
        for learner in learners:
            learner.load_model_state(average)


def _mean_db(values: np.ndarray) -> float:
    return float(np.mean(values)) if values.size else math.nan
