"""The SimPy co-simulator: federated rounds over an FDMA uplink.

One SimPy environment per run. Each round is one server process (one per round, so the runner
can checkpoint between rounds; the clock carries on across them) plus one process per client
that trains in the round (idle clients cost nothing). Per round t the server

1. reads the channel (SNR of all N clients), selects K^t clients (``optim.select_clients``);
2. marks faults: clients in outage (SNR below ``faults.outage_snr_db``) get no bandwidth and do
   not train; the controller decides O^t and the shares over the others; then each of those
   drops out with ``faults.dropout_prob`` (the controller did not know: its share idles unless
   ``faults.redistribute_unused``);
3. broadcasts; the learner trains the remaining clients (wall time only);
4. each client process waits for the downlink, computes for ``flops / flops_per_s`` seconds, then
   uploads ``bits / (b_k B log2(1 + SNR_k))`` seconds;
5. the server aggregates when the last upload arrives, or at ``faults.deadline_s`` after the
   broadcast (uploads still running are stragglers and are discarded), then updates the virtual
   queue with D^t (eq. 21).

Noise is over the whole band B, as in the paper: SNR_k does not depend on the share b_k.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import simpy

from channels import (
    Cell,
    DeviceProfile,
    dbm_to_watt,
    make_fading,
    noise_power_w,
    rate_bps,
)
from channels.streams import round_generator
from optim import BoundConstants, select_clients
from wirelessfl.config.scenario import Scenario
from wirelessfl.controllers import ControllerContext, make_controller
from wirelessfl.errors import ConfigError, SimulationError
from wirelessfl.learners.base import ClientUpload, Learner, RoundPlan
from wirelessfl.sim.channel_process import ChannelProcess
from wirelessfl.sim.events import SERVER, Event, Kind, arrived_clients, round_timing, sort_events

PF_SMOOTHING = 0.1  # EWMA weight of the proportional-fair average-rate tracker


def build_cell(scenario: Scenario) -> Cell:
    """The scenario's cell: a fixed mean SNR for every client, or a geometric cell."""
    try:
        return _build_cell(scenario)
    except ValueError as err:  # channels validates its arguments; name the scenario section
        raise ConfigError(f"channel: {err}") from None


def _build_cell(scenario: Scenario) -> Cell:
    ch = scenario.channel
    fading = make_fading(ch.fading.model, **ch.fading.model_kwargs())
    if ch.mean_snr_db is not None:
        return Cell.from_mean_snr(
            mean_snr_db=ch.mean_snr_db,
            n_clients=scenario.n_clients,
            seed=scenario.seed,
            fading=fading,
        )
    sigma2 = noise_power_w(
        bandwidth_hz=ch.bandwidth_hz,
        noise_psd_dbm_per_hz=ch.noise_psd_dbm_per_hz,
        noise_figure_db=ch.noise_figure_db,
    )
    return Cell.from_geometry(
        n_clients=scenario.n_clients,
        seed=scenario.seed,
        d_min_m=ch.d_min_m,
        d_max_m=ch.d_max_m,
        path_loss_exponent=ch.path_loss_exponent,
        noise_power_w=sigma2,
        tx_power_w=dbm_to_watt(ch.tx_power_dbm + ch.reference_gain_db),
        shadowing_sigma_db=ch.shadowing_sigma_db,
        fading=fading,
    )


def _build_devices(scenario: Scenario) -> np.ndarray:
    dv = scenario.devices
    profile = DeviceProfile(
        kind=dv.kind,
        flops_per_s=dv.flops_per_s,
        classes=dict(dv.classes) or None,
        median_flops_per_s=dv.median_flops_per_s,
        sigma=dv.sigma,
    )
    return np.asarray(profile.draw(scenario.seed, scenario.n_clients), dtype=float)


def build_devices(scenario: Scenario) -> np.ndarray:
    """(N,) FLOP/s per client, from per-client streams of the run seed."""
    try:
        return _build_devices(scenario)
    except ValueError as err:
        raise ConfigError(f"devices: {err}") from None


def bound_constants(scenario: Scenario) -> BoundConstants:
    k = scenario.constants
    return BoundConstants(
        S=k.S, H=k.H, W=k.W, phi=k.phi, G=k.G, eta=k.eta, E=k.E, r_max=scenario.controller.r_max
    )


@dataclass
class RoundOutcome:
    """Everything one round produced: its record, events and per-client rows."""

    record: dict
    events: list[Event]
    clients: list[dict] = field(default_factory=list)


