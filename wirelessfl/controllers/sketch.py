"""Sketch: per-client ranks k_i chosen online by drift-plus-penalty (FSLoRA's sketch sizes).

FSLoRA (Fang et al., arXiv:2501.19389) keeps global LoRA modules of rank r = ``controller.rank``
and lets client i train and upload k_i of the r rank components. Every round this controller
solves, for the K' clients that get bandwidth (``optim.solve_sketch_ratios``, exact over the
integers; docs/solvers.md, "Sketch sizes for FSLoRA"):

    minimise_k  V (1/K') sum_i r^2 / k_i^2 + Q^t max_i d_i(k_i),   k_i in {k_min, ..., r},
    d_i(k) = c_i phi(k) + v (k P + h) / (b_i B log2(1 + SNR_i)),

with eq. (31) shares b_i, the server's compute estimate c_i at rank r, phi(k) the FLOPs of a
step at rank k over those at rank r (from the learner's geometry, ``channels.lora_training_flops``)
and Q^t the virtual queue of eq. (21) against ``controller.d_th_s``. With Q^t = 0 (the delay so
far within D_th) every client gets k_i = r, the penalty's minimum.

What the round's record holds: ``sparsification`` is 1 (no further sparsification), ``bound`` is
the penalty (1/K') sum_i r^2 / k_i^2 (FSLoRA's L~ / L over the round's clients, not SOFT's
gamma^t), ``planned_delay_s`` is D = max_i d_i(k_i) (compute plus upload; the simulator's
``delay_s``, which feeds the queue, is the upload time alone, so the two agree when
``devices.include_compute`` is false), and each client's k_i is its ``rank`` in ``clients.csv``.

Any algorithm with the ``rank`` knob (its clients train at a rank the controller caps) runs
under it: the latencies d_i(k) come from the algorithm's cost model (the exact bits of client
i's message at cap k) and the penalty is the cost model's per-client penalty p_i(k) (FSLoRA's
r^2 / k_i^2; eq. (14)'s gamma at the client's rank for the others), minimised exactly over the
table (``optim.solve_sketch_table``). When the latencies are affine in k and the penalty is
r^2 / k^2 (FSLoRA without compression) the closed-form sweep above runs, to the last bit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from channels import equal_delay_shares, full_band_upload_s, lora_training_flops
from optim import solve_sketch_ratios
from optim.sketch_ratio import solve_sketch_table
from wirelessfl.algorithms.cost import RANK
from wirelessfl.config.controller import ControllerSettings
from wirelessfl.config.schema import option
from wirelessfl.controllers.base import Controller, ControllerContext, Decision
from wirelessfl.errors import ConfigError


def lora_step_fraction(geometry: Any, rank: int) -> float:
    """f: the share of a training step's FLOPs at ``rank`` that follows the rank (0 when the
    geometry is unknown).

    ``channels.lora_training_flops`` is T (4 P_base + 6 L) with L linear in the rank, so the step
    at rank k costs phi(k) = 1 - f + f k / r times the step at rank r; the LoRA of layers with a
    fixed rank (``learner.rank_pattern``) does not follow it and counts with the base.
    """
    if geometry is None:
        return 0.0
    args = {
        "batch_size": int(geometry.batch_size),
        "steps": 1,
        "seq_len": int(geometry.seq_len),
    }
    total = geometry.training_flops(rank, steps=1)
    following = lora_training_flops(list(geometry.free_shapes), rank, **args)
    return following / total if total > 0 else 0.0


@dataclass
class SketchSettings(ControllerSettings):
    """The sketch controller's settings: the penalty weight and the smallest sketch size."""

    V: float = option(1.0e-4, ge=0.0, doc="Lyapunov penalty weight")
    k_min: int = option(
        1, ge=1, doc="sketch: smallest per-client sketch size k_i (<= controller.rank)"
    )

    def validate(self, prefix: str) -> None:
        super().validate(prefix)
        if self.k_min > self.rank:
            raise ConfigError(
                f"{prefix}.k_min: must be <= {prefix}.rank ({self.rank}), got {self.k_min}"
            )


