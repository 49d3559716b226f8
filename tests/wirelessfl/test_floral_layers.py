"""FLoRAL's building blocks (Almansoori, Horváth, Takáč, arXiv 2410.03497) against closed forms
and independent computations: the router (softmax, floor, noise), the mixture of adaptor
*products* on linear and Balanced-2D conv layers (eqs. (1), (40)), the rank rule and the
paper's adaptor counts (§3.2, App.), the eq. (36) preconditioning, Algorithm 1's aggregation
(lines 11-12, eq. (2)), and the routing scores."""

from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from wirelessfl.algorithms.floral.cost import adaptor_rank, conv_adaptor_rank  # noqa: E402
from wirelessfl.algorithms.floral.lora_precondition import precondition_gradients  # noqa: E402
from wirelessfl.algorithms.floral.mixture_aggregation import component_weights, mixture_average  # noqa: E402
from wirelessfl.algorithms.floral.mixture_layers import (  # noqa: E402
    MixingWeights,
    MixtureConv2d,
    MixtureLinear,
)
from wirelessfl.algorithms.floral.mixture_model import MixtureModel, router_weights  # noqa: E402
from wirelessfl.algorithms.floral.routing import aggregation_mismatch, routing_accuracy  # noqa: E402
from wirelessfl.models import build_model  # noqa: E402

pytestmark = [pytest.mark.train, pytest.mark.usefixtures("one_torch_thread")]


