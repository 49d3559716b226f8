"""Shares under noise over the share (``optim.noise_share`` and the ``noise_bandwidth="share"``
paths of ``optim.bandwidth``), against independent computations written here: scipy's brentq
on the rate equation, and the Lambert-W closed form of one client's share."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.special import lambertw

from optim import (
    completion_times_s,
    deadline_shares,
    equal_delay_bandwidth,
    minmax_bandwidth,
    minmax_deadline_s,
    share_for_upload,
)

N_INSTANCES = 60


def _rate(b: float, snr: float, bw: float) -> float:
    """b B log2(1 + SNR / b) [bit/s], written out."""
    return b * bw * math.log2(1.0 + snr / b)


def _brentq_share(bits: float, snr: float, bw: float, upload_s: float) -> float:
    """The b in (0, 1] with upload_s · rate(b) = bits, by brentq (1 when the whole band is
    needed, or more)."""
    if upload_s * _rate(1.0, snr, bw) <= bits:
        return 1.0
    return brentq(
        lambda b: upload_s * _rate(b, snr, bw) - bits, 1e-300, 1.0, xtol=1e-300, rtol=1e-15
    )


def _brentq_deadline(compute_s, bits, snr, bw) -> tuple[np.ndarray, float]:
    """T with sum_k b_k(T - c_k) = 1 and the shares, nested brentq (bracket from whole-band
    times: at max(c + w) someone needs the whole band, at a large T nobody needs much)."""
    w = bits / (bw * np.log2(1.0 + snr))

    def shares(t):
        return np.array(
            [_brentq_share(bits[i], snr[i], bw, t - compute_s[i]) for i in range(bits.size)]
        )

    # a hair left of max(c + w): the slowest client gets the whole band (sum >= 1)
    lo = float(np.max(compute_s + w)) * (1.0 - 1e-12)
    hi = float(np.max(compute_s) + np.sum(w)) * 2.0
    t = brentq(lambda t: shares(t).sum() - 1.0, lo, hi, xtol=1e-300, rtol=1e-14)
    return shares(t), t


def _instance(rng, k_max=8):
    k = int(rng.integers(1, k_max + 1))
    snr = 10.0 ** rng.uniform(-1.5, 3.5, k)  # -15 dB to 35 dB
    bits = 10.0 ** rng.uniform(4.0, 7.0, k)
    bw = 10.0 ** rng.uniform(5.0, 7.3)
    return k, snr, bits, bw


def test_one_clients_share_matches_brentq_and_lambert_w():
    rng = np.random.default_rng(11)
    for _ in range(N_INSTANCES):
        k, snr, bits, bw = _instance(rng)
        whole_band_s = bits / (bw * np.log2(1.0 + snr))
        upload_s = whole_band_s * rng.uniform(1.0, 50.0, k)
        got = share_for_upload(bits, snr, bw, upload_s)
        ref = [_brentq_share(bits[i], snr[i], bw, upload_s[i]) for i in range(k)]
        np.testing.assert_allclose(got, ref, rtol=1e-11)
        # Lambert W: with x = SNR / b, ln(1 + x) / x = c = y ln 2 / SNR, y = bits / (D B), so
        # 1 + x = -W_{-1}(-c e^{-c}) / c
        c = bits / (upload_s * bw) * math.log(2.0) / snr
        u = -lambertw(-c * np.exp(-c), k=-1).real / c
        np.testing.assert_allclose(got, snr / (u - 1.0), rtol=1e-8)
        # never more than the band share bits / (D B log2(1 + SNR)) (chord under a concave h)
        assert (got <= whole_band_s / upload_s * (1.0 + 1e-12)).all()
        # the client sends exactly its bits in upload_s
        np.testing.assert_allclose(upload_s * got * bw * np.log2(1.0 + snr / got), bits, rtol=1e-12)


def test_a_deadline_shorter_than_the_whole_band_time_is_refused():
    with pytest.raises(ValueError, match="more than the whole band"):
        share_for_upload(np.array([1e6]), np.array([1.0]), 1e6, 0.5)


def test_equal_delay_shares_match_nested_brentq_and_finish_together():
    rng = np.random.default_rng(12)
    for _ in range(N_INSTANCES):
        k, snr, _, bw = _instance(rng)
        payload = float(10.0 ** rng.uniform(4.0, 7.0))
        got = equal_delay_bandwidth(snr, bits=payload, bandwidth_hz=bw, noise_bandwidth="share")
        ref, t_ref = _brentq_deadline(np.zeros(k), np.full(k, payload), snr, bw)
        assert got.sum() == pytest.approx(1.0, abs=1e-12)
        np.testing.assert_allclose(got, ref, rtol=1e-9)
        finish = [payload / _rate(got[i], snr[i], bw) for i in range(k)]
        np.testing.assert_allclose(finish, t_ref, rtol=1e-9)  # everyone ends together


def test_minmax_shares_with_compute_match_nested_brentq_and_no_split_beats_them():
    rng = np.random.default_rng(13)
    for _ in range(N_INSTANCES):
        k, snr, bits, bw = _instance(rng)
        compute_s = rng.uniform(0.0, 2.0, k) * float(rng.integers(0, 2))
        args = {"compute_s": compute_s, "bits": bits, "snr": snr, "bandwidth_hz": bw}
        got = minmax_bandwidth(**args, noise_bandwidth="share")
        t = minmax_deadline_s(**args, noise_bandwidth="share")
        ref, t_ref = _brentq_deadline(compute_s, bits, snr, bw)
        np.testing.assert_allclose(got, ref, rtol=1e-9)
        assert t == pytest.approx(t_ref, rel=1e-10)
        done = completion_times_s(**args, shares=got, noise_bandwidth="share")
        np.testing.assert_allclose(done, t_ref, rtol=1e-9)
        # noise on the share: never slower than the band's optimum
        assert t <= minmax_deadline_s(**args) * (1.0 + 1e-12)
        for split in rng.dirichlet(np.ones(k), size=20):
            other = completion_times_s(**args, shares=split, noise_bandwidth="share")
            assert other.max() >= t * (1.0 - 1e-9)


def test_zero_bit_clients_get_no_share_under_share():
    shares = minmax_bandwidth(
        compute_s=0.0,
        bits=np.array([0.0, 1e5, 2e5]),
        snr=np.array([3.0, 3.0, 3.0]),
        bandwidth_hz=1e6,
        noise_bandwidth="share",
    )
    assert shares[0] == 0.0 and shares.sum() == pytest.approx(1.0, abs=1e-12)
    assert shares[2] > shares[1]


def test_band_default_is_eq_31_and_share_needs_bits_and_bandwidth():
    snr = np.array([1.0, 4.0, 30.0])
    inv = 1.0 / np.log2(1.0 + snr)
    np.testing.assert_allclose(equal_delay_bandwidth(snr), inv / inv.sum(), rtol=1e-15)
    with pytest.raises(ValueError, match="needs bits and bandwidth_hz"):
        equal_delay_bandwidth(snr, noise_bandwidth="share")
    with pytest.raises(ValueError, match="noise_bandwidth must be one of"):
        equal_delay_bandwidth(snr, noise_bandwidth="shared")


def test_deadline_shares_sum_to_one_within_the_stated_tolerance():
    rng = np.random.default_rng(14)
    for _ in range(N_INSTANCES):
        k, snr, bits, bw = _instance(rng, k_max=20)
        shares, t = deadline_shares(np.zeros(k), bits, snr, bw)
        assert shares.sum() == pytest.approx(1.0, abs=1e-12)
        finish = bits / (shares * bw * np.log2(1.0 + snr / shares))
        assert np.max(np.abs(finish / t - 1.0)) < 1e-10
