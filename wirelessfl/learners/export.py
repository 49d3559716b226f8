"""``wirelessfl export RUN --out DIR``: a finished run's global adapter in peft's format.

What is written::

    DIR/global/          peft ``save_pretrained``: adapter_config.json, adapter_model.safetensors
                         (the LoRA factors and, when the run trained it, the task head as
                         peft ``modules_to_save``)
    DIR/base/            the frozen base model's weights (model.safetensors; config.json for a
                         transformers model); a hub model's seeded head only
    DIR/load_exported.py rebuilds the base model without wirelessfl (torch, transformers, the
                         model's own package), loads base/ and the adapter
                         (:mod:`wirelessfl.learners.exported_loader`); not for a plug-in model
                         without ``ModelBundle.standalone``
    DIR/base_model.json  the arguments of ``wirelessfl.models.build_model`` that rebuild the
                         frozen base model the adapter belongs to (with
                         ``learner.model_options``)
    DIR/README.md        the model card: base model, the run's scenario, final metrics, loading

The adapter is written at the rank of the run's global state with the run's LoRA settings
(``lora_alpha``, ``use_rslora``, ``lora_dropout``, ``lora_bias``, ``modules_to_save``), so
peft scales it by alpha / r (alpha / sqrt(r) with rsLoRA) exactly as the run's evaluation did
(``Runtime.evaluate`` scales a state of rank r the same way):
``PeftModel.from_pretrained(base, DIR/global)`` gives the logits of the run's final evaluation.

Only algorithms whose global state is the runtime's peft trainables are exported: those whose
class says so (:attr:`~wirelessfl.algorithms.base.FederatedAlgorithm.EXPORTABLE`, true by
default: the runtime's peft model, evaluated by the runtime). Their clients' private state
(error-feedback memory, optimizer moments) is not part of any client's model, so there is no
per-client adapter to write. Other algorithms (FedStack's merged base weights, FLoRAL's and its
baselines' mixtures and routers, H2Tune's matrices) are refused with one line.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from pathlib import Path
from typing import Any

from wirelessfl.errors import UserError, folder_problem, held_names, short_path
from wirelessfl.learners.exported_loader import (
    BASE_FOLDER,
    LOADER,
    loader_source,
    requirements,
    write_base,
)
from wirelessfl.registries import ALGORITHMS
from wirelessfl.results.files import file_sha256
from wirelessfl.results.folder_lock import FolderLock
from wirelessfl.results.run_folder import (
    CONFIG,
    META,
    Checkpoint,
    find_checkpoint,
    run_again,
)

__all__ = ["BASE_MODEL", "exportable_algorithms", "export_run"]

#: The file naming ``build_model``'s arguments for the base model.
BASE_MODEL = "base_model.json"


def exportable_algorithms() -> list[str]:
    """Registry names of the algorithms whose global state is the runtime's peft adapter."""
    from wirelessfl.algorithms import algorithm_class

    return [name for name in ALGORITHMS.names() if algorithm_class(name).EXPORTABLE]


