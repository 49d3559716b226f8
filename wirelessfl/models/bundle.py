"""``ModelBundle``: a base network with its task head plus what the LoRA runtime needs.

A bundle carries the **unwrapped** model (base weights not frozen yet, no peft), the default
LoRA ``target_modules``, the ``head_modules`` trained as full parameters (peft
``modules_to_save``), the data ``kind`` it consumes, a ``loss_and_logits(model, batch)``
callable, and resolves target names to layers and their ``(d_in, d_out)`` for payload sizes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from torch import nn

from wirelessfl.data.arrays import KINDS
from wirelessfl.errors import UserError
from wirelessfl.models.layers import is_peft_internal, layer_in_out, matches
from wirelessfl.models.losses import LossFn
from wirelessfl.models.standalone import Standalone

__all__ = ["ModelBundle", "check_rank"]


@dataclass
class ModelBundle:
    """A base network with its task head, ready for ``peft.get_peft_model``.

    Attributes:
        model: The base model with a fresh task head; not wrapped by peft, nothing frozen.
        target_modules: Default LoRA targets (exact module names or ``.``-suffixes, as peft
            accepts).
        head_modules: Modules trained as full parameters (peft ``modules_to_save``).
        kind: Data kind consumed (``"image"``, ``"text"``, ``"lm"``); must equal
            ``TaskData.kind``.
        loss_and_logits: ``(model, batch) -> (loss, logits)``; ``model`` may be the
            peft-wrapped one.
        name: Registry name it was built from.
        info: Settings worth recording (sources of weights, image size, ...).
        standalone: How the model is rebuilt without wirelessfl (what ``wirelessfl export``
            writes as ``load_exported.py``); ``None`` when it cannot be.
    """

    model: nn.Module
    target_modules: list[str]
    head_modules: list[str]
    kind: str
    loss_and_logits: LossFn
    name: str = ""
    info: dict[str, Any] = field(default_factory=dict)
    standalone: Standalone | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise UserError(f"kind must be one of {KINDS}, got {self.kind!r}")

    def _in_head(self, name: str) -> bool:
        return any(
            matches(name, h) or any(matches(p, h) for p in _prefixes(name))
            for h in self.head_modules
        )

    def adaptable_layers(self) -> dict[str, tuple[int, int]]:
        """Every LoRA-adaptable layer outside the head: full name -> ``(d_in, d_out)``."""
        out: dict[str, tuple[int, int]] = {}
        for name, module in self.model.named_modules():
            if not name or is_peft_internal(name) or self._in_head(name):
                continue
            shape = layer_in_out(module)
            if shape is not None:
                out[name] = shape
        return out

    def target_names(self, target_modules: Sequence[str] | None = None) -> list[str]:
        """Full names of the layers ``target_modules`` selects, in module order.

        Args:
            target_modules: Names or ``.``-suffixes; default: the bundle's.

        Raises:
            UserError: A key matches no adaptable layer (the message lists the names).
        """
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
            if not any(matches(name, key) for name in layers):
                raise UserError(
                    f"target module {key!r} matches no adaptable layer of {self.name or 'the'} "
                    f"model; accepted: {', '.join(_short_names(layers))}"
                )
        return [name for name in layers if any(matches(name, k) for k in keys)]

    def layer_shapes(self, target_modules: Sequence[str] | None = None) -> list[tuple[int, int]]:
        """``(d_in, d_out)`` per adapted layer, in module order (default: the bundle's targets).

        LoRA A is d_in x r, B is r x d_out; for a 1x1 conv: in / out channels.
        """
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

    Args:
        bundle: The model.
        rank: LoRA rank.
        target_modules: The adapted layers (default: the bundle's targets).

    Returns:
        The limit, the smallest ``min(d_in, d_out)``.

    Raises:
        UserError: Naming ``rank``, the limit and the layer that sets it.
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
