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
from wirelessfl.controllers.uplink_planning import AffineUploads, UplinkPlanning

__all__ = ["AnalogSumPlanning", "air_round_s", "air_shares"]


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


class AnalogSumPlanning(UplinkPlanning):
    """The analog sum's planning on a band of ``bandwidth_hz`` [Hz] (module docstring): no
    shares, a round of max_k c_k + max_k n_k / B whatever the ratio, an offline average of the
    analog time n(r) / B."""

    NAME = "aircomp"
    STARTS_TOGETHER = "the analog sum waits for the slowest compute"
    READS_DENSE_VALUES = True
    OFFERS = frozenset({"round", "offline"})

    def __init__(self, bandwidth_hz: float) -> None:
        self.bandwidth_hz = float(bandwidth_hz)

    def plan_round(
        self, bits: np.ndarray, n_values: np.ndarray | None, snr: np.ndarray, compute_s: np.ndarray
    ) -> tuple[np.ndarray, float]:
        """Ones (the whole band) and D^t = max_k c_k + max_k n_k / B [s]."""
        return air_shares(len(snr)), air_round_s(n_values, compute_s, self.bandwidth_hz)

    def delay_pieces(
        self,
        uploads: AffineUploads,
        n_values: np.ndarray | None,
        snr: np.ndarray,
        compute_s: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """One flat piece: no ratio shortens the analog sum, D = max_k c_k + max_k n_k / B."""
        return np.zeros(1), np.array([air_round_s(n_values, compute_s, self.bandwidth_hz)])

    def offline_delay(
        self, uploads: AffineUploads, n_values: np.ndarray | None, weight: np.ndarray, scale: float
    ) -> tuple[float, float]:
        """(0, max_g n_g / B): the analog time of the largest message, O = 1."""
        return 0.0, float(np.max(n_values)) / self.bandwidth_hz
