"""The NR uplink grid: N_RB against TS 38.101-1's guard bands, slots, PUSCH REs (the 156 cap of
TS 38.214) and the shares-to-PRBs rounding (largest remainder, every scheduled client a PRB)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from channels.nr_grid import (
    NR_FR1_PRBS,
    prbs_from_shares,
    pusch_resource_elements,
    resource_blocks,
    slot_s,
    subcarrier_spacing_hz,
)
from channels.nr_tbs import transport_block_bits


def test_prb_counts_by_hand_and_by_the_guard_band_note():
    assert resource_blocks(20e6, 1) == 51  # 20 MHz at 30 kHz
    assert resource_blocks(100e6, 1) == 273
    assert resource_blocks(20e6, 0) == 106
    assert resource_blocks(10e6, 2) == 11
    # TS 38.101-1 Table 5.3.3-1 (minimum guard band [kHz]) from its note's relation
    # guard = (BW - N_RB 12 SCS) / 2 - SCS / 2, an independent table of the same carriers
    guard_khz = {
        (15, 5): 242.5, (15, 10): 312.5, (15, 20): 452.5, (15, 50): 692.5,
        (30, 5): 505.0, (30, 10): 665.0, (30, 20): 805.0, (30, 100): 845.0,
        (60, 10): 1010.0, (60, 20): 1330.0, (60, 100): 1370.0,
    }  # fmt: skip
    for (scs_khz, mhz), guard in guard_khz.items():
        n_rb = NR_FR1_PRBS[scs_khz][mhz]
        assert (mhz * 1e3 - n_rb * 12 * scs_khz) / 2 - scs_khz / 2 == guard, (scs_khz, mhz)
    for table in NR_FR1_PRBS.values():  # more bandwidth, more PRBs, always a guard band
        counts = [table[mhz] for mhz in sorted(table)]
        assert counts == sorted(counts) and len(set(counts)) == len(counts)
    for scs_khz, table in NR_FR1_PRBS.items():
        assert all(n_rb * 12 * scs_khz < mhz * 1e3 for mhz, n_rb in table.items())


def test_numerology_slots_and_refusals():
    assert [subcarrier_spacing_hz(mu) for mu in (0, 1, 2)] == [15e3, 30e3, 60e3]
    assert [slot_s(mu) for mu in (0, 1, 2)] == [1e-3, 0.5e-3, 0.25e-3]
    with pytest.raises(ValueError, match="numerology: 0, 1 or 2"):
        slot_s(3)
    with pytest.raises(ValueError, match="no FR1 channel bandwidth at 60 kHz"):
        resource_blocks(5e6, 2)  # N/A in Table 5.3.2-1
    with pytest.raises(ValueError, match="12.5 MHz is no FR1 channel bandwidth"):
        resource_blocks(12.5e6, 1)


def test_pusch_resource_elements_are_the_ones_the_transport_block_counts():
    # one DMRS symbol (12 REs): 168 - 12 = 156 per PRB, exactly the cap
    assert pusch_resource_elements(5) == 780
    # no DMRS would give 168, capped at 156; two DMRS symbols give 144
    assert pusch_resource_elements(5, dmrs_re_per_prb=0) == 780
    assert pusch_resource_elements(5, dmrs_re_per_prb=24) == 720
    assert pusch_resource_elements(5, dmrs_re_per_prb=24, overhead_re_per_prb=6) == 690
    np.testing.assert_array_equal(pusch_resource_elements(np.array([1, 2])), [156, 312])
    # TS 38.214's worked size: MCS 10 of table 1 on 5 PRBs with one DMRS symbol is 1032 bits,
    # from the same 156 REs per PRB
    assert transport_block_bits(5, 10, dmrs_re_per_prb=12) == 1032
    with pytest.raises(ValueError, match="no data REs"):
        pusch_resource_elements(1, dmrs_re_per_prb=168)


def test_shares_become_whole_prbs_by_largest_remainder():
    # 51 PRBs, shares 0.5, 0.3, 0.2: 25.5, 15.3, 10.2 -> floors 25, 15, 10 (50), one left to
    # the largest remainder (client 0)
    np.testing.assert_array_equal(prbs_from_shares(np.array([0.5, 0.3, 0.2]), 51), [26, 15, 10])
    # equal remainders go to the lower index
    np.testing.assert_array_equal(prbs_from_shares(np.full(4, 0.25), 10), [3, 3, 2, 2])
    # a tiny share still transmits: a PRB left free by the rounding
    np.testing.assert_array_equal(prbs_from_shares(np.array([0.5, 0.001]), 10), [5, 1])
    # all PRBs taken: the PRB comes from the first largest allocation
    np.testing.assert_array_equal(prbs_from_shares(np.array([0.999, 0.001]), 10), [9, 1])
    # a zero share gets nothing
    np.testing.assert_array_equal(prbs_from_shares(np.array([0.6, 0.0, 0.4]), 5), [3, 0, 2])
    with pytest.raises(ValueError, match="one PRB each is not enough"):
        prbs_from_shares(np.full(12, 1 / 12), 11)
    with pytest.raises(ValueError, match="summing to at most 1"):
        prbs_from_shares(np.array([0.7, 0.7]), 10)


def test_rounding_keeps_the_sum_and_stays_within_one_prb_of_the_share():
    rng = np.random.default_rng(0)
    for n_rb, k in itertools.product((11, 51, 273), (1, 3, 10)):
        for _ in range(200):
            b = rng.dirichlet(np.ones(k))
            if rng.random() < 0.3:
                b = b * rng.uniform(0.5, 1.0)  # some of the band left idle
            prbs = prbs_from_shares(b, n_rb)
            assert prbs.sum() <= n_rb and (prbs >= 1).all()
            if np.isclose(b.sum(), 1.0):
                assert prbs.sum() == n_rb
            # one PRB of rounding, plus at most the PRBs that moved to tiny shares
            moved = int(np.sum(b * n_rb < 1))
            assert np.all(np.abs(prbs - b * n_rb) < 1 + moved + 1e-9)
