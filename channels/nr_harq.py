"""NR PUSCH uploads slot by slot: link adaptation, transport blocks, HARQ (numpy only; the
links are :class:`~channels.nr_link.LinkTable`).

Each of m clients sends ``bits`` on its own PRBs, one transport block per slot: a new block at
the MCS link adaptation picks, or the HARQ retransmission of a failed one (the next slot: the
HARQ round trip is covered by the other HARQ processes, so a retransmission takes a slot a new
block would have taken; :mod:`channels.nr_link` for combining and dropped blocks). The upload
ends in the slot whose acknowledged blocks reach ``bits`` (the last block's padding is sent but
not counted).

The slot's SINR is the round's SINR s_k (``fading: block``: the channel holds for the upload)
or s_k g with g an independent unit-mean fading power drawn per slot and client (``iid``: the
round's SINR is the local mean). Link adaptation: ``illa`` picks the MCS from the slot's own
SINR (known channel); ``olla`` (Sionna's ``OuterLoopLinkAdaptation``) from the previous slot's
SINR minus an offset that rises by ``delta_up_db`` on a NACK and falls by delta_up_db t / (1 - t)
on an ACK (t: the BLER target), clamped to [-20, 20] dB, which drives the BLER to t.

Two fidelities give the same distribution of the upload where the slots are i.i.d. (ILLA on
either fading): :func:`slot_uploads` steps every slot (the reference; OLLA needs it: its offset
carries one slot's feedback to the next); :func:`fast_uploads` draws whole HARQ cycles at once,
which are i.i.d. under ILLA: the slot count is the renewal sum of the cycles up to the one that
completes the bits (on ``block`` fading, where every block has one size, drawn in O(T) as a
negative binomial count of dropped cycles and a multinomial of the successful cycles' lengths;
on ``iid``, cycle by cycle in chunks).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from channels.nr_link import HarqSettings, LinkTable, harq_cycle

__all__ = [
    "CycleSampler",
    "LinkAdaptation",
    "NrUploads",
    "cycle_upload",
    "fast_uploads",
    "renewal_upload",
    "slot_uploads",
]

#: Sionna's OLLA offset bounds [dB]
OFFSET_BOUNDS_DB = (-20.0, 20.0)
#: slots drawn per chunk of the slot loop
_CHUNK_SLOTS = 256

GainDraw = Callable[[np.random.Generator, tuple[int, ...]], np.ndarray]


@dataclass(frozen=True)
class LinkAdaptation:
    """``kind`` ``illa`` | ``olla``; ILLA's ``bler_target``; OLLA's ``delta_up_db``."""

    kind: str = "illa"
    bler_target: float = 0.1
    delta_up_db: float = 1.0

    @property
    def delta_down_db(self) -> float:
        """The OLLA offset's step down on an ACK [dB]."""
        return self.delta_up_db * self.bler_target / (1.0 - self.bler_target)


@dataclass
class NrUploads:
    """What m uploads did: ``slots`` (m,) float slots to deliver (inf: never), and per client
    ``transmissions``, ``nacks``, ``blocks`` (new transport blocks), ``mcs_sum`` (of the
    blocks' MCS), ``delivered_bits`` and the OLLA ``offset_db`` after the upload."""

    slots: np.ndarray
    transmissions: np.ndarray
    nacks: np.ndarray
    blocks: np.ndarray
    mcs_sum: np.ndarray
    delivered_bits: np.ndarray
    offset_db: np.ndarray

    @classmethod
    def empty(cls, m: int, offset_db: np.ndarray) -> NrUploads:
        zeros = np.zeros(m)
        return cls(zeros.copy(), zeros.copy(), zeros.copy(), zeros.copy(), zeros.copy(),
                   zeros.copy(), np.asarray(offset_db, dtype=float).copy())  # fmt: skip


def _never(tables: Sequence[LinkTable], sinr: np.ndarray, harq: HarqSettings) -> np.ndarray:
    """(m,) clients whose block can never be delivered on a constant channel: even the lowest
    MCS fails every transmission."""
    never = np.zeros(len(tables), bool)
    for k, table in enumerate(tables):
        lowest = int(np.argmax(table.tbs_bits > 0))
        delivered, _ = harq_cycle(table, np.array(lowest), np.array(sinr[k]), harq)
        never[k] = delivered <= 0.0
    return never


