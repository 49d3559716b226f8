"""Sample-level DP-SGD in the sequential trainer (Abadi et al., "Deep Learning with Differential
Privacy", arXiv:1607.00133), per-sample gradients by Opacus's ``GradSampleModule``.

Each local step: per-sample gradients g_i of the task loss for every trainable tensor (hooks on
peft's ``lora_A`` / ``lora_B`` ``nn.Linear`` layers and the head, what the sequential trainer
runs unchanged), each sample's whole gradient clipped to C_s, then
g = (sum_i clip(g_i) + N(0, (sigma C_s)^2 I)) / B replaces the task part of the gradient. The
orthogonality regularizer of eq. (2) (SOFT's zeta) reads no data: its gradient is added as it
is. The noise comes from the run's stream (seed, ``dp_sgd``, client, round).

Accounting (:class:`SampleLedger`): per device, one Gaussian step at q = B / |D_k| per local
step (Opacus's analysis is for Poisson sampling; the trainer draws shuffled batches without
replacement, the customary stand-in); the reported epsilon is the largest over the devices.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from wirelessfl.errors import ConfigError
from wirelessfl.privacy.accounting import epsilon

__all__ = ["DpSgd", "SampleLedger", "per_sample_gradients", "privatize_gradients"]


@dataclass(frozen=True)
class DpSgd:
    """DP-SGD's settings: per-sample clip norm C_s and noise multiplier sigma."""

    clip_norm: float
    noise_multiplier: float


@contextmanager
def per_sample_gradients(model: nn.Module) -> Iterator[None]:
    """Opacus's per-sample gradient hooks on ``model`` while the block runs: every backward
    leaves ``p.grad_sample`` (B, *p.shape) on the trainable tensors; removed afterwards."""
    from opacus.grad_sample import GradSampleModule

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Opacus's notes on full backward hooks
        hooks = GradSampleModule(model, batch_first=True, loss_reduction="mean", strict=False)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            yield
    finally:
        hooks.remove_hooks()
        for p in model.parameters():
            p.grad_sample = None


def privatize_gradients(
    params: Mapping[str, nn.Parameter],
    dp: DpSgd,
    generator: torch.Generator,
    batch_size: int,
) -> float:
    """Replace the task part of every trained tensor's gradient by DP-SGD's (module docstring),
    in place, and clear the per-sample gradients. Returns the fraction of samples clipped.

    Args:
        params: the trainable tensors (those without a gradient are frozen: skipped).
        dp: C_s and sigma.
        generator: the noise stream.
        batch_size: B, the samples of the step.
    """
    trained = {n: p for n, p in params.items() if p.grad is not None}
    missing = [n for n, p in trained.items() if getattr(p, "grad_sample", None) is None]
    if missing:
        raise ConfigError(
            f"privacy.dp_sgd: Opacus has no per-sample gradient for {missing[0]} (its layer "
            "type is not supported); use a model whose trained layers are nn.Linear, or "
            "dp_sgd: false"
        )
    samples = {n: p.grad_sample.reshape(batch_size, -1) for n, p in trained.items()}
    norms = torch.sqrt(sum(g.double().square().sum(dim=1) for g in samples.values()))
    factors = torch.clamp(dp.clip_norm / norms.clamp_min(1e-30), max=1.0)
    for name in sorted(trained):
        p, g = trained[name], samples[name]
        clipped_sum = (factors.to(g.dtype)[:, None] * g).sum(dim=0).reshape(p.shape)
        noise = torch.randn(p.shape, generator=generator, device=p.device, dtype=torch.float32)
        private = (clipped_sum + dp.noise_multiplier * dp.clip_norm * noise.to(p.dtype)) / (
            batch_size
        )
        data_free = p.grad - g.mean(dim=0).reshape(p.shape)  # the regularizer's part
        p.grad = data_free + private
        p.grad_sample = None
    return float((norms > dp.clip_norm).double().mean())


class SampleLedger:
    """Per-device DP-SGD steps, for epsilon at delta (module docstring).

    Args:
        client_sizes: |D_k| per device.
        batch_size: B.
        dp: sigma (and C_s).
        delta, accountant: of the reported epsilon.
    """

    def __init__(
        self,
        client_sizes: np.ndarray,
        batch_size: int,
        dp: DpSgd,
        *,
        delta: float,
        accountant: str,
    ) -> None:
        sizes = np.asarray(client_sizes, dtype=float)
        self.sample_rate = np.minimum(1.0, batch_size / np.maximum(sizes, 1.0))
        self.steps = np.zeros(len(sizes), dtype=np.int64)
        self.noise_multiplier = dp.noise_multiplier
        self.delta = delta
        self.accountant = accountant

    def trained(self, client: int, steps: int) -> None:
        """Count ``steps`` DP-SGD steps of ``client``."""
        self.steps[client] += int(steps)

    def epsilon(self, extra_steps: np.ndarray | None = None) -> float:
        """The largest per-device epsilon so far (0 before any step); ``extra_steps``: with
        that many more steps per device."""
        steps = self.steps if extra_steps is None else self.steps + extra_steps
        pairs = {(float(q), int(n)) for q, n in zip(self.sample_rate, steps, strict=True) if n}
        z, delta = self.noise_multiplier, self.delta
        return max(
            (epsilon([(z, q, n)], delta=delta, accountant=self.accountant) for q, n in pairs),
            default=0.0,
        )

    def state_dict(self) -> dict[str, Any]:
        return {"steps": torch.as_tensor(self.steps)}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.steps = np.asarray(state["steps"].cpu(), dtype=np.int64).copy()
