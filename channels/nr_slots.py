"""NR PUSCH uploads slot by slot on PRB sets: frequency-selective links through EESM and the
``pf`` (proportional fair) PRB policy (numpy only; docs/simulator.md, "A 5G NR uplink").

Each slot every uploading client sends at most one transport block on a set of PRBs:
- a HARQ retransmission on the PRBs of its block's first transmission (same TBS, same MCS;
  scheduled first, as the schedulers of ns-3's 5G-LENA do);
- a new block on the PRBs the policy gives it: ``shares``, its fixed allocation for the whole
  upload (the controller's shares as whole PRBs, side by side from PRB 0); ``pf``, Sionna SYS's
  ``PFSchedulerSUMIMO`` rule on the PRBs no retransmission holds: each PRB goes to the client
  with the largest R~(u, i) / T(u) among those with bits left and no block in HARQ, where
  R~(u, i) = log2(1 + SINR(u, i)) [bit/s/Hz] is its achievable rate on that PRB and T(u) its
  throughput discounted by beta per slot, T_t = beta T_(t-1) + (1 - beta) R_(t-1) (R: the
  bits it delivered in the slot; T_0 = 1, as Sionna starts it).
Its SINR on PRB i is the round's SINR times the unit-mean gain of the PRB's subband
(:class:`~channels.nr_eesm.SubbandLayout`), one per (client, subband), drawn once for the upload
(``block``) or every slot (``iid``); without frequency selectivity one subband holds the carrier.
The block is decoded at the EESM effective SINR of its PRBs at its MCS (with Chase combining,
of the per-subband SINR sums of its transmissions); ILLA picks the MCS from the effective SINR
at each MCS, OLLA from the previous slot's effective SINR minus its offset
(:mod:`channels.nr_harq` for HARQ, OLLA and the end of an upload).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from channels.nr_bank import LinkBank
from channels.nr_eesm import SubbandLayout, eesm_sinr, eesm_sinr_at
from channels.nr_harq import OFFSET_BOUNDS_DB, GainDraw, LinkAdaptation, NrUploads
from channels.nr_link import HarqSettings

__all__ = ["PrbPolicy", "PrbUploads", "never_delivers", "pf_assign", "prb_slot_uploads"]

#: slots drawn per chunk of the loop
_CHUNK_SLOTS = 256


@dataclass(frozen=True)
class PrbPolicy:
    """``kind`` ``shares`` (fixed PRBs per upload) | ``pf``; PF's discount ``beta``."""

    kind: str = "shares"
    beta: float = 0.98


@dataclass
class PrbUploads:
    """The uploads (:class:`~channels.nr_harq.NrUploads`) and ``prb_slots`` (m,): the PRBs
    each client sent on, summed over its slots."""

    uploads: NrUploads
    prb_slots: np.ndarray


def pf_assign(
    achievable: np.ndarray, past: np.ndarray, eligible: np.ndarray, free: np.ndarray
) -> np.ndarray:
    """(N_RB,) the client each PRB goes to (-1: none) under PF: argmax over the ``eligible``
    (N_RB, m) of ``achievable`` (N_RB, m) / ``past`` (m,) (the first on ties, as
    ``torch.argmax``), on the ``free`` (N_RB,) PRBs that have an eligible client."""
    metric = np.where(eligible, achievable / past[None, :], -np.inf)
    owner = np.argmax(metric, axis=1)
    return np.where(free & eligible.any(axis=1), owner, -1)


def _gains(
    rngs: Sequence[np.random.Generator], draw: GainDraw | None, shape: tuple[int, ...]
) -> np.ndarray:
    """(m, *shape) unit-mean gains per client (ones without a draw)."""
    if draw is None:
        return np.ones((len(rngs), *shape))
    return np.stack([draw(rng, shape) for rng in rngs])


def decodable_sinr(bank: LinkBank) -> float:
    """The lowest linear SINR of the BLER grid at which the lowest MCS's transport block on one
    PRB is not lost with certainty: a PRB below it (after combining every transmission) can
    carry no block."""
    lowest = bank.lowest_mcs()
    grid = bank.grid
    ok = np.flatnonzero(bank.tbler[1, lowest, : grid.n_snr] < 1.0)
    db = grid.snr_grid_db[ok[0]] if ok.size else np.inf
    return float(10.0 ** (db / 10.0))


def never_delivers(
    bank: LinkBank,
    sinr: np.ndarray,
    harq: HarqSettings,
    beta: np.ndarray,
    masks: np.ndarray | None,
    layout: SubbandLayout,
) -> np.ndarray:
    """(m,) clients that can never deliver on a channel constant over the upload, from their
    (m, S) per-subband SINRs: on fixed PRBs (``masks`` (m, N_RB)), the lowest MCS's block is
    lost with certainty at the EESM effective SINR of every transmission combined (the best
    it can see; ILLA then picks that MCS); under ``pf`` (``masks`` None), no subband reaches
    :func:`decodable_sinr` combined over every transmission (the PRBs ``pf`` gives it)."""
    seen = sinr * (harq.max_transmissions if harq.chase else 1)
    if masks is None:
        return ~np.any(seen >= decodable_sinr(bank), axis=1)
    lowest = bank.lowest_mcs()
    n_prb = masks.sum(axis=1)
    bank.ensure(n_prb)
    eff = eesm_sinr_at(seen, layout.weights(masks), np.full(len(seen), beta[lowest]))
    return bank.tbler[n_prb, lowest, bank.grid.snr_index(eff)] >= 1.0


