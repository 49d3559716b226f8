"""The NR link's distance from Shannon (channels/nr_gap.py; docs/simulator.md, "A 5G NR
uplink"): no MCS of the tables beats Shannon's SINR 2^(Q_m R) - 1 at 10 % BLER, and none is
more than 4 dB from it; NR's goodput on n PRBs is below Shannon's rate on their bandwidth,
above 40 % of it from 0 to 20 dB, and at most the largest transport block per slot."""

from __future__ import annotations

import math

import numpy as np
import pytest

from channels.nr_bler import pusch_bler_tables, sionna_version
from channels.nr_gap import goodput_fraction_of_shannon, mcs_shannon_gap
from channels.nr_tbs import transport_block_bits

pytestmark = pytest.mark.skipif(sionna_version() is None, reason="the nr extra is not installed")


def test_every_mcs_is_above_shannon_and_within_4_db():
    rows = mcs_shannon_gap(pusch_bler_tables(1), 1, cb_size_bits=1000)
    assert [r["mcs"] for r in rows] == list(range(3, 28))  # the tables' MCS
    by_mcs = {r["mcs"]: r for r in rows}
    # MCS 10 of TS 38.214 Table 5.1.3.1-1: 16QAM at R = 340/1024
    assert by_mcs[10]["shannon_db"] == pytest.approx(10 * math.log10(2 ** (4 * 340 / 1024) - 1))
    assert all(0.0 < r["gap_db"] < 4.0 for r in rows)
    assert all(r["gap_db"] == pytest.approx(r["bler_target_db"] - r["shannon_db"]) for r in rows)


@pytest.mark.parametrize("n_prb", [5, 51])
def test_goodput_is_below_shannon_and_the_largest_block(n_prb):
    sinr_db = np.linspace(0.0, 25.0, 26)
    fraction = goodput_fraction_of_shannon(
        pusch_bler_tables(1), n_prb, sinr_db, subcarrier_spacing_hz=30e3, slot_s=0.5e-3
    )
    shannon_bps = 12 * n_prb * 30e3 * np.log2(1 + 10 ** (sinr_db / 10))
    largest_bps = transport_block_bits(n_prb, 27) / 0.5e-3
    assert np.all(fraction < 1.0)
    assert np.all(fraction[sinr_db <= 20.0] > 0.4)
    assert np.all(fraction * shannon_bps <= largest_bps * (1 + 1e-12))
