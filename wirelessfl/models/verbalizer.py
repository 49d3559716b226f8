"""A verbalizer: a causal LM classifies by scoring one answer word per class with its LM head."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from wirelessfl.errors import UserError

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


def verbalizer_loss(
    answer_ids: Sequence[int],
) -> Callable[[torch.nn.Module, dict], tuple[torch.Tensor, torch.Tensor]]:
    """``loss_and_logits`` of a causal LM read through ``answer_ids``.

    For token ids ``x`` ``(B, L)`` right-padded with ``attention_mask`` ``(B, L)``, the logits
    ``(B, C)`` of class c are the next-token logits at the last real token of answer token
    ``answer_ids[c]``; the loss is their cross-entropy with ``y`` ``(B,)``: the LM's loss on
    the answer token renormalised over the allowed answers.
    """
    index = torch.tensor(list(answer_ids))

    def loss_and_logits(m: torch.nn.Module, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
        dev = next(m.parameters()).device
        ids = batch["x"].to(dev)
        mask = batch["attention_mask"].to(dev)
        last = mask.sum(dim=1) - 1  # right padding: the prompt's last real token
        out = m(input_ids=ids, attention_mask=mask)
        next_token = out.logits[torch.arange(ids.shape[0], device=dev), last]
        logits = next_token[:, index.to(dev)].float()
        return torch.nn.functional.cross_entropy(logits, batch["y"].to(dev)), logits

    return loss_and_logits
