"""Per-round convergence bound gamma^t of Theorem 1 (eq. 14), the objective of P1/P2/P3.

gamma^t = 2 S^2 H (r_max - r) W^2                       (LoRA rank gap, Assumption 2)
        + 4 S^2 phi r W^2                               (B/A covariance, Assumption 3)
        + eta S E^2 G^2                                 (local SGD noise)
        + 8 (N - K) / (K (N - 1)) eta^2 S^2 E^2 G^2     (partial participation)
        + 4 N (1 - O)^2 / (K O^4) r S^2 W^4             (sparsification error, Lemma 1)
        + E (E - 1)(2E - 1) S^2 eta^2 G^2 / 6           (local drift)

as printed in eq. (14), (15a), (16a) and (29a) of Kim & Choi (docs/solvers.md). Only the
fifth term depends on the sparsification ratio O, so gamma(O) = offset + a (1 - O)^2 / O^4 with
``a = 4 N r S^2 W^4 / K`` (:func:`sparsification_coefficient`) and ``offset`` the other five terms
(:func:`bound_offset`); the solvers use that split.

The bound is dimensionless in the paper's normalisation: the constants are whatever units the
pilot run measured them in (see :mod:`optim.calibration`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from optim._validation import check_int, check_real

__all__ = [
    "BoundConstants",
    "BoundTerms",
    "bound_offset",
    "bound_terms",
    "convergence_bound",
    "scalar_bound_parts",
    "sparsification_coefficient",
]


@dataclass(frozen=True, slots=True)
class BoundConstants:
    """Constants of Theorem 1 (Assumptions 2-6). Construct with keywords; validated on creation.

    The paper gives none of S, H, W, phi, G numerically. The defaults are *normalised* values, not
    physical ones: unit smoothness, LoRA error constant, spectral scale and gradient bound
    (S = H = W = G = 1), a moderate heterogeneity phi = 0.1 (so the covariance term costs 20 % of
    what one extra rank saves in the rank-gap term: increasing r still helps until the
    sparsification term bites), a typical LoRA fine-tuning step eta = 1e-3, E = 5 local iterations
    and r_max = 64, the largest rank in the paper's Fig. 3(c). With N = 100, K = 10 these make
    the rank-gap and sparsification terms of comparable size, so the offline search has an interior
    optimum for moderate delay budgets. For numbers that mean something for a given model and
    data set, estimate them with :func:`optim.calibration.calibrate_constants`.

    Attributes:
        S: smoothness constant of the local objectives (Assumption 4), >= 0.
        H: LoRA rank-error constant (Assumption 2, eq. 11), >= 0.
        W: bound on the largest LoRA singular value sigma(theta_r) (Assumption 6), >= 0.
        phi: heterogeneity constant, ||Cov(theta_B, theta_A)||_F^2 <= phi ||theta_r||_F^2
            (Assumption 3, eq. 13), >= 0.
        G: bound on the stochastic gradient norm (Assumption 6), >= 0.
        eta: local learning rate, > 0.
        E: local iterations per round, integer >= 1.
        r_max: rank of the full fine-tuning stand-in theta_o and the largest rank searched,
            integer >= 1.
    """

    S: float = 1.0
    H: float = 1.0
    W: float = 1.0
    phi: float = 0.1
    G: float = 1.0
    eta: float = 1e-3
    E: int = 5
    r_max: int = 64

    def __post_init__(self) -> None:
        for name in ("S", "H", "W", "phi", "G"):
            object.__setattr__(self, name, check_real(name, getattr(self, name), low=0.0))
        object.__setattr__(self, "eta", check_real("eta", self.eta, low=0.0, low_open=True))
        object.__setattr__(self, "E", check_int("E", self.E, low=1))
        object.__setattr__(self, "r_max", check_int("r_max", self.r_max, low=1))

    def to_dict(self) -> dict[str, float | int]:
        """Plain ``dict`` of the constants (JSON-serialisable)."""
        return asdict(self)


@dataclass(frozen=True, slots=True, eq=False)
class BoundTerms:
    """The six terms of gamma^t (eq. 14), each a float or an array of the broadcast shape.

    Attributes:
        rank_gap: 2 S^2 H (r_max - r) W^2.
        covariance: 4 S^2 phi r W^2.
        local_sgd: eta S E^2 G^2.
        sampling: 8 (N - K) / (K (N - 1)) eta^2 S^2 E^2 G^2 (0 when K = N, including N = 1).
        sparsification: 4 N (1 - O)^2 / (K O^4) r S^2 W^4.
        local_drift: E (E - 1)(2E - 1) S^2 eta^2 G^2 / 6.
    """

    rank_gap: float | NDArray[np.float64]
    covariance: float | NDArray[np.float64]
    local_sgd: float | NDArray[np.float64]
    sampling: float | NDArray[np.float64]
    sparsification: float | NDArray[np.float64]
    local_drift: float | NDArray[np.float64]

    @property
    def total(self) -> float | NDArray[np.float64]:
        """gamma^t, the sum of the six terms."""
        return (
            self.rank_gap
            + self.covariance
            + self.local_sgd
            + self.sampling
            + self.sparsification
            + self.local_drift
        )

    def as_dict(self) -> dict[str, float | NDArray[np.float64]]:
        """The terms by name (handy for plotting), plus ``"total"``."""
        d = {
            "rank_gap": self.rank_gap,
            "covariance": self.covariance,
            "local_sgd": self.local_sgd,
            "sampling": self.sampling,
            "sparsification": self.sparsification,
            "local_drift": self.local_drift,
        }
        d["total"] = self.total
        return d


def _check_population(n_scheduled: object, n_clients: object) -> tuple[int, int]:
    n = check_int("n_clients", n_clients, low=1)
    k = check_int("n_scheduled", n_scheduled, low=1, high=n)
    return k, n


def _check_rank(rank: ArrayLike, r_max: int) -> NDArray[np.float64]:
    arr = np.asarray(rank)
    if arr.dtype == np.bool_ or not (
        np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
    ):
        raise ValueError(f"rank must be an integer in [1, r_max={r_max}]; got {rank!r}")
    f = arr.astype(np.float64)
    if not np.all(np.isfinite(f)) or np.any(f != np.round(f)) or np.any(f < 1) or np.any(f > r_max):
        raise ValueError(f"rank must be an integer in [1, r_max={r_max}]; got {rank!r}")
    return f


def _check_sparsification(sparsification: ArrayLike) -> NDArray[np.float64]:
    o = np.asarray(sparsification, dtype=np.float64)
    if not np.all(np.isfinite(o)) or np.any(o <= 0.0) or np.any(o > 1.0):
        raise ValueError(f"sparsification must be in (0, 1]; got {sparsification!r}")
    return o


def _sampling_factor(k: int, n: int) -> float:
    # 8 (N - K) / (K (N - 1)); the N - 1 denominator vanishes only for N = 1, where K = N and the
    # term is 0 (full participation has no sampling variance).
    return 0.0 if k == n else 8.0 * (n - k) / (k * (n - 1))


def sparsification_coefficient(
    *, rank: ArrayLike, n_scheduled: int, n_clients: int, constants: BoundConstants
) -> float | NDArray[np.float64]:
    """a = 4 N r S^2 W^4 / K, so that the sparsification term of eq. (14) is a (1 - O)^2 / O^4.

    Args:
        rank: LoRA rank r, integer in [1, r_max]; scalar or array.
        n_scheduled: K, clients scheduled this round (1 <= K <= N).
        n_clients: N, clients in the population.
        constants: the Theorem 1 constants.

    Returns:
        a, same shape as ``rank`` (float for a scalar rank).
    """
    k, n = _check_population(n_scheduled, n_clients)
    c = constants
    r = _check_rank(rank, c.r_max)
    a = 4.0 * n * r * c.S**2 * c.W**4 / k
    return float(a) if np.ndim(a) == 0 else a


def scalar_bound_parts(
    *, rank: int, n_scheduled: int, n_clients: int, constants: BoundConstants
) -> tuple[float, float]:
    """``(offset, a)`` with gamma(O) = offset + a (1 - O)^2 / O^4 (eq. 14), for scalar inputs.

    Plain float arithmetic with no validation: the hot path of the online solver, called after
    the caller has checked its arguments.
    """
    c = constants
    s2 = c.S**2
    w2 = c.W**2
    offset = (
        2.0 * s2 * c.H * (c.r_max - rank) * w2
        + 4.0 * s2 * c.phi * rank * w2
        + c.eta * c.S * c.E**2 * c.G**2
        + _sampling_factor(n_scheduled, n_clients) * c.eta**2 * s2 * c.E**2 * c.G**2
        + c.E * (c.E - 1) * (2 * c.E - 1) * s2 * c.eta**2 * c.G**2 / 6.0
    )
    a = 4.0 * n_clients * rank * s2 * w2 * w2 / n_scheduled
    return offset, a


def bound_terms(
    *,
    rank: ArrayLike,
    sparsification: ArrayLike,
    n_scheduled: int,
    n_clients: int,
    constants: BoundConstants,
) -> BoundTerms:
    """The six terms of gamma^t (Theorem 1, eq. 14), broadcast over ``rank`` and ``sparsification``.

    Args:
        rank: LoRA rank r, integer in [1, r_max]; scalar or array.
        sparsification: ratio O of kept entries, in (0, 1]; scalar or array broadcastable with rank.
        n_scheduled: K, clients scheduled in the round (1 <= K <= N).
        n_clients: N, clients in the population (>= 1).
        constants: the Theorem 1 constants.

    Returns:
        :class:`BoundTerms`; each field a float when both inputs are scalars, else an array of
        the broadcast shape.
    """
    k, n = _check_population(n_scheduled, n_clients)
    c = constants
    r = _check_rank(rank, c.r_max)
    o = _check_sparsification(sparsification)
    r, o = np.broadcast_arrays(r, o)
    s2 = c.S**2
    ones = np.ones(r.shape)
    terms = {
        "rank_gap": 2.0 * s2 * c.H * (c.r_max - r) * c.W**2,
        "covariance": 4.0 * s2 * c.phi * r * c.W**2,
        "local_sgd": c.eta * c.S * c.E**2 * c.G**2 * ones,
        "sampling": _sampling_factor(k, n) * c.eta**2 * s2 * c.E**2 * c.G**2 * ones,
        "sparsification": 4.0 * n * (1.0 - o) ** 2 / (k * o**4) * r * s2 * c.W**4,
        "local_drift": c.E * (c.E - 1) * (2 * c.E - 1) * s2 * c.eta**2 * c.G**2 / 6.0 * ones,
    }
    if r.ndim == 0:
        return BoundTerms(**{name: float(v) for name, v in terms.items()})
    return BoundTerms(**terms)


def bound_offset(
    *, rank: ArrayLike, n_scheduled: int, n_clients: int, constants: BoundConstants
) -> float | NDArray[np.float64]:
    """The five O-independent terms of gamma^t (eq. 14): gamma(O) = offset + a (1 - O)^2 / O^4."""
    t = bound_terms(
        rank=rank,
        sparsification=1.0,
        n_scheduled=n_scheduled,
        n_clients=n_clients,
        constants=constants,
    )
    return t.total  # the sparsification term is 0 at O = 1


def convergence_bound(
    *,
    rank: ArrayLike,
    sparsification: ArrayLike,
    n_scheduled: int,
    n_clients: int,
    constants: BoundConstants,
) -> float | NDArray[np.float64]:
    """gamma^t of Theorem 1 (eq. 14; the summand of eq. 15a, gamma^0 of eq. 16a, gamma^t of 29a).

    Args:
        rank: LoRA rank r, integer in [1, r_max]; scalar or array.
        sparsification: ratio O of kept entries, in (0, 1]; scalar or array broadcastable with rank.
        n_scheduled: K, clients scheduled in the round (1 <= K <= N).
        n_clients: N, clients in the population (>= 1).
        constants: the Theorem 1 constants.

    Returns:
        gamma^t (dimensionless): a float for scalar inputs, else an array of the broadcast shape.

    Raises:
        ValueError: rank outside [1, r_max], sparsification outside (0, 1], K > N, K < 1, ...
    """
    return bound_terms(
        rank=rank,
        sparsification=sparsification,
        n_scheduled=n_scheduled,
        n_clients=n_clients,
        constants=constants,
    ).total