class Simulator:
    """Runs rounds of one scenario with a given learner (see module docstring)."""

    def __init__(self, scenario: Scenario, learner: Learner):
        self.scenario = scenario
        self.learner = learner
        self.cell = build_cell(scenario)
        self.channel = ChannelProcess(self.cell, scenario.channel.block_rounds)
        self.flops_per_s = build_devices(scenario)
        geometry = learner.geometry()
        self.params_per_rank = geometry.params_per_rank
        ctx = ControllerContext(
            n_clients=scenario.n_clients,
            n_scheduled=scenario.n_scheduled,
            mean_snr=np.asarray(self.cell.mean_snr, dtype=float),
            params_per_rank=self.params_per_rank,
            bits_per_value=scenario.payload.bits_per_value,
            fixed_values=geometry.fixed_values,
            bandwidth_hz=scenario.channel.bandwidth_hz,
            constants=bound_constants(scenario),
            settings=scenario.controller,
        )
        self.controller = make_controller(ctx)
        self.rank = self.controller.rank
        learner.start(rank=self.rank, n_clients=scenario.n_clients, seed=scenario.seed)
        self.average_rate = np.ones(scenario.n_clients)  # proportional-fair tracker [bit/s]
        self.env = simpy.Environment()
        self.next_round = 0

    # ---- state for resume -------------------------------------------------------------
    def state_dict(self) -> dict:
        return {
            "next_round": self.next_round,
            "now_s": float(self.env.now),
            "controller": self.controller.state_dict(),
        }

    def load_state_dict(self, state: dict, average_rate: np.ndarray | None) -> None:
        self.next_round = int(state["next_round"])
        self.env = simpy.Environment(initial_time=float(state["now_s"]))
        self.controller.load_state_dict(state["controller"])
        if average_rate is not None:
            self.average_rate = average_rate

    # ---- one round --------------------------------------------------------------------
    def _select(self, t: int, snr_all: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """Scheduled client ids (ascending) and, for proportional fair, full-band rates [bit/s]."""
        sc = self.scenario
        pf = sc.selection.method == "proportional_fair"
        rate = rate_bps(1.0, sc.channel.bandwidth_hz, snr_all) if pf else None
        scheduled = select_clients(
            round_generator(sc.seed, stream="selection", round_index=t),
            n_clients=sc.n_clients,
            n_scheduled=sc.n_scheduled,
            method=sc.selection.method,
            snr=snr_all,
            average_rate=self.average_rate,
        )
        return np.asarray(scheduled, dtype=int), rate

    def _payload_bits(self, up: ClientUpload) -> float:
        p = self.scenario.payload
        bits = up.n_values * p.bits_per_value
        return float(bits + (up.index_bits if p.index_overhead else 0))

    def run_round(self, t: int) -> RoundOutcome:
        """Simulate round t to its aggregation; the caller persists the outcome."""
        wall0 = time.perf_counter()
        out: dict = {}
        proc = self.env.process(self._round_process(t, out))
        self.env.run(until=proc)
        out["record"]["wall_s"] = time.perf_counter() - wall0
        self.next_round = t + 1
        return RoundOutcome(out["record"], out["events"], out["clients"])

    def _round_process(self, t: int, out: dict):  # noqa: C901 - one round, read top to bottom
        sc, env, ch = self.scenario, self.env, self.scenario.channel
        t0 = env.now
        snr_all = self.channel.snr(t)
        scheduled, inst_rate = self._select(t, snr_all)
        snr = snr_all[scheduled]
        snr_db = 10.0 * np.log10(np.maximum(snr, 1e-300))
        k = len(scheduled)
        log: list[Event] = [Event(t0, Kind.BROADCAST, SERVER, float(k))]

        # faults known at the broadcast: outage (CSI) before the decision, dropout after
        outage = np.zeros(k, bool)
        if sc.faults.outage_snr_db is not None:
            outage = snr_db < sc.faults.outage_snr_db
        dropped = np.zeros(k, bool)
        if sc.faults.dropout_prob > 0:
            fault_rng = round_generator(sc.seed, stream="faults", round_index=t)
            dropped = (fault_rng.random(k) < sc.faults.dropout_prob) & ~outage
        allocated = ~outage
        compute_s = np.zeros(k)
        active = allocated & ~dropped
        shares = np.zeros(k)
        queue_before = self.controller.queue
        if allocated.any():
            if sc.devices.include_compute:
                compute_s = self._compute_estimate(scheduled)
            decision = self.controller.decide(snr[allocated], compute_s[allocated])
            shares[allocated] = decision.shares
            o_t, bound, planned, fell_back = (
                decision.sparsification,
                decision.bound,
                decision.planned_delay_s,
                decision.fell_back,
            )
        else:
            o_t, bound, planned, fell_back = math.nan, math.nan, 0.0, False
        if sc.faults.redistribute_unused and dropped.any() and active.any():
            spare = shares[dropped].sum()
            shares[active] += spare * shares[active] / shares[active].sum()
            shares[dropped] = 0.0
        for i in np.flatnonzero(dropped):
            log.append(Event(t0, Kind.DROP, int(scheduled[i])))
        for i in np.flatnonzero(outage):
            log.append(Event(t0, Kind.OUTAGE, int(scheduled[i])))

        # local training (wall time) for the clients that will upload
        trainers = scheduled[active]
        plan = RoundPlan(t, trainers, self.rank, o_t, bound, k)
        uploads = self.learner.local_round(plan) if len(trainers) else {}

        # virtual time: downlink, compute, upload, one process per training client
        downlink_s = 0.0
        if ch.downlink_rate_bps > 0:
            dense_bits = sc.payload.bits_per_value * self.rank * self.params_per_rank
            downlink_s = dense_bits / ch.downlink_rate_bps
        procs, client_rows, no_rate = [], [], []
        record_clients = sc.output.clients

        def client_row(i: int, compute_s: float, upload_s: float, bits: float, status=None):
            """One ``clients.csv`` row for scheduled position i (status filled in later)."""
            return {
                "round": t,
                "client": int(scheduled[i]),
                "snr_db": float(snr_db[i]),
                "share": float(shares[i]),
                "compute_s": compute_s,
                "upload_s": upload_s,
                "bits": bits,
                "status": status,
            }

        active_idx = np.flatnonzero(active)
        rates = rate_bps(shares[active_idx], ch.bandwidth_hz, snr[active_idx]).tolist()
        for i, rate in zip(active_idx.tolist(), rates, strict=True):
            cid = int(scheduled[i])
            up = uploads[cid]
            comp = up.flops / float(self.flops_per_s[cid]) if sc.devices.include_compute else 0.0
            bits = self._payload_bits(up)
            upload_s = bits / rate if rate > 0 else math.inf
            if math.isfinite(upload_s):
                procs.append(env.process(self._client(cid, downlink_s, comp, upload_s, bits, log)))
            else:
                no_rate.append(cid)
            if record_clients:
                client_rows.append(client_row(i, comp, upload_s, bits))
        if procs:
            everyone = simpy.AllOf(env, procs)
            if sc.faults.deadline_s is not None:
                yield env.any_of([everyone, env.timeout(sc.faults.deadline_s)])
                for p in procs:
                    if p.is_alive:
                        p.interrupt("deadline")
                yield env.timeout(0)  # let interrupted clients log their straggler event
            else:
                yield everyone
        for cid in no_rate:
            log.append(Event(env.now, Kind.STRAGGLER, cid))
        events = sort_events(log)
        arrived = arrived_clients(events)
        metrics = self.learner.aggregate(t, arrived)
        for key, value in metrics.items():
            if not math.isfinite(value):
                raise SimulationError(f"round {t}: non-finite {key} after aggregation ({value})")
        events.append(Event(env.now, Kind.AGGREGATE, SERVER, float(len(arrived))))
        timing = round_timing(events)
        queue_after = self.controller.observe(timing["delay_s"])

        if inst_rate is not None:  # proportional-fair average-throughput tracker
            served = np.zeros(sc.n_clients)
            served[scheduled[active]] = inst_rate[scheduled[active]]
            self.average_rate = (1 - PF_SMOOTHING) * self.average_rate + PF_SMOOTHING * served

        evaluate = (t + 1) % sc.eval_every == 0 or t == sc.rounds - 1
        ev = self.learner.evaluate(t) if evaluate else {}
        arrived_set = set(arrived.tolist())
        for row in client_rows:
            row["status"] = "arrived" if row["client"] in arrived_set else "straggler"
        if record_clients:
            for i in np.flatnonzero(~active):
                status = "outage" if outage[i] else "dropped"
                client_rows.append(client_row(i, 0.0, 0.0, 0.0, status))
        record = {
            "round": t,
            **timing,
            "queue": queue_before,
            "queue_after": queue_after,
            "sparsification": o_t,
            "rank": self.rank,
            "n_scheduled": k,
            "index_bits": float(sum(uploads[c].index_bits for c in arrived_set)),
            "mean_snr_db": float(snr_db.mean()),
            "min_snr_db": float(snr_db.min()),
            "planned_delay_s": planned,
            "bound": bound,
            "solver_fallback": int(fell_back),
            "loss": metrics.get("loss", math.nan),
            "accuracy": ev.get("accuracy", math.nan),
            "test_loss": ev.get("test_loss", math.nan),
            "cov_norm": metrics.get("cov_norm", math.nan),
            "orth_residual": metrics.get("orth_residual", math.nan),
        }
        out.update(record=record, events=events, clients=client_rows)

    def _compute_estimate(self, clients: np.ndarray) -> np.ndarray:
        """Compute times [s] the server expects (for compute-aware shares)."""
        return self.learner.expected_flops(self.rank) / self.flops_per_s[clients]

    def _client(
        self,
        cid: int,
        downlink_s: float,
        compute_s: float,
        upload_s: float,
        bits: float,
        log: list[Event],
    ):
        env = self.env
        try:
            if downlink_s > 0:
                yield env.timeout(downlink_s)
            log.append(Event(env.now, Kind.COMPUTE_START, cid))
            if compute_s > 0:
                yield env.timeout(compute_s)
            log.append(Event(env.now, Kind.COMPUTE_END, cid))
            log.append(Event(env.now, Kind.UPLOAD_START, cid))
            yield env.timeout(upload_s)
            log.append(Event(env.now, Kind.UPLOAD_END, cid, bits))
        except simpy.Interrupt:
            log.append(Event(env.now, Kind.STRAGGLER, cid))
