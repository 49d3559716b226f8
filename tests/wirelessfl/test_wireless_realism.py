"""Energy, 3GPP path loss, mobility, availability and traces inside the simulator.

The models themselves are tested in tests/channels and tests/optim; here each is checked where
it meets the round: the tables say what the models imply, recomputed by hand from the tables
and from the models' own closed forms, and a run with all of them resumes to the same tables.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scenario_helpers import interrupt_at, small_scenario

from channels import (
    AVAILABILITY_MODELS,
    PATH_LOSS_MODELS,
    POWER_CONTROLS,
    PowerControl,
    dbm_to_watt,
    noise_power_w,
)
from channels.availability import AvailabilityModel
from channels.fading import jakes_rho
from channels.mobility import doppler_hz
from channels.pathloss_3gpp import PathLossModel, umi_los_probability, umi_path_loss_db
from channels.streams import client_generators
from channels.topology import annulus_distances
from wirelessfl.config import scenario_from_dict
from wirelessfl.errors import ConfigError
from wirelessfl.learners import make_learner
from wirelessfl.sim import resume_run, run_scenario
from wirelessfl.sim.runner import Run
from wirelessfl.sim.setup import build_radio
from wirelessfl.sim.simulator import Simulator

GEOMETRY = {"channel.mean_snr_db": None, "channel.d_max_m": 300.0}
UMI = {**GEOMETRY, "channel.path_loss.model": "3gpp_umi", "channel.path_loss.carrier_ghz": 3.5}
MOVING = {
    **UMI,
    "mobility.model": "random_waypoint",
    "mobility.speed_min_mps": 5.0,
    "mobility.speed_max_mps": 15.0,
}
COMPUTE = {"devices.include_compute": True, "devices.flops_per_s": 1.0e13}


def _run(tmp_path, name="r", **overrides):
    return run_scenario(small_scenario(**overrides), tmp_path / name)


# ---- energy ---------------------------------------------------------------------------------
def test_energy_columns_by_hand(tmp_path):
    """Compute energy = FLOPs x J/FLOP (FLOPs = compute_s x FLOP/s); transmit energy = P x the
    time the client transmitted (to the deadline for a cut upload); rounds sum the clients."""
    jpf, dbm = 2.0e-10, 20.0
    res = _run(
        tmp_path,
        **COMPUTE,
        **{
            "devices.energy.joules_per_flop": jpf,
            "channel.tx_power_dbm": dbm,
            "faults.deadline_s": 0.55,
        },
    )
    c, ev = res.clients, res.events
    trained = c[c.status.isin(["arrived", "straggler"])]
    p_w = dbm_to_watt(dbm)
    np.testing.assert_allclose(c.tx_power_w, p_w, rtol=1e-15)
    arrived = trained[trained.status == "arrived"]
    np.testing.assert_allclose(
        arrived.compute_energy_j, arrived.compute_s * 1.0e13 * jpf, rtol=1e-12
    )
    np.testing.assert_allclose(arrived.transmit_energy_j, p_w * arrived.upload_s, rtol=1e-12)
    # a cut client: the part of its compute done, and its upload up to the deadline
    cut = trained[trained.status == "straggler"]
    assert len(cut) > 0
    t_cut = ev[ev.kind == "straggler"].set_index(["round", "client"]).time_s
    starts = ev.set_index(["round", "client", "kind"]).time_s
    for _, row in cut.iterrows():
        key = (row["round"], row["client"])
        comp_start = starts[(*key, "compute_start")]
        done_s = min(row.compute_s, t_cut[key] - comp_start)
        assert row.compute_energy_j == pytest.approx(1.0e13 * jpf * done_s, rel=1e-9)
        up = starts.get((*key, "upload_start"))
        sent_s = 0.0 if up is None else t_cut[key] - up
        assert row.transmit_energy_j == pytest.approx(p_w * sent_s, rel=1e-9, abs=1e-15)
    totals = c.groupby("round")[["compute_energy_j", "transmit_energy_j"]].sum()
    r = res.rounds.set_index("round")
    np.testing.assert_allclose(r.compute_energy_j, totals.compute_energy_j, rtol=1e-12)
    np.testing.assert_allclose(r.transmit_energy_j, totals.transmit_energy_j, rtol=1e-12)
    assert c[~c.status.isin(["arrived", "straggler"])].compute_energy_j.eq(0).all()


def test_cmos_energy_by_hand(tmp_path):
    """kappa f^2 cycles, cycles = FLOPs / FLOPs per cycle."""
    kappa, f_hz, per_cycle = 1.0e-28, 1.5e9, 4.0
    res = _run(
        tmp_path,
        **COMPUTE,
        **{
            "devices.energy.model": "cmos",
            "devices.energy.kappa": kappa,
            "devices.energy.cpu_freq_hz": f_hz,
            "devices.energy.flops_per_cycle": per_cycle,
        },
    )
    c = res.clients[res.clients.status == "arrived"]
    cycles = c.compute_s * 1.0e13 / per_cycle
    np.testing.assert_allclose(c.compute_energy_j, kappa * f_hz**2 * cycles, rtol=1e-12)


def test_energy_budget_lowers_transmit_energy_and_sparsification(tmp_path):
    """A budget below what the free run spends pushes O^t down (eq. 29 with the energy price),
    and the devices spend less on uploads; the queue column is filled only with a budget."""
    common = {
        **UMI,
        "controller.name": "osfa",
        "controller.rank": 8,
        "controller.d_th_s": 5.0,
        "channel.tx_power_dbm": 23.0,
        "devices.include_compute": False,
        "rounds": 60,
    }
    free = _run(tmp_path, "free", **common)
    spent = free.clients.groupby("client").transmit_energy_j.sum() / 60
    budget = 0.2 * float(spent.mean())
    kept = _run(tmp_path, "kept", **common, **{"controller.energy_budget_j": budget})
    assert free.rounds.energy_queue_mean_j.isna().all()
    assert kept.rounds.energy_queue_mean_j.iloc[-1] > 0
    assert kept.rounds.sparsification.mean() < 0.8 * free.rounds.sparsification.mean()
    assert kept.rounds.transmit_energy_j.sum() < 0.8 * free.rounds.transmit_energy_j.sum()


# ---- 3GPP path loss ----------------------------------------------------------------------------
def test_umi_cell_gains_by_hand():
    """Mean SNR = P 10^{(sigma z - PL(d))/10} / noise, with d, u and z from the clients' streams
    and PL from TR 38.901 Table 7.4.1-1 (checked against hand values in tests/channels)."""
    sc = small_scenario(**UMI)
    sim = Simulator(sc, make_learner(sc))
    n, seed, ch = sc.n_clients, sc.seed, sc.channel
    d = annulus_distances(seed, n, d_min_m=ch.d_min_m, d_max_m=ch.d_max_m)
    u = np.array([g.random() for g in client_generators(seed, range(n), stream="los")])
    z = np.array(
        [g.standard_normal() for g in client_generators(seed, range(n), stream="shadowing")]
    )
    los = u < umi_los_probability(np.maximum(d, 10.0))
    pl = umi_path_loss_db(np.maximum(d, 10.0), carrier_ghz=3.5, los=los)
    sigma = np.where(los, 4.0, 7.82)
    sigma2 = noise_power_w(
        bandwidth_hz=ch.bandwidth_hz,
        noise_psd_dbm_per_hz=ch.noise_psd_dbm_per_hz,
        noise_figure_db=ch.noise_figure_db,
    )
    want = dbm_to_watt(ch.tx_power_dbm) * 10.0 ** ((sigma * z - pl) / 10.0) / sigma2
    np.testing.assert_allclose(sim.cell.mean_snr, want, rtol=1e-12)
    assert 0 < los.sum() < n  # both states occur at d_max 300 m


def test_fractional_power_control_by_hand(tmp_path):
    """P_k = min(P_max, P0 + alpha PL_k), PL including shadowing (TS 38.213 open loop)."""
    over = {
        **UMI,
        "channel.power_control": "fractional",
        "channel.p0_dbm": -60.0,
        "channel.power_control_alpha": 0.7,
        "channel.tx_power_dbm": 20.0,
    }
    sc = small_scenario(**over)
    sim = Simulator(sc, make_learner(sc))
    ch = sc.channel
    sigma2 = noise_power_w(
        bandwidth_hz=ch.bandwidth_hz,
        noise_psd_dbm_per_hz=ch.noise_psd_dbm_per_hz,
        noise_figure_db=ch.noise_figure_db,
    )
    fixed = small_scenario(**UMI, **{"channel.tx_power_dbm": 20.0})  # same clients, fixed P
    gain = Simulator(fixed, make_learner(fixed)).cell.mean_snr * sigma2 / dbm_to_watt(20.0)
    pl_db = -10.0 * np.log10(gain)
    p_dbm = np.minimum(20.0, -60.0 + 0.7 * pl_db)
    np.testing.assert_allclose(sim.cell.mean_snr, dbm_to_watt(p_dbm) * gain / sigma2, rtol=1e-10)
    assert (p_dbm < 20.0).any() and (p_dbm == 20.0).any()  # both branches of the min
    res = run_scenario(sc, tmp_path / "r")
    assert res.clients.tx_power_w.nunique() > 1
    assert res.clients.tx_power_w.max() <= dbm_to_watt(20.0) * (1 + 1e-12)


# ---- mobility ----------------------------------------------------------------------------------
def test_mobility_moves_large_scale_gain_at_broadcast_times():
    """SNR / |s|^2 of round t is the large-scale gain at the round's broadcast time."""
    sc = small_scenario(**MOVING, **COMPUTE)
    sim = Simulator(sc, make_learner(sc))
    radio = sim.channel.radio
    assert radio.large_scale is not None
    fading, _ = sim.cell.fading_power_block(0, sc.channel.block_rounds)
    gains = []
    for t in range(6):
        t0 = sim.env.now
        snr, _ = sim.channel.observe(t, t0)
        want = fading[t] * radio.large_scale.at(t0).power_gain / sim.cell.noise_power_w
        np.testing.assert_allclose(snr, want, rtol=1e-13)
        gains.append(radio.large_scale.at(t0).path_gain)
        sim.run_round(t)
    assert not np.allclose(gains[0], gains[-1], rtol=1e-3, atol=0.0)  # the clients moved


