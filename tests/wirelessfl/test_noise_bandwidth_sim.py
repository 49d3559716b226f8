"""``channel.noise_bandwidth: share`` in the synchronous round (docs/simulator.md, "Noise over
the band or over the share"): every upload's rate, time and transmit energy recomputed by hand
from the tables' SNR, share and bits; one-line refusals."""

from __future__ import annotations

import numpy as np
import pytest
from scenario_helpers import small_scenario

from wirelessfl.errors import ConfigError
from wirelessfl.sim import run_scenario

B_HZ = 1.0e6
FIXED = {
    "controller.name": "fixed",
    "controller.rank": 4,
    "controller.sparsification": 0.5,
    "channel.bandwidth_hz": B_HZ,
    "channel.noise_bandwidth": "share",
    "rounds": 5,
}


def _run(tmp_path, name, **overrides):
    return run_scenario(small_scenario(**{**FIXED, **overrides}), tmp_path / name)


def _by_hand(clients):
    """Upload time of each row: bits / (b B log2(1 + SNR / b)), SNR from ``snr_db``."""
    snr = 10.0 ** (clients.snr_db.to_numpy() / 10.0)
    b = clients.share.to_numpy()
    return clients.bits.to_numpy() / (b * B_HZ * np.log2(1.0 + snr / b))


def test_equal_delay_shares_under_share_finish_together_at_the_hand_rate(tmp_path):
    run = _run(tmp_path, "share")
    band = _run(tmp_path, "band", **{"channel.noise_bandwidth": "band"})
    c = run.clients
    assert len(c) == 25 and (c.status == "arrived").all()
    upload_s = _by_hand(c)
    np.testing.assert_allclose(c.upload_s, upload_s, rtol=1e-12)
    np.testing.assert_allclose(c.transmit_energy_j, c.tx_power_w * upload_s, rtol=1e-12)
    for t, rows in c.groupby("round"):
        assert rows.share.sum() == pytest.approx(1.0, abs=1e-12)
        # every client ends within the solver's tolerance of the others
        assert rows.upload_s.max() / rows.upload_s.min() - 1.0 < 1e-9
        rounds = run.rounds.set_index("round")
        assert rounds.loc[t, "delay_s"] == pytest.approx(rows.upload_s.max(), rel=1e-15)
        # the fixed controller planned with the same rate
        assert rounds.loc[t, "planned_delay_s"] == pytest.approx(rows.upload_s.max(), rel=1e-12)
    # the same channel and payloads with noise over the whole band: slower, other shares
    assert c[["round", "client", "bits"]].equals(band.clients[["round", "client", "bits"]])
    assert (run.rounds.delay_s < band.rounds.delay_s).all()
    assert not np.allclose(c.share, band.clients.share)
    # the events say the same: each upload ends at its start plus its upload time
    ev = run.events
    start = ev[ev.kind == "upload_start"].set_index(["round", "client"]).time_s
    end = ev[ev.kind == "upload_end"].set_index(["round", "client"]).time_s
    np.testing.assert_allclose(
        (end - start).sort_index(),
        c.set_index(["round", "client"]).upload_s.sort_index(),
        rtol=1e-9,
    )


def test_minmax_shares_under_share_with_compute_and_a_lower_power(tmp_path):
    run = _run(
        tmp_path,
        "minmax",
        **{
            "controller.bandwidth": "minmax",
            "controller.tx_power_fraction": 0.5,
            "devices.include_compute": True,
            "devices.kind": "lognormal",
            "devices.median_flops_per_s": 2.0e7,
        },
    )
    c = run.clients
    np.testing.assert_allclose(c.upload_s, _by_hand(c), rtol=1e-12)
    for _, rows in c.groupby("round"):
        finish = rows.compute_s + rows.upload_s
        assert rows.compute_s.nunique() > 1  # heterogeneous compute: min-max, not equal delay
        assert finish.max() / finish.min() - 1.0 < 1e-9


def test_redistributed_shares_and_a_deadline_use_the_share_rate(tmp_path):
    run = _run(
        tmp_path,
        "faults",
        **{
            "faults.dropout_prob": 0.3,
            "faults.redistribute_unused": True,
            "faults.deadline_s": 0.015,
            "rounds": 8,
        },
    )
    c = run.clients
    sent = c[c.share > 0]
    assert (c.status == "dropped").any() and len(sent) > 0
    np.testing.assert_allclose(sent.upload_s, _by_hand(sent), rtol=1e-12)
    arrived = c[c.status == "arrived"]
    assert (arrived.upload_s <= 0.015).all()
    stragglers = c[c.status == "straggler"]
    assert len(stragglers) and (stragglers.upload_s > 0.015).all()


@pytest.mark.parametrize(
    ("overrides", "text"),
    [
        (
            {"controller.name": "tsfa"},
            "channel.noise_bandwidth: share makes the rate b B log2(1 + SNR / b), and controller "
            "'tsfa' plans with a delay linear in the bits and in 1 / b (noise over the whole "
            "band); use controller.name: fixed or energy_min, controller.radio: joint, or "
            "channel.noise_bandwidth: band",
        ),
        ({"controller.name": "osfa"}, "controller 'osfa' plans with a delay linear"),
        (
            {"controller.name": "sketch", "algorithm.name": "fslora"},
            "controller 'sketch' plans",
        ),
        (
            {"server.mode": "async"},
            "channel.noise_bandwidth: not read with server.mode: async",
        ),
        ({"channel.noise_bandwidth": "cell"}, "channel.noise_bandwidth"),
    ],
)
def test_refusals_are_one_line(overrides, text):
    with pytest.raises(ConfigError) as err:
        small_scenario(**{**FIXED, **overrides})
    message = str(err.value)
    assert text in message and "\n" not in message
