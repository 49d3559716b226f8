"""Client-level DP's adjacency (``privacy.adjacency``, docs/privacy.md "Adjacency") and the
accounting of adaptive clipping, against independent computations.

- The largest move of the server's release theta + sum_k w_k Delta_k when one client is
  removed, zeroed or replaced, found by search over adversarial and random clipped updates,
  is at most the sensitivity the noise is scaled to (the std over z), for every adjacency the
  scenario accepts; removal under weights normalised over the arrived clients moves it by
  nearly 2 w_k C, which is why ``add_remove`` refuses them.
- A real adaptive-clipping run (K = 10, sigma_b = 0.5, z = 0.8): the clip norms it reports
  are those of the *centred* count released with the run's own noise draws, the update noise
  it adds is measured by Monte Carlo, and Opacus's accountant stepped by hand at the combined
  multiplier of the two releases gives the ``dp_epsilon`` of ``rounds.csv``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scenario_helpers import digits_scenario

from wirelessfl.errors import ConfigError
from wirelessfl.registries import AGGREGATIONS

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from opacus.accountants import RDPAccountant  # noqa: E402

from wirelessfl.models.rng import torch_generator  # noqa: E402
from wirelessfl.privacy.accounting import sampling_rate  # noqa: E402
from wirelessfl.privacy.stage import PrivacyStage  # noqa: E402
from wirelessfl.sim.runner import Run  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

N, K, C, Z = 8, 4, 0.5, 1.3
#: unequal data fractions p_k: the largest weight sets the noise
P = np.array([0.05, 0.25, 0.1, 0.1, 0.1, 0.15, 0.05, 0.2])


def _scenario(rule: str, adjacency: str):
    return digits_scenario(
        **{
            "algorithm.name": "fedit",
            "privacy.mode": "central",
            "privacy.clip_norm": C,
            "privacy.noise_multiplier": Z,
            "privacy.adjacency": adjacency,
            "strategy.aggregation": rule,
        }
    )


def _release(rule: str, arrived: list[int], updates: np.ndarray) -> np.ndarray:
    """sum_k w_k Delta_k over ``arrived`` with the rule's weights (the noise-free release)."""
    weights = AGGREGATIONS.load(rule)([float(P[k]) for k in arrived], N, K)
    return sum(w * updates[k] for w, k in zip(weights, arrived, strict=True))


def _updates(rng: np.random.Generator, client: int, dim: int = 6) -> list[np.ndarray]:
    """Clipped updates (N, dim), norm <= C: the adversarial case (the client against all the
    others, on one axis) and random ones."""
    axis = np.zeros(dim)
    axis[0] = C
    opposed = np.tile(axis, (N, 1))
    opposed[client] = -axis
    cases = [opposed]
    for _ in range(40):
        raw = rng.normal(size=(N, dim))
        cases.append(C * raw / np.maximum(np.linalg.norm(raw, axis=1, keepdims=True), C))
    return cases


def _largest_move(rule: str, how: str, rng: np.random.Generator) -> float:
    """max over arrived sets, clients and updates of ||release - neighbour's release|| over
    the sensitivity the stage's noise covers for that set (its std / z)."""
    stage = PrivacyStage(_scenario(rule, "replace" if how == "replace" else "zero_out"), P)
    worst = 0.0
    for arrived in ([0, 1, 2, 3], [1, 5, 7], [0, 3, 6, 7], [2, 4]):
        weights = AGGREGATIONS.load(rule)([float(P[k]) for k in arrived], N, K)
        covered = stage.noise_std(weights) / Z
        for client in arrived:
            for updates in _updates(rng, client):
                here = _release(rule, arrived, updates)
                if how == "remove":
                    there = _release(rule, [k for k in arrived if k != client], updates)
                else:
                    other = updates.copy()
                    other[client] = 0.0 if how == "zero" else -updates[client]
                    there = _release(rule, arrived, other)
                worst = max(worst, float(np.linalg.norm(here - there)) / covered)
    return worst


@pytest.mark.parametrize(
    ("rule", "how"),
    [
        ("unbiased", "remove"),  # add_remove: the fixed denominator
        ("unbiased", "zero"),
        ("weighted_mean", "zero"),  # zero_out, the default
        ("unbiased", "replace"),
        ("weighted_mean", "replace"),
    ],
)
def test_the_noise_covers_the_largest_move_of_one_client(rule, how):
    ratio = _largest_move(rule, how, np.random.default_rng(0))
    assert 0.9 < ratio <= 1 + 1e-12  # covered, and nearly reached: the noise is not wasted


def test_removal_under_normalised_weights_moves_nearly_twice_and_is_refused():
    ratio = _largest_move("weighted_mean", "remove", np.random.default_rng(0))
    assert ratio > 1.5  # zero_out's noise would not cover it (up to 2 w_k C)
    with pytest.raises(ConfigError) as err:
        _scenario("weighted_mean", "add_remove")
    text = str(err.value)
    assert "\n" not in text and "strategy.aggregation: unbiased" in text
    assert sampling_rate(_scenario("unbiased", "add_remove")) == pytest.approx(K / N)


