"""Large-scale attenuation: distance path loss and log-normal shadowing.

**Amplitude vs power.** The paper writes the channel as h = s · q^{-γ}: q^{-γ} is an
*amplitude* factor, so the *power* gain that enters the SNR |h|²/σ² is q^{-2γ}.
:func:`path_gain` returns the amplitude factor q^{-γ}; :func:`path_power_gain` returns the
power factor q^{-2γ}. With the usual power path-loss exponent α (power ∝ d^{-α}), the paper's
γ is α/2: free space α = 2 ↔ γ = 1, urban α ≈ 3.5 ↔ γ ≈ 1.75.

Distances are in metres, with no reference-distance loss: q^{-γ} is 1 at 1 m. Fold any
reference loss (e.g. free-space loss at 1 m) into the transmit power or
``Cell.from_geometry(reference_loss_db=...)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from channels._validation import as_float, as_float_array, scalar_or_array
from channels.streams import as_client_generators

__all__ = ["path_gain", "path_power_gain", "shadowing_power_gain"]


def path_gain(distance_m: ArrayLike, exponent: float) -> float | np.ndarray:
    """Amplitude path gain q^{-γ} (the paper's factor in h = s·q^{-γ}).

    Input: ``distance_m`` > 0 [m], any shape; ``exponent`` γ >= 0 (amplitude exponent).
    Output: amplitude gain (dimensionless), same shape. The power gain is its square.
    """
    d = as_float_array("distance_m", distance_m, lower=0.0, lower_op=">")
    g = as_float("exponent", exponent, lower=0.0)
    return scalar_or_array(np.power(d, -g))


def path_power_gain(distance_m: ArrayLike, exponent: float) -> float | np.ndarray:
    """Power path gain q^{-2γ} = path_gain(q, γ)², what multiplies |s|² in the SNR.

    Input: ``distance_m`` > 0 [m], any shape; ``exponent`` γ >= 0 (the paper's amplitude
    exponent, i.e. half the usual power exponent).
    Output: power gain (dimensionless), same shape.
    """
    d = as_float_array("distance_m", distance_m, lower=0.0, lower_op=">")
    g = as_float("exponent", exponent, lower=0.0)
    return scalar_or_array(np.power(d, -2.0 * g))


def shadowing_power_gain(
    rng_or_generators: np.random.Generator | Sequence[np.random.Generator],
    n_clients: int,
    sigma_db: float,
) -> np.ndarray:
    """Log-normal shadowing power factor, 10^(X/10) with X ~ N(0, σ_dB²) per client.

    Zero mean in dB (median 1; the linear mean is exp((σ_dB·ln10/10)²/2) >= 1).
    Input: ``rng_or_generators``, one Generator or ``n_clients`` of them (client ``k`` draws
    one standard normal from its own stream); ``n_clients`` >= 1; ``sigma_db`` >= 0 [dB].
    Output: float64 ``(n_clients,)`` power factors; all ones when ``sigma_db`` = 0 (no draws).
    """
    sigma = as_float("sigma_db", sigma_db, lower=0.0)
    gens = as_client_generators(rng_or_generators, n_clients)
    if sigma == 0.0:
        return np.ones(len(gens))
    z = np.array([g.standard_normal() for g in gens])
    return np.power(10.0, sigma * z / 10.0)