def test_gauss_markov_doppler_follows_mobility():
    """With mobility and slot_s alone, rho = J0(2 pi f_d T), f_d = v f_c / c (mean speed)."""
    over = {
        **MOVING,
        "channel.fading.model": "gauss_markov",
        "channel.fading.slot_s": 0.01,
    }
    sc = small_scenario(**over)
    sim = Simulator(sc, make_learner(sc))
    v = (15.0 - 5.0) / math.log(15.0 / 5.0)  # time-average speed of random waypoint legs
    f_d = float(doppler_hz(v, 3.5e9))
    assert sim.cell.fading.rho == pytest.approx(float(jakes_rho(f_d, 0.01)), rel=1e-12)


# ---- availability --------------------------------------------------------------------------------
MARKOV = {
    "availability.model": "markov",
    "availability.p_on_to_off": 0.3,
    "availability.p_off_to_on": 0.3,
}


def test_unavailable_clients_are_recorded(tmp_path):
    res = _run(tmp_path, **MARKOV)
    c, r, ev = res.clients, res.rounds, res.events
    un = c[c.status == "unavailable"]
    assert len(un) > 0
    assert (un.bits == 0).all() and (un.compute_energy_j == 0).all()
    per_round = un.groupby("round").size().reindex(r["round"], fill_value=0)
    np.testing.assert_array_equal(r.n_unavailable.to_numpy(), per_round.to_numpy())
    assert len(ev[ev.kind == "unavailable"]) == len(un)
    # about half the scheduled clients (stationary on-probability 0.5)
    assert 0.3 < len(un) / len(c) < 0.7