def _randomise(layer: nn.Module, seed: int, scale: float = 0.5) -> None:
    """Non-zero random values in every adaptor tensor (U and the bias adaptors start at 0)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name in ("adaptor_in", "adaptor_out", "adaptor_bias"):
            p = getattr(layer, name)
            if p is not None:
                p.copy_(scale * torch.randn(p.shape, generator=g))


# ---- 1. the router ------------------------------------------------------------------------------
def test_router_is_a_distribution_without_floor_and_clamped_without_renormalising():
    theta = torch.tensor([3.0, -4.0, 0.5, -6.0, 1.0])
    e = np.exp(theta.double().numpy())
    softmax = e / e.sum()
    pi = router_weights(theta)
    assert (pi >= 0).all()
    assert float(pi.sum()) == pytest.approx(1.0, abs=1e-6)
    np.testing.assert_allclose(pi.numpy(), softmax, rtol=1e-6)
    assert softmax.min() < 0.01  # the floor below is active on some entries
    floored = router_weights(theta, floor=0.01)
    np.testing.assert_allclose(floored.numpy(), np.maximum(softmax, 0.01), rtol=1e-6)
    assert (floored >= 0.01).all()
    assert float(floored.sum()) > 1.0 + 1e-3  # not renormalised


def test_router_noise_comes_from_the_generator():
    theta = torch.tensor([0.2, -0.1, 0.7])
    a = router_weights(theta, noise=1.0, floor=0.01, generator=torch.Generator().manual_seed(5))
    b = router_weights(theta, noise=1.0, floor=0.01, generator=torch.Generator().manual_seed(5))
    c = router_weights(theta, noise=1.0, floor=0.01, generator=torch.Generator().manual_seed(6))
    assert torch.equal(a, b) and not torch.equal(a, c)
    # pi = max(softmax(theta + w u), floor), u ~ U[0, 1)^C drawn by torch.rand from the generator
    u = torch.rand(3, generator=torch.Generator().manual_seed(5)).double()
    logits = theta.double() + 1.0 * u
    want = np.maximum(np.exp(logits.numpy()) / np.exp(logits.numpy()).sum(), 0.01)
    np.testing.assert_allclose(a.numpy(), want, rtol=1e-6)
    wide = router_weights(theta, noise=3.0, generator=torch.Generator().manual_seed(5))
    logits = theta.double() + 3.0 * u
    np.testing.assert_allclose(
        wide.numpy(), np.exp(logits.numpy()) / np.exp(logits.numpy()).sum(), rtol=1e-6
    )


def _merged_linear(w, b, layer, pi):
    """W + sum_c pi_c U_c V_c^T and b + sum_c pi_c L_b,c in float64."""
    vt = layer.adaptor_in.detach().double()  # (C, r, d_in) = V_c^T
    u = layer.adaptor_out.detach().double()  # (C, d_out, r) = U_c
    merged_w = w.double() + sum(pi[c] * u[c] @ vt[c] for c in range(len(pi)))
    merged_b = b.double()
    if layer.adaptor_bias is not None:
        merged_b = merged_b + sum(
            pi[c] * layer.adaptor_bias.detach().double()[c] for c in range(len(pi))
        )
    return merged_w, merged_b


def test_routed_model_is_noisy_in_training_and_clean_in_evaluation():
    with torch.random.fork_rng():
        torch.manual_seed(0)
        net = nn.Sequential(OrderedDict(lin=nn.Linear(6, 4)))
        w, b = net.lin.weight.detach().clone(), net.lin.bias.detach().clone()
        model = MixtureModel(net, n_adaptors=3, rho=1.0, noise=1.0, floor=0.01)
    _randomise(model.net.lin, 1)
    with torch.no_grad():
        model.theta.copy_(torch.tensor([0.4, -2.0, 1.1]))
    x = torch.randn(5, 6, generator=torch.Generator().manual_seed(2))

    def forward(seed):
        model.noise_generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            return model(x)

    model.train()
    assert torch.equal(forward(7), forward(7))
    assert not torch.allclose(forward(7), forward(8))
    u = torch.rand(3, generator=torch.Generator().manual_seed(7)).double()
    logits = (model.theta.detach().double() + u).numpy()
    pi = np.maximum(np.exp(logits) / np.exp(logits).sum(), 0.01)
    mw, mb = _merged_linear(w, b, model.net.lin, pi)
    torch.testing.assert_close(forward(7).double(), x.double() @ mw.T + mb, rtol=1e-5, atol=1e-5)

    model.eval()  # no noise: the generator is not used, two passes agree
    model.noise_generator = torch.Generator().manual_seed(7)
    with torch.no_grad():
        first, second = model(x), model(x)
    assert torch.equal(first, second)
    logits = model.theta.detach().double().numpy()
    pi = np.maximum(np.exp(logits) / np.exp(logits).sum(), 0.01)
    mw, mb = _merged_linear(w, b, model.net.lin, pi)
    torch.testing.assert_close(first.double(), x.double() @ mw.T + mb, rtol=1e-5, atol=1e-5)


# ---- 2. mixing the products, not the factors ----------------------------------------------------
PI3 = torch.tensor([0.6, 0.3, 0.1])


@pytest.mark.parametrize("bias_adaptors", [True, False])
def test_mixture_linear_is_the_base_with_the_merged_weight(bias_adaptors):
    torch.manual_seed(0)
    base = nn.Linear(7, 5)
    weights = MixingWeights(3)
    layer = MixtureLinear(base, weights, rank=2, bias_adaptors=bias_adaptors)
    _randomise(layer, 3)
    x = torch.randn(4, 7, generator=torch.Generator().manual_seed(4))
    weights.pi = PI3
    with torch.no_grad():
        got = layer(x).double()
    pi = PI3.double().numpy()
    mw, mb = _merged_linear(base.weight.detach(), base.bias.detach(), layer, pi)
    want = F.linear(x.double(), mw, mb)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    # mixing the factors instead, (sum pi U)(sum pi V)^T, is a different layer
    u_bar = torch.einsum("c,cor->or", PI3.double(), layer.adaptor_out.detach().double())
    vt_bar = torch.einsum("c,cri->ri", PI3.double(), layer.adaptor_in.detach().double())
    factors = F.linear(x.double(), base.weight.detach().double() + u_bar @ vt_bar, mb)
    assert (got - factors).abs().max() > 1e-2


def _merged_conv_kernel(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """L[i, j, a, b] = sum_k U[i, k, a] V[k, j, b] from the (k_h, 1) and (1, k_w) factors,
    written out as loops."""
    c_out, r, k_h = u.shape[0], u.shape[1], u.shape[2]
    c_in, k_w = v.shape[1], v.shape[3]
    out = torch.zeros(c_out, c_in, k_h, k_w, dtype=torch.float64)
    for i in range(c_out):
        for j in range(c_in):
            for a in range(k_h):
                for b in range(k_w):
                    out[i, j, a, b] = sum(
                        float(u[i, k, a, 0]) * float(v[k, j, 0, b]) for k in range(r)
                    )
    return out


@pytest.mark.parametrize(
    "conv_args",
    [
        {"kernel_size": 3},
        {"kernel_size": (3, 2), "stride": (2, 1), "padding": (1, 2), "dilation": (1, 2)},
    ],
    ids=["3x3", "3x2-strided"],
)
def test_mixture_conv_is_the_base_with_the_merged_kernel(conv_args):
    torch.manual_seed(1)
    base = nn.Conv2d(3, 4, **conv_args)
    weights = MixingWeights(3)
    layer = MixtureConv2d(base, weights, rank=2, bias_adaptors=True)
    _randomise(layer, 5)
    x = torch.randn(2, 3, 9, 8, generator=torch.Generator().manual_seed(6))
    weights.pi = PI3
    with torch.no_grad():
        got = layer(x).double()
    u = layer.adaptor_out.detach().double()  # (C, c_out, r, k_h, 1)
    v = layer.adaptor_in.detach().double()  # (C, r, c_in, 1, k_w)
    pi = PI3.double()
    kernel = base.weight.detach().double() + sum(
        pi[c] * _merged_conv_kernel(u[c], v[c]) for c in range(3)
    )
    bias = base.bias.detach().double() + pi @ layer.adaptor_bias.detach().double()
    settings = {k: getattr(base, k) for k in ("stride", "padding", "dilation")}
    want = F.conv2d(x.double(), kernel, bias, **settings)
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    # mixing the factors: (sum pi U) * (sum pi V) is not the same convolution
    kernel_f = base.weight.detach().double() + _merged_conv_kernel(
        torch.einsum("c,c...->...", pi, u), torch.einsum("c,c...->...", pi, v)
    )
    factors = F.conv2d(x.double(), kernel_f, bias, **settings)
    assert (got - factors).abs().max() > 1e-2


# ---- 3. rank rule and the paper's adaptor counts -------------------------------------------------
@pytest.mark.parametrize("rho", [0.01, 0.05, 0.1, 0.3, 1.0])
@pytest.mark.parametrize("m,n", [(10, 3), (784, 200), (200, 10), (1024, 64), (5, 5), (7, 1)])
def test_linear_rank_rule(m, n, rho):
    assert adaptor_rank(m, n, rho) == max(1, math.floor(rho * m * n / (m + n)))


@pytest.mark.parametrize("rho", [0.01, 0.1, 0.5])
@pytest.mark.parametrize("c_in,c_out,k", [(3, 32, 5), (32, 64, 3), (1, 8, 3), (16, 16, 7)])
def test_balanced_2d_rank_rule_and_parameters(c_in, c_out, k, rho):
    r = max(1, math.floor(rho * c_in * c_out * k / (c_in + c_out)))
    assert conv_adaptor_rank(c_in, c_out, k, rho) == r
    layer = MixtureConv2d(nn.Conv2d(c_in, c_out, k), MixingWeights(2), rank=r, bias_adaptors=True)
    assert layer.adaptor_values() == (c_in * k + c_out * k) * r + c_out
    assert layer.adaptor_in.numel() + layer.adaptor_out.numel() == 2 * (c_in * k + c_out * k) * r


def _adaptor_values(model: MixtureModel) -> int:
    """Values of one adaptor set, counted from the clustered tensors (dimension 0 = C)."""
    params = dict(model.named_parameters())
    return sum(params[n][0].numel() for n in model.clustered)


def _cifar_cnn() -> nn.Module:
    """The paper's CIFAR-10 CNN, written out by hand (as ``small_cnn``)."""
    return nn.Sequential(
        nn.Conv2d(3, 32, 5),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3),
        nn.ReLU(),
        nn.MaxPool2d(3),
        nn.Flatten(),
        nn.Linear(1024, 64),
        nn.ReLU(),
        nn.Linear(64, 10),
    )


