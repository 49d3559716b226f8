"""Three sectors a site: TR 38.901's horizontal antenna pattern and the sectors' cells. Numpy
only.

With three sectors, site i carries cells 3i, 3i + 1, 3i + 2, whose antennas point at 30°, 150°
and 270° (TR 38.901 §7.3, the hexagonal 3-sector layout). A client at angle φ from a cell's
boresight sees the antenna gain G_max + A_H(φ), A_H(φ) = −min(12 (φ / φ_3dB)², A_m) [dB] with
φ_3dB = 65°, A_m = 30 dB and G_max = 8 dBi (TR 38.901 Table 7.3-1's element pattern; the
vertical pattern and downtilt are not modelled: the layout is 2-D). The angle is taken to the
nearest copy of the site under wrap-around.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "BORESIGHTS_DEG",
    "BEAMWIDTH_DEG",
    "FRONT_TO_BACK_DB",
    "MAX_GAIN_DBI",
    "SECTOR_COUNTS",
    "antenna_gain_db",
    "into_sector",
]

#: sectors a site may have
SECTOR_COUNTS = (1, 3)
#: the three sectors' boresights [deg]
BORESIGHTS_DEG = (30.0, 150.0, 270.0)
#: φ_3dB, A_m and G_max of TR 38.901 Table 7.3-1
BEAMWIDTH_DEG = 65.0
FRONT_TO_BACK_DB = 30.0
MAX_GAIN_DBI = 8.0


def _wrap_deg(angle: np.ndarray) -> np.ndarray:
    """Angles [deg] into [−180, 180)."""
    return (np.asarray(angle, dtype=float) + 180.0) % 360.0 - 180.0


def antenna_gain_db(offsets_m: np.ndarray, boresight_deg: np.ndarray) -> np.ndarray:
    """(…, C) G_max + A_H(φ) [dB] of clients at ``offsets_m`` (…, C, 2) [m] from C cells'
    antennas pointing at ``boresight_deg`` (C,) (module docstring)."""
    offsets = np.asarray(offsets_m, dtype=float)
    bearing = np.degrees(np.arctan2(offsets[..., 1], offsets[..., 0]))
    phi = _wrap_deg(bearing - np.asarray(boresight_deg, dtype=float))
    return MAX_GAIN_DBI - np.minimum(12.0 * (phi / BEAMWIDTH_DEG) ** 2, FRONT_TO_BACK_DB)


def into_sector(offsets_m: np.ndarray, sector: np.ndarray) -> np.ndarray:
    """(N, 2) offsets [m] from their sites rotated by a multiple of 120° into the 120° wedge
    around their ``sector``'s boresight (N,): a hexagon maps onto itself under a 120°
    rotation, so points uniform in a site's hexagon become uniform in the sector's third."""
    offsets = np.asarray(offsets_m, dtype=float)
    bearing = np.degrees(np.arctan2(offsets[:, 1], offsets[:, 0]))
    centre = np.asarray(BORESIGHTS_DEG)[np.asarray(sector, dtype=int)]
    turns = np.round(_wrap_deg(centre - bearing) / 120.0)
    angle = np.radians(120.0 * turns)
    cos, sin = np.cos(angle), np.sin(angle)
    return np.stack(
        [cos * offsets[:, 0] - sin * offsets[:, 1], sin * offsets[:, 0] + cos * offsets[:, 1]],
        axis=-1,
    )
