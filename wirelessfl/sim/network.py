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

from wirelessfl.algorithms.finite import KEPT
from wirelessfl.config.cells import network_layout
from wirelessfl.config.scenario import Scenario
from wirelessfl.errors import ConfigError
from wirelessfl.learners import make_learner
from wirelessfl.learners.base import Learner
from wirelessfl.sim.cell_interference import CellUploads, round_sinr
from wirelessfl.sim.channel_process import ChannelProcess
from wirelessfl.sim.edge import EdgeCell
from wirelessfl.sim.events import EventTable
from wirelessfl.sim.network_record import cell_row, network_record
from wirelessfl.sim.outcome import RoundOutcome
from wirelessfl.sim.setup import build_network_radio
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
        channel = ChannelProcess(build_network_radio(edge_scenario, self.layout), ch.block_rounds)
        self.cells = [c for c in range(self.layout.n_cells) if self.layout.members(c).size]
        self.edges: list[Simulator] = []
        for cell in self.cells:
            learner = make_learner(edge_scenario)
            refusal = learner.hierarchy_refusal()
            if refusal is not None:
                raise ConfigError(f"cells.n_rings: {refusal}; run one cell (cells.n_rings: null)")
            try:
                uplink = cell_uplink(edge_scenario, self.layout.serving)
            except ValueError as err:  # e.g. no NR carrier of B / reuse
                raise ConfigError(
                    f"cells.reuse: a cell's band is channel.bandwidth_hz / {network.reuse}: {err}"
                ) from None
            edge = EdgeCell(channel, self.layout.members(cell), uplink)
            self.edges.append(Simulator(edge_scenario, learner, edge=edge))
        first = self.edges[0]
        self.learners = EdgeLearners([e.learner for e in self.edges], self.cells)
        self.weights = np.array([e.learner.data_weight(e.edge.members) for e in self.edges])
        self.uplink, self.controller = first.uplink, first.controller
        self.energy_band_j = None
        self.initial_evaluation: dict[str, float] | None = None
        self.next_round = 0
        hierarchy = scenario.server.hierarchy
        bits = first.params_per_rank * first.rank * scenario.payload.bits_per_value
        rate = hierarchy.backhaul_rate_bps
        one_way_s = hierarchy.backhaul_latency_s + (0.0 if rate is None else bits / rate)
        #: the edge-cloud exchange after a cloud round: up and down [s]
        self.backhaul_s = 2.0 * one_way_s if (rate is not None or one_way_s > 0) else 0.0

    # ---- the runner's view -----------------------------------------------------------------
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

    def state_dict(self) -> dict:
        return {
            "next_round": self.next_round,
            "edges": [e.state_dict() for e in self.edges],
            "interference_factor": [e.edge.interference_factor for e in self.edges],
        }

    def load_state_dict(self, state: dict, average_rate: np.ndarray | None) -> None:
        for i, edge in enumerate(self.edges):
            edge.load_state_dict(
                state["edges"][i], None if average_rate is None else average_rate[i]
            )
            edge.edge.interference_factor = float(state["interference_factor"][i])
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

    def run_round(self, t: int) -> RoundOutcome:
        wall0 = time.perf_counter()
        planned = [edge.plan_round(t) for edge in self.edges]
        sinr_db = self._interfere(t, planned)
        outcomes = [edge.complete_round(r) for edge, r in zip(self.edges, planned, strict=True)]
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
        records = [o.record for o in outcomes]
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
            cell_row(rec, cell, float(np.mean(sinr_db[cell])) if sinr_db[cell].size else math.nan)
            for cell, rec in zip(self.cells, records, strict=True)
        ]
        events = EventTable.merged([o.events for o in outcomes])
        clients = [row for o in outcomes for row in o.clients]
        self.next_round = t + 1
        return RoundOutcome(record, events, clients, None, cells=cells)

    def _interfere(self, t: int, planned: list) -> dict[int, np.ndarray]:
        """Every upload's SINR with the other cells' (:func:`round_sinr`), handed to its
        cell's uplink; returns each cell's (m,) SINRs [dB]."""
        sc = self.edge_scenario
        uploads = []
        for edge, r in zip(self.edges, planned, strict=True):
            idx = np.flatnonzero(r.active)
            shares = edge.uplink.occupied_shares(r.shares[idx])
            uploads.append(CellUploads(r.scheduled[idx], shares, r.tx_power_w[idx], r.snr[idx]))
        result = round_sinr(
            uploads,
            self.layout,
            seed=sc.seed,
            round_index=t,
            bandwidth_hz=self.scenario.channel.bandwidth_hz,
            reuse=sc.cells.reuse,
            noise_power_w=self.edges[0].cell.noise_power_w,
            noise_bandwidth=sc.channel.noise_bandwidth,
            interference=sc.cells.interference,
            cross_fading=sc.channel.fading.model != "none",
        )
        self._update_factors(uploads, result.rate_sinr)
        ids = result.clients.tolist()
        rate = dict(zip(ids, result.rate_sinr.tolist(), strict=True))
        sinr = dict(zip(ids, result.sinr.tolist(), strict=True))
        power = dict(zip(ids, result.interference_w.tolist(), strict=True))
        out, start = {}, 0
        for cell, edge, u in zip(self.cells, self.edges, uploads, strict=True):
            edge.uplink.set_round(rate, sinr, power)
            m = len(u.clients)
            out[cell] = 10.0 * np.log10(np.maximum(result.sinr[start : start + m], 1e-300))
            start += m
        return out

    def _update_factors(self, uploads: list[CellUploads], rate_sinr: np.ndarray) -> None:
        """With ``cells.controller_sees: last_round``, each cell's next factor: the mean over
        its uploads of SNR / SINR = 1 + I/N0 (under either noise rule: SNR / rate SINR); a cell
        without uploads keeps its factor."""
        if self.scenario.cells.controller_sees != "last_round":
            return
        start = 0
        for edge, u in zip(self.edges, uploads, strict=True):
            m = len(u.clients)
            rate = rate_sinr[start : start + m]
            ok = rate > 0
            if ok.any():
                edge.edge.interference_factor = float(np.mean(u.snr[ok] / rate[ok]))
            start += m

    def _average(self) -> None:
        """The cloud's weighted mean of the edge models, sent back to every edge."""
        learners = [edge.learner for edge in self.edges]
        states = [learner.model_state() for learner in learners]
        average = learners[0].average_model_states(states, self.weights)
        for learner in learners:
            learner.load_model_state(average)