@pytest.mark.parametrize(
    "name,rho,values,ranks",
    [
        ("cifar", 0.01, 1_795, [1, 1, 1, 1]),
        ("cifar", 0.1, 8_675, [1, 6, 6, 1]),
        ("small_cnn", 0.01, 1_795, [1, 1, 1, 1]),
        ("small_cnn", 0.1, 8_675, [1, 6, 6, 1]),
        ("mnist_mlp", 0.01, 1_404, [1, 1]),
        ("mnist_mlp", 0.1, 15_180, [15, 1]),
        ("synthetic_linear", 0.01, 16, [1]),
        ("synthetic_mlp", 0.01, 72, [1, 1]),
    ],
)
def test_paper_adaptor_counts(name, rho, values, ranks):
    net = _cifar_cnn() if name == "cifar" else build_model(name, n_classes=10).model
    model = MixtureModel(net, n_adaptors=3, rho=rho)
    layers = model.adaptor_layers()
    assert [layer.rank for layer in layers] == ranks
    # the paper's formulas, layer by layer: linear (d_in + d_out) r + d_out,
    # Balanced-2D (c_in k + c_out k) r + c_out
    by_formula = 0
    for layer in layers:
        base = layer.base
        if isinstance(base, nn.Conv2d):
            c_in, c_out, k = base.in_channels, base.out_channels, base.kernel_size[0]
            r = max(1, math.floor(rho * c_in * c_out * k / (c_in + c_out)))
            by_formula += (c_in * k + c_out * k) * r + c_out
        else:
            d_in, d_out = base.in_features, base.out_features
            r = max(1, math.floor(rho * d_in * d_out / (d_in + d_out)))
            by_formula += (d_in + d_out) * r + d_out
        assert layer.rank == r
    assert by_formula == values
    assert _adaptor_values(model) == values
    assert sum(layer.adaptor_values() for layer in layers) == values


