"""The NR gap reproductions (wirelessfl/study/repro_nr.py; docs/results.md, "A 5G NR uplink:
the gap to Shannon") end to end at a small scale: on the D_th sweep FDMA's measured D^t is its
plan (Shannon's rate on a continuous share) and NR's is longer than its plan (whole PRBs, whole
slots, HARQ), the dth table has one row per (uplink, D_th) with the means of the runs'
columns; AirComp's rounds are shorter than both digital uploads' at every K and bandwidth."""

from __future__ import annotations

import pytest

from channels.nr_bler import sionna_version
from wirelessfl.study.reproduce import reproduce

pytestmark = pytest.mark.skipif(sionna_version() is None, reason="the nr extra is not installed")


def test_dth_sweep_plans_fdma_exactly_and_nr_short(tmp_path):
    result = reproduce("nr-gap", out_dir=tmp_path, overrides=["rounds=8"], seeds=[0])
    table = result["summary"]
    assert len(table) == 8 and table.finished.all()
    fdma = table[table["channel.uplink"] == "fdma"]
    nr = table[table["channel.uplink"] == "nr"]
    assert fdma.delay_over_plan.to_numpy() == pytest.approx(1.0, rel=1e-9)
    assert (nr.delay_over_plan > 1.0).all()
    assert fdma.mean_nr_bler.isna().all() and (nr.mean_nr_bler > 0).all()
    dth = result["tables"]["dth"].set_index(["channel.uplink", "controller.d_th_s"])
    assert len(dth) == 8 and (dth.seeds == 1).all()
    row = table[(table["channel.uplink"] == "nr") & (table["controller.d_th_s"] == 2.0)]
    assert dth.loc[("nr", 2.0), "mean_delay_s"] == pytest.approx(float(row.mean_delay_s.iloc[0]))
    met = (row.mean_delay_s <= 2.0).astype(float)
    assert dth.loc[("nr", 2.0), "met_share"] == pytest.approx(float(met.iloc[0]))
    assert all(path.stat().st_size > 0 for path in result["figures"])


def test_aircomp_is_faster_than_both_digital_uplinks(tmp_path):
    result = reproduce("nr-gap-aircomp", out_dir=tmp_path, overrides=["rounds=5"], seeds=[0])
    table = result["summary"]
    assert len(table) == 12 and table.finished.all()
    keys = ["n_scheduled", "channel.bandwidth_hz"]
    delay = table.pivot_table(index=keys, columns="channel.uplink", values="mean_delay_s")
    assert (delay.aircomp < delay.fdma).all() and (delay.aircomp < delay.nr).all()
    assert len(result["figures"]) == 2
