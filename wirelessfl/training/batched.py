"""Local training of the K scheduled clients of a round at once (issue #7).

:class:`BatchedTrainer` returns what K calls of :meth:`LocalTrainer.train
<wirelessfl.training.local.LocalTrainer.train>` return, but runs the K clients' local steps
together: at each step the frozen base model runs **once** over the concatenation of the
active clients' mini-batches, and every client's own LoRA factors and head touch only its own
samples.

Design
------
Per-client state is held as stacked tensors, one leaf per trainable parameter of the peft
model, shape ``(K, *param.shape)``: LoRA ``A`` stacks ``(K, r, d_in)``, ``B`` stacks
``(K, d_out, r)``, head (peft ``modules_to_save``) weights ``(K, d_out, d_in)`` and biases
``(K, d_out)``. Nothing else is copied: the base model exists once.

While :meth:`BatchedTrainer.train_many` runs, the ``forward`` of every peft ``lora_A`` /
``lora_B`` sub-layer and of every head layer is replaced (instance attribute, removed
afterwards, also on errors) by a grouped version: the layer input ``x`` of shape
``(G * b, ..., d_in)`` (the G active clients' samples, client-major, b per client) is viewed
as ``(G, b * ..., d_in)`` and multiplied by the client stacks with one ``torch.bmm`` /
``torch.baddbmm`` (conv LoRA: one convolution with ``groups = G`` over the batch laid out as
``(b, G * C, H, W)``); peft's own ``lora.Linear`` / ``lora.Conv2d`` forward (base layer,
dropout, dtype casts, ``scaling``) runs unchanged around it. Gradients therefore reach each
client's stack rows from its own samples only, and one backward pass of
``sum_k (task_k + zeta * reg_k)`` gives every client exactly the gradient of its own loss.

Why patch the LoRA sub-layers rather than ``torch.func.vmap`` the whole model over stacked
parameters: vmap would run the transformers forward (mask building, attention dispatch,
data-dependent checks) under a batching transform that several of those paths do not
support, and its result is not obviously one base GEMM; replacing only the rank-r products
keeps peft's and transformers' code paths exactly as the sequential trainer runs them, with
the frozen base applied once to all ``G * b`` samples. (``vmap`` is used only for head
modules that are not ``nn.Linear``.)

* **Batches**: each client's generator is used exactly as ``LocalTrainer.train`` uses it
  (``randperm`` of its data, reshuffled when exhausted), so the batch order is the same.
* **Ragged groups**: clients are ordered internally by step count (descending), so the
  clients still training at step t are a prefix of the stacks (slices, no copies); a client
  that has finished drops out of the concatenated batch. A client whose batch is short at a
  step (the last batch before a reshuffle, or fewer samples than ``batch_size``) is padded to
  the step's largest batch by repeating one of its own samples with weight exactly 0 in its
  loss, so its gradient is unchanged (the padding costs compute only at such steps).
* **Losses**: ``loss_fn(model, batch)`` is called once over the concatenated batch for its
  logits; per-sample losses come from ``sample_loss_fn(logits, batch)`` (default: cross
  entropy against ``batch["y"]``, the loss of every model family here). The first step of
  each call checks that their mean equals ``loss_fn``'s loss and raises
  ``NotImplementedError`` otherwise (then pass a matching ``sample_loss_fn``).
* **Regularizer**: eq. (2) per client via :func:`~wirelessfl.lora_math.orthogonality_penalty`
  on the stacked paper-orientation factors ``theta_B = A^T (G, d_in, r)``, ``theta_A = B^T
  (G, r, d_out)`` (conv: ``d_in = C * kh * kw``, as ``TrainableState.paper_factors``).
* **Optimizers**: SGD and Adam are applied to the stacks with the arithmetic of
  ``torch.optim``'s single-tensor (CPU) implementation, per client: clients are grouped by
  (step count, lr, betas, eps) and each group is updated with ``torch._foreach_*`` ops over
  the stack rows. Adam state goes in and out in the format of ``torch.optim.Adam.state_dict()``
  of a per-client optimizer over ``TrainableState.params`` (index ``i`` = i-th trainable
  parameter; ``step``, ``exp_avg``, ``exp_avg_sq``), so the two trainers' states are
  interchangeable between rounds. As in ``torch.optim``, a loaded state's ``param_groups``
  hyper-parameters (lr, betas, eps) win over the trainer's.
* **Memory**: per client, its trainable parameters (LoRA factors and head), their gradients
  and, for Adam, two moments: ``K * n_trainable * (2 | 4)`` elements
  (``last_client_state_bytes``), plus the activations of the concatenated batch; the base
  model is never copied.
* **Ranks**: clients of different LoRA ranks run by zero padding to the model's rank
  (``ranks=``): client k starts from the global state truncated to its first ``r_k``
  components, and its LoRA output is rescaled so that it uses ``lora_alpha / r_k`` (or
  ``/ sqrt(r_k)`` with rsLoRA), i.e. it trains as its unpadded self. The padded components
  receive exactly zero gradients (``dA[j] = s B[:, j]^T (...)`` and ``dB[:, j] = s (...)
  A[j]^T``, and eq. (2)'s Gram off-diagonals involving a zero row vanish), so they stay exactly
  zero under SGD and Adam (zero moments give a zero step); results are returned padded (use
  :func:`truncate_rank` to cut them).

Supported layers
----------------
LoRA: peft ``lora.Linear`` (vanilla LoRA, any ``lora_dropout``: MiniLM/BERT, ViT, SmolLM2
projections, ``tiny_mlp``'s fc layers) and peft ``lora.Conv2d`` whose factors are plain
``nn.Conv2d`` with zero padding (EfficientNet-Lite0's 1x1 convs, any kernel, stride,
dilation). Any other LoRA layer (``lora.Embedding``, ``lora.Conv1d`` / ``Conv3d``,
transformers ``Conv1D``, conv subclasses with their own padding logic, DoRA and other
variants) raises ``NotImplementedError`` naming the layer and its type when the trainer is
built: there is no silent sequential fallback; use
:class:`~wirelessfl.training.local.LocalTrainer` for such models. Head parameters:
``nn.Linear`` owners use ``baddbmm``; any other module owning a trainable full parameter runs
under ``torch.func.vmap`` over the clients. Batch-norm layers are put in eval mode by
:func:`~wirelessfl.training.local.train_mode` exactly as ``LocalTrainer`` does (frozen
statistics), so no layer couples samples. LoRA inputs must be batch-first (first dim =
samples); other layouts raise ``NotImplementedError`` at the first step.

Exactness
---------
Without stochastic layers the results equal the sequential trainer's up to float rounding
(matmuls of different shapes sum in different orders). With dropout or drop-connect active
(MiniLM's default 0.1, EfficientNet's drop-connect) the masks are drawn over the
concatenated batch from torch's global generator, seeded from ``model_seeds`` when given:
reproducible and order-independent, but a client's masks depend on which clients share the
batch and differ from the sequential trainer's (same distribution). The model's own
trainable parameters are neither read nor changed (the start state comes in as
``global_state``).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from wirelessfl.lora_math import orthogonality_penalty
from wirelessfl.models.rng import seeded
from wirelessfl.training.local import LocalResult, train_mode
from wirelessfl.training.lora_state import TrainableState

__all__ = [
    "BatchedTrainer",
    "SampleLossFn",
    "cross_entropy_per_sample",
    "truncate_rank",
    "batch_schedule",
]

Batch = dict[str, torch.Tensor]
#: ``(logits (N, C), batch) -> per-sample losses (N,)`` whose mean is ``loss_fn``'s loss.
SampleLossFn = Callable[[torch.Tensor, Batch], torch.Tensor]


def cross_entropy_per_sample(logits: torch.Tensor, batch: Batch) -> torch.Tensor:
    """Per-sample cross entropy ``(N,)`` of ``logits (N, C)`` against ``batch["y"] (N,)``."""
    return F.cross_entropy(logits, batch["y"].to(logits.device), reduction="none")


def batch_schedule(
    n: int, steps: int, batch_size: int, generator: torch.Generator
) -> list[torch.Tensor]:
    """The index tensors ``LocalTrainer.train`` draws for ``steps`` steps on ``n`` samples.

    ``randperm(n)`` from ``generator`` (on its device), consecutive slices of ``batch_size``
    (the last one of a pass may be shorter), a fresh ``randperm`` when the pass is exhausted.
    """
    order = torch.randperm(n, generator=generator, device=generator.device)
    cursor, out = 0, []
    for _ in range(steps):
        if cursor >= n:
            order = torch.randperm(n, generator=generator, device=generator.device)
            cursor = 0
        out.append(order[cursor : cursor + batch_size])
        cursor += batch_size
    return out


def truncate_rank(
    values: dict[str, torch.Tensor], state: TrainableState, rank: int
) -> dict[str, torch.Tensor]:
    """``values`` (peft-shaped, padded to the model's rank) cut to the first ``rank`` LoRA
    components: ``lora_A (r, d_in) -> (rank, d_in)``, ``lora_B (d_out, r) -> (d_out, rank)``.
    Head (full) parameters are returned as they are."""
    out = dict(values)
    for layer in state.layers:
        out[layer.a_param] = values[layer.a_param][:rank].clone()
        out[layer.b_param] = values[layer.b_param][:, :rank].clone()
    return out


# --------------------------------------------------------------------------------------------
# grouped layer application
# --------------------------------------------------------------------------------------------


def _grouped_linear(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    n_samples: int,
    where: str,
) -> torch.Tensor:
    """Per-client linear map of client-major samples.

    Args:
        x: ``(G * b, ..., d_in)``, the samples of client g at rows ``g*b .. (g+1)*b - 1``.
        weight: ``(G, d_out, d_in)``; ``bias``: ``(G, d_out)``, ``(d_out,)`` or ``None``.
        n_samples: ``G * b`` (checked against ``x.shape[0]``).

    Returns:
        ``(G * b, ..., d_out)`` with ``y[rows of g] = x[rows of g] @ weight[g]^T + bias[g]``.
    """
    if x.shape[0] != n_samples:
        raise NotImplementedError(
            f"BatchedTrainer: layer {where!r} got an input of shape {tuple(x.shape)} whose first "
            f"dim is not the {n_samples} samples of the batch; only batch-first inputs can be "
            "grouped by client"
        )
    g = weight.shape[0]
    lead = x.shape[:-1]
    xg = x.reshape(g, -1, x.shape[-1])
    wt = weight.transpose(1, 2)
    if bias is None:
        y = torch.bmm(xg, wt)
    else:
        b = bias.unsqueeze(1) if bias.ndim == 2 else bias.expand(g, 1, -1)
        y = torch.baddbmm(b, xg, wt)
    return y.reshape(*lead, weight.shape[1])


def _grouped_conv2d(
    x: torch.Tensor, weight: torch.Tensor, conv: nn.Conv2d, n_samples: int, where: str
) -> torch.Tensor:
    """Per-client 2-D convolution of client-major samples, as one grouped convolution.

    Args:
        x: ``(G * b, C, H, W)``, client g's samples at rows ``g*b .. (g+1)*b - 1``.
        weight: ``(G, C_out, C / groups, kh, kw)``: client g's kernel.
        conv: the layer whose stride, padding, dilation and groups apply.

    Returns:
        ``(G * b, C_out, H', W')``: client g's rows convolved with ``weight[g]``. The batch is
        laid out as ``(b, G * C, H, W)`` and convolved with ``groups = G * conv.groups``.
    """
    if x.ndim != 4 or x.shape[0] != n_samples:
        raise NotImplementedError(
            f"BatchedTrainer: conv layer {where!r} got an input of shape {tuple(x.shape)}; "
            f"expected (samples={n_samples}, C, H, W)"
        )
    g = weight.shape[0]
    b = n_samples // g
    xg = x.reshape(g, b, *x.shape[1:]).transpose(0, 1).reshape(b, -1, *x.shape[2:])
    w = weight.reshape(-1, *weight.shape[2:])
    y = F.conv2d(xg, w, None, conv.stride, conv.padding, conv.dilation, g * conv.groups)
    return y.reshape(b, g, -1, *y.shape[2:]).transpose(0, 1).reshape(n_samples, -1, *y.shape[2:])


def _apply(
    module: nn.Module, x: torch.Tensor, weight: torch.Tensor, n_samples: int, where: str
) -> torch.Tensor:
    """``_grouped_linear`` or ``_grouped_conv2d`` by the type of the LoRA factor ``module``."""
    if isinstance(module, nn.Conv2d):
        return _grouped_conv2d(x, weight, module, n_samples, where)
    return _grouped_linear(x, weight, None, n_samples, where)


@dataclass
class _LoraSite:
    """One adapted peft ``lora.Linear`` layer."""

    name: str
    module: nn.Module
    a_mod: nn.Module
    b_mod: nn.Module
    a_param: str
    b_param: str
    rank: int
    rslora: bool


@dataclass
class _FullSite:
    """A module owning trainable full (head) parameters: attribute -> parameter name."""

    name: str
    module: nn.Module
    attrs: dict[str, str]


@dataclass
class _StepContext:
    """What the grouped forwards need at one step."""

    n_groups: int
    n_samples: int
    views: dict[str, torch.Tensor]  # parameter name -> (G, *shape) rows of the stacks
    factors: dict[str, torch.Tensor | None] = field(default_factory=dict)  # site -> (G, 1, 1)


def _unsupported(name: str, module: nn.Module, why: str) -> NotImplementedError:
    kind = f"{type(module).__module__}.{type(module).__qualname__}"
    return NotImplementedError(
        f"BatchedTrainer cannot batch layer {name!r} of type {kind}: {why}. Train this model "
        "with LocalTrainer (sequential clients)"
    )


# --------------------------------------------------------------------------------------------
# the trainer
# --------------------------------------------------------------------------------------------


class BatchedTrainer:
    """Trains K clients' LoRA states at once on one shared peft model (see module docstring).

    Built like :class:`~wirelessfl.training.local.LocalTrainer`: ``model`` is the peft model
    (wrapped once, never copied), ``state`` its :class:`TrainableState`, ``loss_fn`` the
    bundle's ``loss_and_logits``, ``optimizer`` ``"sgd"`` or ``"adam"``, ``lr`` and ``zeta``
    (weight of eq. (2)). ``sample_loss_fn`` gives per-sample losses from logits (default:
    cross entropy against ``batch["y"]``).

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
        zeta: float,
        sample_loss_fn: SampleLossFn | None = None,
    ):
        from peft.tuners.lora.layer import Conv2d as LoraConv2d
        from peft.tuners.lora.layer import Linear as LoraLinear
        from peft.tuners.tuners_utils import BaseTunerLayer

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

        self.lora_sites: list[_LoraSite] = []
        for layer in state.layers:
            module = model.get_submodule(layer.name)
            if type(module) not in (LoraLinear, LoraConv2d):
                raise _unsupported(
                    layer.name, module, "only peft lora.Linear and lora.Conv2d layers are grouped"
                )
            adapter = layer.a_param.split(".lora_A.")[1].split(".")[0]
            if adapter in getattr(module, "lora_variant", {}):
                raise _unsupported(layer.name, module, "LoRA variants (e.g. DoRA) are not grouped")
            a_mod, b_mod = module.lora_A[adapter], module.lora_B[adapter]
            kinds = {type(a_mod), type(b_mod)}
            if kinds != {nn.Linear} and kinds != {nn.Conv2d}:
                raise _unsupported(
                    layer.name,
                    module,
                    f"lora_A / lora_B are {type(a_mod).__name__} / {type(b_mod).__name__}, not "
                    "both nn.Linear or both plain nn.Conv2d",
                )
            if isinstance(a_mod, nn.Conv2d) and any(
                m.padding_mode != "zeros" for m in (a_mod, b_mod)
            ):
                raise _unsupported(layer.name, module, "conv padding_mode other than 'zeros'")
            if a_mod.bias is not None or b_mod.bias is not None:
                raise _unsupported(layer.name, module, "LoRA factors with a bias")
            self.lora_sites.append(
                _LoraSite(
                    name=layer.name,
                    module=module,
                    a_mod=a_mod,
                    b_mod=b_mod,
                    a_param=layer.a_param,
                    b_param=layer.b_param,
                    rank=int(module.r[adapter]),
                    rslora=bool(getattr(module, "use_rslora", {}).get(adapter, False)),
                )
            )

        owners: dict[str, dict[str, str]] = {}
        for name in state.full_names:
            owner, _, attr = name.rpartition(".")
            owners.setdefault(owner, {})[attr] = name
            parts = owner.split(".")
            for i in range(len(parts), 0, -1):  # a tuner layer's own parameters (e.g.
                path = ".".join(parts[:i])  # lora_embedding_A) are not LoRA pairs we group
                up = model.get_submodule(path)
                if isinstance(up, BaseTunerLayer):
                    raise _unsupported(path, up, "this LoRA layer type is not grouped")
        self.full_sites = [
            _FullSite(owner, model.get_submodule(owner), attrs) for owner, attrs in owners.items()
        ]

        params = list(state.params.values())
        template = torch.optim.Adam(params, lr=self.lr) if params else None
        self._adam_group: dict[str, Any] = (
            template.state_dict()["param_groups"][0] if template is not None else {}
        )
        self._ctx: _StepContext | None = None

    # ---- patching ------------------------------------------------------------------------
    def _lora_a_forward(self, site: _LoraSite) -> Callable[[torch.Tensor], torch.Tensor]:
        def forward(x: torch.Tensor) -> torch.Tensor:
            ctx = self._ctx
            assert ctx is not None
            return _apply(site.a_mod, x, ctx.views[site.a_param], ctx.n_samples, site.name)

        return forward

    def _lora_b_forward(self, site: _LoraSite) -> Callable[[torch.Tensor], torch.Tensor]:
        def forward(h: torch.Tensor) -> torch.Tensor:
            ctx = self._ctx
            assert ctx is not None
            y = _apply(site.b_mod, h, ctx.views[site.b_param], ctx.n_samples, site.name)
            factor = ctx.factors.get(site.name)
            if factor is not None:  # rank-padded clients: alpha / r_k instead of alpha / r
                scale = factor.to(y.dtype).reshape(ctx.n_groups, 1)
                y = (y.reshape(ctx.n_groups, -1) * scale).reshape(y.shape)
            return y

        return forward

    def _full_forward(self, site: _FullSite) -> Callable[..., torch.Tensor]:
        module = site.module
        if isinstance(module, nn.Linear):

            def linear(x: torch.Tensor) -> torch.Tensor:
                ctx = self._ctx
                assert ctx is not None
                w = ctx.views.get(site.attrs.get("weight", ""))
                if w is None:
                    w = module.weight.expand(ctx.n_groups, *module.weight.shape)
                b = ctx.views.get(site.attrs.get("bias", ""), module.bias)
                return _grouped_linear(x, w, b, ctx.n_samples, site.name)

            return linear

        cls_forward = type(module).forward
        inside = [False]

        def generic(x: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
            if inside[0]:  # called by functional_call below, with one client's parameters
                return cls_forward(module, x, *args, **kwargs)
            ctx = self._ctx
            assert ctx is not None
            if x.shape[0] != ctx.n_samples:
                raise NotImplementedError(
                    f"BatchedTrainer: layer {site.name!r} got an input of shape "
                    f"{tuple(x.shape)} whose first dim is not the {ctx.n_samples} samples"
                )
            params = {attr: ctx.views[name] for attr, name in site.attrs.items()}
            xg = x.reshape(ctx.n_groups, -1, *x.shape[1:])

            def one(p: dict[str, torch.Tensor], xi: torch.Tensor) -> torch.Tensor:
                return torch.func.functional_call(module, p, (xi, *args), kwargs)

            inside[0] = True
            try:
                y = torch.func.vmap(one)(params, xg)
            finally:
                inside[0] = False
            return y.reshape(-1, *y.shape[2:])

        return generic

    @contextmanager
    def _patched(self) -> Iterator[None]:
        """Install the grouped forwards; always restore the modules' own afterwards."""
        patches: list[tuple[nn.Module, Callable[..., torch.Tensor]]] = []
        for site in self.lora_sites:
            patches.append((site.a_mod, self._lora_a_forward(site)))
            patches.append((site.b_mod, self._lora_b_forward(site)))
        for full in self.full_sites:
            patches.append((full.module, self._full_forward(full)))
        saved: list[tuple[nn.Module, Any]] = []
        try:
            for module, fn in patches:
                saved.append((module, module.__dict__.get("forward")))
                module.forward = fn  # type: ignore[method-assign]
            yield
        finally:
            for module, old in reversed(saved):
                if old is None:
                    del module.forward
                else:
                    module.forward = old  # type: ignore[method-assign]
            self._ctx = None

    # ---- main entry ----------------------------------------------------------------------
    def train_many(
        self,
        global_state: dict[str, torch.Tensor],
        datasets: Sequence[Any],
        *,
        steps: Sequence[int],
        batch_size: int,
        generators: Sequence[torch.Generator],
        optimizer_states: Sequence[dict | None] | None = None,
        ranks: Sequence[int] | None = None,
        record_grad_norms: bool = False,
        model_seeds: Sequence[int] | None = None,
    ) -> list[LocalResult]:
        """Train K clients from ``global_state``; result k equals ``LocalTrainer.train``'s.

        Args:
            global_state: peft-named trainable parameters every client starts from.
            datasets: K ``ArrayDataset`` (anything with ``x``, ``y``, optional
                ``attention_mask`` tensors, or a ``batch(idx)`` method).
            steps: K step counts (may differ; 0 allowed).
            batch_size: samples per step per client (a pass's last batch may be shorter).
            generators: K generators, used exactly as ``LocalTrainer.train`` uses its one.
            optimizer_states: K Adam ``state_dict()``s (or ``None``) to resume from; ignored
                for SGD (whose state is ``None``, as in ``LocalTrainer``).
            ranks: K LoRA ranks <= the model's rank (default: all the model's rank); see the
                module docstring for the zero-padding they imply.
            record_grad_norms: record each client's gradient norm per step.
            model_seeds: the K ``model_seed`` values ``LocalTrainer.train`` would get. Torch's
                global generator is seeded (in a forked RNG scope) by one seed derived from
                all K, so stochastic layers (dropout, drop-connect) are reproducible and
                independent of what ran before; their masks are drawn over the concatenated
                batch, so they differ from the sequential trainer's (same distribution). No
                effect on models without stochastic layers.

        Returns:
            K :class:`LocalResult`: ``local`` (peft names and shapes, detached), ``mean_loss``
            of the task loss, Adam ``optimizer_state`` (``None`` for SGD), ``grad_norms``.
        """
        k_all = len(datasets)
        if len(steps) != k_all or len(generators) != k_all:
            raise ValueError(
                f"got {k_all} datasets, {len(steps)} step counts and {len(generators)} generators"
            )
        if optimizer_states is not None and len(optimizer_states) != k_all:
            raise ValueError(f"got {len(optimizer_states)} optimizer states for {k_all} clients")
        if ranks is not None and len(ranks) != k_all:
            raise ValueError(f"got {len(ranks)} ranks for {k_all} clients")
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
            words = [int(x) for x in model_seeds]
            seed = int(np.random.SeedSequence(words).generate_state(1, np.uint64)[0])
            device = next(iter(self.state.params.values())).device
            scope = seeded(seed & (2**63 - 1), device)
        with scope:
            return self._train_many(
                global_state,
                datasets,
                steps,
                batch_size,
                generators,
                optimizer_states,
                ranks,
                record_grad_norms,
            )

    def _train_many(
        self,
        global_state: dict[str, torch.Tensor],
        datasets: Sequence[Any],
        steps: Sequence[int],
        batch_size: int,
        generators: Sequence[torch.Generator],
        optimizer_states: Sequence[dict | None] | None,
        ranks: Sequence[int] | None,
        record_grad_norms: bool,
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
        stacks = self._init_stacks(global_state, order, ranks)
        factors = self._rank_factors(order, ranks, ref.device)
        adam = self.optimizer == "adam"
        opt = _StackedAdam(self, order, optimizer_states, stacks) if adam else None

        train_mode(self.model)  # batch-norm statistics frozen, as LocalTrainer does
        losses: list[torch.Tensor] = []
        norms: list[torch.Tensor] = []
        checked = False
        with self._patched():
            for t in range(n_steps[0] if n_steps else 0):
                g = sum(1 for s in n_steps if s > t)  # active clients: positions 0 .. g-1
                idx = [schedules[order[p]][t] for p in range(g)]
                counts = [int(i.shape[0]) for i in idx]
                width = max(counts)
                batch = self._concat_batch([datasets[order[p]] for p in range(g)], idx, width)
                views = {n: s[:g] if g < k_all else s for n, s in stacks.items()}
                self._ctx = _StepContext(
                    g,
                    g * width,
                    views,
                    {n: (f[:g] if f is not None else None) for n, f in factors.items()},
                )
                mean_loss, logits = self.loss_fn(self.model, batch)
                per_sample = self.sample_loss_fn(logits, batch)
                if not checked:
                    self._check_sample_loss(mean_loss, per_sample)
                    checked = True
                per_sample = per_sample.reshape(g, width)
                if min(counts) == width:
                    task = per_sample.sum(dim=1) / width
                else:
                    cnt = torch.tensor(counts, device=per_sample.device)
                    valid = torch.arange(width, device=per_sample.device) < cnt.unsqueeze(1)
                    task = torch.where(valid, per_sample, 0.0).sum(dim=1) / cnt.to(per_sample.dtype)
                total = task.sum()
                if self.zeta != 0.0:
                    reg = sum(
                        orthogonality_penalty(*self._paper_factors(views, site, g))
                        for site in self.lora_sites
                    )
                    total = total + self.zeta * reg.sum()  # type: ignore[union-attr]
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
                        self._sgd_step(stacks, grads, g)
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

    # ---- pieces --------------------------------------------------------------------------
    @staticmethod
    def _paper_factors(
        views: dict[str, torch.Tensor], site: _LoraSite, g: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Stacked ``(theta_B (G, d, r), theta_A (G, r, l))`` of one layer (as
        ``TrainableState.paper_factors``, per client): ``A (G, r, d_in[, k, k])`` and
        ``B (G, d_out, r[, 1, 1])``."""
        a, b = views[site.a_param], views[site.b_param]
        return a.reshape(g, site.rank, -1).mT, b.reshape(g, b.shape[1], site.rank).mT

    def _init_stacks(
        self,
        global_state: dict[str, torch.Tensor],
        order: list[int],
        ranks: Sequence[int] | None,
    ) -> dict[str, torch.Tensor]:
        """Leaf tensors ``(K, *shape)`` holding every client's copy of each trainable
        parameter, in internal (position) order; rank-padded components zeroed."""
        k_all = len(order)
        stacks: dict[str, torch.Tensor] = {}
        for name, p in self.state.params.items():
            value = global_state[name].detach().to(device=p.device, dtype=p.dtype)
            stacks[name] = value.unsqueeze(0).repeat(k_all, *([1] * value.ndim))
        if ranks is not None:
            for site in self.lora_sites:
                for pos, k in enumerate(order):
                    r_k = int(ranks[k])
                    if not 1 <= r_k <= site.rank:
                        raise ValueError(
                            f"client {k}: rank {r_k} is out of range for layer {site.name!r} "
                            f"(accepted 1..{site.rank})"
                        )
                    stacks[site.a_param][pos, r_k:] = 0
                    stacks[site.b_param][pos, :, r_k:] = 0
        for s in stacks.values():
            s.requires_grad_(True)
        return stacks

    def _rank_factors(
        self, order: list[int], ranks: Sequence[int] | None, device: torch.device
    ) -> dict[str, torch.Tensor | None]:
        """Per LoRA layer, ``(K, 1, 1)`` multipliers turning the model's scaling into each
        client's own (``r / r_k``, or ``sqrt(r / r_k)`` for rsLoRA); ``None`` if all are 1."""
        out: dict[str, torch.Tensor | None] = {}
        for site in self.lora_sites:
            if ranks is None or all(int(ranks[k]) == site.rank for k in order):
                out[site.name] = None
                continue
            ratios = [site.rank / int(ranks[k]) for k in order]
            vals = [math.sqrt(x) if site.rslora else x for x in ratios]
            out[site.name] = torch.tensor(vals, dtype=torch.float64, device=device).reshape(
                -1, 1, 1
            )
        return out

    def _concat_batch(self, datasets: list[Any], idx: list[torch.Tensor], width: int) -> Batch:
        """The G clients' batches, each padded to ``width`` rows by repeating its first
        sample, concatenated client-major: every tensor is ``(G * width, ...)``."""
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

    def _check_sample_loss(self, mean_loss: torch.Tensor, per_sample: torch.Tensor) -> None:
        """Refuse a ``loss_fn`` whose loss is not the mean of ``sample_loss_fn``'s values."""
        a = float(mean_loss.detach())
        b = float(per_sample.detach().double().mean())
        if per_sample.ndim != 1 or not math.isclose(a, b, rel_tol=1e-3, abs_tol=1e-5):
            raise NotImplementedError(
                f"BatchedTrainer: loss_fn's loss ({a:.6g}) is not the mean of the per-sample "
                f"losses ({b:.6g}, shape {tuple(per_sample.shape)}); pass sample_loss_fn= "
                "giving (N,) per-sample losses whose mean is loss_fn's loss"
            )

    def _sgd_step(
        self, stacks: dict[str, torch.Tensor], grads: list[torch.Tensor | None], g: int
    ) -> None:
        """``param.add_(grad, alpha=-lr)`` on the active rows (torch.optim.SGD, momentum 0)."""
        params = [s[:g] for s, gr in zip(stacks.values(), grads, strict=True) if gr is not None]
        used = [gr for gr in grads if gr is not None]
        if params:
            torch._foreach_add_(params, used, alpha=-self.lr)


class _StackedAdam:
    """Per-client Adam over the stacks, with torch.optim.Adam's single-tensor arithmetic."""

    def __init__(
        self,
        trainer: BatchedTrainer,
        order: list[int],
        states: Sequence[dict | None] | None,
        stacks: dict[str, torch.Tensor],
    ):
        self.trainer = trainer
        self.stacks = list(stacks.values())
        n_params = len(self.stacks)
        k_all = len(order)
        self.exp_avg = [torch.zeros_like(s, requires_grad=False) for s in self.stacks]
        self.exp_avg_sq = [torch.zeros_like(s, requires_grad=False) for s in self.stacks]
        self.step_count = np.zeros((k_all, n_params), dtype=np.int64)
        self.has_state = np.zeros((k_all, n_params), dtype=bool)
        default = trainer._adam_group
        self.groups: list[dict[str, Any]] = []
        self.hyper: list[tuple[float, float, float, float]] = []
        for pos, k in enumerate(order):
            loaded = None if states is None else states[k]
            group = dict(default)
            if loaded is not None:
                group.update(self._load(pos, loaded, n_params))
            self.groups.append(group)
            beta1, beta2 = group.get("betas", (0.9, 0.999))
            self.hyper.append(
                (float(group.get("lr", trainer.lr)), float(beta1), float(beta2), group["eps"])
            )

    def _load(self, pos: int, loaded: dict, n_params: int) -> dict[str, Any]:
        groups = loaded.get("param_groups", [])
        if len(groups) != 1 or len(groups[0].get("params", [])) != n_params:
            raise ValueError(
                f"optimizer state has {len(groups)} parameter groups; expected one group of "
                f"{n_params} parameters (an Adam state_dict of LocalTrainer or BatchedTrainer)"
            )
        group = {k: v for k, v in groups[0].items() if k != "params"}
        if group.get("weight_decay", 0) or group.get("amsgrad") or group.get("maximize"):
            raise NotImplementedError(
                "BatchedTrainer's Adam supports weight_decay=0, amsgrad=False, maximize=False"
            )
        for i, entry in loaded.get("state", {}).items():
            i = int(i)
            s = self.stacks[i]
            self.exp_avg[i][pos].copy_(entry["exp_avg"].to(device=s.device, dtype=s.dtype))
            self.exp_avg_sq[i][pos].copy_(entry["exp_avg_sq"].to(device=s.device, dtype=s.dtype))
            self.step_count[pos, i] = round(float(entry["step"]))
            self.has_state[pos, i] = True
        return group

    def step(self, g: int, grads: list[torch.Tensor | None]) -> None:
        """One Adam step for the clients at positions ``0 .. g-1`` (grads are ``(g, ...)``)."""
        buckets: dict[tuple, list[tuple[int, list[int]]]] = {}
        with_grad = [i for i, gr in enumerate(grads) if gr is not None]  # torch skips the rest
        counts = self.step_count[:g, with_grad]
        if counts.size and (counts == counts[:, :1]).all():  # usual case: one count per client
            by_key: dict[tuple, list[int]] = {}
            for pos in range(g):
                by_key.setdefault((int(counts[pos, 0]) + 1, *self.hyper[pos]), []).append(pos)
            for key, positions in by_key.items():
                buckets[key] = [(i, positions) for i in with_grad]
        else:
            for i in with_grad:
                by_key = {}
                for pos in range(g):
                    key = (int(self.step_count[pos, i]) + 1, *self.hyper[pos])
                    by_key.setdefault(key, []).append(pos)
                for key, positions in by_key.items():
                    buckets.setdefault(key, []).append((i, positions))
        for (step, lr, beta1, beta2, eps), members in buckets.items():
            params, gs, ms, vs, scatter = [], [], [], [], []
            for i, positions in members:
                lo, hi = positions[0], positions[-1] + 1
                if hi - lo == len(positions):  # contiguous rows: in-place on views
                    sel: slice | torch.Tensor = slice(lo, hi)
                    params.append(self.stacks[i].data[sel])
                    ms.append(self.exp_avg[i][sel])
                    vs.append(self.exp_avg_sq[i][sel])
                    gs.append(grads[i][lo:hi])  # type: ignore[index]
                else:  # gather, update, scatter back
                    sel = torch.tensor(positions, device=self.stacks[i].device)
                    params.append(self.stacks[i].data.index_select(0, sel))
                    ms.append(self.exp_avg[i].index_select(0, sel))
                    vs.append(self.exp_avg_sq[i].index_select(0, sel))
                    gs.append(grads[i].index_select(0, sel))  # type: ignore[union-attr]
                    scatter.append((i, sel, len(params) - 1))
                self.step_count[positions, i] = step
                self.has_state[positions, i] = True
            torch._foreach_lerp_(ms, gs, 1 - beta1)
            torch._foreach_mul_(vs, beta2)
            torch._foreach_addcmul_(vs, gs, gs, value=1 - beta2)
            bias_correction1 = 1 - beta1 ** float(step)
            bias_correction2 = 1 - beta2 ** float(step)
            step_size = lr / bias_correction1
            bias_correction2_sqrt = bias_correction2**0.5
            denom = torch._foreach_sqrt(vs)
            torch._foreach_div_(denom, bias_correction2_sqrt)
            torch._foreach_add_(denom, eps)
            torch._foreach_addcdiv_(params, ms, denom, value=-step_size)
            for i, sel, j in scatter:
                self.stacks[i].data.index_copy_(0, sel, params[j])
                self.exp_avg[i].index_copy_(0, sel, ms[j])
                self.exp_avg_sq[i].index_copy_(0, sel, vs[j])

    def state_dict(self, pos: int) -> dict:
        """Client ``pos``'s state as ``torch.optim.Adam(params).state_dict()`` gives it."""
        scalar = torch.float64 if torch.get_default_dtype() == torch.float64 else torch.float32
        state = {
            i: {
                "step": torch.tensor(float(self.step_count[pos, i]), dtype=scalar),
                "exp_avg": self.exp_avg[i][pos].clone(),
                "exp_avg_sq": self.exp_avg_sq[i][pos].clone(),
            }
            for i in range(len(self.stacks))
            if self.has_state[pos, i]
        }
        group = copy.deepcopy(self.groups[pos])
        group["params"] = list(range(len(self.stacks)))
        return {"state": state, "param_groups": [group]}
