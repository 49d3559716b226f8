"""The compression stage on real tensors: any algorithm's LoRA tensors, sparsified on the client
with error feedback (eqs. 4-7), their index spaces declared on the message.

An algorithm's :meth:`~wirelessfl.algorithms.base.FederatedAlgorithm.client_message` names the
LoRA tensors of its upload (:attr:`Message.lora`: per adapted layer the ``lora_A`` and
``lora_B`` entries of ``shared``, or ``lora_B`` alone, and which rank components of the
model they are); the learner then calls :func:`compress_message`, which

1. turns each layer's pair into the paper's orientation (theta_B = A^T (d, r_k), theta_A =
   B^T (r_k, l); a B-only layer has an empty theta_B (0, r_k)),
2. adds the client's error memory of those components (Algorithm 1, line 8), keeps
   round(O r_k (d + l)) values with the run's sparsifier (line 9), and stores the rest back in
   the memory (eqs. 4-5), held at the model rank so that a client whose rank or components
   change between rounds keeps each component's memory,
3. writes the sparse tensors back in place, each layer one index space of the message (whose
   :meth:`Message.payload` counts bits and index bits as for any message).

Without a stage (``sparsifier: none``) nothing changes and no memory is kept (a dense upload
leaves nothing unsent), unless the quantiser stage runs.

The quantiser stage (``quantize.bits``, :mod:`wirelessfl.algorithms.quantize_stage`) then
quantises each layer's sent values in place. The client's one error memory holds what it did not
deliver: with the sparsifier's error feedback the unsent values u - S(u), with the quantiser's
the residual S(u) - Q(S(u)), with both their sum u - Q(S(u)); the next update adds it before
sparsifying (line 8). ``message.diagnostics["sent_fraction"]`` records the values sent over
the dense count of the LoRA tensors. Randomness (the random sparsifier) comes from the
generator the caller passes, addressed by (seed, ``sparsify``, client, round).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import torch

from wirelessfl.algorithms.compression import Compression
from wirelessfl.algorithms.message import LoraTensors, Message
from wirelessfl.algorithms.quantization import NO_QUANTIZER, Quantizer
from wirelessfl.algorithms.quantize_stage import BITS, ERROR_SQ, SENT_SQ, quantize_pair
from wirelessfl.compress import CompressedUpdate, compress_update

__all__ = ["MEMORY", "STAGE_METRICS", "compress_message", "memory_norm", "stage_metrics"]

#: The private-state entry of a client's error memory: layer -> (m_B (d, r), m_A (r, l)) in the
#: paper's orientation at the model rank.
MEMORY = "memory"

Pair = tuple[torch.Tensor, torch.Tensor]


def _paper_pair(message: Message, group: LoraTensors) -> Pair:
    """(theta_B (d, r_k), theta_A (r_k, l)) of ``group`` from the message's peft tensors."""
    b = message.shared[group.b]
    rank = b.shape[1]
    theta_a = b.reshape(b.shape[0], rank).T
    if group.a is None:
        return b.new_zeros((0, rank)), theta_a
    return message.shared[group.a].reshape(rank, -1).T, theta_a


def _components(group: LoraTensors, rank: int, model_rank: int) -> list[int] | None:
    """The model components a pair of rank ``rank`` holds (``None``: all of them, in order)."""
    if group.components is not None:
        comps = list(group.components)
        return None if comps == list(range(model_rank)) else comps
    return None if rank == model_rank else list(range(rank))


def _gather(memory: Pair, comps: list[int] | None) -> Pair:
    m_b, m_a = memory
    return (m_b, m_a) if comps is None else (m_b[:, comps], m_a[comps, :])


def _scatter(old: Pair | None, new: Pair, comps: list[int] | None, model_rank: int) -> Pair:
    """``new`` memory of ``comps`` written into the model-rank memory ``old`` (zeros if none)."""
    if comps is None:
        return new
    b, a = new
    full_b = b.new_zeros((b.shape[0], model_rank)) if old is None else old[0].clone()
    full_a = a.new_zeros((model_rank, a.shape[1])) if old is None else old[1].clone()
    full_b[:, comps] = b
    full_a[comps, :] = a
    return full_b, full_a


