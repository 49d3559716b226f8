"""``channel.aircomp``: the AirComp uplink's settings (its ``Settings``; docs/simulator.md,
"Over-the-air aggregation"). Torch-free: the scenario schema loads it through the registry."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from channels.aircomp import AIRCOMP_POLICIES
from wirelessfl.config.schema import option
from wirelessfl.errors import ConfigError

__all__ = ["AirCompSettings", "uses_aircomp", "uses_fading_policy"]


def uses_aircomp(config: Mapping[str, Any]) -> bool:
    """Whether a run's resolved config (plain data) sends over the air."""
    return (config.get("channel") or {}).get("uplink", "fdma") == "aircomp"


def uses_fading_policy(config: Mapping[str, Any]) -> bool:
    """Whether a run's resolved config (plain data) runs policy optimal_fading over the air."""
    air = (config.get("channel") or {}).get("aircomp") or {}
    return uses_aircomp(config) and air.get("policy") == "optimal_fading"


@dataclass
class AirCompSettings:
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
