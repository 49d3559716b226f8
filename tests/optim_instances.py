"""Random cells for the energy and joint solvers' tests (tests/optim), shared because test
modules cannot import each other. A caller draws its clients' bits first, then
:func:`random_devices` draws the rest, so each test keeps its own draws."""

from __future__ import annotations

import numpy as np

B_HZ = 1e6  # the band [Hz]


def random_devices(rng: np.random.Generator, k: int) -> dict:
    """Keyword inputs of K random devices beside their bits: (K,) cycles, SNR per W [1/W],
    clock range [Hz], P_max [W], kappa 1e-28 and the band ``B_HZ``, drawn in this order."""
    return dict(
        cycles=rng.uniform(1e7, 1e9, k),
        snr_per_w=10 ** rng.uniform(1.0, 4.0, k),
        f_min_hz=rng.uniform(1e8, 3e8, k),
        f_max_hz=rng.uniform(1e9, 2e9, k),
        kappa=1e-28,
        p_max_w=rng.uniform(0.05, 0.3, k),
        bandwidth_hz=B_HZ,
    )
