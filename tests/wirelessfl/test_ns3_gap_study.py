"""The ns-3 gap study (wirelessfl/study/repro_ns3.py; docs/results.md, "Packets against
formulas: the gap to ns-3"): ns-3's log-distance loss is the scenario's single-slope loss at the
simulator's distances; every station is associated before the first round, so round 0 has no
SYN timeout; each client's ns-3 upload is paired with the same client's FDMA upload in the same
round and seed, and the quantile table is those ratios' quantiles. Needs the ns3 extra."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scenario_helpers import set_keys

from channels.ns3_loader import load_ns, ns3_version
from wirelessfl.config.loader import SCENARIO_DIR, load_scenario, scenario_from_dict
from wirelessfl.errors import ConfigError
from wirelessfl.results.store import load
from wirelessfl.sim import run_scenario
from wirelessfl.study.ns3_figures import (
    client_ratio_tables,
    draw_training_gap,
    draw_upload_gap,
    ns3_gap_columns,
)
from wirelessfl.study.reproductions import REPRODUCTIONS
from wirelessfl.uplinks.ns3 import LinkBudget

pytestmark = pytest.mark.skipif(ns3_version() is None, reason="the ns3 extra is not installed")


@pytest.mark.parametrize("name", ["ns3/gap_upload.yaml", "ns3/gap_indoor.yaml"])
def test_ns3_loss_is_the_scenarios_single_slope_loss(name):
    """ns-3's LogDistancePropagationLossModel with the uplink's budget, between two points the
    simulator's distance apart at the same height, receives what the simulator's single-slope
    model gives: P + G_ref - 20 gamma log10(d) [dBm]."""
    ch = load_scenario(SCENARIO_DIR / name).channel
    budget = LinkBudget.of(ch)
    ns, _ = load_ns()
    model = ns.CreateObject[ns.LogDistancePropagationLossModel]()
    model.SetAttribute("Exponent", ns.DoubleValue(budget.pathloss_exponent))
    model.SetAttribute("ReferenceLoss", ns.DoubleValue(budget.reference_loss_db))
    for d in (ch.d_min_m, 0.5 * (ch.d_min_m + ch.d_max_m), ch.d_max_m):
        a, b = (
            ns.CreateObject[ns.ConstantPositionMobilityModel](),
            ns.CreateObject[ns.ConstantPositionMobilityModel](),
        )
        a.SetPosition(ns.Vector(0.0, 0.0, 1.5))
        b.SetPosition(ns.Vector(float(d), 0.0, 1.5))
        expected = (
            ch.tx_power_dbm + ch.reference_gain_db - 20 * ch.path_loss_exponent * math.log10(d)
        )
        assert model.CalcRxPower(budget.tx_power_dbm, a, b) == pytest.approx(expected, abs=1e-9)


def test_the_study_sweeps_every_uplink_k_and_payload():
    for name, cell in (("ns3-gap", "ns3_lte"), ("ns3-gap-wifi", "ns3_wifi")):
        spec = REPRODUCTIONS[name]
        (grid,) = spec.sweeps.values()
        assert grid == {
            "channel.uplink": ["fdma", "nr", cell],
            "n_scheduled": [2, 5, 10],
            "controller.rank": [1, 10, 100],
        }
        assert spec.seeds == 5
    assert REPRODUCTIONS["ns3-gap-training"].sweeps["uplinks"] == {
        "channel.uplink": ["fdma", "ns3_lte"]
    }


def _indoor(uplink: str, **over) -> dict:
    import yaml

    data = yaml.safe_load((SCENARIO_DIR / "ns3/gap_indoor.yaml").read_text())
    over = {"channel.uplink": uplink, "n_scheduled": 10, "controller.rank": 1, "rounds": 2,
            "eval_every": 2, **over}  # fmt: skip
    return set_keys(data, over)


def test_client_ratios_pair_each_upload_with_fdmas(tmp_path):
    """100 kB from 10 of 20 stations, two rounds: every station is associated before round 0
    (no 3 s SYN timeout in it), each ns-3 upload is at least the bytes over 802.11ax's peak
    rate, and the tables pair and summarise what the two runs' clients tables hold."""
    runs = []
    for uplink in ("fdma", "ns3_wifi"):
        run_scenario(scenario_from_dict(_indoor(uplink)), tmp_path / uplink, progress=False)
        runs.append(load(tmp_path / uplink))
    fdma, wifi = (run.clients for run in runs)
    assert wifi.upload_s.max() < 1.0  # association and ARP done before the first round
    peak_bps = 234 * 10 * 5 / 6 / 13.6e-6
    assert (wifi.upload_s >= 8 * wifi.ns3_bytes / peak_bps).all()
    tables = client_ratio_tables(runs)
    pairs = tables["client_ratios"]
    assert len(pairs) == 20 and set(pairs.uplink) == {"ns3_wifi"}
    expected = (
        wifi.set_index(["round", "client"]).upload_s / fdma.set_index(["round", "client"]).upload_s
    )
    got = pairs.set_index(["round", "client"]).ratio
    np.testing.assert_allclose(got.sort_index(), expected.sort_index(), rtol=1e-12)
    (row,) = tables["ratio_quantiles"].itertuples()
    assert row.uploads == 20 and row.payload_mb == pytest.approx(0.1)
    assert row.median == pytest.approx(float(np.median(expected)))
    assert row.fdma_optimistic == pytest.approx(float(np.mean(expected > 1.0)))
    columns = ns3_gap_columns(runs[1], None)
    assert columns["payload_mb"] == pytest.approx(0.1) and math.isnan(columns["meets_d_th"])
    assert columns["delay_over_plan"] == pytest.approx(
        runs[1].rounds.delay_s.mean() / runs[1].rounds.planned_delay_s.mean()
    )
    (figure,) = draw_upload_gap(tmp_path, runs)
    assert figure.name == "ns3_gap_ratios_wifi.png" and figure.stat().st_size > 0
    (figure,) = draw_training_gap(tmp_path, runs)  # D^t and O^t per round, any controller
    assert figure.name == "ns3_gap_training.png" and figure.stat().st_size > 0


@pytest.mark.parametrize(
    ("over", "starts"),
    [
        (
            {"channel.shadowing_sigma_db": 4.0},
            "channel.uplink: ns3_wifi: channel.shadowing_sigma_db",
        ),
        ({"channel.noise_psd_dbm_per_hz": -170.0}, "channel.uplink: ns3_wifi: channel.noise_psd"),
    ],
)
def test_a_link_ns3_cannot_model_is_refused_in_one_line(over, starts):
    with pytest.raises(ConfigError) as err:
        scenario_from_dict(_indoor("ns3_wifi", **over))
    assert str(err.value).startswith(starts) and "\n" not in str(err.value), str(err.value)
