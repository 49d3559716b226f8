"""Local training of the K scheduled clients of a round at once (issue #7).

:class:`BatchedTrainer` returns what K calls of :meth:`LocalTrainer.train
<wirelessfl.training.local.LocalTrainer.train>` return, but runs the K clients' local steps
together: at each step the frozen base model runs **once** over the concatenation of the
active clients' mini-batches, and every client's own LoRA factors and head touch only its own
samples (:mod:`~wirelessfl.training.forward_patch`). One backward pass of
``sum_k (task_k + zeta * reg_k)`` then gives every client exactly the gradient of its own loss.

Design
------
Per-client state is held as stacked tensors, one leaf per trainable parameter of the peft
model, shape ``(K, *param.shape)``: LoRA ``A`` stacks ``(K, r, d_in)``, ``B`` stacks
``(K, d_out, r)``, head (peft ``modules_to_save``) weights ``(K, d_out, d_in)`` and biases
``(K, d_out)``. Nothing else is copied: the base model exists once.

* **Batches**: each client's generator is used exactly as ``LocalTrainer.train`` uses it
  (:func:`~wirelessfl.training.batch_schedule.batch_schedule`), so the batch order is the same.
* **Ragged groups**: clients are ordered internally by step count (descending), so the
  clients still training at step t are a prefix of the stacks (slices, no copies); a client
  that has finished drops out of the concatenated batch. A client whose batch is short at a
  step (the last batch before a reshuffle, or fewer samples than ``batch_size``) is padded to
  the step's largest batch by repeating one of its own samples with weight exactly 0 in its
  loss, so its gradient is unchanged (the padding costs compute only at such steps).
* **Losses**: ``loss_fn(model, batch)`` is called once over the concatenated batch for its
  logits; per-sample losses come from ``sample_loss_fn(logits, batch)``
  (:mod:`~wirelessfl.training.sample_loss`). The first step of each call checks that their
  mean equals ``loss_fn``'s loss (``NotImplementedError`` otherwise).
* **Regularizer**: eq. (2) per client via :func:`~wirelessfl.lora_math.orthogonality_penalty`
  on the stacked paper-orientation factors ``theta_B = A^T (G, d_in, r)``, ``theta_A = B^T
  (G, r, d_out)`` (conv: ``d_in = C * kh * kw``, as ``TrainableState.paper_factors``).
* **Optimizers**: per-client SGD and Adam over the stacks, with states interchangeable with
  ``LocalTrainer``'s (:mod:`~wirelessfl.training.stacked_optim`).
* **Memory**: per client, its trainable parameters (LoRA factors and head), their gradients
  and, for Adam, two moments: ``K * n_trainable * (2 | 4)`` elements
  (``last_client_state_bytes``), plus the activations of the concatenated batch; the base
  model is never copied.
* **Ranks**: clients of different LoRA ranks run by zero padding to the model's rank
  (``ranks=``, :mod:`~wirelessfl.training.stacked_ranks`); results are returned padded.

Exactness
---------
Without stochastic layers the results equal the sequential trainer's up to float rounding
(matmuls of different shapes sum in different orders). With dropout or drop-connect active
(MiniLM's default 0.1, EfficientNet's drop-connect) the masks are drawn over the
concatenated batch from torch's global generator, seeded from ``model_seeds`` when given:
reproducible and order-independent, but a client's masks depend on which clients share the
batch and differ from the sequential trainer's (same distribution). The model's own
trainable parameters are neither read nor changed (the start states come in as
``starts``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import Any

import numpy as np
import torch
from torch import nn

from channels.streams import combined_seed
from wirelessfl.lora_math import orthogonality_penalty
from wirelessfl.models.rng import seeded
from wirelessfl.training.batch_schedule import batch_schedule
from wirelessfl.training.forward_patch import ForwardPatch, LoraSite, StepContext
from wirelessfl.training.local import LocalResult, train_mode
from wirelessfl.training.lora_state import TrainableState
from wirelessfl.training.sample_loss import (
    Batch,
    SampleLossFn,
    check_sample_loss,
    client_means,
    cross_entropy_per_sample,
)
from wirelessfl.training.stacked_optim import StackedAdam, adam_defaults, sgd_step
from wirelessfl.training.stacked_ranks import (
    RANK_SCALINGS,
    RankScaling,
    rank_factors,
    zero_padding,
)


class BatchedTrainer:
    """Trains K clients' LoRA states at once on one shared peft model (see module docstring).

    Built like :class:`~wirelessfl.training.local.LocalTrainer`: ``model`` is the peft model
    (wrapped once, never copied), ``state`` its :class:`TrainableState`, ``loss_fn`` the
    bundle's ``loss_and_logits``, ``optimizer`` ``"sgd"`` or ``"adam"``, ``lr`` and ``zeta``
    (weight of eq. (2), the default of :meth:`train_many`'s ``zeta``). ``sample_loss_fn``
    gives per-sample losses from logits (default: cross entropy against ``batch["y"]``).
    Raises ``NotImplementedError`` for a model with layers it cannot group (see
    :mod:`~wirelessfl.training.forward_patch`).

    Attributes:
        last_client_state_bytes: bytes of per-client tensors (parameter stacks, their
            gradients and optimizer moments) held by the last :meth:`train_many` call:
            ``K * n_trainable * element_size * (2 for SGD, 4 for Adam)``.
    """

    def __init__(
        self,
        *,
        model: nn.Module,
        state: TrainableState,
        loss_fn: Callable,
        optimizer: str,
        lr: float,
        zeta: float = 0.0,
        sample_loss_fn: SampleLossFn | None = None,
    ):
        if optimizer not in ("sgd", "adam"):
            raise ValueError(f"optimizer must be 'sgd' or 'adam', got {optimizer!r}")
        self.model = model
        self.state = state
        self.loss_fn = loss_fn
        self.optimizer = optimizer
        self.lr = float(lr)
        self.zeta = float(zeta)
        self.sample_loss_fn = sample_loss_fn or cross_entropy_per_sample
        self.last_client_state_bytes = 0
        self.names = list(state.params)  # index i of an optimizer state <-> names[i]
        if not self.names:
            raise ValueError("the model has no trainable parameters")
        self._patch = ForwardPatch(model, state)
        self._adam_group = adam_defaults(list(state.params.values()), self.lr)

    def train_many(
        self,
        starts: dict[str, torch.Tensor] | Sequence[dict[str, torch.Tensor]],
        datasets: Sequence[Any],
        *,
        steps: Sequence[int],
        batch_size: int,
        generators: Sequence[torch.Generator],
        optimizer_states: Sequence[dict | None] | None = None,
        ranks: Sequence[int] | None = None,
        record_grad_norms: bool = False,
        model_seeds: Sequence[int] | None = None,
        zeta: float | None = None,
        frozen: frozenset[str] = frozenset(),
        rank_scaling: RankScaling = "own_rank",
    ) -> list[LocalResult]:
        """Train K clients from their start states; result k equals ``LocalTrainer.train``'s.

        Args:
            starts: peft-named trainable parameters, at the model's rank: one dict every
                client starts from, or K dicts (client k starts from ``starts[k]``).
            datasets: K ``ArrayDataset`` (anything with ``x``, ``y``, optional
                ``attention_mask`` tensors, or a ``batch(idx)`` method).
            steps: K step counts (may differ; 0 allowed).
            batch_size: samples per step per client (a pass's last batch may be shorter).
            generators: K generators, used exactly as ``LocalTrainer.train`` uses its one.
            optimizer_states: K Adam ``state_dict()``s (or ``None``) to resume from; ignored
                for SGD (whose state is ``None``, as in ``LocalTrainer``).
            ranks: K LoRA ranks <= the model's rank (default: all the model's rank); see
                :mod:`~wirelessfl.training.stacked_ranks` for the zero-padding they imply.
            record_grad_norms: record each client's gradient norm per step.
            model_seeds: the K ``model_seed`` values ``LocalTrainer.train`` would get. Torch's
                global generator is seeded (in a forked RNG scope) by one seed derived from
                all K, so stochastic layers (dropout, drop-connect) are reproducible and
                independent of what ran before; their masks are drawn over the concatenated
                batch, so they differ from the sequential trainer's (same distribution). No
                effect on models without stochastic layers.
            zeta: weight of eq. (2)'s regularizer in every client's loss (default: the
                trainer's ``zeta``).
            frozen: trainable parameters that get no gradient and keep their start values
                (their stacks are not leaves of the backward pass; both optimizers skip them).
            rank_scaling: how a lower-rank client's LoRA scaling follows its rank
                (:func:`~wirelessfl.training.stacked_ranks.rank_multiplier`): ``"own_rank"``
                (default, a rank-r_k LoRA's) or ``"sketch"`` (FSLoRA's eq. (2)).

        Returns:
            K :class:`LocalResult`: ``local`` (peft names and shapes, detached), ``mean_loss``
            of the task loss, Adam ``optimizer_state`` (``None`` for SGD), ``grad_norms``.
        """
        k_all = len(datasets)
        if not isinstance(starts, dict) and len(starts) != k_all:
            raise ValueError(f"got {len(starts)} start states for {k_all} clients")
        if len(steps) != k_all or len(generators) != k_all:
            raise ValueError(
                f"got {k_all} datasets, {len(steps)} step counts and {len(generators)} generators"
            )
        if optimizer_states is not None and len(optimizer_states) != k_all:
            raise ValueError(f"got {len(optimizer_states)} optimizer states for {k_all} clients")
        if ranks is not None and len(ranks) != k_all:
            raise ValueError(f"got {len(ranks)} ranks for {k_all} clients")
        if rank_scaling not in RANK_SCALINGS:
            raise ValueError(f"rank_scaling must be one of {RANK_SCALINGS}, got {rank_scaling!r}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if any(int(s) < 0 for s in steps):
            raise ValueError(f"steps must be >= 0, got {list(steps)}")
        if k_all == 0:
            return []
        for k, data in enumerate(datasets):
            if int(steps[k]) > 0 and len(data) == 0:
                raise ValueError(f"client {k} has no data but {steps[k]} steps")
        scope = nullcontext()
        if model_seeds is not None:
            if len(model_seeds) != k_all:
                raise ValueError(f"got {len(model_seeds)} model seeds for {k_all} clients")
            device = next(iter(self.state.params.values())).device
            scope = seeded(combined_seed([int(x) for x in model_seeds]), device)
        with scope:
            return self._train_many(
                starts,
                datasets,
                steps,
                batch_size,
                generators,
                optimizer_states,
                ranks,
                record_grad_norms,
                self.zeta if zeta is None else float(zeta),
                frozen,
                rank_scaling,
            )

    def _train_many(
        self,
        starts: dict[str, torch.Tensor] | Sequence[dict[str, torch.Tensor]],
        datasets: Sequence[Any],
        steps: Sequence[int],
        batch_size: int,
        generators: Sequence[torch.Generator],
        optimizer_states: Sequence[dict | None] | None,
        ranks: Sequence[int] | None,
        record_grad_norms: bool,
        zeta: float,
        frozen: frozenset[str],
        rank_scaling: RankScaling,
    ) -> list[LocalResult]:
        """:meth:`train_many` after validation, in the caller's RNG scope."""
        k_all = len(datasets)

        schedules = [
            batch_schedule(len(d), int(s), batch_size, g)
            for d, s, g in zip(datasets, steps, generators, strict=True)
        ]
        order = sorted(range(k_all), key=lambda k: -int(steps[k]))  # position -> client
        n_steps = [int(steps[k]) for k in order]

        ref = next(iter(self.state.params.values()))
        sites = self._patch.lora_sites
        stacks = self._init_stacks(starts, order, ranks, frozen)
        factors = rank_factors(sites, order, ranks, ref.device, rank_scaling=rank_scaling)
        adam = self.optimizer == "adam"
        opt = (
            StackedAdam(stacks.values(), order, optimizer_states, self._adam_group)
            if adam
            else None
        )

        train_mode(self.model)  # batch-norm statistics frozen, as LocalTrainer does
        losses: list[torch.Tensor] = []
        norms: list[torch.Tensor] = []
        checked = False
        with self._patch.patched():
            for t in range(n_steps[0] if n_steps else 0):
                g = sum(1 for s in n_steps if s > t)  # active clients: positions 0 .. g-1
                idx = [schedules[order[p]][t] for p in range(g)]
                counts = [int(i.shape[0]) for i in idx]
                width = max(counts)
                batch = _concat_batch([datasets[order[p]] for p in range(g)], idx, width)
                views = {n: s[:g] if g < k_all else s for n, s in stacks.items()}
                self._patch.ctx = StepContext(
                    g,
                    g * width,
                    views,
                    {n: (f[:g] if f is not None else None) for n, f in factors.items()},
                )
                mean_loss, logits = self.loss_fn(self.model, batch)
                per_sample = self.sample_loss_fn(logits, batch)
                if not checked:
                    check_sample_loss(mean_loss, per_sample)
                    checked = True
                task = client_means(per_sample, counts)
                total = task.sum()
                if zeta != 0.0:
                    reg = sum(
                        orthogonality_penalty(*_paper_factors(views, site, g)) for site in sites
                    )
                    total = total + zeta * reg.sum()  # type: ignore[union-attr]
                for s in stacks.values():
                    s.grad = None
                total.backward()
                grads = [s.grad[:g] if s.grad is not None else None for s in stacks.values()]
                if record_grad_norms:
                    per_param = [
                        torch.linalg.vector_norm(gr.reshape(g, -1), dim=1)
                        for gr in grads
                        if gr is not None
                    ]
                    norms.append(torch.linalg.vector_norm(torch.stack(per_param), dim=0))
                with torch.no_grad():
                    if opt is not None:
                        opt.step(g, grads)
                    else:
                        sgd_step(stacks.values(), grads, g, self.lr)
                losses.append(task.detach())

        per_elem = sum(s.numel() for s in stacks.values()) * ref.dtype.itemsize
        self.last_client_state_bytes = per_elem * (4 if adam else 2)
        for s in stacks.values():
            s.grad = None

        loss_rows = [v.double().cpu().tolist() for v in losses]
        norm_rows = [v.double().cpu().tolist() for v in norms]
        results: list[LocalResult | None] = [None] * k_all
        for p, k in enumerate(order):
            step_losses = [loss_rows[t][p] for t in range(n_steps[p])]
            mean = float(np.mean(step_losses)) if step_losses else math.nan
            local = {n: stacks[n][p].detach().clone() for n in self.names}
            state = opt.state_dict(p) if opt is not None else None
            grad_norms = [norm_rows[t][p] for t in range(n_steps[p])] if record_grad_norms else []
            results[k] = LocalResult(local, mean, state, grad_norms)
        return [r for r in results if r is not None]

    def _init_stacks(
        self,
        starts: dict[str, torch.Tensor] | Sequence[dict[str, torch.Tensor]],
        order: list[int],
        ranks: Sequence[int] | None,
        frozen: frozenset[str] = frozenset(),
    ) -> dict[str, torch.Tensor]:
        """Leaf tensors ``(K, *shape)`` holding every client's copy of each trainable
        parameter, in internal (position) order; rank-padded components zeroed; those named
        in ``frozen`` need no gradient."""
        k_all = len(order)
        stacks: dict[str, torch.Tensor] = {}
        for name, p in self.state.params.items():
            if isinstance(starts, dict):
                value = starts[name].detach().to(device=p.device, dtype=p.dtype)
                stacks[name] = value.unsqueeze(0).repeat(k_all, *([1] * value.ndim))
            else:
                rows = [starts[k][name].detach().to(device=p.device, dtype=p.dtype) for k in order]
                stacks[name] = torch.stack(rows)
        if ranks is not None:
            zero_padding(stacks, self._patch.lora_sites, order, ranks)
        for name, s in stacks.items():
            s.requires_grad_(name not in frozen)
        return stacks


def _paper_factors(
    views: dict[str, torch.Tensor], site: LoraSite, g: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Stacked ``(theta_B (G, d, r), theta_A (G, r, l))`` of one layer (as
    ``TrainableState.paper_factors``, per client): ``A (G, r, d_in[, k, k])`` and
    ``B (G, d_out, r[, 1, 1])``."""
    a, b = views[site.a_param], views[site.b_param]
    return a.reshape(g, site.rank, -1).mT, b.reshape(g, b.shape[1], site.rank).mT


def _concat_batch(datasets: list[Any], idx: list[torch.Tensor], width: int) -> Batch:
    """The G clients' batches, each padded to ``width`` rows by repeating its first sample,
    concatenated client-major: every tensor is ``(G * width, ...)``."""
    parts: list[Batch] = []
    for data, i in zip(datasets, idx, strict=True):
        if i.shape[0] < width:
            i = torch.cat([i, i[:1].expand(width - i.shape[0])])
        if hasattr(data, "x") and hasattr(data, "y"):  # ArrayDataset, device-safe gather
            j = i.to(data.y.device)
            part = {"x": data.x[j], "y": data.y[j]}
            mask = getattr(data, "attention_mask", None)
            if mask is not None:
                part["attention_mask"] = mask[j]
        else:
            part = data.batch(i)
        parts.append(part)
    if len(parts) == 1:
        return parts[0]
    return {key: torch.cat([p[key] for p in parts]) for key in parts[0]}
