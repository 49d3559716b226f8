"""LoRA gradient preconditioning of FLoRAL's adaptors (App. D, eq. (36)), applied after
``backward()`` and before the optimizer step.

For one adaptor L_c = U_c V_c^T with gradients G_U, G_V (scaled GD, Tong et al. 2021):

    G_U <- G_U (V^T V + eps I)^-1,    G_V <- G_V (U^T U + eps I)^-1           (36)

so that, as eps -> 0, U V^T moves by -eta (P_U G + G P_V) whatever the factors' scales. A
convolution has no exact matrix form; each factor's gradient is divided by the Frobenius norm
of the other factor's r x r Gram matrix plus eps (App. D, "conv layers"). Bias adaptors, the
base weights and the router are not preconditioned.
"""

from __future__ import annotations

import torch

from wirelessfl.algorithms.floral.mixture_layers import MixtureConv2d, MixtureLinear

__all__ = ["precondition_gradients"]


def _linear(layer: MixtureLinear, eps: float) -> None:
    v_t, u = layer.adaptor_in, layer.adaptor_out  # (C, r, d_in) = V^T, (C, d_out, r) = U
    eye = eps * torch.eye(v_t.shape[1], device=v_t.device, dtype=v_t.dtype)
    # r x r inverses of the symmetric positive definite Grams (inv_ex: no error sync, and far
    # cheaper than a batched solve at these sizes)
    if u.grad is not None:  # G_U (V^T V + eps I)^-1
        gram_v = v_t.detach() @ v_t.detach().transpose(1, 2) + eye  # (C, r, r) = V^T V
        u.grad = u.grad @ torch.linalg.inv_ex(gram_v)[0]
    if v_t.grad is not None:  # G_V (U^T U + eps I)^-1, applied to G_V^T = v_t.grad
        gram_u = u.detach().transpose(1, 2) @ u.detach() + eye  # (C, r, r) = U^T U
        v_t.grad = torch.linalg.inv_ex(gram_u)[0] @ v_t.grad


def _conv(layer: MixtureConv2d, eps: float) -> None:
    v, u = layer.adaptor_in, layer.adaptor_out  # (C, r, c_in, 1, k), (C, c_out, r, k, 1)
    c, r = v.shape[:2]
    v_mat = v.detach().reshape(c, r, -1)  # (C, r, c_in k)
    u_mat = u.detach().transpose(1, 2).reshape(c, r, -1)  # (C, r, c_out k)
    if u.grad is not None:
        norm = torch.linalg.matrix_norm(v_mat @ v_mat.transpose(1, 2)) + eps  # (C,)
        u.grad = u.grad / norm.view(c, 1, 1, 1, 1)
    if v.grad is not None:
        norm = torch.linalg.matrix_norm(u_mat @ u_mat.transpose(1, 2)) + eps
        v.grad = v.grad / norm.view(c, 1, 1, 1, 1)


def precondition_gradients(layers: list[MixtureLinear | MixtureConv2d], eps: float) -> None:
    """Apply eq. (36) in place to every adaptor gradient of ``layers`` (``eps`` > 0)."""
    for layer in layers:
        if isinstance(layer, MixtureLinear):
            _linear(layer, eps)
        else:
            _conv(layer, eps)
