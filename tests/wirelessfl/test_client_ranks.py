"""Clients of a lower rank train on the one wrapped model as their unpadded selves.

Independent reference: the same base model wrapped by peft directly at the client's rank r_k,
started from the same factors, trained on the same batches. The runtime's model is wrapped
at r > r_k; the client's factors are zero-padded and its LoRA output scaled by alpha / r_k.
float32 matmuls of different shapes round differently, hence the tolerances.
"""

from __future__ import annotations

import pytest
from scenario_helpers import digits_scenario

from wirelessfl.plans import ClientPlan

torch = pytest.importorskip("torch")

from wirelessfl.training.private_state import PrivateState  # noqa: E402
from wirelessfl.training.rank_padding import truncate_rank  # noqa: E402
from wirelessfl.training.runtime import Runtime  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ZETA = 0.01  # eq. (2)'s regularizer on, as SOFT trains


def _runtime(rank: int, trainer: str = "sequential", optimizer: str = "adam") -> Runtime:
    sc = digits_scenario(
        **{
            "learner.trainer": trainer,
            "learner.optimizer": optimizer,
            "learner.lr": 0.05,
        }
    )
    runtime = Runtime(sc)
    runtime.start(rank=rank, seed=sc.seed)
    return runtime


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_padded_client_trains_like_a_model_wrapped_at_its_rank(optimizer):
    wide, narrow = _runtime(4, optimizer=optimizer), _runtime(2, optimizer=optimizer)
    layers = wide.state.layers
    start = truncate_rank(wide.initial_state(), layers, 2)
    start = {k: v + 0.01 * torch.randn_like(v) for k, v in start.items()}  # nonzero B too
    plans = [ClientPlan(3, 0, 2, 1.0), ClientPlan(6, 0, 4, 1.0)]
    full = {k: v.clone() for k, v in wide.initial_state().items()}
    got = wide.train(plans, [start, full], PrivateState(), zeta=ZETA)
    want = narrow.train(plans[:1], [start], PrivateState(), zeta=ZETA)[0]
    assert {k: tuple(v.shape) for k, v in got[0].local.items()} == {
        k: tuple(v.shape) for k, v in want.local.items()
    }
    for name, value in want.local.items():
        torch.testing.assert_close(got[0].local[name], value, rtol=1e-4, atol=1e-6)
    assert got[0].mean_loss == pytest.approx(want.mean_loss, rel=1e-5)
    # the model's own scaling is restored for the next client (trained at the full rank)
    alone = wide.train(plans[1:], [full], PrivateState(), zeta=ZETA)[0]
    for name, value in alone.local.items():
        torch.testing.assert_close(got[1].local[name], value, rtol=0, atol=0)


def test_batched_trainer_gives_the_sequential_result_for_mixed_ranks():
    seq, bat = _runtime(4), _runtime(4, trainer="batched")
    layers = seq.state.layers
    g = seq.initial_state()
    starts = [truncate_rank(g, layers, 1), g, truncate_rank(g, layers, 2)]
    plans = [ClientPlan(c, 2, r, 1.0) for c, r in zip((0, 1, 5), (1, 4, 2), strict=True)]
    a = seq.train(plans, starts, PrivateState(), zeta=ZETA)
    b = bat.train(plans, starts, PrivateState(), zeta=ZETA)
    for x, y in zip(a, b, strict=True):
        for name in x.local:
            torch.testing.assert_close(x.local[name], y.local[name], rtol=1e-4, atol=1e-6)


def test_evaluation_of_a_lower_rank_state_uses_its_own_scaling():
    wide, narrow = _runtime(4), _runtime(2)
    state = truncate_rank(wide.initial_state(), wide.state.layers, 2)
    state = {k: v + 0.05 * torch.randn_like(v) for k, v in state.items()}
    assert wide.evaluate(state) == pytest.approx(narrow.evaluate(state), rel=1e-5)
