"""channel_report against the closed forms it summarises."""

import math

import numpy as np
import pytest

from channels import (
    Cell,
    RicianFading,
    average_channel_rate,
    channel_report,
    ergodic_rate_rayleigh,
    ergodic_rate_rician,
)


def test_report_from_geometry():
    cell = Cell.from_geometry(
        n_clients=4,
        seed=1,
        d_min_m=1.0,
        d_max_m=10.0,
        path_loss_exponent=1.0,
        noise_power_w=1e-4,
        distances_m=[1.0, 2.0, 5.0, 10.0],
    )
    rep = channel_report(cell, bandwidth_hz=1e6, bits=1e6)
    np.testing.assert_array_equal(rep["client_id"], np.arange(4))
    np.testing.assert_array_equal(rep["distance_m"], [1.0, 2.0, 5.0, 10.0])
    np.testing.assert_allclose(
        rep["mean_snr_db"], [40.0, 40 - 20 * math.log10(2), 40 - 20 * math.log10(5), 20.0]
    )
    np.testing.assert_allclose(rep["ergodic_rate_bps"], ergodic_rate_rayleigh(cell.mean_snr, 1e6))
    np.testing.assert_allclose(
        rep["average_channel_rate_bps"], average_channel_rate(cell.mean_snr, 1e6)
    )
    # Equal share 1/4: delay = bits / (rate / 4).
    np.testing.assert_allclose(rep["upload_delay_ergodic_s"], 4e6 / rep["ergodic_rate_bps"])
    np.testing.assert_allclose(
        rep["upload_delay_average_channel_s"], 4e6 / rep["average_channel_rate_bps"]
    )
    assert all(v.shape == (4,) for v in rep.values())


def test_report_mean_snr_cell_and_share():
    cell = Cell.from_mean_snr(mean_snr_db=10.0, n_clients=3, seed=0)
    rep = channel_report(cell, bandwidth_hz=2e6, bits=8e6, share=0.5)
    assert np.all(np.isnan(rep["distance_m"]))
    np.testing.assert_allclose(rep["upload_delay_average_channel_s"], 8e6 / (1e6 * math.log2(11)))


def test_report_rician():
    cell = Cell.from_mean_snr(mean_snr_db=10.0, n_clients=2, seed=0, fading=RicianFading(3.0))
    rep = channel_report(cell, bandwidth_hz=1.0, bits=1.0)
    np.testing.assert_allclose(rep["ergodic_rate_bps"], ergodic_rate_rician(10.0, 1.0, 3.0))


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"bandwidth_hz": -1.0, "bits": 1.0}, "bandwidth_hz"),
        ({"bandwidth_hz": 1.0, "bits": -1.0}, "bits"),
        ({"bandwidth_hz": 1.0, "bits": 1.0, "share": 1.5}, "share"),
        ({"bandwidth_hz": 1.0, "bits": 1.0, "share": 0.0}, "share"),
    ],
)
def test_bad_inputs(kwargs, name):
    cell = Cell.from_mean_snr(mean_snr_db=0.0, n_clients=2, seed=0)
    with pytest.raises(ValueError, match=name):
        channel_report(cell, **kwargs)
