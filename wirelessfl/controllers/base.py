"""Controllers choose the rank r (before round 0) and, per round, the algorithm's knobs and the
shares b_k^t.

A controller is one file with a subclass of :class:`Controller` plus one line in
``wirelessfl.registries.CONTROLLERS``. It plans with the algorithm's cost model
(``ControllerContext.cost``, :mod:`wirelessfl.algorithms.cost`) and nothing else: the plans of
the round's clients under a candidate decision (:meth:`Controller.round_plans`), their exact
upload bits (:meth:`Controller.upload_bits`, counted as the simulator counts the real
messages), the shares under which they finish together and the planned delay
(:func:`~wirelessfl.controllers.costing.finish_together_shares`,
:func:`~wirelessfl.controllers.costing.planned_upload_s`), and the penalty. Its
:class:`Decision` may give every client its own rank and ratio (arrays over the clients it
decided for); TSFA, OSFA and ``fixed`` give all clients the same (the arrays are then left
``None`` and filled with the scalar).

Before each :meth:`Controller.decide` the simulator calls :meth:`Controller.begin_round` with
the round index, the ids of the clients about to be decided for and their power-control powers
(a controller used as a library without it plans for clients ``0..K'-1`` of round 0).

Transmit power and CPU clock (optional): a :class:`Decision` may give each client its power
p_k <= P_max,k and clock f_k in [f_min,k, f_max,k] (``Decision.tx_power_w``, ``.cpu_hz``); the
simulator then uploads at SNR_k p_k / P_max,k and computes for FLOPs / (flops_per_s f_k /
f_max,k) at CMOS energy kappa f_k^2 cycles (:mod:`channels.radio_decisions`). A controller that
does says so (:attr:`Controller.decides_tx_power`, :attr:`Controller.decides_cpu_frequency`);
the event-driven modes refuse it.

Energy budgets (optional, ``ControllerContext.energy_budget_j``): the base class keeps one
virtual queue per device (:class:`optim.EnergyQueues`, Z_k^{t+1} = max(Z_k^t + E_k^t - E_bar_k,
0); with ``controller.energy_queue: at_participation`` a queue moves only in the rounds its
device spends energy, by the budget of every round since its last move; with ``signed``
Z_k^{t+1} = Z_k^t + E_k^t - E_bar_k with no max, priced at max(Z_k, 0)). Per round the
simulator calls :meth:`Controller.price_energy` with the clients about to be decided for and
their transmit powers, then :meth:`Controller.decide`, and after the round
:meth:`Controller.observe_energy` with every device's energy. Controllers with
``SUPPORTS_ENERGY_BUDGET = True`` (osfa, tsfa's online stage) minimise
(Q + sum_k Z_k P_k) D(O) + V gamma(O); the others refuse a budget.

Event-driven modes (``server.mode`` async | buffered | semi_sync): each dispatch asks
:meth:`Controller.decide_dispatch` for the dispatched clients' rank and ratio (the controller's
rank and :meth:`Controller.dispatch_ratio` here; the Lyapunov controllers solve the per-dispatch
problem (D1) of :mod:`optim.dispatch`), and with ``server.dispatch: controller``
:meth:`Controller.choose_dispatch` picks who starts (controllers with ``DISPATCH_OBJECTIVE``).
After each aggregation :meth:`Controller.observe_updates` takes the latencies of the updates it
took (eq. 21 once per update) and :meth:`Controller.observe_energy` their energy.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np

from channels.fdma import spectral_efficiency
from optim import (
    BoundConstants,
    EnergyQueues,
    VirtualQueue,
    convergence_bound,
    queue_after_updates,
)
from wirelessfl.algorithms.cost import CostModel, UploadSplit
from wirelessfl.config.controller import ControllerSettings
from wirelessfl.controllers.dispatch import DispatchCandidates, DispatchDecision
from wirelessfl.controllers.uplink_planning import AffineUploads, FdmaPlanning, UplinkPlanning
from wirelessfl.errors import ConfigError
from wirelessfl.plans import ClientPlan, RoundPlan

#: Sizes a controller remembers per kind (bits, affine splits) before it forgets them all.
_SIZE_CACHE_ENTRIES = 4096


@dataclass(frozen=True)
class ControllerContext:
    """What a controller may know about the system before round 0."""

    n_clients: int  # N
    n_scheduled: int  # K
    mean_snr: np.ndarray  # (N,) average linear SNR (the offline stage's "average channel")
    params_per_rank: int  # sum over adapted layers of (d + l)
    bits_per_value: int  # v
    bandwidth_hz: float  # B
    constants: BoundConstants
    settings: Any  # the scenario's controller section: the controller's Settings
    cost: CostModel  # the algorithm's cost model: plans, exact bits, penalty, knobs
    outage_snr: float | None = None  # linear faults.outage_snr_db (None: no outage)
    fading: Any = None  # the cell's channels fading model (None: unknown)
    geometry: Any = None  # the learner's ModelGeometry (FLOPs per rank; None: unknown)
    # (N,) time-average energy budget per device per round [J/round], > 0; None: no budget
    energy_budget_j: np.ndarray | None = None
    # (N,) the lowest and highest CPU clock each device may run at [Hz] (devices.energy.model:
    # cmos; equal when the scenario gives no range); None: the clock is not a decision
    cpu_hz_min: np.ndarray | None = None
    cpu_hz_max: np.ndarray | None = None
    # channel.noise_bandwidth: the noise over the whole band ("band") or the client's share
    noise_bandwidth: str = "band"
    # (N,) each device's sustained compute speed at f_max [FLOP/s] and the energy of one FLOP
    # at f_max [J/FLOP] (devices.energy.model: cmos; None otherwise): a client computing for
    # c seconds at f_max computes for c f_max / f at f and spends c flops_per_s j (f / f_max)^2
    flops_per_s: np.ndarray | None = None
    joules_per_flop_at_fmax: np.ndarray | None = None
    # the run's channel.uplink as the planners see it (wirelessfl.controllers.uplink_planning:
    # its round plan, the delay as a function of O, the offline average); None: FDMA on the band
    # B with noise_bandwidth (a controller built without a simulator)
    uplink: UplinkPlanning | None = None

    @property
    def planning(self) -> UplinkPlanning:
        """The uplink the controller plans with (:attr:`uplink`, else FDMA)."""
        if self.uplink is not None:
            return self.uplink
        return FdmaPlanning(self.bandwidth_hz, self.noise_bandwidth)


@dataclass(frozen=True)
class Decision:
    """One round's decision for the K' clients that get bandwidth.

    Attributes:
        sparsification: O^t (the round's ratio; the ``sparsification`` column).
        shares: (K',) bandwidth shares b_k^t, summing to <= 1 (``channel.uplink: aircomp``:
            ones, every client on the whole band).
        planned_delay_s: D^t the controller expects with these shares [s] (AirComp: the
            slowest compute plus the analog time,
            :func:`~wirelessfl.controllers.air_planning.air_round_s`).
        bound: gamma^t (NaN: not computed by this controller).
        fell_back: every CVXPY solver failed and the exact solver answered.
        ranks: (K',) per-client LoRA ranks, each <= the controller's ``rank``; ``None``: all
            clients get ``rank``.
        ratios: (K',) per-client sparsification; ``None``: all get ``sparsification``.
        fallbacks: solver fallbacks in the round: how many solvers failed before one answered
            (0: the first; with ``controller.method = cvxpy``, 1: SCS rescued CLARABEL, 2: both
            failed and the exact solver answered). ``fell_back`` with ``fallbacks = 0`` counts
            as 1. The ``solver_fallback`` column of ``rounds.csv``.
        tx_power_w: (K',) transmit power p_k [W] each client uploads with, in
            (0, P_max,k] (P_max,k: :attr:`Controller.round_tx_power_max_w`); its SNR scales as
            p_k / P_max,k (:func:`channels.snr_at_power`). ``None``: P_max,k.
        cpu_hz: (K',) CPU clock f_k [Hz] each client computes at, in
            [``ctx.cpu_hz_min``, ``ctx.cpu_hz_max``]: compute time x f_max / f_k, CMOS energy
            kappa f_k^2 cycles. ``None``: f_max (the device profile's speed).
        bits: b, the quantiser's bits per sent LoRA value the controller chose
            (``controller.bits_choices``); ``None``: the scenario's quantiser.
    """

    sparsification: float
    shares: np.ndarray
    planned_delay_s: float
    bound: float
    fell_back: bool = False
    ranks: np.ndarray | None = None
    ratios: np.ndarray | None = None
    fallbacks: int = 0
    tx_power_w: np.ndarray | None = None
    cpu_hz: np.ndarray | None = None
    bits: int | None = None

    def client_ranks(self, rank: int) -> np.ndarray:
        """(K',) ranks: :attr:`ranks`, or ``rank`` for every client."""
        if self.ranks is None:
            return np.full(len(self.shares), int(rank))
        return np.asarray(self.ranks, dtype=int)

    def client_ratios(self) -> np.ndarray:
        """(K',) ratios: :attr:`ratios`, or O^t for every client."""
        if self.ratios is None:
            return np.full(len(self.shares), float(self.sparsification))
        return np.asarray(self.ratios, dtype=float)


def constants_overflow(constants: BoundConstants, detail: str) -> str:
    """The one-line message for Theorem 1 constants too large for floating point."""
    k = constants
    return (
        f"constants: the convergence bound is not finite ({detail}) with S = {k.S}, "
        f"H = {k.H}, W = {k.W}, phi = {k.phi}, G = {k.G}; use constants of ordinary "
        "magnitude (wirelessfl run --calibrate estimates them)"
    )


class Controller(ABC):
    """Base class: a virtual queue (eq. 21) plus the decisions of a concrete policy.

    Attributes:
        SUPPORTS_ENERGY_BUDGET: whether :meth:`decide` uses the energy price (class attribute;
            a budget given to a controller without it is refused with a ``ConfigError``).
        energy_queues: the per-device :class:`optim.EnergyQueues`, or ``None`` without a budget.
        energy_price_jw: Pi = sum_k (omega Z_k + mu) P_k [J·W] stored by :meth:`price_energy`
            for the next :meth:`decide` (0 without a budget, and after :meth:`observe_energy`).
    """

    SUPPORTS_ENERGY_BUDGET: bool = False
    #: Whether :meth:`decide` chooses the quantiser's bits from ``controller.bits_choices``.
    CHOOSES_BITS: bool = False
    #: The algorithm knobs the controller needs, one of which at least (``"ratio"``, ``"rank"``;
    #: empty: any algorithm). An algorithm with none of them is refused in one line.
    NEEDS_KNOBS: frozenset[str] = frozenset()
    #: The ``controller.*`` settings the controller reads: a dataclass subclassing
    #: :class:`~wirelessfl.config.controller.ControllerSettings` (name, D_th, rank, r_max) with
    #: its own fields, each an :func:`~wirelessfl.config.schema.option`. Another controller's
    #: keys are accepted in the section but never reach this one: results leave them out of its
    #: runs' groups and labels. A plug-in that declares none reads the base's.
    Settings: type = ControllerSettings
    #: Whether :meth:`choose_dispatch` ranks candidates by a per-dispatch objective
    #: (``server.dispatch: controller`` needs it; refused in one line otherwise).
    DISPATCH_OBJECTIVE: bool = False
    #: Whether the controller reads ``controller.tx_power_fraction`` and
    #: ``controller.cpu_freq_hz`` (a fixed power and clock for every client; refused otherwise).
    FIXED_RADIO_DECISIONS: bool = False
    #: The noise rules (``channel.noise_bandwidth``) the controller plans exactly with: the
    #: rate b B log2(1 + SNR) (``band``) and/or b B log2(1 + SNR / b) (``share``); refused
    #: otherwise in one line.
    NOISE_BANDWIDTHS: frozenset[str] = frozenset({"band"})
    #: What :meth:`decide` needs of the uplink (keys of
    #: :data:`~wirelessfl.controllers.uplink_planning.NEEDS`: ``round``, its round plan and
    #: delay in O; ``shares``, bandwidth shares to plan; ``offline``, an average delay for an
    #: offline stage), checked at load against what the uplink offers, in one line. The
    #: default: shares (a controller that plans FDMA's shares itself).
    UPLINK_NEEDS: frozenset[str] = frozenset({"shares"})

    @classmethod
    def uplink_needs(cls, settings: Any) -> frozenset[str]:
        """What the controller needs of the uplink under ``settings`` (its :attr:`Settings`)."""
        return cls.UPLINK_NEEDS

    @classmethod
    def noise_bandwidths(cls, settings: Any) -> frozenset[str]:
        """The noise rules the controller plans exactly with under ``settings`` (the
        controller's :attr:`Settings`): :attr:`NOISE_BANDWIDTHS` unless a setting changes
        the rate it plans with."""
        return cls.NOISE_BANDWIDTHS

    @classmethod
    def noise_bandwidth_reason(cls, settings: Any) -> str:
        """Why :meth:`noise_bandwidths` differs from :attr:`NOISE_BANDWIDTHS` under
        ``settings`` (a few words for the refusal line)."""
        return "its settings change the rate it plans with"

    def __init__(self, ctx: ControllerContext):
        self.ctx = ctx
        self._check_knobs()
        self.round_index = 0
        self.round_clients: np.ndarray | None = None
        #: (K',) P_max,k [W] of the clients of :meth:`begin_round` (None: not given)
        self.round_tx_power_max_w: np.ndarray | None = None
        self.virtual_queue = VirtualQueue(ctx.settings.d_th_s)
        self.energy_queues: EnergyQueues | None = None
        self.energy_price_jw = 0.0
        if ctx.energy_budget_j is not None:
            self.energy_queues = self._energy_queues(ctx)
        try:
            with np.errstate(over="ignore", invalid="ignore"):
                self.rank = self.choose_rank()
        except OverflowError:
            raise ConfigError(
                constants_overflow(ctx.constants, "it overflows in the rank search")
            ) from None
        self.check_bound()

    def smallest_ratio(self) -> float:
        """The smallest ratio O a round of this controller can send: ``controller.o_min``
        where it chooses O, ``controller.sparsification`` where it fixes one, else 1."""
        s = self.ctx.settings
        return float(getattr(s, "o_min", getattr(s, "sparsification", 1.0)))

    def check_bound(self) -> None:
        """A one-line ``ConfigError`` if the constants make gamma^t non-finite at the run's rank.

        Checked at the worst case a round can meet: one scheduled client and the smallest
        ratio the controller can choose (:meth:`smallest_ratio`).
        """
        c, o = self.ctx, self.smallest_ratio()
        try:
            with np.errstate(over="ignore", invalid="ignore"):
                gamma = float(
                    convergence_bound(
                        rank=self.rank,
                        sparsification=o,
                        n_scheduled=1,
                        n_clients=c.n_clients,
                        constants=c.constants,
                    )
                )
        except OverflowError:
            gamma = math.inf
        if not math.isfinite(gamma):
            raise ConfigError(
                constants_overflow(
                    c.constants, f"gamma^t = {gamma} at rank {self.rank}, O = {o}, K = 1"
                )
            )

    def _energy_queues(self, ctx: ControllerContext) -> EnergyQueues:
        name = getattr(ctx.settings, "name", type(self).__name__)
        if not self.SUPPORTS_ENERGY_BUDGET:
            raise ConfigError(
                f"controller.name: {name} does not support an energy budget (its decisions "
                "ignore energy); use tsfa or osfa, or drop the energy budget"
            )
        budget = np.asarray(ctx.energy_budget_j, dtype=float)
        if budget.shape != (ctx.n_clients,):
            raise ConfigError(
                f"energy budget: one value per client ({ctx.n_clients}) expected, got shape "
                f"{budget.shape}"
            )
        try:
            return EnergyQueues(budget, rule=getattr(ctx.settings, "energy_queue", "every_round"))
        except ValueError as err:
            raise ConfigError(f"energy budget: {err}") from None

    @property
    def queue(self) -> float:
        """Q^t, the virtual queue of eq. (21) [s]."""
        return self.virtual_queue.value

    def price_energy(self, client_ids: np.ndarray, tx_power_w: np.ndarray) -> None:
        """Store Pi = sum_k max(Z_k, 0) P_k over ``client_ids`` for the next :meth:`decide`.

        Args:
            client_ids: (K',) device indices of the clients :meth:`decide` will be called for.
            tx_power_w: (K',) their transmit powers [W], aligned with ``client_ids``.

        Without an energy budget nothing is stored (the price stays 0).
        """
        if self.energy_queues is None:
            return
        queues = self.energy_weight * self.energy_queues.price(client_ids, tx_power_w)
        self.energy_price_jw = queues + self.energy_price * float(np.sum(tx_power_w))

    @property
    def energy_weight(self) -> float:
        """omega, the energy queues' weight in the Lyapunov function (``controller.energy_weight``;
        docs/solvers.md): the online stage prices omega Z_k E_k."""
        return float(self.ctx.settings.energy_weight)

    @property
    def energy_price(self) -> float:
        """mu, the price on every scheduled device's energy besides its queue's
        (``controller.energy_price``; docs/solvers.md)."""
        return float(self.ctx.settings.energy_price)

    def weighted_energy_queues(self, client_ids: np.ndarray) -> np.ndarray:
        """(K',) omega max(Z_k, 0) + mu [J] of ``client_ids``, each device's price per J of its
        energy (zeros without a budget; the max matters only under ``energy_queue: signed``)."""
        if self.energy_queues is None:
            return np.zeros(len(client_ids))
        weight_j = self.energy_queues.price_weight_j[client_ids]
        return self.energy_weight * weight_j + self.energy_price

    def observe_energy(self, energy_j: np.ndarray) -> None:
        """Z_k <- max(Z_k + E_k - E_bar_k, 0) with every device's energy this round (N,) [J]
        (``controller.energy_queue: at_participation``: only the devices with E_k > 0, by the
        budget of every round since their last move; ``signed``: Z_k <- Z_k + E_k - E_bar_k,
        no max; :class:`optim.EnergyQueues`).

        Devices not scheduled pass 0 (their queues drain, or bank the round). Resets the
        stored price to 0 (it was computed from the old queues). Without an energy budget this
        does nothing.
        """
        if self.energy_queues is None:
            return
        self.energy_queues.update(energy_j)
        self.energy_price_jw = 0.0

    @abstractmethod
    def choose_rank(self) -> int:
        """The LoRA rank for the whole run (TSFA: the offline stage); with per-client ranks,
        the largest rank any client may get (the model is wrapped once at it)."""

    @abstractmethod
    def decide(self, snr: np.ndarray, compute_s: np.ndarray) -> Decision:
        """Decide for the clients with linear SNRs ``snr`` (K',) and compute times (K',) [s]."""

    def observe(self, delay_s: float) -> float:
        """Eq. (21): Q <- max(Q + D^t - D_th, 0) with the delay the simulator observed."""
        return self.virtual_queue.update(delay_s)

    def summary(self) -> dict[str, Any]:
        """What goes into ``meta.json`` (e.g. the offline curve)."""
        return {"rank": self.rank}

    # ---- the event-driven modes --------------------------------------------------------------
    def dispatch_ratio(self) -> float:
        """The ratio a dispatched client is planned with when no per-dispatch step decides it."""
        return 1.0

    def decide_dispatch(self, cand: DispatchCandidates, index: int) -> DispatchDecision:
        """Rank and ratio of the clients dispatched now (``index``: the run's dispatch counter
        of the first): here the controller's rank and :meth:`dispatch_ratio` for all."""
        ratio, n = self.dispatch_ratio(), len(cand.clients)
        plans = self.dispatch_plans(cand, self.rank, np.full(n, ratio), index)
        return self.dispatch_costs(
            cand, plans, np.full(n, self.rank), np.full(n, ratio), np.zeros(n, dtype=int)
        )

    def dispatch_plans(
        self, cand: DispatchCandidates, rank: int, ratios: np.ndarray, index: int
    ) -> list[ClientPlan]:
        """The algorithm's plan of each candidate at ``rank`` and its ratio: one plan per rank,
        ratio and cost profile, which stands for every client that shares them (as in
        :meth:`round_plans`), remembered across dispatches."""
        cache = self.__dict__.setdefault("_dispatch_plan_cache", {})
        if len(cache) > _SIZE_CACHE_ENTRIES:  # keys hold O_k, new almost every dispatch
            cache.clear()
        profile, plans = self.ctx.cost.client_profile, []
        for i, (client, ratio) in enumerate(
            zip(cand.clients.tolist(), ratios.tolist(), strict=True)
        ):
            key = (rank, ratio, profile(client))
            plan = cache.get(key)
            if plan is None:
                self.begin_round(index + i, cand.clients[i : i + 1])
                plan = cache[key] = self.round_plans(cand.snr[i : i + 1], rank, ratio)[0]
            plans.append(plan)
        return plans

    def choose_dispatch(self, cand: DispatchCandidates, n: int, index: int) -> np.ndarray:
        """Rows of the ``n`` candidates to dispatch (``server.dispatch: controller``); only
        controllers with ``DISPATCH_OBJECTIVE`` have a rule (the scenario refuses the others)."""
        raise NotImplementedError(f"{type(self).__name__} has no per-dispatch objective")

    def dispatch_costs(
        self,
        cand: DispatchCandidates,
        plans: list[ClientPlan],
        ranks: np.ndarray,
        ratios: np.ndarray,
        fallbacks: np.ndarray,
        penalties: np.ndarray | None = None,
    ) -> DispatchDecision:
        """The decision with each plan's planned latency (compute plus its exact bits at the
        share 1/C) and penalty in a round of K = C updates (``penalties``: already known)."""
        c = self.ctx
        rate_bps = cand.share * c.bandwidth_hz * spectral_efficiency(cand.snr)
        upload_s = self.upload_bits(plans) / rate_bps
        if penalties is None:
            penalties = np.array(self.dispatch_penalties(plans, cand.concurrency))
        return DispatchDecision(
            np.asarray(ranks, dtype=int),
            np.asarray(ratios, dtype=float),
            np.asarray(cand.compute_s, dtype=float) + upload_s,
            np.asarray(penalties, dtype=float),
            np.asarray(fallbacks, dtype=int),
        )

    def dispatch_penalties(self, plans: list[ClientPlan], concurrency: int) -> list[float]:
        """Each plan's penalty in a round of K = C updates (once per size key)."""
        c = self.ctx
        return self._per_size(
            plans,
            "_dispatch_penalty_cache",
            lambda plan: c.cost.client_penalty(
                plan, n_scheduled=concurrency, constants=c.constants
            ),
        )

    def observe_updates(self, latencies_s: np.ndarray) -> float:
        """Eq. (21) once per update taken by an aggregation, in arrival order:
        Q <- max(Q + l_i - D_th, 0) with each update's latency l_i [s]; returns the new Q."""
        vq = self.virtual_queue
        vq.value = queue_after_updates(vq.value, latencies_s, vq.d_th_s)
        return vq.value

    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {"queue": self.queue}
        if self.energy_queues is not None:  # the key only with a budget: old states unchanged
            state["energy_queues"] = self.energy_queues.state_dict()
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.virtual_queue.value = float(state["queue"])
        self.load_energy_state(state)

    def load_energy_state(self, state: dict[str, Any]) -> None:
        """Restore the energy queues Z from a :meth:`state_dict` (a mismatch: ``ConfigError``)."""
        saved = state.get("energy_queues")
        if self.energy_queues is None:
            if saved is not None:
                raise ConfigError(
                    "resume: the checkpoint has energy queues but this run has no energy budget"
                )
            return
        if saved is None:
            raise ConfigError(
                "resume: this run has an energy budget but the checkpoint has no energy queues"
            )
        try:
            self.energy_queues.load_state_dict(saved)
        except ValueError as err:
            raise ConfigError(f"resume: energy queues: {err}") from None
        self.energy_price_jw = 0.0

    # ---- the algorithm's cost model ------------------------------------------------------------
    def _check_knobs(self) -> None:
        """One line when the algorithm has none of the knobs this controller decides."""
        needed, cost = self.NEEDS_KNOBS, self.ctx.cost
        if not needed or needed & cost.knobs:
            return
        name = getattr(self.ctx.settings, "name", type(self).__name__)
        raise ConfigError(
            f"controller.name: {name} decides {' or '.join(sorted(needed))} each round, and "
            f"algorithm {cost.name!r} has no such knob ({cost.knob_text()}); use "
            "controller.name: fixed"
        )

    def begin_round(
        self, round_index: int, client_ids: np.ndarray, tx_power_max_w: np.ndarray | None = None
    ) -> None:
        """The round and the clients (K',) the next :meth:`decide` is for, with their
        power-control powers P_max,k (K',) [W], the most :attr:`Decision.tx_power_w` may give
        (the SNRs :meth:`decide` gets are at these powers)."""
        self.round_index = int(round_index)
        self.round_clients = np.asarray(client_ids, dtype=int)
        self.round_tx_power_max_w = (
            None if tx_power_max_w is None else np.asarray(tx_power_max_w, dtype=float)
        )

    @classmethod
    def decides_tx_power_under(cls, settings: Any) -> bool:
        """Whether the controller decides transmit powers under ``settings`` (its
        :attr:`Settings`), known at load (an uplink that sets the powers refuses it)."""
        return False

    @property
    def decides_tx_power(self) -> bool:
        """Whether :meth:`decide` returns :attr:`Decision.tx_power_w`."""
        return type(self).decides_tx_power_under(self.ctx.settings)

    @property
    def decides_radio_per_dispatch(self) -> bool:
        """Whether :meth:`decide_dispatch` decides the powers and clocks this controller
        decides (:attr:`DispatchDecision.tx_power_w`, ``.cpu_hz``), so that the event-driven
        modes can run it."""
        return False

    @property
    def decides_cpu_frequency(self) -> bool:
        """Whether :meth:`decide` returns :attr:`Decision.cpu_hz` (``clients.csv`` then has
        ``cpu_hz``)."""
        return False

    @property
    def queue_counts_compute(self) -> bool:
        """Whether the delay queue takes the round's compute + upload time (the round time its
        step plans with) instead of the longest upload D^t of eq. (21): over the air, where
        the analog sum waits for the slowest compute (``UplinkPlanning.STARTS_TOGETHER``)."""
        return self.ctx.planning.STARTS_TOGETHER is not None

    def analog_values(self, plans: list[ClientPlan]) -> np.ndarray:
        """(K',) dense values n_k of ``plans``' uploads, the values an analog sum sends (the
        simulator's ``n_total``: sparsification does not shorten it)."""
        return np.array(self._per_size(plans, "_analog_cache", self._dense_count), dtype=float)

    def _dense_count(self, plan: ClientPlan) -> int:
        return self.ctx.cost.upload(plan).payload(bits_per_value=1, count_index=False).n_total

    def _clients(self, n: int) -> np.ndarray:
        clients = self.round_clients
        if clients is None or clients.size != n:  # library use without begin_round
            return np.arange(n)
        return clients

    def round_plans(
        self, snr: np.ndarray, ranks: Any, ratio: float, bits: int | None = None
    ) -> list[ClientPlan]:
        """The algorithm's plans of this round's clients (one per entry of ``snr``) when the
        controller decides ``ranks`` (a scalar or (K',)), the ratio ``ratio`` and the
        quantiser's bits ``bits`` (``None``: the scenario's).

        Clients of equal rank and cost profile (``CostModel.client_profile``) upload alike, so
        one of them is planned and its plan stands for the others (the same object): at
        K' = 1,000 this is most of a round's planning time."""
        cost, clients = self.ctx.cost, self._clients(len(snr))
        rank_of_client = np.broadcast_to(np.asarray(ranks, dtype=int), clients.shape).tolist()
        keys = [
            (rank, cost.client_profile(c))
            for c, rank in zip(clients.tolist(), rank_of_client, strict=True)
        ]
        first: dict[Any, int] = {}  # key -> index of the first client with it
        for i, key in enumerate(keys):
            first.setdefault(key, i)
        rows = list(first.values())
        plan = RoundPlan(
            self.round_index,
            clients[rows],
            [rank_of_client[i] for i in rows],
            ratio,
            float("nan"),
            len(clients),
            bits,
        )
        planned = dict(zip(first, cost.plan(plan, model_rank=self.rank), strict=True))
        return [planned[key] for key in keys]

    def upload_bits(self, plans: list[ClientPlan]) -> np.ndarray:
        """(K',) exact upload bits of ``plans`` [bit], as the simulator counts them."""
        return np.array(self._per_size(plans, "_bits_cache", self.ctx.cost.upload_bits))

    def affine_uploads(self, plans: list[ClientPlan]) -> list[UploadSplit]:
        """Each plan's upload as values the stage's ratio scales and values always sent."""
        return self._per_size(plans, "_affine_cache", self.ctx.cost.affine_upload)

    def planned_uploads(self, plans: list[ClientPlan]) -> AffineUploads:
        """``plans``' uploads as the uplink's planning takes them: v (n_k O + h_k) + s_k bits."""
        splits = self.affine_uploads(plans)
        n, h, side = (np.array(col, dtype=float) for col in zip(*splits, strict=True))
        return AffineUploads(float(self.ctx.bits_per_value), n, h, side, len(set(splits)) == 1)

    def dense_values_for_uplink(self, plans: list[ClientPlan]) -> np.ndarray | None:
        """(K',) dense values of ``plans`` where the uplink's time depends on them
        (``UplinkPlanning.READS_DENSE_VALUES``), else None (not counted)."""
        return self.analog_values(plans) if self.ctx.planning.READS_DENSE_VALUES else None

    def _per_size(self, plans: list[ClientPlan], cache_name: str, compute: Any) -> list:
        """``compute(plan)`` per plan: once per size key (a bounded cache) and once per plan
        object in the call (:meth:`round_plans` shares one among clients of a profile)."""
        cache = self.__dict__.setdefault(cache_name, {})
        if len(cache) > _SIZE_CACHE_ENTRIES:  # keys hold O^t, new almost every round
            cache.clear()
        size_key, seen, out = self.ctx.cost.size_key, {}, []
        for plan in plans:
            value = seen.get(id(plan))
            if value is None:
                key = size_key(plan)
                if key not in cache:
                    cache[key] = compute(plan)
                value = seen[id(plan)] = cache[key]
            out.append(value)
        return out

    def client_penalties(self, plans: list[ClientPlan]) -> np.ndarray:
        """(K',) each plan's penalty in a round of K' = len(plans) clients, once per plan
        object (clients of a profile share one, :meth:`round_plans`)."""
        c, seen = self.ctx, {}
        for plan in plans:
            if id(plan) not in seen:
                seen[id(plan)] = c.cost.client_penalty(
                    plan, n_scheduled=len(plans), constants=c.constants
                )
        return np.array([seen[id(plan)] for plan in plans])

    def penalty(self, plans: list[ClientPlan]) -> float:
        """The algorithm's convergence penalty of ``plans`` in a round of K' = len(plans)."""
        return self.ctx.cost.penalty(plans, n_scheduled=len(plans), constants=self.ctx.constants)
