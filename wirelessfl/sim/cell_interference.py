"""Each round's SINR of every upload in a network of cells (``cells``): the uploads of all
cells' round t are on the air together (docs/simulator.md, "Many cells").

Client k of cell c sends on its share b_k of the cell's sub-band (reuse 1: the whole band B;
reuse 3: a third, by the site's colour), after the shares of the cell's clients of lower id
(:func:`channels.interference.band_intervals`). Its signal at its site is the SNR the cell's
channel drew (path loss, shadowing, fading, power control); every other cell's upload whose
band overlaps adds its power spectral density times its link gain to k's site times the
overlap (:func:`channels.interference.uplink_sinr`). The cross links fade Rayleigh, i.i.d. per
round (none under ``channel.fading.model: none``), drawn from the round's stream
``"cell_interference"``, one row per upload in the order of cells then client ids, so a
round's draws do not depend on the others'. With ``cells.interference: false`` the SINR is
the SNR (the interference-free baseline on the same layout and bands).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from channels.interference import band_intervals, cell_subbands, uplink_sinr
from channels.multicell import MultiCellLayout
from channels.streams import round_generator

__all__ = [
    "CellUploads",
    "RoundSinr",
    "analog_interference_w",
    "expected_interference_w",
    "round_sinr",
]


@dataclass(frozen=True)
class CellUploads:
    """One cell's uploads of a round: (m,) ``clients`` (global ids, ascending), band
    ``shares`` b_k of the cell's sub-band, ``tx_power_w`` [W] and ``snr`` (linear, at the
    serving site, over the cell's band)."""

    clients: np.ndarray
    shares: np.ndarray
    tx_power_w: np.ndarray
    snr: np.ndarray


@dataclass(frozen=True)
class RoundSinr:
    """(M,) over the round's uploads in the order of :class:`CellUploads` given: ``clients``;
    ``sinr`` (linear); ``rate_sinr`` the band-noise form FDMA's rate takes (under
    ``channel.noise_bandwidth: share`` SINR_k b_k); ``interference_w`` [W] over each band
    share."""

    clients: np.ndarray
    sinr: np.ndarray
    rate_sinr: np.ndarray
    interference_w: np.ndarray


def _cross_gains(
    layout: MultiCellLayout, clients: np.ndarray, seed: int, round_index: int, fading: bool
) -> np.ndarray:
    """(M, C) the uploads' link gains to every site, Rayleigh-faded from the round's stream
    ``"cell_interference"`` (one row per upload, in order) when ``fading``."""
    gain = layout.link_gain[clients].copy()
    if fading:
        rng = round_generator(seed, stream="cell_interference", round_index=round_index)
        gain *= rng.exponential(size=gain.shape)
    return gain


def round_sinr(
    uploads: list[CellUploads],
    layout: MultiCellLayout,
    *,
    seed: int,
    round_index: int,
    bandwidth_hz: float,
    reuse: int,
    noise_power_w: float,
    noise_bandwidth: str,
    interference: bool,
    cross_fading: bool,
) -> RoundSinr:
    """The SINR of every upload of round ``round_index`` (module docstring): B
    ``bandwidth_hz`` [Hz] the whole band, ``noise_power_w`` σ² [W] over a cell's band B / reuse."""
    clients = np.concatenate([u.clients for u in uploads]).astype(int)
    shares = np.concatenate([u.shares for u in uploads]).astype(float)
    power = np.concatenate([u.tx_power_w for u in uploads]).astype(float)
    snr = np.concatenate([u.snr for u in uploads]).astype(float)
    share_noise = noise_bandwidth == "share"
    if not interference or clients.size == 0:
        sinr = (
            np.divide(snr, shares, out=np.zeros_like(snr), where=shares > 0) if share_noise else snr
        )
        return RoundSinr(clients, sinr, snr, np.zeros(clients.size))
    cell_band_hz = bandwidth_hz / reuse
    noise_psd = noise_power_w / cell_band_hz
    cells = layout.serving[clients]
    gain = _cross_gains(layout, clients, seed, round_index, cross_fading)
    rows = np.arange(clients.size)
    # the serving link as the cell's channel drew it: SNR = P g |s|^2 / (N0 B_cell)
    gain[rows, cells] = np.divide(
        snr * noise_power_w, power, out=np.zeros_like(snr), where=power > 0
    )
    subbands = cell_subbands(layout.colours(reuse), reuse)
    intervals = band_intervals(cells, shares, subbands)
    sinr, interference_w = uplink_sinr(
        power,
        gain,
        cells,
        intervals,
        bandwidth_hz=bandwidth_hz,
        reuse=reuse,
        noise_psd_w_per_hz=noise_psd,
        noise_bandwidth=noise_bandwidth,
    )
    rate_sinr = sinr * shares if share_noise else sinr
    return RoundSinr(clients, sinr, rate_sinr, interference_w)


def analog_interference_w(
    uploads: list[CellUploads],
    layout: MultiCellLayout,
    *,
    seed: int,
    round_index: int,
    reuse: int,
    cross_fading: bool,
) -> np.ndarray:
    """(C,) the interference power [W] at each site of over-the-air rounds (AirComp): every
    upload is on its cell's whole sub-band, so site s receives Σ_j P_j G_js over the uploads j
    of the other cells of its colour (reuse 1: every other cell), the cross links fading as
    in :func:`round_sinr` (same stream and order)."""
    clients = np.concatenate([u.clients for u in uploads]).astype(int)
    power = np.concatenate([u.tx_power_w for u in uploads]).astype(float)
    n_sites = len(layout.sites_m)
    if clients.size == 0:
        return np.zeros(n_sites)
    cells = layout.serving[clients]
    gain = _cross_gains(layout, clients, seed, round_index, cross_fading)
    colours = layout.colours(reuse)
    received = power[:, None] * gain  # (M, C)
    same_colour = colours[cells][:, None] == colours[None, :]
    other_cell = cells[:, None] != np.arange(n_sites)[None, :]
    return np.where(same_colour & other_cell, received, 0.0).sum(axis=0)


def expected_interference_w(
    layout: MultiCellLayout,
    tx_power_w: np.ndarray,
    *,
    reuse: int,
    per_cell: np.ndarray,
) -> np.ndarray:
    """(C,) the mean interference power [W] at each site from fully loaded cells: each other
    cell b of its colour sends with ``per_cell[b]`` clients at once on its whole band (FDMA,
    NR: 1, the band shared among its uploads; over the air: its K) at their (N,) powers,
    a client drawn uniformly among b's, unit-mean fading: Σ_b per_cell[b] mean_{j∈b} P_j g_jc.
    """
    n_sites = len(layout.sites_m)
    colours = layout.colours(reuse)
    out = np.zeros(n_sites)
    received = np.asarray(tx_power_w, dtype=float)[:, None] * layout.link_gain  # (N, C)
    for b in range(n_sites):
        members = np.flatnonzero(layout.serving == b)
        if members.size == 0:
            continue
        mean_at = received[members].mean(axis=0) * float(per_cell[b])
        hit = (colours == colours[b]) & (np.arange(n_sites) != b)
        out[hit] += mean_at[hit]
    return out
