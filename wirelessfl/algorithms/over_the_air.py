"""The server's estimate of the weighted sum of the clients' shared tensors received over the
air (``channel.uplink: aircomp``; docs/simulator.md, "Over-the-air aggregation").

Client k sends its weighted update w_k Delta_k as unit-power symbols x_k = w_k Delta_k / s,
with s the largest RMS of a client's weighted shared values (one number per client goes up
digitally, so s is common); the server receives sum_k c_k x_k + z / sqrt(eta) per value,
z ~ N(0, 1) (:class:`~wirelessfl.plans.AirRound`), and de-scales by s:

    theta <- theta + sum_k c_k w_k Delta_k + s z / sqrt(eta).

The signal part is the algorithm's own weighted sum (``add_updates`` with weights c_k w_k), so
every algorithm whose aggregate is a weighted sum of its messages (``CostModel.SINGLE_UPDATES``)
runs over the air unchanged; the noise falls on every value of every tensor the messages share.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from wirelessfl.algorithms.base import FederatedAlgorithm, State
from wirelessfl.algorithms.message import Message
from wirelessfl.plans import AirRound

__all__ = ["add_receiver_noise", "over_the_air_sum", "symbol_scale"]


@torch.no_grad()
def symbol_scale(messages: Sequence[Message], weights: Sequence[float]) -> float:
    """s = max_k |w_k| RMS(Delta_k): the common scale that makes every client's symbols at most
    unit power (RMS over all values of its shared tensors)."""
    scale = 0.0
    for message, w in zip(messages, weights, strict=True):
        values = list(message.shared.values())
        count = sum(v.numel() for v in values)
        if count:
            square = sum(float(v.double().square().sum()) for v in values)
            scale = max(scale, abs(float(w)) * math.sqrt(square / count))
    return scale


@torch.no_grad()
def add_receiver_noise(
    state: State, names: Sequence[str], std: float, generator: torch.Generator
) -> None:
    """``state[name] += std z`` in place, z ~ N(0, 1) per value, for ``names`` in order."""
    for name in names:
        value = state[name]
        noise = torch.randn(
            value.shape, generator=generator, device=value.device, dtype=value.dtype
        )
        value.add_(noise, alpha=std)


def over_the_air_sum(
    algorithm: FederatedAlgorithm,
    global_state: State,
    messages: dict[int, Message],
    weights: Sequence[float],
    air: AirRound,
    generator: torch.Generator,
) -> State:
    """The global state after the over-the-air sum of ``messages`` with the algorithm's
    ``weights`` (in the order of ``messages``): see the module docstring."""
    ids = list(messages)
    gains = [air.gain[c] for c in ids]
    scale = symbol_scale([messages[c] for c in ids], weights)
    received = [g * float(w) for g, w in zip(gains, weights, strict=True)]
    state = algorithm.add_updates(global_state, messages, received)
    shared = {name for c in ids for name in messages[c].shared}
    add_receiver_noise(
        state, [n for n in state if n in shared], scale / math.sqrt(air.denoising), generator
    )
    return state
