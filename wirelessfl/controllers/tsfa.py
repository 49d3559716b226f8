"""TSFA (Algorithm 3): the offline rank search (Algorithm 2, Lemma 2) then online Lyapunov."""

from __future__ import annotations

from typing import Any

from optim import offline_rank_search
from wirelessfl.controllers.lyapunov import OnlineLyapunov
from wirelessfl.errors import UserError


class TwoStage(OnlineLyapunov):
    """Rank from ``optim.offline_rank_search`` on the average channel; then as OSFA."""

    def choose_rank(self) -> int:
        c, s = self.ctx, self.ctx.settings
        # Lemma 2 with a fixed dense part h (a task head): (K/N) sum_k v h / (B log2(1 + SNR_k))
        # of the budget D_th is spent on it, so the LoRA payload gets what remains.
        self.fixed_average_delay_s = c.n_scheduled / c.n_clients * self.fixed_delay_s(c.mean_snr)
        d_th_lora = s.d_th_s - self.fixed_average_delay_s
        if d_th_lora <= 0:
            raise UserError(
                f"controller.d_th_s: {s.d_th_s} s is spent by the dense task head alone "
                f"({self.fixed_average_delay_s:.4g} s on the average channel); raise D_th"
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
            )
        except ValueError as err:  # no feasible rank: the user's D_th is too tight
            raise UserError(f"controller.d_th_s: {err}") from None
        return int(self.offline.rank)

    def summary(self) -> dict[str, Any]:
        o = self.offline
        return {
            "rank": self.rank,
            "rank_source": "offline stage (Algorithm 2)",
            "offline_sparsification": float(o.sparsification),
            "offline_fixed_delay_s": self.fixed_average_delay_s,
            "offline_bounds": [float(b) for b in o.bounds],
            "offline_sparsifications": [float(x) for x in o.sparsifications],
        }
