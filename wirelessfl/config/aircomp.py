"""``channel.uplink`` and ``channel.aircomp``: the uplink the clients send their updates over
(docs/simulator.md, "Over-the-air aggregation")."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from channels.aircomp import AIRCOMP_POLICIES
from wirelessfl.config.schema import option
from wirelessfl.errors import ConfigError

__all__ = ["UPLINKS", "AirCompConfig", "check_uplink", "learner_uplinks", "uses_aircomp"]

#: ``channel.uplink``: orthogonal digital uploads (FDMA shares) or over-the-air aggregation
UPLINKS = ("fdma", "aircomp")


def uses_aircomp(config: Mapping[str, Any]) -> bool:
    """Whether a run's resolved config (plain data) sends over the air."""
    return (config.get("channel") or {}).get("uplink", "fdma") == "aircomp"


def uses_fading_policy(config: Mapping[str, Any]) -> bool:
    """Whether a run's resolved config (plain data) runs policy optimal_fading over the air."""
    air = (config.get("channel") or {}).get("aircomp") or {}
    return uses_aircomp(config) and air.get("policy") == "optimal_fading"


@dataclass
class AirCompConfig:
    """Over-the-air aggregation: the power control policy of ``channels.aircomp``."""

    policy: str = option(
        "optimal",
        choices=AIRCOMP_POLICIES,
        doc="full_inversion (every client aligned to the weakest at full power) | truncated "
        "(clients below threshold_snr_db excluded, the others inverted) | optimal (Cao et "
        "al.'s threshold-based policy: weak clients at full power, the others inverted) | "
        "optimal_fading (regularized channel inversion whose per-device multipliers keep the "
        "average power within average_power_w)",
        applies=uses_aircomp,
    )
    threshold_snr_db: float | None = option(
        None,
        ge=-100.0,
        le=100.0,
        doc="policy truncated: the SNR at full power below which a client is excluded (the "
        "others are received at this SNR); null: chosen per round from the channel (the "
        "exclusion of least MSE)",
        applies=uses_aircomp,
    )

    average_power_w: float | None = option(
        None,
        gt=0.0,
        doc="policy truncated with threshold_snr_db: each client's average transmit power over "
        "Rayleigh fading (Zhu et al.: the received SNR is lowered until every client meets "
        "it); policy optimal_fading (required): the average its multipliers enforce; null: "
        "the peak power alone",
        applies=uses_aircomp,
    )
    dual_step: float = option(
        0.05,
        gt=0.0,
        le=10.0,
        doc="policy optimal_fading: the step of the multipliers' dual ascent, in the "
        "dimensionless price nu_k = lambda_k average_power_w (nu_k += step (p_k / "
        "average_power_w - 1), floored at 0)",
        applies=uses_fading_policy,
    )

    def validate(self, prefix: str) -> None:
        if self.policy == "optimal_fading":
            if self.average_power_w is None:
                raise ConfigError(
                    f"{prefix}.average_power_w: policy optimal_fading prices each client's "
                    "average transmit power, and none is set; set average_power_w [W], or use "
                    "policy optimal"
                )
            return
        if self.average_power_w is not None and (
            self.policy != "truncated" or self.threshold_snr_db is None
        ):
            raise ConfigError(
                f"{prefix}.average_power_w: sets the received SNR of truncated inversion at a "
                f"fixed threshold, or the multipliers of optimal_fading; use policy: truncated "
                f"with threshold_snr_db, or optimal_fading, or remove it"
            )

    def threshold_snr(self) -> float | None:
        """The linear threshold q_th (None: the per-round rule)."""
        return None if self.threshold_snr_db is None else 10.0 ** (self.threshold_snr_db / 10.0)


def learner_uplinks(kind: str) -> tuple[str, ...]:
    """The uplinks whose aggregate the ``learner.kind`` ``kind`` forms: its class's
    ``UPLINKS`` (``wirelessfl.learners.base.Learner``; FDMA alone when it names none)."""
    from wirelessfl.registries import LEARNERS

    factory = LEARNERS.load(kind)
    learner = getattr(factory, "__self__", factory)  # a class, or its from_scenario
    return tuple(getattr(learner, "UPLINKS", ("fdma",)))