def test_available_only_schedules_available_clients(tmp_path):
    sc = small_scenario(**MARKOV, **{"selection.available_only": True})
    res = run_scenario(sc, tmp_path / "r")
    assert "unavailable" not in set(res.clients.status)
    sim = Simulator(sc, make_learner(sc))
    for t in range(10):
        available = sim.availability.available(t, sim.env.now)
        outcome = sim.run_round(t)
        chosen = [row["client"] for row in outcome.clients]
        assert available[chosen].all()
        assert len(chosen) == min(sc.n_scheduled, int(available.sum()))


def test_round_without_available_clients_waits(tmp_path):
    """Nobody available: nobody scheduled, and the round lasts availability.empty_round_s."""
    trace = tmp_path / "avail.csv"
    trace.write_text("client,start_s,end_s\n" + "".join(f"{k},5.0,1e9\n" for k in range(20)))
    res = _run(
        tmp_path,
        **{
            "availability.model": "trace",
            "availability.trace": str(trace),
            "availability.empty_round_s": 2.0,
            "selection.available_only": True,
            "rounds": 6,
        },
    )
    r = res.rounds
    assert list(r.n_scheduled[:3]) == [0, 0, 0]  # t = 0, 2, 4 s
    np.testing.assert_allclose(r.completion_s[:3], 2.0)
    assert r.n_scheduled[3] == 5 and r.t_start_s[3] == 6.0