# ---- 4. eq. (36) preconditioning -----------------------------------------------------------------
def _backward(layer, x, weights, pi):
    weights.pi = pi
    out = layer(x)
    (out.pow(2).sum() + out.sum()).backward()


def test_linear_preconditioning_is_eq36():
    torch.manual_seed(2)
    weights = MixingWeights(2)
    layer = MixtureLinear(nn.Linear(6, 5), weights, rank=3, bias_adaptors=True)
    _randomise(layer, 7)
    x = torch.randn(8, 6, generator=torch.Generator().manual_seed(8))
    _backward(layer, x, weights, torch.tensor([0.7, 0.3]))
    raw = {n: p.grad.clone() for n, p in layer.named_parameters()}
    eps = 1e-3
    precondition_gradients([layer], eps)
    vt = layer.adaptor_in.detach().double()  # V^T (C, r, d_in)
    u = layer.adaptor_out.detach().double()  # U (C, d_out, r)
    eye = torch.eye(3, dtype=torch.float64)
    for c in range(2):
        v_c, u_c = vt[c].T, u[c]  # V (d_in, r), U (d_out, r)
        g_u = raw["adaptor_out"][c].double()  # G_U (d_out, r)
        g_v = raw["adaptor_in"][c].double().T  # G_V (d_in, r)
        want_u = g_u @ torch.linalg.inv(v_c.T @ v_c + eps * eye)
        want_v = g_v @ torch.linalg.inv(u_c.T @ u_c + eps * eye)
        torch.testing.assert_close(layer.adaptor_out.grad[c].double(), want_u, rtol=1e-4, atol=1e-6)
        torch.testing.assert_close(
            layer.adaptor_in.grad[c].double().T, want_v, rtol=1e-4, atol=1e-6
        )
        assert not torch.allclose(want_u, g_u, rtol=1e-2)  # the preconditioner did something
    for name in ("adaptor_bias", "base.weight", "base.bias"):  # not preconditioned
        assert torch.equal(dict(layer.named_parameters())[name].grad, raw[name])


