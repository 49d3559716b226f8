"""The event-driven modes: FedAsync, FedBuff and semi-synchronous aggregation over the shared band.

``server.mode`` async | buffered | semi_sync (docs/simulator.md, "Asynchronous rounds"). Up to
C = ``server.concurrency`` clients train at once. A client is *dispatched* with the global model
version it downloads (v = the aggregations done), computes for ``flops / flops_per_s`` seconds,
then uploads its bits over the band that the uploads on the air share
(:class:`~wirelessfl.sim.shared_band.SharedBand`: B / n(t) each, re-divided at every upload
start and end). Its SNR and transmit power are the channel's row t (the aggregation index at
its dispatch) at its dispatch time, fixed for its upload.

The server aggregates:

- async: at every arrival (FedAsync), one update;
- buffered: at every M-th arrival (FedBuff, M = ``server.buffer_size``);
- semi_sync: every ``server.deadline_s`` after the previous aggregation, whatever arrived
  since (possibly nothing); an upload still running then is not discarded: it arrives later
  and is taken, stale, by a later aggregation.

with the weights of :mod:`wirelessfl.sim.staleness` (tau = aggregations done - v). A freed
slot (an upload that ended) is refilled at once (async, buffered) with an idle client: one with
no update in the system (a client whose update waits in FedBuff's buffer is idle again once it
is aggregated). ``server.dispatch: random`` draws it uniformly: the idle ids sorted and the
index ``Generator(seed, "dispatch", j).integers(n_idle)`` for the j-th dispatch of the run
(``channels.streams.round_generator``); ``controller`` lets the controller choose
(:meth:`~wirelessfl.controllers.base.Controller.choose_dispatch`). A slot with nobody idle to
take it waits for the next aggregation. The controller decides each dispatched client's rank
and ratio (:meth:`~wirelessfl.controllers.base.Controller.decide_dispatch`) and, at each
aggregation, takes the latencies (compute + upload) and energy of the updates it took. After
an aggregation the refill downloads the new version. semi_sync refills only at its
aggregations (and at time 0), as a synchronous round would.

Time is computed in closed form (the processor-sharing formulas of
:mod:`wirelessfl.sim.shared_band`, events in time order;
at equal times an upload end comes before an upload start, and both before a semi-sync
deadline), and SimPy's clock waits for each aggregation: the tables equal those of SimPy
processes per client re-dividing the band at each event. Each call of
:meth:`AsyncEngine.aggregation` runs one aggregation (one row of ``rounds.csv``).
"""

from __future__ import annotations

import bisect
import heapq
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from channels.fdma import spectral_efficiency
from channels.streams import round_generator
from wirelessfl.algorithms.finite import KEPT
from wirelessfl.controllers.dispatch import DispatchCandidates
from wirelessfl.errors import ConfigError, SimulationError, UserError
from wirelessfl.learners.base import ClientReport, RoundPlan, WeightedUpdate
from wirelessfl.sim.energy import RoundEnergy
from wirelessfl.sim.events import SERVER, EventLog, Kind
from wirelessfl.sim.outcome import RoundOutcome, delay_to
from wirelessfl.sim.shared_band import SharedBand
from wirelessfl.sim.staleness import buffered_weights, fedasync_weight

__all__ = ["AsyncEngine"]


@dataclass
class Update:
    """One client's update from its dispatch to the aggregation that takes it (times [s])."""

    client: int
    dispatch: int  # j: the run's dispatch counter
    version: int  # the model version it downloaded (aggregations done then)
    dispatch_s: float
    compute_s: float
    snr: float  # linear, fixed for its upload
    tx_power_w: float
    report: ClientReport
    upload_start_s: float = math.nan
    arrival_s: float = math.nan
    staleness: int = -1
    weight: float = math.nan
    planned_latency_s: float = math.nan  # the controller's plan: compute + upload at share 1/C
    bound: float = math.nan  # the controller's penalty gamma_k of the update
    fallbacks: int = 0  # solver fallbacks of its decision

    @property
    def upload_s(self) -> float:
        return self.arrival_s - self.upload_start_s


@dataclass
class _Period:
    """What happens between two aggregations (the rows of one call)."""

    t: int
    start_s: float
    log: EventLog = field(default_factory=EventLog)
    dispatched: list[Update] = field(default_factory=list)


