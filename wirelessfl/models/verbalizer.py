"""A verbalizer: a causal LM classifies by scoring one answer word per class with its LM head."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import torch

from wirelessfl.errors import UserError
from wirelessfl.models.dtypes import float32_loss

__all__ = ["answer_token_ids", "verbalizer_loss"]


def answer_token_ids(tokenizer: Any, answers: Sequence[str], n_classes: int) -> list[int]:
    """The first token id of each answer word (one per class), checked distinct.

    Raises:
        UserError: one line when the count is not ``n_classes`` or two words share a token.
    """
    if isinstance(answers, str) or len(answers) != n_classes:
        raise UserError(f"answers: need one answer word per class ({n_classes}), got {answers}")
    ids = [tokenizer(str(word), add_special_tokens=False)["input_ids"][0] for word in answers]
    if len(set(ids)) != len(ids):
        raise UserError(f"answers: {list(answers)} share their first token; choose distinct words")
    return ids


def _forward_takes_logits_to_keep(m: torch.nn.Module) -> bool:
    """Whether the causal LM under ``m`` (a peft wrapper or the model) takes
    ``logits_to_keep`` (transformers' causal LMs do): then the LM head runs on the kept
    positions only."""
    base = m.get_base_model() if hasattr(m, "get_base_model") else m
    return _class_forward_takes_logits_to_keep(type(base))


@functools.cache
def _class_forward_takes_logits_to_keep(cls: type) -> bool:
    """The signature check of :func:`_forward_takes_logits_to_keep`, once per model class
    (it would otherwise run on every batch)."""
    return "logits_to_keep" in inspect.signature(cls.forward).parameters


def verbalizer_loss(
    answer_ids: Sequence[int],
) -> Callable[[torch.nn.Module, dict], tuple[torch.Tensor, torch.Tensor]]:
    """``loss_and_logits`` of a causal LM read through ``answer_ids``.

    For token ids ``x`` ``(B, L)`` right-padded with ``attention_mask`` ``(B, L)``, the logits
    ``(B, C)`` of class c are the next-token logits at the last real token of answer token
    ``answer_ids[c]``; the loss is their cross-entropy with ``y`` ``(B,)``: the LM's loss on
    the answer token renormalised over the allowed answers.

    Two savings that leave the logits unchanged (up to float rounding): the columns after the
    batch's longest prompt are dropped (with right padding and causal attention no real token
    sees them), and the LM head runs only at the batch's last-token positions
    (``logits_to_keep``), not at all ``L`` positions of a vocabulary-wide head.
    """
    index = torch.tensor(list(answer_ids))

    def loss_and_logits(m: torch.nn.Module, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
        dev = next(m.parameters()).device
        mask = batch["attention_mask"].to(dev)
        last = mask.sum(dim=1) - 1  # right padding: the prompt's last real token
        width = int(last.max()) + 1
        ids, mask = batch["x"].to(dev)[:, :width], mask[:, :width]
        rows = torch.arange(ids.shape[0], device=dev)
        if _forward_takes_logits_to_keep(m):
            keep = torch.unique(last)  # sorted positions whose next-token logits are needed
            out = m(input_ids=ids, attention_mask=mask, logits_to_keep=keep)
            next_token = out.logits[rows, torch.searchsorted(keep, last)]
        else:
            out = m(input_ids=ids, attention_mask=mask)
            next_token = out.logits[rows, last]
        return float32_loss(next_token[:, index.to(dev)], batch)

    return loss_and_logits
