"""H2Tune's building blocks (Guo et al., arXiv 2507.22633) against direct computations: the
triple decomposition x A (I + Phi o R) B of eq. (3) and its rank / sparsity masks, the
depth-block alignment Omega and eqs. (4)-(5), the losses of eqs. (6)-(7), and the install /
uninstall of the adapters on a small BERT."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from wirelessfl.algorithms.h2tune.layer_alignment import initial_alignment, to_global, to_local  # noqa: E402
from wirelessfl.algorithms.h2tune.losses import (  # noqa: E402
    matrix_kl,
    output_divergence,
    shared_loss,
    specific_loss,
)
from wirelessfl.algorithms.h2tune.trilora import (  # noqa: E402
    TriLoRAAdapters,
    TriLoRALinear,
    initial_values,
    install_trilora,
    sparsity_mask,
    transformer_layer_index,
    uninstall_trilora,
)

pytestmark = [pytest.mark.train, pytest.mark.usefixtures("one_torch_thread")]

D = torch.float64


class Tiny(nn.Module):
    """Two blocks of (query, value, out) linears, float64."""

    def __init__(self) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(7)
        self.layers = nn.ModuleList()
        for _ in range(2):
            block = nn.Module()
            block.query = nn.Linear(5, 4).double()
            block.value = nn.Linear(5, 3).double()
            block.act = nn.ReLU()
            with torch.no_grad():
                for lin in (block.query, block.value):
                    lin.weight.copy_(torch.randn(lin.weight.shape, generator=g, dtype=D))
                    lin.bias.copy_(torch.randn(lin.bias.shape, generator=g, dtype=D))
            self.layers.append(block)
        self.head = nn.Linear(5, 2).double()


def _randomise(adapters: TriLoRAAdapters, seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    values = {k: torch.randn(v.shape, generator=g, dtype=D) for k, v in adapters.values().items()}
    adapters.load_values(values)
    return values


def _installed(r_g: int = 3, scale: float = 0.7) -> tuple[Tiny, TriLoRAAdapters, list[str]]:
    model = Tiny()
    names = ["layers.0.query", "layers.0.value", "layers.1.value"]
    return model, install_trilora(model, names, r_g, n_global_layers=4, scale=scale), names


# ---- 1. eq. (3): the wrapped layer --------------------------------------------------------------
def test_wrapped_layer_is_the_triple_product_by_hand():
    model, ad, _ = _installed()
    values = _randomise(ad, 1)
    phi = sparsity_mask(ad.n_layers, 3, 0.5, torch.Generator().manual_seed(2))
    ad.set_client(phi.to(D), rank=3)
    x = torch.randn(2, 6, 5, generator=torch.Generator().manual_seed(3), dtype=D)
    for target, lin_name in [(0, "query"), (1, "value")]:
        wrapper = getattr(model.layers[0], lin_name)
        assert isinstance(wrapper, TriLoRALinear)
        w, b = wrapper.base.weight, wrapper.base.bias
        a, bb = values[f"A.{target}"], values[f"B.{target}"]
        m = torch.eye(3, dtype=D) + phi[0].to(D) * values["R"][0]
        expected = x @ w.T + b + 0.7 * (x @ a @ m @ bb)
        torch.testing.assert_close(wrapper(x), expected, rtol=1e-12, atol=1e-12)
    # block 1 uses R[1]
    wrapper = model.layers[1].value
    m = torch.eye(3, dtype=D) + phi[1].to(D) * values["R"][1]
    delta = x @ values["A.2"] @ m @ values["B.2"]
    expected = x @ wrapper.base.weight.T + wrapper.base.bias + 0.7 * delta
    torch.testing.assert_close(wrapper(x), expected, rtol=1e-12, atol=1e-12)


def test_without_shared_path_it_is_plain_lora_at_rank_r_k():
    model, ad, _ = _installed(r_g=4)
    values = _randomise(ad, 4)
    ad.use_shared = False
    ad.set_client(torch.ones(ad.n_layers, 4, 4, dtype=D), rank=2)
    wrapper = model.layers[0].query
    x = torch.randn(7, 5, generator=torch.Generator().manual_seed(5), dtype=D)
    a, bb = values["A.0"][:, :2], values["B.0"][:2]
    expected = x @ wrapper.base.weight.T + wrapper.base.bias + 0.7 * (x @ a @ bb)
    out = wrapper(x)
    torch.testing.assert_close(out, expected, rtol=1e-12, atol=1e-12)
    # the other columns of A / rows of B, and R, do not matter
    changed = dict(values)
    changed["A.0"] = values["A.0"].clone()
    changed["A.0"][:, 2:] = 100.0
    changed["B.0"] = values["B.0"].clone()
    changed["B.0"][2:] = -50.0
    changed["R"] = values["R"] + 3.0
    ad.load_values(changed)
    torch.testing.assert_close(wrapper(x), out, rtol=0, atol=0)


def test_with_shared_path_a_rank_r_k_client_uses_its_first_r_k_columns_and_rows_only():
    model, ad, _ = _installed(r_g=4)
    values = _randomise(ad, 6)
    phi = torch.ones(ad.n_layers, 4, 4, dtype=D)
    ad.set_client(phi, rank=2)
    wrapper = model.layers[0].query
    x = torch.randn(7, 5, generator=torch.Generator().manual_seed(5), dtype=D)
    m = torch.eye(2, dtype=D) + values["R"][0, :2, :2]
    expected = wrapper.base(x) + 0.7 * (x @ values["A.0"][:, :2] @ m @ values["B.0"][:2])
    torch.testing.assert_close(wrapper(x), expected, rtol=1e-12, atol=1e-12)
    changed = dict(values)
    changed["B.0"] = values["B.0"].clone()
    changed["B.0"][2:] = 9.0
    changed["R"] = values["R"].clone()
    changed["R"][:, 2:, :] = 5.0
    changed["R"][:, :, 2:] = 5.0
    ad.load_values(changed)
    torch.testing.assert_close(wrapper(x), expected, rtol=1e-12, atol=1e-12)


def test_targets_of_one_block_share_r_and_l_counts_blocks():
    _, ad, _ = _installed()
    assert ad.n_layers == 2
    assert ad.layer_of_target == [0, 0, 1]
    assert ad.block_indices == [0, 1]
    assert tuple(ad.R.shape) == (2, 3, 3)
    assert tuple(ad.omega.shape) == (2, 4)
    assert [tuple(a.shape) for a in ad.A] == [(5, 3), (5, 3), (5, 3)]
    assert [tuple(b.shape) for b in ad.B] == [(3, 4), (3, 3), (3, 3)]
    assert ad.shared_parameters()[0] is ad.R and ad.shared_parameters()[1] is ad.omega
    assert ad.specific_parameters() == list(ad.A) + list(ad.B)


def test_masked_entries_of_r_get_exactly_zero_gradient():
    model, ad, _ = _installed(r_g=4)
    _randomise(ad, 8)
    phi = sparsity_mask(ad.n_layers, 4, 0.4, torch.Generator().manual_seed(9)).to(D)
    ad.set_client(phi, rank=4)
    x = torch.randn(6, 5, generator=torch.Generator().manual_seed(10), dtype=D)
    loss = sum((model.layers[i].value(x) ** 2).sum() for i in range(2))
    loss = loss + (model.layers[0].query(x) ** 2).sum()
    loss.backward()
    grad = ad.R.grad
    assert (grad[phi == 0] == 0).all()
    assert (grad[phi == 1] != 0).all()
    torch.testing.assert_close(ad.effective_r(), phi * ad.R)
    # the base layers are frozen
    assert model.layers[0].query.base.weight.grad is None
    assert not model.layers[0].query.base.weight.requires_grad


def test_sparsity_mask_counts_and_reproducibility():
    for r, beta in [(4, 0.25), (10, 0.1), (5, 0.33), (3, 1.0), (8, 0.01)]:
        mask = sparsity_mask(3, r, beta, torch.Generator().manual_seed(11))
        assert tuple(mask.shape) == (3, r, r)
        assert set(mask.unique().tolist()) <= {0.0, 1.0}
        expected = math.ceil(round(beta * r * r, 9))
        assert mask.sum(dim=(1, 2)).tolist() == [float(expected)] * 3
        again = sparsity_mask(3, r, beta, torch.Generator().manual_seed(11))
        assert torch.equal(mask, again)
    a = sparsity_mask(2, 6, 0.5, torch.Generator().manual_seed(1))
    b = sparsity_mask(2, 6, 0.5, torch.Generator().manual_seed(2))
    assert not torch.equal(a, b)
    assert not torch.equal(a[0], a[1])


def test_initial_values_are_lora_start_and_leave_the_global_rng_alone():
    _, ad, _ = _installed()
    torch.manual_seed(123)
    state = torch.get_rng_state()
    v1 = initial_values(ad, torch.Generator().manual_seed(5))
    assert torch.equal(torch.get_rng_state(), state)
    v2 = initial_values(ad, torch.Generator().manual_seed(5))
    for key in v1:
        assert torch.equal(v1[key], v2[key])
    for i in range(3):
        a = v1[f"A.{i}"]
        assert a.abs().max() <= 1 / math.sqrt(5) and a.abs().max() > 0.2
        assert (v1[f"B.{i}"] == 0).all()
    assert (v1["R"] == 0).all()
    torch.testing.assert_close(v1["omega"], initial_alignment(2, 4).to(D))


# ---- 2. eqs. (4)-(5): layer alignment -----------------------------------------------------------
@pytest.mark.parametrize("n_local,n_global", [(6, 30), (30, 30), (4, 6), (1, 5), (3, 7)])
def test_alignment_rows_are_orthonormal_when_the_server_has_more_slots(n_local, n_global):
    omega = initial_alignment(n_local, n_global).double()
    assert tuple(omega.shape) == (n_local, n_global)
    torch.testing.assert_close(omega @ omega.T, torch.eye(n_local, dtype=D))
    r = torch.randn(n_local, 2, 2, generator=torch.Generator().manual_seed(0), dtype=D)
    torch.testing.assert_close(to_local(to_global(r, omega), omega), r)
    # every slot belongs to exactly one local layer, in depth order
    owner = omega.argmax(dim=0).tolist()
    assert (omega != 0).sum(dim=0).tolist() == [1] * n_global
    assert owner == sorted(owner)


def test_alignment_round_trip_averages_layers_sharing_a_slot():
    omega = initial_alignment(5, 2).double()  # slots: layers {0, 1, 2} -> 0, {3, 4} -> 1
    expected = torch.zeros(5, 2, dtype=D)
    expected[:3, 0] = 1 / math.sqrt(3)
    expected[3:, 1] = 1 / math.sqrt(2)
    torch.testing.assert_close(omega, expected)
    r = torch.randn(5, 3, 3, generator=torch.Generator().manual_seed(1), dtype=D)
    back = to_local(to_global(r, omega), omega)
    mean_a, mean_b = r[:3].mean(dim=0), r[3:].mean(dim=0)
    for layer in range(5):
        torch.testing.assert_close(back[layer], mean_a if layer < 3 else mean_b)
    torch.testing.assert_close(omega.T @ omega, torch.eye(2, dtype=D))


def test_to_global_and_to_local_against_loops():
    g = torch.Generator().manual_seed(2)
    omega = torch.randn(3, 4, generator=g, dtype=D, requires_grad=True)
    r_local = torch.randn(3, 2, 2, generator=g, dtype=D)
    r_global = torch.randn(4, 2, 2, generator=g, dtype=D)
    up = to_global(r_local, omega)
    down = to_local(r_global, omega)
    for m in range(4):
        want = sum(omega[l, m].item() * r_local[l] for l in range(3))
        torch.testing.assert_close(up[m], want)
    for l in range(3):
        want = sum(omega[l, m].item() * r_global[m] for m in range(4))
        torch.testing.assert_close(down[l], want)
    (up.sum() + down.sum()).backward()
    assert omega.grad is not None and (omega.grad != 0).any()
    with pytest.raises(ValueError) as err:
        to_global(r_global, omega)
    assert "\n" not in str(err.value)


# ---- 3. eqs. (6)-(7): losses --------------------------------------------------------------------
def _row_kl_np(p_logits: np.ndarray, q_logits: np.ndarray) -> float:
    p = np.exp(p_logits - p_logits.max())
    p /= p.sum()
    q = np.exp(q_logits - q_logits.max())
    q /= q.sum()
    return float(sum(pi * math.log(pi / qi) for pi, qi in zip(p, q, strict=True)))


def test_matrix_kl_against_a_loop_over_rows():
    g = torch.Generator().manual_seed(3)
    a = torch.randn(2, 3, 3, generator=g, dtype=D)
    b = torch.randn(2, 3, 3, generator=g, dtype=D)
    want = sum(_row_kl_np(a[l, i].numpy(), b[l, i].numpy()) for l in range(2) for i in range(3))
    assert float(matrix_kl(a, b)) == pytest.approx(want, rel=1e-10)
    assert float(matrix_kl(a, a)) == pytest.approx(0.0, abs=1e-12)
    shifted = a + torch.randn(2, 3, 1, generator=g, dtype=D)  # per-row constants
    assert float(matrix_kl(a, shifted)) == pytest.approx(0.0, abs=1e-12)
    assert float(matrix_kl(a, b)) > 0
    task = torch.tensor(1.5, dtype=D)
    assert float(shared_loss(task, a, b, kl_weight=0.3)) == pytest.approx(1.5 + 0.3 * want)


def test_output_divergence_closed_form_and_no_gradient_into_shared():
    g = torch.Generator().manual_seed(4)
    spec = torch.randn(5, 4, generator=g, dtype=D, requires_grad=True)
    shared = torch.randn(5, 4, generator=g, dtype=D, requires_grad=True)
    s, t = spec.detach().numpy(), shared.detach().numpy()
    p = np.exp(s) / np.exp(s).sum(axis=1, keepdims=True)
    q = np.exp(t) / np.exp(t).sum(axis=1, keepdims=True)
    want = float(np.mean(np.sum(p * (np.log(p) - np.log(q)), axis=1)))
    div = output_divergence(spec, shared)
    assert float(div.detach()) == pytest.approx(want, rel=1e-10)
    div.backward()
    assert shared.grad is None
    assert spec.grad is not None and (spec.grad != 0).any()


def test_specific_loss_caps_the_divergence_and_adds_the_squared_l2():
    task = torch.tensor(2.0, dtype=D)
    spec = torch.tensor([[50.0, -50.0, 0.0]], dtype=D, requires_grad=True)
    shared = torch.tensor([[-50.0, 50.0, 0.0]], dtype=D)
    assert float(output_divergence(spec, shared).detach()) > 50
    factors = [torch.tensor([[1.0, 2.0]], dtype=D), torch.tensor([3.0, -1.0, 0.5], dtype=D)]
    squares = 1 + 4 + 9 + 1 + 0.25
    loss = specific_loss(task, spec, shared, factors, kl_weight=0.1, kl_cap=2.0, l2=0.01)
    assert float(loss.detach()) == 2.0 - 0.1 * 2.0 + 0.005 * squares
    loss.backward()
    assert (spec.grad == 0).all()  # capped: no push beyond kl_cap
    # below the cap the divergence enters as is
    near = torch.tensor([[0.1, 0.0, -0.2]], dtype=D)
    div = float(output_divergence(near, shared * 0))
    loss = specific_loss(task, near, shared * 0, [], kl_weight=0.5, kl_cap=2.0, l2=0.01)
    assert float(loss) == pytest.approx(2.0 - 0.5 * div, rel=1e-12)


# ---- 4. install on a small BERT -----------------------------------------------------------------
def test_install_on_bert_is_transparent_at_start_and_uninstall_restores_it():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=100,
        hidden_size=32,
        num_hidden_layers=3,
        num_attention_heads=2,
        intermediate_size=64,
    )
    model = transformers.BertModel(config).double().eval()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    originals = {n: m for n, m in model.named_modules() if n.endswith(("query", "value"))}
    ids = torch.randint(0, 100, (2, 7), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ref = model(input_ids=ids).last_hidden_state
    names = sorted(originals)
    assert len(names) == 6
    ad = install_trilora(model, names, 4, n_global_layers=5, scale=2.0)
    assert ad.n_layers == 3
    assert ad.layer_of_target == [0, 0, 1, 1, 2, 2]
    with torch.no_grad():
        torch.testing.assert_close(model(input_ids=ids).last_hidden_state, ref)
    start = ad.values()
    values = dict(start)
    values["B.3"] = torch.full_like(values["B.3"], 0.1)
    ad.load_values(values)
    with torch.no_grad():
        changed = model(input_ids=ids).last_hidden_state
    assert (changed - ref).abs().max() > 1e-4
    for key, v in ad.values().items():
        assert torch.equal(v, values[key])
    ad.load_values(start)
    with torch.no_grad():
        torch.testing.assert_close(model(input_ids=ids).last_hidden_state, ref)
    assert uninstall_trilora(model) == 6
    for name, module in originals.items():
        assert model.get_submodule(name) is module
        assert module.weight.requires_grad
    after = model.state_dict()
    assert after.keys() == before.keys()
    assert all(torch.equal(after[k], before[k]) for k in before)


# ---- 5. names and errors ------------------------------------------------------------------------
def test_transformer_layer_index():
    assert transformer_layer_index("encoder.layer.3.attention.self.query") == 3
    assert transformer_layer_index("model.layers.12.self_attn.q_proj") == 12
    assert transformer_layer_index("transformer.h.0.attn.c_attn") == 0
    assert transformer_layer_index("encoder.block.5.layer.0.SelfAttention.q") == 5
    assert transformer_layer_index("vit.blocks.2.attn.qkv") == 2
    assert transformer_layer_index("classifier") is None
    assert transformer_layer_index("layer.norm") is None
    assert transformer_layer_index("mylayers.3.q") is None


def _one_line_error(fn, *args, **kwargs) -> str:
    with pytest.raises(ValueError) as err:
        fn(*args, **kwargs)
    message = str(err.value)
    assert message and "\n" not in message
    return message


def test_errors_are_one_line_value_errors():
    model = Tiny()
    assert "act" in _one_line_error(install_trilora, model, ["layers.0.act"], 2, n_global_layers=2)
    assert "head" in _one_line_error(install_trilora, model, ["head"], 2, n_global_layers=2)
    assert isinstance(model.layers[0].query, nn.Linear)  # nothing installed by a refused call
    for beta in (0.0, -0.1, 1.5):
        _one_line_error(sparsity_mask, 2, 3, beta, torch.Generator())
    _, ad, _ = _installed()
    values = ad.values()
    wrong_key = dict(values)
    wrong_key["C.0"] = wrong_key.pop("A.0")
    assert "C.0" in _one_line_error(ad.load_values, wrong_key)
    wrong_shape = dict(values)
    wrong_shape["R"] = torch.zeros(3, 3, 3, dtype=D)
    assert "'R'" in _one_line_error(ad.load_values, wrong_shape)
    _one_line_error(ad.set_client, torch.ones(2, 3, 3, dtype=D), rank=4)
    _one_line_error(ad.set_client, torch.full((2, 3, 3), 0.5, dtype=D), rank=2)
    _one_line_error(matrix_kl, torch.zeros(2, 3, 3), torch.zeros(2, 3, 2))
