"""The NR uplink's PRB policies and frequency-selective links through the simulator: PF's
whole-carrier round robin at high SINR against TBS arithmetic, EESM's longer uploads than a
flat carrier's on the same trace, both fidelities of the selective link agreeing on the mean,
resume with PF, and the refusals. Needs the nr extra (sionna-no-rt)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scenario_helpers import interrupt_at, set_keys

from channels.nr_bler import sionna_version
from wirelessfl.config.loader import scenario_from_dict
from wirelessfl.errors import ConfigError
from wirelessfl.sim import resume_run, run_scenario
from wirelessfl.sim.runner import Run
from wirelessfl.uplinks.nr import NrUplink

pytestmark = pytest.mark.skipif(sionna_version() is None, reason="the nr extra is not installed")

SLOT_S = 0.5e-3  # numerology 1
N_RB = 51  # 20 MHz at 30 kHz


def _data(tmp_path, trace_db: np.ndarray, **over) -> dict:
    rounds, n = trace_db.shape
    np.save(tmp_path / "snr.npy", trace_db)
    data = {
        "name": "nr_policies",
        "seed": 1,
        "n_clients": n,
        "n_scheduled": min(n, 4),
        "rounds": rounds,
        "eval_every": rounds,
        "channel": {
            "bandwidth_hz": 20.0e6,
            "snr_trace": str(tmp_path / "snr.npy"),
            "uplink": "nr",
            "nr": {},
        },
        "devices": {"include_compute": False},
        "controller": {"name": "fixed", "rank": 8, "r_max": 8, "sparsification": 0.5},
        "learner": {
            "kind": "surrogate",
            "shape": {"layer_shapes": [[2048, 2048]], "base_params": 0},
        },
        "output": {"clients": True, "events": False},
    }
    return set_keys(data, over)


def test_pf_gives_the_whole_carrier_to_one_client_a_slot_and_never_idles(tmp_path):
    """Three clients at 30 dB, flat: every slot all 51 PRBs go to one client (a retransmission
    keeps them), so each holds 51 PRBs per transmission, the round lasts the sum of its
    clients' transmissions, and the PRB-slots are all used."""
    data = _data(tmp_path, np.full((6, 3), 30.0), **{"channel.nr.prb_policy": "pf",
                                                      "channel.nr.fidelity": "slot"})  # fmt: skip
    result = run_scenario(scenario_from_dict(data), tmp_path / "run", progress=False)
    clients, rounds = result.clients, result.rounds
    assert (clients.status == "arrived").all()
    np.testing.assert_array_equal(clients.nr_prbs, np.full(len(clients), float(N_RB)))
    sent = clients.groupby("round").nr_transmissions.sum().to_numpy()
    np.testing.assert_allclose(rounds.delay_s / SLOT_S, sent, rtol=0, atol=1e-6)
    np.testing.assert_allclose(rounds.nr_prb_utilisation, 1.0)
    np.testing.assert_allclose(rounds.nr_prb_allocated, rounds.nr_prb_utilisation)


def test_selective_links_take_longer_than_flat_and_the_fidelities_agree(tmp_path):
    """The same trace (10-20 dB) with a 1 MHz coherence bandwidth (3 PRBs a subband, Rayleigh
    per subband held for the upload): longer uploads than on the flat carrier at the same
    round SINRs; the fast fidelity's mean upload within 5 % of the slot loop's over 80
    uploads."""
    trace = np.random.default_rng(2).uniform(10.0, 20.0, size=(20, 4))
    runs = {}
    for name, over in {
        "flat": {},
        "fast": {"channel.nr.coherence_bandwidth_hz": 1.0e6},
        "slot": {"channel.nr.coherence_bandwidth_hz": 1.0e6, "channel.nr.fidelity": "slot"},
    }.items():
        scenario = scenario_from_dict(_data(tmp_path, trace, **over))
        runs[name] = run_scenario(scenario, tmp_path / name, progress=False).clients
    assert NrUplink.from_scenario(scenario).layout.n_subbands == 17
    flat, fast, slot = (runs[k].upload_s.to_numpy() for k in ("flat", "fast", "slot"))
    pd.testing.assert_series_equal(runs["fast"].snr_db, runs["flat"].snr_db)
    assert np.isfinite(fast).mean() > 0.9 and np.isfinite(slot).mean() > 0.9
    assert np.nanmean(np.where(np.isfinite(fast), fast, np.nan)) > 1.1 * flat.mean()
    assert abs(np.median(fast) / np.median(slot) - 1.0) < 0.05


