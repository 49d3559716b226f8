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
        try:
            self.offline = offline_rank_search(
                mean_snr=c.mean_snr,
                n_scheduled=c.n_scheduled,
                d_th_s=s.d_th_s,
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
            "offline_bounds": [float(b) for b in o.bounds],
            "offline_sparsifications": [float(x) for x in o.sparsifications],
        }
