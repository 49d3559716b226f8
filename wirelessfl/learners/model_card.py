"""The model card (``README.md``) of an exported adapter: base model, results, scenario, loading."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

#: rounds-table columns shown in the card, with their labels
_SHOWN = {
    "accuracy": "test accuracy",
    "test_loss": "test loss",
    "loss": "training loss (last round, p_k-weighted)",
    "t_end_s": "virtual time [s]",
}


def model_card(
    run: Path,
    base: dict[str, Any],
    *,
    rank: int,
    lora_alpha: float,
    trains_head: bool,
    use_rslora: bool = False,
    loader: str | None = None,
    requirements: list[str] | None = None,
) -> str:
    """Markdown for the exported run ``run`` whose base model is ``build_model(**base)``; its
    adapter has rank ``rank`` and ``lora_alpha`` (scaled by alpha / sqrt(r) if
    ``use_rslora``), and holds the task head if ``trains_head``; ``loader`` is the text of
    ``load_exported.py`` (which needs the pip distributions ``requirements``), ``None`` for a
    model that only wirelessfl rebuilds."""
    from wirelessfl.results import load

    result = load(run)
    rounds = result.rounds
    evaluated = rounds.dropna(subset=["accuracy", "test_loss"], how="all")
    last = evaluated.iloc[-1] if len(evaluated) else rounds.iloc[-1]
    rows = [f"| rounds run | {len(rounds)} |", f"| evaluated at round | {int(last['round'])} |"]
    for column, label in _SHOWN.items():
        value = float(rounds.iloc[-1][column] if column in ("loss", "t_end_s") else last[column])
        rows.append(f"| {label} | {'n/a' if math.isnan(value) else f'{value:.6g}'} |")
    rows.append(f"| uplink [MB] | {float(rounds['bits_up'].sum()) / 8e6:.6g} |")
    scenario = (run / "config.yaml").read_text(encoding="utf-8").rstrip()
    name = result.config.get("name", run.name)
    algorithm = result.config.get("algorithm", {}).get("name", "soft")
    head = (
        "The task head the run trained is in it as peft `modules_to_save`."
        if trains_head
        else "The run kept the task head at its seeded initialisation (`learner.head: "
        "frozen`), so it comes with the base model."
    )
    scaling = (
        f"rsLoRA scaling alpha / sqrt(r) = {lora_alpha / math.sqrt(rank):g}"
        if use_rslora
        else f"scaling alpha / r = {lora_alpha / rank:g}"
    )
    without = _standalone_loading(loader, requirements)
    return f"""# {name}: federated LoRA adapter (wirelessfl)

LoRA adapter of `{base["name"]}` trained by federated fine-tuning with algorithm `{algorithm}`
over a simulated wireless network (wirelessfl run `{run.name}`): rank {rank}, lora_alpha
{lora_alpha:g} ({scaling}). `global/` is peft's
`save_pretrained` output. {head}

## Results

| metric | value |
| --- | --- |
{chr(10).join(rows)}

## Loading

{without}The base model is also rebuilt by wirelessfl (`pip install "wirelessfl[train]"`) from the
arguments in `base_model.json` (its random initialisations come from the seed, so it is the
run's base):

```python
import json
from peft import PeftModel
from wirelessfl.models import build_model

base = build_model(**json.load(open("base_model.json")))  # a ModelBundle
model = PeftModel.from_pretrained(base.model, "global").eval()
# inputs as wirelessfl's data sets give them: loss, logits = base.loss_and_logits(model, batch)
```

## Scenario

The run's resolved scenario (`config.yaml`):

```yaml
{scenario}
```
"""


def _standalone_loading(loader: str | None, requirements: list[str] | None) -> str:
    """The card's paragraph on loading without wirelessfl (empty when there is no loader)."""
    if loader is None:
        return (
            "This base model is not one that can be rebuilt without wirelessfl (a plug-in "
            "model), so there is no `load_exported.py`.\n\n"
        )
    return f"""Without wirelessfl: `pip install {" ".join(requirements or [])}`, then in this folder
`load_exported.py` (below, exactly as saved here) rebuilds the base model, loads its weights
from `base/` and puts the adapter in `global/` on it with `PeftModel.from_pretrained`:

```python
{loader.rstrip()}
```

"""
