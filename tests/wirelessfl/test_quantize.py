"""The quantiser stage: QSGD-style stochastic rounding against its closed forms, its bits by
hand (message, cost model, real runs), its memory, and its one-line refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scenario_helpers import digits_scenario, small_scenario

from wirelessfl.algorithms.message import IndexSpace, LoraTensors, Message
from wirelessfl.algorithms.quantization import Quantizer, levels
from wirelessfl.errors import ConfigError
from wirelessfl.plans import ClientPlan
from wirelessfl.sim import run_scenario

torch = pytest.importorskip("torch")

from wirelessfl.algorithms.compression import Compression  # noqa: E402
from wirelessfl.algorithms.compression_stage import MEMORY, compress_message  # noqa: E402
from wirelessfl.compress.quantize import quantization_variance, quantize_values  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

V = 32
SIDE = 64 + 64  # tiny_mlp: fc1 and fc2 are 64 -> 64, d + l = 128
HEAD = 64 * 10 + 10  # the task head, sent dense at v bits
X = torch.tensor([0.9, -0.05, 0.31, 0.0, -0.77, 0.12, 0.5, -0.33, 0.02, 0.66], dtype=torch.float64)


def _copies(x: torch.Tensor, n: int) -> torch.Tensor:
    return x.repeat(n)


def _closed_form_variance(x: np.ndarray, bits: int) -> np.ndarray:
    """(M / s)^2 p (1 - p) per value, written out here from the definition."""
    s = 2 ** (bits - 1) - 1
    m = np.abs(x).max()
    u = s * np.abs(x) / m
    p = u - np.floor(u)
    return (m / s) ** 2 * p * (1 - p)


# ---- the quantiser against its closed forms --------------------------------------------------
@pytest.mark.parametrize("bits", [2, 3, 4])
def test_stochastic_rounding_is_unbiased_with_the_closed_form_variance(bits):
    draws = 40_000
    n = X.numel()
    g = torch.Generator().manual_seed(7)
    q = quantize_values(_copies(X, draws), bits=bits, block_size=n, generator=g).reshape(draws, n)
    mean, var = q.mean(0).numpy(), q.var(0).numpy()
    expected_var = _closed_form_variance(X.numpy(), bits)
    sd_of_mean = np.sqrt(expected_var / draws)
    assert np.all(np.abs(mean - X.numpy()) <= 5 * sd_of_mean + 1e-12)  # unbiased
    # the sample variance of a two-point variable (step h = M / s, P(up) = p) within 5 of its
    # standard deviations sqrt((mu_4 - sigma^4) / draws), mu_4 = h^4 p (1 - p) (1 - 3p + 3p^2)
    s = 2 ** (bits - 1) - 1
    h = float(X.abs().max()) / s
    p = s * np.abs(X.numpy()) / float(X.abs().max()) % 1.0
    mu4 = h**4 * p * (1 - p) * (1 - 3 * p + 3 * p**2)
    sd_of_var = np.sqrt((mu4 - expected_var**2) / draws)
    assert np.all(np.abs(var - expected_var) <= 5 * sd_of_var + 1e-12)
    assert np.allclose(quantization_variance(X, bits=bits, block_size=None), expected_var)
    # every value is sign(x) l M / s with an integer level l in [0, s]
    lv = q / h
    assert torch.allclose(lv, lv.round(), atol=1e-9) and lv.abs().max() <= s + 1e-9
    assert torch.all(q * X >= 0) and torch.all(q[:, X == 0] == 0)  # the sign is kept


def test_blocks_take_their_own_scale_and_the_last_one_is_short():
    x = torch.tensor([1.0, 0.5, 0.1, 0.2, 0.05, 4.0, 2.0])  # [1, .5, .1] [.2, .05, 4] [2]
    var = quantization_variance(x, bits=2, block_size=3)  # s = 1: p = |x| / M, var = M^2 p (1-p)
    by_hand = [0.0, 0.25, 0.09, 0.2 * 3.8, 0.05 * 3.95, 0.0, 0.0]
    assert np.allclose(var.numpy(), by_hand)
    q = quantize_values(x, bits=2, block_size=3, generator=torch.Generator().manual_seed(0))
    assert set(q[:3].tolist()) <= {0.0, 1.0} and set(q[3:6].tolist()) <= {0.0, 4.0}
    assert q[6] == 2.0 and q.dtype == x.dtype


@pytest.mark.parametrize("bits", [2, 4, 8])
def test_the_variance_stays_below_the_bound_of_the_penalty(bits):
    rng = np.random.default_rng(3)
    for x in (rng.standard_normal(300), np.r_[1.0, np.full(299, 1e-3)], np.full(300, 0.7)):
        t = torch.tensor(x)
        total = float(quantization_variance(t, bits=bits, block_size=None).sum())
        s = 2 ** (bits - 1) - 1
        bound = min(300 / (4 * s * s), math.sqrt(300) / s) * float((t**2).sum())
        assert total <= bound + 1e-12
        assert Quantizer(bits).variance_factor(300) == pytest.approx(bound / float((t**2).sum()))


# ---- bits by hand ------------------------------------------------------------------------------
def test_a_message_counts_b_per_quantised_value_and_32_per_scale():
    message = Message(
        shared={"head": torch.zeros(5)},
        sparse=[IndexSpace((), 10, 40, 1, value_bits=4, scales=3), IndexSpace((), 6, 6, 2)],
    )
    bits = message.bits(bits_per_value=V, count_index=False)
    assert bits == 10 * 4 + 3 * 32 + 2 * 6 * V + 5 * V
    state = Message.from_state_dict(message.state_dict())
    assert state.sparse == message.sparse


def test_quantizer_scales():
    assert Quantizer(4).n_scales(256) == 1 and Quantizer(4).n_scales(0) == 0
    assert Quantizer(4, block_size=100).n_scales(256) == 3
    assert Quantizer().n_scales(256) == 0 and levels(2) == 1 and levels(8) == 127


def test_the_cost_model_plans_the_quantised_upload_by_hand():
    from wirelessfl.learners import make_learner

    shapes = [[64, 64], [64, 32]]
    over = {"quantize.bits": 4, "quantize.block_size": 50, "compression.sparsifier": "topk"}
    learner = make_learner(small_scenario(**{"learner.shape.layer_shapes": shapes, **over}))
    cost = learner.cost_model()
    kept = [round(0.3 * 6 * 128), round(0.3 * 6 * 96)]  # round(O r (d + l)) per layer, r = 6
    by_hand = sum(4 * k + 32 * math.ceil(k / 50) for k in kept)
    assert cost.upload_bits(ClientPlan(0, 0, 6, 0.3)) == by_hand
    split = cost.affine_upload(ClientPlan(0, 0, 6, 0.3))  # in values of v bits
    assert split.ratio_values == pytest.approx(6 * (128 + 96) * (4 + 32 / 50) / V)
    at_v = cost.upload_bits(ClientPlan(0, 0, 6, 0.3, bits=V))  # b = v: unquantised
    assert at_v == V * sum(kept)


# ---- real runs ---------------------------------------------------------------------------------
def test_a_real_fedit_run_at_4_bits_sends_the_hand_count_and_trains(tmp_path):
    over = {"algorithm.name": "fedit", "learner.trainer": "sequential", "rounds": 3}
    run = run_scenario(digits_scenario(**over, **{"quantize.bits": 4}), tmp_path / "q")
    rank = 4  # the fixed controller's
    per_client = 2 * (4 * rank * SIDE + 32) + V * HEAD  # dense: one scale per layer
    trained = run.clients[run.clients["status"] == "arrived"]
    assert len(trained) and (trained["bits"] == per_client).all()
    assert (run.rounds["algo.quant_bits"] == 4).all()
    assert (run.rounds["algo.quant_rel_error"].between(1e-3, 1.0)).all()
    assert run.rounds["loss"].iloc[-1] < run.rounds["loss"].iloc[0]


def test_soft_thins_then_quantises_by_blocks_as_planned(tmp_path):
    over = {"learner.trainer": "sequential", "rounds": 2, "quantize.bits": 3}
    run = run_scenario(digits_scenario(**over, **{"quantize.block_size": 100}), tmp_path / "q")
    kept = round(0.5 * 4 * SIDE)  # O = 0.5 of the fixed controller
    per_client = 2 * (3 * kept + 32 * math.ceil(kept / 100)) + V * HEAD
    trained = run.clients[run.clients["status"] == "arrived"]
    assert len(trained) and (trained["bits"] == per_client).all()
    assert (run.rounds["planned_delay_s"] > 0).all()


# ---- the message and its memory ------------------------------------------------------------------
def _message(seed: int = 0) -> tuple[Message, dict[str, torch.Tensor]]:
    g = torch.Generator().manual_seed(seed)
    shared = {"l.B": torch.randn(6, 3, generator=g), "l.A": torch.randn(3, 5, generator=g)}
    message = Message(shared=dict(shared), lora=[LoraTensors("l", "l.B", "l.A")])
    return message, shared


def _paper(shared: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    return shared["l.A"].T, shared["l.B"].T  # theta_B = A^T (d, r), theta_A = B^T (r, l)


@pytest.mark.parametrize(
    ("sparsifier", "sparse_ef", "quant_ef"),
    [("none", True, True), ("topk", True, False), ("topk", True, True), ("topk", False, True)],
)
def test_the_memory_keeps_what_was_not_delivered(sparsifier, sparse_ef, quant_ef):
    message, before = _message()
    stage = Compression(sparsifier=sparsifier, error_feedback=sparse_ef)
    compress_message(
        message,
        stage=stage,
        ratio=0.5,
        model_rank=3,
        memory=None,
        generator=None,
        quantizer=Quantizer(2, error_feedback=quant_ef),
        quantize_generator=torch.Generator().manual_seed(1),
        bits_per_value=V,
    )
    u = _paper(before)
    q = _paper(message.shared)
    k = message.sparse[-1].n_sent
    assert k == (33 if sparsifier == "none" else 16)  # round(0.5 * 3 (5 + 6)), half to even
    topk = torch.cat([u[0].reshape(-1), u[1].reshape(-1)]).abs().topk(k).indices
    sent = torch.zeros(33)
    sent[topk] = torch.cat([u[0].reshape(-1), u[1].reshape(-1)])[topk]
    if sparsifier == "none":
        sent = torch.cat([u[0].reshape(-1), u[1].reshape(-1)])
    flat_u = torch.cat([u[0].reshape(-1), u[1].reshape(-1)])
    flat_q = torch.cat([q[0].reshape(-1), q[1].reshape(-1)])
    expected = (flat_u - sent if sparse_ef and sparsifier != "none" else 0) + (
        sent - flat_q if quant_ef else 0
    )
    m_b, m_a = message.private[MEMORY]["l"]
    assert torch.allclose(torch.cat([m_b.reshape(-1), m_a.reshape(-1)]), expected, atol=1e-6)
    assert message.sparse[-1].value_bits == 2 and message.sparse[-1].scales == 1
    assert message.diagnostics["quant_bits"] == 2


def test_without_error_feedback_no_memory_is_kept_and_values_are_on_the_grid():
    message, before = _message(3)
    compress_message(
        message,
        stage=Compression(),
        ratio=1.0,
        model_rank=3,
        memory=None,
        generator=None,
        quantizer=Quantizer(3),
        quantize_generator=torch.Generator().manual_seed(2),
    )
    assert message.private[MEMORY] is None
    flat = torch.cat([t.reshape(-1) for t in _paper(message.shared)])
    m = float(torch.cat([t.reshape(-1) for t in _paper(before)]).abs().max())
    levels_ = flat / (m / 3)
    assert torch.allclose(levels_, levels_.round(), atol=1e-5)


# ---- refusals ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("overrides", "line"),
    [
        ({"quantize.bits": 1}, "quantize.bits: must be >= 2 and <= 16, got 1"),
        ({"quantize.bits": 16, "payload.bits_per_value": 16}, "must be below payload.bits_per"),
        ({"quantize.bits": 4, "quantize.block_size": 0}, "quantize.block_size: must be >= 1"),
    ],
)
def test_bad_values_are_one_line_at_load(overrides, line):
    with pytest.raises(ConfigError, match=line.replace(".", r"\.")):
        small_scenario(**overrides)


def test_an_algorithm_without_lora_updates_refuses_the_quantiser(tmp_path):
    with pytest.raises(ConfigError, match="algorithm 'floral' cannot take a quantiser stage"):
        run_scenario(
            small_scenario(**{"algorithm.name": "floral", "quantize.bits": 4}), tmp_path / "r"
        )
