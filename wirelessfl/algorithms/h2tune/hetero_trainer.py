"""Local training of one client on its group's shared model: plain LoRA (the baselines) or
H2Tune's alternating disentanglement (Algorithm 1 of "H2Tune: Federated Foundation Model
Fine-Tuning with Hybrid Heterogeneity", Guo et al., arXiv 2507.22633).

The client's values are already loaded into the model (adapters and head); these functions
train them in place and return the mean task loss. A fresh optimizer per client and round:
nothing of the optimizer is kept between rounds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from wirelessfl.algorithms.h2tune.layer_alignment import to_local
from wirelessfl.algorithms.h2tune.losses import shared_loss, specific_loss
from wirelessfl.algorithms.h2tune.trilora import TriLoRAAdapters
from wirelessfl.data.arrays import ArrayDataset

__all__ = ["DisentangleWeights", "batch_stream", "train_h2tune", "train_lora"]

LossFn = Callable[[nn.Module, dict[str, torch.Tensor]], tuple[torch.Tensor, torch.Tensor]]


@dataclass(frozen=True)
class DisentangleWeights:
    """The weights of eqs. (6) and (7) (their readings: ``docs/algorithms/h2tune.md``).

    Attributes:
        shared_kl: lambda, the weight of KL(R_k || R_g Omega_k^T) in eq. (6).
        specific_kl: mu, the weight of the -KL(y'' || y') term of eq. (7).
        kl_cap: The -KL term is capped at this many nats (it is unbounded below).
        l2: The regulariser coefficient V of eq. (7): (V / 2)(||A||_F^2 + ||B||_F^2).
    """

    shared_kl: float
    specific_kl: float
    kl_cap: float
    l2: float


def batch_stream(
    data: ArrayDataset, batch_size: int, steps: int, generator: torch.Generator
) -> Iterator[dict[str, torch.Tensor]]:
    """``steps`` batches: shuffled epochs of ``data`` (orders from ``generator``), repeated."""
    done = 0
    while done < steps:
        for batch in data.batches(batch_size, generator=generator):
            yield batch
            done += 1
            if done == steps:
                return


def _optimizer(params: Sequence[torch.Tensor], kind: str, lr: float) -> torch.optim.Optimizer:
    if kind == "adam":
        return torch.optim.Adam(params, lr=lr)
    return torch.optim.SGD(params, lr=lr)


def _trainable(params: Sequence[torch.Tensor], on: bool) -> None:
    for p in params:
        p.requires_grad_(on)


def train_lora(
    model: nn.Module,
    loss_fn: LossFn,
    params: Sequence[torch.Tensor],
    data: ArrayDataset,
    *,
    steps: int,
    batch_size: int,
    generator: torch.Generator,
    optimizer: str,
    lr: float,
) -> float:
    """Train ``params`` (the client's LoRA factors and head) on the task loss alone; returns
    the mean loss over the steps."""
    _trainable(params, True)
    opt = _optimizer(params, optimizer, lr)
    model.train()
    losses = []
    for batch in batch_stream(data, batch_size, steps, generator):
        loss, _ = loss_fn(model, batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    _trainable(params, False)
    return sum(losses) / max(1, len(losses))


def train_h2tune(
    model: nn.Module,
    loss_fn: LossFn,
    adapters: TriLoRAAdapters,
    head_params: Sequence[torch.Tensor],
    data: ArrayDataset,
    r_global: torch.Tensor,
    weights: DisentangleWeights,
    *,
    steps: int,
    batch_size: int,
    generator: torch.Generator,
    optimizer: str,
    lr: float,
    shared_lr: float,
) -> float:
    """Algorithm 1's local loop: on every minibatch a shared step, then a specific step.

    1. Shared step (eq. (6)): A, B and the head frozen; R_k and Omega_k trained (lr
       ``shared_lr``, eta') on CE(y', y) + lambda KL(Phi o R_k || R_g Omega_k^T) (eq. (5)),
       with ``r_global`` (L_g, r_g, r_g) a constant, so Omega_k gets its gradient through
       the KL term.
    2. Specific step (eq. (7)): R_k and Omega_k frozen; A, B and the head trained (lr ``lr``,
       eta) on CE(y'', y) - mu min(KL(y'' || y'), cap) + (V/2)(||A||^2 + ||B||^2), y'' the
       prediction with the updated R_k, y' the shared step's (a constant).

    Returns:
        The mean task loss CE(y'', y) of the specific steps.
    """
    shared = adapters.shared_parameters()
    factors = adapters.specific_parameters()
    specific = [*factors, *head_params]
    opt_shared = _optimizer(shared, optimizer, shared_lr)
    opt_specific = _optimizer(specific, optimizer, lr)
    r_global = r_global.detach()
    model.train()
    losses = []
    for batch in batch_stream(data, batch_size, steps, generator):
        _trainable(specific, False)
        _trainable(shared, True)
        task, logits_shared = loss_fn(model, batch)
        r_reference = to_local(r_global, adapters.omega)  # eq. (5), differentiable in Omega
        loss = shared_loss(task, adapters.effective_r(), r_reference, kl_weight=weights.shared_kl)
        opt_shared.zero_grad(set_to_none=True)
        loss.backward()
        opt_shared.step()

        _trainable(shared, False)
        _trainable(specific, True)
        task, logits = loss_fn(model, batch)
        loss = specific_loss(
            task,
            logits,
            logits_shared.detach(),
            factors,
            kl_weight=weights.specific_kl,
            kl_cap=weights.kl_cap,
            l2=weights.l2,
        )
        opt_specific.zero_grad(set_to_none=True)
        loss.backward()
        opt_specific.step()
        losses.append(float(task.detach()))
    _trainable(specific, False)
    return sum(losses) / max(1, len(losses))
