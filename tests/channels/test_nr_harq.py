"""NR uploads slot by slot and by HARQ cycles: the two fidelities' completion times agree in
distribution (two-sample KS over 1,000 uploads at three SINRs), a closed form without HARQ,
OLLA at its BLER target. Needs the nr extra (sionna-no-rt)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from channels.nr_bler import sionna_version

pytestmark = pytest.mark.skipif(sionna_version() is None, reason="the nr extra is not installed")

UPLOADS = 1000


@pytest.fixture(scope="module")
def table():
    from channels.nr_bler import pusch_bler_tables
    from channels.nr_link import link_table

    return link_table(pusch_bler_tables(1), 25, mcs_table=1, bler_target=0.1)


def _run(fn, table, sinr_db, bits, seed, **kw):
    from channels.nr_harq import LinkAdaptation
    from channels.nr_link import HarqSettings

    rngs = [np.random.default_rng([seed, i]) for i in range(UPLOADS)]
    return fn(
        [table] * UPLOADS,
        np.full(UPLOADS, 10 ** (sinr_db / 10)),
        np.full(UPLOADS, bits),
        rngs,
        harq=kw.pop("harq", HarqSettings()),
        adaptation=kw.pop("adaptation", LinkAdaptation()),
        offset_db=np.zeros(UPLOADS),
        **kw,
    )


@pytest.mark.parametrize("fading", ["block", "iid"])
@pytest.mark.parametrize("sinr_db", [0.0, 8.0, 16.0])
def test_fast_uploads_have_the_slot_loops_distribution(table, sinr_db, fading):
    """Completion slots of 1,000 uploads of 200 kbit: slot loop and HARQ cycles, KS p > 0.01,
    and the means of the slots, transmissions, NACKs, blocks, MCS sums and delivered bits
    within 3 standard errors."""
    from channels.nr_harq import fast_uploads, slot_uploads

    def draw(rng, shape):
        return rng.exponential(1.0, shape)

    kw = {} if fading == "block" else {"draw_gain": draw}
    slow_run = _run(slot_uploads, table, sinr_db, 2e5, 1, **kw)
    fast_run = _run(fast_uploads, table, sinr_db, 2e5, 2, **kw)
    slot, fast = slow_run.slots, fast_run.slots
    assert np.isfinite(slot).all() and np.isfinite(fast).all()
    if np.ptp(slot) > 0:  # a block channel at high SINR can need the same slots every time
        assert stats.ks_2samp(slot, fast).pvalue > 0.01
    for name in ("slots", "transmissions", "nacks", "blocks", "mcs_sum", "delivered_bits"):
        a, b = getattr(slow_run, name), getattr(fast_run, name)
        se = math.hypot(a.std(), b.std()) / math.sqrt(UPLOADS)
        assert abs(a.mean() - b.mean()) <= 3 * se + 1e-9, name
    np.testing.assert_array_equal(fast_run.transmissions, fast_run.slots)  # one per slot


def test_without_harq_slots_are_negative_binomial(table):
    """T = 1 on a constant channel: n = ceil(P / TBS) successes at probability 1 - q each, so
    the slots are n + NegBin(n, 1 - q): mean n / (1 - q), against the slot loop's."""
    from channels.nr_harq import slot_uploads
    from channels.nr_link import HarqSettings

    def tbler_at(x_db):
        idx = table.grid.db_index(x_db)
        return table.tbler[table.illa[idx], idx]

    s_db = next(x for x in np.arange(0.0, 20.0, 0.1) if tbler_at(x) > 0.02)  # a block fails
    s = 10 ** (s_db / 10)
    idx = table.grid.snr_index(s)
    m = table.illa[idx]
    q, tbs = table.tbler[m, idx], table.tbs_bits[m]
    assert 0.02 < q <= 0.1
    bits = 50 * tbs
    run = _run(slot_uploads, table, s_db, bits, 3, harq=HarqSettings(1, False))
    mean = 50 / (1 - q)
    sd = math.sqrt(50 * q) / (1 - q) / math.sqrt(UPLOADS)
    assert abs(run.slots.mean() - mean) < 4 * sd
    assert (run.slots >= 50).all() and (run.mcs_sum / run.blocks == m).all()
    assert run.nacks.sum() / run.transmissions.sum() == pytest.approx(q, abs=4 * math.sqrt(q / 5e4))


def test_olla_drives_the_bler_to_its_target(table):
    """OLLA slot by slot: the NACK fraction over 200 x 2 Mbit uploads at three SINRs is the
    10 % target within 1.5 points (ILLA alone stays below it)."""
    from channels.nr_harq import LinkAdaptation, slot_uploads
    from channels.nr_link import HarqSettings

    for s_db in (3.0, 10.0, 17.0):
        rngs = [np.random.default_rng([4, i]) for i in range(200)]
        run = slot_uploads(
            [table] * 200,
            np.full(200, 10 ** (s_db / 10)),
            np.full(200, 2e6),
            rngs,
            harq=HarqSettings(),
            adaptation=LinkAdaptation("olla", 0.1, 1.0),
            offset_db=np.zeros(200),
        )
        bler = run.nacks.sum() / run.transmissions.sum()
        assert bler == pytest.approx(0.1, abs=0.015), s_db


def test_fast_refuses_olla_and_an_unreachable_client_never_arrives(table):
    from channels.nr_harq import LinkAdaptation, fast_uploads, slot_uploads
    from channels.nr_link import HarqSettings

    with pytest.raises(ValueError, match="ILLA only"):
        _run(fast_uploads, table, 5.0, 1e4, 5, adaptation=LinkAdaptation("olla"))
    for fn in (slot_uploads, fast_uploads):
        run = _run(fn, table, -20.0, 1e4, 6, harq=HarqSettings(2, True))
        assert np.isinf(run.slots).all()
