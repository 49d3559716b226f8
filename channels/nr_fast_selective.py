"""The ``fast`` fidelity on frequency-selective links (``shares`` PRBs, ILLA): whole HARQ
cycles drawn at once, as :func:`channels.nr_harq.fast_uploads` draws them on flat links.

A client keeps its PRBs for the upload (side by side from PRB 0, so its subband weights are
fixed). With ``block`` gains its per-subband SINRs hold for the upload: ILLA picks one MCS from
the EESM effective SINR at each MCS, the j-th transmission of every block fails with the TBLER
at the effective SINR of the combined per-subband SINRs j x_s (Chase; x_s without it), and the
slot count is the renewal sum of :func:`channels.nr_harq.renewal_upload`, which also finds a
client that never delivers (ILLA falls back to the lowest MCS and every transmission fails).
With ``iid`` gains every cycle draws its own (T, S) gains, so the cycles are i.i.d. and are
drawn in chunks (:func:`channels.nr_harq.cycle_upload`). Either gives the distribution of
:func:`channels.nr_slots.prb_slot_uploads` with the ``shares`` policy (a test compares them).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from channels.nr_bank import LinkBank
from channels.nr_eesm import SubbandLayout, eesm_sinr, eesm_sinr_at
from channels.nr_harq import GainDraw, NrUploads, cycle_upload, renewal_upload
from channels.nr_link import HarqSettings
from channels.nr_slots import PrbUploads

__all__ = ["fast_selective_uploads"]

#: most HARQ cycles drawn per chunk
_MAX_CHUNK = 1024


def fast_selective_uploads(
    bank: LinkBank,
    sinr: np.ndarray,
    bits: np.ndarray,
    rngs: Sequence[np.random.Generator],
    *,
    harq: HarqSettings,
    bler_target: float,
    offset_db: np.ndarray,
    layout: SubbandLayout,
    beta: np.ndarray,
    prbs: np.ndarray,
    draw_gain: GainDraw,
    per_slot: bool = False,
) -> PrbUploads:
    """The uploads of :func:`channels.nr_slots.prb_slot_uploads` (``shares``, ILLA; same
    arguments) by whole HARQ cycles (module docstring)."""
    m, t_max = len(rngs), harq.max_transmissions
    sinr, bits, prbs = np.asarray(sinr, float), np.asarray(bits, float), np.asarray(prbs, int)
    out = NrUploads.empty(m, offset_db)
    weights = layout.weights(layout.contiguous_masks(prbs))
    bank.ensure(prbs)
    for k in range(m):
        if bits[k] <= 0:
            continue
        n, w = int(prbs[k]), weights[k]
        if per_slot:
            sample = _cycle_sampler(bank, n, sinr[k], w, beta, harq, bler_target, draw_gain)
            per_slot_bits = float(bank.table_of(n).goodput_bits_per_slot(sinr[k], harq))
            chunk = int(min(_MAX_CHUNK, 1.25 * bits[k] / max(per_slot_bits, 1.0))) + 16
            cycle_upload(sample, bank.tbs[n], bits[k], rngs[k], chunk, t_max, out, k)
            continue
        x = sinr[k] * draw_gain(rngs[k], (layout.n_subbands,))
        mcs = int(_illa(bank, n, x[None, :], w, beta, bler_target)[0])
        times = np.arange(1, t_max + 1)[:, None] if harq.chase else np.ones((t_max, 1))
        eff = eesm_sinr_at(times * x, np.tile(w, (t_max, 1)), np.full(t_max, beta[mcs]))
        q = bank.tbler[n, mcs, bank.grid.snr_index(eff)]
        renewal_upload(q, mcs, float(bank.tbs[n, mcs]), bits[k], rngs[k], out, k)
    return PrbUploads(out, out.transmissions * prbs)


def _illa(
    bank: LinkBank,
    n: int,
    x: np.ndarray,
    w: np.ndarray,
    beta: np.ndarray,
    bler_target: float,
) -> np.ndarray:
    """(c,) ILLA's MCS of c blocks on n PRBs with (c, S) per-subband SINRs and weights (S,)."""
    eff = eesm_sinr(x, w, beta)
    return bank.illa_at(np.full(x.shape[0], n), bank.grid.snr_index(eff), bler_target)


def _cycle_sampler(
    bank: LinkBank,
    n: int,
    sinr: float,
    w: np.ndarray,
    beta: np.ndarray,
    harq: HarqSettings,
    bler_target: float,
    draw_gain: GainDraw,
):
    """The sampler of i.i.d. cycles on n PRBs with subband weights ``w`` (S,) at round SINR
    ``sinr``: (T, S) gains per cycle, ILLA on the first transmission's effective SINRs."""
    t_max, s = harq.max_transmissions, w.size

    def sample(rng: np.random.Generator, c: int) -> tuple[np.ndarray, np.ndarray]:
        x = sinr * draw_gain(rng, (c, t_max, s))
        mcs = _illa(bank, n, x[:, 0], w, beta, bler_target)
        seen = np.cumsum(x, axis=1) if harq.chase else x
        eff = eesm_sinr_at(
            seen.reshape(c * t_max, s), np.tile(w, (c * t_max, 1)), np.repeat(beta[mcs], t_max)
        )
        idx = bank.grid.snr_index(eff).reshape(c, t_max)
        return mcs, bank.tbler[n, mcs[:, None], idx]

    return sample
