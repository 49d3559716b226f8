"""Local training of a routed model (FLoRAL and its baselines), Algorithm 1 lines 5-9.

Simultaneous plain SGD (no momentum, no weight decay) on the base, the components and the
router logits, the router at its own learning rate; adaptor gradients preconditioned by
eq. (36) before every step when asked. Mini-batches come from the same schedule as every
other trainer (:func:`~wirelessfl.training.batch_schedule.batch_schedule`), and the router's
training noise from its own generator, both addressed by (seed, client, round).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from wirelessfl.algorithms.floral.lora_precondition import precondition_gradients
from wirelessfl.algorithms.floral.mixture_model import MixtureModel, RoutedModel
from wirelessfl.training.batch_schedule import batch_schedule
from wirelessfl.training.local import LocalResult, train_mode

__all__ = ["RoutedResult", "RoutedTrainer"]


@dataclass
class RoutedResult(LocalResult):
    """A :class:`LocalResult` plus the client's router logits after training ``(C,)``."""

    theta: torch.Tensor | None = None


class RoutedTrainer:
    """Trains ``model`` in place for one client at a time, then reads the result out.

    Args:
        model: The routed model (shared by all clients; loaded per client).
        loss_fn: ``(model, batch) -> (loss, output)``.
        lr: Learning rate of the base and the components.
        router_lr: Learning rate of the router logits (0: the router is fixed).
        precondition_eps: eps of eq. (36); ``None`` turns preconditioning off.
    """

    def __init__(
        self,
        model: RoutedModel,
        loss_fn: Callable,
        *,
        lr: float,
        router_lr: float,
        precondition_eps: float | None,
    ) -> None:
        self.model = model
        self.loss_fn = loss_fn
        self.lr = lr
        self.router_lr = router_lr
        self.precondition_eps = precondition_eps
        params = dict(model.named_parameters())
        names = model.federated_names()
        self.params = [params[n] for n in names if params[n].requires_grad]
        model.theta.requires_grad_(router_lr > 0.0)

    def train(
        self,
        start: dict[str, torch.Tensor],
        theta: torch.Tensor | None,
        data,
        *,
        steps: int,
        batch_size: int,
        generator: torch.Generator,
        noise_generator: torch.Generator,
    ) -> RoutedResult:
        """``steps`` SGD steps on ``data`` from ``start`` and router logits ``theta``
        (``None``: zeros, a client's first round)."""
        model = self.model
        model.load(start, theta)
        train_mode(model)
        model.noise_generator = noise_generator
        groups = [{"params": self.params, "lr": self.lr}]
        if self.router_lr > 0.0:
            groups.append({"params": [model.theta], "lr": self.router_lr})
        opt = torch.optim.SGD(groups, lr=self.lr)
        adapted = model.adaptor_layers() if isinstance(model, MixtureModel) else []
        losses = []
        try:
            for idx in batch_schedule(len(data), steps, batch_size, generator):
                opt.zero_grad(set_to_none=True)
                loss, _ = self.loss_fn(model, data.batch(idx))
                loss.backward()
                if self.precondition_eps is not None and adapted:
                    precondition_gradients(adapted, self.precondition_eps)
                opt.step()
                losses.append(float(loss.detach()))
        finally:
            model.noise_generator = None
        return RoutedResult(
            model.snapshot(), float(np.mean(losses)), theta=model.theta.detach().clone()
        )
