"""``channel.uplink: nr`` through the simulator (wirelessfl/uplinks/nr.py, docs/simulator.md, "A
5G NR uplink"): on a deterministic channel (an SNR trace) each round's PRBs are whole, at least
one per training client and at most the carrier's N_RB, every upload lasts whole slots, the
mean upload is the HARQ renewal mean bits / G_n(SINR) of its PRBs (to the half slot of the last
one), and the planned delay is sum_k bits_k / R(SINR_k) computed here from ``clients.csv``; the
measured round, the longest of its uploads on whole PRBs, is a few per cent longer on average
(the plan is the mean); a resumed run with OLLA at slot fidelity and per-slot fading reproduces
the tables (the offsets are checkpointed); what NR cannot run is refused in one line at load,
the missing extra included; loading and planning never import Sionna."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scenario_helpers import interrupt_at, small_scenario

from channels.nr_bler import sionna_version
from wirelessfl.config.loader import scenario_from_dict
from wirelessfl.errors import ConfigError
from wirelessfl.sim import resume_run, run_scenario
from wirelessfl.sim.runner import Run
from wirelessfl.uplinks.nr import NrUplink

needs_nr = pytest.mark.skipif(sionna_version() is None, reason="the nr extra is not installed")

B_HZ = 20.0e6  # 51 PRBs at 30 kHz
SLOT_S = 0.5e-3


def _scenario(tmp_path, rounds: int = 40, **nr) -> dict:
    n = 8
    trace = np.random.default_rng(3).uniform(0.0, 20.0, size=(rounds, n))  # dB
    np.save(tmp_path / "snr.npy", trace)
    return {
        "name": "nr",
        "seed": 1,
        "n_clients": n,
        "n_scheduled": 4,
        "rounds": rounds,
        "eval_every": rounds,
        "channel": {
            "bandwidth_hz": B_HZ,
            "snr_trace": str(tmp_path / "snr.npy"),
            "uplink": "nr",
            "nr": nr,
        },
        "devices": {"include_compute": False},
        "controller": {"name": "fixed", "rank": 8, "r_max": 8, "sparsification": 0.5},
        # 2 x 8 x 2048 values at O = 0.5: ~130 slots an upload
        "learner": {
            "kind": "surrogate",
            "shape": {"layer_shapes": [[2048, 2048]], "base_params": 0},
        },
        "output": {"clients": True},
    }


@needs_nr
def test_uploads_and_the_plan_through_the_simulator(tmp_path):
    scenario = scenario_from_dict(_scenario(tmp_path))
    result = run_scenario(scenario, tmp_path / "run", progress=False)
    clients, rounds = result.clients, result.rounds
    uplink = NrUplink.from_scenario(scenario)
    assert (uplink.n_rb, uplink.slot_s) == (51, SLOT_S)
    assert (clients.status == "arrived").all()
    per_round = clients.groupby("round").nr_prbs
    assert (per_round.sum() <= 51).all() and (clients.nr_prbs >= 1).all()
    slots = clients.upload_s.to_numpy() / SLOT_S
    np.testing.assert_allclose(slots, np.round(slots), rtol=0, atol=1e-9)
    assert slots.min() > 50  # long uploads: the last slot's rounding is small

    snr = 10.0 ** (clients.snr_db.to_numpy() / 10.0)
    bits = clients.bits.to_numpy()
    mean_s = (
        np.array(
            [
                b / float(uplink.table(int(n)).goodput_bits_per_slot(np.array(s), uplink.harq))
                for b, n, s in zip(bits, clients.nr_prbs, snr, strict=True)
            ]
        )
        * SLOT_S
    )
    ratio = clients.upload_s.to_numpy() / mean_s
    assert abs(ratio.mean() - 1.0) < 0.01  # 1.004 here: HARQ's mean and the last slot
    assert ratio.min() > 0.9 and ratio.max() < 1.15
    assert (clients.nr_goodput_bps * clients.upload_s >= bits).all()  # no scheduling delay

    rate = uplink.carrier_rate_bps(snr)
    planned = pd.Series(bits / rate).groupby(clients["round"].to_numpy()).sum()
    np.testing.assert_allclose(rounds.planned_delay_s, planned.to_numpy(), rtol=1e-9)
    late = rounds.delay_s / rounds.planned_delay_s  # 1.039 on average here
    assert 1.0 < late.mean() < 1.08
    for column in ("nr_prb_allocated", "nr_prb_utilisation", "nr_mean_mcs", "nr_bler"):
        assert rounds[column].notna().all(), column
    assert (rounds.nr_bler < 0.2).all() and (rounds.nr_prb_allocated <= 1.0).all()
    meta = json.loads((tmp_path / "run" / "meta.json").read_text())
    assert meta["versions"]["sionna-no-rt"] == sionna_version()  # the BLER tables' version


@needs_nr
def test_on_an_even_split_at_high_snr_the_plan_is_met_to_the_slot_and_the_retransmissions(
    tmp_path,
):
    """K = 3 on 51 PRBs (17 each) at 30 dB: ILLA's MCS 27 (TS 38.214 Table 5.1.3.1-1: 64QAM,
    R = 910/1024) on 17 PRBs of 156 resource elements: N_info = 2652 x 910/1024 x 6 =
    14,140.5, n = 8, N'_info = 256 round(14,116.5 / 256) = 14,080, C = 2 code blocks, TBS =
    16 ceil(14,104 / 16) - 24 = 14,088 bits. Each upload lasts ceil(bits / 14,088) slots plus
    one per NACK (a retransmission; the tables' error floor is 0.7 % here), and the round its
    plan to within a slot and those retransmissions."""
    rounds = 30
    np.save(tmp_path / "flat.npy", np.full((rounds, 3), 30.0))
    data = _scenario(tmp_path, rounds)
    data.update(n_clients=3, n_scheduled=3)
    data["channel"]["snr_trace"] = str(tmp_path / "flat.npy")
    result = run_scenario(scenario_from_dict(data), tmp_path / "run", progress=False)
    clients, rounds_table = result.clients, result.rounds
    assert (clients.nr_prbs == 17).all() and (clients.nr_mean_mcs == 27).all()
    nacks = np.round(clients.nr_bler * clients.nr_transmissions).to_numpy()
    slots = np.round(clients.upload_s.to_numpy() / SLOT_S)
    np.testing.assert_array_equal(slots, np.ceil(clients.bits.to_numpy() / 14_088) + nacks)
    late_slots = (rounds_table.delay_s - rounds_table.planned_delay_s).to_numpy() / SLOT_S
    most_nacks = pd.Series(nacks).groupby(clients["round"].to_numpy()).max().to_numpy()
    assert (late_slots >= -1.0).all() and (late_slots <= 1.0 + most_nacks).all()
    assert nacks.sum() > 0  # the check saw retransmissions


@needs_nr
def test_a_scheduling_delay_is_added_to_every_upload_and_to_the_plan(tmp_path):
    base = run_scenario(scenario_from_dict(_scenario(tmp_path, 4)), tmp_path / "a")
    data = _scenario(tmp_path, 4, scheduling_delay_slots=6)
    late = run_scenario(scenario_from_dict(data), tmp_path / "b")
    delay_s = 6 * SLOT_S
    np.testing.assert_allclose(late.clients.upload_s, base.clients.upload_s + delay_s, rtol=1e-12)
    planned = base.rounds.planned_delay_s + delay_s
    np.testing.assert_allclose(late.rounds.planned_delay_s, planned, rtol=1e-12)


@needs_nr
def test_the_scenarios_open_loop_power_control_sets_the_nr_sinr(tmp_path):
    """TS 38.213 §7.1.1's open loop (``channel.power_control: fractional``) on a geometric
    cell: every client transmits min(P_max, P0 + alpha PL), and NR decodes at the SNR that
    power gives, the one FDMA's uploads see at the same seed."""
    from wirelessfl.config import load_scenario

    sets = [
        "rounds=3",
        "n_clients=20",
        "channel.bandwidth_hz=20e6",
        "channel.power_control=fractional",
        "channel.p0_dbm=-60",
        "channel.power_control_alpha=0.8",
        "output.clients=true",
        "output.events=false",
    ]
    runs = {
        uplink: run_scenario(
            load_scenario("network_only", [*sets, f"channel.uplink={uplink}"]), tmp_path / uplink
        )
        for uplink in ("fdma", "nr")
    }
    fdma, nr = runs["fdma"].clients, runs["nr"].clients
    pd.testing.assert_series_equal(nr.snr_db, fdma.snr_db)
    pd.testing.assert_series_equal(nr.tx_power_w, fdma.tx_power_w)
    assert nr.tx_power_w.nunique() > 1 and (10 * np.log10(nr.tx_power_w * 1e3) <= 23.0 + 1e-9).all()
    assert (nr.status == "arrived").mean() > 0.9


OLLA = {
    "channel.bandwidth_hz": B_HZ,
    "channel.uplink": "nr",
    "channel.nr.fidelity": "slot",
    "channel.nr.link_adaptation": "olla",
    "channel.nr.fading": "iid",
    "output.events": False,
}


@needs_nr
def test_resume_with_olla_reproduces_the_tables(tmp_path):
    full = run_scenario(small_scenario(**OLLA, rounds=8), tmp_path / "full")
    cut = small_scenario(**OLLA, rounds=8, **{"output.checkpoint_every": 1})
    interrupt_at(Run(cut, tmp_path / "cut"), 4)
    resumed = resume_run(tmp_path / "cut")
    pd.testing.assert_frame_equal(full.clients, resumed.clients)
    wall = ["wall_s"]
    pd.testing.assert_frame_equal(full.rounds.drop(columns=wall), resumed.rounds.drop(columns=wall))
    assert full.rounds.nr_bler.gt(0).any()  # NACKs moved the offsets


def _nr(**over) -> dict:
    data = {
        "name": "refused",
        "seed": 1,
        "n_clients": 20,
        "n_scheduled": 4,
        "rounds": 2,
        "channel": {"bandwidth_hz": B_HZ, "mean_snr_db": 10.0, "uplink": "nr", "nr": {}},
        "controller": {"name": "fixed", "rank": 4, "r_max": 8, "sparsification": 0.5},
        "learner": {"kind": "surrogate", "shape": {"layer_shapes": [[64, 32]], "base_params": 0}},
    }
    for key, value in over.items():
        *path, name = key.split(".")
        where = data
        for part in path:
            where = where.setdefault(part, {})
        where[name] = value
    return data


REFUSED = [
    ({"channel.bandwidth_hz": 1.0e6}, "channel.bandwidth_hz: with channel.uplink: nr, 1 MHz"),
    ({"channel.bandwidth_hz": 5.0e6, "n_scheduled": 12}, "n_scheduled: 12 clients need a PRB"),
    ({"channel.noise_bandwidth": "share"}, "channel.noise_bandwidth: share: with channel.uplink"),
    ({"channel.nr.link_adaptation": "olla"}, "channel.nr.link_adaptation: olla carries"),
    ({"channel.nr.numerology": 3}, "channel.nr.numerology: must be one of 0, 1, 2"),
    ({"channel.nr.dmrs_re_per_prb": 72, "channel.nr.overhead_re_per_prb": 18}, None),
    ({"controller.name": "sketch"}, "channel.uplink: nr sends on whole PRBs"),
    ({"controller.name": "energy_min"}, "channel.uplink: nr sends on whole PRBs"),
    ({"controller.name": "osfa", "controller.radio": "joint"}, "channel.uplink: nr sends on"),
    ({"server.mode": "async", "server.concurrency": 2}, "channel.uplink: nr has no band"),
    ({"controller.name": "tsfa", "controller.offline_channel": "expected_rate"}, "controller."),
    (
        {"channel.nr.fading": "iid", "channel.fading.model": "gauss_markov"},
        "channel.fading.rho: gauss_markov needs rho",
    ),
]


@needs_nr
@pytest.mark.parametrize(("over", "starts"), REFUSED)
def test_what_nr_cannot_run_is_refused_in_one_line(over, starts):
    if starts is None:  # the limit itself loads: 168 - 72 - 18 resource elements left
        assert scenario_from_dict(_nr(**over)).channel.nr.dmrs_re_per_prb == 72
        return
    with pytest.raises(ConfigError) as err:
        scenario_from_dict(_nr(**over))
    assert str(err.value).startswith(starts) and "\n" not in str(err.value), str(err.value)


def test_the_missing_extra_is_refused_in_one_line(monkeypatch):
    import channels.nr_bler

    monkeypatch.setattr(channels.nr_bler, "sionna_version", lambda: None)
    with pytest.raises(ConfigError, match=r"^channel.uplink: nr needs the nr extra .*fdma$"):
        scenario_from_dict(_nr())


@needs_nr
def test_loading_and_planning_do_not_import_sionna():
    """The tables load on the first upload; a scenario, its uplink and the solvers load
    without them (Sionna imports in seconds)."""
    code = (
        "import sys, optim, wirelessfl.uplinks.nr, wirelessfl.sim.runner\n"
        "from wirelessfl.config.loader import scenario_from_dict\n"
        f"scenario_from_dict({_nr()!r})\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'sionna'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