def _check_learner_forms(scenario: Any) -> None:
    """One line where the learner would aggregate without the uplink's effect."""
    uplink, kind = scenario.channel.uplink, scenario.learner.kind
    if uplink not in learner_uplinks(kind):
        raise ConfigError(
            f"channel.uplink: {uplink}: learner.kind {kind!r} has no over-the-air sum (it would "
            "average the updates exactly, without the analog aggregate's noise, while the "
            f"tables report {uplink}'s timing); use channel.uplink: fdma, or a learner.kind "
            f"that forms it ({', '.join(_kinds_forming(uplink))})"
        )


def _kinds_forming(uplink: str) -> list[str]:
    from wirelessfl.registries import LEARNERS

    return [kind for kind in LEARNERS.names() if uplink in learner_uplinks(kind)]


def check_uplink(scenario: Any) -> None:
    """A one-line ``ConfigError`` for what over-the-air aggregation cannot run: a learner
    without an over-the-air sum (its class's ``UPLINKS``), an algorithm
    whose aggregate is not a weighted sum of its clients' shared tensors (its cost model's
    ``SINGLE_UPDATES``), the event-driven server modes (one analog sum per synchronous round),
    a fixed transmit power per client (the AirComp policy sets the powers), quantisation (a
    digital stage), redistributed shares (there are none) and central DP (its sensitivity
    assumes the digital weights)."""
    if scenario.channel.uplink != "aircomp":
        return
    from wirelessfl.registries import ALGORITHMS

    _check_learner_forms(scenario)
    name = scenario.algorithm.name
    if not ALGORITHMS.load(name).CostModel.SINGLE_UPDATES:
        raise ConfigError(
            f"channel.uplink: aircomp receives a weighted sum of the clients' shared tensors, and "
            f"algorithm {name!r} does not aggregate one; use channel.uplink: fdma, or an "
            "algorithm whose CostModel.SINGLE_UPDATES (fedit, fedit_topk, ffa_lora, soft)"
        )
    if scenario.server.event_driven:
        raise ConfigError(
            f"channel.uplink: aircomp sums the updates of one synchronous round, and server.mode: "
            f"{scenario.server.mode} adds them one at a time; use server.mode: sync"
        )
    fading = scenario.channel.fading.model
    air = scenario.channel.aircomp
    if air.average_power_w is not None and air.policy == "truncated" and fading != "rayleigh":
        raise ConfigError(
            "channel.aircomp.average_power_w: the average over fading is Rayleigh's closed "
            f"form, and channel.fading.model is {fading!r}; use rayleigh, or remove it"
        )
    if scenario.controller.tx_power_fraction is not None:
        raise ConfigError(
            "controller.tx_power_fraction: with channel.uplink: aircomp the power control "
            "policy (channel.aircomp.policy) sets every client's power; remove it"
        )
    if scenario.quantize.bits is not None or scenario.controller.bits_choices is not None:
        raise ConfigError(
            "quantize.bits / controller.bits_choices: channel.uplink: aircomp sends analog "
            "values, and quantisation is a stage of digital uploads; use channel.uplink: fdma, "
            "or remove them"
        )
    if scenario.faults.redistribute_unused:
        raise ConfigError(
            "faults.redistribute_unused: with channel.uplink: aircomp every client sends on the "
            "whole band, so no share idles to give away; remove it, or use channel.uplink: fdma"
        )
    if scenario.privacy.mode == "central":
        raise ConfigError(
            "privacy.mode: central adds the server's noise to a digital sum whose sensitivity "
            "is set by the aggregation weights, which channel.uplink: aircomp rescales per "
            "client; use privacy.mode: local (noise on the device), or channel.uplink: fdma"
        )