@pytest.mark.parametrize(
    ("overrides", "words"),
    [
        ({"privacy.mode": "local"}, "who sends is public"),
        ({"server.mode": "async"}, "every client in flight"),
    ],
)
def test_add_remove_refusals_are_one_line(overrides, words):
    with pytest.raises(ConfigError) as err:
        digits_scenario(
            **{
                "algorithm.name": "fedit",
                "privacy.mode": "central",
                "privacy.adjacency": "add_remove",
                "strategy.aggregation": "unbiased",
                **overrides,
            }
        )
    assert words in str(err.value) and "\n" not in str(err.value)


def test_local_noise_doubles_under_replace():
    for adjacency, factor in (("zero_out", 1.0), ("replace", 2.0)):
        sc = digits_scenario(
            **{
                "algorithm.name": "fedit",
                "privacy.mode": "local",
                "privacy.clip_norm": C,
                "privacy.noise_multiplier": Z,
                "privacy.adjacency": adjacency,
            }
        )
        update = {"x": torch.zeros(100_000)}
        PrivacyStage(sc).before_compression(update, torch_generator(0, "t", 0, 0))
        n = update["x"].numel()
        assert float(update["x"].std()) == pytest.approx(factor * Z * C, rel=5 / math.sqrt(2 * n))


# ---- adaptive clipping, accounted end to end --------------------------------------------------
SIGMA_B, Z_TOTAL, ETA, GAMMA, ROUNDS = 0.5, 0.8, 0.2, 0.5, 10


def test_adaptive_clipping_epsilon_is_opacus_at_the_multiplier_the_releases_have(tmp_path):
    sc = digits_scenario(
        n_clients=20,
        n_scheduled=10,
        rounds=ROUNDS,
        eval_every=ROUNDS,
        **{
            "algorithm.name": "fedit",
            "privacy.mode": "central",
            "privacy.noise_multiplier": Z_TOTAL,
            "privacy.clip_norm": 0.05,
            "privacy.adaptive_clipping": True,
            "privacy.count_noise": SIGMA_B,
            "privacy.clip_lr": ETA,
            "privacy.target_quantile": GAMMA,
            "faults.dropout_prob": 0.3,  # fewer than K arrive: centred and plain counts differ
        },
    )
    rounds = Run(sc, tmp_path / "run").execute().rounds
    assert len(rounds) == ROUNDS
    assert (rounds.n_arrived[: ROUNDS - 1] < 10).any()

    # 1. the count released is the centred one, with the run's own draws: C_{t+1} / C_t
    #    = exp(-eta (b_hat_t - gamma)), b_hat_t = clip(1/2 + (u_t - n_t / 2 + sigma_b xi_t) / K)
    clip = rounds.dp_clip_norm.to_numpy()
    for t in range(ROUNDS - 1):
        n_t = int(rounds.n_arrived[t])
        unclipped = round(n_t * (1.0 - rounds.dp_clipped_fraction[t]))
        g = torch_generator(sc.seed, "dp_clip_count", 0, t)
        xi = float(torch.randn((), generator=g, dtype=torch.float64))
        b_hat = min(1.0, max(0.0, 0.5 + (unclipped - n_t / 2 + SIGMA_B * xi) / 10))
        assert clip[t + 1] == pytest.approx(clip[t] * math.exp(-ETA * (b_hat - GAMMA)), rel=1e-9)
    assert len(set(clip)) > 1
    # each client's term b_k - 1/2 is +-1/2 against none: the count's multiplier sigma_b / (1/2)
    count_multiplier = SIGMA_B / 0.5

    # 2. the update noise, measured: std of what the release adds, over C max_k w_k
    stage = PrivacyStage(sc)
    zeros = {"x": torch.zeros(200_000)}
    weights = [0.1] * 10
    stage.release(zeros, ["x"], weights, torch_generator(0, "measure", 0, 0))
    measured = float(zeros["x"].double().std()) / (stage.clip_norm * max(weights))
    n = zeros["x"].numel()

    # 3. the two releases together: one Gaussian mechanism at z_real (Andrew et al., Thm 1)
    z_real = (measured**-2 + count_multiplier**-2) ** -0.5
    assert z_real == pytest.approx(Z_TOTAL, rel=5 / math.sqrt(2 * n))
    by_hand = RDPAccountant()
    for _ in range(ROUNDS):  # weighted_mean, zero_out: no amplification, q = 1
        by_hand.step(noise_multiplier=Z_TOTAL, sample_rate=1.0)
    reported = float(rounds.dp_epsilon.iloc[-1])
    assert reported == pytest.approx(by_hand.get_epsilon(stage.delta), rel=1e-12)
    # the uncentred count under the old z_Delta was a mechanism at 0.468, epsilon about 38
    old = (Z_TOTAL**-2 - (2 * SIGMA_B) ** -2 + SIGMA_B**-2) ** -0.5
    assert old == pytest.approx(0.468, abs=1e-3)
