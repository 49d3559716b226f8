"""One client's local training from the global LoRA state (Algorithm 1, lines 3-6).

The loss is the task loss plus zeta times the orthogonality regularizer of eq. (2), summed over
the adapted layers; zeta is the algorithm's (``FederatedAlgorithm.orthogonality_weight``: SOFT's
``strategy.zeta``, 0 for the baselines), given per call or, by default, at construction. Local
iterations are SGD or Adam steps on mini-batches drawn without
replacement from the client's data (reshuffled when it runs out), in an order fixed by a
generator addressed by (seed, client, round).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from wirelessfl.lora_math import orthogonality_penalty
from wirelessfl.models.rng import seeded
from wirelessfl.privacy.dp_sgd import DpSgd, per_sample_gradients, privatize_gradients
from wirelessfl.training.batch_schedule import batch_schedule
from wirelessfl.training.lora_state import TrainableState


@dataclass
class LocalResult:
    """What local training returns."""

    local: dict[str, torch.Tensor]  # trainable parameters after training (detached copies)
    mean_loss: float  # mean task loss over the local steps
    optimizer_state: dict | None = None
    grad_norms: list[float] = field(default_factory=list)  # per step, if recorded


class LocalTrainer:
    """Trains the shared peft model in place for one client, then reads the result out."""

    def __init__(
        self,
        *,
        model: nn.Module,
        state: TrainableState,
        loss_fn: Callable,
        optimizer: str,
        lr: float,
        zeta: float = 0.0,
        dp_sgd: DpSgd | None = None,
    ):
        self.model = model
        self.state = state
        self.loss_fn = loss_fn
        self.optimizer = optimizer
        self.lr = lr
        self.zeta = zeta
        #: sample-level DP-SGD (``privacy.dp_sgd``; :mod:`wirelessfl.privacy.dp_sgd`), or None
        self.dp_sgd = dp_sgd

    def _make_optimizer(self) -> torch.optim.Optimizer:
        params = list(self.state.params.values())
        if self.optimizer == "adam":
            return torch.optim.Adam(params, lr=self.lr)
        return torch.optim.SGD(params, lr=self.lr)

    def loss(
        self, batch: dict[str, torch.Tensor], zeta: float | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(total loss with ``zeta`` (default: the trainer's) times eq. (2), task loss)."""
        zeta = self.zeta if zeta is None else zeta
        task, _ = self.loss_fn(self.model, batch)
        if zeta == 0.0:
            return task, task
        reg = sum(orthogonality_penalty(b, a) for b, a in self.state.regularizer_pairs())
        return task + zeta * reg, task

    def train(
        self,
        global_state: dict[str, torch.Tensor],
        data,
        *,
        steps: int,
        batch_size: int,
        generator: torch.Generator,
        optimizer_state: dict | None = None,
        record_grad_norms: bool = False,
        model_seed: int | None = None,
        zeta: float | None = None,
        frozen: frozenset[str] = frozenset(),
        dp_generator: torch.Generator | None = None,
    ) -> LocalResult:
        """Start from ``global_state``, take ``steps`` optimizer steps on ``data``.

        ``zeta`` weighs eq. (2)'s regularizer in the loss (default: the trainer's ``zeta``).
        The trainable parameters named in ``frozen`` get no gradient and keep their start
        values (the optimizer skips them; its state keeps the indices of every parameter).
        With :attr:`dp_sgd`, every step's task gradient is DP-SGD's, its noise drawn from
        ``dp_generator``.

        ``model_seed`` seeds torch's global generator for the duration of training (in a forked
        RNG scope), so stochastic layers (dropout, drop-connect) draw the same masks whatever
        trained before: results do not depend on client order, and a resumed run repeats.
        """
        device = next(self.model.parameters()).device
        scope = seeded(model_seed, device) if model_seed is not None else nullcontext()
        hooks = per_sample_gradients(self.model) if self.dp_sgd else nullcontext()
        with scope, self.state.frozen(frozen), hooks:
            self.state.load(global_state)
            train_mode(self.model)
            opt = self._make_optimizer()
            if optimizer_state is not None:
                opt.load_state_dict(optimizer_state)
            losses, norms = [], []
            for idx in batch_schedule(len(data), steps, batch_size, generator):
                opt.zero_grad(set_to_none=True)
                total, task = self.loss(data.batch(idx), zeta)
                total.backward()
                if self.dp_sgd is not None:
                    assert dp_generator is not None, "DP-SGD draws its noise from a stream"
                    privatize_gradients(self.state.params, self.dp_sgd, dp_generator, len(idx))
                if record_grad_norms:
                    grads = [p.grad for p in self.state.params.values() if p.grad is not None]
                    norms.append(
                        float(
                            torch.linalg.vector_norm(
                                torch.stack([torch.linalg.vector_norm(g) for g in grads])
                            )
                        )
                    )
                opt.step()
                losses.append(float(task.detach()))
            state = opt.state_dict() if self.optimizer == "adam" else None
            return LocalResult(self.state.snapshot(), float(np.mean(losses)), state, norms)


def train_mode(model: nn.Module) -> None:
    """Training mode with batch-norm statistics frozen.

    The base model is shared by every client and its buffers are not part of the federated
    state, so running statistics updated by one client would leak into the next; frozen
    statistics (standard when fine-tuning a frozen backbone) keep clients independent.
    """
    model.train()
    for module in model.modules():
        if isinstance(module, nn.modules.batchnorm._BatchNorm):
            module.eval()


def measure_step_flops(model: nn.Module, loss_fn: Callable, data, batch_size: int) -> float:
    """FLOPs of one training step (forward + backward) on a batch, counted by torch.

    Uses ``torch.utils.flop_counter.FlopCounterMode`` on the real model; returns 0.0 if the
    counter is unavailable. The model is left as it was: batch-norm statistics stay frozen
    (as in local training), stochastic layers draw from a forked, fixed-seed generator, and
    gradients are cleared afterwards.
    """
    try:
        from torch.utils.flop_counter import FlopCounterMode
    except ImportError:
        return 0.0
    idx = torch.arange(min(batch_size, len(data)))
    batch = data.batch(idx)
    counter = FlopCounterMode(display=False)
    was_training = model.training
    try:
        with seeded(0, next(model.parameters()).device):
            train_mode(model)
            with counter:
                loss, _ = loss_fn(model, batch)
                loss.backward()
    except Exception:  # noqa: BLE001 - an unsupported op only loses the measurement
        return 0.0
    finally:
        model.zero_grad(set_to_none=True)
        model.train(was_training)
    flops = float(counter.get_total_flops())
    return flops * batch_size / max(1, len(idx))