# ---- traces --------------------------------------------------------------------------------------
def test_snr_and_compute_traces(tmp_path):
    rng = np.random.default_rng(0)
    snr_db = rng.uniform(0.0, 20.0, size=(40, 20))
    np.save(tmp_path / "snr.npy", snr_db)
    flops = np.linspace(1.0e11, 2.0e12, 20)
    (tmp_path / "dev.csv").write_text(
        "client,flops_per_s\n" + "".join(f"{k},{float(f)!r}\n" for k, f in enumerate(flops))
    )
    res = _run(
        tmp_path,
        **{
            "channel.mean_snr_db": None,
            "channel.snr_trace": str(tmp_path / "snr.npy"),
            "devices.kind": "trace",
            "devices.trace": str(tmp_path / "dev.csv"),
            "devices.include_compute": True,
        },
    )
    c = res.clients
    np.testing.assert_allclose(c.snr_db, snr_db[c["round"], c.client], rtol=1e-12)
    sc = small_scenario()
    per_client_flops = make_learner(sc).expected_flops(res.rounds["rank"].iloc[0])
    ok = c[c.status == "arrived"]
    np.testing.assert_allclose(ok.compute_s, per_client_flops / flops[ok.client], rtol=1e-9)


def test_short_snr_trace_is_one_line(tmp_path):
    np.save(tmp_path / "snr.npy", np.zeros((3, 20)))
    sc = small_scenario(
        **{"channel.mean_snr_db": None, "channel.snr_trace": str(tmp_path / "snr.npy")}
    )
    with pytest.raises(ConfigError) as err:
        Simulator(sc, make_learner(sc))
    assert "\n" not in str(err.value) and "3 rounds" in str(err.value)


