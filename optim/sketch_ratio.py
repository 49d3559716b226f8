"""Per-client sketch sizes k_i for FSLoRA under a round-latency drift-plus-penalty.

FSLoRA (Fang et al., arXiv:2501.19389) keeps global LoRA modules of rank r; client i trains and
uploads k_i of the r rank components (a random-k sketch). Its Theorem 4.4 carries
L~ = (1/N) sum_i r^2 / k_i^2: a smaller k_i slows convergence per round but shortens the round.
This module chooses the k_i of one round in the style of the SOFT/TSFA online stage (eq. 21-29):
minimise V * penalty + Q * D (docs/solvers.md, "Sketch sizes for FSLoRA").

Notation (arrays over the K' clients that get bandwidth):

- b_i: eq. (31) equal-delay shares, b_i = (1 / log2(1 + SNR_i)) / sum_j 1 / log2(1 + SNR_j);
- R_i = b_i B log2(1 + SNR_i) [bit/s] (the same for every client with eq. 31 shares);
- phi(k) = 1 - f + f k / r, the FLOPs of a training step at rank k over those at rank r; f is
  the LoRA share of the step at rank r (``channels.lora_training_flops`` is linear in the rank,
  the frozen base's part does not depend on it), so phi is exact for the project's FLOP model;
- d_i(k) = c_i phi(k) + v (k P + h) / R_i = alpha_i + beta_i k [s], with
  alpha_i = c_i (1 - f) + v h / R_i and beta_i = c_i f / r + v P / R_i > 0;
- D = max_i d_i(k_i), the round's latency; penalty = (1/K') sum_i r^2 / k_i^2.

The per-round problem is

    minimise_k  J(k) = V (1/K') sum_i r^2 / k_i^2 + Q max_i d_i(k_i),  k_i in {k_min, ..., r}.

Exact integer solution (:func:`solve_sketch_ratios`). For a candidate latency D every client's
best k_i is the largest k with d_i(k) <= D (the penalty decreases in k and the client's latency
only has to stay below D), and the optimal D is one of the K' (r - k_min + 1) values d_i(k): at
an optimum D = max_i d_i(k_i) is such a value. The candidates are sorted once and swept upwards;
passing d_i(k) moves client i from k - 1 to k, so the penalty at every candidate is a cumulative
sum of increments r^2/k^2 - r^2/(k-1)^2. Cost O(M log M) time and O(M) memory, M = K' (r - k_min
+ 1). The chosen k and the penalty are recomputed directly at the optimal D (no accumulated
round-off in what is returned).

Continuous relaxation (:func:`solve_sketch_ratios_relaxed`, k_i real in [k_min, r]). For a given
D in [D_lo, D_hi], D_lo = max_i d_i(k_min), D_hi = max_i d_i(r), the best k_i is
k_i(D) = min(r, (D - alpha_i) / beta_i), concave in D; x -> x^-2 is convex and decreasing, so
g(D) = V (1/K') sum_i r^2 / k_i(D)^2 + Q D is convex, with

    g'(D) = Q - (2 V r^2 / K') sum_{i: k_i(D) < r} 1 / (beta_i k_i(D)^3),

non-decreasing. D* = D_lo if g'(D_lo+) >= 0, D_hi if g'(D_hi-) <= 0, else the sign change of g',
found by bisection to adjacent floating-point numbers (exact to round-off).

Degenerate weights: Q = 0 (an empty queue) gives k = r for every client (the penalty's minimum)
at D = D_hi; V = 0 < Q gives D = D_lo, where the client that sets D_lo has k_min and the others
the largest k that fits. Among equal objectives the smallest D is returned.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from channels.fdma import equal_delay_shares, full_band_upload_s
from optim._validation import check_int, check_nonneg_array, check_real, check_snr

__all__ = [
    "SketchSolution",
    "sketch_latency_coefficients",
    "solve_sketch_ratios",
    "solve_sketch_ratios_relaxed",
    "solve_sketch_table",
]


@dataclass(frozen=True, slots=True, eq=False)
class SketchSolution:
    """One round's sketch sizes (immutable; ``==`` is identity).

    Attributes:
        ranks: (K',) k_i: int64 in [k_min, r] from :func:`solve_sketch_ratios`, float64 in
            [k_min, r] from :func:`solve_sketch_ratios_relaxed`.
        shares: (K',) eq. (31) shares b_i, summing to 1.
        latencies_s: (K',) d_i(k_i) = alpha_i + beta_i k_i [s] (compute plus upload).
        delay_s: D = max_i d_i(k_i) [s].
        penalty: (1/K') sum_i r^2 / k_i^2 (FSLoRA's L~ / L over the round's clients).
        objective: V * penalty + Q * D.
    """

    ranks: NDArray
    shares: NDArray[np.float64]
    latencies_s: NDArray[np.float64]
    delay_s: float
    penalty: float
    objective: float


def sketch_latency_coefficients(
    *,
    snr: ArrayLike,
    compute_s: ArrayLike,
    rank: int,
    params_per_rank: float,
    bits_per_value: float,
    bandwidth_hz: float,
    dense_values: float = 0.0,
    lora_flops_fraction: float = 0.0,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """alpha, beta and the shares of d_i(k) = alpha_i + beta_i k with eq. (31) shares.

    Args:
        snr: (K',) linear SNRs, finite and > 0.
        compute_s: (K',) compute time of a local round at rank r [s], >= 0.
        rank: r, the global LoRA rank (>= 1).
        params_per_rank: P = sum over adapted layers of (d + l) [values per rank component], > 0.
        bits_per_value: v [bit], > 0.
        bandwidth_hz: B [Hz], > 0.
        dense_values: h, values sent dense whatever k (a task head), >= 0.
        lora_flops_fraction: f in [0, 1], the LoRA share of a step's FLOPs at rank r.

    Returns:
        ``(alpha, beta, shares)``, each (K',): alpha [s], beta [s per rank component] (> 0),
        shares b_i summing to 1.
    """
    s = check_snr("snr", snr)
    c = check_nonneg_array("compute_s", compute_s, length=s.size)
    r = check_int("rank", rank, low=1)
    p = check_real("params_per_rank", params_per_rank, low=0.0, low_open=True)
    v = check_real("bits_per_value", bits_per_value, low=0.0, low_open=True)
    bw = check_real("bandwidth_hz", bandwidth_hz, low=0.0, low_open=True)
    h = check_real("dense_values", dense_values, low=0.0)
    f = check_real("lora_flops_fraction", lora_flops_fraction, low=0.0, high=1.0)
    shares = equal_delay_shares(s)  # eq. (31)
    per_bit = full_band_upload_s(1.0, bw, s) / shares  # 1 / (b_i B log2(1 + SNR_i)) [s/bit]
    alpha = c * (1.0 - f) + v * h * per_bit
    beta = c * (f / r) + v * p * per_bit
    return alpha, beta, shares


def _prepare(
    queue: float, V: float, rank: int, k_min: int, **latency: object
) -> tuple[float, float, int, int, NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    q = check_real("queue", queue, low=0.0)
    vv = check_real("V", V, low=0.0)
    r = check_int("rank", rank, low=1)
    kmin = check_int("k_min", k_min, low=1, high=r)
    alpha, beta, shares = sketch_latency_coefficients(rank=r, **latency)  # type: ignore[arg-type]
    return q, vv, r, kmin, alpha, beta, shares


def _solution(
    k: NDArray, alpha: NDArray, beta: NDArray, shares: NDArray, r: int, q: float, V: float
) -> SketchSolution:
    latencies = alpha + beta * k
    delay = float(latencies.max())
    penalty = float(np.mean((r / k) ** 2))
    return SketchSolution(k, shares, latencies, delay, penalty, V * penalty + q * delay)


def solve_sketch_ratios(
    *,
    queue: float,
    V: float,
    snr: ArrayLike,
    compute_s: ArrayLike,
    rank: int,
    k_min: int,
    params_per_rank: float,
    bits_per_value: float,
    bandwidth_hz: float,
    dense_values: float = 0.0,
    lora_flops_fraction: float = 0.0,
) -> SketchSolution:
    """Exact integer minimiser of V (1/K') sum r^2/k_i^2 + Q max_i d_i(k_i) over k_i in [k_min, r].

    Enumerates the candidate latencies d_i(k) by a sort and a sweep (module docstring):
    O(M log M) time, O(M) memory, M = K' (r - k_min + 1).

    Args:
        queue: Q >= 0 [s], the virtual queue (eq. 21).
        V: penalty weight >= 0.
        snr, compute_s, rank, params_per_rank, bits_per_value, bandwidth_hz, dense_values,
            lora_flops_fraction: as in :func:`sketch_latency_coefficients`.
        k_min: smallest sketch size, integer in [1, rank].

    Returns:
        :class:`SketchSolution` with int64 ``ranks`` (K',).

    Raises:
        ValueError: an argument out of range.
    """
    q, vv, r, kmin, alpha, beta, shares = _prepare(
        queue,
        V,
        rank,
        k_min,
        snr=snr,
        compute_s=compute_s,
        params_per_rank=params_per_rank,
        bits_per_value=bits_per_value,
        bandwidth_hz=bandwidth_hz,
        dense_values=dense_values,
        lora_flops_fraction=lora_flops_fraction,
    )
    n = alpha.size
    ks = np.arange(kmin, r + 1, dtype=np.float64)  # (m,)
    lat = alpha[:, None] + beta[:, None] * ks[None, :]  # (K', m) d_i(k), increasing in k
    pen = (r / ks) ** 2  # (m,) r^2 / k^2, decreasing in k
    inc = np.empty_like(lat)  # passing d_i(k) moves client i from k - 1 (or infeasible) to k
    inc[:, 0] = pen[0]
    inc[:, 1:] = pen[1:] - pen[:-1]
    flat = lat.ravel()
    order = np.argsort(flat, kind="stable")
    values = flat[order]  # (M,) sorted candidates
    penalty_sum = np.cumsum(inc.ravel()[order])  # sum_i r^2/k_i(D)^2 at each candidate
    last = np.ones(values.size, dtype=bool)  # the last of a run of equal candidates
    last[:-1] = values[1:] != values[:-1]
    d_lo = lat[:, 0].max()  # every client fits k_min from here on
    feasible = last & (values >= d_lo)
    objective = np.where(feasible, vv / n * penalty_sum + q * values, np.inf)
    d_star = values[int(np.argmin(objective))]  # the first (smallest) optimal D
    k = (kmin - 1) + np.count_nonzero(lat <= d_star, axis=1)  # largest k with d_i(k) <= D*
    return _solution(k.astype(np.int64), alpha, beta, shares, r, q, vv)


def solve_sketch_ratios_relaxed(
    *,
    queue: float,
    V: float,
    snr: ArrayLike,
    compute_s: ArrayLike,
    rank: int,
    k_min: int,
    params_per_rank: float,
    bits_per_value: float,
    bandwidth_hz: float,
    dense_values: float = 0.0,
    lora_flops_fraction: float = 0.0,
) -> SketchSolution:
    """Minimiser of the continuous relaxation (k_i real in [k_min, r]); same arguments as
    :func:`solve_sketch_ratios`.

    A 1-D convex problem in D with k_i(D) = min(r, (D - alpha_i) / beta_i) in closed form,
    solved by bisection on g'(D) to adjacent floats: O(K' log(D_hi / ulp)) time. Its objective
    is a lower bound on the integer optimum.

    Returns:
        :class:`SketchSolution` with float64 ``ranks`` (K',).
    """
    q, vv, r, kmin, alpha, beta, shares = _prepare(
        queue,
        V,
        rank,
        k_min,
        snr=snr,
        compute_s=compute_s,
        params_per_rank=params_per_rank,
        bits_per_value=bits_per_value,
        bandwidth_hz=bandwidth_hz,
        dense_values=dense_values,
        lora_flops_fraction=lora_flops_fraction,
    )
    n = alpha.size
    d_lo = float((alpha + beta * kmin).max())
    d_hi = float((alpha + beta * r).max())
    weight = 2.0 * vv * r * r / n

    def ranks_at(d: float) -> NDArray[np.float64]:
        return np.clip((d - alpha) / beta, kmin, r)

    def slope(d: float, *, left: bool) -> float:
        """g'(D-) (left) or g'(D+): clients at k = r count only from the left."""
        k = (d - alpha) / beta
        active = k <= r if left else k < r
        k_act = np.maximum(k[active], kmin)
        return q - weight * float(np.sum(1.0 / (beta[active] * k_act**3)))

    if d_hi <= d_lo or slope(d_lo, left=False) >= 0.0:
        d_star = d_lo
    elif slope(d_hi, left=True) <= 0.0:
        d_star = d_hi
    else:
        lo, hi = d_lo, d_hi  # g'(lo+) < 0 < g'(hi-)
        while True:
            mid = 0.5 * (lo + hi)
            if not lo < mid < hi:
                break
            if slope(mid, left=False) < 0.0:
                lo = mid
            else:
                hi = mid

        def g(d: float) -> float:
            return vv * float(np.mean((r / ranks_at(d)) ** 2)) + q * d

        d_star = lo if g(lo) <= g(hi) else hi
    return _solution(ranks_at(d_star), alpha, beta, shares, r, q, vv)


def solve_sketch_table(
    *,
    queue: float,
    V: float,
    ranks: ArrayLike,
    latencies_s: ArrayLike,
    penalties: ArrayLike,
    shares: ArrayLike,
) -> SketchSolution:
    """Exact minimiser of V (1/K') sum_i p_i(k_i) + Q max_i d_i(k_i) over k_i in ``ranks``, for
    any latencies and penalties given as tables (the sketch controller with another algorithm's
    cost model, whose payload need not be affine in k nor its penalty r^2/k^2).

    The sweep of :func:`solve_sketch_ratios` with prefix minima: at a candidate latency D
    client i may take any k with d_i(k) <= D (a prefix of ``ranks``, latencies being
    non-decreasing in k) and takes the one of least penalty (ties: the largest k). Cost
    O(M log M), M = K' m.

    Args:
        queue: Q >= 0 [s].
        V: penalty weight >= 0.
        ranks: (m,) the candidate k, ascending.
        latencies_s: (K', m) d_i(k) [s], finite, non-decreasing along k.
        penalties: (K', m) p_i(k), finite.
        shares: (K',) the bandwidth shares the latencies assume (returned as they are).

    Returns:
        :class:`SketchSolution`: ``ranks`` int64 (K',), ``penalty`` the mean of p_i(k_i).
    """
    q = check_real("queue", queue, low=0.0)
    vv = check_real("V", V, low=0.0)
    ks = np.asarray(ranks, dtype=np.int64)
    lat = np.asarray(latencies_s, dtype=np.float64)
    pen = np.asarray(penalties, dtype=np.float64)
    if ks.ndim != 1 or ks.size == 0 or lat.ndim != 2 or lat.shape[1] != ks.size:
        raise ValueError(
            f"latencies_s must be (K', m) with m = len(ranks) = {ks.size}; got {lat.shape}"
        )
    if pen.shape != lat.shape or not (np.isfinite(lat).all() and np.isfinite(pen).all()):
        raise ValueError("penalties must be finite and shaped like the finite latencies_s")
    if np.any(np.diff(lat, axis=1) < 0.0):
        raise ValueError("latencies_s must be non-decreasing in k")
    n = lat.shape[0]
    best = np.minimum.accumulate(pen, axis=1)  # least penalty among k_1..k_j
    inc = np.empty_like(best)
    inc[:, 0] = best[:, 0]
    inc[:, 1:] = best[:, 1:] - best[:, :-1]
    flat = lat.ravel()
    order = np.argsort(flat, kind="stable")
    values = flat[order]
    penalty_sum = np.cumsum(inc.ravel()[order])
    last = np.ones(values.size, dtype=bool)
    last[:-1] = values[1:] != values[:-1]
    feasible = last & (values >= lat[:, 0].max())
    objective = np.where(feasible, vv / n * penalty_sum + q * values, np.inf)
    d_star = values[int(np.argmin(objective))]
    reach = np.count_nonzero(lat <= d_star, axis=1)  # prefix lengths (>= 1)
    chosen = np.empty(n, dtype=np.int64)
    for i in range(n):
        head = pen[i, : reach[i]]
        chosen[i] = int(np.flatnonzero(head == head.min())[-1])  # ties: the largest k
    rows = np.arange(n)
    latencies = lat[rows, chosen]
    penalty = float(np.mean(pen[rows, chosen]))
    delay = float(latencies.max())
    return SketchSolution(
        ks[chosen],
        np.asarray(shares, dtype=np.float64),
        latencies,
        delay,
        penalty,
        vv * penalty + q * delay,
    )
