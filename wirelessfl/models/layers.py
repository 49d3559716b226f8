"""Which layers LoRA can adapt, their ``(d_in, d_out)``, and peft's name rules."""

from __future__ import annotations

from collections.abc import Sequence

from torch import nn

__all__ = [
    "ATTENTION_TARGETS",
    "detect_attention_targets",
    "is_peft_internal",
    "layer_in_out",
    "matches",
]

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

#: Attention query / value projection names across transformer families and versions
#: (transformers 5 renamed ViT's ``query``/``value`` to ``q_proj``/``v_proj``; BERT kept them).
ATTENTION_TARGETS: tuple[tuple[str, ...], ...] = (
    ("q_proj", "v_proj"),
    ("query", "value"),
    ("q_lin", "v_lin"),
    ("c_attn",),
    ("q", "v"),
)


def is_peft_internal(name: str) -> bool:
    """True for a module name inside a peft wrapper (``...q_proj.lora_A.default``)."""
    return any(seg in _PEFT_SEGMENTS for seg in name.split("."))


def matches(name: str, key: str) -> bool:
    """peft's rule for a list of target names: exact name or a ``.``-suffix."""
    return name == key or name.endswith("." + key)


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


def detect_attention_targets(
    model: nn.Module, candidates: Sequence[Sequence[str]] = ATTENTION_TARGETS
) -> list[str] | None:
    """The query / value projections of ``model``, LoRA's usual targets.

    Args:
        model: Any torch model.
        candidates: Name sets, tried in order.

    Returns:
        The first name set whose every name matches an adaptable layer of ``model``, else
        ``None``.
    """
    names = [n for n, m in model.named_modules() if n and layer_in_out(m) is not None]
    for keys in candidates:
        if all(any(matches(n, k) for n in names) for k in keys):
            return list(keys)
    return None
