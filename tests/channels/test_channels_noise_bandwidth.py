"""The noise rule of the FDMA rate (docs/simulator.md, "Noise over the band or over the share"):
``band`` b B log2(1 + SNR), ``share`` b B log2(1 + SNR / b), each recomputed by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from channels import NOISE_BANDWIDTHS, check_noise_bandwidth, rate_bps, upload_delay_s

B_HZ = 2.0e6


def test_share_rate_is_the_noise_of_the_share_by_hand():
    snr = np.array([0.5, 3.0, 40.0, 1.0e3])
    share = np.array([0.1, 0.2, 0.3, 0.4])
    expected = [b * B_HZ * math.log2(1.0 + s / b) for b, s in zip(share, snr, strict=True)]
    got = rate_bps(share, B_HZ, snr, noise_bandwidth="share")
    np.testing.assert_allclose(got, expected, rtol=1e-14)
    # same power on the share: the SNR on it is p g / (N0 b B) = SNR / b
    noise_on_share_w, signal_w = 1e-13 * share, 1e-13 * snr
    np.testing.assert_allclose(
        got, share * B_HZ * np.log2(1.0 + signal_w / noise_on_share_w), rtol=1e-14
    )


def test_band_rate_is_unchanged_and_the_rules_agree_on_the_whole_band():
    snr = np.array([0.5, 3.0, 40.0])
    share = np.array([0.2, 0.3, 0.5])
    band = rate_bps(share, B_HZ, snr)
    np.testing.assert_array_equal(band, rate_bps(share, B_HZ, snr, noise_bandwidth="band"))
    np.testing.assert_allclose(band, share * B_HZ * np.log2(1.0 + snr), rtol=1e-15)
    assert rate_bps(1.0, B_HZ, 7.0, noise_bandwidth="share") == pytest.approx(
        B_HZ * math.log2(8.0), rel=1e-15
    )
    # below the whole band the share's noise is smaller: a higher rate
    assert (rate_bps(share, B_HZ, snr, noise_bandwidth="share") > band).all()


def test_equal_shares_under_share():
    k, snr = 4, np.array([1.0, 2.0, 5.0, 10.0])
    got = rate_bps(np.full(k, 1.0 / k), B_HZ, snr, noise_bandwidth="share")
    np.testing.assert_allclose(got, B_HZ / k * np.log2(1.0 + k * snr), rtol=1e-14)


def test_zero_share_has_zero_rate_and_upload_delay_follows_the_rule():
    share = np.array([0.0, 0.25, 0.75])
    snr = np.array([5.0, 5.0, 0.0])
    rate = rate_bps(share, B_HZ, snr, noise_bandwidth="share")
    np.testing.assert_array_equal(rate, [0.0, 0.25 * B_HZ * math.log2(1.0 + 20.0), 0.0])
    bits = np.array([1e5, 1e5, 1e5])
    delay = upload_delay_s(bits, share, B_HZ, snr, noise_bandwidth="share")
    # unscheduled (share 0): 0; scheduled with SNR 0: inf
    assert delay[0] == 0.0 and math.isinf(delay[2])
    assert delay[1] == pytest.approx(1e5 / (0.25 * B_HZ * math.log2(21.0)), rel=1e-14)


def test_an_unknown_rule_is_refused():
    assert NOISE_BANDWIDTHS == ("band", "share")
    assert check_noise_bandwidth("share") == "share"
    with pytest.raises(ValueError, match="noise_bandwidth must be one of band, share, got 'x'"):
        rate_bps(0.5, B_HZ, 1.0, noise_bandwidth="x")
