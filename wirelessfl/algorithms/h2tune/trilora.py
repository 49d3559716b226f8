"""H2Tune's sparsified triple decomposition of the LoRA update (eq. (3)), one client at a time.

From "H2Tune: Federated Foundation Model Fine-Tuning with Hybrid Heterogeneity" (Guo, Lu,
Tong, Hu, Zhuang, Zhang, Fan, Dong, arXiv 2507.22633). Row-vector convention: an adapted
``nn.Linear`` with frozen weight W (d_out, d_in) and bias b maps an input row x (1, d_in) to

    x W^T + b + scale x A (I + Phi o R) B                                     (eq. (3))

with A (d_in, r_g) and B (r_g, d_out) the client's specific factors, R (r_g, r_g) the shared
middle matrix of the transformer block (one R per block, shared by every adapted module of
that block) and Phi a fixed 0/1 mask of the client (``sparsity_mask``: beta_k of the r_g^2
entries kept; the paper's Hadamard sparsification, project reading I1). Entries of R where
Phi == 0 get zero gradient through the product; nothing else masks them.

The rank mask ``set_client(phi, width)`` keeps the first ``width`` columns of A and rows of B
(x A diag(mask) (I + Phi o R) diag(mask) B). H2Tune sets width = r_g for every client (§4.2:
A and B are r_g wide; the client's resource rank r_k acts through Phi's density beta_k alone);
its baselines, which train plain LoRA of rank r_k (``use_shared`` False), set width = r_k.

One model object serves every client: ``install_trilora`` wraps the targets once and returns
the ``TriLoRAAdapters`` container, into which a client's values (``load_values``) and its
Phi and rank (``set_client``) are loaded before it trains or is evaluated. The container is
not a submodule of the model: ``model.to(...)`` does not move it, ``adapters.to(...)`` does.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import torch
from torch import nn

from wirelessfl.algorithms.h2tune.layer_alignment import initial_alignment

__all__ = [
    "TriLoRAAdapters",
    "TriLoRALinear",
    "initial_values",
    "install_trilora",
    "sparsity_mask",
    "transformer_layer_index",
    "uninstall_trilora",
]

#: Name segments followed by the transformer block index (BERT/ViT, Llama, GPT-2, T5, ...).
BLOCK_SEGMENTS = frozenset({"layer", "layers", "h", "block", "blocks"})


def transformer_layer_index(name: str) -> int | None:
    """The block index of a module name: the first ``<seg>.<i>`` with ``seg`` in
    ``BLOCK_SEGMENTS`` (``encoder.layer.3.attention.self.query`` -> 3); None when none."""
    parts = name.split(".")
    for seg, nxt in zip(parts, parts[1:], strict=False):
        if seg in BLOCK_SEGMENTS and nxt.isdigit():
            return int(nxt)
    return None


def sparsity_mask(n_layers: int, r_g: int, beta: float, generator: torch.Generator) -> torch.Tensor:
    """Phi: ``(n_layers, r_g, r_g)`` float 0/1, exactly ceil(beta r_g^2) ones per layer at
    uniformly random positions drawn from the CPU ``generator``; beta in (0, 1] is the kept
    fraction (fixed for a client's whole run)."""
    if not 0.0 < beta <= 1.0:
        raise ValueError(f"beta must be in (0, 1], got {beta}")
    if n_layers < 1 or r_g < 1:
        raise ValueError(f"n_layers and r_g must be >= 1, got {n_layers}, {r_g}")
    n = r_g * r_g
    keep = min(n, math.ceil(beta * n - 1e-9))  # 1e-9: 0.1 * 100 is 10.000000000000002
    mask = torch.zeros(n_layers, n)
    for layer in range(n_layers):
        mask[layer, torch.randperm(n, generator=generator)[:keep]] = 1.0
    return mask.view(n_layers, r_g, r_g)


class TriLoRAAdapters(nn.Module):
    """The adapters of one model for the client loaded now.

    Parameters: ``A`` (one (d_in, r_g) per target, in target order), ``B`` (one (r_g, d_out)
    per target), ``R`` (L, r_g, r_g) with L the number of distinct blocks among the targets
    (block indices in increasing order), ``omega`` (L, n_global_layers) the relation matrix
    Omega_k. Buffers: ``phi`` (L, r_g, r_g) 0/1 and ``rank_mask`` (r_g,) 0/1 (the first
    ``width`` ones); both all ones until ``set_client``. ``use_shared`` False turns the R path
    off (plain LoRA x A diag(rank_mask) B). Built with ``initial_values`` of a seed-0 generator.
    """

    def __init__(
        self,
        dims: Sequence[tuple[int, int]],
        blocks: Sequence[int],
        r_g: int,
        *,
        n_global_layers: int,
        scale: float = 1.0,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__()
        if not dims or len(dims) != len(blocks):
            raise ValueError(f"need one block index per target, got {len(dims)} / {len(blocks)}")
        if r_g < 1 or n_global_layers < 1:
            raise ValueError(f"r_g and n_global_layers must be >= 1, got {r_g}, {n_global_layers}")
        kw = {"dtype": dtype, "device": device}
        self.r_g = r_g
        self.scale = float(scale)
        self.use_shared = True
        #: the transformer block index of each row of R, increasing
        self.block_indices: list[int] = sorted(set(blocks))
        #: row of R used by each target
        self.layer_of_target: list[int] = [self.block_indices.index(b) for b in blocks]
        n = len(self.block_indices)
        self.A = nn.ParameterList([nn.Parameter(torch.zeros(i, r_g, **kw)) for i, _ in dims])
        self.B = nn.ParameterList([nn.Parameter(torch.zeros(r_g, o, **kw)) for _, o in dims])
        self.R = nn.Parameter(torch.zeros(n, r_g, r_g, **kw))
        self.omega = nn.Parameter(torch.zeros(n, n_global_layers, **kw))
        self.register_buffer("phi", torch.ones(n, r_g, r_g, **kw))
        self.register_buffer("rank_mask", torch.ones(r_g, **kw))
        self.load_values(initial_values(self, torch.Generator().manual_seed(0)))

    @property
    def n_layers(self) -> int:
        """L: the number of adapted transformer blocks (rows of R and Omega)."""
        return self.R.shape[0]

    def values(self) -> dict[str, torch.Tensor]:
        """Detached clones of every parameter: ``A.<i>``, ``B.<i>``, ``R``, ``omega``."""
        out = {f"A.{i}": a.detach().clone() for i, a in enumerate(self.A)}
        out.update({f"B.{i}": b.detach().clone() for i, b in enumerate(self.B)})
        out["R"] = self.R.detach().clone()
        out["omega"] = self.omega.detach().clone()
        return out

    def _named(self) -> dict[str, nn.Parameter]:
        named = {f"A.{i}": a for i, a in enumerate(self.A)}
        named.update({f"B.{i}": b for i, b in enumerate(self.B)})
        named["R"] = self.R
        named["omega"] = self.omega
        return named

    def load_values(self, values: Mapping[str, torch.Tensor]) -> None:
        """Copy a full set of values (the keys of ``values()``) into the parameters."""
        named = self._named()
        missing, unknown = set(named) - set(values), set(values) - set(named)
        if missing or unknown:
            raise ValueError(
                f"adapter values: missing keys {sorted(missing)}, unknown keys {sorted(unknown)}"
            )
        for key, p in named.items():
            if tuple(values[key].shape) != tuple(p.shape):
                raise ValueError(
                    f"adapter value {key!r} has shape {tuple(values[key].shape)}, "
                    f"expected {tuple(p.shape)}"
                )
        with torch.no_grad():
            for key, p in named.items():
                p.copy_(values[key])

    def set_client(self, phi: torch.Tensor, rank: int) -> None:
        """Load a client's mask Phi ``(L, r_g, r_g)`` (0/1) and the width of A and B it uses
        (1 <= ``rank`` <= r_g; the first ``rank`` columns of A and rows of B)."""
        if tuple(phi.shape) != tuple(self.phi.shape):
            raise ValueError(f"phi has shape {tuple(phi.shape)}, expected {tuple(self.phi.shape)}")
        if not 1 <= rank <= self.r_g:
            raise ValueError(f"rank must be in [1, {self.r_g}], got {rank}")
        if not bool(((phi == 0) | (phi == 1)).all()):
            raise ValueError("phi must hold only 0 and 1")
        with torch.no_grad():
            self.phi.copy_(phi)
            self.rank_mask.zero_()
            self.rank_mask[:rank] = 1.0

    def shared_parameters(self) -> list[nn.Parameter]:
        """The parameters of the shared loss (eq. (6)): ``[R, omega]``."""
        return [self.R, self.omega]

    def specific_parameters(self) -> list[nn.Parameter]:
        """The parameters of the specific loss (eq. (7)): every A, then every B."""
        return list(self.A) + list(self.B)

    def effective_r(self) -> torch.Tensor:
        """Phi o R, ``(L, r_g, r_g)``: the middle matrices the client actually uses."""
        return self.phi * self.R

    def delta(self, target: int, x: torch.Tensor) -> torch.Tensor:
        """scale x A (I + Phi o R) B for target ``target`` (rank-masked), x ``(..., d_in)``."""
        h = (x @ self.A[target]) * self.rank_mask
        if self.use_shared:
            layer = self.layer_of_target[target]
            h = h + (h @ (self.phi[layer] * self.R[layer])) * self.rank_mask  # h (I + Phi o R)
        return self.scale * (h @ self.B[target])


class TriLoRALinear(nn.Module):
    """``base(x) + adapters.delta(target, x)``; the base ``nn.Linear`` is frozen, the adapters
    container is referenced, not registered (its parameters are not the model's)."""

    def __init__(self, base: nn.Linear, adapters: TriLoRAAdapters, target: int) -> None:
        super().__init__()
        self.base = base
        self.target = target
        self.base_requires_grad = [p.requires_grad for p in base.parameters()]
        object.__setattr__(self, "adapters", adapters)  # not a submodule
        for p in base.parameters():
            p.requires_grad_(False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + self.adapters.delta(self.target, x)

    def extra_repr(self) -> str:
        return f"target={self.target}, r_g={self.adapters.r_g}"


def initial_values(
    adapters: TriLoRAAdapters, generator: torch.Generator
) -> dict[str, torch.Tensor]:
    """LoRA's start: every A Kaiming-uniform with a = sqrt(5) over fan-in d_in, i.e.
    Uniform(+-1 / sqrt(d_in)), drawn in target order from the CPU ``generator`` (the global
    RNG is untouched); B and R zero; Omega ``initial_alignment(L, n_global_layers)``."""
    out: dict[str, torch.Tensor] = {}
    for i, a in enumerate(adapters.A):
        bound = 1.0 / math.sqrt(a.shape[0])
        u = torch.rand(a.shape, generator=generator, dtype=torch.float64)
        out[f"A.{i}"] = ((2.0 * u - 1.0) * bound).to(dtype=a.dtype, device=a.device)
    for i, b in enumerate(adapters.B):
        out[f"B.{i}"] = torch.zeros_like(b, requires_grad=False)
    out["R"] = torch.zeros_like(adapters.R, requires_grad=False)
    omega = adapters.omega
    out["omega"] = initial_alignment(*omega.shape).to(dtype=omega.dtype, device=omega.device)
    return out


def _split(name: str) -> tuple[str, str]:
    parent, _, child = name.rpartition(".")
    return parent, child


def install_trilora(
    model: nn.Module,
    target_names: Sequence[str],
    r_g: int,
    *,
    n_global_layers: int,
    scale: float = 1.0,
) -> TriLoRAAdapters:
    """Wrap every ``nn.Linear`` named in ``target_names`` (full module names) in a
    ``TriLoRALinear`` and return the container. Checks every target before changing the model;
    dtype and device follow the first target's weight."""
    if not target_names:
        raise ValueError("install_trilora needs at least one target module")
    if len(set(target_names)) != len(target_names):
        raise ValueError("install_trilora: target_names has duplicates")
    bases: list[nn.Linear] = []
    blocks: list[int] = []
    for name in target_names:
        try:
            module = model.get_submodule(name)
        except AttributeError:
            raise ValueError(f"no module named {name!r} in the model") from None
        if not isinstance(module, nn.Linear):
            raise ValueError(f"target {name!r} is a {type(module).__name__}, not an nn.Linear")
        block = transformer_layer_index(name)
        if block is None:
            raise ValueError(f"target {name!r} has no transformer block index in its name")
        bases.append(module)
        blocks.append(block)
    weight = bases[0].weight
    adapters = TriLoRAAdapters(
        [(m.in_features, m.out_features) for m in bases],
        blocks,
        r_g,
        n_global_layers=n_global_layers,
        scale=scale,
        dtype=weight.dtype,
        device=weight.device,
    )
    for i, (name, base) in enumerate(zip(target_names, bases, strict=True)):
        parent, child = _split(name)
        setattr(model.get_submodule(parent), child, TriLoRALinear(base, adapters, i))
    return adapters


def uninstall_trilora(model: nn.Module) -> int:
    """Put every wrapped ``nn.Linear`` back (with its requires_grad flags); returns how many."""
    wrapped = [(n, m) for n, m in model.named_modules() if isinstance(m, TriLoRALinear)]
    for name, wrapper in wrapped:
        for p, flag in zip(wrapper.base.parameters(), wrapper.base_requires_grad, strict=True):
            p.requires_grad_(flag)
        parent, child = _split(name)
        setattr(model.get_submodule(parent), child, wrapper.base)
    return len(wrapped)
