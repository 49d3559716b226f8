"""Offline stage of TSFA: Lemma 2 (eq. 17-20) and the rank search of Algorithm 2 (problem P2).

Before training only the average channel is known, so the offline stage plans with the mean SNRs
SNR_bar_k of all N clients. With equal-delay shares every scheduled client finishes together, and
averaging over a uniformly drawn set of K of the N clients (eq. 18-19) gives the expected delay

    D^0(O, r) = (K / N) sum_{k=1}^N v O r p / (B log2(1 + SNR_bar_k)) = (K / N) A O r     [s],
    A = sum_{k=1}^N v p / (B log2(1 + SNR_bar_k))                                        [s].

Lemma 2 erratum (docs/solvers.md): setting D^0 = D_th gives

    O^0 = clip(N D_th / (A K r), O_min, 1);

the paper prints N / (A K r), dropping D_th, which is not dimensionless. gamma^0 decreases in O,
so the largest O meeting (16c) is optimal. When even O = O_min gives D^0 > D_th the rank violates
(16c) and is infeasible (gamma^0 = inf). (16d) is printed as O_min < O^0; we use the closed
interval O_min <= O^0 of (29b) so that O_min itself is admissible.

Algorithm 2 scans r = 1..r_max and keeps the smallest gamma^0 (ties: the smaller r).

Planning channel. The online delay is linear in 1/log2(1 + SNR_k^t), so the delay the online
stage meets on average is (K/N) sum_k v O r p E[1/log2(1 + SNR_k)] / B, and by Jensen
(1/log2(1 + x) is convex) E[1/log2(1 + SNR)] > 1/log2(1 + SNR_bar): the paper's average channel
is optimistic (docs/solvers.md, "The offline stage"). Every function here therefore takes an
optional ``inverse_efficiency`` (N,), the per-client w_k [s Hz / bit] that replaces
1/log2(1 + SNR_bar_k) in A; :func:`planning_inverse_efficiency` gives w for the two planners of
:data:`OFFLINE_CHANNELS`:

- ``mean_snr`` (the paper): w_k = 1/log2(1 + SNR_bar_k);
- ``expected_rate``: w_k = E[1{SNR_k >= theta} / log2(1 + SNR_k)] under unit-mean Rayleigh
  fading with the simulator's outage threshold theta (a client in outage sends nothing, so it
  adds no delay), or, with no outage threshold, E[1/log2(1 + SNR_k) | SNR_k >= theta_eps] with
  theta_eps the eps-quantile of client k's SNR (eps = ``outage_prob``, default 0.01): without a
  cut-off the expectation diverges (the integrand behaves like ln 2 / SNR near 0).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from channels.capacity import rayleigh_inverse_efficiency, rayleigh_outage_snr
from channels.fdma import full_band_upload_s
from optim._validation import check_int, check_nonneg_array, check_real, check_snr
from optim.bound import BoundConstants, convergence_bound

__all__ = [
    "DEFAULT_PLANNING_OUTAGE_PROB",
    "affine_offline_ratio",
    "OFFLINE_CHANNELS",
    "InfeasibleError",
    "OfflineResult",
    "average_delay_s",
    "offline_rank_search",
    "offline_sparsification",
    "planning_inverse_efficiency",
]

#: The offline stage's channel models (see the module docstring).
OFFLINE_CHANNELS = ("mean_snr", "expected_rate")
#: eps of ``expected_rate`` without an outage threshold: the planner ignores each client's
#: fading states below its eps-quantile (1 %; docs/solvers.md gives the reasons and the
#: sensitivity of the rank to eps).
DEFAULT_PLANNING_OUTAGE_PROB = 0.01


class InfeasibleError(ValueError):
    """No rank meets the delay budget (16c) even at O = O_min."""


@dataclass(frozen=True, slots=True, eq=False)
class OfflineResult:
    """Outcome of :func:`offline_rank_search` (Algorithm 2); immutable, ``==`` is identity.

    Attributes:
        rank: the chosen rank r-bar (argmin of gamma^0; ties go to the smaller rank).
        sparsification: O^0 at that rank (Lemma 2).
        bound: gamma^0 at (rank, sparsification).
        delay_s: expected round delay D^0 [s] at (rank, sparsification).
        ranks: (r_max,) the ranks scanned, 1..r_max.
        bounds: (r_max,) gamma^0 per rank; inf where the rank is infeasible.
        sparsifications: (r_max,) O^0 per rank (O_min where infeasible).
        feasible: (r_max,) bool, whether D^0(O_min, r) <= D_th.
        delays_s: (r_max,) expected delay D^0 [s] at O^0 per rank.
    """

    rank: int
    sparsification: float
    bound: float
    delay_s: float
    ranks: NDArray[np.int64]
    bounds: NDArray[np.float64]
    sparsifications: NDArray[np.float64]
    feasible: NDArray[np.bool_]
    delays_s: NDArray[np.float64]


def planning_inverse_efficiency(
    mean_snr: ArrayLike,
    *,
    channel: str = "mean_snr",
    outage_snr: float | None = None,
    outage_prob: float = DEFAULT_PLANNING_OUTAGE_PROB,
) -> NDArray[np.float64]:
    """Per-client w_k [s Hz / bit] the offline stage plans with (see the module docstring).

    Args:
        mean_snr: (N,) average linear SNR per client, finite and > 0.
        channel: ``"mean_snr"``: w_k = 1/log2(1 + SNR_bar_k) (the paper's average channel);
            ``"expected_rate"``: the expected inverse spectral efficiency under unit-mean
            Rayleigh fading (``channels.rayleigh_inverse_efficiency``).
        outage_snr: ``expected_rate`` only: the linear SNR below which a client is in outage
            and sends nothing (the simulator's ``faults.outage_snr_db``); w_k is then the
            partial expectation E[1{SNR_k >= theta} / log2(1 + SNR_k)]. ``None``: no outage.
        outage_prob: ``expected_rate`` without ``outage_snr``: eps in (0, 1); w_k is
            E[1/log2(1 + SNR_k) | SNR_k >= theta_eps] with theta_eps = -SNR_bar_k ln(1 - eps).

    Returns:
        (N,) w_k >= 0 (0 for a client whose mean SNR is so far below ``outage_snr`` that it is
        never out of outage in float64).
    """
    s = check_snr("mean_snr", mean_snr)
    if channel == "mean_snr":
        return 1.0 / np.log2(1.0 + s)
    if channel != "expected_rate":
        raise ValueError(f"channel must be one of {OFFLINE_CHANNELS}; got {channel!r}")
    if outage_snr is not None:
        theta = check_real("outage_snr", outage_snr, low=0.0, low_open=True)
        return np.asarray(rayleigh_inverse_efficiency(s, theta), dtype=np.float64)
    eps = check_real("outage_prob", outage_prob, low=0.0, high=1.0, low_open=True, high_open=True)
    theta_eps = rayleigh_outage_snr(s, eps)
    return np.asarray(rayleigh_inverse_efficiency(s, theta_eps, conditional=True), dtype=float)


def _delay_coefficient(
    mean_snr: ArrayLike,
    n_scheduled: object,
    params_per_rank: object,
    bits_per_value: object,
    bandwidth_hz: object,
    inverse_efficiency: ArrayLike | None = None,
) -> tuple[float, int, int]:
    """Return ((K/N) A [s], K, N) after validating the arguments."""
    s = check_snr("mean_snr", mean_snr)
    n = s.size
    k = check_int("n_scheduled", n_scheduled, low=1, high=n)
    p = check_real("params_per_rank", params_per_rank, low=0.0, low_open=True)
    v = check_real("bits_per_value", bits_per_value, low=0.0, low_open=True)
    bw = check_real("bandwidth_hz", bandwidth_hz, low=0.0, low_open=True)
    if inverse_efficiency is None:
        # A = sum_k v p / (B log2(1 + SNR_bar_k))  (Lemma 2)
        a_coef = float(np.sum(full_band_upload_s(v * p, bw, s)))
    else:
        # A = sum_k v p w_k / B with w_k = E[1/log2(1 + SNR_k)] (or another planning channel)
        w = check_nonneg_array("inverse_efficiency", inverse_efficiency, length=n)
        a_coef = float(v * p * np.sum(w) / bw)
    return k / n * a_coef, k, n


def average_delay_s(
    *,
    rank: ArrayLike,
    sparsification: ArrayLike,
    mean_snr: ArrayLike,
    n_scheduled: int,
    params_per_rank: float,
    bits_per_value: float,
    bandwidth_hz: float,
    inverse_efficiency: ArrayLike | None = None,
) -> float | NDArray[np.float64]:
    """Expected equal-delay round time D^0 = (K/N) A O r [s] (eq. 19), broadcast over r and O.

    Args:
        rank: r >= 1, scalar or array.
        sparsification: O in (0, 1], scalar or array.
        mean_snr: (N,) average linear SNR per client, finite and > 0.
        n_scheduled: K in [1, N].
        params_per_rank: p = sum_l (d_l + l_l) [values per unit rank], > 0.
        bits_per_value: v [bit], > 0.
        bandwidth_hz: B [Hz], > 0.
        inverse_efficiency: (N,) w_k >= 0 replacing 1/log2(1 + SNR_bar_k) in A
            (:func:`planning_inverse_efficiency`); ``None``: the paper's average channel.
    """
    coef, _, _ = _delay_coefficient(
        mean_snr, n_scheduled, params_per_rank, bits_per_value, bandwidth_hz, inverse_efficiency
    )
    d = coef * np.asarray(sparsification, dtype=np.float64) * np.asarray(rank, dtype=np.float64)
    return float(d) if d.ndim == 0 else d


def offline_sparsification(
    *,
    rank: ArrayLike,
    mean_snr: ArrayLike,
    n_scheduled: int,
    d_th_s: float,
    params_per_rank: float,
    bits_per_value: float,
    bandwidth_hz: float,
    o_min: float,
    inverse_efficiency: ArrayLike | None = None,
) -> float | NDArray[np.float64]:
    """Lemma 2 (eq. 17/20) with the D_th erratum: O^0 = clip(N D_th / (A K r), O_min, 1).

    Args:
        rank: r >= 1, scalar or array.
        mean_snr: (N,) average linear SNR per client, finite and > 0.
        n_scheduled: K in [1, N].
        d_th_s: delay budget D_th [s], > 0.
        params_per_rank: p = sum_l (d_l + l_l), > 0.
        bits_per_value: v [bit], > 0.
        bandwidth_hz: B [Hz], > 0.
        o_min: O_min in (0, 1).
        inverse_efficiency: (N,) w_k >= 0 replacing 1/log2(1 + SNR_bar_k) in A
            (:func:`planning_inverse_efficiency`); ``None``: the paper's average channel.

    Returns:
        O^0 per rank (float for a scalar rank). Ranks whose unclipped value is below O_min
        return O_min although they are infeasible; see :func:`offline_rank_search`.
    """
    coef, _, _ = _delay_coefficient(
        mean_snr, n_scheduled, params_per_rank, bits_per_value, bandwidth_hz, inverse_efficiency
    )
    d_th = check_real("d_th_s", d_th_s, low=0.0, low_open=True)
    omin = check_real("o_min", o_min, low=0.0, high=1.0, low_open=True, high_open=True)
    r = np.asarray(rank, dtype=np.float64)
    if not np.all(np.isfinite(r)) or np.any(r < 1.0):
        raise ValueError(f"rank must be >= 1; got {rank!r}")
    # eq. (20) corrected: N D_th / (A K r) = D_th / ((K/N) A r); A = 0 (never sending) gives 1
    with np.errstate(divide="ignore"):
        o = np.clip(d_th / (coef * r), omin, 1.0)
    return float(o) if o.ndim == 0 else o


def offline_rank_search(
    *,
    mean_snr: ArrayLike,
    n_scheduled: int,
    d_th_s: float,
    params_per_rank: float,
    bits_per_value: float,
    bandwidth_hz: float,
    o_min: float,
    constants: BoundConstants,
    inverse_efficiency: ArrayLike | None = None,
) -> OfflineResult:
    """Algorithm 2: for r = 1..r_max take O^0 from Lemma 2 and keep the r with the least gamma^0.

    Args:
        mean_snr: (N,) average linear SNR per client (N = len(mean_snr)), finite and > 0.
        n_scheduled: K in [1, N].
        d_th_s: delay budget D_th [s], > 0.
        params_per_rank: p = sum_l (d_l + l_l), > 0.
        bits_per_value: v [bit], > 0.
        bandwidth_hz: B [Hz], > 0.
        o_min: O_min in (0, 1).
        constants: Theorem 1 constants (r_max bounds the scan).
        inverse_efficiency: (N,) w_k >= 0 replacing 1/log2(1 + SNR_bar_k) in A
            (:func:`planning_inverse_efficiency`); ``None``: the paper's average channel.

    Returns:
        :class:`OfflineResult`.

    Raises:
        InfeasibleError: (a ValueError) if no rank meets (16c), i.e. D^0(O_min, r = 1) > D_th.
        ValueError: any argument out of range.
    """
    if not isinstance(constants, BoundConstants):
        raise ValueError(f"constants must be a BoundConstants; got {type(constants).__name__}")
    coef, k, n = _delay_coefficient(
        mean_snr, n_scheduled, params_per_rank, bits_per_value, bandwidth_hz, inverse_efficiency
    )
    d_th = check_real("d_th_s", d_th_s, low=0.0, low_open=True)
    omin = check_real("o_min", o_min, low=0.0, high=1.0, low_open=True, high_open=True)
    ranks = np.arange(1, constants.r_max + 1, dtype=np.int64)
    with np.errstate(divide="ignore"):  # A = 0 (every client always in outage): O^0 = 1
        o_raw = d_th / (coef * ranks)  # eq. (20) with the D_th erratum, before clipping
    # (16c) holds at O = O_min (a relative 1e-12 slack so that a budget computed as exactly the
    # delay of some rank keeps that rank feasible despite round-off)
    feasible = coef * omin * ranks <= d_th * (1.0 + 1e-12)
    o = np.clip(o_raw, omin, 1.0)
    delays = coef * o * ranks
    if not np.any(feasible):
        d1 = coef * omin
        raise InfeasibleError(
            f"no rank meets the delay budget: at r=1 and o_min={omin:g} the expected round delay "
            f"is {d1:.6g} s > d_th_s={d_th:.6g} s; raise d_th_s to >= {d1:.6g} s, lower o_min "
            f"below {d_th / coef:.6g}, or add bandwidth"
        )
    gamma = convergence_bound(
        rank=ranks, sparsification=o, n_scheduled=k, n_clients=n, constants=constants
    )
    bounds = np.where(feasible, gamma, np.inf)
    best = int(np.argmin(bounds))  # first minimum: ties go to the smaller rank
    return OfflineResult(
        rank=int(ranks[best]),
        sparsification=float(o[best]),
        bound=float(bounds[best]),
        delay_s=float(delays[best]),
        ranks=ranks,
        bounds=bounds,
        sparsifications=o,
        feasible=feasible,
        delays_s=delays,
    )


def affine_offline_ratio(
    *,
    delay_per_ratio_s: ArrayLike,
    fixed_delay_s: ArrayLike,
    d_th_s: float,
    o_min: float,
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Lemma 2 for any payload affine in the ratio, per candidate rank (the generalised
    offline stage that plans algorithms other than SOFT; docs/solvers.md).

    With an expected round delay D^0(O) = F + C O on the planning channel (C: the part the
    ratio scales, (K/N) sum_k v n_k w_k / B; F: the part always sent), the largest ratio that
    meets D_th is O^0 = clip((D_th - F) / C, O_min, 1) (eq. 20 with the D_th erratum; C = 0,
    nothing to scale, gives 1), feasible when F + C O_min <= D_th (with the relative 1e-12 slack
    of :func:`offline_rank_search`; F + C when nothing scales).

    Args:
        delay_per_ratio_s: (R,) C >= 0 per candidate [s].
        fixed_delay_s: (R,) F >= 0 per candidate [s].
        d_th_s: D_th [s], > 0.
        o_min: O_min in (0, 1).

    Returns:
        ``(o, feasible)``: (R,) O^0 (O_min where infeasible) and (R,) bool.
    """
    c = check_nonneg_array("delay_per_ratio_s", delay_per_ratio_s)
    f = check_nonneg_array("fixed_delay_s", fixed_delay_s, length=c.size)
    d_th = check_real("d_th_s", d_th_s, low=0.0, low_open=True)
    omin = check_real("o_min", o_min, low=0.0, high=1.0, low_open=True, high_open=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        o = np.where(c > 0.0, np.clip((d_th - f) / c, omin, 1.0), 1.0)
    lowest = np.where(c > 0.0, omin, 1.0)
    feasible = f + c * lowest <= d_th * (1.0 + 1e-12)
    return np.where(feasible, o, omin), feasible
