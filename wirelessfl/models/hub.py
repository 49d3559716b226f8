"""``hub:<name-or-path>``: a transformers classifier, or a causal LM with a verbalizer.

For users with network access (e.g. ``hub:google/vit-base-patch16-224-in21k`` for the SOFT
paper's ViT-Base) or a local folder written by ``save_pretrained``. Image models load with
``AutoModelForImageClassification``, text models with
``AutoModelForSequenceClassification``. The head gets ``n_classes`` outputs: a checkpoint
head of that width is kept, any other is re-initialised from the seed
(``ignore_mismatched_sizes=True``). With ``answers=`` (one word per class) the model loads
with ``AutoModelForCausalLM`` and classifies by scoring those words with its LM head.
Weights load as float32 unless ``dtype=`` says ``bfloat16`` / ``float16``.

Offline by default: :func:`~wirelessfl.data.assets.offline_env` sets ``HF_HUB_OFFLINE=1``
unless the environment already says otherwise, so a hub id only downloads when the user set
``HF_HUB_OFFLINE=0``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import torch

from wirelessfl.data.assets import offline_env
from wirelessfl.errors import UserError
from wirelessfl.models.bundle import ModelBundle
from wirelessfl.models.dtypes import autocast_dtype, in_dtype, torch_dtype, under_autocast
from wirelessfl.models.layers import ATTENTION_TARGETS, detect_attention_targets
from wirelessfl.models.losses import image_loss_and_logits, text_loss_and_logits
from wirelessfl.models.rng import seeded
from wirelessfl.models.standalone import (
    IMAGE_PREDICT,
    TEXT_PREDICT,
    Standalone,
    build_base_source,
    verbalizer_predict,
)
from wirelessfl.models.verbalizer import answer_token_ids, verbalizer_loss

__all__ = ["build_hub", "DEFAULT_TARGETS"]

#: Default LoRA targets by ``config.model_type`` where peft's own table has none.
DEFAULT_TARGETS: dict[str, list[str]] = {
    "vit": ["query", "value"],
    "deit": ["query", "value"],
    "beit": ["query", "value"],
    "dinov2": ["query", "value"],
    "vit_msn": ["query", "value"],
    "swin": ["query", "value"],
    "bert": ["query", "value"],
    "roberta": ["query", "value"],
    "distilbert": ["q_lin", "v_lin"],
    "llama": ["q_proj", "v_proj"],
}

_HEAD_NAMES = ("classifier", "score", "head", "fc", "logits")


def _default_targets(model: torch.nn.Module, model_type: str) -> list[str] | None:
    """peft's table for ``model_type``, then :data:`DEFAULT_TARGETS`, kept only if the names
    exist in ``model`` (module names change between transformers versions); else whichever
    query / value naming the model uses."""
    try:
        from peft.utils import TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING as table
    except ImportError:  # pragma: no cover - older / newer peft
        table = {}
    candidates = [c for c in (table.get(model_type), DEFAULT_TARGETS.get(model_type)) if c]
    return detect_attention_targets(model, [*candidates, *ATTENTION_TARGETS])


def _standalone(
    spec: str,
    model: torch.nn.Module,
    auto_class: str,
    head_options: str,
    from_pretrained: dict[str, Any],
    saved_modules: Sequence[str],
    predict: str,
) -> Standalone:
    """The rebuild without wirelessfl: ``transformers.<auto_class>.from_pretrained`` of the
    same checkpoint (an absolute folder when ``spec`` is a local one) with the run's loader
    arguments; the export holds ``saved_modules`` (the head) only."""
    source = str(Path(spec).resolve()) if Path(spec).is_dir() else spec
    options = {k: v for k, v in from_pretrained.items() if v not in (None, False)}
    pad = getattr(model.config, "pad_token_id", None)
    body = [
        f"model = {auto_class}.from_pretrained(",
        f"    BASE_MODEL,{head_options} dtype=torch.float32, **FROM_PRETRAINED",
        ")",
    ]
    if pad is not None:
        body.append(f"model.config.pad_token_id = {int(pad)}  # as the run padded")
    return Standalone(
        imports=(f"from transformers import {auto_class}",),
        definitions=f"BASE_MODEL = {source!r}\nFROM_PRETRAINED = {options!r}\n\n\n"
        + build_base_source(*body, "return model"),
        predict=predict,
        packages=("transformers",),
        saved_modules=tuple(saved_modules),
        base_model_name_or_path=source,
    )


@contextlib.contextmanager
def _refused_loader_kwargs() -> Iterator[None]:
    """A ``from_pretrained`` that rejects a keyword argument -> one-line ``UserError``."""
    try:
        yield
    except TypeError as err:
        raise UserError(
            f"learner.model_options.loader_kwargs: from_pretrained refused them ({err})"
        ) from None


def build_hub(
    *,
    spec: str,
    n_classes: int,
    seed: int = 0,
    task: str | None = None,
    head_modules: Sequence[str] | None = None,
    answers: Sequence[str] | None = None,
    dtype: str = "float32",
    autocast: str | None = None,
    revision: str | None = None,
    trust_remote_code: bool = False,
    attn_implementation: str | None = None,
    cache_dir: str | None = None,
    loader_kwargs: dict[str, Any] | None = None,
) -> ModelBundle:
    """Load ``spec`` (hub id or local folder) as an image or text classifier, or as a causal LM
    read through a verbalizer.

    LoRA targets default to peft's table for ``config.model_type`` (or
    :data:`DEFAULT_TARGETS`) when those names exist in the model, else to the query / value
    projections found by name; otherwise pass ``target_modules=`` to ``build_model``.

    Args:
        spec: Hub model id or ``save_pretrained`` folder.
        n_classes: Head width; a checkpoint head of another width is re-initialised.
        seed: Seeds the re-initialised head.
        task: ``"image"``, ``"text"`` or ``"causal"``; default: ``"causal"`` when ``answers``
            is given, ``"image"`` when the config has ``num_channels`` (vision configs do),
            else ``"text"``.
        head_modules: Modules trained in full; default: the model's top-level
            ``classifier`` / ``score`` / ``head`` / ``fc`` (none for ``"causal"``).
        answers: ``"causal"``: one answer word per class; the LM head scores the first token
            of each (:func:`~wirelessfl.models.verbalizer.verbalizer_loss`), no new head.
        dtype: Weights' dtype: ``float32`` (default), ``bfloat16`` or ``float16``.
        autocast: ``bfloat16``: forward in mixed precision, float32 weights
            (:func:`~wirelessfl.models.dtypes.under_autocast`); default float32 throughout.
        revision, trust_remote_code, attn_implementation, cache_dir: Passed to
            ``from_pretrained`` (``trust_remote_code`` off by default).
        loader_kwargs: Any other keyword arguments of the model's ``from_pretrained``
            (e.g. ``low_cpu_mem_usage``, ``use_safetensors``, or config overrides such as
            ``output_attentions``), passed as given; one the loader refuses is one line.

    Returns:
        An ``"image"`` or ``"text"`` bundle.
    """
    offline_env()
    from transformers import (
        AutoConfig,
        AutoModelForCausalLM,
        AutoModelForImageClassification,
        AutoModelForSequenceClassification,
    )
    from transformers.utils import logging as hf_logging

    weights_dtype = torch_dtype(dtype)
    mixed = autocast_dtype(autocast)
    kwargs: dict[str, Any] = {
        "revision": revision,
        "trust_remote_code": trust_remote_code,
        "cache_dir": cache_dir,
    }
    config = AutoConfig.from_pretrained(spec, **kwargs)
    if attn_implementation is not None:
        kwargs["attn_implementation"] = attn_implementation
    if task is None:
        if answers is not None:
            task = "causal"
        else:
            task = "image" if getattr(config, "num_channels", None) is not None else "text"
    if task not in ("image", "text", "causal"):
        raise UserError(f"task={task!r} is not supported; accepted: image, text, causal")
    if (task == "causal") != (answers is not None):
        raise UserError("answers= and task='causal' go together (a verbalizer needs its words)")
    if task == "causal":
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(spec, **kwargs)
        answer_ids = answer_token_ids(tok, answers, n_classes)
        with seeded(seed), _refused_loader_kwargs():
            model = AutoModelForCausalLM.from_pretrained(
                spec, dtype=weights_dtype, **kwargs, **(loader_kwargs or {})
            )
        if getattr(model.config, "pad_token_id", None) is None:
            pad = tok.pad_token_id
            model.config.pad_token_id = tok.eos_token_id if pad is None else pad
        model.train()
        return ModelBundle(
            model=model,
            target_modules=_default_targets(model, config.model_type) or [],
            head_modules=list(head_modules or []),
            kind="text",
            loss_and_logits=under_autocast(verbalizer_loss(answer_ids), mixed),
            info={
                "source": spec,
                "model_type": config.model_type,
                "task": task,
                "dtype": dtype,
                "autocast": autocast,
                "answers": list(answers),
                "answer_token_ids": answer_ids,
            },
            standalone=_standalone(
                spec,
                model,
                "AutoModelForCausalLM",
                "",
                {**kwargs, "cache_dir": None, **(loader_kwargs or {})},
                head_modules or [],
                verbalizer_predict(answer_ids),
            ),
        )
    auto = (
        AutoModelForImageClassification if task == "image" else AutoModelForSequenceClassification
    )

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # the re-initialised head is expected
    try:
        with seeded(seed), _refused_loader_kwargs():
            model = auto.from_pretrained(
                spec,
                num_labels=n_classes,
                ignore_mismatched_sizes=True,
                dtype=weights_dtype,
                **kwargs,
                **(loader_kwargs or {}),
            )
    finally:
        hf_logging.set_verbosity(verbosity)
    if task == "text" and getattr(model.config, "pad_token_id", None) is None:
        eos = getattr(model.config, "eos_token_id", None)
        if eos is not None:
            model.config.pad_token_id = eos[0] if isinstance(eos, (list, tuple)) else eos

    if head_modules is None:
        children = dict(model.named_children())
        head_modules = [n for n in _HEAD_NAMES if n in children]
        if not head_modules:
            raise UserError(
                f"cannot find the classification head of {spec!r}; pass head_modules= from: "
                f"{', '.join(children)}"
            )
    model_type = getattr(config, "model_type", "")
    targets = _default_targets(model, model_type)
    if targets is None:
        targets = []  # no table entry: build_model asks for target_modules= and lists names
    model.train()
    loss_fn = image_loss_and_logits if task == "image" else text_loss_and_logits
    return ModelBundle(
        model=model,
        target_modules=targets,
        head_modules=list(head_modules),
        kind=task,
        loss_and_logits=under_autocast(in_dtype(loss_fn, weights_dtype), mixed),
        info={
            "source": spec,
            "model_type": model_type,
            "task": task,
            "dtype": dtype,
            "autocast": autocast,
        },
        standalone=_standalone(
            spec,
            model,
            auto.__name__,
            f" num_labels={n_classes}, ignore_mismatched_sizes=True,",
            {**kwargs, "cache_dir": None, **(loader_kwargs or {})},
            head_modules,
            IMAGE_PREDICT if task == "image" else TEXT_PREDICT,
        ),
    )
