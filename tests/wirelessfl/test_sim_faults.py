"""Each fault mode changes exactly what it should."""

from __future__ import annotations

import numpy as np
import pytest

from wirelessfl.sim import run_scenario


def _run(make_scenario, tmp_path, name, **kw):
    return run_scenario(make_scenario(**kw), tmp_path / name)


def test_no_faults_everyone_arrives(make_scenario, tmp_path):
    r = _run(make_scenario, tmp_path, "clean").rounds
    assert (r.n_arrived == r.n_scheduled).all()
    assert (r[["n_dropped", "n_outage", "n_stragglers"]] == 0).all().all()


def test_dropout_removes_clients_and_idles_their_share(make_scenario, tmp_path):
    clean = _run(make_scenario, tmp_path, "clean")
    res = _run(make_scenario, tmp_path, "drop", **{"faults.dropout_prob": 0.3})
    r, ev, cl = res.rounds, res.events, res.clients
    assert r.n_dropped.sum() > 0
    np.testing.assert_array_equal(r.n_arrived + r.n_dropped, r.n_scheduled)
    # the channel and the selection are untouched by the fault
    np.testing.assert_array_equal(clean.rounds.mean_snr_db, r.mean_snr_db)
    for _, g in ev.groupby("round"):
        dropped = set(g.loc[g.kind == "drop", "client"])
        computing = set(g.loc[g.kind == "compute_start", "client"])
        assert not dropped & computing
    # shares are not redistributed: arrived shares sum to less than 1 where someone dropped
    share_sum = cl[cl.status == "arrived"].groupby("round").share.sum()
    dropped_rounds = r.loc[r.n_dropped > 0, "round"]
    assert (share_sum.loc[dropped_rounds] < 1 - 1e-9).all()


def test_redistribution_speeds_up_the_others(make_scenario, tmp_path):
    kw = {"faults.dropout_prob": 0.3}
    idle = _run(make_scenario, tmp_path, "idle", **kw).rounds
    redis = _run(
        make_scenario, tmp_path, "redis", **kw, **{"faults.redistribute_unused": True}
    ).rounds
    np.testing.assert_array_equal(idle.n_dropped, redis.n_dropped)  # same faults drawn
    first = int(idle.loc[idle.n_dropped > 0, "round"].iloc[0])
    assert redis.delay_s[first] < idle.delay_s[first]


def test_outage_clients_get_no_bandwidth(make_scenario, tmp_path):
    res = _run(make_scenario, tmp_path, "outage", **{"faults.outage_snr_db": 8.0})
    cl, r = res.clients, res.rounds
    out = cl[cl.status == "outage"]
    assert len(out) > 0
    assert (out.snr_db < 8.0).all() and (out.share == 0).all()
    ok = cl[cl.status == "arrived"]
    assert (ok.snr_db >= 8.0).all()
    np.testing.assert_array_equal(r.n_arrived + r.n_outage, r.n_scheduled)


def test_deadline_cuts_stragglers(make_scenario, tmp_path):
    kw = {
        "devices.include_compute": True,
        "devices.kind": "lognormal",
        "devices.median_flops_per_s": 2.0e6,
        "devices.sigma": 1.0,
    }
    free = _run(make_scenario, tmp_path, "free", **kw).rounds
    deadline = float(np.median(free.completion_s))
    res = _run(make_scenario, tmp_path, "deadline", **kw, **{"faults.deadline_s": deadline})
    r = res.rounds
    assert r.n_stragglers.sum() > 0
    np.testing.assert_array_equal(r.n_arrived + r.n_stragglers, r.n_scheduled)
    late = r[r.n_stragglers > 0]
    np.testing.assert_allclose(late.completion_s, deadline, rtol=1e-12)
    assert (r.completion_s <= deadline * (1 + 1e-12)).all()
    ev = res.events
    for _, g in ev.groupby("round"):
        agg = g.loc[g.kind == "aggregate", "time_s"].iloc[0]
        assert (g.loc[g.kind == "upload_end", "time_s"] <= agg).all()


def test_compute_delays_follow_device_speed(make_scenario, tmp_path):
    kw = {"devices.include_compute": True, "devices.flops_per_s": 1.0e9}
    res = _run(make_scenario, tmp_path, "compute", **kw)
    cl = res.clients
    assert cl.compute_s.nunique() == 1 and cl.compute_s.iloc[0] > 0
    r = res.rounds
    np.testing.assert_allclose(r.completion_s, cl.compute_s.iloc[0] + r.delay_s, rtol=1e-9)
    assert res.rounds.delay_s.gt(0).all()
    assert pytest.approx(cl.compute_s.iloc[0]) == cl.compute_s.iloc[-1]
