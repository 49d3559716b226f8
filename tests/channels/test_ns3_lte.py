"""The ns-3 LTE cell advanced round by round: uploads no faster than the bytes over the PHY's
peak rate (TS 36.213's largest uplink transport block), every byte delivered, the same round
twice taking the same time (the clock goes on between rounds), the attach phase kept out of the
first round, UDP no slower than TCP, a seed reproducing a cell, and settings refused in one
line. Needs the ns3 extra; ns-3's import (10-25 s) is paid once in this module."""

from __future__ import annotations

import numpy as np
import pytest

from channels.ns3_loader import ns3_version

pytestmark = pytest.mark.skipif(ns3_version() is None, reason="the ns3 extra is not installed")

#: TS 36.213 Table 7.1.7.2.1-1: the transport block of I_TBS = 26 (uplink MCS 28) on 25 PRBs,
#: the largest a UE sends in a 1 ms TTI on a 5 MHz carrier [bit]
PEAK_TBS_25_RB = 18_336
TTI_S = 1.0e-3


@pytest.fixture(scope="module")
def uploads():
    """Three UEs at 50, 300 and 500 m: round 0 all three 400 kB, round 1 the first alone, round
    2 the same as round 0; then the same cell over UDP, and round 0 again from a new cell."""
    from channels.ns3_lte import LteCell, LteSettings

    positions = np.array([[50.0, 0.0], [300.0, 0.0], [0.0, 500.0]])
    every, size = np.arange(3), np.full(3, 400_000)
    cell = LteCell(LteSettings(), positions, seed=7)
    try:
        rounds = [
            cell.upload(every, size, cap_s=60.0),
            cell.upload(every[:1], size[:1], cap_s=60.0),
            cell.upload(every, size, cap_s=60.0),
        ]
        clock_s = cell.now_s()
    finally:
        cell.close()
    cell = LteCell(LteSettings(transport="udp"), positions, seed=7)
    try:
        udp = cell.upload(every, size, cap_s=60.0)
    finally:
        cell.close()
    cell = LteCell(LteSettings(), positions, seed=7)
    try:
        again = cell.upload(every, size, cap_s=60.0)
    finally:
        cell.close()
    return rounds, clock_s, udp, again


def test_no_upload_beats_the_phy_peak_rate_and_every_byte_arrives(uploads):
    rounds, *_ = uploads
    peak_bps = PEAK_TBS_25_RB / TTI_S
    for done in rounds:
        np.testing.assert_array_equal(done.bytes_received, np.full(done.upload_s.size, 400_000))
        assert np.all(done.upload_s >= 8 * 400_000 / peak_bps)
    alone = rounds[1]
    assert alone.mean_mcs[0] == 28  # 50 m: the top MCS
    assert alone.upload_s[0] < 3 * 8 * 400_000 / peak_bps  # alone near the peak


def test_the_clock_goes_on_and_the_same_round_takes_the_same_time(uploads):
    """Round 2 repeats round 0 later in the same run: the same times to within 50 ms (the first
    round after attach is 15-33 ms slower here: state carries from round to round, the cause
    not pinned down), and nothing counted from the attach phase or an idle gap between
    rounds."""
    rounds, clock_s, *_ = uploads
    np.testing.assert_allclose(rounds[2].upload_s, rounds[0].upload_s, rtol=0, atol=0.05)
    assert np.all(np.diff(rounds[0].upload_s) > 0)  # farther: longer
    ends = sum(float(r.upload_s.max()) for r in rounds)
    assert ends < clock_s < ends + 0.5 + 3 * 2e-3  # attach (0.5 s) and 1 ms starts only
    assert rounds[1].upload_s[0] < rounds[0].upload_s[0]  # alone: the PRBs its own


def test_udp_is_no_slower_than_tcp_and_a_seed_reproduces_the_cell(uploads):
    rounds, _, udp, again = uploads
    assert np.all(udp.bytes_received >= 400_000)  # whole 1,400-byte datagrams
    assert np.all(udp.upload_s <= rounds[0].upload_s + TTI_S)
    np.testing.assert_array_equal(again.upload_s, rounds[0].upload_s)


@pytest.mark.parametrize(
    ("over", "starts"),
    [
        ({"bandwidth_rb": 30}, "bandwidth_rb: one of (6, 15, 25, 50, 75, 100)"),
        ({"scheduler": "fifo"}, "scheduler: one of pf, rr"),
        ({"transport": "quic"}, "transport: one of tcp, udp"),
    ],
)
def test_settings_outside_the_cells_are_refused_in_one_line(over, starts):
    from channels.ns3_lte import LteSettings

    with pytest.raises(ValueError) as err:
        LteSettings(**over)
    assert str(err.value).startswith(starts) and "\n" not in str(err.value)
