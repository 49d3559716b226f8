"""The uplink interface: what one ``channel.uplink`` does in a synchronous round and in the
event-driven modes (docs/simulator.md, "Uplinks").

An :class:`Uplink` is built once per run from the scenario (:meth:`Uplink.from_scenario`), checks
the run's controller and learner (:meth:`Uplink.check_run`), and is then asked by the simulator,
round after round:

1. :meth:`Uplink.before_decision`: a hook before the controller's decision, on the scheduled
   clients not in outage (AirComp's power control: the powers it sets, the clients it excludes
   and each one's received coefficient; an uplink without one returns None);
2. :meth:`Uplink.prepare_uploads` (the round and its training clients), then
   :meth:`Uplink.upload_s`: each training client's upload time [s] from its share, SNR and bits;
3. :meth:`Uplink.deliver`: what the learner must know of the channel before it aggregates
   (AirComp: the analog sum's coefficients and denoising factor);
4. :meth:`Uplink.record`: its columns of the round's record (:meth:`Uplink.round_columns`), and
   :meth:`Uplink.client_values`: its columns of each client's row (:meth:`Uplink.client_columns`).

The controllers plan through the uplink's planning members
(:class:`~wirelessfl.controllers.uplink_planning.UplinkPlanning`: :meth:`Uplink.plan_round`,
:meth:`Uplink.delay_pieces`, :meth:`Uplink.offline_delay`, :attr:`Uplink.OFFERS`), by default
derived from :meth:`Uplink.upload_s`; a controller needing what the uplink does not offer is
refused at load (:meth:`Uplink.check_controller_needs`).
Its state (:meth:`Uplink.state`, :meth:`Uplink.restore`) is part of the run's checkpoint. The
event-driven modes share the band among the uploads on the air (processor sharing,
:mod:`wirelessfl.sim.shared_band`) at each client's full-band rate
(:meth:`Uplink.full_band_rate_bps`), on an uplink whose :attr:`Uplink.EVENT_DRIVEN` is true.
A new uplink is one module with a subclass and one line in ``registries.UPLINKS`` (or
``UPLINKS.register`` from a ``--plugin`` file).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from wirelessfl.controllers.uplink_planning import NEEDS, AffineUploads, UplinkPlanning
from wirelessfl.errors import ConfigError

__all__ = ["Uplink", "UplinkRound", "learner_uplinks"]


@dataclass
class UplinkRound:
    """What :meth:`Uplink.before_decision` set for the k scheduled clients of a round.

    ``excluded`` (k,) bool: clients the uplink keeps from training and sending;
    ``tx_power_w`` (k,) [W]: the transmit powers it sets (the others' unchanged);
    ``gain`` (k,): each client's received coefficient c_k (0: not sending);
    ``detail``: the uplink's own record of the round (None: nobody could send).
    """

    excluded: np.ndarray
    tx_power_w: np.ndarray
    gain: np.ndarray
    detail: Any = None


class Uplink(UplinkPlanning, ABC):
    """One ``channel.uplink`` (module docstring). Subclasses set :attr:`NAME` and implement
    :meth:`from_scenario`, :meth:`upload_s` and the planners' view
    (:class:`~wirelessfl.controllers.uplink_planning.UplinkPlanning`: :attr:`SHARES_BAND`, an
    idle share can go to the others with ``faults.redistribute_unused``; :attr:`STARTS_TOGETHER`,
    the reason a round waits for the slowest compute, for the warnings; :meth:`plan_round`,
    :meth:`delay_pieces`, :meth:`offline_delay`, :attr:`OFFERS`); the other hooks default to
    "nothing to do"."""

    #: the event-driven server modes can share its band (:meth:`full_band_rate_bps`)
    EVENT_DRIVEN: ClassVar[bool] = False
    #: the channel forms the aggregate (an analog sum), so the learner must form it too: its
    #: class's ``UPLINKS`` lists this uplink (a digital uplink delivers each update as sent)
    ANALOG: ClassVar[bool] = False
    #: the names (-> doc) of its ``channel.uplink_params``
    PARAMS: ClassVar[dict[str, str]] = {}
    #: the distributions its results depend on, whose versions a run's meta.json records
    PACKAGES: ClassVar[tuple[str, ...]] = ()
    #: how its uploads occupy a cell's resources in a network of cells (``cells``): "band",
    #: a share of the band (:meth:`occupied_shares`) at a rate of the SINR
    #: (:mod:`wirelessfl.uplinks.cell_uplink`); "analog", every upload on the whole band at
    #: once, the other cells' sums adding to the noise (:meth:`interfere`); None: it has no
    #: inter-cell interference model
    CELL_RESOURCES: ClassVar[str | None] = None

    @classmethod
    @abstractmethod
    def from_scenario(cls, scenario: Any) -> Uplink:
        """The run's uplink, from its scenario's ``channel`` section."""

    @classmethod
    def check_scenario(cls, scenario: Any) -> None:
        """A one-line ``ConfigError`` for what the scenario alone rules out, at load: an analog
        uplink with a ``learner.kind`` that does not form its sum, an event-driven server mode
        on an uplink without a shared band, a ``channel.uplink_params`` key it does not take.
        Subclasses add their own."""
        from wirelessfl.registries import CONTROLLERS

        cls.check_learner_forms(scenario)
        cls.check_params(scenario)
        settings = scenario.controller
        cls.check_controller_needs(settings.name, CONTROLLERS.load(settings.name), settings)
        if scenario.server.event_driven and not cls.EVENT_DRIVEN:
            raise ConfigError(
                f"channel.uplink: {scenario.channel.uplink} has no band the uploads on the air "
                f"share, and server.mode: {scenario.server.mode} sends them one at a time on "
                "one; use server.mode: sync, or channel.uplink: fdma"
            )

    @classmethod
    def check_params(cls, scenario: Any) -> None:
        """One line for a ``channel.uplink_params`` key outside :attr:`PARAMS`."""
        name = scenario.channel.uplink
        for key in scenario.channel.uplink_params:
            if key not in cls.PARAMS:
                accepted = ", ".join(cls.PARAMS) or "none"
                raise ConfigError(
                    f"channel.uplink_params.{key}: not a setting of channel.uplink: {name} "
                    f"(accepted: {accepted})"
                )

    @classmethod
    def check_learner_forms(cls, scenario: Any) -> None:
        """One line where an analog uplink's learner would aggregate without its effect."""
        name, kind = scenario.channel.uplink, scenario.learner.kind
        if cls.ANALOG and name not in learner_uplinks(kind):
            forming = [k for k in _learner_kinds() if name in learner_uplinks(k)]
            raise ConfigError(
                f"channel.uplink: {name}: learner.kind {kind!r} has no over-the-air sum (it "
                "would average the updates exactly, without the analog aggregate's noise, "
                f"while the tables report {name}'s timing); use channel.uplink: fdma, or a "
                f"learner.kind that forms it ({', '.join(forming)})"
            )

    @classmethod
    def check_controller_needs(cls, name: str, controller: Any, settings: Any) -> None:
        """One line when the controller class needs of the uplink (``uplink_needs(settings)``)
        what it does not offer (:attr:`OFFERS`), naming the combination and the controllers
        that fit."""
        from wirelessfl.config.controller import settings_for
        from wirelessfl.registries import CONTROLLERS

        missing = sorted(controller.uplink_needs(settings) - cls.OFFERS)
        if not missing:
            return
        lacks, does = NEEDS[missing[0]]
        lacks = cls.LACKS.get(missing[0], lacks)

        def fits_uplink(other: str) -> bool:
            try:
                needs = CONTROLLERS.load(other).uplink_needs(settings_for(settings, other))
            except ConfigError:  # these values are no valid settings of that controller
                return False
            return needs <= cls.OFFERS

        fits = sorted(other for other in CONTROLLERS.names() if fits_uplink(other))
        listed = ", ".join(fits[:-1]) + " or " + fits[-1] if len(fits) > 1 else "".join(fits)
        use = f"controller.name: {listed}, or " if fits else ""
        raise ConfigError(
            f"channel.uplink: {cls.NAME} {lacks}, and controller {name!r} {does}; use "
            f"{use}channel.uplink: fdma"
        )

    def check_run(self, controller: Any, learner: Any) -> None:
        """A one-line ``ConfigError`` when the run's controller or learner cannot work with
        this uplink (checks that need them built; the scenario's are made at load): by
        default, the built controller's needs (a plug-in controller handed in)."""
        settings = controller.ctx.settings
        self.check_controller_needs(settings.name, type(controller), settings)

    def start(self, n_clients: int) -> None:
        """The state of the N devices at the run's start (nothing by default)."""
        return None

    def state(self) -> dict:
        """Checkpointed state, merged into the simulator's (JSON; empty by default)."""
        return {}

    def restore(self, state: dict) -> None:
        """Continue from :meth:`state` (nothing by default)."""
        return None

    def before_decision(
        self,
        snr: np.ndarray,
        tx_power_w: np.ndarray,
        mean_snr: np.ndarray,
        clients: np.ndarray,
        sendable: np.ndarray,
    ) -> UplinkRound | None:
        """The hook before the controller's decision, on the k scheduled ``clients`` (k,)
        with their (k,) linear SNRs at (k,) powers [W], (k,) mean SNRs and (k,) bool
        ``sendable`` (not in outage); None: nothing set (the default)."""
        return None

    def prepare_uploads(self, round_index: int, clients: np.ndarray) -> None:
        """Called before :meth:`upload_s` with the round's index and its (m,) training clients
        in the order of the arrays :meth:`upload_s` gets (an uplink whose uploads draw
        randomness per client keys it on them; nothing by default)."""
        return None

    @abstractmethod
    def upload_s(
        self, shares: np.ndarray, snr: np.ndarray, bits: np.ndarray, n_values: np.ndarray
    ) -> np.ndarray:
        """(m,) upload times [s] of m training clients from their (m,) shares b_k, linear SNRs,
        upload bits and dense values n_k of their messages (inf: never arrives)."""

    def plan_round(
        self, bits: np.ndarray, n_values: np.ndarray | None, snr: np.ndarray, compute_s: np.ndarray
    ) -> tuple[np.ndarray, float]:
        """By default every client on its own resources (share 1) and the longest
        :meth:`upload_s` [s] (after the slowest compute where the uploads start together):
        planned = measured for an uplink whose times depend on nothing else."""
        ones = np.ones(len(snr))
        upload_s = np.asarray(self.upload_s(ones, snr, bits, n_values), dtype=float)
        longest = float(upload_s.max()) if upload_s.size else 0.0
        if self.STARTS_TOGETHER:
            longest += float(np.max(compute_s, initial=0.0))
        return ones, longest

    def delay_pieces(
        self,
        uploads: AffineUploads,
        n_values: np.ndarray | None,
        snr: np.ndarray,
        compute_s: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """By default one piece per client for an upload time linear in the bits (a rate that
        does not depend on them, as every Shannon- or link-rate uplink): with t_k the seconds
        per bit of :meth:`upload_s`, c_k = t_k v n_k and c0_k = t_k (v h_k + s_k) [s] (plus the
        slowest compute where the uploads start together)."""
        ones = np.ones(len(snr))
        per_bit_s = np.asarray(self.upload_s(ones, snr, ones, n_values), dtype=float)
        fixed_s = uploads.fixed_bits * per_bit_s
        if self.STARTS_TOGETHER:
            fixed_s = fixed_s + float(np.max(compute_s, initial=0.0))
        return uploads.bits_per_ratio * per_bit_s, fixed_s

    def interfere(self, prepared: UplinkRound | None, noise_factor: float) -> None:
        """An analog uplink's round in a network of cells: the other cells' simultaneous sums
        multiply the receiver's noise power by ``noise_factor`` = 1 + I/N (nothing by
        default)."""
        return None

    def occupied_shares(self, shares: np.ndarray) -> np.ndarray:
        """(m,) the part of the band each of m uploads with (m,) ``shares`` occupies (a
        network's interference; by default the shares themselves)."""
        return np.asarray(shares, dtype=float)

    def full_band_rate_bps(self, snr: float) -> float:
        """A client's rate [bit/s] alone on the whole band, for the event-driven modes'
        processor sharing (only on an uplink with :attr:`EVENT_DRIVEN`)."""
        raise NotImplementedError(f"channel.uplink: {self.NAME} has no shared band")

    def dispatch_rate_bps(self, snr: np.ndarray, concurrency: int) -> np.ndarray:
        """(n,) the rate [bit/s] a dispatch plans with: the full-band rate shared among the
        at most ``concurrency`` uploads on the air (only on an uplink with
        :attr:`EVENT_DRIVEN`)."""
        rates = [self.full_band_rate_bps(float(x)) for x in np.atleast_1d(snr)]
        return np.asarray(rates, dtype=float) / concurrency

    def deliver(
        self, learner: Any, prepared: UplinkRound | None, scheduled: np.ndarray, arrived: np.ndarray
    ) -> None:
        """Tell the learner what it needs of the channel before it aggregates the (a,)
        ``arrived`` clients of the (k,) ``scheduled`` (nothing by default)."""
        return None

    def round_columns(self) -> dict[str, str]:
        """The columns (name -> doc) this uplink adds to ``rounds.csv`` after the standard
        ones, in order (none by default); :meth:`record` gives their values."""
        return {}

    def record(self, prepared: UplinkRound | None) -> dict[str, float]:
        """The round's values of :meth:`round_columns` (none by default)."""
        return {}

    def client_columns(self) -> dict[str, str]:
        """The columns (name -> doc) this uplink adds to a synchronous run's ``clients.csv``
        after the standard ones (none by default); :meth:`client_values` gives their values."""
        return {}

    def client_values(self, client: int) -> dict[str, float]:
        """The round's values of :meth:`client_columns` for ``client`` (NaN where it did not
        upload; none by default)."""
        return {}


def learner_uplinks(kind: str) -> tuple[str, ...]:
    """The uplinks whose aggregate the ``learner.kind`` ``kind`` forms: its class's
    ``UPLINKS`` (``wirelessfl.learners.base.Learner``; FDMA alone when it names none)."""
    from wirelessfl.learners.kinds import learner_factory

    factory = learner_factory(kind)
    learner = getattr(factory, "__self__", factory)  # a class, or its from_scenario
    return tuple(getattr(learner, "UPLINKS", ("fdma",)))


def _learner_kinds() -> list[str]:
    from wirelessfl.registries import LEARNERS

    return LEARNERS.names()