def test_resume_with_pf_on_a_selective_carrier_reproduces_the_tables(tmp_path):
    over = {
        "channel.nr.prb_policy": "pf",
        "channel.nr.fidelity": "slot",
        "channel.nr.fading": "iid",
        "channel.nr.coherence_bandwidth_hz": 2.0e6,
        "learner.shape.layer_shapes": [[512, 512]],
    }
    trace = np.random.default_rng(5).uniform(0.0, 20.0, size=(8, 6))
    full = run_scenario(scenario_from_dict(_data(tmp_path, trace, **over)), tmp_path / "full")
    cut = scenario_from_dict(_data(tmp_path, trace, **over, **{"output.checkpoint_every": 1}))
    interrupt_at(Run(cut, tmp_path / "cut"), 4)
    resumed = resume_run(tmp_path / "cut")
    pd.testing.assert_frame_equal(full.clients, resumed.clients)
    wall = ["wall_s"]
    pd.testing.assert_frame_equal(full.rounds.drop(columns=wall), resumed.rounds.drop(columns=wall))
    assert full.clients.nr_prbs.nunique() > 3  # PF moved the PRBs


REFUSED = [
    ({"channel.nr.prb_policy": "pf"}, "channel.nr.prb_policy: pf schedules the PRBs slot by"),
    (
        {"channel.nr.prb_policy": "pf", "channel.nr.fidelity": "slot", "cells.n_rings": 1,
         "channel.snr_trace": None, "channel.mean_snr_db": None},
        "channel.nr.prb_policy: pf moves the PRBs every slot",
    ),
    ({"channel.nr.coherence_bandwidth_hz": 0.0}, "channel.nr.coherence_bandwidth_hz: must be"),
    ({"channel.nr.pf_beta": 1.0}, "channel.nr.pf_beta: must be"),
]  # fmt: skip


@pytest.mark.parametrize(("over", "starts"), REFUSED)
def test_what_the_policies_cannot_run_is_refused_in_one_line(tmp_path, over, starts):
    with pytest.raises(ConfigError) as err:
        scenario_from_dict(_data(tmp_path, np.full((2, 4), 10.0), **over))
    assert str(err.value).startswith(starts) and "\n" not in str(err.value), str(err.value)


def test_a_run_where_no_upload_ever_arrives_says_so(tmp_path, caplog):
    """At -30 dB no MCS of the NR tables decodes: every round ends with nothing delivered, and
    the run's end warns once, naming the rounds and the causes to look for."""
    data = _data(tmp_path, np.full((3, 4), -30.0))
    with caplog.at_level("WARNING", logger="wirelessfl"):
        result = run_scenario(scenario_from_dict(data), tmp_path / "run", progress=False)
    assert (result.rounds.n_arrived == 0).all()
    lines = [r.getMessage() for r in caplog.records if "no upload arrived" in r.getMessage()]
    assert len(lines) == 1 and "rounds 0-2 (12 scheduled)" in lines[0]
    fine = run_scenario(scenario_from_dict(_data(tmp_path, np.full((3, 4), 20.0))), tmp_path / "b")
    assert (fine.rounds.n_arrived > 0).all()
    assert sum("no upload arrived" in r.getMessage() for r in caplog.records) == 1
