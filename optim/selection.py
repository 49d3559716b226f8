"""Client selection: which K of the N clients are scheduled in a round.

Methods are looked up by name in :data:`SELECTION_METHODS`; a new rule is one function with the
signature of :func:`_uniform` plus one registry line.

- ``"uniform"``: K of N uniformly at random without replacement (the paper's a_k^t; the
  expectation in eq. 18-19 assumes it).
- ``"best_snr"``: the K clients with the largest instantaneous SNR (channel-aware), ties broken
  by the lower client index.
- ``"proportional_fair"``: the K largest PF metrics
  m_k = log2(1 + SNR_k) / R_bar_k, the instantaneous spectral efficiency over the client's
  average throughput R_bar_k (any consistent unit, e.g. the exponentially weighted mean of the
  spectral efficiency it obtained when scheduled, 0 when never served); R_bar_k = 0 gives m_k =
  inf (never-served clients first), ties broken by the lower index. See
  :func:`update_average_rate` for the usual EWMA update.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from channels.fdma import spectral_efficiency
from channels.registry import Registry
from optim._validation import check_int, check_nonneg_array, check_real, check_snr

__all__ = ["SELECTION_METHODS", "select_clients", "update_average_rate"]

# (rng, n_clients, n_scheduled, snr or None, average_rate or None) -> indices (unsorted ok)
SelectionMethod = Callable[
    [np.random.Generator, int, int, NDArray[np.float64] | None, NDArray[np.float64] | None],
    NDArray[np.int64],
]


def _top_k(metric: NDArray[np.float64], k: int) -> NDArray[np.int64]:
    # stable sort on -metric: equal metrics keep index order, so ties go to the lower index
    return np.argsort(-metric, kind="stable")[:k].astype(np.int64)


def _uniform(
    rng: np.random.Generator,
    n: int,
    k: int,
    snr: NDArray[np.float64] | None,
    avg: NDArray[np.float64] | None,
) -> NDArray[np.int64]:
    return rng.choice(n, size=k, replace=False).astype(np.int64)


def _best_snr(
    rng: np.random.Generator,
    n: int,
    k: int,
    snr: NDArray[np.float64] | None,
    avg: NDArray[np.float64] | None,
) -> NDArray[np.int64]:
    if snr is None:
        raise ValueError("snr is required for method='best_snr' (an (n_clients,) array)")
    return _top_k(snr, k)


def _proportional_fair(
    rng: np.random.Generator,
    n: int,
    k: int,
    snr: NDArray[np.float64] | None,
    avg: NDArray[np.float64] | None,
) -> NDArray[np.int64]:
    if snr is None or avg is None:
        raise ValueError(
            "snr and average_rate are required for method='proportional_fair' "
            "(two (n_clients,) arrays)"
        )
    inst = spectral_efficiency(snr)
    with np.errstate(divide="ignore", invalid="ignore"):
        metric = np.where(avg > 0.0, inst / np.where(avg > 0.0, avg, 1.0), np.inf)
    return _top_k(metric, k)


#: Selection rules by name; a new rule is one function plus one line here (or a ``register``
#: call, or an entry point of the group ``optim.selection_methods``).
SELECTION_METHODS: Registry[SelectionMethod] = Registry(
    "selection method",
    {
        "uniform": _uniform,
        "best_snr": _best_snr,
        "proportional_fair": _proportional_fair,
    },
    entry_point_group="optim.selection_methods",
)


def select_clients(
    rng: np.random.Generator,
    *,
    n_clients: int,
    n_scheduled: int,
    method: str = "uniform",
    snr: ArrayLike | None = None,
    average_rate: ArrayLike | None = None,
) -> NDArray[np.int64]:
    """Pick the K clients scheduled this round.

    Args:
        rng: the Generator for this round's ``selection`` stream (only ``"uniform"`` draws).
        n_clients: N >= 1.
        n_scheduled: K in [1, N].
        method: a key of :data:`SELECTION_METHODS`.
        snr: (N,) instantaneous linear SNRs, finite and >= 0 (``best_snr``,
            ``proportional_fair``).
        average_rate: (N,) average throughput R_bar_k, finite and >= 0 (``proportional_fair``).

    Returns:
        (K,) sorted int64 client indices, distinct.
    """
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator; got {type(rng).__name__}")
    n = check_int("n_clients", n_clients, low=1)
    k = check_int("n_scheduled", n_scheduled, low=1, high=n)
    rule = SELECTION_METHODS.load(method)  # UnknownNameError (a ValueError) lists the names
    s = None if snr is None else check_snr("snr", snr, length=n, strictly_positive=False)
    avg = (
        None if average_rate is None else check_nonneg_array("average_rate", average_rate, length=n)
    )
    return np.sort(rule(rng, n, k, s, avg))


def update_average_rate(
    average_rate: ArrayLike, *, scheduled: ArrayLike, served_rate: ArrayLike, beta: float = 0.1
) -> NDArray[np.float64]:
    """EWMA throughput update for proportional fairness.

    R_bar_k <- (1 - beta) R_bar_k + beta * served_k, with served_k the rate client k obtained this
    round (0 when not scheduled).

    Args:
        average_rate: (N,) current R_bar, >= 0.
        scheduled: (K,) indices of the clients served this round.
        served_rate: (K,) their achieved rates (same unit as R_bar), >= 0.
        beta: smoothing factor in (0, 1].

    Returns:
        (N,) the new averages (a new array).
    """
    avg = check_nonneg_array("average_rate", average_rate)
    b = check_real("beta", beta, low=0.0, high=1.0, low_open=True)
    idx = np.asarray(scheduled, dtype=np.int64)
    rate = np.asarray(served_rate, dtype=np.float64)
    if idx.shape != rate.shape or idx.ndim != 1:
        raise ValueError(
            f"scheduled and served_rate must be 1-D of equal length; got {idx.shape}, {rate.shape}"
        )
    if idx.size and (idx.min() < 0 or idx.max() >= avg.size):
        raise ValueError(f"scheduled indices must be in [0, {avg.size - 1}]")
    if not np.all(np.isfinite(rate)) or np.any(rate < 0):
        raise ValueError("served_rate must be finite and >= 0")
    served = np.zeros_like(avg)
    served[idx] = rate
    return (1.0 - b) * avg + b * served
