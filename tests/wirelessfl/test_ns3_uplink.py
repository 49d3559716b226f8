"""The ns-3 uplinks through the simulator: LTE and Wi-Fi rounds whose uploads no PHY could
beat, the FDMA plan beside them, the clients' ns-3 columns, resume by replay giving the
uninterrupted tables, and what the cell cannot be refused in one line. Needs the ns3 extra."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scenario_helpers import interrupt_at, set_keys

from channels.ns3_loader import ns3_version
from wirelessfl.config.loader import scenario_from_dict
from wirelessfl.errors import ConfigError
from wirelessfl.sim import resume_run, run_scenario
from wirelessfl.sim.runner import Run

pytestmark = pytest.mark.skipif(ns3_version() is None, reason="the ns3 extra is not installed")

#: the PHY peak rates of the cells' settings [bit/s]: LTE 25 RB (TS 36.213, I_TBS 26, 18,336
#: bits a 1 ms TTI) and 802.11ax 20 MHz one stream (HE-MCS 11, 143.4 Mb/s)
PEAK_BPS = {"ns3_lte": 18_336 / 1e-3, "ns3_wifi": 234 * 10 * 5 / 6 / 13.6e-6}


def _data(uplink: str, rounds: int = 3, **over) -> dict:
    far = 300.0 if uplink == "ns3_lte" else 30.0
    data = {
        "name": uplink,
        "seed": 2,
        "n_clients": 6,
        "n_scheduled": 3,
        "rounds": rounds,
        "eval_every": rounds,
        "channel": {"bandwidth_hz": 5.0e6, "d_min_m": 5.0, "d_max_m": far, "uplink": uplink},
        "devices": {"include_compute": False},
        "controller": {"name": "fixed", "rank": 4, "r_max": 4, "sparsification": 0.5},
        "learner": {"kind": "surrogate", "shape": {"layer_shapes": [[256, 256]], "base_params": 0}},
        "output": {"clients": True, "events": False},
    }
    return set_keys(data, over)


@pytest.mark.parametrize("uplink", ["ns3_lte", "ns3_wifi"])
def test_rounds_in_ns3_beside_the_fdma_plan(tmp_path, uplink):
    result = run_scenario(scenario_from_dict(_data(uplink)), tmp_path / "run", progress=False)
    clients, rounds = result.clients, result.rounds
    assert (clients.status == "arrived").all()
    n_bytes = np.ceil(clients.bits / 8)
    np.testing.assert_array_equal(clients.ns3_bytes, n_bytes)
    assert (clients.upload_s >= 8 * n_bytes / PEAK_BPS[uplink]).all()
    np.testing.assert_allclose(rounds.delay_s, clients.groupby("round").upload_s.max())
    assert rounds.planned_delay_s.gt(0).all()  # the FDMA plan, beside the measured delay
    lte = uplink == "ns3_lte"
    assert clients.ns3_mean_mcs.notna().all() if lte else clients.ns3_mean_mcs.isna().all()
    meta = json.loads((tmp_path / "run" / "meta.json").read_text())
    assert meta["versions"]["ns3"] == ns3_version()


def test_resume_replays_the_rounds_and_gives_the_same_tables(tmp_path):
    full = run_scenario(scenario_from_dict(_data("ns3_lte", 4)), tmp_path / "full")
    cut = scenario_from_dict(_data("ns3_lte", 4, **{"output.checkpoint_every": 1}))
    interrupt_at(Run(cut, tmp_path / "cut"), 2)
    resumed = resume_run(tmp_path / "cut")
    pd.testing.assert_frame_equal(full.clients, resumed.clients)
    wall = ["wall_s"]
    pd.testing.assert_frame_equal(full.rounds.drop(columns=wall), resumed.rounds.drop(columns=wall))


REFUSED = [
    ({"channel.mean_snr_db": 10.0}, "channel.uplink: ns3_lte: channel.mean_snr_db and"),
    ({"channel.path_loss.model": "3gpp_umi"}, "channel.uplink: ns3_lte: channel.path_loss.model"),
    ({"mobility.model": "random_waypoint"}, "channel.uplink: ns3_lte: mobility"),
    (
        {"channel.power_control": "fractional", "channel.p0_dbm": -80.0},
        "channel.uplink: ns3_lte: channel.power_control: fractional",
    ),
    ({"server.mode": "async", "server.concurrency": 2}, "channel.uplink: ns3_lte has no band"),
    ({"channel.ns3.bandwidth_rb": 30}, "channel.ns3.bandwidth_rb: must be one of"),
    (
        {"channel.ns3.plan_with": "nr", "channel.bandwidth_hz": 1.0e6},
        "channel.ns3.plan_with: nr: channel.bandwidth_hz:",
    ),
]


@pytest.mark.parametrize(("over", "starts"), REFUSED)
def test_what_the_ns3_cell_cannot_be_is_refused_in_one_line(over, starts):
    with pytest.raises(ConfigError) as err:
        scenario_from_dict(_data("ns3_lte", **over))
    assert str(err.value).startswith(starts) and "\n" not in str(err.value), str(err.value)


def test_the_missing_extra_is_refused_in_one_line(monkeypatch):
    import channels.ns3_loader

    monkeypatch.setattr(channels.ns3_loader, "ns3_version", lambda: None)
    with pytest.raises(ConfigError) as err:
        scenario_from_dict(_data("ns3_wifi"))
    assert str(err.value).startswith("channel.uplink: ns3_wifi needs the ns3 extra")


def test_planning_with_nr_plans_the_nr_links_goodput(tmp_path):
    """plan_with: nr at 5 MHz (11 PRBs at 30 kHz): each round's plan is the NR planners' sum
    of bits / R(SNR) (every upload ending together), not FDMA's; the uploads are ns-3's."""
    from channels.nr_bler import sionna_version
    from wirelessfl.uplinks.nr import NrUplink

    if sionna_version() is None:
        pytest.skip("the nr extra is not installed")
    data = _data("ns3_lte", **{"channel.ns3.plan_with": "nr"})
    scenario = scenario_from_dict(data)
    result = run_scenario(scenario, tmp_path / "nr", progress=False)
    clients, rounds = result.clients, result.rounds
    nr = NrUplink.from_scenario(scenario)
    rate = nr.carrier_rate_bps(10.0 ** (clients.snr_db.to_numpy() / 10.0))
    planned = pd.Series(clients.bits.to_numpy() / rate).groupby(clients["round"].to_numpy()).sum()
    np.testing.assert_allclose(rounds.planned_delay_s, planned.to_numpy(), rtol=1e-9)
    fdma = run_scenario(scenario_from_dict(_data("ns3_lte")), tmp_path / "fdma", progress=False)
    assert not np.allclose(fdma.rounds.planned_delay_s, rounds.planned_delay_s)
    np.testing.assert_array_equal(fdma.clients.ns3_bytes, clients.ns3_bytes)