def prb_slot_uploads(
    bank: LinkBank,
    sinr: np.ndarray,
    bits: np.ndarray,
    rngs: Sequence[np.random.Generator],
    *,
    harq: HarqSettings,
    adaptation: LinkAdaptation,
    offset_db: np.ndarray,
    layout: SubbandLayout,
    beta: np.ndarray,
    policy: PrbPolicy,
    prbs: np.ndarray | None = None,
    draw_gain: GainDraw | None = None,
    per_slot: bool = False,
) -> PrbUploads:
    """Every slot of m uploads (module docstring): ``sinr`` (m,) linear round SINRs, ``bits``
    (m,), one generator per client, OLLA ``offset_db`` (m,) at the start, the carrier's
    ``layout``, EESM ``beta`` (M,), the ``policy`` (``shares``: ``prbs`` (m,) each client's
    PRBs), ``draw_gain`` the subband gains' draw (None: flat, gain 1), redrawn each slot when
    ``per_slot``."""
    m, n_rb, s = len(rngs), layout.n_rb, layout.n_subbands
    sinr, bits = np.asarray(sinr, float), np.asarray(bits, float)
    out = NrUploads.empty(m, offset_db)
    prb_slots = np.zeros(m)
    fixed = None if policy.kind == "pf" else layout.contiguous_masks(np.asarray(prbs))
    gains = None if per_slot else _gains(rngs, draw_gain, (s,))
    remaining, active = bits.copy(), bits > 0
    if fixed is not None:  # no PRB: never sends
        out.slots[active & ~fixed.any(axis=1)] = math.inf
        active &= fixed.any(axis=1)
    steady = None if per_slot else sinr[:, None] * gains  # (m, S) for the whole upload
    if steady is not None:
        never = never_delivers(bank, steady, harq, beta, fixed, layout) & active
        out.slots[never] = math.inf
        active &= ~never
    floor = decodable_sinr(bank) / (harq.max_transmissions if harq.chase else 1)
    if fixed is not None:  # the same PRBs, subband weights and links every block
        fixed_weights = layout.weights(fixed)
        bank.ensure(fixed.sum(axis=1))
    mask = np.zeros((m, n_rb), dtype=bool)
    tx, mcs = np.zeros(m, dtype=np.intp), np.zeros(m, dtype=np.intp)
    acc, weights = np.zeros((m, s)), np.zeros((m, s))
    with np.errstate(divide="ignore"):
        last_db = 10.0 * np.log10(sinr)
    offset, past, last_rate = out.offset_db, np.ones(m), np.zeros(m)
    olla = adaptation.kind == "olla"
    up, down = adaptation.delta_up_db, adaptation.delta_down_db
    prb_subband, grid, slot = layout.subband_of_prb, bank.grid, 0
    while active.any():
        uniform = np.stack([rng.random(_CHUNK_SLOTS) for rng in rngs])
        chunk = _gains(rngs, draw_gain, (_CHUNK_SLOTS, s)) if per_slot else None
        for j in range(_CHUNK_SLOTS):
            x = sinr[:, None] * chunk[:, j] if per_slot else steady  # (m, S)
            new = active & (tx == 0)
            if fixed is not None:
                mask[new] = fixed[new]
            else:
                past = policy.beta * past + (1.0 - policy.beta) * last_rate
                held = mask[active & (tx > 0)].any(axis=0)
                on_prb = x[:, prb_subband].T  # (N_RB, m)
                usable = new[None, :] & (on_prb >= floor)
                owner = pf_assign(np.log2(1.0 + on_prb), past, usable, ~held)
                mask[new] = owner[None, :] == np.flatnonzero(new)[:, None]
            sent = active & mask.any(axis=1)
            starts = sent & new
            n_prb = mask.sum(axis=1)
            if fixed is None:
                bank.ensure(n_prb[sent])
            if starts.any():
                if fixed is None:
                    weights[starts] = layout.weights(mask[starts])
                else:
                    weights[starts] = fixed_weights[starts]
                if olla:
                    cue = grid.db_index(last_db[starts] - offset[starts])
                    mcs[starts] = bank.illa[n_prb[starts], cue]
                else:
                    eff = eesm_sinr(x[starts], weights[starts], beta)
                    mcs[starts] = bank.illa_at(
                        n_prb[starts], grid.snr_index(eff), adaptation.bler_target
                    )
            acc = np.where(starts[:, None], 0.0, acc) + x if harq.chase else x
            eff = eesm_sinr_at(acc[sent], weights[sent], beta[mcs[sent]])
            tbler = bank.tbler[n_prb[sent], mcs[sent], grid.snr_index(eff)]
            fail = np.zeros(m, dtype=bool)
            fail[sent] = uniform[sent, j] < tbler
            ok = sent & ~fail
            got = np.where(ok, bank.tbs[n_prb, mcs], 0.0)
            remaining -= got
            last_rate = got
            out.delivered_bits += got
            out.transmissions += sent
            out.nacks += sent & fail
            out.blocks += starts
            out.mcs_sum += np.where(starts, mcs, 0)
            prb_slots += np.where(sent, n_prb, 0)
            if olla:
                step = np.where(fail, up, -down)
                offset = np.where(sent, np.clip(offset + step, *OFFSET_BOUNDS_DB), offset)
                own = eesm_sinr_at(x[sent], weights[sent], beta[mcs[sent]])
                with np.errstate(divide="ignore"):
                    last_db[sent] = 10.0 * np.log10(own)
            tx = np.where(sent, tx + 1, tx)
            tx = np.where(ok | (tx >= harq.max_transmissions), 0, tx)
            mask[tx == 0] = False
            slot += 1
            finished = sent & (remaining <= 0)
            out.slots[finished] = slot
            active = active & ~finished
            if not active.any():
                break
    out.offset_db = offset
    return PrbUploads(out, prb_slots)
