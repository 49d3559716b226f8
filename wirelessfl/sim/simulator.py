"""The SimPy co-simulator: federated rounds over the run's uplink (``wirelessfl.uplinks``).

One SimPy environment per run. Each round is one server process (one per round, so the runner
can checkpoint between rounds; the clock carries on across them) that returns what the round
produced; clients have no process of their own (step 5), so idle clients cost nothing. The
server's round, :meth:`Simulator._round`, is a list of named steps:

1. :meth:`~Simulator._observe`: the channel (SNR and transmit power of all N clients at the
   round's broadcast time: a fixed cell, a moving one, or an SNR trace), who is available
   (the availability model) and the K^t scheduled clients (``optim.select_clients``, among
   the available ones with ``selection.available_only``);
2. :meth:`~Simulator._mark_faults`: clients in outage (SNR below ``faults.outage_snr_db``; the
   server knows the CSI) get no bandwidth and do not train; scheduled clients that are
   unavailable, and others that drop out with ``faults.dropout_prob``, do not answer (the
   controller does not know: their shares idle unless ``faults.redistribute_unused``);
3. :meth:`~Simulator._decide`: the controller's O^t, shares b_k^t and per-client rank and
   ratio for the clients not in outage (with ``controller.energy_budget_j``, priced by their
   energy queues first);
4. :meth:`~Simulator._train`: the learner trains the clients that will upload (wall time only)
   and reports each one's download, upload and FLOPs;
5. :meth:`~Simulator._transmit`: every training client's timeline in closed form (numpy, the
   same float additions a SimPy process per client would make): its download
   (``bits_down / channel.downlink_rate_bps``), then ``flops / flops_per_s`` seconds of
   compute, then the uplink's upload time (:meth:`~wirelessfl.uplinks.base.Uplink.upload_s`;
   FDMA: ``bits_up / (b_k B log2(1 + SNR_k))`` seconds, ``b_k B log2(1 + SNR_k / b_k)`` with
   ``channel.noise_bandwidth: share``). SimPy waits only for
   the event that ends the round: the last arrival, or ``faults.deadline_s`` after the
   broadcast when an upload is still running then (clients still busy are stragglers and
   their uploads are discarded), or ``availability.empty_round_s`` when nobody (available)
   was scheduled. The tables equal those of one SimPy process per client
   (tests/wirelessfl/test_event_floor.py);
   Each training client's compute and transmit energy follows from the same timeline
   (:mod:`wirelessfl.sim.energy`). The uplink's hook runs before step 3
   (:meth:`~Simulator._before_decision`; AirComp's power control: its powers, and the clients
   it excludes neither train nor are decided for); AirComp's uploads start together when the
   last client has computed (:attr:`~wirelessfl.uplinks.base.Uplink.STARTS_TOGETHER`);
6. :meth:`~Simulator._aggregate`: the learner folds in the arrived uploads; the
   proportional-fair tracker is updated;
7. :meth:`~Simulator._evaluate`: held-out metrics every ``eval_every`` rounds (and, before
   round 0, :meth:`~Simulator.evaluate_initial` with ``eval_initial``: the untrained global
   state at virtual time 0, which the runner keeps in ``meta.json``);
8. :meth:`~Simulator._record`: the round's record, derived from its events, and the virtual
   queue's update with its D^t (eq. 21). D^t is the longest upload time, an upload cut at the
   deadline counting up to the deadline (:func:`~wirelessfl.sim.events.round_timing`), so a
   round whose stragglers were cut reports, and queues, the time it lasted; a controller
   whose D^t counts compute (``controller.radio: joint``, or any over the air) queues the
   longest compute + upload (:func:`~wirelessfl.sim.events.compute_upload_s`). The energy
   queues take each device's energy of the round.

Numerical faults stop the run before the round's record exists, with a one-line
:class:`~wirelessfl.errors.SimulationError` naming the round: a non-finite value in the
controller's decision (or an overflow in it), a *measured* non-finite metric (NaN is "not
measured this round"; the loss is measured whenever a client arrived) or evaluation. The
learners check their own values (a client's update, the aggregate: see
:mod:`wirelessfl.algorithms.finite`).

Noise is over the whole band B, as in the paper: SNR_k does not depend on the share b_k.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field

import numpy as np
import simpy

from channels import compute_delay_at_clock_s, rate_bps, snr_at_power
from channels.streams import round_generator
from optim import select_clients, update_average_rate
from wirelessfl.algorithms.finite import KEPT
from wirelessfl.config.scenario import Scenario
from wirelessfl.controllers import ControllerContext, Decision, make_controller
from wirelessfl.errors import SimulationError
from wirelessfl.learners.base import ClientReport, Learner, RoundPlan
from wirelessfl.results.columns import metric_column
from wirelessfl.results.run_folder import json_evaluation, read_evaluation
from wirelessfl.sim.async_engine import AsyncEngine
from wirelessfl.sim.channel_process import ChannelProcess
from wirelessfl.sim.client_rows import client_rows
from wirelessfl.sim.decision_checks import (
    CONSTANTS_HINT,
    METRICS_HINT,
    check_decision,
    in_range,
    listed,
)
from wirelessfl.sim.edge import EdgeCell
from wirelessfl.sim.energy import RoundEnergy, build_compute_energy, round_energy
from wirelessfl.sim.energy_band import budget_below_band, energy_band_j
from wirelessfl.sim.energy_floor import budget_shortfall, compute_energy_floor_j
from wirelessfl.sim.events import (
    SERVER,
    EventLog,
    EventTable,
    Kind,
    arrived_clients,
    compute_upload_s,
    round_timing,
)
from wirelessfl.sim.outcome import RoundOutcome, delay_to
from wirelessfl.sim.round_limit import round_limit_shortfall
from wirelessfl.sim.setup import (
    bound_constants,
    build_availability,
    build_devices,
    build_radio,
    client_classes,
    clock_ranges_hz,
)
from wirelessfl.uplinks import UplinkRound, build_uplink, start_uplink

__all__ = ["PF_SMOOTHING", "RoundOutcome", "Simulator"]

PF_SMOOTHING = 0.1  # EWMA weight of the proportional-fair average-rate tracker
_log = logging.getLogger(__name__)


@dataclass
class _Round:
    """What the steps of one round hand to each other (arrays over the K^t scheduled)."""

    t: int
    t0_s: float
    scheduled: np.ndarray  # (k,) client ids, ascending
    snr: np.ndarray  # (k,) linear SNR
    snr_db: np.ndarray  # (k,)
    tx_power_w: np.ndarray  # (k,) [W]
    unavailable: np.ndarray  # (k,) bool: scheduled, but not available this round
    full_band_rate: np.ndarray | None = None  # (N,) [bit/s], proportional fair only
    outage: np.ndarray | None = None  # (k,) bool
    dropped: np.ndarray | None = None  # (k,) bool
    shares: np.ndarray | None = None  # (k,) b_k^t
    ranks: np.ndarray | None = None  # (k,) r_k (0: no decision, outage)
    ratios: np.ndarray | None = None  # (k,) O_k (NaN: no decision)
    sparsification: float = math.nan  # O^t
    bound: float = math.nan
    bits: int | None = None  # b the controller chose (controller.bits_choices)
    planned_delay_s: float = 0.0
    solver_fallbacks: int = 0  # solvers that failed before one answered (Decision.fallbacks)
    cpu_hz: np.ndarray | None = None  # (k,) clock decided [Hz] (NaN: none); None: no decision
    queue_before: float = 0.0
    reports: dict[int, ClientReport] = field(default_factory=dict)
    compute_s: dict[int, float] = field(default_factory=dict)
    upload_s: dict[int, float] = field(default_factory=dict)
    log: EventLog = field(default_factory=EventLog)
    events: EventTable | None = None  # the sorted log, from the aggregation on
    energy: RoundEnergy | None = None

    active: np.ndarray | None = None  # (k,) bool: scheduled clients that train and upload
    prepared: UplinkRound | None = None  # what the uplink's hook set (None: no hook)
    excluded: np.ndarray | None = None  # (k,) bool: excluded by the uplink's hook
    wall0_s: float = 0.0  # perf_counter at the round's start


class Simulator:
    """Runs rounds of one scenario with a given learner (see the module docstring)."""

    def __init__(
        self,
        scenario: Scenario,
        learner: Learner,
        *,
        edge: EdgeCell | None = None,
    ):
        """``edge``: one cell of a network (:mod:`wirelessfl.sim.network`): the network's
        channel, the cell's clients (the only ones it schedules) and its uplink; the edge does
        not evaluate (the cloud does)."""
        self.scenario = scenario
        self.learner = learner
        self.edge = edge
        if edge is None:
            self.channel = ChannelProcess(build_radio(scenario), scenario.channel.block_rounds)
        else:
            self.channel = edge.channel
        self.cell = self.channel.cell
        self.flops_per_s = build_devices(scenario)
        self.client_class = client_classes(scenario)
        self.availability = build_availability(scenario, self.client_class)
        self.compute_energy = build_compute_energy(scenario)
        #: (N,) f_min and f_max [Hz] of each client's device class (devices.energy.model:
        #: cmos), else None
        self.cpu_hz_min, self.cpu_hz_max = clock_ranges_hz(scenario, self.client_class)
        geometry = learner.geometry()
        self.params_per_rank = geometry.params_per_rank
        uplink = build_uplink(scenario) if edge is None else edge.uplink
        ctx = ControllerContext(
            n_clients=scenario.n_clients,
            n_scheduled=scenario.n_scheduled,
            mean_snr=np.asarray(self.cell.mean_snr, dtype=float),
            params_per_rank=self.params_per_rank,
            bits_per_value=scenario.payload.bits_per_value,
            bandwidth_hz=scenario.channel.bandwidth_hz,
            constants=bound_constants(scenario),
            settings=scenario.controller,
            outage_snr=(
                None
                if scenario.faults.outage_snr_db is None
                else 10.0 ** (scenario.faults.outage_snr_db / 10.0)
            ),
            fading=self.cell.fading,
            geometry=geometry,
            energy_budget_j=(
                None
                if scenario.controller.given("energy_budget_j") is None
                else np.full(scenario.n_clients, scenario.controller.given("energy_budget_j"))
            ),
            cost=learner.cost_model(),
            cpu_hz_min=self.cpu_hz_min,
            cpu_hz_max=self.cpu_hz_max,
            noise_bandwidth=scenario.channel.noise_bandwidth,
            uplink=uplink,
            flops_per_s=np.asarray(self.flops_per_s, dtype=float),
            joules_per_flop_at_fmax=(
                None
                if self.cpu_hz_max is None
                else np.asarray(
                    self.compute_energy.energy_j(np.ones(scenario.n_clients), self.client_class),
                    dtype=float,
                )
            ),
        )
        self.controller = make_controller(ctx)
        self.rank = self.controller.rank
        #: channel.uplink (wirelessfl.uplinks), checked against the controller and learner
        self.uplink = start_uplink(uplink, scenario, self.controller, learner)
        learner.start(rank=self.rank, n_clients=scenario.n_clients, seed=scenario.seed)
        self.metric_columns = {name: metric_column(name) for name in learner.metric_names()}
        self.average_rate = np.ones(scenario.n_clients)  # proportional-fair tracker [bit/s]
        self.env = simpy.Environment()
        self.next_round = 0
        #: :meth:`evaluate_initial`'s result once the runner asked for it (checkpointed)
        self.initial_evaluation: dict[str, float] | None = None
        #: (2, N) each device's compute (row 0) and transmit (row 1) energy summed over rounds
        #: 0..next_round-1 [J] (checkpointed; None: unknown, resumed from an older checkpoint)
        self.device_energy_j: np.ndarray | None = np.zeros((2, scenario.n_clients))
        #: server.mode async | buffered | semi_sync: the event-driven rounds (else None)
        self.engine = AsyncEngine(self) if scenario.server.event_driven else None
        #: (2, N) each device's band [E_lo,k, E_hi,k] of time-average energy per round
        #: [J/round] with the joint radio and a budget (synchronous rounds), else None
        self.energy_band_j = self._energy_band_j()
        self._warn_unreachable_budget()
        self._warn_short_round_limit()

    # ---- state for resume ----------------------------------------------------------------
    def state_dict(self) -> dict:
        state = {
            "next_round": self.next_round,
            "now_s": float(self.env.now),
            "controller": self.controller.state_dict(),
        }
        if self.initial_evaluation is not None:  # the key only with one: old states unchanged
            state["initial_evaluation"] = json_evaluation(self.initial_evaluation)
        if self.engine is not None:  # event-driven: the uploads in flight, the buffer, ...
            state["engine"] = self.engine.state()
        state.update(self.uplink.state())  # e.g. optimal_fading's multipliers
        return state

    def load_state_dict(self, state: dict, average_rate: np.ndarray | None) -> None:
        if self.engine is not None:
            if "engine" not in state:
                AsyncEngine.refuse_missing_state(self.scenario.server.mode, state["next_round"])
            self.engine.restore(state["engine"])
        self.next_round = int(state["next_round"])
        self.env = simpy.Environment(initial_time=float(state["now_s"]))
        self.controller.load_state_dict(state["controller"])
        self.uplink.restore(state)
        self.initial_evaluation = read_evaluation(state.get("initial_evaluation"))
        if average_rate is not None:
            self.average_rate = average_rate

    # ---- one round -----------------------------------------------------------------------
    def run_round(self, t: int) -> RoundOutcome:
        """Simulate round t to its aggregation; the caller persists the outcome."""
        if self.engine is not None:
            return self._finish(self.engine.aggregation(t), t, time.perf_counter())
        return self.complete_round(self.plan_round(t))

    def plan_round(self, t: int) -> _Round:
        """Synchronous round t up to its uploads: steps 1-4 (observe, faults, the uplink's
        hook, the decision, the training); :meth:`complete_round` runs the rest."""
        wall0 = time.perf_counter()
        r = self._observe(t)
        r.wall0_s = wall0
        self._mark_faults(r)
        self._before_decision(r)  # who sends decides the round the controller plans
        self._decide(r)
        self._train(r)
        return r

    def complete_round(self, r: _Round) -> RoundOutcome:
        """Steps 5-8 of the round :meth:`plan_round` planned, in virtual time."""
        return self._finish(self._conclude(r), r.t, r.wall0_s)

    def advance_to(self, time_s: float) -> None:
        """Move the clock to ``time_s`` (a network's cloud aggregation ends after every
        cell's round); nothing when it is not later than now."""
        if time_s > self.env.now:
            self.env.run(until=self.env.timeout(delay_to(self.env.now, time_s)))

    def _finish(self, steps, t: int, wall0: float) -> RoundOutcome:
        process = self.env.process(steps)
        self.env.run(until=process)
        outcome: RoundOutcome = process.value
        outcome.record["wall_s"] = time.perf_counter() - wall0
        if self.device_energy_j is not None and outcome.energy is not None:
            np.add.at(self.device_energy_j[0], outcome.energy.clients, outcome.energy.compute_j)
            np.add.at(self.device_energy_j[1], outcome.energy.clients, outcome.energy.transmit_j)
        self.next_round = t + 1
        return outcome

    def _conclude(self, r: _Round):
        """The server's process for the rest of round r (steps 5-8); returns the round's
        :class:`RoundOutcome`."""
        yield from self._transmit(r)
        metrics, arrived = self._aggregate(r)
        evaluation = self._evaluate(r)
        return self._record(r, metrics, evaluation, arrived)

    # 1. ------------------------------------------------------------------------------------
    def _observe(self, t: int) -> _Round:
        """The channel of round t, who is available, and the scheduled clients (ascending)."""
        sc = self.scenario
        snr_all, power_all = self.channel.observe(t, self.env.now)
        available = self.availability.available(t, self.env.now)
        pf = sc.selection.method == "proportional_fair"
        rate = rate_bps(1.0, sc.channel.bandwidth_hz, snr_all) if pf else None
        pool = np.flatnonzero(available) if sc.selection.available_only else None
        if self.edge is not None:  # a cell schedules among its own clients
            members = self.edge.members
            pool = members if pool is None else np.intersect1d(pool, members)
        scheduled = np.zeros(0, dtype=int)
        if pool is None or pool.size:
            chosen = select_clients(
                round_generator(sc.seed, stream="selection", round_index=t),
                n_clients=sc.n_clients if pool is None else pool.size,
                n_scheduled=sc.n_scheduled if pool is None else min(sc.n_scheduled, pool.size),
                method=sc.selection.method,
                snr=snr_all if pool is None else snr_all[pool],
                average_rate=self.average_rate if pool is None else self.average_rate[pool],
            )
            scheduled = np.asarray(chosen, dtype=int)
            if pool is not None:
                scheduled = pool[scheduled]
        snr = snr_all[scheduled]
        r = _Round(
            t,
            self.env.now,
            scheduled,
            snr,
            10.0 * np.log10(np.maximum(snr, 1e-300)),
            power_all[scheduled],
            ~available[scheduled],
        )
        r.full_band_rate = rate
        r.log.add(r.t0_s, Kind.BROADCAST, SERVER, float(len(scheduled)))
        return r

    # 2. ------------------------------------------------------------------------------------
    def _mark_faults(self, r: _Round) -> None:
        """Outage (known before the decision), dropout and unavailability (after it).

        An unavailable client does not answer the broadcast: like a dropout, the controller
        does not know, and its share idles unless ``faults.redistribute_unused``.
        """
        faults, k = self.scenario.faults, len(r.scheduled)
        r.outage = np.zeros(k, bool)
        if faults.outage_snr_db is not None:
            r.outage = (r.snr_db < faults.outage_snr_db) & ~r.unavailable
        r.dropped = np.zeros(k, bool)
        if faults.dropout_prob > 0:
            rng = round_generator(self.scenario.seed, stream="faults", round_index=r.t)
            r.dropped = (rng.random(k) < faults.dropout_prob) & ~r.outage & ~r.unavailable
        r.log.add_many(r.t0_s, Kind.DROP, r.scheduled[r.dropped])
        r.log.add_many(r.t0_s, Kind.OUTAGE, r.scheduled[r.outage])
        r.log.add_many(r.t0_s, Kind.UNAVAILABLE, r.scheduled[r.unavailable])
        r.active = ~r.outage & ~r.dropped & ~r.unavailable

    # 3. ------------------------------------------------------------------------------------
    def _decide(self, r: _Round) -> None:
        """The controller's decision for the clients not in outage (nor excluded by the uplink's
        hook: over the air, the controller plans the analog sum of the others)."""
        k = len(r.scheduled)
        allocated = ~r.outage if r.excluded is None else ~r.outage & ~r.excluded
        r.shares, r.ranks, r.ratios = np.zeros(k), np.zeros(k, int), np.full(k, math.nan)
        r.queue_before = self.controller.queue
        if allocated.any():
            compute_s = np.zeros(k)
            if self.scenario.devices.include_compute:
                compute_s = self.compute_estimate(r.scheduled)
            self.controller.begin_round(r.t, r.scheduled[allocated], r.tx_power_w[allocated])
            self.controller.price_energy(r.scheduled[allocated], r.tx_power_w[allocated])
            try:
                seen = r.snr[allocated]
                if self.edge is not None:  # the interference the cell's controller expects
                    seen = seen / self.edge.interference_factor
                decision = self.controller.decide(seen, compute_s[allocated])
            except OverflowError as err:
                raise SimulationError(
                    f"round {r.t}: the controller's decision overflowed ({err}); {KEPT} "
                    f"{CONSTANTS_HINT}"
                ) from None
            check_decision(r.t, decision)
            r.shares[allocated] = decision.shares
            r.ranks[allocated] = decision.client_ranks(self.rank)
            r.ratios[allocated] = decision.client_ratios()
            r.sparsification, r.bound = decision.sparsification, decision.bound
            r.bits = decision.bits
            r.planned_delay_s = decision.planned_delay_s
            r.solver_fallbacks = max(int(decision.fallbacks), int(decision.fell_back))
            self._apply_power_and_clock(r, np.flatnonzero(allocated), decision)
        active, dropped = r.active, r.dropped | r.unavailable
        redistribute = self.scenario.faults.redistribute_unused and self.uplink.SHARES_BAND
        if redistribute and dropped.any() and active.any():
            spare = r.shares[dropped].sum()
            r.shares[active] += spare * r.shares[active] / r.shares[active].sum()
            r.shares[dropped] = 0.0

    def _apply_power_and_clock(self, r: _Round, rows: np.ndarray, decision: Decision) -> None:
        """The decision's transmit powers and clocks for the scheduled ``rows`` it was for:
        each client's SNR becomes SNR_k p_k / P_max,k (``snr_db``, the rate and the transmit
        energy follow), its clock sets its compute time and energy (:meth:`_transmit`). A
        value outside its range is a one-line ``SimulationError``."""
        if decision.tx_power_w is not None:
            p_max = r.tx_power_w[rows]
            p = in_range(
                r.t,
                r.scheduled[rows],
                "transmit power [W]",
                decision.tx_power_w,
                np.zeros(rows.size),
                p_max,
            )
            r.snr[rows] = snr_at_power(r.snr[rows], p, p_max)
            r.snr_db[rows] = 10.0 * np.log10(np.maximum(r.snr[rows], 1e-300))
            r.tx_power_w[rows] = p
        if decision.cpu_hz is not None:
            if self.cpu_hz_min is None or self.cpu_hz_max is None:
                raise SimulationError(
                    f"round {r.t}: the controller decided CPU clocks, and "
                    f"devices.energy.model is {self.scenario.devices.energy.model!r}; a clock "
                    "needs devices.energy.model: cmos"
                )
            clients = r.scheduled[rows]
            f = in_range(
                r.t,
                clients,
                "CPU clock [Hz]",
                decision.cpu_hz,
                self.cpu_hz_min[clients],
                self.cpu_hz_max[clients],
            )
            r.cpu_hz = np.full(len(r.scheduled), math.nan)
            r.cpu_hz[rows] = f

    def _warn_unreachable_budget(self) -> None:
        """One warning line when ``controller.energy_budget_j`` is below some device's least
        time-average energy per round (:mod:`wirelessfl.sim.energy_floor`; synchronous rounds),
        or, with the joint radio, below the low end of its band
        (:mod:`wirelessfl.sim.energy_band`, above that floor but for rounds in outage)."""
        budget = self.controller.ctx.energy_budget_j
        if budget is None or self.engine is not None:
            return
        if self.energy_band_j is not None:
            d_th_s = float(self.controller.ctx.settings.d_th_s)
            line = budget_below_band(budget, self.energy_band_j, d_th_s)
        else:
            line = budget_shortfall(budget, self.energy_floor_j())
        if line is not None:
            _log.warning("wirelessfl: warning: %s", line)

    def _warn_short_round_limit(self) -> None:
        """One warning line when the delay queue counts compute and D_th is below some device's
        compute time at f_max (:mod:`wirelessfl.sim.round_limit`; synchronous rounds)."""
        counted = self.controller.queue_counts_compute and self.scenario.devices.include_compute
        if not counted or self.engine is not None:
            return
        compute_s = self.compute_estimate(np.arange(self.scenario.n_clients))
        d_th_s = float(self.controller.ctx.settings.d_th_s)
        why = "with controller.radio: joint"
        if self.uplink.STARTS_TOGETHER:
            why = f"with channel.uplink: {self.uplink.NAME} ({self.uplink.STARTS_TOGETHER})"
        line = round_limit_shortfall(d_th_s, compute_s, why)
        if line is not None:
            _log.warning("wirelessfl: warning: %s", line)

    def _energy_band_j(self) -> np.ndarray | None:
        """(2, N) [E_lo,k, E_hi,k] [J/round] when a synchronous run's controller takes the joint
        radio's step with a budget (it decides clocks and its delay queue counts compute, over
        FDMA) on a modelled channel (not an SNR trace), else None
        (:func:`~wirelessfl.sim.energy_band.energy_band_j`)."""
        ctl, sc = self.controller, self.scenario
        joint = ctl.decides_cpu_frequency and ctl.queue_counts_compute and self.uplink.SHARES_BAND
        traced = self.channel.radio.snr_trace_db is not None  # no mean SNR to draw around
        if ctl.ctx.energy_budget_j is None or self.engine is not None or not joint or traced:
            return None
        n = sc.n_clients
        compute_s = np.zeros(n)
        if sc.devices.include_compute:
            compute_s = self.compute_estimate(np.arange(n))
        d_th_s = float(ctl.ctx.settings.d_th_s)
        return energy_band_j(
            ctl,
            channel_at=self._mean_channel_at,
            horizon_s=sc.rounds * d_th_s,
            fading=self.cell.fading,
            compute_s=compute_s,
            n_scheduled=sc.n_scheduled,
            d_th_s=d_th_s,
            outage_snr=ctl.ctx.outage_snr,
        )

    def _mean_channel_at(self, time_s: float) -> tuple[np.ndarray, np.ndarray]:
        """(N,) mean SNRs (linear, fading averaged) and (N,) transmit powers [W] at virtual time
        ``time_s``: the cell's where clients do not move."""
        radio = self.channel.radio
        if radio.large_scale is None:
            return np.asarray(self.cell.mean_snr, dtype=float), radio.tx_power_w
        state = radio.large_scale.at(time_s)
        mean_power = float(self.cell.fading.mean_power)
        return state.power_gain * mean_power / self.cell.noise_power_w, state.tx_power_w

    def energy_floor_j(self) -> np.ndarray:
        """(N,) each device's least time-average energy per round [J/round]: its compute at
        the lowest clock the controller may choose, K/N of the rounds
        (:func:`~wirelessfl.sim.energy_floor.compute_energy_floor_j`)."""
        sc = self.scenario
        decides = self.controller.decides_cpu_frequency
        return compute_energy_floor_j(
            self.compute_energy,
            flops=float(self.learner.expected_flops(self.rank)),
            client_class=self.client_class,
            cpu_hz_min=self.cpu_hz_min if decides else None,
            n_scheduled=sc.n_scheduled,
            n_clients=sc.n_clients,
        )

    def compute_estimate(self, clients: np.ndarray) -> np.ndarray:
        """Compute times [s] the server expects (for compute-aware shares)."""
        return self.learner.expected_flops(self.rank) / self.flops_per_s[clients]

    def _before_decision(self, r: _Round) -> None:
        """The uplink's hook on the clients not in outage (AirComp: its powers replace theirs,
        the clients it excludes do not train, the others send on the whole band)."""
        mean_snr = np.asarray(self.cell.mean_snr, dtype=float)[r.scheduled]
        r.prepared = self.uplink.before_decision(
            r.snr, r.tx_power_w, mean_snr, r.scheduled, ~r.outage
        )
        if r.prepared is None:
            return
        r.excluded = r.prepared.excluded
        r.tx_power_w = r.prepared.tx_power_w
        r.active = r.active & ~r.excluded

    # 4. ------------------------------------------------------------------------------------
    def _train(self, r: _Round) -> None:
        """Local training of the clients that will upload (wall time only)."""
        active = r.active
        plan = RoundPlan(
            r.t,
            r.scheduled[active],
            r.ranks[active],
            r.ratios[active],
            r.bound,
            len(r.scheduled),
            r.bits,
        )
        r.reports = self.learner.local_round(plan) if active.any() else {}

    # 5. ------------------------------------------------------------------------------------
    def _transmit(self, r: _Round):
        """Download, compute and upload of every training client, in virtual time.

        Each client's event times follow in closed form from the broadcast time t0 (the same
        float additions a SimPy process per client would make): compute starts at
        t0 + downlink, ends after the compute time, the upload ends after the upload time.
        SimPy gets only the event that decides the round: the last arrival, or the deadline
        (``faults.deadline_s`` after t0) when an upload is still running then. An event at or
        before the deadline happens; a client still busy at the deadline is a straggler there.
        """
        sc, env, ch = self.scenario, self.env, self.scenario.channel
        idx = np.flatnonzero(r.active)
        clients = r.scheduled[idx]
        ids = clients.tolist()
        reports = [r.reports[c] for c in ids]
        bits_up = np.array([rep.bits_up for rep in reports], dtype=float)
        flops = np.array([rep.flops for rep in reports], dtype=float)
        downlink_s = 0.0
        if ch.downlink_rate_bps > 0:
            downlink_s = np.array([rep.bits_down for rep in reports]) / ch.downlink_rate_bps
        cpu_hz = None if r.cpu_hz is None else r.cpu_hz[idx]
        compute_s = np.zeros(idx.size)
        if sc.devices.include_compute and cpu_hz is None:
            compute_s = flops / self.flops_per_s[clients]
        elif sc.devices.include_compute:  # the decided clock: FLOPs / (flops_per_s f / f_max)
            assert self.cpu_hz_max is not None
            speed, f_max = self.flops_per_s[clients], self.cpu_hz_max[clients]
            compute_s = np.asarray(compute_delay_at_clock_s(flops, speed, cpu_hz, f_max), float)
        n_values = np.array([rep.n_total for rep in reports], dtype=float)
        self.uplink.prepare_uploads(r.t, clients)
        upload_s = self.uplink.upload_s(r.shares[idx], r.snr[idx], bits_up, n_values)
        r.compute_s = dict(zip(ids, compute_s.tolist(), strict=True))
        r.upload_s = dict(zip(ids, upload_s.tolist(), strict=True))
        t0 = env.now
        compute_start = t0 + downlink_s + np.zeros(idx.size)
        compute_end = compute_start + compute_s
        upload_start = compute_end  # AirComp: together, once the last one has computed
        if self.uplink.STARTS_TOGETHER and idx.size:
            upload_start = np.full(idx.size, compute_end.max())
        upload_end = upload_start + upload_s
        sends = np.isfinite(upload_s)  # a client without bandwidth never starts
        end_s = float(upload_end[sends].max()) if sends.any() else t0
        if sc.faults.deadline_s is not None:
            end_s = min(end_s, t0 + sc.faults.deadline_s)
        # what happened by the round's end: all of it, unless the deadline cut a client
        started = sends & (compute_start <= end_s)
        computed = sends & (compute_end <= end_s)
        uploading = sends & (upload_start <= end_s)
        arrived = sends & (upload_end <= end_s)
        for happened, times, kind in (
            (started, compute_start, Kind.COMPUTE_START),
            (computed, compute_end, Kind.COMPUTE_END),
            (uploading, upload_start, Kind.UPLOAD_START),
        ):
            r.log.add_many(times[happened], kind, clients[happened])
        r.log.add_many(upload_end[arrived], Kind.UPLOAD_END, clients[arrived], bits_up[arrived])
        r.log.add_many(end_s, Kind.STRAGGLER, clients[~arrived])
        # a finished phase counts whole, a cut one up to the deadline
        computed_s = np.where(computed, compute_s, np.where(started, end_s - compute_start, 0.0))
        uploaded_s = np.where(arrived, upload_s, np.where(uploading, end_s - upload_start, 0.0))
        if r.unavailable.all():  # nobody (available) to schedule: the server waits
            end_s = t0 + sc.availability.empty_round_s
        r.energy = round_energy(
            self.compute_energy,
            clients=clients,
            flops=flops,
            compute_s=compute_s,
            computed_s=computed_s,
            started=started,
            uploaded_s=uploaded_s,
            client_class=None if self.client_class is None else [self.client_class[c] for c in ids],
            tx_power_w=r.tx_power_w[idx],
            cpu_hz=cpu_hz,
        )
        if end_s > env.now:
            yield env.timeout(delay_to(env.now, end_s))

    # 6. ------------------------------------------------------------------------------------
    def _aggregate(self, r: _Round) -> tuple[dict[str, float], np.ndarray]:
        """The learner aggregates the arrivals; the fairness tracker moves on."""
        events = r.log.table()
        arrived = arrived_clients(events)
        self.uplink.deliver(self.learner, r.prepared, r.scheduled, arrived)
        metrics = self.learner.aggregate(r.t, arrived)
        self.check_metrics(r.t, metrics, len(arrived))
        r.events = events.with_event(self.env.now, Kind.AGGREGATE, SERVER, float(len(arrived)))
        if r.full_band_rate is not None:  # proportional-fair average-throughput tracker
            served = r.scheduled[r.active]
            self.average_rate = update_average_rate(
                self.average_rate,
                scheduled=served,
                served_rate=r.full_band_rate[served],
                beta=PF_SMOOTHING,
            )
        return metrics, arrived

    def check_metrics(self, t: int, metrics: dict[str, float], n_arrived: int) -> None:
        """A one-line ``SimulationError`` for a non-finite measured metric of round t."""
        # NaN is "not measured this round"; the loss is measured whenever a client arrived
        bad = {
            self.metric_columns.get(name, name): float(value)
            for name, value in metrics.items()
            if math.isinf(value) or (name == "loss" and n_arrived and math.isnan(value))
        }
        if bad:
            raise SimulationError(
                f"round {t}: the round measured non-finite {listed(bad)} after aggregating "
                f"{n_arrived} clients; {KEPT} {METRICS_HINT}"
            )

    def _evaluate(self, r: _Round) -> dict[str, float]:
        """Held-out metrics of the global state every ``eval_every`` rounds and at the last."""
        if self.edge is not None or not self.evaluates_after(r.t):
            return {}
        return self.checked_evaluation(r.t, f"round {r.t}", KEPT)

    def evaluates_after(self, t: int) -> bool:
        """Whether round (or aggregation) ``t`` ends with an evaluation: every ``eval_every``,
        the last of ``rounds``, and the last a stop rule lets run (the learner's
        ``stop_reason``: ``privacy.target_epsilon``), so a run that stops early ends with its
        final model evaluated. Asked after ``t``'s aggregation; evaluating draws nothing."""
        sc = self.scenario
        if (t + 1) % sc.eval_every == 0 or t == sc.rounds - 1:
            return True
        return self.learner.stop_reason() is not None

    def evaluate_initial(self) -> dict[str, float]:
        """Held-out metrics of the initial global state, before round 0 is trained.

        The learner's ``evaluate(-1)`` (``-1``: no round trained yet) at virtual time 0. It
        draws no random number and moves no clock, so the rounds that follow are the same with
        or without it. The runner calls it when ``scenario.evaluates_initial`` (and keeps the
        result in ``meta.json``); a resumed run does not.
        """
        if self.next_round != 0 or self.env.now != 0:
            raise RuntimeError("the initial evaluation is of the state before round 0")
        evaluation = self.checked_evaluation(-1, "before round 0", "no round was trained yet.")
        self.initial_evaluation = {k: float(v) for k, v in evaluation.items()}
        return self.initial_evaluation

    def checked_evaluation(self, round_index: int, when: str, kept: str) -> dict[str, float]:
        """``learner.evaluate(round_index)``; a one-line ``SimulationError`` naming ``when`` (and
        saying what is ``kept``) if it measured a non-finite value."""
        evaluation = self.learner.evaluate(round_index)
        # NaN accuracy is "not measured" (a regression task); every other value must be finite
        bad = {
            k: float(v)
            for k, v in evaluation.items()
            if math.isinf(v) or (math.isnan(v) and k != "accuracy")
        }
        if bad:
            raise SimulationError(
                f"{when}: the evaluation of the global state measured non-finite "
                f"{listed(bad)}; {kept} {METRICS_HINT}"
            )
        return evaluation

    # 7. ------------------------------------------------------------------------------------
    def _record(
        self,
        r: _Round,
        metrics: dict[str, float],
        evaluation: dict[str, float],
        arrived: np.ndarray,
    ) -> RoundOutcome:
        """The round's record (from its events) and its per-client rows.

        The virtual queue takes the round's D^t (eq. 21): ``delay_s`` of
        :func:`~wirelessfl.sim.events.round_timing`, where an upload cut at ``faults.deadline_s``
        counts up to the deadline; with a controller whose step plans compute + upload
        (:attr:`~wirelessfl.controllers.base.Controller.queue_counts_compute`), the longest
        compute + upload (:func:`~wirelessfl.sim.events.compute_upload_s`).
        """
        sc = self.scenario
        timing = round_timing(r.events)
        counts_compute = self.controller.queue_counts_compute
        queue_after = self.controller.observe(
            compute_upload_s(r.events) if counts_compute else timing["delay_s"]
        )
        assert r.energy is not None
        energy_queue = math.nan
        if self.controller.energy_queues is not None:
            self.controller.observe_energy(r.energy.per_device(sc.n_clients))
            energy_queue = float(np.mean(self.controller.energy_queues.value))
        arrived_set = set(arrived.tolist())
        any_scheduled = len(r.scheduled) > 0
        record = {
            "round": r.t,
            **timing,
            "queue": r.queue_before,
            "queue_after": queue_after,
            "sparsification": r.sparsification,
            "rank": self.rank,
            "mean_client_rank": (
                float(np.mean([report.rank for report in r.reports.values()]))
                if r.reports
                else math.nan
            ),
            "n_scheduled": len(r.scheduled),
            "index_bits": float(sum(r.reports[c].index_bits for c in arrived_set)),
            "bits_down": float(sum(report.bits_down for report in r.reports.values())),
            "mean_snr_db": float(r.snr_db.mean()) if any_scheduled else math.nan,
            "min_snr_db": float(r.snr_db.min()) if any_scheduled else math.nan,
            "compute_energy_j": float(r.energy.compute_j.sum()),
            "transmit_energy_j": float(r.energy.transmit_j.sum()),
            "energy_queue_mean_j": energy_queue,
            "planned_delay_s": r.planned_delay_s,
            "bound": r.bound,
            "solver_fallback": r.solver_fallbacks,
            "loss": metrics.get("loss", math.nan),
            "accuracy": evaluation.get("accuracy", math.nan),
            "test_loss": evaluation.get("test_loss", math.nan),
            "cov_norm": math.nan,
            "orth_residual": math.nan,
        }
        record.update(self.uplink.record(r.prepared))
        for name, column in self.metric_columns.items():
            record[column] = metrics.get(name, math.nan)
        rows = client_rows(r, arrived_set, self.uplink) if sc.output.clients else []
        return RoundOutcome(record, r.events, rows, r.energy)