def slot_uploads(
    tables: Sequence[LinkTable],
    sinr: np.ndarray,
    bits: np.ndarray,
    rngs: Sequence[np.random.Generator],
    *,
    harq: HarqSettings,
    adaptation: LinkAdaptation,
    offset_db: np.ndarray,
    draw_gain: GainDraw | None = None,
) -> NrUploads:
    """Every slot of m uploads (module docstring): ``tables`` (m,) their links, ``sinr`` (m,)
    linear round SINRs, ``bits`` (m,), one generator per client, the (m,) OLLA offsets [dB] at
    the start, ``draw_gain``: unit-mean fading powers of a shape (None: ``block``)."""
    m = len(tables)
    sinr, bits = np.asarray(sinr, float), np.asarray(bits, float)
    out = NrUploads.empty(m, offset_db)
    unique = {id(t): t for t in tables}
    index = {key: i for i, key in enumerate(unique)}
    tid = np.array([index[id(t)] for t in tables], dtype=np.intp)
    grid = tables[0].grid
    tbler = np.stack([t.tbler for t in unique.values()])
    tbs = np.stack([t.tbs_bits for t in unique.values()]).astype(float)
    illa = np.stack([t.illa for t in unique.values()])
    remaining = bits.copy()
    active = remaining > 0
    if draw_gain is None:
        never = _never(tables, sinr, harq) & active
        out.slots[never] = math.inf
        active &= ~never
    tx = np.zeros(m, dtype=np.intp)
    mcs = np.zeros(m, dtype=np.intp)
    acc = np.zeros(m)
    with np.errstate(divide="ignore"):
        last_db = 10.0 * np.log10(sinr)
    offset = out.offset_db
    olla = adaptation.kind == "olla"
    up, down = adaptation.delta_up_db, adaptation.delta_down_db
    slot = 0
    while active.any():
        uniform = np.stack([rng.random(_CHUNK_SLOTS) for rng in rngs])
        gains = None
        if draw_gain is not None:
            gains = np.stack([draw_gain(rng, (_CHUNK_SLOTS,)) for rng in rngs])
        for j in range(_CHUNK_SLOTS):
            x = sinr if gains is None else sinr * gains[:, j]
            new = tx == 0
            cue = grid.db_index(last_db - offset) if olla else grid.snr_index(x)
            mcs = np.where(new, illa[tid, cue], mcs)
            acc = np.where(new, 0.0, acc) + x if harq.chase else x
            fail = uniform[:, j] < tbler[tid, mcs, grid.snr_index(acc)]
            sent = active
            ok = sent & ~fail
            got = np.where(ok, tbs[tid, mcs], 0.0)
            remaining -= got
            out.delivered_bits += got
            out.transmissions += sent
            out.nacks += sent & fail
            out.blocks += sent & new
            out.mcs_sum += np.where(sent & new, mcs, 0)
            if olla:
                step = np.where(fail, up, -down)
                offset = np.where(sent, np.clip(offset + step, *OFFSET_BOUNDS_DB), offset)
                with np.errstate(divide="ignore"):
                    last_db = np.where(sent, 10.0 * np.log10(x), last_db)
            tx = np.where(sent, tx + 1, tx)
            tx = np.where(ok | (tx >= harq.max_transmissions), 0, tx)
            slot += 1
            finished = sent & (remaining <= 0)
            out.slots[finished] = slot
            active = active & ~finished
            if not active.any():
                break
    out.offset_db = offset
    return out


def fast_uploads(
    tables: Sequence[LinkTable],
    sinr: np.ndarray,
    bits: np.ndarray,
    rngs: Sequence[np.random.Generator],
    *,
    harq: HarqSettings,
    adaptation: LinkAdaptation,
    offset_db: np.ndarray,
    draw_gain: GainDraw | None = None,
) -> NrUploads:
    """The uploads of :func:`slot_uploads` (same arguments) drawn by whole HARQ cycles under
    ILLA (module docstring); ValueError for OLLA."""
    if adaptation.kind != "illa":
        raise ValueError("fast_uploads draws i.i.d. HARQ cycles: ILLA only")
    m = len(tables)
    sinr, bits = np.asarray(sinr, float), np.asarray(bits, float)
    out = NrUploads.empty(m, offset_db)
    if draw_gain is None:
        _fast_blocks(tables, sinr, bits, rngs, harq, out)
        return out
    t_max = harq.max_transmissions
    for k, table in enumerate(tables):
        if bits[k] <= 0:
            continue
        per_slot = float(table.goodput_bits_per_slot(np.array(sinr[k]), harq))
        block = float(table.tbs_bits[table.illa[table.grid.snr_index(sinr[k])]])
        chunk = int(min(1e6, 1.25 * bits[k] / max(min(per_slot, block), 1.0))) + 16
        _fast_one(table, sinr[k], bits[k], rngs[k], harq, draw_gain, chunk, t_max, out, k)
    return out


def _fast_blocks(
    tables: Sequence[LinkTable],
    sinr: np.ndarray,
    bits: np.ndarray,
    rngs: Sequence[np.random.Generator],
    harq: HarqSettings,
    out: NrUploads,
) -> None:
    """The m uploads on constant channels in O(T) draws each (into ``out``; no bits: nothing):
    every cycle is at the one MCS ILLA picks, its j-th transmission failing with the TBLER at
    the SINR seen then (:func:`renewal_upload`)."""
    t_max = harq.max_transmissions
    n = np.arange(1, t_max + 1)
    seen = tables[0].grid.snr_index(sinr[:, None] * (n if harq.chase else np.ones(t_max)))
    for k, table in enumerate(tables):
        if bits[k] <= 0:
            continue
        mcs = int(table.illa[seen[k, 0]])
        q = table.tbler[mcs, seen[k]]
        renewal_upload(q, mcs, float(table.tbs_bits[mcs]), bits[k], rngs[k], out, k)