class SketchRatio(Controller):
    """Per-client sketch sizes k_i in [``controller.k_min``, ``controller.rank``] each round.

    Decision: ``sparsification`` the stage's ratio at O = 1 (1.0 without a fixed one), eq. (31)
    shares, ``planned_delay_s`` D, ``bound`` the mean penalty, ``ranks`` k (K',).
    """

    NEEDS_KNOBS = frozenset({RANK})
    Settings = SketchSettings

    def __init__(self, ctx: ControllerContext):
        super().__init__(ctx)
        k_min = int(ctx.settings.k_min)
        if not 1 <= k_min <= self.rank:
            raise ConfigError(
                f"controller.k_min: must be in [1, controller.rank ({self.rank})], got {k_min}"
            )
        self.k_min = k_min
        self.lora_flops_fraction = lora_step_fraction(ctx.geometry, self.rank)

    def choose_rank(self) -> int:
        return int(self.ctx.settings.rank)

    def decide(self, snr: np.ndarray, compute_s: np.ndarray) -> Decision:
        c, s = self.ctx, self.ctx.settings
        snr = np.asarray(snr, dtype=float)
        ks = np.arange(self.k_min, self.rank + 1)
        table = [self.round_plans(snr, int(k), 1.0) for k in ks]  # table[j][i]: client i at k_j
        bits = np.stack([self.upload_bits(plans) for plans in table], axis=1)  # (K', m)
        affine = self._affine_payload(bits, ks)
        penalties = np.stack([self.client_penalties(plans) for plans in table], axis=1)
        if affine is not None and np.array_equal(penalties, self._sketch_penalty(ks, len(snr))):
            per_rank, dense = affine
            sol = solve_sketch_ratios(
                queue=self.queue,
                V=float(s.V),
                snr=snr,
                compute_s=compute_s,
                rank=self.rank,
                k_min=self.k_min,
                params_per_rank=per_rank,
                bits_per_value=c.bits_per_value,
                bandwidth_hz=c.bandwidth_hz,
                dense_values=dense,
                lora_flops_fraction=self.lora_flops_fraction,
            )
        else:
            sol = self._table_solution(snr, compute_s, ks, table, bits, penalties)
        return Decision(
            sparsification=c.cost.compression.ratio_for(1.0),
            shares=np.asarray(sol.shares, dtype=float),
            planned_delay_s=float(sol.delay_s),
            bound=float(sol.penalty),
            ranks=np.asarray(sol.ranks, dtype=int),
        )

    def _affine_payload(self, bits: np.ndarray, ks: np.ndarray) -> tuple[float, float] | None:
        """``(P, h)`` when every client's bits are exactly v (k P + h) for k in ``ks``."""
        v = float(self.ctx.bits_per_value)
        per_rank = float(self.ctx.params_per_rank)
        dense = (bits[:, 0] / v) - ks[0] * per_rank
        if dense.size == 0 or not np.all(dense == dense[0]) or dense[0] < 0:
            return None
        expected = v * (ks[None, :] * per_rank + dense[0])
        return (per_rank, float(dense[0])) if np.array_equal(bits, expected) else None

    def _sketch_penalty(self, ks: np.ndarray, n: int) -> np.ndarray:
        """(K', m) FSLoRA's r^2 / k^2, as the closed-form sweep computes it."""
        return np.broadcast_to((self.rank / ks.astype(np.float64)) ** 2, (n, ks.size))

    def _table_solution(self, snr, compute_s, ks, table, bits, penalties):
        """The exact sweep over the cost model's latency and penalty tables."""
        c = self.ctx
        shares = equal_delay_shares(snr)  # eq. (31)
        per_bit = full_band_upload_s(1.0, c.bandwidth_hz, snr) / shares  # [s/bit]
        f = self.lora_flops_fraction
        client_ranks = np.array([[p.rank for p in plans] for plans in table], dtype=float).T
        compute = np.asarray(compute_s, dtype=float)[:, None] * (
            1.0 - f + f * client_ranks / self.rank
        )
        latencies = compute + bits * per_bit[:, None]
        return solve_sketch_table(
            queue=self.queue,
            V=float(c.settings.V),
            ranks=ks,
            latencies_s=latencies,
            penalties=penalties,
            shares=shares,
        )

    def summary(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "rank_source": "scenario (controller.rank): the global rank r",
            "k_min": self.k_min,
            "lora_flops_fraction": self.lora_flops_fraction,
            "bound_column": "penalty (1/K') sum_i r^2 / k_i^2",
            "solver": "exact integer (sorted sweep over the candidate latencies d_i(k))",
        }