class AsyncEngine:
    """Runs the event-driven modes for a simulator (module docstring)."""

    def __init__(self, sim: Any) -> None:
        """``sim``: the :class:`~wirelessfl.sim.simulator.Simulator` that owns the engine (its
        channel, devices, learner, clock and checks)."""
        self.sim = sim
        sc = sim.scenario
        self.server = sc.server
        self.mode = sc.server.mode
        self.concurrency = sc.server.concurrency or sc.n_scheduled
        refusal = sim.learner.event_driven_refusal()
        if refusal is not None:
            raise ConfigError(
                f"server.mode: {self.mode} needs a learner that adds single weighted updates, "
                f"and {refusal}; use server.mode: sync"
            )
        self.band = SharedBand()
        self.computing: list[tuple[float, int]] = []  # (compute end [s], client), a heap
        self.busy: dict[int, Update] = {}
        self.idle = list(range(sc.n_clients))  # sorted
        self.buffer: list[Update] = []  # arrived, not yet aggregated
        self.n_dispatched = 0
        self.version = 0

    # ---- resume ------------------------------------------------------------------------------
    @staticmethod
    def refuse_resume(mode: str, next_round: int) -> None:
        """A checkpoint after aggregation 0 holds uploads in flight, which it does not record
        yet: one line instead of a resume that would differ."""
        if next_round > 0:
            raise UserError(
                f"--resume: server.mode: {mode} runs cannot resume mid-way yet (uploads in "
                f"flight at aggregation {next_round} are not checkpointed); run the scenario "
                "again into a new folder"
            )

    # ---- one aggregation ---------------------------------------------------------------------
    def aggregation(self, t: int):
        """SimPy process of aggregation t: events up to it, the server update, the record."""
        env = self.sim.env
        period = _Period(t, env.now)
        self.version = t
        deadline_s = math.inf
        if self.mode == "semi_sync":
            deadline_s = env.now + self.server.deadline_s
        now = float(env.now)
        self._refill(period, now)
        taken = self._run_until_aggregation(period, now, deadline_s)
        end_s = taken[1]
        if end_s > env.now:
            yield env.timeout(delay_to(env.now, end_s))
        return self._aggregate(period, taken[0], end_s)

    def _run_until_aggregation(
        self, period: _Period, now: float, deadline_s: float
    ) -> tuple[list[Update], float]:
        """Advance the events to the next aggregation; the updates it takes and its time."""
        while True:
            upload_end = now + self.band.next_end_in_s()
            compute_end = self.computing[0][0] if self.computing else math.inf
            next_s = min(upload_end, compute_end, deadline_s)
            if math.isinf(next_s):
                raise SimulationError(
                    f"round {period.t}: no upload can arrive (every client on the air has no "
                    "rate); check the channel"
                )
            self.band.advance(next_s - now)
            now = next_s
            if upload_end == next_s:
                u = self.busy.pop(self.band.end_next())
                u.arrival_s = now
                period.log.add(now, Kind.UPLOAD_END, u.client, u.report.bits_up)
                self.buffer.append(u)
                if self.mode == "async" or (
                    self.mode == "buffered" and len(self.buffer) >= self.server.buffer_size
                ):
                    taken, self.buffer = self.buffer, []
                    return taken, now
                if self.mode == "buffered":
                    self._refill(period, now)
            elif compute_end == next_s:
                _, client = heapq.heappop(self.computing)
                u = self.busy[client]
                u.upload_start_s = now
                period.log.add(now, Kind.COMPUTE_END, client)
                period.log.add(now, Kind.UPLOAD_START, client)
                self.band.start(client, u.report.bits_up, self._full_rate_bps(u.snr))
            else:  # the semi-sync deadline
                taken, self.buffer = self.buffer, []
                return taken, now

    def _full_rate_bps(self, snr: float) -> float:
        """c_k = B log2(1 + SNR_k): the rate on the whole band."""
        return float(self.sim.scenario.channel.bandwidth_hz * spectral_efficiency(snr))

    # ---- dispatch ----------------------------------------------------------------------------
    def _refill(self, period: _Period, now: float) -> None:
        """Dispatch idle clients (``server.dispatch``) until C train at once, each at the rank
        and ratio the controller decides."""
        free = min(self.concurrency - len(self.busy), len(self.idle))
        if free <= 0:
            return
        sim, sc = self.sim, self.sim.scenario
        snr_all, power_all = sim.channel.observe(period.t, now)
        if self.server.dispatch == "controller":
            idle = np.asarray(self.idle, dtype=int)
            candidates = self._candidates(idle, snr_all, power_all)
            rows = sim.controller.choose_dispatch(candidates, free, self.n_dispatched)
            clients = idle[rows].tolist()
            for client in clients:
                self.idle.remove(client)
        else:
            clients = []
            for j in range(self.n_dispatched, self.n_dispatched + free):
                rng = round_generator(sc.seed, stream="dispatch", round_index=j)
                clients.append(self.idle.pop(int(rng.integers(len(self.idle)))))
        first = self.n_dispatched
        self.n_dispatched += free
        candidates = self._candidates(np.asarray(clients, dtype=int), snr_all, power_all)
        decision = sim.controller.decide_dispatch(candidates, first)
        keep_start = self.mode == "async"
        for i, client in enumerate(clients):  # one plan per dispatch: its round index is j
            j, rank, ratio = first + i, int(decision.ranks[i]), float(decision.ratios[i])
            plan = RoundPlan(j, np.array([client]), rank, ratio, math.nan, self.concurrency)
            report = sim.learner.dispatch(plan, keep_start=keep_start)[client]
            compute_s = 0.0
            if sc.devices.include_compute:
                compute_s = report.flops / float(sim.flops_per_s[client])
            u = Update(
                client,
                j,
                self.version,
                now,
                compute_s,
                float(snr_all[client]),
                float(power_all[client]),
                report,
                planned_latency_s=float(decision.latency_s[i]),
                bound=float(decision.bound[i]),
                fallbacks=int(decision.fallbacks[i]),
            )
            self.busy[client] = u
            period.dispatched.append(u)
            period.log.add(now, Kind.COMPUTE_START, client, float(self.version))
            heapq.heappush(self.computing, (now + compute_s, client))

    def _candidates(
        self, clients: np.ndarray, snr_all: np.ndarray, power_all: np.ndarray
    ) -> DispatchCandidates:
        """What the controller knows of ``clients`` (N-long channel rows observed now)."""
        sim, n = self.sim, len(clients)
        compute_s = np.zeros(n)
        if sim.scenario.devices.include_compute:
            compute_s = sim._compute_estimate(clients)
        compute_j = np.zeros(n)
        if sim.controller.energy_queues is not None and n:
            flops = np.full(n, float(sim.learner.expected_flops(sim.rank)))
            classes = None if sim.client_class is None else [sim.client_class[c] for c in clients]
            compute_j = np.asarray(sim.compute_energy.energy_j(flops, classes), dtype=float)
        return DispatchCandidates(
            clients,
            np.asarray(snr_all[clients], dtype=float),
            np.asarray(power_all[clients], dtype=float),
            np.asarray(compute_s, dtype=float),
            compute_j,
            self.concurrency,
        )

    # ---- the server update and the record -----------------------------------------------------
    def _weights(self, taken: list[Update]) -> list[WeightedUpdate]:
        """Each taken update's staleness and weight (``wirelessfl.sim.staleness``)."""
        sv = self.server
        for u in taken:
            u.staleness = self.version - u.version
        if self.mode == "async":
            (u,) = taken
            u.weight = fedasync_weight(
                sv.alpha, u.staleness, sv.staleness, sv.staleness_a, sv.staleness_b
            )
            return [WeightedUpdate(u.client, u.weight, 1.0, u.staleness)]
        weights = buffered_weights(
            [u.staleness for u in taken], sv.server_lr, sv.staleness, sv.staleness_a, sv.staleness_b
        )
        for u, w in zip(taken, weights, strict=True):
            u.weight = w
        return [WeightedUpdate(u.client, u.weight, 0.0, u.staleness) for u in taken]

    def _aggregate(self, period: _Period, taken: list[Update], end_s: float) -> RoundOutcome:
        sim, t = self.sim, period.t
        updates = self._weights(taken)
        metrics = sim.learner.add_updates(t, updates)
        for u in taken:  # idle again: a client has one update in the system at a time
            bisect.insort(self.idle, u.client)
        sim._check_metrics(t, metrics, len(taken))
        events = period.log.table().with_event(end_s, Kind.AGGREGATE, SERVER, float(len(taken)))
        sc = sim.scenario
        evaluation = {}
        if (t + 1) % sc.eval_every == 0 or t == sc.rounds - 1:
            evaluation = sim._checked_evaluation(t, f"round {t}", KEPT)
        energy = self._energy(taken)
        control = self._observe_controller(taken, energy)
        record = self._record(period, taken, end_s, metrics, evaluation, energy, control)
        rows = self._client_rows(t, taken, energy) if sc.output.clients else []
        return RoundOutcome(record, events, rows, energy)

    def _observe_controller(self, taken: list[Update], energy: RoundEnergy) -> dict[str, float]:
        """The controller's queues take the aggregation's updates (eq. 21 per update with its
        compute + upload latency; the energy queues their energy); its ``rounds.csv`` columns."""
        controller, nan = self.sim.controller, math.nan
        queue = controller.queue
        queue_after = controller.observe_updates(
            np.array([u.compute_s + u.upload_s for u in taken], dtype=float)
        )
        energy_queue = nan
        if controller.energy_queues is not None:
            controller.observe_energy(energy.per_device(self.sim.scenario.n_clients))
            energy_queue = float(np.mean(controller.energy_queues.value))

        def mean(values: list[float]) -> float:
            return float(np.mean(values)) if values else nan

        return {
            "queue": queue,
            "queue_after": queue_after,
            "sparsification": mean([u.report.ratio for u in taken]),
            "planned_delay_s": mean([u.planned_latency_s for u in taken]),
            "bound": mean([u.bound for u in taken]),
            "solver_fallback": sum(u.fallbacks for u in taken),
            "energy_queue_mean_j": energy_queue,
        }

    def _energy(self, taken: list[Update]) -> RoundEnergy:
        """The taken updates' whole compute energy and transmit power x upload time [J]."""
        sim = self.sim
        clients = np.array([u.client for u in taken], dtype=int)
        flops = np.array([u.report.flops for u in taken], dtype=float)
        classes = None if sim.client_class is None else [sim.client_class[c] for c in clients]
        compute_j = (
            sim.compute_energy.energy_j(flops, classes) if taken else np.zeros(0, dtype=float)
        )
        transmit_j = np.array([u.tx_power_w * u.upload_s for u in taken], dtype=float)
        return RoundEnergy(clients, np.asarray(compute_j, dtype=float), transmit_j)

    def _record(
        self,
        period: _Period,
        taken: list[Update],
        end_s: float,
        metrics: dict[str, float],
        evaluation: dict[str, float],
        energy: RoundEnergy,
        control: dict[str, float],
    ) -> dict:
        """The aggregation's ``rounds.csv`` row (docs/simulator.md, "Asynchronous rounds");
        ``control``: the controller's columns (:meth:`_observe_controller`)."""
        sim, nan = self.sim, math.nan
        snr_db = [10.0 * math.log10(max(u.snr, 1e-300)) for u in taken]
        staleness = [u.staleness for u in taken]
        record = {
            "round": period.t,
            "t_start_s": period.start_s,
            "t_end_s": end_s,
            "delay_s": max((u.upload_s for u in taken), default=0.0),
            "completion_s": end_s - period.start_s,
            **control,
            "rank": sim.rank,
            "mean_client_rank": (float(np.mean([u.report.rank for u in taken])) if taken else nan),
            "n_scheduled": len(period.dispatched),
            "n_arrived": len(taken),
            "n_dropped": 0,
            "n_outage": 0,
            "n_unavailable": 0,
            "n_stragglers": 0,
            "bits_up": float(sum(u.report.bits_up for u in taken)),
            "bits_down": float(sum(u.report.bits_down for u in period.dispatched)),
            "index_bits": float(sum(u.report.index_bits for u in taken)),
            "mean_snr_db": float(np.mean(snr_db)) if taken else nan,
            "min_snr_db": float(np.min(snr_db)) if taken else nan,
            "compute_energy_j": float(energy.compute_j.sum()),
            "transmit_energy_j": float(energy.transmit_j.sum()),
            "loss": metrics.get("loss", nan),
            "accuracy": evaluation.get("accuracy", nan),
            "test_loss": evaluation.get("test_loss", nan),
            "cov_norm": nan,
            "orth_residual": nan,
            "version": period.t + 1,
            "mean_staleness": float(np.mean(staleness)) if taken else nan,
            "max_staleness": float(max(staleness)) if taken else nan,
            "n_in_flight": len(self.busy) + len(self.buffer),
        }
        for name, column in sim.metric_columns.items():
            record[column] = metrics.get(name, nan)
        return record

    def _client_rows(self, t: int, taken: list[Update], energy: RoundEnergy) -> list[dict]:
        """``clients.csv`` rows: one per taken update, in arrival order."""
        return [
            {
                "round": t,
                "client": u.client,
                "dispatch_s": u.dispatch_s,
                "upload_start_s": u.upload_start_s,
                "arrival_s": u.arrival_s,
                "compute_s": u.compute_s,
                "upload_s": u.upload_s,
                "snr_db": 10.0 * math.log10(max(u.snr, 1e-300)),
                "bits": u.report.bits_up,
                "bits_down": u.report.bits_down,
                "rank": u.report.rank,
                "ratio": u.report.ratio,
                "version": u.version,
                "staleness": u.staleness,
                "weight": u.weight,
                "tx_power_w": u.tx_power_w,
                "compute_energy_j": float(e_c),
                "transmit_energy_j": float(e_t),
            }
            for u, e_c, e_t in zip(taken, energy.compute_j, energy.transmit_j, strict=True)
        ]
