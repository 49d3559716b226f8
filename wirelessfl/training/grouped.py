"""Per-client linear maps and convolutions over a client-major batch, as one kernel each.

The batch holds the samples of G clients, client-major, b per client: rows ``g*b .. (g+1)*b
- 1`` belong to client g. A linear layer views its input ``(G * b, ..., d_in)`` as ``(G, b *
..., d_in)`` and multiplies it by the client weights ``(G, d_out, d_in)`` with one
``torch.bmm`` / ``torch.baddbmm``; a convolution lays the batch out as ``(b, G * C, H, W)`` and
runs once with ``groups = G``. Each client's weights thus touch only its own samples, and
gradients reach each client's weights from its own samples only.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def grouped_linear(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    n_samples: int,
    where: str,
) -> torch.Tensor:
    """Per-client linear map of client-major samples.

    Args:
        x: ``(G * b, ..., d_in)``, the samples of client g at rows ``g*b .. (g+1)*b - 1``.
        weight: ``(G, d_out, d_in)``; ``bias``: ``(G, d_out)``, ``(d_out,)`` or ``None``.
        n_samples: ``G * b`` (checked against ``x.shape[0]``).
        where: the layer's name, for the error message.

    Returns:
        ``(G * b, ..., d_out)`` with ``y[rows of g] = x[rows of g] @ weight[g]^T + bias[g]``.
    """
    if x.shape[0] != n_samples:
        raise NotImplementedError(
            f"BatchedTrainer: layer {where!r} got an input of shape {tuple(x.shape)} whose first "
            f"dim is not the {n_samples} samples of the batch; only batch-first inputs can be "
            "grouped by client"
        )
    g = weight.shape[0]
    lead = x.shape[:-1]
    xg = x.reshape(g, -1, x.shape[-1])
    wt = weight.transpose(1, 2)
    if bias is None:
        y = torch.bmm(xg, wt)
    else:
        b = bias.unsqueeze(1) if bias.ndim == 2 else bias.expand(g, 1, -1)
        y = torch.baddbmm(b, xg, wt)
    return y.reshape(*lead, weight.shape[1])


def grouped_conv2d(
    x: torch.Tensor, weight: torch.Tensor, conv: nn.Conv2d, n_samples: int, where: str
) -> torch.Tensor:
    """Per-client 2-D convolution of client-major samples, as one grouped convolution.

    Args:
        x: ``(G * b, C, H, W)``, client g's samples at rows ``g*b .. (g+1)*b - 1``.
        weight: ``(G, C_out, C / groups, kh, kw)``: client g's kernel.
        conv: the layer whose stride, padding, dilation and groups apply.
        n_samples: ``G * b`` (checked against ``x.shape[0]``).
        where: the layer's name, for the error message.

    Returns:
        ``(G * b, C_out, H', W')``: client g's rows convolved with ``weight[g]``. The batch is
        laid out as ``(b, G * C, H, W)`` and convolved with ``groups = G * conv.groups``.
    """
    if x.ndim != 4 or x.shape[0] != n_samples:
        raise NotImplementedError(
            f"BatchedTrainer: conv layer {where!r} got an input of shape {tuple(x.shape)}; "
            f"expected (samples={n_samples}, C, H, W)"
        )
    g = weight.shape[0]
    b = n_samples // g
    xg = x.reshape(g, b, *x.shape[1:]).transpose(0, 1).reshape(b, -1, *x.shape[2:])
    w = weight.reshape(-1, *weight.shape[2:])
    y = F.conv2d(xg, w, None, conv.stride, conv.padding, conv.dilation, g * conv.groups)
    return y.reshape(b, g, -1, *y.shape[2:]).transpose(0, 1).reshape(n_samples, -1, *y.shape[2:])


def grouped_factor(
    module: nn.Module, x: torch.Tensor, weight: torch.Tensor, n_samples: int, where: str
) -> torch.Tensor:
    """A LoRA factor ``module`` (``nn.Linear`` or ``nn.Conv2d``, no bias) applied per client:
    :func:`grouped_linear` or :func:`grouped_conv2d` with the stacked ``weight (G, ...)``."""
    if isinstance(module, nn.Conv2d):
        return grouped_conv2d(x, weight, module, n_samples, where)
    return grouped_linear(x, weight, None, n_samples, where)
