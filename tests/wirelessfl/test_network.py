"""A network of cells end to end: the SINR against Sionna's geometry SINR, the cloud's
average, the hierarchy's clocks, resume, refusals, and real training at the edges."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scenario_helpers import digits_scenario, interrupt_at, set_keys

from wirelessfl.config import scenario_from_dict
from wirelessfl.errors import ConfigError
from wirelessfl.sim import resume_run
from wirelessfl.sim.network import NetworkSimulator
from wirelessfl.sim.runner import Run

GEOMETRY = {
    "bandwidth_hz": 1.0e6,
    "d_min_m": 10.0,
    "path_loss_exponent": 1.5,
    "tx_power_dbm": 23.0,
    "reference_gain_db": -35.0,
    "noise_psd_dbm_per_hz": -174.0,
    "noise_figure_db": 7.0,
}


def network(**overrides):
    data = {
        "name": "cells",
        "seed": 5,
        "n_clients": 70,
        "n_scheduled": 3,
        "rounds": 12,
        "eval_every": 2,
        "channel": dict(GEOMETRY),
        "cells": {"n_rings": 1, "isd_m": 500.0},
        "devices": {"include_compute": False},
        "controller": {"name": "tsfa", "V": 1.0e-4, "d_th_s": 1.0, "o_min": 0.05, "r_max": 16},
        "learner": {"kind": "surrogate", "shape": {"layer_shapes": [[64, 64], [64, 32]]}},
        "output": {"events": True, "clients": True},
    }
    return scenario_from_dict(set_keys(data, overrides))


def _run(tmp_path, name="run", **overrides):
    return Run(network(**overrides), tmp_path / name).execute()


def test_upload_sinr_is_sionna_geometry_sinr_of_the_same_layout(tmp_path):
    """No fading, reuse 1, one client a cell on the whole band: each upload's SINR is the
    geometry SINR (TR 38.901 section 7.8) of its site with the other cells' uploads as the
    interferers, which Sionna SYS computes from the coupling losses."""
    torch = pytest.importorskip("torch")
    sys_ = pytest.importorskip("sionna.sys")
    result = _run(tmp_path, n_scheduled=1, rounds=6, **{"channel.fading.model": "none"})
    layout = NetworkSimulator(network(n_scheduled=1, rounds=6)).layout
    clients = result.clients
    assert len(clients) == 6 * 7 and np.all(clients.share == 1.0)
    checked = 0
    for _, rows in clients.groupby("round"):
        ids = rows.client.to_numpy()
        sites = rows.cell.to_numpy()
        # receivers: the sites; transmitters: this round's uploads; CL[site, upload]
        cl_db = -10.0 * np.log10(layout.link_gain[ids][:, sites].T)
        expected = sys_.geometry_sinr_db(
            torch.tensor(cl_db, dtype=torch.float64),
            tx_power_dbm=23.0,
            bandwidth_hz=1.0e6,
            noise_figure_db=7.0,
            serving=torch.arange(len(ids)),
            precision="double",
        ).numpy()
        np.testing.assert_allclose(rows.sinr_db.to_numpy(), expected, atol=1e-6)
        checked += len(ids)
    assert checked == 42
    # reuse 1 at 500 m: interference costs every upload, the cell edge the most
    assert np.all(clients.sinr_db < clients.snr_db)


def test_interference_baseline_and_reuse(tmp_path):
    free = _run(tmp_path, "free", **{"cells.interference": False}).clients
    np.testing.assert_allclose(free.sinr_db, free.snr_db, rtol=0, atol=1e-12)
    reuse3 = _run(tmp_path, "reuse3", **{"cells.reuse": 3}).clients
    reuse1 = _run(tmp_path, "reuse1").clients
    # a third of the band each: the SNR is 10 log10 3 higher (band noise) for the same draw
    merged = reuse1.merge(reuse3, on=["round", "client"], suffixes=("_1", "_3"))
    assert len(merged) > 0
    np.testing.assert_allclose(merged.snr_db_3 - merged.snr_db_1, 10 * np.log10(3), atol=1e-9)
    loss_1 = (reuse1.snr_db - reuse1.sinr_db).mean()
    loss_3 = (reuse3.snr_db - reuse3.sinr_db).mean()
    assert loss_3 < loss_1


def test_flat_hierarchy_syncs_every_round_and_cells_csv_adds_up(tmp_path):
    result = _run(tmp_path)
    rounds, cells = result.rounds, result.cells
    assert np.all(rounds.cloud_round == 1) and np.all(rounds.n_cells == 7)
    assert len(cells) == 12 * 7
    for t, rows in cells.groupby("round"):
        row = rounds.iloc[t]
        assert row.n_arrived == rows.n_arrived.sum()
        assert row.delay_s == rows.delay_s.max()
        assert row.t_end_s == rows.t_end_s.max()
        if t > 0:  # every cell starts the next round when the slowest has ended
            assert np.all(rows.t_start_s == rounds.iloc[t - 1].t_end_s)
    # the cells' controllers each keep their own queue
    assert cells.groupby("cell").queue_after.last().nunique() > 1
    # accuracy every eval_every rounds, from the cloud's model
    assert rounds.accuracy.notna().tolist() == [(t + 1) % 2 == 0 for t in range(12)]


def test_cloud_averages_the_edges_by_their_data_every_tau_rounds(tmp_path):
    tau, latency_s, rate_bps = 3, 0.05, 2.0e6
    result = _run(
        tmp_path,
        rounds=10,
        **{
            "server.hierarchy.edge_rounds": tau,
            "server.hierarchy.backhaul_latency_s": latency_s,
            "server.hierarchy.backhaul_rate_bps": rate_bps,
        },
    )
    rounds, cells = result.rounds, result.cells
    cloud = rounds.cloud_round.to_numpy()
    assert cloud.tolist() == [0, 0, 1, 0, 0, 1, 0, 0, 1, 1]  # every tau-th and the last
    assert rounds.accuracy.notna().tolist() == cloud.astype(bool).tolist()
    sim = NetworkSimulator(network(rounds=10))
    members = np.array([len(e.edge.members) for e in sim.edges], dtype=float)
    bits = sim.edges[0].params_per_rank * sim.edges[0].rank * 32
    backhaul_s = 2 * (latency_s + bits / rate_bps)
    for t in np.flatnonzero(cloud):
        rows = cells[cells["round"] == t].sort_values("cell")
        # the network-only model: the cloud's test loss is the data-weighted mean of the
        # edges' excess losses after their aggregation (one unit of data per client)
        expected = np.dot(members, rows.loss) / members.sum()
        assert rounds.test_loss[t] == pytest.approx(expected, rel=1e-12)
        assert rounds.backhaul_s[t] == pytest.approx(backhaul_s, rel=1e-12)
        assert rounds.t_end_s[t] == pytest.approx(rows.t_end_s.max() + backhaul_s, rel=1e-12)
        if t + 1 < 10:
            nxt = cells[cells["round"] == t + 1]
            assert np.all(nxt.t_start_s == rounds.t_end_s[t])
    # between cloud rounds the cells' clocks run apart
    r1 = cells[cells["round"] == 1]
    assert r1.t_start_s.nunique() > 1
    # and their models too: different losses at round 1, one loss after the average
    assert r1.loss.nunique() > 1


def _full_and_resumed(tmp_path, at: int, **overrides):
    """The run uninterrupted, and the same run interrupted when round ``at`` starts and
    resumed."""
    full = _run(tmp_path, "full", **overrides)
    interrupt_at(Run(network(**overrides), tmp_path / "cut"), at)
    return full, resume_run(tmp_path / "cut")


def test_resume_mid_edge_rounds_gives_the_same_tables(tmp_path):
    overrides = {"server.hierarchy.edge_rounds": 4, "output.checkpoint_every": 1}
    full, resumed = _full_and_resumed(tmp_path, 6, **overrides)  # edge round 2 of 4
    wall = ["wall_s"]
    pd.testing.assert_frame_equal(full.rounds.drop(columns=wall), resumed.rounds.drop(columns=wall))
    pd.testing.assert_frame_equal(full.cells, resumed.cells)
    pd.testing.assert_frame_equal(full.clients, resumed.clients)


def test_edges_train_real_models_and_the_cloud_mean_is_weighted_by_samples():
    scenario = digits_scenario(
        n_clients=7,
        n_scheduled=1,
        eval_every=2,
        channel={**GEOMETRY, "mean_snr_db": None},
        cells={"n_rings": 1},
        server={"hierarchy": {"edge_rounds": 2}},
    )
    sim = NetworkSimulator(scenario)
    assert len(sim.edges) == 7
    sim.run_round(0)  # not a cloud round: every edge trained its own client
    states = [e.learner.model_state() for e in sim.edges]
    key = next(iter(states[0]))
    assert not all(bool((s[key] == states[0][key]).all()) for s in states[1:])
    sizes = np.array(
        [e.learner.runtime.partition.sizes[e.edge.members].sum() for e in sim.edges], float
    )
    np.testing.assert_array_equal(sim.weights, sizes)
    sim._average()
    for name in states[0]:
        expected = sum(w * s[name] for w, s in zip(sizes / sizes.sum(), states, strict=True))
        for edge in sim.edges:
            got = edge.learner.model_state()[name]
            assert np.allclose(got.numpy(), expected.numpy(), rtol=1e-6, atol=1e-7)
    outcome = sim.run_round(1)  # the cloud round: averaged and evaluated
    assert outcome.record["cloud_round"] == 1 and not math.isnan(outcome.record["accuracy"])


@pytest.mark.parametrize(
    ("overrides", "needle"),
    [
        ({"channel.mean_snr_db": 10.0}, "cells.n_rings: channel.mean_snr_db"),
        (
            {"channel.uplink": "noma", "controller.name": "fixed"},
            "cells.n_rings: channel.uplink",
        ),
        ({"server.mode": "async"}, "cells.n_rings: server.mode: async"),
        ({"cells.n_rings": None, "server.hierarchy.edge_rounds": 2}, "server.hierarchy:"),
        ({"cells.reuse": 2}, "cells.reuse:"),
    ],
)
def test_refusals_are_one_line(overrides, needle):
    with pytest.raises(ConfigError) as err:
        network(**overrides)
    assert str(err.value).startswith(needle) and "\n" not in str(err.value)


def test_an_algorithm_without_a_weighted_mean_is_refused_in_one_line():
    with pytest.raises(ConfigError) as err:
        NetworkSimulator(network(**{"algorithm.name": "fslora"}))
    text = str(err.value)
    assert text.startswith("cells.n_rings: algorithm 'fslora'") and "\n" not in text


def test_nr_cells_take_their_prbs_share_of_the_band_and_decode_at_the_sinr(tmp_path):
    pytest.importorskip("sionna.sys")
    from wirelessfl.sim.cell_interference import CellUploads, round_sinr

    overrides = {
        "channel.uplink": "nr",
        "channel.bandwidth_hz": 10.0e6,
        "channel.fading.model": "none",
        "controller.name": "fixed",
        "controller.rank": 4,
        "controller.sparsification": 0.5,
    }
    result = _run(tmp_path, rounds=3, **overrides)
    clients = result.clients
    assert {"nr_prbs", "nr_mean_mcs", "sinr_db", "cell"} <= set(clients.columns)
    sim = NetworkSimulator(network(rounds=3, **overrides))
    n_rb = sim.edges[0].uplink.n_rb
    assert n_rb == 24  # 10 MHz at 30 kHz
    # the interference of round 0 recomputed from the PRBs each upload occupied
    rows = clients[clients["round"] == 0].sort_values(["cell", "client"])
    uploads = [
        CellUploads(
            part.client.to_numpy(),
            part.nr_prbs.to_numpy() / n_rb,
            part.tx_power_w.to_numpy(),
            10 ** (part.snr_db.to_numpy() / 10),
        )
        for _, part in rows.groupby("cell", sort=True)
    ]
    again = round_sinr(
        uploads,
        sim.layout,
        seed=5,
        round_index=0,
        bandwidth_hz=10.0e6,
        reuse=1,
        noise_power_w=sim.edges[0].cell.noise_power_w,
        noise_bandwidth="band",
        interference=True,
        cross_fading=False,
    )
    np.testing.assert_allclose(10 * np.log10(again.sinr), rows.sinr_db, atol=1e-9)
    assert np.all(rows.sinr_db <= rows.snr_db + 1e-12)


MOVING = {
    "mobility.model": "random_waypoint",
    "mobility.speed_min_mps": 1.0,
    "mobility.speed_max_mps": 2.0,
    "channel.d_max_m": 400.0,
    "output.checkpoint_every": 1,
}


def test_moving_clients_hand_over_and_each_cell_serves_its_own(tmp_path):
    result = _run(tmp_path, rounds=40, **MOVING)
    events, clients, cells = result.events, result.clients, result.cells
    handovers = events[events.kind == "handover"]
    assert len(handovers) > 0
    # a client's cell in clients.csv is the cell of its last handover before that round
    layout_cell = {}
    sim = NetworkSimulator(network(rounds=40, **MOVING))
    start = sim.serving.copy()  # the cells of least coupling loss at time 0
    for t in range(40):
        for _, h in handovers[handovers["round"] == t].iterrows():
            layout_cell[int(h.client)] = int(h.value)
        rows = clients[clients["round"] == t]
        expected = [layout_cell.get(int(c), int(start[int(c)])) for c in rows.client]
        assert rows.cell.tolist() == expected
    # every cell scheduled only its own clients: the rows of each (round, cell) are its count
    counted = clients.groupby(["round", "cell"]).size()
    table = cells.set_index(["round", "cell"]).n_scheduled
    pd.testing.assert_series_equal(
        counted.rename("n").astype(int), table.loc[counted.index].rename("n").astype(int)
    )
    # the hysteresis keeps clients from handing back and forth every round
    per_client = handovers.groupby("client").size()
    assert per_client.max() < 40


def test_moving_network_resumes_to_the_same_tables(tmp_path):
    overrides = {**MOVING, "server.hierarchy.edge_rounds": 3, "rounds": 20}
    full, resumed = _full_and_resumed(tmp_path, 11, **overrides)
    wall = ["wall_s"]
    pd.testing.assert_frame_equal(full.rounds.drop(columns=wall), resumed.rounds.drop(columns=wall))
    pd.testing.assert_frame_equal(full.events, resumed.events)
    pd.testing.assert_frame_equal(full.clients, resumed.clients)


def test_a_handover_moves_the_clients_private_state_to_its_new_edge():
    from wirelessfl.learners import make_learner

    scenario = digits_scenario(n_clients=4, n_scheduled=1)
    source, target = make_learner(scenario), make_learner(scenario)
    source.private.put(2, {"memory": np.ones(3)})
    source.hand_over(2, target)
    assert source.private.get(2) == {} and list(target.private.get(2)["memory"]) == [1, 1, 1]


def test_aircomp_cells_add_the_other_cells_sums_to_the_noise(tmp_path):
    """No fading, reuse 1: each cell's analog sum is received with noise power
    sigma^2 + sum_j p_j g_jc over the other cells' transmitting clients j, so every client's
    SINR is its SNR over 1 + I_c / sigma^2 and the round's denoising factor falls by it."""
    overrides = {
        "channel.uplink": "aircomp",
        "controller.name": "fixed",
        "controller.rank": 4,
        "controller.sparsification": 0.5,
        "channel.fading.model": "none",
    }
    result = _run(tmp_path, "on", rounds=4, **overrides)
    free = _run(tmp_path, "off", rounds=4, **{**overrides, "cells.interference": False})
    sim = NetworkSimulator(network(rounds=4, **overrides))
    noise_w = sim.edges[0].cell.noise_power_w
    gain = sim.layout.link_gain
    checked = 0
    for _, rows in result.clients.groupby("round"):
        sent = rows[rows.status == "arrived"]
        for cell, part in sent.groupby("cell"):
            others = sent[sent.cell != cell]
            interference_w = float(np.sum(others.tx_power_w * gain[others.client, cell]))
            factor = 1.0 + interference_w / noise_w
            np.testing.assert_allclose(part.interference_w, interference_w, rtol=1e-12)
            np.testing.assert_allclose(
                part.snr_db - part.sinr_db, 10 * np.log10(factor), rtol=1e-9, atol=1e-9
            )
            checked += len(part)
    assert checked > 0
    assert np.all(result.rounds.aircomp_snr_db < free.rounds.aircomp_snr_db)
    np.testing.assert_allclose(free.clients.sinr_db, free.clients.snr_db, atol=1e-12)


