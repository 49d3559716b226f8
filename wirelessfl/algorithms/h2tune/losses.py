"""H2Tune's two client losses (§4.4): the shared loss of the alignment matrices (eq. (6)) and
the specific loss of the client's own factors A, B (eq. (7)).

From "H2Tune: Federated Foundation Model Fine-Tuning with Hybrid Heterogeneity" (Guo et al.,
arXiv 2507.22633). The paper writes a KL divergence between real matrices without defining
it; ``matrix_kl`` is the project's reading (row-wise softmax). All results are 0-dim tensors in
nats.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

__all__ = ["matrix_kl", "output_divergence", "shared_loss", "specific_loss"]


def _row_kl(logits_p: torch.Tensor, logits_q: torch.Tensor) -> torch.Tensor:
    """KL(softmax(p) || softmax(q)) over the last dimension, one value per row."""
    log_p = F.log_softmax(logits_p, dim=-1)
    log_q = F.log_softmax(logits_q, dim=-1)
    return (log_p.exp() * (log_p - log_q)).sum(dim=-1)


def matrix_kl(r_client: torch.Tensor, r_reference: torch.Tensor) -> torch.Tensor:
    """The KL term of eq. (6) between two ``(L, r, r)`` stacks of real matrices.

    Project reading: each row of each layer becomes a distribution by a softmax over its r
    entries; the term is sum_l sum_i KL(softmax(r_client[l, i]) || softmax(r_reference[l, i])).
    Zero iff every pair of rows is equal up to a per-row constant. Gradients flow into both
    arguments; detach the reference if it is a constant.
    """
    if r_client.shape != r_reference.shape or r_client.dim() != 3:
        raise ValueError(
            f"matrix_kl needs two (L, r, r) stacks of one shape, got {tuple(r_client.shape)} "
            f"and {tuple(r_reference.shape)}"
        )
    return _row_kl(r_client, r_reference).sum()


def output_divergence(logits_specific: torch.Tensor, logits_shared: torch.Tensor) -> torch.Tensor:
    """KL(y'' || y') of eq. (7): the batch mean of KL(softmax(logits_specific) ||
    softmax(logits_shared)) for ``(B, C)`` logits; ``logits_shared`` is a constant (detached)."""
    if logits_specific.shape != logits_shared.shape or logits_specific.dim() != 2:
        raise ValueError(
            f"output_divergence needs two (B, C) logits of one shape, got "
            f"{tuple(logits_specific.shape)} and {tuple(logits_shared.shape)}"
        )
    return _row_kl(logits_specific, logits_shared.detach()).mean()


def specific_loss(
    task_loss: torch.Tensor,
    logits_specific: torch.Tensor,
    logits_shared: torch.Tensor,
    factors: Sequence[torch.Tensor],
    *,
    kl_weight: float,
    kl_cap: float,
    l2: float,
) -> torch.Tensor:
    """Eq. (7): task_loss - kl_weight min(KL(y'' || y'), kl_cap) + (l2 / 2) sum_F ||F||_F^2.

    The paper's -KL term pushes the specific outputs away from the shared ones and is unbounded
    below, so it is capped at ``kl_cap`` nats (no gradient once capped) and weighted. The
    regulariser over ``factors`` (the client's A's and B's) is the squared Frobenius norm, as
    in the paper's G(R, H) (§5), not the unsquared norm printed in eq. (7).
    """
    if kl_weight < 0 or kl_cap < 0 or l2 < 0:
        raise ValueError(f"kl_weight, kl_cap and l2 must be >= 0, got {kl_weight}, {kl_cap}, {l2}")
    divergence = torch.clamp(output_divergence(logits_specific, logits_shared), max=kl_cap)
    loss = task_loss - kl_weight * divergence
    if factors and l2 > 0:
        loss = loss + 0.5 * l2 * sum(f.pow(2).sum() for f in factors)
    return loss


def shared_loss(
    task_loss: torch.Tensor,
    r_client: torch.Tensor,
    r_reference: torch.Tensor,
    *,
    kl_weight: float,
) -> torch.Tensor:
    """Eq. (6): task_loss + kl_weight matrix_kl(r_client, r_reference) (both ``(L, r, r)``)."""
    if kl_weight < 0:
        raise ValueError(f"kl_weight must be >= 0, got {kl_weight}")
    return task_loss + kl_weight * matrix_kl(r_client, r_reference)