def export_run(run: str | Path, out: str | Path) -> Path:
    """Write the finished run ``run``'s global adapter, base-model recipe and card to ``out``.

    Raises:
        UserError: one line when ``run`` is not a finished real-training run of an exportable
            algorithm, or ``out`` is not a new or empty folder.

    Returns:
        ``out`` as a path.
    """
    run, out = Path(run), Path(out)
    # no run may write the folder while it is read
    with FolderLock(run, what="export") if run.is_dir() else contextlib.nullcontext():
        scenario, checkpoint = _finished_run(run)
        values = _global_state(run, checkpoint)
    from wirelessfl.training.lora_state import PEFT_PREFIX
    from wirelessfl.training.runtime import Runtime

    # on the CPU in float32 (a bf16 / fp16 run's values load into it; base_model.json keeps dtype)
    options = {k: v for k, v in scenario.learner.model_options.items() if k != "dtype"}
    learner = dataclasses.replace(scenario.learner, device="cpu", model_options=options)
    cpu = dataclasses.replace(scenario, learner=learner)
    runtime = Runtime(cpu)
    # the run's rank: that of the layers learner.rank_pattern leaves to the controller
    free = [
        v
        for k, v in values.items()
        if ".lora_A." in k
        and k.removeprefix(PEFT_PREFIX).split(".lora_A.")[0] not in runtime.fixed_ranks
    ]
    rank = max((int(v.shape[0]) for v in free), default=0)
    if rank:
        runtime.start(rank=rank, seed=scenario.seed)
    held = {k: tuple(v.shape) for k, v in values.items()}
    if not rank or held != {k: tuple(p.shape) for k, p in runtime.state.params.items()}:
        raise UserError(
            f"export: the global state of {short_path(run)} does not match the peft model of "
            "its scenario; it cannot be exported as an adapter"
        )
    runtime.state.load(values)
    base = {
        "name": scenario.learner.model,
        "n_classes": runtime.data.n_classes,
        "seed": scenario.seed,
        "target_modules": scenario.learner.target_modules,
        **dict(scenario.learner.model_options),
    }
    from wirelessfl.learners.model_card import model_card
    from wirelessfl.models import build_model

    # the base model as the run built it, before peft wrapped it (its weights go to base/)
    bundle = build_model(**{k: v for k, v in base.items() if k != "dtype"})
    standalone = bundle.standalone
    loader = None if standalone is None else loader_source(standalone, run.name)
    card = model_card(
        run,
        base,
        rank=rank,
        lora_alpha=scenario.learner.lora_alpha,
        trains_head=runtime.trains_head,
        use_rslora=scenario.learner.use_rslora,
        loader=loader,
        requirements=None if standalone is None else requirements(standalone),
    )
    _check_out(out)  # created only once everything is read and checked
    # a hub model's id or folder; None for a base rebuilt from base/ (not a hub checkpoint)
    named = None if standalone is None else standalone.base_model_name_or_path
    runtime.model.peft_config["default"].base_model_name_or_path = named
    runtime.model.save_pretrained(out / "global")
    (out / BASE_MODEL).write_text(json.dumps(base, indent=1) + "\n", encoding="utf-8")
    if standalone is not None:
        write_base(bundle.model, standalone, out / BASE_FOLDER)
        (out / LOADER).write_text(loader, encoding="utf-8")
    (out / "README.md").write_text(card, encoding="utf-8")
    return out


def _global_state(run: Path, checkpoint: Checkpoint) -> dict[str, Any]:
    """The global state (name -> tensor, on the CPU) in the learner file of ``run``'s
    ``checkpoint``, checked against the checkpoint's record of it."""
    import torch

    from wirelessfl.learners.federated import CHECKPOINT

    path = checkpoint.folder / CHECKPOINT
    if not path.is_file() or file_sha256(path) != checkpoint.files.get(CHECKPOINT):
        raise UserError(
            f"export: {short_path(path)} is missing or damaged (it differs from the checkpoint's "
            f"record); {run_again(run)}"
        )
    try:
        return dict(torch.load(path, map_location="cpu", weights_only=True)["global"])
    except Exception as err:  # noqa: BLE001 - a checkpoint of another version: one line
        raise UserError(
            f"export: {short_path(path)} cannot be read ({type(err).__name__}: written by "
            "another version of wirelessfl?)"
        ) from None


def _finished_run(run: Path) -> tuple[Any, Checkpoint]:
    """The scenario and current checkpoint of the finished run in ``run``."""
    from wirelessfl.config import load_scenario

    problem = folder_problem(run)
    if problem:
        raise UserError(f"export: {problem}")
    shown = short_path(run)
    if not (run / CONFIG).is_file():
        raise UserError(f"export: {shown} is not a run folder (no {CONFIG}); give a run's --out")
    try:
        finished = bool(json.loads((run / META).read_text(encoding="utf-8")).get("finished"))
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        raise UserError(f"export: {shown}/{META} is missing or damaged") from None
    if not finished:
        raise UserError(
            f"export: the run in {shown} has not finished; finish it with "
            f"`wirelessfl run --resume {shown}`, then export it"
        )
    scenario = load_scenario(run / CONFIG)
    if scenario.learner.kind != "lora":
        raise UserError(
            f"export: {shown} is a learner.kind = {scenario.learner.kind} run; only real "
            "training (learner.kind = lora) has an adapter to export"
        )
    name = scenario.algorithm.name
    supported = exportable_algorithms()
    if name not in supported:
        raise UserError(
            f"export: algorithm {name!r} keeps a global state that is not a peft LoRA adapter "
            f"of the run's model; export supports {', '.join(supported)}"
        )
    checkpoint = find_checkpoint(run)
    if checkpoint is None or checkpoint.next_round != scenario.rounds:
        raise UserError(f"export: {shown} has no checkpoint of its last round; {run_again(run)}")
    return scenario, checkpoint


def _check_out(out: Path) -> None:
    """``out`` must be a new or empty folder (created here)."""
    problem = folder_problem(out)
    if problem:
        raise UserError(f"--out: {problem}")
    if out.is_dir() and held_names(out):
        raise UserError(
            f"--out: {short_path(out)} is not empty (it holds {held_names(out)}); "
            "give a folder that is new or empty"
        )
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UserError(f"--out: cannot create {short_path(out)}: {err.strerror or err}") from None
