"""TSFA (Algorithm 3): the offline rank search (Algorithm 2, Lemma 2) then online Lyapunov.

``controller.offline_channel`` picks the channel the offline stage plans with: ``mean_snr``
(the paper: log2(1 + mean SNR)) or ``expected_rate`` (E[1/log2(1 + SNR)] under Rayleigh fading,
above the outage threshold ``faults.outage_snr_db``, or above each client's
``controller.offline_outage_prob`` quantile when there is none; ``optim.offline`` and
docs/solvers.md, "The offline stage").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from optim import offline_rank_search
from optim.offline import planning_inverse_efficiency
from wirelessfl.controllers.lyapunov import OnlineLyapunov
from wirelessfl.errors import ConfigError, UserError


class TwoStage(OnlineLyapunov):
    """Rank from ``optim.offline_rank_search`` on the planning channel; then as OSFA."""

    def _inverse_efficiency(self) -> np.ndarray | None:
        """(N,) w_k of ``expected_rate`` [s Hz / bit]; ``None`` for ``mean_snr`` (the paper)."""
        c, s = self.ctx, self.ctx.settings
        self.planning_cutoff = "none (average channel)"
        if s.offline_channel == "mean_snr":
            return None
        if getattr(c.fading, "k_factor", None) != 0.0:
            name = type(c.fading).__name__
            raise ConfigError(
                "controller.offline_channel: expected_rate is computed for Rayleigh fading "
                f"(channel.fading.model rayleigh or gauss_markov), got {name}; use mean_snr"
            )
        if c.outage_snr is not None:
            self.planning_cutoff = "faults.outage_snr_db (partial expectation)"
        else:
            self.planning_cutoff = (
                f"controller.offline_outage_prob = {s.offline_outage_prob:g} "
                "(conditional expectation above each client's quantile)"
            )
        return planning_inverse_efficiency(
            c.mean_snr,
            channel="expected_rate",
            outage_snr=c.outage_snr,
            outage_prob=s.offline_outage_prob,
        )

    def choose_rank(self) -> int:
        c, s = self.ctx, self.ctx.settings
        w = self._inverse_efficiency()
        # Lemma 2 with a fixed dense part h (a task head): (K/N) sum_k v h / (B log2(1 + SNR_k))
        # of the budget D_th is spent on it, so the LoRA payload gets what remains.
        if w is None:
            fixed_s = self.fixed_delay_s(c.mean_snr)
        else:  # the same sum with w_k in place of 1/log2(1 + SNR_bar_k)
            fixed_s = c.bits_per_value * c.fixed_values * float(np.sum(w)) / c.bandwidth_hz
        self.fixed_average_delay_s = c.n_scheduled / c.n_clients * fixed_s
        d_th_lora = s.d_th_s - self.fixed_average_delay_s
        if d_th_lora <= 0:
            raise UserError(
                f"controller.d_th_s: {s.d_th_s} s is spent by the dense task head alone "
                f"({self.fixed_average_delay_s:.4g} s on the planning channel); raise D_th"
            )
        try:
            self.offline = offline_rank_search(
                mean_snr=c.mean_snr,
                n_scheduled=c.n_scheduled,
                d_th_s=d_th_lora,
                params_per_rank=c.params_per_rank,
                bits_per_value=c.bits_per_value,
                bandwidth_hz=c.bandwidth_hz,
                o_min=s.o_min,
                constants=c.constants,
                inverse_efficiency=w,
            )
        except ValueError as err:  # no feasible rank: the user's D_th is too tight
            raise UserError(f"controller.d_th_s: {err}") from None
        self.planning_w_mean = float(np.mean(w)) if w is not None else None
        return int(self.offline.rank)

    def summary(self) -> dict[str, Any]:
        o = self.offline
        out = {
            "rank": self.rank,
            "rank_source": "offline stage (Algorithm 2)",
            "offline_sparsification": float(o.sparsification),
            "offline_fixed_delay_s": self.fixed_average_delay_s,
            "offline_bounds": [float(b) for b in o.bounds],
            "offline_sparsifications": [float(x) for x in o.sparsifications],
        }
        if self.planning_w_mean is not None:  # keys only for expected_rate: meta.json unchanged
            out["offline_channel"] = "expected_rate"
            out["offline_cutoff"] = self.planning_cutoff
            out["offline_mean_inverse_efficiency"] = self.planning_w_mean
        return out
