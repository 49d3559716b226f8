"""Which layers LoRA can adapt, their ``(d_in, d_out)``, and peft's name rules."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from torch import nn

from wirelessfl.errors import ConfigError

__all__ = [
    "ATTENTION_TARGETS",
    "detect_attention_targets",
    "block_index",
    "is_peft_internal",
    "layer_in_out",
    "layers_in",
    "matches",
    "pattern_key",
    "pattern_ranks",
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


def block_index(name: str) -> int | None:
    """The block a module belongs to: the last number in its path that a name follows (peft's
    ``layers_to_transform`` rule without ``layers_pattern``): 12 in ``_blocks.12._expand_conv``,
    3 in ``encoder.layer.3.attention.self.query``; None when there is none."""
    parts = name.split(".")
    numbers = [int(p) for p in parts[1:-1] if p.isdigit()]
    return numbers[-1] if numbers else None


def layers_in(targets: Sequence[str], blocks: Sequence[int]) -> list[str]:
    """The ``targets`` (full module names) whose :func:`block_index` is in ``blocks``.

    Raises:
        ConfigError: none of them is (one line: the block indices the targets have).
    """
    wanted = set(blocks)
    kept = [name for name in targets if block_index(name) in wanted]
    if not kept:
        have = sorted({i for i in map(block_index, targets) if i is not None})
        raise ConfigError(
            f"learner.layers_to_transform: {sorted(wanted)} selects none of the target modules; "
            f"their block indices are {have or 'none (the modules are in no numbered block)'}"
        )
    return kept


def pattern_key(keys: Sequence[str], name: str) -> str | None:
    """The first of ``keys`` that matches module ``name`` by peft's ``rank_pattern`` rule
    (``get_pattern_key``: ``re.match(rf"(.*\\.)?({key})$", name)``: the name itself, a
    ``.``-suffix, or a regular expression over the whole name); None when none does."""
    for key in keys:
        if re.match(rf"(.*\.)?({key})$", name):
            return key
    return None


def pattern_ranks(targets: Sequence[str], pattern: Mapping[str, int]) -> list[int | None]:
    """Per target module (full names), the rank ``pattern`` fixes for it (peft's
    ``rank_pattern``, first matching key), or None: the controller's rank.

    Raises:
        ConfigError: one line for a key that matches no target, a key whose targets an
            earlier key all takes, or a pattern that fixes every target.
    """
    keys = list(pattern)
    found = [pattern_key(keys, name) for name in targets]
    for key in keys:
        if key in found:
            continue
        if not any(pattern_key([key], name) for name in targets):
            raise ConfigError(
                f"learner.rank_pattern: {key!r} matches none of the target modules; they are "
                f"{', '.join(targets)}"
            )
        raise ConfigError(
            f"learner.rank_pattern: {key!r} matches only target modules that an earlier key "
            "fixes (peft takes the first key that matches); remove it or put it first"
        )
    if None not in found:
        raise ConfigError(
            "learner.rank_pattern: fixes the rank of every target module, so the controller's "
            f"rank would adapt none; leave at least one of {', '.join(targets)} out"
        )
    return [None if key is None else int(pattern[key]) for key in found]


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
