"""Sketch: FSLoRA's per-client sketch sizes k_i chosen online by drift-plus-penalty.

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
"""

from __future__ import annotations

from typing import Any

import numpy as np

from channels import lora_training_flops
from optim import solve_sketch_ratios
from wirelessfl.controllers.base import Controller, ControllerContext, Decision
from wirelessfl.errors import ConfigError


def lora_step_fraction(geometry: Any, rank: int) -> float:
    """f: the LoRA share of a training step's FLOPs at ``rank`` (0 when the geometry is unknown).

    ``channels.lora_training_flops`` is T (4 P_base + 6 L) with L linear in the rank, so the step
    at rank k costs phi(k) = 1 - f + f k / r times the step at rank r.
    """
    if geometry is None:
        return 0.0
    args = {
        "batch_size": int(geometry.batch_size),
        "steps": 1,
        "seq_len": int(geometry.seq_len),
    }
    shapes = list(geometry.layer_shapes)
    total = lora_training_flops(shapes, rank, base_params=int(geometry.base_params), **args)
    return lora_training_flops(shapes, rank, **args) / total if total > 0 else 0.0


class SketchRatio(Controller):
    """Per-client sketch sizes k_i in [``controller.k_min``, ``controller.rank``] each round.

    Decision: ``sparsification`` 1.0, eq. (31) shares, ``planned_delay_s`` D, ``bound`` the
    penalty (1/K') sum_i r^2 / k_i^2, ``ranks`` k (K',).
    """

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
        sol = solve_sketch_ratios(
            queue=self.queue,
            V=float(s.V),
            snr=snr,
            compute_s=compute_s,
            rank=self.rank,
            k_min=self.k_min,
            params_per_rank=c.params_per_rank,
            bits_per_value=c.bits_per_value,
            bandwidth_hz=c.bandwidth_hz,
            dense_values=c.fixed_values,
            lora_flops_fraction=self.lora_flops_fraction,
        )
        return Decision(
            sparsification=1.0,
            shares=np.asarray(sol.shares, dtype=float),
            planned_delay_s=float(sol.delay_s),
            bound=float(sol.penalty),
            ranks=np.asarray(sol.ranks, dtype=int),
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