def renewal_upload(
    q: np.ndarray,
    mcs: int,
    tbs: float,
    bits: float,
    rng: np.random.Generator,
    out: NrUploads,
    k: int,
) -> None:
    """Client k's upload of ``bits`` in blocks of ``tbs`` bits at MCS ``mcs`` whose j-th
    transmission fails with (T,) ``q``[j] (into ``out``): S = ceil(bits / TBS) cycles must
    succeed; a cycle fails with p = prod_j q_j, so the dropped cycles before the S-th success
    are negative binomial (S, 1 - p), each T slots, and the successful ones end at
    transmission n with probabilities prod_{j<n} q_j (1 - q_n) / (1 - p), multinomial over the
    S of them. Never delivering (p = 1): infinite slots."""
    t_max = q.size
    n = np.arange(1, t_max + 1)
    reach = np.ones(t_max)  # P(transmission n happens)
    reach[1:] = np.cumprod(q[:-1])
    ends = reach * (1.0 - q)  # P(the cycle succeeds at transmission n)
    p_success = float(ends.sum())
    if p_success <= 0.0:  # even the lowest MCS fails every transmission: never arrives
        out.slots[k] = math.inf
        return
    successes = math.ceil(bits / tbs)
    dropped = int(rng.negative_binomial(successes, p_success)) if p_success < 1.0 else 0
    lengths = rng.multinomial(successes, ends / p_success)
    sent = float(np.dot(n, lengths)) + t_max * dropped
    out.slots[k] = out.transmissions[k] = sent
    out.nacks[k] = sent - successes
    out.blocks[k] = successes + dropped
    out.mcs_sum[k] = mcs * (successes + dropped)
    out.delivered_bits[k] = successes * tbs


#: a sampler of HARQ cycles: (generator, number of cycles) -> (MCS (c,), TBLER (c, T)) of each
#: cycle's block and transmissions
CycleSampler = Callable[[np.random.Generator, int], tuple[np.ndarray, np.ndarray]]


def _fast_one(
    table: LinkTable,
    sinr: float,
    bits: float,
    rng: np.random.Generator,
    harq: HarqSettings,
    draw_gain: GainDraw | None,
    chunk: int,
    t_max: int,
    out: NrUploads,
    k: int,
) -> None:
    """Client k's cycles on a flat link, ``chunk`` at a time, until its bits are delivered."""
    grid = table.grid

    def sample(rng: np.random.Generator, c: int) -> tuple[np.ndarray, np.ndarray]:
        x = np.full((c, t_max), sinr)
        if draw_gain is not None:
            x = sinr * draw_gain(rng, (c, t_max))
        mcs = table.illa[grid.snr_index(x[:, 0])]
        seen = np.cumsum(x, axis=1) if harq.chase else x
        return mcs, table.tbler[mcs[:, None], grid.snr_index(seen)]

    cycle_upload(sample, table.tbs_bits, bits, rng, chunk, t_max, out, k)


def cycle_upload(
    sample: CycleSampler,
    tbs_bits: np.ndarray,
    bits: float,
    rng: np.random.Generator,
    chunk: int,
    t_max: int,
    out: NrUploads,
    k: int,
) -> None:
    """Client k's i.i.d. HARQ cycles from ``sample``, ``chunk`` at a time (a uniform per
    transmission drawn before each chunk's channel), until ``bits`` are delivered (into
    ``out``); ``tbs_bits`` (M,) the block size per MCS."""
    delivered, slots = 0.0, 0.0
    while True:
        uniform = rng.random((chunk, t_max))
        mcs, tbler = sample(rng, chunk)
        fail = uniform < tbler
        success = ~fail.all(axis=1)
        length = np.where(success, np.argmax(~fail, axis=1) + 1, t_max)
        got = np.where(success, tbs_bits[mcs], 0).astype(float)
        total = delivered + np.cumsum(got)
        done = np.flatnonzero(total >= bits)
        last = int(done[0]) if done.size else chunk - 1
        used = slice(0, last + 1)
        out.transmissions[k] += length[used].sum()
        out.nacks[k] += length[used].sum() - success[used].sum()
        out.blocks[k] += last + 1
        out.mcs_sum[k] += mcs[used].sum()
        out.delivered_bits[k] += got[used].sum()
        slots += float(length[used].sum())
        delivered = float(total[last])
        if done.size:
            out.slots[k] = slots
            return
