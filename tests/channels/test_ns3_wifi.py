"""The ns-3 Wi-Fi cell advanced round by round: uploads no faster than the bytes over the PHY's
peak rate (802.11ax, 20 MHz, one stream, HE-MCS 11: 234 data subcarriers x 10 bits x 5/6 per
13.6 us symbol = 143.4 Mb/s), every byte delivered, three stations sharing the channel slower
than one alone, the same round later in the run taking about the same time, and settings refused
in one line. Needs the ns3 extra."""

from __future__ import annotations

import numpy as np
import pytest

from channels.ns3_loader import ns3_version

pytestmark = pytest.mark.skipif(ns3_version() is None, reason="the ns3 extra is not installed")

#: 802.11ax HE-MCS 11, 1 spatial stream, 20 MHz, 0.8 us guard interval [bit/s]
PEAK_BPS = 234 * 10 * 5 / 6 / 13.6e-6
SIZE = 400_000


def _rounds():
    """Stations at 5, 20 and 40 m: all three, the first alone, all three again; and the
    clock after."""
    from channels.ns3_wifi import WifiCell, WifiSettings

    every = np.arange(3)
    cell = WifiCell(WifiSettings(), np.array([[5.0, 0.0], [20.0, 0.0], [0.0, 40.0]]), seed=7)
    try:
        done = [
            cell.upload(every, np.full(3, SIZE), cap_s=30.0),
            cell.upload(every[:1], np.full(1, SIZE), cap_s=30.0),
            cell.upload(every, np.full(3, SIZE), cap_s=30.0),
        ]
        return done, cell.now_s()
    finally:
        cell.close()


@pytest.fixture(scope="module")
def rounds():
    return _rounds()[0]


def test_no_upload_beats_the_phy_peak_rate_and_every_byte_arrives(rounds):
    assert abs(PEAK_BPS - 143.38e6) < 0.01e6
    for done in rounds:
        np.testing.assert_array_equal(done.bytes_received, np.full(done.upload_s.size, SIZE))
        assert np.all(done.upload_s >= 8 * SIZE / PEAK_BPS)
        assert np.isnan(done.mean_mcs).all()  # the Wi-Fi MAC's MCS is not reported
    shared = rounds[0].upload_s.max()
    assert shared >= 3 * 8 * SIZE / PEAK_BPS  # one channel for the three
    assert rounds[1].upload_s[0] < shared  # alone: sooner


def test_the_clock_goes_on_and_a_seed_reproduces_the_cell(rounds):
    """A second cell of the same seed (after whatever ns-3 objects this process made) gives the
    same times; its clock is the rounds' ends plus the association phase (0.5 s) and the 1 ms
    starts, no idle gap between rounds."""
    again, clock_s = _rounds()
    for a, b in zip(rounds, again, strict=True):
        np.testing.assert_array_equal(a.upload_s, b.upload_s)
    ends = sum(float(r.upload_s.max()) for r in rounds)
    assert ends < clock_s < ends + 0.5 + 3 * 2e-3


@pytest.mark.parametrize(
    ("over", "starts"),
    [
        ({"standard": "80211n"}, "standard: one of 80211ax, 80211ac"),
        ({"channel_width_mhz": 30}, "channel_width_mhz: one of (20, 40, 80, 160)"),
        ({"transport": "sctp"}, "transport: one of tcp, udp"),
    ],
)
def test_settings_outside_the_cells_are_refused_in_one_line(over, starts):
    from channels.ns3_wifi import WifiSettings

    with pytest.raises(ValueError) as err:
        WifiSettings(**over)
    assert str(err.value).startswith(starts) and "\n" not in str(err.value)
