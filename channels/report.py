"""Per-client summary of a cell's link budget (what ``wirelessfl channels`` prints)."""

from __future__ import annotations

import numpy as np

from channels._validation import as_float
from channels.capacity import average_channel_rate, ergodic_rate_rayleigh, ergodic_rate_rician
from channels.cell import Cell
from channels.units import linear_to_db

__all__ = ["channel_report"]


def channel_report(
    cell: Cell, *, bandwidth_hz: float, bits: float, share: float | None = None
) -> dict[str, np.ndarray]:
    """Mean SNR, rates and upload delays of every client of ``cell``.

    The ergodic rate is the closed form B·e^{1/ρ̄}E1(1/ρ̄)/ln 2 when the fading marginal is
    Rayleigh (``fading.k_factor == 0``: Rayleigh, Gauss–Markov), the Rician quadrature of
    :func:`channels.capacity.ergodic_rate_rician` when ``k_factor > 0``, and NaN for models
    without a ``k_factor`` attribute.

    The *expected* upload delay E[bits / (b·B·log2(1 + SNR))] is infinite under Rayleigh
    fading (the density of |s|² is positive at 0, so E[1/log(1 + ρ̄|s|²)] diverges), so the
    report gives the delay at the ergodic rate and at the average-channel rate instead.

    Input: ``cell``; ``bandwidth_hz`` B > 0 [Hz]; ``bits`` >= 0 payload per client;
    ``share`` in (0, 1] of B per client (default 1/N, an equal split among all N clients).
    Output: dict of (N,) arrays: ``client_id``; ``distance_m`` [m] (NaN when unknown);
    ``mean_snr_db`` [dB]; ``ergodic_rate_bps`` and ``average_channel_rate_bps`` [bit/s] on the
    whole band; ``upload_delay_ergodic_s`` and ``upload_delay_average_channel_s`` [s] for
    ``bits`` on the share (inf where the rate is 0).
    """
    if not isinstance(cell, Cell):
        raise ValueError(f"cell must be a channels.Cell, got {type(cell).__name__}")
    b = as_float("bandwidth_hz", bandwidth_hz, lower=0.0, lower_op=">")
    payload = as_float("bits", bits, lower=0.0)
    n = cell.n_clients
    frac = (
        1.0 / n if share is None else as_float("share", share, lower=0.0, lower_op=">", upper=1.0)
    )
    snr = cell.mean_snr
    k = getattr(cell.fading, "k_factor", None)
    if k is None:
        ergodic = np.full(n, np.nan)
    elif float(k) == 0.0:
        ergodic = np.asarray(ergodic_rate_rayleigh(snr, b))
    else:
        ergodic = np.asarray(ergodic_rate_rician(snr, b, float(k)))
    average = np.asarray(average_channel_rate(snr, b))
    with np.errstate(divide="ignore", invalid="ignore"):
        delay_erg = np.where(payload == 0.0, 0.0, payload / (frac * ergodic))
        delay_avg = np.where(payload == 0.0, 0.0, payload / (frac * average))
    distance = (
        np.full(n, np.nan) if cell.distances_m is None else np.array(cell.distances_m, dtype=float)
    )
    return {
        "client_id": np.arange(n),
        "distance_m": distance,
        "mean_snr_db": np.asarray(linear_to_db(snr), dtype=float),
        "ergodic_rate_bps": ergodic,
        "average_channel_rate_bps": average,
        "upload_delay_ergodic_s": delay_erg,
        "upload_delay_average_channel_s": delay_avg,
    }
