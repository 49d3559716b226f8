"""zeta (eq. 2) is a SOFT setting, and SOFT's importance weights (eq. 3) come from the update
or from the local factors (``compression.importance``).

Budgets are checked against a direct numpy computation of eq. (3): o_i close to
n_keep * w_i / sum_j w_j with w_i = ||B[:, i]||^2 ||A[i, :]||^2 of the chosen matrices, summing
to the layer's budget.
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from scenario_helpers import digits_scenario

from wirelessfl.algorithms.base import FederatedAlgorithm
from wirelessfl.algorithms.soft.algorithm import SoftFamily
from wirelessfl.algorithms.soft.settings import SOFT_ZETA
from wirelessfl.config import load_scenario, scenario_from_dict
from wirelessfl.config.loader import SCENARIO_DIR, scenario_yaml

FIG3AB = SCENARIO_DIR / "paper" / "fig3ab_sparsifiers.yaml"


# ---- A. zeta belongs to SOFT -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("sparsifier", "zeta"),
    [("soft", SOFT_ZETA), ("topk", 0.0), ("random", 0.0), ("structured", 0.0), ("none", 0.0)],
)
def test_null_zeta_is_the_papers_reading_and_written_as_a_number(sparsifier, zeta):
    sc = load_scenario(FIG3AB, [f"compression.sparsifier={sparsifier}"])
    assert sc.strategy.zeta == zeta
    written = yaml.safe_load(scenario_yaml(sc))["strategy"]["soft"]["zeta"]
    assert isinstance(written, float) and written == zeta
    assert SoftFamily(sc.strategy, scenario=sc).orthogonality_weight() == zeta
    again = scenario_from_dict(yaml.safe_load(scenario_yaml(sc)))  # config.yaml reads back
    assert again.strategy.zeta == zeta


def test_soft_default_is_the_shipped_value():
    assert SOFT_ZETA == 1.0e-3


def test_an_explicit_zeta_applies_to_any_sparsifier():
    sc = load_scenario(FIG3AB, ["compression.sparsifier=topk", "strategy.zeta=0.02"])
    assert SoftFamily(sc.strategy, scenario=sc).orthogonality_weight() == 0.02
    sc = load_scenario(FIG3AB, ["strategy.zeta=0"])
    assert SoftFamily(sc.strategy, scenario=sc).orthogonality_weight() == 0.0


def test_other_algorithms_train_without_the_regularizer_by_default():
    assert FederatedAlgorithm.orthogonality_weight(None) == 0.0  # type: ignore[arg-type]


class _Recorder:
    """A runtime stand-in that records what the algorithm's train step asks for."""

    def __init__(self):
        self.calls = []

    def train(self, plans, starts, private, **kwargs):
        self.calls.append(kwargs)
        return []


@pytest.mark.parametrize("sparsifier", ["soft", "topk"])
def test_the_algorithm_passes_its_zeta_to_the_runtime(sparsifier):
    sc = load_scenario(FIG3AB, [f"compression.sparsifier={sparsifier}"])
    algo = SoftFamily(sc.strategy, scenario=sc)
    algo.runtime = _Recorder()  # type: ignore[assignment]
    algo.train([], [], None)  # type: ignore[arg-type]
    assert algo.runtime.calls == [
        {
            "zeta": SOFT_ZETA if sparsifier == "soft" else 0.0,
            "frozen": frozenset(),
            "record_grad_norms": False,
            "rank_scaling": "own_rank",  # SOFT's clients train their own rank (not a sketch)
        }
    ]


# ---- B. SOFT's importance weights: update or factors -------------------------------------------
torch = pytest.importorskip("torch")

from wirelessfl.compress import compress_update  # noqa: E402
from wirelessfl.compress.soft import SoftSparsifier  # noqa: E402


def _direct_quota(B: np.ndarray, A: np.ndarray, n_keep: int) -> np.ndarray:
    """eq. (3) computed directly: n_keep * w_i / sum_j w_j, w_i = ||B[:, i]||^2 ||A[i, :]||^2."""
    w = np.array([np.sum(B[:, i] ** 2) * np.sum(A[i, :] ** 2) for i in range(B.shape[1])])
    return n_keep * w / w.sum()


def _pair(rng, d, r, l, col_scale, row_scale):
    B = rng.standard_normal((d, r)) * np.asarray(col_scale)[None, :]
    A = rng.standard_normal((r, l)) * np.asarray(row_scale)[:, None]
    return B, A


def _per_component(mask_B, mask_A) -> np.ndarray:
    return (mask_B.sum(dim=0) + mask_A.sum(dim=1)).numpy()


