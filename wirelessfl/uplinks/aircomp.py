"""``channel.uplink: aircomp``: the synchronous round's over-the-air uplink (docs/simulator.md,
"Over-the-air aggregation").

Before training, the server runs the power control policy (``channel.aircomp.policy``,
:mod:`channels.aircomp`) on the scheduled clients it knows can send (not in outage; dropouts
and unavailable clients it learns of only when they stay silent), at their power-control
powers P_k and SNRs q_k. Clients the policy excludes do not train (``excluded`` in
``clients.csv``). The others start their analog transmission together once the last of them
has computed, each sending its message's dense values n_k in n_k / B seconds
(:func:`channels.aircomp.analog_upload_s`) at its policy power p_k, so the round's upload time
does not grow with K. The learner gets each arriving client's received coefficient c_k and the
denoising factor η (:class:`~wirelessfl.learners.base.AirRound`) and adds the receiver noise.

Policy ``optimal_fading`` keeps one Lagrange multiplier per device
(:mod:`channels.aircomp_fading`): each round's powers use them, then they move by one dual
step; they are part of the run's checkpoint (:meth:`AirCompUplink.state`).

The controller plans the analog sum (:mod:`wirelessfl.controllers.air_planning`): a controller
that decides transmit powers, or that plans bandwidth shares, is refused when the run is built
(:meth:`AirCompUplink.check_run`); what the scenario alone rules out is refused at load
(:meth:`AirCompUplink.check_scenario`). Its settings, ``channel.aircomp``, are its
:attr:`~AirCompUplink.Settings` (:mod:`wirelessfl.uplinks.aircomp_settings`).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from channels.aircomp import (
    AirPower,
    aggregation_mse,
    air_power,
    analog_upload_s,
    average_power_denoising,
    truncated_inversion,
)
from channels.aircomp_fading import dual_update, fading_power
from wirelessfl.controllers.air_planning import AnalogSumPlanning
from wirelessfl.errors import ConfigError
from wirelessfl.plans import AirRound
from wirelessfl.results.columns import AIRCOMP_FADING_ROUND_COLUMNS, AIRCOMP_ROUND_COLUMNS
from wirelessfl.uplinks.aircomp_settings import AirCompSettings
from wirelessfl.uplinks.base import Uplink, UplinkRound

__all__ = ["AirCompUplink"]


class AirCompUplink(AnalogSumPlanning, Uplink):
    """The AirComp policy of a run: ``policy``, ``threshold_snr`` (linear, None: per round),
    ``average_power_w`` (None: none) and ``dual_step`` of ``channel.aircomp``, the band B [Hz],
    and, for ``optimal_fading``, the (N,) multipliers λ_k [1/W] (zero at the start)."""

    NAME = "aircomp"
    ANALOG = True
    CELL_RESOURCES = "analog"
    #: ``channel.aircomp``: the power control policy and its parameters
    Settings = AirCompSettings

    def __init__(
        self,
        policy: str,
        threshold_snr: float | None,
        bandwidth_hz: float,
        average_power_w: float | None = None,
        dual_step: float = 0.05,
    ) -> None:
        self.policy = policy
        self.threshold_snr = threshold_snr
        self.bandwidth_hz = bandwidth_hz
        self.average_power_w = average_power_w
        self.dual_step = dual_step
        self.multiplier_per_w: np.ndarray | None = None
        self.fading = policy == "optimal_fading"
        #: the round's mean price λ_k P̄ over the clients in the policy (optimal_fading)
        self._round_price = math.nan

    @classmethod
    def from_scenario(cls, scenario: Any) -> AirCompUplink:
        ch = scenario.channel
        air = ch.aircomp
        return cls(
            air.policy, air.threshold_snr(), ch.bandwidth_hz, air.average_power_w, air.dual_step
        )

    @classmethod
    def check_scenario(cls, scenario: Any) -> None:
        """A one-line ``ConfigError`` for what over-the-air aggregation cannot run: a learner
        without an over-the-air sum (its class's ``UPLINKS``), an algorithm whose aggregate is
        not a weighted sum of its clients' shared tensors (its cost model's
        ``SINGLE_UPDATES``), the event-driven server modes (one analog sum per synchronous
        round), a fixed transmit power per client (the AirComp policy sets the powers),
        quantisation (a digital stage), redistributed shares (there are none) and central DP
        (its sensitivity assumes the digital weights)."""
        from wirelessfl.registries import ALGORITHMS, CONTROLLERS

        cls.check_learner_forms(scenario)
        cls.check_params(scenario)
        name = scenario.algorithm.name
        if not ALGORITHMS.load(name).CostModel.SINGLE_UPDATES:
            raise ConfigError(
                "channel.uplink: aircomp receives a weighted sum of the clients' shared tensors, "
                f"and algorithm {name!r} does not aggregate one; use channel.uplink: fdma, or an "
                "algorithm whose CostModel.SINGLE_UPDATES (fedit, fedit_topk, ffa_lora, soft)"
            )
        if scenario.server.event_driven:
            raise ConfigError(
                "channel.uplink: aircomp sums the updates of one synchronous round, and "
                f"server.mode: {scenario.server.mode} adds them one at a time; use server.mode: "
                "sync"
            )
        fading = scenario.channel.fading.model
        air = scenario.channel.aircomp
        if air.average_power_w is not None and air.policy == "truncated" and fading != "rayleigh":
            raise ConfigError(
                "channel.aircomp.average_power_w: the average over fading is Rayleigh's closed "
                f"form, and channel.fading.model is {fading!r}; use rayleigh, or remove it"
            )
        if scenario.controller.given("tx_power_fraction") is not None:
            raise ConfigError(
                "controller.tx_power_fraction: with channel.uplink: aircomp the power control "
                "policy (channel.aircomp.policy) sets every client's power; remove it"
            )
        cls.check_controller(
            scenario.controller.name,
            CONTROLLERS.load(scenario.controller.name),
            scenario.controller,
        )
        bits_choices = scenario.controller.given("bits_choices")
        if scenario.quantize.bits is not None or bits_choices is not None:
            raise ConfigError(
                "quantize.bits / controller.bits_choices: channel.uplink: aircomp sends analog "
                "values, and quantisation is a stage of digital uploads; use channel.uplink: "
                "fdma, or remove them"
            )
        if scenario.faults.redistribute_unused:
            raise ConfigError(
                "faults.redistribute_unused: with channel.uplink: aircomp every client sends on "
                "the whole band, so no share idles to give away; remove it, or use "
                "channel.uplink: fdma"
            )
        if scenario.privacy.mode == "central":
            raise ConfigError(
                "privacy.mode: central adds the server's noise to a digital sum whose "
                "sensitivity is set by the aggregation weights, which channel.uplink: aircomp "
                "rescales per client; use privacy.mode: local (noise on the device), or "
                "channel.uplink: fdma"
            )

    @classmethod
    def check_controller(cls, name: str, controller: Any, settings: Any) -> None:
        """A controller class that decides the transmit powers under ``settings`` (the policy
        sets them) or needs what the analog sum does not offer (bandwidth shares:
        :meth:`check_controller_needs`), refused in one line that names the combination first
        (at load, before the controller's own prerequisites)."""
        if controller.decides_tx_power_under(settings):
            raise ConfigError(
                f"channel.uplink: aircomp sets the transmit powers by channel.aircomp.policy, "
                f"and controller {name!r} decides them too (under these settings); use "
                "channel.uplink: fdma, or a controller that does not"
            )
        cls.check_controller_needs(name, controller, settings)

    def check_run(self, controller: Any, learner: Any) -> None:
        """A learner without an over-the-air sum (its ``UPLINKS``: one handed in, not built by
        kind) and the controller checks of :meth:`check_controller` on the built controller
        (a plug-in controller handed in) are refused in one line."""
        if self.NAME not in learner.UPLINKS:
            raise ConfigError(
                f"channel.uplink: aircomp: the learner {type(learner).__name__} has no "
                "over-the-air sum (its UPLINKS); use channel.uplink: fdma"
            )
        self.check_controller(
            controller.ctx.settings.name, type(controller), controller.ctx.settings
        )

    def start(self, n_clients: int) -> None:
        """Zero multipliers for the N devices (``optimal_fading``; else nothing)."""
        if self.fading:
            self.multiplier_per_w = np.zeros(n_clients)

    def state(self) -> dict:
        """The checkpointed state: the multipliers (empty for the other policies)."""
        if self.multiplier_per_w is None:
            return {}
        return {"aircomp_multiplier_per_w": self.multiplier_per_w.tolist()}

    def restore(self, state: dict) -> None:
        """The multipliers of :meth:`state` (``optimal_fading``; else nothing)."""
        if self.fading:
            self.multiplier_per_w = np.asarray(state["aircomp_multiplier_per_w"], dtype=float)

    def power(
        self,
        snr: np.ndarray,
        peak_power_w: np.ndarray,
        mean_snr: np.ndarray,
        clients: np.ndarray,
    ) -> AirPower:
        """The policy on (k,) SNRs at (k,) peak powers [W] of the devices ``clients`` (k,),
        their (k,) mean SNRs at those powers bounding the received SNR by their average
        power (``truncated``); ``optimal_fading`` then moves the clients' multipliers."""
        if self.fading:
            assert self.multiplier_per_w is not None and self.average_power_w is not None
            lam = self.multiplier_per_w[clients]
            air = fading_power(snr, peak_power_w, lam)
            self._round_price = float(np.mean(lam)) * self.average_power_w
            self.multiplier_per_w[clients] = dual_update(
                lam, air.tx_power_w, self.average_power_w, self.dual_step
            )
            return air
        if self.average_power_w is None or self.threshold_snr is None:
            return air_power(self.policy, snr, peak_power_w, self.threshold_snr)
        eta = average_power_denoising(
            self.threshold_snr, mean_snr, peak_power_w, self.average_power_w
        )
        return truncated_inversion(snr, peak_power_w, self.threshold_snr, eta)

    def before_decision(
        self,
        snr: np.ndarray,
        tx_power_w: np.ndarray,
        mean_snr: np.ndarray,
        clients: np.ndarray,
        sendable: np.ndarray,
    ) -> UplinkRound:
        """The policy on the ``sendable`` clients: its powers replace theirs, the clients it
        excludes do not train, the others send on the whole band at coefficient c_k."""
        k = len(clients)
        rows = np.flatnonzero(sendable)
        prepared = UplinkRound(np.zeros(k, bool), tx_power_w.copy(), np.zeros(k))
        if rows.size:
            air = self.power(snr[rows], tx_power_w[rows], mean_snr[rows], clients[rows])
            prepared.detail = air
            prepared.excluded[rows[~air.included]] = True
            prepared.gain[rows] = air.gain
            prepared.tx_power_w[rows] = air.tx_power_w
        return prepared

    def interfere(self, prepared: UplinkRound | None, noise_factor: float) -> None:
        """The other cells' analog sums as noise: the received sum is Σ c_k x_k + z / sqrt(η)
        with z's power times ``noise_factor``, so the denoising factor becomes η / factor and
        the MSE Σ (c_k − 1)² + factor / η (the coefficients c_k are the policy's)."""
        if prepared is None or prepared.detail is None or prepared.detail.denoising <= 0:
            return
        air = prepared.detail
        eta = air.denoising / float(noise_factor)
        prepared.detail = dataclasses.replace(
            air, denoising=eta, mse=aggregation_mse(air.gain, eta)
        )

    def upload_s(
        self, shares: np.ndarray, snr: np.ndarray, bits: np.ndarray, n_values: np.ndarray
    ) -> np.ndarray:
        """(m,) analog transmission times n_k / B [s] of messages of ``n_values`` dense values,
        whatever the shares, SNRs and K."""
        return analog_upload_s(n_values, self.bandwidth_hz)

    def deliver(
        self, learner: Any, prepared: UplinkRound | None, scheduled: np.ndarray, arrived: np.ndarray
    ) -> None:
        """The analog sum of the arrived clients: their coefficients c_k and the denoising
        factor η (``learners.base.Learner.receive_over_the_air``)."""
        if prepared is None or prepared.detail is None or not arrived.size:
            return
        row = {int(c): i for i, c in enumerate(scheduled)}
        gain = {int(c): float(prepared.gain[row[int(c)]]) for c in arrived}
        learner.receive_over_the_air(AirRound(gain=gain, denoising=prepared.detail.denoising))

    def round_columns(self) -> dict[str, str]:
        """The AirComp columns, and ``aircomp_mean_price`` with ``optimal_fading``."""
        fading = AIRCOMP_FADING_ROUND_COLUMNS if self.fading else {}
        return {**AIRCOMP_ROUND_COLUMNS, **fading}

    def record(self, prepared: UplinkRound | None) -> dict[str, float]:
        """The round's AirComp columns (NaN when every scheduled client was in outage), and
        ``aircomp_mean_price`` with ``optimal_fading``."""
        air: AirPower | None = None if prepared is None else prepared.detail
        excluded = 0 if prepared is None else int(prepared.excluded.sum())
        price = {"aircomp_mean_price": math.nan if air is None else self._round_price}
        return {
            "aircomp_mse": math.nan if air is None else air.mse,
            "aircomp_snr_db": (
                10.0 * math.log10(air.denoising)
                if air is not None and air.denoising > 0
                else math.nan
            ),
            "aircomp_excluded": excluded,
        } | (price if self.fading else {})