# ---- resume --------------------------------------------------------------------------------------
def test_everything_on_resumes_to_the_same_tables(tmp_path):
    over = {
        **MOVING,
        **MARKOV,
        **COMPUTE,
        "channel.fading.model": "gauss_markov",
        "channel.fading.slot_s": 0.05,
        "controller.name": "osfa",
        "controller.rank": 4,
        "controller.energy_budget_j": 300.0,
        "output.checkpoint_every": 1,
    }
    sc = small_scenario(**over)
    full = run_scenario(sc, tmp_path / "full")
    run = Run(sc, tmp_path / "cut")
    interrupt_at(run, 23)
    resumed = resume_run(tmp_path / "cut")
    for name in ("rounds", "clients", "events"):
        a, b = getattr(full, name), getattr(resumed, name)
        if "wall_s" in a:
            a, b = a.drop(columns="wall_s"), b.drop(columns="wall_s")
        pd.testing.assert_frame_equal(a, b, check_exact=True, obj=name)
    assert full.rounds.energy_queue_mean_j.notna().all()


# ---- one-line errors -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("overrides", "words"),
    [
        ({"mobility.model": "random_waypoint"}, "mobility.model"),
        ({"channel.path_loss.model": "3gpp_umi"}, "channel.mean_snr_db"),
        (
            {**GEOMETRY, "channel.path_loss.model": "3gpp_uma", "channel.path_loss.h_ut_m": 20.0},
            "h_ut_m",
        ),
        ({**GEOMETRY, "channel.power_control": "per_class"}, "devices.kind: classes"),
        ({"availability.model": "trace"}, "availability.trace"),
        ({"availability.p_on_to_off": {"phone": 0.1}}, "device classes"),
        ({"devices.energy.joules_per_flop": 0.0}, "joules_per_flop"),
        ({**GEOMETRY, "channel.power_control_params": {"p": 1.0}}, "power_control_params"),
        ({"controller.name": "fixed", "controller.energy_budget_j": 1.0}, "energy_budget_j"),
        ({"channel.fading.model": "gauss_markov"}, "channel.fading.rho"),
        ({"devices.kind": "trace"}, "devices.trace"),
        ({"mobility.speed_min_mps": 3.0, "mobility.speed_max_mps": 2.0}, "speed_min_mps"),
        ({"channel.path_loss.carrier_ghz": 200.0}, "carrier_ghz"),
    ],
)
def test_bad_wireless_settings_are_one_line(overrides, words):
    with pytest.raises(ConfigError) as err:
        small_scenario(**overrides)
    message = str(err.value)
    assert "\n" not in message and words in message, message


def test_scenario_from_dict_accepts_every_new_section():
    sc = scenario_from_dict(
        {
            "channel": {"path_loss": {"model": "3gpp_uma"}, "power_control": "fractional"},
            "mobility": {"model": "gauss_markov", "alpha": 0.5},
            "availability": {"model": "markov"},
            "devices": {"energy": {"model": "cmos"}},
            "controller": {"energy_budget_j": 10.0},
            "selection": {"available_only": True},
        }
    )
    assert sc.channel.path_loss.model == "3gpp_uma" and sc.mobility.alpha == 0.5


# ---- user-registered models ----------------------------------------------------------------------
class FreeSpace(PathLossModel):
    """Friis free-space loss, 20 log10(4 pi d f / c), no shadowing: a user's model."""

    def __init__(self, carrier_hz: float) -> None:
        self.carrier_hz = carrier_hz

    def los_probability(self, distance_2d_m):
        return np.ones_like(np.asarray(distance_2d_m, dtype=float))

    def path_loss_db(self, distance_2d_m, los):
        d = np.asarray(distance_2d_m, dtype=float)
        return 20.0 * np.log10(4.0 * math.pi * d * self.carrier_hz / 299_792_458.0)

    def shadowing_sigma_db(self, los):
        return np.zeros_like(np.asarray(los, dtype=float))


class ConstantWatts(PowerControl):
    """Every client at ``p_w`` watts, whatever its loss: a user's power control."""

    def __init__(self, p_w: float) -> None:
        self.p_w = p_w

    def dbm(self, path_loss_db, client_class):
        return np.full(np.shape(path_loss_db), 10.0 * math.log10(self.p_w * 1e3))