@pytest.mark.parametrize("importance", ["update", "factors"])
def test_budgets_follow_eq3_of_the_chosen_matrices(importance):
    rng = np.random.default_rng(7)
    d, r, l = 12, 4, 9
    # the update favours component 0, the factors component 3: the two readings differ
    uB, uA = _pair(rng, d, r, l, [1.4, 1.0, 0.9, 0.8], [1.2, 1.0, 0.9, 0.8])
    fB, fA = _pair(rng, d, r, l, [0.8, 0.9, 1.0, 1.4], [0.8, 0.9, 1.0, 1.2])
    ratio = 0.3
    n_keep = round(ratio * r * (d + l))
    chosen = (uB, uA) if importance == "update" else (fB, fA)
    quota = _direct_quota(*chosen, n_keep)
    assert quota.max() <= d + l  # no cap in play: budgets are the rounded quotas

    t = {k: torch.tensor(v) for k, v in {"uB": uB, "uA": uA, "fB": fB, "fA": fA}.items()}
    weights_from = (t["fB"], t["fA"]) if importance == "factors" else None
    budget = SoftSparsifier().component_budget(t["uB"], t["uA"], n_keep, weights_from).numpy()
    assert budget.sum() == n_keep
    assert np.all(np.abs(budget - quota) < 1.0)

    out = compress_update(
        {"layer": (t["uB"], t["uA"])},
        None,
        sparsifier="soft",
        ratio=ratio,
        importance_from={"layer": (t["fB"], t["fA"])} if importance == "factors" else None,
    )
    sB, sA = out.sent["layer"]
    counts = _per_component(sB != 0, sA != 0)
    assert counts.sum() == n_keep == out.n_kept
    assert np.array_equal(counts, budget)
    # the entries sent are u's (the factors only weigh the components), each the largest of its
    # component: every kept magnitude >= every dropped one within a component
    comp_u = np.concatenate([np.abs(uB).T, np.abs(uA)], axis=1)
    comp_s = np.concatenate([sB.numpy().T, sA.numpy()], axis=1)
    for i in range(r):
        kept = comp_s[i] != 0
        assert np.allclose(comp_s[i][kept], np.concatenate([uB[:, i], uA[i, :]])[kept])
        if kept.any() and (~kept).any():
            assert comp_u[i][kept].min() >= comp_u[i][~kept].max()


def test_the_two_readings_give_different_budgets_here():
    rng = np.random.default_rng(7)
    d, r, l = 12, 4, 9
    uB, uA = _pair(rng, d, r, l, [1.4, 1.0, 0.9, 0.8], [1.2, 1.0, 0.9, 0.8])
    fB, fA = _pair(rng, d, r, l, [0.8, 0.9, 1.0, 1.4], [0.8, 0.9, 1.0, 1.2])
    n_keep = 25
    soft = SoftSparsifier()
    u = soft.component_budget(torch.tensor(uB), torch.tensor(uA), n_keep).numpy()
    f = soft.component_budget(
        torch.tensor(uB), torch.tensor(uA), n_keep, (torch.tensor(fB), torch.tensor(fA))
    ).numpy()
    assert u.argmax() == 0 and f.argmax() == 3


def test_weights_from_must_match_the_shapes():
    B, A = torch.ones(5, 3), torch.ones(3, 4)
    with pytest.raises(ValueError, match="weights_from shapes"):
        SoftSparsifier().masks(B, A, 6, weights_from=(torch.ones(5, 2), torch.ones(2, 4)))


@pytest.mark.parametrize("name", ["topk", "structured", "none"])
def test_other_sparsifiers_ignore_importance_from(name):
    rng = np.random.default_rng(3)
    B, A = (torch.tensor(x) for x in _pair(rng, 8, 3, 6, [1, 2, 3], [3, 2, 1]))
    other = {"layer": (torch.ones_like(B), torch.ones_like(A))}
    plain = compress_update({"layer": (B, A)}, None, sparsifier=name, ratio=0.4)
    given = compress_update(
        {"layer": (B, A)}, None, sparsifier=name, ratio=0.4, importance_from=other
    )
    for x, y in zip(plain.sent["layer"], given.sent["layer"], strict=True):
        assert torch.equal(x, y)


def test_error_feedback_holds_with_factor_weights():
    rng = np.random.default_rng(11)
    dB, dA = (torch.tensor(x) for x in _pair(rng, 10, 4, 7, [1, 1, 1, 1], [1, 1, 1, 1]))
    mB, mA = (torch.tensor(x) for x in _pair(rng, 10, 4, 7, [0.3] * 4, [0.3] * 4))
    fB, fA = (torch.tensor(x) for x in _pair(rng, 10, 4, 7, [3, 1, 1, 0.1], [1, 1, 1, 1]))
    out = compress_update(
        {"layer": (dB, dA)},
        {"layer": (mB, mA)},
        sparsifier="soft",
        ratio=0.25,
        importance_from={"layer": (fB, fA)},
    )
    (sB, sA), (nB, nA) = out.sent["layer"], out.memory["layer"]
    torch.testing.assert_close(sB + nB, mB + dB, rtol=0, atol=0)  # eqs. (4)-(5)
    torch.testing.assert_close(sA + nA, mA + dA, rtol=0, atol=0)


# ---- both, end to end on a small run ------------------------------------------------------------
@pytest.mark.usefixtures("one_torch_thread")
@pytest.mark.parametrize(
    ("overrides", "zeta"),
    [
        ({"strategy.zeta": None}, SOFT_ZETA),
        ({"strategy.zeta": None, "compression.sparsifier": "topk"}, 0.0),
        ({"compression.importance": "factors"}, 0.01),
    ],
)
def test_a_run_trains_with_the_algorithms_zeta(overrides, zeta, tmp_path, monkeypatch):
    from wirelessfl.sim import run_scenario
    from wirelessfl.training.runtime import Runtime

    seen = []
    original = Runtime.train

    def spy(self, *args, **kwargs):
        seen.append(kwargs["zeta"])
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Runtime, "train", spy)
    sc = digits_scenario(rounds=2, eval_every=2, **{"output.checkpoint_every": 0, **overrides})
    result = run_scenario(sc, tmp_path / "run")
    assert result.finished and seen == [zeta, zeta]
    written = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())["strategy"]["soft"]
    assert written["zeta"] == zeta
    assert np.allclose(result.rounds["algo.sent_fraction"], 0.5, atol=0.01)