def test_conv_preconditioning_divides_by_the_other_factors_gram_norm():
    torch.manual_seed(3)
    weights = MixingWeights(2)
    layer = MixtureConv2d(nn.Conv2d(3, 4, 3), weights, rank=2, bias_adaptors=True)
    _randomise(layer, 9)
    x = torch.randn(2, 3, 7, 7, generator=torch.Generator().manual_seed(10))
    _backward(layer, x, weights, torch.tensor([0.4, 0.6]))
    raw = {n: p.grad.clone() for n, p in layer.named_parameters()}
    eps = 1e-2
    precondition_gradients([layer], eps)
    v = layer.adaptor_in.detach().double()  # (C, r, c_in, 1, k)
    u = layer.adaptor_out.detach().double()  # (C, c_out, r, k, 1)
    for c in range(2):
        # rows = the r filters of each factor, flattened
        v_rows = torch.stack([v[c, k].flatten() for k in range(2)])  # (r, c_in k)
        u_rows = torch.stack([u[c, :, k].flatten() for k in range(2)])  # (r, c_out k)
        gram_v = v_rows @ v_rows.T
        gram_u = u_rows @ u_rows.T
        norm_v = math.sqrt(float((gram_v**2).sum())) + eps
        norm_u = math.sqrt(float((gram_u**2).sum())) + eps
        torch.testing.assert_close(
            layer.adaptor_out.grad[c].double(),
            raw["adaptor_out"][c].double() / norm_v,
            rtol=1e-5,
            atol=1e-7,
        )
        torch.testing.assert_close(
            layer.adaptor_in.grad[c].double(),
            raw["adaptor_in"][c].double() / norm_u,
            rtol=1e-5,
            atol=1e-7,
        )
    for name in ("adaptor_bias", "base.weight", "base.bias"):
        assert torch.equal(dict(layer.named_parameters())[name].grad, raw[name])


# ---- 5. Algorithm 1's aggregation by hand ------------------------------------------------------
SIZES = (10.0, 20.0, 30.0)
PIS = [[0.5, 0.3, 0.2], [0.1, 0.6, 0.3], [0.25, 0.25, 0.5]]


def test_component_weights_by_hand():
    weights, routed = component_weights(torch.tensor(PIS), torch.tensor(SIZES))
    for c in range(3):
        total = sum(PIS[k][c] * SIZES[k] for k in range(3))
        for k in range(3):
            assert float(weights[k, c]) == pytest.approx(PIS[k][c] * SIZES[k] / total, rel=1e-6)
    assert routed.tolist() == [True, True, True]


def test_mixture_average_by_hand():
    # base "b" (scalar-ish, shape (2,)), clustered "a" (C = 3, shape (3, 2))
    base = [[1.0, -2.0], [4.0, 0.5], [-3.0, 7.0]]
    comp = [
        [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]],
        [[-1.0, 0.0], [2.0, -2.0], [9.0, 1.0]],
        [[0.5, 0.5], [-4.0, 8.0], [2.0, -6.0]],
    ]
    previous = {"b": torch.zeros(2), "a": torch.full((3, 2), 100.0), "kept": torch.ones(4)}
    states = [{"b": torch.tensor(base[k]), "a": torch.tensor(comp[k])} for k in range(3)]
    got = mixture_average(previous, states, SIZES, torch.tensor(PIS), {"a"})
    n = sum(SIZES)
    for i in range(2):
        want = sum(SIZES[k] * base[k][i] for k in range(3)) / n
        assert float(got["b"][i]) == pytest.approx(want, rel=1e-6)
    for c in range(3):
        total = sum(PIS[k][c] * SIZES[k] for k in range(3))
        for i in range(2):
            want = sum(PIS[k][c] * SIZES[k] * comp[k][c][i] for k in range(3)) / total
            assert float(got["a"][c, i]) == pytest.approx(want, rel=1e-6)
    assert torch.equal(got["kept"], previous["kept"])  # not sent: kept as it was


@pytest.mark.parametrize("tiny", [0.0, 1e-9])
def test_a_component_nobody_routes_to_keeps_its_previous_value(tiny):
    pis = torch.tensor([[1.0 - tiny, 0.0, tiny], [0.0, 1.0, 0.0], [0.5, 0.5 - tiny, tiny]])
    previous = {"a": torch.tensor([[100.0], [200.0], [300.0]])}
    states = [{"a": torch.tensor([[1.0 + k], [10.0 + k], [20.0 + k]])} for k in range(3)]
    got = mixture_average(previous, states, SIZES, pis, {"a"})
    # component 0: clients 0 (10 * 1) and 2 (30 * 0.5); component 1: clients 1 and 2
    w0 = [SIZES[0] * float(pis[0, 0]), 0.0, SIZES[2] * float(pis[2, 0])]
    w1 = [0.0, SIZES[1], SIZES[2] * float(pis[2, 1])]
    assert float(got["a"][0, 0]) == pytest.approx((w0[0] * 1 + w0[2] * 3) / sum(w0), rel=1e-6)
    assert float(got["a"][1, 0]) == pytest.approx((w1[1] * 11 + w1[2] * 12) / sum(w1), rel=1e-6)
    assert float(got["a"][2, 0]) == 300.0  # ~zero total weight: the previous value
    _, routed = component_weights(pis, torch.tensor(SIZES))
    assert routed.tolist() == [True, True, False]


