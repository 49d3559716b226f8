"""Network-only learner: the loss follows the convergence bound's progress model.

No training happens. The excess loss e_t = F_t - F* contracts towards a floor set by the
per-round bound gamma^t (Theorem 1), in proportion to the share of scheduled clients whose
update arrived:

    e_{t+1} = e_t - c * (n_arrived / K) * (e_t - floor_t),
    floor_t = e_0 * gamma^t / (gamma^t + gamma_half),

with c = ``progress_rate`` and gamma_half = ``bound_half`` (the bound at which the floor is half
the initial loss). Accuracy is chance + (1 - chance) * (1 - e_t / e_0). This keeps the
qualitative behaviour the bound predicts (more sparsification or a rank far from r_max raises
the floor; lost uploads slow progress) at a cost of microseconds per round. It is a
network-study instrument, never a claim about a model's accuracy.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from channels import lora_training_flops
from wirelessfl.learners.base import ClientUpload, Learner, ModelGeometry, RoundPlan
from wirelessfl.results.store import atomic_write_text


class SurrogateLearner(Learner):
    """Bound-driven loss model for network-only runs (see module docstring)."""

    def __init__(
        self,
        *,
        geometry: ModelGeometry,
        initial_loss: float = 2.3,
        progress_rate: float = 0.02,
        bound_half: float = 1.0e4,
        n_classes: int = 10,
        local_steps: int = 5,
    ):
        self._geometry = geometry
        self.initial_loss = initial_loss
        self.progress_rate = progress_rate
        self.bound_half = bound_half
        self.n_classes = n_classes
        self.local_steps = local_steps
        self.excess = initial_loss
        self._last_plan: RoundPlan | None = None
        self._payload_rank: int | None = None

    def geometry(self) -> ModelGeometry:
        return self._geometry

    def start(self, *, rank: int, n_clients: int, seed: int) -> None:
        self.rank = rank
        g = self._geometry
        self._flops = lora_training_flops(
            list(g.layer_shapes),
            rank,
            batch_size=g.batch_size,
            steps=self.local_steps,
            seq_len=g.seq_len,
            base_params=g.base_params,
        )

    def expected_flops(self, rank: int) -> float:
        return float(self._flops)

    def _payload(self, rank: int, sparsification: float) -> tuple[int, int, int]:
        """(values kept, dense values, index bits) of one client's sparse payload.

        Per layer round(O r (d + l)) values are kept; the index costs
        min(bitmask, coordinates) over the layer's [B^T A] block, as ``wirelessfl.compress``
        counts it (``channels.index_overhead_bits``; its per-rank constants are cached here).
        """
        if rank != self._payload_rank:
            n_layer = np.array([rank * (d + ell) for d, ell in self._geometry.layer_shapes])
            # ceil(log2 n): the bits of one coordinate in a layer of n entries
            self._coordinate_bits = np.array([int(n - 1).bit_length() for n in n_layer])
            self._n_layer, self._payload_rank = n_layer, rank
        n_layer = self._n_layer
        kept = np.round(sparsification * n_layer).astype(np.int64)  # half to even, as round()
        index = np.where(kept == n_layer, 0, np.minimum(n_layer, kept * self._coordinate_bits))
        return int(kept.sum()), int(n_layer.sum()), int(index.sum())

    def local_round(self, plan: RoundPlan) -> dict[int, ClientUpload]:
        self._last_plan = plan
        kept, total, index = self._payload(plan.rank, plan.sparsification)
        up = ClientUpload(kept, total, index, self._flops, float(self.excess))
        return {int(k): up for k in plan.clients}

    def aggregate(self, round_index: int, arrived: np.ndarray) -> dict[str, float]:
        plan = self._last_plan
        if plan is not None and plan.n_scheduled > 0 and len(arrived) > 0:
            gamma = plan.bound if np.isfinite(plan.bound) else 0.0
            floor = self.initial_loss * gamma / (gamma + self.bound_half)
            frac = len(arrived) / plan.n_scheduled
            self.excess -= self.progress_rate * frac * (self.excess - floor)
        return {"loss": float(self.excess)}

    def evaluate(self, round_index: int) -> dict[str, float]:
        chance = 1.0 / self.n_classes
        acc = chance + (1.0 - chance) * max(0.0, 1.0 - self.excess / self.initial_loss)
        return {"accuracy": float(acc), "test_loss": float(self.excess)}

    def save_state(self, folder: Path) -> None:
        atomic_write_text(folder / "learner.json", json.dumps({"excess": self.excess}))

    def load_state(self, folder: Path) -> None:
        self.excess = float(json.loads((folder / "learner.json").read_text())["excess"])

    def describe(self) -> dict[str, object]:
        return {"learner": "surrogate", "params_per_rank": self._geometry.params_per_rank}
