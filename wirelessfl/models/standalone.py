"""How a base model is rebuilt without wirelessfl: the source of an exported adapter's loader.

A family that can be rebuilt from torch, transformers and its own public package sets
``ModelBundle.standalone`` to a :class:`Standalone`: Python source that defines

- ``build_base(folder) -> nn.Module``: the base model's architecture (the same modules and
  parameter names as the bundle's model; a transformers family reads ``folder/config.json``),
- ``predict(model, batch) -> Tensor``: the logits ``(B, C)`` (predictions ``(B, d_y)`` for
  regression) of a batch as wirelessfl's data sets give it (a dict: ``x`` and, for text,
  ``attention_mask``), as the run's evaluation computes them.

``wirelessfl export`` writes the weights (the whole state dict, or ``saved_modules`` only) to
``base/model.safetensors`` and a ``load_exported.py`` made of this source
(:mod:`wirelessfl.learners.exported_loader`). Class and function sources are taken from the
modules that train with them (``inspect.getsource``), so the loader builds what the run built.
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "IMAGE_PREDICT",
    "TEXT_PREDICT",
    "Standalone",
    "build_base_source",
    "from_config_standalone",
    "sources",
    "verbalizer_predict",
]


@dataclass(frozen=True)
class Standalone:
    """A base model's rebuild without wirelessfl.

    Attributes:
        imports: Import lines the definitions need (besides ``torch``).
        definitions: Source defining ``build_base(folder)`` (and whatever it calls).
        predict: Source defining ``predict(model, batch)``.
        packages: pip distributions needed besides torch, peft and safetensors.
        config: A transformers config written to ``base/config.json`` (``None``: none).
        saved_modules: Modules whose weights are exported (``None``: the whole model; a hub
            model exports only what its hub checkpoint does not hold, the seeded head).
        base_model_name_or_path: What peft's ``adapter_config.json`` names as the base model
            (a hub id or an absolute folder; ``None`` for a model rebuilt from ``base/``).
    """

    imports: tuple[str, ...]
    definitions: str
    predict: str
    packages: tuple[str, ...] = ()
    config: Any = None
    saved_modules: tuple[str, ...] | None = None
    base_model_name_or_path: str | None = None


def sources(*objects: type | Callable[..., Any]) -> str:
    """The source of each class / function in ``objects``, two blank lines apart."""
    return "\n\n".join(textwrap.dedent(inspect.getsource(o)).rstrip() + "\n" for o in objects)


def build_base_source(*body: str) -> str:
    """``def build_base(folder)`` with the statements ``body`` (one per item)."""
    lines = "\n".join(f"    {line}" for line in body)
    return (
        "def build_base(folder):\n"
        '    """The base model\'s architecture; the export\'s weights are loaded into it."""\n'
        f"{lines}\n"
    )


#: ``predict`` of a model called as ``model(x)``: image classifiers and regressors.
IMAGE_PREDICT = '''def predict(model, batch):
    """Logits (B, C) (predictions (B, d_y) for regression) of batch["x"] (B, ...)."""
    out = model(batch["x"])
    return out.logits if hasattr(out, "logits") else out
'''

#: ``predict`` of a sequence classifier called with token ids and their attention mask.
TEXT_PREDICT = '''def predict(model, batch):
    """Logits (B, C) of token ids batch["x"] (B, L) with batch["attention_mask"] (B, L)."""
    out = model(input_ids=batch["x"], attention_mask=batch.get("attention_mask"))
    return out.logits if hasattr(out, "logits") else out
'''


def verbalizer_predict(answer_ids: Sequence[int]) -> str:
    """``predict`` of a causal LM read through a verbalizer with answer tokens ``answer_ids``
    (:func:`~wirelessfl.models.verbalizer.verbalizer_loss`)."""
    return f'''ANSWER_TOKEN_IDS = {[int(i) for i in answer_ids]}  # each class's first answer token


def predict(model, batch):
    """Logits (B, C): at the last real token of each right-padded prompt batch["x"] (B, L)
    (batch["attention_mask"] (B, L)), the next-token logits of the classes' answer tokens."""
    mask = batch["attention_mask"]
    last = mask.sum(dim=1) - 1
    logits = model(input_ids=batch["x"], attention_mask=mask).logits
    return logits[torch.arange(len(last)), last][:, ANSWER_TOKEN_IDS]
'''


def from_config_standalone(model: Any, auto_class: str, predict: str) -> Standalone:
    """A transformers model rebuilt by ``transformers.<auto_class>.from_config`` from its
    config (written to ``base/config.json``)."""
    return Standalone(
        imports=(f"from transformers import AutoConfig, {auto_class}",),
        definitions=build_base_source(
            f"return {auto_class}.from_config(AutoConfig.from_pretrained(folder))"
        ),
        predict=predict,
        packages=("transformers",),
        config=model.config,
    )
