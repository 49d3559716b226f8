"""FLoRAL's mixture-of-adaptors layers: C low-rank adaptors mixed by a client's router.

From "Collaborative and Efficient Personalization with Mixtures of Adaptors" (Almansoori,
Horváth, Takáč, arXiv 2410.03497). A layer with base weight W and bias b becomes, for a client
whose mixture weights are pi (C,),

    W~ = W + sum_c pi_c U_c V_c^T,    b~ = b + sum_c pi_c L_{b,c}          (eq. (1), §3.2)

i.e. the *products* are mixed, not the factors (the project's reading, ``docs/algorithms/
floral.md``), which equals mixing the adaptors' outputs: one forward pass per batch. There is
no alpha / r scale (the paper's adaptors are plain products). Initialisation: the input-side
factor V^T is Uniform(+-sqrt(6 / d_in)), the output-side factor U and the bias adaptors are
zero, so every adaptor starts at L_c = 0.

Rank from the relative budget rho per adaptor: (m + n) r <= rho m n, so
r = max(1, floor(rho m n / (m + n))) (§3.2) with m, n = d_out, d_in; for a k x k conv
m, n = c_out k, c_in k ("Balanced 2D", eq. (40), r_f = 1): the input-side conv is c_in -> r
with kernel (1, k) and the base conv's width-axis stride, padding and dilation; the output-side
conv is r -> c_out with kernel (k, 1) and the base's height-axis settings; parameters
(c_in k + c_out k) r per adaptor.

Storage: every adaptor tensor is stacked over the clusters (leading dimension C), so the
server aggregates adaptor c by slicing dimension 0.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["ADAPTOR_SUFFIXES", "MixtureConv2d", "MixtureLinear", "MixingWeights"]

#: Parameter-name suffixes of the stacked adaptor tensors (leading dimension: the cluster).
ADAPTOR_SUFFIXES = (".adaptor_in", ".adaptor_out", ".adaptor_bias")


class MixingWeights:
    """The mixture weights every mixture layer of one model reads in its forward.

    ``pi`` is a ``(C,)`` tensor set by the model before each forward (the client's router
    output); the layers hold a reference to this one object.
    """

    def __init__(self, n_adaptors: int) -> None:
        self.n_adaptors = n_adaptors
        self.pi: torch.Tensor | None = None

    def current(self) -> torch.Tensor:
        """The weights of the forward in progress (an error if none were set)."""
        if self.pi is None:
            raise RuntimeError("mixture weights are not set: call the model through its router")
        return self.pi


def _uniform_in(shape: tuple[int, ...], fan_in: int) -> torch.Tensor:
    bound = math.sqrt(6.0 / fan_in)
    return torch.empty(shape).uniform_(-bound, bound)


class MixtureLinear(nn.Module):
    """``base(x) + sum_c pi_c (U_c V_c^T x + L_{b,c})`` for an ``nn.Linear`` base.

    Parameters: ``adaptor_in`` (C, r, d_in) = V_c^T, ``adaptor_out`` (C, d_out, r) = U_c,
    ``adaptor_bias`` (C, d_out) when bias adaptors are on.
    """

    def __init__(
        self, base: nn.Linear, weights: MixingWeights, *, rank: int, bias_adaptors: bool
    ) -> None:
        super().__init__()
        self.base = base
        self.weights = weights
        c, d_in, d_out = weights.n_adaptors, base.in_features, base.out_features
        self.rank = rank
        self.adaptor_in = nn.Parameter(_uniform_in((c, rank, d_in), d_in))
        self.adaptor_out = nn.Parameter(torch.zeros(c, d_out, rank))
        self.adaptor_bias = nn.Parameter(torch.zeros(c, d_out)) if bias_adaptors else None

    def adaptor_values(self) -> int:
        """Values of one adaptor (its factors and bias): (d_in + d_out) r (+ d_out)."""
        per = self.adaptor_in[0].numel() + self.adaptor_out[0].numel()
        return per + (0 if self.adaptor_bias is None else self.adaptor_bias.shape[1])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pi = self.weights.current()
        c, r, d_in = self.adaptor_in.shape
        h = x @ self.adaptor_in.reshape(c * r, d_in).T  # (..., C r): V_c^T x for every c
        h = h * pi.repeat_interleave(r)  # pi_c V_c^T x
        up = self.adaptor_out.permute(1, 0, 2).reshape(-1, c * r)  # (d_out, C r): [U_1 .. U_C]
        out = self.base(x) + h @ up.T
        if self.adaptor_bias is not None:
            out = out + pi @ self.adaptor_bias
        return out


class MixtureConv2d(nn.Module):
    """``base(x) + sum_c pi_c (U_c * (V_c * x) + L_{b,c})`` for an ``nn.Conv2d`` base, with
    Balanced-2D factors (eq. (40)): V_c a (1, k_w) conv c_in -> r, U_c a (k_h, 1) conv
    r -> c_out.

    Parameters: ``adaptor_in`` (C, r, c_in, 1, k_w), ``adaptor_out`` (C, c_out, r, k_h, 1),
    ``adaptor_bias`` (C, c_out) when bias adaptors are on. The base must have ``groups == 1``
    and integer zero padding.
    """

    def __init__(
        self, base: nn.Conv2d, weights: MixingWeights, *, rank: int, bias_adaptors: bool
    ) -> None:
        super().__init__()
        if base.groups != 1 or isinstance(base.padding, str) or base.padding_mode != "zeros":
            raise ValueError(
                "Balanced-2D adaptors need groups == 1 and integer zero padding (padding_mode "
                "'zeros')"
            )
        self.base = base
        self.weights = weights
        c = weights.n_adaptors
        k_h, k_w = base.kernel_size
        self.rank = rank
        self.adaptor_in = nn.Parameter(
            _uniform_in((c, rank, base.in_channels, 1, k_w), base.in_channels * k_w)
        )
        self.adaptor_out = nn.Parameter(torch.zeros(c, base.out_channels, rank, k_h, 1))
        self.adaptor_bias = (
            nn.Parameter(torch.zeros(c, base.out_channels)) if bias_adaptors else None
        )

    def adaptor_values(self) -> int:
        """Values of one adaptor: (c_in k_w + c_out k_h) r (+ c_out)."""
        per = self.adaptor_in[0].numel() + self.adaptor_out[0].numel()
        return per + (0 if self.adaptor_bias is None else self.adaptor_bias.shape[1])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pi = self.weights.current()
        b = self.base
        c, r = self.adaptor_in.shape[:2]
        w_in = self.adaptor_in.reshape(c * r, *self.adaptor_in.shape[2:])
        h = F.conv2d(  # every V_c at once: (B, C r, H', W'), width-axis settings of the base
            x,
            w_in,
            stride=(1, b.stride[1]),
            padding=(0, b.padding[1]),
            dilation=(1, b.dilation[1]),
        )
        h = h * pi.repeat_interleave(r).view(1, -1, 1, 1)
        w_out = self.adaptor_out.permute(1, 0, 2, 3, 4).reshape(b.out_channels, c * r, -1, 1)
        mixed = F.conv2d(  # sum_c U_c * (pi_c h_c), height-axis settings of the base
            h,
            w_out,
            stride=(b.stride[0], 1),
            padding=(b.padding[0], 0),
            dilation=(b.dilation[0], 1),
        )
        out = b(x) + mixed
        if self.adaptor_bias is not None:
            out = out + (pi @ self.adaptor_bias).view(1, -1, 1, 1)
        return out
