"""The FDMA band shared by the uploads on the air: egalitarian processor sharing.

While n uploads are on the air, each gets the share 1/n of the band B, re-divided at every
upload start and end, so upload k runs at

    rate_k(t) = (B / n(t)) log2(1 + SNR_k)   [bit/s],

its SNR fixed for the upload. With the *attained service* S(t) = integral of dt / n(t) (the
band-seconds per upload, the same for every upload on the air), upload k, started at s_k with
``bits_k``, ends when

    (S(t) - S(s_k)) B log2(1 + SNR_k) = bits_k,  i.e. S(t) = F_k = S(s_k) + bits_k / c_k,

with c_k = B log2(1 + SNR_k) its full-band rate. F_k never changes once the upload starts
(only how fast S grows does), so the next upload to end is the one of smallest F_k, in
(F_min - S) n seconds: a heap of F_k, O(log n) per event (docs/simulator.md, "The shared
band"). The event-driven downlink is the same class with c_k = R for every download
(``channel.downlink_rate_bps``: R / n_down(t) each).
"""

from __future__ import annotations

import heapq
import math

__all__ = ["SharedBand"]


class SharedBand:
    """The uploads on the air and their attained service S (module docstring)."""

    def __init__(self) -> None:
        self.service = 0.0  # S: band-seconds each upload on the air has had
        self._ends: list[tuple[float, int]] = []  # (F_k, client), a heap

    @property
    def n_active(self) -> int:
        """Uploads on the air."""
        return len(self._ends)

    def start(self, client: int, bits: float, full_rate_bps: float) -> None:
        """Upload ``bits`` [bit] of ``client`` at full-band rate c_k [bit/s] starts now (a rate
        of 0 never ends)."""
        need = bits / full_rate_bps if full_rate_bps > 0 else math.inf
        heapq.heappush(self._ends, (self.service + need, client))

    def next_end_in_s(self) -> float:
        """Seconds until the next upload ends if nobody starts meanwhile (inf: none on the air)."""
        if not self._ends:
            return math.inf
        return max(self._ends[0][0] - self.service, 0.0) * len(self._ends)

    def advance(self, elapsed_s: float) -> None:
        """Let ``elapsed_s`` pass with the uploads on the air now."""
        if self._ends:
            self.service += elapsed_s / len(self._ends)

    def remove(self, client: int) -> None:
        """Take ``client``'s transfer off before it ends (a cut); the others keep their F_k,
        and S grows faster from now on (O(n))."""
        self._ends = [end for end in self._ends if end[1] != client]
        heapq.heapify(self._ends)

    def end_next(self) -> int:
        """Take the upload of smallest F_k (ties: the lowest client id) off the air; its client."""
        return heapq.heappop(self._ends)[1]

    # ---- checkpoint --------------------------------------------------------------------------
    def state(self) -> dict:
        """S and each upload's (F_k, client) in heap order (JSON; floats exact, inf allowed)."""
        return {"service": self.service, "ends": [[f, client] for f, client in self._ends]}

    def restore(self, state: dict) -> None:
        """Continue from :meth:`state` (the heap list as it was: the same pops, in order)."""
        self.service = float(state["service"])
        self._ends = [(float(f), int(client)) for f, client in state["ends"]]
