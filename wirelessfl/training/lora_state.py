"""The trainable state of a peft LoRA model, and its mapping to the paper's (theta_B, theta_A).

peft stores a layer's update as W += (alpha/r) * B_peft @ A_peft with ``lora_A.weight`` of
shape (r, d_in[, k, k]) and ``lora_B.weight`` of shape (d_out, r[, 1, 1]). The paper writes
y = x theta_P + (alpha/r) x theta_B theta_A with x a row vector, so theta_B = A_peft^T of shape
(d, r) and theta_A = B_peft^T of shape (r, l), with d = d_in and l = d_out. Sparsification,
the regularizer (eq. 2) and the covariance term (eq. 12) are computed in the paper's
orientation; storage and aggregation use the parameters as peft holds them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class LoraLayer:
    """Names of one adapted layer's LoRA parameters inside the peft model."""

    name: str  # the adapted module's path
    a_param: str  # parameter name of lora_A (r, d_in, ...)
    b_param: str  # parameter name of lora_B (d_out, r, ...)
    # its own rank (learner.rank_pattern): never cut to, padded to or scaled for a client's
    # rank; None: the layer trains at each client's rank
    fixed_rank: int | None = None


#: What peft puts before a base-model module's path in the wrapped model.
PEFT_PREFIX = "base_model.model."


def _fixed_rank(layer: str, fixed: Mapping[str, int]) -> int | None:
    """The fixed rank of the peft layer path ``layer`` (``fixed`` is keyed by base-model
    paths, without :data:`PEFT_PREFIX`), else None."""
    rank = fixed.get(layer.removeprefix(PEFT_PREFIX))
    return None if rank is None else int(rank)


class TrainableState:
    """Index of a peft model's trainable parameters: LoRA pairs and full (head) parameters.

    ``fixed_ranks`` maps adapted module names (as the base model names them, before peft's
    ``base_model.model.`` prefix) to the fixed rank ``learner.rank_pattern`` gives them.
    """

    def __init__(self, model: nn.Module, fixed_ranks: Mapping[str, int] | None = None):
        fixed = dict(fixed_ranks or {})
        self.params: dict[str, nn.Parameter] = {
            n: p for n, p in model.named_parameters() if p.requires_grad
        }
        layers: dict[str, dict[str, str]] = {}
        for name in self.params:
            for tag in ("lora_A", "lora_B"):
                marker = f".{tag}."
                if marker in name:
                    layers.setdefault(name.split(marker)[0], {})[tag] = name
        self.layers = [
            LoraLayer(key, parts["lora_A"], parts["lora_B"], _fixed_rank(key, fixed))
            for key, parts in sorted(layers.items())
            if "lora_A" in parts and "lora_B" in parts
        ]
        lora_names = {x for layer in self.layers for x in (layer.a_param, layer.b_param)}
        self.full_names = [n for n in self.params if n not in lora_names]

    @contextlib.contextmanager
    def frozen(self, names: frozenset[str]) -> Iterator[None]:
        """The parameters named in ``names`` need no gradient inside (trainers skip them)."""
        held = [self.params[n] for n in names]
        for p in held:
            p.requires_grad_(False)
        try:
            yield
        finally:
            for p in held:
                p.requires_grad_(True)

    def snapshot(self) -> dict[str, torch.Tensor]:
        """Detached copies of every trainable parameter."""
        return {n: p.detach().clone() for n, p in self.params.items()}

    @torch.no_grad()
    def load(self, values: dict[str, torch.Tensor]) -> None:
        """Copy ``values`` into the model's parameters in place (no new model)."""
        for n, p in self.params.items():
            p.copy_(values[n])

    def paper_factors(
        self, values: dict[str, torch.Tensor], layer: LoraLayer
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(theta_B (d, r), theta_A (r, l)) of ``layer`` from peft-shaped ``values``."""
        a = values[layer.a_param]
        b = values[layer.b_param]
        r = a.shape[0]
        return a.reshape(r, -1).T, b.reshape(b.shape[0], r).T

    def from_paper(
        self, layer: LoraLayer, theta_b: torch.Tensor, theta_a: torch.Tensor
    ) -> dict[str, torch.Tensor]:
        """peft-shaped tensors of ``layer`` from (theta_B (d, r), theta_A (r, l))."""
        shape_a = self.params[layer.a_param].shape
        shape_b = self.params[layer.b_param].shape
        return {
            layer.a_param: theta_b.T.reshape(shape_a).contiguous(),
            layer.b_param: theta_a.T.reshape(shape_b).contiguous(),
        }

    def regularizer_pairs(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Live (theta_B, theta_A) views of the model's LoRA parameters (for eq. 2)."""
        return [self.paper_factors(self.params, layer) for layer in self.layers]
