"""The ``privacy`` section: client-level differential privacy of the shared updates (clip +
Gaussian noise, central or local), sample-level DP-SGD in the local trainer, and the accounting
of epsilon at delta (docs/privacy.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from wirelessfl.config.schema import option
from wirelessfl.errors import ConfigError
from wirelessfl.registries import AGGREGATIONS

__all__ = [
    "ADJACENCIES",
    "PRIVACY_MODES",
    "PrivacyConfig",
    "count_sensitivity",
    "has_fixed_denominator",
    "update_noise_multiplier",
    "update_sensitivity_factor",
    "updates_per_aggregation",
]

#: ``privacy.mode``: no client-level DP, noise added by the server to the aggregate, or by each
#: device to its own update.
PRIVACY_MODES = ("none", "central", "local")
#: ``privacy.adjacency`` (docs/privacy.md, "Adjacency"): which neighbouring runs the guarantee
#: tells apart. zero_out: one client's contribution replaced by zero, who is scheduled, who
#: arrives and the weights as they are; add_remove: one client's data present or absent
#: (Opacus's and McMahan et al.'s), which needs a fixed-denominator aggregate; replace: one
#: client's contribution replaced by any other.
ADJACENCIES = ("zero_out", "add_remove", "replace")


def has_fixed_denominator(rule: str) -> bool:
    """Whether the ``strategy.aggregation`` rule ``rule`` weighs a client independently of who
    else arrived (marked by ``wirelessfl.algorithms.aggregation.fixed_denominator``)."""
    return bool(getattr(AGGREGATIONS.load(rule), "fixed_denominator", False))


def update_sensitivity_factor(adjacency: str) -> float:
    """How far one client moves the release, in units of w_k C (central; C local): 2 under
    ``replace`` (one clipped update against another), else 1 (against zero, or absent)."""
    return 2.0 if adjacency == "replace" else 1.0


def count_sensitivity(adjacency: str) -> float:
    """Sensitivity of adaptive clipping's centred count sum_k (b_k - 1/2): 1 under ``replace``
    (b_k - 1/2 from -1/2 to 1/2), else 1/2 (a term against none; Andrew et al.,
    arXiv:1905.03871, section 3)."""
    return 1.0 if adjacency == "replace" else 0.5


def update_noise_multiplier(z: float, count_noise: float | None, adjacency: str) -> float:
    """z_Delta, the update's noise over its sensitivity, that leaves the update and the count
    together one Gaussian mechanism at ``z`` (None: no count is released, z_Delta = z).

    Two Gaussian releases with multipliers z_Delta and sigma_b / s_b compose to one at
    (z_Delta^-2 + (sigma_b / s_b)^-2)^-1/2 (Andrew et al., Theorem 1, with s_b of
    :func:`count_sensitivity`), so z_Delta = (z^-2 - (sigma_b / s_b)^-2)^-1/2: with the centred
    count (s_b = 1/2) their (z^-2 - (2 sigma_b)^-2)^-1/2. Needs sigma_b / s_b > z."""
    if count_noise is None:
        return z
    return (z**-2 - (count_noise / count_sensitivity(adjacency)) ** -2) ** -0.5


def updates_per_aggregation(scenario: Any) -> int:
    """The updates one aggregation is planned to take: K (``server.mode: sync``), 1 (async),
    M = ``server.buffer_size`` (buffered), the concurrency (semi_sync, at most). Adaptive
    clipping divides its noised count by it, and its default sigma_b is it / 20."""
    from wirelessfl.servers import server_mode

    return server_mode(scenario).updates_per_aggregation()


def _client_level(config: Mapping[str, Any]) -> bool:
    return (config.get("privacy") or {}).get("mode", "none") != "none"


def _adaptive(config: Mapping[str, Any]) -> bool:
    return _client_level(config) and bool((config.get("privacy") or {}).get("adaptive_clipping"))


def _accounted(config: Mapping[str, Any]) -> bool:
    privacy = config.get("privacy") or {}
    return _client_level(config) or bool(privacy.get("dp_sgd"))


def _dp_sgd(config: Mapping[str, Any]) -> bool:
    return bool((config.get("privacy") or {}).get("dp_sgd"))


@dataclass
class PrivacyConfig:
    """Differential privacy (docs/privacy.md); off by default (``mode: none``, no DP-SGD)."""

    mode: str = option(
        "none",
        choices=PRIVACY_MODES,
        doc="client-level DP of the shared update: none | central (the server adds N(0, "
        "(z C max_k w_k)^2) to the weighted sum of clipped updates) | local (each device adds "
        "N(0, (z C)^2) to its clipped update before the compression stage)",
    )
    clip_norm: float = option(
        1.0,
        gt=0.0,
        doc="C: L2 norm each client's shared update is clipped to (the initial C "
        "with adaptive_clipping)",
        applies=_client_level,
    )
    noise_multiplier: float = option(
        1.0,
        gt=0.0,
        doc="z: noise std over the sensitivity (with adaptive_clipping, the z of the update and "
        "the clipped-count estimate together, Andrew et al. Theorem 1)",
        applies=_client_level,
    )
    adjacency: str = option(
        "zero_out",
        choices=ADJACENCIES,
        doc="the neighbouring runs the guarantee tells apart: zero_out (one client's "
        "contribution replaced by zero; schedule, arrivals and weights as they are) | "
        "add_remove (one client present or absent; needs a fixed-denominator aggregate, "
        "strategy.aggregation: unbiased, in synchronous rounds) | replace (one client's "
        "contribution replaced by any other: twice the noise, no amplification)",
        applies=_client_level,
    )
    adaptive_clipping: bool = option(
        False,
        doc="adapt C toward the target_quantile of the update norms (Andrew et al., "
        "arXiv:1905.03871; central mode)",
        applies=_client_level,
    )
    target_quantile: float = option(
        0.5, gt=0.0, lt=1.0, doc="gamma: the quantile of update norms C tracks", applies=_adaptive
    )
    clip_lr: float = option(
        0.2, gt=0.0, doc="eta_C: C <- C exp(-eta_C (b_hat - gamma))", applies=_adaptive
    )
    count_noise: float | None = option(
        None,
        gt=0.0,
        doc="sigma_b: std of the noise on the count of unclipped clients (null: K / 20, the "
        "paper's choice; event-driven modes: the updates an aggregation takes / 20, i.e. 1 "
        "async, buffer_size buffered, the concurrency semi_sync)",
        applies=_adaptive,
    )
    dp_sgd: bool = option(
        False,
        doc="sample-level DP-SGD in the sequential trainer (Opacus: per-sample clipping to "
        "sample_clip_norm and noise sample_noise_multiplier x sample_clip_norm per step)",
    )
    sample_clip_norm: float = option(
        1.0, gt=0.0, doc="DP-SGD: per-sample gradient clip norm", applies=_dp_sgd
    )
    sample_noise_multiplier: float = option(
        1.0, gt=0.0, doc="DP-SGD: noise std over sample_clip_norm", applies=_dp_sgd
    )
    delta: float | None = option(
        None,
        gt=0.0,
        lt=1.0,
        doc="delta of the reported (epsilon, delta) (null: N^-1.1 for client-level DP, as "
        "McMahan et al. do; 1e-5 for DP-SGD alone)",
        applies=_accounted,
    )
    accountant: str = option(
        "rdp", choices=("rdp", "prv"), doc="Opacus accountant: rdp | prv", applies=_accounted
    )
    target_epsilon: float | None = option(
        None,
        gt=0.0,
        doc="stop the run before a round whose release would take epsilon above this",
        applies=_accounted,
    )

    @property
    def client_level(self) -> bool:
        """Whether the shared updates are clipped and noised (``mode`` is not ``none``)."""
        return self.mode != "none"

    @property
    def upload_side_bits(self) -> float:
        """Bits the DP stage adds to each client's upload [bit]: 1 with adaptive clipping (the
        clipped-count bit b_k = 1[||Delta_k|| <= C], Andrew et al. Algorithm 1), else 0."""
        return 1.0 if self.client_level and self.adaptive_clipping else 0.0

    @property
    def active(self) -> bool:
        """Whether any DP mechanism runs (client-level or DP-SGD)."""
        return self.client_level or self.dp_sgd

    def validate(self, prefix: str) -> None:
        if self.adaptive_clipping and self.mode != "central":
            raise ConfigError(
                f"{prefix}.adaptive_clipping: the server estimates the clipped fraction with "
                f"noise (central mode only); mode is {self.mode!r}; set mode: central or "
                "adaptive_clipping: false"
            )
        if self.target_epsilon is not None and not self.active:
            raise ConfigError(
                f"{prefix}.target_epsilon: needs a DP mechanism (mode: central | local, or "
                "dp_sgd: true); none is on"
            )
