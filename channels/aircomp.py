"""Over-the-air computation (AirComp): analog uplink aggregation, its power control and MSE.

Symbol model. The K transmitting clients send the same n real values (their shared tensors,
dense) at once over the whole band B: one real value per complex channel use, N subcarriers of
B/N Hz each carrying one value per OFDM symbol of N/B seconds, so the transmission lasts
n / B seconds whatever K (:func:`analog_upload_s`; cyclic prefix and pilots left out). Client k
pre-scales its unit-power symbols x_k by sqrt(p_k) (and undoes its channel phase), so the
server receives, per channel use (noise power σ² = N0 B per channel use, as for FDMA),

    y = Σ_k sqrt(p_k) |h_k| x_k + z,  z ~ N(0, σ²),

and estimates Σ_k x_k as y / (σ sqrt(η)) with the denoising factor η. In units of σ², client
k's SNR at its peak power P_k is q_k = P_k |h_k|² / σ² (the simulator's SNR_k) and its SNR per
watt is g_k = q_k / P_k. Its received coefficient is c_k = sqrt(p_k g_k / η) (1: aligned), and
for uncorrelated unit-power symbols the mean squared error per value is

    MSE = Σ_k (c_k - 1)² + 1 / η                          (Cao et al.'s computation MSE)

(an excluded client, p_k = 0, adds 1: its symbol is missing; :func:`aggregation_mse`).

Power control policies (per round, peak power p_k <= P_k; :func:`air_power`):

- ``full_inversion``: every client inverts its channel to the weakest one at full power,
  η = min_k q_k, p_k = η / g_k (c_k = 1; MSE = 1 / η);
- ``truncated``: truncated channel inversion (Zhu et al.): clients with q_k below the
  threshold q_th are excluded, the others invert to the received SNR η = q_th
  (p_k = q_th / g_k <= P_k), or at a lower η that keeps each client's *average* power over
  Rayleigh fading within its budget (:func:`average_power_denoising`); without a threshold,
  :func:`best_truncation` picks, per round, the exclusion that minimises the MSE;
- ``optimal``: Cao et al.'s optimal policy for a static channel (their threshold-based
  structure): with the clients in ascending order of their quality indicator q_k, the first
  i* transmit at full power and the others invert to η*, where
  sqrt(η̃_i) = (1 + Σ_{j<=i} q_j) / Σ_{j<=i} sqrt(q_j) and i* is the index whose η̃_i lies in
  [q_i, q_{i+1}] (:func:`optimal_power` derives it).

Papers: G. Zhu, Y. Wang, K. Huang, "Broadband Analog Aggregation for Low-Latency Federated
Edge Learning", IEEE TWC 2020, arXiv:1812.11494; X. Cao, G. Zhu, J. Xu, K. Huang, "Optimized
Power Control for Over-the-Air Computation in Fading Channels", IEEE TWC 2020,
doi:10.1109/TWC.2020.3012287 (arXiv:1906.06858); K. Yang, T. Jiang, Y. Shi, Z. Ding,
"Federated Learning via Over-the-Air Computation", IEEE TWC 2020, arXiv:1812.11750.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from channels._validation import as_float, as_float_array
from channels.capacity import exp_e1

__all__ = [
    "AIRCOMP_POLICIES",
    "AirPower",
    "aggregation_mse",
    "air_power",
    "analog_upload_s",
    "average_power_denoising",
    "best_truncation",
    "full_inversion",
    "optimal_power",
    "truncated_inversion",
]

#: ``channel.aircomp.policy``: the power control policies of the module docstring, and
#: ``optimal_fading`` (:mod:`channels.aircomp_fading`: it needs the run's multipliers)
AIRCOMP_POLICIES = ("full_inversion", "truncated", "optimal", "optimal_fading")


@dataclass(frozen=True)
class AirPower:
    """One round's AirComp power control over K clients.

    Attributes:
        tx_power_w: (K,) transmit power p_k [W] per unit-power symbol (0: excluded).
        included: (K,) bool, the clients that transmit.
        denoising: η, the received SNR of a unit coefficient (linear; 0 when nobody sends).
        gain: (K,) received coefficient c_k = sqrt(p_k g_k / η) (1: aligned, 0: excluded).
        mse: :func:`aggregation_mse` of ``gain`` and ``denoising`` (per value, in units of the
            symbol power; K when nobody sends: every symbol is missing).
    """

    tx_power_w: np.ndarray
    included: np.ndarray
    denoising: float
    gain: np.ndarray
    mse: float


def analog_upload_s(n_values: ArrayLike, bandwidth_hz: float) -> np.ndarray:
    """Analog transmission time of n real values, one per channel use over B Hz: n / B [s].

    Input: ``n_values`` >= 0, any shape; ``bandwidth_hz`` B > 0 [Hz].
    Output: float64 array of the shape of ``n_values`` [s].
    """
    n = as_float_array("n_values", n_values, lower=0.0)
    return n / as_float("bandwidth_hz", bandwidth_hz, lower=0.0, lower_op=">")


def aggregation_mse(gain: ArrayLike, denoising: float) -> float:
    """Σ_k (c_k - 1)² + 1 / η: the MSE per value of the estimate of Σ_k x_k for uncorrelated
    unit-power symbols (Cao et al.'s computation MSE, noise power 1).

    Input: ``gain`` (K,) c_k >= 0; ``denoising`` η >= 0 (0: nobody sends, MSE inf).
    Output: the MSE (float).
    """
    c = as_float_array("gain", gain, lower=0.0)
    eta = as_float("denoising", denoising, lower=0.0)
    if eta == 0.0:
        return math.inf
    return float(np.sum((c - 1.0) ** 2) + 1.0 / eta)


def _inputs(snr: ArrayLike, peak_power_w: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    q = as_float_array("snr", snr, lower=0.0).reshape(-1)
    p = as_float_array("peak_power_w", peak_power_w, lower=0.0, lower_op=">").reshape(-1)
    if q.shape != p.shape:
        raise ValueError(
            f"snr and peak_power_w must have one value per client, got {q.size} and {p.size}"
        )
    return q, p


def _inversion(q: np.ndarray, peak: np.ndarray, included: np.ndarray, eta: float) -> AirPower:
    """Channel inversion of the ``included`` clients to the received SNR η <= min q_k."""
    if not included.any() or eta <= 0.0:
        zeros = np.zeros(q.size)  # nobody sends: every symbol missing
        return AirPower(zeros, np.zeros(q.size, bool), 0.0, zeros.copy(), float(q.size))
    p = np.where(included, eta * peak / np.where(q > 0, q, 1.0), 0.0)
    gain = included.astype(float)
    return AirPower(np.minimum(p, peak), included, eta, gain, aggregation_mse(gain, eta))


def full_inversion(snr: ArrayLike, peak_power_w: ArrayLike) -> AirPower:
    """Every client inverts its channel to the weakest at full power: η = min_k q_k.

    Input: ``snr`` (K,) q_k >= 0, the SNR at the peak power; ``peak_power_w`` (K,) P_k > 0 [W].
    Output: :class:`AirPower` (nobody sends when some q_k = 0).
    """
    q, peak = _inputs(snr, peak_power_w)
    eta = float(q.min()) if q.size else 0.0
    return _inversion(q, peak, np.ones(q.size, bool), eta)


def truncated_inversion(
    snr: ArrayLike, peak_power_w: ArrayLike, threshold_snr: float, denoising: float | None = None
) -> AirPower:
    """Truncated channel inversion (Zhu et al.): q_k < q_th excluded, the others
    invert to the received SNR η = q_th (or ``denoising`` <= q_th).

    Input: ``snr`` (K,) q_k >= 0; ``peak_power_w`` (K,) P_k > 0 [W]; ``threshold_snr`` q_th > 0
    (linear); ``denoising`` η in (0, q_th], None: q_th.
    Output: :class:`AirPower`.
    """
    q, peak = _inputs(snr, peak_power_w)
    q_th = as_float("threshold_snr", threshold_snr, lower=0.0, lower_op=">")
    eta = q_th if denoising is None else as_float("denoising", denoising, lower=0.0, upper=q_th)
    return _inversion(q, peak, q >= q_th, eta)


def average_power_denoising(
    threshold_snr: float,
    mean_snr: ArrayLike,
    peak_power_w: ArrayLike,
    average_power_w: ArrayLike,
) -> float:
    """The largest received SNR η <= q_th at which truncated inversion keeps every client's
    average transmit power over Rayleigh fading within its budget (Zhu et al.'s received
    power level set by the average power constraint).

    With q_k ~ Exp(mean q̄_k) (Rayleigh fading at the peak power P_k) and p_k = η P_k / q_k for
    q_k >= q_th, E[p_k] = η (P_k / q̄_k) E1(q_th / q̄_k), so E[p_k] <= P̄_k for every k when
    η = min(q_th, min_k P̄_k q̄_k / (P_k E1(q_th / q̄_k))).

    Input: ``threshold_snr`` q_th > 0; ``mean_snr`` (K,) q̄_k > 0; ``peak_power_w`` (K,) P_k > 0
    [W]; ``average_power_w`` (K,) or scalar P̄_k > 0 [W].
    Output: η (float).
    """
    q_th = as_float("threshold_snr", threshold_snr, lower=0.0, lower_op=">")
    mean = as_float_array("mean_snr", mean_snr, lower=0.0, lower_op=">").reshape(-1)
    peak = as_float_array("peak_power_w", peak_power_w, lower=0.0, lower_op=">").reshape(-1)
    budget = as_float_array("average_power_w", average_power_w, lower=0.0, lower_op=">")
    x = q_th / mean
    e1 = np.asarray(exp_e1(x)) * np.exp(-x)  # E1(x)
    cap = np.broadcast_to(budget, mean.shape) * mean / (peak * e1)
    return float(min(q_th, float(cap.min()) if cap.size else q_th))


def best_truncation(snr: ArrayLike, peak_power_w: ArrayLike) -> AirPower:
    """The per-round truncation rule: exclude the m weakest clients (ascending q) and invert
    the others to the weakest included one at full power, η = q_(m+1), with m minimising
    MSE(m) = m + 1 / q_(m+1) (each excluded client's missing symbol against the noise left),
    or nobody when MSE(K) = K is less (every q_k well below 1).

    Input: ``snr`` (K,) q_k >= 0; ``peak_power_w`` (K,) P_k > 0 [W].
    Output: :class:`AirPower` (ties: the fewest excluded).
    """
    q, peak = _inputs(snr, peak_power_w)
    if not q.size:
        return _inversion(q, peak, np.zeros(0, bool), 0.0)
    ordered = np.sort(q)
    with np.errstate(divide="ignore"):
        mse = np.append(np.arange(q.size) + 1.0 / ordered, q.size)  # m = K: nobody sends
    m = int(np.argmin(mse))
    if m == q.size:
        return _inversion(q, peak, np.zeros(q.size, bool), 0.0)
    eta = float(ordered[m])
    rank = np.argsort(np.argsort(q, kind="stable"), kind="stable")
    return _inversion(q, peak, rank >= m, eta)


def optimal_power(snr: ArrayLike, peak_power_w: ArrayLike) -> AirPower:
    """Cao et al.'s optimal power control for a static channel (threshold-based).

    For a fixed η each client's best power is min(P_k, η / g_k) (its term (c_k - 1)² is then
    least), so with u = 1 / sqrt(η) and A = {k: q_k < η} (full power) the MSE is
    u² (1 + Σ_A q_k) - 2 u Σ_A sqrt(q_k) + |A|, least at sqrt(η̃) = (1 + Σ_A q_k) /
    Σ_A sqrt(q_k). Every candidate A = the i weakest clients gives η̃_i, kept within
    [q_(i), q_(i+1)] where its A holds; the least MSE among them is the optimum (with A empty
    the MSE 1 / η falls until η reaches q_(1), so η >= min q_k).

    Input: ``snr`` (K,) q_k > 0 (the quality indicator P_k |h_k|² / σ²); ``peak_power_w`` (K,)
    P_k > 0 [W].
    Output: :class:`AirPower` (every client transmits).
    """
    q, peak = _inputs(snr, peak_power_w)
    if not q.size or not (q > 0).all():
        return full_inversion(q, peak)
    ordered = np.sort(q)
    upper = np.append(ordered[1:], np.inf)
    eta_tilde = ((1.0 + np.cumsum(ordered)) / np.cumsum(np.sqrt(ordered))) ** 2
    candidates = np.clip(eta_tilde, ordered, upper)
    mses = [_mse_at(q, eta) for eta in candidates]
    eta = float(candidates[int(np.argmin(mses))])
    p = np.minimum(peak, eta * peak / q)
    gain = np.sqrt(p * (q / peak) / eta)
    return AirPower(p, np.ones(q.size, bool), eta, gain, aggregation_mse(gain, eta))


def _mse_at(q: np.ndarray, eta: float) -> float:
    """The MSE at denoising η with each client's best power min(P_k, η / g_k)."""
    c = np.sqrt(np.minimum(q, eta) / eta)
    return float(np.sum((c - 1.0) ** 2) + 1.0 / eta)


def air_power(
    policy: str, snr: ArrayLike, peak_power_w: ArrayLike, threshold_snr: float | None = None
) -> AirPower:
    """The power control ``policy`` of :data:`AIRCOMP_POLICIES` (``truncated`` with
    ``threshold_snr`` None: :func:`best_truncation`)."""
    if policy == "full_inversion":
        return full_inversion(snr, peak_power_w)
    if policy == "truncated":
        if threshold_snr is None:
            return best_truncation(snr, peak_power_w)
        return truncated_inversion(snr, peak_power_w, threshold_snr)
    if policy == "optimal":
        return optimal_power(snr, peak_power_w)
    if policy == "optimal_fading":
        raise ValueError(
            "policy optimal_fading needs the run's multipliers: "
            "channels.aircomp_fading.fading_power"
        )
    raise ValueError(f"policy must be one of {', '.join(AIRCOMP_POLICIES)}, got {policy!r}")