def test_expected_view_plans_on_the_mean_interference_of_loaded_neighbours():
    sim = NetworkSimulator(network(rounds=2, **{"cells.controller_sees": "expected"}))
    sim.run_round(0)
    layout, power = sim.layout, sim.edges[0].channel.radio.tx_power_w
    noise_w = sim.edges[0].cell.noise_power_w
    for cell, edge in zip(sim.cells, sim.edges, strict=True):
        expected = sum(
            np.mean(power[layout.serving == b] * layout.link_gain[layout.serving == b, cell])
            for b in range(7)
            if b != cell
        )
        assert edge.edge.interference_factor == pytest.approx(1 + expected / noise_w, rel=1e-12)


def test_the_joint_radio_runs_per_cell_and_its_powers_make_the_interference(tmp_path):
    """controller.radio: joint in every cell: each cell's controller decides its clients'
    powers and clocks; the decided powers are the ones the other cells receive."""
    overrides = {
        "channel.noise_bandwidth": "share",
        "channel.fading.model": "none",
        "n_scheduled": 1,
        "devices.include_compute": True,
        "devices.energy.model": "cmos",
        "devices.energy.cpu_freq_hz": 2.0e9,
        "devices.energy.cpu_freq_min_hz": 0.5e9,
        "controller.radio": "joint",
        "controller.V": 1.0e-7,
        "controller.d_th_s": 20.0,
        "controller.energy_weight": 100.0,
        "learner.shape.base_params": 1000000,
    }
    result = _run(tmp_path, rounds=3, **overrides)
    clients = result.clients
    assert {"cpu_hz", "sinr_db", "tx_power_w"} <= set(clients.columns)
    assert np.all(clients.tx_power_w <= 0.2 + 1e-12)
    np.testing.assert_allclose(clients.share, 1.0, atol=1e-9)
    sim = NetworkSimulator(network(rounds=3, **overrides))
    gain = sim.layout.link_gain
    noise_w = sim.edges[0].cell.noise_power_w
    for _, rows in clients.groupby("round"):
        for _, row in rows.iterrows():
            others = rows[rows.cell != row.cell]
            # one client a cell on the whole band (share 1, noise over the share = the band)
            interference_w = float(np.sum(others.tx_power_w * gain[others.client, row.cell]))
            expected_db = row.snr_db - 10 * np.log10(1 + interference_w / noise_w)
            assert row.sinr_db == pytest.approx(expected_db, abs=1e-6)


def test_calibration_pilots_a_network_at_its_rank(tmp_path):
    from wirelessfl.study.calibrate import calibrate_run

    scenario = digits_scenario(
        n_clients=14,
        n_scheduled=1,
        rounds=4,
        channel={**GEOMETRY, "mean_snr_db": None},
        cells={"n_rings": 1},
    )
    run = Run(scenario, tmp_path / "run")
    assert run.sim.rank == 4
    assert calibrate_run(run, progress=False) == 0
    text = (tmp_path / "run" / "calibration.yaml").read_text()
    assert "constants:" in text and "G:" in text