class EveryOther(AvailabilityModel):
    """Client k is available in rounds t with t + k even: a user's model."""

    def __init__(self, seed: int, n_clients: int, offset: int = 0) -> None:
        self.n, self.offset = n_clients, offset

    def available(self, round_index, time_s):
        return (round_index + self.offset + np.arange(self.n)) % 2 == 0


def test_user_registered_models_run_from_the_scenario(tmp_path):
    """One class plus one register call; the scenario passes ``params`` to the model."""
    PATH_LOSS_MODELS.register("free_space_test", FreeSpace)
    AVAILABILITY_MODELS.register("every_other_test", EveryOther)
    POWER_CONTROLS.register("constant_watts_test", ConstantWatts)
    try:
        over = {
            **GEOMETRY,
            "channel.path_loss.model": "free_space_test",
            "channel.path_loss.params": {"carrier_hz": 2.4e9},
            "availability.model": "every_other_test",
            "availability.params": {"offset": 1},
            "channel.power_control": "constant_watts_test",
            "channel.power_control_params": {"p_w": 0.05},
        }
        sc = small_scenario(**over)
        sim = Simulator(sc, make_learner(sc))
        ch = sc.channel
        d = annulus_distances(sc.seed, sc.n_clients, d_min_m=ch.d_min_m, d_max_m=ch.d_max_m)
        sigma2 = noise_power_w(
            bandwidth_hz=ch.bandwidth_hz,
            noise_psd_dbm_per_hz=ch.noise_psd_dbm_per_hz,
            noise_figure_db=ch.noise_figure_db,
        )
        friis = (299_792_458.0 / (4.0 * math.pi * d * 2.4e9)) ** 2
        np.testing.assert_allclose(sim.cell.mean_snr, 0.05 * friis / sigma2, rtol=1e-12)
        res = run_scenario(sc, tmp_path / "r")
        un = res.clients[res.clients.status == "unavailable"]
        assert len(un) > 0 and ((un["round"] + un.client + 1) % 2 == 1).all()
        np.testing.assert_allclose(res.clients.tx_power_w, 0.05, rtol=1e-12)
        bad = small_scenario(**{**over, "channel.path_loss.params": {"nope": 1.0}})
        with pytest.raises(ConfigError) as err:  # the model's own keywords are checked
            build_radio(bad)
        assert "\n" not in str(err.value) and "nope" in str(err.value)
    finally:
        PATH_LOSS_MODELS.unregister("free_space_test")
        AVAILABILITY_MODELS.unregister("every_other_test")
        POWER_CONTROLS.unregister("constant_watts_test")


def test_gauss_markov_mobility_settings_reach_the_model():
    sc = small_scenario(
        **GEOMETRY,
        **{
            "mobility.model": "gauss_markov",
            "mobility.speed_sigma_mps": 0.2,
            "mobility.direction_sigma_rad": 0.1,
            "mobility.edge_margin_m": 5.0,
        },
    )
    moving = Simulator(sc, make_learner(sc)).channel.radio.large_scale
    assert moving is not None
    m = moving.mobility
    assert (m.speed_sigma_mps, m.direction_sigma_rad, m.edge_margin_m) == (0.2, 0.1, 5.0)


def test_all_unavailable_round_waits(tmp_path):
    """Every scheduled client unavailable (not restricted to available ones): the round lasts
    availability.empty_round_s, so a trace's gap does not stop the clock."""
    trace = tmp_path / "avail.csv"
    trace.write_text("client,start_s,end_s\n" + "".join(f"{k},3.0,1e9\n" for k in range(20)))
    res = _run(
        tmp_path,
        **{
            "availability.model": "trace",
            "availability.trace": str(trace),
            "availability.empty_round_s": 1.5,
            "rounds": 4,
        },
    )
    r = res.rounds
    np.testing.assert_allclose(r.t_start_s[:3], [0.0, 1.5, 3.0])
    assert list(r.n_unavailable[:2]) == [5, 5] and r.n_unavailable[2] == 0
