"""The event-driven modes: FedAsync, FedBuff and semi-synchronous aggregation over the shared band.

``server.mode`` async | buffered | semi_sync (docs/simulator.md, "Asynchronous rounds"). Up to
C = ``server.concurrency`` clients train at once. A client is *dispatched* with the global model
version it downloads (v = the aggregations done); with ``channel.downlink_rate_bps`` = R > 0 it
first downloads its ``bits_down`` over the downlink that the downloads in progress share (R /
n_down(t) each, a second :class:`~wirelessfl.sim.shared_band.SharedBand`), then computes for
``flops / flops_per_s`` seconds, then uploads its bits over the band that the uploads on the
air share (:class:`~wirelessfl.sim.shared_band.SharedBand`: B / n(t) each, re-divided at every
upload start and end). Its SNR and transmit power are the channel's row t (the aggregation
index at its dispatch) at its dispatch time, fixed for its upload. Availability and faults
(:mod:`wirelessfl.sim.dispatch_checks`) decide who may be dispatched and which updates are
lost, and ``faults.deadline_s`` cuts an update still in flight that long after its dispatch
(a straggler): a lost update frees its slot, and its client sits out until the next
aggregation.

The server aggregates:

- async: at every arrival (FedAsync), one update;
- buffered: at every M-th arrival (FedBuff, M = ``server.buffer_size``);
- semi_sync: every ``server.deadline_s`` after the previous aggregation, whatever arrived
  since (possibly nothing); an upload still running then is not discarded: it arrives later
  and is taken, stale, by a later aggregation.

with the weights of :mod:`wirelessfl.servers` (tau = aggregations done - v). A freed
slot (an upload that ended) is refilled at once (async, buffered) with an eligible client: an
idle one (no update in the system: a client whose update waits in FedBuff's buffer is idle again
once it is aggregated), and with ``selection.available_only`` an available one.
``server.dispatch: random`` draws it uniformly: the eligible ids sorted and the index
``Generator(seed, "dispatch", j).integers(n)`` for the j-th dispatch of the run
(``channels.streams.round_generator``); ``controller`` lets the controller choose
(:meth:`~wirelessfl.controllers.base.Controller.choose_dispatch`). A slot with nobody eligible
to take it waits for the next aggregation. The controller decides each dispatched client's
rank and ratio (:meth:`~wirelessfl.controllers.base.Controller.decide_dispatch`) and, at each
aggregation, takes the latencies (compute + upload) and energy of the updates it took (and the
energy of those lost). After an aggregation the refill downloads the new version. semi_sync
refills only at its aggregations (and at time 0), as a synchronous round would. When nothing
is in flight and nobody may be dispatched because of availability or faults, the aggregation
comes ``availability.empty_round_s`` later and takes nothing.

Time is computed in closed form (the processor-sharing formulas of
:mod:`wirelessfl.sim.shared_band`, events in time order; at equal times an upload end comes
before a download end, that before a compute end, and all before a semi-sync deadline), and
SimPy's clock waits for each aggregation: the tables equal those of SimPy processes per client
re-dividing the band at each event. Each call of
:meth:`AsyncEngine.aggregation` runs one aggregation (one row of ``rounds.csv``);
:meth:`AsyncEngine.state` is what a checkpoint between two aggregations records of the
uploads in flight, so that ``--resume`` continues exactly.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Iterator
from dataclasses import dataclass, field, fields

import numpy as np

from channels.radio_decisions import compute_delay_at_clock_s, snr_at_power
from channels.streams import round_generator
from wirelessfl.algorithms.finite import KEPT
from wirelessfl.controllers.dispatch import DispatchCandidates
from wirelessfl.errors import ConfigError, SimulationError, UserError
from wirelessfl.learners.base import ClientReport, RoundPlan, WeightedUpdate
from wirelessfl.servers import server_mode
from wirelessfl.sim.dispatch_checks import DispatchChecks
from wirelessfl.sim.energy import RoundEnergy
from wirelessfl.sim.engine_host import EngineHost
from wirelessfl.sim.events import SERVER, EventLog, Kind
from wirelessfl.sim.outcome import RoundOutcome, delay_to
from wirelessfl.sim.shared_band import SharedBand

__all__ = ["AsyncEngine"]

#: ``clients.csv``'s status of an update lost by each kind of event (the synchronous words)
LOST_STATUS = {
    Kind.DROP: "dropped",
    Kind.OUTAGE: "outage",
    Kind.UNAVAILABLE: "unavailable",
    Kind.STRAGGLER: "straggler",
}


@dataclass
class Update:
    """One client's update from its dispatch to the aggregation that takes it, or to the
    instant it is lost (times [s])."""

    client: int
    dispatch: int  # j: the run's dispatch counter
    version: int  # the model version it downloaded (aggregations done then)
    dispatch_s: float
    compute_s: float
    snr: float  # linear, fixed for its upload
    tx_power_w: float
    report: ClientReport
    compute_start_s: float = math.nan  # its download's end
    upload_start_s: float = math.nan
    arrival_s: float = math.nan
    staleness: int = -1
    weight: float = math.nan
    status: str = "arrived"  # or how it was lost (LOST_STATUS)
    lost_s: float = math.nan  # when it was lost

    @property
    def download_s(self) -> float:
        return self.compute_start_s - self.dispatch_s

    planned_latency_s: float = math.nan  # the controller's plan: compute + upload at share 1/C
    bound: float = math.nan  # the controller's penalty gamma_k of the update
    fallbacks: int = 0  # solver fallbacks of its decision
    cpu_hz: float | None = None  # its clock (None: the energy model's, f_max)

    @property
    def upload_s(self) -> float:
        return self.arrival_s - self.upload_start_s

    @property
    def computed_fraction(self) -> float:
        """The part of its compute done: 1 once it ended, the part up to a cut, else 0."""
        if not math.isnan(self.upload_start_s):
            return 1.0
        if math.isnan(self.compute_start_s) or math.isnan(self.lost_s):
            return 0.0
        if self.compute_s <= 0.0:
            return 1.0
        return (self.lost_s - self.compute_start_s) / self.compute_s

    @property
    def transmitted_s(self) -> float:
        """Time it transmitted [s]: its upload up to its arrival or its loss (0: none)."""
        if math.isnan(self.upload_start_s):
            return 0.0
        end_s = self.lost_s if math.isnan(self.arrival_s) else self.arrival_s
        return end_s - self.upload_start_s

    def state(self) -> dict:
        """Its fields as JSON values (the report as a mapping)."""
        state = {f.name: getattr(self, f.name) for f in fields(self)}
        state["report"] = {f.name: getattr(self.report, f.name) for f in fields(self.report)}
        return state

    @classmethod
    def from_state(cls, state: dict) -> Update:
        """The update :meth:`state` describes."""
        return cls(**{**state, "report": ClientReport(**state["report"])})


@dataclass
class _Period:
    """What happens between two aggregations (the rows of one call)."""

    t: int
    start_s: float
    log: EventLog = field(default_factory=EventLog)
    dispatched: list[Update] = field(default_factory=list)
    lost: list[Update] = field(default_factory=list)  # dropped, outage, unavailable, straggler


class AsyncEngine:
    """Runs the event-driven modes for a simulator (module docstring)."""

    def __init__(self, sim: EngineHost) -> None:
        """``sim``: the simulator that owns the engine (its channel, devices, learner, clock
        and checks; :class:`~wirelessfl.sim.engine_host.EngineHost`)."""
        self.sim = sim
        sc = sim.scenario
        self.server = sc.server
        self.mode = sc.server.mode
        #: when to aggregate, with what weights (wirelessfl.servers)
        self.policy = server_mode(sc)
        self.concurrency = self.policy.concurrency
        refusal = sim.learner.event_driven_refusal()
        if refusal is not None:
            raise ConfigError(
                f"server.mode: {self.mode} needs a learner that adds single weighted updates, "
                f"and {refusal}; use server.mode: sync"
            )
        decides = [
            what
            for what, flag in (
                ("transmit powers", sim.controller.decides_tx_power),
                ("CPU clocks", sim.controller.decides_cpu_frequency),
            )
            if flag
        ]
        if decides and not sim.controller.decides_radio_per_dispatch:
            raise ConfigError(
                f"server.mode: {self.mode} asks the controller for rank and ratio per dispatch, "
                f"and controller {sc.controller.name!r} decides {' and '.join(decides)} per "
                "synchronous round; use server.mode: sync"
            )
        self.band = SharedBand()
        self.downlink = SharedBand()  # the downloads in progress, at R / n_down(t) each
        self.downlink_rate_bps = sc.channel.downlink_rate_bps  # R; 0: instantaneous
        self.checks = DispatchChecks(sim)
        self.benched: list[int] = []  # lost an update: out until the next aggregation
        self.cutoff_s = sc.faults.deadline_s  # per update, from its dispatch (None: none)
        self.cuts: list[tuple[float, int, int]] = []  # (dispatch + cutoff [s], j, client), a heap
        self.computing: list[tuple[float, int]] = []  # (compute end [s], client), a heap
        self.busy: dict[int, Update] = {}
        self.idle = list(range(sc.n_clients))  # sorted
        self.buffer: list[Update] = []  # arrived, not yet aggregated
        self.n_dispatched = 0
        self.version = 0

    # ---- checkpoint ----------------------------------------------------------------------------
    def state(self) -> dict:
        """Everything the engine needs to continue exactly after an aggregation (JSON values;
        JSON keeps a float's shortest repr, so every time and SNR comes back bit for bit):
        the dispatch counter, the idle and the benched clients, the compute heap, the
        per-update deadline cuts, the shared uplink and downlink (each as a list in heap order,
        so they pop in the same order), the updates dispatched and not yet arrived, and
        FedBuff's buffer (arrived, not yet aggregated)."""
        return {
            "n_dispatched": self.n_dispatched,
            "idle": list(self.idle),
            "benched": list(self.benched),
            "computing": [[end_s, client] for end_s, client in self.computing],
            "cuts": [[cut_s, j, client] for cut_s, j, client in self.cuts],
            "band": self.band.state(),
            "downlink": self.downlink.state(),
            "busy": [u.state() for u in self.busy.values()],
            "buffer": [u.state() for u in self.buffer],
        }

    def restore(self, state: dict) -> None:
        """Continue from :meth:`state` (the model version is the next aggregation's index)."""
        self.n_dispatched = int(state["n_dispatched"])
        self.idle = [int(c) for c in state["idle"]]
        self.benched = [int(c) for c in state["benched"]]
        self.computing = [(float(end_s), int(client)) for end_s, client in state["computing"]]
        self.cuts = [(float(cut_s), int(j), int(client)) for cut_s, j, client in state["cuts"]]
        self.band.restore(state["band"])
        self.downlink.restore(state["downlink"])
        busy = [Update.from_state(u) for u in state["busy"]]
        self.busy = {u.client: u for u in busy}
        self.buffer = [Update.from_state(u) for u in state["buffer"]]

    @staticmethod
    def refuse_missing_state(mode: str, next_round: int) -> None:
        """A checkpoint without the engine's state (written by a version that did not record
        the uploads in flight): one line instead of a resume that would differ."""
        raise UserError(
            f"--resume: the checkpoint of this server.mode: {mode} run (at aggregation "
            f"{next_round}) does not record its uploads in flight (written by an older version "
            "of wirelessfl); run the scenario again into a new folder"
        )

    # ---- one aggregation ---------------------------------------------------------------------
    def aggregation(self, t: int):
        """SimPy process of aggregation t: events up to it, the server update, the record."""
        env = self.sim.env
        period = _Period(t, env.now)
        self.version = t
        deadline_s = env.now + self.policy.period_s()  # inf: the arrivals decide
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
            download_end = now + self.downlink.next_end_in_s()
            compute_end = self.computing[0][0] if self.computing else math.inf
            cut = self._next_cut_s()
            next_s = min(upload_end, download_end, compute_end, cut, deadline_s)
            if math.isinf(next_s):
                return self._stalled(period, now)
            self.band.advance(next_s - now)
            self.downlink.advance(next_s - now)
            now = next_s
            if upload_end == next_s:
                u = self.busy[self.band.end_next()]
                if self._left(period, u, now):
                    continue
                del self.busy[u.client]
                u.arrival_s = now
                period.log.add(now, Kind.UPLOAD_END, u.client, u.report.bits_up)
                self.buffer.append(u)
                if self.policy.aggregates_on_arrival(len(self.buffer)):
                    taken, self.buffer = self.buffer, []
                    return taken, now
                if self.policy.KEEPS_SLOTS_FULL:
                    self._refill(period, now)
            elif download_end == next_s:
                u = self.busy[self.downlink.end_next()]
                period.log.add(now, Kind.DOWNLOAD_END, u.client, u.report.bits_down)
                if not self._left(period, u, now):
                    self._start_compute(period, u, now)
            elif compute_end == next_s:
                _, client = heapq.heappop(self.computing)
                u = self.busy[client]
                u.upload_start_s = now
                period.log.add(now, Kind.COMPUTE_END, client)
                if not self._left(period, u, now):
                    period.log.add(now, Kind.UPLOAD_START, client)
                    self.band.start(client, u.report.bits_up, self._full_rate_bps(u.snr))
            elif cut == next_s:
                self._cut(period, now)
            else:  # the semi-sync deadline
                taken, self.buffer = self.buffer, []
                return taken, now

    def _next_cut_s(self) -> float:
        """When the next update still in flight reaches ``faults.deadline_s`` (inf: none)."""
        cuts, busy = self.cuts, self.busy
        while cuts and (cuts[0][2] not in busy or busy[cuts[0][2]].dispatch != cuts[0][1]):
            heapq.heappop(cuts)  # arrived or lost before its cut
        return cuts[0][0] if cuts else math.inf

    def _cut(self, period: _Period, now: float) -> None:
        """The update at the top of the cut heap is a straggler: taken off the downlink, its
        compute or the band, and lost (its slot refilled, async and buffered)."""
        _, _, client = heapq.heappop(self.cuts)
        u = self.busy.pop(client)
        if math.isnan(u.compute_start_s):
            self.downlink.remove(client)
        elif math.isnan(u.upload_start_s):
            self.computing = [c for c in self.computing if c[1] != client]
            heapq.heapify(self.computing)
        else:
            self.band.remove(client)
        self.sim.learner.discard_updates([client])
        self._lose(period, u, Kind.STRAGGLER, now)
        if self.policy.KEEPS_SLOTS_FULL:
            self._refill(period, now)

    def _stalled(self, period: _Period, now: float) -> tuple[list[Update], float]:
        """No event is ahead: an empty aggregation ``availability.empty_round_s`` later when
        nothing is in flight and availability or faults keep the slots empty, else an error."""
        checks = self.checks
        if not self.busy and (
            self.benched
            or len(checks.eligible(self.idle, checks.available(period.t, now))) < len(self.idle)
        ):
            return [], now + self.sim.scenario.availability.empty_round_s
        raise SimulationError(
            f"round {period.t}: no upload can arrive (every client on the air has no "
            "rate); check the channel"
        )

    def _left(self, period: _Period, u: Update, now: float) -> bool:
        """Whether ``u``'s client has left (not available at the end of its phase ``now``):
        then its update is lost and its slot refilled (async, buffered)."""
        if not self.checks.has_left(u.client, period.t, now):
            return False
        del self.busy[u.client]
        self.sim.learner.discard_updates([u.client])
        self._lose(period, u, Kind.UNAVAILABLE, now)
        if self.policy.KEEPS_SLOTS_FULL:
            self._refill(period, now)
        return True

    def _lose(self, period: _Period, u: Update, kind: Kind, now: float) -> None:
        """``u`` is lost at ``now`` (``kind``: drop, outage, unavailable or straggler); its
        client sits out until the next aggregation."""
        u.status, u.lost_s = LOST_STATUS[kind], now
        period.log.add(now, kind, u.client)
        period.lost.append(u)
        self.benched.append(u.client)

    def _start_compute(self, period: _Period, u: Update, now: float) -> None:
        """``u``'s download ended at ``now``: its compute starts (value: the version)."""
        u.compute_start_s = now
        period.log.add(now, Kind.COMPUTE_START, u.client, float(u.version))
        heapq.heappush(self.computing, (now + u.compute_s, u.client))

    def _full_rate_bps(self, snr: float) -> float:
        """c_k: the uplink's rate on the whole band (FDMA: B log2(1 + SNR_k))."""
        return self.sim.uplink.full_band_rate_bps(snr)

    # ---- dispatch ----------------------------------------------------------------------------
    def _refill(self, period: _Period, now: float) -> None:
        """Dispatch eligible clients (:meth:`DispatchChecks.eligible`, chosen by
        ``server.dispatch``) until C train at once, each at the rank and ratio the controller
        decides; a dispatch that does not train (a fault) frees the slot at once. The clients
        that train between two faults are decided in one call of the controller and dispatched
        in their order, so every effect comes in the order of the dispatches."""
        if len(self.busy) >= self.concurrency or not self.idle:
            return
        sim, sc, checks = self.sim, self.sim.scenario, self.checks
        snr_all, power_all = sim.channel.observe(period.t, now)
        available = checks.available(period.t, now)
        # server.dispatch: controller, best first; within one refill the eligible clients only
        # lose those dispatched (taken from the front), so the next in order is eligible
        order: Iterator[int] | None = None
        trainees: list[tuple[int, int]] = []  # (j, client), decided and dispatched together
        while len(self.busy) + len(trainees) < self.concurrency:
            pool = checks.eligible(self.idle, available)
            if not pool:
                break
            j = self.n_dispatched
            if self.server.dispatch == "controller":
                if order is None:
                    order = iter(self._controller_order(pool, snr_all, power_all, j))
                client = next(order)
            else:
                rng = round_generator(sc.seed, stream="dispatch", round_index=j)
                client = pool[int(rng.integers(len(pool)))]
            self.idle.pop(bisect.bisect_left(self.idle, client))
            self.n_dispatched += 1
            snr, power = float(snr_all[client]), float(power_all[client])
            fault = checks.at_dispatch(j, client, snr, available)
            if fault is None:
                trainees.append((j, client))
                continue
            self._train(period, now, trainees, snr_all, power_all)
            trainees = []
            u = Update(client, j, self.version, now, 0.0, snr, power, self._no_training())
            period.dispatched.append(u)
            self._lose(period, u, fault, now)
        self._train(period, now, trainees, snr_all, power_all)

    def _train(
        self,
        period: _Period,
        now: float,
        trainees: list[tuple[int, int]],
        snr_all: np.ndarray,
        power_all: np.ndarray,
    ) -> None:
        """Dispatch ``trainees`` ((j, client) with consecutive j) at ``now``: the controller's
        rank and ratio for each, the learner's update, then the download or the compute."""
        if not trainees:
            return
        sim, sc = self.sim, self.sim.scenario
        clients = np.array([client for _, client in trainees], dtype=int)
        decision = sim.controller.decide_dispatch(
            self._candidates(clients, snr_all, power_all), trainees[0][0]
        )
        keep_start = self.policy.MIXES_START
        for i, (j, client) in enumerate(trainees):
            rank, ratio = int(decision.ranks[i]), float(decision.ratios[i])
            # one plan per dispatch: its round index is j
            plan = RoundPlan(j, np.array([client]), rank, ratio, math.nan, self.concurrency)
            report = sim.learner.dispatch(plan, keep_start=keep_start)[client]
            compute_s = 0.0
            if sc.devices.include_compute:
                compute_s = report.flops / float(sim.flops_per_s[client])
            snr, power, clock = float(snr_all[client]), float(power_all[client]), None
            if decision.tx_power_w is not None:  # the channel observed at power, sent at p_k
                snr, power = (
                    float(snr_at_power(snr, decision.tx_power_w[i], power)),
                    float(decision.tx_power_w[i]),
                )
            if decision.cpu_hz is not None:
                clock, f_max = float(decision.cpu_hz[i]), float(sim.cpu_hz_max[client])
                compute_s = float(compute_delay_at_clock_s(compute_s, 1.0, clock, f_max))
            u = Update(
                client,
                j,
                self.version,
                now,
                compute_s,
                snr,
                power,
                report,
                planned_latency_s=float(decision.latency_s[i]),
                bound=float(decision.bound[i]),
                fallbacks=int(decision.fallbacks[i]),
                cpu_hz=clock,
            )
            self.busy[client] = u
            period.dispatched.append(u)
            if self.cutoff_s is not None:
                heapq.heappush(self.cuts, (now + self.cutoff_s, j, client))
            if self.downlink_rate_bps > 0:
                period.log.add(now, Kind.DOWNLOAD_START, client, float(self.version))
                self.downlink.start(client, report.bits_down, self.downlink_rate_bps)
            else:
                self._start_compute(period, u, now)

    def _no_training(self) -> ClientReport:
        """The report of a dispatch that did not train (nothing moved, nothing computed)."""
        return ClientReport(self.sim.rank, 1.0, 0.0, 0.0, 0, 0, 0, 0.0)

    def _controller_order(
        self, pool: list[int], snr_all: np.ndarray, power_all: np.ndarray, index: int
    ) -> list[int]:
        """The eligible clients ``pool`` best first by the controller's rule
        (``server.dispatch: controller``): its objectives do not change within one refill (the
        queues move at aggregations only), so one ranking serves every slot the refill fills."""
        candidates = self._candidates(np.asarray(pool, dtype=int), snr_all, power_all)
        rows = self.sim.controller.choose_dispatch(candidates, len(pool), index)
        return [pool[int(row)] for row in rows]

    def _candidates(
        self, clients: np.ndarray, snr_all: np.ndarray, power_all: np.ndarray
    ) -> DispatchCandidates:
        """What the controller knows of ``clients`` (N-long channel rows observed now)."""
        sim, n = self.sim, len(clients)
        compute_s = np.zeros(n)
        if sim.scenario.devices.include_compute:
            compute_s = sim.compute_estimate(clients)
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
        """Each taken update's staleness and the mode's weight and mix flag
        (:meth:`~wirelessfl.servers.base.ServerMode.weights`)."""
        for u in taken:
            u.staleness = self.version - u.version
        weights, mix = self.policy.weights([u.staleness for u in taken])
        for u, w in zip(taken, weights, strict=True):
            u.weight = w
        return [WeightedUpdate(u.client, u.weight, mix, u.staleness) for u in taken]

    def _aggregate(self, period: _Period, taken: list[Update], end_s: float) -> RoundOutcome:
        sim, t = self.sim, period.t
        updates = self._weights(taken)
        metrics = sim.learner.add_updates(t, updates)
        # idle again: a client has one update in the system at a time; the benched sat out
        for client in [u.client for u in taken] + self.benched:
            bisect.insort(self.idle, client)
        self.benched = []
        sim.check_metrics(t, metrics, len(taken))
        events = period.log.table().with_event(end_s, Kind.AGGREGATE, SERVER, float(len(taken)))
        sc = sim.scenario
        evaluation = {}
        if sim.evaluates_after(t):
            evaluation = sim.checked_evaluation(t, f"round {t}", KEPT)
        energy = self._energy(taken + period.lost)
        control = self._observe_controller(taken, energy)
        record = self._record(period, taken, end_s, metrics, evaluation, energy, control)
        rows = self._client_rows(t, taken + period.lost, energy) if sc.output.clients else []
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

    def _energy(self, updates: list[Update]) -> RoundEnergy:
        """Each update's compute energy (in proportion to the part of its compute done) and
        transmit power x the time it transmitted [J]: the taken ones and those lost since the
        previous aggregation (download energy is not counted, as in the synchronous round)."""
        sim = self.sim
        clients = np.array([u.client for u in updates], dtype=int)
        flops = np.array([u.report.flops for u in updates], dtype=float)
        classes = None if sim.client_class is None else [sim.client_class[c] for c in clients]
        compute_j = np.zeros(0, dtype=float)
        if updates:
            computed = np.array([u.computed_fraction for u in updates], dtype=float)
            clocks = [u.cpu_hz for u in updates]
            energy = (  # at the controller's clocks (CMOS model) where it decides them
                sim.compute_energy.energy_j(flops, classes)
                if None in clocks
                else sim.compute_energy.energy_j(flops, classes, np.array(clocks, float))
            )
            compute_j = np.asarray(energy, float) * computed
        transmit_j = np.array([u.tx_power_w * u.transmitted_s for u in updates], dtype=float)
        return RoundEnergy(clients, compute_j, transmit_j)

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
            "n_dropped": sum(u.status == "dropped" for u in period.lost),
            "n_outage": sum(u.status == "outage" for u in period.lost),
            "n_unavailable": sum(u.status == "unavailable" for u in period.lost),
            "n_stragglers": sum(u.status == "straggler" for u in period.lost),
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

    def _client_rows(self, t: int, updates: list[Update], energy: RoundEnergy) -> list[dict]:
        """``clients.csv`` rows: one per taken update, in arrival order, then one per update
        lost since the previous aggregation, in the order they were lost."""
        return [
            {
                "round": t,
                "client": u.client,
                "status": u.status,
                "dispatch_s": u.dispatch_s,
                "download_s": u.download_s,
                "upload_start_s": u.upload_start_s,
                "arrival_s": u.arrival_s,
                "lost_s": u.lost_s,
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
            for u, e_c, e_t in zip(updates, energy.compute_j, energy.transmit_j, strict=True)
        ]
