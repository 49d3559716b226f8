"""Model bundles: a base network with its task head plus what the LoRA runtime needs.

``build_model(name, n_classes=..., seed=..., **options) -> ModelBundle``; ``MODELS`` lists the
names. A bundle carries the **unwrapped** model (base weights not frozen yet, no peft), the
default LoRA ``target_modules``, the ``head_modules`` trained as full parameters (peft
``modules_to_save``), the data ``kind`` it consumes, a ``loss_and_logits(model, batch)``
callable and ``layer_shapes(target_modules)`` for payload sizes.

Registry entries are lazy (``"module:function"``), so ``import wirelessfl.models`` does not
import transformers or the EfficientNet package; a new model family is one module with a
``build_*(*, n_classes, seed, **options) -> ModelBundle`` function plus one line in
``MODELS``.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from wirelessfl.errors import UserError

__all__ = [
    "ModelBundle",
    "MODELS",
    "build_model",
    "register_model",
    "check_rank",
    "image_loss_and_logits",
    "text_loss_and_logits",
    "seeded",
    "detect_attention_targets",
]

KINDS = ("image", "text", "lm")

# Name segments that peft inserts when it wraps a layer; never LoRA targets themselves.
_PEFT_SEGMENTS = {
    "base_layer",
    "lora_A",
    "lora_B",
    "lora_dropout",
    "lora_embedding_A",
    "lora_embedding_B",
    "lora_magnitude_vector",
    "modules_to_save",
    "original_module",
}

Batch = dict[str, torch.Tensor]
LossFn = Callable[[nn.Module, Batch], tuple[torch.Tensor, torch.Tensor]]


# --------------------------------------------------------------------------------------------
# helpers shared by the model families
# --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def seeded(seed: int, device: torch.device | str | None = None) -> Iterator[None]:
    """Run a block with torch's global RNG seeded by ``seed``, restoring the state after
    (so building a model or training a client never shifts anyone else's random stream).

    With a CUDA ``device``, that device's generator is forked and seeded too.
    """
    dev = torch.device(device) if device is not None else None
    with torch.random.fork_rng(devices=[dev] if dev is not None and dev.type == "cuda" else []):
        torch.manual_seed(int(seed))
        yield


def _device_of(model: nn.Module) -> torch.device:
    try:
        return next(model.parameters()).device
    except StopIteration:
        return torch.device("cpu")


def _logits_of(out: Any) -> torch.Tensor:
    return out.logits if hasattr(out, "logits") else out


def image_loss_and_logits(model: nn.Module, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
    """Cross-entropy for an image classifier called as ``model(x)``.

    ``batch["x"]``: float ``(B, C, H, W)``; ``batch["y"]``: int64 ``(B,)``. Returns the mean
    loss (scalar) and logits ``(B, n_classes)``. Tensors are moved to the model's device.
    """
    dev = _device_of(model)
    logits = _logits_of(model(batch["x"].to(dev)))
    return F.cross_entropy(logits, batch["y"].to(dev)), logits


def text_loss_and_logits(model: nn.Module, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
    """Cross-entropy for a sequence classifier called as
    ``model(input_ids=x, attention_mask=mask)``.

    ``batch["x"]``: int64 token ids ``(B, L)``; ``batch["attention_mask"]`` (optional) int64
    ``(B, L)``; ``batch["y"]``: int64 ``(B,)``. Returns the mean loss and logits
    ``(B, n_classes)``.
    """
    dev = _device_of(model)
    mask = batch.get("attention_mask")
    out = model(input_ids=batch["x"].to(dev), attention_mask=None if mask is None else mask.to(dev))
    logits = _logits_of(out)
    return F.cross_entropy(logits, batch["y"].to(dev)), logits


def _is_peft_internal(name: str) -> bool:
    return any(seg in _PEFT_SEGMENTS for seg in name.split("."))


def _unwrap(module: nn.Module) -> nn.Module:
    """The original layer of a peft-wrapped one (``base_layer``), else the module itself."""
    while hasattr(module, "base_layer") and isinstance(module.base_layer, nn.Module):
        module = module.base_layer
    return module


def layer_in_out(module: nn.Module) -> tuple[int, int] | None:
    """``(d_in, d_out)`` of a LoRA-adaptable layer, ``None`` if it is not one.

    ``nn.Linear``: (in_features, out_features). ``nn.Conv2d`` with ``groups == 1``:
    (in_channels * kh * kw, out_channels), i.e. (in, out) channels for a 1x1 conv (the LoRA
    factors are a k x k conv in -> r and a 1x1 conv r -> out). transformers ``Conv1D``
    (GPT-2 style, weight (in, out)): (in, out).
    """
    m = _unwrap(module)
    if isinstance(m, nn.Linear):
        return int(m.in_features), int(m.out_features)
    if isinstance(m, nn.Conv2d):
        if m.groups != 1:
            return None
        kh, kw = m.kernel_size
        return int(m.in_channels * kh * kw), int(m.out_channels)
    if type(m).__name__ == "Conv1D" and hasattr(m, "weight") and m.weight.ndim == 2:
        return int(m.weight.shape[0]), int(m.weight.shape[1])
    return None


def _matches(name: str, key: str) -> bool:
    """peft's rule for a list of target names: exact name or a ``.``-suffix."""
    return name == key or name.endswith("." + key)


#: Attention query / value projection names across transformer families and versions
#: (transformers 5 renamed ViT's ``query``/``value`` to ``q_proj``/``v_proj``; BERT kept them).
ATTENTION_TARGETS: tuple[tuple[str, ...], ...] = (
    ("q_proj", "v_proj"),
    ("query", "value"),
    ("q_lin", "v_lin"),
    ("c_attn",),
    ("q", "v"),
)


def detect_attention_targets(
    model: nn.Module, candidates: Sequence[Sequence[str]] = ATTENTION_TARGETS
) -> list[str] | None:
    """The first name set in ``candidates`` whose every name matches an adaptable layer of
    ``model`` (the query / value projections, LoRA's usual targets), else ``None``."""
    names = [n for n, m in model.named_modules() if n and layer_in_out(m) is not None]
    for keys in candidates:
        if all(any(_matches(n, k) for n in names) for k in keys):
            return list(keys)
    return None


# --------------------------------------------------------------------------------------------
# the bundle
# --------------------------------------------------------------------------------------------


@dataclass
class ModelBundle:
    """A base network with its task head, ready for ``peft.get_peft_model``.

    Attributes
    ----------
    model:
        The base model with a fresh task head; not wrapped by peft, nothing frozen.
    target_modules:
        Default LoRA targets (exact module names or ``.``-suffixes, as peft accepts).
    head_modules:
        Modules trained as full parameters (peft ``modules_to_save``).
    kind:
        Data kind consumed (``"image"``, ``"text"``, ``"lm"``); must equal ``TaskData.kind``.
    loss_and_logits:
        ``(model, batch) -> (loss, logits)``; ``model`` may be the peft-wrapped one.
    name:
        Registry name it was built from.
    info:
        Settings worth recording (sources of weights, image size, ...).
    """

    model: nn.Module
    target_modules: list[str]
    head_modules: list[str]
    kind: str
    loss_and_logits: LossFn
    name: str = ""
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise UserError(f"kind must be one of {KINDS}, got {self.kind!r}")

    # -- target resolution ----------------------------------------------------------------

    def _in_head(self, name: str) -> bool:
        return any(
            _matches(name, h) or any(_matches(p, h) for p in _prefixes(name))
            for h in self.head_modules
        )

    def adaptable_layers(self) -> dict[str, tuple[int, int]]:
        """Every LoRA-adaptable layer outside the head: full name -> (d_in, d_out)."""
        out: dict[str, tuple[int, int]] = {}
        for name, module in self.model.named_modules():
            if not name or _is_peft_internal(name) or self._in_head(name):
                continue
            shape = layer_in_out(module)
            if shape is not None:
                out[name] = shape
        return out

    def target_names(self, target_modules: Sequence[str] | None = None) -> list[str]:
        """Full names of the layers ``target_modules`` (default: the bundle's) selects, in
        module order. A key that matches no adaptable layer raises ``ValueError``."""
        keys = list(self.target_modules if target_modules is None else target_modules)
        if isinstance(target_modules, str):
            raise UserError("target_modules must be a list of names, not a string")
        layers = self.adaptable_layers()
        if not keys:
            raise UserError(
                f"no LoRA target_modules for {self.name or 'this model'}; pass target_modules= "
                f"from: {', '.join(_short_names(layers))}"
            )
        for key in keys:
            if not any(_matches(name, key) for name in layers):
                raise UserError(
                    f"target module {key!r} matches no adaptable layer of {self.name or 'the'} "
                    f"model; accepted: {', '.join(_short_names(layers))}"
                )
        return [name for name in layers if any(_matches(name, k) for k in keys)]

    def layer_shapes(self, target_modules: Sequence[str] | None = None) -> list[tuple[int, int]]:
        """``(d_in, d_out)`` per adapted layer, in module order (LoRA A is d_in x r, B is
        r x d_out; for a 1x1 conv: in / out channels). Default: the bundle's targets."""
        layers = self.adaptable_layers()
        return [layers[n] for n in self.target_names(target_modules)]

    def lora_param_count(self, rank: int, target_modules: Sequence[str] | None = None) -> int:
        """LoRA parameters ``sum r * (d_in + d_out)`` over the adapted layers."""
        return int(sum(rank * (i + o) for i, o in self.layer_shapes(target_modules)))


def _prefixes(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _short_names(layers: dict[str, tuple[int, int]]) -> list[str]:
    """Distinct last name segments, in first-seen order (what a user would type)."""
    seen: dict[str, None] = {}
    for name in layers:
        seen.setdefault(name.rsplit(".", 1)[-1], None)
    return list(seen)


def check_rank(bundle: ModelBundle, rank: int, target_modules: Sequence[str] | None = None) -> int:
    """Check that LoRA ``rank`` fits every adapted layer: ``1 <= rank <= min(d_in, d_out)``.

    Returns the limit (the smallest ``min(d_in, d_out)``); raises ``ValueError`` naming
    ``rank``, the limit and the layer that sets it.
    """
    names = bundle.target_names(target_modules)
    layers = bundle.adaptable_layers()
    limit_name = min(names, key=lambda n: min(layers[n]))
    limit = min(layers[limit_name])
    if not isinstance(rank, int) or isinstance(rank, bool) or not 1 <= rank <= limit:
        raise UserError(
            f"rank={rank} is out of range for {bundle.name or 'this model'}: accepted 1..{limit} "
            f"(min(d_in, d_out) of layer {limit_name!r})"
        )
    return limit


# --------------------------------------------------------------------------------------------
# registry
# --------------------------------------------------------------------------------------------


class LazyBuilder:
    """A registry entry ``"package.module:function"`` imported on first use."""

    def __init__(self, target: str) -> None:
        self.target = target
        self._fn: Callable[..., ModelBundle] | None = None

    def resolve(self) -> Callable[..., ModelBundle]:
        if self._fn is None:
            module, func = self.target.split(":")
            self._fn = getattr(importlib.import_module(module), func)
        return self._fn

    def __call__(self, **kwargs: Any) -> ModelBundle:
        return self.resolve()(**kwargs)

    def __repr__(self) -> str:
        return f"LazyBuilder({self.target!r})"


#: name -> builder ``(*, n_classes, seed, **options) -> ModelBundle``. ``hub:<name-or-path>``
#: is handled by :func:`build_model`.
MODELS: dict[str, Callable[..., ModelBundle]] = {
    "tiny_mlp": LazyBuilder("wirelessfl.models.tiny:build_tiny_mlp"),
    "efficientnet_lite0": LazyBuilder("wirelessfl.models.efficientnet:build_efficientnet_lite0"),
    "minilm": LazyBuilder("wirelessfl.models.minilm:build_minilm"),
    "smollm2": LazyBuilder("wirelessfl.models.smollm2:build_smollm2"),
    "smollm2_instruct": LazyBuilder("wirelessfl.models.smollm2:build_smollm2_instruct"),
    "vit_random": LazyBuilder("wirelessfl.models.vit:build_vit_random"),
}

HUB_PREFIX = "hub:"


def register_model(name: str, builder: Callable[..., ModelBundle] | str) -> None:
    """Add a model family: a builder or a lazy ``"module:function"`` string."""
    if name.startswith(HUB_PREFIX):
        raise UserError(f"model names may not start with {HUB_PREFIX!r}")
    MODELS[name] = LazyBuilder(builder) if isinstance(builder, str) else builder


def _signature_of(builder: Callable[..., Any]) -> inspect.Signature:
    fn = builder.resolve() if isinstance(builder, LazyBuilder) else builder
    return inspect.signature(fn)


def build_model(
    name: str,
    *,
    n_classes: int,
    seed: int = 0,
    target_modules: Sequence[str] | None = None,
    **options: Any,
) -> ModelBundle:
    """Build the model ``name`` (a key of :data:`MODELS` or ``"hub:<name-or-path>"``).

    Parameters
    ----------
    name:
        Registry name, or ``hub:`` plus a local ``save_pretrained`` folder / hub model id.
    n_classes:
        Width of the new task head (>= 1).
    seed:
        Seeds every random initialisation (head, random-init backbones); the global torch
        RNG is left as it was.
    target_modules:
        Override the default LoRA targets; each key must match an adaptable layer.
    options:
        Family options (see each builder's docstring); an unknown one raises ``ValueError``.
    """
    if not isinstance(n_classes, int) or isinstance(n_classes, bool) or n_classes < 1:
        raise UserError(f"n_classes must be an integer >= 1, got {n_classes!r}")
    if name.startswith(HUB_PREFIX):
        spec = name[len(HUB_PREFIX) :]
        if not spec:
            raise UserError("model 'hub:' needs a name or path after the colon")
        from wirelessfl.models.hub import build_hub

        builder: Callable[..., ModelBundle] = build_hub
        options = {"spec": spec, **options}
    elif name in MODELS:
        builder = MODELS[name]
    else:
        raise UserError(
            f"unknown model {name!r}; accepted: {', '.join(sorted(MODELS))}, hub:<name-or-path>"
        )
    params = _signature_of(builder).parameters
    accepted = [p for p in params if p not in ("n_classes", "seed", "spec")]
    for key in options:
        if key not in accepted and key != "spec":
            raise UserError(
                f"unknown option {key!r} for model {name!r}; accepted: "
                f"{', '.join(accepted + ['target_modules'])}"
            )
    bundle = builder(n_classes=n_classes, seed=seed, **options)
    bundle.name = name
    if target_modules is not None:
        bundle.target_names(target_modules)  # validates every key
        bundle.target_modules = list(target_modules)
    else:
        bundle.target_names()  # the defaults must resolve too
    return bundle