def compress_message(
    message: Message,
    *,
    stage: Compression,
    ratio: float,
    model_rank: int,
    memory: Mapping[str, Pair] | None,
    generator: torch.Generator | None,
    fixed_ranks: Mapping[str, int] | None = None,
    quantizer: Quantizer = NO_QUANTIZER,
    quantize_generator: torch.Generator | None = None,
    bits_per_value: int | None = None,
) -> None:
    """Sparsify ``message``'s LoRA tensors in place (see the module docstring).

    Args:
        message: the client's upload; its :attr:`Message.lora` names the tensors.
        stage: the run's compression stage.
        ratio: O, the fraction of each layer's values sent (the client's plan).
        model_rank: r, the rank of the memory's components.
        fixed_ranks: layer -> its own rank r_l (``learner.rank_pattern``), the rank of that
            layer's memory instead of r (default: none).
        memory: the client's error memory from earlier rounds (``None``: none yet).
        generator: drives the random sparsifier.
        quantizer: the quantiser stage (default: none), at the plan's b.
        quantize_generator: drives the quantiser's rounding.
        bits_per_value: v, recorded as the message's b when the quantiser is off (default:
            not recorded).

    Sets ``message.private[MEMORY]`` (``None`` without error feedback: the entry is dropped)
    and ``message.diagnostics["sent_fraction"]``.
    """
    groups = list(message.lora)
    total = sum(message.shared[g.b].numel() + _numel(message, g.a) for g in groups)
    if groups and bits_per_value is not None:
        message.diagnostics[BITS] = quantizer.bits if quantizer.active else bits_per_value
    if not groups or not (stage.active or quantizer.active):
        message.diagnostics["sent_fraction"] = 1.0 if total else float("nan")
        for g in groups:
            tensors = {g.b: message.shared[g.b]} | ({g.a: message.shared[g.a]} if g.a else {})
            n = sum(int(t.numel()) for t in tensors.values())
            message.add_sparse(tensors, n_sent=n, n_total=n)
        return
    delta: dict[str, Pair] = {}
    comps: dict[str, list[int] | None] = {}
    full = {g.layer: (fixed_ranks or {}).get(g.layer, model_rank) for g in groups}
    for g in groups:
        delta[g.layer] = _paper_pair(message, g)
        comps[g.layer] = _components(g, delta[g.layer][1].shape[0], full[g.layer])
    sparse_feedback = stage.active and stage.error_feedback
    feedback = sparse_feedback or quantizer.error_feedback
    kept = None
    if feedback and memory:
        kept = {layer: _gather(memory[layer], comps[layer]) for layer in delta if layer in memory}
    factors = message.diagnostics.get("local_factors")
    sent = compress_update(  # Algorithm 1, lines 8-9; eqs. (4)-(5) for the memory
        delta,
        kept,
        sparsifier=stage.sparsifier,
        ratio=ratio if stage.active else 1.0,
        generator=generator,
        error_feedback=feedback,
        importance_from=factors if stage.importance == "factors" else None,
    )
    memory_out, scales = sent.memory, {}
    if quantizer.active:
        memory_out, scales = _quantize(
            message, sent, quantizer, quantize_generator, sparse_feedback
        )
    for g in groups:
        theta_b, theta_a = sent.sent[g.layer]
        counts = sent.counts[g.layer]
        b = message.shared[g.b]
        tensors = {g.b: theta_a.T.reshape(b.shape).contiguous()}
        if g.a is not None:
            a = message.shared[g.a]
            tensors[g.a] = theta_b.T.reshape(a.shape).contiguous()
        message.add_sparse(tensors, n_sent=counts.kept, n_total=counts.total)
        if quantizer.active:
            index, bits = len(message.sparse) - 1, int(quantizer.bits)
            message.quantized_space(index, {}, bits=bits, scales=scales[g.layer])
    new_memory = None
    if memory_out is not None:
        new_memory = {
            layer: _scatter(memory.get(layer) if memory else None, pair, comps[layer], full[layer])
            for layer, pair in memory_out.items()
        }
    message.private[MEMORY] = new_memory  # None (no error feedback) drops the entry
    message.diagnostics["sent_fraction"] = sent.ratio


def _quantize(
    message: Message,
    sent: CompressedUpdate,
    quantizer: Quantizer,
    generator: torch.Generator | None,
    sparse_feedback: bool,
) -> tuple[dict[str, Pair] | None, dict[str, int]]:
    """Quantise ``sent``'s pairs in place (:func:`quantize_pair`); the new memory (what was not
    delivered: the unsent values when ``sparse_feedback``, plus the quantisation residual with
    the quantiser's error feedback; ``None`` with neither) and each layer's scales."""
    scales, error_sq, sent_sq = {}, 0.0, 0.0
    memory = sent.memory if sparse_feedback else None
    residuals = {}
    for layer, pair in sent.sent.items():
        quantized, scales[layer], err, norm = quantize_pair(
            pair, sent.masks[layer], quantizer=quantizer, generator=generator
        )
        error_sq, sent_sq = error_sq + err, sent_sq + norm
        residuals[layer] = (pair[0] - quantized[0], pair[1] - quantized[1])
        sent.sent[layer] = quantized
    if quantizer.error_feedback:
        memory = {
            layer: res if memory is None else (memory[layer][0] + res[0], memory[layer][1] + res[1])
            for layer, res in residuals.items()
        }
    message.diagnostics.update({ERROR_SQ: error_sq, SENT_SQ: sent_sq})
    return memory, scales


def _numel(message: Message, name: str | None) -> int:
    return 0 if name is None else int(message.shared[name].numel())


def memory_norm(memories: Sequence[Mapping[str, Pair] | None]) -> float:
    """Mean over the given error memories of ||m||_F (all layers); NaN if there are none."""
    norms = [
        math.sqrt(sum(float(t.double().square().sum()) for pair in m.values() for t in pair))
        for m in memories
        if m is not None
    ]
    return float(np.mean(norms)) if norms else math.nan


#: The stage's round metrics (``algo.<name>`` columns of an algorithm whose message it takes).
STAGE_METRICS = {
    "sent_fraction": "values sent / dense values of the arrived LoRA updates (achieved O)",
    "memory_norm": "mean ||m||_F of the arrived clients' error memories after the round",
}


def stage_metrics(messages: Mapping[int, Message]) -> dict[str, float]:
    """``sent_fraction`` (mean over the arrived) and ``memory_norm`` of a round's messages."""
    ids = list(messages)
    fractions = [messages[c].diagnostics.get("sent_fraction", math.nan) for c in ids]
    return {
        "sent_fraction": sum(fractions) / len(fractions) if fractions else math.nan,
        "memory_norm": memory_norm([messages[c].private.get(MEMORY) for c in ids]),
    }
