"""An uplink defined outside the package (``registries.UPLINKS.register``) runs through the
simulator with no other change: a wired link of a fixed rate per client, whatever its share and
SNR. Its upload times are the closed form bits / R, the round lasts the longest of them, it is
accepted by ``channel.uplink`` once registered, and an event-driven server mode is refused in one
line (the link has no shared band)."""

from __future__ import annotations

import numpy as np
import pytest

from wirelessfl.config.loader import scenario_from_dict
from wirelessfl.errors import ConfigError
from wirelessfl.registries import UPLINKS
from wirelessfl.sim.runner import run_scenario
from wirelessfl.uplinks import Uplink

RATE_BPS = 2.5e6


class WiredUplink(Uplink):
    """Every client on its own link of :data:`RATE_BPS`."""

    NAME = "wired_test"

    @classmethod
    def from_scenario(cls, scenario):
        return cls()

    def upload_s(self, shares, snr, bits, n_values):
        return np.asarray(bits, dtype=float) / RATE_BPS

    def round_columns(self):
        return {"wired_rate_bps": "the link's rate [bit/s]"}

    def record(self, prepared):
        return {"wired_rate_bps": RATE_BPS}


@pytest.fixture
def wired():
    UPLINKS.register(WiredUplink.NAME, WiredUplink)
    yield WiredUplink.NAME
    UPLINKS.unregister(WiredUplink.NAME)


def _scenario(uplink: str, **server) -> dict:
    return {
        "name": "wired",
        "seed": 3,
        "n_clients": 12,
        "n_scheduled": 4,
        "rounds": 3,
        "channel": {"bandwidth_hz": 1.0e6, "mean_snr_db": 5.0, "uplink": uplink},
        "devices": {"include_compute": False},
        "controller": {"name": "fixed", "rank": 4, "r_max": 8, "sparsification": 0.5},
        "learner": {"kind": "surrogate", "shape": {"layer_shapes": [[64, 32]], "base_params": 0}},
        "output": {"clients": True},
        "server": server or {"mode": "sync"},
    }


def test_a_registered_uplink_sets_the_upload_times(tmp_path, wired):
    result = run_scenario(scenario_from_dict(_scenario(wired)), tmp_path / "wired")
    clients = result.clients
    assert (clients.status == "arrived").all() and len(clients) == 3 * 4
    np.testing.assert_allclose(clients.upload_s, clients.bits / RATE_BPS, rtol=1e-12)
    longest = clients.groupby("round").upload_s.max().to_numpy()
    np.testing.assert_allclose(result.rounds.delay_s, longest, rtol=1e-12)
    assert (result.rounds.wired_rate_bps == RATE_BPS).all()
    # the same run over FDMA differs: the link, not the band, set the times
    fdma = run_scenario(scenario_from_dict(_scenario("fdma")), tmp_path / "fdma").clients
    assert not np.allclose(fdma.upload_s, clients.upload_s)


def test_an_uplink_without_a_shared_band_refuses_the_event_driven_modes(wired):
    with pytest.raises(ConfigError) as err:
        scenario_from_dict(_scenario(wired, mode="async", concurrency=2))
    line = str(err.value)
    assert "\n" not in line and "channel.uplink: wired_test" in line and "server.mode" in line


def test_an_unregistered_uplink_is_refused_with_the_accepted_names():
    with pytest.raises(ConfigError) as err:
        scenario_from_dict(_scenario("wired_test"))
    assert "channel.uplink" in str(err.value) and "aircomp" in str(err.value)
