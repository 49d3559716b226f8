"""What a round takes on the over-the-air uplink (``channel.uplink: aircomp``; docs/solvers.md,
"Planning the over-the-air uplink"). No torch.

Every transmitting client sends its message's dense values n_k at once over the whole band B,
one real value per channel use (:func:`channels.aircomp.analog_upload_s`), starting when the
last of them has computed (:mod:`wirelessfl.uplinks.aircomp`). There is no share to choose:
each client's share is recorded as 1, the whole band. Sparsification does not shorten the
transmission (each client keeps different entries, so the sum needs every entry: n_k is the
dense count), so the round the simulator charges lasts

    D^t = max_k c_k + max_k n_k / B

with c_k the compute time of client k; the virtual queue of eq. (21) takes this D^t under
AirComp (:func:`~wirelessfl.sim.events.compute_upload_s`, the same span read off the events).
"""

from __future__ import annotations

import numpy as np

from channels.aircomp import analog_upload_s

__all__ = ["air_round_s", "air_shares"]


def air_shares(n_clients: int) -> np.ndarray:
    """(n_clients,) ones: every client sends on the whole band."""
    return np.ones(int(n_clients))


def air_round_s(n_values: np.ndarray, compute_s: np.ndarray, bandwidth_hz: float) -> float:
    """max_k c_k + max_k n_k / B [s]: the slowest compute, then the analog transmission.

    Input: ``n_values`` (K',) dense values n_k >= 0; ``compute_s`` (K',) c_k >= 0 [s] (or a
    scalar); ``bandwidth_hz`` B > 0 [Hz].
    Output: D^t [s] (0 for no client).
    """
    n = np.asarray(n_values, dtype=float)
    if n.size == 0:
        return 0.0
    upload_s = float(analog_upload_s(n, bandwidth_hz).max())
    return float(np.max(compute_s, initial=0.0)) + upload_s