# ---- 6. routing scores -------------------------------------------------------------------------
def test_permuted_perfect_routing_scores_one_and_no_mismatch():
    clusters = np.array([0, 1, 2, 0, 1, 2, 0])
    perm = np.array([2, 0, 1])  # cluster c -> component perm[c]
    pis = np.eye(3)[perm[clusters]]
    sizes = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0])
    assert routing_accuracy(pis, clusters) == 1.0
    assert aggregation_mismatch(pis, clusters, sizes) == pytest.approx(0.0, abs=1e-12)


def test_routing_accuracy_by_hand():
    clusters = np.array([0, 0, 0, 1, 1])
    # tops: 1, 1, 0, 0, 0 -> counts[component, cluster] = [[1, 2], [2, 0]];
    # the best matching is component 1 -> cluster 0, component 0 -> cluster 1: 2 + 2 of 5
    pis = np.array([[0.2, 0.8], [0.4, 0.6], [0.9, 0.1], [0.7, 0.3], [0.6, 0.4]])
    assert routing_accuracy(pis, clusters) == pytest.approx(4 / 5)
    # uniform weights: every top is component 0 (first maximum); one cluster is right
    assert routing_accuracy(np.full((5, 2), 0.5), clusters) == pytest.approx(3 / 5)


def test_uniform_routing_mismatch_by_hand():
    clusters = np.array([0, 0, 1, 1])
    sizes = np.array([1.0, 2.0, 3.0, 4.0])
    pis = np.full((4, 2), 0.5)
    # p-hat(.|c) = N / sum N = (0.1, 0.2, 0.3, 0.4) for both components;
    # p(.|0) = (1/3, 2/3, 0, 0): L1 = 7/30 + 14/30 + 0.3 + 0.4 = 1.4
    # p(.|1) = (0, 0, 3/7, 4/7): L1 = 0.1 + 0.2 + 9/70 + 12/70 = 0.6; the mean is 1.0
    assert aggregation_mismatch(pis, clusters, sizes) == pytest.approx(1.0, rel=1e-12)
    # a soft but right routing: component c holds 0.9 of cluster c
    soft = np.array([[0.9, 0.1], [0.9, 0.1], [0.1, 0.9], [0.1, 0.9]])
    j0 = soft[:, 0] * sizes  # (0.9, 1.8, 0.3, 0.4) / 3.4
    j1 = soft[:, 1] * sizes  # (0.1, 0.2, 2.7, 3.6) / 6.6
    p0, p1 = np.array([1, 2, 0, 0]) / 3, np.array([0, 0, 3, 4]) / 7
    want = (np.abs(j0 / j0.sum() - p0).sum() + np.abs(j1 / j1.sum() - p1).sum()) / 2
    assert aggregation_mismatch(soft, clusters, sizes) == pytest.approx(want, rel=1e-12)
    assert want == pytest.approx((2 * 0.7 / 3.4 + 2 * 0.3 / 6.6) / 2, rel=1e-12)


def test_mismatch_with_a_component_nobody_routes_to():
    # C = 3 components, M = 2 clusters, a perfect hard routing that never uses component 2:
    # components 0 and 1 match their clusters exactly, component 2 is matched to none (left
    # out, as the docstring says for C > M), so the mismatch is 0
    clusters = np.array([0, 1, 0, 1])
    pis = np.eye(3)[clusters]
    assert routing_accuracy(pis, clusters) == 1.0
    assert aggregation_mismatch(pis, clusters, np.ones(4)) == pytest.approx(0.0, abs=1e-12)


def test_conv_with_another_padding_mode_is_refused_by_the_layer_and_left_plain_by_the_model():
    base = nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect")
    with pytest.raises(ValueError, match="zero padding"):
        MixtureConv2d(base, MixingWeights(1), rank=1, bias_adaptors=False)
    net = nn.Sequential(nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"), nn.Flatten())
    model = MixtureModel(net, n_adaptors=2, rho=0.1)
    assert type(model.net[0]) is nn.Conv2d and model.ranks == {}
