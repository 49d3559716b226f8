"""Server side of FLoRAL's Algorithm 1: the base by N^k, component c by pi_c^k N^k.

    u   <- sum_k N^k u^k / sum_k N^k                                   (line 11)
    a_c <- sum_k pi_c^k N^k a_c^k / sum_k pi_c^k N^k                    (line 12, eq. (2))

over the arrived clients k, with pi^k = softmax(theta^k) (no noise, no floor). A component
whose weight sum_k pi_c^k N^k is below ``EMPTY_SHARE`` of sum_k N^k (no arrived client routes
to it, e.g. an oracle router's cluster that was not scheduled) keeps its previous value: the
weighted mean of ~zero weights would hand it another cluster's copy.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import torch

__all__ = ["EMPTY_SHARE", "component_weights", "mixture_average"]

#: Share of the arrived clients' N^k below which a component counts as not routed to.
EMPTY_SHARE = 1e-6


def component_weights(pis: torch.Tensor, sizes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """p-hat(k | c) of eq. (2) over the arrived clients, and which components were routed to.

    Args:
        pis: Mixture weights ``(K, C)``, rows on the simplex.
        sizes: N^k ``(K,)``.

    Returns:
        Weights ``(K, C)`` (each routed column sums to 1; an empty column is all zero) and a
        boolean ``(C,)``, True for the routed components.
    """
    joint = pis * sizes[:, None]  # pi_c^k N^k
    total = joint.sum(dim=0)  # (C,)
    routed = total > EMPTY_SHARE * sizes.sum()
    weights = torch.where(routed, joint / total.clamp_min(1e-300), torch.zeros_like(joint))
    return weights, routed


def mixture_average(
    previous: dict[str, torch.Tensor],
    states: Sequence[dict[str, torch.Tensor]],
    sizes: Sequence[float],
    pis: torch.Tensor | None,
    clustered: Collection[str],
) -> dict[str, torch.Tensor]:
    """The new global state from the arrived clients' trained ``states``.

    Args:
        previous: The global state before the round (names not in ``states[0]`` are kept, as
            are unrouted components).
        states: One dict per arrived client, holding the names it sent.
        sizes: N^k per arrived client.
        pis: Their mixture weights ``(K, C)``; ``None`` when no name is clustered.
        clustered: Names stacked over the components along dimension 0.
    """
    ref = next(iter(previous.values()))
    n = torch.as_tensor(list(sizes), dtype=torch.float64, device=ref.device)
    base_w = n / n.sum()
    comp_w, routed = (None, None) if pis is None else component_weights(pis.double(), n)
    out = dict(previous)
    for name in states[0]:
        stack = torch.stack([s[name] for s in states]).double()  # (K, ...)
        if name in clustered:
            assert comp_w is not None and routed is not None
            mean = torch.einsum("kc,kc...->c...", comp_w, stack)
            keep = routed.view(-1, *[1] * (stack.ndim - 2))
            out[name] = torch.where(keep, mean, previous[name].double()).to(previous[name].dtype)
        else:
            mean = torch.einsum("k,k...->...", base_w, stack)
            out[name] = mean.to(previous[name].dtype)
    return out
