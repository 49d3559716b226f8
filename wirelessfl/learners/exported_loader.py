"""The files of an exported adapter that load it without wirelessfl: ``base/`` and
``load_exported.py``.

``base/model.safetensors`` holds the base model's weights as the run built them (the whole
state dict: pretrained weights, the 1x1 convs wirelessfl swapped, the seeded task head; for a
hub model only the seeded head, the rest comes from the hub checkpoint), ``base/config.json``
a transformers family's config. ``load_exported.py`` rebuilds the architecture with torch,
transformers and the model's own public package (the family's
:class:`~wirelessfl.models.standalone.Standalone`), loads those weights and puts the adapter
(``global/``) on with ``PeftModel.from_pretrained``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from wirelessfl.models.standalone import Standalone

if TYPE_CHECKING:
    from torch import nn

__all__ = ["BASE_FOLDER", "LOADER", "loader_source", "requirements", "write_base"]

#: The folder holding the base model's weights (and config).
BASE_FOLDER = "base"
#: The loader's file name.
LOADER = "load_exported.py"
#: What every loader imports (besides the family's imports).
_COMMON = (
    "import torch",
    "from peft import PeftModel",
    "from safetensors.torch import load_model as load_weights",
)


def requirements(standalone: Standalone) -> list[str]:
    """The pip distributions the loader needs."""
    return ["torch", "peft", "safetensors", *standalone.packages]


def write_base(model: nn.Module, standalone: Standalone, folder: Path) -> None:
    """Write ``model``'s weights (``standalone.saved_modules`` only, when given) and config to
    ``folder`` (created)."""
    from safetensors.torch import save_file, save_model

    folder.mkdir(parents=True)
    path = folder / "model.safetensors"
    if standalone.saved_modules is None:
        save_model(model, str(path))  # tied weights once (load_model ties them back)
    else:
        keep = tuple(f"{name}." for name in standalone.saved_modules)
        state = model.state_dict()
        save_file({k: v.contiguous() for k, v in state.items() if k.startswith(keep)}, str(path))
    if standalone.config is not None:
        standalone.config.save_pretrained(str(folder))


def loader_source(standalone: Standalone, run_name: str) -> str:
    """The text of ``load_exported.py`` for a base model rebuilt by ``standalone``."""
    lines = dict.fromkeys([*_COMMON, *standalone.imports])
    imports = "\n".join(sorted(lines, key=lambda line: (line.split()[1], line.startswith("from"))))
    strict = standalone.saved_modules is None
    weights = (
        "the whole base model"
        if strict
        else f"{', '.join(standalone.saved_modules) or 'nothing'} (the rest: BASE_MODEL)"
    )
    return f'''"""Loads run `{run_name}`'s adapter (`wirelessfl export`) without wirelessfl.

Needs `pip install {" ".join(requirements(standalone))}`. In this folder:

    from load_exported import load_model, predict
    model = load_model()  # base model + adapter, eval mode
    with torch.no_grad():
        logits = predict(model, batch)  # batch: {{"x": ..., "attention_mask": ...}} as the run's
"""

from __future__ import annotations

from pathlib import Path

{imports}

HERE = Path(__file__).resolve().parent


{standalone.definitions.rstrip()}


{standalone.predict.rstrip()}


def load_model(folder=HERE):
    """The exported model in eval mode: build_base, the weights of folder / "{BASE_FOLDER}"
    ({weights}), then the adapter in folder / "global"."""
    base = build_base(folder / "{BASE_FOLDER}")
    load_weights(base, str(folder / "{BASE_FOLDER}" / "model.safetensors"), strict={strict})
    return PeftModel.from_pretrained(base, str(folder / "global")).eval()
'''
