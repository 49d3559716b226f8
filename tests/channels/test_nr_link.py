"""The NR link tables against Sionna SYS itself (PHYAbstraction, InnerLoopLinkAdaptation) and
the HARQ renewal formula against a closed form. Needs the nr extra (sionna-no-rt)."""

from __future__ import annotations

import numpy as np
import pytest

from channels.nr_bler import sionna_version
from channels.nr_grid import pusch_re_per_prb

pytestmark = pytest.mark.skipif(sionna_version() is None, reason="the nr extra is not installed")


@pytest.fixture(scope="module")
def grid():
    from channels.nr_bler import pusch_bler_tables

    return pusch_bler_tables(1)


@pytest.fixture(scope="module")
def sionna():
    import torch
    from sionna.sys import InnerLoopLinkAdaptation, PHYAbstraction

    torch.set_num_threads(1)
    phy = PHYAbstraction(device="cpu")
    return torch, phy, InnerLoopLinkAdaptation(phy, bler_target=0.1)


def _cases(seed: int, n: int):
    rng = np.random.default_rng(seed)
    prbs = rng.integers(1, 274, n)
    sinr_db = rng.uniform(-4.9, 30.0, n)
    return prbs, sinr_db


def test_tbler_and_tbs_are_phy_abstractions(grid, sionna):
    """At 600 random (PRBs, MCS, SINR >= -5 dB) the table's TBLER is the TBLER Sionna's
    PHYAbstraction returns for the same allocation, and its TBS the bits it decodes on ACK."""
    from channels.nr_link import link_table

    torch, phy, _ = sionna
    prbs, sinr_db = _cases(1, 600)
    mcs = np.random.default_rng(2).integers(3, 28, prbs.size)
    re = pusch_re_per_prb() * prbs
    decoded, _, _, tbler, _ = phy(
        torch.tensor(mcs, dtype=torch.int32),
        sinr_eff=torch.tensor(10 ** (sinr_db / 10), dtype=torch.float32),
        num_allocated_re=torch.tensor(re, dtype=torch.int32),
        mcs_table_index=1,
    )
    ours = np.empty(prbs.size)
    tbs = np.empty(prbs.size)
    for i, (n, m, x) in enumerate(zip(prbs, mcs, sinr_db, strict=True)):
        table = link_table(grid, int(n), mcs_table=1, bler_target=0.1)
        ours[i] = table.tbler[m, grid.snr_index(10 ** (x / 10))]
        tbs[i] = table.tbs_bits[m]
    np.testing.assert_allclose(ours, tbler.numpy(), rtol=1e-5, atol=1e-6)
    acked = decoded.numpy() > 0
    assert acked.sum() > 100
    np.testing.assert_array_equal(tbs[acked], decoded.numpy()[acked])


def test_illa_is_sionnas_inner_loop(grid, sionna):
    """The MCS the table's ILLA picks is InnerLoopLinkAdaptation's at 400 random cases."""
    from channels.nr_link import link_table

    torch, _, illa = sionna
    prbs, sinr_db = _cases(3, 400)
    theirs = illa(
        sinr_eff=torch.tensor(10 ** (sinr_db / 10), dtype=torch.float32),
        num_allocated_re=torch.tensor(pusch_re_per_prb() * prbs, dtype=torch.int32),
        mcs_table_index=1,
    ).numpy()
    ours = [
        link_table(grid, int(n), mcs_table=1, bler_target=0.1).illa[grid.snr_index(10 ** (x / 10))]
        for n, x in zip(prbs, sinr_db, strict=True)
    ]
    np.testing.assert_array_equal(ours, theirs)
    assert len(set(theirs.tolist())) > 15  # the cases span the table


def test_below_the_grid_nothing_decodes(grid):
    """Below -5 dB (where Sionna would read the -5 dB point) every MCS fails."""
    from channels.nr_link import HarqSettings, link_table

    table = link_table(grid, 10, mcs_table=1, bler_target=0.1)
    idx = grid.snr_index(np.array([10 ** (-5.06 / 10), 10 ** (-30 / 10), 0.0]))
    assert (idx == grid.n_snr).all()
    assert (table.tbler[:, grid.n_snr] == 1.0).all()
    one = HarqSettings(max_transmissions=1)
    assert table.goodput_bits_per_slot(np.array(10 ** (-6 / 10)), one) == 0.0
    # four transmissions at -6 dB combine to ~0 dB: Chase combining reaches what one cannot
    assert table.goodput_bits_per_slot(np.array(10 ** (-6 / 10)), HarqSettings(4, True)) > 0


def test_goodput_is_the_renewal_formula_by_hand(grid):
    """Expected goodput with T transmissions, by the cycle sum written out for T = 2."""
    from channels.nr_link import HarqSettings, link_table

    table = link_table(grid, 20, mcs_table=1, bler_target=0.1)
    s = 10 ** (7.3 / 10)
    m = table.illa[grid.snr_index(s)]
    q1 = table.tbler[m, grid.snr_index(s)]
    q2 = table.tbler[m, grid.snr_index(2 * s)]  # Chase: the two SINRs add
    expected = table.tbs_bits[m] * (1 - q1 * q2) / (1 + q1)
    got = table.goodput_bits_per_slot(np.array(s), HarqSettings(2, True))
    assert 0 < q1 <= 0.1
    assert got == pytest.approx(expected, rel=1e-12)
    no_combining = table.tbs_bits[m] * (1 - q1 * q1) / (1 + q1)
    assert table.goodput_bits_per_slot(np.array(s), HarqSettings(2, False)) == pytest.approx(
        no_combining, rel=1e-12
    )
